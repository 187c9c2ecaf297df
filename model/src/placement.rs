//! Gates 4 and 5: the node keys the scheduler and kubelet place a Pod by, and the device plugin's
//! `Allocate` that hands out cards (admission.md §7, §8, §12.5, §16 R21–R22; devices.md §3.4–3.5).
//!
//! Decisions where the research is silent:
//! - health: a card's `<base>`, `.shared` and `.sliced` tokens count in allocatable only while the
//!   card is free or held in that token's own mode (DISC-DOC: tokens of a card held in another mode
//!   are Unhealthy); the operator-written `.sliced.*` / `.partitioned.*` budgets are capacity and
//!   are not reduced by health;
//! - "most-occupied" for partition packing = most memory slices occupied by instances; ties go to
//!   the earlier card.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::credits::quantity_value;
use crate::devices::{Card, DeviceGroup, Devices, Mode};
use crate::error::ModelError;
use crate::ledger::{charge, lowest_free_placement, CardLedger, Charge, Instance};
use crate::pod_webhook::NodeSelectorRequirement;
use crate::profiles::publish_profile_name;
use crate::resources::{classify, partition_kind, resource_name, Family, Key};
use crate::units::{SHARES_PER_CARD, UNITS_PER_CARD};
use crate::workload::Container;

/// Resource name → integer amount (node allocatable, or a Pod's requests).
pub type Amounts = BTreeMap<String, i64>;

fn add(out: &mut Amounts, name: Option<String>, v: i64) {
    if let Some(name) = name {
        *out.entry(name).or_insert(0) += v;
    }
}

/// Which tokens a node's capacity counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tokens {
    /// The healthy ones: a card held in one mode loses its other modes' tokens (allocatable).
    Healthy,
    /// Every token whatever the card's mode, but a partitioned card keeps its carved layout
    /// (what the device plugins advertise).
    Advertised,
}

/// Whether a card's device-plugin tokens of `mode` count: the card is free of other modes
/// (or, for [`Tokens::Advertised`], the card is not partitioned into another layout).
fn tokens_healthy(card: &Card, mode: Mode, tokens: Tokens) -> bool {
    card.ledger.as_ref().is_none_or(|l| {
        let held = match tokens {
            Tokens::Advertised if l.mode != Mode::Partitioned => Mode::None,
            _ => l.mode,
        };
        held == Mode::None || held == mode
    })
}

/// One partitioned card's `.partitioned` healthy tokens: allocated instances + its largest free
/// per-profile count, or its ceiling when the ledger is not ready; admission.md §7.
fn partition_tokens(card: &Card) -> i64 {
    let cap = card.capability_or_default();
    match card.ledger.as_ref().filter(|l| l.partition_ready()) {
        Some(l) => {
            let allocated: u32 = l.allocated_profiles.iter().map(|p| p.count).sum();
            let largest = l
                .remaining_profiles
                .iter()
                .map(|p| p.count)
                .max()
                .unwrap_or(0);
            i64::from(allocated) + i64::from(largest)
        }
        None => i64::from(cap.physical_sliced_count),
    }
}

/// One partitioned card's per-profile key values: allocated + remaining, or the static count when
/// the ledger is not ready; admission.md §7, devices.md §3.4.
fn profile_tokens(card: &Card) -> Vec<(String, i64)> {
    let cap = card.capability_or_default();
    let ready = card.ledger.as_ref().filter(|l| l.partition_ready());
    cap.physical_profiles
        .iter()
        .map(|p| {
            let n = match ready {
                Some(l) => {
                    let of = |list: &[crate::devices::ProfileCount]| {
                        list.iter()
                            .find(|c| c.name == p.name)
                            .map_or(0, |c| i64::from(c.count))
                    };
                    of(&l.allocated_profiles) + of(&l.remaining_profiles)
                }
                None => i64::from(p.count),
            };
            (p.name.to_string(), n)
        })
        .collect()
}

/// One group's contribution to node allocatable; admission.md §7 (node_capacity.go, DISC-DOC).
fn group_allocatable(group: &DeviceGroup, tokens: Tokens, out: &mut Amounts) {
    let m = group.manufacturer.as_str();
    let name = |k: Key| resource_name(m, &k);
    let cards: Vec<&Card> = group.cards.iter().collect();
    let whole: Vec<&Card> = cards
        .iter()
        .copied()
        .filter(|c| !c.is_partitioned())
        .collect();
    let sliceable: Vec<&Card> = cards
        .iter()
        .copied()
        .filter(|c| c.is_logically_sliceable())
        .collect();
    let parted: Vec<&Card> = cards
        .iter()
        .copied()
        .filter(|c| c.is_partitioned())
        .collect();

    let count = |pred: &dyn Fn(&Card) -> bool, list: &[&Card]| -> i64 {
        list.iter().filter(|c| pred(c)).count() as i64
    };
    add(
        out,
        name(Key::Whole),
        count(&|c| tokens_healthy(c, Mode::Exclusive, tokens), &whole),
    );
    add(
        out,
        name(Key::Shared),
        SHARES_PER_CARD * count(&|c| tokens_healthy(c, Mode::Shared, tokens), &whole),
    );
    let slices = |c: &&Card| i64::from(c.capability_or_default().logical_sliced_count);
    let sliced_capacity: i64 = sliceable.iter().map(slices).sum();
    let sliced_healthy: i64 = sliceable
        .iter()
        .filter(|c| tokens_healthy(c, Mode::Sliced, tokens))
        .map(slices)
        .sum();
    add(out, name(Key::Sliced), sliced_healthy);
    if sliced_capacity > 0 {
        let n = sliceable.len() as i64;
        let cores: i64 = sliceable
            .iter()
            .map(|c| {
                let cap = c.capability_or_default();
                if cap.cores_percentage_overcommit {
                    i64::from(cap.logical_sliced_count) * 100
                } else {
                    100
                }
            })
            .sum();
        add(out, name(Key::SlicedUnits), n * UNITS_PER_CARD);
        add(out, name(Key::SlicedCoresPercentage), cores);
        add(out, name(Key::SlicedMemoryPercentage), n * 100);
        add(
            out,
            name(Key::SlicedMemoryMib),
            n * i64::try_from(group.memory_mib).unwrap_or(i64::MAX / 1024),
        );
    }
    if partition_kind(m).is_some() {
        add(
            out,
            name(Key::Partitioned),
            parted.iter().map(|c| partition_tokens(c)).sum(),
        );
        if !parted.is_empty() {
            add(
                out,
                name(Key::PartitionedUnits),
                parted.len() as i64 * UNITS_PER_CARD,
            );
            for card in &parted {
                for (profile, n) in profile_tokens(card) {
                    let published = publish_profile_name(m, &profile);
                    add(out, name(Key::PartitionedProfile(published)), n);
                }
            }
        }
    }
}

/// R21: a node's allocatable accelerator keys from its Devices (whole, shared, sliced and
/// partition tokens plus the `.sliced.*` / `.partitioned.*` budgets); admission.md §7.
pub fn node_allocatable(devices: &Devices) -> Amounts {
    let mut out = Amounts::new();
    for g in &devices.groups {
        group_allocatable(g, Tokens::Healthy, &mut out);
    }
    out
}

/// A Pod's effective accelerator requests: per key, max(Σ app containers, largest init
/// container), each container's limits overlaid by its requests (Kubernetes' rule for
/// extended resources); keys that are not accelerator resources are left out.
pub fn pod_accelerator_requests(containers: &[Container]) -> Result<Amounts, ModelError> {
    let mut app = Amounts::new();
    let mut init = Amounts::new();
    for c in containers {
        let mut merged = c.limits.clone();
        merged.extend(c.requests.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (name, q) in merged {
            let family = classify(&name).map_or(Family::None, |r| r.key.family());
            if family == Family::None {
                continue;
            }
            let v = quantity_value(&format!("containers[{}].{name}", c.name), &q)?;
            if c.init {
                let e = init.entry(name).or_insert(0);
                *e = (*e).max(v);
            } else {
                *app.entry(name).or_insert(0) += v;
            }
        }
    }
    for (name, v) in init {
        let e = app.entry(name).or_insert(0);
        *e = (*e).max(v);
    }
    Ok(app)
}

/// R21: a Pod fits a node when every requested key fits allocatable minus the requests of the
/// Pods already there; `Err` lists the keys short, as the scheduler's "Insufficient <key>".
pub fn pod_fits_node(
    allocatable: &Amounts,
    pods_on_node: &[Amounts],
    pod: &Amounts,
) -> Result<(), Vec<String>> {
    let short: Vec<String> = pod
        .iter()
        .filter(|(_, &want)| want > 0)
        .filter(|(name, &want)| {
            let used: i64 = pods_on_node
                .iter()
                .map(|p| p.get(*name).copied().unwrap_or(0))
                .sum();
            allocatable.get(*name).copied().unwrap_or(0) - used < want
        })
        .map(|(name, _)| format!("Insufficient {name}"))
        .collect();
    if short.is_empty() {
        Ok(())
    } else {
        Err(short)
    }
}

/// What one card's ledger row already holds, as the tokens and budgets the Pods holding it
/// requested: Exclusive → one `<base>` once its units are taken (the charge's record; a row
/// whose mode and units disagree is left for gates 4–5 to refuse, where the chain's soundness
/// property sees it); Shared → one `.shared` per share taken; Sliced → one
/// `.sliced` per hosted slice and the units taken; Partitioned → one `.partitioned` and one
/// per-profile key per instance and the units taken. Kueue's TAS counts the requests of the Pods
/// on a node against its allocatable (KEP-2724 "Non-exclusive use of nodes"); the model has no
/// Pod list, so the ledger (which every admitted Pod is charged on) stands for it. The budgets
/// the ledger does not record (`.sliced.cores-percentage`, `.memory-*`) count nothing here.
fn card_ledger_usage(manufacturer: &str, card: &Card, out: &mut Amounts) {
    let Some(row) = card.ledger.as_ref() else {
        return;
    };
    let name = |k: Key| resource_name(manufacturer, &k);
    let taken = (UNITS_PER_CARD - row.remaining_units.max(0)).max(0);
    match row.mode {
        Mode::None | Mode::Visibility => {}
        Mode::Exclusive => add(out, name(Key::Whole), i64::from(taken > 0)),
        Mode::Shared => add(out, name(Key::Shared), SHARES_PER_CARD - row.free_shares()),
        Mode::Sliced => {
            add(out, name(Key::Sliced), i64::from(row.allocated_slices));
            add(out, name(Key::SlicedUnits), taken);
        }
        Mode::Partitioned => {
            for p in &row.allocated_profiles {
                add(out, name(Key::Partitioned), i64::from(p.count));
                let published = publish_profile_name(manufacturer, &p.name);
                add(
                    out,
                    name(Key::PartitionedProfile(published)),
                    i64::from(p.count),
                );
            }
            add(out, name(Key::PartitionedUnits), taken);
        }
    }
}

/// Gate 2, TAS at hostname level: a node's free accelerator keys, its capacity (R21 with every
/// card's tokens counted) minus what its cards' ledger rows already hold
/// ([`card_ledger_usage`]), never below 0. docs/modules/topology/scheduling.md ("Profiles
/// enter the Kueue chain": Kueue evaluates the full PodSet requests against the selected
/// domains). The device plugin's health rule (a card held in another mode loses its other
/// tokens) is left to gate 4: case 4's header (locked) has Kueue reserve quota for five whole
/// cards on a node of eight half-sliced ones, whose capacity it mocks at eight, and gate 3
/// hold it with Retry.
pub fn node_free_accelerators(devices: &Devices) -> Amounts {
    let mut used = Amounts::new();
    for g in &devices.groups {
        for c in &g.cards {
            card_ledger_usage(&g.manufacturer, c, &mut used);
        }
    }
    let mut free = node_advertised(devices);
    for (k, v) in free.iter_mut() {
        *v = (*v - used.get(k).copied().unwrap_or(0)).max(0);
    }
    free
}

/// What the device plugins make a node advertise in `status.allocatable`: every token of
/// every card whatever its ledger row's mode (a partitioned card keeps its carved layout), the
/// capacity Kueue's TAS starts from before it takes off what Pods on the node request.
pub fn node_advertised(devices: &Devices) -> Amounts {
    let mut out = Amounts::new();
    for g in &devices.groups {
        group_allocatable(g, Tokens::Advertised, &mut out);
    }
    out
}

/// How many Pods of `pod` fit in `free`: per requested key ⌊free / want⌋, the least of them;
/// a key the node lacks fits none; a Pod asking nothing fits `cap` (Kueue TAS `CountIn`,
/// pkg/cache/tas_flavor_snapshot.go `fillInCounts`).
pub fn pods_fitting(free: &Amounts, pod: &Amounts, cap: u32) -> u32 {
    pod.iter()
        .filter(|(_, &want)| want > 0)
        .map(|(k, &want)| free.get(k).copied().unwrap_or(0).max(0) / want)
        .fold(i64::from(cap), i64::min)
        .clamp(0, i64::from(cap)) as u32
}

/// The first key (by name) a node lacks for one Pod: what Kueue's TAS names when it excludes
/// the node (`excluded: resource "<key>"`, tas_flavor_snapshot.go `notFitMessage`).
pub fn first_short_resource(free: &Amounts, pod: &Amounts) -> Option<String> {
    pod.iter()
        .find(|(k, &want)| want > 0 && free.get(*k).copied().unwrap_or(0) < want)
        .map(|(k, _)| k.clone())
}

/// Whether a node's labels satisfy one node-selector requirement (`In`, `NotIn`, `Exists`,
/// `DoesNotExist`, `Gt`, `Lt`, as Kubernetes' nodeaffinity reads them; `Gt`/`Lt` on a missing
/// or non-integer label fail). An unknown operator matches nothing.
pub fn requirement_admits(labels: &crate::labels::Labels, r: &NodeSelectorRequirement) -> bool {
    let value = labels.get(r.key.as_str());
    let bound = || r.values.first().and_then(|v| v.parse::<i64>().ok());
    let num = || value.and_then(|v| v.parse::<i64>().ok());
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| r.values.iter().any(|w| w == v)),
        "NotIn" => value.is_none_or(|v| !r.values.iter().any(|w| w == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => matches!((num(), bound()), (Some(v), Some(b)) if v > b),
        "Lt" => matches!((num(), bound()), (Some(v), Some(b)) if v < b),
        _ => false,
    }
}

/// One node as Kueue's TAS sees it at hostname level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TasNode {
    pub name: String,
    /// `kubernetes.io/hostname`, the lowest topology level.
    pub hostname: String,
    pub labels: crate::labels::Labels,
    /// Allocatable minus what is already held there (cards from the ledger, `cpu` in millicores).
    pub free: Amounts,
}

/// Pods of one pod set TAS put on one hostname.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub hostname: String,
    pub pods: u32,
}

/// Why a pod set found no room: how many of its Pods fit at all, the nodes considered and why
/// each excluded one was (`"affinity"` or `resource "<key>"`, counted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TasMiss {
    pub fit: u32,
    pub count: u32,
    pub total_nodes: usize,
    pub excluded: BTreeMap<String, usize>,
}

impl TasMiss {
    /// Kueue's wording (tas_flavor_snapshot.go `notFitMessage` plus its exclusion counts):
    /// `topology "T" doesn't allow to fit any of N pod(s)` or `allows to fit only F out of N
    /// pod(s)`, then `. Total nodes: K; excluded: resource "r": a, affinity: b` when some node
    /// was excluded (resource reasons first, by name, then affinity).
    pub fn message(&self, topology: &str) -> String {
        let mut out = if self.fit == 0 {
            format!(
                "topology {topology:?} doesn't allow to fit any of {} pod(s)",
                self.count
            )
        } else {
            format!(
                "topology {topology:?} allows to fit only {} out of {} pod(s)",
                self.fit, self.count
            )
        };
        if !self.excluded.is_empty() {
            let mut reasons: Vec<String> = self
                .excluded
                .iter()
                .filter(|(k, _)| k.as_str() != "affinity")
                .map(|(k, n)| format!("{k}: {n}"))
                .collect();
            if let Some(n) = self.excluded.get("affinity") {
                reasons.push(format!("affinity: {n}"));
            }
            out.push_str(&format!(
                ". Total nodes: {}; excluded: {}",
                self.total_nodes,
                reasons.join(", ")
            ));
        }
        out
    }
}

/// Whether a node is a candidate for a pod set at all: every required node-affinity expression
/// holds on its labels (Kueue's TAS filters nodes by the PodSet's node affinity and selector
/// before counting capacity; admission.md §11.4 `excluded: affinity`).
pub fn node_affinity_admits(
    labels: &crate::labels::Labels,
    required: &[NodeSelectorRequirement],
) -> bool {
    required.iter().all(|r| requirement_admits(labels, r))
}

/// Gate 2, TAS at hostname level (Kueue KEP-2724 "Computing the assignment", BestFit; the
/// implicit lowest level `kubernetes.io/hostname` of every operator queue): each of `count`
/// Pods whole on one node. Nodes the affinity excludes are no candidates; each other node
/// hosts ⌊free / request⌋ Pods (`already` = what earlier pod sets of this Workload placed
/// there). One node that hosts them all: the one with the least room that still does (ties:
/// hostname order). Otherwise nodes by room, largest first, each taken whole while the rest
/// need more than it, the last the best fit of those left. Fewer than `count` in all → `Err`.
pub fn tas_place_pod_set(
    nodes: &[TasNode],
    already: &BTreeMap<String, Amounts>,
    pod: &Amounts,
    count: u32,
    required: &[NodeSelectorRequirement],
) -> Result<Vec<Placed>, TasMiss> {
    let mut excluded: BTreeMap<String, usize> = BTreeMap::new();
    let mut room: Vec<(u32, &str)> = Vec::new();
    for n in nodes {
        if !node_affinity_admits(&n.labels, required) {
            *excluded.entry("affinity".into()).or_default() += 1;
            continue;
        }
        let free = minus(&n.free, already.get(&n.hostname));
        let fits = pods_fitting(&free, pod, u32::MAX);
        if fits == 0 {
            let key = first_short_resource(&free, pod).unwrap_or_default();
            *excluded.entry(format!("resource {key:?}")).or_default() += 1;
            continue;
        }
        room.push((fits, n.hostname.as_str()));
    }
    let fit: u32 = room.iter().map(|(f, _)| *f).fold(0u32, u32::saturating_add);
    if count == 0 {
        return Ok(Vec::new());
    }
    if fit < count {
        return Err(TasMiss {
            fit,
            count,
            total_nodes: nodes.len(),
            excluded,
        });
    }
    room.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut out = Vec::new();
    let mut left = count;
    let mut rest: &[(u32, &str)] = &room;
    while let Some((&(fits, host), tail)) = rest.split_first() {
        if fits >= left {
            let (_, best) = rest
                .iter()
                .filter(|(f, _)| *f >= left)
                .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
                .copied()
                .unwrap_or((fits, host));
            out.push(Placed {
                hostname: best.to_string(),
                pods: left,
            });
            return Ok(out);
        }
        out.push(Placed {
            hostname: host.to_string(),
            pods: fits,
        });
        left -= fits;
        rest = tail;
    }
    Err(TasMiss {
        fit,
        count,
        total_nodes: nodes.len(),
        excluded,
    })
}

/// `free` minus what is already placed (never below 0).
fn minus(free: &Amounts, placed: Option<&Amounts>) -> Amounts {
    let mut out = free.clone();
    if let Some(p) = placed {
        for (k, v) in p {
            if let Some(slot) = out.get_mut(k) {
                *slot = (*slot - v).max(0);
            }
        }
    }
    out
}

/// What one Pod's whole requests put on its node: `count` Pods of `pod`, added to `placed`.
pub fn add_pods(placed: &mut Amounts, pod: &Amounts, count: u32) {
    for (k, v) in pod {
        *placed.entry(k.clone()).or_default() += v.saturating_mul(i64::from(count));
    }
}

/// Which device-plugin generation serves a partition request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllocatorEra {
    /// After the logical/physical family split: partition tokens are a count and the plugin picks
    /// a partitioned card itself (SPEC-SPLIT F1/F2).
    #[default]
    Split,
    /// Before it: MIG rode the logical family's one `.sliced` token pool spanning MIG and non-MIG
    /// cards, so the kubelet chose the card (admission.md §12.5).
    PreSplit,
}

/// One container's allocation request as the kubelet passes it to `Allocate` (card positions are
/// indices into the node's card list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocationRequest {
    /// Whole cards behind the assigned `<base>` tokens.
    Exclusive { cards: Vec<usize> },
    /// The cards behind the assigned `.shared` tokens (one share each).
    Shared { cards: Vec<usize> },
    /// One logical slice on the card behind the assigned `.sliced` token.
    Slice { card: usize, units: i64 },
    /// One partition instance of `profile` (vendor spelling). `token_card` is the card behind the
    /// token the kubelet chose; only the pre-split plugin used it.
    Partition {
        profile: String,
        token_card: Option<usize>,
    },
}

/// What `Allocate` granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub cards: Vec<usize>,
    pub instance: Option<Instance>,
}

/// An `Allocate` refusal: gRPC `FailedPrecondition`, after which the kubelet fails the Pod.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AllocateError {
    #[error("FailedPrecondition: {0}")]
    FailedPrecondition(String),
}

impl AllocateError {
    /// The Pod's terminal failure reason (admission.md §3 gate 5).
    pub fn pod_failure_reason(&self) -> &'static str {
        "UnexpectedAdmissionError"
    }
}

fn refuse(msg: String) -> AllocateError {
    AllocateError::FailedPrecondition(msg)
}

fn card_at(cards: &[CardLedger], i: usize) -> Result<&CardLedger, AllocateError> {
    cards
        .get(i)
        .ok_or_else(|| refuse(format!("card {i} is not a device of this node")))
}

/// Charges `c` on card `i` of `cards`, mapping a refusal to `FailedPrecondition`.
fn charge_at(cards: &mut [CardLedger], i: usize, c: &Charge) -> Result<(), AllocateError> {
    let next = charge(card_at(cards, i)?, c)
        .map_err(|e| refuse(format!("card {i} cannot be charged: {e}")))?;
    if let Some(slot) = cards.get_mut(i) {
        *slot = next;
    }
    Ok(())
}

/// Distinct positions, or a refusal naming the card listed twice.
fn distinct(cards: &[usize], what: &str) -> Result<(), AllocateError> {
    for (n, c) in cards.iter().enumerate() {
        if cards.iter().skip(n + 1).any(|d| d == c) {
            return Err(refuse(format!(
                "{what}: two tokens on card {c}; each token must name a distinct card"
            )));
        }
    }
    Ok(())
}

/// The partitioned card the split-era plugin packs onto: the most-occupied card that still has a
/// free placement for `profile` (ties: earlier card); admission.md §8, devices.md §3.5.
fn pack_partition(cards: &[CardLedger], profile: &str) -> Option<(usize, Instance)> {
    cards
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.capability.is_partitioned() && matches!(c.row.mode, Mode::None | Mode::Partitioned)
        })
        .filter_map(|(i, c)| {
            let placement = lowest_free_placement(c, profile)?;
            Some((i, c.occupied_slices(), placement))
        })
        .fold(None, |best: Option<(usize, u32, _)>, cand| match best {
            Some(b) if b.1 >= cand.1 => Some(b),
            _ => Some(cand),
        })
        .map(|(i, _, placement)| {
            (
                i,
                Instance {
                    profile: profile.to_string(),
                    placement,
                },
            )
        })
}

/// R22: the device plugin's `Allocate` on one node's cards under its mutex: all or nothing; a
/// refusal (another mode holds the card, two shared tokens on one card, a slice without a slot or
/// units, no card for a partition) is `FailedPrecondition`. admission.md §8.
pub fn allocate(
    cards: &[CardLedger],
    req: &AllocationRequest,
    era: AllocatorEra,
) -> Result<(Vec<CardLedger>, Grant), AllocateError> {
    let mut next = cards.to_vec();
    let grant = match req {
        AllocationRequest::Exclusive { cards: ids } => {
            distinct(ids, "exclusive grant")?;
            for &i in ids {
                charge_at(&mut next, i, &Charge::Exclusive)?;
            }
            Grant {
                cards: ids.clone(),
                instance: None,
            }
        }
        AllocationRequest::Shared { cards: ids } => {
            distinct(ids, "shared grant")?;
            for &i in ids {
                charge_at(&mut next, i, &Charge::Share)?;
            }
            Grant {
                cards: ids.clone(),
                instance: None,
            }
        }
        AllocationRequest::Slice { card, units } => {
            charge_at(&mut next, *card, &Charge::Slice { units: *units }).map_err(|e| {
                let AllocateError::FailedPrecondition(m) = e;
                refuse(format!("cannot take a logical slice of card {card}: {m}"))
            })?;
            Grant {
                cards: vec![*card],
                instance: None,
            }
        }
        AllocationRequest::Partition {
            profile,
            token_card,
        } => {
            let (i, instance) = match era {
                AllocatorEra::Split => pack_partition(&next, profile).ok_or_else(|| {
                    refuse(format!("no card on the node can host profile {profile:?}"))
                })?,
                AllocatorEra::PreSplit => {
                    let i = token_card
                        .ok_or_else(|| refuse("the partition request names no card".into()))?;
                    let card = card_at(&next, i)?;
                    if !card.capability.is_partitioned() {
                        return Err(refuse(format!(
                            "card {i} is not in a partitioning mode, so no {profile:?} instance can be created on it"
                        )));
                    }
                    let placement = lowest_free_placement(card, profile).ok_or_else(|| {
                        refuse(format!("card {i} has no free {profile:?} placement"))
                    })?;
                    (
                        i,
                        Instance {
                            profile: profile.clone(),
                            placement,
                        },
                    )
                }
            };
            charge_at(&mut next, i, &Charge::Partition(instance.clone()))?;
            Grant {
                cards: vec![i],
                instance: Some(instance),
            }
        }
    };
    Ok((next, grant))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Capability, Ledger};
    use crate::ledger::catalogs::h100_80gb;
    use crate::ledger::seed;

    fn logical_nvidia() -> Capability {
        Capability {
            logical_sliced_count: 128,
            cores_percentage_overcommit: true,
            ..Capability::default()
        }
    }

    fn node_of(ledgers: &[CardLedger], memory_mib: u64) -> Devices {
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: "nvidia".into(),
                id: "a100-80gb".into(),
                memory_mib,
                cards: ledgers
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Card {
                        id: format!("card-{i}"),
                        index: i as u32,
                        capability: Some(c.capability.clone()),
                        ledger: Some(c.row.clone()),
                    })
                    .collect(),
                ..DeviceGroup::default()
            }],
        }
    }

    fn get(a: &Amounts, k: &str) -> i64 {
        a.get(k).copied().unwrap_or(-1)
    }

    /// admission.md §11.2: 2 × A100-80GB (H100-80GB profile table), card 0 MIG, card 1 not.
    #[test]
    fn mixed_node_keys_admission_11_2() {
        let cards = [seed(h100_80gb()), seed(logical_nvidia())];
        let a = node_allocatable(&node_of(&cards, 81_920));
        assert_eq!(get(&a, "nvidia.com/gpu"), 1);
        assert_eq!(get(&a, "nvidia.com/gpu.shared"), 10);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced"), 128);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced.units"), 1_600_000);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced.cores-percentage"), 12_800);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced.memory-percentage"), 100);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced.memory-mib"), 81_920);
        assert_eq!(get(&a, "nvidia.com/gpu.partitioned"), 7);
        assert_eq!(get(&a, "nvidia.com/gpu.partitioned.units"), 1_600_000);
        for (p, n) in [
            ("1g.10gb", 7),
            ("1g.20gb", 4),
            ("2g.20gb", 3),
            ("3g.40gb", 2),
            ("4g.40gb", 1),
            ("7g.80gb", 1),
        ] {
            assert_eq!(
                get(&a, &format!("nvidia.com/gpu.partitioned.mig-{p}")),
                n,
                "{p}"
            );
        }
        // After a 3g.40gb on card 0: per-profile keys publish allocated + remaining.
        let (after, grant) = allocate(
            &cards,
            &AllocationRequest::Partition {
                profile: "3g.40gb".into(),
                token_card: None,
            },
            AllocatorEra::Split,
        )
        .unwrap();
        assert_eq!(grant.cards, [0]);
        let a = node_allocatable(&node_of(&after, 81_920));
        for (p, n) in [
            ("1g.10gb", 3),
            ("1g.20gb", 2),
            ("2g.20gb", 1),
            ("3g.40gb", 2),
            ("4g.40gb", 0),
            ("7g.80gb", 0),
        ] {
            assert_eq!(
                get(&a, &format!("nvidia.com/gpu.partitioned.mig-{p}")),
                n,
                "{p}"
            );
        }
        assert_eq!(get(&a, "nvidia.com/gpu.partitioned"), 4);
    }

    #[test]
    fn held_cards_lose_their_other_tokens_and_pods_are_subtracted() {
        let free = seed(logical_nvidia());
        let shared = charge(&free, &Charge::Share).unwrap();
        let a = node_allocatable(&node_of(&[free, shared], 81_920));
        assert_eq!(get(&a, "nvidia.com/gpu"), 1);
        assert_eq!(get(&a, "nvidia.com/gpu.shared"), 20);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced"), 128);
        let holder: Amounts = [("nvidia.com/gpu.shared".to_string(), 1)].into();
        let pod: Amounts = [("nvidia.com/gpu.shared".to_string(), 19)].into();
        assert_eq!(
            pod_fits_node(&a, std::slice::from_ref(&holder), &pod),
            Ok(())
        );
        let big: Amounts = [("nvidia.com/gpu.shared".to_string(), 20)].into();
        assert_eq!(
            pod_fits_node(&a, &[holder], &big),
            Err(vec!["Insufficient nvidia.com/gpu.shared".to_string()])
        );
    }

    #[test]
    fn pod_requests_take_app_sum_and_init_max() {
        let c = |name: &str, init: bool, q: &str| Container {
            name: name.into(),
            init,
            limits: [("nvidia.com/gpu.shared".to_string(), q.to_string())].into(),
            requests: [("cpu".to_string(), "1".to_string())].into(),
        };
        let r =
            pod_accelerator_requests(&[c("a", false, "1"), c("b", false, "2"), c("i", true, "4")])
                .unwrap();
        assert_eq!(r, [("nvidia.com/gpu.shared".to_string(), 4)].into());
        assert!(pod_accelerator_requests(&[c("x", false, "lots")]).is_err());
    }

    #[test]
    fn allocate_refuses_cross_mode_double_tokens_and_full_slices() {
        let free = seed(logical_nvidia());
        let ex = charge(&free, &Charge::Exclusive).unwrap();
        let cards = vec![free.clone(), ex];
        let e = allocate(
            &cards,
            &AllocationRequest::Shared { cards: vec![1] },
            AllocatorEra::Split,
        )
        .unwrap_err();
        assert!(e.to_string().contains("held in mode Exclusive"), "{e}");
        assert_eq!(e.pod_failure_reason(), "UnexpectedAdmissionError");
        let e = allocate(
            &cards,
            &AllocationRequest::Shared { cards: vec![0, 0] },
            AllocatorEra::Split,
        )
        .unwrap_err();
        assert!(e.to_string().contains("two tokens on card 0"), "{e}");
        let (after, _) = allocate(
            &cards,
            &AllocationRequest::Slice {
                card: 0,
                units: 1_000_000,
            },
            AllocatorEra::Split,
        )
        .unwrap();
        let e = allocate(
            &after,
            &AllocationRequest::Slice {
                card: 0,
                units: 960_000,
            },
            AllocatorEra::Split,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("it has 600000 of 1600000 units free and the slice needs 960000"),
            "{e}"
        );
        // Sliced on sliced is allowed; refusals leave the input unchanged (values, not effects).
        assert!(allocate(
            &after,
            &AllocationRequest::Slice {
                card: 0,
                units: 600_000
            },
            AllocatorEra::Split
        )
        .is_ok());
        assert_eq!(after[1].row.mode, Mode::Exclusive);
    }

    #[test]
    fn partitions_pack_onto_the_most_occupied_card_that_fits() {
        let cards = vec![seed(h100_80gb()), seed(h100_80gb())];
        let req = AllocationRequest::Partition {
            profile: "1g.10gb".into(),
            token_card: None,
        };
        let (cards, g) = allocate(&cards, &req, AllocatorEra::Split).unwrap();
        assert_eq!(g.cards, [0]);
        let big = AllocationRequest::Partition {
            profile: "4g.40gb".into(),
            token_card: None,
        };
        // Card 0 cannot take a 4g.40gb any more (start 0 occupied): it goes to card 1.
        let (cards, g) = allocate(&cards, &big, AllocatorEra::Split).unwrap();
        assert_eq!(g.cards, [1]);
        // Card 1 now holds 4 slices, card 0 one: the next small instance packs onto card 1.
        let (cards, g) = allocate(&cards, &req, AllocatorEra::Split).unwrap();
        assert_eq!(g.cards, [1]);
        assert_eq!(
            g.instance.map(|i| i.placement.start),
            Some(4),
            "lowest free legal start"
        );
        let full = AllocationRequest::Partition {
            profile: "7g.80gb".into(),
            token_card: None,
        };
        let e = allocate(&cards, &full, AllocatorEra::Split).unwrap_err();
        assert!(
            e.to_string().contains("no card on the node can host"),
            "{e}"
        );
    }

    /// admission.md §12.5 / SPEC-SPLIT: before the split a partition request rode the shared
    /// `.sliced` token pool, the kubelet could hand it a token of a non-partitionable card, and
    /// `Allocate` failed the Pod with UnexpectedAdmissionError. After the split the same node
    /// advertises no `.partitioned` token, so gate 4 holds the Pod Pending and Allocate is never
    /// reached; on a mixed node the plugin picks the partitioned card itself.
    #[test]
    fn pre_split_reproduces_the_historic_failure() {
        // A node with only a whole (logically sliceable) card.
        let whole_only = vec![seed(logical_nvidia())];
        let req = AllocationRequest::Partition {
            profile: "3g.40gb".into(),
            token_card: Some(0),
        };
        let e = allocate(&whole_only, &req, AllocatorEra::PreSplit).unwrap_err();
        assert_eq!(e.pod_failure_reason(), "UnexpectedAdmissionError");
        assert!(e.to_string().contains("not in a partitioning mode"), "{e}");

        // Split: gate 4 refuses cleanly earlier (no partition tokens on this node).
        let a = node_allocatable(&node_of(&whole_only, 81_920));
        let pod: Amounts = [
            ("nvidia.com/gpu.partitioned".to_string(), 1),
            ("nvidia.com/gpu.partitioned.mig-3g.40gb".to_string(), 1),
        ]
        .into();
        let short = pod_fits_node(&a, &[], &pod).unwrap_err();
        assert!(short.contains(&"Insufficient nvidia.com/gpu.partitioned".to_string()));

        // Mixed node: the pre-split kubelet may hand the whole card's token and fail the Pod;
        // the split plugin ignores the token and serves the partitioned card.
        let mixed = vec![seed(logical_nvidia()), seed(h100_80gb())];
        assert!(allocate(&mixed, &req, AllocatorEra::PreSplit).is_err());
        let (_, g) = allocate(&mixed, &req, AllocatorEra::Split).unwrap();
        assert_eq!(g.cards, [1]);
        assert!(pod_fits_node(&node_allocatable(&node_of(&mixed, 81_920)), &[], &pod).is_ok());
    }

    fn tas_node(host: &str, free: &[(&str, i64)], labels: &[(&str, &str)]) -> TasNode {
        TasNode {
            name: host.into(),
            hostname: host.into(),
            labels: crate::labels::from_pairs(labels),
            free: free.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn hosts(placed: &[Placed]) -> Vec<(&str, u32)> {
        placed
            .iter()
            .map(|p| (p.hostname.as_str(), p.pods))
            .collect()
    }

    #[test]
    fn the_ledger_holds_come_off_allocatable() {
        let free = seed(logical_nvidia());
        let whole = charge(&free, &Charge::Exclusive).unwrap();
        let shared = charge(&charge(&free, &Charge::Share).unwrap(), &Charge::Share).unwrap();
        let sliced = charge(&free, &Charge::Slice { units: 960_000 }).unwrap();
        let d = node_of(&[free, whole, shared, sliced], 81_920);
        assert_eq!(get(&node_allocatable(&d), "nvidia.com/gpu"), 2);
        let f = node_free_accelerators(&d);
        // Every card's tokens count (health is gate 4's), less what each row holds.
        assert_eq!(get(&f, "nvidia.com/gpu"), 3, "the exclusive card is held");
        assert_eq!(get(&f, "nvidia.com/gpu.shared"), 40 - 2);
        assert_eq!(get(&f, "nvidia.com/gpu.sliced"), 128 * 4 - 1);
        assert_eq!(
            get(&f, "nvidia.com/gpu.sliced.units"),
            4 * UNITS_PER_CARD - 960_000
        );
    }

    #[test]
    fn one_node_that_hosts_them_all_is_the_tightest() {
        let pod: Amounts = [("nvidia.com/gpu".to_string(), 1)].into();
        let nodes = [
            tas_node("a", &[("nvidia.com/gpu", 4)], &[]),
            tas_node("b", &[("nvidia.com/gpu", 2)], &[]),
            tas_node("c", &[("nvidia.com/gpu", 3)], &[]),
        ];
        let none = BTreeMap::new();
        let got = tas_place_pod_set(&nodes, &none, &pod, 2, &[]).unwrap();
        assert_eq!(hosts(&got), [("b", 2)]);
        // 6 Pods: the largest whole (a: 4), then the tightest for the last 2 (b).
        let got = tas_place_pod_set(&nodes, &none, &pod, 6, &[]).unwrap();
        assert_eq!(hosts(&got), [("a", 4), ("b", 2)]);
        // What this Workload already placed counts against the node.
        let already: BTreeMap<String, Amounts> = [("b".to_string(), pod.clone())].into();
        let got = tas_place_pod_set(&nodes, &already, &pod, 2, &[]).unwrap();
        assert_eq!(hosts(&got), [("c", 2)]);
        let miss = tas_place_pod_set(&nodes, &none, &pod, 10, &[]).unwrap_err();
        assert_eq!(
            miss.message("t"),
            "topology \"t\" allows to fit only 9 out of 10 pod(s)"
        );
    }

    #[test]
    fn a_node_the_affinity_excludes_is_no_candidate() {
        let pod: Amounts = [("nvidia.com/gpu.sliced.units".to_string(), 800_000)].into();
        let label = "sliced-max-free-units.fit.gpustack.ai/nvidia-t4";
        let nodes = [
            tas_node(
                "a",
                &[("nvidia.com/gpu.sliced.units", 2_560_000)],
                &[(label, "640000")],
            ),
            tas_node(
                "b",
                &[("nvidia.com/gpu.sliced.units", 500_000)],
                &[(label, "1600000")],
            ),
        ];
        let pin = NodeSelectorRequirement {
            key: label.into(),
            operator: "Gt".into(),
            values: vec!["799999".into()],
        };
        let miss = tas_place_pod_set(&nodes, &BTreeMap::new(), &pod, 1, &[pin]).unwrap_err();
        assert_eq!(
            miss.message("t"),
            "topology \"t\" doesn't allow to fit any of 1 pod(s). Total nodes: 2; excluded: \
             resource \"nvidia.com/gpu.sliced.units\": 1, affinity: 1"
        );
        let got = tas_place_pod_set(&nodes, &BTreeMap::new(), &pod, 3, &[]).unwrap();
        assert_eq!(hosts(&got), [("a", 3)]);
    }

    #[test]
    fn partition_card_without_ledger_row_uses_its_ceiling() {
        let d = Devices {
            groups: vec![DeviceGroup {
                manufacturer: "nvidia".into(),
                id: "h100".into(),
                cards: vec![Card {
                    capability: Some(h100_80gb()),
                    ledger: Some(Ledger::default()),
                    ..Card::default()
                }],
                ..DeviceGroup::default()
            }],
        };
        let a = node_allocatable(&d);
        assert_eq!(get(&a, "nvidia.com/gpu.partitioned"), 7);
        assert_eq!(get(&a, "nvidia.com/gpu.partitioned.mig-1g.20gb"), 4);
        assert_eq!(get(&a, "nvidia.com/gpu"), 0);
        assert_eq!(get(&a, "nvidia.com/gpu.sliced"), 0);
        assert_eq!(a.get("nvidia.com/gpu.sliced.units"), None);
    }
}
