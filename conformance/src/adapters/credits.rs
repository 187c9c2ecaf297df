//! pkg/nodefeature/knowns_test.go: credits ↔ cards and the slice arithmetic, on Kubernetes
//! quantity strings printed canonically.

use serde_json::{json, Map, Value};

use model::credits::{self as c, Quantity};
use model::ModelError;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestSlicedResourceDenominatorInvariants" => {
            let got: Map<String, Value> = c::denominator_invariants()
                .into_iter()
                .map(|(k, n)| (k.to_string(), json!(n)))
                .collect();
            judge(&v.expected, &Value::Object(got))
        }
        // B = D and B splits exactly per mode (knowns_test.go TestCreditsPerCardInvariants).
        "TestCreditsPerCardInvariants" => {
            let got: Map<String, Value> = c::credits_per_card_invariants()
                .into_iter()
                .map(|(k, n)| (k.to_string(), json!(n)))
                .collect();
            judge(&v.expected, &Value::Object(got))
        }
        "TestCardsToCredits" | "TestCreditsToCards" | "TestCreditsRoundTrip" => outcome(|| {
            let q = quantity(v, "quantity")?;
            let out = match v.test_name() {
                "TestCardsToCredits" => c::cards_to_credits(q),
                "TestCreditsToCards" => c::credits_to_cards(q),
                _ => c::cards_to_credits(q).and_then(c::credits_to_cards),
            };
            printed(v, out)
        }),
        "TestIsValidSlicedPartitions" => outcome(|| {
            let n: i64 = field(&v.input, "n")?;
            Ok(judge(
                &v.expected,
                &json!({ "valid": c::is_valid_sliced_partitions(n) }),
            ))
        }),
        "TestQuantityToSliceCount"
        | "TestQuantityToAlignedValue"
        | "TestQuantityToOriginalValue" => outcome(|| {
            let q = quantity(v, "quantity")?;
            let sliced: i64 = field(&v.input, "sliced")?;
            let out = match v.test_name() {
                "TestQuantityToSliceCount" => c::quantity_to_slice_count(q, sliced),
                "TestQuantityToAlignedValue" => c::quantity_to_aligned_value(q, sliced),
                _ => Ok(c::quantity_to_original_value(q, sliced)),
            };
            printed(v, out)
        }),
        other => not_modelled(other),
    }
}

/// A quantity-string input field, parsed; a bad string is malformed input.
fn quantity(v: &Vector, key: &str) -> Read<Quantity> {
    let s: String = field(&v.input, key)?;
    c::parse_quantity(&s).map_err(|e| Outcome::Malformed {
        field: key.to_string(),
        problem: e.to_string(),
    })
}

/// Judges the canonical string of a result; an arithmetic error is a failure, shown as such.
fn printed(v: &Vector, out: Result<Quantity, ModelError>) -> Read<Outcome> {
    let got = match out {
        Ok(q) => json!({ "quantity": q.to_string() }),
        Err(e) => json!({ "error": e.to_string() }),
    };
    Ok(judge(&v.expected, &got))
}
