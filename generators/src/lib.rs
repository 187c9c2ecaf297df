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
pub use events::{arb_event, arb_events, arb_events_with, arb_scenario, arb_scenario_through};
pub use nodes::{arb_node, arb_node_with, arb_nodes, name_node};
pub use settings::arb_settings;
pub use workloads::{arb_request, arb_workload, pools_of, pools_through, Pool};

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

/// FNV-1a 64 over `value`'s JSON (serde_json's compact form; ordered maps, so deterministic):
/// a hash stable across toolchains, unlike `DefaultHasher`, that seeds the draws made outside
/// the proptest stream. The bytes are hashed as they are written, not collected into a
/// string first. A value that does not serialise hashes as no bytes.
pub(crate) fn json_fnv1a(value: &impl serde::Serialize) -> u64 {
    const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    struct Fnv1a(u64);
    impl std::io::Write for Fnv1a {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            for b in bytes {
                self.0 ^= u64::from(*b);
                self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Fnv1a(BASIS);
    match serde_json::to_writer(&mut h, value) {
        Ok(()) => h.0,
        Err(_) => BASIS,
    }
}

#[cfg(test)]
mod tests {
    /// The hash is FNV-1a over exactly the bytes `serde_json::to_string` gives: locked
    /// regression seeds name the scenarios those bytes drew.
    #[test]
    fn json_fnv1a_hashes_the_json_text() {
        let fnv_of_text = |text: &str| {
            text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            })
        };
        let cluster = model::examples::walkthrough();
        for value in [
            serde_json::to_value(&cluster.nodes).unwrap(),
            serde_json::json!({"a": "é\n\"", "b": [1, 2.5, null, true]}),
            serde_json::json!([]),
        ] {
            let text = serde_json::to_string(&value).unwrap();
            assert_eq!(super::json_fnv1a(&value), fnv_of_text(&text), "{text}");
        }
        assert_eq!(
            super::json_fnv1a(&cluster.nodes),
            fnv_of_text(&serde_json::to_string(&cluster.nodes).unwrap())
        );
    }
}
