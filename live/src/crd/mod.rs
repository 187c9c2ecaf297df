//! Typed custom resources: the fields verify writes and reads of each kind on the chain, as
//! kube `CustomResource`s. Their generated CRDs ([`own_crds`]) are the project's own structural
//! schemas: `tests/own_schemas.rs` checks them against the real CRDs in shared/crds, and the
//! embedded twin validates with them (`server::schemas::install_validators`).

pub mod kueue;
pub mod nfd;
pub mod topology;
pub mod worker;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor, Workload};
pub use nfd::NodeFeature;
pub use topology::{Topology, TopologySource};
pub use worker::{Devices, InstanceType};

use crate::wire::kinds::{self, Kind};

/// Where the real CRDs are read from in tests: `$VERIFY_CRDS_DIR`, else `../shared/crds`
/// beside the workspace (data only, never copied into the repository).
pub fn shared_crds_dir() -> std::path::PathBuf {
    std::env::var_os("VERIFY_CRDS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/crds")
        })
}

/// Why a real CRD could not be had from [`shared_crds_dir`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharedCrdError {
    /// The file is not there (tests skip, printing this).
    #[error("cannot read {path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path} does not parse: {message}")]
    Malformed { path: String, message: String },
}

/// The real CRD of `kind` (`<group>_<plural>.yaml` in [`shared_crds_dir`]) as JSON.
pub fn shared_crd(kind: &Kind) -> Result<serde_json::Value, SharedCrdError> {
    let path = shared_crds_dir().join(format!("{}_{}.yaml", kind.group, kind.plural));
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| SharedCrdError::Unreadable {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    serde_norway::from_str(&text).map_err(|e| SharedCrdError::Malformed {
        path: shown,
        message: e.to_string(),
    })
}

/// Every typed custom resource's generated CRD, with the twin kind it serves.
pub fn own_crds() -> Vec<(Kind, CustomResourceDefinition)> {
    vec![
        (kinds::NODE_FEATURE, NodeFeature::crd()),
        (kinds::DEVICES, Devices::crd()),
        (kinds::INSTANCE_TYPE, InstanceType::crd()),
        (kinds::TOPOLOGY_SOURCE, TopologySource::crd()),
        (kinds::TOPOLOGY, Topology::crd()),
        (kinds::RESOURCE_FLAVOR, ResourceFlavor::crd()),
        (kinds::CLUSTER_QUEUE, ClusterQueue::crd()),
        (kinds::LOCAL_QUEUE, LocalQueue::crd()),
        (kinds::ADMISSION_CHECK, AdmissionCheck::crd()),
        (kinds::WORKLOAD, Workload::crd()),
    ]
}

/// The `openAPIV3Schema` of a generated CRD's (only) version, as JSON.
pub fn own_schema(crd: &CustomResourceDefinition) -> Option<serde_json::Value> {
    let version = crd.spec.versions.iter().find(|v| v.storage)?;
    let schema = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    serde_json::to_value(schema).ok()
}
