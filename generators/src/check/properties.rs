//! The properties checked in every reachable state. World-level ones (ledgers, derived
//! objects, the [M3] invariants of the oracle) are computed once per distinct world; the
//! status-level ones (quota held by in-flight and admitted Workloads, faults, reachability)
//! per state. Each check returns what it found, so a counterexample can say why it fails.

use model::events::World;
use model::objects::StopPolicy;
use oracle::quiescence as inv;
pub use oracle::quiescence::{
    cards_within_bounds, credits_within_quota, m3_accounting, m3_shape, m3_structure,
    no_partition_on_plain, views_fresh,
};
use oracle::quiescence::{Breach, Check};

use super::chain::ChainModel;
use super::memo::fingerprint;
use super::state::{Fault, State, Status};

/// A verdict bit.
pub type Bit = u32;

pub const NO_OVERCOMMIT: Bit = 0;
pub const NO_PARTITION_ON_PLAIN: Bit = 1;
pub const CREDITS_WITHIN_QUOTA: Bit = 2;
pub const VIEWS_FRESH: Bit = 3;
pub const READY_PLACEABLE: Bit = 4;
pub const M3_STRUCTURE: Bit = 5;
pub const M3_ACCOUNTING: Bit = 6;
pub const M3_SHAPE: Bit = 7;
pub const RETRY_HAPPENS: Bit = 8;
pub const PARTITION_ADMITTED: Bit = 9;
pub const POOL_DRAINS: Bit = 10;
pub const INFLIGHT_JUDGED: Bit = 11;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Always,
    Sometimes,
}

/// One property: its name, kind, bit and the stateright condition reading the bit.
pub struct Prop {
    pub name: &'static str,
    pub kind: Kind,
    pub bit: Bit,
    pub holds: fn(&ChainModel, &State) -> bool,
}

macro_rules! prop {
    ($name:expr, $kind:ident, $bit:expr) => {
        Prop {
            name: $name,
            kind: Kind::$kind,
            bit: $bit,
            holds: |m, s| m.verdicts(s) & (1 << $bit) != 0,
        }
    };
}

/// Every property, in report order.
pub const ALL: [Prop; 12] = [
    prop!(inv::NO_OVERCOMMIT, Always, NO_OVERCOMMIT),
    prop!(inv::NO_PARTITION_ON_PLAIN, Always, NO_PARTITION_ON_PLAIN),
    prop!(inv::CREDITS_WITHIN_QUOTA, Always, CREDITS_WITHIN_QUOTA),
    prop!(inv::VIEWS_FRESH, Always, VIEWS_FRESH),
    prop!("gate-3 Ready is placeable", Always, READY_PLACEABLE),
    prop!(inv::M3_STRUCTURE, Always, M3_STRUCTURE),
    prop!(inv::M3_ACCOUNTING, Always, M3_ACCOUNTING),
    prop!(
        "[M3] invariance, pool isolation, idempotence",
        Always,
        M3_SHAPE
    ),
    prop!("a Retry happens", Sometimes, RETRY_HAPPENS),
    prop!("a partition is admitted", Sometimes, PARTITION_ADMITTED),
    prop!("a pool drains", Sometimes, POOL_DRAINS),
    prop!(
        "a Workload is judged while another is in flight",
        Sometimes,
        INFLIGHT_JUDGED
    ),
];

fn bit(b: Bit, ok: bool) -> u32 {
    u32::from(ok) << b
}

/// The world-level verdict bits (ledger and derivation properties, [M3] structure and
/// accounting; the shape-level [M3] bit comes from the model's per-shape memo).
pub fn world_verdicts(w: &World) -> u32 {
    let observed = w.observe();
    bit(NO_OVERCOMMIT, cards_within_bounds(w).is_ok())
        | bit(NO_PARTITION_ON_PLAIN, no_partition_on_plain(w).is_ok())
        | bit(VIEWS_FRESH, views_fresh(w, &observed).is_ok())
        | bit(M3_STRUCTURE, m3_structure(w, &observed).is_ok())
        | bit(M3_ACCOUNTING, m3_accounting(w, &observed).is_ok())
        | bit(POOL_DRAINS, pool_drained(&observed))
}

/// The status-level verdict bits (quota memoised per structure and holds).
pub fn status_verdicts(m: &ChainModel, s: &State) -> u32 {
    let t = &m.tables;
    let partition = s.workloads.iter().any(|st| match st {
        Status::Admitted(h) => t.hold(*h).partition,
        _ => false,
    });
    let inflight = s
        .workloads
        .iter()
        .filter(|st| matches!(st, Status::InFlight(_)))
        .count();
    let judged_beside = s
        .workloads
        .iter()
        .filter(|st| matches!(st, Status::InFlight(_) | Status::Retry))
        .count();
    let quota = t.quota_ok.get_or(
        fingerprint(&(s.structure, t.quota_key(&s.workloads))),
        || {
            credits_within_quota(
                &m.structure(s.structure).derived,
                &m.reserved_of(&s.workloads),
            )
            .is_ok()
        },
    );
    bit(CREDITS_WITHIN_QUOTA, quota)
        | bit(READY_PLACEABLE, s.fault == Fault::None)
        | bit(RETRY_HAPPENS, s.workloads.contains(&Status::Retry))
        | bit(PARTITION_ADMITTED, partition)
        | bit(INFLIGHT_JUDGED, inflight >= 1 && judged_beside >= 2)
}

/// A test seam: one always-property reported failing in every state where a Workload is
/// admitted (so at least one step in), whatever its check says. It shows that the checker
/// reports, traces and writes a counterexample for exactly that property; the real rules are
/// shown caught by the mutants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken {
    pub bit: Bit,
}

impl Broken {
    pub fn apply(self, bits: u32, s: &State) -> u32 {
        let admitted = s
            .workloads
            .iter()
            .any(|st| matches!(st, Status::Admitted(_)));
        if admitted {
            bits & !(1 << self.bit)
        } else {
            bits
        }
    }
}

/// Why each always-property fails on this state (empty when all hold).
pub fn explain(m: &ChainModel, s: &State) -> Vec<(&'static str, String)> {
    let w = m.world_of(s);
    let observed = w.observe();
    let fault = match s.fault {
        Fault::None => Ok(()),
        Fault::ChargeRefused => Err(Breach(
            "a Workload gate 3 answered Ready could not be charged on its budgeted cards".into(),
        )),
        Fault::Unplaceable => Err(Breach(
            "gate 3 said Ready but gates 4–5 could not place it".into(),
        )),
    };
    let checks: [(&'static str, Check); 8] = [
        (ALL[0].name, cards_within_bounds(&w)),
        (ALL[1].name, no_partition_on_plain(&w)),
        (
            ALL[2].name,
            credits_within_quota(&w.admission.derived, &w.admission.reserved),
        ),
        (ALL[3].name, views_fresh(&w, &observed)),
        (ALL[4].name, fault),
        (ALL[5].name, m3_structure(&w, &observed)),
        (ALL[6].name, m3_accounting(&w, &observed)),
        (ALL[7].name, m3_shape(&w)),
    ];
    let bits = m.verdicts(s);
    let broken = m.broken.filter(|b| bits & (1 << b.bit) == 0).map(|b| b.bit);
    checks
        .into_iter()
        .enumerate()
        .filter_map(|(i, (n, r))| match r {
            Err(Breach(why)) => Some((n, why)),
            Ok(()) if broken == Some(i as Bit) => Some((n, "broken on purpose (test seam)".into())),
            Ok(()) => None,
        })
        .collect()
}

/// Some pool's queue is held and draining (its node left, or its flavors emptied).
pub fn pool_drained(observed: &model::derive::Derived) -> bool {
    observed
        .cluster_queues
        .iter()
        .any(|q| q.stop_policy == StopPolicy::HoldAndDrain)
}
