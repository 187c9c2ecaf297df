//! The objects the chain produces, as plain data (field names follow the real CRDs in
//! shared/crds; the oracle renders them to Kubernetes objects).

use serde::{Deserialize, Serialize};

use crate::devices::{PartitionProfile, ProfileCount};
use crate::labels::{Labels, Text};

/// One flavor a node contributes (`ExtractNodeFlavors`, chain.md §6.1–6.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeFlavor {
    pub name: Text,
    pub general_key: Text,
    /// Empty for a CPU flavor.
    pub accelerator_key: Text,
    pub os: Text,
    pub arch: Text,
    /// Per-node count: cores (`<n>c`) or cards (`<n>d`).
    pub count: u64,
    pub acceleratable: bool,
    /// Device manufacturer, or the CPU manufacturer (gManu) for a CPU flavor.
    pub manufacturer: Text,
    pub product: Text,
    pub family: Text,
    pub memory: Text,
    pub cores: Text,
    /// E3 topology profile (`fnv64-…`); empty in E2.
    pub profile: Text,
    /// `spec.nodeLabels` the flavor pins.
    pub node_labels: Labels,
}

/// `{operator: Exists}` and friends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Toleration {
    pub operator: Text,
}

/// A Kueue ResourceFlavor (chain.md §6.3).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceFlavor {
    pub name: Text,
    pub labels: Labels,
    /// `note.gpustack.ai/<k>` annotations.
    pub annotations: Labels,
    pub node_labels: Labels,
    pub tolerations: Vec<Toleration>,
    /// `gpustack-<profile>` in E3.
    pub topology_name: Option<Text>,
    /// Identity read from the first contributing node.
    pub flavor: NodeFlavor,
    /// Contributing node names, sorted.
    pub nodes: Vec<Text>,
    /// `|nodes| × count`.
    pub capacity: u64,
}

/// A Kueue `Topology` (`kueue.x-k8s.io/v1beta2`, cluster-scoped) the node topology
/// reconciler generates for a profile: `gpustack-<profile>`, labelled
/// `resource.gpustack.ai/type=topology`, `spec.levels[].nodeLabel` in order; never updated
/// (node_topology.go `ensureTopology`; devices.md §5).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Topology {
    pub name: Text,
    pub labels: Labels,
    /// `spec.levels[].nodeLabel`, coarsest first, `kubernetes.io/hostname` last.
    pub levels: Vec<Text>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitResources {
    pub cpu: Text,
    pub ram: Text,
}

/// InstanceType spec (api/worker/v1alpha1/instance_type.go @1e7b023).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstanceTypeSpec {
    pub display_name: Text,
    pub description: Text,
    pub inactive: bool,
    pub accelerator_group: Text,
    pub general_group: Text,
    pub acceleratable: bool,
    pub os: Text,
    pub arch: Text,
    pub unit_resources: UnitResources,
    pub local_storage: Text,
}

/// `{onceMaxRequest, remaining, capacity}`; units depend on the view (see four_views).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceView {
    pub once_max_request: i64,
    pub remaining: i64,
    pub capacity: i64,
}

/// The PT view plus its per-profile ledger (published spelling, name-sorted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PartitionView {
    #[serde(flatten)]
    pub view: ResourceView,
    pub allocated_profiles: Vec<ProfileCount>,
    pub remaining_profiles: Vec<ProfileCount>,
}

/// EX (cards), SH (shares, 10/card), SL (VRAM percent, 100/card), PT (partition instances).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FourViews {
    pub exclusive: ResourceView,
    pub shared: ResourceView,
    pub sliced: ResourceView,
    pub partitioned: PartitionView,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LogicalDetail {
    pub count: u64,
    pub cores_percentage_overcommit: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PhysicalDetail {
    pub count: u64,
    pub profiles: Vec<PartitionProfile>,
}

/// `AcceleratorSlicedDetail` aggregate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SlicedDetail {
    pub logical: LogicalDetail,
    pub physical: PhysicalDetail,
}

/// `InstanceTypeDetail` (chain.md §9.5). CPU fields are kept as the note's strings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Detail {
    pub manufacturer: Text,
    pub product: Text,
    pub family: Text,
    /// Per-card VRAM (the Pod webhook's memory divisor), e.g. `24Gi`.
    pub memory: Text,
    pub cores: Text,
    pub sliced_detail: SlicedDetail,
    pub runtime_version: Text,
    pub runtime_versions: Vec<Text>,
    /// Inline CPU fields (`physicalCores`, `logicalCores`, …) from the `cpuDetail` note.
    pub cpu: Labels,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    #[default]
    Active,
    Inactive,
    Draining,
    Transitioning,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InstanceTypeStatus {
    pub detail: Detail,
    pub entrance: Text,
    pub phase: Phase,
    pub views: FourViews,
    pub cpu: ResourceView,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InstanceType {
    pub name: Text,
    pub labels: Labels,
    pub spec: InstanceTypeSpec,
    pub status: InstanceTypeStatus,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum StopPolicy {
    #[default]
    None,
    Hold,
    HoldAndDrain,
}

impl StopPolicy {
    pub fn name(self) -> &'static str {
        match self {
            StopPolicy::None => "None",
            StopPolicy::Hold => "Hold",
            StopPolicy::HoldAndDrain => "HoldAndDrain",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlavorQuota {
    pub flavor: Text,
    pub nominal_quota: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceGroup {
    pub covered_resources: Vec<Text>,
    pub flavors: Vec<FlavorQuota>,
}

/// `spec.flavorFungibility`: what Kueue does when a flavor could borrow or preempt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlavorFungibility {
    pub when_can_borrow: Text,
    pub when_can_preempt: Text,
}

/// `spec.preemption` (`borrowWithinCohort` carries only its `policy`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueuePreemption {
    pub reclaim_within_cohort: Text,
    pub borrow_within_cohort_policy: Text,
    pub within_cluster_queue: Text,
}

/// A Kueue ClusterQueue backing one pool (chain.md §10).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClusterQueue {
    pub name: Text,
    pub labels: Labels,
    pub annotations: Labels,
    /// Always empty: every pool queue is isolated.
    pub cohort: Text,
    pub stop_policy: StopPolicy,
    pub resource_groups: Vec<ResourceGroup>,
    /// AdmissionCheck names, node-devices first.
    pub admission_checks: Vec<Text>,
    /// `spec.namespaceSelector.matchLabels`; `Some(empty)` is `{}` (every namespace), `None` an
    /// absent selector (Kueue then matches no namespace).
    #[serde(default)]
    pub namespace_selector: Option<Labels>,
    /// `None` = the field is absent.
    #[serde(default)]
    pub flavor_fungibility: Option<FlavorFungibility>,
    /// `None` = the field is absent.
    #[serde(default)]
    pub preemption: Option<QueuePreemption>,
}

/// A LocalQueue: the pool's entrance in one namespace (chain.md §11).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LocalQueue {
    pub namespace: Text,
    pub name: Text,
    pub cluster_queue: Text,
    pub annotations: Labels,
    /// `metadata.ownerReferences[0]`: its ClusterQueue, so the garbage collector removes it
    /// with the queue.
    #[serde(default)]
    pub owner: OwnerReference,
}

/// One `metadata.ownerReferences[]` entry as the model predicts it; the owner's `uid` is the
/// API server's and is filled in by whoever writes the object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OwnerReference {
    pub api_version: Text,
    pub kind: Text,
    pub name: Text,
    pub controller: bool,
    pub block_owner_deletion: bool,
}
