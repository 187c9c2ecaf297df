//! The chart cases' read-only checks, each a function over a client returning rows; every one
//! runs on any cluster (the local control plane has PDBs, Leases and APIServices as any cluster
//! has), so each is tested there.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{ListParams, PostParams};
use kube::Api;

use cases::{Row, Status};

use crate::ChartError;

/// A row (no scenario expectation behind it).
pub fn row(status: Status, check: impl Into<String>, object: impl Into<String>) -> Row {
    Row {
        status,
        check: check.into(),
        object: object.into(),
        expectation: None,
    }
}

fn api_error(what: String) -> impl FnOnce(kube::Error) -> ChartError {
    move |e| ChartError::Api {
        what,
        message: match e {
            kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
            other => other.to_string(),
        },
    }
}

/// The prefix of the operator's Deployments (worker `gpustack-operator-worker`, the device
/// managers) as the chart names them (case-1.sh `WORKER`, case-4.sh).
pub const OPERATOR_DEPLOYMENT_PREFIX: &str = "gpustack-operator";

/// The image name the operator's containers run (case-1.sh greps `/gpustack-operator:`).
pub const OPERATOR_IMAGE: &str = "gpustack-operator";

/// One operator Deployment and the image its operator container runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployed {
    pub name: String,
    pub image: String,
    pub replicas: i32,
    pub ready: i32,
}

/// The tag of an image reference (`repo/name:tag@sha256:…` → `tag`), `None` without one.
pub fn image_tag(image: &str) -> Option<&str> {
    let no_digest = image.split('@').next().unwrap_or(image);
    let last = no_digest.rsplit('/').next().unwrap_or(no_digest);
    last.split_once(':')
        .map(|(_, t)| t)
        .filter(|t| !t.is_empty())
}

/// The image's repository name without registry or tag (`ghcr.io/x/gpustack-operator:v1` →
/// `gpustack-operator`).
pub fn image_name(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    let last = no_digest.rsplit('/').next().unwrap_or(no_digest);
    last.split(':').next().unwrap_or(last)
}

/// A version without its one leading `v` (the chart composes the image tag as `v<appVersion>`).
pub fn bare(version: &str) -> &str {
    version.strip_prefix('v').unwrap_or(version)
}

/// The operator's Deployments in `namespace`: those named `gpustack-operator*`, with the image
/// of the container running the operator image (else the first container).
pub async fn operator_deployments(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<Deployed>, ChartError> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(api_error(format!("listing Deployments in {namespace}")))?;
    let mut out = Vec::new();
    for d in list.items {
        let name = d.metadata.name.clone().unwrap_or_default();
        if !name.starts_with(OPERATOR_DEPLOYMENT_PREFIX) {
            continue;
        }
        let containers = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|p| p.containers.clone())
            .unwrap_or_default();
        let image = containers
            .iter()
            .filter_map(|c| c.image.clone())
            .find(|i| image_name(i) == OPERATOR_IMAGE)
            .or_else(|| containers.first().and_then(|c| c.image.clone()))
            .unwrap_or_default();
        out.push(Deployed {
            name,
            image,
            replicas: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            ready: d
                .status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Whether the caller may `verb` `resource` (with `subresource`) in `namespace`, by a
/// SelfSubjectAccessReview (which writes nothing).
pub async fn may(
    client: &kube::Client,
    namespace: &str,
    verb: &str,
    resource: &str,
    subresource: Option<&str>,
) -> Result<bool, ChartError> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_string()),
                verb: Some(verb.to_string()),
                resource: Some(resource.to_string()),
                subresource: subresource.map(str::to_string),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answer = api
        .create(&PostParams::default(), &review)
        .await
        .map_err(api_error(format!("access review {verb} {resource}")))?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// The binary's own version row (case-1.sh runs `gpustack-operator --version` in the worker).
/// It needs a Running Pod, the RBAC to exec, and an exec client: this build of verify has none
/// (kube-rs's `ws` feature is off), so the row is a SKIP naming the first missing piece.
pub async fn binary_version_row(
    client: &kube::Client,
    namespace: &str,
    deployment: &str,
) -> Result<Row, ChartError> {
    let check = "binary version (gpustack-operator --version) == release";
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let running = pods
        .list(&ListParams::default())
        .await
        .map_err(api_error(format!("listing Pods in {namespace}")))?
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&format!("{deployment}-")))
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .count();
    if running == 0 {
        return Ok(row(
            Status::Skip,
            check,
            format!("no Running Pod of Deployment {namespace}/{deployment} to exec into"),
        ));
    }
    if !may(client, namespace, "create", "pods", Some("exec")).await? {
        return Ok(row(
            Status::Skip,
            check,
            format!("RBAC denies create pods/exec in {namespace}"),
        ));
    }
    Ok(row(
        Status::Skip,
        check,
        "exec needs a websocket client: this build of verify has kube-rs's `ws` feature off",
    ))
}

/// A row per PodDisruptionBudget named in `names`: PASS when it exists (with its
/// minAvailable), FAIL when it does not (case-4.sh's budgets).
pub async fn pdbs_exist(
    client: &kube::Client,
    namespace: &str,
    names: &[&str],
) -> Result<Vec<Row>, ChartError> {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    let mut rows = Vec::new();
    for name in names {
        let got = api
            .get_opt(name)
            .await
            .map_err(api_error(format!("PodDisruptionBudget {namespace}/{name}")))?;
        rows.push(match got {
            Some(p) => {
                let min = p
                    .spec
                    .and_then(|s| s.min_available)
                    .map(|m| match m {
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => {
                            i.to_string()
                        }
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => s,
                    })
                    .unwrap_or_else(|| "unset".into());
                row(
                    Status::Pass,
                    "disruption budget exists",
                    format!("PodDisruptionBudget {namespace}/{name} minAvailable={min}"),
                )
            }
            None => row(
                Status::Fail,
                "disruption budget exists",
                format!("PodDisruptionBudget {namespace}/{name} is missing"),
            ),
        });
    }
    Ok(rows)
}

/// A row per Lease named in `names`: PASS when it has a holder (case-4.sh reads
/// `spec.holderIdentity`, `<pod>_<uuid>`), FAIL when it is missing or unheld.
pub async fn leases_held(
    client: &kube::Client,
    namespace: &str,
    names: &[&str],
) -> Result<Vec<Row>, ChartError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let mut rows = Vec::new();
    for name in names {
        let got = api
            .get_opt(name)
            .await
            .map_err(api_error(format!("Lease {namespace}/{name}")))?;
        let holder = got
            .as_ref()
            .and_then(|l| l.spec.as_ref())
            .and_then(|s| s.holder_identity.clone())
            .filter(|h| !h.is_empty());
        rows.push(match (got.is_some(), holder) {
            (_, Some(h)) => row(
                Status::Pass,
                "leader lease has a holder",
                format!("Lease {namespace}/{name} held by {h}"),
            ),
            (true, None) => row(
                Status::Fail,
                "leader lease has a holder",
                format!("Lease {namespace}/{name} has no holder (is leader election on?)"),
            ),
            (false, None) => row(
                Status::Fail,
                "leader lease has a holder",
                format!("Lease {namespace}/{name} is missing"),
            ),
        });
    }
    Ok(rows)
}

/// A row per APIService named in `names`: PASS when its `Available` condition is `True`.
pub async fn apiservices_available(
    client: &kube::Client,
    names: &[&str],
) -> Result<Vec<Row>, ChartError> {
    let api: Api<APIService> = Api::all(client.clone());
    let mut rows = Vec::new();
    for name in names {
        let got = api
            .get_opt(name)
            .await
            .map_err(api_error(format!("APIService {name}")))?;
        let available = got.as_ref().map(|a| {
            a.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Available"))
                .map(|c| c.status.clone())
                .unwrap_or_else(|| "missing".into())
        });
        rows.push(match available {
            Some(s) if s == "True" => row(
                Status::Pass,
                "aggregated API is Available",
                format!("APIService {name}"),
            ),
            Some(s) => row(
                Status::Fail,
                "aggregated API is Available",
                format!("APIService {name} (Available={s})"),
            ),
            None => row(
                Status::Fail,
                "aggregated API is Available",
                format!("APIService {name} is missing"),
            ),
        });
    }
    Ok(rows)
}

/// Nodes a control-plane Pod can land on: not cordoned and without a NoSchedule/NoExecute
/// taint (case-4.sh counts them so a hard spread is never unsatisfiable).
pub async fn schedulable_nodes(client: &kube::Client) -> Result<usize, ChartError> {
    let api: Api<Node> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(api_error("listing Nodes".into()))?;
    Ok(list
        .items
        .iter()
        .filter(|n| {
            let spec = n.spec.as_ref();
            !spec.and_then(|s| s.unschedulable).unwrap_or(false)
                && !spec.and_then(|s| s.taints.as_ref()).is_some_and(|t| {
                    t.iter()
                        .any(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                })
        })
        .count())
}

/// Linux Nodes (case-8.sh: one node-data broker per Linux Node).
pub async fn linux_nodes(client: &kube::Client) -> Result<usize, ChartError> {
    let api: Api<Node> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels("kubernetes.io/os=linux"))
        .await
        .map_err(api_error("listing Nodes".into()))?;
    Ok(list.items.len())
}

/// A Deployment's ready and wanted replicas, `None` when it does not exist.
pub async fn deployment_ready(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<(i32, i32)>, ChartError> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let got = api
        .get_opt(name)
        .await
        .map_err(api_error(format!("Deployment {namespace}/{name}")))?;
    Ok(got.map(|d| {
        (
            d.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0),
            d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        )
    }))
}

/// A DaemonSet's ready and desired Pods, `None` when it does not exist.
pub async fn daemonset_ready(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<(i32, i32)>, ChartError> {
    let api: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    let got = api
        .get_opt(name)
        .await
        .map_err(api_error(format!("DaemonSet {namespace}/{name}")))?;
    Ok(got.map(|d| {
        d.status
            .map(|s| (s.number_ready, s.desired_number_scheduled))
            .unwrap_or((0, 0))
    }))
}

/// Pods in `namespace` matching `selector`.
pub async fn pods(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
) -> Result<Vec<Pod>, ChartError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    Ok(api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(api_error(format!("listing Pods {selector} in {namespace}")))?
        .items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split() {
        assert_eq!(
            image_tag("ghcr.io/gpustack/gpustack-operator:v0.6.1"),
            Some("v0.6.1")
        );
        assert_eq!(image_tag("localhost:5000/gpustack-operator"), None);
        assert_eq!(image_tag("gpustack-operator:v1@sha256:abc"), Some("v1"));
        assert_eq!(
            image_name("localhost:5000/x/gpustack-operator:v1"),
            "gpustack-operator"
        );
        assert_eq!(bare("v0.6.1"), "0.6.1");
        assert_eq!(bare("0.6.1"), "0.6.1");
    }
}
