//! node_devices_inflight_test.go: in-flight accounting (admission_inflight.json).
//!
//! The vectors describe parts of their fixtures in words; each is read as follows.
//! - `pods_charging_ledger` (the only wording used): the node's ledger is produced by one Pod
//!   per not-wholly-free card, of no Workload (`admission_reconcile::pods_charging_ledger`).
//! - `published_status` "node-b card reads wholly free (device manager has not rebuilt it)":
//!   the given (free) ledger is what is published; the Pods listed under
//!   `bound_pods_on_node_b_charging_card0_sliced_units` are bound to node-b, belong to the
//!   other Workload, are charged, and each holds that many sliced units on node-b's first card.
//! - `between` "first's stored check is reset to Pending (stale cache view)".
//! - A Workload without `flavor` is on the judged Workload's flavor; a missing `flavor` object
//!   is that flavor selecting the node by the node's own labels; a Workload without
//!   `conditions_true` holds a quota reservation and is admitted as its `admitted` says.
//! - `TestPodCharged`'s three Pods are built from their descriptions.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};

use model::admission::demands::HostPods;
use model::admission::inflight::{CardCharge, ALLOCATION_ANNOTATION};
use model::admission::{
    pod_charged, CheckState, FlavorObject, NodeDevices, NodeDevicesAdmission, PodRecord,
    PodSetAssignment, PodView, WorkloadRecord, World,
};
use model::devices::Mode;
use model::resources::classify;
use model::workload::{Container, PodSet, ResourceList};

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

use super::admission::message_properties;
use super::admission_reconcile::{after_reconcile, apply_conditions, pods_charging_ledger};

const POD_PER_CARD: &str =
    "one Pod per not-wholly-free card holding (D - remaining) units in the card's mode";
const PUBLISHED_STALE: &str = "node-b card reads wholly free (device manager has not rebuilt it)";
const RESET_TO_PENDING: &str = "first's stored check is reset to Pending (stale cache view)";

/// A Workload as these vectors spell it: one pod set `main` of `pods` pods, one container.
#[derive(Deserialize)]
struct WorkloadInput {
    #[serde(default)]
    name: String,
    tas_hostname: String,
    pods: u32,
    requests: ResourceList,
    #[serde(default)]
    check_state: Option<CheckState>,
    #[serde(default)]
    flavor: Option<String>,
    #[serde(default)]
    conditions_true: Option<Vec<String>>,
    #[serde(default)]
    admitted: bool,
    #[serde(default)]
    bound_pods_on_node_b_charging_card0_sliced_units: Vec<i64>,
}

/// `credits.gpustack.ai/<manufacturer>` of the first accelerator key requested.
fn credits_resource(requests: &ResourceList) -> String {
    let m = requests
        .keys()
        .find_map(|k| classify(k).map(|r| r.manufacturer))
        .unwrap_or_else(|| "nvidia".into());
    format!("credits.gpustack.ai/{m}")
}

impl WorkloadInput {
    fn to_model(&self, name: &str, default_flavor: &str) -> WorkloadRecord {
        let flavor = self.flavor.clone().unwrap_or_else(|| default_flavor.into());
        let mut w = WorkloadRecord {
            name: name.into(),
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: self.pods,
                containers: vec![Container {
                    name: "c".into(),
                    requests: self.requests.clone(),
                    ..Container::default()
                }],
                ..PodSet::default()
            }],
            admission: Some(vec![PodSetAssignment {
                pod_set: "main".into(),
                flavors: BTreeMap::from([(credits_resource(&self.requests), flavor)]),
                hosts: vec![HostPods {
                    hostname: self.tas_hostname.clone(),
                    pods: self.pods,
                }],
            }]),
            check: self.check_state,
            ..WorkloadRecord::default()
        };
        match &self.conditions_true {
            Some(c) => apply_conditions(&mut w, c),
            None => {
                w.quota_reserved = true;
                w.admitted = self.admitted;
            }
        }
        w
    }

    /// The other Workload's bound, charged Pods on node-b's first card.
    fn bound_pods(&self, owner: &str, node: &NodeDevices) -> Vec<PodRecord> {
        let card = node
            .devices
            .groups
            .first()
            .and_then(|g| g.cards.first())
            .map(|c| c.id.clone())
            .unwrap_or_default();
        self.bound_pods_on_node_b_charging_card0_sliced_units
            .iter()
            .enumerate()
            .map(|(i, &units)| PodRecord {
                name: format!("{owner}-{i}"),
                node: node.name.clone(),
                workload: owner.into(),
                pod_set: "main".into(),
                charged: true,
                charges: vec![CardCharge {
                    card_id: card.clone(),
                    mode: Mode::Sliced,
                    units,
                    profile: String::new(),
                }],
            })
            .collect()
    }
}

/// A wording the adapter reads must be the one it knows.
fn known_wording(v: &Value, key: &str, known: &str) -> Read<()> {
    let s: String = field(v, key)?;
    if s == known {
        Ok(())
    } else {
        Err(Outcome::NotImplemented(format!(
            "unknown {key} wording `{s}`"
        )))
    }
}

/// The flavor of the vector, or the named flavor selecting `node` by its own labels.
fn flavor_or_node_selector(v: &Value, name: &str, node: &NodeDevices) -> Read<FlavorObject> {
    match v.get("flavor") {
        Some(_) => field(v, "flavor"),
        None => Ok(FlavorObject {
            name: name.into(),
            node_labels: node.labels.clone(),
        }),
    }
}

fn model_error(e: model::ModelError) -> Outcome {
    Outcome::Malformed {
        field: "workloads".into(),
        problem: e.to_string(),
    }
}

/// Judges the Workloads in order on one node, writing each verdict back as the controller
/// does, and reports each step.
fn judging_sequence(v: &Vector) -> Read<Outcome> {
    let node: NodeDevices = field(&v.input, "node")?;
    let inputs: Vec<WorkloadInput> = field(&v.input, "workloads_in_judging_order")?;
    if v.input.get("pods_charging_ledger").is_some() {
        known_wording(&v.input, "pods_charging_ledger", POD_PER_CARD)?;
    }
    let reset_between = match v.input.get("between") {
        Some(_) => {
            known_wording(&v.input, "between", RESET_TO_PENDING)?;
            true
        }
        None => false,
    };
    let flavor_name = inputs
        .first()
        .and_then(|w| w.flavor.clone())
        .unwrap_or_default();
    let flavor = flavor_or_node_selector(&v.input, &flavor_name, &node)?;
    let mut world = World {
        flavors: vec![flavor],
        pods: pods_charging_ledger(std::slice::from_ref(&node)),
        devices: vec![node],
        workloads: inputs
            .iter()
            .map(|w| w.to_model(&w.name, &flavor_name))
            .collect(),
    };
    let expected_steps: Vec<Value> = field(&v.expected, "sequence")?;
    let mut controller = NodeDevicesAdmission::default();
    let mut steps = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let before = world.workloads.get(i).and_then(|w| w.check);
        let r = controller
            .reconcile(&world, &input.name)
            .map_err(model_error)?;
        let (state, message) = after_reconcile(before, &r);
        if let Some(w) = world.workloads.get_mut(i) {
            w.check = state;
            if reset_between && i == 0 {
                w.check = Some(CheckState::Pending);
            }
        }
        let mut step = serde_json::Map::new();
        step.insert("judge".into(), json!(input.name));
        step.insert("check_state".into(), json!(state));
        if let Some(e) = expected_steps.get(i) {
            step.extend(message_properties(e, &message)?);
        }
        steps.push(Value::Object(step));
    }
    Ok(judge(&v.expected, &json!({ "sequence": steps })))
}

/// Judges `self` beside one other Workload.
fn beside_other(v: &Vector) -> Read<Outcome> {
    let nodes: Vec<NodeDevices> = match v.input.get("nodes") {
        Some(_) => field(&v.input, "nodes")?,
        None => vec![field(&v.input, "node")?],
    };
    if v.input.get("published_status").is_some() {
        known_wording(&v.input, "published_status", PUBLISHED_STALE)?;
    }
    let me: WorkloadInput = field(&v.input, "self")?;
    let other: WorkloadInput = field(&v.input, "other_workload")?;
    let self_name = if me.name.is_empty() {
        "self".to_string()
    } else {
        me.name.clone()
    };
    let other_name = if other.name.is_empty() {
        "other".to_string()
    } else {
        other.name.clone()
    };
    let flavor_name = me.flavor.clone().unwrap_or_default();
    let anchor = nodes.first().cloned().unwrap_or_default();
    let flavor = flavor_or_node_selector(&v.input, &flavor_name, &anchor)?;
    let node_b = nodes
        .iter()
        .find(|n| n.name == "node-b")
        .cloned()
        .unwrap_or_default();
    let world = World {
        flavors: vec![flavor],
        pods: other.bound_pods(&other_name, &node_b),
        workloads: vec![
            other.to_model(&other_name, &flavor_name),
            me.to_model(&self_name, &flavor_name),
        ],
        devices: nodes,
    };
    let before = me.check_state;
    let r = NodeDevicesAdmission::default()
        .reconcile(&world, &self_name)
        .map_err(model_error)?;
    let (state, message) = after_reconcile(before, &r);
    let mut got = serde_json::Map::new();
    got.insert("self_check_state".into(), json!(state));
    got.extend(message_properties(&v.expected, &message)?);
    Ok(judge(&v.expected, &Value::Object(got)))
}

/// The Pod each `TestPodCharged` description names.
fn described_pod(description: &str) -> Option<PodView> {
    let gpu = |name: &str| Container {
        name: name.into(),
        limits: ResourceList::from([("nvidia.com/gpu".to_string(), "1".to_string())]),
        ..Container::default()
    };
    let record = |raw: &str| model::labels::from_pairs(&[(ALLOCATION_ANNOTATION, raw)]);
    Some(match description {
        "container c limits nvidia.com/gpu:1 with an allocation record for c; plus a sidecar container asking nothing" => PodView {
            containers: vec![gpu("c"), Container { name: "sidecar".into(), ..Container::default() }],
            annotations: record(r#"{"c":{"nvidia.com/gpu":["gpu-0"]}}"#),
        },
        "allocation annotation is the string '{'" => PodView {
            containers: vec![gpu("c")],
            annotations: record("{"),
        },
        "container asks nvidia.com/gpu:1, Pod has no allocation annotation" => PodView {
            containers: vec![gpu("c")],
            annotations: Default::default(),
        },
        _ => return None,
    })
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestNodeDevicesAdmission_CountsInflightWorkloads"
        | "TestNodeDevicesAdmission_CountsReadyTheCacheHasNotShown" => {
            outcome(|| judging_sequence(v))
        }
        "TestNodeDevicesAdmission_InflightAccounting"
        | "TestNodeDevicesAdmission_HoldsBehindAnInflightFlavorItCannotResolve" => {
            outcome(|| beside_other(v))
        }
        "TestPodCharged" => outcome(|| {
            let description: String = field_or_default(&v.input, "pod")?;
            let Some(pod) = described_pod(&description) else {
                return Err(Outcome::NotImplemented(format!(
                    "no Pod built for `{description}`"
                )));
            };
            Ok(judge(&v.expected, &json!({ "charged": pod_charged(&pod) })))
        }),
        other => not_modelled(other),
    }
}
