//! The hardware blocks (cases.md §2.5): the MIG block's order and restore rule, the RDMA
//! block's order and its `--report-only` requirement matrix.

use std::collections::BTreeSet;

use model::cluster::Cluster;
use model::rdma::{self, EndpointMode, RDMA_PARTITIONED_KEY};

/// `run-partition-block.sh`'s default list: 27 first (it measures the first partitioning and
/// skips on an already-partitioned card), 24 second (it builds a mixed population from an
/// all-whole node), then the rest. Case 23 owns its whole mode transition and runs alone.
pub const MIG_ORDER: [u32; 10] = [27, 24, 25, 26, 28, 29, 30, 31, 32, 34];

/// `run-rdma-block.sh`'s default list (numeric: a failure in 80 explains the later ones);
/// 85 is not in it.
pub const RDMA_ORDER: [u32; 5] = [80, 81, 82, 83, 84];

/// A card's partition mode as the block reads it before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigMode {
    Disabled,
    Enabled,
}

/// The cards the block must switch back at its end: exactly those Disabled at its start and
/// Enabled now (a card already partitioned before the run is left as found).
pub fn cards_to_restore<'a>(
    start: &'a [(String, MigMode)],
    now: &[(String, MigMode)],
) -> Vec<&'a str> {
    start
        .iter()
        .filter(|(card, m)| {
            *m == MigMode::Disabled && now.iter().any(|(c, n)| c == card && *n == MigMode::Enabled)
        })
        .map(|(c, _)| c.as_str())
        .collect()
}

/// The requirements `--report-only` reads per node (run-rdma-block.sh).
pub const RDMA_REQUIREMENTS: [&str; 8] = [
    "endpoint",
    "endpoint-whole",
    "sriov",
    "failed-link",
    "accelerator",
    "numa-split",
    "topology-enforced",
    "partitioned-card",
];

/// Which requirements gate which case (cases.md §2.5).
pub const RDMA_GATES: [(u32, &str); 5] = [
    (80, "endpoint (its SR-IOV and failed-link checks skip individually)"),
    (81, "endpoint, endpoint-whole, plus E2E_RDMA_IMAGE for the verbs check"),
    (82, "endpoint-whole, accelerator, numa-split, topology-enforced, plus partitioned-card for the observation"),
    (83, "a device manager and a readable kubelet configz"),
    (84, "endpoint-whole, an InfiniBand link layer, E2E_RDMA_PERFTEST_IMAGE"),
];

/// One MET/UNMET reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub node: String,
    pub requirement: &'static str,
    pub met: bool,
    /// The reading, or what the cluster lacks.
    pub detail: String,
}

/// The NUMA ids of the node's spec cards, and whether some card's NUMA is unknown.
fn card_numas(node: &model::cluster::Node) -> (BTreeSet<String>, bool) {
    let mut numas = BTreeSet::new();
    let mut unknown = false;
    for card in node.cards().filter(|c| c.capability.is_some()) {
        match node
            .network
            .card(&card.id)
            .map(|t| t.numa_affinity.as_str())
        {
            Some(n) if !n.is_empty() => {
                numas.insert(n.to_string());
            }
            _ => unknown = true,
        }
    }
    (numas, unknown)
}

/// The NUMA ids of the node's usable RDMA endpoints (`rdmaEndpoints`' reduction).
fn endpoint_numas(node: &model::cluster::Node) -> BTreeSet<String> {
    rdma::label_endpoints(&node.network.interfaces)
        .iter()
        .filter(|e| !e.numa.is_empty())
        .map(|e| e.numa.to_string())
        .collect()
}

/// `numa-split` (rdma-host-shapes.md P5): some accelerator's NUMA node carries a usable
/// endpoint and some other's carries none; undecidable while a card's NUMA is unknown.
fn numa_split(node: &model::cluster::Node) -> (bool, String) {
    let (cards, unknown) = card_numas(node);
    let endpoints = endpoint_numas(node);
    if cards.is_empty() {
        return (false, "lacks accelerator NUMA affinities in Devices".into());
    }
    let beside: Vec<&String> = cards.iter().filter(|n| endpoints.contains(*n)).collect();
    let apart: Vec<&String> = cards.iter().filter(|n| !endpoints.contains(*n)).collect();
    let met = !beside.is_empty() && !apart.is_empty();
    let mut detail = format!(
        "accelerator NUMA {:?}, endpoint NUMA {:?}",
        cards, endpoints
    );
    if unknown {
        detail.push_str("; some card's NUMA is unknown");
    }
    (met, detail)
}

/// One requirement of one node, read off its Devices (cards, `spec.interfaces`, topology).
fn requirement_reading(node: &model::cluster::Node, requirement: &str) -> (bool, String) {
    let devices = node.devices.as_ref();
    let cards: Vec<_> = node.cards().collect();
    let endpoints = rdma::resource_endpoints(&node.network.interfaces);
    let of_mode = |m: EndpointMode| endpoints.iter().filter(|e| e.mode == m).count();
    let listed = |pick: &dyn Fn(&rdma::ResourceEndpoint<'_>) -> bool| {
        endpoints
            .iter()
            .filter(|e| pick(e))
            .map(|e| format!("{} ({})", e.name, e.rdma_device))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let no_endpoint = || {
        format!(
            "lacks an RDMA endpoint: {} interface(s) in Devices, none with a bound rdmaDevice",
            node.network.interfaces.len()
        )
    };
    match requirement {
        "accelerator" => (
            !cards.is_empty(),
            format!("{} card(s) in Devices", cards.len()),
        ),
        "partitioned-card" => {
            let n = cards.iter().filter(|c| c.is_partitioned()).count();
            (n > 0, format!("{n} partitioned card(s) in Devices"))
        }
        "endpoint" if endpoints.is_empty() => (false, no_endpoint()),
        "endpoint" => (
            true,
            format!("{} endpoint(s): {}", endpoints.len(), listed(&|_| true)),
        ),
        "endpoint-whole" => match of_mode(EndpointMode::Whole) {
            0 if endpoints.is_empty() => (false, no_endpoint()),
            0 => (
                false,
                "lacks a whole-function endpoint (every endpoint is a VF)".into(),
            ),
            n => (
                true,
                format!("{n}: {}", listed(&|e| e.mode == EndpointMode::Whole)),
            ),
        },
        "sriov" => match of_mode(EndpointMode::Partitioned) {
            0 => (false, "lacks SR-IOV VFs with a bound rdmaDevice".into()),
            n => (
                true,
                format!(
                    "{n} VF(s): {}",
                    listed(&|e| e.mode == EndpointMode::Partitioned)
                ),
            ),
        },
        "failed-link" => match endpoints.iter().filter(|e| !e.healthy).count() {
            0 => (false, "lacks an endpoint whose link is failed".into()),
            n => (true, format!("{n}: {}", listed(&|e| !e.healthy))),
        },
        "numa-split" => numa_split(node),
        "topology-enforced" => (
            false,
            "lacks a kubelet TopologyManager policy (no configz in the model)".into(),
        ),
        _ if devices.is_none() => (false, "lacks a Devices object".into()),
        other => (false, format!("lacks a reading for `{other}`")),
    }
}

/// What this cluster shape can answer, node by node: the endpoint, whole, SR-IOV, failed-link,
/// accelerator, NUMA-split and partitioned-card readings come from each node's Devices (cards,
/// `spec.interfaces`, card topology); the kubelet policy is in no model, so
/// `topology-enforced` is UNMET and says so. Touches nothing.
pub fn rdma_readings(cluster: &Cluster) -> Vec<Reading> {
    let mut out = Vec::new();
    for node in cluster.nodes.iter().filter(|n| n.devices.is_some()) {
        for requirement in RDMA_REQUIREMENTS {
            let (met, detail) = requirement_reading(node, requirement);
            out.push(Reading {
                node: node.name.clone(),
                requirement,
                met,
                detail,
            });
        }
    }
    out
}

/// A reading of rdma-host-shapes.md the model answers (what a node should show) or skips.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub node: String,
    /// `R0`, `R1`, `R3`…
    pub reading: &'static str,
    /// `None` = SKIP.
    pub expected: Option<String>,
    /// The expectation, or why it is skipped.
    pub detail: String,
}

/// The readings R0–R7 per node with Devices: R0 (inventory), R1 (per-mode counts), R4 (a
/// failed link keeps capacity, loses allocatable) and R5 (the partitioned key counts VFs, the
/// PF zero times) are computed from the Devices by `model::rdma`; R2, R3, R6 and R7 need a
/// granted Pod, the kubelet or the hardware and are SKIP with the reason.
pub fn rdma_expectations(cluster: &Cluster) -> Vec<Expectation> {
    let mut out = Vec::new();
    for node in cluster.nodes.iter().filter(|n| n.devices.is_some()) {
        let endpoints = rdma::resource_endpoints(&node.network.interfaces);
        let r = rdma::node_resources(&node.network);
        let push = |out: &mut Vec<Expectation>, reading, expected: Option<String>, detail| {
            out.push(Expectation {
                node: node.name.clone(),
                reading,
                expected,
                detail,
            })
        };
        let devices: Vec<&str> = endpoints.iter().map(|e| e.rdma_device).collect();
        push(
            &mut out,
            "R0",
            Some(format!("{} endpoint(s) {devices:?}", endpoints.len())),
            "the host's /sys/class/infiniband devices behind them equal this list".into(),
        );
        let keys = |m: &std::collections::BTreeMap<&str, i64>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        push(
            &mut out,
            "R1",
            Some(format!("capacity {}", keys(&r.capacity))),
            "exclusive 1 and shared 64 per whole endpoint, partitioned 1 per VF".into(),
        );
        let failed = endpoints.iter().filter(|e| !e.healthy).count();
        let r4 = if failed == 0 {
            None
        } else {
            Some(format!("allocatable {}", keys(&r.allocatable)))
        };
        let r4_detail = if failed == 0 {
            "no endpoint with a failed link".to_string()
        } else {
            format!("{failed} failed endpoint(s): capacity kept, allocatable lower")
        };
        push(&mut out, "R4", r4, r4_detail);
        let vfs = endpoints
            .iter()
            .filter(|e| e.mode == EndpointMode::Partitioned)
            .count();
        let pfs = node
            .network
            .interfaces
            .iter()
            .filter(|i| rdma::serves_partitioned(i))
            .count();
        let (r5, r5_detail) = if vfs == 0 {
            (None, "no SR-IOV VF with a bound rdmaDevice".to_string())
        } else {
            (
                Some(format!("{RDMA_PARTITIONED_KEY}={vfs}")),
                format!("{vfs} VF(s) of {pfs} PF(s); each PF counts zero times"),
            )
        };
        push(&mut out, "R5", r5, r5_detail);
        for (reading, why) in [
            (
                "R2",
                "needs a granted Pod (the device plugin's Allocate answer)",
            ),
            (
                "R3",
                "needs the kubelet's TopologyManager admitting and refusing Pods",
            ),
            ("R6", "needs the kubelet configz and the DM's preflight"),
            (
                "R7",
                "needs an InfiniBand link layer and a perftest image on the hardware",
            ),
        ] {
            push(&mut out, reading, None, why.to_string());
        }
    }
    out.sort_by(|a, b| (&a.node, a.reading).cmp(&(&b.node, b.reading)));
    out
}

/// The `--report-only` text: the matrix, the expectations, then the gates; one line when no
/// node has Devices.
pub fn rdma_report(cluster: &Cluster, what: &str) -> String {
    let readings = rdma_readings(cluster);
    let mut out = format!("RDMA requirements on {what} (report only: nothing touched)\n");
    if readings.is_empty() {
        out.push_str("no node has a Devices object: no device manager has reported, so no RDMA reading can be answered\n");
        return out;
    }
    out.push_str("NODE | REQUIREMENT | MET | READING\n");
    for r in &readings {
        out.push_str(&format!(
            "{} | {} | {} | {}\n",
            r.node,
            r.requirement,
            if r.met { "MET" } else { "UNMET" },
            r.detail
        ));
    }
    out.push_str("\nNODE | READING | EXPECTED | WHY\n");
    for e in rdma_expectations(cluster) {
        out.push_str(&format!(
            "{} | {} | {} | {}\n",
            e.node,
            e.reading,
            e.expected.as_deref().unwrap_or("SKIP"),
            e.detail
        ));
    }
    out.push_str("\nCASE | NEEDS\n");
    for (case, needs) in RDMA_GATES {
        out.push_str(&format!("{case} | {needs}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_disables_only_cards_the_run_enabled() {
        let start = vec![
            ("gpu0".to_string(), MigMode::Disabled),
            ("gpu1".to_string(), MigMode::Enabled),
            ("gpu2".to_string(), MigMode::Disabled),
        ];
        let now = vec![
            ("gpu0".to_string(), MigMode::Enabled),
            ("gpu1".to_string(), MigMode::Enabled),
            ("gpu2".to_string(), MigMode::Disabled),
        ];
        assert_eq!(cards_to_restore(&start, &now), vec!["gpu0"]);
    }

    #[test]
    fn mig_block_runs_27_then_24_first() {
        assert_eq!(&MIG_ORDER[..2], &[27, 24]);
        assert!(!MIG_ORDER.contains(&23));
    }

    #[test]
    fn report_on_the_walkthrough_answers_accelerators_only() {
        let r = rdma_readings(&model::examples::walkthrough());
        assert!(!r.is_empty());
        assert!(r
            .iter()
            .filter(|x| x.met)
            .all(|x| x.requirement == "accelerator"));
        assert!(r
            .iter()
            .any(|x| x.requirement == "endpoint" && !x.met && x.detail.contains("lacks")));
        let empty = rdma_report(&Cluster::default(), "an empty cluster");
        assert!(empty.contains("no node has a Devices object"));
    }

    /// The walkthrough with devices.md §1.5 example C on its first accelerated node: a whole
    /// endpoint on NUMA 0, an SR-IOV PF on NUMA 1 with an ok and a failed VF; its cards on
    /// NUMA 0 and 2.
    fn with_example_c() -> (Cluster, String) {
        use model::devices::{CardTopology, Interface, Link, LinkState, VirtualFunction};
        let mut c = model::examples::walkthrough();
        let node = c.nodes.iter_mut().find(|n| n.devices.is_some()).unwrap();
        let link = |state| {
            Some(Link {
                state,
                reason: String::new(),
            })
        };
        let vf = |name: &str, dev: &str, state| VirtualFunction {
            name: name.into(),
            numa_affinity: "1".into(),
            rdma: true,
            rdma_device: dev.into(),
            link: link(state),
            ..VirtualFunction::default()
        };
        node.network.interfaces = vec![
            Interface {
                name: "ens1f0".into(),
                numa_affinity: "0".into(),
                rdma: true,
                rdma_device: "mlx5_0".into(),
                link: link(LinkState::Ok),
                ..Interface::default()
            },
            Interface {
                name: "ens2f0".into(),
                numa_affinity: "1".into(),
                rdma: true,
                rdma_device: "mlx5_1".into(),
                sriov: true,
                virtual_functions: vec![
                    vf("ens2f0v0", "mlx5_2", LinkState::Ok),
                    vf("ens2f0v1", "mlx5_3", LinkState::Failed),
                ],
                ..Interface::default()
            },
        ];
        let ids: Vec<String> = node.cards().map(|c| c.id.clone()).collect();
        for (i, id) in ids.into_iter().enumerate() {
            let numa = if i == 0 { "0" } else { "2" };
            node.network.topology.insert(
                id,
                CardTopology {
                    numa_affinity: numa.into(),
                    ..CardTopology::default()
                },
            );
        }
        let name = node.name.clone();
        (c, name)
    }

    #[test]
    fn the_matrix_reads_the_interfaces() {
        let (c, name) = with_example_c();
        let r = rdma_readings(&c);
        let get = |req: &str| {
            r.iter()
                .find(|x| x.node == name && x.requirement == req)
                .unwrap_or_else(|| panic!("{req}"))
        };
        for met in [
            "endpoint",
            "endpoint-whole",
            "sriov",
            "failed-link",
            "accelerator",
        ] {
            assert!(get(met).met, "{met}: {:?}", get(met));
        }
        assert!(
            get("endpoint").detail.contains("3 endpoint(s)"),
            "{:?}",
            get("endpoint")
        );
        assert!(get("failed-link").detail.contains("ens2f0v1"));
        assert!(!get("topology-enforced").met);
        // cards on NUMA 0 (beside mlx5_0) and 2 (no endpoint): asymmetric
        let multi_card = c
            .nodes
            .iter()
            .find(|n| n.name == name)
            .is_some_and(|n| n.cards().count() > 1);
        assert_eq!(get("numa-split").met, multi_card, "{:?}", get("numa-split"));
    }

    #[test]
    fn expectations_count_vfs_and_keep_a_failed_token_in_capacity() {
        let (c, name) = with_example_c();
        let e = rdma_expectations(&c);
        let get = |reading: &str| {
            e.iter()
                .find(|x| x.node == name && x.reading == reading)
                .unwrap()
        };
        let r1 = get("R1").expected.clone().unwrap();
        assert!(r1.contains("device.gpustack.ai/rdma=1"), "{r1}");
        assert!(r1.contains("device.gpustack.ai/rdma.shared=64"), "{r1}");
        assert!(r1.contains("device.gpustack.ai/rdma.partitioned=2"), "{r1}");
        let r4 = get("R4").expected.clone().unwrap();
        assert!(r4.contains("device.gpustack.ai/rdma.partitioned=1"), "{r4}");
        assert_eq!(
            get("R5").expected.as_deref(),
            Some("device.gpustack.ai/rdma.partitioned=2")
        );
        for skipped in ["R2", "R3", "R6", "R7"] {
            assert_eq!(get(skipped).expected, None, "{skipped}");
        }
        let text = rdma_report(&c, "example C");
        assert!(
            text.contains("| R5 | device.gpustack.ai/rdma.partitioned=2 |"),
            "{text}"
        );
        assert!(text.contains("| R3 | SKIP |"), "{text}");
    }
}
