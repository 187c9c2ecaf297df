//! pkg/worker/controllers/worker/helper_test.go: how a reconcile ends after a failed write, and
//! that fetching a deleted object is quiet.

use serde_json::{json, Value};

use model::reconcile::{fetch_of_deleted_object, object_write_result, ApiError, ReconcileEnd};

use crate::compare::judge;
use crate::input::{field, field_or_default, not_modelled, outcome};
use crate::{Outcome, Vector};

/// Reads an error description: `Conflict`, `NotFound`, `wrapped <error>`, or any other text.
fn api_error(text: &str) -> ApiError {
    match text.strip_prefix("wrapped ") {
        Some(inner) => ApiError::Wrapped(Box::new(api_error(inner))),
        None => match text {
            "Conflict" => ApiError::Conflict,
            "NotFound" => ApiError::NotFound,
            other => ApiError::Other(other.to_string()),
        },
    }
}

fn rendered(end: &ReconcileEnd) -> Value {
    json!({
        "requeue_after_seconds": end.requeue_after_seconds,
        "result": end.describe(),
        "error_returned": end.error_returned,
        "error_log_lines": end.error_log_lines,
    })
}

pub fn run(v: &Vector) -> Outcome {
    match v.test_name() {
        "TestObjectWriteResult" => outcome(|| {
            let err: String = field(&v.input, "write_error")?;
            let on_conflict: Option<u64> =
                field_or_default(&v.input, "on_conflict_requeue_after_seconds")?;
            let end = object_write_result(&api_error(&err), on_conflict);
            Ok(judge(&v.expected, &rendered(&end)))
        }),
        "TestReconcilers_FetchingADeletedObjectIsQuiet" => outcome(|| {
            let reconciler: String = field(&v.input, "reconciler")?;
            let object: String = field(&v.input, "object")?;
            if object != "absent" {
                return Err(malformed("object", "expected \"absent\""));
            }
            let end = fetch_of_deleted_object(&reconciler)
                .ok_or_else(|| malformed("reconciler", "not a reconciler the contract names"))?;
            Ok(judge(&v.expected, &rendered(&end)))
        }),
        other => not_modelled(other),
    }
}

fn malformed(f: &str, problem: &str) -> Outcome {
    Outcome::Malformed {
        field: f.to_string(),
        problem: problem.to_string(),
    }
}
