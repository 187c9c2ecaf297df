//! The embedded twin: an in-process stand-in for a Kubernetes apiserver serving the kinds the
//! scheduling chain uses. This is its foundation: the object store with the API semantics
//! ([`store`]), the kind registry ([`kinds`]), selectors ([`selector`]), `metav1.Status`
//! errors ([`status`]) and structural-schema validation ([`structural`]); and the HTTP API server
//! on loopback over it ([`server`], [`routes`], [`discovery`], [`kubeconfig`]), with seeded
//! fault injection ([`faults`]), request counters ([`counters`]) and a virtual clock moved only
//! by an admin request ([`clock`]).

pub mod admission;
pub mod apiservices;
pub mod builtin;
pub mod clock;
pub mod counters;
pub mod crds;
pub mod discovery;
pub mod faults;
pub mod kinds;
pub mod kubeconfig;
pub mod openapi;
pub mod operator;
pub mod pod;
pub mod read;
pub mod render;
pub mod routes;
pub mod selector;
pub mod server;
pub mod status;
pub mod store;
pub mod strategic;
pub mod structural;
pub mod table;
pub mod workload;
