//! The OpenAPI v3 discovery a real apiserver serves (`GET /openapi/v3`, the index of one
//! document per group version, and `GET /openapi/v3/{api/v1|apis/<group>/<version>}`), as
//! far as the twin can honestly give it: every served path with its operations, their
//! `x-kubernetes-action` and `x-kubernetes-group-version-kind`, and their query parameters
//! (`dryRun`, `fieldManager`, `fieldValidation`, `force`, …). kubectl reads this before it
//! creates or applies a file: a server whose PATCH takes `fieldValidation` validates for
//! it, so kubectl sends the object as it is (cli-runtime `queryParamVerifierV3`). The
//! documents carry no component schemas (the twin has no Go types to derive them from), so
//! `kubectl explain` finds nothing; client-side validation is never needed against them.

use serde_json::{json, Map, Value};

use crate::wire::kinds::Kind;

/// The index document's path of a group version: `api/v1` or `apis/<group>/<version>`.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`: one entry per served group version, its URL carrying the hash of its
/// document (clients cache by it, so a CRD that changes a document changes its hash).
pub fn index(kinds: &[Kind]) -> Value {
    let mut paths = Map::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for k in kinds {
        if seen.contains(&(k.group, k.version)) {
            continue;
        }
        seen.push((k.group, k.version));
        let path = group_version_path(k.group, k.version);
        let doc = document(kinds, k.group, k.version).unwrap_or(Value::Null);
        let url = format!("/openapi/v3/{path}?hash={}", hash(&doc.to_string()));
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// The document of one group version, or None when nothing is served there.
pub fn document(kinds: &[Kind], group: &str, version: &str) -> Option<Value> {
    let served: Vec<&Kind> = kinds
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for kind in served {
        for (path, item) in kind_paths(kind) {
            paths.insert(path, item);
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "1.37"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

fn query(name: &str, kind: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": true}})
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true,
           "schema": {"type": "string", "uniqueItems": true}})
}

/// One operation of `kind`: its action, kind and query parameters.
fn operation(kind: &Kind, action: &str, params: &[(&str, &str)]) -> Value {
    let gvk = json!({"group": kind.group, "version": kind.version, "kind": kind.kind});
    let mut op = json!({"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
                        "responses": {"200": {"description": "OK"}}});
    if !params.is_empty() {
        op["parameters"] = params.iter().map(|(n, t)| query(n, t)).collect();
    }
    op
}

const WRITE: [(&str, &str); 3] = [
    ("dryRun", "string"),
    ("fieldManager", "string"),
    ("fieldValidation", "string"),
];
const PATCH: [(&str, &str); 4] = [
    ("dryRun", "string"),
    ("fieldManager", "string"),
    ("fieldValidation", "string"),
    ("force", "boolean"),
];
const DELETE: [(&str, &str); 3] = [
    ("dryRun", "string"),
    ("gracePeriodSeconds", "integer"),
    ("propagationPolicy", "string"),
];
const LIST: [(&str, &str); 6] = [
    ("continue", "string"),
    ("fieldSelector", "string"),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("resourceVersion", "string"),
    ("watch", "boolean"),
];

/// The collection, object and `/status` paths of `kind`, with their operations.
fn kind_paths(kind: &Kind) -> Vec<(String, Value)> {
    let root = if kind.group.is_empty() {
        format!("/api/{}", kind.version)
    } else {
        format!("/apis/{}/{}", kind.group, kind.version)
    };
    let scope = if kind.namespaced {
        format!("{root}/namespaces/{{namespace}}/{}", kind.plural)
    } else {
        format!("{root}/{}", kind.plural)
    };
    let scope_params: Vec<Value> = if kind.namespaced {
        vec![path_param("namespace")]
    } else {
        Vec::new()
    };
    let mut item_params = scope_params.clone();
    item_params.push(path_param("name"));
    let mut out = vec![
        (
            scope.clone(),
            json!({"get": operation(kind, "list", &LIST),
                   "post": operation(kind, "post", &WRITE),
                   "parameters": scope_params}),
        ),
        (
            format!("{scope}/{{name}}"),
            json!({"get": operation(kind, "get", &[]),
                   "put": operation(kind, "put", &WRITE),
                   "patch": operation(kind, "patch", &PATCH),
                   "delete": operation(kind, "delete", &DELETE),
                   "parameters": item_params.clone()}),
        ),
    ];
    if kind.has_status {
        out.push((
            format!("{scope}/{{name}}/status"),
            json!({"get": operation(kind, "get", &[]),
                   "put": operation(kind, "put", &WRITE),
                   "patch": operation(kind, "patch", &PATCH),
                   "parameters": item_params}),
        ));
    }
    out
}

/// FNV-1a (64 bits) of `text`, upper-case hex: a stable content hash for the index's URLs.
fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016X}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::kinds;

    #[test]
    fn a_patch_declares_field_validation_for_its_kind() {
        let served = kinds::served();
        let index = index(&served);
        assert!(index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .is_some_and(|u| u.starts_with("/openapi/v3/apis/apps/v1?hash=")));
        assert!(index["paths"].get("api/v1").is_some());
        let doc = document(&served, "apps", "v1").unwrap_or_default();
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(names.contains(&"fieldValidation"));
        assert!(document(&served, "autoscaling", "v2").is_none());
    }
}
