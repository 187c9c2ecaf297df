//! A Workload as Kueue sees it: pod sets × count × per-pod container requests, plus what Kueue
//! assigned (admission.md §6.1–6.3). Quantities stay Kubernetes quantity strings until a rule
//! reads them, so a malformed quantity is reported by the rule that needs it.

use serde::{Deserialize, Serialize};

use crate::labels::Labels;

/// Resource name → quantity string (`"2"`, `"500m"`, `"24Gi"`).
pub type ResourceList = std::collections::BTreeMap<String, String>;

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Container {
    pub name: String,
    pub requests: ResourceList,
    pub limits: ResourceList,
    /// An init container (runs before the app containers; its requests do not add up with them).
    pub init: bool,
}

/// One pod set: `count` identical pods.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct PodSet {
    pub name: String,
    pub count: u32,
    pub containers: Vec<Container>,
    /// Pod labels/annotations that rules read (e.g. the `kueue.x-k8s.io/queue-name` label).
    pub labels: Labels,
    /// The ResourceFlavor Kueue assigned to the accelerator resource, once quota is reserved.
    pub flavor: Option<String>,
    /// Node chosen by topology-aware scheduling at hostname level, if any.
    pub node: Option<String>,
}

/// A Workload submitted to a pool's entrance LocalQueue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Workload {
    pub name: String,
    pub namespace: String,
    /// The LocalQueue (`gpustack-fnv64-…`) it was submitted to.
    pub queue: String,
    pub pod_sets: Vec<PodSet>,
    /// The ModelDeployment replica it stands for, if any (the joint check reads it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<crate::admission::joint::DeploymentReplica>,
}
