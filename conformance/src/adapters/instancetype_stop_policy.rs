//! instance_type_test.go `TestInstanceTypeReconciler_SyncInactive`: the Inactive↔StopPolicy
//! truth table, checked at the fixpoint and for stability there.

use serde_json::json;

use model::queue::{converge_inactive, sync_inactive, InactiveSync};

use super::instancetype_entrance::stop_policy_of;
use crate::compare::judge;
use crate::input::{field, not_modelled, outcome};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeReconciler_SyncInactive" => outcome(|| {
            let policy: Option<String> = field(&v.input, "start_stop_policy")?;
            let start = InactiveSync {
                stop_policy: stop_policy_of(policy.as_deref())?,
                inactive: field(&v.input, "spec_inactive")?,
                empty_plan_hold: field(&v.input, "empty_plan_hold_marker")?,
                migrating: field(&v.input, "topology_migration_draining")?,
                has_resource_groups: field(&v.input, "queue_has_resource_groups")?,
                ..InactiveSync::default()
            };
            let end = converge_inactive(&start);
            // Stable: one more pass over the converged output changes nothing.
            let stable = sync_inactive(&end) == end;
            let got = json!({
                "stop_policy": end.stop_policy.name(),
                "spec_inactive": end.inactive,
                "empty_plan_hold_marker": end.empty_plan_hold,
                "stable_after_convergence": stable,
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
