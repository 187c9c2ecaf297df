//! The discovery documents a real apiserver serves (`/api`, `/api/v1`, `/apis`,
//! `/apis/{group}`, `/apis/{group}/{version}`, `/version`), shaped like the legacy
//! (non-aggregated) JSON of k8s.io/apimachinery pkg/apis/meta/v1 types.go: `APIVersions`,
//! `APIGroupList`, `APIGroup`, `APIResourceList`. Names, short names and categories are those
//! of ../shared/crds (and of the core kinds). The twin answers the aggregated-discovery
//! `Accept` with plain `application/json`, which clients treat as "legacy discovery only".

use serde_json::{json, Value};

use crate::wire::kinds::Kind;

/// Verbs of a main resource the twin serves (no `deletecollection`: the store has none).
pub const RESOURCE_VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// Verbs of a `/status` subresource.
pub const STATUS_VERBS: [&str; 3] = ["get", "patch", "update"];

/// The `singularName` of a kind: the CRD's `names.singular` (Devices is `devices`), else the
/// lower-cased kind (as the apiserver fills it for built-in kinds).
pub fn singular_name(kind: &Kind) -> String {
    match kind.kind {
        "Devices" => "devices".to_string(),
        other => other.to_ascii_lowercase(),
    }
}

/// The `shortNames` of a kind (../shared/crds `names.shortNames`; core: no, ns, po).
pub fn short_names(kind: &Kind) -> &'static [&'static str] {
    match (kind.group, kind.kind) {
        ("", "Node") => &["no"],
        ("", "Namespace") => &["ns"],
        ("", "Pod") => &["po"],
        ("", "ConfigMap") => &["cm"],
        ("", "ServiceAccount") => &["sa"],
        // kubernetes pkg/registry/core/persistentvolumeclaim/storage, batch/cronjob/storage
        ("", "PersistentVolumeClaim") => &["pvc"],
        ("batch", "CronJob") => &["cj"],
        ("apps", "Deployment") => &["deploy"],
        ("policy", "PodDisruptionBudget") => &["pdb"],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => &["crd", "crds"],
        ("worker.gpustack.ai", "InstanceType") => &["instype"],
        ("kueue.x-k8s.io", "ResourceFlavor") => &["flavor", "flavors", "rf"],
        ("kueue.x-k8s.io", "Topology") => &["topo"],
        ("kueue.x-k8s.io", "ClusterQueue") => &["cq"],
        ("kueue.x-k8s.io", "LocalQueue") => &["queue", "queues", "lq"],
        ("kueue.x-k8s.io", "AdmissionCheck") => &["ac"],
        ("kueue.x-k8s.io", "Workload") => &["kwl", "kueueworkload", "kueueworkloads"],
        _ => &[],
    }
}

/// The `categories` of a kind (../shared/crds `names.categories`; core pods are in `all`).
pub fn categories(kind: &Kind) -> &'static [&'static str] {
    match (kind.group, kind.kind) {
        // kubernetes pkg/registry/batch/{job,cronjob}/storage: Categories() is `all`
        ("", "Pod") | ("apps", "Deployment") | ("batch", "Job" | "CronJob") => &["all"],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => &["api-extensions"],
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => &["api-extensions"],
        ("apiregistration.k8s.io", "APIService") => &["api-extensions"],
        ("worker.gpustack.ai", "InstanceType") => &["gpustack"],
        _ => &[],
    }
}

/// `GET /api`: the core group's versions (`APIVersions`).
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    })
}

/// The API groups (non-core) among `kinds`, each with its versions, in first-seen order.
pub fn groups(kinds: &[Kind]) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for k in kinds.iter().filter(|k| !k.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == k.group) {
            Some((_, versions)) if !versions.contains(&k.version) => versions.push(k.version),
            Some(_) => {}
            None => out.push((k.group, vec![k.version])),
        }
    }
    out
}

/// One `APIGroup` entry: name, versions and the preferred (first) version.
fn group_entry(group: &str, versions: &[&str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(|v| gv(v)).unwrap_or(Value::Null),
    })
}

/// `GET /apis`: every served group (`APIGroupList`).
pub fn api_group_list(kinds: &[Kind]) -> Value {
    let groups: Vec<Value> = groups(kinds)
        .iter()
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`: one group (`APIGroup`), or `None` when not served.
pub fn api_group(kinds: &[Kind], group: &str) -> Option<Value> {
    let (name, versions) = groups(kinds).into_iter().find(|(g, _)| *g == group)?;
    let mut entry = group_entry(name, &versions);
    if let Some(o) = entry.as_object_mut() {
        o.insert("kind".into(), json!("APIGroup"));
        o.insert("apiVersion".into(), json!("v1"));
    }
    Some(entry)
}

/// The names a CRD created at run time gives its kind (`spec.names`): the kind's static
/// tables above know only the kinds served from the start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    pub singular: String,
    pub short: Vec<String>,
    pub categories: Vec<String>,
}

/// The `APIResource` entries of one kind: the resource, and `{plural}/status` when it has a
/// status subresource.
pub fn resource_entries(kind: &Kind) -> Vec<Value> {
    resource_entries_named(kind, None)
}

/// [`resource_entries`] with the names of a CRD served at run time, when it has some.
pub fn resource_entries_named(kind: &Kind, names: Option<Names>) -> Vec<Value> {
    let names = names.unwrap_or_else(|| Names {
        singular: singular_name(kind),
        short: short_names(kind).iter().map(|s| s.to_string()).collect(),
        categories: categories(kind).iter().map(|s| s.to_string()).collect(),
    });
    let mut main = json!({
        "name": kind.plural,
        "singularName": names.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": RESOURCE_VERBS,
    });
    if let Some(o) = main.as_object_mut() {
        if !names.short.is_empty() {
            o.insert("shortNames".into(), json!(names.short));
        }
        if !names.categories.is_empty() {
            o.insert("categories".into(), json!(names.categories));
        }
    }
    let mut out = vec![main];
    if kind.has_status {
        out.push(json!({
            "name": format!("{}/status", kind.plural),
            "singularName": "",
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": STATUS_VERBS,
        }));
    }
    out
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`: the resources of one group version
/// (`APIResourceList`), or `None` when the group version is not served.
pub fn api_resource_list(kinds: &[Kind], group: &str, version: &str) -> Option<Value> {
    api_resource_list_named(kinds, group, version, |_| None)
}

/// [`api_resource_list`] with `names` giving the names of kinds CRDs serve at run time.
pub fn api_resource_list_named(
    kinds: &[Kind],
    group: &str,
    version: &str,
    names: impl Fn(&Kind) -> Option<Names>,
) -> Option<Value> {
    let served: Vec<&Kind> = kinds
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = served
        .into_iter()
        .flat_map(|k| resource_entries_named(k, names(k)))
        .collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// `GET /version`: a plausible `version.Info` (the twin speaks the API of Kubernetes 1.31).
pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "31",
        "gitVersion": "v1.31.0+verify-twin",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.22.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::kinds::{self, ALL};

    #[test]
    fn the_three_groups_are_listed_with_their_preferred_version() {
        let list = api_group_list(&ALL);
        let names: Vec<&str> = list["groups"]
            .as_array()
            .map(|gs| gs.iter().filter_map(|g| g["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            ["nfd.k8s-sigs.io", "worker.gpustack.ai", "kueue.x-k8s.io"]
        );
        assert_eq!(
            list["groups"][2]["preferredVersion"]["groupVersion"],
            "kueue.x-k8s.io/v1beta2"
        );
        assert!(api_group(&ALL, "apps").is_none());
        assert_eq!(
            api_group(&ALL, "nfd.k8s-sigs.io").unwrap_or_default()["kind"],
            "APIGroup"
        );
    }

    #[test]
    fn resource_lists_carry_status_subresources() {
        let core = api_resource_list(&ALL, "", "v1").unwrap_or_default();
        assert_eq!(core["groupVersion"], "v1");
        let names: Vec<&str> = core["resources"]
            .as_array()
            .map(|rs| rs.iter().filter_map(|r| r["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            names,
            [
                "nodes",
                "nodes/status",
                "namespaces",
                "namespaces/status",
                "pods",
                "pods/status"
            ]
        );
        let nfd = api_resource_list(&ALL, "nfd.k8s-sigs.io", "v1alpha1").unwrap_or_default();
        assert_eq!(nfd["resources"].as_array().map(Vec::len), Some(1));
        assert_eq!(nfd["resources"][0]["namespaced"], true);
        assert!(api_resource_list(&ALL, "kueue.x-k8s.io", "v1beta1").is_none());
    }

    #[test]
    fn names_follow_the_crds() {
        assert_eq!(singular_name(&kinds::DEVICES), "devices");
        assert_eq!(singular_name(&kinds::INSTANCE_TYPE), "instancetype");
        let e = resource_entries(&kinds::WORKLOAD);
        assert_eq!(e[0]["shortNames"][0], "kwl");
        assert_eq!(e[1]["name"], "workloads/status");
        assert_eq!(e[1]["verbs"], json!(["get", "patch", "update"]));
        assert!(resource_entries(&kinds::DEVICES)[0]
            .get("shortNames")
            .is_none());
    }
}
