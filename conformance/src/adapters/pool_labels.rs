//! Pool schedule labels as several Go tests see them: the InstanceType defaulting webhook
//! (pkg/worker/webhooks/worker/instance_type_test.go), the reconciler creating/aligning the
//! ClusterQueue and enqueueing InstanceTypes from a Devices change
//! (pkg/worker/controllers/worker/instance_type_test.go), and the RDMA label budget
//! (pkg/nodefeature/rdma_test.go).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome};
use crate::{Outcome, Vector};
use model::cluster::Era;
use model::labels::{Labels, NOTE_PREFIX, RESOURCE_TYPE};
use model::nodefeature::local_queue_name;
use model::objects::{ClusterQueue, InstanceTypeSpec};
use model::pool::{
    instance_types_served_by_devices, pool_schedule_labels, spec_schedule_labels,
    KUEUE_SELECTOR_LABEL_CAP, POOL_LABEL_BUDGET,
};
use model::queue::new_cluster_queue;
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
        .filter(|k| !present.contains_key(*k))
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

/// The reconciler's queue for one InstanceType.
fn run_align(v: &Vector) -> Outcome {
    outcome(|| {
        let it: NamedSpec = field(&v.input, "instance_type")?;
        let aware: bool = field_or_default(&v.input, AWARE_SETTING)?;
        let cq = created_cluster_queue(&it.name, &it.spec, aware);
        let notes: Labels = cq
            .annotations
            .iter()
            .filter_map(|(k, val)| Some((k.strip_prefix(NOTE_PREFIX)?.to_string(), val.clone())))
            .collect();
        let got = json!({
            "name": cq.name,
            "cohort": cq.cohort,
            "stop_policy": cq.stop_policy.name(),
            "annotations_include": cq.annotations,
            "labels_include": cq.labels,
            "resource_groups": cq.resource_groups.len(),
            "queue_res_type": cq.labels.get(RESOURCE_TYPE),
            "queue_notes_exclude": absent_of(&v.expected, "queue_notes_exclude", &notes),
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
}
