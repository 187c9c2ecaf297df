//! The one on-disk unit of work: a cluster shape, an event sequence and optional expectations.
//! A locked case, a shrunk counterexample and a soak checkpoint are all scenarios
//! (DESIGN.md "Rules of the house"); the file format lives in the `scenario` crate.

use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::derive::{Derived, Deriver};
use crate::events::{Event, World};

/// What a scenario expects; an empty list means "every property holds".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "expect", rename_all = "kebab-case")]
pub enum Expectation {
    /// The outcome kind of event `event` (0-based): `admitted`, `held`, `pending`, `retry`,
    /// `rejected`, `unplaceable` (or another event's effect: `released`, `parked`, …).
    Outcome { event: usize, outcome: String },
    /// A property is violated (how a counterexample records what it shows).
    Violation { property: String, message: String },
    /// A field of every derived object of `kind` named `name` (exact, or a prefix ending in
    /// `*`) at `step` (0 = initial, k = after event k-1) compares with `value`, or with the
    /// same object's field at `same_as`. Path segments: a field or map key, a list index,
    /// `[key=value]` (the list element whose `key` is `value`; `[=value]` a scalar element equal
    /// to `value`) or `#len`.
    Field {
        step: usize,
        kind: ObjectKind,
        name: String,
        path: Vec<String>,
        #[serde(default, skip_serializing_if = "Compare::is_eq")]
        op: Compare,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        same_as: Option<Vec<String>>,
        /// The row's CHECK text.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        check: String,
    },
    /// The number of derived objects of `kind` named `name` (exact or `prefix*`) at `step`.
    Count {
        step: usize,
        kind: ObjectKind,
        name: String,
        #[serde(default, skip_serializing_if = "Compare::is_eq")]
        op: Compare,
        value: usize,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        check: String,
    },
    /// The sliced fit label of `node` for `accelerator_key` at `step` (`model::fit`): its value,
    /// and whether the Workload pin `Gt units-1` admits a slice of `slice_units`.
    FitLabel {
        step: usize,
        node: String,
        accelerator_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slice_units: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        admits: Option<bool>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        check: String,
    },
    /// Where the joint check has Workload `workload` (`namespace/name`) at `step`
    /// (`lifecycle::JointPhase`: `waiting`, `held`, `admitted`, `parked`; `untracked` when it
    /// is not a replica the check holds), and words its check message must and must not carry.
    Joint {
        step: usize,
        workload: String,
        phase: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        contains: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        lacks: Vec<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        check: String,
    },
}

/// A replayable scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The fuzz seed it came from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The mutant (`model::mutants::Mutant` name) a counterexample was found under: what
    /// `verify replay` runs the twin's operator with. Absent for every other scenario.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutant: Option<String>,
    pub cluster: Cluster,
    pub events: Vec<Event>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<Expectation>,
    /// The objects published at the quiescence the scenario resumes from (a soak checkpoint);
    /// absent, the chain starts from a fresh derivation of `cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Derived>,
}

impl Scenario {
    /// The world the scenario's events apply to.
    pub fn start(&self) -> World {
        self.start_through(Deriver::plain())
    }

    /// [`Scenario::start`], the world deriving through `deriver`.
    pub fn start_through(&self, deriver: Deriver) -> World {
        let cluster = self.cluster.clone();
        match &self.published {
            Some(published) => World::resume_through(cluster, published.clone(), deriver),
            None => World::with_deriver(cluster, deriver),
        }
    }

    /// Whether checking the scenario verifies nothing: no node, InstanceType or foreign queue
    /// to derive from, no published objects, no event to step and no expectation to read.
    /// Every property holds on it vacuously, so a replay says so instead of "held".
    pub fn is_vacuous(&self) -> bool {
        let c = &self.cluster;
        c.nodes.is_empty()
            && c.instance_types.is_empty()
            && c.foreign_queues.is_empty()
            && self.published.is_none()
            && self.events.is_empty()
            && self.expect.is_empty()
    }
}

/// Which derived objects a `field` or `count` expectation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectKind {
    Node,
    ResourceFlavor,
    InstanceType,
    ClusterQueue,
    LocalQueue,
}

impl ObjectKind {
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Node => "node",
            ObjectKind::ResourceFlavor => "resource-flavor",
            ObjectKind::InstanceType => "instance-type",
            ObjectKind::ClusterQueue => "cluster-queue",
            ObjectKind::LocalQueue => "local-queue",
        }
    }
}

/// How an observed value is compared with the expected one: numerically when both read as
/// integers, else as text (only `eq` and `ne` apply to text).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compare {
    #[default]
    Eq,
    Ne,
    Ge,
    Gt,
    Le,
    Lt,
}

impl Compare {
    pub fn is_eq(&self) -> bool {
        *self == Compare::Eq
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Compare::Eq => "=",
            Compare::Ne => "!=",
            Compare::Ge => ">=",
            Compare::Gt => ">",
            Compare::Le => "<=",
            Compare::Lt => "<",
        }
    }
}

/// The case header contract (research/cases.md §2.6): title with mutation posture, usage,
/// Goal, Environment with its auto-skip conditions, Inputs (MOCKED vs real), Expected, Cleanup.
/// A locked case file carries it under `case:` beside the scenario it replays.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CaseHeader {
    pub number: u32,
    /// The locked title of the index (SKILL.md), not a header's variant.
    pub title: String,
    pub posture: Posture,
    /// `AUTO-SKIPS without <requirement>`, one per requirement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub auto_skips: Vec<String>,
    pub usage: String,
    pub goal: String,
    pub environment: Vec<String>,
    pub inputs: Vec<CaseInput>,
    pub expected: Vec<String>,
    pub cleanup: String,
    /// Assertions only a cluster can answer: SKIP rows on the model tier, with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub live_only: Vec<LiveOnlyCheck>,
    /// What a live run needs before it may start (the block's input-required gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<LiveGate>,
    /// The mutants (`model::mutants`) this case's expectations catch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<crate::mutants::Mutant>,
}

/// The mutation posture of the title line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Posture {
    /// `READ-ONLY` (no trap).
    #[default]
    ReadOnly,
    /// `MUTATING, self-recovering` (a trap restores).
    Mutating,
}

impl Posture {
    pub fn title(self) -> &'static str {
        match self {
            Posture::ReadOnly => "READ-ONLY",
            Posture::Mutating => "MUTATING, self-recovering",
        }
    }
}

/// One input of a case: what it creates, injects or toggles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CaseInput {
    pub what: String,
    /// A fixture the case fakes (NodeFeature, Devices ledger, capacity), not the object under test.
    pub mocked: bool,
}

/// An assertion of the original case that only a live cluster answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LiveOnlyCheck {
    pub check: String,
    pub why: String,
}

/// The input-required gate and hardware condition of a live run (cases.md §2.4).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LiveGate {
    /// Unset → exit 2 naming it (`MIG_NODE_SSH`, `PPU_NODE_SSH`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// Absent → the case skips (exit 0, NOTHING WAS VERIFIED).
    pub hardware: String,
}
