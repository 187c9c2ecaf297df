//! Pool schedule labels as several Go tests see them: the InstanceType defaulting webhook
//! (pkg/worker/webhooks/worker/instance_type_test.go), the reconciler creating/aligning the
//! ClusterQueue and enqueueing InstanceTypes from a Devices change
//! (pkg/worker/controllers/worker/instance_type_test.go), and the RDMA label budget and
//! selector isolation (pkg/nodefeature/rdma_test.go).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};
use model::cluster::Era;
use model::labels::{Labels, CONTROLLED_FINALIZER, FEATURE_PREFIX, NOTE_PREFIX, OS, RESOURCE_TYPE};
use model::nodefeature::local_queue_name;
use model::objects::{ClusterQueue, InstanceTypeSpec};
use model::pool::{
    instance_types_served_by_devices, pool_flavor_selector, pool_schedule_labels,
    spec_schedule_labels, KUEUE_SELECTOR_LABEL_CAP, POOL_LABEL_BUDGET,
};
use model::queue::{
    align_cluster_queue_labels, converge_inactive, new_cluster_queue,
    reconcile_instance_type_lifecycle, InactiveSync, TypeObject, TypeWorld,
};
use model::webhook::{default_instance_type_labels, default_instance_type_spec};

/// The awareness setting as the vectors spell it.
const AWARE_SETTING: &str = "setting_instance_type_aware_cpu_manufacturer";

/// Replaces the symbolic expected value `FormatLocalQueueName("<name>")` by its computed name.
fn resolve_symbolic(expected: &Value) -> Value {
    match expected {
        Value::String(s) => s
            .strip_prefix("FormatLocalQueueName(\"")
            .and_then(|rest| rest.strip_suffix("\")"))
            .map_or_else(
                || expected.clone(),
                |name| Value::from(local_queue_name(name)),
            ),
        Value::Array(items) => Value::Array(items.iter().map(resolve_symbolic).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve_symbolic(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// For an `*_exclude` check: the keys listed under `expected[key]` that are really absent from
/// `present` (equal to the list exactly when none of them is present).
fn absent_of(expected: &Value, key: &str, present: &Labels) -> Value {
    let listed = expected.get(key).and_then(Value::as_array);
    let absent: Vec<&str> = listed
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|k| !present.contains_key(k))
        .collect();
    json!(absent)
}

/// The ClusterQueue the InstanceTypeReconciler creates for an InstanceType (chain.md §10.1, E3).
fn created_cluster_queue(name: &str, spec: &InstanceTypeSpec, aware: bool) -> ClusterQueue {
    let labels = spec_schedule_labels(spec, aware);
    new_cluster_queue(name, &labels, Era::E3)
}

/// `{name, spec}` of an InstanceType in a vector.
#[derive(Deserialize)]
struct NamedSpec {
    name: String,
    #[serde(default)]
    spec: InstanceTypeSpec,
}

/// `{name, labels}` of an InstanceType in a vector.
#[derive(Deserialize)]
struct NamedLabels {
    name: String,
    #[serde(default)]
    labels: Labels,
}

/// The webhook's Default on one InstanceType.
fn run_default(v: &Vector) -> Outcome {
    outcome(|| {
        let name: String = field(&v.input, "name")?;
        let spec: InstanceTypeSpec = field(&v.input, "spec")?;
        let aware: bool = field_or_default(&v.input, AWARE_SETTING)?;
        let existing: Labels = field_or_default(&v.input, "existing_labels")?;
        let labels =
            default_instance_type_labels(&local_queue_name(&name), &spec, &existing, aware);
        let defaulted = default_instance_type_spec(&spec);
        let got = json!({
            "labels_include": labels,
            "labels_exclude": absent_of(&v.expected, "labels_exclude", &labels),
            "spec_displayName": defaulted.display_name,
        });
        Ok(judge(&resolve_symbolic(&v.expected), &got))
    })
}

/// What the tests read back from a queue, `expected` naming the keys an `*_exclude` checks.
fn queue_report(cq: &ClusterQueue, expected: &Value) -> Value {
    let notes: Labels = cq
        .annotations
        .iter()
        .filter_map(|(k, val)| Some((k.strip_prefix(NOTE_PREFIX)?.into(), val.clone())))
        .collect();
    let fungibility = cq.flavor_fungibility.as_ref();
    let preemption = cq.preemption.as_ref();
    json!({
        "name": cq.name,
        "cohort": cq.cohort,
        "stop_policy": cq.stop_policy.name(),
        "annotations_include": cq.annotations,
        "labels_include": cq.labels,
        "queue_labels_include": cq.labels,
        "queue_labels_exclude": absent_of(expected, "queue_labels_exclude", &cq.labels),
        "resource_groups": cq.resource_groups.len(),
        "queue_res_type": cq.labels.get(RESOURCE_TYPE),
        "queue_notes_exclude": absent_of(expected, "queue_notes_exclude", &notes),
        "flavor_fungibility_when_can_borrow": fungibility.map(|f| f.when_can_borrow.clone()),
        "flavor_fungibility_when_can_preempt": fungibility.map(|f| f.when_can_preempt.clone()),
        "preemption_reclaim_within_cohort": preemption.map(|p| p.reclaim_within_cohort.clone()),
        "preemption_borrow_within_cohort": preemption.map(|p| p.borrow_within_cohort_policy.clone()),
        "preemption_within_cluster_queue": preemption.map(|p| p.within_cluster_queue.clone()),
        "namespace_selector": cq.namespace_selector,
    })
}

/// The reconciler's queue for one InstanceType.
fn run_align(v: &Vector) -> Outcome {
    outcome(|| {
        let it: NamedSpec = field(&v.input, "instance_type")?;
        let aware: bool = field_or_default(&v.input, AWARE_SETTING)?;
        let cq = created_cluster_queue(&it.name, &it.spec, aware);
        Ok(judge(&v.expected, &queue_report(&cq, &v.expected)))
    })
}

/// `CreatesClusterQueue`: an admin InstanceType reconciled (three times by default) gets its
/// queue — schedule labels, the held empty plan, the isolation constants — keeps its finalizer,
/// and `syncInactive` does not mirror the NodeQueue's Hold into `spec.inactive`.
fn run_create(v: &Vector) -> Outcome {
    outcome(|| {
        let it: NamedSpec = field(&v.input, "instance_type")?;
        let aware: bool = field_or_default(&v.input, AWARE_SETTING)?;
        let reconciles: Option<usize> = field_or_default(&v.input, "reconciles")?;
        let inactive: bool = field_or_default(&it_spec_value(&v.input), "inactive")?;
        let mut world = TypeWorld {
            instance_type: Some(TypeObject {
                name: it.name.clone(),
                schedule_labels: spec_schedule_labels(&it.spec, aware),
                ..TypeObject::default()
            }),
            queue: None,
        };
        for _ in 0..reconciles.unwrap_or(3) {
            world = reconcile_instance_type_lifecycle(&world, Era::E3, &local_queue_name).world;
        }
        let Some(queue) = world.queue.as_ref().map(|q| q.queue.clone()) else {
            return Ok(judge(&v.expected, &json!({ "queue_exists": false })));
        };
        let synced = converge_inactive(&InactiveSync {
            stop_policy: queue.stop_policy,
            inactive,
            empty_plan_hold: queue
                .annotations
                .contains_key(model::labels::EMPTY_PLAN_HOLD),
            migrating: false,
            saved_stop_policy: queue.stop_policy,
            has_resource_groups: !queue.resource_groups.is_empty(),
        });
        let mut got = queue_report(&queue, &v.expected);
        if let Some(obj) = got.as_object_mut() {
            obj.insert("stop_policy".into(), json!(synced.stop_policy.name()));
            obj.insert("spec_inactive".into(), json!(synced.inactive));
            obj.insert(
                "instance_type_finalizer_held".into(),
                json!(world.instance_type.as_ref().is_some_and(|t| t
                    .meta
                    .finalizers
                    .iter()
                    .any(|f| f == CONTROLLED_FINALIZER))),
            );
            obj.insert("queue_exists".into(), json!(true));
        }
        Ok(judge(&v.expected, &got))
    })
}

/// The raw `instance_type.spec` object (for fields the spec type reads with defaults).
fn it_spec_value(input: &Value) -> Value {
    input
        .get("instance_type")
        .and_then(|it| it.get("spec"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The spec after the admin's edit: a spec patch (`spec_after`, `updated_spec`, `update`,
/// `after`, optionally nested under `spec`) merged over the original, or a new group given as
/// `new_accelerator_group` / `new_general_group` (any key naming the group).
fn edited_spec(input: &Value, before: &Value) -> Read<InstanceTypeSpec> {
    let mut spec = before.as_object().cloned().unwrap_or_default();
    let obj = input.as_object().cloned().unwrap_or_default();
    for (k, val) in &obj {
        if k == "instance_type" {
            continue;
        }
        match val {
            Value::Object(patch) => {
                let patch = patch
                    .get("spec")
                    .and_then(Value::as_object)
                    .unwrap_or(patch);
                for (pk, pv) in patch {
                    spec.insert(pk.clone(), pv.clone());
                }
            }
            Value::String(group) if k.contains("accelerator") && k.contains("group") => {
                spec.insert("acceleratorGroup".into(), json!(group));
            }
            Value::String(group) if k.contains("general") && k.contains("group") => {
                spec.insert("generalGroup".into(), json!(group));
            }
            _ => {}
        }
    }
    serde_json::from_value(Value::Object(spec)).map_err(|e| crate::Outcome::Malformed {
        field: "spec_after".into(),
        problem: e.to_string(),
    })
}

/// `RepointsFeatureKeyOnGroupChange`: the queue created for the type, then re-aligned to the
/// edited spec's schedule labels.
fn run_repoint(v: &Vector) -> Outcome {
    outcome(|| {
        let it: NamedSpec = field(&v.input, "instance_type")?;
        let aware: bool = field_or_default(&v.input, AWARE_SETTING)?;
        let before = created_cluster_queue(&it.name, &it.spec, aware);
        let spec = edited_spec(&v.input, &it_spec_value(&v.input))?;
        let after = align_cluster_queue_labels(&before, &spec_schedule_labels(&spec, aware));
        let pick = |key: &str| v.expected.get(key).cloned().unwrap_or(Value::Null);
        let got = json!({
            "before": queue_report(&before, &pick("before")),
            "after": queue_report(&after, &pick("after")),
        });
        Ok(judge(&v.expected, &got))
    })
}

/// The RDMA key prefix (`RDMAFeatureLabelPrefix`, pkg/nodefeature/rdma.go) and the three keys the
/// test sets: capable, distance, numa.
const RDMA_PREFIX: &str = "rdma.";
const RDMA_KEYS: [(&str, &str); 3] = [("capable", "true"), ("distance", "PIX"), ("numa", "0")];

/// `TestRDMALabelsAreNotPoolDiscriminators`: the widest pool's schedule labels plus the RDMA keys
/// (or the labels the vector gives) through `PoolFlavorSelector`; no RDMA key may reach the
/// selector, which must still carry the pool discriminators.
fn run_rdma_selector(v: &Vector) -> Outcome {
    outcome(|| {
        let text = |k: &str, d: &str| -> Read<String> {
            Ok(field_or_default::<Option<String>>(&v.input, k)?.unwrap_or_else(|| d.to_string()))
        };
        let flag = |k: &str| -> Read<bool> {
            Ok(field_or_default::<Option<bool>>(&v.input, k)?.unwrap_or(true))
        };
        let mut labels: Labels = match field_or_default::<Option<Labels>>(&v.input, "labels")? {
            Some(given) => given,
            None => pool_schedule_labels(
                flag("acceleratable")?,
                flag("cpu_aware")?,
                &text("general_group", "amd-25-1")?,
                &text("accelerator_group", "nvidia-h100")?,
                &text("os", "linux")?,
                &text("arch", "amd64")?,
            ),
        };
        let extra: Option<Labels> = field_or_default(&v.input, "extra_labels")?;
        match extra {
            Some(extra) => labels.extend(extra),
            None => {
                for (k, val) in RDMA_KEYS {
                    labels.insert(
                        format!("{FEATURE_PREFIX}{RDMA_PREFIX}{k}").into(),
                        val.into(),
                    );
                }
            }
        }
        let selector = pool_flavor_selector(&labels).unwrap_or_default();
        let rdma = |k: &str| k.starts_with(&format!("{FEATURE_PREFIX}{RDMA_PREFIX}"));
        let excludes = match v.expected.get("selector_excludes_rdma_keys") {
            Some(Value::Array(_)) => {
                absent_of(&v.expected, "selector_excludes_rdma_keys", &selector)
            }
            _ => json!(!selector.keys().any(|k| rdma(k))),
        };
        let got = json!({
            "selector_excludes_rdma_keys": excludes,
            "selector_includes": selector,
            "selector_carries_os": selector.contains_key(OS),
        });
        Ok(judge(&v.expected, &got))
    })
}

/// `expected[key]` as a sorted list, for order-free comparison.
fn sorted_list(expected: &Value, key: &str) -> Value {
    let mut expected = expected.clone();
    if let Some(Value::Array(items)) = expected.get_mut(key) {
        items.sort_by_key(Value::to_string);
    }
    expected
}

/// The InstanceTypes a Devices change enqueues.
fn run_enqueue(v: &Vector) -> Outcome {
    outcome(|| {
        let its: Vec<NamedLabels> = field(&v.input, "instance_types")?;
        let devices: Labels = field(&v.input, "devices_labels")?;
        let pairs: Vec<(String, Labels)> = its.into_iter().map(|i| (i.name, i.labels)).collect();
        let mut served = instance_types_served_by_devices(&devices, &pairs);
        served.sort_by_key(|name| json!(name).to_string());
        let got = json!({ "enqueued_any_order": served });
        Ok(judge(&sorted_list(&v.expected, "enqueued_any_order"), &got))
    })
}

/// The widest pool's schedule labels against Kueue's selector cap.
fn run_label_budget(v: &Vector) -> Outcome {
    outcome(|| {
        let f: String = field(&v.input, "fn")?;
        if f != "PoolScheduleLabels" {
            return Ok(not_modelled(&format!("{} ({f})", v.test_name())));
        }
        let labels = pool_schedule_labels(
            field(&v.input, "acceleratable")?,
            field(&v.input, "cpu_aware")?,
            &field::<String>(&v.input, "general_group")?,
            &field::<String>(&v.input, "accelerator_group")?,
            &field::<String>(&v.input, "os")?,
            &field::<String>(&v.input, "arch")?,
        );
        // The budget holds when the pool's labels plus the flavor `.count` key and the RDMA key
        // fit the cap; report the budget then, else the offending count.
        let count = labels.len();
        let fits =
            count + (KUEUE_SELECTOR_LABEL_CAP - POOL_LABEL_BUDGET) <= KUEUE_SELECTOR_LABEL_CAP;
        let got = json!({ "label_count_max": if fits { POOL_LABEL_BUDGET } else { count } });
        // `reason` is prose explaining the check, not a value to compare.
        let mut expected = v.expected.clone();
        if let Some(map) = expected.as_object_mut() {
            map.remove("reason");
        }
        Ok(judge(&expected, &got))
    })
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestInstanceTypeWebhook_DefaultStampsScheduleLabels"
        | "TestInstanceTypeWebhook_DefaultWritesNoDescriptor" => run_default(v),
        "TestInstanceTypeReconciler_AlignsClusterQueue" => run_align(v),
        "TestInstanceTypeReconciler_CreatesClusterQueue" => run_create(v),
        "TestInstanceTypeReconciler_RepointsFeatureKeyOnGroupChange" => run_repoint(v),
        "TestRDMALabelsAreNotPoolDiscriminators" => run_rdma_selector(v),
        "TestInstanceTypeReconciler_EnqueuesInstanceTypesFromDevices" => run_enqueue(v),
        "TestRDMALabelBudget" => run_label_budget(v),
        other => not_modelled(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_names_resolve() {
        let v =
            json!({"a": ["FormatLocalQueueName(\"gpustack--nvidia-tesla-t4-linux-amd64\")", "x"]});
        assert_eq!(
            resolve_symbolic(&v),
            json!({"a": ["gpustack-fnv64-6b371caa2da0b799", "x"]})
        );
    }

    fn vector(source: &str, input: Value, expected: Value) -> Vector {
        Vector::of(source, input, expected)
    }

    const IT_TEST: &str = "pkg/worker/controllers/worker/instance_type_test.go#";

    #[test]
    fn a_created_queue_is_held_isolated_and_the_type_keeps_its_finalizer() {
        let mut v = vector(
            &format!("{IT_TEST}TestInstanceTypeReconciler_CreatesClusterQueue"),
            json!({"instance_type": {"name": "gpustack--generic-linux-amd64", "spec": {
                "generalGroup": "generic", "os": "linux", "arch": "amd64",
                "unitResources": {"cpu": "1", "ram": "8Gi"}, "localStorage": "64Gi"}}}),
            json!({
                "queue_labels_include": {"feature.gpustack.ai/acceleratable": "false"},
                "queue_labels_exclude": ["general.feature.gpustack.ai/generic"],
                "stop_policy": "Hold",
                "annotations_include": {"topology.gpustack.ai/empty-plan-hold": "true"},
                "spec_inactive": false,
                "resource_groups": 0,
                "cohort": "",
                "flavor_fungibility_when_can_borrow": "TryNextFlavor",
                "preemption_reclaim_within_cohort": "Never",
                "preemption_within_cluster_queue": "LowerPriority",
                "queue_notes_exclude": ["unitCPU", "unitRAM", "localStorage"],
                "instance_type_finalizer_held": true
            }),
        );
        assert_eq!(run(&v), Outcome::Pass);
        v.expected = json!({"preemption_within_cluster_queue": "Never"});
        assert!(matches!(run(&v), Outcome::Fail { .. }));
        v.expected = json!({"queue_labels_exclude": ["feature.gpustack.ai/acceleratable"]});
        assert!(matches!(run(&v), Outcome::Fail { .. }));
    }

    #[test]
    fn a_group_change_repoints_the_feature_key() {
        let spec = json!({"acceleratorGroup": "nvidia-a10g", "acceleratable": true,
                          "os": "linux", "arch": "amd64"});
        let expected = json!({
            "before": {"queue_labels_include": {"acceleratable.feature.gpustack.ai/nvidia-a10g": "true"}},
            "after": {
                "queue_labels_include": {"acceleratable.feature.gpustack.ai/nvidia-a10g-v2": "true"},
                "queue_labels_exclude": ["acceleratable.feature.gpustack.ai/nvidia-a10g"]
            }
        });
        let source = format!("{IT_TEST}TestInstanceTypeReconciler_RepointsFeatureKeyOnGroupChange");
        for edit in [
            json!({"spec_after": {"acceleratorGroup": "nvidia-a10g-v2"}}),
            json!({"new_accelerator_group": "nvidia-a10g-v2"}),
        ] {
            let mut input = json!({"instance_type": {"name": "gpustack--nvidia-a10g-linux-amd64",
                                                     "spec": spec}});
            for (k, val) in edit.as_object().unwrap() {
                input[k] = val.clone();
            }
            let v = vector(&source, input, expected.clone());
            assert_eq!(run(&v), Outcome::Pass, "{edit}");
        }
        let unchanged = vector(
            &source,
            json!({"instance_type": {"name": "gpustack--nvidia-a10g-linux-amd64", "spec": spec}}),
            expected,
        );
        assert!(matches!(run(&unchanged), Outcome::Fail { .. }));
    }

    #[test]
    fn rdma_keys_stay_out_of_the_pool_selector() {
        let source = "pkg/nodefeature/rdma_test.go#TestRDMALabelsAreNotPoolDiscriminators";
        let v = vector(
            source,
            json!({"fn": "PoolFlavorSelector", "acceleratable": true, "cpu_aware": true,
                   "general_group": "amd-25-1", "accelerator_group": "nvidia-h100",
                   "os": "linux", "arch": "amd64"}),
            json!({"selector_excludes_rdma_keys": true,
                   "selector_includes": {"kubernetes.io/os": "linux",
                                         "acceleratable.feature.gpustack.ai/nvidia-h100": "true"}}),
        );
        assert_eq!(run(&v), Outcome::Pass);
        let listed = vector(
            source,
            json!({}),
            json!({"selector_excludes_rdma_keys": ["feature.gpustack.ai/rdma.capable",
                                                   "feature.gpustack.ai/rdma.numa"]}),
        );
        assert_eq!(run(&listed), Outcome::Pass);
        // A true feature key still reaches the selector: it is not passing by selecting nothing.
        let leaking = vector(
            source,
            json!({"extra_labels": {"general.feature.gpustack.ai/rdma.capable": "true"}}),
            json!({"selector_includes": {"general.feature.gpustack.ai/rdma.capable": "true"}}),
        );
        assert_eq!(run(&leaking), Outcome::Pass);
    }
}
