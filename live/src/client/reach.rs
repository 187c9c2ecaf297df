//! Whether the API server answers at all, asked once before anything else: a server that
//! cannot be reached is one sentence naming it and the cause (as kubectl says "The connection
//! to the server … was refused"), not one preflight line per check that could not run.

use super::Client;

/// The server did not answer: no connection, no TLS session, no HTTP response.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach the API server {server} (context `{context}`): {cause}")]
pub struct Unreachable {
    pub server: String,
    pub context: String,
    /// The innermost cause (`Connection refused (os error 111)`, a TLS or DNS error).
    pub cause: String,
    #[source]
    pub source: Box<kube::Error>,
}

impl Client {
    /// `Ok` once the server answers `GET /version` with anything, an error status included
    /// (an answer: the preflight then says what is missing); `Err` when no answer came. Asked
    /// once, not retried: a refused or unroutable connection is not a fault a retry mends,
    /// and the requests after it retry as every request does.
    pub async fn reachable(&self) -> Result<(), Unreachable> {
        match self.kube().apiserver_version().await {
            Ok(_) | Err(kube::Error::Api(_)) => Ok(()),
            Err(e) if !transport(&e) => Ok(()),
            Err(e) => Err(Unreachable {
                server: self.target().server.clone(),
                context: self.target().context.clone(),
                cause: innermost(&e),
                source: Box::new(e),
            }),
        }
    }
}

/// Whether `e` failed before any HTTP response arrived.
fn transport(e: &kube::Error) -> bool {
    matches!(e, kube::Error::HyperError(_) | kube::Error::Service(_))
}

/// The last error of `e`'s source chain: the one that says what happened
/// (`client error (Connect)` says only where).
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
