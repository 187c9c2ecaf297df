//! Structural comparison of an expected JSON value against what the model gave.
//! The expected side may be partial: only the keys it names are checked.

use serde_json::Value;

use crate::Outcome;

/// Whether `v` is an "absent" value: Go's nil slices and maps, empty strings, null.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// The first path at which `got` does not satisfy `expected`, if any.
/// Objects match when every expected key matches (extra keys in `got` are fine); arrays match
/// element-wise with equal length; `null` in `expected` matches any empty value; numbers
/// compare by value.
pub fn subset_mismatch(expected: &Value, got: &Value, path: &str) -> Option<String> {
    match (expected, got) {
        (Value::Null, g) if is_empty(g) => None,
        (Value::Object(e), Value::Object(g)) => e.iter().find_map(|(k, ev)| {
            let gv = g.get(k).unwrap_or(&Value::Null);
            subset_mismatch(ev, gv, &format!("{path}.{k}"))
        }),
        (Value::Object(e), Value::Null) if e.is_empty() => None,
        (Value::Array(e), Value::Array(g)) if e.len() == g.len() => e
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (ev, gv))| subset_mismatch(ev, gv, &format!("{path}[{i}]"))),
        (Value::Array(e), Value::Null) if e.is_empty() => None,
        (Value::Number(e), Value::Number(g)) if e.as_f64() == g.as_f64() => None,
        (e, g) if e == g => None,
        _ => Some(path.to_string()),
    }
}

/// Pass when `got` satisfies `expected`, else a failure showing both sides.
pub fn judge(expected: &Value, got: &Value) -> Outcome {
    match subset_mismatch(expected, got, "expected") {
        None => Outcome::Pass,
        Some(at) => Outcome::Fail {
            expected: format!("{expected} (first difference at {at})"),
            got: got.to_string(),
        },
    }
}
