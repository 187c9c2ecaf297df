//! node_devices_admission_test.go: whole-Reconcile verdicts, the check-state write guard and
//! the AdmissionCheck activation (admission_reconcile.json).
//!
//! The model's Reconcile rebuilds each usable node's ledger from the Pods bound there
//! (admission.md §6.5). These vectors state only the Devices ledger, so the Pods are taken to
//! be the ones that produce it: one per not-wholly-free card holding `D − remaining` units in
//! the card's mode — the convention admission_inflight.json states as `pods_charging_ledger`.

use serde::Deserialize;
use serde_json::{json, Value};

use model::admission::inflight::CardCharge;
use model::admission::reconcile::is_judged;
use model::admission::verdict::{
    admission_check_conditions, desired_check_states, CheckStatus, Condition,
};
use model::admission::{
    CheckState, FlavorObject, NodeDevices, NodeDevicesAdmission, PodRecord, PodSetAssignment,
    Reconciled, Verdict, WorkloadRecord, World,
};
use model::labels::{CREDITS_PREFIX, NODE_DEVICES_CHECK};
use model::units::UNITS_PER_CARD;
use model::workload::PodSet;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

use super::admission::message_properties;
use super::admission_flavor_scope::AssignmentInput;

/// A Workload as the reconcile vectors spell it.
#[derive(Deserialize)]
struct WorkloadInput {
    #[serde(default)]
    name: String,
    podsets: Vec<PodSet>,
    #[serde(default)]
    assignments: Option<Vec<AssignmentInput>>,
    #[serde(default)]
    conditions_true: Vec<String>,
    #[serde(default)]
    check_state: Option<CheckState>,
    /// The check's current message and delay, for the write-guard tests (absent: see
    /// `restores_retry_delay`).
    #[serde(default)]
    check_message: Option<String>,
    #[serde(default)]
    check_requeue_after_seconds: Option<i32>,
}

/// Workload flags from the names of its true conditions.
pub(crate) fn apply_conditions(w: &mut WorkloadRecord, conditions: &[String]) {
    let has = |c: &str| conditions.iter().any(|x| x == c);
    w.quota_reserved = has("QuotaReserved");
    w.admitted = has("Admitted");
    w.evicted = has("Evicted");
    w.finished = has("Finished");
    w.deactivated = has("Deactivated");
}

impl WorkloadInput {
    fn into_model(self) -> WorkloadRecord {
        self.split().0
    }

    /// The Workload and its check's current (message, delay) as the vector states them.
    fn split(self) -> (WorkloadRecord, Option<String>, Option<i32>) {
        let (message, delay) = (self.check_message.clone(), self.check_requeue_after_seconds);
        (self.record(), message, delay)
    }

    fn record(self) -> WorkloadRecord {
        let mut w = WorkloadRecord {
            name: if self.name.is_empty() {
                "wl".into()
            } else {
                self.name
            },
            pod_sets: self.podsets,
            admission: self
                .assignments
                .map(|a| a.into_iter().map(AssignmentInput::into_model).collect()),
            check: self.check_state,
            ..WorkloadRecord::default()
        };
        apply_conditions(&mut w, &self.conditions_true);
        w
    }
}

/// The Pods that produce the given ledgers (see the module note): one per card whose
/// remaining units are below a whole card, belonging to no Workload.
pub(crate) fn pods_charging_ledger(devices: &[NodeDevices]) -> Vec<PodRecord> {
    devices
        .iter()
        .flat_map(|node| {
            node.devices.groups.iter().flat_map(move |g| {
                g.cards.iter().filter_map(move |card| {
                    let ledger = card.ledger.as_ref()?;
                    (ledger.remaining_units < UNITS_PER_CARD).then(|| PodRecord {
                        name: format!("holder-{}", card.id),
                        node: node.name.clone(),
                        charged: true,
                        charges: vec![CardCharge {
                            card_id: card.id.clone(),
                            mode: ledger.mode,
                            units: UNITS_PER_CARD - ledger.remaining_units,
                            profile: String::new(),
                        }],
                        ..PodRecord::default()
                    })
                })
            })
        })
        .collect()
}

/// The check state and message a reconcile leaves on the Workload.
pub(crate) fn after_reconcile(
    before: Option<CheckState>,
    r: &Reconciled,
) -> (Option<CheckState>, String) {
    match r {
        Reconciled::Skipped => (before, String::new()),
        Reconciled::Judged(Verdict { state, message }) => (Some(*state), message.clone()),
    }
}

fn model_error(e: model::ModelError) -> Outcome {
    Outcome::Malformed {
        field: "workload".into(),
        problem: e.to_string(),
    }
}

fn reconcile_once(v: &Vector) -> Read<Outcome> {
    let flavors: Vec<FlavorObject> = field(&v.input, "flavors")?;
    let devices: Vec<NodeDevices> = field(&v.input, "devices")?;
    let workload: WorkloadInput = field(&v.input, "workload")?;
    let w = workload.into_model();
    let before = w.check;
    let name = w.name.clone();
    let world = World {
        pods: pods_charging_ledger(&devices),
        flavors,
        devices,
        workloads: vec![w],
    };
    let judged = world.workloads.first().is_some_and(is_judged);
    let r = NodeDevicesAdmission::default()
        .reconcile(&world, &name)
        .map_err(model_error)?;
    let (state, message) = after_reconcile(before, &r);
    let mut got = serde_json::Map::new();
    got.insert("check_state".into(), json!(state));
    got.insert("judged".into(), json!(judged));
    got.extend(message_properties(&v.expected, &message)?);
    Ok(judge(&v.expected, &Value::Object(got)))
}

/// An owned check entry as the vectors spell it (state may be Pending with no message).
#[derive(Deserialize)]
struct CheckInput {
    name: String,
    state: CheckState,
    #[serde(default)]
    message: String,
    #[serde(default)]
    requeue_after_seconds: Option<i32>,
}

fn desired_states(v: &Vector) -> Read<Outcome> {
    let current: Vec<CheckInput> = field(&v.input, "current")?;
    let owned: Vec<String> = field(&v.input, "owned")?;
    let verdict: Verdict = field(&v.input, "verdict")?;
    let current: Vec<CheckStatus> = current
        .into_iter()
        .map(|c| CheckStatus {
            name: c.name,
            state: c.state,
            message: c.message,
            requeue_after_seconds: c.requeue_after_seconds,
        })
        .collect();
    let (desired, changed) = desired_check_states(&current, &owned, &verdict);
    Ok(judge(
        &v.expected,
        &json!({ "changed": changed, "desired": desired }),
    ))
}

fn activation(v: &Vector) -> Read<Outcome> {
    let check: Value = field(&v.input, "admission_check")?;
    let controller: String = field(&check, "controller_name")?;
    let conditions: Vec<Condition> = field_or_default(&check, "conditions")?;
    let got = json!({ "conditions": admission_check_conditions(&controller, &conditions) });
    Ok(judge(&v.expected, &got))
}

/// The world of a reconcile vector: its flavors, Devices (with the Pods producing their
/// ledgers) and the one Workload.
fn world_of(v: &Vector, w: WorkloadRecord) -> Read<World> {
    let flavors: Vec<FlavorObject> = field(&v.input, "flavors")?;
    let devices: Vec<NodeDevices> = field(&v.input, "devices")?;
    Ok(World {
        pods: pods_charging_ledger(&devices),
        flavors,
        devices,
        workloads: vec![w],
    })
}

/// `TestNodeDevicesAdmission_RestoresAMissingRetryDelay`: the Workload already carries this
/// check's own Retry verdict with the delay dropped; the write guard compares state, message
/// AND delay, so the reconcile writes and the check regains the 30 s Retry delay
/// (node_devices_admission.go `desiredCheckStates`; model: verdict::desired_check_states).
/// The fixture renders the current message from the verdict the reconcile will compute, so an
/// absent `check_message` is that verdict's message.
fn restores_retry_delay(v: &Vector) -> Read<Outcome> {
    let workload: WorkloadInput = field(&v.input, "workload")?;
    let (w, message, delay) = workload.split();
    let before = w.check;
    let name = w.name.clone();
    let world = world_of(v, w)?;
    let r = NodeDevicesAdmission::default()
        .reconcile(&world, &name)
        .map_err(model_error)?;
    let mut got = serde_json::Map::new();
    match (&r, before) {
        (Reconciled::Judged(verdict), Some(state)) => {
            let current = CheckStatus {
                name: NODE_DEVICES_CHECK.into(),
                state,
                message: message.unwrap_or_else(|| verdict.message.clone()),
                requeue_after_seconds: delay,
            };
            let owned = [NODE_DEVICES_CHECK.to_string()];
            let (desired, changed) = desired_check_states(&[current], &owned, verdict);
            let written = desired.first();
            got.insert("changed".into(), json!(changed));
            got.insert("check_state".into(), json!(written.map(|c| c.state)));
            got.insert(
                "requeue_after_seconds".into(),
                json!(written.and_then(|c| c.requeue_after_seconds)),
            );
            got.extend(message_properties(&v.expected, &verdict.message)?);
        }
        _ => {
            // Not judged: nothing is written, the check keeps its state and delay.
            got.insert("changed".into(), json!(false));
            got.insert("check_state".into(), json!(before));
            got.insert("requeue_after_seconds".into(), json!(delay));
        }
    }
    Ok(judge(&v.expected, &Value::Object(got)))
}

/// The assignments Kueue makes at an "assigns" step: the input's first array under a key
/// naming an assignment (other than the Workload's own), else — as the Go test does — every
/// podset assigned the first flavor under the credits resource of the first Devices'
/// manufacturer.
fn later_assignments(v: &Vector, w: &WorkloadRecord) -> Read<Vec<PodSetAssignment>> {
    if let Some(obj) = v.input.as_object() {
        if let Some((key, _)) = obj
            .iter()
            .find(|(k, val)| k.contains("assign") && val.is_array())
        {
            let list: Vec<AssignmentInput> = field(&v.input, key)?;
            return Ok(list.into_iter().map(AssignmentInput::into_model).collect());
        }
    }
    let flavors: Vec<FlavorObject> = field(&v.input, "flavors")?;
    let devices: Vec<NodeDevices> = field(&v.input, "devices")?;
    let flavor = flavors.first().map(|f| f.name.clone()).unwrap_or_default();
    let manufacturer = devices
        .iter()
        .flat_map(|d| d.devices.groups.iter())
        .map(|g| g.manufacturer.clone())
        .next()
        .unwrap_or_default();
    Ok(w.pod_sets
        .iter()
        .map(|ps| PodSetAssignment {
            pod_set: ps.name.clone(),
            flavors: [(format!("{CREDITS_PREFIX}{manufacturer}"), flavor.clone())].into(),
            hosts: Vec::new(),
        })
        .collect())
}

/// Whether a step's text says Kueue assigns the flavor (and not that none is assigned).
fn says_kueue_assigns(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("assign") && !t.contains("unassign") && !t.contains("no assign")
}

/// `TestNodeDevicesAdmission_RefreshesTheMessageWhenTheCauseChanges`: reconciles once per
/// expected step, carrying the check state over; a step whose text says Kueue assigns the
/// flavor first applies the assignment. The verdict's message follows the cause that is now
/// true even when the state stays Retry (node_devices_admission.go Reconcile: the write guard
/// compares the message too).
fn refreshes_message(v: &Vector) -> Read<Outcome> {
    let workload: WorkloadInput = field(&v.input, "workload")?;
    let mut w = workload.into_model();
    let steps: Vec<Value> = field(&v.expected, "sequence")?;
    let mut admission = NodeDevicesAdmission::default();
    let mut got = Vec::new();
    let input_steps: Vec<Value> = field_or_default(&v.input, "steps")?;
    for (i, step) in steps.iter().enumerate() {
        let text = step
            .get("step")
            .and_then(Value::as_str)
            .unwrap_or("reconcile");
        // An input step may carry the assignment Kueue makes before it; else a step whose text
        // says the flavor gets assigned (not "unassigned") applies `later_assignments`.
        let given = input_steps
            .get(i)
            .filter(|s| s.get("assignments").is_some());
        if let Some(s) = given {
            let list: Vec<AssignmentInput> = field(s, "assignments")?;
            w.admission = Some(list.into_iter().map(AssignmentInput::into_model).collect());
        } else if says_kueue_assigns(text) {
            w.admission = Some(later_assignments(v, &w)?);
        }
        let name = w.name.clone();
        let world = world_of(v, w.clone())?;
        let r = admission.reconcile(&world, &name).map_err(model_error)?;
        let (state, message) = after_reconcile(w.check, &r);
        w.check = state;
        let mut item = serde_json::Map::new();
        item.insert("step".into(), json!(text));
        item.insert("check_state".into(), json!(state));
        item.extend(message_properties(step, &message)?);
        got.push(Value::Object(item));
    }
    Ok(judge(&v.expected, &json!({ "sequence": got })))
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestNodeDevicesAdmission_AdmittedWorkloadNotSelfEvicted"
        | "TestNodeDevicesAdmission_EvictedWorkloadKeepsKueuesResetCheck"
        | "TestNodeDevicesAdmission_ReconcilePerRole"
        | "TestNodeDevicesAdmission_UnassignedFlavorIsHeldExplicitly"
        | "TestNodeDevicesAdmission_UnresolvedFlavorIsHeldExplicitly"
        | "TestVerdictOmitsTheRoleClauseForASingleRole" => outcome(|| reconcile_once(v)),
        "TestNodeDevicesAdmission_RestoresAMissingRetryDelay" => {
            outcome(|| restores_retry_delay(v))
        }
        "TestNodeDevicesAdmission_RefreshesTheMessageWhenTheCauseChanges" => {
            outcome(|| refreshes_message(v))
        }
        "TestDesiredCheckStatesCarriesEveryOwnedCheck" => outcome(|| desired_states(v)),
        "TestNodeDevicesAdmissionCheckReconciler" => outcome(|| activation(v)),
        other => not_modelled(other),
    }
}
