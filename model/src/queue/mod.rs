//! ClusterQueues and LocalQueues: the steady-state quota plan, admission-check references,
//! LocalQueue fan-out (research/chain.md §10, §11, §14, §17 rules 13–17), and the two state
//! machines that own a queue's StopPolicy: the NodeQueue reconciler (`node_queue`) and the
//! InstanceType reconciler's side (`instance_type`), per research/corrections.md 2–3.

mod instance_type;
mod node_queue;
mod settle;

pub use instance_type::*;
pub use node_queue::*;
pub use settle::*;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::cluster::{ForeignQueue, JointCheckGate, Namespace, Settings};
use crate::labels::{self, Labels, Text};
use crate::objects::{FlavorQuota, LocalQueue, OwnerReference, ResourceGroup};
use crate::units::{CREDITS_PER_CARD, MAX_FLAVORS_PER_QUEUE};

/// What the NodeQueue reconciler reads of one ResourceFlavor its pool selector found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolFlavor {
    pub name: Text,
    /// Per-node count: cores (`<n>c`) or cards (`<n>d`).
    pub per_node_count: u64,
    /// `|nodes| × count`, the flavor's `.capacity` label.
    pub capacity: u64,
    /// The flavor's `acceleratable` note.
    pub acceleratable: bool,
    /// The flavor's `manufacturer` note (accelerated flavors).
    pub manufacturer: String,
    /// Kueue is still finalizing it (deletionTimestamp set): treated as gone.
    pub terminating: bool,
}

/// Why the NodeQueue reconciler refuses to write a plan; the variant order is the validation
/// order (research/corrections.md 3). Each name is the TopologyReady=False reason.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Error, Serialize, Deserialize,
)]
pub enum QueueRefusal {
    #[error("DuplicateCoveredResource")]
    DuplicateCoveredResource,
    #[error("UnsupportedExistingObject")]
    UnsupportedExistingObject,
    #[error("TooManyFlavors")]
    TooManyFlavors,
    #[error("MissingTopology")]
    MissingTopology,
    #[error("OverlappingSelectors")]
    OverlappingSelectors,
    #[error("NonConservedQuota")]
    NonConservedQuota,
    #[error("InvalidMigrationState")]
    InvalidMigrationState,
}

impl QueueRefusal {
    /// The condition reason, as the operator writes it.
    pub fn reason(self) -> &'static str {
        match self {
            QueueRefusal::DuplicateCoveredResource => "DuplicateCoveredResource",
            QueueRefusal::UnsupportedExistingObject => "UnsupportedExistingObject",
            QueueRefusal::TooManyFlavors => "TooManyFlavors",
            QueueRefusal::MissingTopology => "MissingTopology",
            QueueRefusal::OverlappingSelectors => "OverlappingSelectors",
            QueueRefusal::NonConservedQuota => "NonConservedQuota",
            QueueRefusal::InvalidMigrationState => "InvalidMigrationState",
        }
    }
}

/// The live flavors (terminating ones dropped) in plan order: per-node count ascending, ties by
/// name. chain.md §10.2; node_queue.go (stable sort over a name-ordered list).
pub fn plan_order(flavors: &[PoolFlavor]) -> Vec<&PoolFlavor> {
    let mut live: Vec<&PoolFlavor> = flavors.iter().filter(|f| !f.terminating).collect();
    live.sort_by(|a, b| {
        a.per_node_count
            .cmp(&b.per_node_count)
            .then_with(|| a.name.cmp(&b.name))
    });
    live
}

/// The one covered resource: `credits.gpustack.ai/<mfr>` for an accelerated pool, else `cpu`.
/// chain.md §10.2.
pub fn covered_resource(acceleratable: bool, manufacturer: &str) -> String {
    if acceleratable {
        [labels::CREDITS_PREFIX, manufacturer].concat()
    } else {
        "cpu".to_string()
    }
}

/// A flavor's nominal quota: capacity × 1,600,000 credits (accelerated) or capacity cores.
/// chain.md §10.2; invariant §14.8.
pub fn flavor_nominal(capacity: u64, acceleratable: bool) -> i64 {
    let cap = i64::try_from(capacity).unwrap_or(i64::MAX);
    if acceleratable {
        cap.saturating_mul(CREDITS_PER_CARD)
    } else {
        cap
    }
}

/// The steady-state plan: one group covering one resource, flavors in plan order, capacity ≤ 0
/// skipped, no borrowing/lending limits; > 64 live flavors refused. chain.md §10.2, rule 14.
pub fn queue_resource_groups(flavors: &[PoolFlavor]) -> Result<Vec<ResourceGroup>, QueueRefusal> {
    let live = plan_order(flavors);
    if live.len() > MAX_FLAVORS_PER_QUEUE {
        return Err(QueueRefusal::TooManyFlavors);
    }
    let Some(first) = live.first() else {
        return Ok(Vec::new());
    };
    let acceleratable = first.acceleratable;
    let quotas: Vec<FlavorQuota> = live
        .iter()
        .filter(|f| f.capacity > 0)
        .map(|f| FlavorQuota {
            flavor: f.name.clone(),
            nominal_quota: flavor_nominal(f.capacity, acceleratable),
        })
        .collect();
    if quotas.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![ResourceGroup {
        covered_resources: vec![covered_resource(acceleratable, &first.manufacturer).into()],
        flavors: quotas,
    }])
}

/// AdmissionCheck references, each only while its check is Active: node-devices first
/// (accelerated queues, derived-from-node on), then the joint check (every queue; under the
/// older `JointCheckGate::DerivedFromNode` only with derived-from-node on). Rule 15;
/// node_queue.go (TestNodeQueueReconciler_ReferencesTheJointCheckFromEveryQueue,
/// TestNodeQueueReconciler_TheJointCheckWaitsForActive); the case-106 header.
pub fn queue_admission_checks(acceleratable: bool, settings: &Settings) -> Vec<Text> {
    let mut checks = Vec::new();
    if acceleratable && settings.derived_from_node && settings.node_devices_check_active {
        checks.push(Text::new_static(labels::NODE_DEVICES_CHECK));
    }
    if joint_check_referenced(settings) {
        checks.push(Text::new_static(labels::JOINT_CHECK));
    }
    checks
}

/// Whether an operator-owned queue references the joint check (see `JointCheckGate`).
fn joint_check_referenced(settings: &Settings) -> bool {
    let gated_off =
        settings.joint_check_gate == JointCheckGate::DerivedFromNode && !settings.derived_from_node;
    settings.joint_check_active && !gated_off
}

/// One flavor's row of `status.flavorsReservation` / `status.flavorsUsage`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct FlavorUsage {
    pub flavor: String,
    pub resource: String,
    /// Quantity in the resource's base unit (cores or credits).
    pub total: i64,
    pub borrowed: i64,
}

/// Kueue's `Active` condition on the queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ActiveCondition {
    pub status: bool,
    pub reason: String,
    pub observed_generation: u64,
}

/// Kueue's reason on `Active=False` for a queue with a stop policy.
pub const STOPPED_REASON: &str = "Stopped";

/// What Kueue reports in a ClusterQueue's status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueStatus {
    pub reserving_workloads: u64,
    pub admitted_workloads: u64,
    /// Not counted by `has_reserved`: pending workloads hold no reservation.
    pub pending_workloads: u64,
    pub flavors_reservation: Vec<FlavorUsage>,
    pub flavors_usage: Vec<FlavorUsage>,
    pub active: Option<ActiveCondition>,
}

/// Whether the queue still holds reserved quota or reserving/admitted workloads (pending ones do
/// not count). node_queue.go `hasReserved` (TestHasReserved).
pub fn has_reserved(status: &QueueStatus) -> bool {
    status.reserving_workloads != 0
        || status.admitted_workloads != 0
        || status
            .flavors_reservation
            .iter()
            .any(|r| r.total != 0 || r.borrowed != 0)
}

/// Whether a namespace gets LocalQueues: not terminating and not reserved (the system namespace
/// and `kube-system`; other `kube-*` are not reserved). chain.md §11; kuberess/alias.go @0994b9c.
pub fn namespace_gets_local_queues(ns: &Namespace, system_namespace: &str) -> bool {
    !ns.terminating && ns.name != system_namespace && ns.name != labels::KUBE_SYSTEM
}

/// The ClusterQueues that get LocalQueues. A created ClusterQueue is reconciled only when it
/// carries the operator's mark, but a created Namespace enqueues every ClusterQueue that is not
/// terminating, the foreign ones too, and the reconcile does not look at the mark again; at
/// operator start every Namespace is seen as created, so a foreign queue present then gets
/// LocalQueues in every eligible namespace. node_queue_entrance.go @33574eb (`SetupController`
/// predicates, `enqueueClusterQueueWhenNamespaceCreated`, `Reconcile` skipping deleted queues).
pub fn entrance_queues<'a>(operator: &[&'a str], foreign: &'a [ForeignQueue]) -> Vec<&'a str> {
    let mut out: Vec<&str> = operator.to_vec();
    for q in foreign.iter().filter(|q| !q.terminating) {
        if !out.contains(&q.name.as_str()) {
            out.push(&q.name);
        }
    }
    out
}

/// A LocalQueue's owner: its ClusterQueue (`kueue.x-k8s.io/v1beta2`), as the controller, not
/// blocking the owner's deletion. node_queue_entrance.go @33574eb (`Reconcile`:
/// `kubemeta.ControlOnWithoutBlock`).
pub fn entrance_owner(cluster_queue: Text) -> OwnerReference {
    OwnerReference {
        api_version: Text::new_static(KUEUE_API_VERSION),
        kind: Text::new_static("ClusterQueue"),
        name: cluster_queue,
        controller: true,
        block_owner_deletion: false,
    }
}

/// The Kueue API version the operator's objects are written in (the operator imports
/// `sigs.k8s.io/kueue/apis/kueue/v1beta2`).
pub const KUEUE_API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// Every ClusterQueue × every eligible namespace → one LocalQueue named `name_of(cq)` with the
/// `schedule.gpustack.ai/queue=<cq>` annotation, owned by the queue. Rule 17;
/// node_queue_entrance.go @33574eb.
pub fn local_queues(
    cluster_queues: &[&str],
    namespaces: &[Namespace],
    system_namespace: &str,
    name_of: impl Fn(&str) -> Text,
) -> Vec<LocalQueue> {
    // Which namespaces get LocalQueues is the same for every queue: decided once.
    let eligible: Vec<Text> = namespaces
        .iter()
        .filter(|ns| namespace_gets_local_queues(ns, system_namespace))
        .map(|ns| Text::new(&ns.name))
        .collect();
    let mut out = Vec::with_capacity(cluster_queues.len() * eligible.len());
    for cq in cluster_queues {
        // built once per queue; each LocalQueue shares them
        let name = name_of(cq);
        let cluster_queue = Text::new(cq);
        let annotations = Labels::from([(
            Text::new_static(labels::QUEUE_ANNOTATION),
            cluster_queue.clone(),
        )]);
        let owner = entrance_owner(cluster_queue.clone());
        out.extend(eligible.iter().map(|namespace| LocalQueue {
            namespace: namespace.clone(),
            name: name.clone(),
            cluster_queue: cluster_queue.clone(),
            annotations: annotations.clone(),
            owner: owner.clone(),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavor(name: &str, count: u64, capacity: u64) -> PoolFlavor {
        PoolFlavor {
            name: name.into(),
            per_node_count: count,
            capacity,
            ..PoolFlavor::default()
        }
    }

    fn accel(name: &str, count: u64, capacity: u64) -> PoolFlavor {
        PoolFlavor {
            acceleratable: true,
            manufacturer: "nvidia".into(),
            ..flavor(name, count, capacity)
        }
    }

    #[test]
    fn cpu_plan_sorts_by_count_and_covers_cpu() {
        let groups = queue_resource_groups(&[flavor("b-8c", 8, 8), flavor("a-4c", 4, 4)]).unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].covered_resources, vec!["cpu".to_string()]);
        let names: Vec<&str> = groups[0]
            .flavors
            .iter()
            .map(|f| f.flavor.as_str())
            .collect();
        assert_eq!(names, ["a-4c", "b-8c"]);
        assert_eq!(groups[0].flavors[0].nominal_quota, 4);
    }

    #[test]
    fn ties_sort_by_name() {
        let groups = queue_resource_groups(&[flavor("z-4c", 4, 4), flavor("a-4c", 4, 4)]).unwrap();
        assert_eq!(groups[0].flavors[0].flavor, "a-4c");
    }

    /// chain.md §10.2 walkthrough: T4 pool flavors 1d and 4d → 1.6 M and 6.4 M credits.
    #[test]
    fn accelerated_plan_covers_credits() {
        let groups = queue_resource_groups(&[accel("t4-4d", 4, 4), accel("t4-1d", 1, 1)]).unwrap();
        assert_eq!(
            groups[0].covered_resources,
            vec!["credits.gpustack.ai/nvidia".to_string()]
        );
        let nominal: Vec<i64> = groups[0].flavors.iter().map(|f| f.nominal_quota).collect();
        assert_eq!(nominal, [1_600_000, 6_400_000]);
    }

    #[test]
    fn skips_empty_and_terminating_flavors() {
        let mut gone = flavor("gone-2c", 2, 2);
        gone.terminating = true;
        let groups =
            queue_resource_groups(&[flavor("zero-1c", 1, 0), gone, flavor("ok-4c", 4, 4)]).unwrap();
        assert_eq!(groups[0].flavors.len(), 1);
        assert_eq!(groups[0].flavors[0].flavor, "ok-4c");
        assert!(queue_resource_groups(&[flavor("zero-1c", 1, 0)])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn more_than_64_flavors_is_refused() {
        let many: Vec<PoolFlavor> = (1..=65).map(|i| flavor(&format!("f-{i}c"), i, i)).collect();
        assert_eq!(
            queue_resource_groups(&many),
            Err(QueueRefusal::TooManyFlavors)
        );
        assert!(queue_resource_groups(&many[..64]).is_ok());
    }

    #[test]
    fn admission_checks_follow_settings() {
        let s = Settings::default();
        assert_eq!(
            queue_admission_checks(true, &s),
            vec![labels::NODE_DEVICES_CHECK, labels::JOINT_CHECK]
        );
        assert_eq!(queue_admission_checks(false, &s), vec![labels::JOINT_CHECK]);
        let inactive = Settings {
            joint_check_active: false,
            node_devices_check_active: false,
            ..Settings::default()
        };
        assert!(queue_admission_checks(true, &inactive).is_empty());
        let authored = Settings {
            derived_from_node: false,
            ..Settings::default()
        };
        assert_eq!(
            queue_admission_checks(true, &authored),
            vec![labels::JOINT_CHECK]
        );
        let older = Settings {
            joint_check_gate: JointCheckGate::DerivedFromNode,
            ..authored
        };
        assert!(queue_admission_checks(true, &older).is_empty());
    }

    #[test]
    fn has_reserved_cases() {
        assert!(!has_reserved(&QueueStatus::default()));
        assert!(has_reserved(&QueueStatus {
            reserving_workloads: 1,
            ..QueueStatus::default()
        }));
        assert!(!has_reserved(&QueueStatus {
            pending_workloads: 3,
            ..QueueStatus::default()
        }));
        let row = |total, borrowed| QueueStatus {
            flavors_reservation: vec![FlavorUsage {
                flavor: "f".into(),
                resource: "cpu".into(),
                total,
                borrowed,
            }],
            ..QueueStatus::default()
        };
        assert!(has_reserved(&row(2, 0)));
        assert!(has_reserved(&row(0, 1)));
        assert!(!has_reserved(&row(0, 0)));
    }

    #[test]
    fn a_new_namespace_brings_local_queues_for_foreign_queues_that_are_not_terminating() {
        let foreign = [
            ForeignQueue {
                name: "team-a".into(),
                terminating: false,
            },
            ForeignQueue {
                name: "going".into(),
                terminating: true,
            },
            ForeignQueue {
                name: "gpustack--x".into(),
                terminating: false,
            },
        ];
        assert_eq!(
            entrance_queues(&["gpustack--x"], &foreign),
            ["gpustack--x", "team-a"]
        );
        assert_eq!(entrance_queues(&[], &[]), Vec::<&str>::new());
    }

    #[test]
    fn a_local_queue_is_controlled_by_its_cluster_queue_without_blocking_its_deletion() {
        let ns = [Namespace {
            name: "default".into(),
            terminating: false,
        }];
        let lqs = local_queues(&["q"], &ns, "gpustack-system", |q| crate::text!("lq-{q}"));
        let owner = &lqs[0].owner;
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str()
            ),
            ("kueue.x-k8s.io/v1beta2", "ClusterQueue", "q")
        );
        assert!(owner.controller && !owner.block_owner_deletion);
    }

    #[test]
    fn local_queues_skip_reserved_and_terminating_namespaces() {
        let ns = |name: &str, terminating| Namespace {
            name: name.into(),
            terminating,
        };
        let namespaces = [
            ns("default", false),
            ns("gpustack-system", false),
            ns("kube-system", false),
            ns("kube-public", false),
            ns("leaving", true),
        ];
        let lqs = local_queues(&["cq-a"], &namespaces, "gpustack-system", |n| {
            crate::text!("lq-{n}")
        });
        let where_: Vec<&str> = lqs.iter().map(|l| l.namespace.as_str()).collect();
        assert_eq!(where_, ["default", "kube-public"]);
        assert_eq!(lqs[0].name, "lq-cq-a");
        assert_eq!(lqs[0].cluster_queue, "cq-a");
        assert_eq!(
            lqs[0]
                .annotations
                .get(labels::QUEUE_ANNOTATION)
                .map(Text::as_str),
            Some("cq-a")
        );
    }
}
