//! pkg/worker/controllers/worker/node_fit_label_test.go: the per-card fit labels a node carries,
//! the patch converging them, and the predicates that decide when to reconcile.
//!
//! Label sets and patches are compared exactly (same keys), not only as a subset: an extra fit
//! label on a node is a wrong answer.

use serde::Deserialize;
use serde_json::{json, Value};

use model::devices::{Capability, Card, DeviceGroup, Devices, Ledger};
use model::fit::{
    apply_label_patch, desired_fit_labels, fit_devices_updated, fit_label_patch,
    fit_signature_changed, node_update_moves_fit_labels, reconcile_fit_labels, LabelPatch,
};
use model::labels::Labels;

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome, Read};
use crate::{Outcome, Vector};

/// A `Devices` ledger as the vectors write it: cards may omit their id, and the object carries
/// its own managed mark.
#[derive(Deserialize)]
struct DevicesIn {
    #[serde(default)]
    managed_label: bool,
    #[serde(default)]
    groups: Vec<GroupIn>,
}

#[derive(Deserialize)]
struct GroupIn {
    manufacturer: String,
    id: String,
    #[serde(default)]
    cards: Vec<CardIn>,
}

#[derive(Deserialize)]
struct CardIn {
    #[serde(default)]
    id: String,
    #[serde(default)]
    index: u32,
    #[serde(default)]
    capability: Option<Capability>,
    #[serde(default)]
    ledger: Option<Ledger>,
}

impl DevicesIn {
    fn devices(self) -> (Devices, bool) {
        let groups = self
            .groups
            .into_iter()
            .map(|g| DeviceGroup {
                manufacturer: g.manufacturer,
                id: g.id,
                cards: g
                    .cards
                    .into_iter()
                    .map(|c| Card {
                        id: c.id,
                        index: c.index,
                        capability: c.capability,
                        ledger: c.ledger,
                    })
                    .collect(),
                ..DeviceGroup::default()
            })
            .collect();
        (Devices { groups }, self.managed_label)
    }
}

fn devices(v: &Value, key: &str) -> Read<(Devices, bool)> {
    field::<DevicesIn>(v, key).map(DevicesIn::devices)
}

fn patch_json(patch: &Option<LabelPatch>) -> Value {
    match patch {
        None => Value::Null,
        Some(p) => json!(p),
    }
}

/// Fails when `got.<key>` does not have exactly the keys of `expected.<key>`.
fn same_keys(expected: &Value, got: &Value, key: &str) -> Option<Outcome> {
    let keys = |v: &Value| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let (e, g) = (keys(expected), keys(got));
    (expected.get(key).is_some() && e != g).then(|| Outcome::Fail {
        expected: format!("{key} with exactly the keys {e:?}"),
        got: format!("{key} with the keys {g:?}: {got}"),
    })
}

fn judge_exact(expected: &Value, got: &Value, key: &str) -> Outcome {
    same_keys(expected, got, key).unwrap_or_else(|| judge(expected, got))
}

pub fn run(v: &Vector) -> Outcome {
    let input = &v.input;
    match v.test_name() {
        "TestDesiredFitLabels" => outcome(|| {
            let managed: bool = field(input, "node_managed")?;
            let (devs, _) = devices(input, "devices")?;
            let got = json!({ "labels": desired_fit_labels(managed, Some(&devs)) });
            Ok(judge_exact(&v.expected, &got, "labels"))
        }),
        "TestBuildFitLabelPatch" => outcome(|| {
            let desired: Labels = field(input, "desired")?;
            let current: Labels = field(input, "current")?;
            let got = json!({ "patch": patch_json(&fit_label_patch(&desired, &current)) });
            Ok(judge_exact(&v.expected, &got, "patch"))
        }),
        "TestFitSignatureChanged" => outcome(|| {
            let (old, _) = devices(input, "old")?;
            let (new, _) = devices(input, "new")?;
            let got = json!({ "changed": fit_signature_changed(&old, &new) });
            Ok(judge(&v.expected, &got))
        }),
        "TestNodeFitLabelNodeUpdated" => outcome(|| {
            let old: Labels = field(input, "old_node_labels")?;
            let new: Labels = field(input, "new_node_labels")?;
            let deleting: bool = field_or_default(input, "new_node_deleting")?;
            let got = json!({ "reconcile": node_update_moves_fit_labels(&old, &new, deleting) });
            Ok(judge(&v.expected, &got))
        }),
        "TestFitDevicesUpdated" => outcome(|| {
            let (old, old_managed) = devices(input, "old")?;
            let (new, new_managed) = devices(input, "new")?;
            let got =
                json!({ "reconcile": fit_devices_updated(&old, old_managed, &new, new_managed) });
            Ok(judge(&v.expected, &got))
        }),
        "TestNodeFitLabelReconciler_Reconcile" => outcome(|| {
            let labels: Labels = field(input, "node_labels")?;
            let (devs, _) = devices(input, "devices")?;
            let after = match reconcile_fit_labels(&labels, Some(&devs)) {
                Some(patch) => apply_label_patch(&labels, &patch),
                None => labels,
            };
            let second = reconcile_fit_labels(&after, Some(&devs));
            let got = json!({
                "node_labels": after,
                "second_reconcile_writes_nothing": second.is_none(),
            });
            Ok(judge_exact(&v.expected, &got, "node_labels"))
        }),
        other => not_modelled(other),
    }
}
