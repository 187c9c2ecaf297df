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
    /// The pool shape the case needs on a real cluster (its `needs`, as data): on the live tier
    /// the case looks for a pool of the cluster that has it (`probe::pools_of_shape`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolShape>,
}

/// A pool shape a case needs (cases.md §5: 14 wants a single-card sliceable pool; 11, 22 and
/// 41 two or more cards on one node). Counted over the cards of the pool's accelerator group
/// on the nodes the pool backs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolShape {
    /// Only logically sliceable cards count.
    #[serde(default)]
    pub sliceable: bool,
    /// The cards' manufacturer (`nvidia`, …), if the case names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    /// Exactly this many cards in the whole pool (14: a single-card pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cards: Option<u32>,
    /// At least this many on one node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cards_on_a_node: Option<u32>,
}

impl PoolShape {
    /// "a pool of exactly 1 logically sliceable nvidia card", for rows.
    pub fn describe(&self) -> String {
        let kind = match (self.sliceable, &self.manufacturer) {
            (true, Some(m)) => format!("logically sliceable {m} card"),
            (true, None) => "logically sliceable card".to_string(),
            (false, Some(m)) => format!("{m} card"),
            (false, None) => "accelerator card".to_string(),
        };
        match (self.cards, self.min_cards_on_a_node) {
            (Some(n), _) => format!("a pool of exactly {n} {kind}(s)"),
            (None, Some(n)) => format!("a pool with at least {n} {kind}s on one node"),
            (None, None) => format!("a pool of {kind}s"),
        }
    }
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
    parsed().as_ref().err().map(ToString::to_string)
}

/// The embedded `cases/index.yaml` does not parse.
#[derive(Debug, thiserror::Error)]
#[error("cases/index.yaml: {0}")]
pub struct IndexError(#[source] serde_norway::Error);

fn parsed() -> &'static Result<Vec<IndexEntry>, IndexError> {
    static INDEX: OnceLock<Result<Vec<IndexEntry>, IndexError>> = OnceLock::new();
    INDEX.get_or_init(|| serde_norway::from_str::<Vec<IndexEntry>>(INDEX_YAML).map_err(IndexError))
}

/// The operator-suite row of case `n`.
pub fn entry(n: u32) -> Option<&'static IndexEntry> {
    index()
        .iter()
        .find(|e| e.suite == Suite::Operator && e.number == n)
}
