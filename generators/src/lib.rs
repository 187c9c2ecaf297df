//! proptest strategies that produce the model's inputs: cluster shapes (nodes, CPUs, device
//! groups, card capabilities and ledgers), namespaces, settings, Workload requests and event
//! sequences, packed as [`model::scenario::Scenario`]s.
//!
//! Every strategy is valid by construction (a generated cluster passes
//! `model::derive::validate`, every ledger is reached from `ledger::seed` by real charges) and
//! shrinks toward fewer nodes, fewer cards, fewer events and simpler values. The crate decides
//! no rule of the operator: it only produces inputs for the model to judge.

pub mod check;
pub mod cluster;
pub mod deletion;
pub mod devices;
pub mod events;
pub mod nodes;
pub mod settings;
pub mod workloads;

pub use cluster::{arb_cluster, arb_namespaces};
pub use devices::{arb_devices, arb_devices_with, MockKey};
pub use events::{arb_event, arb_events, arb_events_with, arb_scenario};
pub use nodes::{arb_node, arb_node_with, arb_nodes, name_node};
pub use settings::arb_settings;
pub use workloads::{arb_request, arb_workload, pools_of, Pool};

/// How large generated shapes may grow. The defaults are small so that the fuzzer sees many
/// scenarios per second and counterexamples stay readable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeConfig {
    /// Most nodes in the initial cluster (at least one node is always generated).
    pub max_nodes: usize,
    /// Most cards in one device group (at least one).
    pub max_cards: u32,
    /// Most events in a scenario.
    pub max_events: usize,
    /// Makes every product name (and so every group id) unique to a run, as the live tier needs.
    pub mock: MockKey,
    /// The operator's settings, when they are fixed (a live cluster runs one configuration);
    /// `None` generates them.
    pub settings: Option<model::Settings>,
}

impl Default for ShapeConfig {
    fn default() -> Self {
        ShapeConfig {
            max_nodes: 4,
            max_cards: 4,
            max_events: 8,
            mock: MockKey::default(),
            settings: None,
        }
    }
}
