//! Label and field selectors as list and watch filter them
//! (k8s.io/apimachinery pkg/labels selector.go, pkg/fields selector.go).
//!
//! Supported label operators: `=`, `==`, `!=`, `in`, `notin`, exists (`key`) and `!key`.
//! Not supported (rejected as 400): the numeric `>`/`<` operators.
//! Field selectors: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::status::Status;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` / `key==value`.
    Equals(String, String),
    /// `key!=value`: absent or different.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, BTreeSet<String>),
    /// `key notin (a,b)`: absent or not listed.
    NotIn(String, BTreeSet<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

impl Requirement {
    /// Whether `labels` (a JSON object of strings, or null) satisfies the requirement.
    pub fn matches(&self, labels: &Value) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        match self {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, set) => get(k).is_some_and(|x| set.contains(x)),
            Requirement::NotIn(k, set) => !get(k).is_some_and(|x| set.contains(x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        }
    }
}

/// A conjunction of label requirements; empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector(pub Vec<Requirement>);

impl LabelSelector {
    /// Parses the `labelSelector` query syntax; a syntax error is a 400 BadRequest.
    pub fn parse(text: &str) -> Result<Self, Status> {
        let mut reqs = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            reqs.push(parse_requirement(part)?);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether an object's `metadata.labels` satisfies every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").unwrap_or(&Value::Null);
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// Splits on commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, Status> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| selector_error(text, "unbalanced ')'"))?
            }
            ',' if depth == 0 => {
                parts.push(text.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(selector_error(text, "unclosed '('"));
    }
    parts.push(text.get(start..).unwrap_or(""));
    Ok(parts)
}

/// One requirement: `!key`, `key`, `key=v`, `key==v`, `key!=v`, `key in (..)`, `key notin (..)`.
fn parse_requirement(part: &str) -> Result<Requirement, Status> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(checked_key(key.trim(), part)?));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(
            checked_key(k.trim(), part)?,
            checked_value(v.trim(), part)?,
        ));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Requirement::Equals(
            checked_key(k.trim(), part)?,
            checked_value(v.trim(), part)?,
        ));
    }
    if part.contains('>') || part.contains('<') {
        return Err(selector_error(
            part,
            "the '>' and '<' operators are not supported",
        ));
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = checked_key(words.next().unwrap_or("").trim(), part)?;
    let rest = words.next().unwrap_or("").trim();
    if rest.is_empty() {
        return Ok(Requirement::Exists(key));
    }
    let (op, list) = rest
        .split_once(|c: char| c.is_whitespace() || c == '(')
        .map(|(op, _)| (op, rest.get(op.len()..).unwrap_or("").trim()))
        .ok_or_else(|| selector_error(part, "expected 'in' or 'notin' and a value list"))?;
    let inner = list
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .ok_or_else(|| selector_error(part, "expected a parenthesised value list"))?;
    let mut set = BTreeSet::new();
    for v in inner.split(',') {
        set.insert(checked_value(v.trim(), part)?);
    }
    match op {
        "in" => Ok(Requirement::In(key, set)),
        "notin" => Ok(Requirement::NotIn(key, set)),
        _ => Err(selector_error(part, "expected 'in' or 'notin'")),
    }
}

/// A label key: non-empty, `[A-Za-z0-9._/-]`.
fn checked_key(key: &str, part: &str) -> Result<String, Status> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'));
    if ok {
        Ok(key.to_string())
    } else {
        Err(selector_error(part, "invalid label key"))
    }
}

/// A label value: possibly empty, `[A-Za-z0-9._-]`.
fn checked_value(value: &str, part: &str) -> Result<String, Status> {
    if value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        Ok(value.to_string())
    } else {
        Err(selector_error(part, "invalid label value"))
    }
}

fn selector_error(part: &str, why: &str) -> Status {
    Status::bad_request(format!("unable to parse requirement {part:?}: {why}"))
}

/// One field requirement on `metadata.name` or `metadata.namespace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// `metadata.name` or `metadata.namespace`.
    pub field: String,
    pub value: String,
    /// True for `!=`.
    pub negated: bool,
}

/// A conjunction of field requirements; empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

/// The fields every kind supports in a field selector.
const SELECTABLE_FIELDS: [&str; 2] = ["metadata.name", "metadata.namespace"];

impl FieldSelector {
    /// Parses the `fieldSelector` query syntax; an unknown field is a 400 BadRequest.
    pub fn parse(text: &str) -> Result<Self, Status> {
        let mut reqs = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, v, false)
            } else {
                return Err(Status::bad_request(format!(
                    "invalid field selector: {part:?}: expected field=value"
                )));
            };
            let field = field.trim();
            if !SELECTABLE_FIELDS.contains(&field) {
                return Err(Status::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            reqs.push(FieldRequirement {
                field: field.to_string(),
                value: value.trim().to_string(),
                negated,
            });
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether the object's name/namespace satisfy every requirement
    /// (a cluster-scoped object has the empty namespace).
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|r| {
            let pointer = if r.field == "metadata.name" {
                "/metadata/name"
            } else {
                "/metadata/namespace"
            };
            let actual = object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("");
            (actual == r.value) != r.negated
        })
    }
}

/// A label selector and a field selector together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selector {
    /// Parses both query parameters (empty strings select everything).
    pub fn parse(label_selector: &str, field_selector: &str) -> Result<Self, Status> {
        Ok(Selector {
            labels: LabelSelector::parse(label_selector)?,
            fields: FieldSelector::parse(field_selector)?,
        })
    }

    /// Selects everything.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Whether the object is selected by both selectors.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "n1", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn every_label_operator() {
        let o = obj(json!({"a": "1", "b": "x"}));
        let yes = [
            "a=1",
            "a==1",
            "a!=2",
            "c!=2",
            "a in (1,2)",
            "a notin (2,3)",
            "c notin (2)",
            "a",
            "!c",
            "a=1,b=x",
            "a in (1, 2),b",
            "",
        ];
        for s in yes {
            let sel = LabelSelector::parse(s).map_err(|e| e.message);
            assert_eq!(sel.map(|x| x.matches(&o)), Ok(true), "{s}");
        }
        let no = [
            "a=2",
            "a!=1",
            "a in (2)",
            "a notin (1)",
            "c",
            "!a",
            "a=1,b=y",
            "c in (1)",
        ];
        for s in no {
            let sel = LabelSelector::parse(s).map_err(|e| e.message);
            assert_eq!(sel.map(|x| x.matches(&o)), Ok(false), "{s}");
        }
    }

    #[test]
    fn malformed_selectors_are_bad_requests() {
        for s in ["a in (1", "a in 1", "a foo (1)", "a>1", "=1", "a=b c", "a)"] {
            let e = LabelSelector::parse(s).err().map(|e| e.code);
            assert_eq!(e, Some(400), "{s}");
        }
    }

    #[test]
    fn field_selectors_on_name_and_namespace() {
        let o = obj(json!({}));
        let m = |s: &str| FieldSelector::parse(s).map(|f| f.matches(&o)).ok();
        assert_eq!(m("metadata.name=n1"), Some(true));
        assert_eq!(m("metadata.name==n2"), Some(false));
        assert_eq!(m("metadata.name!=n2,metadata.namespace=ns"), Some(true));
        assert_eq!(m("metadata.namespace!=ns"), Some(false));
        assert_eq!(
            FieldSelector::parse("spec.x=1").err().map(|e| e.code),
            Some(400)
        );
        let cluster = json!({"metadata": {"name": "n"}});
        let sel = FieldSelector::parse("metadata.namespace=").ok();
        assert_eq!(sel.map(|s| s.matches(&cluster)), Some(true));
    }
}
