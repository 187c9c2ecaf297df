//! instance_type_test.go `TestInstanceTypeReconciler_PublishesEntranceOutsideBothBranches`: the
//! entrance is published whatever the branch (accelerated or CPU, queue open or draining).

use serde_json::json;

use model::cluster::Era;
use model::objects::StopPolicy;
use model::queue::{
    new_cluster_queue, reconcile_instance_type_lifecycle, BackingQueue, Lifecycle, TypeObject,
    TypeWorld,
};

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a-64 of `s` as 16 lowercase hex digits. Mirrors `model::nodefeature`'s LocalQueue naming
/// (chain.md §3.3), kept here until that function lands on this branch.
pub(crate) fn fnv1a64_hex(s: &str) -> String {
    let h = s.bytes().fold(FNV_OFFSET, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    });
    format!("{h:016x}")
}

/// `FormatLocalQueueName`: `gpustack-fnv64-<FNV-1a-64(cq)>`, 31 chars (chain.md §3.3).
pub(crate) fn local_queue_name(cluster_queue: &str) -> String {
    format!("gpustack-fnv64-{}", fnv1a64_hex(cluster_queue))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// chain.md §3.3 verified examples.
    #[test]
    fn local_queue_names_match_the_walkthrough() {
        assert_eq!(
            local_queue_name("gpustack--generic-linux-amd64"),
            "gpustack-fnv64-3b93966fd73eb9ec"
        );
        assert_eq!(
            local_queue_name("gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64"),
            "gpustack-fnv64-029fd9550e0c70bd"
        );
        assert_eq!(local_queue_name("x").len(), 31);
    }
}
