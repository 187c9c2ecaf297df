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
    CheckState, FlavorObject, NodeDevices, NodeDevicesAdmission, PodRecord, Reconciled, Verdict,
    WorkloadRecord, World,
};
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

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestNodeDevicesAdmission_AdmittedWorkloadNotSelfEvicted"
        | "TestNodeDevicesAdmission_EvictedWorkloadKeepsKueuesResetCheck"
        | "TestNodeDevicesAdmission_ReconcilePerRole"
        | "TestNodeDevicesAdmission_UnassignedFlavorIsHeldExplicitly"
        | "TestNodeDevicesAdmission_UnresolvedFlavorIsHeldExplicitly"
        | "TestVerdictOmitsTheRoleClauseForASingleRole" => outcome(|| reconcile_once(v)),
        "TestDesiredCheckStatesCarriesEveryOwnedCheck" => outcome(|| desired_states(v)),
        "TestNodeDevicesAdmissionCheckReconciler" => outcome(|| activation(v)),
        other => not_modelled(other),
    }
}
