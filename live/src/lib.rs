//! The live tier, by role: the JSON ↔ model conversions both sides use ([`wire`]); the embedded
//! API server, the *twin* ([`server`]); the reference operator that reads through [`wire`], asks
//! the model and renders through [`wire`], on the twin or as a process against any server
//! ([`operator`]); the kube-rs client that mocks, waits, observes and tears down on a cluster
//! ([`client`]); typed resources ([`crd`]); the read-only audit of a cluster or a dump, which
//! serves a dump on a twin and reads it with the client ([`audit`]); and Kueue's kube-local
//! settings ([`kube_local`]).
//!
//! Dependencies between the parts: `client` → `wire`, `crd`; `operator` → `wire`, `server`,
//! `model`; `server` → `wire`, `crd`; `wire` → `crd`. `client` and `wire` never name `server` or
//! `operator` (`tests/layering.rs` fails when one does).
pub mod audit;
pub mod client;
pub mod crd;
pub mod kube_local;
pub mod operator;
pub mod server;
pub mod wire;
