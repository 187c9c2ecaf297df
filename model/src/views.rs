//! InstanceType status views: the four accelerator views (EX/SH/SL/PT), the CPU view and the
//! phase (research/chain.md §9, §17 rules 19–23; corrections.md 1, 7, 8; admission.md §10).
//!
//! Decision on the SL slot gate (corrections.md 8, chain.md §18 Q3): the gate belongs to the
//! same revision as the card-count SH once-max (instance_type.go @7b0508ff, admission.md §10),
//! so it is switched by the same contract variant: under [`SharedOnceMax::Cards`] (newest) a
//! free-or-Sliced logical card feeds SL remaining/once-max only while it has a free slot
//! (`logical_sliced_count − allocated_slices > 0`); under [`SharedOnceMax::Shares`] (@0ae3355,
//! @01712e2) there is no slot gate. SL capacity counts every logical card either way.

use crate::cluster::SharedOnceMax;
use crate::devices::{logical_slots_free, Capability, Card, Devices, Ledger, Mode, ProfileCount};
use crate::nodefeature::parse_flavor_count;
use crate::objects::{
    ClusterQueue, Detail, FourViews, PartitionView, Phase, ResourceView, StopPolicy,
};
use crate::profiles::{publish_profile_name, publish_profiles};
use crate::queue::FlavorUsage;
use crate::units::{SHARES_PER_CARD, UNITS_PER_PERCENT};

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
        let shares = ledger.free_shares();
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
    let no_capability = Capability::default();
    for card in pool_cards(devices, pool_key) {
        if let Some(ledger) = &card.ledger {
            let capability = card.capability.as_ref().unwrap_or(&no_capability);
            tally_card(&mut tally, capability, ledger, rule);
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

/// The pool's PT accumulator; its profile lists come out name-sorted.
#[derive(Clone, Debug, Default)]
struct PartitionTally {
    capacity: i64,
    remaining: i64,
    any_placeable: bool,
    allocated: ProfileSums,
    remaining_profiles: ProfileSums,
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
            let by = if ready.is_none() { p.count } else { 0 };
            self.remaining_profiles.add(&p.name, by);
        }
        let Some(l) = ready else { return };
        self.allocated.add_all(&l.allocated_profiles);
        self.remaining_profiles.add_all(&l.remaining_profiles);
    }

    fn into_view(self) -> PartitionView {
        PartitionView {
            view: ResourceView {
                once_max_request: i64::from(self.any_placeable),
                remaining: self.remaining,
                capacity: self.capacity,
            },
            allocated_profiles: self.allocated.into_sorted(),
            remaining_profiles: self.remaining_profiles.into_sorted(),
        }
    }
}

/// Profile counts summed by name, kept in the order first met. The cards of a pool list their
/// catalog's profiles in one order, so the entry after the last one added is tried first: one
/// comparison a profile rather than a search. Sorted by name once, at the end.
#[derive(Clone, Debug, Default)]
struct ProfileSums {
    sums: Vec<ProfileCount>,
    next: usize,
}

impl ProfileSums {
    /// Adds `by` to `name`'s count, creating the entry (at `by`) if absent; the name is only
    /// copied for a new entry.
    fn add(&mut self, name: &str, by: u32) {
        let at = match self.sums.get(self.next) {
            Some(p) if p.name == name => Some(self.next),
            _ => self.sums.iter().position(|p| p.name == name),
        };
        match at {
            Some(i) => {
                let count = &mut self.sums[i].count;
                *count = count.saturating_add(by);
                self.next = i + 1;
            }
            None => {
                self.sums.push(ProfileCount {
                    name: name.into(),
                    count: by,
                });
                self.next = self.sums.len();
            }
        }
    }

    /// Adds each entry of a `{name, count}` list.
    fn add_all(&mut self, list: &[ProfileCount]) {
        for p in list {
            self.add(&p.name, p.count);
        }
    }

    /// The sums as a name-sorted `{name, count}` list.
    fn into_sorted(mut self) -> Vec<ProfileCount> {
        self.sums.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        self.sums
    }
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
        p.name = publish_profile_name(manufacturer, &p.name).into();
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

/// The resource a CPU pool's queue covers and Kueue reserves.
pub const CPU_RESOURCE: &str = "cpu";

/// `getCPUResource`'s inputs from a ClusterQueue: every flavor's nominal `cpu` quota
/// (spec.resourceGroups covering `cpu`) and the `cpu` Kueue has reserved on it
/// (status.flavorsReservation, `reservation` here). A reservation row of a flavor the spec no
/// longer lists still counts against remaining, under an unnamed entry (no node count).
/// instance_type.go `getCPUResource` (TestClusterQueueCPUResource).
pub fn cpu_usage(queue: &ClusterQueue, reservation: &[FlavorUsage]) -> Vec<CpuFlavorUsage> {
    let mut usage: Vec<CpuFlavorUsage> = queue
        .resource_groups
        .iter()
        .filter(|g| g.covered_resources.iter().any(|r| r == CPU_RESOURCE))
        .flat_map(|g| g.flavors.iter())
        .map(|f| CpuFlavorUsage {
            name: f.flavor.to_string(),
            nominal_cpu: f.nominal_quota,
            reserved_cpu: 0,
        })
        .collect();
    let mut orphaned = 0i64;
    for row in reservation.iter().filter(|r| r.resource == CPU_RESOURCE) {
        match usage.iter_mut().find(|u| u.name == row.flavor) {
            Some(u) => u.reserved_cpu = u.reserved_cpu.saturating_add(row.total),
            None => orphaned = orphaned.saturating_add(row.total),
        }
    }
    if orphaned != 0 {
        usage.push(CpuFlavorUsage {
            name: String::new(),
            nominal_cpu: 0,
            reserved_cpu: orphaned,
        });
    }
    usage
}

/// The CPU view a CPU pool's status shows: zero while its queue holds and drains (the
/// `!draining` branch of `computeStatus` skips it as it skips the accelerator views,
/// corrections.md 17), else [`cpu_view`] over [`cpu_usage`]; instance_type.go
/// `computeStatus` / `getCPUResource`.
pub fn pool_cpu_view(
    queue: &ClusterQueue,
    reservation: &[FlavorUsage],
    with_overcommit: bool,
) -> ResourceView {
    if views_zeroed_by(queue.stop_policy) {
        ResourceView::default()
    } else {
        cpu_view(
            &cpu_usage(queue, reservation),
            with_overcommit,
            CPU_OVERCOMMIT_BASE_MILLIS,
        )
    }
}

/// Reservation millicores per core of limit for a non-accelerated pod under overcommit
/// (`ScaleBackOvercommit(cpu, total, acceleratable=false)`: limit = ⌊millis / 800⌋ cores;
/// `kuberequest.ScaleBackOvercommit`). `getCPUResource` always uses the non-accelerated base.
pub const CPU_OVERCOMMIT_BASE_MILLIS: i64 = 800;

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
        .map(|f| i64::try_from(parse_flavor_count(&f.name)).unwrap_or(i64::MAX))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{DeviceGroup, PartitionProfile};
    use crate::units::UNITS_PER_CARD;
    use crate::units::UNITS_PER_SHARE;

    const A10G: &str = "nvidia-a10g";

    fn logical_cap() -> Capability {
        Capability {
            logical_sliced_count: 10,
            ..Capability::default()
        }
    }

    fn partition_cap(ceiling: u32, catalog: &[(&str, u32)]) -> Capability {
        Capability {
            physical_sliced_count: ceiling,
            physical_profiles: catalog
                .iter()
                .map(|(name, count)| PartitionProfile {
                    name: (*name).into(),
                    count: *count,
                    ..PartitionProfile::default()
                })
                .collect(),
            ..Capability::default()
        }
    }

    fn counts(list: &[(&str, u32)]) -> Vec<ProfileCount> {
        list.iter()
            .map(|(name, count)| ProfileCount {
                name: (*name).into(),
                count: *count,
            })
            .collect()
    }

    fn ledger(mode: Mode, remaining_units: i64) -> Ledger {
        Ledger {
            mode,
            remaining_units,
            ..Ledger::default()
        }
    }

    /// chain.md §9.3 ledger tokens: f, e, s<n> (n shares free), l<n> (n % free).
    fn token(t: &str) -> Ledger {
        let num = |s: &str| s.parse::<i64>().unwrap_or(0);
        match t.split_at(1) {
            ("f", _) => ledger(Mode::None, UNITS_PER_CARD),
            ("e", _) => ledger(Mode::Exclusive, 0),
            ("s", n) => ledger(Mode::Shared, num(n) * UNITS_PER_SHARE),
            ("l", n) => ledger(Mode::Sliced, num(n) * UNITS_PER_PERCENT),
            _ => panic!("unknown ledger token {t}"),
        }
    }

    fn card(i: usize, capability: Option<Capability>, ledger: Option<Ledger>) -> Card {
        Card {
            id: format!("card-{i}"),
            index: i as u32,
            capability,
            ledger,
        }
    }

    fn node(manufacturer: &str, id: &str, cards: Vec<Card>) -> Devices {
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: manufacturer.into(),
                id: id.into(),
                cards,
                ..DeviceGroup::default()
            }],
        }
    }

    /// One A10G node whose logical cards carry the given ledger tokens.
    fn a10g_node(tokens: &str) -> Devices {
        let cards = tokens
            .split_whitespace()
            .enumerate()
            .map(|(i, t)| card(i, Some(logical_cap()), Some(token(t))))
            .collect();
        node("nvidia", "a10g", cards)
    }

    fn rv(once_max_request: i64, remaining: i64, capacity: i64) -> ResourceView {
        ResourceView {
            once_max_request,
            remaining,
            capacity,
        }
    }

    fn views(nodes: &[Devices], rule: SharedOnceMax) -> FourViews {
        let refs: Vec<&Devices> = nodes.iter().collect();
        four_views(&refs, A10G, rule)
    }

    /// chain.md §9.3: the whole 8×A10G table (e2e case-6), with SH once-max under both rules.
    #[test]
    fn a10g_ledger_table_case_6() {
        // (ledger, EX rem, SH rem, SL rem, SH once-max under Cards)
        let rows = [
            ("f f f f f f f f", 8, 80, 800, 8),
            ("e e f f f f f f", 6, 60, 600, 6),
            ("e e s9 s9 f f f f", 4, 58, 400, 6),
            ("e e s9 s9 l80 l80 f f", 2, 38, 360, 4),
            ("e e s9 s9 l78 l78 f f", 2, 38, 356, 4),
            ("e e e s9 s9 l78 l78 f", 1, 28, 256, 3),
        ];
        for (tokens, ex, sh, sl, sh_cards) in rows {
            let nodes = [a10g_node(tokens)];
            let old = views(&nodes, SharedOnceMax::Shares);
            assert_eq!(old.exclusive, rv(ex, ex, 8), "{tokens}");
            assert_eq!(old.shared, rv(sh, sh, 80), "{tokens}");
            assert_eq!(old.sliced, rv(100, sl, 800), "{tokens}");
            assert_eq!(old.partitioned, PartitionView::default(), "{tokens}");
            let new = views(&nodes, SharedOnceMax::Cards);
            assert_eq!(new.exclusive, old.exclusive, "{tokens}");
            assert_eq!(new.shared, rv(sh_cards, sh, 80), "{tokens}");
            assert_eq!(new.sliced, old.sliced, "{tokens}");
        }
    }

    #[test]
    fn one_free_card_reads_one_of_ten_under_the_card_rule() {
        let nodes = [a10g_node("f")];
        assert_eq!(views(&nodes, SharedOnceMax::Cards).shared, rv(1, 10, 10));
        assert_eq!(views(&nodes, SharedOnceMax::Shares).shared, rv(10, 10, 10));
    }

    #[test]
    fn multi_node_rollup() {
        let nodes = [a10g_node("f f f f"), a10g_node("f f")];
        let old = views(&nodes, SharedOnceMax::Shares);
        assert_eq!(old.exclusive, rv(4, 6, 6));
        assert_eq!(old.shared, rv(40, 60, 60));
        assert_eq!(old.sliced, rv(100, 600, 600));
        assert_eq!(views(&nodes, SharedOnceMax::Cards).shared, rv(4, 60, 60));
    }

    #[test]
    fn sliced_once_max_is_the_freest_card() {
        let nodes = [a10g_node("l40 l30 l20")];
        assert_eq!(views(&nodes, SharedOnceMax::Cards).sliced, rv(40, 90, 300));
    }

    #[test]
    fn walkthrough_t4_pool_over_one_and_four_cards() {
        let t4 = |n: usize| {
            let cards = (0..n)
                .map(|i| card(i, Some(logical_cap()), Some(token("f"))))
                .collect();
            node("nvidia", "tesla-t4", cards)
        };
        let nodes = [t4(1), t4(4)];
        let refs: Vec<&Devices> = nodes.iter().collect();
        let v = four_views(&refs, "nvidia-tesla-t4", SharedOnceMax::Shares);
        assert_eq!(v.exclusive, rv(4, 5, 5));
        assert_eq!(v.shared, rv(40, 50, 50));
        assert_eq!(v.sliced, rv(100, 500, 500));
    }

    #[test]
    fn mixed_node_feeds_each_card_to_one_family() {
        let pt = partition_cap(7, &[]);
        let mut pt_ledger = ledger(Mode::Partitioned, UNITS_PER_CARD);
        pt_ledger.remaining_profiles = counts(&[("1g.5gb", 7), ("2g.10gb", 3)]);
        let nodes = [node(
            "nvidia",
            "a10g",
            vec![
                card(0, Some(logical_cap()), Some(token("f"))),
                card(1, Some(pt), Some(pt_ledger)),
            ],
        )];
        let v = views(&nodes, SharedOnceMax::Shares);
        assert_eq!(v.exclusive, rv(1, 1, 1));
        assert_eq!(v.shared, rv(10, 10, 10));
        assert_eq!(v.sliced, rv(100, 100, 100));
        assert_eq!(v.partitioned.view, rv(1, 7, 7));
    }

    fn pt_card(i: usize, remaining: &[(&str, u32)]) -> Card {
        let mut l = ledger(Mode::Partitioned, UNITS_PER_CARD);
        l.remaining_profiles = counts(remaining);
        card(i, Some(partition_cap(7, &[])), Some(l))
    }

    #[test]
    fn partition_only_pool() {
        let rem = [("1g.5gb", 7), ("2g.10gb", 3), ("3g.20gb", 2)];
        let nodes = [node(
            "nvidia",
            "a10g",
            vec![pt_card(0, &rem), pt_card(1, &rem)],
        )];
        let v = views(&nodes, SharedOnceMax::Cards);
        assert_eq!(v.exclusive, rv(0, 0, 0));
        assert_eq!(v.shared, rv(0, 0, 0));
        assert_eq!(v.sliced, rv(0, 0, 0));
        assert_eq!(v.partitioned.view, rv(1, 14, 14));
    }

    #[test]
    fn partition_once_max_is_yes_or_no() {
        let a = node(
            "nvidia",
            "a10g",
            vec![pt_card(0, &[("1g.5gb", 4)]), pt_card(1, &[("1g.5gb", 2)])],
        );
        let b = node("nvidia", "a10g", vec![pt_card(0, &[("1g.5gb", 5)])]);
        let v = views(&[a, b], SharedOnceMax::Cards);
        assert_eq!(v.partitioned.view, rv(1, 11, 21));

        let full = node(
            "nvidia",
            "a10g",
            vec![pt_card(0, &[("1g.5gb", 0)]), pt_card(1, &[("1g.5gb", 0)])],
        );
        assert_eq!(
            views(&[full], SharedOnceMax::Cards).partitioned.view,
            rv(0, 0, 14)
        );
    }

    const H100_CATALOG: [(&str, u32); 6] = [
        ("1g.10gb", 7),
        ("2g.20gb", 3),
        ("3g.40gb", 2),
        ("4g.40gb", 1),
        ("7g.80gb", 1),
        ("1g.20gb", 4),
    ];

    fn h100_carved_card(i: usize) -> Card {
        let mut l = ledger(Mode::Partitioned, UNITS_PER_CARD);
        l.remaining_profiles = counts(&[
            ("1g.10gb", 6),
            ("1g.20gb", 3),
            ("2g.20gb", 2),
            ("3g.40gb", 1),
        ]);
        l.allocated_profiles = counts(&[("1g.10gb", 1)]);
        card(i, Some(partition_cap(7, &H100_CATALOG)), Some(l))
    }

    /// chain.md §9.3: one 1g.10gb carved on an H100 squeezes the largest profiles to zero.
    #[test]
    fn h100_carved_profile_ledger() {
        let nodes = [node("nvidia", "h100", vec![h100_carved_card(0)])];
        let refs: Vec<&Devices> = nodes.iter().collect();
        let pt = four_views(&refs, "nvidia-h100", SharedOnceMax::Cards).partitioned;
        assert_eq!(pt.view, rv(1, 6, 7));
        assert_eq!(pt.allocated_profiles, counts(&[("1g.10gb", 1)]));
        assert_eq!(
            pt.remaining_profiles,
            counts(&[
                ("1g.10gb", 6),
                ("1g.20gb", 3),
                ("2g.20gb", 2),
                ("3g.40gb", 1),
                ("4g.40gb", 0),
                ("7g.80gb", 0),
            ])
        );
    }

    #[test]
    fn partition_card_without_ledger_falls_back_to_catalog() {
        let missing = card(1, Some(partition_cap(7, &H100_CATALOG)), None);
        let nodes = [node("nvidia", "h100", vec![h100_carved_card(0), missing])];
        let refs: Vec<&Devices> = nodes.iter().collect();
        let pt = partition_view(&refs, "nvidia-h100");
        assert_eq!(pt.view, rv(1, 13, 14));
        assert_eq!(
            pt.remaining_profiles,
            counts(&[
                ("1g.10gb", 13),
                ("1g.20gb", 7),
                ("2g.20gb", 5),
                ("3g.40gb", 3),
                ("4g.40gb", 1),
                ("7g.80gb", 1),
            ])
        );
    }

    #[test]
    fn only_the_pools_own_group_counts() {
        let mut devices = node(
            "nvidia",
            "a10g",
            vec![card(0, Some(logical_cap()), Some(token("f")))],
        );
        devices.groups.push(DeviceGroup {
            manufacturer: "amd".into(),
            id: "a10g".into(),
            cards: vec![card(0, Some(logical_cap()), Some(token("f")))],
            ..DeviceGroup::default()
        });
        devices.groups.push(DeviceGroup {
            manufacturer: "nvidia".into(),
            id: "l4".into(),
            cards: vec![card(0, Some(logical_cap()), Some(token("f")))],
            ..DeviceGroup::default()
        });
        let v = views(&[devices], SharedOnceMax::Cards);
        assert_eq!(v.exclusive, rv(1, 1, 1));
    }

    #[test]
    fn ledger_only_cards_feed_whole_card_views_only() {
        let cards = ["e", "e", "s9", "s9", "f", "f", "f", "f"]
            .iter()
            .enumerate()
            .map(|(i, t)| card(i, None, Some(token(t))))
            .collect();
        let v = views(&[node("nvidia", "a10g", cards)], SharedOnceMax::Cards);
        assert_eq!(v.exclusive.remaining, 4);
        assert_eq!(v.shared.remaining, 58);
        assert_eq!(v.sliced, rv(0, 0, 0));
    }

    #[test]
    fn slot_gate_applies_only_under_the_card_rule() {
        let cap = Capability {
            logical_sliced_count: 2,
            ..Capability::default()
        };
        let mut full_slots = ledger(Mode::Sliced, 50 * UNITS_PER_PERCENT);
        full_slots.allocated_slices = 2;
        let nodes = [node(
            "nvidia",
            "a10g",
            vec![card(0, Some(cap), Some(full_slots))],
        )];
        assert_eq!(views(&nodes, SharedOnceMax::Cards).sliced, rv(0, 0, 100));
        assert_eq!(views(&nodes, SharedOnceMax::Shares).sliced, rv(50, 50, 100));
    }

    #[test]
    fn draining_queue_zeroes_every_view() {
        let nodes = [a10g_node("f f")];
        let refs: Vec<&Devices> = nodes.iter().collect();
        let open = pool_views(&refs, A10G, SharedOnceMax::Cards, StopPolicy::Hold);
        assert_eq!(open.exclusive, rv(2, 2, 2));
        let drained = pool_views(&refs, A10G, SharedOnceMax::Cards, StopPolicy::HoldAndDrain);
        assert_eq!(drained, FourViews::default());
    }

    #[test]
    fn status_profiles_publish_with_the_detail_manufacturer() {
        let mut detail = Detail {
            manufacturer: "thead".into(),
            ..Detail::default()
        };
        detail.sliced_detail.physical.profiles = vec![PartitionProfile {
            name: "8g96gb".into(),
            count: 1,
            ..PartitionProfile::default()
        }];
        let mut pt = PartitionView {
            remaining_profiles: counts(&[("8g96gb", 1), ("4g48gb", 2)]),
            ..PartitionView::default()
        };
        publish_status_profiles(&mut detail, &mut pt);
        assert_eq!(detail.sliced_detail.physical.profiles[0].name, "8g.96gb");
        assert_eq!(
            pt.remaining_profiles,
            counts(&[("4g.48gb", 2), ("8g.96gb", 1)])
        );

        let mut untouched = PartitionView {
            remaining_profiles: counts(&[("8g96gb", 1), ("4g48gb", 2)]),
            ..PartitionView::default()
        };
        publish_status_profiles(&mut Detail::default(), &mut untouched);
        assert_eq!(
            untouched.remaining_profiles,
            counts(&[("8g96gb", 1), ("4g48gb", 2)])
        );
    }

    fn cpu(name: &str, nominal_cpu: i64, reserved_cpu: i64) -> CpuFlavorUsage {
        CpuFlavorUsage {
            name: name.into(),
            nominal_cpu,
            reserved_cpu,
        }
    }

    /// chain.md §9.4 examples.
    #[test]
    fn cpu_view_examples() {
        let f = "gpustack-generic-linux-amd64-16c";
        let base = CPU_OVERCOMMIT_BASE_MILLIS;
        assert_eq!(cpu_view(&[cpu(f, 48, 0)], false, base), rv(16, 48, 48));
        assert_eq!(cpu_view(&[cpu(f, 48, 8)], false, base), rv(16, 40, 48));
        assert_eq!(cpu_view(&[cpu(f, 48, 40)], false, base), rv(8, 8, 48));
        assert_eq!(cpu_view(&[cpu(f, 48, 60)], false, base), rv(0, 0, 48));
        assert_eq!(cpu_view(&[], false, base), rv(0, 0, 0));
    }

    #[test]
    fn cpu_view_walkthrough_generic_pool() {
        let flavors = [
            cpu(
                "gpustack--generic-linux-amd64-4c-fnv64-87bf574bea2a4f23",
                8,
                0,
            ),
            cpu(
                "gpustack--generic-linux-amd64-16c-fnv64-87bf574bea2a4f23",
                16,
                0,
            ),
            cpu(
                "gpustack--generic-linux-amd64-48c-fnv64-87bf574bea2a4f23",
                48,
                0,
            ),
        ];
        assert_eq!(
            cpu_view(&flavors, false, CPU_OVERCOMMIT_BASE_MILLIS),
            rv(48, 72, 72)
        );
    }

    #[test]
    fn cpu_view_scales_reservations_back_from_overcommit_units() {
        let f = "gpustack-generic-linux-amd64-16c";
        // 8 cores of requests at 800m per core of limit = 10 cores of limit.
        let v = cpu_view(&[cpu(f, 48, 8)], true, CPU_OVERCOMMIT_BASE_MILLIS);
        assert_eq!(v, rv(16, 38, 48));
        // A non-positive base disables the scaling rather than dividing by zero.
        assert_eq!(cpu_view(&[cpu(f, 48, 8)], true, 0), rv(16, 40, 48));
    }

    /// The ClusterQueue of TestClusterQueueCPUResource: one 16-core flavor, 48 nominal cores.
    fn cpu_queue(stop_policy: StopPolicy) -> ClusterQueue {
        use crate::objects::{FlavorQuota, ResourceGroup};
        ClusterQueue {
            stop_policy,
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuota {
                    flavor: "gpustack-generic-linux-amd64-16c".into(),
                    nominal_quota: 48,
                }],
            }],
            ..ClusterQueue::default()
        }
    }

    fn reserved(flavor: &str, resource: &str, total: i64) -> FlavorUsage {
        FlavorUsage {
            flavor: flavor.into(),
            resource: resource.into(),
            total,
            borrowed: 0,
        }
    }

    #[test]
    fn the_pool_cpu_view_subtracts_kueues_reservation() {
        let q = cpu_queue(StopPolicy::None);
        let f = "gpustack-generic-linux-amd64-16c";
        assert_eq!(pool_cpu_view(&q, &[], false), rv(16, 48, 48));
        assert_eq!(
            pool_cpu_view(&q, &[reserved(f, "cpu", 8)], false),
            rv(16, 40, 48)
        );
        assert_eq!(
            pool_cpu_view(&q, &[reserved(f, "cpu", 40)], false),
            rv(8, 8, 48)
        );
        // Only the cpu resource counts; a reservation on a flavor the spec dropped still does.
        assert_eq!(
            pool_cpu_view(&q, &[reserved(f, "memory", 40)], false),
            rv(16, 48, 48)
        );
        assert_eq!(
            pool_cpu_view(&q, &[reserved("gone-4c", "cpu", 40)], false),
            rv(8, 8, 48)
        );
    }

    #[test]
    fn a_draining_queue_shows_no_cpu_view() {
        let f = "gpustack-generic-linux-amd64-16c";
        let r = [reserved(f, "cpu", 8)];
        assert_eq!(
            pool_cpu_view(&cpu_queue(StopPolicy::HoldAndDrain), &r, false),
            rv(0, 0, 0)
        );
        // An admin Hold (no drain) still reports the view.
        assert_eq!(
            pool_cpu_view(&cpu_queue(StopPolicy::Hold), &r, false),
            rv(16, 40, 48)
        );
    }

    #[test]
    fn phase_follows_stop_policy_then_condition() {
        use Phase::*;
        assert_eq!(phase(StopPolicy::Hold, true, Some(true)), Inactive);
        assert_eq!(phase(StopPolicy::HoldAndDrain, true, Some(true)), Draining);
        assert_eq!(phase(StopPolicy::HoldAndDrain, false, Some(true)), Inactive);
        assert_eq!(phase(StopPolicy::None, false, Some(true)), Active);
        assert_eq!(phase(StopPolicy::None, true, Some(false)), Inactive);
        assert_eq!(phase(StopPolicy::None, false, None), Transitioning);
    }

    #[test]
    fn card_families_are_disjoint() {
        assert_eq!(card_family(&partition_cap(7, &[])), CardFamily::Partitioned);
        let both = Capability {
            logical_sliced_count: 10,
            physical_sliced_count: 7,
            ..Capability::default()
        };
        assert_eq!(card_family(&both), CardFamily::Partitioned);
        assert_eq!(card_family(&logical_cap()), CardFamily::LogicallySliceable);
        assert_eq!(card_family(&Capability::default()), CardFamily::WholeOnly);
    }

    proptest::proptest! {
        /// Profile sums equal a name-keyed map's sums, name-sorted, whatever order and repeats
        /// the lists come in (the cursor only saves the search).
        #[test]
        fn profile_sums_are_sums_by_name(
            lists in proptest::collection::vec(
                proptest::collection::vec(("[a-d]g\\.[1-2]0gb", 0u32..8), 0..6),
                0..6,
            ),
        ) {
            let mut sums = ProfileSums::default();
            let mut by_name = std::collections::BTreeMap::<String, u32>::new();
            for list in &lists {
                let list: Vec<ProfileCount> = list
                    .iter()
                    .map(|(name, count)| ProfileCount { name: name.as_str().into(), count: *count })
                    .collect();
                sums.add_all(&list);
                for p in &list {
                    *by_name.entry(p.name.to_string()).or_default() += p.count;
                }
            }
            let expected: Vec<ProfileCount> = by_name
                .into_iter()
                .map(|(name, count)| ProfileCount { name: name.into(), count })
                .collect();
            proptest::prop_assert_eq!(sums.into_sorted(), expected);
        }
    }
}
