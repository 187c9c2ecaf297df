//! instance_type_test.go lifecycle tests: a deleted backing queue is recreated while the type
//! lives (and the reconcile only requeues while the old one still terminates); teardown deletes
//! the queue once and holds the type's finalizer until the queue is gone.

use serde_json::{json, Value};

use model::cluster::Era;
use model::labels::{CONTROLLED_FINALIZER, KUEUE_IN_USE_FINALIZER};
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

/// Whether the vector says the backing queue is already being deleted (any `queue_deleting`,
/// `queue_terminating` or `queue_deletion_timestamp` flag set).
fn queue_terminating(input: &Value) -> Read<bool> {
    for key in [
        "queue_deleting",
        "queue_terminating",
        "queue_deletion_timestamp",
    ] {
        match input.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => return Ok(*b),
            // A timestamp string means deletion was requested.
            Some(Value::String(s)) => return Ok(!s.is_empty()),
            Some(_) => return field::<bool>(input, key),
        }
    }
    Ok(false)
}

/// The starting world: a type that already holds its finalizer and queue when the vector names
/// the queue's finalizers (the teardown tests) or the queue is terminating, else a fresh type.
/// `RequeuesWhileBackingQueueTerminating` starts from a live type whose queue is mid-deletion,
/// held by Kueue's in-use finalizer (instance_type_test.go).
fn start(test: &str, input: &Value) -> Read<TypeWorld> {
    let mut finalizers: Option<Vec<String>> = field_or_default(input, "queue_finalizers")?;
    let terminating = queue_terminating(input)?
        || test == "TestInstanceTypeReconciler_RequeuesWhileBackingQueueTerminating";
    if terminating && finalizers.as_ref().is_none_or(Vec::is_empty) {
        finalizers = Some(vec![KUEUE_IN_USE_FINALIZER.into()]);
    }
    let mut it = TypeObject {
        name: IT_NAME.into(),
        ..TypeObject::default()
    };
    let queue = finalizers.map(|finalizers| {
        it.meta.finalizers = vec![CONTROLLED_FINALIZER.into()];
        BackingQueue {
            queue: new_cluster_queue(IT_NAME, &Default::default(), Era::E3),
            meta: Lifecycle {
                deleting: terminating,
                finalizers,
            },
        }
    });
    Ok(TypeWorld {
        instance_type: Some(it),
        queue,
    })
}

/// The reconciles a test performs when the vector lists no steps (instance_type_test.go).
fn default_steps(test: &str) -> Vec<String> {
    let steps: &[&str] = match test {
        "TestInstanceTypeReconciler_RecreatesDeletedClusterQueue" => {
            &["reconcile x2", "delete backing ClusterQueue", "reconcile"]
        }
        "TestInstanceTypeReconciler_TeardownFinalizer" => &["delete InstanceType", "reconcile x2"],
        "TestInstanceTypeReconciler_TeardownWaitsForQueueRemoval" => {
            &["delete InstanceType", "reconcile x3"]
        }
        _ => &["reconcile"],
    };
    steps.iter().map(|s| s.to_string()).collect()
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeReconciler_RecreatesDeletedClusterQueue"
        | "TestInstanceTypeReconciler_TeardownFinalizer"
        | "TestInstanceTypeReconciler_TeardownWaitsForQueueRemoval"
        | "TestInstanceTypeReconciler_RequeuesWhileBackingQueueTerminating" => outcome(|| {
            let steps: Vec<String> = match field_or_default(&v.input, "steps")? {
                Some(steps) => steps,
                None => default_steps(v.test_name()),
            };
            let mut world = start(v.test_name(), &v.input)?;
            let initial_queue = world.queue.clone();
            let mut requeue_after = None;
            for s in &steps {
                match parse_step(s)? {
                    Step::Reconcile(n) => {
                        for _ in 0..n {
                            let step = reconcile_instance_type_lifecycle(
                                &world,
                                Era::E3,
                                &local_queue_name,
                            );
                            world = step.world;
                            requeue_after = step.requeue_after;
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
                "requeue_after_positive": requeue_after.is_some_and(|r| r > 0),
                "requeue_after_seconds": requeue_after.unwrap_or(0),
                // Not recreated under the same name: the very queue that was terminating is
                // still there, still terminating.
                "same_terminating_queue_remains": world.queue.as_ref().is_some_and(|q| {
                    q.meta.deleting && initial_queue.as_ref() == Some(q)
                }),
            });
            Ok(judge(&v.expected, &got))
        }),
        other => not_modelled(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(test: &str, input: Value, expected: Value) -> Vector {
        let source = format!("pkg/worker/controllers/worker/instance_type_test.go#{test}");
        Vector::of(&source, input, expected)
    }

    /// A live type whose queue is mid-deletion requeues and leaves that same queue alone.
    #[test]
    fn a_terminating_queue_is_waited_for_not_recreated() {
        let test = "TestInstanceTypeReconciler_RequeuesWhileBackingQueueTerminating";
        let expected = json!({"requeue_after_positive": true, "same_terminating_queue_remains": true,
                              "queue_exists": true});
        for input in [
            json!({}),
            json!({"queue_finalizers": ["kueue.x-k8s.io/resource-in-use"], "queue_deleting": true,
                   "steps": ["reconcile"]}),
        ] {
            assert_eq!(
                run(&vector(test, input.clone(), expected.clone())),
                Outcome::Pass,
                "{input}"
            );
        }
        // Once the queue is gone the next reconcile recreates it and stops requeueing.
        let recreated = vector(
            "TestInstanceTypeReconciler_RecreatesDeletedClusterQueue",
            json!({}),
            json!({"queue_exists": true, "requeue_after_positive": true}),
        );
        assert!(matches!(run(&recreated), Outcome::Fail { .. }));
    }
}
