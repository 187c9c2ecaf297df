//! node_devices_admission_test.go: `nodeDevicesFeasibility(pool, demands)` (admission.json),
//! plus the message checks the admission adapters share.

use serde_json::{json, Map, Value};

use model::admission::verdict::partition_ledger_not_ready_message;
use model::admission::{node_devices_feasibility, FamilyDemand, ScopedDevices, Verdict};

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

const TESTS: &[&str] = &[
    "TestNodeDevicesFeasibility",
    "TestNodeDevicesFeasibilityScopesEveryFamilyToItsPopulation",
    "TestNodeDevicesFeasibilityConsumesCardsPerDemand",
    "TestNodeDevicesFeasibilityPartitioned",
    "TestNodeDevicesFeasibilityPartitionedVendorSpelledLedger",
    "TestNodeDevicesFeasibilityPartitionedCountsPlacements",
    "TestNodeDevicesFeasibilityPartitionedMessages",
    "TestNodeDevicesFeasibilityScopesEveryDemandToItsOwnFlavor",
    "TestNodeDevicesFeasibilityScopesEveryDemandToItsNodeBatch",
    "TestPartitionLedgerNotReadyMessageNamesTheRole",
];

pub fn run(v: &Vector) -> Outcome {
    let test = v.test_name();
    if !TESTS.contains(&test) {
        return not_modelled(test);
    }
    outcome(|| {
        let pool: Vec<ScopedDevices> = field(&v.input, "pool")?;
        let demands: Vec<FamilyDemand> = field(&v.input, "demands")?;
        let verdict = node_devices_feasibility(&pool, &[], &demands);
        let mut got = verdict_json(&verdict);
        got.extend(message_properties(&v.expected, &verdict.message)?);
        Ok(judge(&v.expected, &Value::Object(got)))
    })
}

/// `{verdict, message}` of a judgment.
pub(crate) fn verdict_json(v: &Verdict) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("verdict".into(), json!(v.state));
    m.insert("message".into(), json!(v.message));
    m
}

/// The text of a message function a vector names as the reference, rendered without a role
/// clause (the Go tests call it with nil provenance): `partitionLedgerNotReadyMessage(nil)`,
/// also spelled "ledger-not-ready message" (TestNodeDevicesFeasibilityPartitionedMessages).
/// The name is matched on its letters alone, case and separators ignored.
pub(crate) fn reference_message(name: &str) -> Read<String> {
    let letters: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if letters.contains("ledgernotready") {
        Ok(partition_ledger_not_ready_message(&[]))
    } else {
        Err(Outcome::NotImplemented(format!(
            "unknown reference message `{name}`"
        )))
    }
}

/// The listed strings of `expected[key]`, if present.
fn listed(expected: &Value, key: &str) -> Read<Option<Vec<String>>> {
    match expected.get(key) {
        None => Ok(None),
        Some(_) => field(expected, key).map(Some),
    }
}

/// The message properties the expected side names, computed from `message`: which of the
/// listed substrings it contains / lacks, the message itself, and whether it equals / differs
/// from a named reference message (reported back as named when it holds).
pub(crate) fn message_properties(expected: &Value, message: &str) -> Read<Map<String, Value>> {
    let mut got = Map::new();
    if let Some(want) = listed(expected, "message_contains")? {
        let present: Vec<&String> = want
            .iter()
            .filter(|s| message.contains(s.as_str()))
            .collect();
        got.insert("message_contains".into(), json!(present));
    }
    if let Some(want) = listed(expected, "message_not_contains")? {
        let absent: Vec<&String> = want
            .iter()
            .filter(|s| !message.contains(s.as_str()))
            .collect();
        got.insert("message_not_contains".into(), json!(absent));
    }
    if expected.get("message_equals").is_some() {
        got.insert("message_equals".into(), json!(message));
    }
    if let Some(reference) = expected.get("message_equals_function") {
        let name: String = field(expected, "message_equals_function")?;
        let value = if message == reference_message(&name)? {
            reference.clone()
        } else {
            json!(message)
        };
        got.insert("message_equals_function".into(), value);
    }
    if let Some(reference) = expected.get("message_differs_from") {
        let name: String = field(expected, "message_differs_from")?;
        let differs = message != reference_message(&name)?;
        let value = if differs {
            reference.clone()
        } else {
            json!(format!("the same text as the {name}"))
        };
        got.insert("message_differs_from".into(), value);
    }
    Ok(got)
}
