//! The `Devices` object of one node: per-card capability (spec) and ledger (status)
//! (research/devices.md §1; api/worker/v1alpha1/devices.go).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::units::{UNITS_PER_CARD, UNITS_PER_SHARE};

/// `DeviceAllocationMode`; wire values are pinned by api/worker/v1alpha1/devices_test.go.
/// Input files may spell it as its name (`Shared`) or its wire number (`2`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Mode {
    #[default]
    None,
    Exclusive,
    Shared,
    Sliced,
    Partitioned,
    Visibility,
}

impl Mode {
    pub const ALL: [Mode; 6] = [
        Mode::None,
        Mode::Exclusive,
        Mode::Shared,
        Mode::Sliced,
        Mode::Partitioned,
        Mode::Visibility,
    ];

    /// The uint32 wire value (0–5).
    pub fn wire(self) -> u32 {
        self as u32
    }

    /// Strict decoding for input files: an unknown number is an error, never a guess.
    pub fn from_wire(v: u64) -> Result<Mode, ModelError> {
        if v < Mode::ALL.len() as u64 {
            Ok(Mode::ALL[v as usize])
        } else {
            Err(ModelError::UnknownMode(v))
        }
    }

    /// `DeviceAllocationMode.String()`: an unknown value prints as "None".
    pub fn display_wire(v: u64) -> &'static str {
        Mode::from_wire(v).unwrap_or(Mode::None).name()
    }

    /// Strict decoding of a mode name.
    pub fn from_name(s: &str) -> Result<Mode, ModelError> {
        Mode::ALL
            .iter()
            .find(|m| m.name() == s)
            .copied()
            .ok_or_else(|| {
                ModelError::invalid(
                    "mode",
                    format!("unknown device allocation mode `{s}`: expected None, Exclusive, Shared, Sliced, Partitioned, Visibility or 0-5"),
                )
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "None",
            Mode::Exclusive => "Exclusive",
            Mode::Shared => "Shared",
            Mode::Sliced => "Sliced",
            Mode::Partitioned => "Partitioned",
            Mode::Visibility => "Visibility",
        }
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Number(i64),
            Name(String),
        }
        match Wire::deserialize(d)? {
            Wire::Number(n) if n < 0 => Err(D::Error::custom(format!(
                "negative device allocation mode {n}: expected 0 (None) to 5 (Visibility)"
            ))),
            Wire::Number(n) => Mode::from_wire(n as u64).map_err(D::Error::custom),
            Wire::Name(s) => Mode::from_name(&s).map_err(D::Error::custom),
        }
    }
}

/// One memory-slice interval `[start, start+length)` a partition instance may occupy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Placement {
    pub start: u32,
    pub length: u32,
}

/// A partition profile of a card's catalog (`physicalSliced.profiles[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PartitionProfile {
    pub name: crate::labels::Text,
    /// Max instances of this profile on an empty card.
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<Placement>,
}

/// A `{name, count}` entry of a ledger's or a view's profile list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProfileCount {
    pub name: crate::labels::Text,
    pub count: u32,
}

/// Spec side of a card: what it could host when empty (`Accelerator.status` in spec).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Capability {
    /// Max soft slices; 0 when the card is in a partitioning (MIG) mode.
    pub logical_sliced_count: u32,
    pub cores_percentage_overcommit: bool,
    /// Partition ceiling = max profile count; 0 when hard slicing is off.
    pub physical_sliced_count: u32,
    pub physical_profiles: Vec<PartitionProfile>,
    pub unhealthy: bool,
}

impl Capability {
    /// `IsPartitioned` (pkg/device/population.go): the card serves only the partition family.
    pub fn is_partitioned(&self) -> bool {
        self.physical_sliced_count > 0
    }

    /// `IsLogicallySliceable`: soft slices offered and not partitioned.
    pub fn is_logically_sliceable(&self) -> bool {
        self.logical_sliced_count > 0 && !self.is_partitioned()
    }

    /// `IsWholeAcceleratorCapable`: partitioning wins over whole-card use.
    pub fn is_whole_card_capable(&self) -> bool {
        !self.is_partitioned()
    }
}

/// Status side of a card: the allocation ledger row (`AcceleratorAllocation`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Ledger {
    pub mode: Mode,
    /// Remaining units out of [`UNITS_PER_CARD`].
    pub remaining_units: i64,
    pub remaining_profiles: Vec<ProfileCount>,
    pub allocated_profiles: Vec<ProfileCount>,
    /// Logical slices already hosted (docs/modules/devices/discovery.md).
    pub allocated_slices: u32,
}

impl Default for Ledger {
    /// The device manager seeds every card free at D.
    fn default() -> Self {
        Ledger {
            mode: Mode::None,
            remaining_units: UNITS_PER_CARD,
            remaining_profiles: Vec::new(),
            allocated_profiles: Vec::new(),
            allocated_slices: 0,
        }
    }
}

impl Ledger {
    /// A card is wholly free when its remaining units reach D (§9.1).
    pub fn is_free(&self) -> bool {
        self.remaining_units >= UNITS_PER_CARD
    }

    /// Whole free shares left on the card (⌊remaining / 160,000⌋, never negative).
    pub fn free_shares(&self) -> i64 {
        self.remaining_units.max(0) / UNITS_PER_SHARE
    }

    /// `PartitionLedgerReady`: the row lists at least one allocated or remaining profile.
    pub fn partition_ready(&self) -> bool {
        !self.allocated_profiles.is_empty() || !self.remaining_profiles.is_empty()
    }
}

/// `LogicalSlotsFree`, assumed `max(0, count − allocatedSlices)`; corrections.md 8 (its one
/// visible use, `<= 0` ⇒ "already hosts N of its count slices", agrees).
pub fn logical_slots_free(capability: &Capability, allocated_slices: u32) -> u32 {
    capability
        .logical_sliced_count
        .saturating_sub(allocated_slices)
}

/// `freeShares`: shares a card can still grant — ⌊remaining / D/10⌋ on a whole-capable card in
/// mode None or Shared, else 0 (admission.md §16 R17, R28; gate 3 and the fit labels).
pub fn grantable_shares(capability: &Capability, ledger: &Ledger) -> i64 {
    if capability.is_whole_card_capable() && matches!(ledger.mode, Mode::None | Mode::Shared) {
        ledger.free_shares()
    } else {
        0
    }
}

/// How far one partitioning-mode switch reaches on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionScope {
    /// One card at a time (`nvidia-smi -i <n> -mig 1`, `ppu-smi -i <N> -mig 1`): a node may mix
    /// partitioned and unpartitioned cards (nvidia-mig.md; thead-mig.md).
    PerCard,
    /// The whole node at once (`hy-smi -mig 1` takes no `-i`): every card of the vendor on a
    /// node is partitioned, or none is (hygon-mig.md @0421f1c "Limitations": the mode is
    /// node-wide, "never as mixed").
    NodeWide,
}

/// The reach of `manufacturer`'s partitioning mode: node-wide for Hygon, per card otherwise
/// (hygon-mig.md "The mode is node-wide"; devices.md "Generator rules" 9).
pub fn partition_scope(manufacturer: &str) -> PartitionScope {
    match manufacturer {
        "hygon" => PartitionScope::NodeWide,
        _ => PartitionScope::PerCard,
    }
}

/// A node-wide vendor whose cards on one node are partly partitioned: a layout the hardware
/// cannot report, so no device manager writes such a `Devices` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixedNodeWideMode {
    pub manufacturer: String,
    pub partitioned: usize,
    pub unpartitioned: usize,
}

impl std::fmt::Display for MixedNodeWideMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} partitioning is node-wide: {} card(s) partitioned and {} not on one node \
             (all or none; hygon-mig.md Limitations)",
            self.manufacturer, self.partitioned, self.unpartitioned
        )
    }
}

/// The first node-wide vendor (in group order) whose cards on this node disagree on the mode,
/// over every group of that vendor; cards without a spec row carry no mode and are skipped.
/// Once partitioned, such a node serves partitions only: its whole-card and logical-slice keys
/// and views go to zero because every card is partitioned (hygon-mig.md "A partitioned node
/// serves only partitions").
pub fn mixed_node_wide_mode(devices: &Devices) -> Option<MixedNodeWideMode> {
    let mut vendors: Vec<&str> = Vec::new();
    for g in &devices.groups {
        if partition_scope(&g.manufacturer) == PartitionScope::NodeWide
            && !vendors.contains(&g.manufacturer.as_str())
        {
            vendors.push(&g.manufacturer);
        }
    }
    vendors.into_iter().find_map(|m| {
        let modes: Vec<bool> = devices
            .groups
            .iter()
            .filter(|g| g.manufacturer == m)
            .flat_map(|g| &g.cards)
            .filter_map(|c| c.capability.as_ref().map(Capability::is_partitioned))
            .collect();
        let partitioned = modes.iter().filter(|p| **p).count();
        let unpartitioned = modes.len() - partitioned;
        (partitioned > 0 && unpartitioned > 0).then(|| MixedNodeWideMode {
            manufacturer: m.to_string(),
            partitioned,
            unpartitioned,
        })
    })
}

/// One accelerator card, joined across spec and status by its id.
/// `capability: None` = no spec entry; `ledger: None` = no status row.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Card {
    pub id: String,
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub capability: Option<Capability>,
    #[serde(default)]
    pub ledger: Option<Ledger>,
}

impl Card {
    /// The capability the pool code joins; a missing spec row reads as zero capability.
    pub fn capability_or_default(&self) -> &Capability {
        /// `Capability::default()`, borrowable.
        static NONE: Capability = Capability {
            logical_sliced_count: 0,
            cores_percentage_overcommit: false,
            physical_sliced_count: 0,
            physical_profiles: Vec::new(),
            unhealthy: false,
        };
        self.capability.as_ref().unwrap_or(&NONE)
    }

    pub fn is_partitioned(&self) -> bool {
        self.capability
            .as_ref()
            .is_some_and(Capability::is_partitioned)
    }

    pub fn is_logically_sliceable(&self) -> bool {
        self.capability
            .as_ref()
            .is_some_and(Capability::is_logically_sliceable)
    }
}

/// One device group (one product of one manufacturer on a node).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceGroup {
    pub manufacturer: String,
    /// Group id = sanitized product name, e.g. `a10g`, `tesla-t4`.
    pub id: String,
    /// Product name, e.g. `NVIDIA A10G`.
    pub name: String,
    pub memory_mib: u64,
    pub cores: u32,
    pub driver_version: String,
    pub runtime_version: String,
    pub compute_capability: String,
    pub family: String,
    pub cards: Vec<Card>,
}

impl DeviceGroup {
    /// The accelerator key `<manufacturer>-<groupID>`; pools always match on this full key
    /// because a bare group id can collide across vendors (chain.md §3.2).
    pub fn accelerator_key(&self) -> String {
        format!("{}-{}", self.manufacturer, self.id)
    }

    /// Whether [`accelerator_key`](Self::accelerator_key) is `a_key` (no key is built).
    pub fn has_accelerator_key(&self, a_key: &str) -> bool {
        a_key
            .strip_prefix(self.manufacturer.as_str())
            .and_then(|rest| rest.strip_prefix('-'))
            == Some(self.id.as_str())
    }
}

/// The per-node `Devices` object (named after the node).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Devices {
    pub groups: Vec<DeviceGroup>,
}

impl Devices {
    /// Groups whose `manufacturer-id` equals `a_key` (a pool counts only its own group).
    pub fn groups_of<'a>(&'a self, a_key: &'a str) -> impl Iterator<Item = &'a DeviceGroup> + 'a {
        self.groups
            .iter()
            .filter(move |g| g.has_accelerator_key(a_key))
    }
}

/// `DeviceInterfaceLinkState` (api/worker/v1alpha1/devices.go): the link checker's verdict on
/// an RDMA port. No record at all ([`Interface::link`] `None`) means "nothing to verify".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Ok,
    Unverified,
    Failed,
}

impl LinkState {
    pub const ALL: [LinkState; 3] = [LinkState::Ok, LinkState::Unverified, LinkState::Failed];

    /// The wire spelling (`ok`, `unverified`, `failed`).
    pub fn name(self) -> &'static str {
        match self {
            LinkState::Ok => "ok",
            LinkState::Unverified => "unverified",
            LinkState::Failed => "failed",
        }
    }

    /// Strict decoding of the wire spelling.
    pub fn from_name(s: &str) -> Result<LinkState, ModelError> {
        LinkState::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                ModelError::invalid(
                    "link.state",
                    format!("unknown link state `{s}`: expected ok, unverified or failed"),
                )
            })
    }
}

/// `DeviceInterfaceLink`: a verdict and the checker's words (`firstSeenTime` is the DM's
/// clock and not modelled; the mock writes one for an ongoing `failed`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Link {
    pub state: LinkState,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `DeviceInterfaceVirtualFunction`: one SR-IOV VF, nested under its PF; it inherits the PF's
/// `pciRootId`/`pciSwitches` (research/devices.md §1.2, §4.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VirtualFunction {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pci_bus_id: String,
    /// "" = unknown (the endpoint then falls back to the PF's).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub numa_affinity: String,
    pub up: bool,
    pub rdma: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rdma_device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
}

/// `DeviceInterface`: one NIC of the worker's `spec.interfaces[]` (map key `name`), with the
/// fields the RDMA and distance rules read (research/devices.md §1.2, §4.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Interface {
    pub name: String,
    /// `pci`, `virtual`, or another bus name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bus: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pci_bus_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pci_root_id: String,
    /// Upstream bridge path, innermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pci_switches: Vec<String>,
    /// "" = unknown, never "0".
    #[serde(skip_serializing_if = "String::is_empty")]
    pub numa_affinity: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub mtu: u32,
    pub up: bool,
    #[serde(rename = "virtual")]
    pub is_virtual: bool,
    /// An RDMA device is bound (says nothing about the link).
    pub rdma: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rdma_device: String,
    /// Is an SR-IOV PF (a separate fact from having VFs).
    pub sriov: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub virtual_functions: Vec<VirtualFunction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// `DeviceFabric`: a card's scale-up domain (`topology.fabric`; research/devices.md §4.6).
/// `kind` and `id` are required on the wire; the Ascend-only fields are kept as read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Fabric {
    /// `ub`, `nvlink` or `xgmi`.
    pub kind: String,
    pub id: String,
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    pub fabric_type: String,
    /// NVIDIA only (NVLink partition).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub clique_id: String,
    /// Ascend only; 0 = not reported.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub member_count: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// The part of one card's `topology` the RDMA distance and fabric rules read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CardTopology {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pci_bus_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pci_root_id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pci_switches: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub numa_affinity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabric: Option<Fabric>,
}

/// The rest of a `Devices.spec` beyond the card capability: the worker's NIC inventory
/// (`spec.interfaces`) and each spec card's topology keyed by card id. It is carried beside
/// [`Devices`] on the node (`Node::network`) rather than inside it so that every existing
/// `Devices`/`Card` literal keeps compiling; it only means something on a node that has a
/// `Devices` object (the DM wrote both).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Network {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    /// Card id → its topology (a card absent here has no coordinates and no fabric).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub topology: BTreeMap<String, CardTopology>,
}

impl Network {
    pub fn is_empty(&self) -> bool {
        self.interfaces.is_empty() && self.topology.is_empty()
    }

    /// The topology of card `id`, if the Devices carry one.
    pub fn card(&self, id: &str) -> Option<&CardTopology> {
        self.topology.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_reads_names_and_wire_numbers_and_refuses_others() {
        let m: Mode = serde_json::from_str("\"Shared\"").unwrap();
        assert_eq!(m, Mode::Shared);
        let m: Mode = serde_json::from_str("4").unwrap();
        assert_eq!(m, Mode::Partitioned);
        let e = serde_json::from_str::<Mode>("9").unwrap_err().to_string();
        assert!(e.contains("unknown device allocation mode 9"), "{e}");
        let e = serde_json::from_str::<Mode>("-1").unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
        let e = serde_json::from_str::<Mode>("\"Carved\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`Carved`"), "{e}");
    }

    #[test]
    fn unknown_wire_value_displays_as_none() {
        assert_eq!(Mode::display_wire(99), "None");
        assert_eq!(Mode::display_wire(5), "Visibility");
        for m in Mode::ALL {
            assert_eq!(Mode::from_wire(u64::from(m.wire())), Ok(m));
        }
    }

    #[test]
    fn partitioning_wins_over_logical_slicing() {
        let c = Capability {
            logical_sliced_count: 10,
            physical_sliced_count: 7,
            ..Capability::default()
        };
        assert!(c.is_partitioned());
        assert!(!c.is_logically_sliceable());
        assert!(!c.is_whole_card_capable());
    }

    fn group(manufacturer: &str, id: &str, caps: Vec<Capability>) -> DeviceGroup {
        DeviceGroup {
            manufacturer: manufacturer.into(),
            id: id.into(),
            name: id.into(),
            memory_mib: 65520,
            cards: caps
                .into_iter()
                .enumerate()
                .map(|(i, cap)| Card {
                    id: format!("{manufacturer}-{id}-{i}"),
                    index: i as u32,
                    capability: Some(cap),
                    ledger: None,
                })
                .collect(),
            ..DeviceGroup::default()
        }
    }

    fn sliceable(n: u32) -> Capability {
        Capability {
            logical_sliced_count: n,
            ..Capability::default()
        }
    }

    #[test]
    fn only_hygon_partitions_node_wide() {
        assert_eq!(partition_scope("hygon"), PartitionScope::NodeWide);
        for m in ["nvidia", "thead", "amd", ""] {
            assert_eq!(partition_scope(m), PartitionScope::PerCard, "{m}");
        }
    }

    #[test]
    fn a_mixed_hygon_node_is_refused_a_mixed_nvidia_node_is_not() {
        use crate::ledger::catalogs::{a100_40gb, hygon_bw};
        let bw = || group("hygon", "bw", vec![hygon_bw(), hygon_bw()]);
        let all = Devices { groups: vec![bw()] };
        assert_eq!(mixed_node_wide_mode(&all), None);
        let none = Devices {
            groups: vec![group(
                "hygon",
                "bw",
                vec![sliceable(4), Capability::default()],
            )],
        };
        assert_eq!(mixed_node_wide_mode(&none), None);
        let mixed = Devices {
            groups: vec![group(
                "hygon",
                "bw",
                vec![hygon_bw(), sliceable(4), hygon_bw()],
            )],
        };
        let found = mixed_node_wide_mode(&mixed).unwrap();
        assert_eq!((found.partitioned, found.unpartitioned), (2, 1));
        assert!(found.to_string().contains("node-wide"), "{found}");
        // Across groups of one vendor: the switch is per node, not per product.
        let two_groups = Devices {
            groups: vec![bw(), group("hygon", "k100-ai", vec![sliceable(4)])],
        };
        assert_eq!(
            mixed_node_wide_mode(&two_groups).map(|m| m.manufacturer),
            Some("hygon".to_string())
        );
        // NVIDIA switches per card: a mixed node is legal.
        let nvidia = Devices {
            groups: vec![group("nvidia", "a100", vec![a100_40gb(), sliceable(128)])],
        };
        assert_eq!(mixed_node_wide_mode(&nvidia), None);
        // A card without a spec row has no mode to disagree with.
        let mut unknown = bw();
        unknown.cards[1].capability = None;
        let unknown = Devices {
            groups: vec![unknown],
        };
        assert_eq!(mixed_node_wide_mode(&unknown), None);
    }

    #[test]
    fn a_partitioned_hygon_node_serves_partitions_only() {
        // hygon-mig.md "Enabling": an 8-card BW node in MIG mode advertises
        // `hygon.com/dcu: 0`, `hygon.com/dcu.partitioned: 32`, `hygon.com/dcu.sliced: 0`.
        use crate::cluster::SharedOnceMax;
        use crate::ledger::catalogs::hygon_bw;
        let node = Devices {
            groups: vec![group("hygon", "bw", vec![hygon_bw(); 8])],
        };
        let keys = crate::placement::node_allocatable(&node);
        let get = |k: &str| keys.get(k).copied();
        assert_eq!(get("hygon.com/dcu"), Some(0));
        assert_eq!(get("hygon.com/dcu.sliced"), Some(0));
        assert_eq!(get("hygon.com/dcu.partitioned"), Some(32));
        assert_eq!(
            get("hygon.com/dcu.partitioned.units"),
            Some(8 * crate::units::UNITS_PER_CARD)
        );
        assert_eq!(get("hygon.com/dcu.partitioned.mig-2g.15gb"), Some(32));
        assert_eq!(get("hygon.com/dcu.partitioned.mig-4g.31gb"), Some(16));
        assert_eq!(get("hygon.com/dcu.partitioned.mig-8g.63gb"), Some(8));
        let views = crate::views::four_views(&[&node], "hygon-bw", SharedOnceMax::Cards);
        let zero = crate::objects::ResourceView::default();
        assert_eq!(views.exclusive, zero);
        assert_eq!(views.shared, zero);
        assert_eq!(views.sliced, zero);
        assert!(
            views.partitioned.view.capacity > 0,
            "{:?}",
            views.partitioned
        );
    }

    #[test]
    fn has_accelerator_key_matches_the_built_key_only() {
        let group = DeviceGroup {
            manufacturer: "nvidia".into(),
            id: "a10".into(),
            ..DeviceGroup::default()
        };
        assert!(group.has_accelerator_key(&group.accelerator_key()));
        for other in [
            "nvidia-a100",
            "nvidia-a1",
            "nvidia",
            "nvidiaa10",
            "amd-a10",
            "",
        ] {
            assert!(!group.has_accelerator_key(other), "{other}");
        }
    }
}
