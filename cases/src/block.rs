//! The hardware blocks (cases.md §2.5): the MIG block's order and restore rule, the RDMA
//! block's order and its `--report-only` requirement matrix.

use model::cluster::Cluster;

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

/// What this cluster shape can answer: the accelerator and partitioned-card readings come from
/// its Devices; the model carries no NIC inventory, NUMA layout or kubelet policy, so every
/// other requirement is UNMET and says so. Touches nothing.
pub fn rdma_readings(cluster: &Cluster) -> Vec<Reading> {
    let mut out = Vec::new();
    for node in &cluster.nodes {
        let Some(devices) = &node.devices else {
            continue;
        };
        let cards: Vec<_> = devices.groups.iter().flat_map(|g| &g.cards).collect();
        let partitioned = cards.iter().filter(|c| c.is_partitioned()).count();
        for requirement in RDMA_REQUIREMENTS {
            let (met, detail) = match requirement {
                "accelerator" => (
                    !cards.is_empty(),
                    format!("{} card(s) in Devices", cards.len()),
                ),
                "partitioned-card" => (
                    partitioned > 0,
                    format!("{partitioned} partitioned card(s) in Devices"),
                ),
                "numa-split" => (
                    false,
                    "lacks a NUMA layout (the model's Devices carry none)".into(),
                ),
                "topology-enforced" => (
                    false,
                    "lacks a kubelet TopologyManager policy (no configz in the model)".into(),
                ),
                _ => (
                    false,
                    "lacks an RDMA endpoint inventory (the model's Devices carry no NICs)".into(),
                ),
            };
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

/// The `--report-only` text: the matrix, then the gates; one line when no node has Devices.
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
}
