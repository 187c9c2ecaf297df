//! Device groups and cards (research/devices.md §1, §3.2, "Generator rules" 2–13): realistic
//! products of the nine manufacturers, a capability family per card, and a ledger reached from
//! `ledger::seed` by real `ledger::charge`s, so every row is one the device manager could write.

use model::devices::{
    partition_scope, Capability, Card, CardTopology, DeviceGroup, Devices, Fabric, Interface, Link,
    LinkState, Network, PartitionScope, VirtualFunction,
};
use model::ledger::{catalogs, charge, seed, CardLedger, Charge, Instance};
use model::nodefeature::group_id;
use model::units::UNITS_PER_PERCENT;
use proptest::prelude::*;
use proptest::strategy::Union;

/// A partition catalog a product's cards carry in MIG mode (devices.md §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Catalog {
    A100Sxm40gb,
    H100Hbm80gb,
    HygonBw,
    TheadPpu,
}

impl Catalog {
    /// The card capability in MIG mode: profiles with their empty-card placements.
    pub fn capability(self) -> Capability {
        match self {
            Catalog::A100Sxm40gb => catalogs::a100_40gb(),
            Catalog::H100Hbm80gb => catalogs::h100_80gb(),
            Catalog::HygonBw => hygon_bw(),
            Catalog::TheadPpu => thead_ppu(),
        }
    }
}

pub use model::ledger::catalogs::{hygon_bw, thead_ppu};

/// A product as the device manager reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Product {
    pub manufacturer: &'static str,
    pub name: &'static str,
    pub memory_mib: u64,
    pub cores: u32,
    /// The MIG catalog, for products that can be partitioned.
    pub catalog: Option<Catalog>,
}

const fn product(
    manufacturer: &'static str,
    name: &'static str,
    memory_mib: u64,
    cores: u32,
    catalog: Option<Catalog>,
) -> Product {
    Product {
        manufacturer,
        name,
        memory_mib,
        cores,
        catalog,
    }
}

/// Products of the nine manufacturers (names from chain.md §8.4 presets and devices.md §3.2).
/// NVIDIA names nest on purpose (`A10` ⊂ `A100-…`, `L40` ⊂ `L40S`, `H20` ⊂ `H200`). The first
/// entry is what a product shrinks to.
pub const PRODUCTS: [Product; 17] = [
    product("nvidia", "NVIDIA A10", 24576, 9216, None),
    product(
        "nvidia",
        "NVIDIA A100-SXM4-40GB",
        40960,
        6912,
        Some(Catalog::A100Sxm40gb),
    ),
    product(
        "nvidia",
        "NVIDIA H100 80GB HBM3",
        81559,
        16896,
        Some(Catalog::H100Hbm80gb),
    ),
    product("nvidia", "NVIDIA L40", 46068, 18176, None),
    product("nvidia", "NVIDIA L40S", 46068, 18176, None),
    product("nvidia", "NVIDIA H20", 97871, 7680, None),
    product("nvidia", "NVIDIA H200", 143771, 16896, None),
    product("nvidia", "Tesla T4", 15360, 2560, None),
    product("amd", "AMD Instinct MI300X", 196592, 304, None),
    product("ascend", "Ascend 910B2", 65536, 24, None),
    product("cambricon", "MLU370-X8", 24576, 0, None),
    // Spelled `K100-AI`, not the driver's `K100_AI`: a mock's group id must be `[a-z0-9-]`
    // (devices.md, generator rule 3). The `_` the Device Manager keeps goes into the pool's
    // object names, and a real apiserver refuses those (RFC 1123; found on kube-local).
    product("hygon", "K100-AI", 65520, 120, None),
    // Product spelling of the C-3000 "BW" (gfx936, 4 slices, 80 CU, 65,520 MiB) is a generator
    // choice; its catalog is sourced (hygon-mig.md profile table; specs/2026-08-30 F2). The
    // K100-AI has no sourced partition catalog, so it stays whole/logical only.
    product("hygon", "BW", 65520, 80, Some(Catalog::HygonBw)),
    product("iluvatar", "BI-V150", 32768, 0, None),
    product("metax", "MXC500", 65536, 0, None),
    product("mthreads", "MTT S4000", 49152, 0, None),
    product("thead", "PPU-ZW810E", 98304, 0, Some(Catalog::TheadPpu)),
];

/// Logical slices per card for a vendor (devices.md §2.6 and "Generator rules" 7); 0 = the
/// vendor offers no logical slicing and its unpartitioned cards are whole-only.
pub fn vendor_slices(manufacturer: &str) -> u32 {
    match manufacturer {
        "nvidia" => 128,
        "ascend" => 63,
        "cambricon" | "mthreads" | "metax" => 16,
        "hygon" => 4,
        _ => 0,
    }
}

/// Whether a vendor's slices may each take 100 % compute (NVIDIA, Ascend; rule 7).
pub fn vendor_overcommits(manufacturer: &str) -> bool {
    matches!(manufacturer, "nvidia" | "ascend")
}

/// Which family a card's capability serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardFamily {
    /// Neither sliceable nor partitioned: exclusive and shared only.
    WholeOnly,
    /// Logically sliceable with the vendor's slice count.
    Logical,
    /// Partitioned with the product's catalog.
    Partitioned,
}

/// The families a product's cards can be in, simplest first.
pub fn families_of(p: &Product) -> Vec<CardFamily> {
    let mut out = vec![CardFamily::WholeOnly];
    if vendor_slices(p.manufacturer) > 0 {
        out.push(CardFamily::Logical);
    }
    if p.catalog.is_some() {
        out.push(CardFamily::Partitioned);
    }
    out
}

/// The capability of a card of `manufacturer` outside MIG mode: logical when the vendor slices.
pub fn plain_capability(manufacturer: &str) -> Capability {
    Capability {
        logical_sliced_count: vendor_slices(manufacturer),
        cores_percentage_overcommit: vendor_overcommits(manufacturer),
        ..Capability::default()
    }
}

/// The capability of one of `p`'s cards in `family` (a family the product lacks reads as
/// whole-only).
pub fn capability_of(p: &Product, family: CardFamily) -> Capability {
    match (family, p.catalog) {
        (CardFamily::Partitioned, Some(c)) => c.capability(),
        (CardFamily::Logical, _) => plain_capability(p.manufacturer),
        _ => Capability::default(),
    }
}

/// The product a group was generated from, recognised by manufacturer and product name (a
/// mock-suffixed name `<product>-vfy<run>` included).
pub fn product_of(group: &DeviceGroup) -> Option<&'static Product> {
    PRODUCTS.iter().find(|p| {
        p.manufacturer == group.manufacturer
            && (group.name == p.name
                || group
                    .name
                    .strip_prefix(p.name)
                    .is_some_and(|rest| rest.starts_with("-vfy")))
    })
}

/// Every legal partition charge of a catalog: each profile at each of its placements.
fn partition_alphabet(capability: &Capability) -> Vec<Charge> {
    capability
        .physical_profiles
        .iter()
        .flat_map(|p| {
            p.placements.iter().map(|pl| {
                Charge::Partition(Instance {
                    profile: p.name.to_string(),
                    placement: pl.clone(),
                })
            })
        })
        .collect()
}

/// Applies `charges` in order from the seeded card; a charge the card refuses is skipped, so
/// the result is always a ledger the device manager could reach.
pub fn apply_charges(card: CardLedger, charges: &[Charge]) -> CardLedger {
    charges
        .iter()
        .fold(card, |card, c| charge(&card, c).unwrap_or(card))
}

/// The charges that bring a card of `capability` to an occupancy: free; exclusive; k shares;
/// slices of p % VRAM; carved partition instances. Free comes first (what a ledger shrinks to).
pub fn arb_charges(capability: &Capability) -> BoxedStrategy<Vec<Charge>> {
    if capability.is_partitioned() {
        let alphabet = partition_alphabet(capability);
        if alphabet.is_empty() {
            return Just(Vec::new()).boxed();
        }
        return prop::collection::vec(prop::sample::select(alphabet), 0..=4).boxed();
    }
    let mut options: Vec<(u32, BoxedStrategy<Vec<Charge>>)> = vec![
        (4, Just(Vec::new()).boxed()),
        (1, Just(vec![Charge::Exclusive]).boxed()),
        (
            2,
            (1usize..=10).prop_map(|k| vec![Charge::Share; k]).boxed(),
        ),
    ];
    if capability.is_logically_sliceable() {
        let slice = (1i64..=100).prop_map(|p| Charge::Slice {
            units: p * UNITS_PER_PERCENT,
        });
        options.push((3, prop::collection::vec(slice, 1..=4).boxed()));
    }
    Union::new_weighted(options).boxed()
}

/// A card ledger of `capability` reached from `seed` by real charges.
pub fn arb_ledger(capability: Capability) -> BoxedStrategy<CardLedger> {
    arb_charges(&capability)
        .prop_map(move |charges| apply_charges(seed(capability.clone()), &charges))
        .boxed()
}

/// Makes a product name (and so its group id) unique to one run of the live tier: `Some(run)`
/// appends `-vfy<run>` (keep `run` short: the accelerator key should stay ≤ 40 characters,
/// devices.md "Generator rules" 3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MockKey {
    pub mock_product_key: Option<String>,
}

impl MockKey {
    pub fn run(run: impl Into<String>) -> Self {
        MockKey {
            mock_product_key: Some(run.into()),
        }
    }

    /// The product name as the group reports it.
    pub fn product_name(&self, product: &str) -> String {
        match &self.mock_product_key {
            Some(run) => format!("{product}-vfy{run}"),
            None => product.to_string(),
        }
    }
}

/// Driver and runtime versions a vendor's group may report (a few, so runtime lists vary).
fn versions(manufacturer: &str) -> &'static [(&'static str, &'static str)] {
    match manufacturer {
        "nvidia" => &[("550.54.15", "12.4"), ("535.161.08", "12.2")],
        "ascend" => &[("24.1.rc2", "8.0.RC2")],
        "amd" => &[("6.7.0", "6.2.0")],
        _ => &[("", "")],
    }
}

/// One card plan: its family and the charges that occupy it.
fn arb_card(p: Product, families: Vec<CardFamily>) -> BoxedStrategy<(Capability, CardLedger)> {
    prop::sample::select(families)
        .prop_flat_map(move |f| {
            let cap = capability_of(&p, f);
            (Just(cap.clone()), arb_ledger(cap))
        })
        .boxed()
}

/// One device group of 1..=`max_cards` cards of one product. Hygon's MIG mode is node-wide
/// (`model::devices::partition_scope`), so all cards of a Hygon group share one family
/// (devices.md "Generator rules" 9; hygon-mig.md "Limitations"); other vendors choose per card.
pub fn arb_group(max_cards: u32, mock: MockKey) -> BoxedStrategy<DeviceGroup> {
    let max_cards = max_cards.max(1);
    (prop::sample::select(&PRODUCTS[..]), 1..=max_cards)
        .prop_flat_map(move |(p, n)| {
            let families = families_of(&p);
            let cards = prop::sample::select(families.clone()).prop_flat_map(move |group_family| {
                let per_card = if partition_scope(p.manufacturer) == PartitionScope::NodeWide {
                    vec![group_family]
                } else {
                    families.clone()
                };
                prop::collection::vec(arb_card(p, per_card), n as usize)
            });
            let version = prop::sample::select(versions(p.manufacturer));
            (Just(p), cards, version)
        })
        .prop_map(move |(p, cards, (driver, runtime))| {
            let name = mock.product_name(p.name);
            let id = group_id(&name, p.manufacturer);
            let key = format!("{}-{id}", p.manufacturer);
            DeviceGroup {
                manufacturer: p.manufacturer.to_string(),
                name,
                memory_mib: p.memory_mib,
                cores: p.cores,
                driver_version: driver.to_string(),
                runtime_version: runtime.to_string(),
                cards: cards
                    .into_iter()
                    .enumerate()
                    .map(|(i, (capability, ledger))| Card {
                        id: format!("{key}-{i}"),
                        index: i as u32,
                        capability: Some(capability),
                        ledger: Some(ledger.row),
                    })
                    .collect(),
                id,
                ..DeviceGroup::default()
            }
        })
        .boxed()
}

/// Keeps the first group of each accelerator key and at most one group of a node-wide vendor
/// (Hygon: one node carries one Hygon family), preserving order.
fn distinct_groups(groups: Vec<DeviceGroup>) -> Vec<DeviceGroup> {
    let mut out: Vec<DeviceGroup> = Vec::with_capacity(groups.len());
    for g in groups {
        let clash = out.iter().any(|o| {
            o.accelerator_key() == g.accelerator_key()
                || (o.manufacturer == g.manufacturer
                    && partition_scope(&g.manufacturer) == PartitionScope::NodeWide)
        });
        if !clash {
            out.push(g);
        }
    }
    out
}

/// A node's `Devices`: 1–2 groups of distinct products, up to 4 cards each.
pub fn arb_devices() -> BoxedStrategy<Devices> {
    arb_devices_with(4, MockKey::default())
}

/// A node's `Devices`: 1–2 groups of distinct products, 1..=`max_cards` cards each, product
/// names made unique to a run by `mock`.
pub fn arb_devices_with(max_cards: u32, mock: MockKey) -> BoxedStrategy<Devices> {
    prop::collection::vec(arb_group(max_cards, mock), 1..=2)
        .prop_map(|groups| Devices {
            groups: distinct_groups(groups),
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// NICs, RDMA and card topology (devices.md §4, "Generator rules" 17–18)
// ---------------------------------------------------------------------------------------------

/// A small deterministic stream (splitmix64) for the NIC draw. The NIC shape of a node is drawn
/// from a hash of its already drawn `Devices`, not from the proptest stream, so every draw the
/// generators made before NICs existed is unchanged and a locked regression seed names the
/// same scenario (with NICs added).
struct Stream(u64);

impl Stream {
    fn of(devices: &Devices) -> Stream {
        Stream(crate::json_fnv1a(devices))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 0..n (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// true with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The bus coordinates of PCI slot `slot` under NUMA `numa`: root bridge `0000:<r>:00.0` per
/// (numa, slot / 2), switch `<root>-sw<slot % 2>` (innermost first), device `0000:<b>:00.0`.
fn slot_coordinates(numa: u64, slot: u64, device: u64) -> (String, String, Vec<String>) {
    let root = format!("0000:{:02x}:00.0", 0x10 + numa * 0x40 + (slot / 2) * 0x10);
    let switch = format!(
        "0000:{:02x}:0{}.0",
        0x11 + numa * 0x40 + (slot / 2) * 0x10,
        slot % 2
    );
    let bus = format!("0000:{:02x}:00.0", 0x80 + (device & 0x7f));
    (bus, root.clone(), vec![switch, root])
}

/// A link record: none, ok, unverified or failed (with the checker's words).
fn draw_link(r: &mut Stream) -> Option<Link> {
    match r.below(6) {
        0 => None,
        1 | 2 => Some(Link {
            state: LinkState::Ok,
            reason: String::new(),
        }),
        3 => Some(Link {
            state: LinkState::Unverified,
            reason: "port 1: unreadable state".into(),
        }),
        _ if r.chance(50) => Some(Link {
            state: LinkState::Failed,
            reason: "port 1: state=DOWN phys_state=Disabled".into(),
        }),
        _ => Some(Link {
            state: LinkState::Ok,
            reason: String::new(),
        }),
    }
}

/// A NUMA id of `numas`, or unknown ("") one time in five.
fn draw_numa(r: &mut Stream, numas: u64) -> String {
    if r.chance(20) {
        String::new()
    } else {
        r.below(numas).to_string()
    }
}

/// One PCI NIC `k`: plain, whole RDMA, an SR-IOV PF with 1–4 VFs (some VF maybe without a
/// device), an SR-IOV PF without VFs, or the unreadable-tree record (`rdma: false` +
/// `unverified`). `next_dev` numbers the node's RDMA devices (unique per node).
fn draw_nic(r: &mut Stream, k: u64, numas: u64, next_dev: &mut u32) -> Interface {
    let numa = draw_numa(r, numas);
    let at = numa.parse().unwrap_or(0);
    let (pci_bus_id, pci_root_id, pci_switches) = slot_coordinates(at, r.below(4), k * 8);
    let mut dev = || {
        let d = format!("mlx5_{next_dev}");
        *next_dev += 1;
        d
    };
    let mut nic = Interface {
        name: format!("ens{}f0", k + 1),
        bus: "pci".into(),
        pci_bus_id,
        pci_root_id,
        pci_switches,
        numa_affinity: numa,
        mtu: [1500, 4200, 9000][r.below(3) as usize],
        up: !r.chance(10),
        ..Interface::default()
    };
    match r.below(6) {
        0 => {} // a plain Ethernet NIC
        1 => {
            nic.link = Some(Link {
                state: LinkState::Unverified,
                reason: "infiniband tree unreadable".into(),
            });
        }
        2 | 3 => {
            nic.rdma = true;
            nic.rdma_device = dev();
            nic.sriov = r.chance(25); // a PF with zero VFs still serves the whole modes
            nic.link = draw_link(r);
        }
        _ => {
            nic.rdma = true;
            nic.rdma_device = dev();
            nic.sriov = true;
            nic.link = draw_link(r);
            let vfs = 1 + r.below(4);
            for v in 0..vfs {
                let bound = !r.chance(15);
                nic.virtual_functions.push(VirtualFunction {
                    name: format!("{}v{v}", nic.name),
                    pci_bus_id: format!("0000:{:02x}:00.{}", 0x80 + ((k * 8) & 0x7f), v + 2),
                    numa_affinity: if r.chance(30) {
                        String::new()
                    } else {
                        nic.numa_affinity.clone()
                    },
                    up: true,
                    rdma: bound,
                    rdma_device: if bound { dev() } else { String::new() },
                    link: if bound { draw_link(r) } else { None },
                });
            }
        }
    }
    nic
}

/// A card's fabric record: NVIDIA NVLink (32 lowercase hex, not all zeros, a decimal clique) or
/// an Ascend UB super pod; other vendors report none (devices.md §4.6).
/// `odd` puts the card in another clique (NVIDIA) or another super pod (Ascend).
fn fabric_of(manufacturer: &str, domain: u64, odd: bool, members: u64) -> Option<Fabric> {
    match manufacturer {
        "nvidia" => Some(Fabric {
            kind: "nvlink".into(),
            id: format!("{:016x}{:016x}", 0x5eed_0000 + domain, domain + 1),
            clique_id: u64::from(odd).to_string(),
            ..Fabric::default()
        }),
        "ascend" => Some(Fabric {
            kind: "ub".into(),
            id: (domain + u64::from(odd)).to_string(),
            fabric_type: "pod-1d".into(),
            member_count: members,
            ..Fabric::default()
        }),
        _ => None,
    }
}

/// The NICs and card topology of a node whose Devices are `devices`, valid by construction
/// (devices.md "Generator rules" 17–18): one node in three has no NIC; otherwise a loopback
/// and 1–3 PCI NICs of every shape; cards get bus coordinates and NUMA (sometimes none), and
/// NVIDIA/Ascend cards a fabric record that all cards share, or that differs on one card.
pub fn network_of(devices: &Devices) -> Network {
    let mut r = Stream::of(devices);
    let numas = 1 + r.below(2);
    let mut network = Network::default();
    if !r.chance(33) {
        network.interfaces.push(Interface {
            name: "lo".into(),
            bus: "virtual".into(),
            mtu: 65536,
            up: true,
            is_virtual: true,
            ..Interface::default()
        });
        let mut next_dev = 0;
        for k in 0..1 + r.below(3) {
            network
                .interfaces
                .push(draw_nic(&mut r, k, numas, &mut next_dev));
        }
    }
    // fabric: 0 none, 1 every card agrees, 2 one card in another clique/pod
    let fabric_shape = r.below(3);
    let domain = r.below(4);
    let members = [0, 8, 384][r.below(3) as usize];
    let mut first = true;
    for g in &devices.groups {
        for (i, c) in g.cards.iter().enumerate() {
            if c.capability.is_none() || r.chance(15) {
                continue; // a card the detector gave no coordinates
            }
            let numa = draw_numa(&mut r, numas);
            let at = numa.parse().unwrap_or(0);
            let (pci_bus_id, pci_root_id, pci_switches) =
                slot_coordinates(at, r.below(4), 0x40 + i as u64);
            let odd = fabric_shape == 2 && !first;
            first = false;
            let fabric = match fabric_shape {
                0 => None,
                _ => fabric_of(&g.manufacturer, domain, odd, members),
            };
            network.topology.insert(
                c.id.clone(),
                CardTopology {
                    pci_bus_id,
                    pci_root_id,
                    pci_switches,
                    numa_affinity: numa,
                    fabric,
                },
            );
        }
    }
    network
}

/// Why `network` is not one a device manager could write beside `devices` (the generator
/// rules 17–18), or `Ok`.
pub fn check_network(devices: &Devices, network: &Network) -> Result<(), NetworkFault> {
    let numa_ok = |n: &str| n.is_empty() || n.bytes().all(|b| b.is_ascii_digit());
    let mut names = std::collections::BTreeSet::new();
    let mut rdma_devices = std::collections::BTreeSet::new();
    let mut device = |d: &str| d.is_empty() || rdma_devices.insert(d.to_string());
    for i in &network.interfaces {
        if !names.insert(i.name.clone()) {
            return Err(NetworkFault::new(
                format!("interface {}", i.name),
                "listed twice",
            ));
        }
        if i.is_virtual && (i.bus != "virtual" || !i.pci_bus_id.is_empty() || i.rdma) {
            return Err(NetworkFault::new(
                &i.name,
                "a virtual interface with PCI or RDMA facts",
            ));
        }
        let unreadable = !i.rdma
            && i.link
                .as_ref()
                .is_some_and(|l| l.state == LinkState::Unverified);
        if i.rdma == i.rdma_device.is_empty() || (!i.rdma && i.link.is_some() && !unreadable) {
            return Err(NetworkFault::new(
                &i.name,
                "rdma flag and rdmaDevice disagree",
            ));
        }
        if !i.virtual_functions.is_empty() && !i.sriov {
            return Err(NetworkFault::new(&i.name, "VFs on a non-SR-IOV interface"));
        }
        if !numa_ok(&i.numa_affinity) || !device(&i.rdma_device) {
            return Err(NetworkFault::new(
                &i.name,
                "bad NUMA or a duplicate RDMA device",
            ));
        }
        if !matches!(i.mtu, 0 | 68..=65536) {
            return Err(NetworkFault::new(&i.name, format!("mtu {}", i.mtu)));
        }
        let ids: Vec<&String> = i.virtual_functions.iter().map(|v| &v.pci_bus_id).collect();
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(NetworkFault::new(&i.name, "VFs not ordered by bus id"));
        }
        for v in &i.virtual_functions {
            if !names.insert(v.name.clone()) || v.rdma == v.rdma_device.is_empty() {
                return Err(NetworkFault::new(
                    &v.name,
                    "duplicate name or rdma/rdmaDevice disagree",
                ));
            }
            if !numa_ok(&v.numa_affinity) || !device(&v.rdma_device) {
                return Err(NetworkFault::new(
                    &v.name,
                    "bad NUMA or a duplicate RDMA device",
                ));
            }
        }
    }
    let cards: Vec<&str> = devices
        .groups
        .iter()
        .flat_map(|g| &g.cards)
        .map(|c| c.id.as_str())
        .collect();
    for (id, t) in &network.topology {
        if !cards.contains(&id.as_str()) || !numa_ok(&t.numa_affinity) {
            return Err(NetworkFault::new(
                format!("topology of {id}"),
                "no such card or a bad NUMA",
            ));
        }
        if let Some(f) = &t.fabric {
            let hex = f.id.len() == 32
                && f.id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && f.id.bytes().any(|b| b != b'0');
            let ok = match f.kind.as_str() {
                "nvlink" => hex && f.clique_id.bytes().all(|b| b.is_ascii_digit()),
                "ub" | "xgmi" => !f.id.is_empty() && f.clique_id.is_empty(),
                _ => false,
            };
            if !ok {
                return Err(NetworkFault::new(
                    format!("fabric of {id}"),
                    format!("{f:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// Where and why a network record breaks the generator's rules (what [`check_network`] finds).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct NetworkFault {
    /// The interface, VF, card topology or fabric concerned.
    pub at: String,
    pub problem: String,
}

impl NetworkFault {
    fn new(at: impl Into<String>, problem: impl Into<String>) -> Self {
        NetworkFault {
            at: at.into(),
            problem: problem.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::devices::Mode;
    use model::devices::Placement;
    use model::units::{UNITS_PER_CARD, UNITS_PER_SHARE};

    #[test]
    fn hygon_bw_catalog_matches_devices_3_2() {
        let cap = hygon_bw();
        assert_eq!(cap.physical_sliced_count, 4);
        assert_eq!(cap.logical_sliced_count, 0);
        let card = seed(cap);
        let counts: Vec<(&str, u32)> = card
            .row
            .remaining_profiles
            .iter()
            .map(|p| (p.name.as_str(), p.count))
            .collect();
        assert_eq!(counts, [("2g.15gb", 4), ("4g.31gb", 2), ("8g.63gb", 1)]);
    }

    #[test]
    fn hygon_partitioned_nodes_are_generated_whole_and_valid() {
        use model::devices::mixed_node_wide_mode;
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = arb_devices();
        let (mut partitioned_nodes, mut plain_nodes) = (0, 0);
        for i in 0..600 {
            let devices = strategy.new_tree(&mut runner).unwrap().current();
            assert_eq!(mixed_node_wide_mode(&devices), None, "{devices:?}");
            let hygon: Vec<&DeviceGroup> = devices
                .groups
                .iter()
                .filter(|g| g.manufacturer == "hygon")
                .collect();
            assert!(hygon.len() <= 1, "one Hygon family per node: {hygon:?}");
            let Some(g) = hygon.first() else { continue };
            if g.cards.iter().all(Card::is_partitioned) {
                partitioned_nodes += 1;
                // Every card carries the BW catalog and a ledger the device manager could reach.
                for c in &g.cards {
                    assert_eq!(c.capability.as_ref(), Some(&hygon_bw()));
                    let row = c.ledger.as_ref().unwrap();
                    assert!(
                        matches!(row.mode, Mode::None | Mode::Partitioned),
                        "{row:?}"
                    );
                }
                let keys = model::placement::node_allocatable(&devices);
                assert_eq!(keys.get("hygon.com/dcu").copied(), Some(0));
                assert_eq!(keys.get("hygon.com/dcu.sliced").copied(), Some(0));
                assert!(keys.contains_key("hygon.com/dcu.partitioned.mig-2g.15gb"));
                // The whole cluster of this one node passes the model's input validation.
                let node = crate::nodes::name_node(
                    model::cluster::Node {
                        devices: Some(devices.clone()),
                        ..model::cluster::Node::default()
                    },
                    &format!("node-{i}"),
                );
                let cluster = model::cluster::Cluster {
                    nodes: vec![node],
                    ..model::cluster::Cluster::default()
                };
                model::derive::validate(&cluster).unwrap();
            } else {
                assert!(g.cards.iter().all(|c| !c.is_partitioned()), "{g:?}");
                plain_nodes += 1;
            }
        }
        assert!(
            partitioned_nodes > 0,
            "no partitioned Hygon node in 600 draws"
        );
        assert!(plain_nodes > 0, "no unpartitioned Hygon node in 600 draws");
    }

    #[test]
    fn thead_profiles_exclude_each_other() {
        let card = seed(thead_ppu());
        let card = apply_charges(
            card,
            &[Charge::Partition(Instance {
                profile: "4g48gb".into(),
                placement: Placement {
                    start: 0,
                    length: 4,
                },
            })],
        );
        let counts: Vec<(&str, u32)> = card
            .row
            .remaining_profiles
            .iter()
            .map(|p| (p.name.as_str(), p.count))
            .collect();
        assert_eq!(counts, [("4g48gb", 1), ("8g96gb", 0)]);
        assert_eq!(card.row.mode, Mode::Partitioned);
    }

    #[test]
    fn refused_charges_are_skipped_not_forced() {
        let card = apply_charges(
            seed(plain_capability("nvidia")),
            &[Charge::Exclusive, Charge::Share, Charge::Exclusive],
        );
        assert_eq!(card.row.mode, Mode::Exclusive);
        assert_eq!(card.row.remaining_units, 0);
        let card = apply_charges(seed(Capability::default()), &vec![Charge::Share; 12]);
        assert_eq!(card.row.remaining_units, 0);
        let card = apply_charges(
            seed(plain_capability("hygon")),
            &vec![Charge::Slice { units: 1 }; 6],
        );
        assert_eq!(card.row.allocated_slices, 4, "Hygon hosts at most 4 slices");
        assert_eq!(card.row.remaining_units, UNITS_PER_CARD - 4);
        let _ = UNITS_PER_SHARE;
    }

    #[test]
    fn products_nest_and_group_ids_are_distinct() {
        let ids: Vec<String> = PRODUCTS
            .iter()
            .map(|p| format!("{}-{}", p.manufacturer, group_id(p.name, p.manufacturer)))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "{ids:?}");
        for key in ["nvidia-a10", "nvidia-l40", "nvidia-h20"] {
            let nested = ids.iter().filter(|k| k.starts_with(key)).count();
            assert!(nested >= 2, "{key} should nest in a longer key: {ids:?}");
        }
    }

    #[test]
    fn mock_key_suffixes_product_and_group_id() {
        let mock = MockKey::run("7f3a");
        let name = mock.product_name("NVIDIA A10");
        assert_eq!(name, "NVIDIA A10-vfy7f3a");
        let id = group_id(&name, "nvidia");
        assert!(id.ends_with("vfy7f3a"), "{id}");
        let g = DeviceGroup {
            manufacturer: "nvidia".into(),
            name,
            ..DeviceGroup::default()
        };
        assert_eq!(product_of(&g).map(|p| p.name), Some("NVIDIA A10"));
    }

    #[test]
    fn generated_networks_are_valid_and_reach_every_nic_shape() {
        use model::rdma::{label_endpoints, node_resources, resource_endpoints, EndpointMode};
        use model::rdma::{FABRIC_DOMAIN, RDMA_NUMA, RDMA_PARTITIONED_KEY};
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = arb_devices();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..400 {
            let devices = strategy.new_tree(&mut runner).unwrap().current();
            let network = network_of(&devices);
            check_network(&devices, &network).unwrap_or_else(|e| panic!("{e}: {network:?}"));
            // deterministic: the same Devices draw the same NICs
            assert_eq!(network, network_of(&devices));
            if network.interfaces.is_empty() {
                seen.insert("no-nic");
            }
            for e in resource_endpoints(&network.interfaces) {
                seen.insert(match (e.mode, e.healthy) {
                    (EndpointMode::Whole, true) => "whole",
                    (EndpointMode::Partitioned, true) => "vf",
                    (_, false) => "failed",
                });
            }
            for i in &network.interfaces {
                if i.link
                    .as_ref()
                    .is_some_and(|l| l.state == LinkState::Unverified)
                    && !i.rdma
                {
                    seen.insert("unreadable");
                }
                if i.sriov && i.virtual_functions.is_empty() {
                    seen.insert("sriov-no-vf");
                }
            }
            let r = node_resources(&network);
            let vfs = resource_endpoints(&network.interfaces)
                .iter()
                .filter(|e| e.mode == EndpointMode::Partitioned)
                .count();
            assert_eq!(r.capacity[RDMA_PARTITIONED_KEY], vfs as i64);
            let labels = model::rdma::network_node_labels(&devices, &network);
            if !label_endpoints(&network.interfaces).is_empty() && !labels.contains_key(RDMA_NUMA) {
                seen.insert("numa-unknown");
            }
            let fabric_cards = network
                .topology
                .values()
                .filter(|t| t.fabric.is_some())
                .count();
            if fabric_cards > 0 {
                seen.insert(if labels.contains_key(FABRIC_DOMAIN) {
                    "fabric-agreed"
                } else {
                    "fabric-disagreed"
                });
            }
        }
        for shape in [
            "no-nic",
            "whole",
            "vf",
            "failed",
            "unreadable",
            "sriov-no-vf",
            "numa-unknown",
            "fabric-agreed",
            "fabric-disagreed",
        ] {
            assert!(seen.contains(shape), "{shape} never drawn: {seen:?}");
        }
    }

    #[test]
    fn the_network_checker_refuses_an_invalid_inventory() {
        let devices = arb_devices()
            .new_tree(&mut proptest::test_runner::TestRunner::deterministic())
            .map(|t| proptest::strategy::ValueTree::current(&t))
            .unwrap();
        let bad = |i: Interface| Network {
            interfaces: vec![i],
            ..Network::default()
        };
        let vf_on_plain = Interface {
            name: "e".into(),
            virtual_functions: vec![VirtualFunction {
                name: "ev0".into(),
                ..VirtualFunction::default()
            }],
            ..Interface::default()
        };
        assert!(check_network(&devices, &bad(vf_on_plain)).is_err());
        let unbound_rdma = Interface {
            name: "e".into(),
            rdma: true,
            ..Interface::default()
        };
        assert!(check_network(&devices, &bad(unbound_rdma)).is_err());
        let mut stray = Network::default();
        stray
            .topology
            .insert("no-such-card".into(), CardTopology::default());
        assert!(check_network(&devices, &stray).is_err());
    }
}
