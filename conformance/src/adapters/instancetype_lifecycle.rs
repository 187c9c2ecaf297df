//! instance_type_test.go lifecycle tests: a deleted backing queue is recreated while the type
//! lives; teardown deletes the queue once and holds the type's finalizer until the queue is gone.

use serde_json::{json, Value};

use model::cluster::Era;
use model::labels::CONTROLLED_FINALIZER;
use model::queue::{
    new_cluster_queue, reconcile_instance_type_lifecycle, BackingQueue, Lifecycle, TypeObject,
    TypeWorld,
};

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};
use model::nodefeature::local_queue_name;

const IT_NAME: &str = "gpustack--generic-linux-amd64";

/// One test step, as the vector words it.
enum Step {
    Reconcile(usize),
    DeleteQueue,
    DeleteType,
}

fn parse_step(text: &str) -> Read<Step> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("reconcile") {
        let n = match rest.trim().strip_prefix('x') {
            Some(k) => k.trim().parse().map_err(|_| bad_step(t))?,
            None if rest.trim().is_empty() => 1,
            None => return Err(bad_step(t)),
        };
        return Ok(Step::Reconcile(n));
    }
    match t {
        "delete backing ClusterQueue" => Ok(Step::DeleteQueue),
        "delete InstanceType" => Ok(Step::DeleteType),
        _ => Err(bad_step(t)),
    }
}

fn bad_step(t: &str) -> Outcome {
    Outcome::Malformed {
        field: "steps".into(),
        problem: format!("unknown step {t:?}"),
    }
}

/// The starting world: a type that already holds its finalizer and queue when the vector names
/// the queue's finalizers (the teardown tests), else a fresh type.
fn start(input: &Value) -> Read<TypeWorld> {
    let finalizers: Option<Vec<String>> = field_or_default(input, "queue_finalizers")?;
    let mut it = TypeObject {
        name: IT_NAME.into(),
        ..TypeObject::default()
    };
    let queue = finalizers.map(|finalizers| {
        it.meta.finalizers = vec![CONTROLLED_FINALIZER.into()];
        BackingQueue {
            queue: new_cluster_queue(IT_NAME, &Default::default(), Era::E3),
            meta: Lifecycle {
                deleting: false,
                finalizers,
            },
        }
    });
    Ok(TypeWorld {
        instance_type: Some(it),
        queue,
    })
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeReconciler_RecreatesDeletedClusterQueue"
        | "TestInstanceTypeReconciler_TeardownFinalizer"
        | "TestInstanceTypeReconciler_TeardownWaitsForQueueRemoval" => outcome(|| {
            let steps: Vec<String> = field(&v.input, "steps")?;
            let mut world = start(&v.input)?;
            for s in &steps {
                match parse_step(s)? {
                    Step::Reconcile(n) => {
                        for _ in 0..n {
                            world = reconcile_instance_type_lifecycle(
                                &world,
                                Era::E3,
                                &local_queue_name,
                            )
                            .world;
                        }
                    }
                    Step::DeleteQueue => world.delete_queue(),
                    Step::DeleteType => world.delete_instance_type(),
                }
            }
            let got = json!({
                "queue_exists": world.queue.is_some(),
                "queue_deletion_requested": world.queue.as_ref().is_some_and(|q| q.meta.deleting),
                "instance_type_exists": world.instance_type.is_some(),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}
