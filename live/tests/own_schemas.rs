//! The project's own CRD schemas (generated from `live::crd`'s types) against the real CRDs in
//! ../shared/crds (skipped with a printed reason when absent; `VERIFY_CRDS_DIR` overrides):
//! every field verify writes exists there with a compatible type, and every field the real
//! schema requires under an object verify writes is one verify always writes.

use live::crd::{own_crds, own_schema, shared_crd, SharedCrdError};
use live::server::structural::crd_schema;
use live::wire::kinds::Kind;
use serde_json::Value;

fn real_schema(kind: &Kind) -> Option<Value> {
    match shared_crd(kind) {
        Ok(crd) => crd_schema(&crd, Some(kind.version)).cloned(),
        Err(e @ SharedCrdError::Unreadable { .. }) => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Paths under which the own schema is a Kubernetes core type (k8s-openapi), whose fields the
/// real schema lists only in part: the pod template of a Workload's pod set.
const CORE_TYPES: [&str; 1] = ["spec.podSets[].template"];

fn is_int_or_string(s: &Value) -> bool {
    s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
}

fn type_of(s: &Value) -> Option<&str> {
    s.get("type").and_then(Value::as_str)
}

/// A value the own schema allows is one the real schema allows.
fn compatible(own: &Value, real: &Value) -> bool {
    if is_int_or_string(real) {
        return is_int_or_string(own) || matches!(type_of(own), Some("string" | "integer"));
    }
    if is_int_or_string(own) {
        return false;
    }
    match (type_of(own), type_of(real)) {
        (Some(a), Some(b)) => a == b || (a == "integer" && b == "number"),
        (None, _) => false,
        (Some(_), None) => {
            real.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        }
    }
}

fn required(s: &Value) -> Vec<&str> {
    s.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Walks the own schema; every problem is pushed as `path: what`.
fn walk(path: &str, own: &Value, real: &Value, problems: &mut Vec<String>) {
    if CORE_TYPES.contains(&path) {
        return;
    }
    if !compatible(own, real) {
        problems.push(format!(
            "{path}: verify writes type {:?}, the real schema has {:?}",
            own.get("type"),
            real.get("type")
        ));
        return;
    }
    if let Some(props) = own.get("properties").and_then(Value::as_object) {
        let real_props = real.get("properties").and_then(Value::as_object);
        for (key, sub) in props {
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if path.is_empty() && ["apiVersion", "kind", "metadata"].contains(&key.as_str()) {
                continue;
            }
            match real_props.and_then(|p| p.get(key)) {
                Some(r) => walk(&at, sub, r, problems),
                None => problems.push(format!(
                    "{at}: verify writes it, the real schema has no such field"
                )),
            }
        }
        let own_required = required(own);
        for key in required(real) {
            if !own_required.contains(&key) {
                problems.push(format!(
                    "{path}.{key}: required by the real schema, not always written by verify"
                ));
            }
        }
    }
    if let (Some(o), Some(r)) = (own.get("items"), real.get("items")) {
        walk(&format!("{path}[]"), o, r, problems);
    }
    if let Some(o) = own.get("additionalProperties").filter(|v| v.is_object()) {
        match real.get("additionalProperties").filter(|v| v.is_object()) {
            Some(r) => walk(&format!("{path}{{}}"), o, r, problems),
            None => problems.push(format!(
                "{path}: verify writes a map, the real schema does not"
            )),
        }
    }
}

#[test]
fn own_schemas_fit_the_real_crds() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (kind, crd) in own_crds() {
        let Some(real) = real_schema(&kind) else {
            return;
        };
        assert_eq!(crd.spec.group, kind.group, "{}", kind.kind);
        assert_eq!(crd.spec.names.plural, kind.plural, "{}", kind.kind);
        assert_eq!(crd.spec.names.kind, kind.kind);
        let scope = if kind.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        };
        assert_eq!(crd.spec.scope, scope, "{}", kind.kind);
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, kind.version, "{}", kind.kind);
        assert_eq!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            kind.has_status,
            "status subresource of {}",
            kind.kind
        );
        let own = own_schema(&crd).unwrap_or_else(|| panic!("{}: no schema generated", kind.kind));
        let before = problems.len();
        walk("", &own, &real, &mut problems);
        for p in &mut problems[before..] {
            *p = format!("{}: {p}", kind.kind);
        }
        checked += 1;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(checked, 8);
}

#[test]
fn the_walk_catches_a_missing_field_a_wrong_type_and_an_unwritten_required_field() {
    let real: Value = serde_json::json!({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"}, "b": {"type": "integer"}, "q": {"x-kubernetes-int-or-string": true}}});
    let own: Value = serde_json::json!({"type": "object", "properties": {
        "b": {"type": "string"}, "c": {"type": "string"}, "q": {"type": "string"}}});
    let mut problems = Vec::new();
    walk("", &own, &real, &mut problems);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems.iter().any(|p| p.starts_with("b:")));
    assert!(problems.iter().any(|p| p.starts_with("c:")));
    assert!(problems.iter().any(|p| p.starts_with(".a:")));
}

/// kubectl's Table of the twin shows a real cluster's columns: each own CRD declares the
/// real CRD's printer columns (name, type, JSONPath, priority), in order.
#[test]
fn own_printer_columns_are_the_real_ones() {
    let columns = |crd: &Value| -> Vec<Value> {
        live::server::table::crd_printer_columns(crd)
            .iter()
            .map(|c| {
                serde_json::json!([
                    c["name"],
                    c["type"],
                    c["jsonPath"],
                    c.get("priority").and_then(Value::as_i64).unwrap_or(0)
                ])
            })
            .collect()
    };
    let mut compared = 0;
    for (kind, crd) in own_crds() {
        let real = match shared_crd(&kind) {
            Ok(r) => r,
            Err(SharedCrdError::Unreadable { path, .. }) => {
                println!("skipped {}: {path} is absent", kind.kind);
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let own = serde_json::to_value(&crd).unwrap_or_default();
        assert_eq!(columns(&own), columns(&real), "{}", kind.kind);
        compared += 1;
    }
    println!("{compared} kinds compared");
}
