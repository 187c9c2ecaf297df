//! Pure reference model of the GPUStack operator's scheduling chain:
//! nodes + Devices + settings → node labels, ResourceFlavors, InstanceTypes, ClusterQueues,
//! LocalQueues. No I/O, no async; every rule is one function named for what it decides.

pub mod admission;
pub mod allocation;
pub mod cluster;
pub mod credits;
pub mod derive;
pub mod detail;
pub mod devices;
pub mod error;
pub mod events;
pub mod examples;
mod explain;
pub mod field;
pub mod fit;
pub mod fit_keys;
pub mod flavor;
pub mod labels;
pub mod ledger;
pub mod lifecycle;
pub mod mutants;
mod node_rules;
pub mod nodefeature;
pub mod objects;
pub mod phase_message;
pub mod placement;
pub mod pod_webhook;
pub mod pool;
pub mod profiles;
pub mod provenance;
pub mod queue;
pub mod quota;
pub mod rdma;
pub mod reconcile;
pub mod resources;
pub mod scenario;
pub mod steps;
pub mod units;
pub mod views;
pub mod webhook;
pub mod workload;

pub use cluster::{
    Cluster, Era, JointCheckGate, Namespace, Node, QueueStatusGate, Settings, SharedOnceMax,
    TopologySource,
};
pub use devices::{Capability, Card, DeviceGroup, Devices, Ledger, Mode};
pub use error::ModelError;
