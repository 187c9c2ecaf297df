//! Retrying what a busy or flaky apiserver refuses: 409 Conflict (the caller re-reads and
//! re-sends), 429 Too Many Requests, 5xx and broken connections, with doubling backoff or the
//! server's `Retry-After`. 409 AlreadyExists and every other 4xx are answers, not retried.

use std::future::Future;
use std::time::Duration;

use super::{Client, ClientError};

/// How often and how long to retry one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all (1 = no retry).
    pub attempts: u32,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 8,
            first_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(2),
        }
    }
}

/// Whether a failed request is worth sending again.
pub fn retryable(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(r) => {
            r.code == 429 || r.code >= 500 || (r.code == 409 && r.reason == "Conflict")
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// `Retry-After` in seconds (the apiserver's form; an HTTP date is ignored), capped at a minute.
pub fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let secs: u64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs.min(60)))
}

/// The apiserver's answer inside a client error, if the error is one.
fn answer(e: &ClientError) -> Option<&kube::core::ErrorResponse> {
    match e {
        ClientError::Api { source, .. } => match source.as_ref() {
            kube::Error::Api(r) => Some(r),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the error is a 404 (the object is already gone).
pub fn not_found(e: &ClientError) -> bool {
    answer(e).is_some_and(|r| r.code == 404)
}

/// Whether the error is a 409 AlreadyExists.
pub fn already_exists(e: &ClientError) -> bool {
    answer(e).is_some_and(|r| r.code == 409 && r.reason == "AlreadyExists")
}

impl Client {
    /// Runs `op` until it succeeds, fails for good, or the attempts run out; `what` names the
    /// request in the error.
    pub async fn retrying<T, F, Fut>(&self, what: &str, mut op: F) -> Result<T, ClientError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = kube::Result<T>>,
    {
        let mut delay = self.retry.first_delay;
        let mut attempt = 1;
        loop {
            self.take_retry_after();
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) if attempt < self.retry.attempts && retryable(&e) => {
                    let wait = self.take_retry_after().unwrap_or(delay);
                    tokio::time::sleep(wait).await;
                    delay = (delay * 2).min(self.retry.max_delay);
                    attempt += 1;
                }
                Err(source) => {
                    return Err(ClientError::Api {
                        what: what.to_string(),
                        source: Box::new(source),
                    })
                }
            }
        }
    }

    fn take_retry_after(&self) -> Option<Duration> {
        self.retry_after.lock().ok().and_then(|mut c| c.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::ErrorResponse;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(ErrorResponse {
            status: "Failure".into(),
            message: String::new(),
            reason: reason.into(),
            code,
        })
    }

    #[test]
    fn conflicts_throttling_and_server_errors_retry_the_rest_do_not() {
        assert!(retryable(&api(409, "Conflict")));
        assert!(retryable(&api(429, "TooManyRequests")));
        assert!(retryable(&api(500, "InternalError")));
        assert!(retryable(&api(503, "ServiceUnavailable")));
        assert!(!retryable(&api(409, "AlreadyExists")));
        assert!(!retryable(&api(404, "NotFound")));
        assert!(!retryable(&api(422, "Invalid")));
    }

    #[test]
    fn retry_after_reads_seconds_and_ignores_dates() {
        let mut h = http::HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("2"),
        );
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("3600"),
        );
        assert_eq!(retry_after(&h), Some(Duration::from_secs(60)));
    }
}
