//! Nodes as the kubelet and NFD leave them (research/chain.md §2.1): os/arch, hostname, CPU
//! vendor/family/id labels and the `feature.gpustack.ai/cpu-name` annotation, CPU capacity,
//! an optional `gpustack.ai/managed=false`, and an optional `Devices` object.

use model::cluster::Node;
use model::labels::{
    Labels, ARCH, CPU_FAMILY, CPU_ID, CPU_NAME_ANNOTATION, CPU_VENDOR, HOSTNAME, MANAGED, OS,
};
use proptest::prelude::*;

use crate::devices::{arb_devices_with, network_of, MockKey};
use crate::ShapeConfig;

/// A CPU as NFD reports it: cpuid vendor, family and model id, the model name, its GOARCH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu {
    pub vendor_id: &'static str,
    pub family: &'static str,
    pub model_id: &'static str,
    pub name: &'static str,
    pub arch: &'static str,
}

const fn cpu(
    vendor_id: &'static str,
    family: &'static str,
    model_id: &'static str,
    name: &'static str,
    arch: &'static str,
) -> Cpu {
    Cpu {
        vendor_id,
        family,
        model_id,
        name,
        arch,
    }
}

/// CPUs of amd64 and arm64 nodes, so CPU-aware pools split. The arm64 vendor ids and the
/// family/id values are generator choices (NFD's cpuid vendor names; chain.md §2.1 lists only
/// `AMD`, `Intel`, `VendorUnknown`).
pub const CPUS: [Cpu; 6] = [
    cpu("AMD", "25", "1", "AMD EPYC 7763 64-Core Processor", "amd64"),
    cpu(
        "Intel",
        "6",
        "106",
        "Intel(R) Xeon(R) Platinum 8358 CPU @ 2.60GHz",
        "amd64",
    ),
    cpu("AMD", "23", "49", "AMD EPYC 7R32", "amd64"),
    cpu(
        "Intel",
        "6",
        "85",
        "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz",
        "amd64",
    ),
    cpu("HiSilicon", "8", "3377", "Kunpeng 920", "arm64"),
    cpu("VendorUnknown", "", "", "Neoverse-N1", "arm64"),
];

/// How much of the CPU NFD and the `gpustack-cpu-info` rule report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuReport {
    /// Vendor, family and id labels and the name annotation.
    Everything,
    /// Only the name annotation and the vendor label.
    NameAndVendor,
    /// Only the NFD labels (the gKey falls back to `<family>-<id>`).
    LabelsOnly,
    /// Nothing (the gKey is `generic`).
    Nothing,
}

/// CPU labels and annotations as `report` says.
fn cpu_facts(c: &Cpu, report: CpuReport) -> (Vec<(&'static str, &'static str)>, Labels) {
    let mut labels = Vec::new();
    let mut annotations = Labels::new();
    let vendor = matches!(
        report,
        CpuReport::Everything | CpuReport::NameAndVendor | CpuReport::LabelsOnly
    );
    if vendor {
        labels.push((CPU_VENDOR, c.vendor_id));
    }
    if matches!(report, CpuReport::Everything | CpuReport::LabelsOnly) && !c.family.is_empty() {
        labels.push((CPU_FAMILY, c.family));
        labels.push((CPU_ID, c.model_id));
    }
    if matches!(report, CpuReport::Everything | CpuReport::NameAndVendor) {
        annotations.insert(CPU_NAME_ANNOTATION.into(), c.name.into());
    }
    (labels, annotations)
}

/// Gives a node its name and the matching `kubernetes.io/hostname` label.
pub fn name_node(mut node: Node, name: &str) -> Node {
    node.name = name.to_string();
    node.labels.insert(HOSTNAME.into(), name.into());
    node
}

/// A node without a name yet (see [`name_node`]).
pub fn arb_anonymous_node(max_cards: u32, mock: MockKey) -> BoxedStrategy<Node> {
    let report = prop_oneof![
        4 => Just(CpuReport::Everything),
        2 => Just(CpuReport::NameAndVendor),
        1 => Just(CpuReport::LabelsOnly),
        1 => Just(CpuReport::Nothing),
    ];
    (
        prop::sample::select(&CPUS[..]),
        report,
        1u64..=256,
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.05),
        prop::option::weighted(0.75, arb_devices_with(max_cards, mock)),
    )
        .prop_map(|(c, report, half_cores, unmanaged, deleting, devices)| {
            let (cpu_labels, annotations) = cpu_facts(&c, report);
            let mut labels = model::labels::of(
                [(OS, "linux"), (ARCH, c.arch)]
                    .into_iter()
                    .chain(cpu_labels),
            );
            if unmanaged {
                labels.insert(MANAGED.into(), "false".into());
            }
            // drawn from the Devices, not the stream: earlier seeds keep their scenario
            let network = devices.as_ref().map(network_of).unwrap_or_default();
            Node {
                name: String::new(),
                labels,
                annotations,
                cpu_millis: half_cores * 500,
                deleting,
                devices,
                network,
            }
        })
        .boxed()
}

/// A node named `name` (default card limit, no mock key).
pub fn arb_node(name: &str) -> BoxedStrategy<Node> {
    arb_node_with(name, &ShapeConfig::default())
}

/// A node named `name` within `config`'s card limit and mock key.
pub fn arb_node_with(name: &str, config: &ShapeConfig) -> BoxedStrategy<Node> {
    let name = name.to_string();
    arb_anonymous_node(config.max_cards, config.mock.clone())
        .prop_map(move |n| name_node(n, &name))
        .boxed()
}

/// 1..=`max` nodes named `node-0`, `node-1`, … by position, so names stay unique while the
/// list shrinks.
pub fn arb_nodes(max: usize) -> BoxedStrategy<Vec<Node>> {
    arb_nodes_with(&ShapeConfig {
        max_nodes: max,
        ..ShapeConfig::default()
    })
}

/// [`arb_nodes`] within `config`.
pub fn arb_nodes_with(config: &ShapeConfig) -> BoxedStrategy<Vec<Node>> {
    prop::collection::vec(
        arb_anonymous_node(config.max_cards, config.mock.clone()),
        1..=config.max_nodes.max(1),
    )
    .prop_map(|nodes| {
        nodes
            .into_iter()
            .enumerate()
            .map(|(i, n)| name_node(n, &format!("node-{i}")))
            .collect()
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::nodefeature::general_key;

    fn facts(c: &Cpu, report: CpuReport) -> (Labels, Labels) {
        let (labels, annotations) = cpu_facts(c, report);
        (model::labels::of(labels), annotations)
    }

    #[test]
    fn cpu_reports_reach_each_gkey_form() {
        let epyc = &CPUS[0];
        let (l, a) = facts(epyc, CpuReport::Everything);
        assert_eq!(general_key(&l, &a), "amd-epyc-7763");
        let (l, a) = facts(epyc, CpuReport::LabelsOnly);
        assert_eq!(general_key(&l, &a), "amd-25-1");
        let (l, a) = facts(epyc, CpuReport::Nothing);
        assert_eq!(general_key(&l, &a), "generic");
        let (l, a) = facts(&CPUS[1], CpuReport::NameAndVendor);
        assert_eq!(general_key(&l, &a), "intel-xeon-platinum-8358");
    }

    #[test]
    fn naming_sets_the_hostname() {
        let n = name_node(Node::default(), "node-3");
        assert_eq!(n.name, "node-3");
        assert_eq!(
            n.labels.get(HOSTNAME).map(model::labels::Text::as_str),
            Some("node-3")
        );
    }
}
