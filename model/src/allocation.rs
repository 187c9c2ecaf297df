//! A node's allocation records as the Pods bound to it carry them. The device plugin writes, on
//! each Pod it serves, what every container holds: a JSON map keyed by container name under
//! [`ALLOCATED_ANNOTATION`], each entry listing cards with their mode and the units taken
//! (research/devices.md §2.4 step 4, "charging Pod"; pkg/deviceplugin/controller.go
//! `PodAllocations`). The ledger rebuild reads them back from the Pods listed by `spec.nodeName`
//! (research/admission.md §6.5 "Ledger rebuild"). The JSON spelling lives with the callers;
//! this module keeps what the records mean.

use crate::devices::{Card, Devices, Mode};
use crate::units::{UNITS_PER_CARD, UNITS_PER_SHARE};

/// The Pod annotation carrying its containers' allocation records (devices.md §2.4 step 4).
pub const ALLOCATED_ANNOTATION: &str = "device.gpustack.ai/accelerator.allocated";

/// One container's hold on one card, as its allocation record spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardHold {
    /// The card's group id (a card is identified by group id and card id,
    /// pkg/deviceplugin `Resource{Group, Device}`).
    pub group: String,
    pub manufacturer: String,
    pub card: String,
    pub index: u32,
    pub mode: Mode,
    /// Ledger units the hold takes.
    pub allocated: i64,
    /// The partition profile of a partition instance (`allocatedPhysicalProfile`).
    pub profile: Option<String>,
}

/// What one Pod bound to a node holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodHolds {
    /// The Pod is `Succeeded` or `Failed`.
    pub finished: bool,
    /// Each container's holds (a container may hold several cards).
    pub containers: Vec<Vec<CardHold>>,
}

/// A card's `allocatedSlices` rebuilt from the Pods bound to its node: one slice per container
/// holding the card in mode Sliced ("a slice is counted per holding container, the unit the
/// ledger's AllocatedSlices counts in too", pkg/deviceplugin/sliced_room.go; admission.md §9
/// "slices hosted, one per container"). A finished Pod no longer holds its slices (admission.md
/// §6.5: the ledger stops charging finished Pods' logical slices).
pub fn hosted_slices(pods: &[PodHolds], group: &str, card: &str) -> u32 {
    let holds_slice = |container: &Vec<CardHold>| {
        container
            .iter()
            .any(|h| h.group == group && h.card == card && h.mode == Mode::Sliced)
    };
    let count = pods
        .iter()
        .filter(|p| !p.finished)
        .flat_map(|p| &p.containers)
        .filter(|c| holds_slice(c))
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// Containers whose records explain `devices`' ledger, for a mock to write (devices.md §5
/// rule 14: the Pods' per-card charges equal D − remaining, one container per slice): per card,
/// one container per hosted slice, one per share of a shared card, one for an exclusive card,
/// one per partition instance (its profile named). The card's allocated units are spread over
/// its containers, the first taking what does not divide. A card holding nothing (mode None,
/// or a sliced row hosting no slice) needs no container.
pub fn holds_explaining(devices: &Devices) -> Vec<Vec<CardHold>> {
    let mut out = Vec::new();
    for group in &devices.groups {
        for card in &group.cards {
            let Some(ledger) = &card.ledger else {
                continue;
            };
            let allocated = (UNITS_PER_CARD - ledger.remaining_units).max(0);
            let hold = |units: i64, profile: Option<String>| {
                vec![CardHold {
                    group: group.id.clone(),
                    manufacturer: group.manufacturer.clone(),
                    card: card.id.clone(),
                    index: card.index,
                    mode: ledger.mode,
                    allocated: units,
                    profile,
                }]
            };
            let profiles: Vec<Option<String>> = match ledger.mode {
                Mode::None | Mode::Visibility => Vec::new(),
                Mode::Exclusive => vec![None],
                Mode::Shared => vec![None; shares_held(allocated)],
                Mode::Sliced => vec![None; ledger.allocated_slices as usize],
                Mode::Partitioned => partition_instances(card),
            };
            let units = spread(allocated, profiles.len());
            out.extend(
                units
                    .into_iter()
                    .zip(profiles)
                    .map(|(u, profile)| hold(u, profile)),
            );
        }
    }
    out
}

/// Holders of a shared card: one per share taken, at least one when anything is taken.
fn shares_held(allocated: i64) -> usize {
    usize::try_from((allocated / UNITS_PER_SHARE).max(1)).unwrap_or(1)
}

/// One profile name per live partition instance of the card (`allocatedProfiles`).
fn partition_instances(card: &Card) -> Vec<Option<String>> {
    card.ledger
        .iter()
        .flat_map(|l| &l.allocated_profiles)
        .flat_map(|p| std::iter::repeat_n(Some(p.name.to_string()), p.count as usize))
        .collect()
}

/// `total` over `n` parts summing to it, the first taking the remainder.
fn spread(total: i64, n: usize) -> Vec<i64> {
    let Ok(parts) = i64::try_from(n) else {
        return Vec::new();
    };
    if parts == 0 {
        return Vec::new();
    }
    let each = total / parts;
    let mut out = vec![each; n];
    out[0] = total - each * (parts - 1);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Capability, DeviceGroup, Ledger, ProfileCount};

    fn card(id: &str, ledger: Ledger) -> Card {
        Card {
            id: id.into(),
            index: 0,
            capability: Some(Capability {
                logical_sliced_count: 4,
                ..Capability::default()
            }),
            ledger: Some(ledger),
        }
    }

    fn devices(cards: Vec<Card>) -> Devices {
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: "nvidia".into(),
                id: "a10".into(),
                cards,
                ..DeviceGroup::default()
            }],
        }
    }

    fn pods(containers: Vec<Vec<CardHold>>) -> Vec<PodHolds> {
        vec![PodHolds {
            finished: false,
            containers,
        }]
    }

    #[test]
    fn the_holds_explain_every_row_and_give_back_its_slices() {
        let d = devices(vec![
            card(
                "sliced",
                Ledger {
                    mode: Mode::Sliced,
                    remaining_units: UNITS_PER_CARD - 3 * 160_000 - 7,
                    allocated_slices: 3,
                    ..Ledger::default()
                },
            ),
            card(
                "shared",
                Ledger {
                    mode: Mode::Shared,
                    remaining_units: UNITS_PER_CARD - 2 * UNITS_PER_SHARE,
                    ..Ledger::default()
                },
            ),
            card(
                "whole",
                Ledger {
                    mode: Mode::Exclusive,
                    remaining_units: 0,
                    ..Ledger::default()
                },
            ),
            card(
                "mig",
                Ledger {
                    mode: Mode::Partitioned,
                    allocated_profiles: vec![ProfileCount {
                        name: "1g.5gb".into(),
                        count: 2,
                    }],
                    ..Ledger::default()
                },
            ),
            card("free", Ledger::default()),
        ]);
        let holds = holds_explaining(&d);
        let on = |id: &str| -> Vec<&CardHold> {
            holds.iter().flatten().filter(|h| h.card == id).collect()
        };
        assert_eq!(on("sliced").len(), 3);
        assert_eq!(on("shared").len(), 2);
        assert_eq!(on("whole").len(), 1);
        assert_eq!(on("mig").len(), 2);
        assert!(on("free").is_empty());
        for c in &d.groups[0].cards {
            let l = c.ledger.as_ref().expect("ledger");
            let units: i64 = on(&c.id).iter().map(|h| h.allocated).sum();
            assert_eq!(units, UNITS_PER_CARD - l.remaining_units, "card {}", c.id);
            assert!(on(&c.id).iter().all(|h| h.mode == l.mode));
        }
        let p = pods(holds.clone());
        assert_eq!(hosted_slices(&p, "a10", "sliced"), 3);
        assert_eq!(hosted_slices(&p, "a10", "shared"), 0);
        assert_eq!(hosted_slices(&p, "other", "sliced"), 0);
    }

    #[test]
    fn a_container_counts_once_per_card_and_a_finished_pod_not_at_all() {
        let slice = |card: &str| CardHold {
            group: "a10".into(),
            manufacturer: "nvidia".into(),
            card: card.into(),
            index: 0,
            mode: Mode::Sliced,
            allocated: 100,
            profile: None,
        };
        // one container listing the same card twice, another holding two cards
        let mut p = pods(vec![
            vec![slice("c0"), slice("c0")],
            vec![slice("c0"), slice("c1")],
        ]);
        assert_eq!(hosted_slices(&p, "a10", "c0"), 2);
        assert_eq!(hosted_slices(&p, "a10", "c1"), 1);
        p[0].finished = true;
        assert_eq!(hosted_slices(&p, "a10", "c0"), 0);
    }

    #[test]
    fn units_spread_to_the_total() {
        assert_eq!(spread(10, 3), [4, 3, 3]);
        assert_eq!(spread(0, 2), [0, 0]);
        assert!(spread(5, 0).is_empty());
    }
}
