//! Reading a vector's input: a missing or mistyped field becomes `Outcome::Malformed`
//! naming the field, never a panic. `null` at any depth is Go's nil and reads as empty
//! (crate::nil).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::nil::from_value_nil_as_empty;
use crate::Outcome;

/// Result of reading inputs; `Err` carries the outcome to report.
pub type Read<T> = Result<T, Outcome>;

/// A required field `key` of `v`, deserialized as `T` (a `null` inside reads as empty).
pub fn field<T: DeserializeOwned>(v: &Value, key: &str) -> Read<T> {
    let raw = v.get(key).ok_or_else(|| Outcome::Malformed {
        field: key.to_string(),
        problem: "missing".into(),
    })?;
    from_value_nil_as_empty(raw).map_err(|e| Outcome::Malformed {
        field: key.to_string(),
        problem: e.to_string(),
    })
}

/// An optional field: absent or null reads as `T::default()`.
pub fn field_or_default<T: DeserializeOwned + Default>(v: &Value, key: &str) -> Read<T> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(_) => field(v, key),
    }
}

/// Runs an adapter body written with `?` and folds its error into the outcome.
pub fn outcome(body: impl FnOnce() -> Read<Outcome>) -> Outcome {
    body().unwrap_or_else(|o| o)
}

/// The outcome for a test this adapter does not (yet) model.
pub fn not_modelled(test: &str) -> Outcome {
    Outcome::NotImplemented(format!("{test} is not modelled"))
}
