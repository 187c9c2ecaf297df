//! Check states, verdict messages and the write guard (admission.md §6.8;
//! node_devices_admission.go `verdictMessage`, `forRoles`, `desiredCheckStates`).

use serde::{Deserialize, Serialize};

/// Backoff written on every Retry (`_NodeDevicesRetryAfterSeconds`).
pub const RETRY_AFTER_SECONDS: i32 = 30;
/// The AdmissionCheck controller name this gate claims.
pub const CONTROLLER_NAME: &str = "worker.gpustack.ai/node-devices";
/// The Active condition message of the AdmissionCheck.
pub const ACTIVE_MESSAGE: &str = "the node-devices admission check controller is running";
/// Suffix of a Retry judged while in-flight demands were counted (admission.md §6.5).
pub const INFLIGHT_SUFFIX: &str = "; cards promised to Workloads admitted before this one, whose Pods have not received them yet, are counted as taken";

/// Kueue's `CheckState`; this gate writes only Ready and Retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CheckState {
    Pending,
    Ready,
    Retry,
    Rejected,
}

/// A judgment: state and message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub state: CheckState,
    pub message: String,
}

impl Verdict {
    pub fn ready(message: String) -> Self {
        Verdict {
            state: CheckState::Ready,
            message,
        }
    }
    pub fn retry(message: String) -> Self {
        Verdict {
            state: CheckState::Retry,
            message,
        }
    }
    pub fn is_ready(&self) -> bool {
        self.state == CheckState::Ready
    }
}

/// ` for role "x"` / ` for roles "a", "b"` (sorted), empty without pod sets;
/// node_devices_admission.go `forRoles`.
pub fn for_roles(pod_sets: &[String]) -> String {
    let mut names: Vec<String> = pod_sets.iter().map(|p| format!("{p:?}")).collect();
    names.sort();
    match names.as_slice() {
        [] => String::new(),
        [one] => format!(" for role {one}"),
        many => format!(" for roles {}", many.join(", ")),
    }
}

/// Pool-wide scalar verdict text; admission.md §6.8.
pub fn verdict_message(state: CheckState, pod_sets: &[String]) -> String {
    let roles = for_roles(pod_sets);
    if state == CheckState::Ready {
        format!("the assigned flavor pool has enough free cards to place the request{roles}")
    } else {
        format!("no node in the assigned flavor pool currently has enough free cards{roles}; will retry as capacity frees")
    }
}

/// Node-scoped (TAS hostname) verdict text; admission.md §6.8. The role clause follows the
/// node phrase, as in the pool-wide form (placement decided here; the research does not show it).
pub fn node_verdict_message(state: CheckState, node: &str, pod_sets: &[String]) -> String {
    let roles = for_roles(pod_sets);
    if state == CheckState::Ready {
        format!(
            "the node {node:?} Kueue assigned has enough free cards to place the request{roles}"
        )
    } else {
        format!(
            "no card on the node {node:?} Kueue assigned can host the request{roles}; Kueue's topology-aware scheduling sees only the node's summed capacity and may assign the same node again, so this retries until that node's cards free, even while another node has room"
        )
    }
}

/// Partition verdict text, pool-wide; admission.md §6.8.
pub fn partition_verdict_message(state: CheckState, profile: &str, pod_sets: &[String]) -> String {
    let roles = for_roles(pod_sets);
    if state == CheckState::Ready {
        format!("the assigned flavor pool has enough partitioned cards with a free {profile:?} placement{roles}")
    } else {
        format!("no partitioned card in the assigned flavor pool currently has a free {profile:?} placement{roles}; will retry as capacity frees")
    }
}

/// No covered partitioned card at all; admission.md §6.8.
pub fn partition_no_cards_message(profile: &str, pod_sets: &[String]) -> String {
    format!(
        "the assigned flavor pool has no partitioned card for profile {profile:?}{}; partition a card in this pool (will retry)",
        for_roles(pod_sets)
    )
}

/// No covered partitioned card carries cached placements (rollout window); admission.md §6.8.
pub fn partition_ledger_not_ready_message(pod_sets: &[String]) -> String {
    format!(
        "the partition placement ledger is not ready on the assigned flavor pool{} (device manager rolling out); will retry",
        for_roles(pod_sets)
    )
}

/// A demand with no single accelerator flavor; admission.md §6.8 item 1.
pub fn unassigned_flavor_message(roles: &[String]) -> String {
    format!(
        "the Workload's admission does not resolve to a single accelerator flavor{}, so no card population can be resolved; will retry once it does",
        for_roles(roles)
    )
}

/// A flavor reaching pool nodes but pinning no single key; admission.md §6.8 item 2.
pub fn unresolved_flavor_message(roles: &[String]) -> String {
    format!(
        "the ResourceFlavor assigned{} pins no single accelerator key, so which cards of its nodes are its own cannot be resolved; correct the flavor's node labels (will retry)",
        for_roles(roles)
    )
}

/// An in-flight Workload's flavor resolves to no card population on `node`; admission.md
/// §6.8 item 3.
pub fn inflight_unresolved_message(node: &str) -> String {
    format!(
        "a Workload admitted to the node {node:?} before this one has a flavor that resolves to no card population there, so the cards it will take cannot be counted; will retry once its Pods have been allocated"
    )
}

/// One entry of a Workload's `status.admissionChecks`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckStatus {
    pub name: String,
    pub state: CheckState,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub requeue_after_seconds: Option<i32>,
}

/// The verdict rendered onto every owned check (Retry carries 30 s), and whether any differs
/// from the current state, message or delay; admission.md §6.8 (`desiredCheckStates`).
pub fn desired_check_states(
    current: &[CheckStatus],
    owned: &[String],
    verdict: &Verdict,
) -> (Vec<CheckStatus>, bool) {
    let delay = (verdict.state == CheckState::Retry).then_some(RETRY_AFTER_SECONDS);
    let desired: Vec<CheckStatus> = owned
        .iter()
        .map(|name| CheckStatus {
            name: name.clone(),
            state: verdict.state,
            message: verdict.message.clone(),
            requeue_after_seconds: delay,
        })
        .collect();
    let changed = desired
        .iter()
        .any(|d| current.iter().find(|c| c.name == d.name) != Some(d));
    (desired, changed)
}

/// A status condition of the AdmissionCheck object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    pub kind: String,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

/// The AdmissionCheck's conditions after this gate's reconciler: a check of another controller
/// is left untouched; ours gains `Active=True` (reason `Ready`) unless already active;
/// admission.md §6.1 (`NodeDevicesAdmissionCheckReconciler`).
pub fn admission_check_conditions(
    controller_name: &str,
    conditions: &[Condition],
) -> Vec<Condition> {
    let active = conditions.iter().any(|c| c.kind == "Active" && c.status);
    if controller_name != CONTROLLER_NAME || active {
        return conditions.to_vec();
    }
    let mut out: Vec<Condition> = conditions
        .iter()
        .filter(|c| c.kind != "Active")
        .cloned()
        .collect();
    out.push(Condition {
        kind: "Active".into(),
        status: true,
        reason: "Ready".into(),
        message: ACTIVE_MESSAGE.into(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn role_clause_is_sorted_singular_or_absent() {
        assert_eq!(for_roles(&[]), "");
        assert_eq!(for_roles(&s(&["decode"])), " for role \"decode\"");
        assert_eq!(
            for_roles(&s(&["prefill", "decode"])),
            " for roles \"decode\", \"prefill\""
        );
    }

    #[test]
    fn scalar_messages_read_exactly() {
        assert_eq!(
            verdict_message(CheckState::Retry, &[]),
            "no node in the assigned flavor pool currently has enough free cards; will retry as capacity frees"
        );
        assert_eq!(
            verdict_message(CheckState::Ready, &[]),
            "the assigned flavor pool has enough free cards to place the request"
        );
        assert!(verdict_message(CheckState::Retry, &s(&["a"]))
            .contains("free cards for role \"a\"; will retry"));
        assert!(node_verdict_message(CheckState::Retry, "n", &[])
            .starts_with("no card on the node \"n\" Kueue assigned can host the request;"));
        assert_eq!(
            node_verdict_message(CheckState::Ready, "n", &[]),
            "the node \"n\" Kueue assigned has enough free cards to place the request"
        );
    }

    #[test]
    fn partition_messages_are_distinct() {
        let full = partition_verdict_message(CheckState::Retry, "1g.10gb", &[]);
        let none = partition_no_cards_message("1g.10gb", &[]);
        let unready = partition_ledger_not_ready_message(&s(&["decode"]));
        assert!(full.contains("free \"1g.10gb\" placement; will retry"));
        assert!(none.contains("no partitioned card for profile \"1g.10gb\"; partition"));
        assert!(unready.contains("pool for role \"decode\" (device manager rolling out)"));
        assert_ne!(full, unready);
        assert_ne!(none, unready);
    }

    #[test]
    fn hold_messages_name_their_cause() {
        assert!(unassigned_flavor_message(&[])
            .contains("does not resolve to a single accelerator flavor, so"));
        assert!(unresolved_flavor_message(&s(&["p"]))
            .contains("assigned for role \"p\" pins no single accelerator key"));
        assert!(inflight_unresolved_message("host-b").contains("node \"host-b\" before this one"));
    }

    #[test]
    fn a_settled_check_needs_no_write_and_a_missing_delay_does() {
        let v = Verdict::retry(verdict_message(CheckState::Retry, &[]));
        let settled = CheckStatus {
            name: "a".into(),
            state: CheckState::Retry,
            message: v.message.clone(),
            requeue_after_seconds: Some(30),
        };
        let (_, changed) = desired_check_states(std::slice::from_ref(&settled), &s(&["a"]), &v);
        assert!(!changed);
        let no_delay = CheckStatus {
            requeue_after_seconds: None,
            ..settled.clone()
        };
        let (desired, changed) = desired_check_states(&[no_delay], &s(&["a"]), &v);
        assert!(changed);
        assert_eq!(desired[0].requeue_after_seconds, Some(30));
        let (desired, changed) = desired_check_states(&[settled], &s(&["a", "b"]), &v);
        assert!(changed);
        assert_eq!(desired.len(), 2);
    }

    #[test]
    fn only_our_admission_check_is_activated() {
        assert!(admission_check_conditions("someone-else", &[]).is_empty());
        let ours = admission_check_conditions(CONTROLLER_NAME, &[]);
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].message, ACTIVE_MESSAGE);
    }
}
