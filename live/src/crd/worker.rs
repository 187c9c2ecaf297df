//! `worker.gpustack.ai/v1alpha1`: Devices (the per-node card capability and ledger) and
//! InstanceType (a pool's projection), both cluster-scoped with a status subresource. Field names
//! as in shared/crds/worker.gpustack.ai_{devices,instancetypes}.yaml (research/devices.md §1).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `Devices.spec`: what the Device Manager detected on the node named like the object.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "worker.gpustack.ai",
    version = "v1alpha1",
    kind = "Devices",
    plural = "devices",
    status = "DevicesStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct DevicesSpec {
    pub groups: Vec<DeviceGroup>,
    /// The worker's NIC inventory (research/devices.md §1.2, §4.1); absent until the first
    /// successful enumeration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interfaces: Option<Vec<DeviceInterface>>,
}

/// `DeviceInterface` (map key `name`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInterface {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_root_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_switches: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_affinity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_affinity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
    #[serde(default, rename = "virtual", skip_serializing_if = "Option::is_none")]
    pub is_virtual: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sriov: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_functions: Option<Vec<DeviceInterfaceVirtualFunction>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<DeviceInterfaceLink>,
}

/// `DeviceInterfaceVirtualFunction`: one SR-IOV VF under its PF.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInterfaceVirtualFunction {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_affinity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_affinity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<DeviceInterfaceLink>,
}

/// `DeviceInterfaceLink`: `state` is `ok`, `unverified` or `failed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInterfaceLink {
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen_time: Option<String>,
}

/// `DeviceFabric`: a card's scale-up domain (research/devices.md §4.6).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceFabric {
    pub kind: String,
    pub id: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub fabric_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clique_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<String>>,
}

/// One accelerator model on the node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceGroup {
    pub id: String,
    pub manufacturer: String,
    pub name: String,
    /// Per-card memory in MiB.
    pub memory: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerators: Option<Vec<Accelerator>>,
}

/// One card: identity, topology (written empty by the mock) and capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accelerator {
    pub id: String,
    pub index: u32,
    pub physical_indexes: Vec<u32>,
    pub topology: Topology,
    pub status: AcceleratorStatus,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    pub pci_bus_id: String,
    pub pci_root_id: String,
    pub pci_class: String,
    pub numa_affinity: String,
    pub cpu_affinity: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_switches: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<DeviceFabric>,
}

/// A card's capability (`spec…accelerators[].status`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceleratorStatus {
    pub unhealthy: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_sliced: Option<LogicalSliced>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_sliced: Option<PhysicalSliced>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalSliced {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_percentage_overcommit: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalSliced {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<Vec<PhysicalProfile>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalProfile {
    pub name: String,
    pub count: u32,
    pub memory_mib: u64,
    pub compute_slices: u32,
    pub memory_slices: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placements: Option<Vec<SlicePlacement>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlicePlacement {
    pub start: u32,
    pub length: u32,
}

/// `Devices.status`: the per-card ledger, written through the status subresource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DevicesStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<LedgerGroup>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LedgerGroup {
    pub id: String,
    pub manufacturer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerators: Option<Vec<LedgerRow>>,
}

/// One card's ledger row; `remaining` and `allocated` are `omitempty` on the wire.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRow {
    pub id: String,
    pub index: u32,
    pub mode: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_profiles: Option<Vec<ProfileCount>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_profiles: Option<Vec<ProfileCount>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileCount {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// `InstanceType.spec`: authored once (create-only for derived types, chain.md §8.4).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "worker.gpustack.ai",
    version = "v1alpha1",
    kind = "InstanceType",
    plural = "instancetypes",
    status = "InstanceTypeStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct InstanceTypeSpec {
    pub acceleratable: bool,
    pub os: String,
    pub arch: String,
    pub local_storage: String,
    pub unit_resources: UnitResources,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub general_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactive: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnitResources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram: Option<String>,
}

/// `InstanceType.status`: the four views, the CPU view, detail, entrance and phase
/// (instance_type.go; chain.md §9).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceTypeStatus {
    pub phase: String,
    pub accelerator: View,
    pub accelerator_shared: View,
    pub accelerator_sliced: View,
    pub accelerator_partitioned: PartitionedView,
    pub cpu: View,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
}

/// `{onceMaxRequest, remaining, capacity}` as quantities.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct View {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub once_max_request: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<IntOrString>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartitionedView {
    #[serde(flatten)]
    pub view: View,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_profiles: Option<Vec<ProfileCount>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_profiles: Option<Vec<ProfileCount>>,
}

/// `InstanceTypeDetail`: the accelerator's identity, slicing, and the CPU note (inline on a CPU
/// pool, under `cpu` on an accelerated one).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Detail {
    #[serde(flatten)]
    pub cpu_fields: CpuDetail,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_versions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliced_detail: Option<SlicedDetail>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuDetail>,
}

/// The CPU fields (also the accelerator identity `manufacturer`/`product`/`family`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CpuDetail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_cores: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_cores: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_physical_core: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stepping: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_line: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_speed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clock_speed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CpuCache>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuCache {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1i: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l3: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlicedDetail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical: Option<LogicalSliced>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical: Option<DetailPhysical>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DetailPhysical {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<Vec<DetailProfile>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DetailProfile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
}
