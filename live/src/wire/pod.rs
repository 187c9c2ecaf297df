//! Pods in the twin: the charging Pods a mock binds to a fake Node so that the ledger rebuild
//! has the allocation records the device plugin would have left (research/devices.md §2.4
//! step 4), reading those records back ([`pod_holds`]), and the checks the apiserver makes on a
//! Pod that matter here ([`validate`]). What the records mean is `model::allocation`'s.

use model::allocation::{CardHold, PodHolds, ALLOCATED_ANNOTATION};
use model::devices::{Devices, Mode};
use serde_json::{json, Map, Value};

use super::kinds;
use crate::server::status::Cause;

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

/// The apiserver's checks on a Pod that a mock can get wrong (k8s.io/kubernetes
/// pkg/apis/core/validation `ValidatePodSpec`, the part verify writes): at least one container;
/// each named by a unique DNS-1123 label and with an image; `spec.nodeName` a string;
/// annotation values strings. Not checked: spec immutability on update, resources, volumes.
pub fn validate(pod: &Value) -> Result<Value, Vec<Cause>> {
    let mut causes = Vec::new();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    match spec.get("containers").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {
            let mut seen = std::collections::BTreeSet::new();
            for (i, c) in list.iter().enumerate() {
                let at = format!("spec.containers[{i}]");
                match c.get("name").and_then(Value::as_str) {
                    Some(name) if !is_dns_label(name) => causes.push(Cause::new(
                        &format!("{at}.name"),
                        "FieldValueInvalid",
                        format!("Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"),
                    )),
                    Some(name) if !seen.insert(name) => causes.push(Cause::new(
                        &format!("{at}.name"),
                        "FieldValueDuplicate",
                        format!("Duplicate value: \"{name}\""),
                    )),
                    Some(_) => {}
                    None => causes.push(Cause::new(
                        &format!("{at}.name"),
                        "FieldValueRequired",
                        "Required value",
                    )),
                }
                if c.get("image")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    causes.push(Cause::new(
                        &format!("{at}.image"),
                        "FieldValueRequired",
                        "Required value",
                    ));
                }
            }
        }
        _ => causes.push(Cause::new(
            "spec.containers",
            "FieldValueRequired",
            "Required value",
        )),
    }
    if spec
        .get("nodeName")
        .is_some_and(|n| !n.is_string() && !n.is_null())
    {
        causes.push(Cause::new(
            "spec.nodeName",
            "FieldValueTypeInvalid",
            "Invalid value: expected a string",
        ));
    }
    if let Some(annotations) = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        for (k, v) in annotations {
            if !v.is_string() {
                causes.push(Cause::new(
                    &format!("metadata.annotations.{k}"),
                    "FieldValueTypeInvalid",
                    "Invalid value: expected a string",
                ));
            }
        }
    }
    if causes.is_empty() {
        Ok(pod.clone())
    } else {
        Err(causes)
    }
}

/// RFC 1123 label: 1–63 of `[a-z0-9-]`, alphanumeric at both ends.
pub(crate) fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Plugs [`validate`] into a store for Pods.
pub fn install_validator(store: &mut crate::server::store::Store) {
    store.set_validator(&kinds::POD, Box::new(validate));
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::devices::{Card, DeviceGroup, Ledger};
    use model::units::UNITS_PER_CARD;

    fn sliced_devices(slices: u32) -> Devices {
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: "nvidia".into(),
                id: "a10".into(),
                cards: vec![Card {
                    id: "GPU-0".into(),
                    index: 0,
                    capability: None,
                    ledger: Some(Ledger {
                        mode: Mode::Sliced,
                        remaining_units: UNITS_PER_CARD - i64::from(slices) * 160_000,
                        allocated_slices: slices,
                        ..Ledger::default()
                    }),
                }],
                ..DeviceGroup::default()
            }],
        }
    }

    #[test]
    fn a_charging_pod_reads_back_as_its_holds() {
        let d = sliced_devices(2);
        let pod = charging_pod("gpu-0", "gpustack-system", &d).expect("a pod");
        assert_eq!(pod["metadata"]["name"], json!("gpu-0-charges-2"));
        assert_eq!(validate(&pod).map(|_| ()), Ok(()));
        let (node, holds) = pod_holds(&pod).expect("readable");
        assert_eq!(node, "gpu-0");
        assert_eq!(holds.containers, model::allocation::holds_explaining(&d));
        assert_eq!(
            model::allocation::hosted_slices(&[holds], "a10", "GPU-0"),
            2
        );
        assert_eq!(charging_pod("gpu-0", "ns", &sliced_devices(0)), None);
    }

    #[test]
    fn an_unreadable_record_holds_nothing_and_a_bad_pod_is_refused() {
        let mut pod = charging_pod("gpu-0", "ns", &sliced_devices(1)).expect("a pod");
        pod["metadata"]["annotations"][ALLOCATED_ANNOTATION] = json!("{not json");
        assert_eq!(pod_holds(&pod), None);
        pod["spec"]["containers"] =
            json!([{"name": "Bad_Name"}, {"name": "Bad_Name", "image": "x"}]);
        let causes = validate(&pod).err().unwrap_or_default();
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.containers[0].name",
                "spec.containers[0].image",
                "spec.containers[1].name"
            ]
        );
        assert!(validate(&json!({"spec": {}})).is_err());
    }
}
