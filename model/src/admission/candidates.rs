//! Which cards a demand may use: flavor scopes (accelerator key + node batch), the candidate
//! Devices of the assigned flavors, and the flattened card list (admission.md §6.4;
//! node_devices_admission.go `candidateDevices`, `collectCards`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::devices::{Capability, Devices, Ledger};
use crate::labels::{Labels, ACCELERATABLE_PREFIX};
use crate::nodefeature::accelerator_keys;

/// Suffix of a flavor's node-batch label (`acceleratable.feature.gpustack.ai/<aKey>.count`).
pub const COUNT_LABEL_SUFFIX: &str = ".count";
/// The batch of a flavor whose `.count` cannot be read: covers no card.
pub const UNREADABLE_BATCH: i64 = -1;

/// A ResourceFlavor as gate 3 reads it: its name and `spec.nodeLabels`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct FlavorObject {
    pub name: String,
    pub node_labels: Labels,
}

/// A node's `Devices` object with its labels and its Node's `kubernetes.io/hostname`
/// (empty when the Node is missing).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeDevices {
    pub name: String,
    pub hostname: String,
    pub labels: Labels,
    #[serde(flatten)]
    pub devices: Devices,
}

/// One assigned flavor's claim on a node: the accelerator key it pins and the node batch
/// (0 = any, −1 = unreadable); node_devices_admission.go `flavorScope`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct FlavorScope {
    pub flavor: String,
    pub accelerator_key: String,
    pub accelerator_count: i64,
}

/// One node's Devices with the assigned flavors whose selector matched it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScopedDevices {
    pub name: String,
    pub hostname: String,
    #[serde(flatten)]
    pub devices: Devices,
    pub scopes: Vec<FlavorScope>,
}

/// The single accelerator key a flavor pins (`acceleratable…/<aKey>=true`), empty when it
/// pins none or several; node_devices_admission.go `flavorAcceleratorKey`.
pub fn flavor_accelerator_key(node_labels: &Labels) -> String {
    match accelerator_keys(node_labels).as_slice() {
        [one] => one.clone(),
        _ => String::new(),
    }
}

/// The node batch a flavor pins through `<aKey>.count`: 0 when no key or no label, the count
/// when a positive integer, −1 otherwise; node_devices_admission.go `flavorAcceleratorCount`.
pub fn flavor_accelerator_count(node_labels: &Labels, accelerator_key: &str) -> i64 {
    if accelerator_key.is_empty() {
        return 0;
    }
    let label = format!("{ACCELERATABLE_PREFIX}{accelerator_key}{COUNT_LABEL_SUFFIX}");
    match node_labels.get(label.as_str()) {
        None => 0,
        Some(raw) => match raw.parse::<i64>() {
            Ok(n) if n > 0 => n,
            _ => UNREADABLE_BATCH,
        },
    }
}

/// A flavor's scope; admission.md §6.4 "Flavor scope".
pub fn flavor_scope(flavor: &FlavorObject) -> FlavorScope {
    let key = flavor_accelerator_key(&flavor.node_labels);
    FlavorScope {
        flavor: flavor.name.clone(),
        accelerator_count: flavor_accelerator_count(&flavor.node_labels, &key),
        accelerator_key: key,
    }
}

/// The Devices selector of a flavor: its nodeLabels minus every `.count` batch label
/// (Devices objects do not carry it); admission.md §6.4.
pub fn devices_selector(node_labels: &Labels) -> Labels {
    node_labels
        .iter()
        .filter(|(k, _)| !k.ends_with(COUNT_LABEL_SUFFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether every selector label is on `labels` with the same value (MatchingLabels).
pub fn selector_matches(selector: &Labels, labels: &Labels) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The Devices of every node backing the referenced flavors, one entry per node carrying
/// every matching flavor's scope, sorted by node name; a missing flavor or one with empty
/// nodeLabels contributes nothing; admission.md §6.4 (`candidateDevices`).
pub fn candidate_devices(
    flavor_refs: &BTreeSet<String>,
    flavors: &[FlavorObject],
    devices: &[NodeDevices],
) -> Vec<ScopedDevices> {
    let mut by_name: BTreeMap<&str, ScopedDevices> = BTreeMap::new();
    for reference in flavor_refs {
        let Some(flavor) = flavors.iter().find(|f| &f.name == reference) else {
            continue;
        };
        if flavor.node_labels.is_empty() {
            continue;
        }
        let scope = flavor_scope(flavor);
        let selector = devices_selector(&flavor.node_labels);
        for d in devices
            .iter()
            .filter(|d| selector_matches(&selector, &d.labels))
        {
            by_name
                .entry(d.name.as_str())
                .or_insert_with(|| ScopedDevices {
                    name: d.name.clone(),
                    hostname: d.hostname.clone(),
                    devices: d.devices.clone(),
                    scopes: Vec::new(),
                })
                .scopes
                .push(scope.clone());
        }
    }
    by_name.into_values().collect()
}

/// One card as the fit sees it: its group's identity, the flavors covering it, its node's
/// hostname, capability (zero when the spec row is missing) and ledger row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardSlot {
    /// Ordinal of the card's node in the pool (cards of one node are contiguous).
    pub node: usize,
    pub id: String,
    pub manufacturer: String,
    pub accelerator_key: String,
    pub flavors: BTreeSet<String>,
    pub hostname: String,
    pub capability: Capability,
    pub ledger: Ledger,
}

impl CardSlot {
    /// `coveredBy`: the card's flavors hold the demand's flavor, and a node-scoped demand's
    /// hostname is the card's; admission.md §6.4.
    pub fn covered_by(&self, flavor: &str, node: &str) -> bool {
        self.flavors.contains(flavor) && (node.is_empty() || self.hostname == node)
    }
}

/// Whether a scope covers a group of `aKey` with `cards` cards: same key, batch 0 or equal.
pub fn scope_covers_group(scope: &FlavorScope, accelerator_key: &str, cards: usize) -> bool {
    scope.accelerator_key == accelerator_key
        && (scope.accelerator_count == 0
            || i64::try_from(cards).is_ok_and(|n| n == scope.accelerator_count))
}

/// Every card with a ledger row across the pool in node, group and card order, stamped with
/// the flavors covering it; admission.md §6.4 (`collectCards`).
pub fn collect_cards(pool: &[ScopedDevices]) -> Vec<CardSlot> {
    let mut cards = Vec::new();
    for (ordinal, node) in pool.iter().enumerate() {
        for group in &node.devices.groups {
            let key = group.accelerator_key();
            let rows = group.cards.iter().filter(|c| c.ledger.is_some()).count();
            let covering: BTreeSet<String> = node
                .scopes
                .iter()
                .filter(|s| scope_covers_group(s, &key, rows))
                .map(|s| s.flavor.clone())
                .collect();
            for card in &group.cards {
                let Some(ledger) = &card.ledger else { continue };
                cards.push(CardSlot {
                    node: ordinal,
                    id: card.id.clone(),
                    manufacturer: group.manufacturer.clone(),
                    accelerator_key: key.clone(),
                    flavors: covering.clone(),
                    hostname: node.hostname.clone(),
                    capability: card.capability_or_default().clone(),
                    ledger: ledger.clone(),
                });
            }
        }
    }
    cards
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> Labels {
        crate::labels::from_pairs(kv)
    }

    #[test]
    fn the_bare_key_is_the_flavors_key_and_several_are_none() {
        let l = labels(&[
            ("acceleratable.feature.gpustack.ai/nvidia-foo.v2", "true"),
            ("acceleratable.feature.gpustack.ai/nvidia-foo.v2.count", "8"),
        ]);
        assert_eq!(flavor_accelerator_key(&l), "nvidia-foo.v2");
        let two = labels(&[
            ("acceleratable.feature.gpustack.ai/nvidia-a", "true"),
            ("acceleratable.feature.gpustack.ai/nvidia-b", "true"),
        ]);
        assert_eq!(flavor_accelerator_key(&two), "");
        let count_only = labels(&[("acceleratable.feature.gpustack.ai/nvidia-h20.count", "8")]);
        assert_eq!(flavor_accelerator_key(&count_only), "");
    }

    #[test]
    fn batch_is_any_absent_count_or_unreadable() {
        let with = |v: &str| {
            labels(&[
                ("acceleratable.feature.gpustack.ai/nvidia-h20", "true"),
                ("acceleratable.feature.gpustack.ai/nvidia-h20.count", v),
            ])
        };
        assert_eq!(flavor_accelerator_count(&with("8"), "nvidia-h20"), 8);
        assert_eq!(flavor_accelerator_count(&with("0"), "nvidia-h20"), -1);
        assert_eq!(flavor_accelerator_count(&with(""), "nvidia-h20"), -1);
        assert_eq!(flavor_accelerator_count(&with("x"), "nvidia-h20"), -1);
        assert_eq!(flavor_accelerator_count(&with("8"), ""), 0);
        let absent = labels(&[("acceleratable.feature.gpustack.ai/nvidia-h20", "true")]);
        assert_eq!(flavor_accelerator_count(&absent, "nvidia-h20"), 0);
    }

    #[test]
    fn the_selector_drops_count_and_candidates_are_name_sorted() {
        let flavor = FlavorObject {
            name: "f".into(),
            node_labels: labels(&[
                ("kubernetes.io/os", "linux"),
                ("acceleratable.feature.gpustack.ai/nvidia.count", "1"),
            ]),
        };
        let node = |name: &str, os: &str| NodeDevices {
            name: name.into(),
            labels: labels(&[("kubernetes.io/os", os)]),
            ..NodeDevices::default()
        };
        let devices = vec![node("z", "linux"), node("b", "windows"), node("a", "linux")];
        let refs: BTreeSet<String> = ["f".to_string(), "missing".to_string()].into();
        let got = candidate_devices(&refs, &[flavor], &devices);
        let names: Vec<&str> = got.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "z"]);
        assert_eq!(got[0].scopes[0].accelerator_key, "");
    }

    #[test]
    fn a_batch_pin_covers_only_groups_of_that_size() {
        let scope = FlavorScope {
            flavor: "f".into(),
            accelerator_key: "nvidia-h20".into(),
            accelerator_count: 8,
        };
        assert!(!scope_covers_group(&scope, "nvidia-h20", 4));
        assert!(scope_covers_group(&scope, "nvidia-h20", 8));
        assert!(!scope_covers_group(&scope, "nvidia-l40s", 8));
        let unreadable = FlavorScope {
            accelerator_count: UNREADABLE_BATCH,
            ..scope
        };
        assert!(!scope_covers_group(&unreadable, "nvidia-h20", 0));
    }
}
