//! The case index (research/cases.md §4, the `10b5a0b` SKILL.md table and the older indexes
//! for 10, 17, 58, 69, 72): one row per case number, embedded from `index.yaml`.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A scope tag (research/cases.md "Scope tags").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "CHAIN")]
    Chain,
    #[serde(rename = "DEVPLUGIN")]
    DevPlugin,
    #[serde(rename = "MIG")]
    Mig,
    #[serde(rename = "RDMA")]
    Rdma,
    #[serde(rename = "TAS")]
    Tas,
    #[serde(rename = "INSTANCE")]
    Instance,
    #[serde(rename = "VENDOR")]
    Vendor,
    #[serde(rename = "MODEL-DEPLOYMENT")]
    ModelDeployment,
    #[serde(rename = "KV-CACHE")]
    KvCache,
    #[serde(rename = "SERVING")]
    Serving,
    #[serde(rename = "MODEL-STORE")]
    ModelStore,
    #[serde(rename = "CHART")]
    Chart,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Chain => "CHAIN",
            Scope::DevPlugin => "DEVPLUGIN",
            Scope::Mig => "MIG",
            Scope::Rdma => "RDMA",
            Scope::Tas => "TAS",
            Scope::Instance => "INSTANCE",
            Scope::Vendor => "VENDOR",
            Scope::ModelDeployment => "MODEL-DEPLOYMENT",
            Scope::KvCache => "KV-CACHE",
            Scope::Serving => "SERVING",
            Scope::ModelStore => "MODEL-STORE",
            Scope::Chart => "CHART",
        }
    }
}

/// Which suite a number belongs to: the operator e2e suite or the chart suite (§6), whose
/// numbers restart at 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Suite {
    #[default]
    Operator,
    Chart,
}

/// One row of the index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    pub number: u32,
    #[serde(default)]
    pub suite: Suite,
    /// The locked title (long ones abbreviated with "…" as in the research digest).
    pub title: String,
    pub scope: Vec<Scope>,
    pub needs: String,
    /// The index's "Mutates" column.
    pub mutates: bool,
    /// False for 10, 17, 58, 69 and 72: present in older indexes only.
    #[serde(default = "yes")]
    pub in_locked_index: bool,
    /// Why `verify` does not model it; absent for a modelled case (one with a scenario file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_modelled: Option<String>,
}

fn yes() -> bool {
    true
}

impl IndexEntry {
    pub fn posture(&self) -> &'static str {
        if self.mutates {
            "MUTATING"
        } else {
            "READ-ONLY"
        }
    }

    pub fn modelled(&self) -> bool {
        self.not_modelled.is_none()
    }

    pub fn scope_text(&self) -> String {
        self.scope
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join("+")
    }
}

const INDEX_YAML: &str = include_str!("../index.yaml");

/// The whole index, operator suite first, by number. The embedded file is checked by the
/// crate's tests, so a malformed index is a build-time test failure, never a runtime panic:
/// should it fail anyway, the index reads as empty and [`index_error`] says why.
pub fn index() -> &'static [IndexEntry] {
    parsed().as_ref().map(Vec::as_slice).unwrap_or(&[])
}

/// Why the embedded index could not be read, if it could not.
pub fn index_error() -> Option<String> {
    parsed().as_ref().err().cloned()
}

fn parsed() -> &'static Result<Vec<IndexEntry>, String> {
    static INDEX: OnceLock<Result<Vec<IndexEntry>, String>> = OnceLock::new();
    INDEX.get_or_init(|| {
        serde_norway::from_str::<Vec<IndexEntry>>(INDEX_YAML)
            .map_err(|e| format!("cases/index.yaml: {e}"))
    })
}

/// The operator-suite row of case `n`.
pub fn entry(n: u32) -> Option<&'static IndexEntry> {
    index()
        .iter()
        .find(|e| e.suite == Suite::Operator && e.number == n)
}
