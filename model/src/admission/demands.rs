//! Demand parsing: a Workload's pod sets → correlated per-family accelerator demands
//! (admission.md §6.3; corrections.md 4; node_devices_admission.go `parseFamilyDemands`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::credits::parse_quantity;
use crate::error::ModelError;
use crate::nodefeature::is_credits_resource_name;
use crate::resources::{classify, Family, Key};
use crate::units::clamp_i32;
use crate::workload::{Container, PodSet, ResourceList};

/// One shared holder: a container that needs `cards` distinct cards on one node, one share
/// each, repeated `containers` times (corrections.md 4).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Holder {
    pub cards: i64,
    pub containers: i64,
}

/// One correlated demand of a (pod set, family), possibly merged across pod sets
/// (admission.md §6.3 "Result").
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct FamilyDemand {
    pub family: Family,
    /// Cards (exclusive, shared, sliced) or instances (partitioned).
    pub cards: i64,
    /// Units one card must still have free for one of them (sliced/partitioned counting key).
    pub units_per_card: i64,
    /// Requested partition profile, published spelling; empty otherwise.
    pub profile: String,
    /// The ResourceFlavor Kueue assigned; empty = unresolved.
    pub flavor: String,
    /// Pod sets the demand was read from (verdict text only).
    #[serde(alias = "podsets")]
    pub pod_sets: Vec<String>,
    /// Shared holders; empty reads as one holder of `cards` (conformance README).
    pub holders: Vec<Holder>,
    /// TAS hostname the demand is scoped to; empty = pool-wide.
    pub node: String,
}

impl Default for FamilyDemand {
    fn default() -> Self {
        FamilyDemand {
            family: Family::None,
            cards: 0,
            units_per_card: 0,
            profile: String::new(),
            flavor: String::new(),
            pod_sets: Vec::new(),
            holders: Vec::new(),
            node: String::new(),
        }
    }
}

impl FamilyDemand {
    /// The shared holders to fit, largest card count first; a demand without a holder list is
    /// one holder `{cards, containers: 1}` (corrections.md 4; conformance README).
    pub fn shared_holders(&self) -> Vec<Holder> {
        let mut holders = if self.holders.is_empty() {
            vec![Holder {
                cards: self.cards,
                containers: 1,
            }]
        } else {
            self.holders.clone()
        };
        holders.sort_by_key(|h| std::cmp::Reverse(h.cards));
        holders
    }
}

/// Kueue's assignment for one pod set: flavor per covered resource, and the TAS placement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct PodSetAssignment {
    pub pod_set: String,
    /// Covered resource → ResourceFlavor name.
    pub flavors: BTreeMap<String, String>,
    /// Hostname-level topology assignment: pods placed per hostname; empty = none.
    pub hosts: Vec<HostPods>,
}

/// Pods of one pod set TAS placed on one hostname.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HostPods {
    pub hostname: String,
    pub pods: u32,
}

/// `Quantity.Value()` of a request, unbounded; anything unparsable is a [`ModelError`].
pub fn quantity_value(q: &str) -> Result<i128, ModelError> {
    Ok(parse_quantity(q)?.value())
}

/// A container's limits overlaid by its requests (requests win);
/// node_devices_admission.go `mergedContainerResources`.
pub fn merged_resources(c: &Container) -> ResourceList {
    let mut merged = c.limits.clone();
    merged.extend(c.requests.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

/// Whether `key` is its family's card-count key (`<base>`, `.shared`, `.sliced`,
/// `.partitioned`); node_devices_admission.go `isCardKey`.
pub fn is_card_key(key: &Key) -> bool {
    matches!(
        key,
        Key::Whole | Key::Shared | Key::Sliced | Key::Partitioned
    )
}

/// Per-family demand of one pod set run as `pods` pods, init and app containers alike,
/// strictest units, smallest profile, holders per shared container; admission.md §6.3.
pub fn pod_set_family_demands(ps: &PodSet, pods: u32) -> Result<Vec<FamilyDemand>, ModelError> {
    let mut by_family: BTreeMap<&'static str, FamilyDemand> = BTreeMap::new();
    let containers = ps
        .containers
        .iter()
        .filter(|c| c.init)
        .chain(ps.containers.iter().filter(|c| !c.init));
    for c in containers {
        for (name, qty) in merged_resources(c) {
            let Some(r) = classify(&name) else { continue };
            let family = r.key.family();
            if matches!(family, Family::None | Family::Visibility) {
                continue;
            }
            let d = by_family
                .entry(family.name())
                .or_insert_with(|| FamilyDemand {
                    family,
                    ..FamilyDemand::default()
                });
            match &r.key {
                Key::SlicedUnits | Key::PartitionedUnits => {
                    d.units_per_card = d.units_per_card.max(clamp_i32(quantity_value(&qty)?));
                }
                key if is_card_key(key) => {
                    let n = clamp_i32(quantity_value(&qty)?);
                    d.cards = clamp_i32(i128::from(d.cards) + i128::from(n));
                    if family == Family::Shared && n > 0 {
                        d.holders.push(Holder {
                            cards: n,
                            containers: 1,
                        });
                    }
                }
                Key::PartitionedProfile(p) if d.profile.is_empty() || *p < d.profile => {
                    d.profile = p.clone();
                }
                _ => {}
            }
        }
    }
    let mut out: Vec<FamilyDemand> = by_family
        .into_values()
        .filter_map(|mut d| {
            d.cards = clamp_i32(i128::from(d.cards) * i128::from(pods));
            for h in &mut d.holders {
                h.containers = clamp_i32(i128::from(h.containers) * i128::from(pods));
            }
            d.holders.retain(|h| h.containers > 0);
            (d.cards > 0).then_some(d)
        })
        .collect();
    sort_demands(&mut out);
    Ok(out)
}

/// The flavor Kueue assigned to `pod_set` for its accelerator credits: exactly one
/// `credits.gpustack.ai/<m>` entry, else empty; node_devices_admission.go `assignedFlavor`.
pub fn assigned_flavor(admission: Option<&[PodSetAssignment]>, pod_set: &str) -> String {
    let Some(psa) = admission.and_then(|a| a.iter().find(|a| a.pod_set == pod_set)) else {
        return String::new();
    };
    let mut credits = psa
        .flavors
        .iter()
        .filter(|(res, _)| is_credits_resource_name(res));
    match (credits.next(), credits.next()) {
        (Some((_, flavor)), None) => flavor.clone(),
        _ => String::new(),
    }
}

/// Whether two demands have one shape and merge (family, units, profile, flavor, node);
/// admission.md §6.3 "Merge".
fn same_shape(a: &FamilyDemand, b: &FamilyDemand) -> bool {
    a.family == b.family
        && a.units_per_card == b.units_per_card
        && a.profile == b.profile
        && a.flavor == b.flavor
        && a.node == b.node
}

/// Folds `d` into `demands`: cards summed and holders merged into an entry of the same shape,
/// appended otherwise; node_devices_admission.go `mergeDemand`.
pub fn merge_demand(demands: &mut Vec<FamilyDemand>, d: FamilyDemand) {
    match demands.iter_mut().find(|e| same_shape(e, &d)) {
        Some(e) => {
            e.cards = clamp_i32(i128::from(e.cards) + i128::from(d.cards));
            e.pod_sets.extend(d.pod_sets);
            for h in d.holders {
                match e.holders.iter_mut().find(|x| x.cards == h.cards) {
                    Some(x) => {
                        x.containers =
                            clamp_i32(i128::from(x.containers) + i128::from(h.containers))
                    }
                    None => e.holders.push(h),
                }
            }
        }
        None => demands.push(d),
    }
}

/// Most constrained first: partitions, then larger units, then family name, then node;
/// admission.md §6.3 "Sort" (stable).
pub fn sort_demands(demands: &mut [FamilyDemand]) {
    demands.sort_by(|a, b| {
        let pa = a.family == Family::Partitioned;
        let pb = b.family == Family::Partitioned;
        pb.cmp(&pa)
            .then(b.units_per_card.cmp(&a.units_per_card))
            .then(a.family.name().cmp(b.family.name()))
            .then(a.node.cmp(&b.node))
    });
}

/// Every pod set's demands, flavor-stamped, split per TAS hostname when placed at hostname
/// level, merged and sorted; admission.md §6.3 (`parseFamilyDemands`).
pub fn parse_family_demands(
    pod_sets: &[PodSet],
    admission: Option<&[PodSetAssignment]>,
) -> Result<Vec<FamilyDemand>, ModelError> {
    let mut demands = Vec::new();
    for ps in pod_sets {
        let flavor = assigned_flavor(admission, &ps.name);
        let hosts: Vec<HostPods> = admission
            .and_then(|a| a.iter().find(|a| a.pod_set == ps.name))
            .map(|a| a.hosts.clone())
            .unwrap_or_default();
        let placements: Vec<(String, u32)> = if hosts.is_empty() {
            vec![(String::new(), ps.count)]
        } else {
            hosts.into_iter().map(|h| (h.hostname, h.pods)).collect()
        };
        for (node, pods) in placements {
            for mut d in pod_set_family_demands(ps, pods)? {
                d.flavor = flavor.clone();
                d.pod_sets = vec![ps.name.clone()];
                d.node = node.clone();
                merge_demand(&mut demands, d);
            }
        }
    }
    sort_demands(&mut demands);
    Ok(demands)
}

/// A copy of the demands with no pod-set provenance, so verdicts carry no role clause
/// (single-pod-set Workloads); node_devices_admission.go `withoutRoles`.
pub fn without_roles(demands: &[FamilyDemand]) -> Vec<FamilyDemand> {
    demands
        .iter()
        .cloned()
        .map(|mut d| {
            d.pod_sets.clear();
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)], init: bool) -> Container {
        let list = |kv: &[(&str, &str)]| {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<ResourceList>()
        };
        Container {
            name: "c".into(),
            requests: list(requests),
            limits: list(limits),
            init,
        }
    }

    fn pod_set(name: &str, count: u32, containers: Vec<Container>) -> PodSet {
        PodSet {
            name: name.into(),
            count,
            containers,
            ..PodSet::default()
        }
    }

    #[test]
    fn quantities_round_up_and_refuse_garbage() {
        assert_eq!(quantity_value("5"), Ok(5));
        assert_eq!(quantity_value("1500m"), Ok(2));
        assert_eq!(quantity_value("2k"), Ok(2000));
        assert_eq!(quantity_value("1Ki"), Ok(1024));
        assert!(quantity_value("two").is_err());
        assert!(quantity_value("").is_err());
        assert!(quantity_value("1x").is_err());
        assert!(quantity_value("999999999999999999999999999999Ti").is_err());
        // Value() rounds away from zero (apimachinery resource.Quantity).
        assert_eq!(quantity_value("-1500m"), Ok(-2));
    }

    #[test]
    fn cards_sum_and_units_take_the_strictest() {
        let ps = pod_set(
            "main",
            1,
            vec![
                container(
                    &[
                        ("nvidia.com/gpu.sliced", "1"),
                        ("nvidia.com/gpu.sliced.units", "160000"),
                    ],
                    &[],
                    false,
                ),
                container(
                    &[
                        ("nvidia.com/gpu.sliced", "1"),
                        ("nvidia.com/gpu.sliced.units", "480000"),
                    ],
                    &[],
                    false,
                ),
            ],
        );
        let d = parse_family_demands(&[ps], None).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].cards, d[0].units_per_card), (2, 480_000));
    }

    #[test]
    fn a_counting_key_alone_demands_nothing() {
        let ps = pod_set(
            "main",
            1,
            vec![container(
                &[("nvidia.com/gpu.sliced.units", "320000")],
                &[],
                false,
            )],
        );
        assert!(parse_family_demands(&[ps], None).unwrap().is_empty());
    }

    #[test]
    fn different_budgets_stay_separate_strictest_first_and_same_ones_merge() {
        let slice = |units: &str| {
            vec![container(
                &[
                    ("nvidia.com/gpu.sliced", "1"),
                    ("nvidia.com/gpu.sliced.units", units),
                ],
                &[],
                false,
            )]
        };
        let d = parse_family_demands(
            &[
                pod_set("small", 2, slice("160000")),
                pod_set("large", 1, slice("1280000")),
                pod_set("tiny", 3, slice("160000")),
            ],
            None,
        )
        .unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].pod_sets, ["large"]);
        assert_eq!(d[1].cards, 5);
        assert_eq!(d[1].pod_sets, ["small", "tiny"]);
    }

    #[test]
    fn init_and_limits_only_partitions_are_read_with_the_smallest_profile() {
        let ps = pod_set(
            "main",
            1,
            vec![container(
                &[],
                &[
                    ("nvidia.com/gpu.partitioned", "1"),
                    ("nvidia.com/gpu.partitioned.mig-3g.40gb", "1"),
                    ("nvidia.com/gpu.partitioned.mig-1g.10gb", "1"),
                    ("nvidia.com/gpu.partitioned.units", "200000"),
                ],
                true,
            )],
        );
        let d = parse_family_demands(&[ps], None).unwrap();
        assert_eq!(d[0].family, Family::Partitioned);
        assert_eq!(d[0].profile, "1g.10gb");
        assert_eq!(d[0].units_per_card, 200_000);
    }

    #[test]
    fn a_shared_container_is_one_holder_scaled_by_pods() {
        let ps = pod_set(
            "main",
            3,
            vec![container(&[("nvidia.com/gpu.shared", "2")], &[], false)],
        );
        let d = parse_family_demands(&[ps], None).unwrap();
        assert_eq!(d[0].cards, 6);
        assert_eq!(
            d[0].holders,
            [Holder {
                cards: 2,
                containers: 3
            }]
        );
    }

    #[test]
    fn assigned_flavor_needs_exactly_one_credits_entry() {
        let psa = |flavors: &[(&str, &str)]| {
            vec![PodSetAssignment {
                pod_set: "p".into(),
                flavors: flavors
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                hosts: vec![],
            }]
        };
        assert_eq!(
            assigned_flavor(Some(&psa(&[("credits.gpustack.ai/nvidia", "f")])), "p"),
            "f"
        );
        assert_eq!(assigned_flavor(Some(&psa(&[("cpu", "c")])), "p"), "");
        assert_eq!(
            assigned_flavor(
                Some(&psa(&[
                    ("credits.gpustack.ai/nvidia", "f"),
                    ("credits.gpustack.ai/amd", "f")
                ])),
                "p"
            ),
            ""
        );
        assert_eq!(assigned_flavor(None, "p"), "");
    }

    #[test]
    fn tas_hostnames_split_the_demand_per_node() {
        let ps = pod_set(
            "main",
            3,
            vec![container(&[("nvidia.com/gpu", "1")], &[], false)],
        );
        let admission = vec![PodSetAssignment {
            pod_set: "main".into(),
            flavors: [("credits.gpustack.ai/nvidia".to_string(), "f".to_string())].into(),
            hosts: vec![
                HostPods {
                    hostname: "b".into(),
                    pods: 1,
                },
                HostPods {
                    hostname: "a".into(),
                    pods: 2,
                },
            ],
        }];
        let d = parse_family_demands(&[ps], Some(&admission)).unwrap();
        let got: Vec<(&str, i64)> = d.iter().map(|d| (d.node.as_str(), d.cards)).collect();
        assert_eq!(got, [("a", 2), ("b", 1)]);
    }
}
