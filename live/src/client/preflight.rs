//! Connecting safely, and the read-only preflight (issue 7 "Connecting"; DESIGN.md "Safety on
//! a real cluster"). The kubeconfig is found as kubectl finds it (`--kubeconfig`, else
//! `KUBECONFIG`, else `~/.kube/config`) and never written, so its current context never
//! changes. Mutating commands must name `--context` on a real cluster; only the embedded twin
//! may be used without it: a current context named [`TWIN_CONTEXT`] is taken only once its
//! server answers as a twin ([`Client::is_embedded_twin`]), never on the name alone. Preflight checks
//! (GETs, discovery and SelfSubjectAccessReviews, which write nothing) report each missing
//! piece on one line. Each is retried as every other request of the client is
//! ([`Client::retrying`]): one 500 or 429 must not end a run at its preflight.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{ListParams, PostParams};
use kube::config::{Kubeconfig, KubeconfigError};
use kube::Api;

use super::{Client, ClientError};
use crate::crd::{AdmissionCheck, ClusterQueue};
use crate::wire::kinds::{self, Kind};

/// The context name of the embedded twin's kubeconfig (`verify twin serve`, the twin tier).
pub const TWIN_CONTEXT: &str = "verify-twin";

/// The operator's AdmissionCheck (research/admission.md: the node-devices gate).
pub use model::labels::NODE_DEVICES_CHECK;

/// The kubeconfig a command uses, and where it came from (for messages).
pub struct Loaded {
    pub kubeconfig: Kubeconfig,
    pub origin: String,
}

/// Reads the kubeconfig as kubectl does: `explicit`, else `KUBECONFIG` (a path list, merged),
/// else `~/.kube/config`.
pub fn load_kubeconfig(explicit: Option<&Path>) -> Result<Loaded, ConnectError> {
    let origin = match explicit {
        Some(p) => p.display().to_string(),
        None => std::env::var("KUBECONFIG")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default_path().display().to_string()),
    };
    let read = match explicit {
        Some(p) => Kubeconfig::read_from(p),
        None => Kubeconfig::read(),
    };
    // inside a Pod with no kubeconfig: the service account, as kubectl and kube-rs fall back
    if explicit.is_none() && read.is_err() {
        if let (Ok(host), Ok(port)) = (
            std::env::var("KUBERNETES_SERVICE_HOST"),
            std::env::var("KUBERNETES_SERVICE_PORT"),
        ) {
            if let Ok(kubeconfig) = in_cluster_kubeconfig(&host, &port, Path::new(SERVICE_ACCOUNT))
            {
                return Ok(Loaded {
                    kubeconfig,
                    origin: format!("the in-cluster service account ({SERVICE_ACCOUNT})"),
                });
            }
        }
    }
    read.map(|kubeconfig| Loaded {
        kubeconfig,
        origin: origin.clone(),
    })
    .map_err(|e| {
        ConnectError::from(ClientError::Kubeconfig {
            path: origin,
            message: e.to_string(),
        })
    })
}

/// Where a Pod's service account credentials are mounted.
pub const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The context name of the in-cluster kubeconfig ([`in_cluster_kubeconfig`]).
pub const IN_CLUSTER_CONTEXT: &str = "in-cluster";

/// A kubeconfig for the API server a Pod reaches (`KUBERNETES_SERVICE_HOST`/`_PORT`) with its
/// service account's token file and CA (`sa_dir`), as the one current context
/// [`IN_CLUSTER_CONTEXT`]; the token file is re-read as it rotates.
pub fn in_cluster_kubeconfig(
    host: &str,
    port: &str,
    sa_dir: &Path,
) -> Result<Kubeconfig, KubeconfigError> {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let text = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": IN_CLUSTER_CONTEXT,
        "clusters": [{"name": IN_CLUSTER_CONTEXT, "cluster": {
            "server": format!("https://{host}:{port}"),
            "certificate-authority": sa_dir.join("ca.crt").display().to_string(),
        }}],
        "users": [{"name": IN_CLUSTER_CONTEXT, "user": {
            "tokenFile": sa_dir.join("token").display().to_string(),
        }}],
        "contexts": [{"name": IN_CLUSTER_CONTEXT, "context": {
            "cluster": IN_CLUSTER_CONTEXT, "user": IN_CLUSTER_CONTEXT,
        }}],
    })
    .to_string();
    Kubeconfig::from_yaml(&text)
}

fn default_path() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".kube")
        .join("config")
}

/// Whether a command may change objects on the cluster it is about to contact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    Mutating,
}

/// Why a command refuses to start: a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The context a command runs against: `--context` when given; for a read-only command the
/// kubeconfig's current context; a mutating command without `--context` only on the twin.
pub fn choose_context(
    loaded: &Loaded,
    context: Option<&str>,
    access: Access,
) -> Result<String, Refused> {
    if let Some(c) = context {
        return Ok(c.to_string());
    }
    let current = loaded.kubeconfig.current_context.clone();
    match (current, access) {
        (Some(c), Access::ReadOnly) => Ok(c),
        (Some(c), Access::Mutating) if c == TWIN_CONTEXT => Ok(c),
        (Some(c), Access::Mutating) => Err(Refused(format!(
            "refusing to change a cluster without --context: the current context of {} is `{c}`; \
             pass it explicitly to confirm (--context {c})",
            loaded.origin
        ))),
        (None, _) => Err(Refused(format!(
            "{} names no current context; pass --context NAME",
            loaded.origin
        ))),
    }
}

/// Connects through the chosen context (the kubeconfig is read, never written).
pub async fn connect(
    explicit: Option<&Path>,
    context: Option<&str>,
    access: Access,
) -> Result<Client, ConnectError> {
    let loaded = load_kubeconfig(explicit)?;
    let chosen = choose_context(&loaded, context, access)?;
    let client = Client::from_kubeconfig(loaded.kubeconfig, &chosen).await?;
    implicit_twin_answers(&client, context, access).await?;
    Ok(client)
}

/// A mutating command let off `--context` because the current context is named
/// [`TWIN_CONTEXT`] goes on only if the server answers as a twin.
pub async fn implicit_twin_answers(
    client: &Client,
    context: Option<&str>,
    access: Access,
) -> Result<(), Refused> {
    if context.is_some() || access == Access::ReadOnly || client.is_embedded_twin().await {
        return Ok(());
    }
    // a server that does not answer at all is the caller's to report ([`Client::reachable`],
    // exit 3), not a refusal of its name; nothing is written to it either way
    if client.reachable().await.is_err() {
        return Ok(());
    }
    let target = client.target();
    Err(Refused(format!(
        "refusing to change a cluster without --context: the current context `{}` ({}) is \
         named like the embedded twin but its server does not answer as one; pass it \
         explicitly to confirm (--context {})",
        target.context, target.server, target.context
    )))
}

/// Why [`connect`] failed: a refusal (exit 2) or the kubeconfig/connection (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error(transparent)]
    Client(Box<ClientError>),
}

impl From<ClientError> for ConnectError {
    fn from(e: ClientError) -> Self {
        ConnectError::Client(Box::new(e))
    }
}

impl outcome::Concluded for ConnectError {
    /// A refused target, a bad kubeconfig or context is the user's to fix; a server that
    /// does not answer leaves the run unjudged.
    fn outcome(&self) -> outcome::Outcome {
        match self {
            ConnectError::Refused(_) => outcome::Outcome::Usage,
            ConnectError::Client(e)
                if matches!(
                    **e,
                    ClientError::Kubeconfig { .. } | ClientError::Context { .. }
                ) =>
            {
                outcome::Outcome::Usage
            }
            ConnectError::Client(_) => outcome::Outcome::Inconclusive,
        }
    }
}

/// The operator's namespace (research/cases.md: `NS` defaults to `gpustack-system`).
pub const OPERATOR_NAMESPACE: &str = "gpustack-system";

/// Prefix of the ClusterQueues the operator derives, one per pool (research/chain.md §10).
pub const POOL_QUEUE_PREFIX: &str = "gpustack--";

/// The kinds whose CRDs (or core APIs) a run reads or writes, at the versions verify speaks.
pub const SERVED_KINDS: [Kind; 8] = [
    kinds::NODE,
    kinds::NAMESPACE,
    kinds::NODE_FEATURE,
    kinds::DEVICES,
    kinds::INSTANCE_TYPE,
    kinds::RESOURCE_FLAVOR,
    kinds::CLUSTER_QUEUE,
    kinds::LOCAL_QUEUE,
];

impl Client {
    /// The first lines every command that contacts a cluster prints: context, server and the
    /// operator's version (the image of its Deployment, when it can be read).
    pub async fn banner(&self) -> Vec<String> {
        vec![
            format!("context: {}", self.target().context),
            format!("server: {}", self.target().server),
            format!("operator: {}", self.operator_version().await),
        ]
    }

    /// The image of the `gpustack` Deployments in [`OPERATOR_NAMESPACE`], or why it is unknown.
    async fn operator_version(&self) -> String {
        let api: Api<Deployment> = Api::namespaced(self.kube().clone(), OPERATOR_NAMESPACE);
        let what = format!("listing Deployments in {OPERATOR_NAMESPACE}");
        let all = ListParams::default();
        match self
            .retrying(&what, || api.list(&all))
            .await
            .map_err(api_error)
        {
            Ok(list) => {
                let images: Vec<String> = list
                    .items
                    .iter()
                    .flat_map(|d| d.spec.iter().flat_map(|s| s.template.spec.iter()))
                    .flat_map(|p| p.containers.iter())
                    .filter_map(|c| c.image.clone())
                    .filter(|i| i.contains("gpustack"))
                    .collect();
                if images.is_empty() {
                    format!("unknown (no gpustack image in {OPERATOR_NAMESPACE} Deployments)")
                } else {
                    images.join(", ")
                }
            }
            Err(kube::Error::Api(e)) => format!(
                "unknown (Deployments in {OPERATOR_NAMESPACE}: {} {})",
                e.code, e.reason
            ),
            Err(e) => format!("unknown (Deployments in {OPERATOR_NAMESPACE}: {e})"),
        }
    }

    /// The read-only preflight: each missing piece one line (empty: ready). `access` picks the
    /// verbs the access reviews ask about; `operator` also requires the operator's
    /// AdmissionCheck and ClusterQueues (a cleanup does not need them).
    /// A server that does not answer is one line ([`Client::reachable`]).
    pub async fn preflight(&self, access: Access, operator: bool) -> Vec<String> {
        if let Err(e) = self.reachable().await {
            return vec![e.to_string()];
        }
        let mut missing = Vec::new();
        for kind in SERVED_KINDS {
            match self.served(&kind).await {
                Ok(()) => {}
                // no answer even after retries: every other check would say the same again
                Err(why) if why.is_unanswered() => return vec![why.to_string()],
                Err(why) => missing.push(why.to_string()),
            }
        }
        if operator {
            missing.extend(self.operator_objects().await);
        }
        missing.extend(self.access_reviews(access).await);
        missing
    }

    /// The operator's AdmissionCheck and at least one of its pool ClusterQueues.
    async fn operator_objects(&self) -> Vec<String> {
        let mut missing = Vec::new();
        let checks: Api<AdmissionCheck> = Api::all(self.kube().clone());
        let what = format!("reading AdmissionCheck {NODE_DEVICES_CHECK}");
        match self
            .retrying(&what, || checks.get_opt(NODE_DEVICES_CHECK))
            .await
        {
            Ok(Some(_)) => {}
            Ok(None) => missing.push(format!(
                "AdmissionCheck {NODE_DEVICES_CHECK} does not exist: is the operator installed?"
            )),
            Err(e) => missing.push(e.to_string()),
        }
        let queues: Api<ClusterQueue> = Api::all(self.kube().clone());
        let all = ListParams::default();
        match self
            .retrying("listing ClusterQueues", || queues.list(&all))
            .await
        {
            Ok(l)
                if l.items.iter().any(|q| {
                    q.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(POOL_QUEUE_PREFIX))
                }) => {}
            Ok(_) => missing.push(format!(
                "no ClusterQueue named {POOL_QUEUE_PREFIX}…: the operator has derived no pool"
            )),
            Err(e) => missing.push(e.to_string()),
        }
        missing
    }

    /// `Err` (a preflight line) unless discovery lists `kind` at its group/version.
    async fn served(&self, kind: &Kind) -> Result<(), Unserved> {
        let api_version = kind.api_version();
        let what = format!("discovery of {api_version}");
        let listed = self
            .retrying(&what, || async {
                if kind.group.is_empty() {
                    self.kube().list_core_api_resources(kind.version).await
                } else {
                    self.kube().list_api_group_resources(&api_version).await
                }
            })
            .await
            .map_err(api_error);
        match listed {
            Ok(l) if l.resources.iter().any(|r| r.name == kind.plural) => Ok(()),
            Ok(_) | Err(kube::Error::Api(kube::core::ErrorResponse { code: 404, .. })) => {
                Err(Unserved::Missing {
                    kind: kind.kind,
                    resource: kind.qualified_resource(),
                    api_version: kind.api_version(),
                })
            }
            Err(source) => Err(Unserved::Discovery {
                api_version: kind.api_version(),
                source: Box::new(source),
            }),
        }
    }

    /// One line per verb the caller may not use (a server that cannot answer fails the
    /// check; the embedded twin answers as a server without RBAC: allowed).
    async fn access_reviews(&self, access: Access) -> Vec<String> {
        let mut out = Vec::new();
        let api: Api<SelfSubjectAccessReview> = Api::all(self.kube().clone());
        let post = PostParams::default();
        for (verb, kind, subresource) in needed_verbs(access) {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(kind.group.to_string()),
                        resource: Some(kind.plural.to_string()),
                        subresource: subresource.map(str::to_string),
                        verb: Some(verb.to_string()),
                        ..ResourceAttributes::default()
                    }),
                    ..SelfSubjectAccessReviewSpec::default()
                },
                ..SelfSubjectAccessReview::default()
            };
            let what = match subresource {
                Some(s) => format!("{verb} {}/{s}", kind.qualified_resource()),
                None => format!("{verb} {}", kind.qualified_resource()),
            };
            let asked = self
                .retrying(&format!("reviewing access to {what}"), || {
                    api.create(&post, &review)
                })
                .await
                .map_err(api_error);
            match asked {
                Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => {}
                Ok(r) => out.push(format!(
                    "not allowed to {what}{}",
                    r.status
                        .and_then(|s| s.reason)
                        .map(|why| format!(": {why}"))
                        .unwrap_or_default()
                )),
                Err(e) => out.push(format!("cannot review access to {what}: {e}")),
            }
        }
        out
    }
}

/// `(verb, kind, subresource)` a run needs: a read-only run lists (every audited kind, the
/// AdmissionChecks among them: the audit reads their `Active` conditions) and gets the
/// operator's AdmissionCheck (the preflight reads it by name); a mutating run also creates,
/// patches and deletes what it mocks (Nodes, Namespaces, NodeFeatures, Devices with their
/// `/status`, InstanceTypes, charging Pods — which teardown also lists, NodeFeatures among
/// them), watches what quiescence waits on (`quiesce::STREAM_KINDS`), and the Workloads whose
/// gate-3 verdicts it reads back. deploy/rbac.yaml's ClusterRole is exactly this list
/// (tests/deploy.rs).
pub fn needed_verbs(access: Access) -> Vec<(&'static str, Kind, Option<&'static str>)> {
    let mut out: Vec<_> = kinds::AUDITED_KINDS
        .into_iter()
        .map(|k| ("list", k, None))
        .collect();
    out.push(("get", kinds::ADMISSION_CHECK, None));
    if access == Access::Mutating {
        out.push(("list", kinds::NODE_FEATURE, None));
        for kind in super::quiesce::STREAM_KINDS {
            out.push(("watch", kind, None));
        }
        for kind in [
            kinds::NODE,
            kinds::NAMESPACE,
            kinds::NODE_FEATURE,
            kinds::DEVICES,
            kinds::INSTANCE_TYPE,
        ] {
            for verb in ["create", "patch", "delete"] {
                out.push((verb, kind, None));
            }
        }
        out.push(("patch", kinds::DEVICES, Some("status")));
        for verb in ["list", "create", "patch", "delete"] {
            out.push((verb, kinds::POD, None));
        }
        // gate-3 verdicts are read back from Workloads submitted to the run's queues
        for verb in ["list", "create", "get", "watch", "delete"] {
            out.push((verb, kinds::WORKLOAD, None));
        }
    }
    out
}

/// Runs `f` to completion on a fresh current-thread runtime (the CLI's commands are
/// synchronous; the client is async).
pub fn block_on<F: std::future::Future>(f: F) -> std::io::Result<F::Output> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_run_only_reads_and_lists_the_admission_checks() {
        let verbs = needed_verbs(Access::ReadOnly);
        assert!(
            verbs
                .iter()
                .all(|(v, _, s)| (*v == "list" || *v == "get") && s.is_none()),
            "{verbs:?}"
        );
        assert!(verbs.iter().any(|(_, k, _)| *k == kinds::ADMISSION_CHECK));
        let mutating = needed_verbs(Access::Mutating);
        assert!(!mutating
            .iter()
            .any(|(v, k, _)| *k == kinds::ADMISSION_CHECK && *v != "list" && *v != "get"));
    }
}

/// The server's error inside a retried request's [`ClientError`], for the callers that tell
/// an answer (a 403, a 404) from a failure to get one.
fn api_error(e: ClientError) -> kube::Error {
    match e {
        ClientError::Api { source, .. } => *source,
        other => kube::Error::Service(Box::new(other)),
    }
}

impl Unserved {
    /// Whether the server gave no answer at all (refused, unreachable, TLS), as opposed to an
    /// answer saying no.
    fn is_unanswered(&self) -> bool {
        matches!(self, Unserved::Discovery { source, .. } if !matches!(**source, kube::Error::Api(_)))
    }
}

/// A kind discovery does not list: the preflight's line for it.
#[derive(Debug, thiserror::Error)]
enum Unserved {
    #[error("{kind} ({resource}) is not served at {api_version}: install or upgrade its CRD")]
    Missing {
        kind: &'static str,
        resource: String,
        api_version: String,
    },
    #[error("discovery of {api_version}: {source}")]
    Discovery {
        api_version: String,
        #[source]
        source: Box<kube::Error>,
    },
}
