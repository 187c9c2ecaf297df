//! instance_type_test.go `TestInstanceTypeReconciler_PublishesEntranceOutsideBothBranches`: the
//! entrance is published whatever the branch (accelerated or CPU, queue open or draining).

use serde_json::json;

use model::cluster::Era;
use model::objects::StopPolicy;
use model::queue::{
    new_cluster_queue, reconcile_instance_type_lifecycle, BackingQueue, Lifecycle, TypeObject,
    TypeWorld,
};

use model::nodefeature::local_queue_name;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

/// Reads a stop policy name; `null`/absent is the unset policy (None).
pub(crate) fn stop_policy_of(name: Option<&str>) -> Read<StopPolicy> {
    model::queue::parse_stop_policy(name.unwrap_or("")).ok_or_else(|| Outcome::Malformed {
        field: "stop_policy".into(),
        problem: format!("unknown stop policy {name:?}: expected None, Hold or HoldAndDrain"),
    })
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeReconciler_PublishesEntranceOutsideBothBranches" => outcome(|| {
            let acceleratable: bool = field(&v.input, "acceleratable")?;
            let policy: Option<String> = field_or_default(&v.input, "queue_stop_policy")?;
            let stop_policy = stop_policy_of(policy.as_deref())?;
            // The type's name only feeds the hash; the pool shape follows the branch.
            let name = if acceleratable {
                "gpustack--nvidia-a10g-linux-amd64"
            } else {
                "gpustack--generic-linux-amd64"
            };
            let mut queue = new_cluster_queue(name, &Default::default(), Era::E3);
            queue.stop_policy = stop_policy;
            let world = TypeWorld {
                instance_type: Some(TypeObject {
                    name: name.into(),
                    ..TypeObject::default()
                }),
                queue: Some(BackingQueue {
                    queue,
                    meta: Lifecycle::default(),
                }),
            };
            let step = reconcile_instance_type_lifecycle(&world, Era::E3, &local_queue_name);
            let entrance = step
                .world
                .instance_type
                .map(|t| t.entrance)
                .unwrap_or_default();
            let got = json!({
                "status_entrance_non_empty": !entrance.is_empty(),
                "status_entrance_length": entrance.len(),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
