//! pkg/worker/controllers/worker/fit_demand_test.go: what one Pod of a PodSet asks of one node's
//! cards (the Workload fit pin's demand).

use serde_json::json;

use model::fit::pod_set_fit_demand;
use model::workload::PodSet;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestPodSetFitDemand" => outcome(|| {
            let ps: PodSet = field(&v.input, "podset")?;
            let demand = pod_set_fit_demand(&ps).map_err(|e| Outcome::Malformed {
                field: "podset".into(),
                problem: e.to_string(),
            })?;
            let got = json!({
                "sliced_units": demand.sliced_units,
                "shared_cards": demand.shared_cards,
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
