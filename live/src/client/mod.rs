//! The live tier's kube-rs client, written for a real cluster and tested against the embedded
//! twin (DESIGN.md "Three tiers": the same client code, only the kubeconfig differs).
//!
//! A run goes: [`Client::connect`] (a kubeconfig file and a named context; the file's current
//! context is never changed) → [`Client::mock`] (Namespaces, fake Nodes, NodeFeatures, Devices
//! with their ledger through `/status`, every object labelled [`RUN_LABEL`]) →
//! [`quiesce::Quiescer::wait`] (watching until nothing changes for a window) →
//! [`Client::observe`] → [`observe::diff`] against the model's derivation →
//! [`Client::teardown`] (delete by label, then check that nothing with the label remains).
//! Every request retries 409 Conflict, 429 and 5xx with backoff, honouring `Retry-After`.

pub mod cleanup;
pub mod clock;
pub mod deadline;
pub mod derived;
pub mod localize;
pub mod mock;
pub mod observe;
pub mod overlay;
pub mod preflight;
pub mod quiesce;
pub mod reach;
pub mod retry;
pub mod scoped;
pub mod teardown;
pub mod verdicts;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::client::{ClientBuilder, DynBody};
use kube::config::KubeConfigOptions;

pub use cleanup::{Cleanup, Runs};
pub use kube::config::Kubeconfig;
pub use localize::{localize, localize_onto, Localizer, OverlayNode, Token};
pub use mock::{mocked_cluster, mocked_cluster_keeping};
pub use observe::{diff, expected, expected_besides_nodes, observes, Observed};
pub use preflight::{connect, Access, ConnectError, TWIN_CONTEXT};
pub use quiesce::{Quiescence, Quiescer};
pub use reach::Unreachable;
pub use retry::RetryPolicy;
pub use teardown::Teardown;
pub use verdicts::{
    assignment_differences, gate3_expectation, verdict_agrees, verdict_text, Readback,
};

/// The label every object a run creates carries; its value is the run id.
pub const RUN_LABEL: &str = "verify.gpustack.ai/run";

/// The taint that keeps real Pods off a fake Node (research/devices.md §2.4: mocked nodes must
/// not run anything).
pub const MOCK_TAINT: &str = "verify.gpustack.ai/mock";

/// Why the client could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("kubeconfig context `{context}`: {message}")]
    Context { context: String, message: String },
    #[error("{what}: {source}")]
    Api {
        what: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("run id `{0}`: expected 1–63 characters of [A-Za-z0-9._-], starting and ending alphanumeric")]
    RunId(String),
    #[error("{object}: {message}")]
    Object { object: String, message: String },
}

/// One run's id, valid as a label value. Label values compare case-sensitively, and a run
/// labels its objects with its id lower-cased (the token built from it names objects, and
/// object names are lower-case), while it prints its run directory's name
/// (`runs/20261201T181703Z-4ddea6`): an id is kept lower-cased, so `verify cleanup --run`
/// finds the run by the id as printed, whatever its case.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunId(String);

impl RunId {
    pub fn new(id: &str) -> Result<RunId, ClientError> {
        let lower = id.to_ascii_lowercase();
        let ok = !id.is_empty()
            && id.len() <= 63
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && id.starts_with(|c: char| c.is_ascii_alphanumeric())
            && id.ends_with(|c: char| c.is_ascii_alphanumeric());
        if ok {
            Ok(RunId(lower))
        } else {
            Err(ClientError::RunId(id.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `verify.gpustack.ai/run=<id>`, the selector of everything the run created.
    pub fn selector(&self) -> String {
        format!("{RUN_LABEL}={}", self.0)
    }
}

/// Which cluster a client talks to: printed first by every command that contacts one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub context: String,
    pub server: String,
}

/// A kube-rs client pinned to one kubeconfig context.
#[derive(Clone)]
pub struct Client {
    kube: kube::Client,
    /// The bearer token of the context's user, if any: what an embedded twin that issued it
    /// answers with ([`Client::is_embedded_twin`]).
    token: Option<String>,
    target: Target,
    /// The kubeconfig it was made from: a run makes its later clients from the same one.
    kubeconfig: Arc<Kubeconfig>,
    retry: RetryPolicy,
    /// The last `Retry-After` the server sent, recorded by a response layer.
    retry_after: Arc<Mutex<Option<Duration>>>,
    /// Namespaces the cluster already has: mocks never create, change or delete them.
    kept_namespaces: Arc<std::collections::BTreeSet<String>>,
    /// Real Nodes mocked onto (`--overlay-node`): never created, changed or deleted.
    kept_nodes: Arc<std::collections::BTreeSet<String>>,
    /// Responses received (every attempt of every request, watches included).
    requests: Arc<std::sync::atomic::AtomicU64>,
}

impl Client {
    /// Connects through `context` of the kubeconfig at `path` (the file's current context is
    /// neither used nor changed).
    pub async fn connect(path: &Path, context: &str) -> Result<Client, ClientError> {
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| ClientError::Kubeconfig {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Client::from_kubeconfig(kubeconfig, context).await
    }

    /// [`Client::connect`] from kubeconfig text (e.g. the twin's, never written to disk).
    pub async fn from_kubeconfig_yaml(text: &str, context: &str) -> Result<Client, ClientError> {
        let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| ClientError::Kubeconfig {
            path: "(in memory)".into(),
            message: e.to_string(),
        })?;
        Client::from_kubeconfig(kubeconfig, context).await
    }

    /// [`Client::connect`] from a parsed kubeconfig.
    pub async fn from_kubeconfig(
        kubeconfig: Kubeconfig,
        context: &str,
    ) -> Result<Client, ClientError> {
        let context_error = |message: String| ClientError::Context {
            context: context.to_string(),
            message,
        };
        if !kubeconfig.contexts.iter().any(|c| c.name == context) {
            let known: Vec<&str> = kubeconfig
                .contexts
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(context_error(format!(
                "not in the kubeconfig (contexts: {})",
                known.join(", ")
            )));
        }
        let options = KubeConfigOptions {
            context: Some(context.to_string()),
            ..KubeConfigOptions::default()
        };
        let kept = Arc::new(kubeconfig.clone());
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| context_error(e.to_string()))?;
        let server = config.cluster_url.to_string();
        let token = config.auth_info.token.as_ref().map(|t| {
            use secrecy::ExposeSecret;
            t.expose_secret().to_string()
        });
        let retry_after = Arc::new(Mutex::new(None));
        let cell = retry_after.clone();
        let requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = requests.clone();
        let record =
            tower::util::MapResponseLayer::new(move |response: http::Response<Box<DynBody>>| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Some(wait) = retry::retry_after(response.headers()) {
                    if let Ok(mut c) = cell.lock() {
                        *c = Some(wait);
                    }
                }
                response
            });
        let kube = ClientBuilder::try_from(config)
            .map_err(|e| context_error(e.to_string()))?
            .with_layer(&record)
            .build();
        Ok(Client {
            kube,
            target: Target {
                context: context.to_string(),
                server: server.trim_end_matches('/').to_string(),
            },
            token,
            kubeconfig: kept,
            retry: RetryPolicy::default(),
            retry_after,
            kept_namespaces: Arc::default(),
            kept_nodes: Arc::default(),
            requests,
        })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The kubeconfig this client was made from.
    pub fn kubeconfig(&self) -> &Kubeconfig {
        &self.kubeconfig
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Client {
        self.retry = retry;
        self
    }

    /// Responses this client (and its clones) received so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A client whose mocks leave `namespaces` alone (a live cluster's own system namespaces).
    pub fn keeping_namespaces(mut self, namespaces: impl IntoIterator<Item = String>) -> Client {
        self.kept_namespaces = Arc::new(namespaces.into_iter().collect());
        self
    }

    /// A client whose mocks leave the Nodes `names` alone (real nodes mocked onto).
    pub fn keeping_nodes(mut self, names: impl IntoIterator<Item = String>) -> Client {
        self.kept_nodes = Arc::new(names.into_iter().collect());
        self
    }

    /// The real Nodes this client's mocks leave alone.
    pub fn kept_nodes(&self) -> &std::collections::BTreeSet<String> {
        &self.kept_nodes
    }

    /// The underlying kube client (same connection, same retry layer).
    pub fn kube(&self) -> &kube::Client {
        &self.kube
    }
}
