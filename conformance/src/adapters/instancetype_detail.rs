//! `InstanceType.status.detail`: pkg/device/sliced_test.go (`AggregateAcceleratorSlicedDetail`)
//! and pkg/worker/controllers/worker/instance_type_test.go (`computeDetail`, `foldDetailCPU`);
//! research/chain.md §4, §9.5.

use serde::Deserialize;
use serde_json::{json, Value};

use model::detail::{aggregate_sliced_detail, fold_detail_cpu, instance_type_detail};
use model::devices::{Capability, Card, DeviceGroup, Devices, PartitionProfile};
use model::labels::Labels;
use model::nodefeature::local_queue_name;
use model::objects::{Detail, InstanceTypeSpec, SlicedDetail};
use model::pool::spec_schedule_labels;
use model::queue::{
    reconcile_instance_type_lifecycle, settle_pool_queue, QueueWorld, TypeObject, TypeWorld,
};
use model::webhook::default_instance_type_spec;
use model::Settings;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestAggregateAcceleratorSlicedDetail" => outcome(|| {
            let caps: Vec<Capability> = field(&v.input, "cards")?;
            Ok(judge(
                &v.expected,
                &sliced_json(&aggregate_sliced_detail(&caps)),
            ))
        }),
        "TestInstanceTypeReconciler_ComputesDetail" => outcome(|| computes_detail(v)),
        "TestFoldDetailCPU" => outcome(|| fold_cpu(v)),
        other => not_modelled(other),
    }
}

fn sliced_json(d: &SlicedDetail) -> Value {
    let profiles: Vec<Value> = d.physical.profiles.iter().map(profile_json).collect();
    json!({
        "logical": {
            "count": d.logical.count,
            "cores_percentage_overcommit": d.logical.cores_percentage_overcommit,
        },
        "physical": { "count": d.physical.count, "profiles": profiles },
    })
}

fn profile_json(p: &PartitionProfile) -> Value {
    let mut v = json!({ "name": p.name, "count": p.count });
    if let (Some(mib), Some(obj)) = (p.memory_mib, v.as_object_mut()) {
        obj.insert("memory_mib".into(), json!(mib));
    }
    v
}

/// One backing node of the pool: a group whose cards are given as bare capabilities.
#[derive(Deserialize)]
struct PoolDeviceInput {
    group: GroupInput,
}

#[derive(Deserialize)]
struct GroupInput {
    manufacturer: String,
    id: String,
    #[serde(default)]
    runtime_version: String,
    #[serde(default)]
    cards: Vec<Capability>,
}

impl GroupInput {
    /// The node's Devices: spec cards only (`card-<i>`), no ledger rows.
    fn into_devices(self) -> Devices {
        let cards = self
            .cards
            .into_iter()
            .zip(0u32..)
            .map(|(cap, index)| Card {
                id: format!("card-{index}"),
                index,
                capability: Some(cap),
                ledger: None,
            })
            .collect();
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: self.manufacturer,
                id: self.id,
                runtime_version: self.runtime_version,
                cards,
                ..DeviceGroup::default()
            }],
        }
    }
}

fn computes_detail(v: &Vector) -> Read<Outcome> {
    if v.input.get("spec").is_some() {
        return collapsed_generic_pool(v);
    }
    let notes: Labels = field(&v.input, "flavor_notes")?;
    let pool: Vec<PoolDeviceInput> = field(&v.input, "pool_devices")?;
    let devices: Vec<Devices> = pool.into_iter().map(|p| p.group.into_devices()).collect();
    let refs: Vec<&Devices> = devices.iter().collect();
    // The pool is the flavor's accelerator group (every backing node reports the same key).
    let accelerator_group = devices
        .iter()
        .flat_map(|d| d.groups.iter())
        .map(DeviceGroup::accelerator_key)
        .next()
        .unwrap_or_default();
    let spec = InstanceTypeSpec {
        acceleratable: notes.get("acceleratable").is_some_and(|a| a == "true"),
        accelerator_group: accelerator_group.into(),
        ..InstanceTypeSpec::default()
    };
    let first = instance_type_detail(&spec, false, Some(&notes), &refs);
    let second = instance_type_detail(&spec, false, Some(&notes), &refs);
    let got = json!({
        "detail": detail_json(&first),
        // A second reconcile writes only when the computed status differs (DeepEqual guard).
        "second_reconcile_writes_nothing": first == second,
    });
    Ok(judge(&v.expected, &got))
}

fn detail_json(d: &Detail) -> Value {
    json!({
        "manufacturer": d.manufacturer,
        "product": d.product,
        "family": d.family,
        "memory": d.memory,
        "cores": d.cores,
        "sliced_detail_logical_count": d.sliced_detail.logical.count,
        "cores_percentage_overcommit": d.sliced_detail.logical.cores_percentage_overcommit,
        "runtime_versions": d.runtime_versions,
        "runtime_version": d.runtime_version,
    })
}

/// The collapsed generic pool: an empty Detail (checked explicitly, since `{}` matches any
/// object), and the queue the InstanceType reconciler creates, settled with no flavors.
fn collapsed_generic_pool(v: &Vector) -> Read<Outcome> {
    let spec = default_instance_type_spec(&field::<InstanceTypeSpec>(&v.input, "spec")?);
    let flavors: Vec<Labels> = field_or_default(&v.input, "flavors")?;
    let settings = Settings::default();
    let detail = instance_type_detail(&spec, settings.aware_cpu_manufacturer, flavors.first(), &[]);
    if detail != Detail::default() {
        return Ok(Outcome::Fail {
            expected: "detail: {} (empty)".into(),
            got: format!("detail: {detail:?}"),
        });
    }
    let schedule = spec_schedule_labels(&spec, settings.aware_cpu_manufacturer);
    // The InstanceType reconciler creates the queue, then the reconcilers settle it with no flavor.
    let name = "gpustack--generic-linux-amd64";
    let world = TypeWorld {
        instance_type: Some(TypeObject {
            name: name.into(),
            schedule_labels: schedule,
            ..TypeObject::default()
        }),
        queue: None,
    };
    let step = reconcile_instance_type_lifecycle(&world, settings.era, &local_queue_name);
    let stop_policy = step.world.queue.as_ref().map(|q| {
        settle_pool_queue(
            &q.queue,
            spec.inactive,
            &[],
            &QueueWorld::default(),
            &settings,
        )
        .queue
        .stop_policy
        .name()
    });
    let got = json!({
        "detail": {},
        "queue_exists": step.world.queue.is_some(),
        "queue_stop_policy": stop_policy,
    });
    Ok(judge(&v.expected, &got))
}

fn fold_cpu(v: &Vector) -> Read<Outcome> {
    if let Some(note) = v.input.get("note") {
        return fold_one_note(v, note);
    }
    let notes: Vec<String> = field(&v.input, "notes")?;
    let accelerated: Vec<bool> = field(&v.input, "accelerated")?;
    if notes.len() != accelerated.len() {
        return Err(Outcome::Malformed {
            field: "accelerated".into(),
            problem: "expected one flag per note".into(),
        });
    }
    // Each note folds into an empty Detail; `detail: {}` asserts it stays untouched.
    for (raw, acc) in notes.iter().zip(&accelerated) {
        let mut detail = Detail::default();
        let changed = fold_detail_cpu(&mut detail, raw, *acc);
        if changed || detail != Detail::default() {
            return Ok(Outcome::Fail {
                expected: "detail untouched by an empty or malformed note".into(),
                got: format!("note {raw:?} (accelerated={acc}) changed it to {detail:?}"),
            });
        }
    }
    Ok(judge(&v.expected, &json!({ "detail": {} })))
}

fn fold_one_note(v: &Vector, note: &Value) -> Read<Outcome> {
    let accelerated: bool = field(&v.input, "accelerated")?;
    // The note is given as a JSON object; the flavor carries it as its JSON text.
    let raw = match note {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut detail = Detail::default();
    fold_detail_cpu(&mut detail, &raw, accelerated);
    // A CPU pool's `detail.cpu` holds the top-level inline CPU fields.
    let top_level = |k: &str| {
        if accelerated {
            String::new()
        } else {
            detail
                .cpu
                .get(k)
                .map_or_else(String::new, ToString::to_string)
        }
    };
    // An accelerated pool's `detail.cpu` is the accelerator's CPU (InstanceTypeAcceleratorCPU:
    // identity plus the CPU fields); a CPU pool has none.
    let accelerator_cpu: serde_json::Map<String, Value> = if accelerated {
        detail
            .cpu
            .iter()
            .map(|(k, v)| (snake_case(k), json!(v)))
            .collect()
    } else {
        serde_json::Map::new()
    };
    let got = json!({
        "accelerator_cpu": accelerator_cpu,
        "top_level_physical_cores": top_level("physicalCores"),
        "top_level_logical_cores": top_level("logicalCores"),
    });
    Ok(judge(&v.expected, &got))
}

/// A CRD field name (`physicalCores`, `cache.l1d`) in the vectors' snake case
/// (`physical_cores`, `cache.l1d`).
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
