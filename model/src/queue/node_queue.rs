//! The NodeQueue reconciler as a pure state machine: one call = one Reconcile of one
//! ClusterQueue (research/chain.md §10.2–10.3, corrections.md 2–3, 15;
//! pkg/worker/controllers/worker/node_queue.go and its tests).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{
    has_reserved, plan_order, queue_admission_checks, queue_resource_groups, ActiveCondition,
    FlavorUsage, PoolFlavor, QueueRefusal, QueueStatus, STOPPED_REASON,
};
use crate::cluster::{Era, QueueStatusGate, Settings};
use crate::labels::{self, Labels, Text};
use crate::objects::{ResourceGroup, StopPolicy};
use crate::units::MAX_FLAVORS_PER_QUEUE;

/// Requeue while a plan migration waits on Kueue (`_TASQueueMigrationRequeueAfter`, 5 s).
pub const MIGRATION_REQUEUE_SECS: u32 = 5;
/// Requeue while waiting for Kueue to report the current generation (corrections.md 2).
pub const STATUS_GATE_REQUEUE_SECS: u32 = 5;
/// Requeue after a refusal that time can fix (corrections.md 3).
pub const REFUSAL_REQUEUE_SECS: u32 = 30;
/// Wait while reservations remain and drain-when-no-flavors is off (chain.md §10.3(c)).
pub const NO_FLAVOR_WAIT_SECS: u32 = 60;

/// Reason while the gate waits for Kueue's status (corrections.md 2).
pub const AWAITING_QUEUE_STATUS: &str = "AwaitingQueueStatus";
/// Reason of a written, valid plan (node_queue_test.go asserts "Ready").
pub const TOPOLOGY_READY_REASON: &str = "Ready";
/// Reason while a flavor-plan migration holds the queue (corrections.md 15; node_queue.go
/// `migrateClusterQueueResourceGroups`, written when the migration starts).
pub const MIGRATING_REASON: &str = "Migrating";
/// The message of a Ready plan (node_queue.go `fillClusterQueue`).
pub const READY_MESSAGE: &str = "all queue flavors are topology-aware and quota is conserved";
/// The message while a migration holds the queue (node_queue.go, migration start).
pub const MIGRATING_MESSAGE: &str = "holding and draining before switching topology flavors";
/// The saved-policy annotation's spelling of an absent `spec.stopPolicy`
/// (node_queue.go `_TASQueueMigrationStopPolicyUnset`).
pub const SAVED_STOP_POLICY_UNSET: &str = "unset";

/// `True | False | Unknown`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    #[default]
    Unknown,
}

/// The operator's `TopologyReady` condition on the queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct TopologyReady {
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

impl TopologyReady {
    fn ready() -> Self {
        TopologyReady {
            status: ConditionStatus::True,
            reason: TOPOLOGY_READY_REASON.into(),
            message: READY_MESSAGE.into(),
        }
    }
    fn refused(r: Refused) -> Self {
        TopologyReady {
            status: ConditionStatus::False,
            reason: r.reason.reason().into(),
            message: r.message,
        }
    }
    fn migrating() -> Self {
        TopologyReady {
            status: ConditionStatus::False,
            reason: MIGRATING_REASON.into(),
            message: MIGRATING_MESSAGE.into(),
        }
    }
    /// Unknown/AwaitingQueueStatus, naming the generation waited for and the flavors to drop
    /// (node_queue.go `fillClusterQueue`; Go's `%v` of a slice is `[a b]`).
    fn awaiting(generation: u64, dropped: &[Text]) -> Self {
        TopologyReady {
            status: ConditionStatus::Unknown,
            reason: AWAITING_QUEUE_STATUS.into(),
            message: format!(
                "waiting for Kueue to report flavor usage at generation {generation} before \
                 dropping flavors [{}]",
                dropped.join(" ")
            ),
        }
    }
}

/// A refusal and the message the reconciler writes with it on TopologyReady=False
/// (node_queue.go `nodeQueueValidationError`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Refused {
    pub reason: QueueRefusal,
    pub message: String,
}

impl Refused {
    fn new(reason: QueueRefusal, message: String) -> Self {
        Refused { reason, message }
    }
}

/// A ClusterQueue as the NodeQueue reconciler reads and writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueState {
    pub name: Text,
    pub uid: Text,
    /// `metadata.generation`: bumped by every spec change.
    pub generation: u64,
    /// A deletionTimestamp is set.
    pub deleting: bool,
    /// `spec.stopPolicy`; `None` = the field is absent, which Kueue reads as `None`
    /// (`ptr.Deref(cq.Spec.StopPolicy, kueue.None)`). A migration restores an absent field as
    /// absent (node_queue_test.go `MigratesFlavorPlanWithoutReplacingQueue`, "restores unset").
    pub stop_policy: Option<StopPolicy>,
    pub resource_groups: Vec<ResourceGroup>,
    pub admission_checks: Vec<Text>,
    /// `topology.gpustack.ai/{tas-queue, empty-plan-hold, migration-phase, migration-stop-policy}`.
    pub annotations: Labels,
    /// Kueue-reported status.
    pub status: QueueStatus,
    /// The operator's TopologyReady condition, as last written.
    pub topology_ready: Option<TopologyReady>,
}

/// Phase of a flavor-plan migration (`topology.gpustack.ai/migration-phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MigrationPhase {
    /// Held with HoldAndDrain; the old plan stays until Kueue drains it.
    Draining,
    /// The new plan is written; the queue stays held until Kueue observes it.
    Switched,
}

impl MigrationPhase {
    pub fn annotation(self) -> &'static str {
        match self {
            MigrationPhase::Draining => "draining",
            MigrationPhase::Switched => "switched",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        match s {
            "draining" => Some(MigrationPhase::Draining),
            "switched" => Some(MigrationPhase::Switched),
            _ => None,
        }
    }
}

/// An in-flight migration read from the annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Migration {
    pub phase: MigrationPhase,
    /// The stop policy to restore when the migration completes (`None` = restore it absent).
    pub saved: Option<StopPolicy>,
}

/// Parses a stop policy name as the vectors and the InstanceType side write it ("" = None).
pub fn parse_stop_policy(s: &str) -> Option<StopPolicy> {
    match s {
        "" | "None" => Some(StopPolicy::None),
        "Hold" => Some(StopPolicy::Hold),
        "HoldAndDrain" => Some(StopPolicy::HoldAndDrain),
        _ => None,
    }
}

/// The saved-policy annotation's value for a stop policy: its name, or `unset` for an absent
/// field (node_queue.go `encodeStopPolicy`).
pub fn encode_saved_stop_policy(policy: Option<StopPolicy>) -> &'static str {
    policy.map_or(SAVED_STOP_POLICY_UNSET, StopPolicy::name)
}

/// Reads the saved-policy annotation: `unset` is an absent field, a policy name is that policy,
/// anything else (also an empty or missing value) cannot be restored (node_queue.go
/// `decodeStopPolicy`).
pub fn decode_saved_stop_policy(value: &str) -> Result<Option<StopPolicy>, Refused> {
    match value {
        SAVED_STOP_POLICY_UNSET => Ok(None),
        "None" => Ok(Some(StopPolicy::None)),
        "Hold" => Ok(Some(StopPolicy::Hold)),
        "HoldAndDrain" => Ok(Some(StopPolicy::HoldAndDrain)),
        other => Err(Refused::new(
            QueueRefusal::InvalidMigrationState,
            format!("ClusterQueue has unsupported saved stop policy {other:?}"),
        )),
    }
}

impl QueueState {
    fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(Text::as_str)
    }

    /// The stop policy Kueue acts on: an absent field reads as `None`.
    pub fn policy(&self) -> StopPolicy {
        self.stop_policy.unwrap_or_default()
    }

    /// The migration marker, if any; a phase or saved policy that cannot be read is
    /// `InvalidMigrationState` (node_queue.go `migrateClusterQueueResourceGroups`).
    pub fn migration(&self) -> Result<Option<Migration>, QueueRefusal> {
        self.read_migration().map_err(|r| r.reason)
    }

    fn read_migration(&self) -> Result<Option<Migration>, Refused> {
        let Some(phase) = self.annotation(labels::MIGRATION_PHASE) else {
            return Ok(None);
        };
        let phase = MigrationPhase::parse(phase).ok_or_else(|| {
            Refused::new(
                QueueRefusal::InvalidMigrationState,
                format!("ClusterQueue has unsupported topology migration phase {phase:?}"),
            )
        })?;
        let saved =
            decode_saved_stop_policy(self.annotation(labels::MIGRATION_STOP_POLICY).unwrap_or(""))?;
        Ok(Some(Migration { phase, saved }))
    }

    /// Whether the migration-phase annotation is present at all.
    pub fn has_migration_marker(&self) -> bool {
        self.annotations.contains_key(labels::MIGRATION_PHASE)
    }

    /// Whether the queue carries the empty-plan-hold marker.
    pub fn empty_plan_held(&self) -> bool {
        self.annotation(labels::EMPTY_PLAN_HOLD) == Some("true")
    }

    fn is_tas_queue(&self) -> bool {
        self.annotation(labels::TAS_QUEUE) == Some("true")
    }

    fn spec_differs(&self, other: &QueueState) -> bool {
        self.stop_policy != other.stop_policy
            || self.resource_groups != other.resource_groups
            || self.admission_checks != other.admission_checks
    }
}

/// What one flavor pins and where its topology lives (the fake client's ResourceFlavor).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlavorPlacement {
    /// The flavor's `topology.gpustack.ai/profile` label ("" = absent).
    pub profile: Text,
    /// `spec.nodeLabels`.
    pub node_labels: Labels,
    /// `spec.topologyName` ("" = absent).
    pub topology_name: Text,
}

/// A node the pool counts: managed, profiled, matching the pool's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolNode {
    pub name: Text,
    pub labels: Labels,
}

/// The rest of the cluster the reconciler reads: Topology objects, each flavor's placement, the
/// pool's nodes, and the contract variant to follow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueWorld {
    pub topologies: BTreeSet<Text>,
    pub placements: BTreeMap<Text, FlavorPlacement>,
    pub nodes: Vec<PoolNode>,
}

/// One Reconcile's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStep {
    pub state: QueueState,
    /// The TopologyReady condition written by this reconcile (None = left as it was).
    pub topology_ready: Option<TopologyReady>,
    /// `RequeueAfter` in seconds (None = no requeue).
    pub requeue_after: Option<u32>,
}

/// `gpustack-<profile>`: the Topology a profiled flavor points at. chain.md §10.2.
pub fn topology_name(profile: &str) -> Text {
    labels::concat_text(&["gpustack-", profile])
}

/// Whether a flavor's nodeLabels select a node. chain.md §10.2 (TAS validation).
pub fn selects(node_labels: &Labels, node: &PoolNode) -> bool {
    node_labels
        .iter()
        .all(|(k, v)| node.labels.get(k).is_some_and(|nv| nv == v))
}

/// Kueue may not cover one resource in two groups: an existing plan that does is refused.
/// chain.md §10.2; node_queue.go `duplicateCoveredResource`.
pub fn duplicate_covered_resource(groups: &[ResourceGroup]) -> bool {
    first_duplicate_covered(groups).is_some()
}

fn first_duplicate_covered(groups: &[ResourceGroup]) -> Option<&str> {
    let mut seen = BTreeSet::new();
    groups
        .iter()
        .flat_map(|g| g.covered_resources.iter())
        .find(|r| !seen.insert(r.as_str()))
        .map(Text::as_str)
}

/// Why one flavor is not bound to an existing profile Topology, if it is not (node_queue.go
/// `validateTASFlavors`: profile pinned and labelled, `gpustack-<profile>` named, Topology found).
fn topology_gap(f: &PoolFlavor, world: &QueueWorld) -> Option<String> {
    let Some(p) = world.placements.get(&f.name) else {
        return Some(format!(
            "ResourceFlavor {:?} is not bound to one topology profile",
            f.name
        ));
    };
    if p.profile.is_empty()
        || p.node_labels
            .get(labels::TOPOLOGY_PROFILE)
            .map(Text::as_str)
            != Some(p.profile.as_str())
        || p.topology_name.is_empty()
    {
        return Some(format!(
            "ResourceFlavor {:?} is not bound to one topology profile",
            f.name
        ));
    }
    let expected = topology_name(&p.profile);
    if p.topology_name != expected {
        return Some(format!(
            "ResourceFlavor {:?} references Topology {:?} instead of profile Topology {:?}",
            f.name, p.topology_name, expected
        ));
    }
    if !world.topologies.contains(&p.topology_name) {
        return Some(format!(
            "ResourceFlavor {:?} references missing Topology {:?}",
            f.name, p.topology_name
        ));
    }
    None
}

/// Every flavor has a profile, pins it, points at `gpustack-<profile>`, and that Topology exists.
/// chain.md §10.2.
pub fn topology_complete(flavors: &[&PoolFlavor], world: &QueueWorld) -> bool {
    flavors.iter().all(|f| topology_gap(f, world).is_none())
}

/// Which flavor selected each pool node, and how many nodes each flavor selected.
struct Selection {
    /// Per flavor, in the order given: the nodes it selects.
    counts: Vec<u64>,
    /// Per node of `QueueWorld::nodes`: whether some flavor selects it.
    fed: Vec<bool>,
}

/// The nodes each flavor selects, checked per flavor in list order: a flavor's topology first,
/// then whether one of its nodes was already selected by an earlier flavor (node_queue.go
/// `validateTASFlavors`, corrections.md 15). One pass serves the overlap and the conservation
/// checks (node names are unique in a pool, so a node is its position). Nodes with equal labels
/// (the world keeps only the flavors' selector keys) are selected alike, so each distinct label
/// set is tested once per flavor: a large pool has few.
fn select_nodes(flavors: &[&PoolFlavor], world: &QueueWorld) -> Result<Selection, Refused> {
    let mut alike = LabelSets::of(&world.nodes);
    let mut counts = Vec::with_capacity(flavors.len());
    for f in flavors {
        if let Some(message) = topology_gap(f, world) {
            return Err(Refused::new(QueueRefusal::MissingTopology, message));
        }
        let Some(p) = world.placements.get(&f.name) else {
            // topology_gap refuses a flavor without a placement.
            return Err(Refused::new(QueueRefusal::MissingTopology, String::new()));
        };
        let mut count = 0u64;
        // sets come in their first nodes' order: the first one an earlier flavor owns holds
        // the first node selected twice
        for set in &mut alike.sets {
            if !selects(&p.node_labels, &world.nodes[set.first]) {
                continue;
            }
            if let Some(prior) = set.owner.replace(f.name.as_str()) {
                return Err(Refused::new(
                    QueueRefusal::OverlappingSelectors,
                    format!(
                        "Node {:?} is selected by ResourceFlavors {:?} and {:?}",
                        world.nodes[set.first].name, prior, f.name
                    ),
                ));
            }
            count += set.nodes;
        }
        counts.push(count);
    }
    let fed = alike
        .set_of
        .iter()
        .map(|&s| alike.sets[s].owner.is_some())
        .collect();
    Ok(Selection { counts, fed })
}

/// A pool's nodes grouped by equal labels, in the order of each group's first node.
struct LabelSets<'f> {
    sets: Vec<LabelSet<'f>>,
    /// Per node: the index of its group in `sets`.
    set_of: Vec<usize>,
}

struct LabelSet<'f> {
    /// The position of its first node.
    first: usize,
    /// How many nodes have these labels.
    nodes: u64,
    /// The flavor that selected them first.
    owner: Option<&'f str>,
}

impl<'f> LabelSets<'f> {
    /// Found by a scan: a pool has few sets, and the world's nodes alike share one map, which
    /// compares by pointer first.
    fn of(nodes: &[PoolNode]) -> LabelSets<'f> {
        let mut sets: Vec<LabelSet> = Vec::new();
        let set_of = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let found = sets.iter().position(|s| nodes[s.first].labels == n.labels);
                let s = found.unwrap_or_else(|| {
                    sets.push(LabelSet {
                        first: i,
                        nodes: 0,
                        owner: None,
                    });
                    sets.len() - 1
                });
                sets[s].nodes += 1;
                s
            })
            .collect();
        LabelSets { sets, set_of }
    }
}

/// Each flavor advertises capacity = (#nodes it selects) × count, and every pool node feeds a
/// flavor (node_queue.go `validateTASFlavors`; node_queue_test.go `RejectsInvalidTASQueueInputs`
/// "non-conserved quota", `PoolConservationCountsOnlyContributingNodes`).
fn check_conservation(
    flavors: &[&PoolFlavor],
    selection: &Selection,
    world: &QueueWorld,
) -> Result<(), Refused> {
    for (f, &selected) in flavors.iter().zip(&selection.counts) {
        if f.per_node_count == 0 || selected.saturating_mul(f.per_node_count) != f.capacity {
            return Err(Refused::new(
                QueueRefusal::NonConservedQuota,
                format!(
                    "ResourceFlavor {:?} advertises capacity {} but {} selected Nodes contribute {} each",
                    f.name, f.capacity, selected, f.per_node_count
                ),
            ));
        }
    }
    let unfed = world
        .nodes
        .iter()
        .zip(&selection.fed)
        .find(|(_, fed)| !**fed);
    if let Some((n, _)) = unfed {
        return Err(Refused::new(
            QueueRefusal::NonConservedQuota,
            format!(
                "Node {:?} belongs to the queue pool but contributes to no ResourceFlavor",
                n.name
            ),
        ));
    }
    Ok(())
}

/// The flavors in the API's list order (by name), the order validation walks them in.
fn list_order<'a>(live: &[&'a PoolFlavor]) -> Vec<&'a PoolFlavor> {
    let mut listed = live.to_vec();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    listed
}

/// No node is selected by two flavors. chain.md §10.2.
pub fn selectors_disjoint(flavors: &[&PoolFlavor], world: &QueueWorld) -> bool {
    !matches!(
        select_nodes(flavors, world),
        Err(Refused {
            reason: QueueRefusal::OverlappingSelectors,
            ..
        })
    )
}

/// Each flavor's capacity = (#nodes it selects) × count, and every pool node is selected.
/// chain.md §10.2; node_queue_test.go `PoolConservationCountsOnlyContributingNodes`.
pub fn quota_conserved(flavors: &[&PoolFlavor], world: &QueueWorld) -> bool {
    select_nodes(flavors, world).is_ok_and(|s| check_conservation(flavors, &s, world).is_ok())
}

/// The E3 validation with the message the reconciler writes: duplicate covered resource,
/// unsupported existing quota, the 64-flavor cap, then per flavor its topology and overlap,
/// then conservation, and a readable migration marker last. corrections.md 3, 15; node_queue.go
/// `fillClusterQueue`, `validateTASFlavors`.
pub fn check_queue_plan(
    state: &QueueState,
    live: &[&PoolFlavor],
    world: &QueueWorld,
) -> Result<(), Refused> {
    check_existing_groups(state)?;
    check_live_flavors(live, world)?;
    state.read_migration().map(|_| ())
}

/// [`check_queue_plan`]'s checks of the queue as it stands: one group per covered resource,
/// and quota only on a queue this controller manages.
fn check_existing_groups(state: &QueueState) -> Result<(), Refused> {
    if let Some(r) = first_duplicate_covered(&state.resource_groups) {
        return Err(Refused::new(
            QueueRefusal::DuplicateCoveredResource,
            format!("resource {r:?} is covered by more than one ClusterQueue resource group"),
        ));
    }
    if !state.resource_groups.is_empty() && !state.is_tas_queue() {
        return Err(Refused::new(
            QueueRefusal::UnsupportedExistingObject,
            "existing ClusterQueue has quota that was not created by the topology-aware queue \
             controller; create fresh managed objects"
                .into(),
        ));
    }
    Ok(())
}

/// [`check_queue_plan`]'s checks of the live flavors alone: how many, which nodes each selects,
/// and that the selection conserves the pool's nodes.
fn check_live_flavors(live: &[&PoolFlavor], world: &QueueWorld) -> Result<(), Refused> {
    if live.len() > MAX_FLAVORS_PER_QUEUE {
        return Err(Refused::new(
            QueueRefusal::TooManyFlavors,
            format!(
                "covered resource requires {} flavors; Kueue permits at most {}",
                live.len(),
                MAX_FLAVORS_PER_QUEUE
            ),
        ));
    }
    let listed = list_order(live);
    let selection = select_nodes(&listed, world)?;
    check_conservation(&listed, &selection, world)
}

/// What a Reconcile reads of the pool's flavors and world and not of the queue: the live
/// flavors in plan order, the verdict of the checks on them alone (count, node selection,
/// conservation) and the resource groups they plan. Settling a queue reconciles it until
/// nothing changes, every turn on the same flavors and world, so
/// [`settle_pool_queue`](super::settle_pool_queue) works them out once
/// ([`reconcile_node_queue_planned`]).
pub struct FlavorPlan<'f> {
    live: Vec<&'f PoolFlavor>,
    /// `None` where no Reconcile reads it (E2, or no live flavor).
    checked: Option<Result<(), Refused>>,
    groups: Result<Vec<ResourceGroup>, QueueRefusal>,
}

impl<'f> FlavorPlan<'f> {
    pub fn of(flavors: &'f [PoolFlavor], world: &QueueWorld, era: Era) -> Self {
        let live = plan_order(flavors);
        let checked =
            (era == Era::E3 && !live.is_empty()).then(|| check_live_flavors(&live, world));
        FlavorPlan {
            checked,
            groups: queue_resource_groups(flavors),
            live,
        }
    }
}

/// [`check_queue_plan`] without the message.
pub fn validate_queue_plan(
    state: &QueueState,
    live: &[&PoolFlavor],
    world: &QueueWorld,
) -> Result<(), QueueRefusal> {
    check_queue_plan(state, live, world).map_err(|r| r.reason)
}

/// Flavors the current plan references that the new plan does not.
pub fn dropped_flavors(current: &[ResourceGroup], next: &[ResourceGroup]) -> Vec<Text> {
    let keep: BTreeSet<&str> = next
        .iter()
        .flat_map(|g| g.flavors.iter().map(|f| f.flavor.as_str()))
        .collect();
    current
        .iter()
        .flat_map(|g| g.flavors.iter())
        .filter(|f| !keep.contains(f.flavor.as_str()))
        .map(|f| f.flavor.clone())
        .collect()
}

/// A dropped flavor may still be in use: Kueue reports a non-zero reservation or usage on it, or
/// does not list it in either. corrections.md 2 (`flavorsMayBeInUse`).
pub fn flavors_may_be_in_use(status: &QueueStatus, dropped: &[Text]) -> bool {
    let row = |rows: &[FlavorUsage], f: &str| -> Option<bool> {
        let mine: Vec<&FlavorUsage> = rows.iter().filter(|r| r.flavor == f).collect();
        (!mine.is_empty()).then(|| mine.iter().any(|r| r.total != 0 || r.borrowed != 0))
    };
    dropped.iter().any(|f| {
        let reserved = row(&status.flavors_reservation, f);
        let used = row(&status.flavors_usage, f);
        reserved.unwrap_or(true) || used.unwrap_or(true)
    })
}

/// Kueue reports an Active condition for at least the current generation. corrections.md 2.
pub fn status_observed(state: &QueueState) -> bool {
    state
        .status
        .active
        .as_ref()
        .is_some_and(|c| c.observed_generation >= state.generation)
}

/// Kueue reports the queue stopped (`Active=False`, `Stopped`) at the current generation.
/// chain.md §10.3(b); node_queue_test.go `WaitsForCurrentStoppedGeneration`.
pub fn stopped_at_current_generation(state: &QueueState) -> bool {
    state.status.active.as_ref().is_some_and(|c| {
        !c.status && c.reason == STOPPED_REASON && c.observed_generation >= state.generation
    })
}

/// Closes a reconcile: a spec change bumps the generation (API-server semantics) and the written
/// condition is recorded on the state.
fn finish(
    before: &QueueState,
    mut next: QueueState,
    topology_ready: Option<TopologyReady>,
    requeue_after: Option<u32>,
) -> QueueStep {
    if next.spec_differs(before) {
        next.generation = before.generation.saturating_add(1);
    }
    if let Some(c) = &topology_ready {
        next.topology_ready = Some(c.clone());
    }
    QueueStep {
        state: next,
        topology_ready,
        requeue_after,
    }
}

/// Save the stop policy (`unset` when absent), hold with HoldAndDrain, mark the migration
/// `draining`. chain.md §10.3(b); node_queue.go `migrateClusterQueueResourceGroups`.
fn start_migration(next: &mut QueueState) {
    next.annotations.insert(
        Text::new_static(labels::MIGRATION_STOP_POLICY),
        encode_saved_stop_policy(next.stop_policy).into(),
    );
    next.annotations.insert(
        Text::new_static(labels::MIGRATION_PHASE),
        MigrationPhase::Draining.annotation().into(),
    );
    next.stop_policy = Some(StopPolicy::HoldAndDrain);
}

/// Starts a migration: the queue is held and TopologyReady=False/Migrating until the switched
/// plan is restored. node_queue.go `migrateClusterQueueResourceGroups` (empty phase).
fn begin_migration(before: &QueueState, mut next: QueueState) -> QueueStep {
    start_migration(&mut next);
    finish(
        before,
        next,
        Some(TopologyReady::migrating()),
        Some(MIGRATION_REQUEUE_SECS),
    )
}

/// Write the new plan into the held queue and mark the migration `switched`.
fn switch_plan(next: &mut QueueState, plan: Vec<ResourceGroup>) {
    next.resource_groups = plan;
    next.annotations.insert(
        Text::new_static(labels::MIGRATION_PHASE),
        MigrationPhase::Switched.annotation().into(),
    );
}

/// Restore the saved stop policy (absent stays absent) and drop the migration marker.
fn complete_migration(next: &mut QueueState, saved: Option<StopPolicy>) {
    next.stop_policy = saved;
    next.annotations.remove(labels::MIGRATION_PHASE);
    next.annotations.remove(labels::MIGRATION_STOP_POLICY);
}

/// A queue with no groups and StopPolicy None (or absent) admits everything: Hold it, marked as
/// the NodeQueue's (an admin Hold stays unmarked). chain.md §10.3(d); invariant §14.9;
/// node_queue.go `holdEmptyClusterQueue`.
fn hold_empty_plan(next: &mut QueueState) {
    if next.resource_groups.is_empty()
        && next.policy() == StopPolicy::None
        && !next.has_migration_marker()
    {
        next.stop_policy = Some(StopPolicy::Hold);
        next.annotations.insert(
            Text::new_static(labels::EMPTY_PLAN_HOLD),
            Text::new_static("true"),
        );
    }
}

/// A refusal keeps the last plan (or holds an empty queue), sets TopologyReady=False, and
/// requeues after 30 s for MissingTopology / NonConservedQuota or while migrating.
/// corrections.md 3; node_queue.go `rejectClusterQueue`.
fn refuse(before: &QueueState, mut next: QueueState, r: Refused) -> QueueStep {
    hold_empty_plan(&mut next);
    let retry = matches!(
        r.reason,
        QueueRefusal::MissingTopology | QueueRefusal::NonConservedQuota
    ) || next.has_migration_marker();
    finish(
        before,
        next,
        Some(TopologyReady::refused(r)),
        retry.then_some(REFUSAL_REQUEUE_SECS),
    )
}

/// A queue being deleted is driven to HoldAndDrain, unconditionally; already draining = no-op.
/// chain.md §10.3(a); node_queue.go Reconcile.
pub fn drain_on_delete(state: &QueueState) -> QueueStep {
    let mut next = state.clone();
    if next.policy() != StopPolicy::HoldAndDrain {
        next.stop_policy = Some(StopPolicy::HoldAndDrain);
    }
    finish(state, next, None, None)
}

/// One Reconcile of the NodeQueue reconciler. chain.md §10.2–10.3; corrections.md 2–3.
pub fn reconcile_node_queue(
    state: &QueueState,
    flavors: &[PoolFlavor],
    world: &QueueWorld,
    settings: &Settings,
) -> QueueStep {
    let plan = FlavorPlan::of(flavors, world, settings.era);
    reconcile_node_queue_planned(state, &plan, settings)
}

/// [`reconcile_node_queue`] with what it reads of the flavors and world worked out already.
pub fn reconcile_node_queue_planned(
    state: &QueueState,
    plan: &FlavorPlan<'_>,
    settings: &Settings,
) -> QueueStep {
    if state.deleting {
        return drain_on_delete(state);
    }
    match (settings.era, plan.live.is_empty()) {
        (Era::E2, true) => drain_or_empty_e2(state, settings),
        (Era::E2, false) => fill_e2(state, plan, settings),
        (Era::E3, true) => drain_or_empty(state, settings),
        (Era::E3, false) => fill(state, plan, settings),
    }
}

/// Live flavors exist: validate, then migrate, gate, or update in place. corrections.md 2–3;
/// node_queue.go `fillClusterQueue`.
fn fill(state: &QueueState, planned: &FlavorPlan<'_>, settings: &Settings) -> QueueStep {
    let mut next = state.clone();
    // check_queue_plan's order: the queue's groups, the live flavors, the migration marks.
    let checked = check_existing_groups(state)
        .and_then(|()| planned.checked.clone().unwrap_or(Ok(())))
        .and_then(|()| state.read_migration());
    let migration = match checked {
        Ok(m) => m,
        Err(r) => return refuse(state, next, r),
    };
    let plan = match &planned.groups {
        Ok(plan) => plan.clone(),
        Err(r) => {
            let message = r.to_string();
            return refuse(state, next, Refused::new(*r, message));
        }
    };
    let acceleratable = planned.live.first().is_some_and(|f| f.acceleratable);
    // The TAS marker and the AdmissionCheck references are written before anything else; a
    // migration step that has to write them does nothing more this time.
    next.annotations.insert(
        Text::new_static(labels::TAS_QUEUE),
        Text::new_static("true"),
    );
    next.admission_checks = queue_admission_checks(acceleratable, settings);
    let changed =
        next.annotations != state.annotations || next.admission_checks != state.admission_checks;

    if let Some(m) = migration {
        return continue_migration(state, next, m, plan, changed);
    }

    let dropped = dropped_flavors(&state.resource_groups, &plan);
    if !dropped.is_empty() {
        let gated = settings.queue_status_gate == QueueStatusGate::Present;
        if gated && !status_observed(state) {
            // The gate writes no spec: the plan, checks and marker wait with it.
            return finish(
                state,
                state.clone(),
                Some(TopologyReady::awaiting(state.generation, &dropped)),
                Some(STATUS_GATE_REQUEUE_SECS),
            );
        }
        if flavors_may_be_in_use(&state.status, &dropped) {
            return begin_migration(state, next);
        }
    }

    // In place: reactivate a queue we drained to empty; lift only the empty-plan marker.
    if next.policy() == StopPolicy::HoldAndDrain && next.resource_groups.is_empty() {
        next.stop_policy = Some(StopPolicy::None);
    }
    if !plan.is_empty() {
        next.annotations.remove(labels::EMPTY_PLAN_HOLD);
    }
    next.resource_groups = plan;
    hold_empty_plan(&mut next);
    finish(state, next, Some(TopologyReady::ready()), None)
}

/// Drive an in-flight migration one step towards `plan` (empty when the pool lost every flavor):
/// keep the queue held, wait until Kueue reports it stopped at the current generation with
/// nothing reserved, then switch the plan, and once Kueue has observed the switched plan restore
/// the saved stop policy. An emptied queue stays held with its marker until a flavor returns.
/// TopologyReady keeps `Migrating` until the end, when it becomes Ready. chain.md §10.3(b);
/// node_queue.go `migrateClusterQueueResourceGroups`.
fn continue_migration(
    before: &QueueState,
    mut next: QueueState,
    m: Migration,
    plan: Vec<ResourceGroup>,
    changed: bool,
) -> QueueStep {
    let mut changed = changed;
    if next.policy() != StopPolicy::HoldAndDrain {
        next.stop_policy = Some(StopPolicy::HoldAndDrain);
        changed = true;
    }
    if changed {
        return finish(before, next, None, Some(MIGRATION_REQUEUE_SECS));
    }
    if !stopped_at_current_generation(before) || has_reserved(&before.status) {
        return finish(before, next, None, Some(MIGRATION_REQUEUE_SECS));
    }
    if m.phase == MigrationPhase::Draining || next.resource_groups != plan {
        switch_plan(&mut next, plan);
        return finish(before, next, None, Some(MIGRATION_REQUEUE_SECS));
    }
    if !plan.is_empty() {
        complete_migration(&mut next, m.saved);
    }
    finish(before, next, Some(TopologyReady::ready()), None)
}

/// No live flavor: continue a migration towards the empty plan, hold an empty queue, wait 60 s
/// while reservations remain and drain-when-no-flavors is off, else migrate to the empty plan
/// (held first even when nothing is reserved). chain.md §10.3(c)–(d); node_queue.go
/// `drainOrEmptyClusterQueue`.
fn drain_or_empty(state: &QueueState, settings: &Settings) -> QueueStep {
    let mut next = state.clone();
    let migration = match state.read_migration() {
        Ok(m) => m,
        Err(r) => return refuse(state, next, r),
    };
    if let Some(m) = migration {
        return continue_migration(state, next, m, Vec::new(), false);
    }
    if state.resource_groups.is_empty() {
        hold_empty_plan(&mut next);
        return finish(state, next, None, None);
    }
    if !settings.drain_when_no_flavors && has_reserved(&state.status) {
        return finish(state, next, None, Some(NO_FLAVOR_WAIT_SECS));
    }
    begin_migration(state, next)
}

/// E2 fill: write the plan, reactivate a queue drained to empty; no TAS validation.
/// node_queue.go @06f8117 `fillClusterQueue`.
fn fill_e2(state: &QueueState, planned: &FlavorPlan<'_>, settings: &Settings) -> QueueStep {
    let mut next = state.clone();
    let plan = match &planned.groups {
        Ok(plan) => plan.clone(),
        Err(r) => {
            let message = r.to_string();
            let refused = Refused::new(*r, message);
            return finish(state, next, Some(TopologyReady::refused(refused)), None);
        }
    };
    let acceleratable = planned.live.first().is_some_and(|f| f.acceleratable);
    next.admission_checks = queue_admission_checks(acceleratable, settings);
    if next.policy() == StopPolicy::HoldAndDrain && next.resource_groups.is_empty() {
        next.stop_policy = Some(StopPolicy::None);
    }
    next.resource_groups = plan;
    finish(state, next, None, None)
}

/// E2 no-flavor path: drain (if enabled) and wait 60 s while reserved, else empty the groups.
/// node_queue.go @06f8117 `drainOrEmptyClusterQueue`.
fn drain_or_empty_e2(state: &QueueState, settings: &Settings) -> QueueStep {
    let mut next = state.clone();
    if state.resource_groups.is_empty() {
        return finish(state, next, None, None);
    }
    if has_reserved(&state.status) {
        if settings.drain_when_no_flavors {
            next.stop_policy = Some(StopPolicy::HoldAndDrain);
        }
        return finish(state, next, None, Some(NO_FLAVOR_WAIT_SECS));
    }
    next.resource_groups.clear();
    finish(state, next, None, None)
}

/// What Kueue writes when it has observed a stopped queue at its current generation (the
/// `markClusterQueueStopped` helper of node_queue_test.go).
pub fn kueue_reports_stopped(state: &QueueState) -> QueueState {
    let mut next = state.clone();
    next.status.active = Some(ActiveCondition {
        status: false,
        reason: STOPPED_REASON.into(),
        observed_generation: state.generation,
    });
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::{text, ToSmolStr};
    use crate::objects::FlavorQuota;

    const PROFILE: &str = "fnv64-87bf574bea2a4f23";

    fn cpu_flavor(name: &str, count: u64, capacity: u64) -> PoolFlavor {
        PoolFlavor {
            name: name.into(),
            per_node_count: count,
            capacity,
            ..PoolFlavor::default()
        }
    }

    /// The fake client's world: every flavor pinned to the hostname profile, capacity/count nodes.
    fn world_of(flavors: &[PoolFlavor]) -> QueueWorld {
        let mut w = QueueWorld::default();
        w.topologies.insert(topology_name(PROFILE));
        for f in flavors {
            let node_labels = Labels::from([
                (
                    Text::new_static(labels::TOPOLOGY_PROFILE),
                    Text::new(PROFILE),
                ),
                (
                    "general.feature.gpustack.ai/generic.count".into(),
                    f.per_node_count.to_smolstr(),
                ),
            ]);
            for i in 0..f.capacity.checked_div(f.per_node_count).unwrap_or(0) {
                let mut l = node_labels.clone();
                l.insert(labels::HOSTNAME.into(), text!("{}-{i}", f.name));
                w.nodes.push(PoolNode {
                    name: text!("{}-{i}", f.name),
                    labels: l,
                });
            }
            w.placements.insert(
                f.name.clone(),
                FlavorPlacement {
                    profile: PROFILE.into(),
                    node_labels,
                    topology_name: topology_name(PROFILE),
                },
            );
        }
        w
    }

    fn cpu_group(flavor: &str, nominal: i64) -> ResourceGroup {
        ResourceGroup {
            covered_resources: vec!["cpu".into()],
            flavors: vec![FlavorQuota {
                flavor: flavor.into(),
                nominal_quota: nominal,
            }],
        }
    }

    fn tas_queue(groups: Vec<ResourceGroup>) -> QueueState {
        let mut q = QueueState {
            name: "gpustack--generic-linux-amd64".into(),
            uid: "uid".into(),
            generation: 7,
            resource_groups: groups,
            ..QueueState::default()
        };
        if !q.resource_groups.is_empty() {
            q.annotations
                .insert(labels::TAS_QUEUE.into(), "true".into());
        }
        q
    }

    fn settings() -> Settings {
        Settings {
            drain_when_no_flavors: false,
            node_devices_check_active: false,
            joint_check_active: false,
            ..Settings::default()
        }
    }

    fn phase(q: &QueueState) -> Option<&str> {
        q.annotations.get(labels::MIGRATION_PHASE).map(Text::as_str)
    }

    #[test]
    fn fresh_queue_fills_and_is_ready() {
        let flavors = [cpu_flavor("g-8c", 8, 8), cpu_flavor("g-4c", 4, 4)];
        let step = reconcile_node_queue(
            &tas_queue(vec![]),
            &flavors,
            &world_of(&flavors),
            &settings(),
        );
        assert_eq!(step.state.resource_groups.len(), 1);
        assert_eq!(step.state.resource_groups[0].flavors[0].flavor, "g-4c");
        assert_eq!(step.topology_ready, Some(TopologyReady::ready()));
        assert_eq!(step.requeue_after, None);
        assert_eq!(
            step.state.generation, 8,
            "a spec write bumps the generation"
        );
    }

    #[test]
    fn overlapping_selectors_hold_the_empty_queue() {
        let flavors = [cpu_flavor("g-4c-a", 4, 4), cpu_flavor("g-4c-b", 4, 4)];
        let step = reconcile_node_queue(
            &tas_queue(vec![]),
            &flavors,
            &world_of(&flavors),
            &settings(),
        );
        assert!(step.state.resource_groups.is_empty());
        assert_eq!(
            step.topology_ready.map(|c| c.reason),
            Some("OverlappingSelectors".into())
        );
        assert_eq!(step.state.policy(), StopPolicy::Hold);
        assert!(step.state.empty_plan_held());
        assert_eq!(step.requeue_after, None);
    }

    #[test]
    fn missing_topology_and_non_conserved_quota_retry() {
        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let mut world = world_of(&flavors);
        world.topologies.clear();
        let step = reconcile_node_queue(&tas_queue(vec![]), &flavors, &world, &settings());
        assert_eq!(
            step.topology_ready.map(|c| c.reason),
            Some("MissingTopology".into())
        );
        assert_eq!(step.requeue_after, Some(REFUSAL_REQUEUE_SECS));

        let mut bigger = flavors.clone();
        bigger[0].capacity = 8;
        let step = reconcile_node_queue(
            &tas_queue(vec![]),
            &bigger,
            &world_of(&flavors),
            &settings(),
        );
        assert_eq!(
            step.topology_ready.map(|c| c.reason),
            Some("NonConservedQuota".into())
        );
        assert_eq!(step.requeue_after, Some(REFUSAL_REQUEUE_SECS));
    }

    #[test]
    fn validation_order_duplicate_before_unsupported() {
        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let mut q = tas_queue(vec![cpu_group("first", 2), cpu_group("second", 2)]);
        q.annotations.clear();
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(
            step.topology_ready.map(|c| c.reason),
            Some("DuplicateCoveredResource".into())
        );
        assert_eq!(step.state.resource_groups.len(), 2);
    }

    #[test]
    fn idle_drop_is_in_place() {
        let live = cpu_flavor("g-4c-settled", 4, 4);
        let mut group = cpu_group("g-4c-settled", 4);
        group.flavors.push(FlavorQuota {
            flavor: "g-4c-transient".into(),
            nominal_quota: 4,
        });
        let mut q = tas_queue(vec![group]);
        q.status = QueueStatus {
            admitted_workloads: 1,
            active: Some(ActiveCondition {
                status: true,
                reason: "Ready".into(),
                observed_generation: 7,
            }),
            flavors_reservation: vec![usage("g-4c-settled", 4), usage("g-4c-transient", 0)],
            flavors_usage: vec![usage("g-4c-settled", 4), usage("g-4c-transient", 0)],
            ..QueueStatus::default()
        };
        let flavors = [live];
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(step.state.policy(), StopPolicy::None);
        assert_eq!(step.state.resource_groups[0].flavors.len(), 1);
        assert_eq!(phase(&step.state), None);
        assert_eq!(step.requeue_after, None);
    }

    fn usage(flavor: &str, total: i64) -> FlavorUsage {
        FlavorUsage {
            flavor: flavor.into(),
            resource: "cpu".into(),
            total,
            borrowed: 0,
        }
    }

    #[test]
    fn stale_status_gates_a_drop() {
        let flavors = [cpu_flavor("g-4c-new", 4, 4)];
        let mut q = tas_queue(vec![cpu_group("g-4c-old", 4)]);
        q.status.active = Some(ActiveCondition {
            status: true,
            reason: "Ready".into(),
            observed_generation: 6,
        });
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(step.state.resource_groups, q.resource_groups);
        assert_eq!(
            step.topology_ready,
            Some(TopologyReady::awaiting(7, &["g-4c-old".into()])),
            "Unknown/AwaitingQueueStatus"
        );
        assert_eq!(step.requeue_after, Some(STATUS_GATE_REQUEUE_SECS));

        let older = Settings {
            queue_status_gate: QueueStatusGate::Absent,
            ..settings()
        };
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &older);
        assert_eq!(step.state.policy(), StopPolicy::HoldAndDrain);
        assert_eq!(phase(&step.state), Some("draining"));
    }

    /// TestNodeQueueReconciler_MigratesFlavorPlanWithoutReplacingQueue, admin Hold restored.
    #[test]
    fn migration_restores_the_saved_policy() {
        let flavors = [cpu_flavor("g-4c-new", 4, 4)];
        let world = world_of(&flavors);
        let s = settings();
        let mut q = tas_queue(vec![cpu_group("g-4c-old", 4)]);
        q.stop_policy = Some(StopPolicy::Hold);
        q.status.admitted_workloads = 1;
        q.status.active = Some(ActiveCondition {
            status: true,
            reason: "Ready".into(),
            observed_generation: 7,
        });

        let s1 = reconcile_node_queue(&q, &flavors, &world, &s);
        assert_eq!(s1.state.policy(), StopPolicy::HoldAndDrain);
        assert_eq!(
            s1.state
                .annotations
                .get(labels::MIGRATION_STOP_POLICY)
                .map(Text::as_str),
            Some("Hold")
        );
        let s2 = reconcile_node_queue(&kueue_reports_stopped(&s1.state), &flavors, &world, &s);
        assert_eq!(s2.state.resource_groups[0].flavors[0].flavor, "g-4c-old");
        assert!(s2.requeue_after.is_some());

        let mut cleared = s2.state.clone();
        cleared.status.admitted_workloads = 0;
        let s3 = reconcile_node_queue(&cleared, &flavors, &world, &s);
        assert_eq!(s3.state.resource_groups[0].flavors[0].flavor, "g-4c-new");
        assert_eq!(s3.state.policy(), StopPolicy::HoldAndDrain);

        let s3b = reconcile_node_queue(&s3.state, &flavors, &world, &s);
        assert_eq!(
            s3b.state.policy(),
            StopPolicy::HoldAndDrain,
            "held until Kueue observes the switched plan"
        );

        let s4 = reconcile_node_queue(&kueue_reports_stopped(&s3.state), &flavors, &world, &s);
        assert_eq!(s4.state.policy(), StopPolicy::Hold);
        assert_eq!(s4.state.uid, "uid");
        assert_eq!(phase(&s4.state), None);
        assert!(!s4
            .state
            .annotations
            .contains_key(labels::MIGRATION_STOP_POLICY));
    }

    /// TestNodeQueueReconciler_KeepsEmptiedQueueHeld, then the flavor returns.
    #[test]
    fn emptied_queue_stays_held_until_a_flavor_returns() {
        let s = settings();
        let q = tas_queue(vec![cpu_group("g-4c", 4)]);
        let none = QueueWorld::default();
        let mut st = reconcile_node_queue(&q, &[], &none, &s);
        assert_eq!(st.state.policy(), StopPolicy::HoldAndDrain);
        assert!(st.requeue_after.is_some());
        assert_eq!(st.state.resource_groups.len(), 1);
        for _ in 0..3 {
            st = reconcile_node_queue(&kueue_reports_stopped(&st.state), &[], &none, &s);
        }
        assert!(st.state.resource_groups.is_empty());
        assert_eq!(st.state.policy(), StopPolicy::HoldAndDrain);
        assert_eq!(phase(&st.state), Some("switched"));

        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let world = world_of(&flavors);
        let back = reconcile_node_queue(&st.state, &flavors, &world, &s);
        assert_eq!(back.state.resource_groups.len(), 1);
        assert_eq!(back.state.policy(), StopPolicy::HoldAndDrain);
        let done = reconcile_node_queue(&kueue_reports_stopped(&back.state), &flavors, &world, &s);
        assert_eq!(done.state.policy(), StopPolicy::None);
        assert_eq!(phase(&done.state), None);
    }

    #[test]
    fn no_flavor_wait_when_drain_is_off_and_reserved() {
        let mut q = tas_queue(vec![cpu_group("g-4c", 4)]);
        q.status.admitted_workloads = 1;
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &settings());
        assert_eq!(step.state, q);
        assert_eq!(step.requeue_after, Some(NO_FLAVOR_WAIT_SECS));

        let drain = Settings {
            drain_when_no_flavors: true,
            ..settings()
        };
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &drain);
        assert_eq!(step.state.policy(), StopPolicy::HoldAndDrain);
        assert_eq!(step.requeue_after, Some(MIGRATION_REQUEUE_SECS));
    }

    #[test]
    fn empty_queue_is_held_and_admin_hold_unmarked() {
        let q = tas_queue(vec![]);
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &settings());
        assert_eq!(step.state.policy(), StopPolicy::Hold);
        assert!(step.state.empty_plan_held());
        let again = reconcile_node_queue(&step.state, &[], &QueueWorld::default(), &settings());
        assert_eq!(again.state, step.state, "a held queue is not written again");

        let mut admin = tas_queue(vec![]);
        admin.stop_policy = Some(StopPolicy::Hold);
        let step = reconcile_node_queue(&admin, &[], &QueueWorld::default(), &settings());
        assert!(!step.state.empty_plan_held());
    }

    /// corrections.md 3: the first plan lifts only the marker; the Hold is the IT reconciler's.
    #[test]
    fn first_plan_lifts_only_the_empty_plan_marker() {
        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let mut q = tas_queue(vec![]);
        q.stop_policy = Some(StopPolicy::Hold);
        q.annotations
            .insert(labels::EMPTY_PLAN_HOLD.into(), "true".into());
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(step.state.resource_groups.len(), 1);
        assert!(!step.state.empty_plan_held());
        assert_eq!(step.state.policy(), StopPolicy::Hold);
    }

    #[test]
    fn drained_empty_queue_reactivates() {
        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let mut q = tas_queue(vec![]);
        q.stop_policy = Some(StopPolicy::HoldAndDrain);
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(step.state.policy(), StopPolicy::None);
    }

    #[test]
    fn deleting_queue_drains_once() {
        let mut q = tas_queue(vec![cpu_group("g-4c", 4)]);
        q.deleting = true;
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &settings());
        assert_eq!(step.state.policy(), StopPolicy::HoldAndDrain);
        let again = reconcile_node_queue(&step.state, &[], &QueueWorld::default(), &settings());
        assert_eq!(again.state, step.state);
        assert_eq!(again.requeue_after, None);
    }

    #[test]
    fn unreadable_marker_is_invalid_migration_state() {
        let mut q = tas_queue(vec![cpu_group("g-4c", 4)]);
        q.annotations
            .insert(labels::MIGRATION_PHASE.into(), "sideways".into());
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &settings());
        assert_eq!(
            step.topology_ready.map(|c| c.reason),
            Some("InvalidMigrationState".into())
        );
        assert_eq!(step.requeue_after, Some(REFUSAL_REQUEUE_SECS));
    }

    /// TestNodeQueueReconciler_MigratesFlavorPlanWithoutReplacingQueue "restores unset": an absent
    /// stop policy is saved as `unset` and restored absent; TopologyReady says Migrating until the
    /// switched plan is restored (corrections.md 15).
    #[test]
    fn migration_restores_an_absent_policy_and_reports_migrating() {
        let flavors = [cpu_flavor("g-4c-new", 4, 4)];
        let world = world_of(&flavors);
        let s = settings();
        let mut q = tas_queue(vec![cpu_group("g-4c-old", 4)]);
        q.stop_policy = None;
        q.status.admitted_workloads = 1;
        q.status.active = Some(ActiveCondition {
            status: true,
            reason: "Ready".into(),
            observed_generation: 7,
        });
        let s1 = reconcile_node_queue(&q, &flavors, &world, &s);
        assert_eq!(
            s1.state
                .annotations
                .get(labels::MIGRATION_STOP_POLICY)
                .map(Text::as_str),
            Some(SAVED_STOP_POLICY_UNSET)
        );
        assert_eq!(s1.topology_ready, Some(TopologyReady::migrating()));
        let mut held = kueue_reports_stopped(&s1.state);
        held.status.admitted_workloads = 0;
        let s2 = reconcile_node_queue(&held, &flavors, &world, &s);
        assert_eq!(s2.state.resource_groups[0].flavors[0].flavor, "g-4c-new");
        assert_eq!(
            s2.topology_ready, None,
            "the condition is left as Migrating"
        );
        assert_eq!(
            s2.state.topology_ready.as_ref().map(|c| c.reason.as_str()),
            Some(MIGRATING_REASON)
        );
        let s3 = reconcile_node_queue(&kueue_reports_stopped(&s2.state), &flavors, &world, &s);
        assert_eq!(s3.state.stop_policy, None, "restored absent, not None");
        assert_eq!(s3.topology_ready, Some(TopologyReady::ready()));
        assert!(!s3.state.has_migration_marker());
    }

    #[test]
    fn saved_policy_codec() {
        assert_eq!(encode_saved_stop_policy(None), "unset");
        assert_eq!(decode_saved_stop_policy("unset"), Ok(None));
        assert_eq!(decode_saved_stop_policy("Hold"), Ok(Some(StopPolicy::Hold)));
        let bad = decode_saved_stop_policy("").unwrap_err();
        assert_eq!(bad.reason, QueueRefusal::InvalidMigrationState);
    }

    /// A flavor advertising more capacity than its selected nodes contribute is refused with
    /// NonConservedQuota and never reported Ready (RejectsInvalidTASQueueInputs).
    #[test]
    fn non_conserved_quota_names_the_flavor() {
        let built = [cpu_flavor("g-4c", 4, 4)];
        let world = world_of(&built);
        let relabelled = [cpu_flavor("g-4c", 4, 8)];
        let step = reconcile_node_queue(&tas_queue(vec![]), &relabelled, &world, &settings());
        let c = step.topology_ready.unwrap();
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.reason, "NonConservedQuota");
        assert_eq!(
            c.message,
            "ResourceFlavor \"g-4c\" advertises capacity 8 but 1 selected Nodes contribute 4 each"
        );
        assert!(step.state.resource_groups.is_empty());
    }

    /// [`select_nodes`] as node_queue.go states it, one node at a time: what the selection by
    /// label sets must decide.
    fn select_node_by_node(
        flavors: &[&PoolFlavor],
        world: &QueueWorld,
    ) -> Result<(Vec<u64>, Vec<bool>), Refused> {
        let mut owner: Vec<Option<&str>> = vec![None; world.nodes.len()];
        let mut counts = Vec::new();
        for f in flavors {
            let p = &world.placements[&f.name];
            let mut count = 0;
            for (n, slot) in world.nodes.iter().zip(owner.iter_mut()) {
                if !selects(&p.node_labels, n) {
                    continue;
                }
                if let Some(prior) = slot.replace(f.name.as_str()) {
                    return Err(Refused::new(
                        QueueRefusal::OverlappingSelectors,
                        format!(
                            "Node {:?} is selected by ResourceFlavors {:?} and {:?}",
                            n.name, prior, f.name
                        ),
                    ));
                }
                count += 1;
            }
            counts.push(count);
        }
        Ok((counts, owner.iter().map(Option::is_some).collect()))
    }

    /// Every world of three nodes whose labels `p` and `q` are each absent, "0" or "1", under
    /// every ordered pair and triple of four selectors: the selection by label sets decides as
    /// the node-by-node one (counts, fed nodes, and which node and flavors an overlap names).
    #[test]
    fn selecting_by_label_sets_decides_as_node_by_node() {
        let selectors: [&[(&str, &str)]; 4] = [
            &[("p", "1")],
            &[("q", "1")],
            &[("p", "1"), ("q", "1")],
            &[("p", "0")],
        ];
        let flavor = |i: usize| cpu_flavor(&format!("f{i}"), 1, 1);
        let orders: Vec<Vec<usize>> = (0..4)
            .flat_map(|a| (0..4).map(move |b| vec![a, b]))
            .chain(
                (0..4).flat_map(|a| (0..4).flat_map(move |b| (0..4).map(move |c| vec![a, b, c]))),
            )
            .filter(|o| (1..o.len()).all(|i| !o[..i].contains(&o[i])))
            .collect();
        let mut worlds = 0;
        let mut overlaps = 0;
        for code in 0..9usize.pow(3) {
            let mut w = QueueWorld::default();
            w.topologies.insert(topology_name(PROFILE));
            for (i, sel) in selectors.iter().enumerate() {
                let mut node_labels = Labels::from([(
                    Text::new_static(labels::TOPOLOGY_PROFILE),
                    Text::new(PROFILE),
                )]);
                node_labels.extend(sel.iter().map(|&(k, v)| (Text::new(k), Text::new(v))));
                let placement = FlavorPlacement {
                    profile: PROFILE.into(),
                    node_labels,
                    topology_name: topology_name(PROFILE),
                };
                w.placements.insert(flavor(i).name, placement);
            }
            for n in 0..3 {
                let digit = code / 9usize.pow(n) % 9;
                let mut l = Labels::from([(
                    Text::new_static(labels::TOPOLOGY_PROFILE),
                    Text::new(PROFILE),
                )]);
                for (key, value) in [("p", digit % 3), ("q", digit / 3)] {
                    if value > 0 {
                        l.insert(key.into(), (value - 1).to_smolstr());
                    }
                }
                w.nodes.push(PoolNode {
                    name: text!("n{n}"),
                    labels: l,
                });
            }
            for order in &orders {
                let flavors: Vec<PoolFlavor> = order.iter().map(|&i| flavor(i)).collect();
                let refs: Vec<&PoolFlavor> = flavors.iter().collect();
                let want = select_node_by_node(&refs, &w);
                let got = select_nodes(&refs, &w).map(|s| (s.counts, s.fed));
                assert_eq!(got, want, "nodes {:?}, flavors {order:?}", w.nodes);
                worlds += 1;
                overlaps += usize::from(want.is_err());
            }
        }
        assert!(overlaps > 0 && overlaps < worlds, "{overlaps} of {worlds}");
    }

    #[test]
    fn overlap_message_names_both_flavors() {
        let flavors = [cpu_flavor("g-4c-a", 4, 4), cpu_flavor("g-4c-b", 4, 4)];
        let step = reconcile_node_queue(
            &tas_queue(vec![]),
            &flavors,
            &world_of(&flavors),
            &settings(),
        );
        assert_eq!(
            step.topology_ready.map(|c| c.message),
            Some(
                "Node \"g-4c-a-0\" is selected by ResourceFlavors \"g-4c-a\" and \"g-4c-b\"".into()
            )
        );
    }

    #[test]
    fn e2_empties_without_migration() {
        let e2 = Settings {
            era: Era::E2,
            ..settings()
        };
        let q = tas_queue(vec![cpu_group("g-4c", 4)]);
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &e2);
        assert!(step.state.resource_groups.is_empty());
        assert_eq!(step.state.policy(), StopPolicy::None);
    }
}
