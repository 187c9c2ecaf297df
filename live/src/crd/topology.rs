//! Topology-aware scheduling objects: Kueue's `Topology` (`kueue.x-k8s.io/v1beta2`, names as in
//! shared/crds/kueue.x-k8s.io_topologies.yaml) and the operator's `TopologySource`
//! (`worker.gpustack.ai/v1alpha1`, api/worker/v1alpha1/topology_source.go; only the fields the
//! node topology reconciler reads: levels, the `matchLabels` of its node selector, the Ready
//! condition).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::kueue::Condition;

/// A Topology's levels, coarsest first, `kubernetes.io/hostname` last. No status
/// subresource; `spec.levels` is immutable.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(group = "kueue.x-k8s.io", version = "v1beta2", kind = "Topology")]
#[serde(rename_all = "camelCase")]
pub struct TopologySpec {
    pub levels: Vec<TopologyLevel>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyLevel {
    pub node_label: String,
}

/// Where node topology levels come from: the levels and the nodes they apply to.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "worker.gpustack.ai",
    version = "v1alpha1",
    kind = "TopologySource",
    status = "TopologySourceStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct TopologySourceSpec {
    pub levels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TopologySourceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}
