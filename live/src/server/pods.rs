//! The checks the apiserver makes on a Pod that matter here ([`validate`]): a mock's charging
//! Pods (`wire::pod::charging_pod`) must pass them as a real apiserver would.

use serde_json::Value;

use super::status::Cause;
use super::store::Store;
use crate::wire::kinds;

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
pub fn install_validator(store: &mut Store) {
    store.set_validator(&kinds::POD, Box::new(validate));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pod::{charging_pod, pod_holds};
    use model::allocation::ALLOCATED_ANNOTATION;
    use model::devices::{Card, DeviceGroup, Devices, Ledger, Mode};
    use model::units::UNITS_PER_CARD;
    use serde_json::json;

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
