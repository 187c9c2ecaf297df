//! Operator settings (research/chain.md §13): the switches a cluster runs under.

use model::cluster::{Era, Settings};
use proptest::prelude::*;

/// Settings a real deployment could run: awareness and mixing on or off, derivation mostly on,
/// manual node management mostly off, era E3 mostly (E2 sometimes); never a mutant. Every
/// choice shrinks toward the operator's defaults.
pub fn arb_settings() -> BoxedStrategy<Settings> {
    (
        any::<bool>(),
        prop::bool::weighted(0.5),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop_oneof![4 => Just(Era::E3), 1 => Just(Era::E2)],
    )
        .prop_map(|(aware, unmixed, underived, manual, era)| Settings {
            aware_cpu_manufacturer: aware,
            mixed_on_node: !unmixed,
            derived_from_node: !underived,
            manual_node_management: manual,
            era,
            mutant: None,
            ..Settings::default()
        })
        .boxed()
}
