//! node_devices_admission_test.go: `parseFamilyDemands` (admission_parse_demands.json).

use serde_json::{json, Value};

use model::admission::{parse_family_demands, FamilyDemand};
use model::workload::PodSet;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

const TESTS: [&str; 6] = [
    "TestParseFamilyDemands",
    "TestParseFamilyDemands_TakesStrictestUnitsWithinAPodSet",
    "TestParseFamilyDemands_KeepsPodSetCorrelation",
    "TestParseFamilyDemands_InitContainerPartition",
    "TestParseFamilyDemands_LimitsOnly",
    // Podsets agreeing on family, budget and profile collapse to one demand naming both.
    "TestParseFamilyDemands_MergesIdenticalPodSets",
];

/// A demand in the vector's shape.
pub(crate) fn demand_json(d: &FamilyDemand) -> Value {
    json!({
        "family": d.family.name(),
        "cards": d.cards,
        "units_per_card": d.units_per_card,
        "profile": d.profile,
        "flavor": d.flavor,
        "podsets": d.pod_sets,
    })
}

pub fn run(v: &Vector) -> Outcome {
    let test = v.test_name();
    if !TESTS.contains(&test) {
        return not_modelled(test);
    }
    outcome(|| {
        let pod_sets: Vec<PodSet> = field(&v.input, "podsets")?;
        let demands = parse_family_demands(&pod_sets, None).map_err(|e| Outcome::Malformed {
            field: "podsets".into(),
            problem: e.to_string(),
        })?;
        let got = json!({ "demands": demands.iter().map(demand_json).collect::<Vec<_>>() });
        Ok(judge(&v.expected, &got))
    })
}
