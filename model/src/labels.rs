//! Label, annotation and name vocabulary of the chain (research/chain.md §2, §2.5, §6.3).

use std::sync::Arc;

pub const OS: &str = "kubernetes.io/os";
pub const ARCH: &str = "kubernetes.io/arch";
pub const HOSTNAME: &str = "kubernetes.io/hostname";

/// The prefix NFD's CPU model labels share.
pub const CPU_MODEL_PREFIX: &str = "feature.node.kubernetes.io/cpu-model.";
pub const CPU_VENDOR: &str = "feature.node.kubernetes.io/cpu-model.vendor_id";
pub const CPU_FAMILY: &str = "feature.node.kubernetes.io/cpu-model.family";
pub const CPU_ID: &str = "feature.node.kubernetes.io/cpu-model.id";
/// Annotation from the NodeFeatureRule `gpustack-cpu-info`.
pub const CPU_NAME_ANNOTATION: &str = "feature.gpustack.ai/cpu-name";
/// Annotation from the same rule: the CPU family (`CPU_ANNOTATION_PREFIX` + `family`).
pub const CPU_FAMILY_ANNOTATION: &str = "feature.gpustack.ai/cpu-family";
/// Prefix of every `feature.gpustack.ai/cpu-*` annotation.
pub const CPU_ANNOTATION_PREFIX: &str = "feature.gpustack.ai/cpu-";

pub const MANAGED: &str = "gpustack.ai/managed";
pub const FEATURE_PREFIX: &str = "feature.gpustack.ai/";
/// Umbrella boolean on nodes, flavors, queues and InstanceTypes.
pub const ACCELERATABLE: &str = "feature.gpustack.ai/acceleratable";
pub const CPU_ONLY: &str = "feature.gpustack.ai/cpu-only";
pub const ACCELERATABLE_PREFIX: &str = "acceleratable.feature.gpustack.ai/";
pub const GENERAL_PREFIX: &str = "general.feature.gpustack.ai/";
pub const CREDITS_PREFIX: &str = "credits.gpustack.ai/";

pub const TOPOLOGY_PROFILE: &str = "topology.gpustack.ai/profile";
pub const EMPTY_PLAN_HOLD: &str = "topology.gpustack.ai/empty-plan-hold";
pub const TAS_QUEUE: &str = "topology.gpustack.ai/tas-queue";
pub const MIGRATION_PHASE: &str = "topology.gpustack.ai/migration-phase";
pub const MIGRATION_STOP_POLICY: &str = "topology.gpustack.ai/migration-stop-policy";

pub const SCHEDULE_PREFIX: &str = "schedule.gpustack.ai/";
pub const DERIVED_FROM_NODE: &str = "schedule.gpustack.ai/derived-from-node";
pub const QUEUE_ENTRANCE: &str = "schedule.gpustack.ai/queue-entrance";
/// LocalQueue annotation naming the full ClusterQueue behind the hashed name.
pub const QUEUE_ANNOTATION: &str = "schedule.gpustack.ai/queue";

pub const RESOURCE_TYPE: &str = "resource.gpustack.ai/type";
pub const RESOURCE_TYPE_NODES: &str = "nodes";
pub const RESOURCE_TYPE_INSTANCETYPES: &str = "instancetypes";
/// The type label of a generated Kueue Topology (node_topology.go `topologyResourceType`).
pub const RESOURCE_TYPE_TOPOLOGY: &str = "topology";
/// The notes' prefix, as a literal for `concat!` ([`note_key!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! note_prefix {
    () => {
        "note.gpustack.ai/"
    };
}
pub const NOTE_PREFIX: &str = note_prefix!();

/// `note.gpustack.ai/<name>` as a static [`Text`]: a constant key costs no formatting and, past
/// 23 bytes, no allocation.
#[macro_export]
macro_rules! note_key {
    ($name:literal) => {
        $crate::labels::Text::new_static(concat!($crate::note_prefix!(), $name))
    };
}
pub use crate::note_key;
pub const CONTROLLED_FINALIZER: &str = "gpustack.ai/controlled";
pub const KUEUE_IN_USE_FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";

pub const NODE_DEVICES_CHECK: &str = "gpustack-node-devices";
pub const JOINT_CHECK: &str = "gpustack-model-deployment-joint";

/// Default system namespace (env `KUBERNETES_POD_NAMESPACE`), reserved from LocalQueues.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "gpustack-system";
pub const KUBE_SYSTEM: &str = "kube-system";

/// The nine manufacturers the operator knows (pkg/nodefeature/knowns.go @106c5d4).
pub const MANUFACTURERS: [&str; 9] = [
    "amd",
    "ascend",
    "cambricon",
    "hygon",
    "iluvatar",
    "metax",
    "mthreads",
    "nvidia",
    "thead",
];

/// Whether `m` is one of the nine known accelerator manufacturers.
pub fn is_known_manufacturer(m: &str) -> bool {
    MANUFACTURERS.contains(&m)
}

/// `<featureKey>` label for an accelerator key: `acceleratable.feature.gpustack.ai/<aKey>`.
pub fn accelerator_feature_key(a_key: &str) -> Text {
    concat_text(&[ACCELERATABLE_PREFIX, a_key])
}

/// `<featureKey>` label for a CPU key: `general.feature.gpustack.ai/<gKey>`.
pub fn general_feature_key(g_key: &str) -> Text {
    concat_text(&[GENERAL_PREFIX, g_key])
}

/// `<featureKey>.count`: a node's cores or cards under a feature key.
pub fn count_key(feature: &str) -> Text {
    concat_text(&[feature, ".count"])
}

/// A label key or value: short ones (most values, node names) live inline, longer ones (most
/// keys) are shared when cloned, so copying a label map allocates map nodes only.
pub type Text = smol_str::SmolStr;

/// A label or annotation map: one vector sorted by key ([`litemap`]), so a map is one
/// allocation and a lookup a binary search, where the `BTreeMap` it replaces allocated a node
/// per eleven entries. The vector is shared, copied on the first write to a shared map, so a
/// derived node, flavor or queue is copied (out of a step store, into a world's structure)
/// without copying its labels; an empty map holds nothing. Iteration order (by key), the serde
/// form (a map; a repeated key keeps its last value) are the `BTreeMap`'s, so scenario files
/// and reports are unchanged. A map hashes as one number, its contents' hash, worked out once
/// per shared vector ([`Labels::content_hash`]).
#[derive(Clone, Default)]
pub struct Labels(Option<Arc<Shared>>);

type Map = litemap::LiteMap<Text, Text>;

/// A shared map and its contents' hash, 0 until first asked (every write through
/// [`Labels::map_mut`] clears it). Step keys and state fingerprints hash the same shared maps
/// (a cluster's node labels, a step's derived labels) at every derivation: hashing each key and
/// value was 3.8 % of the instructions of a check's first 10,000 states.
#[derive(Default)]
struct Shared {
    map: Map,
    hash: std::sync::atomic::AtomicU64,
}

impl Clone for Shared {
    fn clone(&self) -> Self {
        Shared::of(self.map.clone())
    }
}

impl Shared {
    fn of(map: Map) -> Self {
        Shared {
            map,
            hash: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// The fixed-seed hasher of a map's contents: equal maps hash alike in every run and thread.
const CONTENT_HASHER: foldhash::quality::FixedState =
    foldhash::quality::FixedState::with_seed(0x6c62_272e_07bb_0142);

/// What an empty [`Labels`] reads as.
static EMPTY: Map = litemap::LiteMap::new();

impl Labels {
    pub const fn new() -> Self {
        Labels(None)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        Labels::of_map(litemap::LiteMap::with_capacity(capacity))
    }

    /// Every value, mutably, in key order (`BTreeMap::values_mut`).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Text> {
        self.map_mut().iter_mut().map(|(_, v)| v)
    }

    /// The stored key and its value (`BTreeMap::get_key_value`).
    pub fn get_key_value(&self, key: &str) -> Option<(&Text, &Text)> {
        let (k, v) = self.as_slice().get(self.find_index(key).ok()?)?;
        Some((k, v))
    }

    /// The value under `key` (`BTreeMap::get`).
    pub fn get(&self, key: &str) -> Option<&Text> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    /// The value under each of `keys` (`get` of each), all of which start with `prefix`: one
    /// search for where the keys starting with `prefix` begin and a walk along them, where a
    /// search per key probes the whole map again for each. For a prefix few labels share (an
    /// aKey's `<featureKey>`, whose attributes a device flavor reads five of).
    pub fn values_in_block<const N: usize>(
        &self,
        prefix: &str,
        keys: [&str; N],
    ) -> [Option<&Text>; N] {
        debug_assert!(keys.iter().all(|k| k.starts_with(prefix)));
        let mut out = [None; N];
        let mut left = N;
        let pairs = self.as_slice();
        let start = self.find_index(prefix).unwrap_or_else(|at| at);
        for (k, v) in &pairs[start..] {
            let k = k.as_bytes();
            if left == 0 || !k.starts_with(prefix.as_bytes()) {
                break;
            }
            for (slot, key) in out.iter_mut().zip(keys) {
                if slot.is_none()
                    && k.len() == key.len()
                    && compare_after(k, key.as_bytes(), prefix.len()).0.is_eq()
                {
                    *slot = Some(v);
                    left -= 1;
                }
            }
        }
        out
    }

    /// The value under each of `keys`, given in key order, appended to `out`: one walk along
    /// the map and the keys, where a search per key would probe the map again for each.
    pub fn values_under<'l, 'k>(
        &'l self,
        keys: impl IntoIterator<Item = &'k str>,
        out: &mut Vec<Option<&'l Text>>,
    ) {
        let mut pairs = self.as_slice().iter().peekable();
        for key in keys {
            while pairs.next_if(|(k, _)| text_order(k, key).is_lt()).is_some() {}
            out.push(pairs.next_if(|(k, _)| same_text(k, key)).map(|(_, v)| v));
        }
    }

    /// Sets `key` to `value`, returning the value it replaces (`BTreeMap::insert`): found by
    /// [`Labels::find_index`], where `LiteMap::insert`'s own search calls `memcmp` per probe.
    pub fn insert(&mut self, key: Text, value: Text) -> Option<Text> {
        let at = self.find_index(&key);
        let map = self.map_mut();
        match at {
            Ok(i) => map
                .iter_mut()
                .nth(i)
                .map(|(_, v)| std::mem::replace(v, value)),
            Err(i) => {
                let mut pairs = std::mem::take(map).into_tuple_vec();
                pairs.insert(i, (key, value));
                *map = Map::from_sorted_store_unchecked(pairs);
                None
            }
        }
    }

    /// A copy of this map with `key` set to `value`, this map unchanged: one vector built with
    /// the pair in its place, where copying the pairs out and collecting them sorted them again.
    pub fn with(&self, key: Text, value: Text) -> Labels {
        let pairs = self.as_slice();
        let (at, after) = match self.find_index(&key) {
            Ok(i) => (i, i + 1),
            Err(i) => (i, i),
        };
        let mut out = Vec::with_capacity(pairs.len() + 1);
        out.extend_from_slice(&pairs[..at]);
        out.push((key, value));
        out.extend_from_slice(&pairs[after..]);
        Labels::of_map(Map::from_sorted_store_unchecked(out))
    }

    /// Whether `key` is set (`BTreeMap::contains_key`).
    pub fn contains_key(&self, key: &str) -> bool {
        self.find_index(key).is_ok()
    }

    /// Where `key` is, or where it would go (`LiteMap::find_index`): a binary search that
    /// skips the prefix `key` is known to share with both ends of the range left. Most lookups
    /// are of keys sharing a long prefix with their neighbours
    /// (`acceleratable.feature.gpustack.ai/…`), which a plain search compares again at every
    /// probe.
    pub fn find_index(&self, key: &str) -> Result<usize, usize> {
        let (pairs, key) = (self.as_slice(), key.as_bytes());
        // pairs[..lo] < key < pairs[hi..]; key shares `lo_common` bytes with pairs[lo - 1] and
        // `hi_common` with pairs[hi], so every key between them shares the smaller count.
        let (mut lo, mut hi) = (0, pairs.len());
        let (mut lo_common, mut hi_common) = (0, 0);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let known = lo_common.min(hi_common);
            match compare_after(pairs[mid].0.as_bytes(), key, known) {
                (std::cmp::Ordering::Less, common) => (lo, lo_common) = (mid + 1, common),
                (std::cmp::Ordering::Greater, common) => (hi, hi_common) = (mid, common),
                (std::cmp::Ordering::Equal, _) => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Writes `other`'s labels over this map's, `other`'s value winning on an equal key (what
    /// [`Extend`] with `other`'s pairs gives): one merge of the two sorted vectors, where
    /// inserting pair by pair searches and shifts once per pair. The merged map keeps room for
    /// a few more labels.
    pub fn overlay(&mut self, other: &Labels) {
        const ROOM: usize = 8;
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        let merged = merge_over(self.iter(), other, self.len() + other.len() + ROOM);
        *self = Labels::of_map(Map::from_sorted_store_unchecked(merged));
    }

    /// This map with its labels whose keys are `replaced` swapped for `by`'s, whose keys must
    /// all be `replaced` ones (what filtering them out and extending by `by` gives). A copy of
    /// this map, sharing its vector, when those labels already are `by`'s; else one merge of
    /// the two sorted vectors, where collecting the kept pairs sorted them again.
    pub fn with_replaced(&self, replaced: impl Fn(&str) -> bool, by: &Labels) -> Labels {
        debug_assert!(
            by.keys().all(|k| replaced(k)),
            "a replacing key is not replaced"
        );
        let mut current = self.iter().filter(|(k, _)| replaced(k));
        let unchanged = by.iter().all(|(k, v)| {
            current
                .next()
                .is_some_and(|(ck, cv)| same_text(ck, k) && same_text(cv, v))
        }) && current.next().is_none();
        if unchanged {
            return self.clone();
        }
        let kept = self.iter().filter(|(k, _)| !replaced(k));
        let merged = merge_over(kept, by, self.len() + by.len());
        if merged.is_empty() {
            return Labels::new();
        }
        Labels::of_map(Map::from_sorted_store_unchecked(merged))
    }

    /// Which shared map this is: equal for a map and its copies until one is written, and 0
    /// for a map holding nothing. Maps with different identities may still be equal.
    pub fn identity(&self) -> usize {
        self.0.as_ref().map_or(0, |map| Arc::as_ptr(map) as usize)
    }

    /// The map, unshared first if another holder shares it; its stored hash cleared, as the
    /// caller may write.
    fn map_mut(&mut self) -> &mut Map {
        let shared = Arc::make_mut(self.0.get_or_insert_with(Default::default));
        *shared.hash.get_mut() = 0;
        &mut shared.map
    }

    fn of_map(map: Map) -> Self {
        Labels(Some(Arc::new(Shared::of(map))))
    }

    /// The hash of the pairs in key order, the same for equal maps (an empty one included),
    /// computed once per shared vector. 0 is kept for "not yet", so a map whose hash is 0
    /// stores 1.
    pub fn content_hash(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        let of = |map: &Map| {
            use std::hash::BuildHasher;
            CONTENT_HASHER.hash_one(map).max(1)
        };
        match &self.0 {
            None => of(&EMPTY),
            Some(shared) => match shared.hash.load(Relaxed) {
                0 => {
                    let h = of(&shared.map);
                    shared.hash.store(h, Relaxed);
                    h
                }
                h => h,
            },
        }
    }
}

/// `ours`, pairs in key order, merged with `theirs`'s, `theirs` winning on an equal key: one
/// pass over the two sorted runs ([`Labels::overlay`], [`Labels::with_replaced`]).
fn merge_over<'a>(
    ours: impl Iterator<Item = (&'a Text, &'a Text)>,
    theirs: &'a Labels,
    capacity: usize,
) -> Vec<(Text, Text)> {
    let mut merged = Vec::with_capacity(capacity);
    let mut theirs = theirs.iter().peekable();
    for (k, v) in ours {
        while let Some((tk, tv)) = theirs.next_if(|(tk, _)| *tk < k) {
            merged.push((tk.clone(), tv.clone()));
        }
        match theirs.next_if(|(tk, _)| *tk == k) {
            Some((tk, tv)) => merged.push((tk.clone(), tv.clone())),
            None => merged.push((k.clone(), v.clone())),
        }
    }
    merged.extend(theirs.map(|(k, v)| (k.clone(), v.clone())));
    merged
}

/// Whether `a` and `b` are the same text, compared here rather than by a call to `memcmp`: the
/// model compares short texts (label keys and values, names) by the million, and on this
/// project's machine `memcmp` took a fifth of a derivation's time; comparing the hash-map keys
/// of device groups in line took a derivation of 1,000 × 8 from 3.0 to 2.6 ms
/// (docs/benchmarks.md, fourteenth run).
#[inline]
pub fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && (std::ptr::eq(a.as_ptr(), b.as_ptr())
            || compare_after(a.as_bytes(), b.as_bytes(), 0).0.is_eq())
}

/// [`same_text`] for texts that may be absent.
#[inline]
pub fn same_optional_text(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_text(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// `str`'s order of `a` and `b`, compared as [`same_text`] compares.
#[inline]
pub fn text_order(a: &str, b: &str) -> std::cmp::Ordering {
    compare_after(a.as_bytes(), b.as_bytes(), 0).0
}

/// The byte order of `a` and `b` (`str`'s order) and the length of their common prefix, both
/// known to start with the same `known` bytes; eight bytes compared at a time.
#[inline]
fn compare_after(a: &[u8], b: &[u8], known: usize) -> (std::cmp::Ordering, usize) {
    let common = a.len().min(b.len());
    let mut i = known.min(common);
    while let (Some(x), Some(y)) = (a.get(i..i + 8), b.get(i..i + 8)) {
        let differ = u64::from_le_bytes(x.try_into().unwrap_or_default())
            ^ u64::from_le_bytes(y.try_into().unwrap_or_default());
        if differ != 0 {
            let at = i + differ.trailing_zeros() as usize / 8;
            return (a[at].cmp(&b[at]), at);
        }
        i += 8;
    }
    while i < common {
        if a[i] != b[i] {
            return (a[i].cmp(&b[i]), i);
        }
        i += 1;
    }
    (a.len().cmp(&b.len()), common)
}

impl std::ops::Deref for Labels {
    type Target = Map;
    fn deref(&self) -> &Map {
        self.0.as_deref().map_or(&EMPTY, |shared| &shared.map)
    }
}

impl std::ops::DerefMut for Labels {
    fn deref_mut(&mut self) -> &mut Map {
        self.map_mut()
    }
}

impl PartialEq for Labels {
    fn eq(&self, other: &Self) -> bool {
        let same = match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same || **self == **other
    }
}

impl Eq for Labels {}

impl PartialOrd for Labels {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Labels {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl std::hash::Hash for Labels {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.content_hash())
    }
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(Text, Text)> for Labels {
    /// The pairs sorted once by key (a stable sort, keys compared in line by [`text_order`]),
    /// the last pair of a repeated key winning, as `LiteMap`'s and `BTreeMap`'s `collect` do.
    /// Building a map this way costs a fraction of inserting its pairs one by one, each insert
    /// searching, shifting and checking the map is unshared.
    fn from_iter<I: IntoIterator<Item = (Text, Text)>>(iter: I) -> Self {
        let mut pairs: Vec<(Text, Text)> = iter.into_iter().collect();
        if pairs.is_empty() {
            return Labels::new();
        }
        pairs.sort_by(|a, b| text_order(&a.0, &b.0));
        pairs.dedup_by(|later, kept| {
            let repeated = same_text(&later.0, &kept.0);
            if repeated {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            repeated
        });
        Labels::of_map(Map::from_sorted_store_unchecked(pairs))
    }
}

impl Extend<(Text, Text)> for Labels {
    /// Each pair in turn, a later value winning (`BTreeMap::extend`). A map holding labels
    /// already takes a few pairs by binary search, where `LiteMap::extend` appends them and
    /// sorts the whole map again.
    /// Nothing to add leaves a map holding nothing without a vector (most nodes have no RDMA
    /// or fabric labels to add).
    fn extend<I: IntoIterator<Item = (Text, Text)>>(&mut self, iter: I) {
        let mut pairs = iter.into_iter().peekable();
        if pairs.peek().is_none() {
            return;
        }
        if self.is_empty() {
            *self = pairs.collect();
        } else {
            for (k, v) in pairs {
                self.insert(k, v);
            }
        }
    }
}

impl IntoIterator for Labels {
    type Item = (Text, Text);
    type IntoIter = std::vec::IntoIter<(Text, Text)>;
    fn into_iter(self) -> Self::IntoIter {
        let pairs = self
            .0
            .map(|shared| Arc::unwrap_or_clone(shared).map.into_tuple_vec());
        pairs.unwrap_or_default().into_iter()
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a Text, &'a Text);
    type IntoIter =
        <Vec<(Text, Text)> as litemap::store::StoreIterable<'a, Text, Text>>::KeyValueIter;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<const N: usize> From<[(Text, Text); N]> for Labels {
    fn from(pairs: [(Text, Text); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl serde::Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Labels {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> serde::de::Visitor<'de> for Pairs {
            type Value = Labels;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut access: M,
            ) -> Result<Labels, M::Error> {
                let mut pairs = Vec::with_capacity(access.size_hint().unwrap_or(0).min(4096));
                while let Some(pair) = access.next_entry()? {
                    pairs.push(pair);
                }
                Ok(pairs.into_iter().collect())
            }
        }
        deserializer.deserialize_map(Pairs)
    }
}

/// A label map from owned or borrowed `(key, value)` pairs.
pub fn of<K: Into<Text>, V: Into<Text>>(pairs: impl IntoIterator<Item = (K, V)>) -> Labels {
    pairs
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
}

/// A label map from `(key, value)` pairs.
pub fn from_pairs(pairs: &[(&str, &str)]) -> Labels {
    of(pairs.iter().copied())
}

pub use smol_str::ToSmolStr;

/// [`format!`] into a [`Text`]: formatted on the stack, so a derived key longer than the inline
/// 23 bytes costs one allocation (its shared copy) and a shorter one none.
pub fn text_of(args: std::fmt::Arguments<'_>) -> Text {
    if let Some(s) = args.as_str() {
        return Text::new_static(s);
    }
    let mut buf = arrayvec::ArrayString::<256>::new();
    match std::fmt::write(&mut buf, args) {
        Ok(()) => Text::new(buf.as_str()),
        Err(_) => Text::new(std::fmt::format(args)),
    }
}

/// `parts` one after another as a [`Text`]: [`text!`] of string pieces without `core::fmt`,
/// which took a tenth of a small cluster's derivation (docs/benchmarks.md, sixteenth run).
pub fn concat_text(parts: &[&str]) -> Text {
    concatenated(parts, |s| Text::new(s))
}

/// The value under the key `parts` spell one after another, the key written on the stack: a
/// derived key that is looked up and never kept costs no allocation.
pub fn get_concat<'l>(labels: &'l Labels, parts: &[&str]) -> Option<&'l Text> {
    concatenated(parts, |k| labels.get(k))
}

/// `use_it` applied to `parts` written one after another into a stack buffer (on the heap only
/// past 256 bytes, longer than any label key).
fn concatenated<R>(parts: &[&str], use_it: impl FnOnce(&str) -> R) -> R {
    let mut buf = arrayvec::ArrayString::<256>::new();
    for part in parts {
        if buf.try_push_str(part).is_err() {
            return use_it(&parts.concat());
        }
    }
    use_it(&buf)
}

/// A boolean label value, spelled as Go's `strconv.FormatBool` spells it.
pub fn bool_text(value: bool) -> Text {
    Text::new_static(if value { "true" } else { "false" })
}

/// An integer label value in decimal (Go's `strconv.Itoa`), its digits written by `itoa`
/// rather than `core::fmt`; inline for any 64-bit integer (at most 20 digits and a sign).
pub fn int_text(value: impl itoa::Integer) -> Text {
    Text::new(itoa::Buffer::new().format(value))
}

/// `format!` for [`Text`] ([`text_of`]).
#[macro_export]
macro_rules! text {
    ($($arg:tt)*) => {
        $crate::labels::text_of(format_args!($($arg)*))
    };
}
pub use crate::text;

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Collecting pairs, in any order and with repeated keys, gives `BTreeMap`'s map: each
        /// key once, in key order, holding its last value; extending an empty map the same.
        #[test]
        fn collecting_pairs_gives_the_btree_maps_map(
            pairs in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "a",
                        "b",
                        "kubernetes.io/os",
                        "acceleratable.feature.gpustack.ai/nvidia",
                        "acceleratable.feature.gpustack.ai/nvidia-a10",
                        "acceleratable.feature.gpustack.ai/nvidia-a10.count",
                        "é",
                    ]),
                    0u8..4,
                ),
                0..24,
            )
        ) {
            let texts = || pairs.iter().map(|(k, v)| (Text::new(k), int_text(*v)));
            let want: std::collections::BTreeMap<Text, Text> = texts().collect();
            let got: Labels = texts().collect();
            proptest::prop_assert!(got.iter().eq(want.iter()));
            let mut extended = Labels::new();
            extended.extend(texts());
            proptest::prop_assert!(extended.iter().eq(want.iter()));
        }

        /// `values_in_block` finds what `get` finds for each key: keys absent, a key the prefix
        /// is itself, a key asked for twice, a longer aKey sharing the prefix (`…/a10x.count`
        /// lies inside the block), and keys outside the block with the same attribute and length.
        #[test]
        fn a_block_lookup_is_a_get_per_key(
            map in proptest::collection::btree_map(
                proptest::sample::select(vec![
                    "acceleratable.feature.gpustack.ai/nvidia-a10",
                    "acceleratable.feature.gpustack.ai/nvidia-a10.cores",
                    "acceleratable.feature.gpustack.ai/nvidia-a10.count",
                    "acceleratable.feature.gpustack.ai/nvidia-a10.memory",
                    "acceleratable.feature.gpustack.ai/nvidia-a10x.count",
                    "acceleratable.feature.gpustack.ai/nvidia-a11.count",
                    "acceleratable.feature.gpustack.ai/nvidia-a1",
                    "acceleratable.feature.gpustack.ai/nvidia-a1.count",
                    "acceleratable.feature.gpustack.ai/nvidia-a10.product",
                    "a",
                    "z",
                ]),
                0u8..4,
                0..10,
            )
        ) {
            let labels: Labels = map.iter().map(|(k, v)| (Text::new(k), int_text(*v))).collect();
            let prefix = "acceleratable.feature.gpustack.ai/nvidia-a10";
            let keys = [".count", ".product", ".family", ".memory", ".cores", "", ".count"]
                .map(|attribute| format!("{prefix}{attribute}"));
            let got = labels.values_in_block(prefix, keys.each_ref().map(String::as_str));
            proptest::prop_assert_eq!(got, keys.each_ref().map(|k| labels.get(k)));
        }

        /// `with_replaced` is filtering the replaced labels out and extending by the new ones,
        /// whether they differ or not (then the copy shares the map).
        #[test]
        fn replacing_labels_is_filtering_and_extending(
            own in proptest::collection::btree_map(
                proptest::sample::select(vec!["a", "fit/a", "fit/b", "m", "fit/z", "z", "é"]),
                0u8..3,
                0..7,
            ),
            by in proptest::collection::btree_map(
                proptest::sample::select(vec!["fit/a", "fit/b", "fit/c", "fit/z"]),
                0u8..3,
                0..4,
            ),
            by_own_fit_labels in proptest::bool::ANY,
        ) {
            let replaced = |k: &str| k.starts_with("fit/");
            let own: Labels = own.iter().map(|(k, v)| (Text::new(k), int_text(*v))).collect();
            let by: Labels = if by_own_fit_labels {
                own.iter().filter(|(k, _)| replaced(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
            } else {
                by.iter().map(|(k, v)| (Text::new(k), int_text(*v))).collect()
            };
            let mut want: Labels = own
                .iter()
                .filter(|(k, _)| !replaced(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            want.extend(by.iter().map(|(k, v)| (k.clone(), v.clone())));
            let got = own.with_replaced(replaced, &by);
            proptest::prop_assert!(got.iter().eq(want.iter()));
            if by_own_fit_labels {
                proptest::prop_assert_eq!(got.identity(), own.identity());
            }
        }
    }

    /// `with` is `insert` into a copy: a new key in every place, a key already set replaced,
    /// and the map it copies left as it was.
    #[test]
    fn a_map_with_a_pair_is_a_copy_with_it_inserted() {
        let map: Labels = [("b", "1"), ("d", "2")]
            .into_iter()
            .map(|(k, v)| (Text::new(k), Text::new(v)))
            .collect();
        for key in ["a", "b", "c", "d", "e"] {
            let mut want = map.clone();
            want.insert(Text::new(key), Text::new("9"));
            let got = map.with(Text::new(key), Text::new("9"));
            assert!(got.iter().eq(want.iter()), "{key}: {got:?}");
            assert_eq!(got, want);
        }
        assert_eq!(Labels::new().with("k".into(), "v".into()).len(), 1);
        assert_eq!(map.len(), 2);
    }

    /// `overlay` is `extend` with the other map's pairs, whatever the overlap, and leaves a
    /// map it shares untouched.
    #[test]
    fn overlaying_a_map_is_extending_by_its_pairs() {
        let map = |pairs: &[(&str, &str)]| -> Labels {
            pairs
                .iter()
                .map(|(k, v)| (Text::new(k), Text::new(v)))
                .collect()
        };
        type Pairs<'p> = &'p [(&'p str, &'p str)];
        let cases: [(Pairs, Pairs); 7] = [
            (&[], &[]),
            (&[("a", "1")], &[]),
            (&[], &[("a", "1")]),
            (
                &[("b", "1"), ("d", "2")],
                &[("a", "x"), ("c", "y"), ("e", "z")],
            ),
            (&[("a", "1"), ("b", "2"), ("c", "3")], &[("b", "x")]),
            (
                &[("a", "1"), ("c", "3")],
                &[("a", "x"), ("b", "y"), ("c", "z"), ("d", "w")],
            ),
            (&[("m", "1")], &[("a", "x"), ("b", "y")]),
        ];
        for (mine, theirs) in cases {
            let (base, other) = (map(mine), map(theirs));
            let mut extended = base.clone();
            extended.extend(other.iter().map(|(k, v)| (k.clone(), v.clone())));
            let mut overlaid = base.clone();
            overlaid.overlay(&other);
            assert_eq!(overlaid, extended, "{mine:?} overlaid by {theirs:?}");
            assert!(overlaid
                .keys()
                .zip(overlaid.keys().skip(1))
                .all(|(a, b)| a < b));
            assert_eq!(base, map(mine), "the shared map was written");
        }
        let mut nothing = Labels::new();
        nothing.extend(std::iter::empty());
        assert_eq!(nothing.identity(), 0, "extending by nothing made a vector");
    }

    /// The in-line key order is `str`'s, and its common prefix the keys', on keys of every
    /// length around the eight-byte step sharing prefixes of every length; a lookup finds what
    /// a linear scan finds, one by one or walking sorted keys.
    #[test]
    fn keys_order_and_are_found_as_strings_are() {
        let stems = [
            "",
            "a",
            "acceleratable.feature.gpustack.ai/",
            "kubernetes.io/os",
            "é",
        ];
        let mut keys: Vec<String> = Vec::new();
        for stem in stems {
            for tail in [
                "",
                "a",
                "b",
                "ab",
                "abcdefgh",
                "abcdefgi",
                "abcdefghi",
                "\u{7f}",
                "ü",
            ] {
                keys.push(format!("{stem}{tail}"));
            }
        }
        for a in &keys {
            for b in &keys {
                let (order, common) = compare_after(a.as_bytes(), b.as_bytes(), 0);
                assert_eq!(order, a.cmp(b), "{a:?} vs {b:?}");
                let shared = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                assert_eq!(common, shared, "{a:?} vs {b:?}");
                assert_eq!(
                    compare_after(a.as_bytes(), b.as_bytes(), shared),
                    (order, shared)
                );
                assert_eq!(text_order(a, b), order, "{a:?} vs {b:?}");
                assert_eq!(same_text(a, b), a == b, "{a:?} vs {b:?}");
                assert_eq!(same_text(a, &b.clone()), a == b, "{a:?} vs a copy of {b:?}");
                assert_eq!(same_optional_text(Some(a), Some(b)), a == b);
                assert!(!same_optional_text(Some(a), None) && !same_optional_text(None, Some(b)));
            }
        }
        assert!(same_optional_text(None, None));
        // Inserting one by one, in an order other than the keys', keeps them sorted and
        // returns what each key held, as a BTreeMap does; a copy made before is not written.
        let (mut inserted, mut reference) = (Labels::new(), std::collections::BTreeMap::new());
        for (i, k) in keys.iter().rev().chain(keys.iter().step_by(3)).enumerate() {
            let v = Text::new(i.to_string());
            assert_eq!(
                inserted.insert(Text::new(k), v.clone()),
                reference.insert(Text::new(k), v),
                "{k:?}"
            );
        }
        assert!(inserted.iter().eq(reference.iter()));
        let before = inserted.clone();
        inserted.insert(Text::new("a"), Text::new("written"));
        inserted.insert(Text::new("zz"), Text::new("new"));
        assert!(before.iter().eq(reference.iter()));
        let labels = of(keys.iter().step_by(2).map(|k| (k.as_str(), "v")));
        for k in &keys {
            let scanned = labels.iter().find(|(have, _)| *have == k).map(|(_, v)| v);
            assert_eq!(labels.get(k), scanned, "{k:?}");
            assert_eq!(labels.contains_key(k), scanned.is_some(), "{k:?}");
        }
        assert_eq!(Labels::new().get("a"), None);
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        let mut walked = Vec::new();
        labels.values_under(sorted.iter().map(String::as_str), &mut walked);
        let searched: Vec<_> = sorted.iter().map(|k| labels.get(k)).collect();
        assert_eq!(walked, searched);
    }

    #[test]
    fn cpu_annotation_keys_are_the_prefix_and_their_attribute() {
        assert_eq!(CPU_NAME_ANNOTATION, format!("{CPU_ANNOTATION_PREFIX}name"));
        assert_eq!(
            CPU_FAMILY_ANNOTATION,
            format!("{CPU_ANNOTATION_PREFIX}family")
        );
    }

    #[test]
    fn text_formats_as_format_does_at_every_length() {
        let long = "x".repeat(300);
        for piece in ["", "nvidia", "0123456789abcdefghijklmnop", long.as_str()] {
            assert_eq!(
                text!("{ACCELERATABLE_PREFIX}{piece}.count"),
                format!("{ACCELERATABLE_PREFIX}{piece}.count")
            );
            assert_eq!(text!("{piece}"), piece);
        }
        assert_eq!(text!("true"), "true");
    }

    #[test]
    fn concatenated_and_number_texts_read_as_format_writes_them() {
        let long = "x".repeat(300);
        for piece in ["", "nvidia", "0123456789abcdefghijklmnop", long.as_str()] {
            assert_eq!(
                concat_text(&[ACCELERATABLE_PREFIX, piece, ".count"]),
                format!("{ACCELERATABLE_PREFIX}{piece}.count")
            );
            assert_eq!(concat_text(&[piece]), piece);
        }
        assert_eq!(concat_text(&[]), "");
        for n in [0, 7, -12, i64::MAX, i64::MIN] {
            assert_eq!(int_text(n), n.to_string());
        }
        assert_eq!(int_text(u64::MAX), u64::MAX.to_string());
        assert_eq!(int_text(42usize), "42");
        for b in [true, false] {
            assert_eq!(bool_text(b), b.to_string());
        }
    }

    #[test]
    fn a_copied_map_is_shared_until_written_and_compares_by_content() {
        let original = from_pairs(&[("a", "1"), ("b", "2")]);
        let mut copy = original.clone();
        assert!(std::ptr::eq(&*original, &*copy), "a copy shares the map");
        assert_eq!(copy.identity(), original.identity());
        copy.insert("c".into(), "3".into());
        assert_ne!(
            copy.identity(),
            original.identity(),
            "a written copy is its own map"
        );
        assert_eq!(Labels::new().identity(), 0);
        *copy.values_mut().next().unwrap() = "9".into();
        assert_eq!(
            original,
            from_pairs(&[("a", "1"), ("b", "2")]),
            "the original is unchanged"
        );
        assert_eq!(copy, from_pairs(&[("a", "9"), ("b", "2"), ("c", "3")]));
        // an emptied map equals, hashes and orders as a map never written
        let mut emptied = from_pairs(&[("a", "1")]);
        emptied.remove("a");
        assert_eq!(emptied, Labels::new());
        assert_eq!(emptied.cmp(&Labels::new()), std::cmp::Ordering::Equal);
        use std::hash::{BuildHasher, RandomState};
        let state = RandomState::new();
        assert_eq!(state.hash_one(&emptied), state.hash_one(Labels::new()));
        assert_eq!(Labels::new().into_iter().count(), 0);
        assert_eq!(copy.clone().into_iter().count(), 3);
    }

    /// A map hashes as every equal map does, however it was built or written: each write
    /// clears the hash it stored, and a copy's write leaves the original's.
    #[test]
    fn equal_maps_hash_alike_after_every_kind_of_write() {
        use std::hash::{BuildHasher, RandomState};
        let state = RandomState::new();
        let hash = |l: &Labels| state.hash_one(l);
        let fresh = |pairs: &[(&str, &str)]| hash(&from_pairs(pairs));
        let original = from_pairs(&[("a", "1"), ("b", "2")]);
        let before = hash(&original);
        let mut l = original.clone();
        assert_eq!(hash(&l), before, "a copy hashes as its original");
        l.insert("c".into(), "3".into());
        assert_eq!(hash(&l), fresh(&[("a", "1"), ("b", "2"), ("c", "3")]));
        *l.values_mut().next().unwrap() = "9".into();
        assert_eq!(hash(&l), fresh(&[("a", "9"), ("b", "2"), ("c", "3")]));
        l.remove("b");
        assert_eq!(hash(&l), fresh(&[("a", "9"), ("c", "3")]));
        l.extend([(Text::new("d"), Text::new("4"))]);
        assert_eq!(hash(&l), fresh(&[("a", "9"), ("c", "3"), ("d", "4")]));
        l.overlay(&from_pairs(&[("a", "1")]));
        assert_eq!(hash(&l), fresh(&[("a", "1"), ("c", "3"), ("d", "4")]));
        let replaced = l.with_replaced(|k| k == "d", &from_pairs(&[("d", "5")]));
        assert_eq!(
            hash(&replaced),
            fresh(&[("a", "1"), ("c", "3"), ("d", "5")])
        );
        assert_eq!(hash(&original), before, "the original keeps its hash");
        assert_ne!(hash(&original), hash(&l), "different maps hash apart here");
        assert_eq!(
            original.content_hash(),
            from_pairs(&[("a", "1"), ("b", "2")]).content_hash()
        );
    }

    #[test]
    fn a_concatenated_key_finds_what_the_same_text_would() {
        let long = "y".repeat(300);
        let long_key = format!("{long}.count");
        let labels = of([("a.count", "1"), ("b.count", "2"), (long_key.as_str(), "3")]);
        for (piece, want) in [
            ("a", Some("1")),
            ("b", Some("2")),
            ("c", None),
            (long.as_str(), Some("3")),
        ] {
            let got = get_concat(&labels, &[piece, ".count"]);
            assert_eq!(got.map(Text::as_str), want, "{piece}");
        }
        assert_eq!(note_key!("cores"), format!("{NOTE_PREFIX}cores"));
    }
}
