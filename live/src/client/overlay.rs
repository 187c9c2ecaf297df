//! `--overlay-node NAME`: mocking onto a real node the way the e2e suite does (devices.md §2.4
//! "Choosing the node"): a node with no `Devices` of its own (so no Device Manager rewrites the
//! mocked ledger), never one of verify's fake nodes. The node itself is only read.

use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use super::localize::OverlayNode;
use super::{Client, ClientError, RUN_LABEL};
use crate::crd::Devices;
use crate::wire::read::CpuQuantityError;

impl Client {
    /// The real node `name` as a run may mock onto it, or why it may not (one line).
    pub async fn overlay_node(&self, name: &str) -> Result<OverlayNode, OverlayError> {
        let name_of = || name.to_string();
        let nodes =
            self.list::<Node>(None, None)
                .await
                .map_err(|source| OverlayError::ReadNode {
                    name: name_of(),
                    source,
                })?;
        let node = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(name))
            .ok_or_else(|| OverlayError::NoSuchNode { name: name_of() })?;
        let labels = model::labels::of(node.metadata.labels.iter().flatten());
        if labels.contains_key(RUN_LABEL) {
            return Err(OverlayError::Mocked { name: name_of() });
        }
        let devices = self
            .list::<Devices>(None, None)
            .await
            .map_err(|source| OverlayError::ListDevices { source })?;
        if devices
            .iter()
            .any(|d| d.metadata.name.as_deref() == Some(name))
        {
            return Err(OverlayError::HasDevices { name: name_of() });
        }
        let v = serde_json::to_value(node).unwrap_or_default();
        let ready = v
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
        if ready.is_some_and(|c| c["status"] != "True") {
            return Err(OverlayError::NotReady { name: name_of() });
        }
        let cpu = v
            .pointer("/status/capacity/cpu")
            .map(crate::wire::read::cpu_millis)
            .transpose()
            .map_err(|source| OverlayError::Cpu {
                name: name_of(),
                source,
            })?
            .unwrap_or(0);
        Ok(OverlayNode {
            name: name.to_string(),
            labels,
            annotations: model::labels::of(node.metadata.annotations.iter().flatten()),
            cpu_millis: cpu,
        })
    }
}

/// Why a run may not mock onto the node `--overlay-node` names.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("reading Node {name}: {source}")]
    ReadNode {
        name: String,
        #[source]
        source: ClientError,
    },
    #[error("--overlay-node {name}: no such Node")]
    NoSuchNode { name: String },
    #[error("--overlay-node {name}: a node verify mocked ({RUN_LABEL}), not a real one")]
    Mocked { name: String },
    #[error("listing Devices: {source}")]
    ListDevices {
        #[source]
        source: ClientError,
    },
    #[error(
        "--overlay-node {name}: it has Devices of its own; a Device Manager would rewrite \
         a mocked ledger there (pick a node without accelerators)"
    )]
    HasDevices { name: String },
    #[error("--overlay-node {name}: the node is not Ready")]
    NotReady { name: String },
    #[error("--overlay-node {name}: status.capacity.cpu: {source}")]
    Cpu {
        name: String,
        #[source]
        source: CpuQuantityError,
    },
}
