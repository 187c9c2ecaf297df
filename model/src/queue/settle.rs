//! A pool's ClusterQueue at quiescence: the InstanceType reconciler creates it, then the
//! NodeQueue reconciler, the InstanceType reconciler's `syncInactive` and Kueue take turns until
//! nothing changes. Steady state is *computed* by running the same rules the dynamic model runs,
//! so the static derivation and the state machines cannot disagree (chain.md §17 rule 16).

use crate::cluster::Settings;
use crate::labels::{self, Text};
use crate::objects::{ClusterQueue, StopPolicy};

use super::{
    converge_inactive, reconcile_node_queue_planned, ActiveCondition, FlavorPlan, InactiveSync,
    PoolFlavor, QueueState, QueueWorld, TopologyReady, STOPPED_REASON,
};

/// Turns a Kueue queue can take before a settle is called stuck; the reconcilers converge in
/// a handful (fill → release the hold → observe).
const MAX_TURNS: usize = 32;

/// The settled queue, its TopologyReady condition, and whether it converged within the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    pub queue: ClusterQueue,
    /// The InstanceType's `spec.inactive` after `syncInactive` back-filled it.
    pub inactive: bool,
    pub topology_ready: Option<TopologyReady>,
    /// Kueue's `Active` condition status at quiescence.
    pub active: bool,
    pub converged: bool,
}

fn state_of(queue: &ClusterQueue) -> QueueState {
    QueueState {
        name: queue.name.clone(),
        uid: queue.name.clone(),
        generation: 1,
        stop_policy: Some(queue.stop_policy),
        resource_groups: queue.resource_groups.clone(),
        admission_checks: queue.admission_checks.clone(),
        annotations: queue.annotations.clone(),
        ..QueueState::default()
    }
}

/// The InstanceType reconciler's `syncInactive` applied to the queue state (chain.md §10.3).
fn sync_inactive_on(state: &mut QueueState, inactive: &mut bool) {
    let migrating = state.has_migration_marker();
    // An `unset` saved policy is an absent field, which Kueue reads as None.
    let saved = state
        .annotations
        .get(labels::MIGRATION_STOP_POLICY)
        .and_then(|s| super::decode_saved_stop_policy(s).ok())
        .flatten()
        .unwrap_or(StopPolicy::None);
    let synced = converge_inactive(&InactiveSync {
        stop_policy: state.policy(),
        inactive: *inactive,
        empty_plan_hold: state.empty_plan_held(),
        migrating,
        saved_stop_policy: saved,
        has_resource_groups: !state.resource_groups.is_empty(),
    });
    if synced.stop_policy != state.policy() {
        state.stop_policy = Some(synced.stop_policy);
        state.generation += 1;
    }
    if synced.empty_plan_hold {
        state.annotations.insert(
            Text::new_static(labels::EMPTY_PLAN_HOLD),
            Text::new_static("true"),
        );
    } else {
        state.annotations.remove(labels::EMPTY_PLAN_HOLD);
    }
    // Only an edited saved policy is rewritten, so an `unset` one survives an untouched pass.
    if migrating && synced.saved_stop_policy != saved {
        state.annotations.insert(
            Text::new_static(labels::MIGRATION_STOP_POLICY),
            synced.saved_stop_policy.name().into(),
        );
    }
    *inactive = synced.inactive;
}

/// Kueue observes the current generation: a stopped queue reports `Active=False, Stopped`,
/// an open one `Active=True`. No workload runs at quiescence, so nothing is reserved.
fn kueue_observes(state: &mut QueueState) {
    let stopped = state.policy() != StopPolicy::None;
    state.status.active = Some(ActiveCondition {
        status: !stopped,
        reason: if stopped { STOPPED_REASON } else { "Ready" }.into(),
        observed_generation: state.generation,
    });
}

/// The pool's queue at quiescence, from its creation shape (rules 13–16).
pub fn settle_pool_queue(
    created: &ClusterQueue,
    inactive: bool,
    flavors: &[PoolFlavor],
    world: &QueueWorld,
    settings: &Settings,
) -> Settled {
    let mut state = state_of(created);
    let mut inactive = inactive;
    let mut topology_ready = None;
    let mut converged = false;
    let plan = FlavorPlan::of(flavors, world, settings.era);
    for _ in 0..MAX_TURNS {
        let before_inactive = inactive;
        let step = reconcile_node_queue_planned(&state, &plan, settings);
        topology_ready = step.topology_ready.or(topology_ready);
        let mut next = step.state;
        sync_inactive_on(&mut next, &mut inactive);
        kueue_observes(&mut next);
        let unchanged = next == state && inactive == before_inactive;
        state = next;
        if unchanged {
            converged = true;
            break;
        }
    }
    let active = state.status.active.as_ref().is_some_and(|c| c.status);
    Settled {
        queue: ClusterQueue {
            stop_policy: state.policy(),
            resource_groups: state.resource_groups,
            admission_checks: state.admission_checks,
            annotations: state.annotations,
            ..created.clone()
        },
        inactive,
        topology_ready,
        active,
        converged,
    }
}
