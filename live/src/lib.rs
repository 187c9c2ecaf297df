//! The live tier. Today: the embedded twin — its object store and its Kubernetes API server on loopback.
pub mod twin;
