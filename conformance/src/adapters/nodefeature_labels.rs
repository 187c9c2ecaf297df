//! pkg/nodefeature/helper_test.go: node labels, keys, node flavors, the credits resource name
//! and the LocalQueue name shape (nodefeature_labels.json).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{json, Value};

use model::devices::{Card, DeviceGroup, Devices};
use model::labels::{Labels, MANAGED};
use model::nodefeature;
use model::objects::NodeFlavor;
use model::Settings;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

/// A device group as the vectors spell it (`accelerators` for the cards).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GroupInput {
    id: String,
    manufacturer: String,
    name: String,
    memory_mib: u64,
    accelerators: Vec<Card>,
    cores: u32,
    driver_version: String,
    runtime_version: String,
    compute_capability: String,
    family: String,
}

impl From<GroupInput> for DeviceGroup {
    fn from(g: GroupInput) -> Self {
        DeviceGroup {
            manufacturer: g.manufacturer,
            id: g.id,
            name: g.name,
            memory_mib: g.memory_mib,
            cores: g.cores,
            driver_version: g.driver_version,
            runtime_version: g.runtime_version,
            compute_capability: g.compute_capability,
            family: g.family,
            cards: g.accelerators,
        }
    }
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestConstructAcceleratableNodeLabels" => outcome(|| accelerator_labels(v)),
        "TestExtractAcceleratableNodeKeys" => outcome(|| {
            let labels: Labels = field(&v.input, "node_labels")?;
            let got = json!({ "accelerator_keys": nodefeature::accelerator_keys(&labels) });
            Ok(judge(&v.expected, &got))
        }),
        "TestExtractGeneralNodeKey" => outcome(|| {
            let labels: Labels = field(&v.input, "node_labels")?;
            let annotations: Labels = field_or_default(&v.input, "node_annotations")?;
            let got = json!({ "general_key": nodefeature::general_key(&labels, &annotations) });
            Ok(judge(&v.expected, &got))
        }),
        "TestExtractGeneralNodeKey_BudgetLeavesRoomForSuffix" => outcome(|| general_key_budget(v)),
        "TestConstructNodeCapacityLabels" => outcome(|| capacity_labels(v)),
        "TestConstructNodeCapacityLabels_ManualNodeManagement" => outcome(|| {
            let labels: Labels = field(&v.input, "node_labels")?;
            let manual: bool = field(&v.input, "manual_node_management")?;
            let out = nodefeature::worker_node_labels(&labels, &Labels::new(), 0, manual);
            let got = json!({
                "managed_label_present": out.contains_key(MANAGED),
                "managed_label_value": out.get(MANAGED),
            });
            Ok(judge(&v.expected, &got))
        }),
        "TestExtractNodeFlavors" => outcome(|| node_flavors(v)),
        "TestIsAcceleratableCreditsResourceName" => outcome(|| {
            let name: String = field(&v.input, "resource_name")?;
            let got = json!({ "is_credits": nodefeature::is_credits_resource_name(&name) });
            Ok(judge(&v.expected, &got))
        }),
        "TestFormatLocalQueueName" => outcome(|| local_queue_shape(v)),
        other => not_modelled(other),
    }
}

/// The Go test compares whole label maps (`assert.Equal`), while `judge` ignores extra keys:
/// report a key-set difference as a failure before judging the values.
fn exact_label_keys(expected: &Value, got: &Labels) -> Option<Outcome> {
    let want: BTreeSet<&str> = expected
        .get("labels")?
        .as_object()?
        .keys()
        .map(String::as_str)
        .collect();
    let have: BTreeSet<&str> = got.keys().map(model::labels::Text::as_str).collect();
    (want != have).then(|| Outcome::Fail {
        expected: format!("label keys {want:?}"),
        got: format!("label keys {have:?}"),
    })
}

fn accelerator_labels(v: &Vector) -> Read<Outcome> {
    let groups: Vec<GroupInput> = field(&v.input, "device_groups")?;
    let devices = Devices {
        groups: groups.into_iter().map(DeviceGroup::from).collect(),
    };
    let labels = nodefeature::accelerator_node_labels(&devices);
    if let Some(fail) = exact_label_keys(&v.expected, &labels) {
        return Ok(fail);
    }
    Ok(judge(&v.expected, &json!({ "labels": labels })))
}

/// A CPU capacity quantity (`16`, `1.5`, `1500m`) in millicores; `None` if unreadable.
fn cpu_millis(q: &str) -> Option<u64> {
    let (number, scale) = match q.strip_suffix('m') {
        Some(n) => (n, 1u64),
        None => (q, 1000u64),
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_ok(whole) || !digits_ok(frac) || (scale == 1 && !frac.is_empty())
    {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    // Fractions below a millicore round up, as Quantity.Value() and MilliValue() do.
    let frac_millis = if frac.is_empty() {
        0
    } else {
        let padded: String = frac.chars().chain(std::iter::repeat('0')).take(3).collect();
        let base: u64 = padded.parse().ok()?;
        base + u64::from(frac.len() > 3 && frac[3..].bytes().any(|b| b != b'0'))
    };
    whole.checked_mul(scale)?.checked_add(frac_millis)
}

/// Which of the listed substrings no output key contains (the test forbids them all).
fn absent_substrings(expected: &Value, labels: &Labels) -> Vec<String> {
    expected
        .get("forbidden_key_substrings")
        .and_then(Value::as_array)
        .map(|subs| {
            subs.iter()
                .filter_map(Value::as_str)
                .filter(|s| !labels.keys().any(|k| k.contains(s)))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn capacity_labels(v: &Vector) -> Read<Outcome> {
    let labels: Labels = field(&v.input, "node_labels")?;
    let annotations: Labels = field_or_default(&v.input, "node_annotations")?;
    let capacity: Labels = field_or_default(&v.input, "node_capacity")?;
    let manual: bool = field_or_default(&v.input, "manual_node_management")?;
    let millis = match capacity.get("cpu") {
        None => 0,
        Some(q) => cpu_millis(q).ok_or_else(|| Outcome::Malformed {
            field: "node_capacity.cpu".into(),
            problem: format!("{q:?} is not a CPU quantity"),
        })?,
    };
    let out = nodefeature::worker_node_labels(&labels, &annotations, millis, manual);
    if let Some(fail) = exact_label_keys(&v.expected, &out) {
        return Ok(fail);
    }
    let got = json!({
        "labels": out,
        "forbidden_key_substrings": absent_substrings(&v.expected, &out),
    });
    Ok(judge(&v.expected, &got))
}

/// Orders `got` like the expected list by flavor name (an any-order comparison); unmatched
/// flavors follow in their own order, so a missing or extra one still fails.
fn in_expected_order(expected: Option<&Value>, mut got: Vec<NodeFlavor>) -> Vec<NodeFlavor> {
    let names: Vec<&str> = expected
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let mut ordered = Vec::with_capacity(got.len());
    for name in names {
        if let Some(i) = got.iter().position(|f| f.name == name) {
            ordered.push(got.remove(i));
        }
    }
    ordered.extend(got);
    ordered
}

fn node_flavors(v: &Vector) -> Read<Outcome> {
    let labels: Labels = field(&v.input, "node_labels")?;
    let annotations: Labels = field_or_default(&v.input, "node_annotations")?;
    let flavors = nodefeature::node_flavors(&labels, &annotations, &Settings::default());
    let (cpu, devices): (Vec<NodeFlavor>, Vec<NodeFlavor>) = match flavors.first() {
        Some(f) if !f.acceleratable => {
            let mut rest = flavors;
            let first = rest.remove(0);
            (vec![first], rest)
        }
        _ => (Vec::new(), flavors),
    };
    let devices = in_expected_order(v.expected.get("device_flavors_any_order"), devices);
    let all: Vec<&NodeFlavor> = cpu.iter().chain(&devices).collect();
    let got = json!({
        "flavors": all,
        "cpu_flavor_first": cpu.first(),
        "device_flavors_any_order": devices,
    });
    Ok(judge(&v.expected, &got))
}

/// The longest sibling suffix a general key carries as a label name segment.
const LONGEST_GENERAL_SUFFIX: &str = ".capacity";

/// helper_test.go `TestExtractGeneralNodeKey_BudgetLeavesRoomForSuffix`: a very long CPU name
/// still gives a non-empty general key led by the manufacturer, truncated so that the key plus
/// its longest suffix (`.capacity`) fits a 63-character label name segment
/// (`ExtractGeneralNodeKey`, helper.go). The bound and the prefix are reported back when the
/// key satisfies them, else the key's own length / the key itself.
fn general_key_budget(v: &Vector) -> Read<Outcome> {
    let labels: Labels = field_or_default(&v.input, "node_labels")?;
    let annotations: Labels = field_or_default(&v.input, "node_annotations")?;
    let key = nodefeature::general_key(&labels, &annotations);
    let suffixed = key.len() + LONGEST_GENERAL_SUFFIX.len();
    let mut got = json!({
        "general_key": key,
        "general_key_non_empty": !key.is_empty(),
        "len_key_plus_capacity_suffix": suffixed,
    });
    if let Some(max) = v.expected.get("len_key_plus_capacity_suffix_max") {
        let bound: usize = field(&v.expected, "len_key_plus_capacity_suffix_max")?;
        got["len_key_plus_capacity_suffix_max"] = if suffixed <= bound {
            max.clone()
        } else {
            json!(suffixed)
        };
    }
    if let Some(prefix) = v.expected.get("general_key_prefix") {
        let p: String = field(&v.expected, "general_key_prefix")?;
        got["general_key_prefix"] = if key.starts_with(&p) {
            prefix.clone()
        } else {
            json!(key)
        };
    }
    Ok(judge(&v.expected, &got))
}

/// Whether `s` matches a pattern of the one shape these vectors use, `^<literal>[0-9a-f]{N}$`;
/// `None` when the pattern has another shape.
fn matches_hex_pattern(pattern: &str, s: &str) -> Option<bool> {
    let body = pattern.strip_prefix('^')?.strip_suffix('$')?;
    let (literal, rest) = body.split_once("[0-9a-f]{")?;
    let n: usize = rest.strip_suffix('}')?.parse().ok()?;
    if literal.chars().any(|c| "\\.[]{}()*+?|^$".contains(c)) {
        return None;
    }
    Some(s.strip_prefix(literal).is_some_and(|hex| {
        hex.len() == n
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }))
}

fn local_queue_shape(v: &Vector) -> Read<Outcome> {
    let cqs: Vec<String> = field(&v.input, "cluster_queue_names")?;
    let names: Vec<String> = cqs
        .iter()
        .map(|c| nodefeature::local_queue_name(c))
        .collect();
    let again: Vec<String> = cqs
        .iter()
        .map(|c| nodefeature::local_queue_name(c))
        .collect();
    let lengths: BTreeSet<usize> = names.iter().map(String::len).collect();
    let length = match lengths.iter().collect::<Vec<_>>().as_slice() {
        [one] => json!(one),
        _ => json!(lengths),
    };
    let mut got = json!({
        "length": length,
        "deterministic": names == again,
        "distinct_inputs_distinct_outputs":
            names.iter().collect::<BTreeSet<_>>().len() == cqs.iter().collect::<BTreeSet<_>>().len(),
    });
    if let Some(pattern) = v.expected.get("regex").and_then(Value::as_str) {
        let verdicts: Option<Vec<bool>> = names
            .iter()
            .map(|n| matches_hex_pattern(pattern, n))
            .collect();
        let Some(verdicts) = verdicts else {
            return Ok(Outcome::NotImplemented(format!(
                "regex {pattern} is not of the ^<literal>[0-9a-f]{{N}}$ shape the adapter checks"
            )));
        };
        // The pattern is reported back only when every name was checked against it.
        got["regex"] = if verdicts.iter().all(|ok| *ok) {
            json!(pattern)
        } else {
            json!(format!("names not matching {pattern}: {names:?}"))
        };
    }
    Ok(judge(&v.expected, &got))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities_round_up() {
        assert_eq!(cpu_millis("16"), Some(16_000));
        assert_eq!(cpu_millis("1500m"), Some(1500));
        assert_eq!(cpu_millis("1.5"), Some(1500));
        assert_eq!(cpu_millis("0.0001"), Some(1));
        assert_eq!(cpu_millis("1.5m"), None);
        assert_eq!(cpu_millis("16Gi"), None);
        assert_eq!(cpu_millis(""), None);
    }

    #[test]
    fn hex_pattern_matcher() {
        let p = "^gpustack-fnv64-[0-9a-f]{16}$";
        assert_eq!(
            matches_hex_pattern(p, "gpustack-fnv64-0123456789abcdef"),
            Some(true)
        );
        assert_eq!(
            matches_hex_pattern(p, "gpustack-fnv64-0123456789ABCDEF"),
            Some(false)
        );
        assert_eq!(matches_hex_pattern(p, "gpustack-fnv64-0123"), Some(false));
        assert_eq!(matches_hex_pattern("^a.b[0-9a-f]{2}$", "axb00"), None);
    }
}
