//! The API server: an in-process stand-in for a Kubernetes apiserver serving the kinds the
//! scheduling chain uses (the *twin*). Its foundation is the object store with the API semantics
//! ([`store`]), selectors ([`selector`]), `metav1.Status` errors ([`status`]) and
//! structural-schema validation ([`structural`]); over it the HTTP API server on loopback
//! ([`http`], [`routes`], [`discovery`], [`openapi`], [`table`], [`kubeconfig`]), the built-in
//! kinds ([`builtin`], [`strategic`], [`crds`], [`apiservices`]), seeded fault injection
//! ([`faults`]), request counters ([`counters`]) and a virtual clock moved only by an admin
//! request ([`clock`]). It decides no operator rule; the kinds and their JSON are [`crate::wire`]'s.

pub mod apiservices;
pub mod batch;
pub mod builtin;
pub mod clock;
pub mod counters;
pub mod crds;
pub mod discovery;
pub mod faults;
pub mod http;
pub mod kubeconfig;
pub mod openapi;
pub mod pods;
pub mod routes;
pub mod schemas;
pub mod selector;
pub mod status;
pub mod store;
pub mod strategic;
pub mod structural;
pub mod table;
