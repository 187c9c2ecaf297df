//! Structural-schema validation and pruning of custom resources, as the apiserver does it
//! for a CRD's `openAPIV3Schema` (apiextensions-apiserver pkg/apiserver/schema: pruning,
//! then OpenAPI validation; messages as k8s.io/apimachinery pkg/util/validation/field).
//!
//! Covered: `type` (object, array, string, integer, number, boolean), `nullable`,
//! `x-kubernetes-int-or-string`, `required`, `properties`, `additionalProperties`
//! (schema or bool), `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`,
//! `items`, `enum`, `maxLength`, `maxItems`, `maxProperties`, and pruning of unknown fields.
//! Not covered (accepted without checking): `pattern`, `format`, `minimum`/`maximum`,
//! `minLength`/`minItems`, `anyOf`/`allOf`/`oneOf`/`not`, list-type/list-map-keys uniqueness,
//! CEL `x-kubernetes-validations`. `default`s fill absent properties.
//!
//! At the root (and in embedded resources) `apiVersion`, `kind` and `metadata` are never
//! pruned: the store owns metadata.

use serde_json::{Map, Value};

use super::status::Cause;

/// Validates `object` against `schema` (an OpenAPI v3 structural schema) and returns the
/// pruned object, or every cause found (each naming its field path, e.g. `spec.os`).
pub fn validate(schema: &Value, object: &Value) -> Result<Value, Vec<Cause>> {
    let mut causes = Vec::new();
    let pruned = check_root(schema, object, "", &mut causes);
    if causes.is_empty() {
        Ok(pruned)
    } else {
        causes.sort_by(|a, b| a.field.cmp(&b.field));
        Err(causes)
    }
}

/// The schema of a CRD's storage version (or of `version` if given):
/// `spec.versions[].schema.openAPIV3Schema`.
pub fn crd_schema<'a>(crd: &'a Value, version: Option<&str>) -> Option<&'a Value> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| match version {
            Some(name) => v.get("name").and_then(Value::as_str) == Some(name),
            None => v.get("storage").and_then(Value::as_bool) == Some(true),
        })?
        .pointer("/schema/openAPIV3Schema")
}

/// A store validator closing over `schema` (see `Store::set_validator`).
pub fn validator(schema: Value) -> super::store::Validator {
    Box::new(move |object: &Value| validate(&schema, object))
}

/// The root of a resource: like an object node, but `apiVersion`, `kind`, `metadata` are kept.
fn check_root(schema: &Value, object: &Value, path: &str, causes: &mut Vec<Cause>) -> Value {
    let mut out = check(schema, object, path, causes);
    if let (Some(out), Some(input)) = (out.as_object_mut(), object.as_object()) {
        for key in ["apiVersion", "kind", "metadata"] {
            if let Some(v) = input.get(key) {
                out.insert(key.to_string(), v.clone());
            }
        }
    }
    out
}

/// Checks one node and returns its pruned value.
fn check(schema: &Value, value: &Value, path: &str, causes: &mut Vec<Cause>) -> Value {
    if !type_matches(schema, value) {
        causes.push(type_cause(schema, value, path));
        return value.clone();
    }
    check_enum(schema, value, path, causes);
    match value {
        Value::Object(map) => check_object(schema, map, path, causes),
        Value::Array(items) => check_array(schema, items, path, causes),
        Value::String(s) => {
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                if s.chars().count() as u64 > max {
                    causes.push(Cause::new(
                        path,
                        "FieldValueTooLong",
                        format!("Too long: may not be more than {max} bytes"),
                    ));
                }
            }
            value.clone()
        }
        _ => value.clone(),
    }
}

/// Properties, additionalProperties, preserve-unknown-fields, required, maxProperties.
fn check_object(
    schema: &Value,
    map: &Map<String, Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    let mut out = Map::new();
    for (key, child) in map {
        let is_property = properties.is_some_and(|p| p.contains_key(key));
        let child_path = child_path(path, key, is_property);
        let child_schema = properties
            .and_then(|p| p.get(key))
            .or(additional.filter(|a| a.is_object()));
        match child_schema {
            Some(s) if child.is_null() && !flag(s, "nullable") => {} // nulls of non-nullable fields are pruned
            Some(s) => {
                out.insert(key.clone(), check(s, child, &child_path, causes));
            }
            None if preserve || additional == Some(&Value::Bool(true)) => {
                out.insert(key.clone(), child.clone());
            }
            None if embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") => {
                out.insert(key.clone(), child.clone());
            }
            None => {} // unknown field: pruned
        }
    }
    // defaults fill what is absent (a pruned null included), then are pruned and defaulted
    // in turn (apiextensions-apiserver structural defaulting, applied before validation)
    for (key, child_schema) in properties.into_iter().flatten() {
        if let Some(default) = child_schema
            .get("default")
            .filter(|_| !out.contains_key(key))
        {
            let child_path = child_path(path, key, true);
            out.insert(
                key.clone(),
                check(child_schema, default, &child_path, causes),
            );
        }
    }
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !out.contains_key(key) {
            causes.push(Cause::new(
                &child_path(path, key, true),
                "FieldValueRequired",
                "Required value",
            ));
        }
    }
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64) {
        if out.len() as u64 > max {
            causes.push(Cause::new(
                path,
                "FieldValueTooMany",
                format!("Too many: {}: must have at most {max} items", out.len()),
            ));
        }
    }
    Value::Object(out)
}

/// Items and maxItems.
fn check_array(schema: &Value, items: &[Value], path: &str, causes: &mut Vec<Cause>) -> Value {
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
        if items.len() as u64 > max {
            causes.push(Cause::new(
                path,
                "FieldValueTooMany",
                format!("Too many: {}: must have at most {max} items", items.len()),
            ));
        }
    }
    match schema.get("items") {
        Some(item_schema) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| check(item_schema, item, &format!("{path}[{i}]"), causes))
                .collect(),
        ),
        None => Value::Array(items.to_vec()),
    }
}

/// `enum`: the value must be one of the listed values.
fn check_enum(schema: &Value, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(allowed) = schema.get("enum").and_then(Value::as_array) else {
        return;
    };
    if !allowed.contains(value) {
        let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        causes.push(Cause::new(
            path,
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {}",
                value,
                listed.join(", ")
            ),
        ));
    }
}

/// Whether the value has the schema's type (no `type` accepts anything).
fn type_matches(schema: &Value, value: &Value) -> bool {
    if value.is_null() {
        return flag(schema, "nullable") || schema.get("type").is_none();
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        return value.is_string() || is_integer(value);
    }
    match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => is_integer(value),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some(_) => true,
    }
}

fn is_integer(value: &Value) -> bool {
    value.is_i64() || value.is_u64()
}

/// `Invalid value: "integer": spec.os in body must be of type string: "integer"`.
fn type_cause(schema: &Value, value: &Value, path: &str) -> Cause {
    let expected = if flag(schema, "x-kubernetes-int-or-string") {
        "integer,string"
    } else {
        schema.get("type").and_then(Value::as_str).unwrap_or("?")
    };
    let actual = json_type(value);
    Cause::new(
        path,
        "FieldValueTypeInvalid",
        format!(
            "Invalid value: \"{actual}\": {path} in body must be of type {expected}: \"{actual}\""
        ),
    )
}

/// The OpenAPI type name of a JSON value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(value) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// `a.b` for a property, `a[key]` for a map entry.
fn child_path(path: &str, key: &str, is_property: bool) -> String {
    match (path.is_empty(), is_property) {
        (true, _) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (false, false) => format!("{path}[{key}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["os"],
                    "properties": {
                        "os": {"type": "string", "maxLength": 8},
                        "mode": {"type": "string", "enum": ["A", "B"]},
                        "count": {"type": "integer"},
                        "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "list": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
                        "opt": {"type": "string", "nullable": true}
                    }
                }
            }
        })
    }

    fn fields(r: Result<Value, Vec<Cause>>) -> Vec<(String, String)> {
        r.err()
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.field, c.reason))
            .collect()
    }

    #[test]
    fn valid_object_passes_and_unknown_fields_are_pruned() {
        let o = json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "labels": {"k": "v"}},
            "spec": {"os": "linux", "bogus": 1, "q": "1Gi", "labels": {"a": "b"},
                     "free": {"anything": [1]}, "list": [{"id": "0", "junk": true}], "opt": null},
            "extra": true
        });
        let got = validate(&schema(), &o);
        assert_eq!(
            got,
            Ok(json!({
                "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "labels": {"k": "v"}},
                "spec": {"os": "linux", "q": "1Gi", "labels": {"a": "b"},
                         "free": {"anything": [1]}, "list": [{"id": "0"}], "opt": null}
            }))
        );
    }

    #[test]
    fn wrong_types_missing_required_enum_and_limits_are_named() {
        let o = json!({"spec": {"os": 3, "mode": "C", "count": 1.5, "q": true,
                                "labels": {"a": 1}, "list": [{}, {}, {"id": 2}]}});
        let got = fields(validate(&schema(), &o));
        assert_eq!(
            got,
            [
                ("spec.count", "FieldValueTypeInvalid"),
                ("spec.labels[a]", "FieldValueTypeInvalid"),
                ("spec.list", "FieldValueTooMany"),
                ("spec.list[2].id", "FieldValueTypeInvalid"),
                ("spec.mode", "FieldValueNotSupported"),
                ("spec.os", "FieldValueTypeInvalid"),
                ("spec.q", "FieldValueTypeInvalid"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        let missing = fields(validate(&schema(), &json!({"spec": {"os": null}})));
        assert_eq!(
            missing,
            [("spec.os".to_string(), "FieldValueRequired".to_string())]
        );
        let long = fields(validate(&schema(), &json!({"spec": {"os": "abcdefghi"}})));
        assert_eq!(
            long,
            [("spec.os".to_string(), "FieldValueTooLong".to_string())]
        );
    }

    #[test]
    fn type_message_has_the_apiserver_form() {
        let e = validate(&schema(), &json!({"spec": {"os": 3}})).err();
        let msg = e.and_then(|c| c.into_iter().next()).map(|c| c.message);
        assert_eq!(
            msg.as_deref(),
            Some("Invalid value: \"integer\": spec.os in body must be of type string: \"integer\"")
        );
    }

    #[test]
    fn absent_properties_take_their_defaults_recursively() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "strategy": {"type": "string", "default": "BestEffortFIFO"},
                "fungibility": {"type": "object", "default": {}, "properties": {
                    "whenCanBorrow": {"type": "string", "default": "MayStopSearch"}}},
                "set": {"type": "string", "default": "x"}}}}});
        let got = validate(&schema, &json!({"spec": {"set": "mine", "strategy": null}}));
        assert_eq!(
            got,
            Ok(json!({"spec": {"set": "mine", "strategy": "BestEffortFIFO",
                               "fungibility": {"whenCanBorrow": "MayStopSearch"}}}))
        );
    }

    #[test]
    fn crd_schema_picks_the_storage_version() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1beta1", "storage": false, "schema": {"openAPIV3Schema": {"type": "string"}}},
            {"name": "v1beta2", "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ]}});
        assert_eq!(crd_schema(&crd, None), Some(&json!({"type": "object"})));
        assert_eq!(
            crd_schema(&crd, Some("v1beta1")),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(crd_schema(&crd, Some("v2")), None);
    }
}
