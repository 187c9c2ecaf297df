//! Whole cluster shapes: nodes, namespaces and settings (research/chain.md §11, §13).

use model::cluster::{Cluster, ForeignQueue, Namespace, Node, TopologySource};
use model::labels::{Labels, DEFAULT_SYSTEM_NAMESPACE, KUBE_SYSTEM};
use model::nodefeature::TOPOGRAPH_TIER_PREFIX;
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

/// Distinct names drawn from `names` (`size` of them), each terminating with probability
/// `terminating`: the shape namespaces and foreign ClusterQueues share.
fn arb_terminating_names(
    names: &[&'static str],
    size: std::ops::RangeInclusive<usize>,
    terminating: f64,
) -> impl Strategy<Value = Vec<(String, bool)>> {
    prop::sample::subsequence(names.to_vec(), size)
        .prop_flat_map(move |names| {
            let n = names.len();
            (
                Just(names),
                prop::collection::vec(prop::bool::weighted(terminating), n),
            )
        })
        .prop_map(|(names, flags)| names.into_iter().map(str::to_string).zip(flags).collect())
}

/// 1–4 distinct namespaces, sometimes reserved ones, sometimes terminating.
pub fn arb_namespaces() -> BoxedStrategy<Vec<Namespace>> {
    arb_terminating_names(&NAMESPACE_NAMES, 1..=4, 0.15)
        .prop_map(|named| {
            named
                .into_iter()
                .map(|(name, terminating)| Namespace { name, terminating })
                .collect()
        })
        .boxed()
}

/// Names of ClusterQueues the operator does not own (an administrator's, another tool's).
pub const FOREIGN_QUEUE_NAMES: [&str; 2] = ["batch", "team-a-queue"];

/// Mostly none; sometimes one or two foreign ClusterQueues, sometimes terminating (they get
/// LocalQueues too, chain.md §11).
pub fn arb_foreign_queues() -> BoxedStrategy<Vec<ForeignQueue>> {
    let some = arb_terminating_names(&FOREIGN_QUEUE_NAMES, 1..=2, 0.2).prop_map(|named| {
        named
            .into_iter()
            .map(|(name, terminating)| ForeignQueue { name, terminating })
            .collect()
    });
    prop_oneof![4 => Just(Vec::new()), 1 => some].boxed()
}

/// The region and zone node labels (well-known Kubernetes keys).
pub const REGION: &str = "topology.kubernetes.io/region";
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// A label the `fabric` source selects on.
pub const FABRIC_MEMBER: &str = "example.com/fabric";

/// The TopologySources a cluster may have (devices.md §5): `zones` (region, zone) over every
/// node, `fabric` (topograph tiers written finest first, so normalisation reverses them) over
/// the fabric members, and `stale`, never Ready. A fabric member under both `zones` and
/// `fabric` is matched twice and gets the hostname-only profile.
pub fn topology_source_palette() -> Vec<TopologySource> {
    let tier = |n: u32| format!("{TOPOGRAPH_TIER_PREFIX}{n}");
    vec![
        TopologySource {
            name: "zones".into(),
            levels: vec![REGION.into(), ZONE.into()],
            node_selector: Labels::new(),
            ready: true,
        },
        TopologySource {
            name: "fabric".into(),
            levels: vec![tier(1), tier(2)],
            node_selector: model::labels::from_pairs(&[(FABRIC_MEMBER, "true")]),
            ready: true,
        },
        TopologySource {
            name: "stale".into(),
            levels: vec![ZONE.into()],
            node_selector: Labels::new(),
            ready: false,
        },
    ]
}

/// Topology labels for the `i`-th node: a region on all, a zone on all but every third node
/// (its `zones` prefix stops at the region), two zones alternating; odd nodes are fabric
/// members with both tiers, even ones carry tier 1 only (their `fabric` prefix is empty:
/// tier 2, the coarsest, comes first).
fn label_topology(i: usize, node: &mut Node) {
    let mut put = |k: &str, v: String| {
        node.labels.insert(k.into(), v.into());
    };
    put(REGION, "region-a".into());
    if i % 3 != 2 {
        put(ZONE, format!("zone-{}", i % 2));
    }
    put(&format!("{TOPOGRAPH_TIER_PREFIX}1"), format!("leaf-{i}"));
    if i % 2 == 1 {
        put(FABRIC_MEMBER, "true".into());
        put(&format!("{TOPOGRAPH_TIER_PREFIX}2"), "spine-0".into());
    }
}

/// Whether nodes carry topology labels and which palette sources exist: shrinks toward no
/// labels and no source (every node hostname-only).
fn arb_topology() -> BoxedStrategy<(bool, Vec<TopologySource>)> {
    (
        prop::bool::weighted(0.5),
        prop::sample::subsequence(topology_source_palette(), 0..=3),
    )
        .boxed()
}

/// A cluster of 1..=`config.max_nodes` uniquely named nodes, its namespaces, settings and
/// TopologySources (with the nodes' topology labels).
pub fn arb_cluster(config: &ShapeConfig) -> BoxedStrategy<Cluster> {
    let settings = match &config.settings {
        Some(fixed) => Just(fixed.clone()).boxed(),
        None => arb_settings(),
    };
    // A live run (fixed settings: one cluster's operator) shares its cluster: cluster-wide
    // TopologySources are not run-scoped and would reach other runs' nodes, so it has none.
    let topology = match (&config.settings, &config.mock.mock_product_key) {
        (None, None) => arb_topology(),
        _ => Just((false, Vec::new())).boxed(),
    };
    (
        arb_nodes_with(config),
        arb_namespaces(),
        settings,
        topology,
        arb_foreign_queues(),
    )
        .prop_map(
            |(mut nodes, namespaces, settings, (labelled, sources), foreign_queues)| {
                if labelled {
                    for (i, node) in nodes.iter_mut().enumerate() {
                        label_topology(i, node);
                    }
                }
                Cluster {
                    nodes,
                    namespaces,
                    settings,
                    instance_types: Vec::new(),
                    topology_sources: sources,
                    foreign_queues,
                }
            },
        )
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::nodefeature::{node_topology_levels, profile_of_levels};

    /// The palette over labelled nodes reaches 0, 1 and 2 matching sources and prefixes of
    /// every length.
    #[test]
    fn the_palette_gives_every_match_count_and_prefix() {
        let mut nodes: Vec<Node> = (0..3).map(|_| Node::default()).collect();
        for (i, n) in nodes.iter_mut().enumerate() {
            label_topology(i, n);
        }
        let palette = topology_source_palette();
        let levels: Vec<usize> = nodes
            .iter()
            .map(|n| node_topology_levels(&n.labels, &palette).len())
            .collect();
        // node 0: zones only (region, zone, hostname); node 1: zones and fabric match, so
        // hostname only; node 2: zones only, no zone label (region, hostname)
        assert_eq!(levels, [3, 1, 2]);
        let fabric = &palette[1..2];
        let tiers = node_topology_levels(&nodes[1].labels, fabric);
        assert_eq!(
            tiers,
            [
                format!("{TOPOGRAPH_TIER_PREFIX}2"),
                format!("{TOPOGRAPH_TIER_PREFIX}1"),
                model::labels::HOSTNAME.to_string()
            ]
        );
        assert_eq!(node_topology_levels(&nodes[0].labels, fabric).len(), 1);
        assert_eq!(
            profile_of_levels(&node_topology_levels(&nodes[0].labels, &palette[2..])),
            model::nodefeature::DEFAULT_TOPOLOGY_PROFILE,
            "a source that is not Ready is ignored"
        );
    }
}
