//! How a client recognises the embedded twin by asking it, never by a kubeconfig context's
//! name (issue [M16]: a context named `verify-twin` pointing at a real cluster skipped
//! `--context` and the confirmation). A twin served for verify's own use issues a token: it
//! writes it into the kubeconfig it hands out (the user's bearer token) and answers
//! [`TWIN_PATH`] with it. A client that reads back the token of its own kubeconfig knows it
//! talks to the twin that issued it. A cluster answers 404 there, as it does for any unknown
//! path; so does a twin playing a cluster (served under another context name).

use serde_json::{json, Value};

/// The twin's identity endpoint.
pub const TWIN_PATH: &str = "/verify/v1/twin";

/// The answer to `GET` [`TWIN_PATH`].
pub fn identity_body(token: &str) -> Value {
    json!({"kind": "EmbeddedTwin", "token": token})
}

/// The token in an answer to `GET` [`TWIN_PATH`], if it is one.
pub fn token_of(answer: &Value) -> Option<&str> {
    (answer.get("kind")? == "EmbeddedTwin")
        .then(|| answer.get("token")?.as_str())
        .flatten()
}

/// A fresh token, different per process and per call (not a secret: it only tells one twin
/// from a server that is none).
pub fn new_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(nanos);
    format!("verify-twin-{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_carries_the_token_and_nothing_else_does() {
        let t = new_token();
        assert_ne!(t, new_token());
        assert_eq!(token_of(&identity_body(&t)), Some(t.as_str()));
        assert_eq!(token_of(&json!({"token": t})), None);
        assert_eq!(token_of(&json!({"kind": "Status", "code": 404})), None);
    }
}
