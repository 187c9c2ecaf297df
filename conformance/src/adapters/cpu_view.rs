//! pkg/worker/controllers/worker/instance_type_test.go `TestClusterQueueCPUResource`:
//! `getCPUResource(cq, withOvercommit)` (research/chain.md §9.4; corrections.md 7).

use serde::Deserialize;
use serde_json::json;

use model::views::{cpu_view, CpuFlavorUsage, CPU_OVERCOMMIT_BASE_MILLIS};

use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

/// A flavor row of the input; `reserved_cpu: null` = no reservation entry for the flavor.
#[derive(Deserialize)]
struct FlavorInput {
    name: String,
    nominal_cpu: i64,
    #[serde(default)]
    reserved_cpu: Option<i64>,
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestClusterQueueCPUResource" => outcome(|| {
            let flavors: Vec<FlavorInput> = field(&v.input, "flavors")?;
            // The test's second argument is `withOvercommit` (corrections.md 7).
            let with_overcommit: bool = field(&v.input, "second_bool_arg")?;
            let usage: Vec<CpuFlavorUsage> = flavors
                .into_iter()
                .map(|f| CpuFlavorUsage {
                    name: f.name,
                    nominal_cpu: f.nominal_cpu,
                    reserved_cpu: f.reserved_cpu.unwrap_or(0),
                })
                .collect();
            let view = cpu_view(&usage, with_overcommit, CPU_OVERCOMMIT_BASE_MILLIS);
            let got = json!({
                "cpu": {
                    "once_max_request": view.once_max_request,
                    "remaining": view.remaining,
                    "capacity": view.capacity,
                }
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
