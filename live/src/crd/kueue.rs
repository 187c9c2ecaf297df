//! `kueue.x-k8s.io/v1beta2`: ResourceFlavor, ClusterQueue, LocalQueue, AdmissionCheck and
//! Workload — the fields the operator writes and verify reads, names as in
//! shared/crds/kueue.x-k8s.io_*.yaml (Kueue v0.18.6).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A flavor: the node labels a pool's nodes carry (chain.md §6.3). No status subresource.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(group = "kueue.x-k8s.io", version = "v1beta2", kind = "ResourceFlavor")]
#[serde(rename_all = "camelCase")]
pub struct ResourceFlavorSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_name: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

/// A pool's isolated queue (chain.md §10): no cohort, all namespaces, one resource group.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ClusterQueue",
    status = "QueueStatus",
    // the real CRD's printer columns (kueue config/components/crd/bases, v1beta2), so
    // kubectl's Table of the twin shows what a real cluster's shows
    printcolumn = r#"{"name":"Cohort","type":"string","description":"Cohort that this ClusterQueue belongs to","jsonPath":".spec.cohortName"}"#,
    printcolumn = r#"{"name":"Strategy","type":"string","description":"The queueing strategy used to prioritize workloads","jsonPath":".spec.queueingStrategy","priority":1}"#,
    printcolumn = r#"{"name":"Pending Workloads","type":"integer","description":"Number of pending workloads","jsonPath":".status.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Admitted Workloads","type":"integer","description":"Number of admitted workloads that haven't finished yet","jsonPath":".status.admittedWorkloads","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cohort_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor_fungibility: Option<FlavorFungibility>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<Preemption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_groups: Option<Vec<ResourceGroup>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,
}

/// `{}` selects every namespace; absent selects none (Kueue), so absence is kept distinct.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlavorFungibility {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_can_borrow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_can_preempt: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preemption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_within_cohort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrow_within_cohort: Option<BorrowWithinCohort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_cluster_queue: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BorrowWithinCohort {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGroup {
    pub covered_resources: Vec<String>,
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlavorQuotas {
    pub name: String,
    pub resources: Vec<ResourceQuota>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    pub name: String,
    pub nominal_quota: IntOrString,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    pub admission_checks: Vec<AdmissionCheckRef>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdmissionCheckRef {
    pub name: String,
}

/// The queues' status is Kueue's own; verify reads only its conditions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueueStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// `metav1.Condition`, the parts verify reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A pool's entrance in one namespace (chain.md §11).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "LocalQueue",
    namespaced,
    status = "QueueStatus",
    printcolumn = r#"{"name":"ClusterQueue","type":"string","description":"Backing ClusterQueue","jsonPath":".spec.clusterQueue"}"#,
    printcolumn = r#"{"name":"Pending Workloads","type":"integer","description":"Number of pending workloads","jsonPath":".status.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Admitted Workloads","type":"integer","description":"Number of admitted workloads that haven't finished yet.","jsonPath":".status.admittedWorkloads"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
}

/// The `gpustack-node-devices` check and its controller (admission.md gate 3).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "AdmissionCheck",
    status = "QueueStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    pub controller_name: String,
}

/// A Workload submitted to a LocalQueue; verify reads back its admission checks' states.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Workload",
    namespaced,
    status = "WorkloadStatus",
    printcolumn = r#"{"name":"Queue","type":"string","description":"Name of the queue this workload was submitted to","jsonPath":".spec.queueName"}"#,
    printcolumn = r#"{"name":"Reserved in","type":"string","description":"Name of the ClusterQueue where the workload is reserving quota","jsonPath":".status.admission.clusterQueue"}"#,
    printcolumn = r#"{"name":"Admitted","type":"string","description":"Admission status","jsonPath":".status.conditions[?(@.type=='Admitted')].status"}"#,
    printcolumn = r#"{"name":"Finished","type":"string","description":"Workload finished","jsonPath":".status.conditions[?(@.type=='Finished')].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","description":"Time this workload was created","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_name: Option<String>,
    pub pod_sets: Vec<PodSet>,
    /// Whether the Workload may be admitted (absent: true); the joint check sets it false to
    /// park a deployment (kueue.x-k8s.io_workloads.yaml `spec.active`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodSet {
    pub name: String,
    pub count: i32,
    pub template: PodTemplateSpec,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks: Option<Vec<AdmissionCheckState>>,
}

/// One check's verdict on a Workload (`Pending`, `Ready`, `Retry`, `Rejected`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    pub name: String,
    pub state: String,
    pub message: String,
    pub last_transition_time: String,
}
