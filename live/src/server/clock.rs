//! The twin's virtual clock, moved only by a twin-only admin request: `POST /verify/v1/clock`
//! with `{"advance": "30m"}` (a duration as humantime reads it: `90s`, `30m`, `1h 5m`). It
//! exists so what the operator bounds by time — the joint check parks a ModelDeployment held
//! past 30 minutes (model_deployment_joint_admission.go `heldPast`) — can be stepped on the
//! twin as the model steps `Event::JointTimeout`, with no wall-clock wait in any test.
//! `GET` reads the clock. Not counted and never faulted, like the counters.

use serde_json::{json, Value};

use super::status::Status;
use super::store::Store;
use crate::wire::clock::CLOCK_PATH;

/// What the endpoint answers: the clock's reading and the seconds advanced so far.
fn reading(store: &mut Store) -> Value {
    json!({"now": store.now(), "advancedSeconds": store.advanced()})
}

/// Answers one request to [`CLOCK_PATH`]: `(HTTP code, body)`; errors are `metav1.Status`.
pub fn clock_request(store: &mut Store, method: &str, body: &[u8]) -> (u16, Value) {
    let fail = |s: Status| (s.http_code(), s.to_value());
    match method {
        "GET" => (200, reading(store)),
        "POST" => match advance_of(body) {
            Ok(seconds) => {
                store.advance_clock(seconds);
                (200, reading(store))
            }
            Err(s) => fail(s),
        },
        other => fail(Status::bad_request(format!(
            "{CLOCK_PATH} answers GET and POST, not {other}"
        ))),
    }
}

/// The seconds a `{"advance": "<duration>"}` body asks for.
pub fn advance_of(body: &[u8]) -> Result<u64, Status> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| Status::bad_request(format!("{CLOCK_PATH}: the body is not JSON: {e}")))?;
    let text = v.get("advance").and_then(Value::as_str).ok_or_else(|| {
        Status::bad_request(format!(
            "{CLOCK_PATH}: expected {{\"advance\": \"<duration>\"}}, e.g. \"30m\""
        ))
    })?;
    humantime::parse_duration(text)
        .map(|d| d.as_secs())
        .map_err(|e| Status::bad_request(format!("{CLOCK_PATH}: advance {text:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::clock::advance_body;

    #[test]
    fn an_advance_moves_the_clock_and_bad_bodies_are_refused() {
        let mut store = Store::default();
        assert_eq!(advance_of(br#"{"advance":"30m"}"#), Ok(1800));
        assert_eq!(advance_of(br#"{"advance":"30m0s"}"#), Ok(1800));
        assert_eq!(advance_of(advance_body(61).to_string().as_bytes()), Ok(61));
        let (code, body) = clock_request(&mut store, "POST", br#"{"advance":"1h"}"#);
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["advancedSeconds"], json!(3600));
        for bad in [&br#"{"advance":"soon"}"#[..], b"{}", b"not json"] {
            let (code, body) = clock_request(&mut store, "POST", bad);
            assert_eq!(code, 400, "{body}");
        }
        assert_eq!(clock_request(&mut store, "DELETE", b"").0, 400);
        assert_eq!(store.advanced(), 3600);
    }
}
