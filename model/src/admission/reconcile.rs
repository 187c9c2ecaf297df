//! The whole judgment of one Workload: skip rules, explicit holds, ledger rebuild, in-flight
//! demands and the per-card fit (admission.md §6.2–6.5, §6.8; node_devices_admission.go
//! `Reconcile`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::workload::PodSet;

use super::candidates::{
    candidate_devices, devices_selector, flavor_scope, selector_matches, FlavorObject, NodeDevices,
    ScopedDevices,
};
use super::demands::{
    assigned_flavor, parse_family_demands, pod_set_family_demands, without_roles, FamilyDemand,
    PodSetAssignment,
};
use super::feasibility::node_devices_feasibility;
use super::inflight::{charged_pods, rebuild_card_ledger, PodRecord};
use super::verdict::{
    inflight_unresolved_message, unassigned_flavor_message, unresolved_flavor_message, CheckState,
    Verdict,
};

/// A Workload as this controller observes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadRecord {
    pub name: String,
    pub pod_sets: Vec<PodSet>,
    /// `status.admission.podSetAssignments`; `None` = no admission at all.
    pub admission: Option<Vec<PodSetAssignment>>,
    pub quota_reserved: bool,
    pub admitted: bool,
    pub evicted: bool,
    pub finished: bool,
    pub deactivated: bool,
    /// State of this controller's check; `None` = the Workload carries none.
    pub check: Option<CheckState>,
}

impl WorkloadRecord {
    /// Holds a reservation and is live: not evicted, finished or deactivated.
    pub fn is_live_reserved(&self) -> bool {
        self.quota_reserved && !self.evicted && !self.finished && !self.deactivated
    }
}

/// Everything one judgment reads: flavors, Devices (with their Node's hostname), Workloads
/// and the Pods bound to nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct World {
    pub flavors: Vec<FlavorObject>,
    pub devices: Vec<NodeDevices>,
    pub workloads: Vec<WorkloadRecord>,
    pub pods: Vec<PodRecord>,
}

/// What a reconcile did: left the Workload alone, or decided a verdict to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled {
    Skipped,
    Judged(Verdict),
}

/// Whether the Workload is judged at all: reserved, live, not yet admitted, carrying this
/// controller's check; admission.md §6.2, §16 R12.
pub fn is_judged(w: &WorkloadRecord) -> bool {
    w.is_live_reserved() && !w.admitted && w.check.is_some()
}

/// Every flavor any pod set assignment names.
fn referenced_flavors(w: &WorkloadRecord) -> BTreeSet<String> {
    w.admission
        .iter()
        .flatten()
        .flat_map(|a| a.flavors.values().cloned())
        .collect()
}

/// Pod sets of demands, sorted and deduplicated (`rolesOf`).
fn roles_of<'a>(demands: impl Iterator<Item = &'a FamilyDemand>) -> Vec<String> {
    demands
        .flat_map(|d| d.pod_sets.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Demands whose flavor reaches pool nodes but pins no single accelerator key; §6.8 item 2.
pub fn unresolved_demands<'a>(
    pool: &[ScopedDevices],
    demands: &'a [FamilyDemand],
) -> Vec<&'a FamilyDemand> {
    let scopes = || pool.iter().flat_map(|n| n.scopes.iter());
    let reached: BTreeSet<&str> = scopes().map(|s| s.flavor.as_str()).collect();
    let resolved: BTreeSet<&str> = scopes()
        .filter(|s| !s.accelerator_key.is_empty())
        .map(|s| s.flavor.as_str())
        .collect();
    demands
        .iter()
        .filter(|d| {
            !d.flavor.is_empty()
                && reached.contains(d.flavor.as_str())
                && !resolved.contains(d.flavor.as_str())
        })
        .collect()
}

/// Pool nodes a demand may use: its assigned hostname, or every pool node once any demand
/// is pool-wide; admission.md §6.5 "Rebuild".
fn usable_nodes(pool: &[ScopedDevices], demands: &[FamilyDemand]) -> BTreeSet<String> {
    let pool_wide = demands.iter().any(|d| d.node.is_empty());
    pool.iter()
        .filter(|n| pool_wide || demands.iter().any(|d| d.node == n.hostname))
        .map(|n| n.name.clone())
        .collect()
}

/// Replaces the ledger of every card on the named nodes with the one the Pods bound there
/// produce; admission.md §6.5 "Rebuild".
pub fn rebuild_ledgers(pool: &mut [ScopedDevices], nodes: &BTreeSet<String>, pods: &[PodRecord]) {
    for node in pool.iter_mut().filter(|n| nodes.contains(&n.name)) {
        let on_node: Vec<&PodRecord> = pods.iter().filter(|p| p.node == node.name).collect();
        for card in node
            .devices
            .groups
            .iter_mut()
            .flat_map(|g| g.cards.iter_mut())
        {
            if card.ledger.is_none() {
                continue;
            }
            let capability = card.capability_or_default();
            let charges: Vec<_> = on_node
                .iter()
                .flat_map(|p| p.charges.iter())
                .filter(|c| c.card_id == card.id)
                .collect();
            card.ledger = Some(rebuild_card_ledger(capability, &charges));
        }
    }
}

/// Whether another Workload holds cards it has not received: live, reserved, and admitted or
/// Ready here (also a Ready verdict the cache has not shown yet); admission.md §6.5.
pub fn holds_cards(w: &WorkloadRecord, ready_unobserved: &BTreeSet<String>) -> bool {
    w.is_live_reserved()
        && (w.admitted || w.check == Some(CheckState::Ready) || ready_unobserved.contains(&w.name))
}

/// The in-flight demands on the rebuilt nodes: for each holding Workload's hostname-level
/// placement there, its pods not yet charged, scoped to that node and its flavor; the flavor's
/// scope is added to the node. [`Inflight::Unresolved`] when that flavor resolves to no card
/// population there; admission.md §6.5, §6.8 item 3.
pub fn inflight_demands(
    world: &World,
    own: &str,
    pool: &mut [ScopedDevices],
    rebuilt: &BTreeSet<String>,
    ready_unobserved: &BTreeSet<String>,
) -> Result<Inflight, ModelError> {
    let mut out = Vec::new();
    for w in world.workloads.iter().filter(|w| w.name != own) {
        if !holds_cards(w, ready_unobserved) {
            continue;
        }
        for psa in w.admission.iter().flatten() {
            let Some(ps) = w.pod_sets.iter().find(|p| p.name == psa.pod_set) else {
                continue;
            };
            for host in &psa.hosts {
                let Some(node) = pool
                    .iter_mut()
                    .find(|n| n.hostname == host.hostname && rebuilt.contains(&n.name))
                else {
                    continue;
                };
                let left = host.pods.saturating_sub(charged_pods(
                    &world.pods,
                    &w.name,
                    &ps.name,
                    &node.name,
                ));
                if left == 0 {
                    continue;
                }
                let demands = pod_set_family_demands(ps, left)?;
                if demands.is_empty() {
                    continue;
                }
                let flavor_name = assigned_flavor(w.admission.as_deref(), &ps.name);
                let device = world.devices.iter().find(|d| d.name == node.name);
                let scope = world
                    .flavors
                    .iter()
                    .find(|f| f.name == flavor_name && !f.node_labels.is_empty())
                    .filter(|f| {
                        device.is_some_and(|d| {
                            selector_matches(&devices_selector(&f.node_labels), &d.labels)
                        })
                    })
                    .map(flavor_scope)
                    .filter(|s| !s.accelerator_key.is_empty());
                let Some(scope) = scope else {
                    return Ok(Inflight::Unresolved {
                        hostname: host.hostname.clone(),
                    });
                };
                if !node.scopes.contains(&scope) {
                    node.scopes.push(scope);
                }
                out.extend(demands.into_iter().map(|mut d| {
                    d.flavor = flavor_name.clone();
                    d.pod_sets = vec![ps.name.clone()];
                    d.node = host.hostname.clone();
                    d
                }));
            }
        }
    }
    Ok(Inflight::Demands(out))
}

/// The in-flight demands gate 3 counts, or the host where a holding Workload's flavor
/// resolves to no card population (the check answers Retry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inflight {
    Demands(Vec<FamilyDemand>),
    Unresolved { hostname: String },
}

/// The gate-3 controller; its only memory is the Workloads it answered Ready that the cache
/// has not shown as Ready yet (`readyUnobserved`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeDevicesAdmission {
    pub ready_unobserved: BTreeSet<String>,
}

impl NodeDevicesAdmission {
    /// Judges the Workload `name` of `world`; admission.md §6.2–6.8 in their order.
    pub fn reconcile(&mut self, world: &World, name: &str) -> Result<Reconciled, ModelError> {
        // A Ready the cache now shows needs no remembering.
        for w in &world.workloads {
            if w.check == Some(CheckState::Ready) || w.admitted {
                self.ready_unobserved.remove(&w.name);
            }
        }
        let Some(w) = world.workloads.iter().find(|w| w.name == name) else {
            return Ok(Reconciled::Skipped);
        };
        if !is_judged(w) {
            return Ok(Reconciled::Skipped);
        }
        let verdict = self.judge(world, w)?;
        if verdict.is_ready() {
            self.ready_unobserved.insert(w.name.clone());
        }
        Ok(Reconciled::Judged(verdict))
    }

    fn judge(&self, world: &World, w: &WorkloadRecord) -> Result<Verdict, ModelError> {
        let mut demands = parse_family_demands(&w.pod_sets, w.admission.as_deref())?;
        if w.pod_sets.len() <= 1 {
            demands = without_roles(&demands);
        }
        let unassigned: Vec<&FamilyDemand> =
            demands.iter().filter(|d| d.flavor.is_empty()).collect();
        if !unassigned.is_empty() {
            return Ok(Verdict::retry(unassigned_flavor_message(&roles_of(
                unassigned.into_iter(),
            ))));
        }
        let mut pool = candidate_devices(&referenced_flavors(w), &world.flavors, &world.devices);
        let unresolved = unresolved_demands(&pool, &demands);
        if !unresolved.is_empty() {
            return Ok(Verdict::retry(unresolved_flavor_message(&roles_of(
                unresolved.into_iter(),
            ))));
        }
        if demands.is_empty() {
            return Ok(node_devices_feasibility(&pool, &[], &demands));
        }
        let rebuilt = usable_nodes(&pool, &demands);
        rebuild_ledgers(&mut pool, &rebuilt, &world.pods);
        let inflight =
            match inflight_demands(world, &w.name, &mut pool, &rebuilt, &self.ready_unobserved)? {
                Inflight::Demands(d) => d,
                Inflight::Unresolved { hostname } => {
                    return Ok(Verdict::retry(inflight_unresolved_message(&hostname)))
                }
            };
        Ok(node_devices_feasibility(&pool, &inflight, &demands))
    }
}

#[cfg(test)]
mod tests {
    use super::super::demands::HostPods;
    use super::super::inflight::CardCharge;
    use super::*;
    use crate::devices::{Capability, Card, DeviceGroup, Devices, Ledger, Mode};
    use crate::labels::Labels;
    use crate::units::UNITS_PER_PERCENT;
    use crate::workload::Container;

    fn labels() -> Labels {
        crate::labels::from_pairs(&[("acceleratable.feature.gpustack.ai/nvidia-g0", "true")])
    }

    fn node(remaining: i64) -> NodeDevices {
        NodeDevices {
            name: "node-b".into(),
            hostname: "host-b".into(),
            labels: labels(),
            devices: Devices {
                groups: vec![DeviceGroup {
                    manufacturer: "nvidia".into(),
                    id: "g0".into(),
                    cards: vec![Card {
                        id: "gpu-0".into(),
                        index: 0,
                        capability: Some(Capability {
                            logical_sliced_count: 10,
                            ..Capability::default()
                        }),
                        ledger: Some(Ledger {
                            remaining_units: remaining,
                            ..Ledger::default()
                        }),
                    }],
                    ..DeviceGroup::default()
                }],
            },
        }
    }

    fn slice_workload(name: &str, pct: i64, flavor: &str, host: Option<&str>) -> WorkloadRecord {
        let requests = [
            ("nvidia.com/gpu.sliced".to_string(), "1".to_string()),
            (
                "nvidia.com/gpu.sliced.units".to_string(),
                (pct * UNITS_PER_PERCENT).to_string(),
            ),
        ]
        .into();
        WorkloadRecord {
            name: name.into(),
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: 1,
                containers: vec![Container {
                    name: "c".into(),
                    requests,
                    ..Container::default()
                }],
                ..PodSet::default()
            }],
            admission: Some(vec![PodSetAssignment {
                pod_set: "main".into(),
                flavors: [("credits.gpustack.ai/nvidia".to_string(), flavor.to_string())].into(),
                hosts: host
                    .map(|h| {
                        vec![HostPods {
                            hostname: h.into(),
                            pods: 1,
                        }]
                    })
                    .unwrap_or_default(),
            }]),
            quota_reserved: true,
            check: Some(CheckState::Pending),
            ..WorkloadRecord::default()
        }
    }

    fn world(workloads: Vec<WorkloadRecord>) -> World {
        World {
            flavors: vec![FlavorObject {
                name: "gpu-pool".into(),
                node_labels: labels(),
            }],
            devices: vec![node(crate::units::UNITS_PER_CARD)],
            workloads,
            pods: vec![],
        }
    }

    fn judged(r: Reconciled) -> Verdict {
        match r {
            Reconciled::Judged(v) => v,
            Reconciled::Skipped => panic!("expected a verdict"),
        }
    }

    #[test]
    fn admitted_evicted_and_unreserved_workloads_are_left_alone() {
        for flip in [
            |w: &mut WorkloadRecord| w.admitted = true,
            |w: &mut WorkloadRecord| w.evicted = true,
            |w: &mut WorkloadRecord| w.quota_reserved = false,
            |w: &mut WorkloadRecord| w.check = None,
        ] {
            let mut w = slice_workload("a", 50, "gpu-pool", None);
            flip(&mut w);
            let r = NodeDevicesAdmission::default().reconcile(&world(vec![w]), "a");
            assert_eq!(r, Ok(Reconciled::Skipped));
        }
    }

    #[test]
    fn unassigned_and_unresolved_flavors_are_held_with_their_cause() {
        let mut w = slice_workload("a", 50, "gpu-pool", None);
        w.admission = None;
        let v = judged(
            NodeDevicesAdmission::default()
                .reconcile(&world(vec![w]), "a")
                .unwrap(),
        );
        assert!(v
            .message
            .contains("does not resolve to a single accelerator flavor"));
        let mut two_keys = world(vec![slice_workload("a", 50, "gpu-pool", None)]);
        if let Some(f) = two_keys.flavors.first_mut() {
            f.node_labels.insert(
                "acceleratable.feature.gpustack.ai/nvidia-l40s".into(),
                "true".into(),
            );
        }
        if let Some(d) = two_keys.devices.first_mut() {
            d.labels.insert(
                "acceleratable.feature.gpustack.ai/nvidia-l40s".into(),
                "true".into(),
            );
        }
        let v = judged(
            NodeDevicesAdmission::default()
                .reconcile(&two_keys, "a")
                .unwrap(),
        );
        assert!(
            v.message.contains("pins no single accelerator key"),
            "{}",
            v.message
        );
    }

    #[test]
    fn the_ledger_is_rebuilt_from_bound_pods() {
        let mut w = world(vec![slice_workload("a", 40, "gpu-pool", Some("host-b"))]);
        // Published ledger reads free, but a Pod holds 70 % of the card.
        w.pods = vec![PodRecord {
            name: "p".into(),
            node: "node-b".into(),
            charged: true,
            charges: vec![CardCharge {
                card_id: "gpu-0".into(),
                mode: Mode::Sliced,
                units: 70 * UNITS_PER_PERCENT,
                profile: String::new(),
            }],
            ..PodRecord::default()
        }];
        let v = judged(NodeDevicesAdmission::default().reconcile(&w, "a").unwrap());
        assert_eq!(v.state, CheckState::Retry);
        assert!(
            v.message.starts_with("no card on the node \"host-b\""),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_ready_the_cache_has_not_shown_still_counts_and_retry_does_not() {
        let mut w = world(vec![
            slice_workload("first", 60, "gpu-pool", Some("host-b")),
            slice_workload("second", 50, "gpu-pool", Some("host-b")),
        ]);
        let mut gate = NodeDevicesAdmission::default();
        assert!(judged(gate.reconcile(&w, "first").unwrap()).is_ready());
        // The cache still shows first as Pending.
        let v = judged(gate.reconcile(&w, "second").unwrap());
        assert_eq!(v.state, CheckState::Retry);
        assert!(v.message.ends_with(super::super::verdict::INFLIGHT_SUFFIX));
        // A fresh controller that never answered first, with first held in Retry: not counted.
        if let Some(first) = w.workloads.first_mut() {
            first.check = Some(CheckState::Retry);
        }
        assert!(judged(
            NodeDevicesAdmission::default()
                .reconcile(&w, "second")
                .unwrap()
        )
        .is_ready());
    }

    #[test]
    fn charged_pods_are_not_counted_twice() {
        let mut other = slice_workload("other", 60, "gpu-pool", Some("host-b"));
        other.admitted = true;
        let mut w = world(vec![
            other,
            slice_workload("self", 40, "gpu-pool", Some("host-b")),
        ]);
        w.pods = vec![PodRecord {
            name: "other-0".into(),
            node: "node-b".into(),
            workload: "other".into(),
            pod_set: "main".into(),
            charged: true,
            charges: vec![CardCharge {
                card_id: "gpu-0".into(),
                mode: Mode::Sliced,
                units: 60 * UNITS_PER_PERCENT,
                profile: String::new(),
            }],
        }];
        // 60 % on the ledger + 40 % asked = exactly the card.
        assert!(judged(
            NodeDevicesAdmission::default()
                .reconcile(&w, "self")
                .unwrap()
        )
        .is_ready());
    }

    #[test]
    fn an_inflight_flavor_that_resolves_nowhere_holds_the_judgment() {
        let mut other = slice_workload("other", 30, "gone", Some("host-b"));
        other.check = Some(CheckState::Ready);
        let w = world(vec![
            other,
            slice_workload("self", 40, "gpu-pool", Some("host-b")),
        ]);
        let v = judged(
            NodeDevicesAdmission::default()
                .reconcile(&w, "self")
                .unwrap(),
        );
        assert_eq!(v.state, CheckState::Retry);
        assert!(
            v.message.contains("node \"host-b\" before this one"),
            "{}",
            v.message
        );
    }
}
