//! pkg/worker/controllers/worker/instance_type_test.go: `getAcceleratorResources` — the four
//! views of one pool over per-node Devices (research/chain.md §9.1–9.2).

use serde_json::{json, Value};

use model::devices::{Devices, ProfileCount};
use model::objects::{FourViews, ResourceView};
use model::views::four_views;
use model::SharedOnceMax;

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

const TESTS: [&str; 16] = [
    "TestAcceleratorFourViews",
    "TestAcceleratorFourViews_MultiNode",
    "TestAcceleratorFourViews_SlicedOnceMaxIsPerCard",
    "TestAcceleratorViews_LogicalOnlyPool",
    "TestAcceleratorViews_PartitionProfileLedgerMultiNode",
    "TestAcceleratorViews_PartitionSurvivesFirstAllocation",
    "TestAcceleratorFourViews_NeitherFamilyCard",
    "TestAcceleratorFourViews_Empty",
    "TestAcceleratorViews_PartitionOnlyPool",
    "TestAcceleratorViews_MixedPool",
    "TestAcceleratorViews_PartitionOnceMaxIsCappedAtOne",
    "TestAcceleratorViews_PartitionProfileLedger",
    "TestAcceleratorViews_PartitionCardMissingFromLedger",
    "TestAcceleratorViews_OnlyThePoolsOwnGroup",
    "TestInstanceTypeReconciler_MaterializesStatus",
    "TestInstanceTypeReconciler_StatusFreshOnLedgerChange",
];

pub fn run(v: &Vector) -> Outcome {
    let test = v.test_name();
    if !TESTS.contains(&test) {
        return not_modelled(test);
    }
    outcome(|| {
        let rule = shared_once_max(v)?;
        let pool_key: String = field(&v.input, "pool_key")?;
        // One Devices object per node; its extra `name` key is ignored.
        let nodes: Vec<Devices> = field(&v.input, "nodes")?;
        let devices: Vec<&Devices> = nodes.iter().collect();
        let got = views_json(&four_views(&devices, &pool_key, rule));
        Ok(judge(&v.expected, &got))
    })
}

/// The SH once-max rule the vector's contract names (default: the newest, `cards`).
fn shared_once_max(v: &Vector) -> Read<SharedOnceMax> {
    match v.contract("shared_once_max") {
        None | Some("cards") => Ok(SharedOnceMax::Cards),
        Some("shares") => Ok(SharedOnceMax::Shares),
        Some(other) => Err(Outcome::Malformed {
            field: "contract.shared_once_max".into(),
            problem: format!("unknown variant {other:?}: expected \"cards\" or \"shares\""),
        }),
    }
}

fn view_json(r: &ResourceView) -> Value {
    json!({
        "once_max_request": r.once_max_request,
        "remaining": r.remaining,
        "capacity": r.capacity,
    })
}

fn profiles_json(list: &[ProfileCount]) -> Value {
    list.iter()
        .map(|p| json!({ "name": p.name, "count": p.count }))
        .collect()
}

fn views_json(views: &FourViews) -> Value {
    let mut partitioned = view_json(&views.partitioned.view);
    if let Some(obj) = partitioned.as_object_mut() {
        obj.insert(
            "allocated_profiles".into(),
            profiles_json(&views.partitioned.allocated_profiles),
        );
        obj.insert(
            "remaining_profiles".into(),
            profiles_json(&views.partitioned.remaining_profiles),
        );
    }
    json!({
        "exclusive": view_json(&views.exclusive),
        "shared": view_json(&views.shared),
        "sliced": view_json(&views.sliced),
        "partitioned": partitioned,
    })
}
