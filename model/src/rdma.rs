//! RDMA endpoints, their extended resources and the `feature.gpustack.ai/rdma.*` labels, and
//! the scale-up `feature.gpustack.ai/fabric.*` labels (research/devices.md §4.2–4.6), from a
//! node's `Devices` (cards) and its [`Network`] (NICs and card topology).
//!
//! Two endpoint notions exist in the operator and are kept apart here:
//! - the LABEL side (pkg/nodefeature/rdma.go `rdmaEndpoints`) lists every usable interface and
//!   every usable VF, whatever its SR-IOV role and whether it has a bound device;
//! - the RESOURCE side (specs/2026-09-20-rdma-extended-resource.md C1; docs/modules/rdma/
//!   network-topology.md) serves a PF with VFs in the partitioned mode only (one token per VF
//!   with an `rdmaDevice`, the PF zero times) and any other interface with an `rdmaDevice` in
//!   the exclusive and shared modes.
//!
//! Node capacity is not a chain object: the model publishes no node status, so
//! [`node_resources`] is what the device plugin would register, read by the RDMA block and the
//! tests, and not diffed by the oracle (Kueue meters none of these keys, §4.4).

use std::collections::BTreeMap;

use crate::devices::{CardTopology, Devices, Interface, Link, LinkState, Network};
use crate::labels::{int_text, Labels, Text, FEATURE_PREFIX};
use crate::nodefeature::sanitize_label_value;

/// `NodeRDMACapableLabelKey` (pkg/nodefeature/rdma.go).
pub const RDMA_CAPABLE: &str = "feature.gpustack.ai/rdma.capable";
/// `NodeRDMANumaLabelKey`.
pub const RDMA_NUMA: &str = "feature.gpustack.ai/rdma.numa";
/// `NodeRDMADistanceLabelKey`.
pub const RDMA_DISTANCE: &str = "feature.gpustack.ai/rdma.distance";
/// `RDMAFeatureLabelPrefix`: the set removed as a set.
pub const RDMA_LABEL_PREFIX: &str = "feature.gpustack.ai/rdma.";
/// `NodeFabricDomainLabelKey` (pkg/nodefeature/fabric.go).
pub const FABRIC_DOMAIN: &str = "feature.gpustack.ai/fabric.domain";
/// `NodeFabricMembersLabelKey`.
pub const FABRIC_MEMBERS: &str = "feature.gpustack.ai/fabric.members";
/// `FabricFeatureLabelPrefix`.
pub const FABRIC_LABEL_PREFIX: &str = "feature.gpustack.ai/fabric.";

/// `GetRDMAResourceName(Exclusive)`: one whole interface.
pub const RDMA_EXCLUSIVE_KEY: &str = "device.gpustack.ai/rdma";
/// `GetRDMAResourceName(Shared)`: one concurrent use.
pub const RDMA_SHARED_KEY: &str = "device.gpustack.ai/rdma.shared";
/// `GetRDMAResourceName(Partitioned)`: one SR-IOV VF.
pub const RDMA_PARTITIONED_KEY: &str = "device.gpustack.ai/rdma.partitioned";
/// Tokens one shared endpoint registers (RDMA's own ceiling; §4.4).
pub const RDMA_SHARED_TOKENS: i64 = 64;

/// Whether a label key is one of the DM's RDMA or fabric labels.
pub fn is_rdma_or_fabric_label(key: &str) -> bool {
    key.starts_with(RDMA_LABEL_PREFIX) || key.starts_with(FABRIC_LABEL_PREFIX)
}

// ---------------------------------------------------------------------------------------------
// Usability and endpoints
// ---------------------------------------------------------------------------------------------

/// `rdmaUsable` (pkg/nodefeature/rdma.go): an explicit link verdict wins over the `rdma` flag
/// in both directions — `failed` is the one unusable verdict, `unverified` is usable even with
/// `rdma: false` (an unreadable tree); with no verdict the flag decides.
pub fn rdma_usable(rdma: bool, link: Option<&Link>) -> bool {
    match link {
        Some(l) => l.state != LinkState::Failed,
        None => rdma,
    }
}

/// One usable endpoint as the label rules see it: the bus coordinates it is measured from and
/// the NUMA node it reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelEndpoint<'a> {
    pub name: &'a str,
    /// The PF's coordinates (a VF sits behind the same bridges).
    pub iface: &'a Interface,
    pub numa: &'a str,
}

/// `rdmaEndpoints` (pkg/nodefeature/rdma.go): every usable interface, then every usable VF of
/// it as its own endpoint with the VF's NUMA (the PF's when the VF's is unknown).
pub fn label_endpoints(interfaces: &[Interface]) -> Vec<LabelEndpoint<'_>> {
    let mut out = Vec::new();
    for iface in interfaces {
        if rdma_usable(iface.rdma, iface.link.as_ref()) {
            out.push(LabelEndpoint {
                name: &iface.name,
                iface,
                numa: &iface.numa_affinity,
            });
        }
        for vf in &iface.virtual_functions {
            if rdma_usable(vf.rdma, vf.link.as_ref()) {
                let numa = if vf.numa_affinity.is_empty() {
                    &iface.numa_affinity
                } else {
                    &vf.numa_affinity
                };
                out.push(LabelEndpoint {
                    name: &vf.name,
                    iface,
                    numa,
                });
            }
        }
    }
    out
}

/// The device-plugin mode an RDMA endpoint is served in (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EndpointMode {
    /// A whole function: served under the exclusive and the shared keys.
    Whole,
    /// One SR-IOV VF: served under the partitioned key.
    Partitioned,
}

impl EndpointMode {
    pub fn name(self) -> &'static str {
        match self {
            EndpointMode::Whole => "whole",
            EndpointMode::Partitioned => "partitioned",
        }
    }
}

/// One endpoint a device-plugin server advertises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceEndpoint<'a> {
    /// Interface or VF name.
    pub name: &'a str,
    pub rdma_device: &'a str,
    pub mode: EndpointMode,
    /// The link verdict is not `failed`: its tokens are Healthy (allocatable).
    pub healthy: bool,
}

/// Whether an interface serves the partitioned mode only: an SR-IOV PF with VFs (§4.3;
/// network-topology.md). A PF with zero VFs and any non-PF serve the whole-function modes.
pub fn serves_partitioned(iface: &Interface) -> bool {
    iface.sriov && !iface.virtual_functions.is_empty()
}

/// Device-plugin health of an endpoint's tokens: only a `failed` verdict is Unhealthy; no
/// record is Healthy (§4.2 table).
pub fn link_healthy(link: Option<&Link>) -> bool {
    link.is_none_or(|l| l.state != LinkState::Failed)
}

/// The endpoints the RDMA device-plugin servers advertise (§4.3): each VF with an
/// `rdmaDevice` of a partitioned-serving PF (the PF itself zero times), else the interface
/// itself when it has an `rdmaDevice`; an endpoint without a bound device is in no mode.
pub fn resource_endpoints(interfaces: &[Interface]) -> Vec<ResourceEndpoint<'_>> {
    let mut out = Vec::new();
    for iface in interfaces {
        if serves_partitioned(iface) {
            for vf in &iface.virtual_functions {
                if !vf.rdma_device.is_empty() {
                    out.push(ResourceEndpoint {
                        name: &vf.name,
                        rdma_device: &vf.rdma_device,
                        mode: EndpointMode::Partitioned,
                        healthy: link_healthy(vf.link.as_ref()),
                    });
                }
            }
        } else if !iface.rdma_device.is_empty() {
            out.push(ResourceEndpoint {
                name: &iface.name,
                rdma_device: &iface.rdma_device,
                mode: EndpointMode::Whole,
                healthy: link_healthy(iface.link.as_ref()),
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Extended resources
// ---------------------------------------------------------------------------------------------

/// The RDMA keys of one node as the kubelet would list them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdmaResources {
    pub capacity: BTreeMap<&'static str, i64>,
    pub allocatable: BTreeMap<&'static str, i64>,
}

/// Tokens one endpoint registers per key: exclusive 1 and shared 64 for a whole function,
/// partitioned 1 for a VF (§4.4, `GetRDMAResourceName`).
pub fn endpoint_tokens(mode: EndpointMode) -> Vec<(&'static str, i64)> {
    match mode {
        EndpointMode::Whole => vec![
            (RDMA_EXCLUSIVE_KEY, 1),
            (RDMA_SHARED_KEY, RDMA_SHARED_TOKENS),
        ],
        EndpointMode::Partitioned => vec![(RDMA_PARTITIONED_KEY, 1)],
    }
}

/// The node's RDMA extended resources (§4.4): one server per mode on every node the DM runs on,
/// so all three keys are registered, at 0 on a node without RDMA; a failed link keeps its
/// tokens in capacity and loses them from allocatable (reported Unhealthy). The retired
/// `rdma.sliced` key is not registered by the current build.
pub fn node_resources(network: &Network) -> RdmaResources {
    let mut r = RdmaResources::default();
    for key in [RDMA_EXCLUSIVE_KEY, RDMA_SHARED_KEY, RDMA_PARTITIONED_KEY] {
        r.capacity.insert(key, 0);
        r.allocatable.insert(key, 0);
    }
    for e in resource_endpoints(&network.interfaces) {
        for (key, n) in endpoint_tokens(e.mode) {
            *r.capacity.entry(key).or_insert(0) += n;
            if e.healthy {
                *r.allocatable.entry(key).or_insert(0) += n;
            }
        }
    }
    r
}

// ---------------------------------------------------------------------------------------------
// Distance
// ---------------------------------------------------------------------------------------------

/// `device.TopologyDistance`, smaller = closer. `Self`, `Link` and `Phb` are never produced
/// from bus coordinates (pkg/device `BusDistance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Distance {
    SelfDevice,
    Link,
    Pix,
    Pxb,
    Phb,
    Node,
    Sys,
    Unknown,
}

impl Distance {
    /// The label word.
    pub fn word(self) -> &'static str {
        match self {
            Distance::SelfDevice => "SELF",
            Distance::Link => "LINK",
            Distance::Pix => "PIX",
            Distance::Pxb => "PXB",
            Distance::Phb => "PHB",
            Distance::Node => "NODE",
            Distance::Sys => "SYS",
            Distance::Unknown => "UNK",
        }
    }
}

/// `device.BusDistance`: a missing bus or root id on either side is unknown; the same innermost
/// switch is PIX; the same outermost bridge is PXB; then the same NUMA is NODE, another NUMA is
/// SYS and an unknown NUMA on either side is unknown (never read as node 0). The interface is
/// measured at `numa` (a VF: its PF's bus coordinates with its own NUMA).
pub fn bus_distance(card: &CardTopology, iface: &Interface, numa: &str) -> Distance {
    if card.pci_bus_id.is_empty()
        || iface.pci_bus_id.is_empty()
        || card.pci_root_id.is_empty()
        || iface.pci_root_id.is_empty()
    {
        return Distance::Unknown;
    }
    if matches!((card.pci_switches.first(), iface.pci_switches.first()), (Some(a), Some(b)) if a == b)
    {
        return Distance::Pix;
    }
    if card.pci_root_id == iface.pci_root_id {
        return Distance::Pxb;
    }
    if card.numa_affinity.is_empty() || numa.is_empty() {
        return Distance::Unknown;
    }
    if card.numa_affinity == numa {
        Distance::Node
    } else {
        Distance::Sys
    }
}

/// The spec cards of a node (a status-only card has no spec entry and no topology).
fn spec_card_ids(devices: &Devices) -> impl Iterator<Item = &str> {
    devices
        .groups
        .iter()
        .flat_map(|g| &g.cards)
        .filter(|c| c.capability.is_some())
        .map(|c| c.id.as_str())
}

/// `closestAcceleratorDistance`: the minimum bus distance over every (spec card, usable
/// endpoint) pair, `None` when there is no pair (no accelerator). A card without topology in
/// the Devices has no coordinates (every pair with it is `UNK`). A VF endpoint is measured
/// from its PF's bus coordinates (BusDistance reads the NUMA only past the bridges, and the
/// operator passes the PF record — with the VF's NUMA — for a VF).
pub fn closest_distance(
    devices: &Devices,
    network: &Network,
    endpoints: &[LabelEndpoint<'_>],
) -> Option<Distance> {
    let none = CardTopology::default();
    let mut closest: Option<Distance> = None;
    for id in spec_card_ids(devices) {
        let card = network.card(id).unwrap_or(&none);
        for e in endpoints {
            let d = bus_distance(card, e.iface, e.numa);
            closest = Some(closest.map_or(d, |c| c.min(d)));
        }
    }
    closest
}

// ---------------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------------

/// `rdmaNumaNodes`: the distinct known NUMA ids of the usable endpoints, sorted as strings
/// (Go's `sort.Strings`) and joined with `_` (a comma is not a label character).
pub fn numa_set(endpoints: &[LabelEndpoint<'_>]) -> String {
    let mut ids: Vec<&str> = endpoints
        .iter()
        .map(|e| e.numa)
        .filter(|n| !n.is_empty())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.join("_")
}

/// Whether a composite value survives `SanitizeLabelValue` unchanged; a value that would be
/// cut or rewritten is withheld instead (rdma.go NUMA key, fabric.go domain key).
pub fn survives_sanitizer(value: &str) -> bool {
    sanitize_label_value(value) == value
}

/// `ConstructRDMANodeLabels`: nothing without a usable endpoint; else `rdma.capable=true`,
/// `rdma.numa` when some NUMA is known and the set survives the 63-char sanitizer, and
/// `rdma.distance` when an accelerator is there to measure from.
pub fn rdma_node_labels(devices: &Devices, network: &Network) -> Labels {
    let endpoints = label_endpoints(&network.interfaces);
    let mut out = Labels::new();
    if endpoints.is_empty() {
        return out;
    }
    out.insert(Text::new_static(RDMA_CAPABLE), Text::new_static("true"));
    let numa = numa_set(&endpoints);
    if !numa.is_empty() && survives_sanitizer(&numa) {
        out.insert(Text::new_static(RDMA_NUMA), numa.into());
    }
    if let Some(d) = closest_distance(devices, network, &endpoints) {
        out.insert(Text::new_static(RDMA_DISTANCE), Text::new_static(d.word()));
    }
    out
}

/// `<kind>-<id>` or `<kind>-<id>-<clique>` (clique rendered whenever reported, `0` included).
pub fn fabric_domain_value(kind: &str, id: &str, clique: &str) -> String {
    if clique.is_empty() {
        format!("{kind}-{id}")
    } else {
        format!("{kind}-{id}-{clique}")
    }
}

/// `soleFabricDomain` (pkg/nodefeature/fabric.go): the one domain every spec card of every
/// group reports, with its member count (0 when the cards disagree on it); `None` when a card
/// has no record (or no kind/id), two cards differ, or there is no card.
pub fn sole_fabric_domain(devices: &Devices, network: &Network) -> Option<(String, u64)> {
    let mut found: Option<(String, u64)> = None;
    let mut size_agreed = true;
    for id in spec_card_ids(devices) {
        let f = network.card(id).and_then(|t| t.fabric.as_ref())?;
        if f.kind.is_empty() || f.id.is_empty() {
            return None;
        }
        let seen = fabric_domain_value(&f.kind, &f.id, &f.clique_id);
        match &found {
            None => found = Some((seen, f.member_count)),
            Some((domain, _)) if *domain != seen => return None,
            Some((_, members)) => size_agreed &= *members == f.member_count,
        }
    }
    found.map(|(d, m)| (d, if size_agreed { m } else { 0 }))
}

/// `ConstructFabricNodeLabels`: `fabric.domain` when the node has one domain whose value
/// survives the sanitizer (≤ 63 chars), and `fabric.members` when its size is known (> 0).
pub fn fabric_node_labels(devices: &Devices, network: &Network) -> Labels {
    let mut out = Labels::new();
    let Some((domain, members)) = sole_fabric_domain(devices, network) else {
        return out;
    };
    if !survives_sanitizer(&domain) {
        return out;
    }
    out.insert(Text::new_static(FABRIC_DOMAIN), domain.into());
    if members > 0 {
        out.insert(Text::new_static(FABRIC_MEMBERS), int_text(members));
    }
    out
}

/// The DM's network labels of a node with a `Devices` object: RDMA then fabric.
pub fn network_node_labels(devices: &Devices, network: &Network) -> Labels {
    let mut out = rdma_node_labels(devices, network);
    out.extend(fabric_node_labels(devices, network));
    debug_assert!(out.keys().all(|k| k.starts_with(FEATURE_PREFIX)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Capability, Card, DeviceGroup, Fabric, VirtualFunction};

    fn link(state: LinkState) -> Option<Link> {
        Some(Link {
            state,
            reason: String::new(),
        })
    }

    fn nic(name: &str, dev: &str, numa: &str, state: Option<LinkState>) -> Interface {
        Interface {
            name: name.into(),
            bus: "pci".into(),
            pci_bus_id: format!("0000:{name}:00.0"),
            pci_root_id: format!("0000:{name}:00.0"),
            numa_affinity: numa.into(),
            up: true,
            rdma: !dev.is_empty(),
            rdma_device: dev.into(),
            link: state.and_then(link),
            ..Interface::default()
        }
    }

    fn vf(name: &str, dev: &str, numa: &str, state: Option<LinkState>) -> VirtualFunction {
        VirtualFunction {
            name: name.into(),
            pci_bus_id: format!("0000:{name}:00.2"),
            numa_affinity: numa.into(),
            up: true,
            rdma: !dev.is_empty(),
            rdma_device: dev.into(),
            link: state.and_then(link),
        }
    }

    fn net(interfaces: Vec<Interface>) -> Network {
        Network {
            interfaces,
            ..Network::default()
        }
    }

    fn cards(ids: &[&str]) -> Devices {
        Devices {
            groups: vec![DeviceGroup {
                manufacturer: "nvidia".into(),
                id: "h100".into(),
                cards: ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| Card {
                        id: (*id).into(),
                        index: i as u32,
                        capability: Some(Capability::default()),
                        ledger: None,
                    })
                    .collect(),
                ..DeviceGroup::default()
            }],
        }
    }

    /// devices.md §1.5 example C: a whole endpoint and an SR-IOV PF with two VFs, one failed.
    fn example_c() -> Network {
        let mut pf = nic("b1", "mlx5_1", "1", Some(LinkState::Ok));
        pf.sriov = true;
        pf.virtual_functions = vec![
            vf("b1v0", "mlx5_2", "1", Some(LinkState::Ok)),
            vf("b1v1", "mlx5_3", "1", Some(LinkState::Failed)),
        ];
        let lo = Interface {
            name: "lo".into(),
            bus: "virtual".into(),
            is_virtual: true,
            up: true,
            ..Interface::default()
        };
        net(vec![lo, nic("17", "mlx5_0", "0", Some(LinkState::Ok)), pf])
    }

    #[test]
    fn an_explicit_verdict_wins_over_the_flag() {
        assert!(!rdma_usable(true, link(LinkState::Failed).as_ref()));
        assert!(rdma_usable(false, link(LinkState::Unverified).as_ref()));
        assert!(rdma_usable(false, link(LinkState::Ok).as_ref()));
        assert!(rdma_usable(true, None));
        assert!(!rdma_usable(false, None));
    }

    #[test]
    fn example_c_registers_one_whole_and_two_vfs_the_pf_zero_times() {
        let n = example_c();
        let eps = resource_endpoints(&n.interfaces);
        let names: Vec<&str> = eps.iter().map(|e| e.name).collect();
        assert_eq!(names, ["17", "b1v0", "b1v1"], "the PF b1 counts zero times");
        let r = node_resources(&n);
        assert_eq!(r.capacity[RDMA_EXCLUSIVE_KEY], 1);
        assert_eq!(r.capacity[RDMA_SHARED_KEY], 64);
        assert_eq!(r.capacity[RDMA_PARTITIONED_KEY], 2);
        // the failed VF keeps its token in capacity and loses it from allocatable
        assert_eq!(r.allocatable[RDMA_PARTITIONED_KEY], 1);
        assert_eq!(r.allocatable[RDMA_EXCLUSIVE_KEY], 1);
        assert_eq!(r.allocatable[RDMA_SHARED_KEY], 64);
    }

    #[test]
    fn a_failed_whole_link_keeps_capacity_and_loses_allocatable() {
        let n = net(vec![nic("a", "mlx5_0", "0", Some(LinkState::Failed))]);
        let r = node_resources(&n);
        assert_eq!(
            (
                r.capacity[RDMA_EXCLUSIVE_KEY],
                r.allocatable[RDMA_EXCLUSIVE_KEY]
            ),
            (1, 0)
        );
        assert_eq!(
            (r.capacity[RDMA_SHARED_KEY], r.allocatable[RDMA_SHARED_KEY]),
            (64, 0)
        );
        // and the label withholds capable
        assert!(rdma_node_labels(&cards(&["g0"]), &n).is_empty());
    }

    #[test]
    fn no_rdma_device_is_no_mode_and_no_rdma_registers_every_key_at_zero() {
        let plain = nic("a", "", "0", None);
        let mut pf_without = nic("b", "mlx5_1", "0", None);
        pf_without.sriov = true;
        pf_without.virtual_functions = vec![vf("bv0", "", "0", None)];
        let n = net(vec![plain, pf_without]);
        assert!(resource_endpoints(&n.interfaces).is_empty());
        let r = node_resources(&n);
        assert_eq!(r.capacity.len(), 3);
        assert!(r
            .capacity
            .values()
            .chain(r.allocatable.values())
            .all(|v| *v == 0));
        // an SR-IOV PF with zero VFs serves the whole modes
        let mut pf0 = nic("c", "mlx5_2", "0", None);
        pf0.sriov = true;
        let r = node_resources(&net(vec![pf0]));
        assert_eq!(r.capacity[RDMA_EXCLUSIVE_KEY], 1);
        assert_eq!(r.capacity[RDMA_PARTITIONED_KEY], 0);
    }

    #[test]
    fn example_c_labels_capable_and_the_numa_set() {
        let n = example_c();
        let l = rdma_node_labels(&Devices::default(), &n);
        assert_eq!(l.get(RDMA_CAPABLE).map(Text::as_str), Some("true"));
        assert_eq!(l.get(RDMA_NUMA).map(Text::as_str), Some("0_1"));
        assert!(
            !l.contains_key(RDMA_DISTANCE),
            "no accelerator, no distance"
        );
        // with cards that carry no coordinates the distance is UNK
        let l = rdma_node_labels(&cards(&["g0"]), &n);
        assert_eq!(l.get(RDMA_DISTANCE).map(Text::as_str), Some("UNK"));
    }

    #[test]
    fn an_unverified_unreadable_tree_still_makes_the_node_capable() {
        let mut n = nic("a", "", "", Some(LinkState::Unverified));
        n.rdma = false;
        let l = rdma_node_labels(&Devices::default(), &net(vec![n]));
        assert_eq!(l.get(RDMA_CAPABLE).map(Text::as_str), Some("true"));
        assert!(!l.contains_key(RDMA_NUMA), "no NUMA known");
    }

    #[test]
    fn a_vf_without_numa_reports_its_pfs() {
        let mut pf = nic("a", "mlx5_0", "3", Some(LinkState::Failed));
        pf.sriov = true;
        pf.virtual_functions = vec![vf("av0", "mlx5_1", "", Some(LinkState::Ok))];
        let l = rdma_node_labels(&Devices::default(), &net(vec![pf]));
        assert_eq!(l.get(RDMA_NUMA).map(Text::as_str), Some("3"));
    }

    #[test]
    fn a_numa_set_over_63_chars_is_omitted_not_cut() {
        let many: Vec<Interface> = (0..32)
            .map(|i| nic(&format!("n{i}"), &format!("mlx5_{i}"), &i.to_string(), None))
            .collect();
        let eps = label_endpoints(&many);
        assert!(numa_set(&eps).len() > 63);
        let l = rdma_node_labels(&Devices::default(), &net(many.clone()));
        assert_eq!(l.get(RDMA_CAPABLE).map(Text::as_str), Some("true"));
        assert!(!l.contains_key(RDMA_NUMA), "{l:?}");
        // a set that fits is published, sorted as strings
        let few = net(many[..12].to_vec());
        let l = rdma_node_labels(&Devices::default(), &few);
        assert_eq!(
            l.get(RDMA_NUMA).map(Text::as_str),
            Some("0_1_10_11_2_3_4_5_6_7_8_9")
        );
    }

    #[test]
    fn bus_distance_follows_switch_root_then_numa() {
        let card = |sw: &[&str], root: &str, numa: &str| CardTopology {
            pci_bus_id: "0000:8d:00.0".into(),
            pci_root_id: root.into(),
            pci_switches: sw.iter().map(|s| s.to_string()).collect(),
            numa_affinity: numa.into(),
            fabric: None,
        };
        let mut i = nic("x", "mlx5_0", "0", None);
        i.pci_root_id = "R1".into();
        i.pci_switches = vec!["S1".into(), "R1".into()];
        let cases = [
            (card(&["S1", "R1"], "R1", "0"), "0", Distance::Pix),
            (card(&["S2", "R1"], "R1", "0"), "0", Distance::Pxb),
            (card(&[], "R2", "0"), "0", Distance::Node),
            (card(&[], "R2", "1"), "0", Distance::Sys),
            (card(&[], "R2", ""), "0", Distance::Unknown),
            (card(&[], "", "0"), "0", Distance::Unknown),
            // past the bridges only the NUMA measured (a VF's, not its PF's) is read
            (card(&[], "R2", "1"), "1", Distance::Node),
            (card(&["S1"], "R1", "1"), "", Distance::Pix),
            (card(&[], "R2", "1"), "", Distance::Unknown),
        ];
        for (c, numa, want) in cases {
            assert_eq!(bus_distance(&c, &i, numa), want, "{c:?} at NUMA {numa:?}");
        }
        // the closest pair wins
        let devices = cards(&["far", "near"]);
        let mut network = net(vec![i]);
        network.topology.insert("far".into(), card(&[], "R2", "1"));
        network
            .topology
            .insert("near".into(), card(&["S2"], "R1", "1"));
        let l = rdma_node_labels(&devices, &network);
        assert_eq!(l.get(RDMA_DISTANCE).map(Text::as_str), Some("PXB"));
    }

    fn with_fabric(ids: &[&str], fabrics: &[Option<Fabric>]) -> (Devices, Network) {
        let mut network = Network::default();
        for (id, f) in ids.iter().zip(fabrics) {
            network.topology.insert(
                (*id).into(),
                CardTopology {
                    fabric: f.clone(),
                    ..CardTopology::default()
                },
            );
        }
        (cards(ids), network)
    }

    fn nvlink(id: &str, clique: &str, members: u64) -> Option<Fabric> {
        Some(Fabric {
            kind: "nvlink".into(),
            id: id.into(),
            clique_id: clique.into(),
            member_count: members,
            ..Fabric::default()
        })
    }

    #[test]
    fn fabric_domain_needs_every_card_to_agree() {
        let hex = "0123456789abcdef0123456789abcdef";
        let (d, n) = with_fabric(&["a", "b"], &[nvlink(hex, "0", 0), nvlink(hex, "0", 0)]);
        let l = fabric_node_labels(&d, &n);
        assert_eq!(
            l.get(FABRIC_DOMAIN).map(Text::as_str),
            Some(format!("nvlink-{hex}-0").as_str())
        );
        assert!(!l.contains_key(FABRIC_MEMBERS), "0 = not reported");
        // another clique disagrees
        let (d, n) = with_fabric(&["a", "b"], &[nvlink(hex, "0", 0), nvlink(hex, "1", 0)]);
        assert!(fabric_node_labels(&d, &n).is_empty());
        // a card without a record disagrees
        let (d, n) = with_fabric(&["a", "b"], &[nvlink(hex, "", 0), None]);
        assert!(fabric_node_labels(&d, &n).is_empty());
        // a super pod with its size; sizes that differ cost only the size
        let ub = |m| {
            Some(Fabric {
                kind: "ub".into(),
                id: "7".into(),
                member_count: m,
                ..Fabric::default()
            })
        };
        let (d, n) = with_fabric(&["a", "b"], &[ub(384), ub(384)]);
        let l = fabric_node_labels(&d, &n);
        assert_eq!(l.get(FABRIC_DOMAIN).map(Text::as_str), Some("ub-7"));
        assert_eq!(l.get(FABRIC_MEMBERS).map(Text::as_str), Some("384"));
        let (d, n) = with_fabric(&["a", "b"], &[ub(384), ub(128)]);
        let l = fabric_node_labels(&d, &n);
        assert_eq!(l.get(FABRIC_DOMAIN).map(Text::as_str), Some("ub-7"));
        assert!(!l.contains_key(FABRIC_MEMBERS));
        // a value over 63 characters is withheld
        let long = "f".repeat(60);
        let (d, n) = with_fabric(&["a"], &[nvlink(&long, "1", 0)]);
        assert!(fabric_node_labels(&d, &n).is_empty());
        // no card, no domain
        assert!(fabric_node_labels(&Devices::default(), &n).is_empty());
    }

    #[test]
    fn network_labels_reach_the_node_and_never_a_pool_or_flavor() {
        let plain = crate::examples::walkthrough();
        let mut with_rdma = plain.clone();
        for node in with_rdma.nodes.iter_mut().filter(|n| n.devices.is_some()) {
            node.network = example_c();
            let ids: Vec<String> = node.cards().map(|c| c.id.clone()).collect();
            for id in ids {
                node.network.topology.insert(
                    id,
                    CardTopology {
                        fabric: Some(Fabric {
                            kind: "ub".into(),
                            id: "7".into(),
                            member_count: 16,
                            ..Fabric::default()
                        }),
                        ..CardTopology::default()
                    },
                );
            }
        }
        let a = crate::derive::derive(&plain);
        let b = crate::derive::derive(&with_rdma);
        assert_eq!(a.resource_flavors, b.resource_flavors);
        assert_eq!(a.instance_types, b.instance_types);
        assert_eq!(a.cluster_queues, b.cluster_queues);
        assert_eq!(a.local_queues, b.local_queues);
        let mut labelled = 0;
        for (x, y) in a.nodes.iter().zip(&b.nodes) {
            assert_eq!(x.flavors, y.flavors, "{}", x.name);
            assert_eq!(x.devices_labels, y.devices_labels, "{}", x.name);
            assert!(!x.labels.keys().any(|k| is_rdma_or_fabric_label(k)));
            if y.labels.contains_key(RDMA_CAPABLE) {
                labelled += 1;
                assert_eq!(y.labels.get(FABRIC_DOMAIN).map(Text::as_str), Some("ub-7"));
                assert_eq!(y.labels.get(FABRIC_MEMBERS).map(Text::as_str), Some("16"));
            }
        }
        assert!(labelled > 0);
        // no ResourceFlavor selector pins a network label
        for rf in &b.resource_flavors {
            assert!(
                !rf.node_labels.keys().any(|k| is_rdma_or_fabric_label(k)),
                "{rf:?}"
            );
        }
    }
}
