//! Per-card fit labels on a Node and the per-Pod demand a Workload is pinned with
//! (admission.md §4.5, §13.1, §16 R28; pkg/worker/controllers/worker/node_fit_label.go @7b0508ff,
//! fit_demand.go @f944bda).
//!
//! Per accelerator key `<manufacturer>-<group id>`, a managed node carries
//! - `sliced-max-free-units.fit.gpustack.ai/<aKey>`: the largest free ledger units on any one card
//!   that can take a logical slice now (sliceable, mode None/Sliced, a free slot), floored at 0,
//!   present when the group has a sliceable card;
//! - `shared-free-cards.fit.gpustack.ai/<aKey>`: how many whole-capable cards can still grant a
//!   share (mode None/Shared, remaining ≥ D/10), present when the group has a whole-capable card.
//!
//! A partitioned card feeds neither. Values are ledger units / card counts, written as decimal.

use std::collections::BTreeMap;

use crate::admission::demands::pod_set_family_demands;
use crate::devices::{grantable_shares, logical_slots_free};
use crate::devices::{Card, Devices, Mode};
use crate::error::ModelError;
use crate::fit_keys::{
    filter_fit_labels, is_fit_label_key, shared_fit_label_key, sliced_fit_label_key,
};
use crate::labels::{int_text, Labels, Text, MANAGED};
use crate::ledger::{charge, CardLedger, Charge};
use crate::placement::requirement_admits;
use crate::pod_webhook::NodeSelectorRequirement;
use crate::resources::Family;
use crate::units::clamp_i32;
use crate::workload::PodSet;

/// Gate 3's `freeSliceUnits`: a card's remaining units if it can take a logical slice now
/// (sliceable, mode None/Sliced, a free slot), else −1; admission.md §6.7, §13.1.
pub fn free_slice_units(card: &Card) -> i64 {
    let (Some(cap), Some(row)) = (card.capability.as_ref(), card.ledger.as_ref()) else {
        return -1;
    };
    let mode_ok = matches!(row.mode, Mode::None | Mode::Sliced);
    if cap.is_logically_sliceable() && mode_ok && logical_slots_free(cap, row.allocated_slices) > 0
    {
        clamp_i32(i128::from(row.remaining_units))
    } else {
        -1
    }
}

/// Gate 3's `freeShares`: ⌊remaining / D/10⌋ on a whole-capable card in mode None/Shared, else 0;
/// admission.md §6.7. A card with no spec entry reads as zero capability (whole-capable).
pub fn free_shares(card: &Card) -> i64 {
    card.ledger
        .as_ref()
        .map_or(0, |row| grantable_shares(card.capability_or_default(), row))
}

/// `fitLabelsOf`: the fit label pair of every group of a ledger; cards without a status row are
/// not enumerated, a group id that is not label grammar gets no label. node_fit_label.go.
pub fn fit_labels_of(devices: &Devices) -> Labels {
    let mut out = Labels::new();
    for group in &devices.groups {
        let cards = group.cards.iter().filter(|c| c.ledger.is_some());
        let (mut sliceable, mut shareable) = (false, false);
        let (mut max_free_units, mut free_share_cards) = (0i64, 0u64);
        for card in cards {
            let cap = card.capability_or_default();
            if cap.is_logically_sliceable() {
                sliceable = true;
                max_free_units = max_free_units.max(free_slice_units(card));
            }
            if cap.is_whole_card_capable() {
                shareable = true;
                if free_shares(card) > 0 {
                    free_share_cards += 1;
                }
            }
        }
        let a_key = group.accelerator_key();
        let sliced_key = sliced_fit_label_key(&a_key);
        if sliceable && is_fit_label_key(&sliced_key) {
            out.insert(sliced_key, int_text(max_free_units));
        }
        let shared_key = shared_fit_label_key(&a_key);
        if shareable && is_fit_label_key(&shared_key) {
            out.insert(shared_key, int_text(free_share_cards));
        }
    }
    out
}

/// `desiredFitLabels` (R28): none for an unmanaged node or one without a ledger, else the ledger's
/// pair per group. node_fit_label.go.
pub fn desired_fit_labels(node_managed: bool, devices: Option<&Devices>) -> Labels {
    match devices {
        Some(d) if node_managed => fit_labels_of(d),
        _ => Labels::new(),
    }
}

/// Whether a node's labels carry the managed mark `gpustack.ai/managed=true`.
pub fn node_is_managed(labels: &Labels) -> bool {
    labels.get(MANAGED).is_some_and(|v| v == "true")
}

/// A metadata.labels merge patch: `Some(v)` sets, `None` removes.
pub type LabelPatch = BTreeMap<Text, Option<Text>>;

/// `buildFitLabelPatch`: set every changed or missing desired value, remove every fit label not
/// desired, name no other label; `None` when nothing differs. node_fit_label.go.
pub fn fit_label_patch(desired: &Labels, current: &Labels) -> Option<LabelPatch> {
    let mut patch = LabelPatch::new();
    for (k, v) in desired {
        if current.get(k) != Some(v) {
            patch.insert(k.clone(), Some(v.clone()));
        }
    }
    for k in current.keys() {
        if is_fit_label_key(k) && !desired.contains_key(k) {
            patch.insert(k.clone(), None);
        }
    }
    (!patch.is_empty()).then_some(patch)
}

/// Applies a merge patch to a label set (what the API server does with it).
pub fn apply_label_patch(labels: &Labels, patch: &LabelPatch) -> Labels {
    let mut out = labels.clone();
    for (k, v) in patch {
        match v {
            Some(v) => {
                out.insert(k.clone(), v.clone());
            }
            None => {
                out.remove(k);
            }
        }
    }
    out
}

/// One `NodeFitLabelReconciler` pass on a live node: the patch it writes, if any; node_fit_label.go.
pub fn reconcile_fit_labels(node_labels: &Labels, devices: Option<&Devices>) -> Option<LabelPatch> {
    let desired = desired_fit_labels(node_is_managed(node_labels), devices);
    fit_label_patch(&desired, node_labels)
}

/// `fitSignatureChanged`: a Devices change moved some fit value; node_fit_label.go.
pub fn fit_signature_changed(old: &Devices, new: &Devices) -> bool {
    fit_labels_of(old) != fit_labels_of(new)
}

/// `fitDevicesUpdated`: a Devices update reconciles its node when its managed mark flipped or a
/// fit value moved; node_fit_label.go.
pub fn fit_devices_updated(
    old: &Devices,
    old_managed: bool,
    new: &Devices,
    new_managed: bool,
) -> bool {
    old_managed != new_managed || fit_signature_changed(old, new)
}

/// `nodeFitLabelNodeUpdated`: a Node update reconciles when the managed mark changed or someone
/// rewrote a fit label, unless the node is being deleted; node_fit_label.go.
pub fn node_update_moves_fit_labels(old: &Labels, new: &Labels, new_deleting: bool) -> bool {
    !new_deleting
        && (old.get(MANAGED) != new.get(MANAGED)
            || filter_fit_labels(old) != filter_fit_labels(new))
}

/// What one Pod of a PodSet needs from one node's cards (`PodSetFitDemand`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FitDemand {
    /// Per-card units of a logical slice; 0 when no slice (or no folded units).
    pub sliced_units: i32,
    /// The largest count of distinct cards one container needs a share on; 0 when no share.
    pub shared_cards: i32,
}

/// `PodSetFitDemand` = gate 3's per-family parse of one Pod (count 1): the sliced demand's per-card
/// units (max over containers, clamped to int32, only when a `.sliced` card key stands behind
/// them) and the largest shared holder (max, not sum); exclusive and partitions ask nothing.
/// admission.md §4.5, §6.3; fit_demand.go @f944bda.
pub fn pod_set_fit_demand(ps: &PodSet) -> Result<FitDemand, ModelError> {
    let demands = pod_set_family_demands(ps, 1)?;
    let of = |family: Family| demands.iter().find(|d| d.family == family);
    Ok(FitDemand {
        sliced_units: of(Family::Sliced).map_or(0, |d| d.units_per_card as i32),
        shared_cards: of(Family::Shared).map_or(0, |d| {
            d.shared_holders().first().map_or(0, |h| h.cards as i32)
        }),
    })
}

/// One single-Pod, single-card question a fit label answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitQuestion {
    /// One logical slice of this many units (≥ 1).
    Slice(i64),
    /// One share on each of this many distinct cards.
    Shared(u32),
}

/// The Workload webhook's pin for the question: `<fit label> Gt demand−1` (admission.md §4.5).
pub fn fit_pin(a_key: &str, q: FitQuestion) -> NodeSelectorRequirement {
    let (key, need) = match q {
        FitQuestion::Slice(units) => (sliced_fit_label_key(a_key), units),
        FitQuestion::Shared(cards) => (shared_fit_label_key(a_key), i64::from(cards)),
    };
    NodeSelectorRequirement {
        key: key.to_string(),
        operator: "Gt".into(),
        values: vec![(need - 1).to_string()],
    }
}

/// Whether a node's fit label admits the question: its pin ([`fit_pin`]) holds, i.e. the
/// label exists and its value ≥ the demand.
pub fn label_admits(labels: &Labels, a_key: &str, q: FitQuestion) -> bool {
    requirement_admits(labels, &fit_pin(a_key, q))
}

/// Whether one Pod's single demand fits a node's cards of `a_key` now, asked of the ledger itself
/// (a trial charge per card): a slice on some card, or a share on `n` distinct cards.
/// Stand-in for gate 3's `nodeDevicesFeasibility` until the admission module is merged.
pub fn single_pod_fits(devices: &Devices, a_key: &str, q: FitQuestion) -> bool {
    let cards: Vec<CardLedger> = devices
        .groups_of(a_key)
        .flat_map(|g| g.cards.iter().filter_map(CardLedger::from_card))
        .collect();
    match q {
        FitQuestion::Slice(units) => cards
            .iter()
            .any(|c| charge(c, &Charge::Slice { units }).is_ok()),
        FitQuestion::Shared(n) => {
            cards
                .iter()
                .filter(|c| charge(c, &Charge::Share).is_ok())
                .count()
                >= n as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Capability, DeviceGroup, Ledger};
    use crate::units::UNITS_PER_CARD;

    fn card(logical: u32, physical: u32, mode: Mode, remaining: i64, slices: u32) -> Card {
        Card {
            capability: Some(Capability {
                logical_sliced_count: logical,
                physical_sliced_count: physical,
                ..Capability::default()
            }),
            ledger: Some(Ledger {
                mode,
                remaining_units: remaining,
                allocated_slices: slices,
                ..Ledger::default()
            }),
            ..Card::default()
        }
    }

    fn node(cards: Vec<Card>) -> Devices {
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: "nvidia".into(),
                id: "t4".into(),
                cards,
                ..DeviceGroup::default()
            }],
        }
    }

    const SL: &str = "sliced-max-free-units.fit.gpustack.ai/nvidia-t4";
    const SH: &str = "shared-free-cards.fit.gpustack.ai/nvidia-t4";

    #[test]
    fn largest_card_not_the_sum_spec_fit_f1() {
        let d = node(vec![
            card(10, 0, Mode::None, 640_000, 0),
            card(10, 0, Mode::None, 640_000, 0),
            card(10, 0, Mode::None, UNITS_PER_CARD, 0),
        ]);
        let l = fit_labels_of(&d);
        assert_eq!(l.get(SL).map(Text::as_str), Some("1600000"));
        assert_eq!(l.get(SH).map(Text::as_str), Some("3"));
        let d = node(vec![
            card(10, 0, Mode::None, 640_000, 0),
            card(10, 0, Mode::None, 640_000, 0),
        ]);
        assert_eq!(fit_labels_of(&d).get(SL).map(Text::as_str), Some("640000"));
    }

    #[test]
    fn hygon_slot_limit_admission_11_3() {
        // card0: four 10 % slices of 4 slots, 60 % free; card1: two 45 % slices, 10 % free.
        let d = node(vec![
            card(4, 0, Mode::Sliced, 60 * 16_000, 4),
            card(4, 0, Mode::Sliced, 10 * 16_000, 2),
        ]);
        assert_eq!(fit_labels_of(&d).get(SL).map(Text::as_str), Some("160000"));
        let d = node(vec![
            card(4, 0, Mode::Sliced, 70 * 16_000, 3),
            card(4, 0, Mode::Sliced, 10 * 16_000, 2),
        ]);
        assert_eq!(fit_labels_of(&d).get(SL).map(Text::as_str), Some("1120000"));
    }

    #[test]
    fn a100_mixed_node_admission_11_2() {
        // card 0 partitioned, card 1 logical; before and after a 50 % slice on card 1.
        let d = node(vec![
            card(0, 7, Mode::None, UNITS_PER_CARD, 0),
            card(128, 0, Mode::None, UNITS_PER_CARD, 0),
        ]);
        let l = fit_labels_of(&d);
        assert_eq!(l.get(SL).map(Text::as_str), Some("1600000"));
        assert_eq!(l.get(SH).map(Text::as_str), Some("1"));
        let d = node(vec![
            card(0, 7, Mode::None, UNITS_PER_CARD, 0),
            card(128, 0, Mode::Sliced, 800_000, 1),
        ]);
        let l = fit_labels_of(&d);
        assert_eq!(l.get(SL).map(Text::as_str), Some("800000"));
        assert_eq!(l.get(SH).map(Text::as_str), Some("0"));
    }

    #[test]
    fn partitioned_only_group_gets_no_label_and_unmanaged_none() {
        let d = node(vec![card(0, 7, Mode::None, UNITS_PER_CARD, 0)]);
        assert!(fit_labels_of(&d).is_empty());
        let d = node(vec![card(10, 0, Mode::None, UNITS_PER_CARD, 0)]);
        assert!(desired_fit_labels(false, Some(&d)).is_empty());
        assert!(desired_fit_labels(true, None).is_empty());
        assert_eq!(desired_fit_labels(true, Some(&d)).len(), 2);
    }

    #[test]
    fn patch_touches_only_fit_labels() {
        let cur = crate::labels::from_pairs(&[(SL, "640000"), ("zone", "a")]);
        let patch = fit_label_patch(&Labels::new(), &cur).unwrap();
        assert_eq!(patch.len(), 1);
        assert_eq!(patch.get(SL), Some(&None));
        assert_eq!(fit_label_patch(&filter_fit_labels(&cur), &cur), None);
        let after = apply_label_patch(&cur, &patch);
        assert_eq!(after.get("zone").map(Text::as_str), Some("a"));
        assert!(!after.contains_key(SL));
    }

    /// `TestFitLabelsAgreeWithNodeDevicesFeasibility` (node_fit_label_test.go): over a family of
    /// ledgers, "the label admits" ⇔ a single-demand fit succeeds, for 7 slice sizes and 4
    /// shared counts. To be re-pointed at `admission::node_devices_feasibility` at merge.
    #[test]
    fn fit_labels_agree_with_single_demand_fit() {
        let ledgers: Vec<Devices> = vec![
            node(vec![card(10, 0, Mode::None, UNITS_PER_CARD, 0); 4]),
            node(vec![card(10, 0, Mode::None, 640_000, 0); 4]),
            node(vec![
                card(10, 0, Mode::Sliced, 640_000, 3),
                card(10, 0, Mode::None, UNITS_PER_CARD, 0),
            ]),
            node(vec![
                card(4, 0, Mode::Sliced, 960_000, 4),
                card(4, 0, Mode::Sliced, 160_000, 2),
            ]),
            node(vec![
                card(10, 0, Mode::Exclusive, 0, 0),
                card(10, 0, Mode::Shared, 320_000, 0),
                card(10, 0, Mode::Shared, 100_000, 0),
            ]),
            node(vec![card(0, 0, Mode::None, UNITS_PER_CARD, 0); 3]),
            node(vec![
                card(0, 7, Mode::None, UNITS_PER_CARD, 0),
                card(128, 0, Mode::Sliced, 800_000, 1),
            ]),
            node(vec![card(0, 7, Mode::Partitioned, UNITS_PER_CARD, 0); 2]),
            node(vec![
                card(10, 0, Mode::None, 159_999, 0),
                card(10, 0, Mode::Shared, 160_000, 0),
            ]),
            node(vec![
                Card {
                    capability: None,
                    ..card(0, 0, Mode::None, UNITS_PER_CARD, 0)
                },
                Card {
                    ledger: None,
                    ..card(10, 0, Mode::None, UNITS_PER_CARD, 0)
                },
            ]),
            node(Vec::new()),
        ];
        let questions = [1, 16_000, 160_000, 640_000, 800_000, 960_000, 1_600_000]
            .map(FitQuestion::Slice)
            .into_iter()
            .chain([1, 2, 3, 4].map(FitQuestion::Shared));
        let mut admitted = 0;
        for q in questions {
            for d in &ledgers {
                let labels = fit_labels_of(d);
                let admits = label_admits(&labels, "nvidia-t4", q);
                assert_eq!(
                    admits,
                    single_pod_fits(d, "nvidia-t4", q),
                    "{q:?} on {labels:?}"
                );
                admitted += usize::from(admits);
            }
        }
        assert!(
            admitted > 10 && admitted < 11 * 11,
            "degenerate: {admitted}"
        );
    }
}
