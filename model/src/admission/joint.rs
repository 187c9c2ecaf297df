//! The `gpustack-model-deployment-joint` AdmissionCheck: the barrier that admits the roles of
//! one ModelDeployment as a set (research/corrections.md 9, 15; cases.md CASE 50, 68, 106).
//!
//! Facts from the operator's pkg/worker/controllers/worker/model_deployment_joint_admission.go
//! (newest indexed revision, the one that counts replicas and names roles), rewritten here:
//! - the check answers only Ready or Pending, never Retry, never Rejected (a Retry would evict
//!   the reservation a sibling waits to observe);
//! - a Workload that is not a replica of a deployment with two or more roles is Ready at once;
//! - otherwise Ready once every declared replica of every role holds a quota reservation (the
//!   reservation, not the admission, is what is observed); Pending naming the waiting roles
//!   until then, each reserved replica keeping its quota;
//! - a deployment short of its own replicas is "assembling" and is never parked; a settled
//!   deployment Pending past the bound (30 min of its own check's lastTransitionTime) is
//!   parked: the message carries the marker `parked rather than held` and the Workload is
//!   deactivated (`spec.active=false`), so Kueue drops its reservation;
//! - a sibling's reservation re-judges every other replica of the deployment (`jointSiblings`).
//!
//! The model has no clock: the bound passing is an explicit event (`Event::JointTimeout`).

use serde::{Deserialize, Serialize};

use crate::workload::Workload;

/// The phrase a park message carries (`_JointAdmissionParkedMarker`); the ModelDeployment's
/// QuotaReserved reason becomes `Parked` when it reads it.
pub const PARKED_MARKER: &str = "parked rather than held";

/// The bound a settled, Pending deployment may wait before it is parked
/// (`_JointAdmissionInfeasibleAfter`, 30 minutes, printed as Go prints a duration).
pub const INFEASIBLE_AFTER: &str = "30m0s";

/// The same bound in seconds, for a reader with a clock (the twin's virtual one).
pub const INFEASIBLE_AFTER_SECONDS: u64 = 30 * 60;

/// Whether a check Pending for `held_seconds` (since its own `lastTransitionTime`) is held
/// past the bound (`heldPast`: strictly longer than the bound; reaching it is not enough).
pub fn held_past(held_seconds: u64) -> bool {
    held_seconds > INFEASIBLE_AFTER_SECONDS
}

/// Ready for a Workload outside the barrier (`Reconcile`, the not-multi-role branch).
pub const NOT_A_GROUP_MESSAGE: &str =
    "nothing to wait for: this workload is not one replica of a multi-role model deployment";

/// One role a ModelDeployment declares: its name, replica count and InstanceType.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct DeclaredRole {
    pub name: String,
    pub replicas: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub instance_type: String,
}

/// The ModelDeployment replica a Workload stands for. The operator marks a replica's Pod with
/// `app.kubernetes.io/instance` (the deployment), `app.kubernetes.io/component` (the role) and
/// a per-replica `kueue.x-k8s.io/pod-group-name`, and owns it by a controller reference; the
/// check walks Workload → Pod → ModelDeployment and reads the deployment's declared roles. The
/// model carries the declared roles on the replica instead of on a deployment object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct DeploymentReplica {
    /// The ModelDeployment's name (same namespace as the Workload).
    pub deployment: String,
    pub role: String,
    pub ordinal: u32,
    /// Every role the deployment declares, in spec order.
    pub roles: Vec<DeclaredRole>,
}

/// Where one declared replica slot stands, as the check reads it from the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SlotState {
    /// No live Pod (and so no Workload) for this ordinal yet: the role is still assembling.
    Absent,
    /// A Workload exists and holds no quota reservation (waiting at gate 2, evicted, or
    /// deactivated).
    Waiting,
    /// Its Workload holds a quota reservation (admitted or held by a check).
    Reserved,
}

/// Which revision of the barrier the model follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JointGrouping {
    /// Newest: one judgement per declared (role, ordinal); the lists name roles
    /// (`jointVerdict`, "THE LISTS NAME ROLES, NOT INSTANCE TYPES").
    #[default]
    Replicas,
    /// Earlier revision (model_deployment_joint_admission.go @39f1197d): one group per distinct
    /// InstanceType, reserved when any of its Workloads holds quota; the lists name types.
    InstanceTypes,
}

/// The barrier's answer for one deployment (`jointHeld`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JointVerdict {
    pub ready: bool,
    pub message: String,
    /// Every declared replica is present: what is missing is capacity, so the deployment may
    /// be parked once the bound passes (`jointHeld.Settled`).
    pub settled: bool,
}

/// Whether a Workload sits inside the barrier: a replica of a deployment declaring two or more
/// roles under [`JointGrouping::Replicas`] (the exemption counts roles, not replicas), two or
/// more distinct InstanceTypes under [`JointGrouping::InstanceTypes`];
/// `modelDeploymentPodGroups` `< 2` in `Reconcile`.
pub fn inside_barrier(w: &Workload, grouping: JointGrouping) -> bool {
    w.deployment
        .as_ref()
        .is_some_and(|d| barrier_groups(&d.roles, grouping).len() >= 2)
}

/// The groups the barrier judges, in spec order: each role, or each distinct InstanceType
/// (first mention wins) with the roles on it.
fn barrier_groups(roles: &[DeclaredRole], grouping: JointGrouping) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, r) in roles.iter().enumerate() {
        let key = match grouping {
            JointGrouping::Replicas => r.name.clone(),
            JointGrouping::InstanceTypes => r.instance_type.clone(),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) if grouping == JointGrouping::InstanceTypes => members.push(i),
            _ => groups.push((key, vec![i])),
        }
    }
    groups
}

/// The barrier's verdict on a deployment (`jointVerdict`): `slot(role, ordinal)` says where
/// each declared replica stands. Ready when nothing is waiting; otherwise Pending, "assembling"
/// (not settled) when some role lacks a live replica, else naming the waiting roles (settled).
pub fn joint_verdict(
    roles: &[DeclaredRole],
    grouping: JointGrouping,
    slot: impl Fn(&str, u32) -> SlotState,
) -> JointVerdict {
    match grouping {
        JointGrouping::Replicas => replica_verdict(roles, slot),
        JointGrouping::InstanceTypes => type_group_verdict(roles, slot),
    }
}

/// The newest rule: one judgement per (role, ordinal); lists name roles.
fn replica_verdict(roles: &[DeclaredRole], slot: impl Fn(&str, u32) -> SlotState) -> JointVerdict {
    let (mut waiting, mut assembling) = (Vec::new(), Vec::new());
    let (mut reserved, mut replicas) = (0u32, 0u32);
    for r in roles {
        let (mut role_waiting, mut role_assembling) = (false, false);
        for ordinal in 0..r.replicas {
            replicas += 1;
            match slot(&r.name, ordinal) {
                SlotState::Reserved => reserved += 1,
                SlotState::Waiting => role_waiting = true,
                SlotState::Absent => (role_waiting, role_assembling) = (true, true),
            }
        }
        if role_waiting {
            waiting.push(r.name.clone());
        }
        if role_assembling {
            assembling.push(r.name.clone());
        }
    }
    if waiting.is_empty() {
        return JointVerdict {
            ready: true,
            message: "every replica of this deployment has reserved quota or is being replaced by this operator's own rollout".into(),
            settled: true,
        };
    }
    if !assembling.is_empty() {
        return assembling_verdict("replica", "roles", &assembling);
    }
    JointVerdict {
        ready: false,
        message: format!(
            "holding this replica until the whole deployment can run: {reserved} of {replicas} replicas have reserved quota, and the ones still waiting belong to the roles {}. Every replica keeps the quota it has reserved while it waits",
            waiting.join(", ")
        ),
        settled: true,
    }
}

/// The earlier rule: one group per InstanceType, reserved when any replica on it holds quota,
/// assembling when fewer replicas are present than the roles on it declare; lists name types.
fn type_group_verdict(
    roles: &[DeclaredRole],
    slot: impl Fn(&str, u32) -> SlotState,
) -> JointVerdict {
    let groups = barrier_groups(roles, JointGrouping::InstanceTypes);
    let (mut waiting, mut assembling) = (Vec::new(), Vec::new());
    for (instance_type, members) in &groups {
        let states: Vec<SlotState> = members
            .iter()
            .flat_map(|&i| (0..roles[i].replicas).map(move |o| (i, o)))
            .map(|(i, o)| slot(&roles[i].name, o))
            .collect();
        if states.contains(&SlotState::Absent) {
            assembling.push(instance_type.clone());
        }
        if !states.contains(&SlotState::Reserved) {
            waiting.push(instance_type.clone());
        }
    }
    if waiting.is_empty() {
        return JointVerdict {
            ready: true,
            message: "every group of this deployment has reserved quota".into(),
            settled: true,
        };
    }
    if !assembling.is_empty() {
        return assembling_verdict("group", "groups on instance types", &assembling);
    }
    JointVerdict {
        ready: false,
        message: format!(
            "holding this group until the whole deployment can run: {} of {} groups have reserved quota, and the ones still waiting are on instance types {}. Every group keeps the quota it has reserved while it waits",
            groups.len() - waiting.len(),
            groups.len(),
            waiting.join(", ")
        ),
        settled: true,
    }
}

/// Pending while some of the deployment's own replicas do not exist yet: never parked.
fn assembling_verdict(unit: &str, named: &str, assembling: &[String]) -> JointVerdict {
    JointVerdict {
        ready: false,
        message: format!(
            "holding this {unit} while the deployment is still assembling: the {named} {} do not yet have every replica they declare, so Kueue has composed no workload for them yet. Nothing is wrong with the cluster; this resolves itself as the replicas appear",
            assembling.join(", ")
        ),
        settled: false,
    }
}

/// Whether the bound turns the hold into a park (`Reconcile`: Pending ∧ Settled ∧ past the
/// bound); `bound_passed` is the model's stand-in for `heldPast`.
pub fn should_park(verdict: &JointVerdict, bound_passed: bool) -> bool {
    !verdict.ready && verdict.settled && bound_passed
}

/// The park message (`park`): the waiting verdict, how long it has stood, the marker, what
/// the Workload's deactivation means and what clears it.
pub fn parked_message(waiting: &str) -> String {
    format!(
        "{waiting}. This has not changed for {INFEASIBLE_AFTER}, so the deployment is {PARKED_MARKER}: its workloads are deactivated and no longer ask for quota. An identical re-apply does not clear this — free the capacity the waiting groups need and reactivate the workloads, or delete the deployment and create it again"
    )
}

/// Whether a check message says the joint check parked the Workload (`jointBarrierParked`).
pub fn is_parked_message(message: &str) -> bool {
    message.contains(PARKED_MARKER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pd() -> Vec<DeclaredRole> {
        ["prefill", "decode"]
            .iter()
            .map(|n| DeclaredRole {
                name: n.to_string(),
                replicas: 1,
                instance_type: "it-a".into(),
            })
            .collect()
    }

    #[test]
    fn every_replica_reserved_is_ready() {
        let v = joint_verdict(&pd(), JointGrouping::Replicas, |_, _| SlotState::Reserved);
        assert!(v.ready, "{v:?}");
    }

    #[test]
    fn one_role_waiting_is_pending_naming_only_it() {
        let v = joint_verdict(&pd(), JointGrouping::Replicas, |r, _| {
            if r == "decode" {
                SlotState::Waiting
            } else {
                SlotState::Reserved
            }
        });
        assert!(!v.ready && v.settled, "{v:?}");
        assert!(v.message.contains("1 of 2 replicas"), "{}", v.message);
        assert!(
            v.message.ends_with("belong to the roles decode. Every replica keeps the quota it has reserved while it waits"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_missing_replica_is_assembling_and_never_parks() {
        let v = joint_verdict(&pd(), JointGrouping::Replicas, |r, _| {
            if r == "decode" {
                SlotState::Absent
            } else {
                SlotState::Reserved
            }
        });
        assert!(!v.ready && !v.settled, "{v:?}");
        assert!(
            v.message.contains("the roles decode do not yet"),
            "{}",
            v.message
        );
        assert!(!should_park(&v, true));
    }

    #[test]
    fn the_older_revision_groups_by_instance_type() {
        // Both roles on one type: one group, outside the barrier; the group is reserved when
        // any of its replicas is.
        let w = Workload {
            deployment: Some(DeploymentReplica {
                deployment: "pd".into(),
                role: "prefill".into(),
                ordinal: 0,
                roles: pd(),
            }),
            ..Workload::default()
        };
        assert!(inside_barrier(&w, JointGrouping::Replicas));
        assert!(!inside_barrier(&w, JointGrouping::InstanceTypes));
        let mut roles = pd();
        roles[1].instance_type = "it-b".into();
        let v = joint_verdict(&roles, JointGrouping::InstanceTypes, |r, _| {
            if r == "decode" {
                SlotState::Waiting
            } else {
                SlotState::Reserved
            }
        });
        assert!(
            v.message.contains("on instance types it-b"),
            "{}",
            v.message
        );
    }

    #[test]
    fn the_bound_must_be_passed_not_reached() {
        assert!(!held_past(0));
        assert!(!held_past(INFEASIBLE_AFTER_SECONDS));
        assert!(held_past(INFEASIBLE_AFTER_SECONDS + 1));
    }

    #[test]
    fn the_park_message_carries_the_marker() {
        let m = parked_message("holding");
        assert!(is_parked_message(&m) && m.contains("30m0s"), "{m}");
        assert!(!is_parked_message("holding this replica"));
    }
}
