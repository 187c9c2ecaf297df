//! Shape statistics of a fuzz run: what each generated scenario showed, by class, for
//! `reports::Coverage` (the table, the plot and `--min-coverage` floors).
//!
//! Classes: `vendors` (card manufacturers), `modes` (ledger modes of cards), `families` (card
//! families by capability), `partitions` (manufacturers with a partitioned card, initial or
//! joining: `hygon` is a node in Hygon's node-wide MIG mode), `partition-requests`
//! (manufacturers whose per-profile partition key a submission names), `rdma` (NIC shapes of
//! nodes with Devices: `no-nic`, endpoint modes `whole`/`partitioned`, `no-device`, link
//! states `link-ok|unverified|failed|absent`, `capable`), `fabric` (`agreed`, `disagreed`,
//! `none` over nodes with cards), `nodes` (initial node count), `foreign-queues` (ClusterQueues
//! the operator does not own, live or terminating), `events` (event kinds), `topology`
//! (TopologySources and how they profile the initial nodes, [`topology_shapes`]),
//! `mixing-flip` (what a drawn `instance-type-mixed-on-node` flip did, [`mixing_flips`]) and
//! `properties` (the properties that had something to check, below).

use model::derive::Deriver;
use model::scenario::Scenario;
use reports::counterexample::{event_kind, node_shape};

/// A class and the values a scenario showed in it.
pub type Shown = Vec<(&'static str, String)>;

/// The properties a scenario gives something to check. The oracle runs every property on
/// every scenario; these are the inputs each one needs to be more than vacuous (oracle
/// `properties.rs`): invariance reorders and renames nodes and namespaces (two or more
/// nodes), pool isolation and accounting need a card, admission a submission, structure and
/// idempotence hold for any cluster with a node.
fn exercised(s: &Scenario, cards: usize) -> Vec<&'static str> {
    use oracle::properties::{
        ACCOUNTING, ADMISSION, IDEMPOTENCE, INVARIANCE, POOL_ISOLATION, STRUCTURE,
    };
    let nodes = s.cluster.nodes.len();
    let submits = s
        .events
        .iter()
        .any(|e| matches!(e, model::events::Event::Submit { .. }));
    [
        (INVARIANCE, nodes >= 2),
        (POOL_ISOLATION, cards > 0),
        (STRUCTURE, nodes > 0),
        (ACCOUNTING, cards > 0),
        (ADMISSION, submits),
        (IDEMPOTENCE, nodes > 0),
    ]
    .into_iter()
    .filter_map(|(p, yes)| yes.then_some(p))
    .collect()
}

/// Manufacturers with a partitioned card on `node`.
fn partitioned_vendors(node: &model::cluster::Node) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for g in node.devices.iter().flat_map(|d| &d.groups) {
        if g.cards.iter().any(|c| c.is_partitioned()) && !out.contains(&g.manufacturer) {
            out.push(g.manufacturer.clone());
        }
    }
    out
}

/// The `partitions` and `partition-requests` values of a scenario: partitioned cards on the
/// initial and joining nodes, and the manufacturer of every per-profile key submitted
/// (`<base>.partitioned.<kind>-<profile>`, which only a vendor with a partition kind has).
fn partition_shapes(s: &Scenario) -> Shown {
    use model::events::Event;
    use model::resources::{classify, Key};
    let joining = s.events.iter().filter_map(|e| match e {
        Event::NodeJoin { node } => Some(node),
        _ => None,
    });
    let mut out: Shown = s
        .cluster
        .nodes
        .iter()
        .chain(joining)
        .flat_map(partitioned_vendors)
        .map(|m| ("partitions", m))
        .collect();
    for e in &s.events {
        let Event::Submit { workload } = e else {
            continue;
        };
        let keys = workload
            .pod_sets
            .iter()
            .flat_map(|ps| &ps.containers)
            .flat_map(|c| c.requests.keys());
        for key in keys {
            if let Some(r) = classify(key) {
                if matches!(r.key, Key::PartitionedProfile(_)) {
                    out.push(("partition-requests", r.manufacturer));
                }
            }
        }
    }
    out
}

/// The `rdma` and `fabric` values of one node with Devices (research/devices.md §4.2–4.6).
fn network_shapes(node: &model::cluster::Node) -> Shown {
    use model::devices::LinkState;
    use model::rdma;
    let Some(devices) = &node.devices else {
        return Vec::new();
    };
    let net = &node.network;
    let mut out: Shown = Vec::new();
    let mut rdma_value = |v: &str| out.push(("rdma", v.to_string()));
    if net.interfaces.is_empty() {
        rdma_value("no-nic");
    }
    let endpoints = rdma::resource_endpoints(&net.interfaces);
    for e in &endpoints {
        rdma_value(e.mode.name());
    }
    let links = net
        .interfaces
        .iter()
        .flat_map(|i| std::iter::once(&i.link).chain(i.virtual_functions.iter().map(|v| &v.link)));
    for link in links {
        rdma_value(match link.as_ref().map(|l| l.state) {
            None => "link-absent",
            Some(LinkState::Ok) => "link-ok",
            Some(LinkState::Unverified) => "link-unverified",
            Some(LinkState::Failed) => "link-failed",
        });
    }
    if !net.interfaces.is_empty() && endpoints.is_empty() {
        rdma_value("no-device");
    }
    let labels = rdma::network_node_labels(devices, net);
    if labels.contains_key(rdma::RDMA_CAPABLE) {
        rdma_value("capable");
    }
    if node.cards().next().is_some() {
        let any_fabric = net.topology.values().any(|t| t.fabric.is_some());
        let value = match (labels.contains_key(rdma::FABRIC_DOMAIN), any_fabric) {
            (true, _) => "agreed",
            (false, true) => "disagreed",
            (false, false) => "none",
        };
        out.push(("fabric", value.to_string()));
    }
    out
}

/// The `topology` values of a scenario: `sources-<n>` (TopologySources), and per initial
/// node `matches-<k>` (Ready sources selecting it, 2 standing for two or more) and
/// `levels-<l>` (the levels its profile hashes, hostname included), as the node topology
/// reconciler sees the node's own labels (model::nodefeature::node_topology_levels).
fn topology_shapes(s: &Scenario) -> Shown {
    use model::nodefeature::{node_topology_levels, topology_source_selects};
    let sources = &s.cluster.topology_sources;
    let mut out: Shown = vec![("topology", format!("sources-{}", sources.len()))];
    for node in &s.cluster.nodes {
        let matches = sources
            .iter()
            .filter(|src| topology_source_selects(src, &node.labels))
            .count()
            .min(2);
        let levels = node_topology_levels(&node.labels, sources).len();
        out.push(("topology", format!("matches-{matches}")));
        out.push(("topology", format!("levels-{levels}")));
    }
    out.sort();
    out.dedup();
    out
}

/// The `mixing-flip` values of a scenario with a `MixingFlip`: `drawn`, and what its flips did
/// when replayed through the model (`World::flip_mixing`): `flavor-recreated` (a CPU flavor
/// deleted and recreated for its mixing selector), `flavor-retired` (a flavor left without
/// contributors), `postponed` (a deletion waiting 10 s for a node's profile) and
/// `migration-drain` (a queue's HoldAndDrain migration evicted Workloads). Replays only up to
/// the last flip.
fn mixing_flips(s: &Scenario, deriver: &Deriver) -> Shown {
    use model::events::{Effect, Event};
    use model::flavor::FlavorTransition;
    let Some(last) = s.events.iter().rposition(|e| *e == Event::MixingFlip) else {
        return Vec::new();
    };
    let mut out: Shown = vec![("mixing-flip", "drawn".to_string())];
    let mut world = s.start_through(deriver.clone());
    for e in &s.events[..=last] {
        if *e != Event::MixingFlip {
            world.apply(e);
            continue;
        }
        let (effect, transitions) = world.flip_mixing();
        if matches!(effect, Effect::Evicted { .. }) {
            out.push(("mixing-flip", "migration-drain".to_string()));
        }
        for t in transitions {
            let value = match t {
                FlavorTransition::Recreated { .. } => "flavor-recreated",
                FlavorTransition::Retired { .. } | FlavorTransition::SiblingRetired { .. } => {
                    "flavor-retired"
                }
                FlavorTransition::Postponed { .. } => "postponed",
            };
            out.push(("mixing-flip", value.to_string()));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every (class, value) a generated scenario shows; `mutant` names the property a mutant
/// run checks (`mutant-<name>`), which every scenario exercises.
pub fn shown(s: &Scenario, mutant: Option<model::mutants::Mutant>) -> Shown {
    shown_through(s, mutant, &Deriver::plain())
}

/// [`shown`], the mixing flips replayed through `deriver` (the seed's, which its judgement
/// replays the same events through).
pub fn shown_through(
    s: &Scenario,
    mutant: Option<model::mutants::Mutant>,
    deriver: &Deriver,
) -> Shown {
    let mut out: Shown = Vec::new();
    let mut cards = 0;
    for node in &s.cluster.nodes {
        let shape = node_shape(node);
        cards += shape.cards;
        out.extend(shape.vendors.into_iter().map(|v| ("vendors", v)));
        out.extend(shape.modes.into_iter().map(|v| ("modes", v)));
        out.extend(shape.families.into_iter().map(|v| ("families", v)));
        out.extend(network_shapes(node));
    }
    out.extend(partition_shapes(s));
    out.extend(topology_shapes(s));
    out.extend(mixing_flips(s, deriver));
    out.push(("nodes", s.cluster.nodes.len().to_string()));
    out.extend(s.cluster.foreign_queues.iter().map(|q| {
        let state = if q.terminating { "terminating" } else { "live" };
        ("foreign-queues", state.to_string())
    }));
    out.extend(
        s.events
            .iter()
            .map(|e| ("events", event_kind(e).to_string())),
    );
    match mutant {
        Some(m) => out.push(("properties", format!("mutant-{m}"))),
        None => out.extend(
            exercised(s, cards)
                .into_iter()
                .map(|p| ("properties", p.to_string())),
        ),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partitioned_hygon_node_and_a_hygon_partition_request_are_shown() {
        use model::devices::{Card, DeviceGroup, Devices};
        use model::ledger::catalogs::hygon_bw;
        let card = |i: u32, cap| Card {
            id: format!("hygon-bw-{i}"),
            index: i,
            capability: Some(cap),
            ledger: None,
        };
        let node = |name: &str, cap: model::devices::Capability| model::cluster::Node {
            name: name.into(),
            devices: Some(Devices {
                groups: vec![DeviceGroup {
                    manufacturer: "hygon".into(),
                    id: "bw".into(),
                    cards: vec![card(0, cap.clone()), card(1, cap)],
                    ..DeviceGroup::default()
                }],
            }),
            ..model::cluster::Node::default()
        };
        let request = |key: &str| model::workload::Workload {
            deployment: None,
            name: "wl".into(),
            pod_sets: vec![model::workload::PodSet {
                containers: vec![model::workload::Container {
                    name: "main".into(),
                    requests: [
                        ("hygon.com/dcu.partitioned".to_string(), "1".to_string()),
                        (key.to_string(), "1".to_string()),
                    ]
                    .into_iter()
                    .collect(),
                    ..model::workload::Container::default()
                }],
                ..model::workload::PodSet::default()
            }],
            ..model::workload::Workload::default()
        };
        let s = Scenario {
            cluster: model::cluster::Cluster {
                nodes: vec![node("plain", model::devices::Capability::default())],
                ..model::cluster::Cluster::default()
            },
            events: vec![
                model::events::Event::NodeJoin {
                    node: node("mig", hygon_bw()),
                },
                model::events::Event::Submit {
                    workload: request("hygon.com/dcu.partitioned.mig-2g.15gb"),
                },
            ],
            ..Scenario::default()
        };
        let values = shown(&s, None);
        let has = |class: &str, value: &str| values.iter().any(|(c, v)| *c == class && v == value);
        assert!(has("partitions", "hygon"), "{values:?}");
        assert!(has("partition-requests", "hygon"), "{values:?}");
        // An unpartitioned Hygon node and a key no vendor partitions under show neither.
        let plain = Scenario {
            events: vec![model::events::Event::Submit {
                workload: request("amd.com/gpu.partitioned.mig-2g.15gb"),
            }],
            ..s.clone()
        };
        let values = shown(&plain, None);
        assert!(
            !values.iter().any(|(c, _)| c.starts_with("partition")),
            "{values:?}"
        );
    }

    #[test]
    fn a_mixing_flip_shows_what_it_did_to_the_flavors_and_queues() {
        use model::events::Event;
        let cluster = model::examples::walkthrough();
        let cpu_pool = model::derive::derive(&cluster)
            .instance_types
            .iter()
            .find(|it| !it.spec.acceleratable)
            .map(|it| it.name.clone())
            .expect("the walkthrough has a CPU pool");
        let busy = model::examples::workload("busy", &cpu_pool, 1, &[("cpu", "1")]);
        let s = Scenario {
            cluster,
            events: vec![Event::Submit { workload: busy }, Event::MixingFlip],
            ..Scenario::default()
        };
        let values = shown(&s, None);
        let has = |value: &str| {
            values
                .iter()
                .any(|(c, v)| *c == "mixing-flip" && v == value)
        };
        assert!(has("drawn") && has("flavor-recreated"), "{values:?}");
        assert!(
            has("flavor-retired") && has("migration-drain"),
            "{values:?}"
        );
        assert!(values
            .iter()
            .any(|(c, v)| *c == "events" && v == "mixing-flip"));
        let quiet = Scenario {
            events: vec![Event::AwarenessFlip],
            ..s.clone()
        };
        assert!(!shown(&quiet, None).iter().any(|(c, _)| *c == "mixing-flip"));
    }

    #[test]
    fn the_walkthrough_shows_its_vendors_node_count_and_properties() {
        let s = Scenario {
            cluster: model::examples::walkthrough(),
            events: vec![model::events::Event::AwarenessFlip],
            ..Scenario::default()
        };
        let values = shown(&s, None);
        let has = |class: &str, value: &str| values.iter().any(|(c, v)| *c == class && v == value);
        assert!(has("vendors", "nvidia"), "{values:?}");
        assert!(has("nodes", &s.cluster.nodes.len().to_string()));
        assert!(has("events", "awareness-flip"));
        assert!(has("topology", "sources-0"), "{values:?}");
        assert!(has("topology", "matches-0") && has("topology", "levels-1"));
        assert!(has("properties", "invariance"));
        assert!(!has("properties", "admission"), "no submission");
        assert!(has("modes", "None") || has("modes", "unreported"));
        let mutant = shown(&s, Some(model::mutants::Mutant::CohortSet));
        let props: Vec<&String> = mutant
            .iter()
            .filter(|(c, _)| *c == "properties")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(props, ["mutant-cohort-set"]);

        let mut c = reports::Coverage::default();
        c.observe(values);
        assert_eq!(c.count("vendors", "nvidia"), 1);
    }

    #[test]
    fn nic_shapes_and_fabric_agreement_are_shown() {
        use model::devices::{CardTopology, Fabric, Interface, Link, LinkState};
        let mut s = Scenario {
            cluster: model::examples::walkthrough(),
            ..Scenario::default()
        };
        let values = shown(&s, None);
        let has =
            |v: &Shown, class: &str, value: &str| v.iter().any(|(c, x)| *c == class && x == value);
        assert!(has(&values, "rdma", "no-nic"), "{values:?}");
        assert!(has(&values, "fabric", "none"), "{values:?}");
        let node = s
            .cluster
            .nodes
            .iter_mut()
            .find(|n| n.devices.is_some())
            .unwrap();
        node.network.interfaces.push(Interface {
            name: "ens1f0".into(),
            rdma: true,
            rdma_device: "mlx5_0".into(),
            link: Some(Link {
                state: LinkState::Failed,
                reason: String::new(),
            }),
            ..Interface::default()
        });
        let ids: Vec<String> = node.cards().map(|c| c.id.clone()).collect();
        for id in ids {
            let fabric = Fabric {
                kind: "ub".into(),
                id: "7".into(),
                ..Fabric::default()
            };
            node.network.topology.insert(
                id,
                CardTopology {
                    fabric: Some(fabric),
                    ..CardTopology::default()
                },
            );
        }
        let values = shown(&s, None);
        assert!(has(&values, "rdma", "whole"), "{values:?}");
        assert!(has(&values, "rdma", "link-failed"), "{values:?}");
        assert!(
            !has(&values, "rdma", "capable"),
            "a failed link is not capable"
        );
        assert!(has(&values, "fabric", "agreed"), "{values:?}");
    }
}
