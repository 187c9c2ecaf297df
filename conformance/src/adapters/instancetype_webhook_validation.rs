//! pkg/worker/webhooks/worker/instance_type_test.go: the validating webhook on CREATE (required
//! inputs, unit spec) and UPDATE (spec immutability).

use serde_json::json;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome, Read};
use crate::{Outcome, Vector};
use model::objects::InstanceTypeSpec;
use model::webhook::{validate_create, validate_update};

/// The vector's `op`, which must be the one its test exercises.
fn expect_op(v: &Vector, want: &str) -> Read<()> {
    let op: String = field(&v.input, "op")?;
    if op == want {
        Ok(())
    } else {
        Err(Outcome::Malformed {
            field: "op".into(),
            problem: format!("expected {want:?} for {}, got {op:?}", v.test_name()),
        })
    }
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeWebhook_ValidateUnitSpec"
        | "TestInstanceTypeWebhook_ValidateCreateRequired" => outcome(|| {
            expect_op(v, "create")?;
            let spec: InstanceTypeSpec = field(&v.input, "spec")?;
            let got = json!({ "rejected": validate_create(&spec).is_err() });
            Ok(judge(&v.expected, &got))
        }),
        "TestInstanceTypeWebhook_ValidateUpdateImmutable" => outcome(|| {
            expect_op(v, "update")?;
            let old: InstanceTypeSpec = field(&v.input, "old_spec")?;
            let new: InstanceTypeSpec = field(&v.input, "new_spec")?;
            let got = json!({ "rejected": validate_update(&old, &new).is_err() });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
