//! The fixed palette the checker draws its scope from: node templates (amd64/arm64, two CPU
//! kinds on amd64), NVIDIA A100-40GB cards that are free and logical (128 slices) or in MIG
//! mode (the A100-40GB catalog, devices.md §3.2), and per-scope Workload templates of every
//! family. Nothing here decides a rule: names come from the model (`local_queue_name`,
//! `profile_resource_name`), capabilities from `generators::devices`.

use model::cluster::{Cluster, Namespace, Node};
use model::derive::derive;
use model::devices::{Capability, Card, DeviceGroup, Devices};
use model::labels::{ARCH, CPU_NAME_ANNOTATION, CPU_VENDOR, HOSTNAME, OS};
use model::ledger::{catalogs, seed};
use model::nodefeature::{group_id, local_queue_name};
use model::resources::{base_of, profile_resource_name};
use model::workload::{Container, PodSet, ResourceList, Workload};

use crate::devices::plain_capability;
use crate::nodes::CPUS;

/// The product every palette card is: it has both a logical and a MIG family.
pub const PRODUCT: &str = "NVIDIA A100-SXM4-40GB";
const MANUFACTURER: &str = "nvidia";
const MEMORY_MIB: u64 = 40960;

/// The namespace every scope has, and the one `namespace create/delete` toggles.
pub const HOME_NAMESPACE: &str = "default";
pub const EXTRA_NAMESPACE: &str = "team-b";

/// Node kinds, cycled by slot: two interchangeable amd64 AMD nodes, an arm64 Kunpeng node,
/// then an amd64 Intel node (the second CPU kind on amd64). Index into `nodes::CPUS`.
const NODE_CPUS: [usize; 4] = [0, 0, 4, 1];

/// The CPU template of node slot `i` (slots of equal kind are interchangeable).
pub fn node_kind(i: usize) -> usize {
    NODE_CPUS.get(i % NODE_CPUS.len()).copied().unwrap_or(0)
}

pub fn node_name(i: usize) -> String {
    format!("node-{i}")
}

/// The id of card `c` of a node.
pub fn card_id(c: usize) -> String {
    format!("GPU-{c}")
}

/// A card's capability in its family: logical (free, 128 overcommittable slices) or MIG.
pub fn card_capability(mig: bool) -> Capability {
    if mig {
        catalogs::a100_40gb()
    } else {
        plain_capability(MANUFACTURER)
    }
}

/// Card `c` of a node, free, in the given family.
pub fn card(c: usize, mig: bool) -> Card {
    let capability = card_capability(mig);
    Card {
        id: card_id(c),
        index: c as u32,
        ledger: Some(seed(capability.clone()).row),
        capability: Some(capability),
    }
}

/// Node slot `i` with `cards` free logical cards, as NFD and the kubelet leave it.
pub fn node(i: usize, cards: usize) -> Node {
    let cpu = CPUS.get(node_kind(i)).copied().unwrap_or(CPUS[0]);
    let name = node_name(i);
    let labels = model::labels::from_pairs(&[
        (OS, "linux"),
        (ARCH, cpu.arch),
        (HOSTNAME, name.as_str()),
        (CPU_VENDOR, cpu.vendor_id),
    ]);
    Node {
        name: name.clone(),
        labels,
        annotations: model::labels::from_pairs(&[(CPU_NAME_ANNOTATION, cpu.name)]),
        cpu_millis: 16_000,
        deleting: false,
        devices: Some(Devices {
            groups: vec![DeviceGroup {
                manufacturer: MANUFACTURER.into(),
                id: group_id(PRODUCT, MANUFACTURER),
                name: PRODUCT.into(),
                memory_mib: MEMORY_MIB,
                cores: 6912,
                runtime_version: "12.4".into(),
                driver_version: "550.54.15".into(),
                cards: (0..cards).map(|c| card(c, false)).collect(),
                ..DeviceGroup::default()
            }],
        }),
        network: Default::default(),
    }
}

/// The initial cluster of a scope: every node present with free logical cards, the home
/// namespace, default settings (plus the mutant, if any).
pub fn initial_cluster(
    nodes: usize,
    cards: usize,
    mutant: Option<model::mutants::Mutant>,
) -> Cluster {
    let mut cluster = Cluster {
        nodes: (0..nodes).map(|i| node(i, cards)).collect(),
        namespaces: vec![Namespace {
            name: HOME_NAMESPACE.into(),
            terminating: false,
        }],
        ..Cluster::default()
    };
    cluster.settings.mutant = mutant;
    cluster
}

/// What a Workload template asks of one card pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    Exclusive(u32),
    Shared(u32),
    SlicedPercent(u32),
    Partition(&'static str),
}

/// The per-scope template list, cycled: whole card, a MIG partition, shares, a slice, two
/// whole cards, the whole-card partition, then the same again in the other namespace.
///
/// The shares are two, on two distinct cards of one node (admission.md §2.2; one share per
/// card): a palette node has two cards, so the pod fits a free node, and a whole card asked
/// after it on that node passes gate 2 (Kueue's TAS counts the node's `nvidia.com/gpu`
/// allocatable less what that key holds, and shares hold `.shared` tokens only) while no card
/// is whole any more: gate 3's Retry (placement.rs `node_free_accelerators`). Six shares, the
/// earlier entry, need six cards on one node and never passed gate 2's fit label here.
const ASKS: [Ask; 6] = [
    Ask::Exclusive(1),
    Ask::Partition("3g.20gb"),
    Ask::Shared(2),
    Ask::SlicedPercent(60),
    Ask::Exclusive(2),
    Ask::Partition("7g.40gb"),
];

/// The requests of `ask` for NVIDIA (admission.md §2.3, §4.2), plus a little CPU.
pub fn requests(ask: Ask) -> ResourceList {
    let base = base_of(MANUFACTURER).unwrap_or("nvidia.com/gpu");
    let mut out: Vec<(String, String)> = match ask {
        Ask::Exclusive(n) => vec![(base.to_string(), n.to_string())],
        Ask::Shared(n) => vec![(format!("{base}.shared"), n.to_string())],
        Ask::SlicedPercent(p) => vec![
            (format!("{base}.sliced"), "1".into()),
            (format!("{base}.sliced.memory-percentage"), p.to_string()),
        ],
        Ask::Partition(profile) => vec![
            (format!("{base}.partitioned"), "1".into()),
            (
                profile_resource_name(MANUFACTURER, profile)
                    .unwrap_or_else(|| format!("{base}.partitioned.mig-{profile}")),
                "1".into(),
            ),
        ],
    };
    out.push(("cpu".into(), "500m".into()));
    out.into_iter().collect()
}

/// `workloads` templates for the accelerated pools of the full initial cluster: template `k`
/// asks `ASKS[k % 6]` of pool `(k / 3) % pools` (pools in derivation order, so the first
/// three contend for one pool), in the home namespace.
pub fn workload_templates(cluster: &Cluster, workloads: usize) -> Vec<Workload> {
    let derived = derive(cluster);
    let pools: Vec<String> = derived
        .instance_types
        .iter()
        .filter(|it| it.spec.acceleratable)
        .map(|it| it.name.to_string())
        .collect();
    (0..workloads)
        .map(|k| {
            let ask = ASKS[k % ASKS.len()];
            let pool = pools
                .get((k / 3) % pools.len().max(1))
                .cloned()
                .unwrap_or_else(|| "gpustack--no-pool".into());
            let requests = requests(ask);
            let limits: ResourceList = requests
                .iter()
                .filter(|(key, _)| key.as_str() != "cpu")
                .map(|(key, v)| (key.clone(), v.clone()))
                .collect();
            Workload {
                deployment: None,
                name: format!("wl-{k}"),
                namespace: HOME_NAMESPACE.into(),
                queue: local_queue_name(&pool),
                pod_sets: vec![PodSet {
                    name: "main".into(),
                    count: 1,
                    containers: vec![Container {
                        name: "main".into(),
                        requests,
                        limits,
                        init: false,
                    }],
                    ..PodSet::default()
                }],
            }
        })
        .collect()
}

/// The kind of request a template makes, for reports.
pub fn ask_of(k: usize) -> Ask {
    ASKS[k % ASKS.len()]
}
