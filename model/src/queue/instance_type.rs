//! The InstanceType reconciler's side of a ClusterQueue: creation shape, the Inactive↔StopPolicy
//! mirror, and the create/recreate/teardown lifecycle (research/chain.md §10.1, §10.3;
//! corrections.md 3; pkg/worker/controllers/worker/instance_type.go @01712e2, tests @0ae3355).

use serde::{Deserialize, Serialize};

use crate::cluster::Era;
use crate::labels::{self, Labels, Text};
use crate::objects::{ClusterQueue, FlavorFungibility, QueuePreemption, StopPolicy};

/// What `syncInactive` reads and writes: the queue's stop policy and markers, the IT's
/// `spec.inactive`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct InactiveSync {
    pub stop_policy: StopPolicy,
    /// The InstanceType's `spec.inactive`.
    pub inactive: bool,
    /// `topology.gpustack.ai/empty-plan-hold=true` on the queue.
    pub empty_plan_hold: bool,
    /// `topology.gpustack.ai/migration-phase` present on the queue.
    pub migrating: bool,
    /// `topology.gpustack.ai/migration-stop-policy` (meaningful while migrating).
    pub saved_stop_policy: StopPolicy,
    /// The queue has resource groups.
    pub has_resource_groups: bool,
}

/// One pass of `syncInactive`: inactive → Hold; active & Hold → None (a group-less queue's Hold
/// is re-marked instead); HoldAndDrain back-fills `inactive`; a marked empty-plan Hold is neither
/// released nor mirrored (an inactive type adopts it, dropping the marker); while migrating only
/// the saved policy is edited. chain.md §10.3 first bullet; corrections.md 3.
pub fn sync_inactive(s: &InactiveSync) -> InactiveSync {
    let mut n = *s;
    if s.migrating {
        n.saved_stop_policy = match (s.inactive, s.saved_stop_policy) {
            (true, StopPolicy::None) => StopPolicy::Hold,
            (false, StopPolicy::Hold) => StopPolicy::None,
            (_, saved) => saved,
        };
        return n;
    }
    if s.inactive {
        if s.stop_policy == StopPolicy::None {
            n.stop_policy = StopPolicy::Hold;
        }
        // The type's own Inactive now owns the Hold.
        n.empty_plan_hold = false;
        return n;
    }
    match s.stop_policy {
        StopPolicy::HoldAndDrain => n.inactive = true,
        StopPolicy::Hold if s.empty_plan_hold => {}
        StopPolicy::Hold if !s.has_resource_groups => n.empty_plan_hold = true,
        StopPolicy::Hold => n.stop_policy = StopPolicy::None,
        StopPolicy::None => {}
    }
    n
}

/// `sync_inactive` iterated to its fixpoint (bounded; the rule settles in at most two passes).
pub fn converge_inactive(s: &InactiveSync) -> InactiveSync {
    let mut cur = *s;
    for _ in 0..8 {
        let next = sync_inactive(&cur);
        if next == cur {
            break;
        }
        cur = next;
    }
    cur
}

/// Kueue tries the next flavor before borrowing, and may stop searching rather than preempt
/// (instance_type.go `createClusterQueue`; instance_type_test.go `CreatesClusterQueue`).
pub fn isolated_flavor_fungibility() -> FlavorFungibility {
    FlavorFungibility {
        when_can_borrow: "TryNextFlavor".into(),
        when_can_preempt: "MayStopSearch".into(),
    }
}

/// No reclaiming or borrowing within the (nonexistent) cohort; only lower-priority workloads of
/// the same queue are preempted (instance_type.go `createClusterQueue`).
pub fn isolated_preemption() -> QueuePreemption {
    QueuePreemption {
        reclaim_within_cohort: "Never".into(),
        borrow_within_cohort_policy: "Never".into(),
        within_cluster_queue: "LowerPriority".into(),
    }
}

/// The ClusterQueue an InstanceType gets at creation: same name, schedule labels +
/// `resource.gpustack.ai/type=instancetypes`, empty cohort, no groups, the all-namespace selector
/// and the fixed isolation policy (fungibility, preemption), stamped whatever
/// derived-from-node says; E3 `Hold` + empty-plan marker, E2 `None`. chain.md §10.1; rule 13;
/// instance_type.go `createClusterQueue`.
pub fn new_cluster_queue(it_name: &str, schedule_labels: &Labels, era: Era) -> ClusterQueue {
    new_labelled_cluster_queue(it_name, cluster_queue_labels(schedule_labels), era)
}

/// [`new_cluster_queue`] with its [`cluster_queue_labels`] already built.
pub fn new_labelled_cluster_queue(it_name: &str, labels: Labels, era: Era) -> ClusterQueue {
    let (stop_policy, annotations) = match era {
        Era::E2 => (StopPolicy::None, Labels::new()),
        Era::E3 => (
            StopPolicy::Hold,
            Labels::from([(
                Text::new_static(labels::EMPTY_PLAN_HOLD),
                Text::new_static("true"),
            )]),
        ),
    };
    ClusterQueue {
        name: it_name.into(),
        labels,
        annotations,
        cohort: Text::default(),
        stop_policy,
        resource_groups: Vec::new(),
        admission_checks: Vec::new(),
        namespace_selector: Some(Labels::new()),
        flavor_fungibility: Some(isolated_flavor_fungibility()),
        preemption: Some(isolated_preemption()),
    }
}

/// The InstanceType reconciler re-applies the schedule labels of the type's current spec to its
/// existing queue: the label set is replaced, so a feature key of an old group is pruned rather
/// than left to AND the selectors into matching no pool (instance_type_test.go
/// `RepointsFeatureKeyOnGroupChange`); `derive_pool` re-labels an existing pool queue with it.
pub fn align_cluster_queue_labels(
    existing: &ClusterQueue,
    schedule_labels: &Labels,
) -> ClusterQueue {
    relabelled_cluster_queue(existing, cluster_queue_labels(schedule_labels))
}

/// [`align_cluster_queue_labels`] with the [`cluster_queue_labels`] already built.
pub fn relabelled_cluster_queue(existing: &ClusterQueue, labels: Labels) -> ClusterQueue {
    ClusterQueue {
        labels,
        ..existing.clone()
    }
}

/// A backing queue's labels: the InstanceType's schedule labels and the operator's
/// `resource.gpustack.ai/type=instancetypes` mark. A new queue and an existing one the
/// reconciler re-labels carry the same ones.
pub fn cluster_queue_labels(schedule_labels: &Labels) -> Labels {
    schedule_labels.with(
        Text::new_static(labels::RESOURCE_TYPE),
        Text::new_static(labels::RESOURCE_TYPE_INSTANCETYPES),
    )
}

/// An object's deletion as the API server performs it: removed at once without finalizers,
/// else marked deleting.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Lifecycle {
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

impl Lifecycle {
    /// Whether a delete request removes the object at once (no finalizers).
    pub fn delete_removes(&self) -> bool {
        self.finalizers.is_empty()
    }
}

/// The InstanceType as its reconciler sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TypeObject {
    pub name: String,
    pub schedule_labels: Labels,
    pub meta: Lifecycle,
    /// `status.entrance`.
    pub entrance: String,
    /// Status marked Inactive by the teardown.
    pub status_inactive: bool,
}

/// The backing ClusterQueue as the InstanceType reconciler sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackingQueue {
    pub queue: ClusterQueue,
    pub meta: Lifecycle,
}

/// The InstanceType and its queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TypeWorld {
    pub instance_type: Option<TypeObject>,
    pub queue: Option<BackingQueue>,
}

/// Requeue while a deleted queue terminates before it is recreated (chain.md §10.1).
pub const RECREATE_REQUEUE_SECS: u32 = 15;

/// One lifecycle reconcile's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeStep {
    pub world: TypeWorld,
    pub requeue_after: Option<u32>,
}

impl TypeWorld {
    /// An admin or the teardown deletes the queue (API-server semantics).
    pub fn delete_queue(&mut self) {
        if let Some(q) = &mut self.queue {
            if q.meta.delete_removes() {
                self.queue = None;
            } else {
                q.meta.deleting = true;
            }
        }
    }

    /// An admin deletes the InstanceType (API-server semantics).
    pub fn delete_instance_type(&mut self) {
        if let Some(it) = &mut self.instance_type {
            if it.meta.delete_removes() {
                self.instance_type = None;
            } else {
                it.meta.deleting = true;
            }
        }
    }

    /// Removes a finalizer; a deleting object with none left disappears.
    fn release_type_finalizer(&mut self, finalizer: &str) {
        if let Some(it) = &mut self.instance_type {
            it.meta.finalizers.retain(|f| f != finalizer);
            if it.meta.deleting && it.meta.finalizers.is_empty() {
                self.instance_type = None;
            }
        }
    }
}

/// One InstanceType reconcile's lifecycle part: a live type keeps its finalizer, publishes its
/// entrance `name_of(it)` whatever the queue's state, and recreates a missing queue (requeue 15 s
/// while one terminates); a deleting type is marked Inactive, deletes its queue once, and keeps its
/// finalizer until the queue is gone (Kueue's in-use finalizer may hold it). chain.md §10.1, §10.3
/// teardown, rule 22; instance_type.go @01712e2.
pub fn reconcile_instance_type_lifecycle(
    world: &TypeWorld,
    era: Era,
    name_of: &dyn Fn(&str) -> String,
) -> TypeStep {
    let mut next = world.clone();
    let Some(it) = &mut next.instance_type else {
        return TypeStep {
            world: next,
            requeue_after: None,
        };
    };
    if it.meta.deleting {
        it.status_inactive = true;
        match &next.queue {
            Some(q) if !q.meta.deleting => next.delete_queue(),
            Some(_) => {}
            None => next.release_type_finalizer(labels::CONTROLLED_FINALIZER),
        }
        // Waiting on the queue is event-driven (the queue is watched): no timed requeue.
        return TypeStep {
            world: next,
            requeue_after: None,
        };
    }
    if !it
        .meta
        .finalizers
        .iter()
        .any(|f| f == labels::CONTROLLED_FINALIZER)
    {
        it.meta
            .finalizers
            .push(labels::CONTROLLED_FINALIZER.to_string());
    }
    it.entrance = name_of(&it.name);
    let requeue_after = match &next.queue {
        None => {
            next.queue = Some(BackingQueue {
                queue: new_cluster_queue(&it.name, &it.schedule_labels, era),
                meta: Lifecycle::default(),
            });
            None
        }
        Some(q) if q.meta.deleting => Some(RECREATE_REQUEUE_SECS),
        Some(_) => None,
    };
    TypeStep {
        world: next,
        requeue_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stop: StopPolicy, inactive: bool, marker: bool, groups: bool) -> InactiveSync {
        InactiveSync {
            stop_policy: stop,
            inactive,
            empty_plan_hold: marker,
            has_resource_groups: groups,
            ..InactiveSync::default()
        }
    }

    #[test]
    fn truth_table() {
        use StopPolicy::*;
        // (start, expected stop policy, expected inactive, expected marker)
        let cases = [
            (row(None, false, false, true), None, false, false),
            (row(Hold, true, false, true), Hold, true, false),
            (row(Hold, false, false, true), None, false, false),
            (
                row(HoldAndDrain, false, false, true),
                HoldAndDrain,
                true,
                false,
            ),
            (row(Hold, true, true, false), Hold, true, false),
            (row(Hold, false, false, false), Hold, false, true),
            (row(Hold, false, true, false), Hold, false, true),
            (row(None, true, false, true), Hold, true, false),
        ];
        for (start, stop, inactive, marker) in cases {
            let end = converge_inactive(&start);
            assert_eq!(
                (end.stop_policy, end.inactive, end.empty_plan_hold),
                (stop, inactive, marker),
                "from {start:?}"
            );
            assert_eq!(sync_inactive(&end), end, "stable from {start:?}");
        }
    }

    #[test]
    fn migration_edits_only_the_saved_policy() {
        let start = InactiveSync {
            stop_policy: StopPolicy::HoldAndDrain,
            migrating: true,
            has_resource_groups: true,
            ..InactiveSync::default()
        };
        let end = converge_inactive(&start);
        assert!(!end.inactive, "no back-fill while migrating");
        let inactive = converge_inactive(&InactiveSync {
            inactive: true,
            ..start
        });
        assert_eq!(inactive.stop_policy, StopPolicy::HoldAndDrain);
        assert_eq!(inactive.saved_stop_policy, StopPolicy::Hold);
    }

    #[test]
    fn creation_shape_per_era() {
        let schedule = Labels::from([(
            Text::new_static("kubernetes.io/os"),
            Text::new_static("linux"),
        )]);
        let e3 = new_cluster_queue("it", &schedule, Era::E3);
        assert_eq!(e3.name, "it");
        assert_eq!(e3.stop_policy, StopPolicy::Hold);
        assert_eq!(
            e3.annotations
                .get(labels::EMPTY_PLAN_HOLD)
                .map(Text::as_str),
            Some("true")
        );
        assert_eq!(
            e3.labels.get(labels::RESOURCE_TYPE).map(Text::as_str),
            Some("instancetypes")
        );
        assert_eq!(
            e3.labels.get("kubernetes.io/os").map(Text::as_str),
            Some("linux")
        );
        assert!(e3.cohort.is_empty() && e3.resource_groups.is_empty());
        let e2 = new_cluster_queue("it", &schedule, Era::E2);
        assert_eq!(e2.stop_policy, StopPolicy::None);
        assert!(e2.annotations.is_empty());
    }

    fn live_type() -> TypeWorld {
        TypeWorld {
            instance_type: Some(TypeObject {
                name: "it".into(),
                ..TypeObject::default()
            }),
            queue: None,
        }
    }

    fn name_of(n: &str) -> String {
        format!("lq-{n}")
    }

    #[test]
    fn recreates_a_deleted_queue() {
        let w = reconcile_instance_type_lifecycle(&live_type(), Era::E3, &name_of).world;
        assert!(w.queue.is_some());
        assert_eq!(
            w.instance_type.as_ref().map(|t| t.entrance.as_str()),
            Some("lq-it")
        );
        let mut deleted = w.clone();
        deleted.delete_queue();
        assert!(deleted.queue.is_none());
        let w = reconcile_instance_type_lifecycle(&deleted, Era::E3, &name_of).world;
        assert!(w.queue.is_some());
    }

    #[test]
    fn teardown_waits_for_kueue_finalizer() {
        let mut w = reconcile_instance_type_lifecycle(&live_type(), Era::E3, &name_of).world;
        if let Some(q) = &mut w.queue {
            q.meta.finalizers = vec![labels::KUEUE_IN_USE_FINALIZER.into()];
        }
        w.delete_instance_type();
        for _ in 0..3 {
            w = reconcile_instance_type_lifecycle(&w, Era::E3, &name_of).world;
        }
        assert!(w.queue.as_ref().is_some_and(|q| q.meta.deleting));
        assert!(w.instance_type.as_ref().is_some_and(|t| t.status_inactive));
        // Kueue lets go: the queue vanishes and the finalizer is released.
        w.queue = None;
        w = reconcile_instance_type_lifecycle(&w, Era::E3, &name_of).world;
        assert!(w.instance_type.is_none());
    }
}
