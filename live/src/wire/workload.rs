//! Kueue `Workload`s (kueue.x-k8s.io/v1beta2) on the wire and the model's [`Workload`]: the one
//! place both directions live, for the twin's reference operator and for clients that submit
//! Workloads and read their verdicts. Also the `gpustack-node-devices` entry of
//! `status.admissionChecks[]` and how a model [`Outcome`] is written there and read back.
//! Field names follow kueue.x-k8s.io_workloads.yaml (v1beta2) in shared/crds.

use model::admission::demands::{HostPods, PodSetAssignment};
use model::admission::{CheckState, Verdict};
use model::labels::{JOINT_CHECK, NODE_DEVICES_CHECK};
use model::lifecycle::Outcome;
use model::workload::{Container, PodSet, ResourceList, Workload};
use serde_json::{json, Map, Value};

use super::kinds;
use super::read::ReadError;

/// `apiVersion` of the Workloads the twin serves.
pub const WORKLOAD_API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// The message prefix that marks [`Outcome::Unplaceable`] in a `Retry` entry (the operator has
/// no state for "gate 3 said Ready but the cards could not be charged"; the twin reports it as
/// a Retry so Kueue would requeue it, and the prefix keeps it apart from gate 3's own Retry).
pub const UNPLACEABLE_PREFIX: &str = "unplaceable after a Ready verdict: ";

fn field_error(name: &str, field: &str, message: impl Into<String>) -> ReadError {
    ReadError::Field {
        kind: kinds::WORKLOAD.kind,
        name: name.to_string(),
        field: field.to_string(),
        message: message.into(),
    }
}

fn container_object(c: &Container) -> Value {
    let mut resources = Map::new();
    if !c.requests.is_empty() {
        resources.insert("requests".into(), json!(c.requests));
    }
    if !c.limits.is_empty() {
        resources.insert("limits".into(), json!(c.limits));
    }
    json!({"name": c.name, "resources": resources})
}

/// The Workload object a client creates for `w` in `w.namespace`: `spec.queueName` and one
/// `spec.podSets[]` entry per pod set (`count`, pod template labels, init and app containers
/// with their requests and limits). What Kueue assigns (`PodSet::flavor`, `PodSet::node`) is
/// status, not spec, and is not written.
pub fn workload_object(w: &Workload) -> Value {
    let pod_sets: Vec<Value> = w
        .pod_sets
        .iter()
        .map(|ps| {
            let of = |init: bool| -> Vec<Value> {
                ps.containers
                    .iter()
                    .filter(|c| c.init == init)
                    .map(container_object)
                    .collect()
            };
            let mut spec = Map::new();
            spec.insert("containers".into(), Value::Array(of(false)));
            let init = of(true);
            if !init.is_empty() {
                spec.insert("initContainers".into(), Value::Array(init));
            }
            let mut template = json!({"spec": spec});
            if !ps.labels.is_empty() {
                template["metadata"] = json!({"labels": ps.labels});
            }
            json!({"name": ps.name, "count": ps.count, "template": template})
        })
        .collect();
    let mut metadata = json!({"name": w.name, "namespace": w.namespace});
    if let Some(d) = &w.deployment {
        metadata["annotations"] = json!({
            DEPLOYMENT_REPLICA_ANNOTATION: serde_json::to_string(d).unwrap_or_default(),
        });
    }
    json!({
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "Workload",
        "metadata": metadata,
        "spec": {"queueName": w.queue, "podSets": pod_sets},
    })
}

/// The annotation a Workload the twin serves carries when it stands for a ModelDeployment
/// replica: the model's `DeploymentReplica` as JSON. The operator finds the same facts by
/// walking Workload → Pod (`app.kubernetes.io/instance`, `app.kubernetes.io/component`,
/// `kueue.x-k8s.io/pod-group-name`) → ModelDeployment (its declared roles); the twin has
/// neither Pods nor ModelDeployments, so the Workload carries them.
pub const DEPLOYMENT_REPLICA_ANNOTATION: &str = "verify.gpustack.ai/model-deployment-replica";

/// The replica `o` stands for, from [`DEPLOYMENT_REPLICA_ANNOTATION`].
fn read_deployment(
    o: &Value,
    name: &str,
) -> Result<Option<model::admission::joint::DeploymentReplica>, ReadError> {
    let Some(text) = o
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DEPLOYMENT_REPLICA_ANNOTATION))
    else {
        return Ok(None);
    };
    let field = format!("metadata.annotations[{DEPLOYMENT_REPLICA_ANNOTATION}]");
    let text = text
        .as_str()
        .ok_or_else(|| field_error(name, &field, "expected a string"))?;
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| field_error(name, &field, e.to_string()))
}

/// A string map at `v[key]` (absent = empty).
fn resource_list(v: &Value, key: &str, name: &str, path: &str) -> Result<ResourceList, ReadError> {
    let Some(map) = v.get(key).filter(|m| !m.is_null()) else {
        return Ok(ResourceList::new());
    };
    let map = map
        .as_object()
        .ok_or_else(|| field_error(name, &format!("{path}.{key}"), "expected an object"))?;
    map.iter()
        .map(|(k, q)| match q {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            _ => Err(field_error(
                name,
                &format!("{path}.{key}.{k}"),
                "expected a quantity",
            )),
        })
        .collect()
}

fn read_containers(
    spec: &Value,
    key: &str,
    init: bool,
    name: &str,
    path: &str,
) -> Result<Vec<Container>, ReadError> {
    let Some(list) = spec.get(key).filter(|l| !l.is_null()) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| field_error(name, &format!("{path}.{key}"), "expected a list"))?;
    list.iter()
        .enumerate()
        .map(|(i, c)| {
            let path = format!("{path}.{key}[{i}]");
            let resources = c.get("resources").unwrap_or(&Value::Null);
            let rpath = format!("{path}.resources");
            Ok(Container {
                name: c
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| field_error(name, &format!("{path}.name"), "expected a string"))?
                    .to_string(),
                requests: resource_list(resources, "requests", name, &rpath)?,
                limits: resource_list(resources, "limits", name, &rpath)?,
                init,
            })
        })
        .collect()
}

/// The flavor Kueue assigned to pod set `pod_set` (`status.admission.podSetAssignments[]`
/// `.flavors`: the first resource's flavor, every resource of a pod set sharing one here).
fn assigned_flavor(o: &Value, pod_set: &str) -> Option<String> {
    o.pointer("/status/admission/podSetAssignments")?
        .as_array()?
        .iter()
        .find(|a| a.get("name").and_then(Value::as_str) == Some(pod_set))?
        .get("flavors")?
        .as_object()?
        .values()
        .find_map(Value::as_str)
        .map(str::to_string)
}

/// Kueue's quota reservation on a Workload: `status.admission.podSetAssignments` as gate 2's
/// [`PodSetAssignment`]s (flavors per resource; the hostname level of a topology assignment),
/// while its `QuotaReserved` condition is True. `None`: Kueue has reserved nothing.
pub fn kueue_assignments(o: &Value) -> Option<Vec<PodSetAssignment>> {
    let reserved = o
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("QuotaReserved")
                && c.get("status").and_then(Value::as_str) == Some("True")
        });
    if !reserved {
        return None;
    }
    let assignments = o
        .pointer("/status/admission/podSetAssignments")?
        .as_array()?;
    Some(
        assignments
            .iter()
            .map(|a| PodSetAssignment {
                pod_set: a
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                flavors: a
                    .get("flavors")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter_map(|(r, f)| Some((r.clone(), f.as_str()?.to_string())))
                    .collect(),
                hosts: a
                    .get("topologyAssignment")
                    .map(topology_hosts)
                    .unwrap_or_default(),
            })
            .collect(),
    )
}

/// The pods per value of the last (hostname) level of a v1beta2 `topologyAssignment`: each
/// slice covers `domainCount` domains, its pods `universal` or `individual` per domain, its
/// values at a level `universal` or `prefix + roots[i] + suffix`.
fn topology_hosts(t: &Value) -> Vec<HostPods> {
    let mut hosts = Vec::new();
    for slice in t
        .get("slices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let n = slice
            .get("domainCount")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let counts = slice.get("podCounts").unwrap_or(&Value::Null);
        let values = slice
            .get("valuesPerLevel")
            .and_then(Value::as_array)
            .and_then(|l| l.last())
            .unwrap_or(&Value::Null);
        for i in 0..n {
            let pods = counts
                .get("universal")
                .or_else(|| counts.get("individual").and_then(|v| v.get(i)))
                .and_then(Value::as_u64)
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(0);
            let hostname = match values.get("universal").and_then(Value::as_str) {
                Some(v) => v.to_string(),
                None => {
                    let part = |k: &str| {
                        values
                            .pointer(&format!("/individual/{k}"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    };
                    let root = values
                        .pointer(&format!("/individual/roots/{i}"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    format!("{}{root}{}", part("prefix"), part("suffix"))
                }
            };
            hosts.push(HostPods { hostname, pods });
        }
    }
    hosts
}

/// The model's Workload read from a Workload object: name, namespace, `spec.queueName`, pod
/// sets (count, template labels, init and app containers); `PodSet::flavor` from
/// `status.admission` when Kueue assigned one. Errors name the Workload and the field.
pub fn read_workload(o: &Value) -> Result<Workload, ReadError> {
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let name = text("/metadata/name").to_string();
    if name.is_empty() {
        return Err(field_error("", "metadata.name", "expected a name"));
    }
    let queue = o
        .pointer("/spec/queueName")
        .and_then(Value::as_str)
        .ok_or_else(|| field_error(&name, "spec.queueName", "expected a string"))?;
    let pod_sets = o
        .pointer("/spec/podSets")
        .and_then(Value::as_array)
        .ok_or_else(|| field_error(&name, "spec.podSets", "expected a list"))?;
    let pod_sets = pod_sets
        .iter()
        .enumerate()
        .map(|(i, ps)| {
            let path = format!("spec.podSets[{i}]");
            let ps_name = ps
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| field_error(&name, &format!("{path}.name"), "expected a string"))?;
            let count = match ps.get("count") {
                None | Some(Value::Null) => 1,
                Some(c) => c
                    .as_u64()
                    .and_then(|c| u32::try_from(c).ok())
                    .ok_or_else(|| {
                        field_error(&name, &format!("{path}.count"), "expected a count ≥ 0")
                    })?,
            };
            let template = ps.get("template").unwrap_or(&Value::Null);
            let spec = template.get("spec").unwrap_or(&Value::Null);
            let spec_path = format!("{path}.template.spec");
            let mut containers = read_containers(spec, "initContainers", true, &name, &spec_path)?;
            containers.extend(read_containers(
                spec,
                "containers",
                false,
                &name,
                &spec_path,
            )?);
            let labels = template
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.into(), v.as_str()?.into())))
                .collect();
            Ok(PodSet {
                name: ps_name.to_string(),
                count,
                containers,
                labels,
                flavor: assigned_flavor(o, ps_name),
                node: None,
            })
        })
        .collect::<Result<Vec<_>, ReadError>>()?;
    Ok(Workload {
        deployment: read_deployment(o, &name)?,
        name,
        namespace: text("/metadata/namespace").to_string(),
        queue: queue.to_string(),
        pod_sets,
    })
}

/// The node-devices entry a model [`Outcome`] is written as: Rejected (gate 1 refused a
/// Pod), Pending (gate 2 reserved no quota; Kueue's message), Retry (gate 3's verdict, or
/// [`UNPLACEABLE_PREFIX`] and the reason), Ready (admitted; the lifecycle does not keep gate
/// 3's Ready text, so the message is empty).
pub fn verdict_of(outcome: &Outcome) -> Verdict {
    let (state, message) = match outcome {
        Outcome::Rejected { message } => (CheckState::Rejected, message.clone()),
        Outcome::Pending { reason } => (CheckState::Pending, reason.clone()),
        Outcome::Retry { message } => (CheckState::Retry, message.clone()),
        // A held replica passed gate 3: its node-devices entry is Ready (the joint entry,
        // `gpustack-model-deployment-joint`, is the one that holds it), so it reads back from
        // this entry alone as admitted.
        Outcome::Admitted | Outcome::Held { .. } => (CheckState::Ready, String::new()),
        Outcome::Unplaceable { reason } => {
            (CheckState::Retry, format!("{UNPLACEABLE_PREFIX}{reason}"))
        }
    };
    Verdict { state, message }
}

/// The inverse of [`verdict_of`].
pub fn outcome_of(v: &Verdict) -> Outcome {
    match v.state {
        CheckState::Rejected => Outcome::Rejected {
            message: v.message.clone(),
        },
        CheckState::Pending => Outcome::Pending {
            reason: v.message.clone(),
        },
        CheckState::Ready => Outcome::Admitted,
        CheckState::Retry => match v.message.strip_prefix(UNPLACEABLE_PREFIX) {
            Some(reason) => Outcome::Unplaceable {
                reason: reason.to_string(),
            },
            None => Outcome::Retry {
                message: v.message.clone(),
            },
        },
    }
}

/// The `gpustack-node-devices` entry of `status.admissionChecks[]`, if the Workload has one.
pub fn read_check(o: &Value) -> Option<Verdict> {
    let entry = o
        .pointer("/status/admissionChecks")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(NODE_DEVICES_CHECK))?;
    let state = serde_json::from_value(entry.get("state")?.clone()).ok()?;
    let message = entry
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some(Verdict { state, message })
}

/// Whether the Workload may be admitted: `spec.active` absent or true (Kueue's `IsActive`).
pub fn is_active(o: &Value) -> bool {
    o.pointer("/spec/active").and_then(Value::as_bool) != Some(false)
}

/// Where the joint check stands on a Workload read back from the wire, named as a `joint`
/// expectation names a `lifecycle::JointPhase`, with its entry's message: `parked` when it is
/// deactivated (`spec.active=false`); `admitted` for a Ready entry, `held` for a Pending one;
/// `waiting` for a ModelDeployment replica (on a queue that references the check) with no
/// entry yet, as it holds no reservation; `untracked` for no Workload, one outside the
/// barrier (Ready with `NOT_A_GROUP_MESSAGE`) or one that is no replica.
pub fn joint_phase_on_wire(o: Option<&Value>) -> (&'static str, String) {
    use model::admission::joint::NOT_A_GROUP_MESSAGE;
    let Some(o) = o else {
        return ("untracked", String::new());
    };
    let entry = read_joint_check(o);
    let message = entry
        .as_ref()
        .map(|v| v.message.clone())
        .unwrap_or_default();
    let replica = o
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DEPLOYMENT_REPLICA_ANNOTATION))
        .is_some();
    let phase = match entry.map(|v| v.state) {
        _ if !is_active(o) => "parked",
        Some(CheckState::Ready) if message == NOT_A_GROUP_MESSAGE => "untracked",
        Some(CheckState::Ready) => "admitted",
        Some(_) => "held",
        None if replica => "waiting",
        None => "untracked",
    };
    (phase, message)
}

/// The `gpustack-model-deployment-joint` entry of `status.admissionChecks[]`, if any.
pub fn read_joint_check(o: &Value) -> Option<Verdict> {
    let entry = o
        .pointer("/status/admissionChecks")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(JOINT_CHECK))?;
    Some(Verdict {
        state: serde_json::from_value(entry.get("state")?.clone()).ok()?,
        message: entry
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

/// `o` with its `gpustack-model-deployment-joint` entry set to `verdict` (Ready or Pending:
/// the check never writes Retry), other entries kept; `lastTransitionTime` is `now` when the
/// state changes and kept when it does not (Kueue's `SetAdmissionCheckState`; the bound is
/// measured from it).
pub fn with_joint_check(o: &Value, verdict: &Verdict, now: &str) -> Value {
    let checks: Vec<Value> = o
        .pointer("/status/admissionChecks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let previous = checks
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(JOINT_CHECK));
    let since = previous
        .filter(|p| read_joint_check(o).is_some_and(|v| v.state == verdict.state) && p.is_object())
        .and_then(|p| p.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let entry = json!({
        "name": JOINT_CHECK,
        "state": verdict.state,
        "message": verdict.message,
        "lastTransitionTime": since,
    });
    let mut kept: Vec<Value> = checks
        .into_iter()
        .filter(|c| c.get("name").and_then(Value::as_str) != Some(JOINT_CHECK))
        .collect();
    kept.push(entry);
    let mut next = o.clone();
    if !next.get("status").is_some_and(Value::is_object) {
        next["status"] = json!({});
    }
    next["status"]["admissionChecks"] = Value::Array(kept);
    next
}

/// `o` with its `gpustack-node-devices` entry set to `verdict` (stamped `now`; a Retry carries
/// `requeueAfterSeconds`, as model::admission::desired_check_states renders it), other
/// entries kept.
pub fn with_check(o: &Value, verdict: &Verdict, now: &str) -> Value {
    let (desired, _) = model::admission::verdict::desired_check_states(
        &[],
        &[NODE_DEVICES_CHECK.to_string()],
        verdict,
    );
    let mut entry = json!({"name": NODE_DEVICES_CHECK, "lastTransitionTime": now});
    if let Some(d) = desired.first() {
        entry["state"] = json!(d.state);
        entry["message"] = json!(d.message);
        if let Some(s) = d.requeue_after_seconds {
            entry["requeueAfterSeconds"] = json!(s);
        }
    }
    let mut next = o.clone();
    let mut checks: Vec<Value> = o
        .pointer("/status/admissionChecks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("name").and_then(Value::as_str) != Some(NODE_DEVICES_CHECK))
        .cloned()
        .collect();
    checks.push(entry);
    if !next.get("status").is_some_and(Value::is_object) {
        next["status"] = json!({});
    }
    next["status"]["admissionChecks"] = Value::Array(checks);
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload() -> Workload {
        let container = |name: &str, init: bool| Container {
            name: name.into(),
            requests: [("nvidia.com/gpu".to_string(), "1".to_string())].into(),
            limits: [("cpu".to_string(), "500m".to_string())].into(),
            init,
        };
        Workload {
            deployment: None,
            name: "w1".into(),
            namespace: "team".into(),
            queue: "gpustack-fnv64-1".into(),
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: 2,
                containers: vec![container("setup", true), container("app", false)],
                labels: model::labels::from_pairs(&[("a", "b")]),
                flavor: None,
                node: None,
            }],
        }
    }

    #[test]
    fn kueues_reservation_reads_flavors_and_the_hostname_level() {
        let o = json!({"status": {
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "admission": {"podSetAssignments": [{
                "name": "main",
                "flavors": {"credits.gpustack.ai/nvidia": "f1"},
                "topologyAssignment": {
                    "levels": ["kubernetes.io/hostname"],
                    "slices": [
                        {"domainCount": 2, "podCounts": {"individual": [1, 2]},
                         "valuesPerLevel": [{"individual": {"prefix": "node-", "roots": ["a", "b"]}}]},
                        {"domainCount": 1, "podCounts": {"universal": 3},
                         "valuesPerLevel": [{"universal": "node-c"}]},
                    ],
                },
            }]},
        }});
        let got = kueue_assignments(&o).expect("reserved");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].pod_set, "main");
        assert_eq!(got[0].flavors["credits.gpustack.ai/nvidia"], "f1");
        let hosts: Vec<(String, u32)> = got[0]
            .hosts
            .iter()
            .map(|h| (h.hostname.clone(), h.pods))
            .collect();
        assert_eq!(
            hosts,
            [
                ("node-a".into(), 1),
                ("node-b".into(), 2),
                ("node-c".into(), 3)
            ]
        );
        // no reservation while QuotaReserved is not True
        let mut pending = o.clone();
        pending["status"]["conditions"][0]["status"] = json!("False");
        assert_eq!(kueue_assignments(&pending), None);
    }

    #[test]
    fn a_workload_round_trips_through_its_object() {
        let w = workload();
        assert_eq!(read_workload(&workload_object(&w)), Ok(w));
    }

    #[test]
    fn a_deployment_replica_round_trips_through_its_annotation() {
        let mut w = workload();
        w.deployment = Some(model::admission::joint::DeploymentReplica {
            deployment: "pd".into(),
            role: "decode".into(),
            ordinal: 1,
            roles: vec![model::admission::joint::DeclaredRole {
                name: "decode".into(),
                replicas: 2,
                instance_type: "it".into(),
            }],
        });
        assert_eq!(read_workload(&workload_object(&w)), Ok(w));
        let mut bad = workload_object(&workload());
        bad["metadata"]["annotations"] = json!({DEPLOYMENT_REPLICA_ANNOTATION: "{"});
        let e = read_workload(&bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(DEPLOYMENT_REPLICA_ANNOTATION), "{e}");
    }

    #[test]
    fn the_joint_entry_keeps_its_transition_time_while_its_state_holds() {
        let o = workload_object(&workload());
        let pending = |m: &str| Verdict {
            state: CheckState::Pending,
            message: m.into(),
        };
        let first = with_joint_check(&o, &pending("a"), "t1");
        let second = with_joint_check(&first, &pending("b"), "t2");
        assert_eq!(read_joint_check(&second), Some(pending("b")));
        assert_eq!(
            second["status"]["admissionChecks"][0]["lastTransitionTime"],
            "t1"
        );
        let ready = with_joint_check(&second, &Verdict::ready("r".into()), "t3");
        assert_eq!(
            ready["status"]["admissionChecks"][0]["lastTransitionTime"],
            "t3"
        );
        assert_eq!(
            ready["status"]["admissionChecks"].as_array().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn the_assigned_flavor_is_read_from_status() {
        let mut o = workload_object(&workload());
        o["status"] = json!({"admission": {"podSetAssignments": [
            {"name": "main", "flavors": {"nvidia.com/gpu": "rf-a"}}]}});
        let read = read_workload(&o).unwrap_or_default();
        assert_eq!(read.pod_sets[0].flavor.as_deref(), Some("rf-a"));
    }

    #[test]
    fn bad_fields_are_named() {
        let mut o = workload_object(&workload());
        o["spec"]["podSets"][0]["count"] = json!(-1);
        let e = read_workload(&o)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("Workload w1: spec.podSets[0].count"), "{e}");
        o["spec"]["podSets"][0]["count"] = json!(1);
        o["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] =
            json!({"x": []});
        let e = read_workload(&o)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("spec.podSets[0].template.spec.containers[0].resources.requests.x"),
            "{e}"
        );
        let e = read_workload(&json!({"metadata": {"name": "w"}}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("spec.queueName"), "{e}");
    }

    #[test]
    fn outcomes_round_trip_through_the_check_entry() {
        for outcome in [
            Outcome::Rejected {
                message: "no".into(),
            },
            Outcome::Pending {
                reason: "quota".into(),
            },
            Outcome::Retry {
                message: "full".into(),
            },
            Outcome::Admitted,
            Outcome::Unplaceable {
                reason: "gone".into(),
            },
        ] {
            let o = with_check(
                &workload_object(&workload()),
                &verdict_of(&outcome),
                "2025-01-01T00:00:00Z",
            );
            let read = read_check(&o);
            assert_eq!(read.as_ref().map(outcome_of), Some(outcome.clone()));
            let retry = matches!(outcome, Outcome::Retry { .. } | Outcome::Unplaceable { .. });
            assert_eq!(
                o["status"]["admissionChecks"][0]["requeueAfterSeconds"].is_number(),
                retry
            );
        }
    }

    #[test]
    fn other_checks_are_kept() {
        let mut o = workload_object(&workload());
        o["status"] = json!({"admissionChecks": [{"name": "other", "state": "Pending"}]});
        let next = with_check(&o, &Verdict::retry("x".into()), "t");
        assert_eq!(next["status"]["admissionChecks"][0]["name"], "other");
        assert_eq!(next["status"]["admissionChecks"][1]["state"], "Retry");
    }
}
