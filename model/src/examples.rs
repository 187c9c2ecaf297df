//! Built-in cluster shapes: the recorded walkthrough cluster of research/chain.md §15, used as
//! the embedded default of `verify derive` and as an end-to-end test of the derivation.

use crate::cluster::{Cluster, Namespace, Node};
use crate::devices::{Capability, Card, DeviceGroup, Devices};
use crate::labels::{Labels, Text, ToSmolStr, ARCH, CPU_NAME_ANNOTATION, CPU_VENDOR, HOSTNAME, OS};
use crate::workload::{Container, PodSet, Workload};

/// A linux/amd64 node as NFD labels it, with its CPU name annotation and core count.
pub fn nfd_node(name: &str, vendor: &str, cpu_name: &str, cores: u64) -> Node {
    let labels: Labels = [
        (OS, "linux"),
        (ARCH, "amd64"),
        (HOSTNAME, name),
        (CPU_VENDOR, vendor),
    ]
    .into_iter()
    .map(|(k, v)| (Text::new_static(k), Text::new(v)))
    .collect();
    let annotations: Labels =
        [(Text::new_static(CPU_NAME_ANNOTATION), cpu_name.to_smolstr())].into();
    Node {
        name: name.to_string(),
        labels,
        annotations,
        cpu_millis: cores * 1000,
        deleting: false,
        devices: None,
        network: Default::default(),
    }
}

/// `n` free NVIDIA cards of one product, each logically sliceable into 128 overcommittable
/// slices (docs/modules/devices/scheduling.md: NVIDIA 128, overcommittable).
pub fn nvidia_group(id: &str, product: &str, memory_mib: u64, n: u32) -> DeviceGroup {
    DeviceGroup {
        manufacturer: "nvidia".into(),
        id: id.into(),
        name: product.into(),
        memory_mib,
        runtime_version: "12.4".into(),
        driver_version: "550.54.15".into(),
        cards: (0..n)
            .map(|i| Card {
                id: format!("GPU-{id}-{i}"),
                index: i,
                capability: Some(Capability {
                    logical_sliced_count: 128,
                    cores_percentage_overcommit: true,
                    ..Capability::default()
                }),
                ledger: Some(Default::default()),
            })
            .collect(),
        ..DeviceGroup::default()
    }
}

/// The walkthrough's seven ResourceFlavor names as the recorded run shows them (chain.md §15),
/// before the E3 `-<profile>` suffix; name-sorted.
pub const WALKTHROUGH_FLAVORS: [&str; 7] = [
    "gpustack--amd-epyc-7r13-linux-amd64-16c",
    "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
    "gpustack--amd-epyc-7r32-linux-amd64-4c",
    "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
    "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
    "gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c",
    "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c",
];

/// The walkthrough cluster (chain.md §15): a 16-core CPU node, an A10G node and two T4 nodes,
/// all linux/amd64, in namespaces `default` and `team-a` plus the two reserved ones.
pub fn walkthrough() -> Cluster {
    let mut a10g = nfd_node("node-a10g", "AMD", "AMD EPYC 7R32", 4);
    a10g.devices = Some(Devices {
        groups: vec![nvidia_group("a10g", "NVIDIA A10G", 24576, 1)],
    });
    let intel = "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz";
    let mut t4a = nfd_node("node-t4-a", "Intel", intel, 4);
    t4a.devices = Some(Devices {
        groups: vec![nvidia_group("tesla-t4", "Tesla T4", 16384, 1)],
    });
    let mut t4b = nfd_node("node-t4-b", "Intel", intel, 48);
    t4b.devices = Some(Devices {
        groups: vec![nvidia_group("tesla-t4", "Tesla T4", 16384, 4)],
    });
    Cluster {
        nodes: vec![
            nfd_node("node-cpu", "AMD", "AMD EPYC 7R13 Processor", 16),
            a10g,
            t4a,
            t4b,
        ],
        namespaces: ["default", "team-a", "gpustack-system", "kube-system"]
            .into_iter()
            .map(|n| Namespace {
                name: n.into(),
                terminating: false,
            })
            .collect(),
        ..Cluster::default()
    }
}

/// The walkthrough with card 0 of node-t4-b switched to MIG (the A100-40GB catalog, free); the
/// other cards stay logical, so the T4 pool offers partition profiles on one card.
pub fn walkthrough_with_mig_card() -> Cluster {
    use crate::ledger::{catalogs, seed};
    let mut cluster = walkthrough();
    let first_t4b_card = cluster
        .nodes
        .iter_mut()
        .filter(|n| n.name == "node-t4-b")
        .flat_map(|n| n.devices.iter_mut())
        .flat_map(|d| d.groups.iter_mut())
        .find_map(|g| g.cards.first_mut());
    if let Some(card) = first_t4b_card {
        let mig = catalogs::a100_40gb();
        card.ledger = Some(seed(mig.clone()).row);
        card.capability = Some(mig);
    }
    cluster
}

/// Products per manufacturer used by [`large_mixed`]; NVIDIA's nest (a10 ⊂ a100, l40 ⊂ l40s,
/// h20 ⊂ h200) on purpose.
const PRODUCTS: [(&str, &str, &str, u64); 12] = [
    ("nvidia", "a10", "NVIDIA A10", 24576),
    ("nvidia", "a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", 40960),
    ("nvidia", "l40", "NVIDIA L40", 46068),
    ("nvidia", "l40s", "NVIDIA L40S", 46068),
    ("nvidia", "h20", "NVIDIA H20", 97871),
    ("nvidia", "h200", "NVIDIA H200", 143771),
    ("amd", "mi300x", "AMD Instinct MI300X", 196592),
    ("ascend", "910b2", "Ascend 910B2", 65536),
    ("hygon", "k100-ai", "K100_AI", 65520),
    ("thead", "ppu-zw810e", "PPU-ZW810E", 98304),
    ("cambricon", "mlu370-x8", "MLU370-X8", 24576),
    ("metax", "mxc500", "MXC500", 65536),
];

/// An A100-40GB in MIG mode with two `1g.5gb` instances carved by real charges.
fn carved_a100() -> (Capability, crate::devices::Ledger) {
    use crate::devices::Placement;
    use crate::ledger::{catalogs, charge, seed, Charge, Instance};
    let capability = catalogs::a100_40gb();
    let mut card = seed(capability.clone());
    for start in [0, 1] {
        let instance = Charge::Partition(Instance {
            profile: "1g.5gb".into(),
            placement: Placement { start, length: 1 },
        });
        if let Ok(next) = charge(&card, &instance) {
            card = next;
        }
    }
    (capability, card.row)
}

/// One card of [`large_mixed`], its family and occupancy chosen by `k`; a node-wide vendor's
/// cards (Hygon) are never partitioned one at a time, so their MIG slot is a free logical card
/// (devices::partition_scope; hygon-mig.md "The mode is node-wide").
fn mixed_card(group: &str, i: u32, k: usize, node_wide: bool) -> Card {
    use crate::devices::{Ledger, Mode};
    use crate::units::{UNITS_PER_PERCENT, UNITS_PER_SHARE};
    let logical = Capability {
        logical_sliced_count: 16,
        ..Capability::default()
    };
    let (capability, ledger) = match k % 6 {
        0 => (logical, Ledger::default()),
        1 => (
            logical,
            Ledger {
                mode: Mode::Exclusive,
                remaining_units: 0,
                ..Ledger::default()
            },
        ),
        2 => (
            logical,
            Ledger {
                mode: Mode::Shared,
                remaining_units: 7 * UNITS_PER_SHARE,
                ..Ledger::default()
            },
        ),
        3 => (
            logical,
            Ledger {
                mode: Mode::Sliced,
                remaining_units: 55 * UNITS_PER_PERCENT,
                allocated_slices: 3,
                ..Ledger::default()
            },
        ),
        4 if node_wide => (logical, Ledger::default()),
        4 => carved_a100(),
        _ => (Capability::default(), Ledger::default()),
    };
    Card {
        id: format!("{group}-card-{i}"),
        index: i,
        capability: Some(capability),
        ledger: Some(ledger),
    }
}

/// A large mixed cluster for benchmarks: `nodes` nodes with `cards` cards each, two CPU
/// vendors, amd64 and arm64, twelve products of seven vendors, every card family and occupancy.
pub fn large_mixed(nodes: usize, cards: u32) -> Cluster {
    let cpus = [
        ("AMD", "AMD EPYC 7763 64-Core Processor"),
        ("Intel", "Intel(R) Xeon(R) Platinum 8358 CPU @ 2.60GHz"),
    ];
    let nodes = (0..nodes)
        .map(|n| {
            let (vendor, cpu) = cpus[n % cpus.len()];
            let mut node = nfd_node(
                &format!("node-{n:04}"),
                vendor,
                cpu,
                32 + 32 * (n as u64 % 3),
            );
            if n % 5 == 0 {
                node.labels.insert(ARCH.into(), "arm64".into());
            }
            if n % 7 != 6 {
                let (mfr, id, product, mib) = PRODUCTS[n % PRODUCTS.len()];
                let node_wide = crate::devices::partition_scope(mfr)
                    == crate::devices::PartitionScope::NodeWide;
                node.devices = Some(Devices {
                    groups: vec![DeviceGroup {
                        manufacturer: mfr.into(),
                        id: id.into(),
                        name: product.into(),
                        memory_mib: mib,
                        runtime_version: format!("12.{}", n % 4),
                        cards: (0..cards)
                            .map(|i| mixed_card(id, i, n + i as usize, node_wide))
                            .collect(),
                        ..DeviceGroup::default()
                    }],
                });
            }
            node
        })
        .collect();
    Cluster {
        nodes,
        namespaces: (0..20)
            .map(|i| Namespace {
                name: format!("team-{i}"),
                terminating: false,
            })
            .collect(),
        ..Cluster::default()
    }
}

/// A one-pod-set Workload in `default`, submitted to `pool`'s entrance LocalQueue, each pod
/// with one container asking `requests`.
pub fn workload(name: &str, pool: &str, count: u32, requests: &[(&str, &str)]) -> Workload {
    Workload {
        deployment: None,
        name: name.into(),
        namespace: "default".into(),
        queue: crate::nodefeature::local_queue_name(pool),
        pod_sets: vec![PodSet {
            name: "main".into(),
            count,
            containers: vec![Container {
                name: "c".into(),
                requests: requests
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Container::default()
            }],
            ..PodSet::default()
        }],
    }
}
