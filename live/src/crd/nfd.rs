//! `nfd.k8s-sigs.io/v1alpha1` NodeFeature: the labels NFD merges onto the Node named by the
//! object's `nfd.node.kubernetes.io/node-name` label (research/devices.md §2.4 step 1).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The label NFD reads to find the Node a NodeFeature belongs to.
pub const NODE_NAME_LABEL: &str = "nfd.node.kubernetes.io/node-name";

#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "nfd.k8s-sigs.io",
    version = "v1alpha1",
    kind = "NodeFeature",
    namespaced
)]
pub struct NodeFeatureSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}
