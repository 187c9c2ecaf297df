//! Pods on the wire: the charging Pods a mock binds to a fake Node so that the ledger rebuild
//! has the allocation records the device plugin would have left (research/devices.md §2.4
//! step 4), and reading those records back ([`pod_holds`]). What the records mean is
//! `model::allocation`'s; the apiserver's checks on a Pod are the server's
//! (`server::pods::validate`).

use model::allocation::{CardHold, PodHolds, ALLOCATED_ANNOTATION};
use model::devices::{Devices, Mode};
use serde_json::{json, Map, Value};

/// The image of a charging Pod's containers: it never runs (a fake Node has no kubelet).
const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

/// The charging Pod of `node` in `namespace`, one container per hold of
/// `model::allocation::holds_explaining` (None when the node's cards hold nothing). Its name
/// carries the container count: a real apiserver refuses to change a Pod's containers, so a
/// different count is a different Pod, while a change of units alone patches the annotation.
/// It tolerates not-ready and unreachable (no kubelet will ever report the Node ready), has
/// no grace period, so deleting it does not wait for a kubelet, and meets Pod Security's
/// `restricted` level.
pub fn charging_pod(node: &str, namespace: &str, devices: &Devices) -> Option<Value> {
    let holds = model::allocation::holds_explaining(devices);
    if holds.is_empty() {
        return None;
    }
    let names: Vec<String> = (0..holds.len()).map(|i| format!("charge-{i}")).collect();
    let record: Map<String, Value> = names
        .iter()
        .zip(&holds)
        .map(|(name, container)| (name.clone(), container_record(container)))
        .collect();
    // what Pod Security's `restricted` level asks of a container, so that no namespace
    // policy on a real cluster refuses the mock
    let containers: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({"name": name, "image": PAUSE_IMAGE, "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
            }})
        })
        .collect();
    let tolerations: Vec<Value> = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    .iter()
    .map(|key| json!({"key": key, "operator": "Exists", "effect": "NoExecute"}))
    .collect();
    Some(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("{node}-charges-{}", holds.len()),
            "namespace": namespace,
            "annotations": {ALLOCATED_ANNOTATION: Value::Object(record).to_string()},
        },
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "tolerations": tolerations,
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 65535,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": containers,
        },
    }))
}

/// One container's entry in the device plugin's format: `{"devices": {"groups": [{id,
/// manufacturer, accelerators: [{id, index, mode, allocated, allocatedPhysicalProfile?}]}]}}`.
fn container_record(holds: &[CardHold]) -> Value {
    let mut groups: Vec<Value> = Vec::new();
    for h in holds {
        let mut row = json!({"id": h.card, "index": h.index, "mode": h.mode.wire(), "allocated": h.allocated});
        if let Some(profile) = &h.profile {
            row["allocatedPhysicalProfile"] = json!(profile);
        }
        match groups.iter_mut().find(|g| g["id"] == json!(h.group)) {
            Some(g) => {
                if let Some(rows) = g["accelerators"].as_array_mut() {
                    rows.push(row);
                }
            }
            None => groups.push(json!({
                "id": h.group, "manufacturer": h.manufacturer, "accelerators": [row],
            })),
        }
    }
    json!({"devices": {"groups": groups}})
}

/// The node a Pod is bound to (`spec.nodeName`) and what its allocation record holds; None
/// for an unbound Pod, one without a record, or one whose record does not read (the ledger
/// drops such a Pod: pkg/deviceplugin/sliced_room.go reads an unreadable record as holding
/// nothing).
pub fn pod_holds(pod: &Value) -> Option<(String, PodHolds)> {
    let node = pod.pointer("/spec/nodeName")?.as_str()?.to_string();
    let text = pod
        .pointer("/metadata/annotations")?
        .get(ALLOCATED_ANNOTATION)?
        .as_str()?;
    let record: Map<String, Value> = serde_json::from_str(text).ok()?;
    let mut names: Vec<&String> = record.keys().collect();
    names.sort();
    let containers = names
        .into_iter()
        .map(|name| container_holds(record.get(name)?))
        .collect::<Option<Vec<_>>>()?;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    Some((
        node,
        PodHolds {
            finished: matches!(phase, Some("Succeeded" | "Failed")),
            containers,
        },
    ))
}

fn container_holds(entry: &Value) -> Option<Vec<CardHold>> {
    let mut out = Vec::new();
    let groups = entry
        .pointer("/devices/groups")
        .map_or(Some(&[][..]), |g| g.as_array().map(Vec::as_slice))?;
    for g in groups {
        let group = g.get("id")?.as_str()?;
        let manufacturer = g.get("manufacturer").and_then(Value::as_str).unwrap_or("");
        for row in g.get("accelerators")?.as_array()? {
            out.push(CardHold {
                group: group.to_string(),
                manufacturer: manufacturer.to_string(),
                card: row.get("id")?.as_str()?.to_string(),
                index: u32::try_from(row.get("index").map_or(Some(0), Value::as_u64)?).ok()?,
                mode: Mode::from_wire(row.get("mode").map_or(Some(0), Value::as_u64)?).ok()?,
                allocated: row.get("allocated").map_or(Some(0), Value::as_i64)?,
                profile: row
                    .get("allocatedPhysicalProfile")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
    }
    Some(out)
}
