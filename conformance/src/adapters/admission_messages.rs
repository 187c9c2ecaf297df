//! node_devices_admission_test.go: verdict wording with role clauses (admission_messages.json).

use serde_json::{json, Value};

use model::admission::verdict::{
    partition_ledger_not_ready_message, partition_no_cards_message, verdict_message,
};
use model::admission::CheckState;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome};
use crate::{Outcome, Vector};

use super::admission::message_properties;

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestVerdictMessageNamesTheRoles" => outcome(|| {
            let state: CheckState = field(&v.input, "state")?;
            if v.input.get("podsets_a").is_some() {
                let a: Vec<String> = field(&v.input, "podsets_a")?;
                let b: Vec<String> = field(&v.input, "podsets_b")?;
                let got = json!({ "messages_equal": verdict_message(state, &a) == verdict_message(state, &b) });
                return Ok(judge(&v.expected, &got));
            }
            let pod_sets: Vec<String> = field(&v.input, "podsets")?;
            let message = verdict_message(state, &pod_sets);
            Ok(judge(
                &v.expected,
                &Value::Object(message_properties(&v.expected, &message)?),
            ))
        }),
        "TestPartitionNoCardsMessageNamesTheRole" => outcome(|| {
            let profile: String = field(&v.input, "profile")?;
            let pod_sets: Vec<String> = field(&v.input, "podsets")?;
            let message = partition_no_cards_message(&profile, &pod_sets);
            Ok(judge(
                &v.expected,
                &Value::Object(message_properties(&v.expected, &message)?),
            ))
        }),
        // The rollout-window wording: a role clause for the podsets named, none without
        // (node_devices_admission.go `partitionLedgerNotReadyMessage`). A vector of this test
        // that carries a pool and demands asserts the call site: it runs through the
        // feasibility adapter, as in admission.json.
        "TestPartitionLedgerNotReadyMessageNamesTheRole" => {
            if v.input.get("pool").is_some() {
                return super::admission::run(v);
            }
            outcome(|| {
                let pod_sets: Vec<String> = field_or_default(&v.input, "podsets")?;
                let message = partition_ledger_not_ready_message(&pod_sets);
                Ok(judge(
                    &v.expected,
                    &Value::Object(message_properties(&v.expected, &message)?),
                ))
            })
        }
        other => not_modelled(other),
    }
}
