//! The operator's Helm chart contract (the chart e2e skill,
//! `.agents/skills/gpustack-operator-chart-e2e/`; research/cases.md §6): not a behavioural
//! test but the promises the chart makes — it installs, the versions agree, an uninstall leaves
//! nothing behind.
//!
//! - [`inventory`]: every object of every listable resource of a cluster, as JSON.
//! - [`leftovers`]: what an after-inventory holds that a before-inventory did not, by release,
//!   minus the churn a cluster makes by itself (a table of rules with reasons).
//! - [`release`]: Helm release records read through the API (Secret and ConfigMap drivers).
//! - [`case`]: the chart suite's cases 1–8 as `STATUS | CHECK | OBJECT` rows (rendered by
//!   `cases::render`), each behind its environment gate; [`checks`]: their read-only checks;
//!   [`tools`]: the user's helm and docker.
//!
//! Everything that talks to a cluster takes a `kube::Client` built by the live tier's
//! connection set-up (`live::client::connect`).

pub mod case;
pub mod checks;
pub mod inventory;
pub mod leftovers;
pub mod release;
pub mod tools;

pub use inventory::{Inventory, ObjectRecord};
pub use leftovers::{compare, Comparison, Leftover};
pub use release::Release;

/// Why a chart command could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// An input file that does not parse: exit 2.
    #[error("{file}: {field}: {message}")]
    BadFile {
        file: String,
        field: String,
        message: String,
    },
    /// A Helm release record that does not decode.
    #[error("malformed Helm release record {kind} {record}: {message}")]
    BadRecord {
        kind: &'static str,
        record: String,
        message: String,
    },
    #[error("discovery {what}: {reason}")]
    Discovery { what: String, reason: String },
    #[error("{what}: {message}")]
    Api { what: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// A tool the command needs is missing, or failed to start: exit 2.
    #[error("{0}")]
    Tool(String),
}

impl outcome::Concluded for ChartError {
    /// Bad input, a missing tool or a malformed record is the user's to fix; the cluster's
    /// failures leave the contract unjudged.
    fn outcome(&self) -> outcome::Outcome {
        match self {
            ChartError::BadFile { .. } | ChartError::BadRecord { .. } | ChartError::Tool(_) => {
                outcome::Outcome::Usage
            }
            ChartError::Discovery { .. } | ChartError::Api { .. } | ChartError::Io { .. } => {
                outcome::Outcome::Inconclusive
            }
        }
    }
}
