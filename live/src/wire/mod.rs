//! The Kubernetes JSON of the chain's objects, both ways, shared by the API server, the reference
//! operator and the client: the kind registry ([`kinds`]), objects read into the model
//! ([`read`], [`workload`], [`pod`]) and the model's objects rendered as they are written
//! ([`render`], [`read::mock_objects`]). Pure conversions: it imports neither [`crate::server`]
//! nor [`crate::operator`] (`tests/layering.rs`).

pub mod clock;
pub mod doc;
pub mod fields;
pub mod identity;
pub mod kinds;
pub mod pod;
pub mod read;
pub mod render;
pub mod workload;
