//! What must hold of a world at every quiescent point, whatever history led there: card
//! ledgers in bounds, no partition on a plain card, reserved quota within nominal, views equal
//! a fresh derivation, and the [M3] structure and accounting checks on the published objects.
//! `verify check` evaluates them in every reachable state, `verify soak` at every quiescent
//! point of a churn run, and `verify replay` after every event of a scenario, so a
//! counterexample any of them writes names a property the others can reproduce.

use std::collections::BTreeMap;

use model::cluster::Cluster;
use model::derive::Derived;
use model::devices::Mode;
use model::events::World;
use model::objects::StopPolicy;
use model::scenario::Scenario;
use model::units::UNITS_PER_CARD;

use crate::properties as m3;

/// What one check found: nothing, or why the invariant is broken (a verdict, not a failure
/// to check).
pub type Check = Result<(), Breach>;

/// Why an invariant does not hold at a quiescent point.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Breach(pub String);

impl From<m3::Violation> for Breach {
    fn from(v: m3::Violation) -> Self {
        Breach(v.to_string())
    }
}

pub const NO_OVERCOMMIT: &str = "no card overcommitted";
pub const NO_PARTITION_ON_PLAIN: &str = "no partition on a non-partitioned card";
pub const CREDITS_WITHIN_QUOTA: &str = "admitted credits within quota";
pub const VIEWS_FRESH: &str = "views equal a fresh derivation at quiescence";
pub const M3_STRUCTURE: &str = "[M3] structure";
pub const M3_ACCOUNTING: &str = "[M3] accounting";

/// Every invariant of a world at quiescence, in report order.
pub const INVARIANTS: [&str; 6] = [
    NO_OVERCOMMIT,
    NO_PARTITION_ON_PLAIN,
    CREDITS_WITHIN_QUOTA,
    VIEWS_FRESH,
    M3_STRUCTURE,
    M3_ACCOUNTING,
];

/// The invariants `world` breaks, `observed` being what it publishes: (name, why) each.
pub fn at_quiescence(world: &World, observed: &Derived) -> Vec<(&'static str, String)> {
    [
        (NO_OVERCOMMIT, cards_within_bounds(world)),
        (NO_PARTITION_ON_PLAIN, no_partition_on_plain(world)),
        (
            CREDITS_WITHIN_QUOTA,
            credits_within_quota(&world.admission.derived, &world.admission.reserved),
        ),
        (VIEWS_FRESH, views_fresh(world, observed)),
        (M3_STRUCTURE, m3_structure(world, observed)),
        (M3_ACCOUNTING, m3_accounting(world, observed)),
    ]
    .into_iter()
    .filter_map(|(name, r)| r.err().map(|Breach(why)| (name, why)))
    .collect()
}

/// Every card's remaining units lie in [0, D] and its logical slices within its slots.
pub fn cards_within_bounds(w: &World) -> Check {
    for node in &w.cluster().nodes {
        for card in node.cards() {
            let (Some(cap), Some(l)) = (&card.capability, &card.ledger) else {
                continue;
            };
            if !(0..=UNITS_PER_CARD).contains(&l.remaining_units) {
                return Err(Breach(format!(
                    "card {} on {}: expected remaining units in [0, {UNITS_PER_CARD}], got {}",
                    card.id, node.name, l.remaining_units
                )));
            }
            if !cap.is_partitioned() && l.allocated_slices > cap.logical_sliced_count {
                return Err(Breach(format!(
                    "card {} on {}: expected at most {} slices, got {}",
                    card.id, node.name, cap.logical_sliced_count, l.allocated_slices
                )));
            }
        }
    }
    Ok(())
}

/// A card outside MIG mode carries no partition: no profiles allocated, no live instance.
pub fn no_partition_on_plain(w: &World) -> Check {
    for node in &w.cluster().nodes {
        for card in node.cards() {
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
                return Err(Breach(format!(
                    "card {} on {} is not partitioned: expected no partition, got one",
                    card.id, node.name
                )));
            }
        }
    }
    Ok(())
}

/// Quota reserved (in-flight and admitted) ≤ each listed queue flavor's nominal quota.
pub fn credits_within_quota(
    derived: &Derived,
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
            return Err(Breach(format!(
                "queue {queue} flavor {flavor} {resource}: expected reserved ≤ {cap}, got {used}"
            )));
        }
    }
    Ok(())
}

/// Each published InstanceType's views equal those of a fresh derivation of the same cluster
/// (same name, queue live in both) and of a re-derivation from the published quiescence.
pub fn views_fresh(w: &World, observed: &Derived) -> Check {
    let deriver = &w.admission.deriver;
    let fresh = deriver.derive(w.cluster());
    let again = deriver.derive_after(w.cluster(), Some(observed));
    let live = |d: &Derived, name: &str| {
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
                return Err(Breach(format!(
                    "InstanceType {}: expected the {what}'s views {:?}, got {:?}",
                    it.name, o.status.views, it.status.views
                )));
            }
        }
    }
    Ok(())
}

/// [M3] structure, os/arch and CPU-group isolation on the published objects.
pub fn m3_structure(w: &World, observed: &Derived) -> Check {
    m3::structure_of("state", observed, w.cluster())?;
    m3::os_arch_unmixed(observed)?;
    m3::cpu_groups_unmixed(observed).map_err(Breach::from)
}

/// [M3] accounting on the published objects: one family per card, nominal = capacity,
/// bounded views, capacities counting the pool's cards.
pub fn m3_accounting(w: &World, observed: &Derived) -> Check {
    let cluster = w.cluster();
    m3::cards_in_one_family(cluster)?;
    m3::quota_matches_capacity(observed)?;
    for it in &observed.instance_types {
        m3::views_bounded(it, cluster.settings.shared_once_max)?;
        if let Some(cards) = m3::pool_cards(observed, cluster, it) {
            m3::capacities_count_cards(it, &cards)?;
        }
    }
    Ok(())
}

/// [M3] invariance, pool isolation and idempotence of the cluster as it stands, derived as
/// the world derives.
pub fn m3_shape(w: &World) -> Check {
    let s = Scenario {
        name: "state".into(),
        cluster: w.cluster().clone(),
        ..Scenario::default()
    };
    let chain =
        |c: &Cluster, previous: Option<&Derived>| w.admission.deriver.derive_after(c, previous);
    m3::shape_with(&s, &chain).map_err(Breach::from)
}
