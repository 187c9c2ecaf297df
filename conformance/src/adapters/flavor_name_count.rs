//! pkg/worker/controllers/worker/instance_type_test.go: the per-node count encoded in a node
//! flavor name (flavor_name_count.json).

use serde_json::json;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestParseNodeFlavorCount" => outcome(|| {
            let name: String = field(&v.input, "flavor_name")?;
            let got = json!({ "count": model::nodefeature::parse_flavor_count(&name) });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
