//! Gate 3, the `gpustack-node-devices` Kueue AdmissionCheck: per-card feasibility of a
//! Workload's accelerator demands on the cards its assigned flavors cover (admission.md §6,
//! §16 R8–R20; corrections.md 4, 5, 8). Check-only: verdicts are Ready or Retry (30 s).
//! `joint` is the second check, `gpustack-model-deployment-joint`: the ModelDeployment barrier.

pub mod candidates;
pub mod demands;
pub mod feasibility;
pub mod inflight;
pub mod joint;
pub mod reconcile;
pub mod verdict;

pub use candidates::{
    candidate_devices, collect_cards, flavor_accelerator_count, flavor_accelerator_key, CardSlot,
    FlavorObject, FlavorScope, NodeDevices, ScopedDevices,
};
pub use demands::{assigned_flavor, parse_family_demands, FamilyDemand, Holder, PodSetAssignment};
pub use feasibility::node_devices_feasibility;
pub use inflight::{pod_charged, CardCharge, PodRecord, PodView};
pub use reconcile::{NodeDevicesAdmission, Reconciled, WorkloadRecord, World};
pub use verdict::{CheckState, Verdict, RETRY_AFTER_SECONDS};
