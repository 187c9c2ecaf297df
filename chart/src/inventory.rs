//! A whole-cluster inventory: discovery of every served group/version/resource that supports
//! `list`, then every object of each, cluster-scoped and in every namespace, paged with
//! `limit`/`continue`. A resource the server refuses to list (403, 404, 405, …) is recorded as
//! unlisted with its reason, never skipped silently: a leftover check over a resource nobody
//! could read would otherwise pass by default (the operator's case-2 `probe` makes the same
//! point: a failed question must not read as a clean cluster).
//!
//! Only metadata is kept: what a leftover check needs to name an object, find the release that
//! created it, and see a finalizer holding it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ChartError;

/// The inventory file's format version.
pub const FORMAT: &str = "verify.chart.inventory/v1";

/// Objects per list page.
pub const PAGE: u32 = 500;

/// The Helm annotation naming the release that created an object.
pub const HELM_RELEASE_NAME: &str = "meta.helm.sh/release-name";
/// The Helm annotation naming the release's namespace.
pub const HELM_RELEASE_NAMESPACE: &str = "meta.helm.sh/release-namespace";
/// The recommended label Helm charts set to `Helm`.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// One whole-cluster inventory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    pub format: String,
    /// The server the inventory was taken from (for the reader; never compared).
    #[serde(default)]
    pub server: String,
    /// Every resource listed, as `group/version/resource` (`v1/configmaps` for the core group).
    pub listed: Vec<String>,
    pub unlisted: Vec<Unlisted>,
    pub objects: Vec<ObjectRecord>,
}

/// A resource discovery offers with `list` that could not be listed, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unlisted {
    pub resource: String,
    pub reason: String,
}

/// One object's identity and ownership.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectRecord {
    pub kind: String,
    /// `group/version`, or `v1` for the core group.
    pub api_version: String,
    /// The plural resource name it was listed through.
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerRef>,
    #[serde(default)]
    pub helm: HelmOwnership,
    /// The labels the allowed-churn rules read (the aggregator's automanaged mark).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

/// An owner reference, reduced to what names the owner.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerRef {
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// Helm's ownership marks on an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelmOwnership {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

impl ObjectRecord {
    /// `Kind [namespace/]name`, how a leftover is named.
    pub fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }

    /// The API group (`""` for core).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Kind, group, namespace and name: what a recreated object keeps.
    pub fn identity(&self) -> (String, String, Option<String>, String) {
        (
            self.kind.clone(),
            self.group().to_string(),
            self.namespace.clone(),
            self.name.clone(),
        )
    }

    /// Reads an object's metadata from a list item (`kind`/`apiVersion` from the list).
    pub fn from_item(item: &Value, kind: &str, api_version: &str, resource: &str) -> Self {
        let meta = &item["metadata"];
        let text = |v: &Value| v.as_str().map(str::to_string);
        let annotation = |key: &str| text(&meta["annotations"][key]);
        let labels: BTreeMap<String, String> = meta["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        ObjectRecord {
            kind: kind.to_string(),
            api_version: api_version.to_string(),
            resource: resource.to_string(),
            namespace: text(&meta["namespace"]).filter(|n| !n.is_empty()),
            name: text(&meta["name"]).unwrap_or_default(),
            uid: text(&meta["uid"]).unwrap_or_default(),
            finalizers: meta["finalizers"]
                .as_array()
                .map(|a| a.iter().filter_map(text).collect())
                .unwrap_or_default(),
            owner_references: meta["ownerReferences"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|o| OwnerRef {
                            kind: text(&o["kind"]).unwrap_or_default(),
                            name: text(&o["name"]).unwrap_or_default(),
                            uid: text(&o["uid"]).unwrap_or_default(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            helm: HelmOwnership {
                release_name: annotation(HELM_RELEASE_NAME),
                release_namespace: annotation(HELM_RELEASE_NAMESPACE),
                managed_by: labels.get(MANAGED_BY).cloned(),
            },
            labels: labels
                .into_iter()
                .filter(|(k, _)| KEPT_LABELS.contains(&k.as_str()))
                .collect(),
            deletion_timestamp: text(&meta["deletionTimestamp"]),
        }
    }
}

/// Labels an inventory keeps (the allowed-churn table reads them; the rest is noise).
pub const KEPT_LABELS: [&str; 3] = [
    MANAGED_BY,
    "kube-aggregator.kubernetes.io/automanaged",
    "endpointslice.kubernetes.io/managed-by",
];

/// One resource discovery offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub api_version: String,
    pub resource: String,
    pub kind: String,
    pub namespaced: bool,
}

impl Served {
    /// `group/version/resource`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.api_version, self.resource)
    }

    /// The list path for all namespaces (or the cluster).
    pub fn list_path(&self) -> String {
        let base = if self.api_version.contains('/') {
            format!("/apis/{}", self.api_version)
        } else {
            format!("/api/{}", self.api_version)
        };
        format!("{base}/{}", self.resource)
    }
}

/// The resources of one discovery document (`APIResourceList`) that support `list`;
/// subresources (`pods/log`) are not objects and are left out.
pub fn listable(api_version: &str, doc: &Value) -> Vec<Served> {
    doc["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            let name = r["name"].as_str().unwrap_or("");
            !name.is_empty()
                && !name.contains('/')
                && r["verbs"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|v| v == "list"))
        })
        .map(|r| Served {
            api_version: api_version.to_string(),
            resource: r["name"].as_str().unwrap_or("").to_string(),
            kind: r["kind"].as_str().unwrap_or("").to_string(),
            namespaced: r["namespaced"].as_bool().unwrap_or(false),
        })
        .collect()
}

/// The group versions to read, preferred version of each group first, so a kind served at
/// several versions is listed once (its objects are the same objects at every version).
pub fn group_versions(core: &Value, groups: &Value) -> Vec<String> {
    let mut out: Vec<String> = core["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    for g in groups["groups"].as_array().into_iter().flatten() {
        let preferred = g["preferredVersion"]["groupVersion"].as_str();
        if let Some(p) = preferred {
            out.push(p.to_string());
        }
        for v in g["versions"].as_array().into_iter().flatten() {
            if let Some(gv) = v["groupVersion"].as_str() {
                if Some(gv) != preferred {
                    out.push(gv.to_string());
                }
            }
        }
    }
    out
}

/// Why a request failed, as a reason line (`403 Forbidden: …`).
fn reason_of(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => other.to_string(),
    }
}

async fn get(client: &kube::Client, path: &str) -> Result<Value, kube::Error> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request::<Value>(request).await
}

/// Takes the inventory of the cluster `client` reaches. Only discovery itself failing is an
/// error; a resource that cannot be listed is recorded in [`Inventory::unlisted`].
pub async fn take(client: &kube::Client, server: &str) -> Result<Inventory, ChartError> {
    take_paged(client, server, PAGE).await
}

/// [`take`] with `page` objects per list request.
pub async fn take_paged(
    client: &kube::Client,
    server: &str,
    page: u32,
) -> Result<Inventory, ChartError> {
    let discovery = |what: &str, e: kube::Error| ChartError::Discovery {
        what: what.to_string(),
        reason: reason_of(&e),
    };
    let core = get(client, "/api")
        .await
        .map_err(|e| discovery("/api", e))?;
    let groups = get(client, "/apis")
        .await
        .map_err(|e| discovery("/apis", e))?;
    let mut inventory = Inventory {
        format: FORMAT.to_string(),
        server: server.to_string(),
        ..Inventory::default()
    };
    // (group, resource) already listed at another version
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for gv in group_versions(&core, &groups) {
        let path = if gv.contains('/') {
            format!("/apis/{gv}")
        } else {
            format!("/api/{gv}")
        };
        let doc = match get(client, &path).await {
            Ok(d) => d,
            Err(e) => {
                inventory.unlisted.push(Unlisted {
                    resource: format!("{gv}/*"),
                    reason: format!("discovery: {}", reason_of(&e)),
                });
                continue;
            }
        };
        let group = gv.rsplit_once('/').map_or("", |(g, _)| g).to_string();
        for served in listable(&gv, &doc) {
            if !seen.insert((group.clone(), served.resource.clone())) {
                continue;
            }
            match list_all(client, &served, page.max(1)).await {
                Ok(mut objects) => {
                    inventory.listed.push(served.key());
                    inventory.objects.append(&mut objects);
                }
                Err(e) => inventory.unlisted.push(Unlisted {
                    resource: served.key(),
                    reason: reason_of(&e),
                }),
            }
        }
    }
    inventory.objects.sort();
    Ok(inventory)
}

/// Every object of one resource, page by page.
async fn list_all(
    client: &kube::Client,
    served: &Served,
    page: u32,
) -> Result<Vec<ObjectRecord>, kube::Error> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut path = format!("{}?limit={page}", served.list_path());
        if let Some(t) = &token {
            path.push_str("&continue=");
            path.push_str(&form_escape(t));
        }
        let page = get(client, &path).await?;
        for item in page["items"].as_array().into_iter().flatten() {
            out.push(ObjectRecord::from_item(
                item,
                &served.kind,
                &served.api_version,
                &served.resource,
            ));
        }
        token = page["metadata"]["continue"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() {
            return Ok(out);
        }
    }
}

/// Percent-encodes a continue token for a query string.
fn form_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Inventory {
    /// Reads an inventory file; a bad one is [`ChartError::BadFile`] naming the file and field.
    pub fn load(path: &Path) -> Result<Inventory, ChartError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ChartError::BadFile {
            file: file.clone(),
            field: "(file)".into(),
            message: e.to_string(),
        })?;
        Inventory::parse(&text, &file)
    }

    /// [`Inventory::load`] from text.
    pub fn parse(text: &str, file: &str) -> Result<Inventory, ChartError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let inventory: Inventory =
            serde_path_to_error::deserialize(de).map_err(|e| ChartError::BadFile {
                file: file.to_string(),
                field: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        if inventory.format != FORMAT {
            return Err(ChartError::BadFile {
                file: file.to_string(),
                field: "format".into(),
                message: format!("expected `{FORMAT}`, got `{}`", inventory.format),
            });
        }
        Ok(inventory)
    }

    /// Writes the inventory as pretty JSON (atomically: a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> Result<(), ChartError> {
        let io = |e: std::io::Error| ChartError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let text = serde_json::to_string_pretty(self).map_err(|e| ChartError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text + "\n").map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// A one-line summary (`N objects in M resources, K unlisted`).
    pub fn summary(&self) -> String {
        format!(
            "{} objects in {} resources, {} unlisted",
            self.objects.len(),
            self.listed.len(),
            self.unlisted.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discovery_keeps_listable_top_level_resources_only() {
        let doc = json!({"resources": [
            {"name": "pods", "kind": "Pod", "namespaced": true, "verbs": ["get", "list"]},
            {"name": "pods/log", "kind": "Pod", "namespaced": true, "verbs": ["get"]},
            {"name": "bindings", "kind": "Binding", "namespaced": true, "verbs": ["create"]},
            {"name": "nodes", "kind": "Node", "namespaced": false, "verbs": ["list"]},
        ]});
        let got = listable("v1", &doc);
        let names: Vec<&str> = got.iter().map(|s| s.resource.as_str()).collect();
        assert_eq!(names, ["pods", "nodes"]);
        assert_eq!(got[0].list_path(), "/api/v1/pods");
        let apps = listable(
            "apps/v1",
            &json!({"resources": [
            {"name": "deployments", "kind": "Deployment", "namespaced": true, "verbs": ["list"]}]}),
        );
        assert_eq!(apps[0].list_path(), "/apis/apps/v1/deployments");
    }

    #[test]
    fn the_preferred_version_of_a_group_is_read_first() {
        let core = json!({"versions": ["v1"]});
        let groups = json!({"groups": [{
            "name": "x.io",
            "versions": [{"groupVersion": "x.io/v1beta1"}, {"groupVersion": "x.io/v1"}],
            "preferredVersion": {"groupVersion": "x.io/v1"},
        }]});
        assert_eq!(
            group_versions(&core, &groups),
            ["v1", "x.io/v1", "x.io/v1beta1"]
        );
    }

    #[test]
    fn an_item_keeps_its_ownership_and_finalizers() {
        let item = json!({"metadata": {
            "name": "c", "namespace": "ns", "uid": "u1",
            "finalizers": ["f/one"],
            "ownerReferences": [{"kind": "Deployment", "name": "d", "uid": "u0", "apiVersion": "apps/v1"}],
            "annotations": {HELM_RELEASE_NAME: "r", HELM_RELEASE_NAMESPACE: "rn", "other": "x"},
            "labels": {MANAGED_BY: "Helm", "app": "noise"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        }});
        let r = ObjectRecord::from_item(&item, "ConfigMap", "v1", "configmaps");
        assert_eq!(r.display(), "ConfigMap ns/c");
        assert_eq!(r.finalizers, ["f/one"]);
        assert_eq!(r.owner_references[0].name, "d");
        assert_eq!(r.helm.release_name.as_deref(), Some("r"));
        assert_eq!(r.helm.release_namespace.as_deref(), Some("rn"));
        assert_eq!(r.helm.managed_by.as_deref(), Some("Helm"));
        assert!(!r.labels.contains_key("app"));
        assert!(r.deletion_timestamp.is_some());
    }

    #[test]
    fn a_bad_file_names_the_field() {
        let text = r#"{"format": "verify.chart.inventory/v1", "listed": [], "unlisted": [],
            "objects": [{"kind": "X", "api_version": "v1", "resource": "xs", "name": 3, "uid": "u"}]}"#;
        match Inventory::parse(text, "a.json") {
            Err(ChartError::BadFile { file, field, .. }) => {
                assert_eq!(file, "a.json");
                assert_eq!(field, "objects[0].name");
            }
            other => panic!("expected a bad file, got {other:?}"),
        }
        match Inventory::parse(
            r#"{"format": "other", "listed": [], "unlisted": [], "objects": []}"#,
            "b.json",
        ) {
            Err(ChartError::BadFile { field, .. }) => assert_eq!(field, "format"),
            other => panic!("expected a bad format, got {other:?}"),
        }
    }

    #[test]
    fn continue_tokens_are_escaped() {
        assert_eq!(form_escape("a+b/c="), "a%2Bb%2Fc%3D");
    }
}
