//! The properties checked in every reachable state. World-level ones (ledgers, derived
//! objects, the [M3] invariants of the oracle) are computed once per distinct world; the
//! status-level ones (quota held by in-flight and admitted Workloads, faults, reachability)
//! per state. Each check returns what it found, so a counterexample can say why it fails.

use std::collections::BTreeMap;

use model::derive::{derive, derive_after};
use model::devices::Mode;
use model::events::World;
use model::objects::StopPolicy;
use model::scenario::Scenario;
use model::units::UNITS_PER_CARD;
use oracle::properties as m3;

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
            holds: |_, s| s.verdict($bit),
        }
    };
}

/// Every property, in report order.
pub const ALL: [Prop; 12] = [
    prop!("no card overcommitted", Always, NO_OVERCOMMIT),
    prop!(
        "no partition on a non-partitioned card",
        Always,
        NO_PARTITION_ON_PLAIN
    ),
    prop!(
        "admitted credits within quota",
        Always,
        CREDITS_WITHIN_QUOTA
    ),
    prop!(
        "views equal a fresh derivation at quiescence",
        Always,
        VIEWS_FRESH
    ),
    prop!("gate-3 Ready is placeable", Always, READY_PLACEABLE),
    prop!("[M3] structure", Always, M3_STRUCTURE),
    prop!("[M3] accounting", Always, M3_ACCOUNTING),
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

type Check = Result<(), String>;

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
    let quota = t
        .quota_ok
        .get_or(fingerprint(&(s.structure, s.held())), || {
            credits_within_quota(
                &m.structure(s.structure).derived,
                &m.reserved_of(&s.workloads),
            )
            .is_ok()
        });
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
        Fault::ChargeRefused => Err(
            "a Workload gate 3 answered Ready could not be charged on its budgeted cards".into(),
        ),
        Fault::Unplaceable => Err("gate 3 said Ready but gates 4–5 could not place it".into()),
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
    let broken = m.broken.filter(|b| !s.verdict(b.bit)).map(|b| b.bit);
    checks
        .into_iter()
        .enumerate()
        .filter_map(|(i, (n, r))| match r {
            Err(e) => Some((n, e)),
            Ok(()) if broken == Some(i as Bit) => Some((n, "broken on purpose (test seam)".into())),
            Ok(()) => None,
        })
        .collect()
}

/// Every card's remaining units lie in [0, D] and its logical slices within its slots.
pub fn cards_within_bounds(w: &World) -> Check {
    for node in &w.cluster().nodes {
        for card in node
            .devices
            .iter()
            .flat_map(|d| &d.groups)
            .flat_map(|g| &g.cards)
        {
            let (Some(cap), Some(l)) = (&card.capability, &card.ledger) else {
                continue;
            };
            if !(0..=UNITS_PER_CARD).contains(&l.remaining_units) {
                return Err(format!(
                    "card {} on {}: expected remaining units in [0, {UNITS_PER_CARD}], got {}",
                    card.id, node.name, l.remaining_units
                ));
            }
            if !cap.is_partitioned() && l.allocated_slices > cap.logical_sliced_count {
                return Err(format!(
                    "card {} on {}: expected at most {} slices, got {}",
                    card.id, node.name, cap.logical_sliced_count, l.allocated_slices
                ));
            }
        }
    }
    Ok(())
}

/// A card outside MIG mode carries no partition: no profiles allocated, no live instance.
pub fn no_partition_on_plain(w: &World) -> Check {
    for node in &w.cluster().nodes {
        for card in node
            .devices
            .iter()
            .flat_map(|d| &d.groups)
            .flat_map(|g| &g.cards)
        {
            if card.is_partitioned() {
                continue;
            }
            let carved = card
                .ledger
                .as_ref()
                .is_some_and(|l| l.mode == Mode::Partitioned || !l.allocated_profiles.is_empty());
            let live = w
                .admission
                .instances
                .get(&(node.name.clone(), card.id.clone()))
                .is_some_and(|i| !i.is_empty());
            if carved || live {
                return Err(format!(
                    "card {} on {} is not partitioned: expected no partition, got one",
                    card.id, node.name
                ));
            }
        }
    }
    Ok(())
}

/// Quota reserved (in-flight and admitted) ≤ each listed queue flavor's nominal quota.
pub fn credits_within_quota(
    derived: &model::derive::Derived,
    reserved: &BTreeMap<(String, String, String), i64>,
) -> Check {
    let mut nominal: BTreeMap<(&str, &str, &str), i64> = BTreeMap::new();
    for q in &derived.cluster_queues {
        for g in &q.resource_groups {
            for f in &g.flavors {
                for r in &g.covered_resources {
                    let n = if r == "cpu" {
                        f.nominal_quota.saturating_mul(1000)
                    } else {
                        f.nominal_quota
                    };
                    nominal.insert((&q.name, &f.flavor, r), n);
                }
            }
        }
    }
    for ((queue, flavor, resource), used) in reserved {
        // A flavor the queue no longer lists (its node left) is kept by NodeQueue while Kueue
        // reports it in use (node_queue.go `flavorsMayBeInUse`); the event model re-derives
        // without Kueue's usage, so such reservations are not judged here.
        let Some(cap) = nominal
            .get(&(queue.as_str(), flavor.as_str(), resource.as_str()))
            .copied()
        else {
            continue;
        };
        if *used > cap {
            return Err(format!(
                "queue {queue} flavor {flavor} {resource}: expected reserved ≤ {cap}, got {used}"
            ));
        }
    }
    Ok(())
}

/// Each published InstanceType's views equal those of a fresh derivation of the same cluster
/// (same name, queue live in both) and of a re-derivation from the published quiescence.
pub fn views_fresh(w: &World, observed: &model::derive::Derived) -> Check {
    let fresh = derive(w.cluster());
    let again = derive_after(w.cluster(), Some(observed));
    let live = |d: &model::derive::Derived, name: &str| {
        d.cluster_queues
            .iter()
            .any(|q| q.name == name && q.stop_policy == StopPolicy::None)
    };
    for it in &observed.instance_types {
        for (what, other) in [("fresh derivation", &fresh), ("re-derivation", &again)] {
            let Some(o) = other.instance_types.iter().find(|o| o.name == it.name) else {
                continue;
            };
            if !live(observed, &it.name) || !live(other, &it.name) {
                continue;
            }
            if o.status.views != it.status.views || o.status.cpu != it.status.cpu {
                return Err(format!(
                    "InstanceType {}: expected the {what}'s views {:?}, got {:?}",
                    it.name, o.status.views, it.status.views
                ));
            }
        }
    }
    Ok(())
}

/// [M3] structure, os/arch and CPU-group isolation on the published objects.
pub fn m3_structure(w: &World, observed: &model::derive::Derived) -> Check {
    m3::structure_of("state", observed, w.cluster()).map_err(|v| v.to_string())?;
    m3::os_arch_unmixed(observed).map_err(|v| v.to_string())?;
    m3::cpu_groups_unmixed(observed).map_err(|v| v.to_string())
}

/// [M3] accounting on the published objects: one family per card, nominal = capacity,
/// bounded views, capacities counting the pool's cards.
pub fn m3_accounting(w: &World, observed: &model::derive::Derived) -> Check {
    let cluster = w.cluster();
    m3::cards_in_one_family(cluster).map_err(|v| v.to_string())?;
    m3::quota_matches_capacity(observed).map_err(|v| v.to_string())?;
    for it in &observed.instance_types {
        m3::views_bounded(it, cluster.settings.shared_once_max).map_err(|v| v.to_string())?;
        if let Some(cards) = m3::pool_cards(observed, cluster, it) {
            m3::capacities_count_cards(it, &cards).map_err(|v| v.to_string())?;
        }
    }
    Ok(())
}

/// [M3] invariance, pool isolation and idempotence of the cluster as it stands.
pub fn m3_shape(w: &World) -> Check {
    let s = Scenario {
        name: "state".into(),
        cluster: w.cluster().clone(),
        ..Scenario::default()
    };
    m3::invariance(&s).map_err(|v| v.to_string())?;
    m3::pool_isolation(&s).map_err(|v| v.to_string())?;
    m3::idempotence(&s).map_err(|v| v.to_string())
}

/// Some pool's queue is held and draining (its node left, or its flavors emptied).
pub fn pool_drained(observed: &model::derive::Derived) -> bool {
    observed
        .cluster_queues
        .iter()
        .any(|q| q.stop_policy == StopPolicy::HoldAndDrain)
}
