//! node_devices_admission_test.go: flavor scoping — `flavorAcceleratorKey`,
//! `flavorAcceleratorCount`, `assignedFlavor`, `candidateDevices` and its stable order
//! (admission_flavor_scope.json).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::json;

use model::admission::candidates::{scope_covers_group, FlavorScope};
use model::admission::{
    assigned_flavor, candidate_devices, flavor_accelerator_count, flavor_accelerator_key,
    FlavorObject, NodeDevices, PodSetAssignment,
};
use model::labels::Labels;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome};
use crate::{Outcome, Vector};

/// One pod set's assignment as the vectors spell it.
#[derive(Deserialize)]
pub(crate) struct AssignmentInput {
    pub podset: String,
    #[serde(default)]
    pub flavors: Option<BTreeMap<String, String>>,
}

impl AssignmentInput {
    pub(crate) fn into_model(self) -> PodSetAssignment {
        PodSetAssignment {
            pod_set: self.podset,
            flavors: self.flavors.unwrap_or_default(),
            hosts: Vec::new(),
        }
    }
}

/// What a batch means, read off which group sizes the scope covers (probed 1–64 cards).
fn batch_meaning(count: i64) -> &'static str {
    let scope = FlavorScope {
        flavor: "f".into(),
        accelerator_key: "k".into(),
        accelerator_count: count,
    };
    let covered: Vec<usize> = (1..=64)
        .filter(|&n| scope_covers_group(&scope, "k", n))
        .collect();
    match covered.as_slice() {
        [] => "unreadable batch: covers no card",
        [_] => "batch of exactly this many cards per node",
        _ => "any batch",
    }
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestFlavorAcceleratorKey" => outcome(|| {
            let labels: Labels = field(&v.input, "flavor_node_labels")?;
            let got = json!({ "accelerator_key": flavor_accelerator_key(&labels) });
            Ok(judge(&v.expected, &got))
        }),
        "TestFlavorAcceleratorCount" => outcome(|| {
            let labels: Labels = field(&v.input, "flavor_node_labels")?;
            let key: String = field_or_default(&v.input, "accelerator_key")?;
            let count = flavor_accelerator_count(&labels, &key);
            let got = json!({ "accelerator_count": count, "meaning": batch_meaning(count) });
            Ok(judge(&v.expected, &got))
        }),
        "TestAssignedFlavorPicksTheAcceleratorsOwnResource" => outcome(|| {
            let pod_set: String = field(&v.input, "podset")?;
            let flavors: BTreeMap<String, String> =
                field_or_default(&v.input, "podset_assignment_flavors")?;
            let admission = vec![PodSetAssignment {
                pod_set: pod_set.clone(),
                flavors,
                hosts: Vec::new(),
            }];
            let got = json!({ "flavor": assigned_flavor(Some(&admission), &pod_set) });
            Ok(judge(&v.expected, &got))
        }),
        // The order test reads the same shape: candidateDevices returns the nodes sorted by
        // name whatever order the flavors and Devices are listed in (node_devices_admission.go
        // `candidateDevices`; model: admission::candidate_devices).
        "TestCandidateDevices" | "TestCandidateDevicesOrderIsStable" => outcome(|| {
            let flavors: Vec<FlavorObject> = field(&v.input, "flavors")?;
            let devices: Vec<NodeDevices> = field(&v.input, "devices")?;
            let assignments: Vec<AssignmentInput> = field(&v.input, "workload_assignments")?;
            let refs: BTreeSet<String> = assignments
                .into_iter()
                .flat_map(|a| a.flavors.unwrap_or_default().into_values())
                .collect();
            let pool = candidate_devices(&refs, &flavors, &devices);
            let got = json!({
                "candidates": pool.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
                "scopes_of_first": pool.first().map(|d| d.scopes.clone()).unwrap_or_default(),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
