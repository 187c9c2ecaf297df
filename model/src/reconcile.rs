//! How a reconcile ends after a failed write or a fetch of its own object
//! (pkg/worker/controllers/worker/helper.go `objectWriteResult`, pinned by helper_test.go
//! @f894503 `TestObjectWriteResult`, `TestReconcilers_FetchingADeletedObjectIsQuiet`).
//!
//! A conflict ends with the caller's on-conflict result (an event will follow, or a requeue), a
//! deleted object ends with nothing to do; neither returns an error nor logs one. Any other
//! failure is returned (controller-runtime retries it) and logged once. A wrapped error is
//! classified by what it wraps.

/// The API error a write (or fetch) failed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    Conflict,
    NotFound,
    /// Any other failure, e.g. an internal error.
    Other(String),
    /// An error wrapping another (`fmt.Errorf("…: %w", err)`).
    Wrapped(Box<ApiError>),
}

impl ApiError {
    /// What a wrapped error wraps, all the way down.
    pub fn root(&self) -> &ApiError {
        match self {
            ApiError::Wrapped(inner) => inner.root(),
            other => other,
        }
    }
}

/// How one reconcile ends: the result it returns and what it logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReconcileEnd {
    /// `RequeueAfter` in seconds; `None` = the empty result (no requeue).
    pub requeue_after_seconds: Option<u64>,
    pub error_returned: bool,
    pub error_log_lines: u32,
}

impl ReconcileEnd {
    /// The empty result: nothing to do, no error, nothing logged.
    pub const QUIET: ReconcileEnd = ReconcileEnd {
        requeue_after_seconds: None,
        error_returned: false,
        error_log_lines: 0,
    };

    /// Human reading of the returned result.
    pub fn describe(&self) -> String {
        match self.requeue_after_seconds {
            None => "empty (no requeue)".to_string(),
            Some(s) => format!("requeue after {s}s"),
        }
    }
}

/// `objectWriteResult`: a conflict → the caller's on-conflict requeue (`None` = an event will
/// follow); not found → nothing to do; anything else → returned and logged once. helper.go.
pub fn object_write_result(
    err: &ApiError,
    on_conflict_requeue_seconds: Option<u64>,
) -> ReconcileEnd {
    match err.root() {
        ApiError::Conflict => ReconcileEnd {
            requeue_after_seconds: on_conflict_requeue_seconds,
            ..ReconcileEnd::QUIET
        },
        ApiError::NotFound => ReconcileEnd::QUIET,
        ApiError::Other(_) | ApiError::Wrapped(_) => ReconcileEnd {
            requeue_after_seconds: None,
            error_returned: true,
            error_log_lines: 1,
        },
    }
}

/// The reconcilers whose fetch of a deleted object helper_test.go pins as quiet.
pub const QUIET_FETCH_RECONCILERS: [&str; 6] = [
    "node feature",
    "node fit label",
    "node capacity",
    "node queue entrance",
    "model deployment joint admission",
    "model deployment joint admission check",
];

/// A reconcile whose own object is gone ends quietly (empty result, no error, no error log);
/// `None` for a reconciler the contract does not name. helper_test.go
/// `TestReconcilers_FetchingADeletedObjectIsQuiet`.
pub fn fetch_of_deleted_object(reconciler: &str) -> Option<ReconcileEnd> {
    QUIET_FETCH_RECONCILERS
        .contains(&reconciler)
        .then_some(ReconcileEnd::QUIET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_results_follow_the_contract() {
        let conflict = ApiError::Conflict;
        assert_eq!(object_write_result(&conflict, None), ReconcileEnd::QUIET);
        let wrapped = ApiError::Wrapped(Box::new(ApiError::Conflict));
        assert_eq!(
            object_write_result(&wrapped, Some(1)).requeue_after_seconds,
            Some(1)
        );
        assert_eq!(
            object_write_result(&ApiError::NotFound, Some(1)),
            ReconcileEnd::QUIET
        );
        let other = object_write_result(&ApiError::Other("etcd unavailable".into()), Some(1));
        assert!(other.error_returned);
        assert_eq!(other.error_log_lines, 1);
        assert_eq!(other.requeue_after_seconds, None);
    }

    #[test]
    fn deleted_objects_are_quiet() {
        for r in QUIET_FETCH_RECONCILERS {
            assert_eq!(fetch_of_deleted_object(r), Some(ReconcileEnd::QUIET));
        }
        assert_eq!(fetch_of_deleted_object("bogus"), None);
        assert_eq!(ReconcileEnd::QUIET.describe(), "empty (no requeue)");
    }
}
