//! Which hardware a live cluster has, for the gates of the hardware blocks (cases.md §2.4:
//! hardware absent → the case skips, exit 0, `NOTHING WAS VERIFIED`). Read-only: the cluster's
//! own Devices (never a verify mock, which carries the run label) and Node labels.

use std::borrow::Cow;
use std::collections::BTreeMap;

use live::audit::{Audit, Snapshot};
use live::client::RUN_LABEL;
use live::wire::kinds::{self, Kind};
use live::wire::read::{name_of, read_devices, Listing};
use model::devices::DeviceGroup;
use serde_json::Value;

use crate::index::PoolShape;

/// The hardware a gate names (the `hardware` text of the cases' `live_gate`s).
pub const NVIDIA_PARTITIONS: &str = "a partition-capable NVIDIA card reachable over SSH";
pub const HYGON_MULTI_INSTANCE: &str = "a Hygon DCU node in Multi-Instance mode";
pub const THEAD_TWO_IDLE: &str = "a T-Head PPU node with at least 2 idle accelerators";
pub const RDMA_ENDPOINT: &str = "an RDMA endpoint on a device-manager node";

/// `feature.gpustack.ai/rdma.capable`: at least one usable RDMA endpoint (devices.md §4.5).
const RDMA_CAPABLE: &str = "feature.gpustack.ai/rdma.capable";

/// The gate texts a listed cluster satisfies (its own Devices and Nodes; verify's mocks are
/// not its hardware).
pub fn cluster_hardware(snapshot: &Snapshot) -> Vec<String> {
    let groups: Vec<DeviceGroup> = own_devices(snapshot).into_values().flatten().collect();
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
    let rdma = own(snapshot, kinds::NODE).any(|n| {
        labels_at(&n, "/metadata/labels")
            .get(RDMA_CAPABLE)
            .map(model::labels::Text::as_str)
            == Some("true")
    });
    if rdma {
        out.push(RDMA_ENDPOINT.to_string());
    }
    out
}

/// The listed objects of `kind` that are the cluster's own (not verify's mocks, which carry
/// the run label).
fn own<'s>(snapshot: &'s Snapshot<'_>, kind: Kind) -> impl Iterator<Item = Cow<'s, Value>> {
    snapshot
        .items
        .iter()
        .filter(move |(_, k, _)| *k == kind)
        .map(|(_, _, o)| o.value())
        .filter(|o| !is_mock(o))
}

/// The cluster's own Devices, by node (a Devices object is named after its node); one that
/// cannot be read has no cards here.
fn own_devices(snapshot: &Snapshot) -> BTreeMap<String, Vec<DeviceGroup>> {
    own(snapshot, kinds::DEVICES)
        .filter_map(|o| Some((name_of(&o), read_devices(&o).ok()?.groups)))
        .collect()
}

/// A pool of a live cluster that has a case's shape: its InstanceType and, for each node it
/// backs, the cards that count there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolChoice {
    pub pool: String,
    pub nodes: Vec<(String, u32)>,
}

impl PoolChoice {
    /// `gpustack--nvidia-a10-linux-amd64 (backs gpu-1: 1 card)`.
    pub fn describe(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|(n, c)| format!("{n}: {c} card{}", if *c == 1 { "" } else { "s" }))
            .collect();
        format!("{} (backs {})", self.pool, nodes.join(", "))
    }
}

/// String labels at `pointer` of a listed object.
fn labels_at(o: &Value, pointer: &str) -> model::labels::Labels {
    o.pointer(pointer)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.into(), v.as_str()?.into())))
        .collect()
}

/// Whether a listed object is one of verify's own mocks (not the cluster's).
fn is_mock(o: &Value) -> bool {
    o.pointer("/metadata/labels")
        .and_then(|l| l.get(RUN_LABEL))
        .is_some()
}

/// The pools of a listed cluster that have `shape`, by name, picked as the e2e suite picks a
/// pool (cases.md §1 "Does this pool back the node?"): the pool's labels other than
/// `schedule.gpustack.ai/*` must leave at least one label and all be on the node
/// (`model::pool::pool_backs_node`), and of the node's accelerator groups only the one whose
/// id ends `spec.acceleratorGroup` (`-<groupId>`) counts. Cards counted are healthy ones (and
/// logically sliceable ones when the shape asks). Verify's own mocks back nothing here.
pub fn pools_of_shape(snapshot: &Snapshot, shape: &PoolShape) -> Vec<PoolChoice> {
    let devices = own_devices(snapshot);
    let nodes: Vec<(String, model::labels::Labels)> = own(snapshot, kinds::NODE)
        .map(|o| (name_of(&o), labels_at(&o, "/metadata/labels")))
        .collect();
    let mut out: Vec<PoolChoice> = own(snapshot, kinds::INSTANCE_TYPE)
        .filter_map(|it| {
            let group = it.pointer("/spec/acceleratorGroup")?.as_str()?;
            let pool_labels = labels_at(&it, "/metadata/labels");
            let keyed = pool_labels
                .keys()
                .any(|k| !k.starts_with(model::labels::SCHEDULE_PREFIX));
            if group.is_empty() || !keyed {
                return None;
            }
            let backed: Vec<(String, u32)> = nodes
                .iter()
                .filter(|(_, labels)| model::pool::pool_backs_node(&pool_labels, labels))
                .map(|(node, _)| {
                    let cards = devices
                        .get(node)
                        .into_iter()
                        .flatten()
                        .filter(|g| group.ends_with(&format!("-{}", g.id)))
                        .filter(|g| {
                            shape
                                .manufacturer
                                .as_ref()
                                .is_none_or(|m| *m == g.manufacturer)
                        })
                        .flat_map(|g| &g.cards)
                        .map(|c| c.capability_or_default())
                        .filter(|c| {
                            !c.unhealthy && (!shape.sliceable || c.is_logically_sliceable())
                        })
                        .count();
                    (node.clone(), u32::try_from(cards).unwrap_or(u32::MAX))
                })
                .filter(|(_, cards)| *cards > 0)
                .collect();
            let total: u32 = backed.iter().map(|(_, c)| c).sum();
            let most = backed.iter().map(|(_, c)| *c).max().unwrap_or(0);
            let fits = total > 0
                && shape.cards.is_none_or(|n| total == n)
                && shape.min_cards_on_a_node.is_none_or(|n| most >= n);
            fits.then(|| PoolChoice {
                pool: name_of(&it),
                nodes: backed,
            })
        })
        .collect();
    out.sort_by(|a, b| a.pool.cmp(&b.pool));
    out
}

/// The check the pool-selection row names.
pub const POOL_CHECK: &str = "a pool of this cluster has the case's shape (pool backs node)";

/// The check the selected pool's audit row names.
pub const POOL_AUDIT_CHECK: &str =
    "the selected pool's InstanceType and ClusterQueue equal the model's prediction";

/// The live tier's rows for a case that needs a pool shape: which pool of the cluster has it
/// (SKIP, naming the shape, when none does: the case then ran on its mocked shape only), and
/// whether that pool's InstanceType and ClusterQueue equal what the model predicts from the
/// cluster's own Nodes and Devices (`audit`, read-only). Empty for a case without a shape.
pub fn pool_rows(
    snapshot: &Snapshot,
    audit: &Audit,
    shape: Option<&PoolShape>,
) -> Vec<crate::run::Row> {
    use crate::run::{Row, Status};
    let Some(shape) = shape else {
        return Vec::new();
    };
    let row = |status, check: &str, object: String| Row {
        status,
        check: check.into(),
        object,
        expectation: None,
    };
    let Some(choice) = pools_of_shape(snapshot, shape).into_iter().next() else {
        return vec![row(
            Status::Skip,
            POOL_CHECK,
            format!(
                "no pool of this cluster has {}: the case ran on its mocked shape in run-unique \
                 pools only",
                shape.describe()
            ),
        )];
    };
    let differences: Vec<oracle::Difference> = audit
        .differences
        .iter()
        .filter(|d| {
            d.name == choice.pool
                && matches!(
                    d.kind,
                    oracle::ObjectKind::InstanceType | oracle::ObjectKind::ClusterQueue
                )
        })
        .cloned()
        .collect();
    let audited = if differences.is_empty() {
        row(Status::Pass, POOL_AUDIT_CHECK, choice.pool.clone())
    } else {
        row(
            Status::Fail,
            POOL_AUDIT_CHECK,
            oracle::render_table(&differences),
        )
    };
    vec![
        row(
            Status::Pass,
            POOL_CHECK,
            format!("{}: {}", shape.describe(), choice.describe()),
        ),
        audited,
    ]
}
