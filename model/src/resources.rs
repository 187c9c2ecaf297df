//! The accelerator resource-name algebra: vendor bases, the keys of each family, and the
//! classification of any resource name (admission.md §2.1–2.5; pkg/nodefeature/knowns.go).

use serde::{Deserialize, Serialize};

use crate::devices::Mode;
use crate::profiles::{publish_profile_name, vendor_profile_name};

/// The family a resource name asks for (`ResourceFamilyOf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Exclusive,
    Shared,
    Sliced,
    Partitioned,
    Visibility,
    None,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Exclusive => "exclusive",
            Family::Shared => "shared",
            Family::Sliced => "sliced",
            Family::Partitioned => "partitioned",
            Family::Visibility => "visibility",
            Family::None => "none",
        }
    }
}

/// Which key of a family a resource name is (admission.md §2.2 table).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Key {
    /// `<base>`: whole cards.
    Whole,
    /// `<base>.shared`: distinct cards, one share each.
    Shared,
    /// `<base>.sliced`: always 1.
    Sliced,
    SlicedUnits,
    SlicedCoresPercentage,
    SlicedMemoryPercentage,
    SlicedMemoryMib,
    /// `<base>.partitioned`: always 1.
    Partitioned,
    PartitionedUnits,
    /// `<base>.partitioned.<kind>-<profile>` with the profile in published spelling.
    PartitionedProfile(String),
    /// `device.gpustack.ai/<m>.visibility`.
    Visibility,
}

impl Key {
    pub fn family(&self) -> Family {
        match self {
            Key::Whole => Family::Exclusive,
            Key::Shared => Family::Shared,
            Key::Sliced
            | Key::SlicedUnits
            | Key::SlicedCoresPercentage
            | Key::SlicedMemoryPercentage
            | Key::SlicedMemoryMib => Family::Sliced,
            Key::Partitioned | Key::PartitionedUnits | Key::PartitionedProfile(_) => {
                Family::Partitioned
            }
            Key::Visibility => Family::Visibility,
        }
    }
}

/// A classified accelerator resource name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceName {
    pub manufacturer: String,
    pub key: Key,
}

/// Fixed suffixes after `<base>`, each a whole tail (`classify` compares them exactly); longest
/// first, as the suffix-by-suffix reading in the tests strips them.
const SUFFIXES: [(&str, Key); 8] = [
    (".sliced.memory-percentage", Key::SlicedMemoryPercentage),
    (".sliced.cores-percentage", Key::SlicedCoresPercentage),
    (".sliced.memory-mib", Key::SlicedMemoryMib),
    (".partitioned.units", Key::PartitionedUnits),
    (".sliced.units", Key::SlicedUnits),
    (".partitioned", Key::Partitioned),
    (".sliced", Key::Sliced),
    (".shared", Key::Shared),
];

const VISIBILITY_PREFIX: &str = "device.gpustack.ai/";
const VISIBILITY_SUFFIX: &str = ".visibility";

/// The default `<base>` of a manufacturer (admission.md §2.1; knowns.go @106c5d4).
pub fn base_of(manufacturer: &str) -> Option<&'static str> {
    Some(match manufacturer {
        "amd" => "amd.com/gpu",
        "ascend" => "huawei.com/npu",
        "cambricon" => "cambricon.com/mlu",
        "hygon" => "hygon.com/dcu",
        "iluvatar" => "iluvatar.com/gpu",
        "metax" => "metax-tech.com/gpu",
        "mthreads" => "mthreads.com/gpu",
        "nvidia" => "nvidia.com/gpu",
        "thead" => "alibabacloud.com/ppu",
        _ => return None,
    })
}

/// The manufacturer whose `<base>` is `base`.
pub fn manufacturer_of_base(base: &str) -> Option<&'static str> {
    crate::labels::MANUFACTURERS
        .into_iter()
        .find(|m| base_of(m) == Some(base))
}

/// Which partition-kind map the algebra follows (research/corrections.md 10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionKinds {
    /// Newest: the three partitioning vendors, NVIDIA, T-Head and Hygon, all with `mig`
    /// (docs/modules/devices/requests.md @aa96eb4 "two families"; hygon-mig.md @0421f1c: Hygon's
    /// library exports NVML names, so its key is `hygon.com/dcu.partitioned.mig-<profile>`).
    #[default]
    Documented,
    /// The indexed pkg/nodefeature/knowns.go kind map: NVIDIA and T-Head only (Hygon has no
    /// `.partitioned*` keys).
    KnownsIndexed,
}

/// The partition kind of a manufacturer under `kinds`; none = no `.partitioned*` keys at all.
/// knowns.go kind map (each overridable by `GPUSTACK_<M>_PARTITION_KIND`, not modelled); AMD and
/// the other vendors never partition under either map (the vectors assert `amd` has none).
pub fn partition_kind_in(kinds: PartitionKinds, manufacturer: &str) -> Option<&'static str> {
    match (kinds, manufacturer) {
        (_, "nvidia" | "thead") => Some("mig"),
        (PartitionKinds::Documented, "hygon") => Some("mig"),
        _ => None,
    }
}

/// The partition kind of a manufacturer under the newest map ([`PartitionKinds::Documented`]):
/// `mig` for NVIDIA, T-Head and Hygon. The algebra below (classify, key building, node keys)
/// follows this map; [`partition_kind_in`] answers for the older one.
pub fn partition_kind(manufacturer: &str) -> Option<&'static str> {
    partition_kind_in(PartitionKinds::Documented, manufacturer)
}

/// `ResourceFamilyOf` with the key and manufacturer (admission.md §2.4): visibility, then a
/// per-profile partition key with a non-empty tail, then a fixed suffix on a known base, then a
/// bare base; anything else is not an accelerator resource.
pub fn classify(name: &str) -> Option<ResourceName> {
    if let Some(rest) = name.strip_prefix(VISIBILITY_PREFIX) {
        let m = rest.strip_suffix(VISIBILITY_SUFFIX)?;
        return crate::labels::is_known_manufacturer(m).then(|| ResourceName {
            manufacturer: m.to_string(),
            key: Key::Visibility,
        });
    }
    // Read once from the front: the base, then what follows it, where matching each fixed
    // suffix and each manufacturer's profile prefix in turn took up to 18 base lookups.
    let (manufacturer, tail) = split_at_base(name)?;
    let key = match tail {
        "" => Key::Whole,
        _ => match partition_profile_in(manufacturer, tail) {
            Some(profile) => Key::PartitionedProfile(profile.to_string()),
            // knowns.go `ResourceFamilyOf` checks only that the base is known: a fixed
            // `.partitioned*` suffix on the base of a manufacturer without a kind still
            // classifies as partitioned (no node advertises it, so such a request never
            // schedules). Only building names needs a kind.
            None => SUFFIXES
                .iter()
                .find(|(suffix, _)| *suffix == tail)?
                .1
                .clone(),
        },
    };
    Some(ResourceName {
        manufacturer: manufacturer.to_string(),
        key,
    })
}

/// What follows `<base>` in a per-profile partition key, before `<kind>-<profile>`.
const PARTITION_PROFILE_INFIX: &str = ".partitioned.";

/// A resource name's manufacturer and what follows its `<base>`. Every known base is
/// `<domain>/<word>` with no dot after the slash, so the base ends at the first dot after it.
fn split_at_base(name: &str) -> Option<(&'static str, &str)> {
    let slash = name.find('/')?;
    let end = name[slash..]
        .find('.')
        .map_or(name.len(), |dot| slash + dot);
    let (base, tail) = name.split_at(end);
    Some((manufacturer_of_base(base)?, tail))
}

/// The profile of `.partitioned.<kind>-<profile>` after a partitioning manufacturer's base,
/// when it is not empty.
fn partition_profile_in<'n>(manufacturer: &str, tail: &'n str) -> Option<&'n str> {
    let profile = tail
        .strip_prefix(PARTITION_PROFILE_INFIX)?
        .strip_prefix(partition_kind(manufacturer)?)?
        .strip_prefix('-')?;
    (!profile.is_empty()).then_some(profile)
}

/// `<base>.partitioned.<kind>-`: what every per-profile partition key of `manufacturer` starts
/// with (`None`: it has no partition kind).
pub fn partition_profile_prefix(manufacturer: &str) -> Option<String> {
    let (base, kind) = (base_of(manufacturer)?, partition_kind(manufacturer)?);
    Some([base, PARTITION_PROFILE_INFIX, kind, "-"].concat())
}

/// The family of any resource name (`ResourceFamilyOf`).
pub fn family_of(name: &str) -> Family {
    classify(name).map_or(Family::None, |r| r.key.family())
}

/// `IsKnownAcceleratableResourceName`: one of the four device families (visibility excluded).
pub fn is_known_accelerator_resource(name: &str) -> bool {
    !matches!(family_of(name), Family::None | Family::Visibility)
}

/// The resource name of `key` for a manufacturer; `None` when it has no such key (unknown
/// manufacturer, partition keys without a kind, an invalid profile name).
pub fn resource_name(manufacturer: &str, key: &Key) -> Option<String> {
    let base = base_of(manufacturer)?;
    let suffix = match key {
        Key::Whole => "",
        Key::Visibility => {
            return Some([VISIBILITY_PREFIX, manufacturer, VISIBILITY_SUFFIX].concat())
        }
        Key::PartitionedProfile(profile) => {
            let mut name = partition_profile_prefix(manufacturer)?;
            name.push_str(profile);
            return is_valid_profile_resource_name(profile, &name).then_some(name);
        }
        other => SUFFIXES.iter().find(|(_, k)| k == other)?.0,
    };
    if key.family() == Family::Partitioned {
        partition_kind(manufacturer)?;
    }
    Some([base, suffix].concat())
}

/// A profile key must be a valid qualified resource name; an empty profile or one like
/// `1g.10gb+me` is excluded, never rewritten (admission.md §2.5; knowns.go).
fn is_valid_profile_resource_name(profile: &str, full: &str) -> bool {
    !profile.is_empty() && is_qualified_name(full)
}

/// Kubernetes `IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain (≤ 253),
/// the name 1–63 characters of `[A-Za-z0-9-_.]`, alphanumeric at both ends
/// (apimachinery validation; used by knowns.go and fit.go).
pub fn is_qualified_name(s: &str) -> bool {
    let mut parts = s.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => return false,
    };
    prefix.is_none_or(is_dns1123_subdomain) && is_qualified_name_part(name)
}

/// The name part of a qualified name.
fn is_qualified_name_part(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A DNS-1123 subdomain: ≤ 253 characters, dot-separated labels of `[a-z0-9-]`, each
/// non-empty and alphanumeric at both ends.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    (1..=253).contains(&s.len())
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                && label.ends_with(|c: char| c.is_ascii_alphanumeric())
        })
}

/// `GetAcceleratableResourceName`: the device-plugin key of an allocation mode — Exclusive
/// (and None) `<base>`, Shared `.shared`, Sliced `.sliced`, Partitioned `.partitioned` (none
/// without a partition kind), Visibility `device.gpustack.ai/<m>.visibility`; knowns.go.
/// An unknown manufacturer has no key (Go would return a bare suffix; `None` is kept honest).
pub fn accelerator_resource_name(manufacturer: &str, mode: Mode) -> Option<String> {
    let key = match mode {
        Mode::None | Mode::Exclusive => Key::Whole,
        Mode::Shared => Key::Shared,
        Mode::Sliced => Key::Sliced,
        Mode::Partitioned => Key::Partitioned,
        Mode::Visibility => Key::Visibility,
    };
    base_of(manufacturer)?;
    resource_name(manufacturer, &key)
}

/// `GetAcceleratableSlicedUnitsResourceName`: `<base>.sliced.units`; knowns.go.
pub fn sliced_units_resource_name(manufacturer: &str) -> Option<String> {
    resource_name(manufacturer, &Key::SlicedUnits)
}

/// `GetAcceleratableSlicedCoresPercentageResourceName`: `<base>.sliced.cores-percentage`.
pub fn sliced_cores_percentage_resource_name(manufacturer: &str) -> Option<String> {
    resource_name(manufacturer, &Key::SlicedCoresPercentage)
}

/// `GetAcceleratableSlicedMemoryPercentageResourceName`: `<base>.sliced.memory-percentage`.
pub fn sliced_memory_percentage_resource_name(manufacturer: &str) -> Option<String> {
    resource_name(manufacturer, &Key::SlicedMemoryPercentage)
}

/// `GetAcceleratableSlicedMemoryMibResourceName`: `<base>.sliced.memory-mib`.
pub fn sliced_memory_mib_resource_name(manufacturer: &str) -> Option<String> {
    resource_name(manufacturer, &Key::SlicedMemoryMib)
}

/// `GetAcceleratablePartitionedUnitsResourceName`: `<base>.partitioned.units`, none without
/// a partition kind; knowns.go.
pub fn partitioned_units_resource_name(manufacturer: &str) -> Option<String> {
    resource_name(manufacturer, &Key::PartitionedUnits)
}

/// `GetAcceleratablePartitionedProfileResourceName`: `<base>.partitioned.<kind>-<profile>`
/// with the profile verbatim (published spelling); none without a kind, for an empty profile or
/// when the key would not be a qualified name; knowns.go.
pub fn partitioned_profile_resource_name(manufacturer: &str, profile: &str) -> Option<String> {
    resource_name(manufacturer, &Key::PartitionedProfile(profile.to_string()))
}

/// The credits resource Kueue quota is kept in: `credits.gpustack.ai/<manufacturer>`
/// (admission.md §5).
pub fn credits_resource_name(manufacturer: &str) -> String {
    format!("{}{manufacturer}", crate::labels::CREDITS_PREFIX)
}

/// The `<base>` a classified resource name belongs to (pod.go `acceleratorBaseOf`); `None`
/// for visibility and non-accelerator names.
pub fn accelerator_base_of(name: &str) -> Option<&'static str> {
    let r = classify(name)?;
    match r.key.family() {
        Family::Visibility | Family::None => None,
        _ => base_of(&r.manufacturer),
    }
}

/// The per-profile key of a vendor-spelled profile (`4g48gb` → `…mig-4g.48gb` for T-Head).
pub fn profile_resource_name(manufacturer: &str, vendor_profile: &str) -> Option<String> {
    resource_name(
        manufacturer,
        &Key::PartitionedProfile(publish_profile_name(manufacturer, vendor_profile)),
    )
}

/// `PartitionedProfileOf`: the published profile of a per-profile key.
pub fn partitioned_profile_of(name: &str) -> Option<String> {
    match classify(name)?.key {
        Key::PartitionedProfile(p) => Some(p),
        _ => None,
    }
}

/// `VendorPartitionedProfileOf`: the vendor-spelled profile of a per-profile key.
pub fn vendor_partitioned_profile_of(name: &str) -> Option<String> {
    let r = classify(name)?;
    match r.key {
        Key::PartitionedProfile(p) => Some(vendor_profile_name(&r.manufacturer, &p)),
        _ => None,
    }
}

/// `NormalizePartitionedProfileName`: lower-cased, trimmed, last whitespace field kept
/// (`"PPU MIG 1c.12g"` → `1c.12g`).
pub fn normalize_profile_name(name: &str) -> String {
    name.split_whitespace()
        .last()
        .unwrap_or_default()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `classify` as it read before it split names at the base: each manufacturer's profile
    /// prefix, then each fixed suffix (longest first), then a bare base.
    fn classify_suffix_by_suffix(name: &str) -> Option<ResourceName> {
        if let Some(rest) = name.strip_prefix(VISIBILITY_PREFIX) {
            let m = rest.strip_suffix(VISIBILITY_SUFFIX)?;
            return crate::labels::is_known_manufacturer(m).then(|| ResourceName {
                manufacturer: m.to_string(),
                key: Key::Visibility,
            });
        }
        let profile = crate::labels::MANUFACTURERS.into_iter().find_map(|m| {
            let profile = name
                .strip_prefix(base_of(m)?)?
                .strip_prefix(".partitioned.")?
                .strip_prefix(partition_kind(m)?)?
                .strip_prefix('-')?;
            (!profile.is_empty()).then(|| ResourceName {
                manufacturer: m.to_string(),
                key: Key::PartitionedProfile(profile.to_string()),
            })
        });
        if profile.is_some() {
            return profile;
        }
        let (base, key) = SUFFIXES
            .iter()
            .find_map(|(suffix, key)| Some((name.strip_suffix(suffix)?, key.clone())))
            .unwrap_or((name, Key::Whole));
        Some(ResourceName {
            manufacturer: manufacturer_of_base(base)?.to_string(),
            key,
        })
    }

    proptest::proptest! {
        /// Names built from bases, known tails and stray pieces classify as they did suffix
        /// by suffix.
        #[test]
        fn classifying_from_the_base_reads_as_suffix_by_suffix(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "nvidia.com/gpu", "hygon.com/dcu", "amd.com/gpu", "alibabacloud.com/ppu",
                    "huawei.com/npu", "example.com/gpu", "nvidia.com", "/", ".", "-", "gpu",
                    ".shared", ".sliced", ".sliced.units", ".sliced.memory-mib",
                    ".sliced.cores-percentage", ".sliced.memory-percentage", ".partitioned",
                    ".partitioned.units", ".partitioned.", "mig", "mig-", "1g.10gb", "x",
                    "device.gpustack.ai/", ".visibility", "nvidia", "cpu",
                ]),
                0..5,
            )
        ) {
            let name = parts.concat();
            proptest::prop_assert_eq!(classify(&name), classify_suffix_by_suffix(&name), "{}", name);
        }
    }

    #[test]
    fn a_per_profile_key_classifies_under_the_prefix_names_are_built_with() {
        for m in crate::labels::MANUFACTURERS {
            let Some(prefix) = partition_profile_prefix(m) else {
                continue;
            };
            let found = classify(&format!("{prefix}1g.10gb")).expect("classified");
            assert_eq!(found.manufacturer, m);
            assert_eq!(found.key, Key::PartitionedProfile("1g.10gb".into()));
            assert_ne!(
                classify(&prefix).map(|r| r.key),
                Some(Key::PartitionedProfile(String::new()))
            );
        }
    }

    #[test]
    fn classification_follows_the_four_steps() {
        assert_eq!(family_of("huawei.com/npu"), Family::Exclusive);
        assert_eq!(family_of("nvidia.com/gpu.sliced.units"), Family::Sliced);
        assert_eq!(
            family_of("nvidia.com/gpu.partitioned.mig-3g.40gb"),
            Family::Partitioned
        );
        assert_eq!(family_of("nvidia.com/gpu.partitioned.mig-"), Family::None);
        assert_eq!(family_of("nvidia.com/gpu.sliced.bogus"), Family::None);
        // knowns.go: a fixed suffix needs only a known base, not a partition kind.
        assert_eq!(family_of("amd.com/gpu.partitioned"), Family::Partitioned);
        assert_eq!(
            family_of("amd.com/gpu.partitioned.mig-3g.40gb"),
            Family::None
        );
        assert_eq!(
            family_of("device.gpustack.ai/nvidia.visibility"),
            Family::Visibility
        );
        assert_eq!(family_of("credits.gpustack.ai/nvidia"), Family::None);
        assert_eq!(family_of("cpu"), Family::None);
    }

    #[test]
    fn thead_profiles_round_trip_through_keys() {
        let key = profile_resource_name("thead", "4g48gb").unwrap();
        assert_eq!(key, "alibabacloud.com/ppu.partitioned.mig-4g.48gb");
        assert_eq!(
            vendor_partitioned_profile_of(&key).as_deref(),
            Some("4g48gb")
        );
        assert_eq!(partitioned_profile_of(&key).as_deref(), Some("4g.48gb"));
        assert_eq!(
            resource_name("nvidia", &Key::PartitionedProfile("1g.10gb+me".into())),
            None
        );
        assert_eq!(resource_name("amd", &Key::Partitioned), None);
    }

    #[test]
    fn hygon_partitions_under_the_documented_map_only() {
        assert_eq!(partition_kind("hygon"), Some("mig"));
        assert_eq!(
            partition_kind_in(PartitionKinds::KnownsIndexed, "hygon"),
            None
        );
        for m in ["nvidia", "thead"] {
            for kinds in [PartitionKinds::Documented, PartitionKinds::KnownsIndexed] {
                assert_eq!(partition_kind_in(kinds, m), Some("mig"), "{m} {kinds:?}");
            }
        }
        for m in [
            "amd",
            "ascend",
            "cambricon",
            "iluvatar",
            "metax",
            "mthreads",
            "example",
        ] {
            assert_eq!(partition_kind(m), None, "{m}");
        }
    }

    #[test]
    fn hygon_profiles_round_trip_through_keys() {
        // hygon-mig.md: the driver already writes `2g.15gb`; the key carries it verbatim.
        for profile in ["2g.15gb", "4g.31gb", "8g.63gb"] {
            let key = profile_resource_name("hygon", profile).unwrap();
            assert_eq!(key, format!("hygon.com/dcu.partitioned.mig-{profile}"));
            assert_eq!(
                classify(&key),
                Some(ResourceName {
                    manufacturer: "hygon".into(),
                    key: Key::PartitionedProfile(profile.into()),
                })
            );
            assert_eq!(partitioned_profile_of(&key).as_deref(), Some(profile));
            assert_eq!(
                vendor_partitioned_profile_of(&key).as_deref(),
                Some(profile)
            );
            assert_eq!(accelerator_base_of(&key), Some("hygon.com/dcu"));
            assert!(is_known_accelerator_resource(&key));
        }
        assert_eq!(
            accelerator_resource_name("hygon", Mode::Partitioned).as_deref(),
            Some("hygon.com/dcu.partitioned")
        );
        assert_eq!(
            partitioned_units_resource_name("hygon").as_deref(),
            Some("hygon.com/dcu.partitioned.units")
        );
        assert_eq!(family_of("hygon.com/dcu.partitioned.mig-"), Family::None);
        assert_eq!(
            family_of("hygon.com/dcu.partitioned.units"),
            Family::Partitioned
        );
        assert_eq!(normalize_profile_name(" 2G.15GB "), "2g.15gb");
    }

    #[test]
    fn mode_keys_follow_the_partition_kind() {
        assert_eq!(
            accelerator_resource_name("nvidia", Mode::Partitioned).as_deref(),
            Some("nvidia.com/gpu.partitioned")
        );
        assert_eq!(accelerator_resource_name("amd", Mode::Partitioned), None);
        assert_eq!(
            accelerator_resource_name("amd", Mode::Shared).as_deref(),
            Some("amd.com/gpu.shared")
        );
        assert_eq!(
            accelerator_resource_name("nvidia", Mode::Visibility).as_deref(),
            Some("device.gpustack.ai/nvidia.visibility")
        );
        assert_eq!(accelerator_resource_name("example", Mode::Exclusive), None);
        assert_eq!(partitioned_units_resource_name("amd"), None);
        assert_eq!(partitioned_profile_resource_name("nvidia", ""), None);
        assert_eq!(
            partitioned_profile_resource_name("nvidia", &"a".repeat(64)),
            None
        );
    }

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("nvidia.com/gpu.partitioned.mig-3g.40gb"));
        assert!(is_qualified_name("zone"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("Example.com/x"));
        assert!(!is_qualified_name("x.com/Bad Group"));
        assert!(!is_qualified_name("x.com/"));
        assert!(!is_qualified_name("/x"));
        assert!(!is_qualified_name(&format!("x.com/{}", "a".repeat(64))));
    }

    #[test]
    fn bases_of_claims() {
        assert_eq!(
            accelerator_base_of("nvidia.com/gpu.sliced.memory-mib"),
            Some("nvidia.com/gpu")
        );
        assert_eq!(
            accelerator_base_of("alibabacloud.com/ppu.partitioned.mig-4g.48gb"),
            Some("alibabacloud.com/ppu")
        );
        assert_eq!(
            accelerator_base_of("device.gpustack.ai/nvidia.visibility"),
            None
        );
        assert_eq!(accelerator_base_of("cpu"), None);
    }
}
