//! Event sequences over a generated cluster (research/chain.md §12; model::events::Event) and
//! whole scenarios.
//!
//! A sequence is generated as independent seeds, then resolved in order against the shape the
//! earlier events leave (nodes present, flippable cards, namespaces, submitted Workloads), so
//! every event names something that exists at its turn; a seed with nothing to act on is
//! dropped. Shrinking removes seeds, so sequences shrink toward fewer events.

use model::cluster::{Cluster, Node};
use model::derive::Deriver;
use model::devices::{partition_scope, Capability, PartitionScope};
use model::events::Event;
use model::scenario::Scenario;
use model::workload::Workload;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::cluster::{arb_cluster, NAMESPACE_NAMES};
use crate::devices::{plain_capability, product_of};
use crate::nodes::{arb_anonymous_node, name_node};
use crate::workloads::{arb_workload, pools_through};
use crate::ShapeConfig;

/// One event before it is resolved against the shape.
#[derive(Clone, Debug)]
enum Seed {
    AwarenessFlip,
    Submit(Workload),
    Finish(Index),
    Join(Node),
    Leave(Index),
    CardFamily(Index),
    NamespaceCreate(Index),
    NamespaceDelete(Index),
    /// The joint check's bound passes for one of the deployments submitted so far.
    JointTimeout(Index),
}

/// A card whose family can change: an NVIDIA or T-Head product with a MIG catalog, one card at
/// a time (Hygon's mode is node-wide, so its cards never flip alone; devices.md §3.3).
#[derive(Clone, Debug)]
struct Flippable {
    node: String,
    card: String,
    partitioned: bool,
    mig: Capability,
    plain: Capability,
}

/// The shape as the events so far leave it.
#[derive(Clone, Debug, Default)]
struct Shape {
    nodes: Vec<String>,
    cards: Vec<Flippable>,
    namespaces: Vec<String>,
    /// Submitted and not yet finished, `(namespace, name)`.
    live: Vec<(String, String)>,
    joined: usize,
    submitted: usize,
    /// ModelDeployments with a replica submitted, `(namespace, name)`.
    deployments: Vec<(String, String)>,
    /// Deployments still missing a role's replica: `(namespace, name, roles submitted)`.
    open: Vec<(String, String, Vec<String>)>,
    /// Seeds resolved so far (the position of the next one), and a hash of the initial nodes:
    /// together they decide which settings flips are mixing flips ([`mixing_flip_at`]).
    position: u64,
    salt: u64,
}

/// Whether the settings-flip seed at `position` of a scenario whose initial nodes hash to
/// `salt` flips `instance-type-mixed-on-node` rather than the CPU-manufacturer awareness: one
/// in two, decided by a hash of the scenario position and not by the proptest stream, so the
/// draws every locked seed made before mixing flips existed are unchanged (an awareness flip
/// may now be a mixing flip at the same position, which the twin tier cuts at alike).
fn mixing_flip_at(salt: u64, position: u64) -> bool {
    // splitmix64 finaliser over the pair: stable across toolchains, unlike `DefaultHasher`
    let mut z = salt ^ position.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % 2 == 1
}

/// FNV-1a 64 over the initial nodes' JSON (ordered maps: deterministic).
fn nodes_hash(cluster: &Cluster) -> u64 {
    crate::json_fnv1a(&cluster.nodes)
}

/// The cards of `node` that can change family alone.
fn flippable_cards(node: &Node) -> Vec<Flippable> {
    let Some(devices) = &node.devices else {
        return Vec::new();
    };
    devices
        .groups
        .iter()
        .filter(|g| partition_scope(&g.manufacturer) == PartitionScope::PerCard)
        .filter_map(|g| Some((g, product_of(g)?.catalog?)))
        .flat_map(|(g, catalog)| {
            g.cards.iter().map(move |c| Flippable {
                node: node.name.clone(),
                card: c.id.clone(),
                partitioned: c.is_partitioned(),
                mig: catalog.capability(),
                plain: plain_capability(&g.manufacturer),
            })
        })
        .collect()
}

impl Shape {
    fn of(cluster: &Cluster) -> Self {
        Shape {
            nodes: cluster.nodes.iter().map(|n| n.name.clone()).collect(),
            cards: cluster.nodes.iter().flat_map(flippable_cards).collect(),
            namespaces: cluster.namespaces.iter().map(|n| n.name.clone()).collect(),
            salt: nodes_hash(cluster),
            ..Shape::default()
        }
    }

    /// The event a seed becomes at this point, updating the shape; `None` = nothing to act on.
    fn resolve(&mut self, seed: Seed) -> Option<Event> {
        let position = self.position;
        self.position += 1;
        match seed {
            Seed::AwarenessFlip => {
                let mixing = mixing_flip_at(self.salt, position);
                Some(if mixing {
                    Event::MixingFlip
                } else {
                    Event::AwarenessFlip
                })
            }
            Seed::Submit(mut workload) => {
                workload.name = format!("wl-{}", self.submitted);
                self.submitted += 1;
                if let Some(d) = workload.deployment.as_mut() {
                    d.deployment = self.deployment_for(&workload.namespace, &d.role);
                }
                self.live
                    .push((workload.namespace.clone(), workload.name.clone()));
                Some(Event::Submit { workload })
            }
            Seed::Finish(i) => {
                if self.live.is_empty() {
                    return None;
                }
                let (namespace, name) = self.live.remove(i.index(self.live.len()));
                Some(Event::Finish { namespace, name })
            }
            Seed::Join(node) => {
                let node = name_node(node, &format!("node-j{}", self.joined));
                self.joined += 1;
                self.nodes.push(node.name.clone());
                self.cards.extend(flippable_cards(&node));
                Some(Event::NodeJoin { node })
            }
            Seed::Leave(i) => {
                if self.nodes.is_empty() {
                    return None;
                }
                let name = self.nodes.remove(i.index(self.nodes.len()));
                self.cards.retain(|c| c.node != name);
                Some(Event::NodeLeave { name })
            }
            Seed::CardFamily(i) => {
                if self.cards.is_empty() {
                    return None;
                }
                let at = i.index(self.cards.len());
                let card = self.cards.get_mut(at)?;
                card.partitioned = !card.partitioned;
                let capability = if card.partitioned {
                    card.mig.clone()
                } else {
                    card.plain.clone()
                };
                Some(Event::CardFamily {
                    node: card.node.clone(),
                    card: card.card.clone(),
                    capability,
                })
            }
            Seed::NamespaceCreate(i) => {
                let absent: Vec<&str> = NAMESPACE_NAMES
                    .iter()
                    .copied()
                    .filter(|n| !self.namespaces.iter().any(|m| m == n))
                    .collect();
                if absent.is_empty() {
                    return None;
                }
                let name = absent.get(i.index(absent.len()))?.to_string();
                self.namespaces.push(name.clone());
                Some(Event::NamespaceCreate { name })
            }
            Seed::NamespaceDelete(i) => {
                if self.namespaces.is_empty() {
                    return None;
                }
                let name = self.namespaces.remove(i.index(self.namespaces.len()));
                Some(Event::NamespaceDelete { name })
            }
            Seed::JointTimeout(i) => {
                if self.deployments.is_empty() {
                    return None;
                }
                let (namespace, deployment) =
                    self.deployments[i.index(self.deployments.len())].clone();
                Some(Event::JointTimeout {
                    namespace,
                    deployment,
                })
            }
        }
    }

    /// The deployment a replica of `role` in `namespace` joins: the oldest one there still
    /// missing that role, else a new one (`md-<n>`).
    fn deployment_for(&mut self, namespace: &str, role: &str) -> String {
        if let Some(at) = self
            .open
            .iter()
            .position(|(ns, _, roles)| ns == namespace && !roles.iter().any(|r| r == role))
        {
            let (_, name, roles) = &mut self.open[at];
            roles.push(role.to_string());
            let name = name.clone();
            if roles.len() >= crate::workloads::REPLICA_ROLES.len() {
                self.open.remove(at);
            }
            return name;
        }
        let name = format!("md-{}", self.deployments.len());
        self.deployments.push((namespace.to_string(), name.clone()));
        self.open
            .push((namespace.to_string(), name.clone(), vec![role.to_string()]));
        name
    }
}

/// The seed kinds that do not depend on the cluster, simplest first; built once per scenario
/// strategy and shared (a `BoxedStrategy` clones cheaply).
fn shape_seeds(config: &ShapeConfig) -> Vec<(u32, BoxedStrategy<Seed>)> {
    let join = arb_anonymous_node(config.max_cards, config.mock.clone()).prop_map(Seed::Join);
    vec![
        (1, Just(Seed::AwarenessFlip).boxed()),
        (2, any::<Index>().prop_map(Seed::Finish).boxed()),
        (1, join.boxed()),
        (1, any::<Index>().prop_map(Seed::Leave).boxed()),
        (1, any::<Index>().prop_map(Seed::CardFamily).boxed()),
        (1, any::<Index>().prop_map(Seed::NamespaceCreate).boxed()),
        (1, any::<Index>().prop_map(Seed::NamespaceDelete).boxed()),
        (1, any::<Index>().prop_map(Seed::JointTimeout).boxed()),
    ]
}

/// Seeds for `cluster`: the shared kinds, plus submissions when it has a pool.
fn arb_seed(
    cluster: &Cluster,
    shared: &[(u32, BoxedStrategy<Seed>)],
    deriver: &Deriver,
) -> BoxedStrategy<Seed> {
    let pools = pools_through(cluster, deriver);
    let mut options = shared.to_vec();
    if !pools.is_empty() {
        options.insert(1, (5, arb_workload(&pools).prop_map(Seed::Submit).boxed()));
    }
    proptest::strategy::Union::new_weighted(options).boxed()
}

/// Resolves seeds in order against `cluster`'s shape.
fn resolve_all(cluster: &Cluster, seeds: Vec<Seed>) -> Vec<Event> {
    let mut shape = Shape::of(cluster);
    seeds.into_iter().filter_map(|s| shape.resolve(s)).collect()
}

/// One event that can apply to `cluster` as it stands (an awareness flip when nothing else
/// can; never a finish, as nothing has been submitted yet).
pub fn arb_event(cluster: &Cluster) -> BoxedStrategy<Event> {
    let cluster = cluster.clone();
    arb_seed(
        &cluster,
        &shape_seeds(&ShapeConfig::default()),
        &Deriver::plain(),
    )
    .prop_map(move |seed| {
        let seed = match seed {
            Seed::Finish(_) => Seed::AwarenessFlip,
            other => other,
        };
        Shape::of(&cluster)
            .resolve(seed)
            .unwrap_or(Event::AwarenessFlip)
    })
    .boxed()
}

/// Up to `max` events over `cluster` (default card limit for joining nodes).
pub fn arb_events(cluster: &Cluster, max: usize) -> BoxedStrategy<Vec<Event>> {
    arb_events_with(
        cluster,
        &ShapeConfig {
            max_events: max,
            ..ShapeConfig::default()
        },
    )
}

/// Up to `config.max_events` events over `cluster`, joining nodes within `config`.
pub fn arb_events_with(cluster: &Cluster, config: &ShapeConfig) -> BoxedStrategy<Vec<Event>> {
    events_from(
        cluster,
        &shape_seeds(config),
        config.max_events,
        &Deriver::plain(),
    )
}

/// Up to `max` events over `cluster` from the shared seed kinds.
fn events_from(
    cluster: &Cluster,
    shared: &[(u32, BoxedStrategy<Seed>)],
    max: usize,
    deriver: &Deriver,
) -> BoxedStrategy<Vec<Event>> {
    let owned = cluster.clone();
    prop::collection::vec(arb_seed(cluster, shared, deriver), 0..=max)
        .prop_map(move |seeds| resolve_all(&owned, seeds))
        .boxed()
}

/// A replayable scenario: a cluster within `config` and an event sequence over it.
pub fn arb_scenario(config: &ShapeConfig) -> BoxedStrategy<Scenario> {
    arb_scenario_through(config, &Deriver::plain())
}

/// [`arb_scenario`], deriving each cluster's pools through `deriver`: a caller that judges
/// the scenario through the same deriver finds the cluster's node and pool steps in its store.
/// The strategy keeps the deriver, so a store fills with every cluster it generates or
/// shrinks to: hand it a store that lives for one seed.
pub fn arb_scenario_through(config: &ShapeConfig, deriver: &Deriver) -> BoxedStrategy<Scenario> {
    let shared = shape_seeds(config);
    let max = config.max_events;
    let deriver = deriver.clone();
    arb_cluster(config)
        .prop_flat_map(move |cluster| {
            let events = events_from(&cluster, &shared, max, &deriver);
            (Just(cluster), events)
        })
        .prop_map(|(cluster, events)| Scenario {
            name: format!("generated-{}n-{}e", cluster.nodes.len(), events.len()),
            cluster,
            events,
            ..Scenario::default()
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::examples::{nfd_node, nvidia_group};
    use model::ledger::catalogs::a100_40gb;

    /// Some index; the tests only use it on one-element lists or assert order-free facts.
    fn idx() -> Index {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        any::<Index>()
            .new_tree(&mut TestRunner::deterministic())
            .unwrap()
            .current()
    }

    fn a100_cluster() -> Cluster {
        let mut node = nfd_node("node-0", "AMD", "AMD EPYC 7763 64-Core Processor", 8);
        node.devices = Some(model::devices::Devices {
            groups: vec![nvidia_group(
                "a100-sxm4-40gb",
                "NVIDIA A100-SXM4-40GB",
                40960,
                1,
            )],
        });
        Cluster {
            nodes: vec![node],
            namespaces: vec![model::cluster::Namespace {
                name: "default".into(),
                terminating: false,
            }],
            ..Cluster::default()
        }
    }

    #[test]
    fn card_family_flips_between_logical_and_catalog() {
        let c = a100_cluster();
        let mut shape = Shape::of(&c);
        assert_eq!(shape.cards.len(), 1);
        let first = shape.resolve(Seed::CardFamily(idx()));
        let second = shape.resolve(Seed::CardFamily(idx()));
        match (first, second) {
            (
                Some(Event::CardFamily { capability: on, .. }),
                Some(Event::CardFamily {
                    capability: off, ..
                }),
            ) => {
                assert_eq!(on, a100_40gb());
                assert_eq!(off.logical_sliced_count, 128);
                assert!(!off.is_partitioned());
            }
            other => panic!("expected two card-family events, got {other:?}"),
        }
    }

    #[test]
    fn settings_flips_are_split_between_awareness_and_mixing_by_position() {
        let c = a100_cluster();
        let events = resolve_all(&c, vec![Seed::AwarenessFlip; 64]);
        assert_eq!(events.len(), 64);
        let mixing = events.iter().filter(|e| **e == Event::MixingFlip).count();
        assert!(
            (16..=48).contains(&mixing),
            "{mixing} of 64 are mixing flips"
        );
        assert!(events
            .iter()
            .all(|e| matches!(e, Event::MixingFlip | Event::AwarenessFlip)));
        // the same position over the same cluster decides the same way
        assert_eq!(events, resolve_all(&c, vec![Seed::AwarenessFlip; 64]));
    }

    #[test]
    fn seeds_with_nothing_to_act_on_are_dropped() {
        let c = a100_cluster();
        let events = resolve_all(
            &c,
            vec![
                Seed::Finish(idx()),
                Seed::Leave(idx()),
                Seed::Leave(idx()),
                Seed::CardFamily(idx()),
                Seed::NamespaceDelete(idx()),
                Seed::NamespaceDelete(idx()),
            ],
        );
        assert_eq!(
            events,
            vec![
                Event::NodeLeave {
                    name: "node-0".into()
                },
                Event::NamespaceDelete {
                    name: "default".into()
                },
            ]
        );
    }

    #[test]
    fn submissions_are_named_uniquely_and_finish_once() {
        let c = a100_cluster();
        let w = Workload {
            namespace: "default".into(),
            ..Workload::default()
        };
        let events = resolve_all(
            &c,
            vec![
                Seed::Submit(w.clone()),
                Seed::Submit(w),
                Seed::Finish(idx()),
                Seed::Finish(idx()),
                Seed::Finish(idx()),
            ],
        );
        let names: Vec<String> = events
            .iter()
            .map(|e| match e {
                Event::Submit { workload } => format!("submit {}", workload.name),
                Event::Finish { name, .. } => format!("finish {name}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names.len(),
            4,
            "the third finish has nothing left: {names:?}"
        );
        assert_eq!(names[..2], ["submit wl-0", "submit wl-1"]);
        let mut finished = names[2..].to_vec();
        finished.sort();
        assert_eq!(finished, ["finish wl-0", "finish wl-1"]);
    }
}
