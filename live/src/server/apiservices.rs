//! The local APIServices of apiregistration.k8s.io/v1 the kube-aggregator's autoregister
//! controllers keep (k8s.io/kube-aggregator and kube-apiserver's `apiVersionPriorities`; the
//! CRD registration controller for custom groups): one per served group version, named
//! `<version>.<group>` (`v1.` for core), with no `service` (served locally) and Available.
//! Priorities are the real server's for the built-in groups the twin serves (read off
//! kube-apiserver 1.37); every CRD group version gets 1000/100. The aggregator's own group
//! has none. Pure: the store writes what [`wanted`] lists.

use serde_json::{json, Map, Value};

use crate::wire::kinds::Kind;

/// The label the autoregister controllers mark their APIServices with.
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// `groupPriorityMinimum` and `versionPriority` of a built-in group version.
fn built_in_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    Some(match (group, version) {
        ("", "v1") => (18000, 1),
        ("apps", "v1") => (17800, 15),
        ("policy", "v1") => (17100, 15),
        ("rbac.authorization.k8s.io", "v1") => (17000, 15),
        ("admissionregistration.k8s.io", "v1") => (16700, 15),
        ("apiextensions.k8s.io", "v1") => (16700, 15),
        ("coordination.k8s.io", "v1") => (16500, 15),
        _ => return None,
    })
}

/// The APIServices for the group versions of `kinds`, in first-served order.
pub fn wanted(kinds: &[Kind]) -> Vec<Value> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for k in kinds {
        if k.group == "apiregistration.k8s.io" || seen.contains(&(k.group, k.version)) {
            continue;
        }
        seen.push((k.group, k.version));
    }
    seen.into_iter()
        .map(|(group, version)| api_service(group, version, !is_built_in(kinds, group)))
        .collect()
}

fn is_built_in(kinds: &[Kind], group: &str) -> bool {
    kinds
        .iter()
        .find(|k| k.group == group)
        .is_some_and(|k| !k.is_custom())
}

/// One local APIService: `custom` ones (CRD groups) are automanaged `true`, the built-in
/// ones `onstart`.
pub fn api_service(group: &str, version: &str, custom: bool) -> Value {
    let (minimum, priority, label) = match built_in_priority(group, version) {
        Some((m, p)) if !custom => (m, p, "onstart"),
        _ => (1000, 100, "true"),
    };
    let mut spec = Map::new();
    if !group.is_empty() {
        spec.insert("group".into(), json!(group));
    }
    spec.insert("version".into(), json!(version));
    spec.insert("groupPriorityMinimum".into(), json!(minimum));
    spec.insert("versionPriority".into(), json!(priority));
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": {AUTOMANAGED: label}},
        "spec": spec,
        "status": {"conditions": [{"type": "Available", "status": "True",
            "reason": "Local", "message": "Local APIServices are always available"}]},
    })
}

/// Whether an APIService object is one the autoregister controllers keep.
pub fn is_automanaged(object: &Map<String, Value>) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(AUTOMANAGED))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::kinds;

    #[test]
    fn one_per_served_group_version_with_the_real_priorities() {
        let all = wanted(&kinds::served());
        let names: Vec<&str> = all
            .iter()
            .filter_map(|a| a["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names[0], "v1.");
        assert!(names.contains(&"v1.apps"));
        assert!(names.contains(&"v1beta2.kueue.x-k8s.io"));
        assert!(!names.iter().any(|n| n.ends_with("apiregistration.k8s.io")));
        assert_eq!(
            all[0]["spec"],
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
        );
        let custom = api_service("worker.gpustack.ai", "v1alpha1", true);
        assert_eq!(custom["metadata"]["labels"][AUTOMANAGED], "true");
        assert_eq!(custom["spec"]["groupPriorityMinimum"], 1000);
    }
}
