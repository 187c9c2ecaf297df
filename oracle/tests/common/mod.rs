//! Small hand-built scenarios for the oracle's tests (≤ 3 nodes each).
#![allow(dead_code)]

use model::cluster::{Cluster, Namespace, Node};
use model::devices::{Capability, Card, DeviceGroup, Devices};
use model::events::Event;
use model::examples::{nfd_node, nvidia_group};
use model::labels::ARCH;
use model::ledger::{catalogs, seed};
use model::scenario::Scenario;
use model::workload::Workload;

pub const AMD_CPU: (&str, &str) = ("AMD", "AMD EPYC 7763 64-Core Processor");
pub const INTEL_CPU: (&str, &str) = ("Intel", "Intel(R) Xeon(R) Platinum 8358 CPU @ 2.60GHz");

/// A linux node with `cards` free logically-sliceable NVIDIA cards of group `id`.
pub fn gpu_node(name: &str, cpu: (&str, &str), arch: &str, id: &str, cards: u32) -> Node {
    let mut n = nfd_node(name, cpu.0, cpu.1, 8);
    n.labels.insert(ARCH.into(), arch.into());
    n.devices = Some(Devices {
        groups: vec![nvidia_group(id, &format!("NVIDIA {id}"), 24576, cards)],
    });
    n
}

/// A node with one A100-40GB card in MIG mode (partitioned) and one logical card.
pub fn mig_node(name: &str) -> Node {
    let mut n = nfd_node(name, AMD_CPU.0, AMD_CPU.1, 8);
    let mig = catalogs::a100_40gb();
    let logical = Capability {
        logical_sliced_count: 4,
        ..Capability::default()
    };
    let card = |i: u32, cap: Capability| Card {
        id: format!("GPU-{name}-{i}"),
        index: i,
        ledger: Some(seed(cap.clone()).row),
        capability: Some(cap),
    };
    n.devices = Some(Devices {
        groups: vec![DeviceGroup {
            manufacturer: "nvidia".into(),
            id: "a100-sxm4-40gb".into(),
            name: "NVIDIA A100-SXM4-40GB".into(),
            memory_mib: 40960,
            runtime_version: "12.4".into(),
            cards: vec![card(0, mig), card(1, logical)],
            ..DeviceGroup::default()
        }],
    });
    n
}

pub fn cluster(nodes: Vec<Node>) -> Cluster {
    Cluster {
        nodes,
        namespaces: ["default", "gpustack-system", "kube-system"]
            .into_iter()
            .map(|n| Namespace {
                name: n.into(),
                terminating: false,
            })
            .collect(),
        ..Cluster::default()
    }
}

pub fn scenario(name: &str, cluster: Cluster, events: Vec<Event>) -> Scenario {
    Scenario {
        name: name.into(),
        cluster,
        events,
        ..Scenario::default()
    }
}

/// A one-pod-set Workload in `default` submitted to `pool`'s entrance.
pub use model::examples::workload;

pub fn submit(w: Workload) -> Event {
    Event::Submit { workload: w }
}

pub fn finish(name: &str) -> Event {
    Event::Finish {
        namespace: "default".into(),
        name: name.into(),
    }
}

pub const T4: &str = "gpustack--nvidia-tesla-t4-linux-amd64";
pub const A10G: &str = "gpustack--nvidia-a10g-linux-amd64";

/// The walkthrough cluster with workloads admitted, finished and resubmitted, a namespace
/// created late, a node leaving and joining back, and an awareness flip.
pub fn walkthrough_with_events() -> Scenario {
    let c = model::examples::walkthrough();
    let t4b = c.nodes.iter().find(|n| n.name == "node-t4-b").cloned();
    let mut events = vec![
        submit(workload("four", T4, 4, &[("nvidia.com/gpu", "1")])),
        submit(workload("one", T4, 1, &[("nvidia.com/gpu", "1")])),
        submit(workload(
            "slice",
            A10G,
            1,
            &[
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", "20"),
            ],
        )),
        submit(workload("shared", T4, 1, &[("nvidia.com/gpu.shared", "2")])),
        finish("four"),
        submit(workload(
            "shared-again",
            T4,
            1,
            &[("nvidia.com/gpu.shared", "2")],
        )),
        Event::NamespaceCreate {
            name: "late".into(),
        },
        Event::NodeLeave {
            name: "node-t4-b".into(),
        },
    ];
    if let Some(n) = t4b {
        events.push(Event::NodeJoin { node: n });
    }
    events.push(Event::AwarenessFlip);
    scenario("walkthrough-with-events", c, events)
}
