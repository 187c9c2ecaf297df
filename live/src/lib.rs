//! The live tier: typed resources ([`crd`]), the kube-rs client that mocks, waits, observes and
//! tears down on a cluster ([`client`]), the read-only
//! audit of a cluster or a dump ([`audit`]), and the embedded twin that plays the cluster ([`twin`]).
pub mod audit;
pub mod client;
pub mod controller;
pub mod crd;
pub mod kube_local;
pub mod twin;
