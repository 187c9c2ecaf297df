//! In-flight accounting: the ledger rebuilt from the Pods on a node, which Pods are charged,
//! and the demands of Workloads that hold cards their Pods have not received yet
//! (admission.md §6.5; node_devices_inflight_test.go).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::devices::{Capability, Ledger, Mode, ProfileCount};
use crate::labels::Labels;
use crate::resources::is_known_accelerator_resource;
use crate::units::UNITS_PER_CARD;
use crate::workload::Container;

use super::demands::merged_resources;

/// The per-container allocation record a Pod carries once the device plugin served it.
pub const ALLOCATION_ANNOTATION: &str = "device.gpustack.ai/accelerator.allocated";
/// The annotation naming the Kueue Workload a Pod belongs to.
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// The Pod label naming its pod set.
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";

/// A Pod as gate 3 reads it: containers (init and app) and annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PodView {
    pub containers: Vec<Container>,
    pub annotations: Labels,
}

/// Whether the container asks for a card of any of the four families.
pub fn asks_for_a_card(c: &Container) -> bool {
    merged_resources(c)
        .keys()
        .any(|k| is_known_accelerator_resource(k))
}

/// The container names an allocation record lists, if it reads as a JSON object keyed by
/// container name (a hand-rolled top-level key scan: the model has no JSON dependency).
pub fn allocation_record_containers(raw: &str) -> Option<Vec<String>> {
    let body = raw.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut names = Vec::new();
    let mut depth = 0i32;
    let mut chars = body.chars().peekable();
    let mut expect_key = true;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next()? {
                        '\\' => s.push(chars.next()?),
                        '"' => break,
                        other => s.push(other),
                    }
                }
                if depth == 0 && expect_key {
                    names.push(s);
                    expect_key = false;
                }
            }
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            ',' if depth == 0 => expect_key = true,
            _ => {}
        }
    }
    (depth == 0).then_some(names)
}

/// `podCharged`: the Pod's allocation record reads and names every container that asks for a
/// card; no record or an unreadable one is not charged; admission.md §6.5.
pub fn pod_charged(pod: &PodView) -> bool {
    let Some(raw) = pod.annotations.get(ALLOCATION_ANNOTATION) else {
        return false;
    };
    let Some(recorded) = allocation_record_containers(raw) else {
        return false;
    };
    pod.containers
        .iter()
        .filter(|c| asks_for_a_card(c))
        .all(|c| recorded.contains(&c.name))
}

/// One allocation a Pod holds on one card, as the device manager aggregates it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CardCharge {
    pub card_id: String,
    pub mode: Mode,
    pub units: i64,
    /// Vendor-spelled partition profile, for a partition instance.
    pub profile: String,
}

/// A Pod bound to a node, with its Workload (empty = none), pod set, whether it is charged,
/// and what it holds on the node's cards.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PodRecord {
    pub name: String,
    pub node: String,
    pub workload: String,
    pub pod_set: String,
    pub charged: bool,
    pub charges: Vec<CardCharge>,
}

/// Remaining instances per profile after the occupied intervals: legal starts not overlapping
/// any occupied interval when placements are cached, else the static count minus allocated;
/// admission.md §16 R11.
fn remaining_profiles(
    capability: &Capability,
    occupied: &[(u32, u32)],
    allocated: &BTreeMap<String, u32>,
) -> Vec<ProfileCount> {
    let overlaps = |s: u32, l: u32| {
        occupied
            .iter()
            .any(|&(os, ol)| s < os.saturating_add(ol) && os < s.saturating_add(l))
    };
    let mut out: Vec<ProfileCount> = capability
        .physical_profiles
        .iter()
        .map(|p| {
            let count = if p.placements.is_empty() {
                p.count
                    .saturating_sub(allocated.get(p.name.as_str()).copied().unwrap_or(0))
            } else {
                p.placements
                    .iter()
                    .filter(|pl| !overlaps(pl.start, pl.length))
                    .count() as u32
            };
            ProfileCount {
                name: p.name.clone(),
                count,
            }
        })
        .collect();
    out.sort();
    out
}

/// A card's ledger row as the device manager rebuilds it from the charges on it: units
/// subtracted (floor 0), one slot per slice, partition instances placed at their first free
/// legal start, mode of the holders (None when nothing is held); admission.md §16 R10.
pub fn rebuild_card_ledger(capability: &Capability, charges: &[&CardCharge]) -> Ledger {
    let mut ledger = Ledger::default();
    let mut occupied: Vec<(u32, u32)> = Vec::new();
    let mut allocated: BTreeMap<String, u32> = BTreeMap::new();
    for charge in charges {
        ledger.mode = charge.mode;
        ledger.remaining_units = (ledger.remaining_units - charge.units.max(0)).max(0);
        match charge.mode {
            Mode::Sliced => ledger.allocated_slices += 1,
            Mode::Partitioned => {
                *allocated.entry(charge.profile.clone()).or_default() += 1;
                let spot = capability
                    .physical_profiles
                    .iter()
                    .find(|p| p.name == charge.profile)
                    .and_then(|p| {
                        p.placements.iter().find(|pl| {
                            !occupied.iter().any(|&(os, ol)| {
                                pl.start < os.saturating_add(ol)
                                    && os < pl.start.saturating_add(pl.length)
                            })
                        })
                    });
                if let Some(pl) = spot {
                    occupied.push((pl.start, pl.length));
                }
            }
            _ => {}
        }
    }
    if capability.is_partitioned() {
        ledger.remaining_profiles = remaining_profiles(capability, &occupied, &allocated);
        ledger.allocated_profiles = allocated
            .into_iter()
            .map(|(name, count)| ProfileCount {
                name: name.into(),
                count,
            })
            .collect();
    }
    if charges.is_empty() {
        ledger.remaining_units = UNITS_PER_CARD;
    }
    ledger
}

/// Pods of (`workload`, `pod_set`) on the node named `node` whose allocation is recorded.
pub fn charged_pods(pods: &[PodRecord], workload: &str, pod_set: &str, node: &str) -> u32 {
    pods.iter()
        .filter(|p| p.workload == workload && p.pod_set == pod_set && p.node == node && p.charged)
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{PartitionProfile, Placement};
    use crate::labels::{Text, ToSmolStr};

    fn container(name: &str, gpu: bool) -> Container {
        Container {
            name: name.into(),
            limits: if gpu {
                [("nvidia.com/gpu".to_string(), "1".to_string())].into()
            } else {
                Default::default()
            },
            ..Container::default()
        }
    }

    fn pod(record: Option<&str>) -> PodView {
        PodView {
            containers: vec![container("c", true), container("sidecar", false)],
            annotations: record
                .map(|r| [(Text::new_static(ALLOCATION_ANNOTATION), r.to_smolstr())].into())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn a_pod_is_charged_only_when_every_card_container_is_recorded() {
        assert!(pod_charged(&pod(Some(r#"{"c":{"ids":["gpu-0"]}}"#))));
        assert!(!pod_charged(&pod(Some(r#"{"other":{}}"#))));
        assert!(!pod_charged(&pod(Some("{"))));
        assert!(!pod_charged(&pod(None)));
    }

    #[test]
    fn record_keys_are_top_level_only() {
        assert_eq!(
            allocation_record_containers(r#"{"a":{"b":1},"c":[1,{"d":2}]}"#),
            Some(vec!["a".to_string(), "c".to_string()])
        );
        assert_eq!(allocation_record_containers("{\"a\":{"), None);
        assert_eq!(allocation_record_containers("[]"), None);
    }

    #[test]
    fn the_rebuilt_ledger_subtracts_charges_and_counts_slices() {
        let cap = Capability {
            logical_sliced_count: 10,
            ..Capability::default()
        };
        let c = CardCharge {
            card_id: "x".into(),
            mode: Mode::Sliced,
            units: 480_000,
            profile: String::new(),
        };
        let l = rebuild_card_ledger(&cap, &[&c, &c]);
        assert_eq!(
            (l.mode, l.remaining_units, l.allocated_slices),
            (Mode::Sliced, 640_000, 2)
        );
        let free = rebuild_card_ledger(&cap, &[]);
        assert_eq!(
            (free.mode, free.remaining_units),
            (Mode::None, UNITS_PER_CARD)
        );
    }

    #[test]
    fn a_partition_instance_blocks_overlapping_placements() {
        let profile = |name: &str, starts: &[u32], len: u32| PartitionProfile {
            name: name.into(),
            count: starts.len() as u32,
            placements: starts
                .iter()
                .map(|&s| Placement {
                    start: s,
                    length: len,
                })
                .collect(),
            ..PartitionProfile::default()
        };
        let cap = Capability {
            physical_sliced_count: 7,
            physical_profiles: vec![
                profile("1g.10gb", &[0, 1, 2, 3, 4, 5, 6], 1),
                profile("3g.40gb", &[0, 4], 4),
                profile("7g.80gb", &[0], 8),
            ],
            ..Capability::default()
        };
        let empty = rebuild_card_ledger(&cap, &[]);
        assert_eq!(
            empty
                .remaining_profiles
                .iter()
                .map(|p| p.count)
                .collect::<Vec<_>>(),
            [7, 2, 1]
        );
        let carve = CardCharge {
            card_id: "x".into(),
            mode: Mode::Partitioned,
            units: 800_000,
            profile: "3g.40gb".into(),
        };
        let l = rebuild_card_ledger(&cap, &[&carve]);
        // admission.md §11.2: 1g.10gb 3 (starts 4,5,6), 3g.40gb 1, 7g.80gb 0.
        assert_eq!(
            l.remaining_profiles
                .iter()
                .map(|p| p.count)
                .collect::<Vec<_>>(),
            [3, 1, 0]
        );
        assert_eq!(
            l.allocated_profiles,
            [ProfileCount {
                name: "3g.40gb".into(),
                count: 1
            }]
        );
    }
}
