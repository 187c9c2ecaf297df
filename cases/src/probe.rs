//! Which hardware a live cluster has, for the gates of the hardware blocks (cases.md §2.4:
//! hardware absent → the case skips, exit 0, `NOTHING WAS VERIFIED`). Read-only: the cluster's
//! own Devices (never a verify mock, which carries the run label) and Node labels.

use k8s_openapi::api::core::v1::Node;
use live::client::{Client, ClientError, RUN_LABEL};
use live::crd::Devices;
use model::devices::DeviceGroup;

/// The hardware a gate names (the `hardware` text of the cases' `live_gate`s).
pub const NVIDIA_PARTITIONS: &str = "a partition-capable NVIDIA card reachable over SSH";
pub const HYGON_MULTI_INSTANCE: &str = "a Hygon DCU node in Multi-Instance mode";
pub const THEAD_TWO_IDLE: &str = "a T-Head PPU node with at least 2 idle accelerators";
pub const RDMA_ENDPOINT: &str = "an RDMA endpoint on a device-manager node";

/// `feature.gpustack.ai/rdma.capable`: at least one usable RDMA endpoint (devices.md §4.5).
const RDMA_CAPABLE: &str = "feature.gpustack.ai/rdma.capable";

/// The gate texts this cluster satisfies.
pub async fn cluster_hardware(client: &Client) -> Result<Vec<String>, ClientError> {
    let mut groups: Vec<DeviceGroup> = Vec::new();
    for d in client.list::<Devices>(None, None).await? {
        // a verify mock is not the cluster's hardware
        if d.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(RUN_LABEL))
        {
            continue;
        }
        let value = serde_json::to_value(&d).unwrap_or_default();
        if let Ok(devices) = live::twin::read::read_devices(&value) {
            groups.extend(devices.groups);
        }
    }
    let partitioned = |manufacturer: &str| {
        groups
            .iter()
            .filter(|g| g.manufacturer == manufacturer)
            .any(|g| g.cards.iter().any(|c| c.is_partitioned()))
    };
    let idle = |g: &DeviceGroup| {
        g.cards
            .iter()
            .filter(|c| c.ledger.as_ref().is_none_or(|l| l.is_free()))
            .count()
    };
    let mut out = Vec::new();
    if partitioned("nvidia") {
        out.push(NVIDIA_PARTITIONS.to_string());
    }
    if partitioned("hygon") {
        out.push(HYGON_MULTI_INSTANCE.to_string());
    }
    if groups
        .iter()
        .any(|g| g.manufacturer == "thead" && idle(g) >= 2)
    {
        out.push(THEAD_TWO_IDLE.to_string());
    }
    let rdma = client.list::<Node>(None, None).await?.iter().any(|n| {
        n.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get(RDMA_CAPABLE).map(String::as_str) == Some("true"))
    });
    if rdma {
        out.push(RDMA_ENDPOINT.to_string());
    }
    Ok(out)
}
