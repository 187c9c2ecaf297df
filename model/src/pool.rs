//! Pools: identity, names, schedule labels, the selectors derived from them, "pool backs node",
//! and the derived InstanceType authoring (research/chain.md §7, §8.4, §17 rules 10–12, 18, 24).

use crate::labels::{
    self, Labels, Text, ACCELERATABLE, ACCELERATABLE_PREFIX, ARCH, GENERAL_PREFIX, MANAGED, OS,
    SCHEDULE_PREFIX, TOPOLOGY_PROFILE,
};
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::nodefeature::{AcceleratorLabelKeys, GeneralLabelKeys, NodePlatform};
use crate::objects::{InstanceTypeSpec, NodeFlavor, UnitResources};

/// `GeneralGroupGeneric`: the CPU group of a CPU-manufacturer-agnostic (collapsed) pool.
pub const GENERAL_GROUP_GENERIC: &str = "generic";

/// `localStorage` of every derived InstanceType (chain.md §8.4).
pub const DERIVED_LOCAL_STORAGE: &str = "100Gi";

/// Display name of the collapsed generic CPU pool (chain.md §8.1).
pub const CPU_ONLY_DISPLAY_NAME: &str = "CPU-only";

/// `displayName` limit in runes (api/worker/v1alpha1/instance_type.go @1e7b023).
pub const DISPLAY_NAME_MAX_RUNES: usize = 64;

/// Kueue's cap on the labels of one node selector (pkg/nodefeature/rdma_test.go).
pub const KUEUE_SELECTOR_LABEL_CAP: usize = 8;

/// Labels a pool may spend on its schedule labels: the cap minus the flavor's `.count` key and the
/// RDMA-capable key that ride along in the same selector (pkg/nodefeature/rdma_test.go).
pub const POOL_LABEL_BUDGET: usize = KUEUE_SELECTOR_LABEL_CAP - 2;

/// One pool: `(acceleratable, CPU group, [accelerator group,] os, arch)` — one InstanceType and
/// one isolated ClusterQueue of the same name (chain.md §7).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolIdentity {
    pub acceleratable: bool,
    /// gKey under awareness, else `generic`.
    pub general_group: String,
    /// aKey of an accelerated pool, empty for a CPU pool.
    pub accelerator_group: String,
    pub os: String,
    pub arch: String,
}

impl PoolIdentity {
    /// Whether the pool's CPU group is the `generic` sentinel (or unset).
    pub fn is_generic(&self) -> bool {
        self.general_group.is_empty() || self.general_group == GENERAL_GROUP_GENERIC
    }

    /// Pool name per the chain.md §7.1 table, reading a `generic` CPU group as the collapsed
    /// (unaware) pool. Under awareness a node with no CPU identity (gKey `generic`) yields an
    /// accelerated pool the operator names `gpustack--generic--<aKey>-…`; use [`Self::name_under`]
    /// when the awareness setting is known.
    pub fn name(&self) -> String {
        self.name_under(!self.is_generic())
    }

    /// Exact pool name for a known awareness setting (`DerivedInstanceTypeIdentity`,
    /// pkg/nodefeature/helper.go).
    pub fn name_under(&self, aware: bool) -> String {
        pool_name(
            self.acceleratable,
            aware,
            &self.general_group,
            &self.accelerator_group,
            &self.os,
            &self.arch,
        )
    }

    /// The pool's PoolScheduleLabels under the given awareness setting (chain.md §7.2).
    pub fn schedule_labels(&self, aware: bool) -> Labels {
        pool_schedule_labels(
            self.acceleratable,
            aware,
            &self.general_group,
            &self.accelerator_group,
            &self.os,
            &self.arch,
        )
    }
}

/// The name of the pool of these parts (`DerivedInstanceTypeIdentity`,
/// pkg/nodefeature/helper.go): `g` counts only when aware, `a` only when accelerated.
fn pool_name(acceleratable: bool, aware: bool, g: &str, a: &str, os: &str, arch: &str) -> String {
    // concatenated, not formatted: a derivation names every pool of every flavor
    match (acceleratable, aware) {
        (true, true) => ["gpustack--", g, "--", a, "-", os, "-", arch].concat(),
        (true, false) => ["gpustack--", a, "-", os, "-", arch].concat(),
        (false, true) => ["gpustack--", g, "-", os, "-", arch].concat(),
        (false, false) => ["gpustack--", GENERAL_GROUP_GENERIC, "-", os, "-", arch].concat(),
    }
}

/// The name of the pool a flavor feeds: [`pool_of_flavor`]'s
/// [`name_under`](PoolIdentity::name_under), without building the identity.
pub fn pool_name_of_flavor(f: &NodeFlavor, aware: bool) -> String {
    pool_name(
        f.acceleratable,
        aware,
        &f.general_key,
        &f.accelerator_key,
        &f.os,
        &f.arch,
    )
}

/// Rule 10: the pool a flavor feeds (`DerivedInstanceTypeIdentity`, pkg/nodefeature/helper.go).
pub fn pool_of_flavor(f: &NodeFlavor, aware: bool) -> PoolIdentity {
    PoolIdentity {
        acceleratable: f.acceleratable,
        general_group: if aware {
            f.general_key.to_string()
        } else {
            GENERAL_GROUP_GENERIC.to_string()
        },
        accelerator_group: if f.acceleratable {
            f.accelerator_key.to_string()
        } else {
            String::new()
        },
        os: f.os.to_string(),
        arch: f.arch.to_string(),
    }
}

/// `PoolScheduleLabels` (chain.md §7.2; pkg/nodefeature/helper.go): the acceleratable boolean,
/// os/arch when set, the accelerator key of an accelerated pool, the CPU key only when aware and
/// real (not `generic`).
pub fn pool_schedule_labels(
    acceleratable: bool,
    aware: bool,
    general_group: &str,
    accelerator_group: &str,
    os: &str,
    arch: &str,
) -> Labels {
    let mut out = Vec::with_capacity(5);
    out.push((
        Text::new_static(ACCELERATABLE),
        labels::bool_text(acceleratable),
    ));
    if !os.is_empty() {
        out.push((Text::new_static(OS), Text::new(os)));
    }
    if !arch.is_empty() {
        out.push((Text::new_static(ARCH), Text::new(arch)));
    }
    if acceleratable && !accelerator_group.is_empty() {
        out.push((
            labels::accelerator_feature_key(accelerator_group),
            Text::new_static("true"),
        ));
    }
    if aware && !general_group.is_empty() && general_group != GENERAL_GROUP_GENERIC {
        out.push((
            labels::general_feature_key(general_group),
            Text::new_static("true"),
        ));
    }
    out.into_iter().collect()
}

/// [`pool_schedule_labels`] of an InstanceType spec (its CPU group as written; the webhook
/// defaults an empty one to `generic`, which emits no CPU key either way).
pub fn spec_schedule_labels(spec: &InstanceTypeSpec, aware: bool) -> Labels {
    pool_schedule_labels(
        spec.acceleratable,
        aware,
        &spec.general_group,
        &spec.accelerator_group,
        &spec.os,
        &spec.arch,
    )
}

/// Whether `key` is a `general.*` or `acceleratable.*` feature label key.
pub fn is_feature_key(key: &str) -> bool {
    key.starts_with(GENERAL_PREFIX) || key.starts_with(ACCELERATABLE_PREFIX)
}

/// Whether `(key, value)` is a feature key switched on (`=true`).
fn is_true_feature_label(key: &str, value: &str) -> bool {
    value == "true" && is_feature_key(key)
}

/// `PoolFlavorSelector` (chain.md §7.3; pkg/nodefeature/helper.go): os/arch, the acceleratable
/// boolean (any value) and every true feature key; `None` without a discriminator.
pub fn pool_flavor_selector(queue_labels: &Labels) -> Option<Labels> {
    let mut sel = Vec::with_capacity(queue_labels.len());
    let mut discriminated = false;
    for (k, v) in queue_labels {
        if k == OS || k == ARCH {
            sel.push((k.clone(), v.clone()));
        } else if k == ACCELERATABLE || is_true_feature_label(k, v) {
            sel.push((k.clone(), v.clone()));
            discriminated = true;
        }
    }
    discriminated.then(|| sel.into_iter().collect())
}

/// Whether `labels` carries every `selector` entry with the same value (whole keys, never prefixes).
pub fn labels_contain(labels: &Labels, selector: &Labels) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.get(k).is_some_and(|have| have == v))
}

/// A flavor is selected by a pool when its labels ⊇ the pool's selector (chain.md §7.3).
pub fn flavor_selected_by_pool(selector: &Labels, flavor_labels: &Labels) -> bool {
    labels_contain(flavor_labels, selector)
}

/// `poolDevicesSelector` (chain.md §7.4; instance_type.go @01712e2): os/arch, true feature keys,
/// plus `gpustack.ai/managed=true`; `None` without a feature key (the boolean does not count).
pub fn pool_devices_selector(queue_labels: &Labels) -> Option<Labels> {
    let mut sel = Vec::with_capacity(queue_labels.len() + 1);
    let mut featured = false;
    for (k, v) in queue_labels {
        if k == OS || k == ARCH {
            sel.push((k.clone(), v.clone()));
        } else if is_true_feature_label(k, v) {
            sel.push((k.clone(), v.clone()));
            featured = true;
        }
    }
    if !featured {
        return None;
    }
    sel.push((Text::new_static(MANAGED), Text::new_static("true")));
    Some(sel.into_iter().collect())
}

/// Rule 18 / chain.md §4: the labels a node's Devices object carries — os, arch and
/// `acceleratable.<aKey>=true` per group (Device Manager), the node's managed value when it has
/// one, `general.<gKey>=true` and the topology profile (NodeDevicesReconciler).
pub fn devices_labels(
    node_effective_labels: &Labels,
    general: &GeneralLabelKeys,
    accelerators: &[AcceleratorLabelKeys],
) -> Labels {
    let platform = NodePlatform::of(node_effective_labels);
    devices_labels_of(&DevicesLabelReads::of(&platform, general, accelerators).to_inputs())
}

/// The keys of [`DevicesLabelInputs::platform`]'s values, in their order.
const DEVICES_PLATFORM_KEYS: [&str; 3] = [OS, ARCH, TOPOLOGY_PROFILE];

/// Everything [`devices_labels`] reads: the node's non-empty os, arch, profile and managed
/// values and its gKey's and aKeys' feature keys. Nodes alike in these carry equal Devices
/// labels, so a derivation builds them once and keeps these inputs with them
/// ([`crate::node_rules`]), found by [`DevicesLabelReads::are`].
#[derive(Clone, Debug)]
pub struct DevicesLabelInputs {
    /// The values of [`DEVICES_PLATFORM_KEYS`], where set and non-empty.
    platform: [Option<Text>; 3],
    managed: Option<Text>,
    general_feature: Option<Text>,
    accelerator_features: Vec<Text>,
}

/// [`DevicesLabelInputs`] borrowed from a node's labels and label keys: what a derivation
/// looks its remembered Devices labels up by, copying no text (a copy of a long key takes and
/// drops a shared count).
#[derive(Clone, Copy, Debug)]
pub struct DevicesLabelReads<'l, A> {
    platform: [Option<&'l str>; 3],
    managed: Option<&'l str>,
    general_feature: Option<&'l Text>,
    accelerators: &'l [A],
}

impl<'l, A: Borrow<AcceleratorLabelKeys>> DevicesLabelReads<'l, A> {
    pub fn of(
        platform: &NodePlatform<'l>,
        general: &'l GeneralLabelKeys,
        accelerators: &'l [A],
    ) -> Self {
        let set = |v: &'l str| (!v.is_empty()).then_some(v);
        DevicesLabelReads {
            platform: [set(platform.os), set(platform.arch), set(platform.profile)],
            managed: set(platform.managed),
            general_feature: (!general.key.is_empty()).then_some(&general.feature),
            accelerators,
        }
    }

    fn accelerator_features(&self) -> impl ExactSizeIterator<Item = &'l Text> {
        self.accelerators.iter().map(|a| &a.borrow().feature)
    }

    /// The same inputs, owned.
    pub fn to_inputs(&self) -> DevicesLabelInputs {
        DevicesLabelInputs {
            platform: self.platform.map(|v| v.map(Text::new)),
            managed: self.managed.map(Text::new),
            general_feature: self.general_feature.cloned(),
            accelerator_features: self.accelerator_features().cloned().collect(),
        }
    }

    /// Whether `inputs` are these, texts compared by [`labels::same_text`].
    pub fn are(&self, inputs: &DevicesLabelInputs) -> bool {
        let same = |a: Option<&str>, b: &Option<Text>| labels::same_optional_text(a, b.as_deref());
        self.platform
            .iter()
            .zip(&inputs.platform)
            .all(|(a, b)| same(*a, b))
            && same(self.managed, &inputs.managed)
            && same(
                self.general_feature.map(Text::as_str),
                &inputs.general_feature,
            )
            && self.accelerators.len() == inputs.accelerator_features.len()
            && self
                .accelerator_features()
                .zip(&inputs.accelerator_features)
                .all(|(a, b)| labels::same_text(a, b))
    }

    /// The hash of these inputs, equal to [`DevicesLabelInputs::hash_with`]'s for equal ones.
    pub fn hash_with(&self, hasher: &impl BuildHasher) -> u64 {
        devices_inputs_hash(
            hasher,
            self.platform,
            self.managed,
            self.general_feature.map(Text::as_str),
            self.accelerator_features().map(Text::as_str),
        )
    }
}

impl DevicesLabelInputs {
    /// See [`DevicesLabelReads::hash_with`].
    pub fn hash_with(&self, hasher: &impl BuildHasher) -> u64 {
        devices_inputs_hash(
            hasher,
            self.platform.each_ref().map(|v| v.as_deref()),
            self.managed.as_deref(),
            self.general_feature.as_deref(),
            self.accelerator_features.iter().map(Text::as_str),
        )
    }
}

/// One hash of Devices label inputs, whether borrowed or owned.
fn devices_inputs_hash<'t>(
    hasher: &impl BuildHasher,
    platform: [Option<&str>; 3],
    managed: Option<&str>,
    general_feature: Option<&str>,
    accelerator_features: impl ExactSizeIterator<Item = &'t str>,
) -> u64 {
    let mut state = hasher.build_hasher();
    (platform, managed, general_feature).hash(&mut state);
    state.write_usize(accelerator_features.len());
    accelerator_features.for_each(|f| f.hash(&mut state));
    state.finish()
}

/// The Devices labels of `inputs` (see [`devices_labels`]).
pub fn devices_labels_of(inputs: &DevicesLabelInputs) -> Labels {
    let mut out = Vec::with_capacity(6 + inputs.accelerator_features.len());
    for (k, v) in DEVICES_PLATFORM_KEYS.iter().zip(&inputs.platform) {
        if let Some(v) = v {
            out.push((Text::new_static(k), v.clone()));
        }
    }
    for feature in &inputs.accelerator_features {
        out.push((feature.clone(), Text::new_static("true")));
    }
    if let Some(v) = &inputs.managed {
        out.push((Text::new_static(MANAGED), v.clone()));
    }
    if let Some(feature) = &inputs.general_feature {
        out.push((feature.clone(), Text::new_static("true")));
    }
    out.into_iter().collect()
}

/// `enqueueInstanceTypeWhenDevicesChanged` (instance_type.go @01712e2): for every true feature key
/// on the Devices, the InstanceTypes labelled with that key and the Devices' os/arch (when set).
/// Names come out once each, in the order of `instance_types`.
pub fn instance_types_served_by_devices(
    devices_labels: &Labels,
    instance_types: &[(String, Labels)],
) -> Vec<String> {
    let mut platform = Labels::new();
    for key in [OS, ARCH] {
        if let Some(v) = devices_labels.get(key).filter(|v| !v.is_empty()) {
            platform.insert(Text::new_static(key), v.clone());
        }
    }
    let selectors: Vec<Labels> = devices_labels
        .iter()
        .filter(|(k, v)| is_true_feature_label(k, v))
        .map(|(k, v)| {
            let mut sel = platform.clone();
            sel.insert(k.clone(), v.clone());
            sel
        })
        .collect();
    let mut served: Vec<String> = Vec::new();
    for (name, it_labels) in instance_types {
        let matched = selectors.iter().any(|sel| labels_contain(it_labels, sel));
        if matched && !served.contains(name) {
            served.push(name.clone());
        }
    }
    served
}

/// The predicate (chain.md §7.5 heuristic, e2e case-23): every pool (InstanceType) label
/// other than `schedule.gpustack.ai/*` is on the node with the same value. Whole keys are
/// compared, so `nvidia-a10` never matches an `nvidia-a100` node.
pub fn pool_backs_node(pool_labels: &Labels, node_labels: &Labels) -> bool {
    pool_labels
        .iter()
        .filter(|(k, _)| !k.starts_with(SCHEDULE_PREFIX))
        .all(|(k, v)| node_labels.get(k).is_some_and(|have| have == v))
}

/// chain.md §7.5 "Exact (from code)": some flavor of the node has labels ⊇ PoolFlavorSelector of
/// the pool's schedule labels. `node_flavors` are the flavors of an eligible node (managed, E3
/// profiled) after the mixing rule has dropped its CPU flavor where it applies.
pub fn node_backs_pool_exactly(
    pool: &PoolIdentity,
    aware: bool,
    node_flavors: &[NodeFlavor],
) -> bool {
    pool_flavor_selector(&pool.schedule_labels(aware))
        .is_some_and(|selector| flavors_back_selector(&selector, node_flavors))
}

/// Whether one of a node's flavors, as the ResourceFlavor it becomes, matches a pool's flavor
/// selector (chain.md §7.3, §7.5). The `.capacity` label never takes part in a selector.
pub fn flavors_back_selector(selector: &Labels, node_flavors: &[NodeFlavor]) -> bool {
    node_flavors
        .iter()
        .any(|f| flavor_selected_by_pool(selector, &crate::flavor::flavor_labels(f, 1)))
}

/// Preset tiers of pkg/nodefeature/unit_resources_preset.yaml @9c359ba: `(cpu, ram)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PresetTier {
    Fallback,
    Small,
    Medium,
    Large,
    XLarge,
}

impl PresetTier {
    /// The tier's unit resources (fallback 4/16Gi, small 8/32Gi, medium 8/64Gi, large 12/128Gi,
    /// xlarge 12/192Gi).
    fn unit(self) -> UnitResources {
        let (cpu, ram) = match self {
            PresetTier::Fallback => ("4", "16Gi"),
            PresetTier::Small => ("8", "32Gi"),
            PresetTier::Medium => ("8", "64Gi"),
            PresetTier::Large => ("12", "128Gi"),
            PresetTier::XLarge => ("12", "192Gi"),
        };
        UnitResources {
            cpu: cpu.into(),
            ram: ram.into(),
        }
    }
}

/// One preset entry: a token prefix, its tier, and ordered `(token, tier)` refinements.
struct PresetEntry {
    prefix: &'static str,
    tier: PresetTier,
    by: &'static [(&'static str, PresetTier)],
}

const fn entry(prefix: &'static str, tier: PresetTier) -> PresetEntry {
    PresetEntry {
        prefix,
        tier,
        by: &[],
    }
}

/// Leading marketing token sequences stripped before matching (unit_resources_preset.yaml @9c359ba).
const PRESET_STRIP: [&str; 5] = ["tesla", "geforce", "quadro", "radeon", "instinct"];

const NVIDIA_PRESETS: &[PresetEntry] = &[
    entry("b200", PresetTier::XLarge),
    entry("b300", PresetTier::XLarge),
    entry("gb200", PresetTier::XLarge),
    entry("gb300", PresetTier::XLarge),
    entry("h100", PresetTier::XLarge),
    entry("h200", PresetTier::XLarge),
    entry("h800", PresetTier::XLarge),
    entry("gh200", PresetTier::XLarge),
    entry("gb10", PresetTier::Small),
    PresetEntry {
        prefix: "a100",
        tier: PresetTier::Medium,
        by: &[("80gb", PresetTier::Large), ("40gb", PresetTier::Medium)],
    },
    PresetEntry {
        prefix: "a800",
        tier: PresetTier::Medium,
        by: &[("80gb", PresetTier::Large), ("40gb", PresetTier::Medium)],
    },
    entry("a30", PresetTier::Small),
    entry("a10", PresetTier::Medium),
    entry("a10g", PresetTier::Medium),
    entry("l4", PresetTier::Small),
    entry("l40", PresetTier::Medium),
    entry("l40s", PresetTier::Large),
    entry("t4", PresetTier::Small),
    PresetEntry {
        prefix: "v100",
        tier: PresetTier::Small,
        by: &[("32gb", PresetTier::Medium)],
    },
    entry("v100s", PresetTier::Small),
    entry("rtx-pro-4500", PresetTier::Small),
    entry("rtx-6000", PresetTier::Small),
    entry("rtx-4000", PresetTier::Small),
    entry("rtx-a6000", PresetTier::Small),
    entry("rtx-a5000", PresetTier::Small),
    entry("rtx-a4000", PresetTier::Small),
    entry("rtx-3090", PresetTier::Small),
    entry("rtx-4090", PresetTier::Medium),
    entry("rtx-5090", PresetTier::Medium),
];

const ASCEND_PRESETS: &[PresetEntry] = &[
    entry("310p", PresetTier::Medium),
    entry("310p1", PresetTier::Medium),
    entry("310p2", PresetTier::Medium),
    entry("310p3", PresetTier::Medium),
    entry("310p4", PresetTier::Medium),
    entry("310p5", PresetTier::Medium),
    entry("310p7", PresetTier::Medium),
    entry("910b", PresetTier::Medium),
    entry("910b1", PresetTier::Medium),
    entry("910b2", PresetTier::Medium),
    entry("910b2c", PresetTier::Medium),
    entry("910b3", PresetTier::Medium),
    entry("910b4", PresetTier::Medium),
    entry("910_9362", PresetTier::XLarge),
    entry("910_9372", PresetTier::XLarge),
    entry("910_9381", PresetTier::XLarge),
    entry("910_9382", PresetTier::XLarge),
    entry("910_9391", PresetTier::XLarge),
    entry("910_9392", PresetTier::XLarge),
];

const AMD_PRESETS: &[PresetEntry] = &[
    entry("mi300x", PresetTier::XLarge),
    entry("mi308x", PresetTier::XLarge),
    entry("mi325x", PresetTier::XLarge),
    entry("mi350x", PresetTier::XLarge),
    entry("mi355x", PresetTier::XLarge),
    entry("mi250", PresetTier::Medium),
    entry("mi250x", PresetTier::Medium),
    entry("mi210", PresetTier::Large),
];

const CAMBRICON_PRESETS: &[PresetEntry] = &[
    entry("mlu370", PresetTier::Medium),
    entry("mlu590", PresetTier::Medium),
];

const HYGON_PRESETS: &[PresetEntry] = &[
    entry("z100", PresetTier::Small),
    entry("z100l", PresetTier::Small),
    entry("k100", PresetTier::Large),
    entry("bw100", PresetTier::Large),
    entry("bw1000", PresetTier::XLarge),
];

const METAX_PRESETS: &[PresetEntry] = &[
    entry("mxc500", PresetTier::Medium),
    entry("mxc550", PresetTier::Large),
    entry("mxc588", PresetTier::Large),
    entry("mxc600", PresetTier::Large),
];

const MTHREADS_PRESETS: &[PresetEntry] = &[
    entry("mtt-s4000", PresetTier::Medium),
    entry("mtt-s5000", PresetTier::Medium),
];

const ILUVATAR_PRESETS: &[PresetEntry] = &[
    entry("bi-v100", PresetTier::Medium),
    entry("bi-v150", PresetTier::Medium),
    entry("mr-v50", PresetTier::Medium),
    entry("mr-v100", PresetTier::Medium),
];

const THEAD_PRESETS: &[PresetEntry] = &[
    entry("ppu-zw810e", PresetTier::Medium),
    entry("ppu-zwm890", PresetTier::Medium),
];

/// The preset entries of one manufacturer (empty for one the table does not cover).
fn presets_of(manufacturer: &str) -> &'static [PresetEntry] {
    match manufacturer {
        "nvidia" => NVIDIA_PRESETS,
        "ascend" => ASCEND_PRESETS,
        "amd" => AMD_PRESETS,
        "cambricon" => CAMBRICON_PRESETS,
        "hygon" => HYGON_PRESETS,
        "metax" => METAX_PRESETS,
        "mthreads" => MTHREADS_PRESETS,
        "iluvatar" => ILUVATAR_PRESETS,
        "thead" => THEAD_PRESETS,
        _ => &[],
    }
}

/// Whether `c` separates slug tokens (`-`, `_`, `.`).
fn is_slug_separator(c: char) -> bool {
    matches!(c, '-' | '_' | '.')
}

/// Tokens of a slug, split on `-`, `_`, `.`.
fn slug_tokens(s: &str) -> Vec<&str> {
    s.split(is_slug_separator)
        .filter(|t| !t.is_empty())
        .collect()
}

/// How many tokens `prefix`'s slug tokens take when they are a whole-token prefix of `tokens`
/// (so `a10` never matches `a100`); none otherwise. The prefix is split as it is compared, not
/// collected: a derived pool reads every preset of its manufacturer.
fn token_prefix_len(tokens: &[&str], prefix: &str) -> Option<usize> {
    let mut taken = 0;
    for token in prefix.split(is_slug_separator).filter(|t| !t.is_empty()) {
        if tokens.get(taken) != Some(&token) {
            return None;
        }
        taken += 1;
    }
    Some(taken)
}

/// Removes leading marketing sequences repeatedly (`Radeon Instinct MI300X` → `mi300x`).
fn strip_marketing<'a>(mut tokens: &'a [&'a str]) -> &'a [&'a str] {
    while let Some(n) = PRESET_STRIP
        .iter()
        .find_map(|s| token_prefix_len(tokens, s))
    {
        tokens = tokens.get(n..).unwrap_or_default();
    }
    tokens
}

/// `PresetUnitResources` (chain.md §8.4; pkg/nodefeature/unit_resources_preset.go and .yaml
/// @9c359ba): the per-card unit CPU/RAM of a derived accelerated InstanceType; fallback 4/16Gi.
pub fn preset_unit_resources(manufacturer: &str, product: &str) -> UnitResources {
    let entries = presets_of(manufacturer);
    if entries.is_empty() {
        return PresetTier::Fallback.unit();
    }
    let slug = crate::nodefeature::normalize_name(product, manufacturer, 0, false);
    let all = slug_tokens(&slug);
    let tokens = strip_marketing(&all);
    let tier = entries
        .iter()
        .find(|e| token_prefix_len(tokens, e.prefix).is_some())
        .map_or(PresetTier::Fallback, |e| {
            e.by.iter()
                .find(|(token, _)| tokens.contains(token))
                .map_or(e.tier, |(_, tier)| *tier)
        });
    tier.unit()
}

/// `s` cut to at most `max` runes.
fn truncate_runes(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// chain.md §8.1: a derived type's display name — the device product, the raw CPU name under
/// awareness, or `CPU-only` for the collapsed generic pool — truncated to 64 runes. An aware CPU
/// pool whose node reports no CPU name also reads `CPU-only` (decided here: the operator's
/// node_flavor.go @187ec70 was not available; chain.md names only the two cases).
pub fn derived_display_name(pool: &PoolIdentity, first: &NodeFlavor, cpu_name: &str) -> String {
    let name = if pool.acceleratable {
        first.product.as_str()
    } else if !pool.is_generic() && !cpu_name.is_empty() {
        cpu_name
    } else {
        CPU_ONLY_DISPLAY_NAME
    };
    truncate_runes(name, DISPLAY_NAME_MAX_RUNES)
}

/// chain.md §8.4 derived authoring (node_flavor.go @187ec70): the spec of the InstanceType the
/// NodeFlavorReconciler creates for `pool` from its first contributing flavor — CPU-only 1/2Gi,
/// accelerated per the preset table, localStorage 100Gi.
pub fn derived_instance_type_spec(
    pool: &PoolIdentity,
    first: &NodeFlavor,
    cpu_name: &str,
) -> InstanceTypeSpec {
    let unit_resources = if pool.acceleratable {
        preset_unit_resources(&first.manufacturer, &first.product)
    } else {
        UnitResources {
            cpu: "1".into(),
            ram: "2Gi".into(),
        }
    };
    InstanceTypeSpec {
        display_name: derived_display_name(pool, first, cpu_name).into(),
        description: Text::default(),
        inactive: false,
        accelerator_group: pool.accelerator_group.as_str().into(),
        general_group: pool.general_group.as_str().into(),
        acceleratable: pool.acceleratable,
        os: pool.os.as_str().into(),
        arch: pool.arch.as_str().into(),
        unit_resources,
        local_storage: DERIVED_LOCAL_STORAGE.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Labels {
        crate::labels::from_pairs(pairs)
    }

    /// Reads match the inputs they were copied into, hash as they do, and no other inputs: a
    /// node differing in any one of them gets Devices labels of its own. (A derivation only
    /// compares inputs whose hashes collide, so its own tests could not see a wrong `are`.)
    #[test]
    fn devices_label_reads_match_only_their_own_inputs() {
        let hasher = foldhash::fast::FixedState::with_seed(7);
        let g = GeneralLabelKeys::of("intel-xeon-8358");
        let none = GeneralLabelKeys::default();
        let (a100, h100) = (
            AcceleratorLabelKeys::of("nvidia-a100"),
            AcceleratorLabelKeys::of("nvidia-h100"),
        );
        let (one, two) = ([a100.clone()], [a100, h100]);
        let base = NodePlatform {
            os: "linux",
            arch: "amd64",
            profile: "fnv64-0123456789abcdef",
            managed: "true",
        };
        let reads = DevicesLabelReads::of(&base, &g, &one);
        let inputs = reads.to_inputs();
        assert!(reads.are(&inputs));
        assert_eq!(reads.hash_with(&hasher), inputs.hash_with(&hasher));
        let platforms = [
            NodePlatform { os: "", ..base },
            NodePlatform {
                arch: "arm64",
                ..base
            },
            NodePlatform {
                profile: "",
                ..base
            },
            NodePlatform {
                managed: "false",
                ..base
            },
            NodePlatform {
                managed: "",
                ..base
            },
        ];
        let others = platforms
            .iter()
            .map(|p| DevicesLabelReads::of(p, &g, &one))
            .chain([
                DevicesLabelReads::of(&base, &none, &one),
                DevicesLabelReads::of(&base, &g, &two),
                DevicesLabelReads::of(&base, &g, &two[1..]),
                DevicesLabelReads::of(&base, &g, &two[..0]),
            ]);
        for other in others {
            assert!(!other.are(&inputs), "{other:?}");
            let copied = other.to_inputs();
            assert!(other.are(&copied), "{other:?}");
            assert_eq!(other.hash_with(&hasher), copied.hash_with(&hasher));
            assert_ne!(
                devices_labels_of(&copied),
                devices_labels_of(&inputs),
                "{other:?}"
            );
        }
    }

    fn device_flavor(g: &str, a: &str) -> NodeFlavor {
        NodeFlavor {
            general_key: g.into(),
            accelerator_key: a.into(),
            os: "linux".into(),
            arch: "amd64".into(),
            count: 8,
            acceleratable: true,
            manufacturer: "nvidia".into(),
            product: "NVIDIA-A10G".into(),
            ..NodeFlavor::default()
        }
    }

    fn cpu_flavor(g: &str) -> NodeFlavor {
        NodeFlavor {
            general_key: g.into(),
            os: "linux".into(),
            arch: "amd64".into(),
            count: 16,
            manufacturer: "amd".into(),
            ..NodeFlavor::default()
        }
    }

    #[test]
    fn pool_names_follow_the_table() {
        let gpu = device_flavor("amd-epyc-7r32", "nvidia-a10g");
        let cpu = cpu_flavor("amd-epyc-7r13");
        assert_eq!(
            pool_of_flavor(&gpu, false).name(),
            "gpustack--nvidia-a10g-linux-amd64"
        );
        assert_eq!(
            pool_of_flavor(&gpu, true).name(),
            "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64"
        );
        assert_eq!(
            pool_of_flavor(&cpu, false).name(),
            "gpustack--generic-linux-amd64"
        );
        assert_eq!(
            pool_of_flavor(&cpu, true).name(),
            "gpustack--amd-epyc-7r13-linux-amd64"
        );
        let unaware = pool_of_flavor(&gpu, false);
        assert_eq!(unaware.general_group, "generic");
        assert_eq!(unaware.accelerator_group, "nvidia-a10g");
        assert!(pool_of_flavor(&cpu, true).accelerator_group.is_empty());
        // Naming a flavor's pool directly gives the identity's name, a stray aKey on a CPU
        // flavor ignored as the identity ignores it.
        let stray = NodeFlavor {
            accelerator_key: "nvidia-a10g".into(),
            ..cpu.clone()
        };
        for (f, aware) in [gpu, cpu, stray]
            .iter()
            .flat_map(|f| [(f, false), (f, true)])
        {
            assert_eq!(
                pool_name_of_flavor(f, aware),
                pool_of_flavor(f, aware).name_under(aware)
            );
        }
    }

    #[test]
    fn aware_generic_accelerated_pool_keeps_the_double_dash_name() {
        let gpu = device_flavor("generic", "nvidia-a10g");
        let pool = pool_of_flavor(&gpu, true);
        assert_eq!(
            pool.name_under(true),
            "gpustack--generic--nvidia-a10g-linux-amd64"
        );
    }

    #[test]
    fn schedule_labels_match_the_walkthrough() {
        let got = pool_schedule_labels(true, false, "generic", "nvidia-a10g", "linux", "amd64");
        assert_eq!(
            got,
            l(&[
                (OS, "linux"),
                (ARCH, "amd64"),
                (ACCELERATABLE, "true"),
                ("acceleratable.feature.gpustack.ai/nvidia-a10g", "true"),
            ])
        );
        let aware =
            pool_schedule_labels(true, true, "amd-epyc-7r32", "nvidia-a10g", "linux", "amd64");
        assert_eq!(
            aware
                .get("general.feature.gpustack.ai/amd-epyc-7r32")
                .map(Text::as_str),
            Some("true")
        );
        let collapsed = pool_schedule_labels(false, true, "generic", "", "linux", "amd64");
        assert_eq!(
            collapsed,
            l(&[(OS, "linux"), (ARCH, "amd64"), (ACCELERATABLE, "false")])
        );
        // An accelerator group on a CPU pool is ignored.
        assert_eq!(
            pool_schedule_labels(false, false, "", "nvidia-a10g", "", "").len(),
            1
        );
    }

    #[test]
    fn widest_pool_fits_the_rdma_budget() {
        let widest = pool_schedule_labels(true, true, "amd-25-1", "nvidia-h100", "linux", "amd64");
        assert_eq!(widest.len(), 5);
        assert!(widest.len() <= POOL_LABEL_BUDGET);
    }

    #[test]
    fn flavor_selector_keeps_boolean_and_true_keys() {
        let q = l(&[
            (OS, "linux"),
            (ARCH, "amd64"),
            (ACCELERATABLE, "false"),
            (labels::RESOURCE_TYPE, "instancetypes"),
            ("general.feature.gpustack.ai/amd-epyc-7763.count", "16"),
        ]);
        assert_eq!(
            pool_flavor_selector(&q),
            Some(l(&[
                (OS, "linux"),
                (ARCH, "amd64"),
                (ACCELERATABLE, "false")
            ]))
        );
        assert_eq!(pool_flavor_selector(&l(&[(OS, "linux")])), None);
    }

    #[test]
    fn devices_selector_needs_a_feature_key() {
        let q = l(&[
            ("acceleratable.feature.gpustack.ai/nvidia-a10g", "true"),
            ("acceleratable.feature.gpustack.ai/nvidia-a10g.count", "8"),
            (OS, "linux"),
            (ARCH, "amd64"),
            (ACCELERATABLE, "true"),
        ]);
        assert_eq!(
            pool_devices_selector(&q),
            Some(l(&[
                ("acceleratable.feature.gpustack.ai/nvidia-a10g", "true"),
                (OS, "linux"),
                (ARCH, "amd64"),
                (MANAGED, "true"),
            ]))
        );
        let cpu_collapsed = l(&[(OS, "linux"), (ARCH, "amd64"), (ACCELERATABLE, "false")]);
        assert_eq!(pool_devices_selector(&cpu_collapsed), None);
    }

    #[test]
    fn devices_labels_union_both_writers() {
        let node = l(&[
            (OS, "linux"),
            (ARCH, "amd64"),
            (MANAGED, "false"),
            (TOPOLOGY_PROFILE, "fnv64-87bf574bea2a4f23"),
            ("acceleratable.feature.gpustack.ai/nvidia-a10g.count", "1"),
        ]);
        let got = devices_labels(
            &node,
            &GeneralLabelKeys::of("amd-epyc-7r32"),
            &[AcceleratorLabelKeys::of("nvidia-a10g")],
        );
        assert_eq!(
            got,
            l(&[
                (OS, "linux"),
                (ARCH, "amd64"),
                (MANAGED, "false"),
                (TOPOLOGY_PROFILE, "fnv64-87bf574bea2a4f23"),
                ("acceleratable.feature.gpustack.ai/nvidia-a10g", "true"),
                ("general.feature.gpustack.ai/amd-epyc-7r32", "true"),
            ])
        );
        let unmanaged = devices_labels(&l(&[(OS, "linux")]), &GeneralLabelKeys::of("generic"), &[]);
        assert!(!unmanaged.contains_key(MANAGED));
    }

    #[test]
    fn devices_enqueue_their_pools_by_label() {
        let its = vec![
            (
                "cpu".to_string(),
                l(&[
                    ("general.feature.gpustack.ai/generic", "true"),
                    (OS, "linux"),
                    (ARCH, "amd64"),
                ]),
            ),
            (
                "gpu".to_string(),
                l(&[
                    ("acceleratable.feature.gpustack.ai/nvidia-a10g", "true"),
                    (OS, "linux"),
                    (ARCH, "amd64"),
                ]),
            ),
            (
                "arm".to_string(),
                l(&[
                    ("general.feature.gpustack.ai/generic", "true"),
                    (OS, "linux"),
                    (ARCH, "arm64"),
                ]),
            ),
            (
                "a100".to_string(),
                l(&[
                    ("acceleratable.feature.gpustack.ai/nvidia-a100", "true"),
                    (OS, "linux"),
                    (ARCH, "amd64"),
                ]),
            ),
        ];
        let dev = l(&[
            (MANAGED, "true"),
            ("general.feature.gpustack.ai/generic", "true"),
            ("acceleratable.feature.gpustack.ai/nvidia-a10g", "true"),
            (OS, "linux"),
            (ARCH, "amd64"),
        ]);
        assert_eq!(
            instance_types_served_by_devices(&dev, &its),
            vec!["cpu", "gpu"]
        );
        assert!(instance_types_served_by_devices(&l(&[(OS, "linux")]), &its).is_empty());
    }

    /// Node labels of an accelerated node carrying one product.
    fn gpu_node(a_key: &str) -> Labels {
        let key = labels::accelerator_feature_key(a_key);
        l(&[
            (MANAGED, "true"),
            (OS, "linux"),
            (ARCH, "amd64"),
            (ACCELERATABLE, "true"),
            (key.as_str(), "true"),
            (format!("{key}.count").as_str(), "8"),
            ("general.feature.gpustack.ai/generic", "true"),
        ])
    }

    /// The labels of the derived InstanceType of the unaware pool of `a_key`.
    fn gpu_pool(a_key: &str) -> Labels {
        let mut it = pool_schedule_labels(true, false, "generic", a_key, "linux", "amd64");
        it.insert(labels::DERIVED_FROM_NODE.into(), "true".into());
        it.insert(labels::QUEUE_ENTRANCE.into(), "gpustack-fnv64-0".into());
        it
    }

    const NESTED: [(&str, &str); 3] = [
        ("nvidia-a10", "nvidia-a100"),
        ("nvidia-l40", "nvidia-l40s"),
        ("nvidia-h20", "nvidia-h200"),
    ];

    #[test]
    fn nested_product_tokens_never_back_each_other() {
        for (short, long) in NESTED {
            assert!(
                pool_backs_node(&gpu_pool(short), &gpu_node(short)),
                "{short}"
            );
            assert!(pool_backs_node(&gpu_pool(long), &gpu_node(long)), "{long}");
            assert!(
                !pool_backs_node(&gpu_pool(short), &gpu_node(long)),
                "{short} on {long}"
            );
            assert!(
                !pool_backs_node(&gpu_pool(long), &gpu_node(short)),
                "{long} on {short}"
            );
        }
    }

    #[test]
    fn nested_product_tokens_never_back_each_other_exactly() {
        for (short, long) in NESTED {
            let pool_of = |a: &str| pool_of_flavor(&device_flavor("generic", a), false);
            let flavors_of = |a: &str| vec![device_flavor("amd-epyc-7763", a)];
            assert!(node_backs_pool_exactly(
                &pool_of(short),
                false,
                &flavors_of(short)
            ));
            assert!(node_backs_pool_exactly(
                &pool_of(long),
                false,
                &flavors_of(long)
            ));
            assert!(!node_backs_pool_exactly(
                &pool_of(short),
                false,
                &flavors_of(long)
            ));
            assert!(!node_backs_pool_exactly(
                &pool_of(long),
                false,
                &flavors_of(short)
            ));
        }
    }

    #[test]
    fn pool_backs_node_ignores_schedule_labels_only() {
        let pool = gpu_pool("nvidia-a10g");
        let mut node = gpu_node("nvidia-a10g");
        assert!(pool_backs_node(&pool, &node));
        node.insert(OS.into(), "windows".into());
        assert!(!pool_backs_node(&pool, &node));
    }

    #[test]
    fn exact_backing_respects_awareness_and_class() {
        let cpu = cpu_flavor("amd-epyc-7763");
        let gpu = device_flavor("amd-epyc-7763", "nvidia-a10g");
        let collapsed_cpu = pool_of_flavor(&cpu_flavor("intel-xeon"), false);
        assert!(node_backs_pool_exactly(
            &collapsed_cpu,
            false,
            std::slice::from_ref(&cpu)
        ));
        // The boolean keeps a CPU pool off a node that only offers its device flavor.
        assert!(!node_backs_pool_exactly(
            &collapsed_cpu,
            false,
            std::slice::from_ref(&gpu)
        ));
        let aware_intel = pool_of_flavor(&cpu_flavor("intel-xeon"), true);
        assert!(!node_backs_pool_exactly(
            &aware_intel,
            true,
            std::slice::from_ref(&cpu)
        ));
        let aware_amd = pool_of_flavor(&cpu, true);
        assert!(node_backs_pool_exactly(&aware_amd, true, &[cpu]));
        // Rule 24: an aware pool whose CPU is generic selects every flavor of its aKey.
        let generic_gpu = pool_of_flavor(&device_flavor("generic", "nvidia-a10g"), true);
        assert!(node_backs_pool_exactly(&generic_gpu, true, &[gpu]));
    }

    #[test]
    fn preset_examples_hold() {
        let cases = [
            ("nvidia", "NVIDIA A10G", "8", "64Gi"),
            ("nvidia", "NVIDIA-A10G", "8", "64Gi"),
            ("nvidia", "Tesla T4", "8", "32Gi"),
            ("nvidia", "NVIDIA H100 80GB HBM3", "12", "192Gi"),
            ("nvidia", "NVIDIA A100-SXM4-40GB", "8", "64Gi"),
            ("nvidia", "NVIDIA A100-SXM4-80GB", "12", "128Gi"),
            ("nvidia", "NVIDIA A100 80GB PCIe", "12", "128Gi"),
            ("nvidia", "NVIDIA GeForce RTX 4090", "8", "64Gi"),
            ("ascend", "910B2", "8", "64Gi"),
            ("amd", "AMD Instinct MI300X", "12", "192Gi"),
            ("amd", "AMD Radeon Instinct MI300X OAM", "12", "192Gi"),
            ("cambricon", "MLU370-X8", "8", "64Gi"),
            ("hygon", "K100_AI", "12", "128Gi"),
            ("metax", "MXC500", "8", "64Gi"),
            ("mthreads", "MTT S4000", "8", "64Gi"),
            ("iluvatar", "BI-V150", "8", "64Gi"),
            ("thead", "PPU-ZW810E", "8", "64Gi"),
            ("nvidia", "NVIDIA Mystery 9000", "4", "16Gi"),
            ("unknownvendor", "Whatever", "4", "16Gi"),
            ("nvidia", "", "4", "16Gi"),
        ];
        for (m, p, cpu, ram) in cases {
            let got = preset_unit_resources(m, p);
            assert_eq!((got.cpu.as_str(), got.ram.as_str()), (cpu, ram), "{m} {p}");
        }
    }

    #[test]
    fn a_prefix_takes_whole_tokens_or_nothing() {
        let tokens = ["rtx", "a6000", "ada"];
        assert_eq!(token_prefix_len(&tokens, "rtx-a6000"), Some(2));
        assert_eq!(token_prefix_len(&tokens, "rtx_a6000.ada"), Some(3));
        assert_eq!(token_prefix_len(&tokens, "--rtx--"), Some(1));
        assert_eq!(token_prefix_len(&tokens, ""), Some(0));
        assert_eq!(token_prefix_len(&tokens, "rtx-a600"), None);
        assert_eq!(token_prefix_len(&tokens, "a6000"), None);
        assert_eq!(token_prefix_len(&tokens, "rtx-a6000-ada-x"), None);
    }

    #[test]
    fn preset_matches_whole_tokens_only() {
        // a10 is medium, a100 without a capacity token is medium, l40s is large, l40 medium.
        assert_eq!(preset_unit_resources("nvidia", "NVIDIA L40S").ram, "128Gi");
        assert_eq!(preset_unit_resources("nvidia", "NVIDIA L40").ram, "64Gi");
        assert_eq!(preset_unit_resources("nvidia", "NVIDIA L4").ram, "32Gi");
        assert_eq!(preset_unit_resources("nvidia", "NVIDIA H20").ram, "16Gi");
        assert_eq!(preset_unit_resources("nvidia", "NVIDIA H200").ram, "192Gi");
        // 910b2 does not match the 910b entry by string prefix: it has its own.
        assert_eq!(
            crate::nodefeature::normalize_name("Ascend 910B2", "ascend", 0, false),
            "910b2"
        );
    }

    #[test]
    fn slug_follows_normalize_name() {
        assert_eq!(
            crate::nodefeature::normalize_name("NVIDIA A10G", "nvidia", 0, false),
            "a10g"
        );
        assert_eq!(
            crate::nodefeature::normalize_name("Tesla  T4", "nvidia", 0, false),
            "tesla-t4"
        );
        assert_eq!(
            crate::nodefeature::normalize_name("AMD64 Accelerator", "amd", 0, false),
            "64-accelerator"
        );
        assert_eq!(
            crate::nodefeature::normalize_name("A100--SXM4__", "nvidia", 0, false),
            "a100-sxm4"
        );
    }

    #[test]
    fn derived_specs() {
        let gpu = device_flavor("amd-epyc-7r32", "nvidia-a10g");
        let spec = derived_instance_type_spec(&pool_of_flavor(&gpu, false), &gpu, "AMD EPYC 7R32");
        assert_eq!(spec.display_name, "NVIDIA-A10G");
        assert_eq!(
            (
                spec.unit_resources.cpu.as_str(),
                spec.unit_resources.ram.as_str()
            ),
            ("8", "64Gi")
        );
        assert_eq!(spec.local_storage, "100Gi");
        assert_eq!(spec.general_group, "generic");
        assert!(spec.acceleratable);

        let cpu = cpu_flavor("amd-epyc-7r13");
        let collapsed = derived_instance_type_spec(
            &pool_of_flavor(&cpu, false),
            &cpu,
            "AMD EPYC 7R13 Processor",
        );
        assert_eq!(collapsed.display_name, "CPU-only");
        assert_eq!(
            (
                collapsed.unit_resources.cpu.as_str(),
                collapsed.unit_resources.ram.as_str()
            ),
            ("1", "2Gi")
        );
        let aware = derived_instance_type_spec(
            &pool_of_flavor(&cpu, true),
            &cpu,
            "AMD EPYC 7R13 Processor",
        );
        assert_eq!(aware.display_name, "AMD EPYC 7R13 Processor");
        assert_eq!(aware.general_group, "amd-epyc-7r13");

        let long = "é".repeat(70);
        let named = derived_instance_type_spec(&pool_of_flavor(&cpu, true), &cpu, &long);
        assert_eq!(named.display_name.chars().count(), 64);
    }
}
