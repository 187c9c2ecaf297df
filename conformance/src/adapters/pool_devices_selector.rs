//! pkg/worker/controllers/worker/instance_type_test.go#TestPoolDevicesSelector: the Devices
//! reverse-lookup selector of a pool queue's labels.

use serde_json::json;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};
use model::labels::Labels;
use model::pool::pool_devices_selector;

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestPoolDevicesSelector" => outcome(|| {
            let labels: Labels = field(&v.input, "labels")?;
            let got = json!({ "selector": pool_devices_selector(&labels) });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
