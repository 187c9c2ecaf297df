//! node_queue_test.go: the NodeQueue reconciler driven through each test's steps, with the fake
//! client's world rebuilt explicitly (one hostname-profile Topology, capacity/count Nodes per live
//! flavor pinned by the flavor's nodeLabels) and Kueue's status writes simulated
//! (`markClusterQueueStopped`: Active=False/Stopped at the current generation).

use serde::Deserialize;
use serde_json::{json, Value};

use model::cluster::Settings;
use model::labels::{self, Labels};
use model::objects::{FlavorQuota, ResourceGroup};
use model::queue::{
    has_reserved, kueue_reports_stopped, reconcile_node_queue, topology_name, ActiveCondition,
    ConditionStatus, FlavorPlacement, FlavorUsage, PoolFlavor, PoolNode, QueueState, QueueStatus,
    QueueStep, QueueWorld, STOPPED_REASON,
};

use super::instancetype_entrance::stop_policy_of;
use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};
use model::cluster::QueueStatusGate;
use model::nodefeature::DEFAULT_TOPOLOGY_PROFILE;

#[derive(Deserialize)]
struct QuotaIn {
    name: String,
    nominal: i64,
}

#[derive(Deserialize)]
struct GroupIn {
    covered: String,
    flavors: Vec<QuotaIn>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QueueIn {
    name: String,
    feature_key: String,
    acceleratable: bool,
    stop_policy: Option<String>,
    resource_groups: Vec<GroupIn>,
    tas_annotated: Option<bool>,
    admitted_workloads: u64,
    deleting: bool,
    uid: String,
    generation: Option<u64>,
}

#[derive(Deserialize, Clone)]
struct FlavorIn {
    name: String,
    #[serde(default)]
    feature_key: String,
    #[serde(default)]
    acceleratable: bool,
    per_node_count: u64,
    capacity: u64,
    #[serde(default)]
    manufacturer: String,
    #[serde(default)]
    terminating: bool,
    #[serde(default)]
    also_general_key: Option<String>,
}

#[derive(Deserialize)]
struct UsageIn {
    flavor: String,
    resource: String,
    total: String,
    borrowed: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusIn {
    reserving_workloads: u64,
    admitted_workloads: u64,
    flavors_reservation: Vec<UsageIn>,
}

#[derive(Deserialize)]
struct CheckIn {
    name: String,
    active: bool,
}

/// A whole-number Kubernetes quantity ("2", "0"); anything else is reported, not guessed.
fn quantity(s: &str) -> Read<i64> {
    s.parse().map_err(|_| Outcome::Malformed {
        field: "queue_status.flavors_reservation".into(),
        problem: format!("quantity {s:?}: expected a whole number"),
    })
}

/// One event of a test, as the vector words it.
#[derive(Clone, Debug, PartialEq)]
enum Event {
    Reconcile(usize),
    KueueReportsStopped,
    StaleStopped,
    ReservationsClear,
    DeleteTopology,
    FlavorCreated {
        name: String,
        count: u64,
        capacity: u64,
    },
}

fn bad_step(t: &str) -> Outcome {
    Outcome::Malformed {
        field: "steps".into(),
        problem: format!("unknown step {t:?}"),
    }
}

/// Splits a step text on `;` and on `,` outside parentheses.
fn split_events(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if (c == ';' || c == ',') && depth == 0 {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    parts.push(cur);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// `flavor <name> (<count>,<capacity>) created`.
fn parse_created(t: &str) -> Option<Event> {
    let body = t.strip_prefix("flavor ")?.strip_suffix("created")?.trim();
    let (name, rest) = body.split_once(" (")?;
    let (count, capacity) = rest.strip_suffix(')')?.split_once(',')?;
    Some(Event::FlavorCreated {
        name: name.trim().into(),
        count: count.trim().parse().ok()?,
        capacity: capacity.trim().parse().ok()?,
    })
}

fn parse_event(t: &str) -> Read<Event> {
    if let Some(rest) = t.strip_prefix("reconcile") {
        let rest = rest.trim();
        return Ok(match rest.strip_prefix('x') {
            Some(k) => Event::Reconcile(k.trim().parse().map_err(|_| bad_step(t))?),
            // "reconcile with no flavors", "reconcile (reservation still held)": one reconcile.
            None => Event::Reconcile(1),
        });
    }
    if t == "Kueue reports stopped" {
        return Ok(Event::KueueReportsStopped);
    }
    if t.starts_with("add Active=False/Stopped") && t.ends_with("generation-1") {
        return Ok(Event::StaleStopped);
    }
    if t == "admitted workloads drop to 0" {
        return Ok(Event::ReservationsClear);
    }
    if t == "delete topology" {
        return Ok(Event::DeleteTopology);
    }
    parse_created(t).ok_or_else(|| bad_step(t))
}

fn parse_events(text: &str) -> Read<Vec<Event>> {
    split_events(text).iter().map(|t| parse_event(t)).collect()
}

/// `steps` as a list of texts or one text.
fn steps_of(input: &Value) -> Read<Option<Vec<Event>>> {
    match input.get("steps") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_events(s).map(Some),
        Some(_) => {
            let list: Vec<String> = field(input, "steps")?;
            let mut all = Vec::new();
            for s in &list {
                all.extend(parse_events(s)?);
            }
            Ok(Some(all))
        }
    }
}

/// The fake client's flavor, with what `buildNodeQueueClient` derives from it.
#[derive(Clone)]
struct SimFlavor {
    input: FlavorIn,
}

impl SimFlavor {
    fn own_key(&self) -> String {
        if self.input.acceleratable {
            labels::accelerator_feature_key(&self.input.feature_key)
        } else {
            labels::general_feature_key(&self.input.feature_key)
        }
    }

    /// `spec.nodeLabels`: managed, os/arch, profile, the boolean, true-valued feature keys and the
    /// own key's `.count`.
    fn node_labels(&self, profile: &str) -> Labels {
        let key = self.own_key();
        let mut l = Labels::from([
            (labels::MANAGED.to_string(), "true".to_string()),
            (labels::OS.to_string(), "linux".to_string()),
            (labels::ARCH.to_string(), "amd64".to_string()),
            (labels::TOPOLOGY_PROFILE.to_string(), profile.to_string()),
            (
                labels::ACCELERATABLE.to_string(),
                self.input.acceleratable.to_string(),
            ),
            (
                format!("{key}.count"),
                self.input.per_node_count.to_string(),
            ),
            (key, "true".to_string()),
        ]);
        if let Some(g) = &self.input.also_general_key {
            l.insert(labels::general_feature_key(g), "true".into());
        }
        l
    }

    fn pool_flavor(&self) -> PoolFlavor {
        PoolFlavor {
            name: self.input.name.clone(),
            per_node_count: self.input.per_node_count,
            capacity: self.input.capacity,
            acceleratable: self.input.acceleratable,
            manufacturer: self.input.manufacturer.clone(),
            terminating: self.input.terminating,
        }
    }
}

/// One test's fake cluster: the queue, the flavors, whether the Topology was deleted.
struct Sim {
    state: QueueState,
    flavors: Vec<SimFlavor>,
    topology_deleted: bool,
    settings: Settings,
    queue_key: String,
    queue_acceleratable: bool,
    last: Option<QueueStep>,
}

impl Sim {
    fn new(v: &Vector) -> Read<Sim> {
        let q: QueueIn = field(&v.input, "queue")?;
        let flavors: Vec<FlavorIn> = field(&v.input, "flavors")?;
        let groups: Vec<ResourceGroup> = q
            .resource_groups
            .iter()
            .map(|g| ResourceGroup {
                covered_resources: vec![g.covered.clone()],
                flavors: g
                    .flavors
                    .iter()
                    .map(|f| FlavorQuota {
                        flavor: f.name.clone(),
                        nominal_quota: f.nominal,
                    })
                    .collect(),
            })
            .collect();
        let mut annotations = Labels::new();
        // newInstanceTypeQueue marks a queue with groups as a TAS queue unless told otherwise.
        if q.tas_annotated.unwrap_or(!groups.is_empty()) {
            annotations.insert(labels::TAS_QUEUE.into(), "true".into());
        }
        let state = QueueState {
            name: q.name.clone(),
            uid: q.uid.clone(),
            generation: q.generation.unwrap_or(1),
            deleting: q.deleting,
            stop_policy: stop_policy_of(q.stop_policy.as_deref())?,
            resource_groups: groups,
            annotations,
            status: QueueStatus {
                admitted_workloads: q.admitted_workloads,
                ..QueueStatus::default()
            },
            ..QueueState::default()
        };
        let topology: Option<String> = field_or_default(&v.input, "topology_object")?;
        let check: Option<CheckIn> = field_or_default(&v.input, "admission_check")?;
        // The test environment reads an unseeded setting as false (node_queue_test.go header).
        let settings = Settings {
            drain_when_no_flavors: field_or_default(
                &v.input,
                "setting_instance_type_drain_when_no_flavors",
            )?,
            derived_from_node: field_or_default(
                &v.input,
                "setting_instance_type_derived_from_node",
            )?,
            node_devices_check_active: check
                .is_some_and(|c| c.active && c.name == labels::NODE_DEVICES_CHECK),
            joint_check_active: field_or_default(&v.input, "joint_admission_check_active")?,
            queue_status_gate: match v.contract("queue_status_gate") {
                Some("absent") => QueueStatusGate::Absent,
                _ => QueueStatusGate::Present,
            },
            ..Settings::default()
        };
        Ok(Sim {
            state,
            flavors: flavors
                .into_iter()
                .map(|input| SimFlavor { input })
                .collect(),
            topology_deleted: topology.as_deref() == Some("deleted"),
            settings,
            queue_key: q.feature_key,
            queue_acceleratable: q.acceleratable,
            last: None,
        })
    }

    /// The world `buildNodeQueueClient` synthesizes: the hostname profile, its Topology, and
    /// capacity/count Nodes per live flavor carrying that flavor's nodeLabels.
    fn world(&self) -> QueueWorld {
        let profile = DEFAULT_TOPOLOGY_PROFILE.to_string();
        let topology = topology_name(&profile);
        let mut w = QueueWorld::default();
        if !self.topology_deleted {
            w.topologies.insert(topology.clone());
        }
        for f in &self.flavors {
            let node_labels = f.node_labels(&profile);
            if !f.input.terminating {
                let nodes = f
                    .input
                    .capacity
                    .checked_div(f.input.per_node_count)
                    .unwrap_or(0);
                for i in 0..nodes {
                    let host = format!("{}-{i}", f.input.name);
                    let mut l = node_labels.clone();
                    l.insert(labels::HOSTNAME.into(), host.clone());
                    w.nodes.push(PoolNode {
                        name: host,
                        labels: l,
                    });
                }
            }
            w.placements.insert(
                f.input.name.clone(),
                FlavorPlacement {
                    profile: profile.clone(),
                    node_labels,
                    topology_name: topology.clone(),
                },
            );
        }
        w
    }

    fn reconcile(&mut self) {
        let flavors: Vec<PoolFlavor> = self.flavors.iter().map(SimFlavor::pool_flavor).collect();
        let step = reconcile_node_queue(&self.state, &flavors, &self.world(), &self.settings);
        self.state = step.state.clone();
        self.last = Some(step);
    }

    fn apply(&mut self, e: &Event) {
        match e {
            Event::Reconcile(n) => (0..*n).for_each(|_| self.reconcile()),
            Event::KueueReportsStopped => self.state = kueue_reports_stopped(&self.state),
            Event::StaleStopped => {
                self.state.status.active = Some(ActiveCondition {
                    status: false,
                    reason: STOPPED_REASON.into(),
                    observed_generation: self.state.generation.saturating_sub(1),
                });
            }
            Event::ReservationsClear => {
                let s = &mut self.state.status;
                s.admitted_workloads = 0;
                s.reserving_workloads = 0;
                s.flavors_reservation.clear();
                s.flavors_usage.clear();
            }
            Event::DeleteTopology => self.topology_deleted = true,
            Event::FlavorCreated {
                name,
                count,
                capacity,
            } => self.flavors.push(SimFlavor {
                input: FlavorIn {
                    name: name.clone(),
                    feature_key: self.queue_key.clone(),
                    acceleratable: self.queue_acceleratable,
                    per_node_count: *count,
                    capacity: *capacity,
                    manufacturer: String::new(),
                    terminating: false,
                    also_general_key: None,
                },
            }),
        }
    }

    /// What the test reads back from the queue and the last Reconcile result.
    fn observe(&self) -> Value {
        let s = &self.state;
        let g0 = s.resource_groups.first();
        let f0 = g0.and_then(|g| g.flavors.first());
        let total = |covered: &dyn Fn(&str) -> bool| -> i64 {
            s.resource_groups
                .iter()
                .filter(|g| g.covered_resources.iter().any(|r| covered(r)))
                .flat_map(|g| g.flavors.iter())
                .map(|f| f.nominal_quota)
                .sum()
        };
        let requeue = self.last.as_ref().and_then(|st| st.requeue_after);
        let cond = s.topology_ready.as_ref();
        let ann = |k: &str| s.annotations.get(k).cloned();
        json!({
            "resource_groups": s.resource_groups.len(),
            "resource_groups_non_empty": !s.resource_groups.is_empty(),
            "covered_resources": g0.map(|g| g.covered_resources.clone()),
            "flavor_order_first": f0.map(|f| f.flavor.clone()),
            "first_flavor": f0.map(|f| f.flavor.clone()),
            "first_nominal": f0.map(|f| f.nominal_quota),
            "flavor_quota_count": g0.map_or(0, |g| g.flavors.len()),
            // The model's quotas carry no borrowing/lending limit at all.
            "borrowing_limit": Value::Null,
            "lending_limit": Value::Null,
            "total_cpu_nominal": total(&|r| r == "cpu"),
            "total_credits_nominal": total(&|r| r.starts_with(labels::CREDITS_PREFIX)),
            "topology_ready": cond.is_some_and(|c| c.status == ConditionStatus::True),
            "topology_ready_reason": cond.map(|c| c.reason.clone()),
            "requeue_after_positive": requeue.is_some_and(|r| r > 0),
            "requeue_after_seconds": requeue.unwrap_or(0),
            "stop_policy": s.stop_policy.name(),
            "migration_phase": ann(labels::MIGRATION_PHASE),
            "migration_phase_annotation_present": s.annotations.contains_key(labels::MIGRATION_PHASE),
            "migration_stop_policy_annotation": ann(labels::MIGRATION_STOP_POLICY),
            "uid": s.uid,
            "admission_checks": s.admission_checks,
            "admission_checks_include_joint_check":
                s.admission_checks.iter().any(|c| c == labels::JOINT_CHECK),
        })
    }
}

/// The reconciles a test performs when the vector lists no steps (node_queue_test.go).
fn default_events(test: &str) -> Option<Vec<Event>> {
    Some(match test {
        "TestNodeQueueReconciler_TASFlavorLimit"
        | "TestNodeQueueReconciler_RejectsInvalidTASQueueInputs"
        | "TestNodeQueueReconciler_DoesNotRewriteExistingQueue"
        | "TestNodeQueueReconciler_AcceleratedFillsDespiteGeneralKey"
        | "TestNodeQueueReconciler_DrainThenEmptyRespectsReservations"
        | "TestNodeQueueReconciler_DrainsOnDelete"
        | "TestNodeQueueReconciler_IgnoresTerminatingFlavor" => vec![Event::Reconcile(1)],
        "TestNodeQueueReconciler_FillsAndSortsByCount"
        | "TestNodeQueueReconciler_GenericCollapsedFillsFromAllCPUFlavors"
        | "TestNodeQueueReconciler_AggregatesCapacity"
        | "TestNodeQueueReconciler_ReactivatesOnFlavorReturn"
        | "TestNodeQueueReconciler_ReferencesAdmissionCheckWhenActive"
        | "TestNodeQueueReconciler_ReferencesTheJointCheckFromEveryQueue"
        | "TestNodeQueueReconciler_TheJointCheckWaitsForActive" => vec![Event::Reconcile(2)],
        _ => return None,
    })
}

/// `IgnoresTerminatingFlavor`: if the first reconcile held the queue, Kueue reports the stop and
/// the queue is reconciled again, twice.
fn follow_hold(test: &str, sim: &mut Sim) {
    if test == "TestNodeQueueReconciler_IgnoresTerminatingFlavor"
        && sim.state.stop_policy == model::objects::StopPolicy::HoldAndDrain
    {
        for _ in 0..2 {
            sim.apply(&Event::KueueReportsStopped);
            sim.apply(&Event::Reconcile(1));
        }
    }
}

fn run_sequence(v: &Vector, sim: &mut Sim, seq: &[Value]) -> Read<Outcome> {
    let mut observed = Vec::new();
    for item in seq {
        let text: String = field(item, "step")?;
        for e in parse_events(&text)? {
            sim.apply(&e);
        }
        let mut o = sim.observe();
        if let Some(obj) = o.as_object_mut() {
            obj.insert("step".into(), Value::String(text));
        }
        observed.push(o);
    }
    Ok(judge(&v.expected, &json!({ "sequence": observed })))
}

fn run_reconciler(v: &Vector) -> Read<Outcome> {
    let test = v.test_name();
    let mut sim = Sim::new(v)?;
    if let Some(Value::Array(seq)) = v.expected.get("sequence") {
        return run_sequence(v, &mut sim, seq);
    }
    let events = match steps_of(&v.input)? {
        Some(events) => events,
        None => match default_events(test) {
            Some(events) => events,
            None => return Ok(not_modelled(test)),
        },
    };
    let drive = |sim: &mut Sim| {
        for e in &events {
            sim.apply(e);
        }
        follow_hold(test, sim);
    };
    drive(&mut sim);
    let mut got = sim.observe();
    if test == "TestNodeQueueReconciler_AcceleratedFillsDespiteGeneralKey" {
        // Ten independent reconciles on fresh clusters must land the same queue.
        let mut same = true;
        for _ in 0..9 {
            let mut again = Sim::new(v)?;
            drive(&mut again);
            same &= again.state == sim.state;
        }
        if let Some(obj) = got.as_object_mut() {
            obj.insert("deterministic_over_10_runs".into(), Value::Bool(same));
        }
    }
    Ok(judge(&v.expected, &got))
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestHasReserved" => outcome(|| {
            let s: StatusIn = field(&v.input, "queue_status")?;
            let mut rows = Vec::new();
            for r in &s.flavors_reservation {
                rows.push(FlavorUsage {
                    flavor: r.flavor.clone(),
                    resource: r.resource.clone(),
                    total: quantity(&r.total)?,
                    borrowed: quantity(&r.borrowed)?,
                });
            }
            let status = QueueStatus {
                reserving_workloads: s.reserving_workloads,
                admitted_workloads: s.admitted_workloads,
                flavors_reservation: rows,
                ..QueueStatus::default()
            };
            Ok(judge(
                &v.expected,
                &json!({ "has_reserved": has_reserved(&status) }),
            ))
        }),
        t if t.starts_with("TestNodeQueueReconciler_") => outcome(|| run_reconciler(v)),
        other => not_modelled(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_texts_split_outside_parentheses() {
        let e = parse_events(
            "Kueue reports stopped; flavor gpustack-generic-linux-amd64-4c-p-new (4,4) created; reconcile",
        )
        .unwrap();
        assert_eq!(
            e,
            vec![
                Event::KueueReportsStopped,
                Event::FlavorCreated {
                    name: "gpustack-generic-linux-amd64-4c-p-new".into(),
                    count: 4,
                    capacity: 4
                },
                Event::Reconcile(1),
            ]
        );
        assert!(parse_events("reconcile, dance").is_err());
    }
}
