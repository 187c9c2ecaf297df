//! Whole cluster shapes: nodes, namespaces and settings (research/chain.md §11, §13).

use model::cluster::{Cluster, Namespace};
use model::labels::{DEFAULT_SYSTEM_NAMESPACE, KUBE_SYSTEM};
use proptest::prelude::*;

use crate::nodes::arb_nodes_with;
use crate::settings::arb_settings;
use crate::ShapeConfig;

/// Namespace names the generators use, plain ones first (what a list shrinks toward); the last
/// two are reserved from LocalQueues (chain.md §11).
pub const NAMESPACE_NAMES: [&str; 7] = [
    "default",
    "team-a",
    "team-b",
    "ml",
    "research",
    DEFAULT_SYSTEM_NAMESPACE,
    KUBE_SYSTEM,
];

/// 1–4 distinct namespaces, sometimes reserved ones, sometimes terminating.
pub fn arb_namespaces() -> BoxedStrategy<Vec<Namespace>> {
    prop::sample::subsequence(NAMESPACE_NAMES.to_vec(), 1..=4)
        .prop_flat_map(|names| {
            let n = names.len();
            (
                Just(names),
                prop::collection::vec(prop::bool::weighted(0.15), n),
            )
        })
        .prop_map(|(names, terminating)| {
            names
                .into_iter()
                .zip(terminating)
                .map(|(name, terminating)| Namespace {
                    name: name.to_string(),
                    terminating,
                })
                .collect()
        })
        .boxed()
}

/// A cluster of 1..=`config.max_nodes` uniquely named nodes, its namespaces and settings.
pub fn arb_cluster(config: &ShapeConfig) -> BoxedStrategy<Cluster> {
    let settings = match &config.settings {
        Some(fixed) => Just(fixed.clone()).boxed(),
        None => arb_settings(),
    };
    (arb_nodes_with(config), arb_namespaces(), settings)
        .prop_map(|(nodes, namespaces, settings)| Cluster {
            nodes,
            namespaces,
            settings,
            instance_types: Vec::new(),
            topology_sources: Vec::new(),
        })
        .boxed()
}
