//! Node labels, derived keys and the flavors a node contributes (research/chain.md §2, §3,
//! §6.1–6.3, §17 rules 1–8; pkg/nodefeature/helper.go, pkg/device/helper.go,
//! pkg/kubemeta/label.go, node_flavor.go @187ec70).

use std::borrow::Borrow;

use crate::cluster::{Era, Node, Settings, TopologySource};
use crate::devices::{DeviceGroup, Devices};
use crate::labels::{
    self, accelerator_feature_key, concat_text, count_key, general_feature_key, int_text,
    is_known_manufacturer, same_optional_text, same_text, Labels, Text, ACCELERATABLE,
    ACCELERATABLE_PREFIX, ARCH, CPU_ANNOTATION_PREFIX, CPU_FAMILY, CPU_FAMILY_ANNOTATION, CPU_ID,
    CPU_MODEL_PREFIX, CPU_NAME_ANNOTATION, CPU_ONLY, CPU_VENDOR, CREDITS_PREFIX, HOSTNAME, MANAGED,
    OS, TOPOLOGY_PROFILE,
};
use crate::objects::NodeFlavor;
use arrayvec::ArrayString;

/// Longest Kubernetes label value.
const LABEL_VALUE_MAX: usize = 63;
/// The CPU manufacturer of a node whose vendor is unknown (`GeneralManufacturerGeneric`).
pub const GENERIC: &str = "generic";
/// Prefix of a topology profile and of a LocalQueue hash (`topologyProfilePrefix`).
pub const PROFILE_PREFIX: &str = "fnv64-";
/// Prefix of every LocalQueue name (chain.md §3.3).
pub const LOCAL_QUEUE_PREFIX: &str = "gpustack-fnv64-";
/// Profile of a node no TopologySource matches: FNV-1a-64 of `kubernetes.io/hostname`
/// (chain.md §2.4; checked against [`topology_profile`] in the tests).
pub const DEFAULT_TOPOLOGY_PROFILE: &str = "fnv64-87bf574bea2a4f23";

// ---------------------------------------------------------------------------------------------
// Sanitizing and normalizing names
// ---------------------------------------------------------------------------------------------

/// Whether `c` may separate words in a label value (`-`, `_`, `.`).
fn is_separator(c: char) -> bool {
    matches!(c, '-' | '_' | '.')
}

/// Drops one trailing separator, as both sanitizers do after their scan.
fn trim_one_trailing_separator(buf: &mut String) {
    if buf.ends_with(is_separator) {
        buf.pop();
    }
}

/// `kubemeta.SanitizeLabelValue`: ≤63 chars of `[A-Za-z0-9-_.]`, spaces→`-`, no leading,
/// trailing or doubled separators, case kept (chain.md §2.2; pkg/kubemeta/label.go @cc12796).
pub fn sanitize_label_value(v: &str) -> String {
    let mut buf = String::new();
    let mut count = 0usize;
    let mut prev: Option<char> = None;
    for raw in v.chars() {
        let c = if raw == ' ' { '-' } else { raw };
        if c.is_ascii_alphanumeric() {
            // kept as is
        } else if is_separator(c) {
            if count == 0 || prev.is_some_and(is_separator) {
                continue;
            }
        } else {
            continue;
        }
        buf.push(c);
        prev = Some(c);
        count += 1;
        if count >= LABEL_VALUE_MAX {
            break;
        }
    }
    trim_one_trailing_separator(&mut buf);
    buf
}

/// Removes the trademark markers `(R)`, `(r)`, `(TM)`, `(tm)` in one left-to-right pass
/// (a replaced marker never forms a new one; pkg/device/helper.go).
fn drop_trademark_markers(name: &str) -> String {
    const MARKERS: [&str; 4] = ["(R)", "(r)", "(TM)", "(tm)"];
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(m) = MARKERS.iter().find(|m| rest.starts_with(**m)) {
            rest = &rest[m.len()..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// One leading `Genuine ` or `<n>(st|nd|rd|th) Gen ` word run, if `s` starts with one.
fn leading_cruft_len(s: &str) -> Option<usize> {
    if s.starts_with("Genuine ") {
        return Some("Genuine ".len());
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &s[digits..];
    ["st Gen ", "nd Gen ", "rd Gen ", "th Gen "]
        .iter()
        .find(|ord| rest.starts_with(**ord))
        .map(|ord| digits + ord.len())
}

/// Drops every leading `Genuine ` / `<n>th Gen ` run.
fn drop_leading_cruft(mut s: &str) -> &str {
    while let Some(n) = leading_cruft_len(s) {
        s = &s[n..];
    }
    s
}

/// Drops a trailing ` <n>-Core` / ` <n>-Cores` (case-insensitive), if present.
fn drop_core_count_suffix(s: &str) -> &str {
    let lower = s.to_ascii_lowercase();
    let stem_len = if lower.ends_with("-cores") {
        s.len() - "-cores".len()
    } else if lower.ends_with("-core") {
        s.len() - "-core".len()
    } else {
        return s;
    };
    let stem = &s[..stem_len];
    let digits = stem.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return s;
    }
    let before = &stem[..stem.len() - digits];
    match before.strip_suffix(' ') {
        Some(kept) => kept,
        None => s,
    }
}

/// The CPU-name cruft stripping of `NormalizeName(…, stripCruft=true)` (chain.md §3.1 step 2).
fn strip_cpu_cruft(name: &str) -> String {
    let cut = name.split_once(" @ ").map_or(name, |(head, _)| head);
    let unmarked = drop_trademark_markers(cut);
    let trimmed = drop_leading_cruft(&unmarked).trim();
    let no_cpu = trimmed.strip_suffix(" CPU").unwrap_or(trimmed);
    let no_processor = no_cpu.strip_suffix(" Processor").unwrap_or(no_cpu);
    drop_core_count_suffix(no_processor).to_string()
}

/// `device.NormalizeName`: a lower-case `[a-z0-9-_.]` slug with the manufacturer prefix
/// dropped, at most `budget` chars (0 = unlimited); `strip_cruft` first removes CPU-name
/// cruft (chain.md §3.1 step 2, §3.2; pkg/device/helper.go).
pub fn normalize_name(name: &str, manufacturer: &str, budget: usize, strip_cruft: bool) -> String {
    let name = if strip_cruft {
        strip_cpu_cruft(name)
    } else {
        name.to_string()
    };
    let max = if budget == 0 { name.len() } else { budget };
    let prefix_lower = manufacturer.to_lowercase();
    let mut buf = String::new();
    let mut prev: Option<char> = None;
    for raw in name.chars() {
        let c = match raw {
            'A'..='Z' => raw.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' => raw,
            ' ' | '-' | '_' | '.' => {
                if buf.is_empty() || prev.is_some_and(is_separator) {
                    continue;
                }
                if raw == ' ' {
                    '-'
                } else {
                    raw
                }
            }
            _ => continue,
        };
        buf.push(c);
        prev = Some(c);
        // Prefix de-dup: not token-aware, fires whenever the slug so far spells the prefix.
        if buf.len() == manufacturer.len() && buf.to_lowercase() == prefix_lower {
            buf.clear();
            prev = None;
        }
        if buf.len() >= max {
            break;
        }
    }
    trim_one_trailing_separator(&mut buf);
    buf
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

/// A `feature.gpustack.ai/cpu-<attr>` annotation; an unresolved NFD template (`@…`) reads as
/// empty (`generalFeatureAnnotation`, pkg/nodefeature/helper.go).
pub fn cpu_annotation(annotations: &Labels, attr: &str) -> Text {
    resolved(labels::get_concat(
        annotations,
        &[CPU_ANNOTATION_PREFIX, attr],
    ))
    .cloned()
    .unwrap_or_default()
}

/// A `feature.gpustack.ai/cpu-*` annotation's value; none when absent or an unresolved `@…`.
fn resolved(value: Option<&Text>) -> Option<&Text> {
    value.filter(|v| !v.starts_with('@'))
}

/// gManu: the lower-cased NFD vendor id, `generic` when empty or `vendorunknown`
/// (chain.md §17 rule 1; pkg/nodefeature/helper.go).
pub fn cpu_manufacturer(labels: &Labels) -> String {
    GeneralKeyInputs {
        vendor: labels.get(CPU_VENDOR).map(Text::as_str),
        ..GeneralKeyInputs::default()
    }
    .manufacturer()
}

/// Everything gKey is computed from: the NFD vendor, family and id labels and the `cpu-name`
/// annotation. Two nodes with equal inputs have equal gKeys, so a caller deriving many nodes
/// may compute the key once per distinct input (chain.md §3.1).
#[derive(Clone, Copy, Debug, Default, Eq, Hash)]
pub struct GeneralKeyInputs<'a> {
    pub vendor: Option<&'a str>,
    pub family: Option<&'a str>,
    pub id: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// Field by field, texts by [`same_optional_text`] (a derivation compares every node's).
impl PartialEq for GeneralKeyInputs<'_> {
    fn eq(&self, other: &Self) -> bool {
        let GeneralKeyInputs {
            vendor,
            family,
            id,
            name,
        } = *self;
        [
            (vendor, other.vendor),
            (family, other.family),
            (id, other.id),
            (name, other.name),
        ]
        .into_iter()
        .all(|(a, b)| same_optional_text(a, b))
    }
}

impl<'a> GeneralKeyInputs<'a> {
    /// Reads the inputs of gKey from a node's labels and annotations.
    pub fn of(labels: &'a Labels, annotations: &'a Labels) -> Self {
        // NFD's three `cpu-model.` labels sit together: one search finds them.
        let [vendor, family, id] =
            labels.values_in_block(CPU_MODEL_PREFIX, [CPU_VENDOR, CPU_FAMILY, CPU_ID]);
        GeneralKeyInputs {
            vendor: vendor.map(Text::as_str),
            family: family.map(Text::as_str),
            id: id.map(Text::as_str),
            name: annotations.get(CPU_NAME_ANNOTATION).map(Text::as_str),
        }
    }

    /// gManu of these inputs (see [`cpu_manufacturer`]).
    fn manufacturer(&self) -> String {
        let manu = self.vendor.map(str::to_lowercase).unwrap_or_default();
        if manu.is_empty() || manu == "vendorunknown" {
            GENERIC.to_string()
        } else {
            manu
        }
    }

    /// The `cpu-name` annotation as [`cpu_annotation`] reads it (`@…` reads as empty).
    fn cpu_name(&self) -> &'a str {
        self.name.filter(|v| !v.starts_with('@')).unwrap_or("")
    }
}

/// The id part of gKey: the normalized cpu-name, else `<family>-<id>` from NFD, else empty
/// (chain.md §3.1 steps 2–3).
/// The longest sibling suffix a general key carries in a label name (`<key>.capacity`).
pub const GENERAL_KEY_LONGEST_SUFFIX: &str = ".capacity";

fn general_key_id(inputs: &GeneralKeyInputs<'_>, manu: &str) -> String {
    let name = inputs.cpu_name();
    if !name.is_empty() {
        // The key is a label name segment bare and with a `.count`/`.capacity` suffix, so the
        // budget leaves room for the longest suffix (helper_test.go
        // TestExtractGeneralNodeKey_BudgetLeavesRoomForSuffix: len(key + ".capacity") <= 63).
        let budget =
            LABEL_VALUE_MAX.saturating_sub(manu.len() + 1 + GENERAL_KEY_LONGEST_SUFFIX.len());
        return normalize_name(name, manu, budget, true);
    }
    match (inputs.family, inputs.id) {
        (Some(family), Some(id)) if !family.is_empty() && !id.is_empty() => {
            format!("{family}-{id}")
        }
        _ => String::new(),
    }
}

/// gKey = `manu[-id]` from its inputs (`ExtractGeneralNodeKey`, chain.md §3.1, §17 rule 2).
pub fn general_key_of(inputs: &GeneralKeyInputs<'_>) -> String {
    let manu = inputs.manufacturer();
    let id = general_key_id(inputs, &manu);
    if id.is_empty() {
        manu
    } else {
        [manu.as_str(), "-", &id].concat()
    }
}

/// gKey = `manu[-id]` (`ExtractGeneralNodeKey`, chain.md §3.1, §17 rule 2).
pub fn general_key(labels: &Labels, annotations: &Labels) -> String {
    general_key_of(&GeneralKeyInputs::of(labels, annotations))
}

/// The manufacturer part of a key: everything before its first `-`.
fn key_manufacturer(key: &str) -> &str {
    key.split_once('-').map_or(key, |(m, _)| m)
}

/// aKeys: `acceleratable.…/<mfr>-<id>` labels valued exactly `true` with a known manufacturer,
/// sorted (`ExtractAcceleratableNodeKeys`, chain.md §2.2, §17 rule 5).
pub fn accelerator_keys(labels: &Labels) -> Vec<String> {
    accelerator_keys_in(labels).map(str::to_string).collect()
}

/// [`accelerator_keys`] as they are in `labels`: the labels under the prefix are one run of
/// the sorted map, found by one search.
pub fn accelerator_keys_in(labels: &Labels) -> impl Iterator<Item = &str> {
    let from = labels
        .find_index(ACCELERATABLE_PREFIX)
        .unwrap_or_else(|at| at);
    labels.as_slice()[from..]
        .iter()
        .map_while(|(k, v)| Some((k.strip_prefix(ACCELERATABLE_PREFIX)?, v)))
        .filter(|(_, v)| v.as_str() == "true")
        .map(|(a_key, _)| a_key)
        .filter(|a_key| {
            a_key
                .split_once('-')
                .is_some_and(|(m, _)| is_known_manufacturer(m))
        })
}

/// The label keys the rules derive from one gKey: its `<featureKey>`, that key's `.count`, and
/// gManu's feature key. A derivation formats them once per gKey rather than once per node
/// ([`crate::node_rules`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GeneralLabelKeys {
    /// gKey itself.
    pub key: Text,
    pub feature: Text,
    pub count: Text,
    /// `general.…/<gManu>`, gManu being the key's manufacturer part.
    pub manufacturer_feature: Text,
}

impl GeneralLabelKeys {
    pub fn of(g_key: &str) -> Self {
        let feature = general_feature_key(g_key);
        GeneralLabelKeys {
            key: Text::new(g_key),
            count: count_key(&feature),
            manufacturer_feature: general_feature_key(key_manufacturer(g_key)),
            feature,
        }
    }
}

/// The label keys the rules derive from one aKey: its `<featureKey>` and the attribute keys a
/// device flavor reads (`.count`, `.product`, `.family`, `.memory`, `.cores`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AcceleratorLabelKeys {
    /// aKey itself.
    pub key: Text,
    pub feature: Text,
    pub count: Text,
    pub product: Text,
    pub family: Text,
    pub memory: Text,
    pub cores: Text,
}

impl AcceleratorLabelKeys {
    pub fn of(a_key: &str) -> Self {
        let feature = accelerator_feature_key(a_key);
        AcceleratorLabelKeys {
            key: Text::new(a_key),
            count: count_key(&feature),
            product: concat_text(&[&feature, ".product"]),
            family: concat_text(&[&feature, ".family"]),
            memory: concat_text(&[&feature, ".memory"]),
            cores: concat_text(&[&feature, ".cores"]),
            feature,
        }
    }
}

/// `ConstructGroupID` without the memory toggle: the group id of a product
/// (chain.md §3.2; pkg/device/helper.go).
pub fn group_id(product: &str, manufacturer: &str) -> String {
    let budget = LABEL_VALUE_MAX.saturating_sub(manufacturer.len() + 1);
    normalize_name(product, manufacturer, budget, false)
}

/// Whether a resource name is an accelerator's Kueue credits resource,
/// `credits.gpustack.ai/<known manufacturer>` (`IsAcceleratableCreditsResourceName`,
/// pkg/nodefeature/helper_test.go: an unknown manufacturer is not ours).
pub fn is_credits_resource_name(name: &str) -> bool {
    name.strip_prefix(CREDITS_PREFIX)
        .is_some_and(is_known_manufacturer)
}

// ---------------------------------------------------------------------------------------------
// Hashes: LocalQueue names and topology profiles
// ---------------------------------------------------------------------------------------------

/// FNV-1a 64-bit of `s` (`stringx.SumByFNV64a`, before its hex rendering).
fn fnv1a64(s: &str) -> u64 {
    fnv1a64_joined([s], "")
}

/// FNV-1a 64-bit of `parts` joined by `separator`, without building the joined string.
fn fnv1a64_joined<'s>(parts: impl IntoIterator<Item = &'s str>, separator: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let add = |h: u64, bytes: &[u8]| {
        bytes
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
    };
    let mut parts = parts.into_iter();
    let first = parts.next().map_or(OFFSET, |p| add(OFFSET, p.as_bytes()));
    parts.fold(first, |h, p| {
        add(add(h, separator.as_bytes()), p.as_bytes())
    })
}

/// `{:016x}` of `h`, written without the formatting machinery: every derivation names a
/// LocalQueue per pool and a profile per node by such a hash.
fn hex16(h: u64) -> ArrayString<16> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = ArrayString::new();
    for shift in (0..64).step_by(4).rev() {
        hex.push(char::from(DIGITS[((h >> shift) & 0xf) as usize]));
    }
    hex
}

/// FNV-1a 64-bit of `s` as 16 lowercase hex digits (`stringx.SumByFNV64a`).
pub fn fnv1a64_hex(s: &str) -> String {
    hex16(fnv1a64(s)).to_string()
}

/// `FormatLocalQueueName`: `gpustack-fnv64-<hex>` of the ClusterQueue name, always 31 chars
/// (chain.md §3.3).
pub fn local_queue_name(cluster_queue: &str) -> String {
    local_queue_text(cluster_queue).into()
}

/// [`local_queue_name`] as a label text, written on the stack (one allocation, where a
/// `String` copied into a text took two).
pub fn local_queue_text(cluster_queue: &str) -> Text {
    concat_text(&[LOCAL_QUEUE_PREFIX, &hex16(fnv1a64(cluster_queue))])
}

/// A topology profile: `fnv64-` + FNV-1a-64 of the level keys joined by NUL
/// (chain.md §2.4, §17 rule 6; node topology controller).
pub fn topology_profile(levels: &[&str]) -> String {
    profile_of_keys(levels.iter().copied()).into()
}

/// [`topology_profile`] of level keys however held, built in line (a profile fits a label
/// text in line: no allocation per node).
fn profile_of_keys<'s>(levels: impl IntoIterator<Item = &'s str>) -> Text {
    [PROFILE_PREFIX, &hex16(fnv1a64_joined(levels, "\0"))]
        .into_iter()
        .collect()
}

/// The profile of a node no TopologySource matches: hostname only (chain.md §2.4).
pub fn default_topology_profile() -> String {
    topology_profile(&[HOSTNAME])
}

// ---------------------------------------------------------------------------------------------
// Topology profile of a node (NodeTopologyReconciler, node_topology.go; devices.md §5)
// ---------------------------------------------------------------------------------------------

/// Level keys topograph writes, `fabric.topograph.run/tier-<N>` (`topographFabricPrefix`).
pub const TOPOGRAPH_TIER_PREFIX: &str = "fabric.topograph.run/tier-";

/// The tier number of a topograph level key, `None` for any other key (node_topology.go
/// `topographFabricTier`: the prefix, then a Go `strconv.Atoi`).
pub fn topograph_tier(level: &str) -> Option<i64> {
    level
        .strip_prefix(TOPOGRAPH_TIER_PREFIX)
        .and_then(parse_go_int)
}

/// The levels with every contiguous run of topograph tiers put coarsest first: a run whose
/// first tier number is below its last (tier-1, tier-2, …: finest first) is reversed; other
/// keys keep their place (node_topology.go `normalizeTopologyLevels`).
pub fn normalize_topology_levels(levels: &[String]) -> Vec<String> {
    let mut out = levels.to_vec();
    let mut start = 0;
    while start < out.len() {
        let Some(first) = topograph_tier(&out[start]) else {
            start += 1;
            continue;
        };
        let end = (start + 1..out.len())
            .find(|&i| topograph_tier(&out[i]).is_none())
            .unwrap_or(out.len());
        let last = topograph_tier(&out[end - 1]).unwrap_or(first);
        if first < last {
            out[start..end].reverse();
        }
        start = end;
    }
    out
}

/// The length of the longest prefix of `levels` the node carries a non-empty label for: the
/// first missing or empty level ends it (node_topology.go `topologyPrefix`).
pub fn populated_level_count(labels: &Labels, levels: &[String]) -> usize {
    levels
        .iter()
        .take_while(|level| labels.get(level.as_str()).is_some_and(|v| !v.is_empty()))
        .count()
}

/// Whether a TopologySource applies to a node: Ready, and its selector's labels are all on
/// the node (node_topology.go `resolveNodeTopologyLevels`; an empty selector selects all).
pub fn topology_source_selects(source: &TopologySource, labels: &Labels) -> bool {
    source.ready
        && source
            .node_selector
            .iter()
            .all(|(k, v)| labels.get(k).is_some_and(|nv| nv == v))
}

/// The node's topology levels: exactly one selecting source gives the populated prefix of its
/// normalised levels; none or several give nothing; `kubernetes.io/hostname` always ends the
/// list (node_topology.go `resolveNodeTopologyLevels`; devices.md §5).
pub fn node_topology_levels(labels: &Labels, sources: &[TopologySource]) -> Vec<String> {
    let normalized = only_selecting_source(labels, sources)
        .map(|i| normalize_topology_levels(&sources[i].levels))
        .unwrap_or_default();
    levels_ending_in_hostname(&normalized[..populated_level_count(labels, &normalized)])
}

/// Which source gives a node its levels: the only one that selects it, none when none or
/// several do (`resolveNodeTopologyLevels`).
pub fn only_selecting_source(labels: &Labels, sources: &[TopologySource]) -> Option<usize> {
    let mut selecting =
        (0..sources.len()).filter(|&i| topology_source_selects(&sources[i], labels));
    match (selecting.next(), selecting.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// A node's levels from the populated prefix of its source's levels: `kubernetes.io/hostname`
/// always ends them.
pub fn levels_ending_in_hostname(populated: &[String]) -> Vec<String> {
    let mut levels = Vec::with_capacity(populated.len() + 1);
    levels.extend_from_slice(populated);
    levels.push(HOSTNAME.to_string());
    levels
}

/// The profile of a level list: [`topology_profile`] over the keys in order.
pub fn profile_of_levels(levels: &[String]) -> Text {
    profile_of_keys(levels.iter().map(String::as_str))
}

// ---------------------------------------------------------------------------------------------
// Labels the Device Manager and the Worker publish
// ---------------------------------------------------------------------------------------------

/// `.memory` label: MiB at the largest binary unit it reaches, rounded to nearest
/// (`quantityx.FormatBinarySI`; chain.md §2.2: 24576→`24Gi`, 81559→`80Gi`).
pub fn memory_label(mib: u64) -> String {
    if mib == 0 {
        return "0".to_string();
    }
    // Units in MiB; bytes below 1 MiB never occur since the input is whole MiB.
    const UNITS: [(u128, &str); 5] = [
        (1 << 40, "Ei"),
        (1 << 30, "Pi"),
        (1 << 20, "Ti"),
        (1 << 10, "Gi"),
        (1, "Mi"),
    ];
    let v = u128::from(mib);
    UNITS.iter().find(|(scale, _)| v >= *scale).map_or_else(
        || format!("{mib}Mi"),
        |(scale, suffix)| format!("{}{suffix}", (v + scale / 2) / scale),
    )
}

/// Everything the Device Manager writes one device group's node labels from
/// (`applyAcceleratorLabels`, chain.md §2.2; pkg/nodefeature/helper.go): the group's fields
/// and its number of cards, not the cards themselves. Nodes whose groups are alike in these
/// share the labels, so a derivation writes them once ([`crate::node_rules`]).
#[derive(Clone, Copy, Debug, Eq, Hash)]
pub struct GroupLabelInputs<'a> {
    manufacturer: &'a str,
    id: &'a str,
    name: &'a str,
    memory_mib: u64,
    cores: u32,
    cards: usize,
    family: &'a str,
    compute_capability: &'a str,
    driver_version: &'a str,
    runtime_version: &'a str,
}

/// Field by field, texts by [`same_text`] (a derivation compares the groups of every node).
impl PartialEq for GroupLabelInputs<'_> {
    fn eq(&self, other: &Self) -> bool {
        let GroupLabelInputs {
            manufacturer,
            id,
            name,
            memory_mib,
            cores,
            cards,
            family,
            compute_capability,
            driver_version,
            runtime_version,
        } = *self;
        (memory_mib, cores, cards) == (other.memory_mib, other.cores, other.cards)
            && [
                (manufacturer, other.manufacturer),
                (id, other.id),
                (name, other.name),
                (family, other.family),
                (compute_capability, other.compute_capability),
                (driver_version, other.driver_version),
                (runtime_version, other.runtime_version),
            ]
            .into_iter()
            .all(|(a, b)| same_text(a, b))
    }
}

impl<'a> GroupLabelInputs<'a> {
    /// The inputs of `group`'s labels; none for a group without cards, which writes none.
    pub fn of(group: &'a DeviceGroup) -> Option<Self> {
        (!group.cards.is_empty()).then_some(GroupLabelInputs {
            manufacturer: &group.manufacturer,
            id: &group.id,
            name: &group.name,
            memory_mib: group.memory_mib,
            cores: group.cores,
            cards: group.cards.len(),
            family: &group.family,
            compute_capability: &group.compute_capability,
            driver_version: &group.driver_version,
            runtime_version: &group.runtime_version,
        })
    }
}

/// The labels of one device group with at least one card (`applyAcceleratorLabels`, chain.md
/// §2.2; pkg/nodefeature/helper.go). The aKey uses the group's `id` as given; every value is
/// sanitized as it is written.
pub fn group_labels(group: &GroupLabelInputs<'_>) -> Labels {
    let mut out = Vec::with_capacity(10);
    let mut put = |k: Text, v: &str| out.push((k, Text::from(sanitize_label_value(v))));
    let manu_key = accelerator_feature_key(group.manufacturer);
    put(Text::new_static(ACCELERATABLE), "true");
    if !group.driver_version.is_empty() {
        put(
            concat_text(&[&manu_key, ".driver-version"]),
            group.driver_version,
        );
    }
    if !group.runtime_version.is_empty() {
        put(
            concat_text(&[&manu_key, ".runtime-version"]),
            group.runtime_version,
        );
    }
    let key = concat_text(&[&manu_key, "-", group.id]);
    put(concat_text(&[&key, ".product"]), group.name);
    put(
        concat_text(&[&key, ".memory"]),
        &memory_label(group.memory_mib),
    );
    put(concat_text(&[&key, ".cores"]), &int_text(group.cores));
    put(count_key(&key), &int_text(group.cards));
    if !group.family.is_empty() {
        put(concat_text(&[&key, ".family"]), group.family);
    }
    if !group.compute_capability.is_empty() {
        put(concat_text(&[&key, ".comcap"]), group.compute_capability);
    }
    put(key, "true");
    put(manu_key, "true");
    out.into_iter().collect()
}

/// Writes [`group_labels`] of `group` over `out` (none for a group without cards).
fn put_group_labels(group: &DeviceGroup, out: &mut Labels) {
    if let Some(inputs) = GroupLabelInputs::of(group) {
        out.overlay(&group_labels(&inputs));
    }
}

/// `ConstructAcceleratableNodeLabels`: the Device Manager's node labels for every group with
/// a card (chain.md §2.2, §17 rule 4); a later group's label wins.
pub fn accelerator_node_labels(devices: &Devices) -> Labels {
    let mut out = Labels::new();
    for group in &devices.groups {
        put_group_labels(group, &mut out);
    }
    out
}

/// Whole cores of a CPU capacity in millicores, rounded up (`Quantity.Value()`).
fn cpu_cores(cpu_millis: u64) -> u64 {
    cpu_millis.div_ceil(1000)
}

/// `gpustack.ai/managed` the Worker publishes: an existing non-empty value wins, else `true`
/// unless management is manual (chain.md §2.3, §17 rule 3).
fn managed_value(labels: &Labels, manual: bool) -> Option<Text> {
    match labels.get(MANAGED) {
        Some(v) if !v.is_empty() => Some(v.clone()),
        _ if manual => None,
        _ => Some(Text::new_static("true")),
    }
}

/// `ConstructNodeCapacityLabels`: managed mark, gManu and gKey presence and the gKey `.count`
/// (cores rounded up, only when > 0) (chain.md §2.3, §17 rule 3).
pub fn worker_node_labels(
    labels: &Labels,
    annotations: &Labels,
    cpu_millis: u64,
    manual: bool,
) -> Labels {
    let g_key = general_key(labels, annotations);
    worker_node_labels_with_key(labels, &GeneralLabelKeys::of(&g_key), cpu_millis, manual)
}

/// [`worker_node_labels`] for a node whose gKey's label keys are already known.
pub fn worker_node_labels_with_key(
    labels: &Labels,
    g: &GeneralLabelKeys,
    cpu_millis: u64,
    manual: bool,
) -> Labels {
    let mut out = Labels::with_capacity(4);
    put_worker_node_labels(labels, g, cpu_millis, manual, &mut out);
    out
}

/// Writes [`worker_node_labels_with_key`] over `out`.
fn put_worker_node_labels(
    labels: &Labels,
    g: &GeneralLabelKeys,
    cpu_millis: u64,
    manual: bool,
    out: &mut Labels,
) {
    if let Some(v) = managed_value(labels, manual) {
        out.insert(Text::new_static(MANAGED), v);
    }
    out.insert(g.manufacturer_feature.clone(), Text::new_static("true"));
    let cores = cpu_cores(cpu_millis);
    if cores > 0 {
        out.insert(g.count.clone(), int_text(cores));
    }
    out.insert(g.feature.clone(), Text::new_static("true"));
}

/// Whether a node carries the umbrella `feature.gpustack.ai/acceleratable=true`.
pub fn node_is_accelerated(labels: &Labels) -> bool {
    labels.get(ACCELERATABLE).is_some_and(|v| v == "true")
}

/// The node's labels once NFD has merged the Device Manager's and the Worker's NodeFeatures
/// and the topology reconciler has stamped a profile (chain.md §1, §2.2–2.4).
///
/// Decision (chain.md §2.3, §18 Q1; docs/modules/devices/scheduling.md @0421f1c and the
/// node_queue_test fixtures): with `instance-type-mixed-on-node=false` a node without a
/// detected accelerator also carries `feature.gpustack.ai/cpu-only=true`, the label the E3 CPU
/// flavors pin; the writing code was not found.
pub fn effective_node_labels(node: &Node, settings: &Settings) -> Labels {
    let g_key = general_key(&node.labels, &node.annotations);
    effective_node_labels_with_key(node, settings, &g_key, &[])
}

/// About how many labels the Worker, the topology reconciler and the mixing rule add after the
/// Device Manager's (a capacity hint only).
const LATER_LABELS_HINT: usize = 8;

/// [`effective_node_labels`] for a node whose gKey (read from its own labels and annotations)
/// is already known, profiled against the cluster's TopologySources. The labels merged in
/// never touch gKey's inputs, so the gKey of the effective labels is the same key.
///
/// In E3 the topology reconciler writes the profile of [`node_topology_levels`] over whatever
/// value the node carried (node_topology.go `Reconcile`: it updates the label whenever it
/// differs). The sources select on the node's labels as the Worker left them.
pub fn effective_node_labels_with_key(
    node: &Node,
    settings: &Settings,
    g_key: &str,
    sources: &[TopologySource],
) -> Labels {
    let g = GeneralLabelKeys::of(g_key);
    effective_node_labels_by(node, settings, &g, put_group_labels, |labels| {
        profile_of_levels(&node_topology_levels(labels, sources))
    })
}

/// [`effective_node_labels_with_key`] with each device group's labels written by `put_group`
/// ([`put_group_labels`], or the same labels remembered from an alike group) and the profile
/// of the labels the Worker left given by `profile_of` (the profile of their
/// [`node_topology_levels`], or the same profile remembered from alike levels).
pub fn effective_node_labels_by<'a>(
    node: &'a Node,
    settings: &Settings,
    g: &GeneralLabelKeys,
    mut put_group: impl FnMut(&'a DeviceGroup, &mut Labels),
    profile_of: impl FnOnce(&Labels) -> Text,
) -> Labels {
    let mut out = node.labels.clone();
    if let Some(devices) = &node.devices {
        for group in &devices.groups {
            put_group(group, &mut out);
        }
        // the same DM NodeFeature carries the RDMA and fabric labels (rdma.go, fabric.go)
        out.overlay(&crate::rdma::network_node_labels(devices, &node.network));
    }
    out.reserve(LATER_LABELS_HINT);
    put_worker_node_labels(
        &node.labels,
        g,
        node.cpu_millis,
        settings.manual_node_management,
        &mut out,
    );
    if settings.era == Era::E3 {
        let profile = profile_of(&out);
        out.insert(Text::new_static(TOPOLOGY_PROFILE), profile);
    }
    if !settings.mixed_on_node && !node_is_accelerated(&out) {
        out.insert(Text::new_static(CPU_ONLY), Text::new_static("true"));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Flavors of one node
// ---------------------------------------------------------------------------------------------

/// A Go `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits, fits i64.
fn parse_go_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// A per-node `.count` label read as a positive count (`strconvx.Atoi`, > 0).
fn positive_count(labels: &Labels, key: &str) -> Option<u64> {
    positive_count_of(labels.get(key))
}

/// [`positive_count`] of a label value already read.
fn positive_count_of(value: Option<&Text>) -> Option<u64> {
    value
        .and_then(|v| parse_go_int(v))
        .and_then(|n| u64::try_from(n).ok())
        .filter(|n| *n > 0)
}

/// A label's value, empty when unset.
fn label_text<'l>(labels: &'l Labels, key: &str) -> &'l str {
    text_or_empty(labels.get(key))
}

/// A label value already read, an unset label reading as empty.
fn text_or_empty(value: Option<&Text>) -> &str {
    value.map_or("", Text::as_str)
}

/// The four labels of a node that its flavors, its eligibility and its Devices labels all read
/// (os, arch, topology profile, managed), read once per node; an unset label reads as empty,
/// which every reader treats as unset.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodePlatform<'l> {
    pub os: &'l str,
    pub arch: &'l str,
    /// The label as set, whatever the era.
    pub profile: &'l str,
    pub managed: &'l str,
}

impl<'l> NodePlatform<'l> {
    pub fn of(labels: &'l Labels) -> Self {
        NodePlatform {
            os: label_text(labels, OS),
            arch: label_text(labels, ARCH),
            profile: label_text(labels, TOPOLOGY_PROFILE),
            managed: label_text(labels, MANAGED),
        }
    }

    /// The node's topology profile as flavors read it: the label in E3, nothing in E2.
    fn flavor_profile(&self, settings: &Settings) -> &'l str {
        match settings.era {
            Era::E3 => self.profile,
            Era::E2 => "",
        }
    }

    /// [`node_is_eligible`] of the node these labels were read from.
    pub fn is_eligible(&self, settings: &Settings) -> bool {
        let profiled = match settings.era {
            Era::E3 => !self.profile.is_empty(),
            Era::E2 => true,
        };
        self.managed == "true" && profiled
    }
}

/// Flavor name: `gpustack--<gKey>[--<aKey>]-<os>-<arch>-<n>c|d[-<profile>]` (chain.md §6.2).
fn flavor_name(g_key: &str, a_key: &str, os: &str, arch: &str, count: u64, profile: &str) -> Text {
    let mut digits = itoa::Buffer::new();
    let count = digits.format(count);
    let (a_sep, kind) = if a_key.is_empty() {
        ("", "c")
    } else {
        ("--", "d")
    };
    let p_sep = if profile.is_empty() { "" } else { "-" };
    concat_text(&[
        "gpustack--",
        g_key,
        a_sep,
        a_key,
        "-",
        os,
        "-",
        arch,
        "-",
        count,
        kind,
        p_sep,
        profile,
    ])
}

/// `spec.nodeLabels` shared by both flavor kinds: managed, os, arch, paired CPU key, profile;
/// pairs for the flavor kind to add its own to before they are sorted into a map once.
fn base_node_labels(os: &str, arch: &str, g_key: &str, profile: &str) -> Vec<(Text, Text)> {
    let mut out = Vec::with_capacity(8);
    out.push((Text::new_static(MANAGED), Text::new_static("true")));
    out.push((Text::new_static(OS), Text::new(os)));
    out.push((Text::new_static(ARCH), Text::new(arch)));
    out.push((general_feature_key(g_key), Text::new_static("true")));
    if !profile.is_empty() {
        out.push((Text::new_static(TOPOLOGY_PROFILE), Text::new(profile)));
    }
    out
}

/// Whether the mixing rule drops this node's CPU flavor: mixing off and the node accelerated
/// (chain.md §6.1, §17 rule 8; node_flavor.go @187ec70).
pub fn mixing_drops_cpu_flavor(labels: &Labels, settings: &Settings) -> bool {
    !settings.mixed_on_node && node_is_accelerated(labels)
}

/// Everything one node flavor is built from besides the settings: its keys and the labels
/// (and, for the CPU flavor, the annotations) its rule reads (chain.md §6.1–6.3), borrowed from
/// them. Nodes alike in these contribute equal flavors, so a derivation builds each once
/// ([`crate::node_rules`]); [`flavor_of`] copies every input into the flavor, so the inputs of
/// a built flavor are read back from it ([`FlavorInputs::of_flavor`]).
// The equality below is the derived one's (same_text is `str` equality), so Hash agrees.
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Copy, Debug, Default, Eq, Hash)]
pub struct FlavorInputs<'l> {
    pub general_key: &'l str,
    /// Empty for the CPU flavor.
    pub accelerator_key: &'l str,
    /// The positive per-node count: cores or cards.
    pub count: u64,
    pub os: &'l str,
    pub arch: &'l str,
    pub profile: &'l str,
    pub product: &'l str,
    pub family: &'l str,
    /// Empty for the CPU flavor.
    pub memory: &'l str,
    /// Empty for the CPU flavor.
    pub cores: &'l str,
}

/// Field by field, texts by [`same_text`] (a derivation compares every node's flavors').
impl PartialEq for FlavorInputs<'_> {
    fn eq(&self, other: &Self) -> bool {
        let FlavorInputs {
            general_key,
            accelerator_key,
            count,
            os,
            arch,
            profile,
            product,
            family,
            memory,
            cores,
        } = *self;
        count == other.count
            && [
                (general_key, other.general_key),
                (accelerator_key, other.accelerator_key),
                (os, other.os),
                (arch, other.arch),
                (profile, other.profile),
                (product, other.product),
                (family, other.family),
                (memory, other.memory),
                (cores, other.cores),
            ]
            .into_iter()
            .all(|(a, b)| same_text(a, b))
    }
}

impl<'l> FlavorInputs<'l> {
    /// The inputs `flavor` was built from by [`flavor_of`].
    pub fn of_flavor(flavor: &'l NodeFlavor) -> Self {
        FlavorInputs {
            general_key: &flavor.general_key,
            accelerator_key: &flavor.accelerator_key,
            count: flavor.count,
            os: &flavor.os,
            arch: &flavor.arch,
            profile: &flavor.profile,
            product: &flavor.product,
            family: &flavor.family,
            memory: &flavor.memory,
            cores: &flavor.cores,
        }
    }
}

/// The inputs both flavor kinds share: the gKey and the node's os, arch and profile (the
/// counts and attributes left empty).
fn platform_inputs<'l>(
    platform: &NodePlatform<'l>,
    g: &'l GeneralLabelKeys,
    settings: &Settings,
) -> FlavorInputs<'l> {
    FlavorInputs {
        general_key: &g.key,
        os: platform.os,
        arch: platform.arch,
        profile: platform.flavor_profile(settings),
        ..FlavorInputs::default()
    }
}

/// The inputs of the node's CPU flavor, when its gKey `.count` is positive (chain.md §6.1–6.3).
fn cpu_flavor_inputs<'l>(
    labels: &Labels,
    annotations: &'l Labels,
    g: &GeneralLabelKeys,
    platform: FlavorInputs<'l>,
) -> Option<FlavorInputs<'l>> {
    let annotation = |key| resolved(annotations.get(key)).map_or("", Text::as_str);
    Some(FlavorInputs {
        count: positive_count(labels, &g.count)?,
        product: annotation(CPU_NAME_ANNOTATION),
        family: annotation(CPU_FAMILY_ANNOTATION),
        ..platform
    })
}

/// The inputs of the node's device flavor for one aKey, when its `.count` is positive
/// (chain.md §6.1–6.3).
fn device_flavor_inputs<'l>(
    labels: &'l Labels,
    a: &'l AcceleratorLabelKeys,
    platform: FlavorInputs<'l>,
) -> Option<FlavorInputs<'l>> {
    // The five attributes share the `<featureKey>` prefix: one search finds them all.
    let [count, product, family, memory, cores] = labels.values_in_block(
        &a.feature,
        [&a.count, &a.product, &a.family, &a.memory, &a.cores],
    );
    Some(FlavorInputs {
        accelerator_key: &a.key,
        count: positive_count_of(count)?,
        product: text_or_empty(product),
        family: text_or_empty(family),
        memory: text_or_empty(memory),
        cores: text_or_empty(cores),
        ..platform
    })
}

/// The flavor of `inputs`: a CPU flavor without an aKey, a device flavor with one
/// (`ExtractNodeFlavors`, chain.md §6.1–6.3).
pub fn flavor_of(inputs: &FlavorInputs, settings: &Settings) -> NodeFlavor {
    if inputs.accelerator_key.is_empty() {
        cpu_flavor_of(inputs, settings)
    } else {
        device_flavor_of(inputs)
    }
}

/// A CPU flavor: pins the gKey `.count` and, mixing off, the CPU-only mark (chain.md §6.2).
fn cpu_flavor_of(i: &FlavorInputs, settings: &Settings) -> NodeFlavor {
    let g_key = i.general_key;
    let mut node_labels = base_node_labels(i.os, i.arch, g_key, i.profile);
    node_labels.push((count_key(&general_feature_key(g_key)), int_text(i.count)));
    if !settings.mixed_on_node {
        // E3 pins the CPU-only mark; E2 (@ee282a6) pinned acceleratable=false instead.
        node_labels.push(match settings.era {
            Era::E3 => (Text::new_static(CPU_ONLY), Text::new_static("true")),
            Era::E2 => (Text::new_static(ACCELERATABLE), Text::new_static("false")),
        });
    }
    let node_labels = node_labels.into_iter().collect();
    NodeFlavor {
        name: flavor_name(g_key, "", i.os, i.arch, i.count, i.profile),
        manufacturer: Text::new(key_manufacturer(g_key)),
        general_key: g_key.into(),
        accelerator_key: Text::default(),
        os: i.os.into(),
        arch: i.arch.into(),
        count: i.count,
        acceleratable: false,
        product: i.product.into(),
        family: i.family.into(),
        memory: Text::default(),
        cores: Text::default(),
        profile: i.profile.into(),
        node_labels,
    }
}

/// A device flavor: pins the aKey's feature key and `.count` (chain.md §6.2).
fn device_flavor_of(i: &FlavorInputs) -> NodeFlavor {
    let (g_key, a_key) = (i.general_key, i.accelerator_key);
    let feature = accelerator_feature_key(a_key);
    let mut node_labels = base_node_labels(i.os, i.arch, g_key, i.profile);
    node_labels.push((count_key(&feature), int_text(i.count)));
    node_labels.push((feature, Text::new_static("true")));
    let node_labels = node_labels.into_iter().collect();
    NodeFlavor {
        name: flavor_name(g_key, a_key, i.os, i.arch, i.count, i.profile),
        general_key: g_key.into(),
        accelerator_key: a_key.into(),
        manufacturer: Text::new(key_manufacturer(a_key)),
        os: i.os.into(),
        arch: i.arch.into(),
        count: i.count,
        acceleratable: true,
        product: i.product.into(),
        family: i.family.into(),
        memory: i.memory.into(),
        cores: i.cores.into(),
        profile: i.profile.into(),
        node_labels,
    }
}

/// `ExtractNodeFlavors` plus the reconciler's profile suffix and mixing rule: the CPU flavor
/// first, then one device flavor per aKey, sorted (chain.md §6.1–6.3, §17 rule 8). Eligibility
/// (managed, profiled) is [`node_is_eligible`]'s decision, not this function's.
pub fn node_flavors(labels: &Labels, annotations: &Labels, settings: &Settings) -> Vec<NodeFlavor> {
    let g_key = general_key(labels, annotations);
    node_flavors_with_keys(
        labels,
        annotations,
        settings,
        &g_key,
        &accelerator_keys(labels),
    )
}

/// [`node_flavors`] for a node whose gKey and aKeys (read from `labels`) are already known.
pub fn node_flavors_with_keys(
    labels: &Labels,
    annotations: &Labels,
    settings: &Settings,
    g_key: &str,
    a_keys: &[String],
) -> Vec<NodeFlavor> {
    let g = GeneralLabelKeys::of(g_key);
    let a_keys: Vec<AcceleratorLabelKeys> =
        a_keys.iter().map(|a| AcceleratorLabelKeys::of(a)).collect();
    let platform = NodePlatform::of(labels);
    node_flavor_inputs(labels, &platform, annotations, settings, &g, &a_keys)
        .iter()
        .map(|inputs| flavor_of(inputs, settings))
        .collect()
}

/// The inputs of [`node_flavors`]' flavors, in their order, for a node whose label keys are
/// known: the CPU flavor's unless the mixing rule drops it, then one per aKey, each only with a
/// positive `.count` (`ExtractNodeFlavors`, chain.md §6.1–6.3, §17 rule 8).
pub fn node_flavor_inputs<'l, A: Borrow<AcceleratorLabelKeys>>(
    labels: &'l Labels,
    platform: &NodePlatform<'l>,
    annotations: &'l Labels,
    settings: &Settings,
    g: &'l GeneralLabelKeys,
    a_keys: &'l [A],
) -> Vec<FlavorInputs<'l>> {
    let platform = platform_inputs(platform, g, settings);
    let mut inputs = Vec::with_capacity(1 + a_keys.len());
    if !mixing_drops_cpu_flavor(labels, settings) {
        inputs.extend(cpu_flavor_inputs(labels, annotations, g, platform));
    }
    inputs.extend(
        a_keys
            .iter()
            .filter_map(|a| device_flavor_inputs(labels, a.borrow(), platform)),
    );
    inputs
}

/// A node contributes flavors iff it is managed (`true`) and, in E3, carries a topology profile;
/// a deleting node still counts (chain.md §6.1, §17 rule 7; node_flavor.go @187ec70).
pub fn node_is_eligible(labels: &Labels, settings: &Settings) -> bool {
    NodePlatform::of(labels).is_eligible(settings)
}

/// `parseNodeFlavorCount`: the per-node count of a flavor name, the last `-<n>c|d` segment
/// before any `-fnv64-…` profile tail; 0 if none (instance_type.go, newest revision).
pub fn parse_flavor_count(name: &str) -> u64 {
    // The last `-<PROFILE_PREFIX>` and what follows it is the profile.
    let base = name
        .rmatch_indices(PROFILE_PREFIX)
        .find(|(i, _)| name[..*i].ends_with('-'))
        .map_or(name, |(i, _)| &name[..i - 1]);
    base.rsplit('-')
        .filter(|seg| seg.len() >= 2)
        .find_map(|seg| {
            let digits = seg.strip_suffix(['c', 'd'])?;
            parse_go_int(digits)
        })
        .map_or(0, |n| u64::try_from(n).unwrap_or(0))
}

// ---------------------------------------------------------------------------------------------
// CPU detail (the `cpuDetail` note)
// ---------------------------------------------------------------------------------------------

/// A node's raw CPU information from its `feature.gpustack.ai/cpu-*` annotations
/// (`ExtractGeneralDetail`, pkg/nodefeature/helper.go); unresolved `@…` values read as empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuDetail {
    pub manufacturer: Text,
    pub product: Text,
    pub family: Text,
    pub physical_cores: Text,
    pub threads_per_physical_core: Text,
    pub logical_cores: Text,
    pub stepping: Text,
    pub clock_speed: Text,
    pub max_clock_speed: Text,
    pub cache_line: Text,
    pub cache_l1i: Text,
    pub cache_l1d: Text,
    pub cache_l2: Text,
    pub cache_l3: Text,
}

/// Reads a node's CPU detail (`ExtractGeneralDetail`; chain.md §2.1).
pub fn cpu_detail(labels: &Labels, annotations: &Labels) -> CpuDetail {
    let a = |attr: &str| cpu_annotation(annotations, attr);
    CpuDetail {
        manufacturer: cpu_manufacturer(labels).into(),
        product: a("name"),
        family: a("family"),
        physical_cores: a("physical-cores"),
        threads_per_physical_core: a("threads-per-core"),
        logical_cores: a("logical-cores"),
        stepping: a("stepping"),
        clock_speed: a("hz"),
        max_clock_speed: a("boost-freq"),
        cache_line: a("cache-line"),
        cache_l1i: a("cache-l1i"),
        cache_l1d: a("cache-l1d"),
        cache_l2: a("cache-l2"),
        cache_l3: a("cache-l3"),
    }
}

/// Appends `s` as a JSON string literal.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                out.push_str("\\u00");
                for nibble in [u32::from(c) >> 4, u32::from(c) & 0xf] {
                    out.push(char::from_digit(nibble, 16).unwrap_or('0'));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `key` as a JSON object member's name, after a comma unless it is the object's
/// first member.
fn push_json_key(out: &mut String, key: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    push_json_string(out, key);
    out.push(':');
}

/// Appends the non-empty `(key, value)` string fields as JSON object members, in order (Go
/// `omitempty`).
fn push_json_fields(out: &mut String, fields: &[(&str, &str)]) {
    for (k, v) in fields.iter().filter(|(_, v)| !v.is_empty()) {
        push_json_key(out, k);
        push_json_string(out, v);
    }
}

impl CpuDetail {
    /// The `cpuDetail` note: `InstanceTypeCPU` JSON, preceded by the CPU's manufacturer,
    /// product and family on an accelerated flavor (`cpuDetailNote`, node_flavor.go @187ec70;
    /// field names from api/worker/v1alpha1/instance_type.go). Empty fields are omitted; the
    /// `cache` object is always present, as Go's `omitempty` keeps an empty struct.
    pub fn note_json(&self, acceleratable: bool) -> String {
        let mut out = String::with_capacity(256);
        out.push('{');
        if acceleratable {
            push_json_fields(
                &mut out,
                &[
                    ("manufacturer", &self.manufacturer),
                    ("product", &self.product),
                    ("family", &self.family),
                ],
            );
        }
        push_json_fields(
            &mut out,
            &[
                ("physicalCores", &self.physical_cores),
                ("threadsPerPhysicalCore", &self.threads_per_physical_core),
                ("logicalCores", &self.logical_cores),
                ("stepping", &self.stepping),
                ("clockSpeed", &self.clock_speed),
                ("maxClockSpeed", &self.max_clock_speed),
                ("cacheLine", &self.cache_line),
            ],
        );
        push_json_key(&mut out, "cache");
        out.push('{');
        push_json_fields(
            &mut out,
            &[
                ("l1i", &self.cache_l1i),
                ("l1d", &self.cache_l1d),
                ("l2", &self.cache_l2),
                ("l3", &self.cache_l3),
            ],
        );
        out.push_str("}}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::Card;
    use crate::labels::CPU_NAME_ANNOTATION;

    use crate::labels::from_pairs as labels;

    #[test]
    fn a_long_cpu_name_leaves_room_for_the_capacity_suffix() {
        let l = labels(&[("feature.node.kubernetes.io/cpu-model.vendor_id", "AMD")]);
        let a = labels(&[(
            CPU_NAME_ANNOTATION,
            &"epyc-9654-96-core-processor-".repeat(4),
        )]);
        let key = general_key(&l, &a);
        assert!(key.starts_with("amd-"), "{key}");
        assert!(key.len() + ".capacity".len() <= 63, "{key} ({})", key.len());
        // Truncated, not emptied: the budget is filled up to the suffix room.
        assert!(key.len() > 40, "{key}");
    }

    fn card(id: &str) -> Card {
        Card {
            id: id.to_string(),
            ..Card::default()
        }
    }

    fn group(mfr: &str, product: &str, mib: u64, cards: usize) -> DeviceGroup {
        DeviceGroup {
            manufacturer: mfr.to_string(),
            id: group_id(product, mfr),
            name: product.to_string(),
            memory_mib: mib,
            cards: (0..cards).map(|i| card(&format!("GPU-{i}"))).collect(),
            ..DeviceGroup::default()
        }
    }

    fn cpu_node(vendor: &str, cpu_name: &str) -> (Labels, Labels) {
        (
            labels(&[(CPU_VENDOR, vendor), (OS, "linux"), (ARCH, "amd64")]),
            labels(&[(CPU_NAME_ANNOTATION, cpu_name)]),
        )
    }

    #[test]
    fn sanitize_label_value_follows_kubemeta() {
        assert_eq!(sanitize_label_value("Tesla T4"), "Tesla-T4");
        assert_eq!(sanitize_label_value("  --a  b__c.. "), "a-b_c");
        assert_eq!(sanitize_label_value("NVIDIA (A10G)"), "NVIDIA-A10G");
        assert_eq!(sanitize_label_value(""), "");
        assert_eq!(sanitize_label_value("---"), "");
        let long = "x".repeat(80);
        assert_eq!(sanitize_label_value(&long).len(), 63);
        // A separator landing on char 63 is trimmed.
        let edge = format!("{}-tail", "y".repeat(62));
        assert_eq!(sanitize_label_value(&edge), "y".repeat(62));
    }

    #[test]
    fn general_keys_of_chain_3_1() {
        let cases = [
            ("AMD", "AMD EPYC 7R13 Processor", "amd-epyc-7r13"),
            (
                "Intel",
                "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz",
                "intel-xeon-platinum-8259cl",
            ),
            ("AMD", "AMD EPYC 7763 64-Core Processor", "amd-epyc-7763"),
            (
                "Intel",
                "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz",
                "intel-core-i7-1165g7",
            ),
            ("VendorUnknown", "Kunpeng 920", "generic-kunpeng-920"),
            ("AMD", "(TM)", "amd"),
            ("AMD", "AMD Ryzen 9 5950X 16-Cores", "amd-ryzen-9-5950x"),
        ];
        for (vendor, name, want) in cases {
            let (l, a) = cpu_node(vendor, name);
            assert_eq!(general_key(&l, &a), want, "{name}");
        }
    }

    #[test]
    fn general_key_falls_back_to_nfd_then_manufacturer() {
        let nfd = labels(&[(CPU_VENDOR, "AMD"), (CPU_FAMILY, "25"), (CPU_ID, "1")]);
        assert_eq!(general_key(&nfd, &Labels::new()), "amd-25-1");
        let unresolved = labels(&[(CPU_NAME_ANNOTATION, "@cpu.model.name")]);
        assert_eq!(general_key(&nfd, &unresolved), "amd-25-1");
        let half = labels(&[(CPU_VENDOR, "AMD"), (CPU_FAMILY, "25")]);
        assert_eq!(general_key(&half, &Labels::new()), "amd");
        assert_eq!(general_key(&Labels::new(), &Labels::new()), "generic");
    }

    #[test]
    fn general_key_is_truncated_to_the_label_budget() {
        let long = "epyc-9654-96-core-processor-".repeat(4);
        let (l, a) = cpu_node("AMD", &long);
        let key = general_key(&l, &a);
        assert!(key.starts_with("amd-epyc-9654"), "{key}");
        assert!(key.len() <= 63, "{key}");
        assert!(!key.ends_with('-'), "{key}");
    }

    #[test]
    fn accelerator_keys_of_chain_3_2() {
        let cases = [
            ("nvidia", "NVIDIA A10G", "nvidia-a10g"),
            ("nvidia", "Tesla T4", "nvidia-tesla-t4"),
            ("nvidia", "NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
            ("nvidia", "NVIDIA A100-SXM4-40GB", "nvidia-a100-sxm4-40gb"),
        ];
        for (mfr, product, want) in cases {
            assert_eq!(format!("{mfr}-{}", group_id(product, mfr)), want);
        }
    }

    #[test]
    fn accelerator_keys_need_true_and_a_known_manufacturer() {
        let l = labels(&[
            ("acceleratable.feature.gpustack.ai/nvidia", "true"),
            ("acceleratable.feature.gpustack.ai/nvidia-tesla-t4", "true"),
            (
                "acceleratable.feature.gpustack.ai/nvidia-tesla-t4.count",
                "4",
            ),
            ("acceleratable.feature.gpustack.ai/amd-mi300x", "true"),
            ("acceleratable.feature.gpustack.ai/acme-x1", "true"),
            ("acceleratable.feature.gpustack.ai/nvidia-a10g", "false"),
            ("feature.gpustack.ai/nvidia-l4", "true"),
        ]);
        assert_eq!(accelerator_keys(&l), vec!["amd-mi300x", "nvidia-tesla-t4"]);
    }

    #[test]
    fn memory_labels_round_at_the_largest_unit() {
        assert_eq!(memory_label(24576), "24Gi");
        assert_eq!(memory_label(15360), "15Gi");
        assert_eq!(memory_label(16384), "16Gi");
        assert_eq!(memory_label(81559), "80Gi");
        assert_eq!(memory_label(81920), "80Gi");
        assert_eq!(memory_label(196608), "192Gi");
        assert_eq!(memory_label(1536), "2Gi");
        assert_eq!(memory_label(512), "512Mi");
        assert_eq!(memory_label(1 << 20), "1Ti");
        assert_eq!(memory_label(0), "0");
        assert_eq!(memory_label(u64::MAX), "16777216Ei");
    }

    #[test]
    fn accelerator_node_labels_skip_cardless_groups() {
        let devices = Devices {
            groups: vec![
                group("nvidia", "Tesla-T4", 15360, 1),
                group("nvidia", "Skipped", 0, 0),
                group("amd", "MI300X", 196608, 2),
            ],
        };
        let got = accelerator_node_labels(&devices);
        let p = ACCELERATABLE_PREFIX;
        let want = labels(&[
            (ACCELERATABLE, "true"),
            (&format!("{p}nvidia"), "true"),
            (&format!("{p}nvidia-tesla-t4"), "true"),
            (&format!("{p}nvidia-tesla-t4.product"), "Tesla-T4"),
            (&format!("{p}nvidia-tesla-t4.memory"), "15Gi"),
            (&format!("{p}nvidia-tesla-t4.cores"), "0"),
            (&format!("{p}nvidia-tesla-t4.count"), "1"),
            (&format!("{p}amd"), "true"),
            (&format!("{p}amd-mi300x"), "true"),
            (&format!("{p}amd-mi300x.product"), "MI300X"),
            (&format!("{p}amd-mi300x.memory"), "192Gi"),
            (&format!("{p}amd-mi300x.cores"), "0"),
            (&format!("{p}amd-mi300x.count"), "2"),
        ]);
        assert_eq!(got, want);
        assert!(accelerator_node_labels(&Devices::default()).is_empty());
    }

    #[test]
    fn worker_labels_echo_the_admin_managed_value() {
        let none = Labels::new();
        let w = worker_node_labels(&none, &none, 1500, false);
        assert_eq!(w.get(MANAGED).map(Text::as_str), Some("true"));
        assert_eq!(
            w.get("general.feature.gpustack.ai/generic.count")
                .map(Text::as_str),
            Some("2"),
            "1500m rounds up to 2 cores"
        );
        assert!(!worker_node_labels(&none, &none, 0, true).contains_key(MANAGED));
        let off = labels(&[(MANAGED, "false")]);
        assert_eq!(
            worker_node_labels(&off, &none, 0, false)
                .get(MANAGED)
                .map(Text::as_str),
            Some("false")
        );
        assert!(!worker_node_labels(&none, &none, 0, false)
            .keys()
            .any(|k| k.ends_with(".count")));
    }

    #[test]
    fn local_queue_names_of_chain_3_3() {
        let cases = [
            ("gpustack--generic-linux-amd64", "3b93966fd73eb9ec"),
            ("gpustack--nvidia-a10g-linux-amd64", "c4680bb149644f1c"),
            ("gpustack--nvidia-tesla-t4-linux-amd64", "6b371caa2da0b799"),
            (
                "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64",
                "029fd9550e0c70bd",
            ),
        ];
        for (cq, hex) in cases {
            let lq = local_queue_name(cq);
            assert_eq!(lq, format!("gpustack-fnv64-{hex}"));
            assert_eq!(lq.len(), 31);
        }
    }

    #[test]
    fn hashes_are_written_as_padded_lowercase_hex() {
        for h in [
            0,
            1,
            0xf,
            0x10,
            0xdead_beef,
            0x0123_4567_89ab_cdef,
            u64::MAX,
        ] {
            assert_eq!(hex16(h).as_str(), format!("{h:016x}"));
        }
    }

    #[test]
    fn default_profile_is_the_hostname_hash() {
        assert_eq!(topology_profile(&[HOSTNAME]), DEFAULT_TOPOLOGY_PROFILE);
        assert_eq!(default_topology_profile(), "fnv64-87bf574bea2a4f23");
        assert_ne!(
            topology_profile(&["topology.kubernetes.io/zone", HOSTNAME]),
            DEFAULT_TOPOLOGY_PROFILE
        );
    }

    #[test]
    fn credits_names_need_a_known_manufacturer() {
        assert!(is_credits_resource_name("credits.gpustack.ai/nvidia"));
        assert!(is_credits_resource_name("credits.gpustack.ai/thead"));
        assert!(!is_credits_resource_name("credits.gpustack.ai/acme"));
        assert!(!is_credits_resource_name("credits.gpustack.ai/"));
        assert!(!is_credits_resource_name("cpu"));
        assert!(!is_credits_resource_name("credits"));
    }

    #[test]
    fn flavor_counts_skip_profile_tails() {
        assert_eq!(parse_flavor_count("gpustack--generic-linux-amd64-16c"), 16);
        assert_eq!(
            parse_flavor_count("gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d"),
            1
        );
        assert_eq!(
            parse_flavor_count("gpustack--generic-linux-amd64-4c-fnv64-123456789012345c"),
            4
        );
        assert_eq!(
            parse_flavor_count("gpustack-generic-linux-amd64-2c-p-hash"),
            2
        );
        assert_eq!(parse_flavor_count("gpustack--generic-linux-amd64"), 0);
        assert_eq!(parse_flavor_count("garbage"), 0);
        assert_eq!(parse_flavor_count(""), 0);
    }

    /// The walkthrough cluster of chain.md §15.
    fn walkthrough() -> Vec<Node> {
        crate::examples::walkthrough().nodes
    }

    #[test]
    fn walkthrough_flavor_names_e2_and_e3() {
        let e2 = Settings {
            era: Era::E2,
            ..Settings::default()
        };
        let mut names = Vec::new();
        for node in walkthrough() {
            let eff = effective_node_labels(&node, &e2);
            assert!(node_is_eligible(&eff, &e2));
            names.extend(
                node_flavors(&eff, &node.annotations, &e2)
                    .into_iter()
                    .map(|f| f.name),
            );
        }
        names.sort();
        assert_eq!(names, crate::examples::WALKTHROUGH_FLAVORS.to_vec());
        let e3 = Settings::default();
        let node = &walkthrough()[1];
        let eff = effective_node_labels(node, &e3);
        let flavors = node_flavors(&eff, &node.annotations, &e3);
        let got: Vec<_> = flavors.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            got,
            vec![
                "gpustack--amd-epyc-7r32-linux-amd64-4c-fnv64-87bf574bea2a4f23",
                "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d-fnv64-87bf574bea2a4f23",
            ]
        );
        let device = &flavors[1];
        assert_eq!(device.product, "NVIDIA-A10G");
        assert_eq!(device.memory, "24Gi");
        assert_eq!(device.manufacturer, "nvidia");
        assert_eq!(
            device.node_labels.get(TOPOLOGY_PROFILE).map(Text::as_str),
            Some(DEFAULT_TOPOLOGY_PROFILE)
        );
        assert_eq!(flavors[0].product, "AMD EPYC 7R32");
        assert_eq!(flavors[0].manufacturer, "amd");
    }

    #[test]
    fn mixing_off_drops_accelerated_cpu_flavors_and_pins_cpu_only() {
        let s = Settings {
            mixed_on_node: false,
            ..Settings::default()
        };
        let nodes = walkthrough();
        let gpu = &nodes[1];
        let eff = effective_node_labels(gpu, &s);
        let flavors = node_flavors(&eff, &gpu.annotations, &s);
        assert_eq!(flavors.len(), 1);
        assert!(flavors[0].acceleratable);
        assert!(!eff.contains_key(CPU_ONLY));

        let cpu = &nodes[0];
        let eff = effective_node_labels(cpu, &s);
        assert_eq!(eff.get(CPU_ONLY).map(Text::as_str), Some("true"));
        let flavors = node_flavors(&eff, &cpu.annotations, &s);
        assert_eq!(flavors.len(), 1);
        assert_eq!(
            flavors[0].node_labels.get(CPU_ONLY).map(Text::as_str),
            Some("true")
        );
    }

    #[test]
    fn eligibility_needs_managed_and_an_e3_profile() {
        let e3 = Settings::default();
        let e2 = Settings {
            era: Era::E2,
            ..Settings::default()
        };
        let managed = labels(&[(MANAGED, "true")]);
        assert!(!node_is_eligible(&managed, &e3));
        assert!(node_is_eligible(&managed, &e2));
        let profiled = labels(&[
            (MANAGED, "true"),
            (TOPOLOGY_PROFILE, DEFAULT_TOPOLOGY_PROFILE),
        ]);
        assert!(node_is_eligible(&profiled, &e3));
        let off = labels(&[
            (MANAGED, "false"),
            (TOPOLOGY_PROFILE, DEFAULT_TOPOLOGY_PROFILE),
        ]);
        assert!(!node_is_eligible(&off, &e3));
    }

    /// An admin's `managed` value stands; the profile is the topology reconciler's, which
    /// rewrites a stale value (node_topology.go `Reconcile`). This test used to pin a kept
    /// stale profile, which the operator does not do.
    #[test]
    fn effective_labels_keep_admin_values_but_not_a_stale_profile() {
        let mut node = walkthrough().remove(0);
        node.labels.insert(MANAGED.into(), "false".into());
        node.labels
            .insert(TOPOLOGY_PROFILE.into(), "fnv64-0000000000000001".into());
        let eff = effective_node_labels(&node, &Settings::default());
        assert_eq!(eff.get(MANAGED).map(Text::as_str), Some("false"));
        assert_eq!(
            eff.get(TOPOLOGY_PROFILE).map(Text::as_str),
            Some(DEFAULT_TOPOLOGY_PROFILE)
        );
        let mut profiled = eff.clone();
        profiled.insert(TOPOLOGY_PROFILE.into(), "fnv64-0000000000000001".into());
        assert!(
            node_flavors(&profiled, &node.annotations, &Settings::default())
                .iter()
                .all(|f| f.name.ends_with("-fnv64-0000000000000001"))
        );
    }

    const ZONE: &str = "topology.kubernetes.io/zone";
    const REGION: &str = "topology.kubernetes.io/region";

    fn source(
        name: &str,
        levels: &[&str],
        selector: &[(&str, &str)],
        ready: bool,
    ) -> TopologySource {
        TopologySource {
            name: name.into(),
            levels: levels.iter().map(|l| l.to_string()).collect(),
            node_selector: labels(selector),
            ready,
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The three profiles devices.md §5 documents (hash checked against LocalQueue names).
    #[test]
    fn the_three_documented_profiles() {
        assert_eq!(
            profile_of_levels(&strings(&[HOSTNAME])),
            "fnv64-87bf574bea2a4f23"
        );
        assert_eq!(
            profile_of_levels(&strings(&[ZONE, HOSTNAME])),
            "fnv64-f7b1861ac0399767"
        );
        assert_eq!(
            profile_of_levels(&strings(&[REGION, ZONE, HOSTNAME])),
            "fnv64-570aeab478df5111"
        );
    }

    #[test]
    fn zero_one_or_two_selecting_sources() {
        let node = labels(&[("pool", "a"), (REGION, "r1"), (ZONE, "z1")]);
        let a = source("a", &[REGION, ZONE], &[("pool", "a")], true);
        let other = source("b", &[ZONE], &[("pool", "b")], true);
        let everyone = source("c", &[ZONE], &[], true);
        let not_ready = source("d", &[ZONE], &[], false);
        assert_eq!(node_topology_levels(&node, &[]), strings(&[HOSTNAME]));
        assert_eq!(
            node_topology_levels(&node, &[other.clone(), not_ready.clone()]),
            strings(&[HOSTNAME])
        );
        assert_eq!(
            node_topology_levels(&node, &[a.clone(), other, not_ready]),
            strings(&[REGION, ZONE, HOSTNAME])
        );
        // two selecting sources: hostname only
        assert_eq!(
            node_topology_levels(&node, &[a, everyone]),
            strings(&[HOSTNAME])
        );
    }

    #[test]
    fn the_prefix_stops_at_the_first_unpopulated_level() {
        let src = source("s", &[REGION, ZONE, "rack"], &[], true);
        let no_region = labels(&[(ZONE, "z1"), ("rack", "r")]);
        assert_eq!(
            node_topology_levels(&no_region, std::slice::from_ref(&src)),
            strings(&[HOSTNAME])
        );
        let empty_zone = labels(&[(REGION, "r1"), (ZONE, ""), ("rack", "r")]);
        assert_eq!(
            node_topology_levels(&empty_zone, std::slice::from_ref(&src)),
            strings(&[REGION, HOSTNAME])
        );
        let all = labels(&[(REGION, "r1"), (ZONE, "z1"), ("rack", "r")]);
        assert_eq!(
            node_topology_levels(&all, &[src]),
            strings(&[REGION, ZONE, "rack", HOSTNAME])
        );
    }

    #[test]
    fn topograph_tier_runs_are_put_coarsest_first() {
        let t = |n: u32| format!("{TOPOGRAPH_TIER_PREFIX}{n}");
        let levels = vec![t(1), t(2), t(3), ZONE.to_string(), t(1), t(2)];
        assert_eq!(
            normalize_topology_levels(&levels),
            vec![t(3), t(2), t(1), ZONE.to_string(), t(2), t(1)]
        );
        // already coarsest first, a single tier, and a non-numeric tier stay as they are
        let kept = vec![t(3), t(1), format!("{TOPOGRAPH_TIER_PREFIX}x"), t(2)];
        assert_eq!(normalize_topology_levels(&kept), kept);
        let node: Labels = [t(1), t(2)]
            .into_iter()
            .map(|k| (k.into(), Text::new_static("v")))
            .collect();
        let src = source("s", &[&t(1), &t(2)], &[], true);
        assert_eq!(
            node_topology_levels(&node, &[src]),
            vec![t(2), t(1), HOSTNAME.to_string()]
        );
    }

    #[test]
    fn effective_labels_carry_the_source_profile() {
        let mut node = walkthrough().remove(0);
        node.labels.insert(ZONE.into(), "z1".into());
        let g_key = general_key(&node.labels, &node.annotations);
        let src = source("zones", &[ZONE], &[(MANAGED, "true")], true);
        let eff = effective_node_labels_with_key(&node, &Settings::default(), &g_key, &[src]);
        assert_eq!(
            eff.get(TOPOLOGY_PROFILE).map(Text::as_str),
            Some("fnv64-f7b1861ac0399767")
        );
    }

    #[test]
    fn cpu_detail_note_is_go_json() {
        let a = labels(&[
            (CPU_NAME_ANNOTATION, "AMD EPYC 7R13 Processor"),
            ("feature.gpustack.ai/cpu-physical-cores", "8"),
            ("feature.gpustack.ai/cpu-cache-l2", "512 \"KiB\""),
            ("feature.gpustack.ai/cpu-hz", "@cpu.model.hz"),
        ]);
        let l = labels(&[(CPU_VENDOR, "AMD")]);
        let d = cpu_detail(&l, &a);
        assert_eq!(
            d.note_json(false),
            r#"{"physicalCores":"8","cache":{"l2":"512 \"KiB\""}}"#
        );
        assert_eq!(
            d.note_json(true),
            r#"{"manufacturer":"amd","product":"AMD EPYC 7R13 Processor","physicalCores":"8","cache":{"l2":"512 \"KiB\""}}"#
        );
        assert_eq!(CpuDetail::default().note_json(false), r#"{"cache":{}}"#);
        let escaped = CpuDetail {
            product: "a\u{1}b\u{1f}\t\\".into(),
            cache_l3: "32 MiB".into(),
            ..CpuDetail::default()
        };
        assert_eq!(
            escaped.note_json(true),
            r#"{"product":"a\u0001b\u001f\t\\","cache":{"l3":"32 MiB"}}"#
        );
    }

    /// The merged-in labels never touch gKey's inputs: the effective labels give the same key,
    /// and the `*_with_key(s)` variants agree with the functions that compute the keys.
    #[test]
    fn keyed_variants_agree_with_the_key_computing_ones() {
        let settings = Settings::default();
        for node in crate::examples::walkthrough().nodes {
            let g_key = general_key(&node.labels, &node.annotations);
            let labels = effective_node_labels(&node, &settings);
            assert_eq!(general_key(&labels, &node.annotations), g_key);
            assert_eq!(
                effective_node_labels_with_key(&node, &settings, &g_key, &[]),
                labels
            );
            assert_eq!(
                worker_node_labels_with_key(
                    &node.labels,
                    &GeneralLabelKeys::of(&g_key),
                    node.cpu_millis,
                    false
                ),
                worker_node_labels(&node.labels, &node.annotations, node.cpu_millis, false)
            );
            assert_eq!(
                node_flavors_with_keys(
                    &labels,
                    &node.annotations,
                    &settings,
                    &g_key,
                    &accelerator_keys(&labels)
                ),
                node_flavors(&labels, &node.annotations, &settings)
            );
        }
    }

    #[test]
    fn hashing_parts_with_their_separator_is_hashing_them_joined() {
        let lists: [&[&str]; 5] = [
            &[],
            &[""],
            &["", ""],
            &[HOSTNAME],
            &[
                "topology.kubernetes.io/zone",
                "fabric.topograph.run/tier-2",
                HOSTNAME,
            ],
        ];
        for parts in lists {
            assert_eq!(
                fnv1a64_joined(parts.iter().copied(), "\0"),
                fnv1a64(&parts.join("\0"))
            );
        }
    }

    #[test]
    fn general_key_inputs_decide_the_key() {
        let a = GeneralKeyInputs {
            vendor: Some("AMD"),
            name: Some("AMD EPYC 7R13 Processor"),
            ..GeneralKeyInputs::default()
        };
        assert_eq!(general_key_of(&a), "amd-epyc-7r13");
        let unresolved = GeneralKeyInputs {
            name: Some("@cpu.model.name"),
            family: Some("25"),
            id: Some("1"),
            ..a
        };
        assert_eq!(general_key_of(&unresolved), "amd-25-1");
        assert_eq!(general_key_of(&GeneralKeyInputs::default()), GENERIC);
    }
}
