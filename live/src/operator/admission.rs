//! The reference operator's `gpustack-node-devices` AdmissionCheck: the AdmissionCheck object
//! the Worker applies at start-up and marks Active (research/admission.md §6.1), and each
//! Workload's verdict in `status.admissionChecks[]`, decided by the model's lifecycle
//! (`model::lifecycle::AdmissionState::submit`: gates 1–3, then the charge of gates 4–5). The
//! twin plays Kueue's part too (it has no Kueue): gate 2's quota is the model's.
//!
//! Workloads are judged in creation order (`creationTimestamp`, then uid: the order of Kueue's
//! FIFO queues), each once, like `model::events::World` judges a `Submit`: a written verdict is
//! never revised. Admitted (Ready) Workloads are re-submitted on every reconcile to rebuild
//! what they hold, so a later Workload is judged against the cards they took; a deleted
//! Workload holds nothing.
//!
//! It also stands in for the operator's joint-admission controller
//! (model_deployment_joint_admission.go): after the pass, every Workload holding a quota
//! reservation on a queue that references `gpustack-model-deployment-joint` gets that entry
//! as the model decides it (`AdmissionState::joint_entry`: Ready at once outside a multi-role
//! ModelDeployment, Pending naming the waiting roles while held, Ready once the set opened).
//! A ModelDeployment replica left waiting (a Pending entry) is requeued on every pass, as
//! Kueue requeues it, so its siblings see it and the set opens once quota frees.
//!
//! The park after the bound is measured on the twin's virtual clock (`server::clock`: only an
//! admin request moves it): a held replica whose joint entry has been Pending longer than 30
//! minutes of advances since its `lastTransitionTime` (`heldPast`) parks its deployment as
//! the model's `Event::JointTimeout` does (`AdmissionState::joint_timeout`: only a settled,
//! Pending set): each held replica gets the park message on its entry (still Pending) and
//! `spec.active=false` (`park`), and a deactivated Workload holds nothing on later passes.
//! The operator parks each Workload on its own reconcile; the twin parks the held set in one
//! pass, as the model does (their entries turned Pending in the same pass, so they pass the
//! bound together).

use model::admission::joint::held_past;
use model::admission::verdict::{admission_check_conditions, Condition, CONTROLLER_NAME};
use model::admission::{CheckState, Verdict};
use model::cluster::{Cluster, Settings};
use model::derive::{Derived, Deriver};
use model::labels::NODE_DEVICES_CHECK;
use model::lifecycle::{AdmissionState, JointPhase};
use serde_json::{json, Value};

use super::{write_err, OperatorError, Writes};
use crate::server::selector::Selector;
use crate::server::store::Store;
use crate::wire::kinds;
use crate::wire::read::name_of;
use crate::wire::workload::{
    is_active, kueue_assignments, read_check, read_joint_check, read_workload, verdict_of,
    with_check, with_joint_check,
};

/// The AdmissionCheck object as the Worker's `Prepare()` applies it (status is written by its
/// reconciler through `/status`).
pub fn admission_check_object() -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": NODE_DEVICES_CHECK},
        "spec": {"controllerName": CONTROLLER_NAME},
    })
}

/// Controller of the `gpustack-model-deployment-joint` check (research/corrections.md 9).
pub const JOINT_CONTROLLER_NAME: &str = "worker.gpustack.ai/model-deployment-joint";

/// The joint AdmissionCheck as the operator's joint-admission controller keeps it, `Active`
/// or not. The twin runs no joint controller: a cluster that needs the check (an audit's dump,
/// as every real installation has it) gets this object written in.
pub fn joint_check_object(active: bool) -> Value {
    let (status, reason) = if active {
        ("True", "Active")
    } else {
        ("False", "Inactive")
    };
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": model::labels::JOINT_CHECK},
        "spec": {"controllerName": JOINT_CONTROLLER_NAME},
        "status": {"conditions": [{
            "type": "Active", "status": status, "reason": reason,
            "message": format!("the joint admission check is {}", reason.to_lowercase()),
            "lastTransitionTime": "2025-01-01T00:00:00Z",
        }]},
    })
}

/// Writes the joint AdmissionCheck ([`joint_check_object`]) into `store`, standing in for the
/// operator's joint controller: what `verify twin serve` and the tests' twin clusters start with.
pub fn write_joint_check(
    store: &mut Store,
    active: bool,
) -> Result<(), crate::server::status::Status> {
    super::input::write_object(
        store,
        &kinds::ADMISSION_CHECK,
        None,
        &joint_check_object(active),
    )
}

/// The model's view of the object's `status.conditions`.
fn conditions_of(o: &Value) -> Vec<Condition> {
    o.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
            Condition {
                kind: text("type").to_string(),
                status: text("status") == "True",
                reason: text("reason").to_string(),
                message: text("message").to_string(),
            }
        })
        .collect()
}

/// Creates the AdmissionCheck if missing and, while the check is active
/// (`Settings::node_devices_check_active`), writes the conditions the model's
/// `admission_check_conditions` gives (a condition already there keeps its transition time).
pub fn ensure_admission_check(
    store: &mut Store,
    settings: &Settings,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let kind = kinds::ADMISSION_CHECK;
    let name = NODE_DEVICES_CHECK;
    let current = match store.get(&kind, None, name) {
        Ok(c) => c,
        Err(s) if s.code == 404 => {
            let created = store
                .create(&kind, None, admission_check_object())
                .map_err(write_err("create", &kind, name))?;
            writes.done.push(("create", kind.kind, name.to_string()));
            created
        }
        Err(s) => return Err(write_err("get", &kind, name)(s)),
    };
    if !settings.node_devices_check_active {
        return Ok(());
    }
    let now_conditions = conditions_of(&current);
    let wanted = admission_check_conditions(CONTROLLER_NAME, &now_conditions);
    if wanted == now_conditions {
        return Ok(());
    }
    let now = store.now();
    let previous: Vec<Value> = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let conditions: Vec<Value> = wanted
        .iter()
        .map(|c| {
            let kept = previous
                .iter()
                .find(|p| p.get("type").and_then(Value::as_str) == Some(c.kind.as_str()))
                .and_then(|p| p.get("lastTransitionTime"))
                .filter(|_| now_conditions.contains(c))
                .cloned()
                .unwrap_or_else(|| json!(now));
            json!({
                "type": c.kind,
                "status": if c.status { "True" } else { "False" },
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": kept,
            })
        })
        .collect();
    let mut next = current;
    next["status"] = json!({"conditions": conditions});
    store
        .update_status(&kind, None, next)
        .map_err(write_err("update status", &kind, name))?;
    writes
        .done
        .push(("update status", kind.kind, name.to_string()));
    Ok(())
}

/// Who decides gates 1–2 (quota reservation and flavor assignment) for the Workloads the
/// node-devices check judges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QuotaBy {
    /// The twin plays Kueue: the model's gate 2 (the embedded twin runs no Kueue).
    #[default]
    Model,
    /// A real Kueue: only Workloads it reserved quota for are judged, on the flavors and
    /// hostnames it assigned (`status.admission`), as the operator's controller does.
    Kueue,
}

/// `(creationTimestamp, uid)`: the order Workloads are judged in.
fn creation_order(o: &Value) -> (String, String) {
    let text = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (text("/metadata/creationTimestamp"), text("/metadata/uid"))
}

/// Judges every Workload not judged yet and writes its verdict; returns the admission state
/// after all live Workloads (admitted ones hold their charges), or `None` without Workloads.
pub fn judge_workloads(
    store: &mut Store,
    cluster: &Cluster,
    derived: &Derived,
    quota_by: QuotaBy,
    deriver: &Deriver,
    writes: &mut Writes,
) -> Result<Option<AdmissionState>, OperatorError> {
    let kind = kinds::WORKLOAD;
    let mut listed = store
        .list(&kind, None, &Selector::everything())
        .map_err(write_err("list", &kind, ""))?
        .items;
    if listed.is_empty() {
        return Ok(None);
    }
    listed.sort_by_key(creation_order);
    let mut state =
        AdmissionState::with_derivation(cluster.clone(), derived.clone(), deriver.clone());
    for o in listed
        .iter()
        .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none())
    {
        let read = read_workload(o);
        if !is_active(o) {
            // deactivated (parked): Kueue considers it no more and it holds nothing; a parked
            // replica still counts as waiting in its deployment's verdict
            if let Some(w) = read.as_ref().ok().filter(|w| w.deployment.is_some()) {
                let message = read_joint_check(o).map(|v| v.message).unwrap_or_default();
                state.restore_parked(w, message);
            }
            continue;
        }
        // with a real Kueue, gate 2 is its: a Workload it reserved nothing for is not judged
        // and holds nothing, one it reserved for is judged on its assignment
        let given = match quota_by {
            QuotaBy::Model => None,
            QuotaBy::Kueue => match kueue_assignments(o) {
                Some(given) => Some(given),
                None => continue,
            },
        };
        let submit = |state: &mut AdmissionState, w| match &given {
            Some(given) => state.submit_reserved(w, given),
            None => state.submit(w),
        };
        let entry = read_check(o).map(|v| v.state);
        // Kueue writes the entry Pending when it reserves quota: undecided until judged
        let undecided = given.is_some() && matches!(entry, None | Some(CheckState::Pending));
        match entry {
            Some(CheckState::Ready) => {
                if let Ok(w) = &read {
                    submit(&mut state, w);
                }
            }
            _ if undecided => {
                let verdict = match &read {
                    Ok(w) => verdict_of(&submit(&mut state, w)),
                    Err(e) => Verdict {
                        state: CheckState::Rejected,
                        message: e.to_string(),
                    },
                };
                if verdict.state != CheckState::Pending {
                    let now = store.now();
                    write_status(store, o, with_check(o, &verdict, &now), writes)?;
                }
            }
            Some(CheckState::Pending) if read.as_ref().is_ok_and(|w| w.deployment.is_some()) => {
                if let Ok(w) = &read {
                    let verdict = verdict_of(&submit(&mut state, w));
                    if verdict.state != CheckState::Pending {
                        let now = store.now();
                        write_status(store, o, with_check(o, &verdict, &now), writes)?;
                    }
                }
            }
            Some(_) => {}
            None => {
                let verdict = match &read {
                    Ok(w) => verdict_of(&submit(&mut state, w)),
                    Err(e) => Verdict {
                        state: CheckState::Rejected,
                        message: e.to_string(),
                    },
                };
                let now = store.now();
                write_status(store, o, with_check(o, &verdict, &now), writes)?;
            }
        }
    }
    park_held_past_bound(store, &listed, &mut state, writes)?;
    write_joint_entries(store, &listed, &state, writes)?;
    Ok(Some(state))
}

/// The deployments (namespace, name) with a held replica whose joint entry has been Pending
/// past the bound on the twin's clock (`heldPast`, `admission::joint::held_past`).
fn deployments_held_past(
    store: &Store,
    listed: &[Value],
    state: &AdmissionState,
) -> Vec<(String, String)> {
    let mut past: Vec<(String, String)> = Vec::new();
    for o in listed
        .iter()
        .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none() && is_active(o))
    {
        let Ok(w) = read_workload(o) else {
            continue;
        };
        let Some(d) = &w.deployment else {
            continue;
        };
        let held = state
            .joint_member(&w.namespace, &w.name)
            .is_some_and(|m| m.phase == JointPhase::Held);
        let since = joint_pending_since(o);
        let over = since.is_some_and(|t| held_past(store.advanced_since(&t)));
        let key = (w.namespace.clone(), d.deployment.clone());
        if held && over && !past.contains(&key) {
            past.push(key);
        }
    }
    past
}

/// The `lastTransitionTime` of a Pending joint entry (`None`: no entry, another state, or
/// never stamped: nothing has elapsed).
fn joint_pending_since(o: &Value) -> Option<String> {
    o.pointer("/status/admissionChecks")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(model::labels::JOINT_CHECK))
        .filter(|c| c.get("state").and_then(Value::as_str) == Some("Pending"))?
        .get("lastTransitionTime")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// Parks every deployment held past the bound (`Reconcile`'s park branch, `park`): the model
/// decides which replicas (`AdmissionState::joint_timeout`: the held ones of a settled,
/// Pending set) and the message; each gets the message on its joint entry, Pending, and then
/// `spec.active=false`.
fn park_held_past_bound(
    store: &mut Store,
    listed: &[Value],
    state: &mut AdmissionState,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let kind = kinds::WORKLOAD;
    for (namespace, deployment) in deployments_held_past(store, listed, state) {
        for key in state.joint_timeout(&namespace, &deployment) {
            let Some(m) = state.joint.get(&key) else {
                continue;
            };
            let (name, message) = (m.workload.name.clone(), m.message.clone());
            let current = store
                .get(&kind, Some(&namespace), &name)
                .map_err(write_err("get", &kind, &name))?;
            let entry = Verdict {
                state: CheckState::Pending,
                message,
            };
            let now = store.now();
            let next = with_joint_check(&current, &entry, &now);
            write_status(store, &current, next, writes)?;
            let mut current = store
                .get(&kind, Some(&namespace), &name)
                .map_err(write_err("get", &kind, &name))?;
            current["spec"]["active"] = json!(false);
            store
                .update(&kind, Some(&namespace), current)
                .map_err(write_err("update", &kind, &name))?;
            writes
                .done
                .push(("update", kind.kind, format!("{namespace}/{name}")));
        }
    }
    Ok(())
}

/// Writes the `gpustack-model-deployment-joint` entry the model decides on every live
/// Workload that differs from it (read afresh: this pass may have written the node-devices
/// entry already).
fn write_joint_entries(
    store: &mut Store,
    listed: &[Value],
    state: &AdmissionState,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let kind = kinds::WORKLOAD;
    for o in listed
        .iter()
        .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none())
    {
        let Ok(w) = read_workload(o) else {
            continue;
        };
        let Some(wanted) = state.joint_entry(&w) else {
            continue;
        };
        let current = store
            .get(&kind, Some(&w.namespace), &w.name)
            .map_err(write_err("get", &kind, &w.name))?;
        if read_joint_check(&current).as_ref() == Some(&wanted) {
            continue;
        }
        let now = store.now();
        let next = with_joint_check(&current, &wanted, &now);
        write_status(store, &current, next, writes)?;
    }
    Ok(())
}

/// Writes `next` as the status of Workload `o`.
fn write_status(
    store: &mut Store,
    o: &Value,
    next: Value,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let kind = kinds::WORKLOAD;
    let name = name_of(o);
    let ns = o
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    store
        .update_status(&kind, Some(&ns), next)
        .map_err(write_err("update status", &kind, &name))?;
    writes
        .done
        .push(("update status", kind.kind, format!("{ns}/{name}")));
    Ok(())
}
