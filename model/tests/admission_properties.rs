//! Properties of the admission oracle over random pools and request streams ([M2]):
//! gate 3 Ready ⇒ gates 4–5 place it on the cards gate 3 budgeted; no partition on a
//! non-partitioned card; no card ever gives more than it has; charge then release restores
//! the ledger exactly.

use proptest::prelude::*;

use model::cluster::{Cluster, Namespace};
use model::devices::{Capability, Card, DeviceGroup, Devices, Mode};
use model::examples::nfd_node;
use model::ledger::{catalogs, seed, Charge};
use model::lifecycle::{AdmissionState, Outcome, QuotaPrediction};
use model::nodefeature::local_queue_name;
use model::units::UNITS_PER_CARD;
use model::workload::{Container, PodSet, Workload};

const POOL: &str = "gpustack--nvidia-a100-sxm4-40gb-linux-amd64";

/// A card's family: logically sliceable, partitioned (A100-40GB MIG catalog), or neither.
fn arb_capability() -> impl Strategy<Value = Capability> {
    prop_oneof![
        Just(Capability {
            logical_sliced_count: 4,
            ..Capability::default()
        }),
        Just(catalogs::a100_40gb()),
        Just(Capability::default()),
    ]
}

/// 1–3 nodes of 1–4 A100-40GB cards each, every card seeded free by the device manager.
fn arb_cluster() -> impl Strategy<Value = Cluster> {
    prop::collection::vec(prop::collection::vec(arb_capability(), 1..=4), 1..=3).prop_map(|nodes| {
        let nodes = nodes
            .into_iter()
            .enumerate()
            .map(|(n, caps)| {
                let mut node = nfd_node(&format!("node-{n}"), "AMD", "AMD EPYC 7763", 64);
                node.devices = Some(Devices {
                    groups: vec![DeviceGroup {
                        manufacturer: "nvidia".into(),
                        id: "a100-sxm4-40gb".into(),
                        name: "NVIDIA A100-SXM4-40GB".into(),
                        memory_mib: 40960,
                        cards: caps
                            .into_iter()
                            .enumerate()
                            .map(|(i, cap)| Card {
                                id: format!("GPU-{n}-{i}"),
                                index: i as u32,
                                ledger: Some(seed(cap.clone()).row),
                                capability: Some(cap),
                            })
                            .collect(),
                        ..DeviceGroup::default()
                    }],
                });
                node
            })
            .collect();
        Cluster {
            nodes,
            namespaces: vec![Namespace {
                name: "default".into(),
                terminating: false,
            }],
            ..Cluster::default()
        }
    })
}

/// One container's request of one family, valid by construction.
fn arb_request() -> impl Strategy<Value = Vec<(String, String)>> {
    let kv = |pairs: Vec<(&str, String)>| -> Vec<(String, String)> {
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    };
    prop_oneof![
        (1u32..=3).prop_map(move |n| kv(vec![("nvidia.com/gpu", n.to_string())])),
        (1u32..=3).prop_map(move |n| kv(vec![("nvidia.com/gpu.shared", n.to_string())])),
        (1u32..=100).prop_map(move |p| kv(vec![
            ("nvidia.com/gpu.sliced", "1".into()),
            ("nvidia.com/gpu.sliced.memory-percentage", p.to_string()),
        ])),
        prop::sample::select(vec![
            "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"
        ])
        .prop_map(move |p| kv(vec![
            ("nvidia.com/gpu.partitioned", "1".into()),
            (&format!("nvidia.com/gpu.partitioned.mig-{p}"), "1".into()),
        ])),
    ]
}

fn arb_workloads() -> impl Strategy<Value = Vec<Workload>> {
    prop::collection::vec((arb_request(), 1u32..=2), 1..=8).prop_map(|ws| {
        ws.into_iter()
            .enumerate()
            .map(|(i, (requests, count))| Workload {
                deployment: None,
                name: format!("w{i}"),
                namespace: "default".into(),
                queue: local_queue_name(POOL),
                pod_sets: vec![PodSet {
                    name: "main".into(),
                    count,
                    containers: vec![Container {
                        name: "c".into(),
                        requests: requests.into_iter().collect(),
                        ..Container::default()
                    }],
                    ..PodSet::default()
                }],
            })
            .collect()
    })
}

/// No card gives more than it has, and partitions only ever sit on partitioned cards.
fn ledger_is_sound(s: &AdmissionState) -> Result<(), TestCaseError> {
    for node in &s.cluster.nodes {
        for card in node
            .devices
            .iter()
            .flat_map(|d| d.groups.iter().flat_map(|g| &g.cards))
        {
            let (Some(cap), Some(row)) = (&card.capability, &card.ledger) else {
                continue;
            };
            prop_assert!(
                (0..=UNITS_PER_CARD).contains(&row.remaining_units),
                "{}: {row:?}",
                card.id
            );
            prop_assert!(
                row.allocated_slices <= cap.logical_sliced_count,
                "{}: {} slices of {}",
                card.id,
                row.allocated_slices,
                cap.logical_sliced_count
            );
            if row.mode == Mode::Partitioned || !row.allocated_profiles.is_empty() {
                prop_assert!(
                    cap.is_partitioned(),
                    "{} holds a partition: {row:?}",
                    card.id
                );
            }
        }
    }
    for hold in s.holds.values() {
        for c in &hold.charges {
            if let Charge::Partition(_) = c.charge {
                let card = s
                    .cluster
                    .nodes
                    .iter()
                    .find(|n| n.name == c.node)
                    .and_then(|n| n.devices.as_ref())
                    .and_then(|d| {
                        d.groups
                            .iter()
                            .flat_map(|g| &g.cards)
                            .find(|k| k.id == c.card)
                    });
                prop_assert!(card.is_some_and(|k| k.is_partitioned()), "{c:?}");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Gate 3 Ready ⇒ the budgeted cards take the charges (never Unplaceable), and every
    /// intermediate ledger is sound.
    #[test]
    fn ready_is_always_placeable_and_the_ledger_stays_sound(
        cluster in arb_cluster(),
        workloads in arb_workloads(),
    ) {
        let mut s = AdmissionState::new(cluster);
        for w in &workloads {
            let outcome = s.submit(w);
            prop_assert!(!matches!(outcome, Outcome::Unplaceable { .. }), "{}: {outcome:?}", w.name);
            ledger_is_sound(&s)?;
        }
    }

    /// Where Kueue reserved exactly what the model's gate 2 assigns (`quota_assignment`),
    /// judging on Kueue's reservation (`submit_reserved`, the node-devices controller beside a
    /// real Kueue) gives the outcome and leaves the state `submit` does.
    #[test]
    fn judging_on_kueues_reservation_equals_judging_on_the_models(
        cluster in arb_cluster(),
        workloads in arb_workloads(),
    ) {
        let mut own = AdmissionState::new(cluster.clone());
        let mut beside_kueue = AdmissionState::new(cluster);
        for w in &workloads {
            let assignment = beside_kueue.quota_assignment(w);
            let outcome = own.submit(w);
            match assignment {
                QuotaPrediction::Assigned(given) => {
                    let judged = beside_kueue.submit_reserved(w, &given);
                    prop_assert_eq!(&judged, &outcome, "{}", w.name);
                }
                // gate 1 or 2 holds it: Kueue reserves nothing, the controller judges nothing
                _ => prop_assert!(
                    matches!(outcome, Outcome::Pending { .. } | Outcome::Rejected { .. }),
                    "{}: no assignment but {outcome:?}", w.name
                ),
            }
            prop_assert_eq!(&own.cluster, &beside_kueue.cluster);
            prop_assert_eq!(&own.reserved, &beside_kueue.reserved);
        }
    }

    /// Charging then releasing every admitted workload (in any order) restores the ledger and
    /// the reserved quota exactly.
    #[test]
    fn finishing_everything_restores_the_ledger(
        cluster in arb_cluster(),
        workloads in arb_workloads(),
        reverse in any::<bool>(),
    ) {
        let original = cluster.clone();
        let mut s = AdmissionState::new(cluster);
        let mut admitted = Vec::new();
        for w in &workloads {
            if s.submit(w) == Outcome::Admitted {
                admitted.push(w.name.clone());
            }
        }
        if reverse {
            admitted.reverse();
        }
        for name in &admitted {
            prop_assert!(s.finish("default", name).is_ok());
        }
        prop_assert_eq!(&s.cluster, &original);
        prop_assert!(s.reserved.is_empty());
        prop_assert!(s.instances.is_empty());
    }
}

mod queue_judgment {
    use super::*;
    use model::admission::candidates::{FlavorScope, ScopedDevices};
    use model::admission::demands::FamilyDemand;
    use model::admission::feasibility::{judge_queue, node_devices_feasibility};
    use model::resources::Family;

    const FLAVOR: &str = "f";

    fn arb_pool() -> impl Strategy<Value = Vec<ScopedDevices>> {
        arb_cluster().prop_map(|c| {
            c.nodes
                .into_iter()
                .map(|n| ScopedDevices {
                    hostname: n.name.clone(),
                    name: n.name,
                    devices: n.devices.unwrap_or_default(),
                    scopes: vec![FlavorScope {
                        flavor: FLAVOR.into(),
                        accelerator_key: "nvidia-a100-sxm4-40gb".into(),
                        accelerator_count: 0,
                    }],
                })
                .collect()
        })
    }

    fn arb_demand() -> impl Strategy<Value = FamilyDemand> {
        let d = |family, cards: i64, units_per_card: i64, profile: &str| FamilyDemand {
            family,
            cards,
            units_per_card,
            profile: profile.into(),
            flavor: FLAVOR.into(),
            ..FamilyDemand::default()
        };
        prop_oneof![
            (1i64..=3).prop_map(move |n| d(Family::Exclusive, n, 0, "")),
            (1i64..=3).prop_map(move |n| d(Family::Shared, n, 0, "")),
            (1i64..=3, 1i64..=100).prop_map(move |(n, p)| d(Family::Sliced, n, p * 16_000, "")),
            (
                1i64..=3,
                prop::sample::select(vec!["1g.5gb", "3g.20gb", "7g.40gb"])
            )
                .prop_map(move |(n, p)| d(Family::Partitioned, n, 0, p)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Judging a queue in one pass gives each Workload the verdict a separate judgment
        /// gives it with every earlier Ready Workload counted in flight (admission.md §6.5).
        #[test]
        fn one_pass_equals_judging_each_with_earlier_ready_ones_in_flight(
            pool in arb_pool(),
            queue in prop::collection::vec(prop::collection::vec(arb_demand(), 1..=2), 1..=8),
        ) {
            let fast = judge_queue(&pool, &queue);
            let mut inflight: Vec<FamilyDemand> = Vec::new();
            for (demands, verdict) in queue.iter().zip(&fast) {
                let slow = node_devices_feasibility(&pool, &inflight, demands);
                prop_assert_eq!(&slow, verdict);
                if slow.is_ready() {
                    inflight.extend(demands.iter().cloned());
                }
            }
        }
    }
}
