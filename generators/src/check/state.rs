//! The checker's state: fixed-size, `Copy`, cheap to hash. Everything large is interned by
//! the model (see [`super::memo`]): a card slot is the id of its row (family, ledger, live
//! partition instances), the structure at the last quiescence is an id, a Workload's hold
//! (quota and card charges) is an id.

use model::devices::Ledger;
use model::ledger::Instance;

/// Largest scope a state can hold.
pub const MAX_NODES: usize = 8;
/// Card slots over all nodes (`nodes × cards`).
pub const MAX_CARD_SLOTS: usize = 16;
pub const MAX_WORKLOADS: usize = 8;

/// One card slot of one node: its family (MIG on/off) and its ledger row with the live
/// partition instances behind it. Interned; id 0 is the default row of an absent node's slot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CardState {
    pub mig: bool,
    pub ledger: Ledger,
    pub instances: Vec<Instance>,
}

/// Where a Workload template is in its life (admission.md §3, §6.5, §16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Not submitted (or finished, or evicted and not resubmitted yet).
    #[default]
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

    /// What the model's admission world sees of a status: the hold and whether it is charged
    /// (Idle, Pending, Retry and Rejected all hold nothing). Memo keys use this.
    pub fn held(self) -> Status {
        match self {
            Status::InFlight(_) | Status::Admitted(_) => self,
            _ => Status::Idle,
        }
    }
}

/// A soundness failure a step ran into; once set it stays (the state is a counterexample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    #[default]
    None,
    /// A landed Workload's charge was refused by its card (no room: overcommit).
    ChargeRefused,
    /// Gate 3 said Ready but gates 4–5 could not place the Workload.
    Unplaceable,
}

/// One reachable state of the chain within the scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct State {
    /// The slot of the symmetry registry this state's model sits in (constant per check;
    /// lets the representative function reach the model's interners).
    pub scope: u32,
    /// Which node slots are in the cluster (bit per slot).
    pub present: u8,
    /// Which card slots are in MIG mode (bit per slot; also in the rows, kept here so the
    /// shape is read without a lookup).
    pub mig: u16,
    /// Interned card rows, node-major (`node * cards + card`); unused slots stay 0.
    pub cards: [u16; MAX_CARD_SLOTS],
    /// Whether the extra namespace exists.
    pub extra_ns: bool,
    /// `instance-type-aware-cpu-manufacturer`.
    pub aware: bool,
    /// `instance-type-mixed-on-node`.
    pub mixed: bool,
    /// Interned structure at the last quiescence (derived objects + authored InstanceTypes).
    pub structure: u32,
    /// One status per Workload template; unused slots stay Idle.
    pub workloads: [Status; MAX_WORKLOADS],
    pub fault: Fault,
}

impl State {
    pub fn is_present(&self, node: usize) -> bool {
        self.present & (1 << node) != 0
    }

    /// The fingerprint of what the model's `World` sees of the cluster: shape, card rows,
    /// namespaces, the two settings and structure (not the Workloads).
    pub fn world_key(&self) -> (u8, [u16; MAX_CARD_SLOTS], bool, bool, bool, u32) {
        (
            self.present,
            self.cards,
            self.extra_ns,
            self.aware,
            self.mixed,
            self.structure,
        )
    }

    /// The Workload statuses as the admission world sees them (see [`Status::held`]).
    pub fn held(&self) -> [Status; MAX_WORKLOADS] {
        self.workloads.map(Status::held)
    }
}
