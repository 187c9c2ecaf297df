//! The model's input: a cluster shape (nodes, their Devices, namespaces) and the settings.

use serde::{Deserialize, Serialize};

use crate::devices::{Devices, Network};
use crate::labels::{Labels, DEFAULT_SYSTEM_NAMESPACE};
use crate::objects::InstanceTypeSpec;

/// A Node as NFD and the kubelet leave it, before the Worker and Device Manager label it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Node {
    pub name: String,
    /// kubelet and NFD labels (`kubernetes.io/os|arch`, `feature.node.kubernetes.io/cpu-model.*`, …).
    pub labels: Labels,
    /// NodeFeatureRule annotations (`feature.gpustack.ai/cpu-name`, …).
    pub annotations: Labels,
    /// `status.capacity.cpu` in millicores.
    pub cpu_millis: u64,
    /// A deletionTimestamp is set; such a node still counts (node_flavor.go @187ec70).
    pub deleting: bool,
    /// The node's `Devices` object (none for a node without accelerators).
    pub devices: Option<Devices>,
    /// NICs and card topology of the same `Devices` object (research/devices.md §4); read
    /// only when `devices` is present.
    #[serde(skip_serializing_if = "Network::is_empty")]
    pub network: Network,
}

impl Node {
    /// Every card of the node's Devices, group by group (none without Devices).
    pub fn cards(&self) -> impl Iterator<Item = &crate::devices::Card> {
        self.devices
            .iter()
            .flat_map(|d| &d.groups)
            .flat_map(|g| &g.cards)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Namespace {
    pub name: String,
    pub terminating: bool,
}

/// Which SH once-max rule to apply (research/corrections.md 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SharedOnceMax {
    /// Newest: the largest node's count of cards with at least one free share (@7b0508ff).
    #[default]
    Cards,
    /// Earlier: the largest node's sum of free shares (@0ae3355, `TestAcceleratorFourViews`).
    Shares,
}

/// Whether NodeQueue waits for Kueue to observe the current generation before dropping a
/// flavor (research/corrections.md 2; conformance README `queue_status_gate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueStatusGate {
    /// Newest: wait for Kueue's Active condition at the current generation (RequeueAfter 5 s,
    /// TopologyReady=Unknown `AwaitingQueueStatus`); node_queue.go.
    #[default]
    Present,
    /// Earlier test revision: a dropped flavor starts the migration at once.
    Absent,
}

/// Which queues reference the `gpustack-model-deployment-joint` AdmissionCheck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JointCheckGate {
    /// Newest: every operator-owned queue once the check is Active, in both InstanceType modes
    /// (docs/modules scheduling; the case-106 header: a queue born with
    /// `instance-type-derived-from-node` off references it too).
    #[default]
    Always,
    /// Earlier node_queue.go (`reconcile`, the admissionChecksStrategy rules): only while
    /// `instance-type-derived-from-node` is on.
    DerivedFromNode,
}

/// Which code era the chain follows (research/chain.md §0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// CPU-awareness era: no topology profile in flavor names.
    E2,
    /// Topology-aware (newest): `-fnv64-` flavor suffix, empty-plan holds.
    #[default]
    E3,
}

/// Operator settings and contract variants (research/chain.md §13).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// `instance-type-aware-cpu-manufacturer` (default false).
    pub aware_cpu_manufacturer: bool,
    /// `instance-type-mixed-on-node` (default true).
    pub mixed_on_node: bool,
    /// `instance-type-derived-from-node` (default true).
    pub derived_from_node: bool,
    /// `node-management-manual` (default false).
    pub manual_node_management: bool,
    /// `instance-type-drain-when-no-flavors` (default true).
    pub drain_when_no_flavors: bool,
    /// `instance-general-resources-overcommit` (default true).
    pub general_resources_overcommit: bool,
    pub era: Era,
    /// Also switches the SL slot gate: under `Cards` a free or Sliced card counts toward SL
    /// only while it has a free slice slot (both rules come from instance_type.go @7b0508ff).
    pub shared_once_max: SharedOnceMax,
    pub queue_status_gate: QueueStatusGate,
    /// Whether the `gpustack-node-devices` AdmissionCheck is Active.
    pub node_devices_check_active: bool,
    /// Whether the `gpustack-model-deployment-joint` AdmissionCheck is Active.
    pub joint_check_active: bool,
    pub joint_check_gate: JointCheckGate,
    /// How the joint check groups a ModelDeployment's replicas (newest: per replica, by role).
    pub joint_grouping: crate::admission::joint::JointGrouping,
    /// `KUBERNETES_POD_NAMESPACE`, reserved from LocalQueues.
    pub system_namespace: String,
    /// An injected operator bug (fuzzer self-test); `None` is the operator as documented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutant: Option<crate::mutants::Mutant>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            aware_cpu_manufacturer: false,
            mixed_on_node: true,
            derived_from_node: true,
            manual_node_management: false,
            drain_when_no_flavors: true,
            general_resources_overcommit: true,
            era: Era::E3,
            shared_once_max: SharedOnceMax::Cards,
            queue_status_gate: QueueStatusGate::Present,
            node_devices_check_active: true,
            joint_check_active: true,
            joint_check_gate: JointCheckGate::Always,
            joint_grouping: crate::admission::joint::JointGrouping::Replicas,
            system_namespace: DEFAULT_SYSTEM_NAMESPACE.to_string(),
            mutant: None,
        }
    }
}

/// An InstanceType that already exists: written by an administrator (its pool is resolved by
/// labels), or authored earlier by the operator from a node (`derived_from_node`; such types
/// are create-only and never removed for lack of flavors, chain.md §8.4, §14 item 11).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ExistingInstanceType {
    pub name: String,
    pub spec: InstanceTypeSpec,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub derived_from_node: bool,
}

/// A ClusterQueue the operator does not own (no `resource.gpustack.ai/type=instancetypes`
/// label): an administrator's or another controller's. Only what the entrance reconciler reads
/// of it (node_queue_entrance.go, `enqueueClusterQueueWhenNamespaceCreated`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct ForeignQueue {
    pub name: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub terminating: bool,
}

/// A `TopologySource` (cluster-scoped, `worker.gpustack.ai`), reduced to what the node
/// topology reconciler reads of it: its levels, its node selector and its Ready condition
/// (api/worker/v1alpha1/topology_source.go; node_topology.go `resolveNodeTopologyLevels`).
/// The selector is the `matchLabels` arm only (an empty one selects every node); the writing
/// arms (`configMap`, `webhook`) show up here as the labels they put on the nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct TopologySource {
    pub name: String,
    /// `spec.levels`, coarsest first (1–16 distinct keys, hostname forbidden by the CRD).
    pub levels: Vec<String>,
    /// `spec.nodeSelector.matchLabels`.
    pub node_selector: Labels,
    /// `status.conditions[Ready]` is True.
    pub ready: bool,
}

/// The whole input of one derivation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub namespaces: Vec<Namespace>,
    pub settings: Settings,
    pub instance_types: Vec<ExistingInstanceType>,
    /// ClusterQueues present before the operator started that it does not own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign_queues: Vec<ForeignQueue>,
    /// TopologySources; none gives every node the hostname-only profile.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology_sources: Vec<TopologySource>,
}
