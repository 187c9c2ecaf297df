//! A Workload's life through the five gates (admission.md §3, §16): submit → gate 1 (Pod
//! webhook) → gate 2 (Kueue quota and topology-aware placement at hostname level, first
//! flavor with room for both; corrections.md 16) → gate 3 (node-devices check on the nodes
//! Kueue picked) →
//! gates 4–5 (the cards gate 3 budgeted are charged on the ledger) → admitted; finish →
//! release. Each step calls the one rule that decides it; this file only carries state.
//!
//! On a queue that references `gpustack-model-deployment-joint`, a replica of a multi-role
//! ModelDeployment that passes gates 2 and 3 holds its quota reservation with the joint check
//! Pending ([`Outcome::Held`]) until every declared replica has reserved; the last reservation
//! opens the barrier for all of them together. Its cards are charged when it reserves (the operator's
//! gate 3 counts a held Workload as in flight). The bound passing
//! ([`AdmissionState::joint_timeout`]) parks a settled deployment's held replicas: deactivated,
//! their quota released (`admission::joint`).
//!
//! The window between a Ready verdict and the ledger charge (in-flight accounting) is not
//! modelled here: an admitted Workload is charged at once. The dynamic model ([M4]) splits it.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::admission::candidates::{
    candidate_devices, selector_matches, FlavorObject, NodeDevices,
};
use crate::admission::demands::{parse_family_demands, FamilyDemand, HostPods, PodSetAssignment};
use crate::admission::feasibility::{node_devices_fit, CardBudget, Fit};
use crate::admission::joint::{
    inside_barrier, joint_verdict, parked_message, should_park, JointVerdict, SlotState,
    NOT_A_GROUP_MESSAGE,
};
use crate::cluster::Cluster;
use crate::credits::Quantity;
use crate::derive::{Derived, Deriver};
use crate::devices::Card;
use crate::error::ModelError;
use crate::fit::{desired_fit_labels, fit_pin, node_is_managed, pod_set_fit_demand, FitQuestion};
use crate::fit_keys::{filter_fit_labels, is_fit_label_key};
use crate::labels::{Text, HOSTNAME, JOINT_CHECK, NODE_DEVICES_CHECK};
use crate::ledger::{
    charge, lowest_free_placement, reconstruct_instances, release, CardLedger, Charge, ChargeError,
    Instance,
};
use crate::nodefeature::LOCAL_QUEUE_PREFIX;
use crate::objects::{ClusterQueue, InstanceType, ResourceFlavor, StopPolicy};
use crate::placement::{
    add_pods, node_free_accelerators, pod_accelerator_requests, tas_place_pod_set, Amounts,
    TasMiss, TasNode,
};
use crate::pod_webhook::{
    fold_pod_requests, fronting_instance_type, pod_containers, validate_pod_requests,
    NodeSelectorRequirement, PodRejection,
};
use crate::profiles::vendor_profile_name;
use crate::quota::{
    credits_of_requests, pod_requests, pod_set_credits_of, quota_verdict, QuotaVerdict,
};
use crate::resources::{family_of, Family};
use crate::steps::StepStore;
use crate::workload::{Container, PodSet, Workload};

/// Kueue's quota resource for CPU pools; compared in millicores.
const CPU: &str = "cpu";

/// Where a submitted Workload ended up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Gate 1 refused a Pod (API error); nothing is queued.
    Rejected { message: String },
    /// Gate 2: no quota reserved; the Workload waits.
    Pending { reason: String },
    /// Gate 3: check state Retry, requeued after 30 s; the reservation is given back.
    Retry { message: String },
    /// Admitted and charged on the ledger.
    Admitted,
    /// Quota reserved (QuotaReserved, not Admitted) while the joint check is Pending: a
    /// replica of a multi-role ModelDeployment waiting for its siblings; the message is the
    /// joint check's.
    Held { message: String },
    /// Gate 3 said Ready but gates 4–5 could not place it on the budgeted cards: a soundness
    /// failure of the chain, reported rather than hidden.
    Unplaceable { reason: String },
}

/// One charge on one card of one node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CardCharge {
    pub node: String,
    pub accelerator_key: String,
    pub card: String,
    pub charge: Charge,
}

/// What an admitted Workload holds: reserved quota and card charges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hold {
    pub queue: String,
    pub quota: Vec<QuotaUse>,
    pub charges: Vec<CardCharge>,
}

/// Quota a reservation holds on one flavor for one resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct QuotaUse {
    pub flavor: String,
    pub resource: String,
    /// In the resource's quota unit (`cpu` in millicores).
    pub amount: i64,
}

/// Gate 2's verdict on a Workload's pod sets (Kueue's flavor assigner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaGate {
    /// Every pod set took a flavor: the assignments and the quota they reserve.
    Assigned {
        assignments: Vec<PodSetAssignment>,
        quota: Vec<QuotaUse>,
    },
    /// No quota reserved; Kueue's pending reason.
    Pending { reason: String },
}

/// What gates 1–2 predict for a Workload alone ([`AdmissionState::quota_assignment`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaPrediction {
    /// Kueue reserves quota with these assignments.
    Assigned(Vec<PodSetAssignment>),
    /// Gate 1 rejects a Pod: the webhook's message.
    Rejected { message: String },
    /// Gate 2 leaves it pending (or its LocalQueue does not exist): the reason.
    Pending { reason: String },
    /// Its requests cannot be read.
    Invalid(ModelError),
}

impl QuotaPrediction {
    /// Why no quota is reserved; `None` when it is.
    pub fn unreserved_because(&self) -> Option<String> {
        match self {
            QuotaPrediction::Assigned(_) => None,
            QuotaPrediction::Rejected { message } => Some(message.clone()),
            QuotaPrediction::Pending { reason } => Some(reason.clone()),
            QuotaPrediction::Invalid(e) => Some(e.to_string()),
        }
    }
}

/// Gate 1's rejection of one of a Workload's Pods: the API server's message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct PodRejected {
    pub message: String,
}

/// Why the admission state could not change a card or a hold: a soundness failure of the
/// chain (gate 3 budgeted what the ledger cannot take), or finishing what holds nothing.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum HoldError {
    #[error("workload {key} is not admitted")]
    NotAdmitted { key: String },
    #[error("card {card} of {accelerator_key} on {node} is gone")]
    CardGone {
        node: String,
        accelerator_key: String,
        card: String,
    },
    #[error("card {card} on {node} has no ledger row")]
    NoLedgerRow { node: String, card: String },
    #[error("card {card} on {node}: {source}")]
    Charge {
        node: String,
        card: String,
        #[source]
        source: ChargeError,
    },
    #[error("card {card} on {node} has no free placement for {profile}")]
    NoFreePlacement {
        node: String,
        card: String,
        profile: String,
    },
    #[error("gate 3 budgeted a card it did not list")]
    UnlistedCard,
    #[error("gate 3 budgeted for an unknown demand")]
    UnknownDemand,
}

/// The admission world: the cluster (its ledgers move), what it derives (structure only: it
/// does not depend on the ledger), reserved quota, holds and live partition instances.
#[derive(Clone, Debug)]
pub struct AdmissionState {
    pub cluster: Cluster,
    /// Shared between clones of this world: replaced whole when the world re-derives, never
    /// edited in place (a world is cloned far more often than it re-derives).
    pub derived: std::sync::Arc<Derived>,
    /// (queue, flavor, resource) → reserved amount.
    pub reserved: BTreeMap<(String, String, String), i64>,
    /// `namespace/name` → hold.
    pub holds: BTreeMap<String, Hold>,
    /// (node, card id) → live partition instances (the allocation annotations' intervals).
    pub instances: BTreeMap<(String, String), Vec<Instance>>,
    /// `namespace/name` → a ModelDeployment replica the joint check has seen (multi-role
    /// deployments on a queue that references the check). A held replica also has a hold
    /// (its quota, no charges yet).
    pub joint: BTreeMap<String, JointMember>,
    /// How this world derives its objects (plain unless its owner hands it a step store).
    pub deriver: Deriver,
}

/// Where a ModelDeployment replica's Workload stands under the joint check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JointPhase {
    /// Submitted, no quota reserved (gate 2 pending or gate 3 Retry).
    Waiting,
    /// Quota reserved, the joint check Pending.
    Held,
    /// Admitted with the rest of its deployment.
    Admitted,
    /// Deactivated by the joint check after the bound (`spec.active=false`), quota released.
    Parked,
}

/// One replica the joint check tracks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JointMember {
    pub workload: Workload,
    pub phase: JointPhase,
    /// The joint check's message on its Workload (empty while it reserves nothing).
    pub message: String,
}

/// `namespace/name`.
pub fn workload_key(w: &Workload) -> String {
    format!("{}/{}", w.namespace, w.name)
}

impl AdmissionState {
    pub fn new(cluster: Cluster) -> Self {
        Self::with_deriver(cluster, Deriver::plain())
    }

    /// [`AdmissionState::new`], deriving through `deriver` now and on every re-derivation.
    pub fn with_deriver(cluster: Cluster, deriver: Deriver) -> Self {
        let derived = deriver.derive(&cluster);
        Self::with_derivation(cluster, derived, deriver)
    }

    /// [`AdmissionState::with_deriver`] given `derived`, the derivation of `cluster` by
    /// `deriver` the caller already made (the oracle derives each scenario's cluster first).
    pub fn with_derivation(cluster: Cluster, derived: Derived, deriver: Deriver) -> Self {
        let instances = carved_instances(&cluster);
        AdmissionState {
            cluster,
            derived: derived.into(),
            reserved: BTreeMap::new(),
            holds: BTreeMap::new(),
            instances,
            joint: BTreeMap::new(),
            deriver,
        }
    }

    /// The same cluster (ledgers as they stand) and structure, with nothing reserved and no
    /// Workload holding anything: what a Workload meets when it is submitted alone, every
    /// earlier charge on the ledger but no earlier Workload left (a live run withdraws each
    /// Workload once its verdict is read). Quota reserved by others changes which flavor gate
    /// 2 assigns, and gate 3 judges within the assigned flavor, so this is the state a
    /// verdict read back from the wire must be predicted in. Partition instances are those
    /// the ledgers record, as an operator reading the cluster rebuilds them.
    pub fn alone(&self) -> AdmissionState {
        AdmissionState {
            cluster: self.cluster.clone(),
            derived: self.derived.clone(),
            reserved: BTreeMap::new(),
            holds: BTreeMap::new(),
            instances: carved_instances(&self.cluster),
            joint: BTreeMap::new(),
            deriver: self.deriver.clone(),
        }
    }

    /// The objects as the operator would publish them now (views follow the ledger).
    pub fn observe(&self) -> Derived {
        self.deriver
            .derive_after(&self.cluster, Some(&self.derived))
    }

    /// Judges `w` through every gate and, when admitted, charges it (R1–R22).
    pub fn submit(&mut self, w: &Workload) -> Outcome {
        self.submit_given(w, None)
    }

    /// [`AdmissionState::submit`] for a Workload whose quota Kueue reserved with `given`
    /// (`status.admission.podSetAssignments`): gate 2 is Kueue's, so gate 3 judges the
    /// flavors and hostnames Kueue assigned, as the node-devices controller reads them off
    /// the Workload (research/admission.md §6.1), and the reservation is Kueue's amounts on
    /// those flavors.
    pub fn submit_reserved(&mut self, w: &Workload, given: &[PodSetAssignment]) -> Outcome {
        self.submit_given(w, Some(given))
    }

    /// What gate 2 would assign `w` now, gates 1–2 only and nothing reserved: the prediction
    /// Kueue's `status.admission.podSetAssignments` is diffed against, or why gate 1 or 2
    /// holds it.
    pub fn quota_assignment(&self, w: &Workload) -> QuotaPrediction {
        let Some(queue) = self.queue_of(w).cloned() else {
            return QuotaPrediction::Pending {
                reason: no_local_queue(w),
            };
        };
        let admitted = match self.gate_pod_webhook(w) {
            Ok(a) => a,
            Err(PodRejected { message }) => return QuotaPrediction::Rejected { message },
        };
        match self.gate_quota(&queue, &admitted) {
            Ok(QuotaGate::Assigned { assignments, .. }) => QuotaPrediction::Assigned(assignments),
            Ok(QuotaGate::Pending { reason }) => QuotaPrediction::Pending { reason },
            Err(e) => QuotaPrediction::Invalid(e),
        }
    }

    /// `w` as gate 1 leaves it: each pod set's containers after the Pod webhook's folds, what
    /// Kueue builds the Workload of a mutated Pod from (admission.md §4: the mutating webhook
    /// runs before Kueue's). `Err`: the webhook's rejection.
    pub fn as_gate_one_leaves(&self, w: &Workload) -> Result<Workload, PodRejected> {
        let pod_sets = self.gate_pod_webhook(w)?;
        Ok(Workload {
            pod_sets: pod_sets.into_iter().map(|a| a.pod_set).collect(),
            ..w.clone()
        })
    }

    fn submit_given(&mut self, w: &Workload, given: Option<&[PodSetAssignment]>) -> Outcome {
        match self.try_submit(w, given) {
            Ok(outcome) => outcome,
            Err(e) => Outcome::Rejected {
                message: e.to_string(),
            },
        }
    }

    fn try_submit(
        &mut self,
        w: &Workload,
        given: Option<&[PodSetAssignment]>,
    ) -> Result<Outcome, ModelError> {
        let key = workload_key(w);
        if let Some(m) = self.joint.get(&key) {
            match m.phase {
                JointPhase::Held => {
                    return Ok(Outcome::Held {
                        message: m.message.clone(),
                    })
                }
                JointPhase::Parked => {
                    return Ok(Outcome::Pending {
                        reason: format!("the Workload is deactivated: {}", m.message),
                    })
                }
                JointPhase::Admitted | JointPhase::Waiting => {}
            }
        }
        if self.holds.contains_key(&key) {
            return Ok(Outcome::Admitted);
        }
        let outcome = self.judge(w, &key, given)?;
        if matches!(outcome, Outcome::Pending { .. } | Outcome::Retry { .. }) && self.joint_gates(w)
        {
            self.joint.insert(
                key,
                JointMember {
                    workload: w.clone(),
                    phase: JointPhase::Waiting,
                    message: String::new(),
                },
            );
            // Its Workload now exists: the held siblings' verdicts name it as waiting rather
            // than assembling (`jointSiblings`).
            self.rejudge_deployment(w);
        }
        Ok(outcome)
    }

    /// Whether the joint check holds `w` as part of a set: its queue references the check
    /// and it is a replica of a multi-role deployment (`admission::joint::inside_barrier`).
    fn joint_gates(&self, w: &Workload) -> bool {
        self.queue_of(w).is_some_and(|q| {
            q.admission_checks.iter().any(|c| c == JOINT_CHECK)
                && inside_barrier(w, self.cluster.settings.joint_grouping)
        })
    }

    /// Gates 1–3 on a Workload that holds nothing yet, then the joint check.
    fn judge(
        &mut self,
        w: &Workload,
        key: &str,
        given: Option<&[PodSetAssignment]>,
    ) -> Result<Outcome, ModelError> {
        let key = key.to_string();
        // Read in place: gates 1–3 only read the state; its name is kept for the writes after.
        let Some(queue) = self.queue_of(w) else {
            return Ok(Outcome::Pending {
                reason: no_local_queue(w),
            });
        };
        let queue_name = queue.name.to_string();
        let node_devices_gated = queue
            .admission_checks
            .iter()
            .any(|c| c == NODE_DEVICES_CHECK);
        let admitted = match self.gate_pod_webhook(w) {
            Ok(p) => p,
            Err(PodRejected { message }) => return Ok(Outcome::Rejected { message }),
        };
        let (assignments, quota) = match given {
            Some(given) => (given.to_vec(), reserved_quota(&admitted, given)?),
            None => match self.gate_quota(queue, &admitted)? {
                QuotaGate::Assigned { assignments, quota } => (assignments, quota),
                QuotaGate::Pending { reason } => return Ok(Outcome::Pending { reason }),
            },
        };
        let mut charges = Vec::new();
        if node_devices_gated {
            let pod_sets: Vec<PodSet> = admitted.iter().map(|a| a.pod_set.clone()).collect();
            let demands = parse_family_demands(&pod_sets, Some(&assignments))?;
            let fit = self.gate_node_devices(&assignments, &demands);
            if !fit.verdict.is_ready() {
                return Ok(Outcome::Retry {
                    message: fit.verdict.message,
                });
            }
            charges = match planned_charges(&fit, &demands, self) {
                Ok(c) => c,
                Err(e) => return Ok(unplaceable(e)),
            };
        }
        if self.joint_gates(w) {
            return Ok(self.hold_for_barrier(w, &queue_name, quota, charges));
        }
        if let Err(e) = self.apply(&charges) {
            return Ok(unplaceable(e));
        }
        self.reserve(&key, &queue_name, quota, charges);
        Ok(Outcome::Admitted)
    }

    /// A replica that passed gates 2 and 3 reserves its quota with the joint check Pending;
    /// when its reservation completes the set, the barrier opens for every held replica of
    /// the deployment (`jointVerdict` Ready; `jointSiblings` re-judges the siblings), else
    /// every held sibling's message is re-judged. The cards gate 3 budgeted are charged now:
    /// the operator's gate 3 counts a Workload holding quota with its check Ready as in
    /// flight (admission.md §6.5), so later Workloads are judged without them, and the model
    /// charges in-flight cards at once.
    fn hold_for_barrier(
        &mut self,
        w: &Workload,
        queue: &str,
        quota: Vec<QuotaUse>,
        charges: Vec<CardCharge>,
    ) -> Outcome {
        let key = workload_key(w);
        if let Err(e) = self.apply(&charges) {
            return unplaceable(e);
        }
        self.reserve(&key, queue, quota, charges);
        self.joint.insert(
            key.clone(),
            JointMember {
                workload: w.clone(),
                phase: JointPhase::Held,
                message: String::new(),
            },
        );
        self.rejudge_deployment(w);
        match self.joint.get(&key) {
            Some(m) if m.phase == JointPhase::Held => Outcome::Held {
                message: m.message.clone(),
            },
            _ => Outcome::Admitted,
        }
    }

    /// Records a reservation: quota on the queue, and a hold.
    fn reserve(&mut self, key: &str, queue: &str, quota: Vec<QuotaUse>, charges: Vec<CardCharge>) {
        for q in &quota {
            *self
                .reserved
                .entry((queue.to_string(), q.flavor.clone(), q.resource.clone()))
                .or_default() += q.amount;
        }
        self.holds.insert(
            key.to_string(),
            Hold {
                queue: queue.to_string(),
                quota,
                charges,
            },
        );
    }

    /// The joint check's verdict on the deployment `w` is a replica of, from every replica
    /// it tracks (`admission::joint::joint_verdict`); `None` outside a deployment.
    pub fn deployment_verdict(&self, w: &Workload) -> Option<JointVerdict> {
        let d = w.deployment.as_ref()?;
        let slot = |role: &str, ordinal: u32| {
            let found = self.joint.values().find(|m| {
                m.workload.namespace == w.namespace
                    && m.workload.deployment.as_ref().is_some_and(|o| {
                        o.deployment == d.deployment && o.role == role && o.ordinal == ordinal
                    })
            });
            match found.map(|m| m.phase) {
                None => SlotState::Absent,
                Some(JointPhase::Waiting | JointPhase::Parked) => SlotState::Waiting,
                Some(JointPhase::Held | JointPhase::Admitted) => SlotState::Reserved,
            }
        };
        Some(joint_verdict(
            &d.roles,
            self.cluster.settings.joint_grouping,
            slot,
        ))
    }

    /// The held replicas of `w`'s deployment, by key.
    fn held_siblings(&self, w: &Workload) -> Vec<String> {
        let Some(d) = w.deployment.as_ref() else {
            return Vec::new();
        };
        self.joint
            .iter()
            .filter(|(_, m)| {
                m.phase == JointPhase::Held
                    && m.workload.namespace == w.namespace
                    && m.workload
                        .deployment
                        .as_ref()
                        .is_some_and(|o| o.deployment == d.deployment)
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Re-judges every held replica of `w`'s deployment: Ready admits them all; Pending
    /// writes the verdict's message on each. Returns the replicas admitted.
    fn rejudge_deployment(&mut self, w: &Workload) -> Vec<String> {
        let Some(verdict) = self.deployment_verdict(w) else {
            return Vec::new();
        };
        let held = self.held_siblings(w);
        if !verdict.ready {
            for k in &held {
                if let Some(m) = self.joint.get_mut(k) {
                    m.message = verdict.message.clone();
                }
            }
            return Vec::new();
        }
        for k in &held {
            if let Some(m) = self.joint.get_mut(k) {
                m.phase = JointPhase::Admitted;
                m.message = verdict.message.clone();
            }
        }
        held
    }

    /// The joint check's bound passes for deployment `deployment` in `namespace`
    /// (`heldPast` + `park`): when its verdict is Pending and settled, every held replica is
    /// parked — deactivated, its reservation and in-flight cards released, the park message
    /// on its check.
    /// Returns the parked Workloads (none when the set is Ready or still assembling).
    pub fn joint_timeout(&mut self, namespace: &str, deployment: &str) -> Vec<String> {
        let Some(first) = self
            .joint
            .values()
            .find(|m| {
                m.workload.namespace == namespace
                    && m.workload
                        .deployment
                        .as_ref()
                        .is_some_and(|d| d.deployment == deployment)
            })
            .map(|m| m.workload.clone())
        else {
            return Vec::new();
        };
        let Some(verdict) = self.deployment_verdict(&first) else {
            return Vec::new();
        };
        if !should_park(&verdict, true) {
            return Vec::new();
        }
        let held = self.held_siblings(&first);
        let message = parked_message(&verdict.message);
        for k in &held {
            // The cards are still present (a card that left took its hold with it), so the
            // release is exact; one that cannot be released is left as it is.
            let _ = self.finish_hold(k);
            if let Some(m) = self.joint.get_mut(k) {
                m.phase = JointPhase::Parked;
                m.message = message.clone();
            }
        }
        held
    }

    /// Records `w` as a replica the joint check parked earlier (deactivated, holding nothing),
    /// with the message its check carries: what a reader rebuilding the state from the
    /// cluster's Workloads (the twin's operator) knows of a Workload with `spec.active=false`.
    /// It counts as waiting in its deployment's verdict, as after [`Self::joint_timeout`].
    pub fn restore_parked(&mut self, w: &Workload, message: String) {
        self.joint.insert(
            workload_key(w),
            JointMember {
                workload: w.clone(),
                phase: JointPhase::Parked,
                message,
            },
        );
    }

    /// The joint check's state on a Workload it tracks: `None` outside the barrier (Ready at
    /// once there: [`NOT_A_GROUP_MESSAGE`]).
    pub fn joint_member(&self, namespace: &str, name: &str) -> Option<&JointMember> {
        self.joint.get(&format!("{namespace}/{name}"))
    }

    /// The `gpustack-model-deployment-joint` entry the check writes on `w` now
    /// (model_deployment_joint_admission.go `Reconcile`): none when its queue does not
    /// reference the check or it holds no quota reservation (nothing to confirm yet, or
    /// parked); Ready at once outside the barrier; for a replica, Pending with the barrier's
    /// message while held, Ready once its set opened.
    pub fn joint_entry(&self, w: &Workload) -> Option<crate::admission::Verdict> {
        use crate::admission::{CheckState, Verdict};
        let key = workload_key(w);
        let referenced = self
            .queue_of(w)
            .is_some_and(|q| q.admission_checks.iter().any(|c| c == JOINT_CHECK));
        if !referenced || !self.holds.contains_key(&key) {
            return None;
        }
        Some(match self.joint.get(&key) {
            None => Verdict::ready(NOT_A_GROUP_MESSAGE.to_string()),
            Some(m) if m.phase == JointPhase::Admitted => Verdict::ready(m.message.clone()),
            Some(m) => Verdict {
                state: CheckState::Pending,
                message: m.message.clone(),
            },
        })
    }

    /// Finishes (deletes) a Workload: an admitted or held one releases its charges (newest
    /// first) and its quota; a tracked replica that reserves nothing is simply forgotten; a
    /// deployment's held siblings are re-judged.
    pub fn finish(&mut self, namespace: &str, name: &str) -> Result<(), HoldError> {
        let key = format!("{namespace}/{name}");
        if let Some(m) = self.joint.remove(&key) {
            if self.holds.contains_key(&key) {
                self.finish_hold(&key)?;
            }
            self.rejudge_deployment(&m.workload);
            return Ok(());
        }
        self.finish_hold(&key)
    }

    /// Releases an admitted Workload's charges (newest first) and its quota.
    fn finish_hold(&mut self, key: &str) -> Result<(), HoldError> {
        let hold = self
            .holds
            .remove(key)
            .ok_or_else(|| HoldError::NotAdmitted {
                key: key.to_string(),
            })?;
        for c in hold.charges.iter().rev() {
            self.change_card(c, release)?;
        }
        for q in hold.quota {
            let k = (hold.queue.clone(), q.flavor, q.resource);
            if let Some(v) = self.reserved.get_mut(&k) {
                *v -= q.amount;
                if *v == 0 {
                    self.reserved.remove(&k);
                }
            }
        }
        Ok(())
    }

    /// Whether gate 3 judges `w` at all: its queue references the `gpustack-node-devices`
    /// check, the only Workloads that check's controller answers (research/admission.md
    /// §6.1; a CPU pool's queue carries no such check).
    pub fn gate_three_judges(&self, w: &Workload) -> bool {
        self.queue_of(w)
            .is_some_and(|q| q.admission_checks.iter().any(|c| c == NODE_DEVICES_CHECK))
    }

    /// The ClusterQueue behind the Workload's LocalQueue in its namespace.
    fn queue_of(&self, w: &Workload) -> Option<&ClusterQueue> {
        let lq = self
            .derived
            .local_queues
            .iter()
            .find(|l| l.namespace == w.namespace && l.name == w.queue)?;
        self.derived
            .cluster_queues
            .iter()
            .find(|q| q.name == lq.cluster_queue)
    }

    /// Gate 1 on every pod set, in the API server's order: the mutating webhook folds (reading
    /// the fronting InstanceType only where a fold needs it), then the validating webhook
    /// judges the folded Pod; pod.go `Default`, `ValidateCreate`. A rejection carries the
    /// server's message for a Pod named after the Workload. Each pod set carries the required
    /// node affinity its Pods and its Workload are given (the Pod webhook's static shared pin,
    /// the Workload webhook's fit pins, which change nothing when the InstanceType is unknown).
    fn gate_pod_webhook(&self, w: &Workload) -> PodWebhookVerdict {
        let fronting = fronting_instance_type(&self.derived.instance_types, &w.queue);
        match fronting {
            // The verdict reads the Workload and the InstanceType fronting its queue, nothing
            // else: a store serves it again for the same two.
            Ok(it) => self
                .deriver
                .gate_step(<dyn StepStore>::pod_webhook, &(w, it), &|| {
                    admit_pod_sets(w, &fronting)
                }),
            Err(_) => admit_pod_sets(w, &fronting),
        }
    }

    /// Gate 2 (R6–R7; Kueue TryNextFlavor; corrections.md 16): each pod set takes the first
    /// flavor, in queue order, whose free quota covers every resource it asks and, on a
    /// topology-aware flavor, whose nodes host every one of its Pods whole
    /// ([`tas_place_pod_set`]); a flavor that fails either is passed over. A held queue admits
    /// nothing. Pending carries Kueue's reasons, every flavor's.
    fn gate_quota(
        &self,
        queue: &ClusterQueue,
        pod_sets: &[AdmittedPodSet],
    ) -> Result<QuotaGate, ModelError> {
        if queue.stop_policy != StopPolicy::None {
            return Ok(QuotaGate::Pending {
                reason: format!(
                    "ClusterQueue {} is inactive (stopPolicy {})",
                    queue.name,
                    queue.stop_policy.name()
                ),
            });
        }
        let mut taken: BTreeMap<(String, String), i64> = BTreeMap::new();
        let mut placed: BTreeMap<String, Amounts> = BTreeMap::new();
        let mut assignments = Vec::new();
        let mut quota = Vec::new();
        for AdmittedPodSet {
            pod_set: ps,
            required,
        } in pod_sets
        {
            let requests = pod_requests(&ps.containers)?;
            let asked = pod_set_usage_of(ps, &requests)?;
            let group = queue.resource_groups.first();
            let covered: Vec<&Text> = group
                .map(|g| g.covered_resources.iter().collect())
                .unwrap_or_default();
            let asked: Vec<(String, i64)> = asked
                .into_iter()
                .filter(|(r, _)| covered.iter().any(|c| c.as_str() == r))
                .collect();
            if asked.is_empty() {
                continue;
            }
            let pod = tas_pod_requests(&ps.containers, &requests)?;
            let flavors = group.map(|g| g.flavors.as_slice()).unwrap_or_default();
            let mut reasons: Vec<String> = Vec::new();
            let mut chosen = None;
            for f in flavors {
                let verdicts: Vec<QuotaVerdict> = asked
                    .iter()
                    .map(|(r, amount)| {
                        let used = amount_under(&self.reserved, |(q, fl, res)| {
                            queue.name == q.as_str() && f.flavor == fl.as_str() && res == r
                        }) + amount_under(&taken, |(fl, res)| {
                            f.flavor == fl.as_str() && res == r
                        });
                        quota_verdict(r, &f.flavor, used, *amount, nominal(r, f.nominal_quota))
                    })
                    .collect();
                let short: Vec<String> = verdicts
                    .into_iter()
                    .filter_map(|v| match v {
                        QuotaVerdict::Pending { reason, .. } => Some(reason),
                        QuotaVerdict::Admit => None,
                    })
                    .collect();
                if !short.is_empty() {
                    reasons.extend(short);
                    continue;
                }
                match self.tas_hosts(&f.flavor, &placed, &pod, ps.count, required) {
                    Ok(hosts) => {
                        chosen = Some((f.flavor.to_string(), hosts));
                        break;
                    }
                    Err(m) => reasons.push(m.miss.message(&m.topology)),
                }
            }
            let Some((flavor, hosts)) = chosen else {
                return Ok(QuotaGate::Pending {
                    reason: unassignable_reason(queue, ps, &reasons),
                });
            };
            for h in &hosts {
                add_pods(placed.entry(h.hostname.clone()).or_default(), &pod, h.pods);
            }
            for (r, amount) in &asked {
                *taken.entry((flavor.clone(), r.clone())).or_default() += amount;
                quota.push(QuotaUse {
                    flavor: flavor.clone(),
                    resource: r.clone(),
                    amount: *amount,
                });
            }
            assignments.push(PodSetAssignment {
                pod_set: ps.name.clone(),
                flavors: asked
                    .iter()
                    .map(|(r, _)| (r.clone(), flavor.clone()))
                    .collect(),
                hosts,
            });
        }
        Ok(QuotaGate::Assigned { assignments, quota })
    }

    /// Gate 2's topology-aware half for one flavor: Kueue's hostname-level assignment of the
    /// pod set's `count` Pods over the flavor's nodes ([`tas_place_pod_set`]), or the reason it
    /// has none. A flavor without a `topologyName` (the E2 era) is not topology-aware: no
    /// assignment, and gate 3 judges the flavor's whole pool.
    fn tas_hosts(
        &self,
        flavor: &str,
        placed: &BTreeMap<String, Amounts>,
        pod: &Amounts,
        count: u32,
        required: &[NodeSelectorRequirement],
    ) -> Result<Vec<HostPods>, TopologyMiss> {
        let Some(rf) = self
            .derived
            .resource_flavors
            .iter()
            .find(|rf| rf.name == flavor)
        else {
            return Ok(Vec::new());
        };
        let Some(topology) = rf.topology_name.as_deref() else {
            return Ok(Vec::new());
        };
        let nodes = self.tas_nodes(rf);
        tas_place_pod_set(&nodes, placed, pod, count, required)
            .map(|hosts| {
                hosts
                    .into_iter()
                    .map(|h| HostPods {
                        hostname: h.hostname,
                        pods: h.pods,
                    })
                    .collect()
            })
            .map_err(|miss| TopologyMiss {
                topology: topology.to_string(),
                miss,
            })
    }

    /// The nodes a flavor selects (its `nodeLabels` on the node's labels) as Kueue's TAS
    /// sees them ([`tas_node`]). A node's view reads the node and its derived labels, nothing
    /// else: a store serves it again for the same two.
    fn tas_nodes(&self, rf: &ResourceFlavor) -> Vec<TasNode> {
        self.cluster
            .nodes
            .iter()
            .zip(&self.derived.nodes)
            .filter(|(_, d)| selector_matches(&rf.node_labels, &d.labels))
            .map(|(n, d)| {
                self.deriver
                    .gate_step(<dyn StepStore>::tas_node, &(n, &d.labels), &|| {
                        tas_node(n, &d.labels)
                    })
            })
            .collect()
    }

    /// Gate 3 (R12–R20): the assigned flavors' Devices, the Workload's demands, the fit.
    fn gate_node_devices(&self, assignments: &[PodSetAssignment], demands: &[FamilyDemand]) -> Fit {
        let refs: BTreeSet<String> = assignments
            .iter()
            .flat_map(|a| a.flavors.values().cloned())
            .collect();
        let flavors: Vec<FlavorObject> = self
            .derived
            .resource_flavors
            .iter()
            .filter(|rf| refs.contains(rf.name.as_str()))
            .map(|rf| FlavorObject {
                name: rf.name.to_string(),
                node_labels: rf.node_labels.clone(),
            })
            .collect();
        let devices: Vec<NodeDevices> = self
            .cluster
            .nodes
            .iter()
            .zip(&self.derived.nodes)
            .filter_map(|(n, d)| {
                Some(NodeDevices {
                    name: n.name.clone(),
                    hostname: node_hostname(n),
                    labels: d.devices_labels.clone()?,
                    devices: n.devices.clone()?,
                })
            })
            .collect();
        let pool = candidate_devices(&refs, &flavors, &devices);
        node_devices_fit(&pool, &[], demands)
    }

    /// Charges every card, all or nothing (gate 5 under its per-node mutex).
    /// A charge that fails changes nothing; [`AdmissionState::change_card`] writes only the
    /// charged card's ledger row and its instances, so those are what the charges before it
    /// put back, last first (a card charged twice unwinds in order).
    fn apply(&mut self, charges: &[CardCharge]) -> Result<(), HoldError> {
        let mut undo = Vec::with_capacity(charges.len());
        for c in charges {
            let key = (c.node.clone(), c.card.clone());
            let row = self
                .card_mut(&c.node, &c.accelerator_key, &c.card)
                .and_then(|card| card.ledger.clone());
            let instances = self.instances.get(&key).cloned();
            if let Err(e) = self.change_card(c, charge) {
                for (c, key, row, instances) in undo.into_iter().rev() {
                    self.put_back(c, key, row, instances);
                }
                return Err(e);
            }
            undo.push((c, key, row, instances));
        }
        Ok(())
    }

    /// Restores one charged card's ledger row and instances as they were before the charge.
    fn put_back(
        &mut self,
        c: &CardCharge,
        key: (String, String),
        row: Option<crate::devices::Ledger>,
        instances: Option<Vec<Instance>>,
    ) {
        if let Some(card) = self.card_mut(&c.node, &c.accelerator_key, &c.card) {
            card.ledger = row;
        }
        match instances {
            Some(kept) => self.instances.insert(key, kept),
            None => self.instances.remove(&key),
        };
    }

    /// Applies `op` to one card's ledger and writes the row and instances back.
    fn change_card(
        &mut self,
        c: &CardCharge,
        op: impl Fn(&CardLedger, &Charge) -> Result<CardLedger, ChargeError>,
    ) -> Result<(), HoldError> {
        let key = (c.node.clone(), c.card.clone());
        let instances = self.instances.get(&key).cloned().unwrap_or_default();
        let card = self
            .card_mut(&c.node, &c.accelerator_key, &c.card)
            .ok_or_else(|| HoldError::CardGone {
                node: c.node.clone(),
                accelerator_key: c.accelerator_key.clone(),
                card: c.card.clone(),
            })?;
        let mut ledger = CardLedger::from_card(card).ok_or_else(|| HoldError::NoLedgerRow {
            node: c.node.clone(),
            card: c.card.clone(),
        })?;
        ledger.instances = instances;
        let next = op(&ledger, &c.charge).map_err(|source| HoldError::Charge {
            node: c.node.clone(),
            card: c.card.clone(),
            source,
        })?;
        card.ledger = Some(next.row);
        if next.instances.is_empty() {
            self.instances.remove(&key);
        } else {
            self.instances.insert(key, next.instances);
        }
        Ok(())
    }

    fn card_mut(&mut self, node: &str, accelerator_key: &str, card: &str) -> Option<&mut Card> {
        self.cluster
            .nodes
            .iter_mut()
            .find(|n| n.name == node)?
            .devices
            .as_mut()?
            .groups
            .iter_mut()
            .find(|g| g.has_accelerator_key(accelerator_key))?
            .cards
            .iter_mut()
            .find(|c| c.id == card)
    }

    fn card(&self, node: &str, accelerator_key: &str, card: &str) -> Option<CardLedger> {
        let n = self.cluster.nodes.iter().find(|n| n.name == node)?;
        let c = n
            .devices
            .as_ref()?
            .groups
            .iter()
            .find(|g| g.has_accelerator_key(accelerator_key))?
            .cards
            .iter()
            .find(|c| c.id == card)?;
        let mut ledger = CardLedger::from_card(c)?;
        ledger.instances = self
            .instances
            .get(&(node.to_string(), card.to_string()))
            .cloned()
            .unwrap_or_default();
        Some(ledger)
    }
}

/// Gate 2's pending reason for a Workload whose LocalQueue is not there.
fn no_local_queue(w: &Workload) -> String {
    format!("LocalQueue {}/{} doesn't exist", w.namespace, w.queue)
}

/// A Ready verdict the ledger could not honour: reported, not hidden.
fn unplaceable(e: HoldError) -> Outcome {
    Outcome::Unplaceable {
        reason: e.to_string(),
    }
}

/// Kueue's pending message when no flavor took a pod set: every flavor's reasons in queue
/// order (each short resource, or the topology's), joined by ", " after "couldn't assign
/// flavors to pod set <name>: " (Kueue's flavor assigner; TryNextFlavor tries them all).
fn unassignable_reason(queue: &ClusterQueue, ps: &PodSet, reasons: &[String]) -> String {
    if reasons.is_empty() {
        return format!("ClusterQueue {} has no flavor for {}", queue.name, ps.name);
    }
    format!(
        "couldn't assign flavors to pod set {}: {}",
        ps.name,
        reasons.join(", ")
    )
}

/// A flavor whose topology cannot host a pod set's Pods (gate 2 passes it over).
#[derive(Clone, Debug)]
struct TopologyMiss {
    topology: String,
    miss: TasMiss,
}

/// Gate 1 (the pod webhooks) on each of `w`'s pod sets, given the InstanceType fronting its
/// queue (or why none does): the pod sets as admitted, or the first refusal.
fn admit_pod_sets(
    w: &Workload,
    fronting: &Result<&InstanceType, PodRejection>,
) -> PodWebhookVerdict {
    w.pod_sets
        .iter()
        .map(|ps| {
            let init: Vec<(Container, bool)> = ps
                .containers
                .iter()
                .filter(|c| c.init)
                .map(|c| (c.clone(), false))
                .collect();
            let app: Vec<Container> = ps.containers.iter().filter(|c| !c.init).cloned().collect();
            let containers = pod_containers(&init, &app);
            let rejected = |e: PodRejection| PodRejected {
                message: e.message_for(&w.name),
            };
            let folded = fold_pod_requests(&containers, fronting).map_err(rejected)?;
            validate_pod_requests(&folded.containers).map_err(rejected)?;
            let pod_set = PodSet {
                containers: folded.containers.into_iter().map(|c| c.container).collect(),
                ..ps.clone()
            };
            let mut required = folded.node_requirements;
            let pins = fronting
                .as_ref()
                .map(|it| workload_fit_pins(&w.queue, it, &pod_set))
                .unwrap_or_default();
            for pin in pins {
                if !required.contains(&pin) {
                    required.push(pin);
                }
            }
            Ok(AdmittedPodSet { pod_set, required })
        })
        .collect()
}

/// Gate 1's verdict on a Workload: its pod sets as admitted, or the refusal.
pub type PodWebhookVerdict = Result<Vec<AdmittedPodSet>, PodRejected>;

/// A pod set after gate 1: its folded Pods and the required node affinity they carry.
#[derive(Clone, Debug)]
pub struct AdmittedPodSet {
    pod_set: PodSet,
    required: Vec<NodeSelectorRequirement>,
}

/// The Workload webhook's fit pins for one pod set (admission.md §4.5; the
/// `workload-fit-affinity` setting at its default, on): on an operator queue
/// (`gpustack-fnv64-…`) fronted by an InstanceType with an accelerator group, a logical slice
/// of U units per card asks `sliced-max-free-units.fit.gpustack.ai/<group> Gt U-1`, a shared
/// request of N ≥ 2 cards `shared-free-cards.fit.gpustack.ai/<group> Gt N-1`; anything else
/// (or a demand that cannot be read: the webhook never denies) asks nothing.
fn workload_fit_pins(queue: &str, it: &InstanceType, ps: &PodSet) -> Vec<NodeSelectorRequirement> {
    let group = &it.spec.accelerator_group;
    if !queue.starts_with(LOCAL_QUEUE_PREFIX) || group.is_empty() {
        return Vec::new();
    }
    let Ok(demand) = pod_set_fit_demand(ps) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if demand.sliced_units > 0 {
        out.push(fit_pin(
            group,
            FitQuestion::Slice(i64::from(demand.sliced_units)),
        ));
    }
    if let Some(cards) = u32::try_from(demand.shared_cards).ok().filter(|n| *n >= 2) {
        out.push(fit_pin(group, FitQuestion::Shared(cards)));
    }
    out
}

/// One Pod's whole requests as Kueue's TAS counts them against a node: every accelerator key
/// (the visibility key aside: the model publishes no allocatable for it) and `cpu` in
/// millicores, rounded up (docs/modules/topology/scheduling.md: "the full PodSet requests,
/// including CPU, memory, and GPUStack resources"). The model's nodes carry no memory
/// capacity, so memory is not counted.
fn tas_pod_requests(
    containers: &[Container],
    requests: &BTreeMap<String, Quantity>,
) -> Result<Amounts, ModelError> {
    let mut pod: Amounts = pod_accelerator_requests(containers)?
        .into_iter()
        .filter(|(k, _)| family_of(k) != Family::Visibility)
        .collect();
    if let Some(cpu) = requests.get(CPU) {
        let millis = i64::try_from((cpu.micro().max(0) + 999) / 1000)
            .map_err(|_| ModelError::invalid(CPU, "out of range"))?;
        pod.insert(CPU.into(), millis);
    }
    Ok(pod)
}

/// Partition instances already carved on the cards of a shape given by counts only: each
/// partitioned card's layout reconstructed from its row (a card whose row admits no layout is
/// left without, and a charge on it will say so).
fn carved_instances(cluster: &Cluster) -> BTreeMap<(String, String), Vec<Instance>> {
    let mut out = BTreeMap::new();
    for node in &cluster.nodes {
        for card in node
            .devices
            .iter()
            .flat_map(|d| d.groups.iter().flat_map(|g| &g.cards))
        {
            let Some(ledger) =
                CardLedger::from_card(card).filter(|l| l.capability.is_partitioned())
            else {
                continue;
            };
            if let Some(instances) = reconstruct_instances(&ledger).filter(|i| !i.is_empty()) {
                out.insert((node.name.clone(), card.id.clone()), instances);
            }
        }
    }
    out
}

/// A node's `kubernetes.io/hostname` (the kubelet defaults it to the node name).
fn node_hostname(n: &crate::cluster::Node) -> String {
    n.labels
        .get(HOSTNAME)
        .map_or_else(|| n.name.clone(), Text::to_string)
}

/// One node as Kueue's TAS sees it, given its derived `labels`: those labels with the fit
/// labels the ledger stands for now (R28; the Worker keeps them current), free accelerator keys
/// after the ledger's holds, `cpu` in millicores.
fn tas_node(n: &crate::cluster::Node, labels: &crate::labels::Labels) -> TasNode {
    let fit = desired_fit_labels(node_is_managed(labels), n.devices.as_ref());
    let mut free = n
        .devices
        .as_ref()
        .map(node_free_accelerators)
        .unwrap_or_default();
    free.insert(CPU.into(), i64::try_from(n.cpu_millis).unwrap_or(i64::MAX));
    TasNode {
        name: n.name.clone(),
        hostname: node_hostname(n),
        labels: labels.with_replaced(is_fit_label_key, &filter_fit_labels(&fit)),
        free,
    }
}

/// The quota a reservation of `given` holds: each pod set's usage of the resources its
/// assignment names, on the flavor it names (how Kueue books `podSetAssignments`).
fn reserved_quota(
    pod_sets: &[AdmittedPodSet],
    given: &[PodSetAssignment],
) -> Result<Vec<QuotaUse>, ModelError> {
    let mut quota = Vec::new();
    for a in given {
        let Some(ps) = pod_sets.iter().find(|p| p.pod_set.name == a.pod_set) else {
            continue;
        };
        for (resource, amount) in pod_set_usage(&ps.pod_set)? {
            if let Some(flavor) = a.flavors.get(&resource) {
                quota.push(QuotaUse {
                    flavor: flavor.clone(),
                    resource,
                    amount,
                });
            }
        }
    }
    Ok(quota)
}

/// The quota a pod set uses per resource, in each resource's quota unit: credits as Kueue's
/// transformations fold them (R7), `cpu` in millicores.
pub fn pod_set_usage(ps: &PodSet) -> Result<BTreeMap<String, i64>, ModelError> {
    pod_set_usage_of(ps, &pod_requests(&ps.containers)?)
}

/// [`pod_set_usage`] from one Pod's effective requests ([`pod_requests`] of the pod set's
/// containers): gate 2 reads them for the quota and for TAS, and parses them once.
fn pod_set_usage_of(
    ps: &PodSet,
    pod: &BTreeMap<String, Quantity>,
) -> Result<BTreeMap<String, i64>, ModelError> {
    let mut usage = pod_set_credits_of(ps, credits_of_requests(pod)?)?;
    if let Some(cpu) = pod.get(CPU) {
        let millis = i64::try_from(cpu.micro().div_euclid(1000))
            .map_err(|_| ModelError::invalid(format!("{}.cpu", ps.name), "out of range"))?;
        usage.insert(CPU.into(), millis.saturating_mul(i64::from(ps.count)));
    }
    Ok(usage)
}

/// The amount a quota map holds under the one key `is_key` picks, 0 if none: a walk over the
/// map's few entries, where `get` needed the key built as owned strings (three allocations per
/// flavor and resource gate 2 weighs).
fn amount_under<K>(map: &BTreeMap<K, i64>, is_key: impl Fn(&K) -> bool) -> i64 {
    map.iter().find(|(k, _)| is_key(k)).map_or(0, |(_, v)| *v)
}

/// A flavor's nominal quota in the unit [`pod_set_usage`] counts: cores become millicores.
fn nominal(resource: &str, quota: i64) -> i64 {
    if resource == CPU {
        quota.saturating_mul(1000)
    } else {
        quota
    }
}

/// Gates 4–5 on the cards gate 3 budgeted: each take becomes ledger charges, tried in order on
/// a scratch copy of the cards so a partition instance lands where earlier ones left room.
fn planned_charges(
    fit: &Fit,
    demands: &[FamilyDemand],
    state: &AdmissionState,
) -> Result<Vec<CardCharge>, HoldError> {
    let host_to_node: BTreeMap<String, String> = state
        .cluster
        .nodes
        .iter()
        .map(|n| (node_hostname(n), n.name.clone()))
        .collect();
    let mut scratch: BTreeMap<(String, String), CardLedger> = BTreeMap::new();
    let mut out = Vec::new();
    for take in &fit.takes {
        let slot = fit.cards.get(take.card).ok_or(HoldError::UnlistedCard)?;
        let demand = demands.get(take.demand).ok_or(HoldError::UnknownDemand)?;
        let node = host_to_node
            .get(&slot.hostname)
            .cloned()
            .unwrap_or_else(|| slot.hostname.clone());
        let card = match scratch.entry((node.clone(), slot.id.clone())) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => v.insert(
                state
                    .card(&node, &slot.accelerator_key, &slot.id)
                    .ok_or_else(|| HoldError::NoLedgerRow {
                        node: node.clone(),
                        card: slot.id.clone(),
                    })?,
            ),
        };
        for ch in charges_of(&take.taken, demand, &slot.manufacturer) {
            let ch = match ch {
                Planned::Fixed(c) => c,
                Planned::Partition(profile) => Charge::Partition(Instance {
                    placement: lowest_free_placement(card, &profile).ok_or_else(|| {
                        HoldError::NoFreePlacement {
                            node: node.clone(),
                            card: slot.id.clone(),
                            profile: profile.clone(),
                        }
                    })?,
                    profile,
                }),
            };
            *card = charge(card, &ch).map_err(|source| HoldError::Charge {
                node: node.clone(),
                card: slot.id.clone(),
                source,
            })?;
            out.push(CardCharge {
                node: node.clone(),
                accelerator_key: slot.accelerator_key.clone(),
                card: slot.id.clone(),
                charge: ch,
            });
        }
    }
    Ok(out)
}

/// A charge to make, the partition placement still to choose.
enum Planned {
    Fixed(Charge),
    Partition(String),
}

/// The ledger charges one card's budget stands for (R10): whole → Exclusive, each share → a
/// Share, each slice → a Slice of the demand's units, each placement → one instance of the
/// demand's profile in the Devices record's (vendor) spelling.
fn charges_of(taken: &CardBudget, demand: &FamilyDemand, manufacturer: &str) -> Vec<Planned> {
    let mut out = Vec::new();
    if taken.whole {
        out.push(Planned::Fixed(Charge::Exclusive));
    }
    for _ in 0..taken.shares {
        out.push(Planned::Fixed(Charge::Share));
    }
    if demand.family == Family::Sliced {
        for _ in 0..taken.slices {
            out.push(Planned::Fixed(Charge::Slice {
                units: demand.units_per_card,
            }));
        }
    }
    for _ in 0..taken.placements {
        out.push(Planned::Partition(vendor_profile_name(
            manufacturer,
            &demand.profile,
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walkthrough's first card of its first node with Devices, as a charge target.
    fn first_card(s: &AdmissionState) -> (String, String, String) {
        let node = s
            .cluster
            .nodes
            .iter()
            .find(|n| n.devices.is_some())
            .expect("the walkthrough has a node with Devices");
        let group = &node.devices.as_ref().unwrap().groups[0];
        (
            node.name.clone(),
            group.accelerator_key(),
            group.cards[0].id.clone(),
        )
    }

    fn exclusive(node: &str, a_key: &str, card: &str) -> CardCharge {
        CardCharge {
            node: node.into(),
            accelerator_key: a_key.into(),
            card: card.into(),
            charge: Charge::Exclusive,
        }
    }

    #[test]
    fn a_refused_charge_leaves_every_card_as_it_was() {
        let mut s = AdmissionState::new(crate::examples::walkthrough());
        let (node, a_key, card) = first_card(&s);
        let before = (s.cluster.clone(), s.instances.clone());
        // The first charge succeeds; the second wants the same card whole again and is refused,
        // and so is one on a card that is not there.
        for second in [
            exclusive(&node, &a_key, &card),
            exclusive(&node, &a_key, "no-such-card"),
        ] {
            let charges = [exclusive(&node, &a_key, &card), second];
            assert!(s.apply(&charges).is_err());
            assert_eq!((&s.cluster, &s.instances), (&before.0, &before.1));
        }
        // And the first alone does charge it.
        s.apply(&[exclusive(&node, &a_key, &card)]).unwrap();
        assert_ne!(s.cluster, before.0);
    }
}
