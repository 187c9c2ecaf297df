//! api/worker/v1alpha1/instance_type_test.go (pool-level sliceable predicates) and
//! pkg/device/population_test.go (per-card population predicates).

use serde::Deserialize;
use serde_json::json;

use model::detail::{pool_is_logically_sliceable, pool_is_physically_sliceable};
use model::devices::Capability;
use model::objects::{LogicalDetail, PhysicalDetail, SlicedDetail};

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

/// The pool's aggregate, reduced to the two counts the predicates read.
#[derive(Deserialize)]
struct PoolDetailInput {
    logical_count: u64,
    physical_count: u64,
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeAcceleratorDetailSliceablePredicates" => outcome(|| {
            let d: PoolDetailInput = field(&v.input, "pool_detail")?;
            let detail = SlicedDetail {
                logical: LogicalDetail {
                    count: d.logical_count,
                    ..LogicalDetail::default()
                },
                physical: PhysicalDetail {
                    count: d.physical_count,
                    ..PhysicalDetail::default()
                },
            };
            let got = json!({
                "logically_sliceable": pool_is_logically_sliceable(&detail),
                "physically_sliceable": pool_is_physically_sliceable(&detail),
            });
            Ok(judge(&v.expected, &got))
        }),
        "TestPopulationPredicates" => outcome(|| {
            let cap: Capability = field(&v.input, "card_capability")?;
            let got = json!({
                "logically_sliceable": cap.is_logically_sliceable(),
                "partitioned": cap.is_partitioned(),
                "whole_accelerator_capable": cap.is_whole_card_capable(),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
