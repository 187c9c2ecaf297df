//! The NodeQueue reconciler as a pure state machine: one call = one Reconcile of one
//! ClusterQueue (research/chain.md §10.2–10.3, corrections.md 2–3;
//! pkg/worker/controllers/worker/node_queue.go and its tests).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{
    has_reserved, plan_order, queue_admission_checks, queue_resource_groups, ActiveCondition,
    FlavorUsage, PoolFlavor, QueueRefusal, QueueStatus, STOPPED_REASON,
};
use crate::cluster::{Era, QueueStatusGate, Settings};
use crate::labels::{self, Labels};
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
pub struct TopologyReady {
    pub status: ConditionStatus,
    pub reason: String,
}

impl TopologyReady {
    fn ready() -> Self {
        TopologyReady {
            status: ConditionStatus::True,
            reason: TOPOLOGY_READY_REASON.into(),
        }
    }
    fn refused(r: QueueRefusal) -> Self {
        TopologyReady {
            status: ConditionStatus::False,
            reason: r.reason().into(),
        }
    }
    fn awaiting() -> Self {
        TopologyReady {
            status: ConditionStatus::Unknown,
            reason: AWAITING_QUEUE_STATUS.into(),
        }
    }
}

/// A ClusterQueue as the NodeQueue reconciler reads and writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueState {
    pub name: String,
    pub uid: String,
    /// `metadata.generation`: bumped by every spec change.
    pub generation: u64,
    /// A deletionTimestamp is set.
    pub deleting: bool,
    pub stop_policy: StopPolicy,
    pub resource_groups: Vec<ResourceGroup>,
    pub admission_checks: Vec<String>,
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
    /// The stop policy to restore when the migration completes.
    pub saved: StopPolicy,
}

/// Parses a stop policy name as written in the saved-policy annotation ("" = unset = None).
pub fn parse_stop_policy(s: &str) -> Option<StopPolicy> {
    match s {
        "" | "None" => Some(StopPolicy::None),
        "Hold" => Some(StopPolicy::Hold),
        "HoldAndDrain" => Some(StopPolicy::HoldAndDrain),
        _ => None,
    }
}

impl QueueState {
    fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }

    /// The migration marker, if any; a marker that cannot be read is `InvalidMigrationState`.
    /// chain.md §10.2 (reason list).
    pub fn migration(&self) -> Result<Option<Migration>, QueueRefusal> {
        let Some(phase) = self.annotation(labels::MIGRATION_PHASE) else {
            return Ok(None);
        };
        let phase = MigrationPhase::parse(phase).ok_or(QueueRefusal::InvalidMigrationState)?;
        let saved = parse_stop_policy(self.annotation(labels::MIGRATION_STOP_POLICY).unwrap_or(""))
            .ok_or(QueueRefusal::InvalidMigrationState)?;
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
    pub profile: String,
    /// `spec.nodeLabels`.
    pub node_labels: Labels,
    /// `spec.topologyName` ("" = absent).
    pub topology_name: String,
}

/// A node the pool counts: managed, profiled, matching the pool's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolNode {
    pub name: String,
    pub labels: Labels,
}

/// The rest of the cluster the reconciler reads: Topology objects, each flavor's placement, the
/// pool's nodes, and the contract variant to follow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueWorld {
    pub topologies: BTreeSet<String>,
    pub placements: BTreeMap<String, FlavorPlacement>,
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
pub fn topology_name(profile: &str) -> String {
    format!("gpustack-{profile}")
}

/// Whether a flavor's nodeLabels select a node. chain.md §10.2 (TAS validation).
pub fn selects(node_labels: &Labels, node: &PoolNode) -> bool {
    node_labels
        .iter()
        .all(|(k, v)| node.labels.get(k).is_some_and(|nv| nv == v))
}

/// Kueue may not cover one resource in two groups: an existing plan that does is refused.
/// chain.md §10.2; node_queue_test.go `RejectsDuplicateCoveredResource`.
pub fn duplicate_covered_resource(groups: &[ResourceGroup]) -> bool {
    let mut seen = BTreeSet::new();
    groups
        .iter()
        .flat_map(|g| g.covered_resources.iter())
        .any(|r| !seen.insert(r.as_str()))
}

/// Every flavor has a profile, pins it, points at `gpustack-<profile>`, and that Topology exists.
/// chain.md §10.2.
pub fn topology_complete(flavors: &[&PoolFlavor], world: &QueueWorld) -> bool {
    flavors.iter().all(|f| {
        world.placements.get(&f.name).is_some_and(|p| {
            !p.profile.is_empty()
                && p.node_labels.get(labels::TOPOLOGY_PROFILE) == Some(&p.profile)
                && p.topology_name == topology_name(&p.profile)
                && world.topologies.contains(&p.topology_name)
        })
    })
}

/// Which pool nodes the flavors' selectors pick, counted in one pass over the nodes.
struct Selection {
    /// How many of the flavors (those with a placement) select each pool node.
    per_node: Vec<usize>,
    /// How many pool nodes each flavor selects; `None` for a flavor without a placement.
    per_flavor: Vec<Option<u64>>,
}

impl Selection {
    /// Matches every flavor's `nodeLabels` against every pool node once.
    fn of(flavors: &[&PoolFlavor], world: &QueueWorld) -> Self {
        let placements: Vec<Option<&FlavorPlacement>> = flavors
            .iter()
            .map(|f| world.placements.get(&f.name))
            .collect();
        let mut per_flavor: Vec<Option<u64>> = placements.iter().map(|p| p.map(|_| 0)).collect();
        let per_node = world
            .nodes
            .iter()
            .map(|n| {
                let mut count = 0;
                for (p, tally) in placements.iter().zip(per_flavor.iter_mut()) {
                    if let (Some(p), Some(tally)) = (p, tally) {
                        if selects(&p.node_labels, n) {
                            count += 1;
                            *tally += 1;
                        }
                    }
                }
                count
            })
            .collect();
        Selection {
            per_node,
            per_flavor,
        }
    }

    /// No node is selected twice.
    fn disjoint(&self) -> bool {
        self.per_node.iter().all(|&c| c <= 1)
    }

    /// Every flavor is placed with capacity = selected nodes × count, and every node selected.
    fn conserves(&self, flavors: &[&PoolFlavor]) -> bool {
        let each = flavors.iter().zip(&self.per_flavor).all(|(f, selected)| {
            selected.is_some_and(|n| n.saturating_mul(f.per_node_count) == f.capacity)
        });
        each && self.per_node.iter().all(|&c| c >= 1)
    }
}

/// No node is selected by two flavors. chain.md §10.2.
pub fn selectors_disjoint(flavors: &[&PoolFlavor], world: &QueueWorld) -> bool {
    Selection::of(flavors, world).disjoint()
}

/// Each flavor's capacity = (#nodes it selects) × count, and every pool node is selected.
/// chain.md §10.2; node_queue_test.go `PoolConservationCountsOnlyContributingNodes`.
pub fn quota_conserved(flavors: &[&PoolFlavor], world: &QueueWorld) -> bool {
    Selection::of(flavors, world).conserves(flavors)
}

/// The E3 validation, in the order of corrections.md 3 (InvalidMigrationState last).
pub fn validate_queue_plan(
    state: &QueueState,
    live: &[&PoolFlavor],
    world: &QueueWorld,
) -> Result<(), QueueRefusal> {
    if duplicate_covered_resource(&state.resource_groups) {
        return Err(QueueRefusal::DuplicateCoveredResource);
    }
    if !state.resource_groups.is_empty() && !state.is_tas_queue() {
        return Err(QueueRefusal::UnsupportedExistingObject);
    }
    if live.len() > MAX_FLAVORS_PER_QUEUE {
        return Err(QueueRefusal::TooManyFlavors);
    }
    if !topology_complete(live, world) {
        return Err(QueueRefusal::MissingTopology);
    }
    // One matching pass serves both selector checks.
    let selection = Selection::of(live, world);
    if !selection.disjoint() {
        return Err(QueueRefusal::OverlappingSelectors);
    }
    if !selection.conserves(live) {
        return Err(QueueRefusal::NonConservedQuota);
    }
    state.migration().map(|_| ())
}

/// Flavors the current plan references that the new plan does not.
pub fn dropped_flavors(current: &[ResourceGroup], next: &[ResourceGroup]) -> Vec<String> {
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
pub fn flavors_may_be_in_use(status: &QueueStatus, dropped: &[String]) -> bool {
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

/// Save the stop policy, hold with HoldAndDrain, mark the migration `draining`. chain.md §10.3(b).
fn start_migration(next: &mut QueueState) {
    next.annotations.insert(
        labels::MIGRATION_STOP_POLICY.into(),
        next.stop_policy.name().into(),
    );
    next.annotations.insert(
        labels::MIGRATION_PHASE.into(),
        MigrationPhase::Draining.annotation().into(),
    );
    next.annotations.remove(labels::EMPTY_PLAN_HOLD);
    next.stop_policy = StopPolicy::HoldAndDrain;
}

/// Write the new plan into the held queue and mark the migration `switched`.
fn switch_plan(next: &mut QueueState, plan: Vec<ResourceGroup>) {
    next.resource_groups = plan;
    next.annotations.insert(
        labels::MIGRATION_PHASE.into(),
        MigrationPhase::Switched.annotation().into(),
    );
}

/// Restore the saved stop policy and drop the migration marker.
fn complete_migration(next: &mut QueueState, saved: StopPolicy) {
    next.stop_policy = saved;
    next.annotations.remove(labels::MIGRATION_PHASE);
    next.annotations.remove(labels::MIGRATION_STOP_POLICY);
}

/// A queue with no groups and StopPolicy None admits everything: Hold it, marked as the
/// NodeQueue's (an admin Hold stays unmarked). chain.md §10.3(d); invariant §14.9.
fn hold_empty_plan(next: &mut QueueState) {
    if next.resource_groups.is_empty()
        && next.stop_policy == StopPolicy::None
        && !next.has_migration_marker()
    {
        next.stop_policy = StopPolicy::Hold;
        next.annotations
            .insert(labels::EMPTY_PLAN_HOLD.into(), "true".into());
    }
}

/// A refusal keeps the last plan (or holds an empty queue), sets TopologyReady=False, and
/// requeues after 30 s for MissingTopology / NonConservedQuota or while migrating.
/// corrections.md 3.
fn refuse(before: &QueueState, mut next: QueueState, r: QueueRefusal) -> QueueStep {
    hold_empty_plan(&mut next);
    let retry = matches!(
        r,
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
    next.stop_policy = StopPolicy::HoldAndDrain;
    finish(state, next, None, None)
}

/// One Reconcile of the NodeQueue reconciler. chain.md §10.2–10.3; corrections.md 2–3.
pub fn reconcile_node_queue(
    state: &QueueState,
    flavors: &[PoolFlavor],
    world: &QueueWorld,
    settings: &Settings,
) -> QueueStep {
    if state.deleting {
        return drain_on_delete(state);
    }
    let live = plan_order(flavors);
    match (settings.era, live.is_empty()) {
        (Era::E2, true) => drain_or_empty_e2(state, settings),
        (Era::E2, false) => fill_e2(state, flavors, settings),
        (Era::E3, true) => drain_or_empty(state, settings),
        (Era::E3, false) => fill(state, flavors, &live, world, settings),
    }
}

/// Live flavors exist: validate, then migrate, gate, or update in place. corrections.md 2–3.
fn fill(
    state: &QueueState,
    flavors: &[PoolFlavor],
    live: &[&PoolFlavor],
    world: &QueueWorld,
    settings: &Settings,
) -> QueueStep {
    let mut next = state.clone();
    if let Err(r) = validate_queue_plan(state, live, world) {
        return refuse(state, next, r);
    }
    let plan = match queue_resource_groups(flavors) {
        Ok(plan) => plan,
        Err(r) => return refuse(state, next, r),
    };
    let acceleratable = live.first().is_some_and(|f| f.acceleratable);
    let checks = queue_admission_checks(acceleratable, settings);
    let migration = match state.migration() {
        Ok(m) => m,
        Err(r) => return refuse(state, next, r),
    };

    if let Some(m) = migration {
        next.admission_checks = checks;
        next.annotations
            .insert(labels::TAS_QUEUE.into(), "true".into());
        return continue_migration(state, next, m, plan);
    }

    let dropped = dropped_flavors(&state.resource_groups, &plan);
    if !dropped.is_empty() {
        let gated = settings.queue_status_gate == QueueStatusGate::Present;
        if gated && !status_observed(state) {
            return finish(
                state,
                next,
                Some(TopologyReady::awaiting()),
                Some(STATUS_GATE_REQUEUE_SECS),
            );
        }
        if flavors_may_be_in_use(&state.status, &dropped) {
            next.admission_checks = checks;
            next.annotations
                .insert(labels::TAS_QUEUE.into(), "true".into());
            start_migration(&mut next);
            return finish(
                state,
                next,
                Some(TopologyReady::ready()),
                Some(MIGRATION_REQUEUE_SECS),
            );
        }
    }

    // In place: reactivate a queue we drained to empty; lift only the empty-plan marker.
    if next.stop_policy == StopPolicy::HoldAndDrain && next.resource_groups.is_empty() {
        next.stop_policy = StopPolicy::None;
    }
    if !plan.is_empty() {
        next.annotations.remove(labels::EMPTY_PLAN_HOLD);
    }
    next.resource_groups = plan;
    next.admission_checks = checks;
    next.annotations
        .insert(labels::TAS_QUEUE.into(), "true".into());
    hold_empty_plan(&mut next);
    finish(state, next, Some(TopologyReady::ready()), None)
}

/// Drive an in-flight migration one step with live flavors: switch once Kueue reports the stop at
/// the current generation and nothing is reserved; restore once it observes the switched plan.
/// chain.md §10.3(b).
fn continue_migration(
    before: &QueueState,
    mut next: QueueState,
    m: Migration,
    plan: Vec<ResourceGroup>,
) -> QueueStep {
    let stopped = stopped_at_current_generation(before);
    let ready = Some(TopologyReady::ready());
    match m.phase {
        MigrationPhase::Draining => {
            if stopped && !has_reserved(&before.status) {
                switch_plan(&mut next, plan);
            }
            finish(before, next, ready, Some(MIGRATION_REQUEUE_SECS))
        }
        MigrationPhase::Switched if next.resource_groups != plan => {
            next.resource_groups = plan;
            finish(before, next, ready, Some(MIGRATION_REQUEUE_SECS))
        }
        MigrationPhase::Switched if stopped => {
            complete_migration(&mut next, m.saved);
            finish(before, next, ready, None)
        }
        MigrationPhase::Switched => finish(before, next, ready, Some(MIGRATION_REQUEUE_SECS)),
    }
}

/// No live flavor: hold an empty queue; otherwise migrate to the empty plan (or wait 60 s when
/// drain-when-no-flavors is off and reservations exist). chain.md §10.3(c)–(d).
fn drain_or_empty(state: &QueueState, settings: &Settings) -> QueueStep {
    let mut next = state.clone();
    let migration = match state.migration() {
        Ok(m) => m,
        Err(r) => return refuse(state, next, r),
    };
    if migration.is_some() {
        if state.resource_groups.is_empty() {
            // Switched to the empty plan: stays held until a flavor returns.
            return finish(state, next, None, None);
        }
        if stopped_at_current_generation(state) && !has_reserved(&state.status) {
            switch_plan(&mut next, Vec::new());
            return finish(state, next, None, None);
        }
        return finish(state, next, None, Some(MIGRATION_REQUEUE_SECS));
    }
    if state.resource_groups.is_empty() {
        hold_empty_plan(&mut next);
        return finish(state, next, None, None);
    }
    if !settings.drain_when_no_flavors && has_reserved(&state.status) {
        return finish(state, next, None, Some(NO_FLAVOR_WAIT_SECS));
    }
    start_migration(&mut next);
    finish(state, next, None, Some(MIGRATION_REQUEUE_SECS))
}

/// E2 fill: write the plan, reactivate a queue drained to empty; no TAS validation.
/// node_queue.go @06f8117 `fillClusterQueue`.
fn fill_e2(state: &QueueState, flavors: &[PoolFlavor], settings: &Settings) -> QueueStep {
    let mut next = state.clone();
    let plan = match queue_resource_groups(flavors) {
        Ok(plan) => plan,
        Err(r) => return finish(state, next, Some(TopologyReady::refused(r)), None),
    };
    let acceleratable = plan_order(flavors).first().is_some_and(|f| f.acceleratable);
    next.admission_checks = queue_admission_checks(acceleratable, settings);
    if next.stop_policy == StopPolicy::HoldAndDrain && next.resource_groups.is_empty() {
        next.stop_policy = StopPolicy::None;
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
            next.stop_policy = StopPolicy::HoldAndDrain;
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
                (labels::TOPOLOGY_PROFILE.to_string(), PROFILE.to_string()),
                (
                    "general.feature.gpustack.ai/generic.count".into(),
                    f.per_node_count.to_string(),
                ),
            ]);
            for i in 0..f.capacity.checked_div(f.per_node_count).unwrap_or(0) {
                let mut l = node_labels.clone();
                l.insert(labels::HOSTNAME.into(), format!("{}-{i}", f.name));
                w.nodes.push(PoolNode {
                    name: format!("{}-{i}", f.name),
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
        q.annotations
            .get(labels::MIGRATION_PHASE)
            .map(String::as_str)
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
        assert_eq!(step.state.stop_policy, StopPolicy::Hold);
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
        assert_eq!(step.state.stop_policy, StopPolicy::None);
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
            Some(TopologyReady::awaiting()),
            "Unknown/AwaitingQueueStatus"
        );
        assert_eq!(step.requeue_after, Some(STATUS_GATE_REQUEUE_SECS));

        let older = Settings {
            queue_status_gate: QueueStatusGate::Absent,
            ..settings()
        };
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &older);
        assert_eq!(step.state.stop_policy, StopPolicy::HoldAndDrain);
        assert_eq!(phase(&step.state), Some("draining"));
    }

    /// TestNodeQueueReconciler_MigratesFlavorPlanWithoutReplacingQueue, admin Hold restored.
    #[test]
    fn migration_restores_the_saved_policy() {
        let flavors = [cpu_flavor("g-4c-new", 4, 4)];
        let world = world_of(&flavors);
        let s = settings();
        let mut q = tas_queue(vec![cpu_group("g-4c-old", 4)]);
        q.stop_policy = StopPolicy::Hold;
        q.status.admitted_workloads = 1;
        q.status.active = Some(ActiveCondition {
            status: true,
            reason: "Ready".into(),
            observed_generation: 7,
        });

        let s1 = reconcile_node_queue(&q, &flavors, &world, &s);
        assert_eq!(s1.state.stop_policy, StopPolicy::HoldAndDrain);
        assert_eq!(
            s1.state
                .annotations
                .get(labels::MIGRATION_STOP_POLICY)
                .map(String::as_str),
            Some("Hold")
        );
        let s2 = reconcile_node_queue(&kueue_reports_stopped(&s1.state), &flavors, &world, &s);
        assert_eq!(s2.state.resource_groups[0].flavors[0].flavor, "g-4c-old");
        assert!(s2.requeue_after.is_some());

        let mut cleared = s2.state.clone();
        cleared.status.admitted_workloads = 0;
        let s3 = reconcile_node_queue(&cleared, &flavors, &world, &s);
        assert_eq!(s3.state.resource_groups[0].flavors[0].flavor, "g-4c-new");
        assert_eq!(s3.state.stop_policy, StopPolicy::HoldAndDrain);

        let s3b = reconcile_node_queue(&s3.state, &flavors, &world, &s);
        assert_eq!(
            s3b.state.stop_policy,
            StopPolicy::HoldAndDrain,
            "held until Kueue observes the switched plan"
        );

        let s4 = reconcile_node_queue(&kueue_reports_stopped(&s3.state), &flavors, &world, &s);
        assert_eq!(s4.state.stop_policy, StopPolicy::Hold);
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
        assert_eq!(st.state.stop_policy, StopPolicy::HoldAndDrain);
        assert!(st.requeue_after.is_some());
        assert_eq!(st.state.resource_groups.len(), 1);
        for _ in 0..3 {
            st = reconcile_node_queue(&kueue_reports_stopped(&st.state), &[], &none, &s);
        }
        assert!(st.state.resource_groups.is_empty());
        assert_eq!(st.state.stop_policy, StopPolicy::HoldAndDrain);
        assert_eq!(phase(&st.state), Some("switched"));

        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let world = world_of(&flavors);
        let back = reconcile_node_queue(&st.state, &flavors, &world, &s);
        assert_eq!(back.state.resource_groups.len(), 1);
        assert_eq!(back.state.stop_policy, StopPolicy::HoldAndDrain);
        let done = reconcile_node_queue(&kueue_reports_stopped(&back.state), &flavors, &world, &s);
        assert_eq!(done.state.stop_policy, StopPolicy::None);
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
        assert_eq!(step.state.stop_policy, StopPolicy::HoldAndDrain);
        assert_eq!(step.requeue_after, Some(MIGRATION_REQUEUE_SECS));
    }

    #[test]
    fn empty_queue_is_held_and_admin_hold_unmarked() {
        let q = tas_queue(vec![]);
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &settings());
        assert_eq!(step.state.stop_policy, StopPolicy::Hold);
        assert!(step.state.empty_plan_held());
        let again = reconcile_node_queue(&step.state, &[], &QueueWorld::default(), &settings());
        assert_eq!(again.state, step.state, "a held queue is not written again");

        let mut admin = tas_queue(vec![]);
        admin.stop_policy = StopPolicy::Hold;
        let step = reconcile_node_queue(&admin, &[], &QueueWorld::default(), &settings());
        assert!(!step.state.empty_plan_held());
    }

    /// corrections.md 3: the first plan lifts only the marker; the Hold is the IT reconciler's.
    #[test]
    fn first_plan_lifts_only_the_empty_plan_marker() {
        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let mut q = tas_queue(vec![]);
        q.stop_policy = StopPolicy::Hold;
        q.annotations
            .insert(labels::EMPTY_PLAN_HOLD.into(), "true".into());
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(step.state.resource_groups.len(), 1);
        assert!(!step.state.empty_plan_held());
        assert_eq!(step.state.stop_policy, StopPolicy::Hold);
    }

    #[test]
    fn drained_empty_queue_reactivates() {
        let flavors = [cpu_flavor("g-4c", 4, 4)];
        let mut q = tas_queue(vec![]);
        q.stop_policy = StopPolicy::HoldAndDrain;
        let step = reconcile_node_queue(&q, &flavors, &world_of(&flavors), &settings());
        assert_eq!(step.state.stop_policy, StopPolicy::None);
    }

    #[test]
    fn deleting_queue_drains_once() {
        let mut q = tas_queue(vec![cpu_group("g-4c", 4)]);
        q.deleting = true;
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &settings());
        assert_eq!(step.state.stop_policy, StopPolicy::HoldAndDrain);
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

    #[test]
    fn e2_empties_without_migration() {
        let e2 = Settings {
            era: Era::E2,
            ..settings()
        };
        let q = tas_queue(vec![cpu_group("g-4c", 4)]);
        let step = reconcile_node_queue(&q, &[], &QueueWorld::default(), &e2);
        assert!(step.state.resource_groups.is_empty());
        assert_eq!(step.state.stop_policy, StopPolicy::None);
    }
}
