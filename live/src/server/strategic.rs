//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds, as
//! k8s.io/apimachinery pkg/util/strategicpatch applies it: objects merge key by key (`null`
//! deletes), a list whose field declares `patchStrategy:"merge"` merges item by item on its
//! `patchMergeKey` (a list of scalars by value), any other list is replaced; the directives
//! `$patch` (`delete`, `replace`, `merge`), `$retainKeys`, `$setElementOrder/<field>` and
//! `$deleteFromPrimitiveList/<field>` are honoured. Which fields merge, and on which key, is
//! read from the field's name ([`merge_key`]): the built-in kinds the twin serves use each
//! of these names with a single meaning. Pure.

use serde_json::{Map, Value};

/// How a list field merges: by an item key, by scalar value, or not at all (replaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Items are objects matched on this key.
    Key(&'static str),
    /// Items are scalars, merged as a set.
    Scalars,
    /// The patch's list replaces the live one.
    Replace,
}

/// The `patchStrategy`/`patchMergeKey` of a list field of core/v1, apps/v1, policy/v1 and
/// meta/v1 (their types.go struct tags), by the field's name.
pub fn merge_key(field: &str) -> ListStrategy {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => ListStrategy::Key("name"),
        "ports" => ListStrategy::Key("containerPort"),
        "volumeMounts" => ListStrategy::Key("mountPath"),
        "volumeDevices" => ListStrategy::Key("devicePath"),
        "hostAliases" => ListStrategy::Key("ip"),
        "ownerReferences" => ListStrategy::Key("uid"),
        "conditions" => ListStrategy::Key("type"),
        "topologySpreadConstraints" => ListStrategy::Key("topologyKey"),
        "finalizers" => ListStrategy::Scalars,
        _ => ListStrategy::Replace,
    }
}

/// Why a strategic merge patch cannot be applied (the apiserver answers 400 or 422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicError {
    #[error("a strategic merge patch must be a JSON object")]
    NotAnObject,
    #[error("invalid patch directive {0:?}")]
    UnknownDirective(String),
    #[error("map: {0} does not contain declared merge key: {1}")]
    MissingMergeKey(String, &'static str),
}

/// Applies `patch` to `target`.
pub fn apply(target: &mut Value, patch: &Value) -> Result<(), StrategicError> {
    let Some(patch) = patch.as_object() else {
        return Err(StrategicError::NotAnObject);
    };
    merge_object(target, patch)
}

fn merge_object(target: &mut Value, patch: &Map<String, Value>) -> Result<(), StrategicError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut replaced = patch.clone();
            replaced.remove("$patch");
            *target = Value::Object(without_directives(replaced));
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(StrategicError::UnknownDirective(other.to_string())),
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(live) = target.as_object_mut() else {
        return Ok(());
    };
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        match value {
            Value::Null => {
                live.remove(key);
            }
            Value::Object(p) => {
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    live.remove(key);
                    continue;
                }
                let slot = live.entry(key.clone()).or_insert(Value::Null);
                merge_object(slot, p)?;
            }
            Value::Array(items) => {
                let slot = live.entry(key.clone()).or_insert(Value::Array(Vec::new()));
                merge_list(slot, items, merge_key(key), key)?;
            }
            scalar => {
                live.insert(key.clone(), scalar.clone());
            }
        }
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(gone)) = (live.get_mut(field), value.as_array())
            {
                list.retain(|v| !gone.contains(v));
            }
        }
        if let Some(field) = key.strip_prefix("$setElementOrder/") {
            if let (Some(Value::Array(list)), Some(order)) = (live.get_mut(field), value.as_array())
            {
                reorder(list, order, merge_key(field));
            }
        }
    }
    if let Some(keep) = patch.get("$retainKeys").and_then(Value::as_array) {
        live.retain(|k, _| keep.iter().any(|r| r == k.as_str()));
    }
    Ok(())
}

/// The patch's list merged into the live one by `strategy`.
fn merge_list(
    target: &mut Value,
    items: &[Value],
    strategy: ListStrategy,
    field: &str,
) -> Result<(), StrategicError> {
    let replace = || Value::Array(items.iter().cloned().map(strip_value).collect());
    let Some(live) = target.as_array_mut() else {
        *target = replace();
        return Ok(());
    };
    match strategy {
        ListStrategy::Replace => *target = replace(),
        ListStrategy::Scalars => {
            for item in items {
                if !live.contains(item) {
                    live.push(item.clone());
                }
            }
        }
        ListStrategy::Key(key) => {
            if items
                .iter()
                .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
            {
                let kept: Vec<Value> = items
                    .iter()
                    .filter(|i| i.get("$patch").is_none())
                    .cloned()
                    .map(strip_value)
                    .collect();
                *target = Value::Array(kept);
                return Ok(());
            }
            for item in items {
                let Some(p) = item.as_object() else {
                    continue;
                };
                let Some(id) = p.get(key) else {
                    return Err(StrategicError::MissingMergeKey(
                        Value::Object(p.clone()).to_string(),
                        key,
                    ));
                };
                let at = live.iter().position(|l| l.get(key) == Some(id));
                let delete = p.get("$patch").and_then(Value::as_str) == Some("delete");
                match (at, delete) {
                    (Some(i), true) => {
                        live.remove(i);
                    }
                    (None, true) => {}
                    (Some(i), false) => merge_object(&mut live[i], p)?,
                    (None, false) => {
                        let mut fresh = Value::Object(Map::new());
                        merge_object(&mut fresh, p)?;
                        live.push(fresh);
                    }
                }
            }
            let _ = field;
        }
    }
    Ok(())
}

/// Orders `list` as `order` names its items; items `order` does not name keep their
/// relative order after those it names.
fn reorder(list: &mut [Value], order: &[Value], strategy: ListStrategy) {
    let rank = |v: &Value| -> usize {
        let found = match strategy {
            ListStrategy::Key(key) => order.iter().position(|o| o.get(key) == v.get(key)),
            _ => order.iter().position(|o| o == v),
        };
        found.unwrap_or(order.len())
    };
    list.sort_by_key(rank);
}

fn without_directives(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k, strip_value(v)))
        .collect()
}

fn strip_value(v: Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(without_directives(o)),
        Value::Array(a) => Value::Array(a.into_iter().map(strip_value).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:1.0", "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "busybox"}],
            "tolerations": [{"key": "a"}]}}}})
    }

    #[test]
    fn kubectl_set_image_changes_one_container_by_name() {
        let mut d = deployment();
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "side"}],
            "containers": [{"image": "nginx:2.0", "name": "c"}]}}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        let containers = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "nginx:2.0");
        assert_eq!(containers[0]["ports"][0]["containerPort"], 80);
        assert_eq!(containers[1]["image"], "busybox");
    }

    #[test]
    fn lists_without_a_strategy_are_replaced_and_directives_delete() {
        let mut d = deployment();
        let patch = json!({"spec": {"template": {"spec": {
            "tolerations": [{"key": "b"}],
            "containers": [{"name": "side", "$patch": "delete"},
                           {"name": "new", "image": "x"}]}}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        let spec = &d["spec"]["template"]["spec"];
        assert_eq!(spec["tolerations"], json!([{"key": "b"}]));
        let names: Vec<&str> = spec["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["c", "new"]);
        let mut meta = json!({"metadata": {"finalizers": ["a"], "labels": {"x": "1"}}});
        let patch = json!({"metadata": {"finalizers": ["b"], "labels": {"x": null}}});
        assert_eq!(apply(&mut meta, &patch), Ok(()));
        assert_eq!(meta["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(meta["metadata"]["labels"], json!({}));
        let bad = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
        assert!(matches!(
            apply(&mut d, &bad),
            Err(StrategicError::MissingMergeKey(_, "name"))
        ));
    }
}
