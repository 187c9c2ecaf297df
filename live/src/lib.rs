//! The live tier: typed resources ([`crd`]), the kube-rs client that mocks, waits, observes and
//! tears down on a cluster ([`client`]), and the embedded twin that plays the cluster ([`twin`]).
pub mod client;
pub mod crd;
pub mod twin;
