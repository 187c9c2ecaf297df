//! The per-card allocation ledger and its arithmetic: charging and releasing exclusive, shared,
//! sliced and partition allocations (admission.md §9, §16 R10–R11; devices.md §3.2–§3.6;
//! api/worker/v1alpha1/devices.go).
//!
//! A charge is a value: it returns the new card or an error saying why the card cannot take it,
//! never a panic. Release is the exact inverse of charge on every ledger reached from [`seed`]
//! by charges (the device manager seeds every card free and only charges and releases move it).
//!
//! Decisions where the research is silent:
//! - a partition instance does not move `remaining_units` (R10 names only the placement, the
//!   per-profile counts and the mode; an empty partitioned card keeps `remaining = D`,
//!   admission.md §10);
//! - a profile without cached placements cannot be charged, and its remaining count is left as
//!   the row recorded it (the interval rule R11 needs placements; devices.go `Placements`);
//! - "nothing held" is: remaining back at D for Exclusive/Shared, no hosted slice for Sliced, no
//!   instance for Partitioned; then the mode returns to None (R10).

use thiserror::Error;

use crate::devices::logical_slots_free;
use crate::devices::{Capability, Card, Ledger, Mode, PartitionProfile, Placement, ProfileCount};
use crate::units::{UNITS_PER_CARD, UNITS_PER_SHARE};

/// One live partition instance: the profile (vendor spelling, as the Devices record keeps it)
/// and the memory-slice interval it occupies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instance {
    pub profile: String,
    pub placement: Placement,
}

/// One card's capability, its ledger row and the partition instances that row accounts for
/// (the device manager derives them from Pod annotations; DISC-DOC via admission.md §9).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CardLedger {
    pub capability: Capability,
    pub row: Ledger,
    pub instances: Vec<Instance>,
}

impl CardLedger {
    /// A card as the status side reports it, with no known instances; `None` when the card has
    /// no ledger row (admission.md §6.4: cards are enumerated from the status side).
    pub fn from_card(card: &Card) -> Option<CardLedger> {
        Some(CardLedger {
            capability: card.capability_or_default().clone(),
            row: card.ledger.clone()?,
            instances: Vec::new(),
        })
    }

    /// Memory slices occupied by partition instances (the allocator's "occupancy").
    pub fn occupied_slices(&self) -> u32 {
        self.instances.iter().map(|i| i.placement.length).sum()
    }
}

/// One allocation a card can be charged with (admission.md §16 R10).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Charge {
    /// A whole card.
    Exclusive,
    /// One ownership share (D/10) for one holder.
    Share,
    /// One logical slice of `units` ledger units (capped at D, as `Allocate` charges).
    Slice { units: i64 },
    /// One partition instance at an explicit placement.
    Partition(Instance),
}

/// Why a card cannot take (or give back) an allocation.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ChargeError {
    #[error("the card's capability does not serve the {0} family")]
    NotServed(&'static str),
    #[error("the card is held in mode {held}, not {wanted}")]
    HeldInOtherMode {
        held: &'static str,
        wanted: &'static str,
    },
    #[error("the card is not wholly free: {remaining} of {UNITS_PER_CARD} units remain")]
    NotWhollyFree { remaining: i64 },
    #[error("the card has {remaining} units free, less than one share ({UNITS_PER_SHARE})")]
    NoShareLeft { remaining: i64 },
    /// SLICED-ROOM wording (admission.md §8).
    #[error("it already hosts {hosted} of its {count} slices")]
    NoSlotLeft { hosted: u32, count: u32 },
    /// SLICED-ROOM wording (admission.md §8).
    #[error("it has {free} of {UNITS_PER_CARD} units free and the slice needs {needed}")]
    NotEnoughUnits { free: i64, needed: i64 },
    #[error("a slice of {0} units is not a slice")]
    NegativeUnits(i64),
    #[error("profile {0:?} is not in the card's catalog")]
    UnknownProfile(String),
    #[error("profile {0:?} has no cached placements")]
    NoPlacements(String),
    #[error("[{start}, {end}) is not a legal placement of profile {profile:?}")]
    IllegalPlacement {
        profile: String,
        start: u32,
        end: u32,
    },
    #[error("[{start}, {end}) overlaps an occupied interval")]
    PlacementOccupied { start: u32, end: u32 },
    #[error("nothing of that kind is held on the card: {0}")]
    NotHeld(String),
}

/// The ledger units one slice charges: `min(units, D)` (admission.md §8, per token).
fn slice_units(units: i64) -> i64 {
    units.min(UNITS_PER_CARD)
}

/// Overlap of `[a, a+m)` and `[b, b+n)` ⇔ a < b+n ∧ b < a+m; devices.md §3.4 (mig_placement.go).
pub fn placements_overlap(a: &Placement, b: &Placement) -> bool {
    let (a0, a1) = (u64::from(a.start), u64::from(a.start) + u64::from(a.length));
    let (b0, b1) = (u64::from(b.start), u64::from(b.start) + u64::from(b.length));
    a0 < b1 && b0 < a1
}

/// Whether `p` overlaps no occupied instance; devices.md §3.4.
fn placement_is_free(p: &Placement, instances: &[Instance]) -> bool {
    instances
        .iter()
        .all(|i| !placements_overlap(p, &i.placement))
}

/// R11: per catalog profile, how many legal starts overlap no occupied interval, name-sorted.
/// A profile without cached placements keeps the count `previous` recorded for it (or its
/// static count); admission.md §16 R11, devices.md §3.4 (`computeFreeProfiles`).
pub fn free_profile_counts(
    capability: &Capability,
    instances: &[Instance],
    previous: &[ProfileCount],
) -> Vec<ProfileCount> {
    let mut out: Vec<ProfileCount> = capability
        .physical_profiles
        .iter()
        .map(|p| ProfileCount {
            name: p.name.clone(),
            count: if p.placements.is_empty() {
                previous
                    .iter()
                    .find(|c| c.name == p.name)
                    .map_or(p.count, |c| c.count)
            } else {
                p.placements
                    .iter()
                    .filter(|pl| placement_is_free(pl, instances))
                    .count() as u32
            },
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The instances a status row implies when only its counts are known (a checkpoint or a
/// generated shape): a non-overlapping placement for every allocated instance whose free
/// counts reproduce the row's `remainingProfiles`; the first such layout in placement order.
/// `None` when no layout reproduces the row (the row is not one the device manager reaches).
pub fn reconstruct_instances(card: &CardLedger) -> Option<Vec<Instance>> {
    let wanted: Vec<&str> = card
        .row
        .allocated_profiles
        .iter()
        .flat_map(|p| std::iter::repeat_n(p.name.as_str(), p.count as usize))
        .collect();
    let mut remaining = card.row.remaining_profiles.clone();
    remaining.sort_by(|a, b| a.name.cmp(&b.name));
    let mut chosen = Vec::new();
    place_all(&card.capability, &wanted, &remaining, &mut chosen).then_some(chosen)
}

/// Backtracking over placements for `wanted` (few instances, few legal starts each).
fn place_all(
    capability: &Capability,
    wanted: &[&str],
    remaining: &[ProfileCount],
    chosen: &mut Vec<Instance>,
) -> bool {
    let Some((profile, rest)) = wanted.split_first() else {
        return free_profile_counts(capability, chosen, remaining) == remaining;
    };
    let Some(p) = catalog_profile(capability, profile) else {
        return false;
    };
    for pl in &p.placements {
        if !placement_is_free(pl, chosen) {
            continue;
        }
        chosen.push(Instance {
            profile: profile.to_string(),
            placement: pl.clone(),
        });
        if place_all(capability, rest, remaining, chosen) {
            return true;
        }
        chosen.pop();
    }
    false
}

/// The lowest free legal placement of `profile` on a card, where `Allocate` creates a new
/// instance; devices.md §3.5.
pub fn lowest_free_placement(card: &CardLedger, profile: &str) -> Option<Placement> {
    let p = catalog_profile(&card.capability, profile)?;
    let mut legal: Vec<&Placement> = p.placements.iter().collect();
    legal.sort_by_key(|pl| pl.start);
    legal
        .into_iter()
        .find(|pl| placement_is_free(pl, &card.instances))
        .cloned()
}

fn catalog_profile<'a>(capability: &'a Capability, name: &str) -> Option<&'a PartitionProfile> {
    capability.physical_profiles.iter().find(|p| p.name == name)
}

/// The ledger the device manager seeds for a card: free at D, mode None, and for a partitioned
/// card every profile's free count from its empty-card placements; admission.md §9.
pub fn seed(capability: Capability) -> CardLedger {
    let remaining_profiles = if capability.is_partitioned() {
        free_profile_counts(&capability, &[], &[])
    } else {
        Vec::new()
    };
    CardLedger {
        capability,
        row: Ledger {
            remaining_profiles,
            ..Ledger::default()
        },
        instances: Vec::new(),
    }
}

/// The mode a charge of `c` puts the card in.
fn mode_of(c: &Charge) -> Mode {
    match c {
        Charge::Exclusive => Mode::Exclusive,
        Charge::Share => Mode::Shared,
        Charge::Slice { .. } => Mode::Sliced,
        Charge::Partition(_) => Mode::Partitioned,
    }
}

/// Cross-mode rule: a card takes a charge only while free of other modes (None) or already in
/// the charge's own mode; admission.md §14 inv. 3, §8.
fn check_mode(row: &Ledger, wanted: Mode) -> Result<(), ChargeError> {
    if row.mode == Mode::None || row.mode == wanted {
        Ok(())
    } else {
        Err(ChargeError::HeldInOtherMode {
            held: row.mode.name(),
            wanted: wanted.name(),
        })
    }
}

/// Population rule: which family a card's capability serves; admission.md §6.6 (population.go).
fn check_serves(capability: &Capability, c: &Charge) -> Result<(), ChargeError> {
    let (served, family) = match c {
        Charge::Exclusive => (capability.is_whole_card_capable(), "exclusive"),
        Charge::Share => (capability.is_whole_card_capable(), "shared"),
        Charge::Slice { .. } => (capability.is_logically_sliceable(), "sliced"),
        Charge::Partition(_) => (capability.is_partitioned(), "partitioned"),
    };
    if served {
        Ok(())
    } else {
        Err(ChargeError::NotServed(family))
    }
}

/// Charges one allocation to a card (admission.md §16 R10); the card is returned changed, or the
/// reason it cannot take the allocation.
pub fn charge(card: &CardLedger, c: &Charge) -> Result<CardLedger, ChargeError> {
    check_serves(&card.capability, c)?;
    check_mode(&card.row, mode_of(c))?;
    let mut next = card.clone();
    let row = &mut next.row;
    match c {
        Charge::Exclusive => {
            if row.remaining_units < UNITS_PER_CARD || row.mode == Mode::Exclusive {
                return Err(ChargeError::NotWhollyFree {
                    remaining: row.remaining_units,
                });
            }
            row.remaining_units -= UNITS_PER_CARD;
        }
        Charge::Share => {
            if row.remaining_units < UNITS_PER_SHARE {
                return Err(ChargeError::NoShareLeft {
                    remaining: row.remaining_units,
                });
            }
            row.remaining_units -= UNITS_PER_SHARE;
        }
        Charge::Slice { units } => {
            if *units < 0 {
                return Err(ChargeError::NegativeUnits(*units));
            }
            let count = card.capability.logical_sliced_count;
            if logical_slots_free(&card.capability, row.allocated_slices) == 0 {
                return Err(ChargeError::NoSlotLeft {
                    hosted: row.allocated_slices,
                    count,
                });
            }
            let needed = slice_units(*units);
            if row.remaining_units < needed {
                return Err(ChargeError::NotEnoughUnits {
                    free: row.remaining_units,
                    needed,
                });
            }
            row.remaining_units -= needed;
            row.allocated_slices += 1;
        }
        Charge::Partition(instance) => {
            check_placement(card, instance)?;
            next.instances.push(instance.clone());
            adjust_allocated(&mut next.row.allocated_profiles, &instance.profile, 1);
            next.row.remaining_profiles = free_profile_counts(
                &next.capability,
                &next.instances,
                &card.row.remaining_profiles,
            );
        }
    }
    next.row.mode = mode_of(c);
    Ok(next)
}

/// A partition instance must name a catalogued profile, one of its legal placements, and a
/// free interval; devices.md §3.4–3.5.
fn check_placement(card: &CardLedger, instance: &Instance) -> Result<(), ChargeError> {
    let profile = catalog_profile(&card.capability, &instance.profile)
        .ok_or_else(|| ChargeError::UnknownProfile(instance.profile.clone()))?;
    if profile.placements.is_empty() {
        return Err(ChargeError::NoPlacements(instance.profile.clone()));
    }
    let (start, end) = (
        instance.placement.start,
        instance
            .placement
            .start
            .saturating_add(instance.placement.length),
    );
    if !profile.placements.contains(&instance.placement) {
        return Err(ChargeError::IllegalPlacement {
            profile: instance.profile.clone(),
            start,
            end,
        });
    }
    if !placement_is_free(&instance.placement, &card.instances) {
        return Err(ChargeError::PlacementOccupied { start, end });
    }
    Ok(())
}

/// `allocatedProfiles[name] += delta`, name-sorted, a profile at 0 dropped (holds nothing).
fn adjust_allocated(list: &mut Vec<ProfileCount>, name: &str, delta: i64) {
    match list.iter_mut().find(|p| p.name == name) {
        Some(p) => p.count = (i64::from(p.count) + delta).max(0) as u32,
        None if delta > 0 => list.push(ProfileCount {
            name: name.into(),
            count: delta as u32,
        }),
        None => {}
    }
    list.retain(|p| p.count > 0);
    list.sort_by(|a, b| a.name.cmp(&b.name));
}

/// Whether the card holds nothing of its current mode any more (R10: mode returns to None).
fn holds_nothing(card: &CardLedger) -> bool {
    match card.row.mode {
        Mode::Exclusive | Mode::Shared => card.row.remaining_units >= UNITS_PER_CARD,
        Mode::Sliced => card.row.allocated_slices == 0,
        Mode::Partitioned => card.instances.is_empty(),
        Mode::None | Mode::Visibility => true,
    }
}

/// Releases one allocation (the exact inverse of [`charge`]); releasing what the card does not
/// hold is an error value. devices.md §3.6: accounting frees on Pod deletion.
pub fn release(card: &CardLedger, c: &Charge) -> Result<CardLedger, ChargeError> {
    let wanted = mode_of(c);
    if card.row.mode != wanted {
        return Err(ChargeError::NotHeld(format!(
            "the card is in mode {}, not {}",
            card.row.mode.name(),
            wanted.name()
        )));
    }
    let mut next = card.clone();
    let row = &mut next.row;
    match c {
        Charge::Exclusive => row.remaining_units += UNITS_PER_CARD,
        Charge::Share => {
            if row.remaining_units + UNITS_PER_SHARE > UNITS_PER_CARD {
                return Err(ChargeError::NotHeld("no share is held".into()));
            }
            row.remaining_units += UNITS_PER_SHARE;
        }
        Charge::Slice { units } => {
            let units = slice_units((*units).max(0));
            if row.allocated_slices == 0 || row.remaining_units + units > UNITS_PER_CARD {
                return Err(ChargeError::NotHeld(format!(
                    "no slice of {units} units is held"
                )));
            }
            row.allocated_slices -= 1;
            row.remaining_units += units;
        }
        Charge::Partition(instance) => {
            let at = next
                .instances
                .iter()
                .position(|i| i == instance)
                .ok_or_else(|| {
                    ChargeError::NotHeld(format!(
                        "no {} instance at that placement",
                        instance.profile
                    ))
                })?;
            next.instances.remove(at);
            adjust_allocated(&mut next.row.allocated_profiles, &instance.profile, -1);
            next.row.remaining_profiles = free_profile_counts(
                &next.capability,
                &next.instances,
                &card.row.remaining_profiles,
            );
        }
    }
    if holds_nothing(&next) {
        next.row.mode = Mode::None;
    }
    Ok(next)
}

/// Real catalogs of devices.md §3.2, for tests and examples.
pub mod catalogs {
    use crate::devices::{Capability, PartitionProfile, Placement};

    /// One profile whose legal placements are `starts`, each `size` memory slices long.
    pub fn profile(name: &str, mib: Option<u64>, size: u32, starts: &[u32]) -> PartitionProfile {
        PartitionProfile {
            name: name.into(),
            count: starts.len() as u32,
            memory_mib: mib,
            placements: starts
                .iter()
                .map(|&start| Placement {
                    start,
                    length: size,
                })
                .collect(),
        }
    }

    /// A partitioned capability: no logical slices, ceiling = the largest profile count.
    pub fn partitioned(profiles: Vec<PartitionProfile>) -> Capability {
        Capability {
            physical_sliced_count: profiles.iter().map(|p| p.count).max().unwrap_or(0),
            physical_profiles: profiles,
            ..Capability::default()
        }
    }

    /// NVIDIA A100-40GB in MIG mode (devices.md §3.2 table; 8 memory slices).
    pub fn a100_40gb() -> Capability {
        partitioned(vec![
            profile("1g.5gb", Some(4864), 1, &[0, 1, 2, 3, 4, 5, 6]),
            profile("1g.10gb", Some(9856), 2, &[0, 2, 4, 6]),
            profile("2g.10gb", Some(9856), 2, &[0, 2, 4]),
            profile("3g.20gb", Some(19968), 4, &[0, 4]),
            profile("4g.20gb", Some(19968), 4, &[0]),
            profile("7g.40gb", Some(40192), 8, &[0]),
        ])
    }

    /// Hygon C-3000 "BW" in MIG mode: 4 memory slices, 65,520 MiB (devices.md §3.2 table).
    pub fn hygon_bw() -> Capability {
        partitioned(vec![
            profile("2g.15gb", Some(16380), 1, &[0, 1, 2, 3]),
            profile("4g.31gb", Some(32760), 2, &[0, 2]),
            profile("8g.63gb", Some(65520), 4, &[0]),
        ])
    }

    /// T-Head PPU in MIG mode: `4g48gb` ×2 of 4 slices or `8g96gb` spanning all 8, in the
    /// vendor's spelling without the dot (devices.md §3.1–3.2).
    pub fn thead_ppu() -> Capability {
        partitioned(vec![
            profile("4g48gb", Some(49152), 4, &[0, 4]),
            profile("8g96gb", Some(98304), 8, &[0]),
        ])
    }

    /// NVIDIA H100-80GB HBM3 in MIG mode (devices.md §3.2 table; MiB only where sourced).
    pub fn h100_80gb() -> Capability {
        partitioned(vec![
            profile("1g.10gb", Some(9856), 1, &[0, 1, 2, 3, 4, 5, 6]),
            profile("1g.20gb", None, 2, &[0, 2, 4, 6]),
            profile("2g.20gb", Some(19968), 2, &[0, 2, 4]),
            profile("3g.40gb", None, 4, &[0, 4]),
            profile("4g.40gb", Some(39936), 4, &[0]),
            profile("7g.80gb", None, 8, &[0]),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::catalogs::{a100_40gb, h100_80gb};
    use super::*;

    fn logical(count: u32) -> Capability {
        Capability {
            logical_sliced_count: count,
            ..Capability::default()
        }
    }

    fn inst(profile: &str, start: u32, length: u32) -> Instance {
        Instance {
            profile: profile.into(),
            placement: Placement { start, length },
        }
    }

    #[test]
    fn instances_are_reconstructed_from_a_rows_counts() {
        let mut card = seed(a100_40gb());
        for c in [
            Charge::Partition(inst("3g.20gb", 4, 4)),
            Charge::Partition(inst("1g.5gb", 1, 1)),
        ] {
            card = charge(&card, &c).unwrap();
        }
        let counted = CardLedger {
            instances: Vec::new(),
            ..card.clone()
        };
        let rebuilt = reconstruct_instances(&counted).expect("a reachable row has a layout");
        assert_eq!(rebuilt.len(), 2);
        assert_eq!(
            free_profile_counts(&card.capability, &rebuilt, &[]),
            card.row.remaining_profiles
        );
        let mut broken = counted.clone();
        broken.row.remaining_profiles.clear();
        broken.row.remaining_profiles.push(ProfileCount {
            name: "7g.40gb".into(),
            count: 1,
        });
        assert_eq!(reconstruct_instances(&broken), None);
    }

    fn counts(list: &[ProfileCount]) -> Vec<(&str, u32)> {
        list.iter().map(|p| (p.name.as_str(), p.count)).collect()
    }

    #[test]
    fn h100_one_small_instance_carved_chain_9_3() {
        let card = seed(h100_80gb());
        let card = charge(&card, &Charge::Partition(inst("1g.10gb", 0, 1))).unwrap();
        assert_eq!(
            counts(&card.row.remaining_profiles),
            [
                ("1g.10gb", 6),
                ("1g.20gb", 3),
                ("2g.20gb", 2),
                ("3g.40gb", 1),
                ("4g.40gb", 0),
                ("7g.80gb", 0)
            ]
        );
        assert_eq!(counts(&card.row.allocated_profiles), [("1g.10gb", 1)]);
        assert_eq!(card.row.mode, Mode::Partitioned);
        assert_eq!(card.row.remaining_units, UNITS_PER_CARD);
    }

    #[test]
    fn a100_half_card_instance_devices_3_2() {
        let card = seed(a100_40gb());
        let card = charge(&card, &Charge::Partition(inst("3g.20gb", 0, 4))).unwrap();
        assert_eq!(
            counts(&card.row.remaining_profiles),
            [
                ("1g.10gb", 2),
                ("1g.5gb", 3),
                ("2g.10gb", 1),
                ("3g.20gb", 1),
                ("4g.20gb", 0),
                ("7g.40gb", 0)
            ]
        );
    }

    #[test]
    fn h100_3g_carved_admission_11_2() {
        let card = seed(h100_80gb());
        let card = charge(&card, &Charge::Partition(inst("3g.40gb", 0, 4))).unwrap();
        let rem = counts(&card.row.remaining_profiles);
        assert_eq!(
            rem,
            [
                ("1g.10gb", 3),
                ("1g.20gb", 2),
                ("2g.20gb", 1),
                ("3g.40gb", 1),
                ("4g.40gb", 0),
                ("7g.80gb", 0)
            ]
        );
        // The second 3g.40gb fits at 4; a third has no placement left.
        let card = charge(&card, &Charge::Partition(inst("3g.40gb", 4, 4))).unwrap();
        assert_eq!(lowest_free_placement(&card, "3g.40gb"), None);
        assert!(matches!(
            charge(&card, &Charge::Partition(inst("1g.10gb", 5, 1))),
            Err(ChargeError::PlacementOccupied { .. })
        ));
    }

    #[test]
    fn impossible_charges_are_values() {
        let whole = seed(logical(2));
        let ex = charge(&whole, &Charge::Exclusive).unwrap();
        assert_eq!(ex.row.remaining_units, 0);
        assert_eq!(ex.row.mode, Mode::Exclusive);
        assert!(matches!(
            charge(&ex, &Charge::Share),
            Err(ChargeError::HeldInOtherMode { .. })
        ));
        assert!(matches!(
            charge(&ex, &Charge::Exclusive),
            Err(ChargeError::NotWhollyFree { .. })
        ));
        assert_eq!(
            charge(&whole, &Charge::Partition(inst("1g.10gb", 0, 1))),
            Err(ChargeError::NotServed("partitioned"))
        );
        let mig = seed(h100_80gb());
        assert_eq!(
            charge(&mig, &Charge::Exclusive),
            Err(ChargeError::NotServed("exclusive"))
        );
        assert!(matches!(
            charge(&mig, &Charge::Partition(inst("1g.10gb", 7, 1))),
            Err(ChargeError::IllegalPlacement { .. })
        ));
        assert!(matches!(
            charge(&mig, &Charge::Partition(inst("9g.90gb", 0, 1))),
            Err(ChargeError::UnknownProfile(_))
        ));
        // Slot and units refusals carry the allocator's wording.
        let s = charge(&whole, &Charge::Slice { units: 400_000 }).unwrap();
        let s = charge(&s, &Charge::Slice { units: 400_000 }).unwrap();
        let e = charge(&s, &Charge::Slice { units: 1 }).unwrap_err();
        assert_eq!(e.to_string(), "it already hosts 2 of its 2 slices");
        let one = seed(logical(4));
        let one = charge(&one, &Charge::Slice { units: 1_000_000 }).unwrap();
        let e = charge(&one, &Charge::Slice { units: 960_000 }).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it has 600000 of 1600000 units free and the slice needs 960000"
        );
        assert!(release(&whole, &Charge::Share).is_err());
    }

    #[test]
    fn shares_count_down_to_the_tenth_holder() {
        let mut card = seed(Capability::default());
        for _ in 0..10 {
            card = charge(&card, &Charge::Share).unwrap();
        }
        assert_eq!(card.row.remaining_units, 0);
        assert!(matches!(
            charge(&card, &Charge::Share),
            Err(ChargeError::NoShareLeft { .. })
        ));
        for _ in 0..10 {
            card = release(&card, &Charge::Share).unwrap();
        }
        assert_eq!(card, seed(Capability::default()));
    }

    #[test]
    fn charge_then_release_restores_the_ledger() {
        let card = seed(h100_80gb());
        let c = Charge::Partition(inst("2g.20gb", 2, 2));
        let charged = charge(&card, &c).unwrap();
        assert_ne!(charged, card);
        assert_eq!(release(&charged, &c).unwrap(), card);
        let card = seed(logical(128));
        let c = Charge::Slice { units: 800_000 };
        assert_eq!(release(&charge(&card, &c).unwrap(), &c).unwrap(), card);
    }

    /// Every sequence of up to `depth` charges from `alphabet`: each successful charge is undone
    /// exactly by its release, and the mode is None exactly when nothing is held.
    fn explore(card: &CardLedger, alphabet: &[Charge], depth: usize, visited: &mut usize) {
        for c in alphabet {
            let Ok(next) = charge(card, c) else { continue };
            *visited += 1;
            assert_eq!(
                release(&next, c).as_ref(),
                Ok(card),
                "release of {c:?} is not the inverse"
            );
            assert_ne!(next.row.mode, Mode::None);
            if depth > 1 {
                explore(&next, alphabet, depth - 1, visited);
            }
        }
    }

    #[test]
    fn exhaustive_small_cases_release_inverts_charge() {
        let scalar = [
            Charge::Exclusive,
            Charge::Share,
            Charge::Slice { units: 0 },
            Charge::Slice { units: 400_000 },
            Charge::Slice { units: 1_600_000 },
            Charge::Slice { units: 2_000_000 },
        ];
        let mut visited = 0;
        explore(&seed(logical(3)), &scalar, 4, &mut visited);
        explore(&seed(Capability::default()), &scalar, 4, &mut visited);
        for cap in [a100_40gb(), h100_80gb()] {
            let alphabet: Vec<Charge> = cap
                .physical_profiles
                .iter()
                .flat_map(|p| {
                    p.placements
                        .iter()
                        .map(|pl| Charge::Partition(inst(&p.name, pl.start, pl.length)))
                })
                .collect();
            explore(&seed(cap), &alphabet, 3, &mut visited);
        }
        assert!(visited > 1000, "explored only {visited} charges");
    }

    #[test]
    fn overlap_is_half_open() {
        let p = |start, length| Placement { start, length };
        assert!(placements_overlap(&p(0, 4), &p(3, 1)));
        assert!(!placements_overlap(&p(0, 4), &p(4, 4)));
        assert!(!placements_overlap(&p(4, 2), &p(0, 4)));
        assert!(placements_overlap(&p(0, 8), &p(6, 2)));
    }
}
