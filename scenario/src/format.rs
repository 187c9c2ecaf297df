//! The scenario file: YAML in the plain serde layout of `model::scenario::Scenario`, read
//! strictly (unknown keys refused, the cluster validated) and written in a stable key order.

use std::path::Path;

use model::scenario::Scenario;
use serde_norway::Value;

use crate::atomic;
use crate::error::{Location, ScenarioError};
use crate::locate::locate;
use crate::path::{FieldPath, Segment};

/// Parses a scenario from YAML text; `origin` names the text in errors (usually its file name).
/// A locked case's `case:` header is read and checked too (see [`crate::case_from_yaml`]).
pub fn from_yaml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    crate::case::case_from_yaml(text, origin).map(|c| c.scenario)
}

/// The scenario reader proper (a file without a `case:` header).
pub(crate) fn scenario_from_yaml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    let mut ignored: Option<FieldPath> = None;
    let de = serde_norway::Deserializer::from_str(text);
    let mut note_ignored = |p: serde_ignored::Path<'_>| {
        ignored.get_or_insert_with(|| FieldPath::from_ignored(&p));
    };
    let strict = serde_ignored::Deserializer::new(de, &mut note_ignored);
    let parsed: Result<Scenario, _> = serde_path_to_error::deserialize(strict);
    let scenario = parsed.map_err(|e| syntax_error(text, origin, &e))?;
    // The untyped reading refuses what the typed one lets through: a repeated key in a map
    // (labels), which would otherwise keep only its last value.
    let written: Value = serde_norway::from_str(text).map_err(|e| {
        let at = e.location().map(|l| (l.line(), l.column()));
        let mut message = e.to_string();
        if let Some((line, column)) = at {
            message = message.replace(&format!(" at line {line} column {column}"), "");
        }
        // The parser's message starts with the map's path (`cluster.nodes[0].labels: …`).
        let (field, message) = match message.split_once(": ") {
            Some((path, rest)) if !path.contains(char::is_whitespace) => (
                FieldPath::parse_dotted(&FieldPath::root(), path),
                rest.to_string(),
            ),
            _ => (FieldPath::root(), message),
        };
        ScenarioError::Syntax {
            at: Location::new(origin, at),
            field,
            message,
        }
    })?;
    if let Some(field) = ignored.or_else(|| unknown_key(&written, &scenario)) {
        return Err(ScenarioError::UnknownField {
            at: Location::new(origin, locate(text, field.segments())),
            field,
        });
    }
    model::derive::validate(&scenario.cluster).map_err(|e| invalid(text, origin, e))?;
    submitted_quantities(&scenario).map_err(|(field, problem)| ScenarioError::Invalid {
        at: Location::new(origin, locate(text, field.segments())),
        field,
        problem,
    })?;
    Ok(scenario)
}

/// Every submitted Workload's requests and limits are at least 0
/// ([`model::workload::validate_nonnegative`]); the error is the quantity's field path.
fn submitted_quantities(s: &Scenario) -> Result<(), (FieldPath, String)> {
    for (i, event) in s.events.iter().enumerate() {
        let model::events::Event::Submit { workload } = event else {
            continue;
        };
        model::workload::validate_nonnegative(workload).map_err(|n| {
            let field = FieldPath::root()
                .key("events")
                .index(i)
                .key("workload")
                .key("pod_sets")
                .index(n.pod_set)
                .key("containers")
                .index(n.container)
                .key(n.list)
                .key(&n.resource);
            (
                field,
                format!("`{}`: must be greater than or equal to 0", n.quantity),
            )
        })?;
    }
    Ok(())
}

/// Reads and parses the scenario file at `path` (a case file's header is checked and
/// dropped); errors name the file as given.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    crate::case::load_case(path).map(|c| c.scenario)
}

/// Renders a scenario as YAML: struct fields in declaration order, maps sorted by key, strings
/// that would read back as another type quoted. `from_yaml(&to_yaml(s), _) == Ok(s)`.
pub fn to_yaml(s: &Scenario) -> String {
    // Every map in the model has string keys and every value is plain data, so rendering
    // cannot fail; should it ever, the text says so instead of pretending to be a scenario.
    try_to_yaml(s).unwrap_or_else(|e| format!("# {e}\n"))
}

/// [`to_yaml`], with a rendering failure as a value.
pub fn try_to_yaml(s: &Scenario) -> Result<String, ScenarioError> {
    serde_norway::to_string(s).map_err(ScenarioError::Render)
}

/// Writes `s` to `path` atomically (a temporary file in the same folder, then a rename).
pub fn save(path: &Path, s: &Scenario) -> Result<(), ScenarioError> {
    let text = try_to_yaml(s)?;
    atomic::replace(path, text.as_bytes())
}

/// A deserialization failure: file, line and column from the YAML parser, the field path
/// from serde_path_to_error, and the parser's message without its own `at line …` suffix.
fn syntax_error(
    text: &str,
    origin: &str,
    e: &serde_path_to_error::Error<serde_norway::Error>,
) -> ScenarioError {
    let field = FieldPath::from_serde(e.path());
    if let Some(deeper) = inside_event_payload(text, origin, &field) {
        return deeper;
    }
    let inner = e.inner();
    let mut message = inner.to_string();
    let at = match inner.location() {
        Some(loc) => {
            let suffix = format!(" at line {} column {}", loc.line(), loc.column());
            if let Some(i) = message.find(&suffix) {
                message.replace_range(i..i + suffix.len(), "");
            }
            Some((loc.line(), loc.column()))
        }
        None => locate(text, field.segments()),
    };
    strip_parser_path(&mut message, &field);
    ScenarioError::Syntax {
        at: Location::new(origin, at),
        field,
        message,
    }
}

/// serde reads an event through a buffer, so a mistake inside its payload is reported at
/// `events[i]` only. This reads the payload (`node`, `workload`, `capability`) again on its
/// own to name the field inside it, located in the text; `None` if that finds nothing.
fn inside_event_payload(text: &str, origin: &str, field: &FieldPath) -> Option<ScenarioError> {
    let [Segment::Key(list), Segment::Index(i)] = field.segments() else {
        return None;
    };
    if list != "events" {
        return None;
    }
    let doc: Value = serde_norway::from_str(text).ok()?;
    let item = doc.get("events")?.get(*i)?;
    let kind = item.get("event")?.as_str()?;
    let (key, found) = match kind {
        "node-join" => ("node", payload_error::<model::Node>(item.get("node")?)),
        "submit" => (
            "workload",
            payload_error::<model::workload::Workload>(item.get("workload")?),
        ),
        "card-family" => (
            "capability",
            payload_error::<model::Capability>(item.get("capability")?),
        ),
        _ => return None,
    };
    let (inner, message) = found?;
    let mut path = field.key(key);
    path.0.extend(inner.0);
    Some(ScenarioError::Syntax {
        at: Location::new(origin, locate(text, path.segments())),
        field: path,
        message,
    })
}

/// The path and message of the first error reading `value` as a `T`, if any.
fn payload_error<T: serde::de::DeserializeOwned>(value: &Value) -> Option<(FieldPath, String)> {
    let e = serde_path_to_error::deserialize::<_, T>(value.clone()).err()?;
    Some((FieldPath::from_serde(e.path()), e.inner().to_string()))
}

/// serde_norway starts a message with its own idea of the path (`cluster.nodes[0]: …`, which
/// for some errors stops one level short); the error names the path from serde_path_to_error
/// instead, so the parser's prefix goes. It is recognised as a space-free run starting with
/// the document's top-level key and ending at the first `: `; a repeat of the field's own name
/// after it goes too.
fn strip_parser_path(message: &mut String, field: &FieldPath) {
    let Some(Segment::Key(top)) = field.segments().first() else {
        return;
    };
    if !message.starts_with(top.as_str()) {
        return;
    }
    if let Some(end) = message.find(": ") {
        if !message[..end].contains(char::is_whitespace) {
            message.replace_range(..end + 2, "");
        }
    }
    // A model error may name the field again (`mode: unknown device allocation mode …`).
    if let Some(Segment::Key(last)) = field.segments().last() {
        if let Some(rest) = message.strip_prefix(&format!("{last}: ")) {
            *message = rest.to_string();
        }
    }
}

/// A validation failure of the cluster, placed under `cluster.` and located in the text.
fn invalid(text: &str, origin: &str, e: model::ModelError) -> ScenarioError {
    let cluster = FieldPath::root().key("cluster");
    let (field, problem) = match e {
        model::ModelError::Invalid { field, problem } => {
            (FieldPath::parse_dotted(&cluster, &field), problem)
        }
        other => (cluster, other.to_string()),
    };
    ScenarioError::Invalid {
        at: Location::new(origin, locate(text, field.segments())),
        field,
        problem,
    }
}

/// The first key of the text (in file order) that the typed scenario does not carry.
///
/// serde_ignored sees every struct except those read through a buffer, which is how serde
/// reads internally tagged enums (`events`, `expect`); this catches the rest by comparing the
/// text's keys with a re-serialization of what was read. A key missing from the
/// re-serialization with an empty value (null, "", false, [], {}) is a field the model skips
/// when empty, not an unknown one.
fn unknown_key(written: &Value, scenario: &Scenario) -> Option<FieldPath> {
    let typed = serde_norway::to_value(scenario).ok()?;
    first_extra_key(written, &typed, &FieldPath::root())
}

fn first_extra_key(written: &Value, typed: &Value, at: &FieldPath) -> Option<FieldPath> {
    match (written, typed) {
        (Value::Mapping(w), Value::Mapping(t)) => w.iter().find_map(|(k, v)| {
            let name = key_text(k);
            match t.iter().find(|(tk, _)| key_text(tk) == name) {
                Some((_, tv)) => first_extra_key(v, tv, &at.key(&name)),
                None if is_empty(v) => None,
                None => Some(at.key(&name)),
            }
        }),
        (Value::Sequence(w), Value::Sequence(t)) => w
            .iter()
            .zip(t)
            .enumerate()
            .find_map(|(i, (wv, tv))| first_extra_key(wv, tv, &at.index(i))),
        (Value::Tagged(w), _) => first_extra_key(&w.value, typed, at),
        _ => None,
    }
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => serde_norway::to_string(other)
            .map(|s| s.trim_end().to_string())
            .unwrap_or_default(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Sequence(s) => s.is_empty(),
        Value::Mapping(m) => m.is_empty(),
        _ => false,
    }
}
