//! The checker's state: small, `Hash + Eq`, and enough to rebuild the model's `World` that a
//! step hands to one model rule. Derived objects and Workload holds are interned (one copy per
//! distinct value, shared by every state that reaches it), so a state is a few vectors of
//! small values.

use std::hash::{Hash, Hasher};

use model::devices::Ledger;
use model::ledger::Instance;

/// One card slot of one node: its family (MIG on/off) and its ledger row with the live
/// partition instances behind it. Meaningless while the node is absent (kept default then).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CardState {
    pub mig: bool,
    pub ledger: Ledger,
    pub instances: Vec<Instance>,
}

/// Where a Workload template is in its life (admission.md §3, §6.5, §16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Not submitted (or finished, or evicted and not resubmitted yet).
    Idle,
    /// Gate 2 left it without quota.
    Pending,
    /// Gate 3 answered Retry (requeued after 30 s; may be judged again).
    Retry,
    /// Gate 1 refused a Pod.
    Rejected,
    /// Gate 3 answered Ready and quota is reserved, but its Pods have not reached the ledger:
    /// the in-flight window. The interned hold says which cards it was budgeted.
    InFlight(u32),
    /// Its Pods landed: the hold's charges are on the ledger.
    Admitted(u32),
}

impl Status {
    pub fn hold(self) -> Option<u32> {
        match self {
            Status::InFlight(h) | Status::Admitted(h) => Some(h),
            _ => None,
        }
    }
}

/// A soundness failure a step ran into; once set it stays (the state is a counterexample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fault {
    #[default]
    None,
    /// A landed Workload's charge was refused by its card (no room: overcommit).
    ChargeRefused,
    /// Gate 3 said Ready but gates 4–5 could not place the Workload.
    Unplaceable,
}

/// Per-state property verdicts, computed once when the state is built. Excluded from `Hash`
/// and `Eq`: they are a function of the rest of the state.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verdicts(pub u32);

impl PartialEq for Verdicts {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Verdicts {}
impl Hash for Verdicts {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// One reachable state of the chain within the scope.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Which node slots are in the cluster.
    pub present: Vec<bool>,
    /// `nodes × cards` card slots, node-major.
    pub cards: Vec<CardState>,
    /// Whether the extra namespace exists.
    pub extra_ns: bool,
    /// `instance-type-aware-cpu-manufacturer`.
    pub aware: bool,
    /// Interned structure at the last quiescence (derived objects + authored InstanceTypes).
    pub structure: u32,
    /// One status per Workload template.
    pub workloads: Vec<Status>,
    /// Nodes (bit per slot) a charged or in-flight hold touches; a function of the statuses.
    pub held_nodes: u32,
    pub fault: Fault,
    pub verdicts: Verdicts,
}

impl State {
    pub fn verdict(&self, bit: u32) -> bool {
        self.verdicts.0 & (1 << bit) != 0
    }
}
