//! An InstanceType's `status.phaseMessage`: the words that go with its phase. The phase itself
//! is `views::phase`; both follow the operator's `apistatus.GetSummaryOfClusterQueue`
//! (pkg/worker/apistatus/cluster_queue.go @6e0df36), which `InstanceTypeReconciler.computeStatus`
//! (pkg/worker/controllers/worker/instance_type.go) writes as phase and phaseMessage.

use crate::objects::StopPolicy;

/// `teardownInstanceType`: the message of an InstanceType being deleted while its queue still
/// exists (instance_type.go).
pub const TERMINATING: &str = "instance type is terminating";
/// A `Hold` queue (an administrator's `spec.inactive`, or the E3 empty-plan hold).
pub const HELD: &str = "cluster queue is held";
/// A `HoldAndDrain` queue that still holds reserved or admitted workloads.
pub const DRAINING: &str = "cluster queue is draining admitted workloads";
/// A `HoldAndDrain` queue with nothing left reserved.
pub const HELD_AND_DRAINED: &str = "cluster queue is held and drained";
/// Kueue's message on an open queue's `Active=True` condition (reason `Ready`), which the
/// condition summary carries over (Kueue pkg/cache `inactiveReason`).
pub const KUEUE_READY_MESSAGE: &str = "Can admit new workloads";

/// The phase message for a queue with `stop_policy`: a stopped queue's message is fixed and
/// written as is; an open queue's is its `Active` condition's message (empty when it has
/// none), formatted by the condition summary ([`format_condition_message`]).
pub fn instance_type_phase_message(
    stop_policy: StopPolicy,
    has_reservations: bool,
    active_condition_message: Option<&str>,
) -> String {
    match stop_policy {
        StopPolicy::HoldAndDrain if has_reservations => DRAINING.to_string(),
        StopPolicy::HoldAndDrain => HELD_AND_DRAINED.to_string(),
        StopPolicy::Hold => HELD.to_string(),
        StopPolicy::None => format_condition_message(active_condition_message.unwrap_or("")),
    }
}

/// The message at quiescence, as the static derivation sees the queue: nothing reserved, and an
/// open queue Active with Kueue's Ready message (`queue::settle` has Kueue observe exactly that).
pub fn settled_phase_message(stop_policy: StopPolicy) -> String {
    instance_type_phase_message(stop_policy, false, Some(KUEUE_READY_MESSAGE))
}

/// `kubeapistatus.formatMessage` (pkg/kubeapistatus/status.go): a non-empty message starts
/// with a capital ASCII letter and ends with `.`, `!` or `?` (a `.` is added otherwise).
pub fn format_condition_message(message: &str) -> String {
    let mut chars = message.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let mut out: String = first.to_ascii_uppercase().to_string();
    out.push_str(chars.as_str());
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_queue_has_its_fixed_message_unformatted() {
        let m = |p, r| instance_type_phase_message(p, r, Some("ignored"));
        assert_eq!(m(StopPolicy::Hold, true), "cluster queue is held");
        assert_eq!(m(StopPolicy::Hold, false), "cluster queue is held");
        assert_eq!(
            m(StopPolicy::HoldAndDrain, true),
            "cluster queue is draining admitted workloads"
        );
        assert_eq!(
            m(StopPolicy::HoldAndDrain, false),
            "cluster queue is held and drained"
        );
    }

    #[test]
    fn an_open_queue_carries_its_active_condition_message_formatted() {
        assert_eq!(
            settled_phase_message(StopPolicy::None),
            "Can admit new workloads."
        );
        assert_eq!(
            instance_type_phase_message(StopPolicy::None, false, Some("stopped by hand!")),
            "Stopped by hand!"
        );
        assert_eq!(
            instance_type_phase_message(StopPolicy::None, false, None),
            ""
        );
    }

    #[test]
    fn formatting_capitalizes_and_ends_the_sentence() {
        assert_eq!(format_condition_message(""), "");
        assert_eq!(format_condition_message("a"), "A.");
        assert_eq!(format_condition_message("Done?"), "Done?");
        assert_eq!(format_condition_message("ünicode"), "ünicode.");
    }
}
