//! Per-card fit of a Workload's demands against the cards its flavors cover (admission.md
//! §6.7, §16 R14–R20; corrections.md 4, 5, 8; node_devices_admission.go
//! `nodeDevicesFeasibility`).

use std::collections::BTreeMap;

use crate::devices::Mode;
use crate::devices::{grantable_shares, logical_slots_free};
use crate::profiles::vendor_profile_name;
use crate::resources::Family;
use crate::units::UNITS_PER_CARD;

use super::candidates::{collect_cards, CardSlot, ScopedDevices};
use super::demands::FamilyDemand;
use super::verdict::{
    node_verdict_message, partition_ledger_not_ready_message, partition_no_cards_message,
    partition_verdict_message, verdict_message, CheckState, Verdict, INFLIGHT_SUFFIX,
};

/// What this judgment's earlier demands took from one card; admission.md §6.7.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CardBudget {
    pub whole: bool,
    pub shares: i64,
    pub units: i64,
    pub slices: i64,
    pub placements: i64,
}

/// Per-card budgets of one judgment, in card order, with an undo journal: a Workload that ends
/// in Retry gives back exactly what it tried, and the plan of a Ready one is read off the
/// journal, without copying every card's budget.
#[derive(Clone, Debug, Default)]
pub struct Budgets {
    slots: Vec<CardBudget>,
    journal: Vec<(usize, CardBudget)>,
}

impl Budgets {
    pub fn new(cards: usize) -> Self {
        Budgets {
            slots: vec![CardBudget::default(); cards],
            journal: Vec::new(),
        }
    }

    pub fn get(&self, i: usize) -> Option<&CardBudget> {
        self.slots.get(i)
    }

    /// A card's budget to change; the old value is journaled.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut CardBudget> {
        let old = self.slots.get(i)?.clone();
        self.journal.push((i, old));
        self.slots.get_mut(i)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, CardBudget> {
        self.slots.iter()
    }

    /// A point to roll back to.
    pub fn mark(&self) -> usize {
        self.journal.len()
    }

    /// Undoes every change since `mark`.
    pub fn rollback(&mut self, mark: usize) {
        while self.journal.len() > mark {
            if let Some((i, old)) = self.journal.pop() {
                self.slots[i] = old;
            }
        }
    }

    /// Cards changed since `mark`, each once, in card order, with what was added there.
    pub fn taken_since(&self, mark: usize) -> Vec<(usize, CardBudget)> {
        let mut first: BTreeMap<usize, &CardBudget> = BTreeMap::new();
        for (i, old) in self.journal.iter().skip(mark) {
            first.entry(*i).or_insert(old);
        }
        first
            .into_iter()
            .filter_map(|(i, before)| Some((i, budget_delta(before, self.slots.get(i)?)?)))
            .collect()
    }
}

/// Whether a card's capability lets it serve `family` at all; admission.md §6.6
/// (`servesFamily`).
pub fn serves_family(card: &CardSlot, family: Family) -> bool {
    match family {
        Family::Partitioned => card.capability.is_partitioned(),
        Family::Sliced => card.capability.is_logically_sliceable(),
        _ => card.capability.is_whole_card_capable(),
    }
}

/// The scalar verdict text of a demand: node form when node-scoped; admission.md §6.8.
fn scalar_message(state: CheckState, d: &FamilyDemand) -> String {
    if d.node.is_empty() {
        verdict_message(state, &d.pod_sets)
    } else {
        node_verdict_message(state, &d.node, &d.pod_sets)
    }
}

fn scalar_verdict(fits: bool, d: &FamilyDemand) -> Verdict {
    let state = if fits {
        CheckState::Ready
    } else {
        CheckState::Retry
    };
    Verdict {
        state,
        message: scalar_message(state, d),
    }
}

/// Whether a (covered) card may take a whole-card grant: nothing budgeted, whole-capable and
/// wholly free; admission.md §16 R16.
pub fn exclusive_fits(card: &CardSlot, budget: &CardBudget) -> bool {
    !budget.whole
        && budget.shares == 0
        && budget.slices == 0
        && serves_family(card, Family::Exclusive)
        && card.ledger.remaining_units >= UNITS_PER_CARD
}

/// Exclusive: `cards` distinct wholly free cards, first fit in card order; §6.7.
pub fn fit_exclusive(
    cards: &[CardSlot],
    covered: &[bool],
    budgets: &mut Budgets,
    d: &FamilyDemand,
) -> Verdict {
    let mut fit = 0;
    for (i, card) in cards.iter().enumerate() {
        if fit >= d.cards {
            break;
        }
        let fits = covered.get(i) == Some(&true)
            && budgets.get(i).is_some_and(|b| exclusive_fits(card, b));
        if let Some(budget) = budgets.get_mut(i).filter(|_| fits) {
            budget.whole = true;
            fit += 1;
        }
    }
    scalar_verdict(fit >= d.cards, d)
}

/// Free shares a (covered) card still offers: `remaining div 160,000` on a whole-capable card
/// in mode None/Shared, minus shares budgeted; 0 when budgeted whole or sliced; admission.md
/// §16 R17.
pub fn free_shares(card: &CardSlot, budget: &CardBudget) -> i64 {
    if budget.whole || budget.slices > 0 {
        return 0;
    }
    (grantable_shares(&card.capability, &card.ledger) - budget.shares).max(0)
}

/// The hostname with the most cards offering a free share (ties: the first hostname in
/// sorted order), with those cards' indices; admission.md §6.7 (shared). Cards come grouped by
/// node (collect_cards), so each node's cards are one contiguous run.
fn roomiest_share_node(
    cards: &[CardSlot],
    covered: &[bool],
    budgets: &Budgets,
) -> Option<Vec<usize>> {
    let mut best: Option<(&str, Vec<usize>)> = None;
    let mut start = 0;
    while start < cards.len() {
        let host = cards[start].hostname.as_str();
        let node = cards[start].node;
        let end = cards[start..]
            .iter()
            .position(|c| c.node != node)
            .map_or(cards.len(), |n| start + n);
        let free: Vec<usize> = (start..end)
            .filter(|&i| {
                covered.get(i) == Some(&true)
                    && budgets
                        .get(i)
                        .is_some_and(|b| free_shares(&cards[i], b) > 0)
            })
            .collect();
        let better = match &best {
            None => !free.is_empty(),
            Some((h, v)) => free.len() > v.len() || (free.len() == v.len() && host < *h),
        };
        if better {
            best = Some((host, free));
        }
        start = end;
    }
    best.map(|(_, v)| v)
}

/// Shared: each holder (largest first, once per container) takes one share on N distinct
/// cards of one node — the node with most share-free cards, the N cards with most free
/// shares; admission.md §16 R17; corrections.md 4.
pub fn fit_shared(
    cards: &[CardSlot],
    covered: &[bool],
    budgets: &mut Budgets,
    d: &FamilyDemand,
) -> Verdict {
    for holder in d.shared_holders() {
        for _ in 0..holder.containers {
            let needed = usize::try_from(holder.cards).unwrap_or(usize::MAX);
            let Some(mut on_node) = roomiest_share_node(cards, covered, budgets) else {
                return scalar_verdict(needed == 0, d);
            };
            if on_node.len() < needed {
                return scalar_verdict(false, d);
            }
            // Most free shares first; the stable sort keeps card order among equals.
            on_node.sort_by_key(|&i| {
                std::cmp::Reverse(
                    cards
                        .get(i)
                        .zip(budgets.get(i))
                        .map_or(0, |(c, b)| free_shares(c, b)),
                )
            });
            for i in on_node.into_iter().take(needed) {
                if let Some(b) = budgets.get_mut(i) {
                    b.shares += 1;
                }
            }
        }
    }
    scalar_verdict(true, d)
}

/// Units a card still offers one more slice of this demand, if it may take one: sliceable,
/// mode None/Sliced, a free slot beyond the slices budgeted (free slots = max(0, count −
/// allocatedSlices), corrections.md 8), not budgeted whole or shared (coverage is the
/// caller's); R18.
pub fn free_slice_units(card: &CardSlot, budget: &CardBudget) -> Option<i64> {
    let slots = i64::from(logical_slots_free(
        &card.capability,
        card.ledger.allocated_slices,
    ));
    let eligible = serves_family(card, Family::Sliced)
        && matches!(card.ledger.mode, Mode::None | Mode::Sliced)
        && slots > 0
        && budget.slices < slots
        && !budget.whole
        && budget.shares == 0;
    eligible.then(|| card.ledger.remaining_units - budget.units)
}

/// Logical slices: each slice goes to the card with the fewest free units that still hold
/// `unitsPerCard` (best fit; card order on ties); §6.7, R18.
pub fn fit_sliced(
    cards: &[CardSlot],
    covered: &[bool],
    budgets: &mut Budgets,
    d: &FamilyDemand,
) -> Verdict {
    for _ in 0..d.cards {
        let best = cards
            .iter()
            .zip(budgets.iter())
            .enumerate()
            .filter(|(i, _)| covered.get(*i) == Some(&true))
            .filter_map(|(i, (c, b))| free_slice_units(c, b).map(|free| (i, free)))
            .filter(|&(_, free)| free >= d.units_per_card)
            .min_by_key(|&(i, free)| (free, i));
        let Some(budget) = best.and_then(|(i, _)| budgets.get_mut(i)) else {
            return scalar_verdict(false, d);
        };
        budget.units += d.units_per_card;
        budget.slices += 1;
    }
    scalar_verdict(true, d)
}

/// How many more instances of a published `profile` the card's ledger offers, read under the
/// card manufacturer's own spelling (0 when absent); node_devices_admission.go
/// `remainingProfileCount`.
pub fn remaining_profile_count(card: &CardSlot, profile: &str) -> i64 {
    let vendor = vendor_profile_name(&card.manufacturer, profile);
    card.ledger
        .remaining_profiles
        .iter()
        .find(|p| p.name == vendor)
        .map_or(0, |p| i64::from(p.count))
}

/// Whether any capability profile carries cached placements (the ledger is published).
pub fn placements_cached(card: &CardSlot) -> bool {
    card.capability
        .physical_profiles
        .iter()
        .any(|p| !p.placements.is_empty())
}

fn partition_message(state: CheckState, d: &FamilyDemand) -> String {
    if d.node.is_empty() {
        partition_verdict_message(state, &d.profile, &d.pod_sets)
    } else {
        node_verdict_message(state, &d.node, &d.pod_sets)
    }
}

/// Partitions: walk covered partitioned cards not held in another mode, each instance one
/// placement of `remainingProfiles − budgeted`; only after the walk fails, "no partitioned
/// card" then "ledger not ready" then the shortage (corrections.md 5); §16 R19.
pub fn fit_partition(
    cards: &[CardSlot],
    covered: &[bool],
    budgets: &mut Budgets,
    d: &FamilyDemand,
) -> Verdict {
    let (mut partition_cards, mut ledger_ready, mut fit) = (0, 0, 0);
    for (i, card) in cards.iter().enumerate() {
        if covered.get(i) != Some(&true) || !serves_family(card, Family::Partitioned) {
            continue;
        }
        partition_cards += 1;
        if placements_cached(card) {
            ledger_ready += 1;
        }
        if !matches!(card.ledger.mode, Mode::None | Mode::Partitioned) {
            continue;
        }
        let budgeted = budgets.get(i).map_or(0, |b| b.placements);
        let free = remaining_profile_count(card, &d.profile) - budgeted;
        if free <= 0 {
            continue;
        }
        let take = free.min(d.cards - fit);
        if let Some(budget) = budgets.get_mut(i) {
            budget.placements += take;
        }
        fit += take;
        if fit >= d.cards {
            return Verdict::ready(partition_message(CheckState::Ready, d));
        }
    }
    let message = if partition_cards == 0 {
        partition_no_cards_message(&d.profile, &d.pod_sets)
    } else if ledger_ready == 0 {
        partition_ledger_not_ready_message(&d.pod_sets)
    } else {
        partition_message(CheckState::Retry, d)
    };
    Verdict::retry(message)
}

/// Which cards a demand may use: its flavor covers them and, when node-scoped, they are on
/// its node (`coveredBy`, admission.md §6.4).
pub fn coverage(cards: &[CardSlot], d: &FamilyDemand) -> Vec<bool> {
    cards
        .iter()
        .map(|c| c.covered_by(&d.flavor, &d.node))
        .collect()
}

/// One demand against the shared per-card budget, by family; §6.7.
pub fn fit_demand(cards: &[CardSlot], budgets: &mut Budgets, d: &FamilyDemand) -> Verdict {
    fit_covered(cards, &coverage(cards, d), budgets, d)
}

/// [`fit_demand`] with the demand's coverage already computed.
pub fn fit_covered(
    cards: &[CardSlot],
    covered: &[bool],
    budgets: &mut Budgets,
    d: &FamilyDemand,
) -> Verdict {
    match d.family {
        Family::Partitioned => fit_partition(cards, covered, budgets, d),
        Family::Shared => fit_shared(cards, covered, budgets, d),
        Family::Sliced => fit_sliced(cards, covered, budgets, d),
        _ => fit_exclusive(cards, covered, budgets, d),
    }
}

/// What one own demand took from one card in a judgment: the budget it added there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Take {
    /// Index of the demand in the judged list.
    pub demand: usize,
    /// Index of the card in [`Fit::cards`].
    pub card: usize,
    pub taken: CardBudget,
}

/// A judgment and, when Ready, the per-card plan behind it (gates 4–5 place on these cards).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fit {
    pub verdict: Verdict,
    pub cards: Vec<CardSlot>,
    pub takes: Vec<Take>,
}

/// The budget `after` adds over `before` on one card.
fn budget_delta(before: &CardBudget, after: &CardBudget) -> Option<CardBudget> {
    let d = CardBudget {
        whole: after.whole && !before.whole,
        shares: after.shares - before.shares,
        units: after.units - before.units,
        slices: after.slices - before.slices,
        placements: after.placements - before.placements,
    };
    (d != CardBudget::default()).then_some(d)
}

/// Gate 3's judgment with its plan: in-flight demands take their room first (a short one keeps
/// what it took), then own demands in the given order; the first failure decides (Retry, with
/// the in-flight suffix when any were counted), else Ready with the last demand's message; no
/// demand is Ready. Never Rejected. admission.md §6.7, §16 R15, R20; corrections.md 4.
pub fn node_devices_fit(
    pool: &[ScopedDevices],
    inflight: &[FamilyDemand],
    demands: &[FamilyDemand],
) -> Fit {
    let cards = collect_cards(pool);
    let mut fit = Fit {
        verdict: Verdict::ready(verdict_message(CheckState::Ready, &[])),
        cards: Vec::new(),
        takes: Vec::new(),
    };
    if demands.is_empty() {
        fit.cards = cards;
        return fit;
    }
    let mut budgets = Budgets::new(cards.len());
    for d in inflight {
        fit_demand(&cards, &mut budgets, d);
    }
    for (i, d) in demands.iter().enumerate() {
        let mark = budgets.mark();
        fit.verdict = fit_demand(&cards, &mut budgets, d);
        if !fit.verdict.is_ready() {
            if !inflight.is_empty() {
                fit.verdict.message.push_str(INFLIGHT_SUFFIX);
            }
            fit.takes.clear();
            fit.cards = cards;
            return fit;
        }
        fit.takes.extend(
            budgets
                .taken_since(mark)
                .into_iter()
                .map(|(card, taken)| Take {
                    demand: i,
                    card,
                    taken,
                }),
        );
    }
    fit.cards = cards;
    fit
}

/// Gate 3 over a queue of Workloads judged one after another (the reconciler runs one
/// judgment at a time): a Ready Workload's demands stay budgeted, as in-flight, for every
/// later one; a Retry gives back what it tried. Same verdicts as calling
/// [`node_devices_feasibility`] with every earlier Ready Workload's demands in flight, but
/// the cards are collected once (admission.md §6.2, §6.5).
pub fn judge_queue(pool: &[ScopedDevices], queue: &[Vec<FamilyDemand>]) -> Vec<Verdict> {
    let cards = collect_cards(pool);
    let mut budgets = Budgets::new(cards.len());
    let mut scopes: BTreeMap<(String, String), Vec<bool>> = BTreeMap::new();
    let mut any_ready = false;
    queue
        .iter()
        .map(|demands| {
            let mark = budgets.mark();
            let mut verdict = Verdict::ready(verdict_message(CheckState::Ready, &[]));
            for d in demands {
                let covered = scopes
                    .entry((d.flavor.clone(), d.node.clone()))
                    .or_insert_with(|| coverage(&cards, d));
                verdict = fit_covered(&cards, covered, &mut budgets, d);
                if !verdict.is_ready() {
                    break;
                }
            }
            if verdict.is_ready() {
                any_ready |= !demands.is_empty();
            } else {
                budgets.rollback(mark);
                if any_ready {
                    verdict.message.push_str(INFLIGHT_SUFFIX);
                }
            }
            verdict
        })
        .collect()
}

/// Gate 3's verdict alone; see [`node_devices_fit`].
pub fn node_devices_feasibility(
    pool: &[ScopedDevices],
    inflight: &[FamilyDemand],
    demands: &[FamilyDemand],
) -> Verdict {
    node_devices_fit(pool, inflight, demands).verdict
}

#[cfg(test)]
mod tests {
    use super::super::candidates::FlavorScope;
    use super::*;
    use crate::devices::{
        Capability, Card, DeviceGroup, Devices, Ledger, PartitionProfile, Placement, ProfileCount,
    };
    use crate::units::UNITS_PER_SHARE;

    fn ledger(mode: Mode, remaining: i64, slices: u32) -> Ledger {
        Ledger {
            mode,
            remaining_units: remaining,
            allocated_slices: slices,
            ..Ledger::default()
        }
    }

    fn logical(count: u32) -> Capability {
        Capability {
            logical_sliced_count: count,
            ..Capability::default()
        }
    }

    fn partitioned(placements: bool) -> Capability {
        Capability {
            physical_sliced_count: 7,
            physical_profiles: vec![PartitionProfile {
                name: "1g.10gb".into(),
                count: 7,
                placements: if placements {
                    vec![Placement {
                        start: 0,
                        length: 1,
                    }]
                } else {
                    vec![]
                },
                ..PartitionProfile::default()
            }],
            ..Capability::default()
        }
    }

    fn node(name: &str, manufacturer: &str, cards: Vec<(Capability, Ledger)>) -> ScopedDevices {
        ScopedDevices {
            name: name.into(),
            hostname: name.into(),
            devices: Devices {
                groups: vec![DeviceGroup {
                    manufacturer: manufacturer.into(),
                    id: "g0".into(),
                    cards: cards
                        .into_iter()
                        .enumerate()
                        .map(|(i, (c, l))| Card {
                            id: format!("{name}-{i}"),
                            index: i as u32,
                            capability: Some(c),
                            ledger: Some(l),
                        })
                        .collect(),
                    ..DeviceGroup::default()
                }],
            },
            scopes: vec![FlavorScope {
                flavor: "f".into(),
                accelerator_key: format!("{manufacturer}-g0"),
                accelerator_count: 0,
            }],
        }
    }

    fn demand(family: Family, cards: i64, units: i64) -> FamilyDemand {
        FamilyDemand {
            family,
            cards,
            units_per_card: units,
            flavor: "f".into(),
            ..FamilyDemand::default()
        }
    }

    fn state(pool: &[ScopedDevices], demands: &[FamilyDemand]) -> CheckState {
        node_devices_feasibility(pool, &[], demands).state
    }

    #[test]
    fn exclusive_needs_wholly_free_whole_capable_cards() {
        let free = (logical(10), ledger(Mode::None, UNITS_PER_CARD, 0));
        let half = (logical(10), ledger(Mode::None, 800_000, 0));
        let pool = [node("a", "nvidia", vec![free.clone(), free.clone(), half])];
        assert_eq!(
            state(&pool, &[demand(Family::Exclusive, 2, 0)]),
            CheckState::Ready
        );
        assert_eq!(
            state(&pool, &[demand(Family::Exclusive, 3, 0)]),
            CheckState::Retry
        );
        let mig = [node(
            "a",
            "nvidia",
            vec![(partitioned(true), ledger(Mode::None, UNITS_PER_CARD, 0))],
        )];
        assert_eq!(
            state(&mig, &[demand(Family::Exclusive, 1, 0)]),
            CheckState::Retry
        );
    }

    #[test]
    fn demands_consume_cards_one_after_another() {
        let free = (logical(10), ledger(Mode::None, UNITS_PER_CARD, 0));
        let pool = [node("a", "nvidia", vec![free.clone(), free])];
        let two = [
            demand(Family::Exclusive, 1, 0),
            demand(Family::Exclusive, 1, 0),
        ];
        assert_eq!(state(&pool, &two), CheckState::Ready);
        let three = [two[0].clone(), two[1].clone(), demand(Family::Sliced, 1, 1)];
        assert_eq!(state(&pool, &three), CheckState::Retry);
    }

    #[test]
    fn shared_holders_need_distinct_cards_on_one_node() {
        let one_share = (logical(10), ledger(Mode::Shared, UNITS_PER_SHARE, 0));
        let pool = [
            node("a", "nvidia", vec![one_share.clone()]),
            node("b", "nvidia", vec![one_share.clone()]),
        ];
        // Two cards exist, but on two nodes: a 2-card holder cannot be placed.
        assert_eq!(
            state(&pool, &[demand(Family::Shared, 2, 0)]),
            CheckState::Retry
        );
        let same = [node("a", "nvidia", vec![one_share.clone(), one_share])];
        assert_eq!(
            state(&same, &[demand(Family::Shared, 2, 0)]),
            CheckState::Ready
        );
        // Two 1-card holders share nothing after the last shares are taken.
        let mut d = demand(Family::Shared, 3, 0);
        d.holders = vec![super::super::demands::Holder {
            cards: 1,
            containers: 3,
        }];
        assert_eq!(state(&same, &[d]), CheckState::Retry);
        let sliced = [node(
            "a",
            "nvidia",
            vec![(logical(10), ledger(Mode::Sliced, UNITS_PER_CARD / 2, 1))],
        )];
        assert_eq!(
            state(&sliced, &[demand(Family::Shared, 1, 0)]),
            CheckState::Retry
        );
    }

    #[test]
    fn hygon_slot_limit_example() {
        // admission.md §11.3: card0 four 10 % slices (all 4 slots), 60 % free; card1 two 45 %
        // slices, 10 % free; a 30 % slice is held.
        let pct = crate::units::UNITS_PER_PERCENT;
        let card0 = (logical(4), ledger(Mode::Sliced, 60 * pct, 4));
        let card1 = (logical(4), ledger(Mode::Sliced, 10 * pct, 2));
        let pool = [node("a", "hygon", vec![card0, card1.clone()])];
        assert_eq!(
            state(&pool, &[demand(Family::Sliced, 1, 30 * pct)]),
            CheckState::Retry
        );
        // Three slices on card0, 70 % free: Ready.
        let card0 = (logical(4), ledger(Mode::Sliced, 70 * pct, 3));
        let pool = [node("a", "hygon", vec![card0.clone(), card1])];
        assert_eq!(
            state(&pool, &[demand(Family::Sliced, 1, 30 * pct)]),
            CheckState::Ready
        );
        // One slot left and 70 % free: one 10 % slice fits, two do not.
        let only = [node("a", "hygon", vec![card0])];
        assert_eq!(
            state(&only, &[demand(Family::Sliced, 1, 10 * pct)]),
            CheckState::Ready
        );
        assert_eq!(
            state(&only, &[demand(Family::Sliced, 2, 10 * pct)]),
            CheckState::Retry
        );
    }

    #[test]
    fn slices_go_best_fit() {
        let pct = crate::units::UNITS_PER_PERCENT;
        let pool = [node(
            "a",
            "nvidia",
            vec![
                (logical(10), ledger(Mode::None, UNITS_PER_CARD, 0)),
                (logical(10), ledger(Mode::Sliced, 50 * pct, 1)),
            ],
        )];
        // A 50 % slice takes the half card, so a whole-card slice still fits afterwards.
        let d = [
            demand(Family::Sliced, 1, 100 * pct),
            demand(Family::Sliced, 1, 50 * pct),
        ];
        assert_eq!(state(&pool, &d), CheckState::Ready);
        let d = [
            demand(Family::Sliced, 1, 100 * pct),
            demand(Family::Sliced, 1, 60 * pct),
        ];
        assert_eq!(state(&pool, &d), CheckState::Retry);
    }

    #[test]
    fn two_a100_example() {
        // admission.md §11.2 after a 50 % slice on card 1 and a 3g.40gb on card 0.
        let pct = crate::units::UNITS_PER_PERCENT;
        let mut mig = partitioned(true);
        mig.physical_profiles.push(PartitionProfile {
            name: "3g.40gb".into(),
            count: 2,
            placements: vec![
                Placement {
                    start: 0,
                    length: 4,
                },
                Placement {
                    start: 4,
                    length: 4,
                },
            ],
            ..PartitionProfile::default()
        });
        let mut card0 = ledger(Mode::Partitioned, UNITS_PER_CARD, 0);
        card0.remaining_profiles = vec![
            ProfileCount {
                name: "3g.40gb".into(),
                count: 1,
            },
            ProfileCount {
                name: "7g.80gb".into(),
                count: 0,
            },
        ];
        let card1 = ledger(Mode::Sliced, 50 * pct, 1);
        let pool = [node(
            "a",
            "nvidia",
            vec![(mig, card0), (logical(128), card1)],
        )];
        let part = |profile: &str, n: i64| FamilyDemand {
            profile: profile.into(),
            ..demand(Family::Partitioned, n, 0)
        };
        assert_eq!(
            state(&pool, &[demand(Family::Sliced, 1, 60 * pct)]),
            CheckState::Retry
        );
        assert_eq!(
            state(&pool, &[demand(Family::Sliced, 1, 50 * pct)]),
            CheckState::Ready
        );
        assert_eq!(
            state(&pool, &[demand(Family::Exclusive, 1, 0)]),
            CheckState::Retry
        );
        let v = node_devices_feasibility(&pool, &[], &[part("7g.80gb", 1)]);
        assert_eq!(v.state, CheckState::Retry);
        assert!(
            v.message.contains("free \"7g.80gb\" placement"),
            "{}",
            v.message
        );
        assert_eq!(state(&pool, &[part("3g.40gb", 1)]), CheckState::Ready);
        assert_eq!(state(&pool, &[part("3g.40gb", 2)]), CheckState::Retry);
    }

    #[test]
    fn partition_verdict_order_and_vendor_spelling() {
        let mut l = ledger(Mode::None, 0, 0);
        l.remaining_profiles = vec![ProfileCount {
            name: "4g48gb".into(),
            count: 2,
        }];
        let pool = [node("a", "thead", vec![(partitioned(false), l)])];
        let d = FamilyDemand {
            profile: "4g.48gb".into(),
            ..demand(Family::Partitioned, 2, 0)
        };
        // Free placements but no cached Placements: still Ready (corrections.md 5).
        assert_eq!(state(&pool, std::slice::from_ref(&d)), CheckState::Ready);
        let more = FamilyDemand {
            cards: 3,
            ..d.clone()
        };
        let v = node_devices_feasibility(&pool, &[], &[more]);
        assert!(
            v.message.contains("device manager rolling out"),
            "{}",
            v.message
        );
        let plain = [node(
            "a",
            "thead",
            vec![(logical(10), ledger(Mode::None, UNITS_PER_CARD, 0))],
        )];
        let v = node_devices_feasibility(&plain, &[], &[d]);
        assert!(
            v.message.contains("no partitioned card for profile"),
            "{}",
            v.message
        );
    }

    #[test]
    fn inflight_takes_room_first_and_marks_the_retry() {
        let pct = crate::units::UNITS_PER_PERCENT;
        let pool = [node(
            "a",
            "nvidia",
            vec![(logical(10), ledger(Mode::None, UNITS_PER_CARD, 0))],
        )];
        let first = demand(Family::Sliced, 1, 60 * pct);
        let second = demand(Family::Sliced, 1, 50 * pct);
        assert!(node_devices_feasibility(&pool, &[], std::slice::from_ref(&second)).is_ready());
        let v = node_devices_feasibility(&pool, &[first], &[second]);
        assert_eq!(v.state, CheckState::Retry);
        assert!(v.message.ends_with(INFLIGHT_SUFFIX));
    }

    #[test]
    fn a_node_scoped_demand_sees_only_its_node() {
        let free = (logical(10), ledger(Mode::None, UNITS_PER_CARD, 0));
        let full = (logical(10), ledger(Mode::None, 0, 0));
        let pool = [
            node("a", "nvidia", vec![full]),
            node("b", "nvidia", vec![free]),
        ];
        let on_a = FamilyDemand {
            node: "a".into(),
            ..demand(Family::Exclusive, 1, 0)
        };
        let v = node_devices_feasibility(&pool, &[], &[on_a]);
        assert_eq!(v.state, CheckState::Retry);
        assert!(
            v.message.starts_with("no card on the node \"a\""),
            "{}",
            v.message
        );
    }
}
