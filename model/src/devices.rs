//! The `Devices` object of one node: per-card capability (spec) and ledger (status)
//! (research/devices.md §1; api/worker/v1alpha1/devices.go).

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
    pub name: String,
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
    pub name: String,
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
    pub fn capability_or_default(&self) -> Capability {
        self.capability.clone().unwrap_or_default()
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
