//! The verifier's oracle: what the chain must look like, stated over the pure model.
//! It owns structured diffs between derivations ([`diff`]) folded along the derivation graph
//! ([`graph`]), side-by-side replays of two
//! scenarios ([`replay`]) and the chain's properties ([`properties`]). It never re-implements
//! a rule (it calls `model`) and never talks to a cluster.

pub mod diff;
mod expect;
pub mod graph;
pub mod properties;
pub mod quiescence;
pub mod replay;

pub use diff::{diff, diff_objects, diff_restricted, render_table, Difference, ObjectKind};
pub use graph::{fold, render_findings, DerivationGraph, Finding, ObjectId};
pub use properties::{check_all, check_all_through, Violation};
pub use replay::{
    compare_runs, effect_summary, observe_at, replay, Divergence, ExpectationCheck, ReplayCheck,
};
