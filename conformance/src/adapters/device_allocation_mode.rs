//! api/worker/v1alpha1/devices_test.go: the mode's wire values and their names.

use serde_json::json;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestDeviceAllocationModeString" => outcome(|| {
            let wire: u64 = field(&v.input, "wire_value")?;
            let got = json!({ "string": model::Mode::display_wire(wire) });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
