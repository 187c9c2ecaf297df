//! Moving the embedded twin's virtual clock (`server::clock`, `POST /verify/v1/clock`): how the
//! twin tier steps what the model steps as an event with no clock (`Event::JointTimeout`). A
//! cluster has no such endpoint and no clock a client may move: callers ask only a twin.

use super::{Client, ClientError};
use crate::wire::clock::{advance_body, CLOCK_PATH};
use crate::wire::identity::{token_of, TWIN_PATH};

impl Client {
    /// Whether the server is the embedded twin that issued this client's token, asked of the
    /// server itself ([`crate::wire::identity`]). A kubeconfig context's name proves nothing:
    /// `verify-twin` may point anywhere.
    pub async fn is_embedded_twin(&self) -> bool {
        let Some(mine) = &self.token else {
            return false;
        };
        let Ok(request) = http::Request::get(TWIN_PATH).body(Vec::new()) else {
            return false;
        };
        let answer: Result<serde_json::Value, _> = self.kube().request(request).await;
        answer.is_ok_and(|v| token_of(&v) == Some(mine.as_str()))
    }

    /// Advances the twin's clock `seconds` (one request; not retried: the endpoint is never
    /// faulted). Returns the seconds advanced so far in all.
    pub async fn advance_twin_clock(&self, seconds: u64) -> Result<u64, ClientError> {
        let what = format!("POST {CLOCK_PATH}");
        let request = http::Request::post(CLOCK_PATH)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(advance_body(seconds).to_string().into_bytes())
            .map_err(|e| ClientError::Object {
                object: what.clone(),
                message: e.to_string(),
            })?;
        let answer: serde_json::Value =
            self.kube()
                .request(request)
                .await
                .map_err(|e| ClientError::Api {
                    what: what.clone(),
                    source: Box::new(e),
                })?;
        answer
            .get("advancedSeconds")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| ClientError::Object {
                object: what,
                message: format!("expected advancedSeconds in the answer, got {answer}"),
            })
    }
}
