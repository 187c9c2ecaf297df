//! InstanceType status views: the four accelerator views (EX/SH/SL/PT), the CPU view and the
//! phase (research/chain.md §9, §17 rules 19–23; corrections.md 1, 7, 8; admission.md §10).
//!
//! Decision on the SL slot gate (corrections.md 8, chain.md §18 Q3): the gate belongs to the
//! same revision as the card-count SH once-max (instance_type.go @7b0508ff, admission.md §10),
//! so it is switched by the same contract variant: under [`SharedOnceMax::Cards`] (newest) a
//! free-or-Sliced logical card feeds SL remaining/once-max only while it has a free slot
//! (`logical_sliced_count − allocated_slices > 0`); under [`SharedOnceMax::Shares`] (@0ae3355,
//! @01712e2) there is no slot gate. SL capacity counts every logical card either way.

use std::collections::BTreeMap;

use crate::cluster::SharedOnceMax;
use crate::devices::{Capability, Card, Devices, Ledger, Mode, ProfileCount};
use crate::objects::{Detail, FourViews, PartitionView, Phase, ResourceView, StopPolicy};
use crate::profiles::{publish_profile_name, publish_profiles};
use crate::units::{SHARES_PER_CARD, UNITS_PER_PERCENT, UNITS_PER_SHARE};

/// VRAM-percent units per card in the SL view.
pub const PERCENT_PER_CARD: i64 = 100;

/// Which family a card serves, decided by its reported capability (never by its ledger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardFamily {
    /// Physical partitioning: feeds PT only.
    Partitioned,
    /// Whole-card use plus logical slices: feeds EX, SH and SL.
    LogicallySliceable,
    /// Whole-card use only (no slicing capability, or no spec entry): feeds EX and SH.
    WholeOnly,
}

/// The family a card's capability puts it in; chain.md §4 (pkg/device/population.go).
pub fn card_family(capability: &Capability) -> CardFamily {
    if capability.is_partitioned() {
        CardFamily::Partitioned
    } else if capability.is_logically_sliceable() {
        CardFamily::LogicallySliceable
    } else {
        CardFamily::WholeOnly
    }
}

/// `LogicalSlotsFree`, assumed `max(0, count − allocatedSlices)`; corrections.md 8.
pub fn logical_slots_free(capability: &Capability, allocated_slices: u32) -> u32 {
    capability
        .logical_sliced_count
        .saturating_sub(allocated_slices)
}

/// Whether a ledger row may host shares: wholly free or already Shared; chain.md §9.1.
fn hosts_shares(ledger: &Ledger) -> bool {
    ledger.is_free() || ledger.mode == Mode::Shared
}

/// Whether a logical card's free percent counts in SL under `rule`; chain.md §9.1 and the
/// module note on the slot gate (admission.md §10).
fn hosts_slices(ledger: &Ledger, capability: &Capability, rule: SharedOnceMax) -> bool {
    let mode_ok = ledger.is_free() || ledger.mode == Mode::Sliced;
    let slot_ok = match rule {
        SharedOnceMax::Shares => true,
        SharedOnceMax::Cards => logical_slots_free(capability, ledger.allocated_slices) > 0,
    };
    mode_ok && slot_ok
}

/// Whole free shares left on a card (⌊remaining / 160,000⌋, never negative).
fn free_shares(ledger: &Ledger) -> i64 {
    ledger.remaining_units.max(0) / UNITS_PER_SHARE
}

/// Whole free VRAM percent left on a card (⌊remaining / 16,000⌋, never negative).
fn free_percent(ledger: &Ledger) -> i64 {
    ledger.remaining_units.max(0) / UNITS_PER_PERCENT
}

/// One node's tallies over its unpartitioned cards of the pool's group; chain.md §9.1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeTally {
    /// Unpartitioned cards with a ledger row.
    pub cards: i64,
    /// Wholly free cards.
    pub free_cards: i64,
    /// Σ free shares over free or Shared cards.
    pub free_shares: i64,
    /// Free or Shared cards with at least one free share.
    pub cards_with_free_share: i64,
    /// Logically sliceable cards.
    pub logical_cards: i64,
    /// Σ free percent over logical cards that may host a slice.
    pub free_percent: i64,
    /// The freest such card's percent.
    pub freest_card_percent: i64,
}

/// Folds one ledger row (capability joined) into a node tally; chain.md §9.1.
fn tally_card(
    tally: &mut NodeTally,
    capability: &Capability,
    ledger: &Ledger,
    rule: SharedOnceMax,
) {
    if card_family(capability) == CardFamily::Partitioned {
        return;
    }
    tally.cards += 1;
    if ledger.is_free() {
        tally.free_cards += 1;
    }
    if hosts_shares(ledger) {
        let shares = free_shares(ledger);
        tally.free_shares += shares;
        if shares > 0 {
            tally.cards_with_free_share += 1;
        }
    }
    if card_family(capability) != CardFamily::LogicallySliceable {
        return;
    }
    tally.logical_cards += 1;
    if hosts_slices(ledger, capability, rule) {
        let pct = free_percent(ledger);
        tally.free_percent += pct;
        tally.freest_card_percent = tally.freest_card_percent.max(pct);
    }
}

/// The cards of the pool's own group on one node (`manufacturer-id == pool_key`).
fn pool_cards<'a>(devices: &'a Devices, pool_key: &'a str) -> impl Iterator<Item = &'a Card> + 'a {
    devices.groups_of(pool_key).flat_map(|g| g.cards.iter())
}

/// One node's EX/SH/SL tally, enumerated from ledger rows (a missing spec entry reads as zero
/// capability); chain.md §9.1; instance_type.go @01712e2.
pub fn node_tally(devices: &Devices, pool_key: &str, rule: SharedOnceMax) -> NodeTally {
    let mut tally = NodeTally::default();
    for card in pool_cards(devices, pool_key) {
        if let Some(ledger) = &card.ledger {
            tally_card(&mut tally, &card.capability_or_default(), ledger, rule);
        }
    }
    tally
}

/// EX view from node tallies: cards; once-max = largest node's free cards; chain.md §9.1.
fn exclusive_view(tallies: &[NodeTally]) -> ResourceView {
    ResourceView {
        once_max_request: tallies.iter().map(|t| t.free_cards).max().unwrap_or(0),
        remaining: tallies.iter().map(|t| t.free_cards).sum(),
        capacity: tallies.iter().map(|t| t.cards).sum(),
    }
}

/// SH view: shares, 10 per card; once-max per `rule` (corrections.md 1).
fn shared_view(tallies: &[NodeTally], rule: SharedOnceMax) -> ResourceView {
    let per_node_once_max = |t: &NodeTally| match rule {
        SharedOnceMax::Cards => t.cards_with_free_share,
        SharedOnceMax::Shares => t.free_shares,
    };
    ResourceView {
        once_max_request: tallies.iter().map(per_node_once_max).max().unwrap_or(0),
        remaining: tallies.iter().map(|t| t.free_shares).sum(),
        capacity: tallies.iter().map(|t| t.cards * SHARES_PER_CARD).sum(),
    }
}

/// SL view: VRAM percent, 100 per logical card; once-max = freest single card; chain.md §9.1.
fn sliced_view(tallies: &[NodeTally]) -> ResourceView {
    ResourceView {
        once_max_request: tallies
            .iter()
            .map(|t| t.freest_card_percent)
            .max()
            .unwrap_or(0),
        remaining: tallies.iter().map(|t| t.free_percent).sum(),
        capacity: tallies
            .iter()
            .map(|t| t.logical_cards * PERCENT_PER_CARD)
            .sum(),
    }
}

/// Instances a partitioned card can still host: the largest remaining-profile count when the
/// ledger is ready, else the capability ceiling; chain.md §9.2 (`remainingPartitionInstances`).
pub fn card_partition_remaining(capability: &Capability, ledger: Option<&Ledger>) -> i64 {
    match ledger.filter(|l| l.partition_ready()) {
        Some(l) => l
            .remaining_profiles
            .iter()
            .map(|p| i64::from(p.count))
            .max()
            .unwrap_or(0),
        None => i64::from(capability.physical_sliced_count),
    }
}

/// The pool's PT accumulator (name-keyed, so the lists come out name-sorted).
#[derive(Clone, Debug, Default)]
struct PartitionTally {
    capacity: i64,
    remaining: i64,
    any_placeable: bool,
    allocated: BTreeMap<String, u32>,
    remaining_profiles: BTreeMap<String, u32>,
}

impl PartitionTally {
    /// Folds one partitioned card (spec side, ledger joined); chain.md §9.2 (`addCard`).
    fn add_card(&mut self, capability: &Capability, ledger: Option<&Ledger>) {
        self.capacity += i64::from(capability.physical_sliced_count);
        let card_remaining = card_partition_remaining(capability, ledger);
        self.remaining += card_remaining;
        self.any_placeable |= card_remaining > 0;
        self.add_profiles(capability, ledger);
    }

    /// Every catalogued profile gets a remaining entry (zeros kept); a card without a ready
    /// ledger adds its catalog counts, else the ledger's counts; chain.md §9.2 (`addProfiles`).
    fn add_profiles(&mut self, capability: &Capability, ledger: Option<&Ledger>) {
        let ready = ledger.filter(|l| l.partition_ready());
        for p in &capability.physical_profiles {
            let entry = self.remaining_profiles.entry(p.name.clone()).or_insert(0);
            if ready.is_none() {
                *entry = entry.saturating_add(p.count);
            }
        }
        let Some(l) = ready else { return };
        add_counts(&mut self.allocated, &l.allocated_profiles);
        add_counts(&mut self.remaining_profiles, &l.remaining_profiles);
    }

    fn into_view(self) -> PartitionView {
        PartitionView {
            view: ResourceView {
                once_max_request: i64::from(self.any_placeable),
                remaining: self.remaining,
                capacity: self.capacity,
            },
            allocated_profiles: into_counts(self.allocated),
            remaining_profiles: into_counts(self.remaining_profiles),
        }
    }
}

/// Sums a `{name, count}` list into a name-keyed map.
fn add_counts(into: &mut BTreeMap<String, u32>, list: &[ProfileCount]) {
    for p in list {
        let entry = into.entry(p.name.clone()).or_insert(0);
        *entry = entry.saturating_add(p.count);
    }
}

/// A name-keyed map as a name-sorted `{name, count}` list.
fn into_counts(map: BTreeMap<String, u32>) -> Vec<ProfileCount> {
    map.into_iter()
        .map(|(name, count)| ProfileCount { name, count })
        .collect()
}

/// PT view over every node, enumerated from the capability side with the ledger joined in
/// (vendor spelling, name-sorted); chain.md §9.2; instance_type.go `poolPartitionView`.
pub fn partition_view(devices: &[&Devices], pool_key: &str) -> PartitionView {
    let mut tally = PartitionTally::default();
    for node in devices {
        for card in pool_cards(node, pool_key) {
            if let Some(cap) = card.capability.as_ref().filter(|c| c.is_partitioned()) {
                tally.add_card(cap, card.ledger.as_ref());
            }
        }
    }
    tally.into_view()
}

/// `getAcceleratorResources`: the four views over the pool's own group, one `&Devices` per
/// node; PT profile names stay in vendor spelling until [`publish_status_profiles`];
/// chain.md §9.1–9.2; corrections.md 1; instance_type.go @01712e2 / @7b0508ff.
pub fn four_views(devices: &[&Devices], pool_key: &str, rule: SharedOnceMax) -> FourViews {
    let tallies: Vec<NodeTally> = devices
        .iter()
        .map(|d| node_tally(d, pool_key, rule))
        .collect();
    FourViews {
        exclusive: exclusive_view(&tallies),
        shared: shared_view(&tallies, rule),
        sliced: sliced_view(&tallies),
        partitioned: partition_view(devices, pool_key),
    }
}

/// Whether a queue's stop policy zeroes every status view (`HoldAndDrain`); chain.md §9 order.
pub fn views_zeroed_by(stop_policy: StopPolicy) -> bool {
    stop_policy == StopPolicy::HoldAndDrain
}

/// The accelerator views as the status shows them: all zero on a draining queue, else
/// [`four_views`]; chain.md §9 order, §17 rule 19.
pub fn pool_views(
    devices: &[&Devices],
    pool_key: &str,
    rule: SharedOnceMax,
    stop_policy: StopPolicy,
) -> FourViews {
    if views_zeroed_by(stop_policy) {
        FourViews::default()
    } else {
        four_views(devices, pool_key, rule)
    }
}

/// `publishPartitionProfileNames`: rename the Detail's offered profiles and both PT ledgers to
/// the published spelling of `detail.manufacturer` and re-sort the two ledgers by name; a
/// status with no manufacturer yet is left alone; chain.md §9 order; instance_type.go.
pub fn publish_status_profiles(detail: &mut Detail, partitioned: &mut PartitionView) {
    let manufacturer = detail.manufacturer.as_str();
    if manufacturer.is_empty() {
        return;
    }
    for p in &mut detail.sliced_detail.physical.profiles {
        p.name = publish_profile_name(manufacturer, &p.name);
    }
    partitioned.allocated_profiles =
        publish_profiles(manufacturer, &partitioned.allocated_profiles);
    partitioned.remaining_profiles =
        publish_profiles(manufacturer, &partitioned.remaining_profiles);
}

/// One flavor of a CPU pool's ClusterQueue: nominal `cpu` quota and reserved `cpu` total (cores).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuFlavorUsage {
    pub name: String,
    pub nominal_cpu: i64,
    pub reserved_cpu: i64,
}

/// Reservation millicores per core of limit for a non-accelerated pod under overcommit
/// (`ScaleBackOvercommit(cpu, total, acceleratable=false)`: limit = ⌊millis / 800⌋ cores;
/// pkg/.../kuberequest overcommit.go). `getCPUResource` always uses the non-accelerated base.
pub const CPU_OVERCOMMIT_BASE_MILLIS: i64 = 800;

/// Flavor-name topology profile marker (`-fnv64-<hash>`), cut before reading the count.
const TOPOLOGY_PROFILE_MARKER: &str = "-fnv64-";

/// `parseNodeFlavorCount`: the per-node `<n>c|<n>d` segment of a flavor name, scanned from the
/// end after cutting a `-fnv64-…` tail; 0 when none (instance_type.go, newest revision).
/// Kept local to the CPU view; the flavor module may own an equivalent.
pub fn flavor_node_count(name: &str) -> i64 {
    let head = name
        .rfind(TOPOLOGY_PROFILE_MARKER)
        .map_or(name, |i| &name[..i]);
    head.rsplit('-')
        .filter(|seg| seg.len() >= 2)
        .find_map(|seg| {
            seg.strip_suffix(['c', 'd'])
                .and_then(|n| n.parse::<i64>().ok())
        })
        .unwrap_or(0)
}

/// A reserved CPU total scaled back from overcommit units: ⌊cores×1000 / base⌋; a base ≤ 0
/// disables scaling (chain.md §9.4; corrections.md 7).
fn scale_back_reserved(reserved_cpu: i64, overcommit_base_millis: i64) -> i64 {
    if overcommit_base_millis <= 0 {
        return reserved_cpu;
    }
    reserved_cpu.saturating_mul(1000) / overcommit_base_millis
}

/// `getCPUResource`: capacity = Σ nominal; remaining = capacity − Σ reserved (each scaled back
/// from overcommit units when `with_overcommit`), floored at 0; once-max = largest per-node
/// core count from the flavor names, capped at remaining; chain.md §9.4; corrections.md 7.
/// Pass [`CPU_OVERCOMMIT_BASE_MILLIS`] as `overcommit_base_millis`.
pub fn cpu_view(
    flavors: &[CpuFlavorUsage],
    with_overcommit: bool,
    overcommit_base_millis: i64,
) -> ResourceView {
    let capacity: i64 = flavors.iter().map(|f| f.nominal_cpu).sum();
    let reserved: i64 = flavors
        .iter()
        .map(|f| {
            if with_overcommit {
                scale_back_reserved(f.reserved_cpu, overcommit_base_millis)
            } else {
                f.reserved_cpu
            }
        })
        .sum();
    let remaining = (capacity - reserved).max(0);
    let largest_node = flavors
        .iter()
        .map(|f| flavor_node_count(&f.name))
        .max()
        .unwrap_or(0)
        .max(0);
    ResourceView {
        once_max_request: largest_node.min(remaining),
        remaining,
        capacity,
    }
}

/// `GetSummaryOfClusterQueue`: Hold → Inactive; HoldAndDrain → Draining while reservations or
/// admitted workloads remain, else Inactive; otherwise the `Active` condition: true → Active,
/// false → Inactive, unknown/absent → Transitioning; chain.md §9.6 (apistatus).
pub fn phase(stop_policy: StopPolicy, has_reservations: bool, active: Option<bool>) -> Phase {
    match (stop_policy, active) {
        (StopPolicy::Hold, _) => Phase::Inactive,
        (StopPolicy::HoldAndDrain, _) if has_reservations => Phase::Draining,
        (StopPolicy::HoldAndDrain, _) => Phase::Inactive,
        (StopPolicy::None, Some(true)) => Phase::Active,
        (StopPolicy::None, Some(false)) => Phase::Inactive,
        (StopPolicy::None, None) => Phase::Transitioning,
    }
}
