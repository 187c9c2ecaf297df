//! The verdict on one scenario expectation, read from a replay: an event's outcome, a field or
//! a count of the published objects at a step, a node's fit label. The values come from the
//! model's own objects (serialized as they are) and its fit-label rule; nothing is recomputed.

use model::events::Effect;
use model::scenario::{Compare, Expectation, ObjectKind};
use serde_json::Value;

use crate::replay::{outcome_kind, Observation};

/// A joint phase as a `joint` expectation spells it.
fn joint_phase_name(p: model::lifecycle::JointPhase) -> &'static str {
    use model::lifecycle::JointPhase;
    match p {
        JointPhase::Waiting => "waiting",
        JointPhase::Held => "held",
        JointPhase::Admitted => "admitted",
        JointPhase::Parked => "parked",
    }
}

/// Checks `e` (the `index`-th expectation); `None` for a kind judged elsewhere (a recorded
/// violation).
pub(crate) fn check(
    index: usize,
    e: &Expectation,
    effects: &[Effect],
    steps: &[Option<Observation>],
) -> Option<crate::replay::ExpectationCheck> {
    let (held, check, object) = match e {
        Expectation::Outcome { event, outcome } => {
            let got = effects.get(*event).map_or("missing", outcome_kind);
            let detail = effects
                .get(*event)
                .map(crate::replay::effect_summary)
                .unwrap_or_else(|| format!("no event {event}"));
            (
                got == outcome,
                format!("event {event}: expected {outcome}"),
                format!("got {detail}"),
            )
        }
        Expectation::Field {
            step,
            kind,
            name,
            path,
            op,
            value,
            same_as,
            check,
        } => {
            let label = label_or(check, || {
                let want = value
                    .clone()
                    .unwrap_or_else(|| same_as.as_deref().unwrap_or_default().join("."));
                format!("{} {} {want}", path.join("."), op.symbol())
            });
            match objects_at(steps, *step, *kind, name) {
                Err(missing) => (false, label, missing.to_string()),
                Ok(found) => {
                    let mut held = true;
                    let mut shown = Vec::new();
                    for (obj_name, obj) in &found {
                        let got = read(obj, path);
                        let want = match (value, same_as) {
                            (Some(v), _) => Some(v.clone()),
                            (None, Some(p)) => read(obj, p),
                            (None, None) => None,
                        };
                        let ok = match (&got, &want) {
                            (Some(g), Some(w)) => compare(g, *op, w),
                            _ => false,
                        };
                        held &= ok;
                        shown.push(format!(
                            "{} {obj_name} {} = {}",
                            kind.name(),
                            path.join("."),
                            got.as_deref().unwrap_or("<absent>")
                        ));
                    }
                    (held, label, format!("step {step}: {}", shown.join("; ")))
                }
            }
        }
        Expectation::Count {
            step,
            kind,
            name,
            op,
            value,
            check,
        } => {
            let label = label_or(check, || {
                format!("count {} {name} {} {value}", kind.name(), op.symbol())
            });
            match steps.get(*step).and_then(Option::as_ref) {
                None => (false, label, format!("no step {step}")),
                Some(o) => {
                    let n = named(&o.derived, *kind, name).len();
                    (
                        compare(&n.to_string(), *op, &value.to_string()),
                        label,
                        format!("step {step}: {n} {} named {name}", kind.name()),
                    )
                }
            }
        }
        Expectation::FitLabel {
            step,
            node,
            accelerator_key,
            value,
            slice_units,
            admits,
            check,
        } => {
            let label = label_or(check, || {
                format!("fit label of {node} for {accelerator_key}")
            });
            let labels = steps
                .get(*step)
                .and_then(Option::as_ref)
                .and_then(|o| o.cluster.nodes.iter().find(|n| n.name == *node))
                .map(|n| {
                    model::fit::fit_labels_of(n.devices.as_ref().unwrap_or(&Default::default()))
                });
            match labels {
                None => (false, label, format!("step {step}: no node {node}")),
                Some(labels) => {
                    let key = model::fit_keys::sliced_fit_label_key(accelerator_key);
                    let got = labels.get(&key).and_then(|v| v.parse::<i64>().ok());
                    let mut held = value.is_none_or(|v| got == Some(v));
                    let mut shown = format!(
                        "step {step}: node {node} {key} = {}",
                        got.map_or("<absent>".to_string(), |v| v.to_string())
                    );
                    if let (Some(units), Some(want)) = (slice_units, admits) {
                        let pinned = model::fit::label_admits(
                            &labels,
                            accelerator_key,
                            model::fit::FitQuestion::Slice(*units),
                        );
                        held &= pinned == *want;
                        shown.push_str(&format!(
                            "; pin Gt {} {}",
                            units - 1,
                            if pinned { "admits" } else { "excludes" }
                        ));
                    }
                    (held, label, shown)
                }
            }
        }
        Expectation::Joint {
            step,
            workload,
            phase,
            contains,
            lacks,
            check,
        } => {
            let label = label_or(check, || format!("joint check on {workload}: {phase}"));
            match steps.get(*step).and_then(Option::as_ref) {
                None => (false, label, format!("no step {step}")),
                Some(o) => {
                    let member = o.joint.get(workload);
                    let got = member.map_or("untracked", |m| joint_phase_name(m.phase));
                    let message = member.map(|m| m.message.as_str()).unwrap_or_default();
                    let held = got == phase
                        && contains.iter().all(|w| message.contains(w.as_str()))
                        && !lacks.iter().any(|w| message.contains(w.as_str()));
                    let shown = if message.is_empty() {
                        format!("step {step}: {workload} {got}")
                    } else {
                        format!("step {step}: {workload} {got}: {message}")
                    };
                    (held, label, shown)
                }
            }
        }
        Expectation::Violation { .. } => return None,
    };
    Some(crate::replay::ExpectationCheck {
        index,
        held,
        check,
        object,
    })
}

fn label_or(check: &str, made: impl FnOnce() -> String) -> String {
    if check.is_empty() {
        made()
    } else {
        check.to_string()
    }
}

/// The objects `name` selects at `step`; an error names what is missing and what exists.
fn objects_at(
    steps: &[Option<Observation>],
    step: usize,
    kind: ObjectKind,
    name: &str,
) -> Result<Vec<(String, Value)>, Missing> {
    let o = steps
        .get(step)
        .and_then(Option::as_ref)
        .ok_or(Missing::Step { step })?;
    let found = named(&o.derived, kind, name);
    if found.is_empty() {
        let all: Vec<String> = listed(&o.derived, kind)
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        return Err(Missing::Object {
            step,
            kind: kind.name(),
            name: name.to_string(),
            have: if all.is_empty() {
                "none".to_string()
            } else {
                all.join(", ")
            },
        });
    }
    Ok(found)
}

/// What an expectation names that the replay does not have: its verdict is "not held".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum Missing {
    #[error("no step {step}")]
    Step { step: usize },
    #[error("step {step}: no {kind} named {name} (have: {have})")]
    Object {
        step: usize,
        kind: &'static str,
        name: String,
        have: String,
    },
}

/// Every object of `kind`, with its name, as the model serializes it.
fn listed(d: &model::derive::Derived, kind: ObjectKind) -> Vec<(String, Value)> {
    fn rows<T: serde::Serialize>(items: &[T]) -> Vec<(String, Value)> {
        items
            .iter()
            .filter_map(|i| serde_json::to_value(i).ok())
            .map(|v| {
                let name = v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                (name, v)
            })
            .collect()
    }
    match kind {
        ObjectKind::Node => rows(&d.nodes),
        ObjectKind::ResourceFlavor => rows(&d.resource_flavors),
        ObjectKind::InstanceType => rows(&d.instance_types),
        ObjectKind::ClusterQueue => rows(&d.cluster_queues),
        ObjectKind::LocalQueue => rows(&d.local_queues),
    }
}

/// Objects whose name is `name`, or starts with it when it ends in `*`.
fn named(d: &model::derive::Derived, kind: ObjectKind, name: &str) -> Vec<(String, Value)> {
    listed(d, kind)
        .into_iter()
        .filter(|(n, _)| match name.strip_suffix('*') {
            Some(prefix) => n.starts_with(prefix),
            None => n == name,
        })
        .collect()
}

/// The value at `path` as text (strings bare, other scalars as JSON); `None` when absent.
fn read(v: &Value, path: &[String]) -> Option<String> {
    let mut at = v;
    let mut owned;
    for seg in path {
        if seg == "#len" {
            let n = match at {
                Value::Array(a) => a.len(),
                Value::Object(m) => m.len(),
                Value::String(s) => s.len(),
                Value::Null => 0,
                _ => return None,
            };
            owned = Value::from(n);
            at = &owned;
            continue;
        }
        if let Some((k, want)) = seg
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|s| s.split_once('='))
        {
            // `[=v]` picks a scalar element equal to `v`.
            at = at.as_array()?.iter().find(|e| {
                let got = if k.is_empty() {
                    Some(scalar(e))
                } else {
                    e.get(k).map(scalar)
                };
                got.as_deref() == Some(want)
            })?;
            continue;
        }
        at = match at {
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            Value::Object(m) => m.get(seg)?,
            _ => return None,
        };
    }
    Some(scalar(at))
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn compare(got: &str, op: Compare, want: &str) -> bool {
    if let (Ok(g), Ok(w)) = (got.parse::<i64>(), want.parse::<i64>()) {
        return match op {
            Compare::Eq => g == w,
            Compare::Ne => g != w,
            Compare::Ge => g >= w,
            Compare::Gt => g > w,
            Compare::Le => g <= w,
            Compare::Lt => g < w,
        };
    }
    match op {
        Compare::Eq => got == want,
        Compare::Ne => got != want,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_fields_list_elements_and_lengths() {
        let v: Value = serde_json::json!({
            "name": "q",
            "labels": {"a.b/c": "x"},
            "groups": [{"name": "g1", "n": 3}, {"name": "g2", "n": 5}],
        });
        let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(read(&v, &p(&["labels", "a.b/c"])).as_deref(), Some("x"));
        assert_eq!(
            read(&v, &p(&["groups", "[name=g2]", "n"])).as_deref(),
            Some("5")
        );
        assert_eq!(read(&v, &p(&["groups", "0", "n"])).as_deref(), Some("3"));
        assert_eq!(read(&v, &p(&["groups", "#len"])).as_deref(), Some("2"));
        assert_eq!(read(&v, &p(&["groups", "[name=g9]"])), None);
        let checks: Value = serde_json::json!({"checks": ["a", "b"]});
        assert_eq!(read(&checks, &p(&["checks", "[=b]"])).as_deref(), Some("b"));
        assert_eq!(read(&checks, &p(&["checks", "[=c]"])), None);
        assert_eq!(read(&v, &p(&["missing"])), None);
    }

    #[test]
    fn numbers_compare_as_numbers_and_text_only_for_equality() {
        assert!(compare("10", Compare::Gt, "9"));
        assert!(!compare("10", Compare::Lt, "9"));
        assert!(compare("abc", Compare::Eq, "abc"));
        assert!(compare("abc", Compare::Ne, "abd"));
        assert!(!compare("abc", Compare::Gt, "abb"));
    }

    #[test]
    fn a_replay_reports_each_expectation_with_its_verdict() {
        use model::scenario::{Expectation, Scenario};
        let field = |value: &str| Expectation::Field {
            step: 0,
            kind: ObjectKind::ClusterQueue,
            name: "gpustack-*".into(),
            path: vec!["cohort".into()],
            op: Compare::Eq,
            value: Some(value.into()),
            same_as: None,
            check: format!("cohort is `{value}`"),
        };
        let s = Scenario {
            name: "w".into(),
            cluster: model::examples::walkthrough(),
            expect: vec![
                field(""),
                field("gpustack"),
                Expectation::Count {
                    step: 0,
                    kind: ObjectKind::InstanceType,
                    name: "gpustack-*".into(),
                    op: Compare::Eq,
                    value: 3,
                    check: String::new(),
                },
                Expectation::Count {
                    step: 5,
                    kind: ObjectKind::Node,
                    name: "*".into(),
                    op: Compare::Ge,
                    value: 1,
                    check: String::new(),
                },
            ],
            ..Scenario::default()
        };
        let r = crate::replay(&s);
        let held: Vec<bool> = r.checks.iter().map(|c| c.held).collect();
        assert_eq!(held, vec![true, false, true, false], "{:#?}", r.checks);
        assert!(
            r.checks[3].object.contains("no step 5"),
            "{:?}",
            r.checks[3]
        );
        assert!(!r.held());
        assert_eq!(r.unmet.len(), 2);
    }
}
