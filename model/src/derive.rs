//! The whole chain for one cluster shape, at quiescence (research/chain.md §17 rules 1–25).
//! Each step calls the one rule that decides it; this file only wires them together.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

// The derivation's own lookup tables hash borrowed names and labels, never input an adversary
// picks for collisions: foldhash, where SipHash was a tenth of an incremental re-derivation.
use foldhash::{HashMap, HashMapExt};
use serde::{Deserialize, Serialize};

use crate::cluster::{Cluster, Era, Node, Settings, SharedOnceMax};
use crate::devices::Devices;
use crate::error::ModelError;
use crate::flavor::Contribution;
use crate::labels::{self, Labels, Text, DERIVED_FROM_NODE, NOTE_PREFIX};
use crate::mutants::Mutant;
use crate::node_rules::NodeRules;
use crate::objects::{
    ClusterQueue, InstanceType, InstanceTypeSpec, InstanceTypeStatus, LocalQueue, NodeFlavor,
    ResourceFlavor, Topology,
};
use crate::provenance::{NoRecord, Provenance, Record};
use crate::queue::{FlavorPlacement, PoolFlavor, PoolNode, QueueWorld, Settled};
use crate::steps::{fingerprint, StepStore};
use crate::units::UNITS_PER_CARD;
use crate::{detail, explain, flavor, nodefeature, pool, queue, views, webhook};

/// One node after the Worker and Device Manager have labelled it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DerivedNode {
    pub name: Text,
    /// Effective labels (NFD ∪ Device Manager ∪ Worker ∪ topology profile).
    pub labels: Labels,
    /// Managed and (E3) profiled: contributes to flavors (rule 7).
    pub eligible: bool,
    /// Flavors the node contributes (rule 8), shared with alike nodes.
    pub flavors: Arc<[NodeFlavor]>,
    /// Labels of the node's Devices object, if it has one (rule 18).
    pub devices_labels: Option<Labels>,
    /// The levels its profile hashes (E3; empty in E2): the topology reconciler's choice
    /// among the TopologySources, hostname last (devices.md §5).
    #[serde(default, skip_serializing_if = "no_levels")]
    pub topology_levels: Arc<[String]>,
}

/// Whether a node has no topology levels (E2), which its serde form leaves out.
fn no_levels(levels: &Arc<[String]>) -> bool {
    levels.is_empty()
}

/// Every object the chain produces for a cluster shape.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Derived {
    pub nodes: Vec<DerivedNode>,
    pub resource_flavors: Vec<ResourceFlavor>,
    pub instance_types: Vec<InstanceType>,
    pub cluster_queues: Vec<ClusterQueue>,
    pub local_queues: Vec<LocalQueue>,
    /// The generated Kueue Topologies (E3), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topologies: Vec<Topology>,
}

impl Derived {
    /// The chain's objects: ResourceFlavors, InstanceTypes, ClusterQueues and LocalQueues.
    pub fn object_count(&self) -> usize {
        self.resource_flavors.len()
            + self.instance_types.len()
            + self.cluster_queues.len()
            + self.local_queues.len()
    }
}

/// The nodes as the pool steps read them, with indexes built once so that each pool looks at
/// its own nodes only (a pool step never scans the whole cluster).
struct NodeTable<'a> {
    rows: Vec<(&'a Node, &'a DerivedNode)>,
    /// Each row's node-step key when a step store serves the derivation (zeros otherwise): a pool step's
    /// key names its nodes by these instead of hashing them again.
    keys: &'a [u64],
    by_name: HashMap<&'a str, usize>,
    /// The rows with a Devices object, grouped by their Devices labels: alike nodes share one
    /// label map (`node_rules`), so a pool tests each distinct map once.
    devices_groups: Vec<DevicesGroup<'a>>,
    /// Groups by each `(key, value)` label of their map.
    by_devices_label: HashMap<(&'a str, &'a str), Vec<usize>>,
}

/// Rows whose Devices labels are one shared map.
struct DevicesGroup<'a> {
    labels: &'a Labels,
    rows: Vec<usize>,
}

impl<'a> NodeTable<'a> {
    fn new(nodes: &'a [Node], derived: &'a [DerivedNode], keys: &'a [u64]) -> Self {
        let rows: Vec<(&Node, &DerivedNode)> = nodes.iter().zip(derived).collect();
        let by_name = rows
            .iter()
            .enumerate()
            .map(|(i, (_, d))| (d.name.as_str(), i))
            .collect();
        let mut devices_groups: Vec<DevicesGroup> = Vec::new();
        let mut group_of_map: HashMap<usize, usize> = HashMap::new();
        for (i, (node, d)) in rows.iter().enumerate() {
            let Some(labels) = d.devices_labels.as_ref().filter(|_| node.devices.is_some()) else {
                continue;
            };
            let group = *group_of_map.entry(labels.identity()).or_insert_with(|| {
                devices_groups.push(DevicesGroup {
                    labels,
                    rows: Vec::new(),
                });
                devices_groups.len() - 1
            });
            devices_groups[group].rows.push(i);
        }
        let mut by_devices_label: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (g, group) in devices_groups.iter().enumerate() {
            for (k, v) in group.labels.iter() {
                by_devices_label
                    .entry((k.as_str(), v.as_str()))
                    .or_default()
                    .push(g);
            }
        }
        NodeTable {
            rows,
            keys,
            by_name,
            devices_groups,
            by_devices_label,
        }
    }

    /// Rows of the named nodes, in cluster order.
    fn named<'n>(&self, names: impl Iterator<Item = &'n str>) -> Vec<usize> {
        let mut idx: Vec<usize> = names.filter_map(|n| self.by_name.get(n).copied()).collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    /// Rule 18: rows whose Devices labels carry every selector label, in cluster order.
    /// Candidate groups come from the selector's rarest label; each is then checked against
    /// the whole selector.
    fn devices_matching(&self, selector: &Labels) -> Vec<usize> {
        let candidates = selector
            .iter()
            .map(|(k, v)| {
                self.by_devices_label
                    .get(&(k.as_str(), v.as_str()))
                    .map_or(&[][..], Vec::as_slice)
            })
            .min_by_key(|groups| groups.len())
            .unwrap_or(&[]);
        let mut rows: Vec<usize> = candidates
            .iter()
            .map(|&g| &self.devices_groups[g])
            .filter(|group| pool::labels_contain(group.labels, selector))
            .flat_map(|group| group.rows.iter().copied())
            .collect();
        rows.sort_unstable();
        rows
    }

    /// The Devices objects of `rows`.
    fn devices(&self, rows: &[usize]) -> Vec<&'a Devices> {
        rows.iter()
            .filter_map(|&i| self.rows[i].0.devices.as_ref())
            .collect()
    }
}

/// Checks a shape the model cannot derive from; errors name the field path.
pub fn validate(cluster: &Cluster) -> Result<(), ModelError> {
    let mut seen = BTreeMap::new();
    for (i, node) in cluster.nodes.iter().enumerate() {
        let at = format!("nodes[{i}]");
        if node.name.is_empty() {
            return Err(ModelError::invalid(
                format!("{at}.name"),
                "must not be empty",
            ));
        }
        if let Some(first) = seen.insert(node.name.as_str(), i) {
            return Err(ModelError::invalid(
                format!("{at}.name"),
                format!("duplicate node name `{}` (also nodes[{first}])", node.name),
            ));
        }
        if let Some(devices) = &node.devices {
            validate_devices(&at, devices)?;
        }
    }
    let mut names = BTreeMap::new();
    for (i, it) in cluster.instance_types.iter().enumerate() {
        if let Some(first) = names.insert(it.name.as_str(), i) {
            return Err(ModelError::invalid(
                format!("instance_types[{i}].name"),
                format!(
                    "duplicate InstanceType `{}` (also instance_types[{first}])",
                    it.name
                ),
            ));
        }
        webhook::validate_create(&it.spec).map_err(|rejected| {
            ModelError::invalid(
                format!("instance_types[{i}].spec"),
                rejected.message_for(&it.name),
            )
        })?;
    }
    Ok(())
}

fn validate_devices(at: &str, devices: &Devices) -> Result<(), ModelError> {
    // Hygon's partitioning mode is node-wide: a partly partitioned node is no real layout.
    if let Some(mixed) = crate::devices::mixed_node_wide_mode(devices) {
        return Err(ModelError::invalid(
            format!("{at}.devices.groups"),
            mixed.to_string(),
        ));
    }
    for (g, group) in devices.groups.iter().enumerate() {
        let at = format!("{at}.devices.groups[{g}]");
        if !labels::is_known_manufacturer(&group.manufacturer) {
            return Err(ModelError::invalid(
                format!("{at}.manufacturer"),
                format!(
                    "unknown manufacturer `{}`: expected one of {}",
                    group.manufacturer,
                    labels::MANUFACTURERS.join(", ")
                ),
            ));
        }
        if group.id.is_empty() {
            return Err(ModelError::invalid(format!("{at}.id"), "must not be empty"));
        }
        let mut ids = BTreeMap::new();
        for (c, card) in group.cards.iter().enumerate() {
            if let Some(first) = ids.insert(card.id.as_str(), c) {
                return Err(ModelError::invalid(
                    format!("{at}.cards[{c}].id"),
                    format!("duplicate card id `{}` (also cards[{first}])", card.id),
                ));
            }
            if let Some(l) = &card.ledger {
                if !(0..=UNITS_PER_CARD).contains(&l.remaining_units) {
                    return Err(ModelError::invalid(
                        format!("{at}.cards[{c}].ledger.remaining_units"),
                        format!("expected 0..={UNITS_PER_CARD}, got {}", l.remaining_units),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Derives every object for `cluster` from scratch (call [`validate`] first on untrusted
/// input; derivation itself never panics on a shape that fails validation, it just follows the
/// rules).
pub fn derive(cluster: &Cluster) -> Derived {
    derive_after(cluster, None)
}

/// Derives every object for `cluster` after `previous` quiescence: each pool's queue settles
/// from the state it was left in (a queue whose plan emptied is not a never-filled one), and a
/// LocalQueue for a queue that already existed in a namespace that did not is created by the
/// namespace path (chain.md §11, §17 rule 16).
pub fn derive_after(cluster: &Cluster, previous: Option<&Derived>) -> Derived {
    derive_recorded(cluster, previous, &mut NoRecord)
}

/// [`derive`], with every rule decision it takes recorded, in order, as it takes it: the
/// same code path, with a recorder instead of the no-op one (issue [M11] item 4).
pub fn derive_explained(cluster: &Cluster) -> (Derived, Provenance) {
    let mut provenance = Provenance::default();
    let derived = derive_recorded(cluster, None, &mut provenance);
    (derived, provenance)
}

/// [`derive_after`] telling `rec` each decision.
pub fn derive_recorded<R: Record>(
    cluster: &Cluster,
    previous: Option<&Derived>,
    rec: &mut R,
) -> Derived {
    derive_through(None, cluster, previous, rec)
}

/// How a caller derives: plainly (the default), or through a [`StepStore`] it owns that keeps
/// the per-node and per-pool steps of earlier derivations (`verify check`). Either way the
/// objects are the same; only the work differs. It is the one value a caller hands the model's
/// deriving paths (`Deriver::derive_after`, `events::World`, `lifecycle::AdmissionState`); the
/// incremental derivation ([`Deriver::incremental`]) is one such store.
#[derive(Clone, Default)]
pub struct Deriver {
    steps: Option<Arc<dyn StepStore>>,
}

impl Deriver {
    /// A derivation that computes every step and keeps nothing.
    pub fn plain() -> Self {
        Deriver::default()
    }

    /// A derivation served by `steps`: a step whose key it holds is taken from it.
    pub fn with_steps(steps: Arc<dyn StepStore>) -> Self {
        Deriver { steps: Some(steps) }
    }

    /// The incremental derivation: each derivation re-derives only the nodes, flavors and pools
    /// whose inputs changed since the one before it (a node added, removed or changed, a
    /// Devices ledger moved, settings flipped) and takes the rest from it
    /// ([`LatestSteps`](crate::steps::LatestSteps), which keeps one derivation's steps). For
    /// an owner that derives one cluster over and over as it changes (a world through its
    /// events, the twin's operator through its reconciles); clones share the store.
    pub fn incremental() -> Self {
        Deriver::with_steps(Arc::new(crate::steps::LatestSteps::default()))
    }

    /// [`derive`] through this deriver.
    pub fn derive(&self, cluster: &Cluster) -> Derived {
        self.derive_after(cluster, None)
    }

    /// [`derive_after`] through this deriver.
    pub fn derive_after(&self, cluster: &Cluster, previous: Option<&Derived>) -> Derived {
        derive_through(self.steps.as_deref(), cluster, previous, &mut NoRecord)
    }

    /// A gate's result on what `inputs` hashes (gate 1's Workload and fronting InstanceType,
    /// gate 2's node and derived labels), taken from the store's table `kept` when it keeps
    /// one under their key (`compute` reads nothing else), computed without a store.
    pub(crate) fn gate_step<T>(
        &self,
        kept: fn(&(dyn StepStore + 'static), u64, &mut dyn FnMut() -> T) -> T,
        inputs: &impl std::hash::Hash,
        compute: &dyn Fn() -> T,
    ) -> T {
        match self.steps.as_deref() {
            Some(store) => kept(store, fingerprint(inputs), &mut || compute()),
            None => compute(),
        }
    }
}

impl std::fmt::Debug for Deriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deriver")
            .field("steps", &self.steps.is_some())
            .finish()
    }
}

/// The derivation, with `store` serving its steps when given. A recording derivation reads no
/// store: a step served from the store was decided by an earlier derivation, so its decisions
/// would be missing (the store is a cache of these same steps, so the objects are the same).
fn derive_through<R: Record>(
    store: Option<&dyn StepStore>,
    cluster: &Cluster,
    previous: Option<&Derived>,
    rec: &mut R,
) -> Derived {
    let settings = &cluster.settings;
    let mut rules = NodeRules::new(settings, &cluster.topology_sources);
    let store = if R::ON { None } else { store };
    let settings_key = store.map_or(0, |_| fingerprint(settings));
    let (nodes, node_keys): (Vec<DerivedNode>, Vec<u64>) = cluster
        .nodes
        .iter()
        .map(|n| match store {
            Some(store) => stored_node(store, &mut rules, n, settings_key),
            None => {
                let g = rules.general_keys(n);
                let derived = rules.derive_node(n, &g);
                explain::node(rec, n, &g.key, &derived);
                (derived, 0)
            }
        })
        .unzip();
    let contributions: Vec<Contribution<'_>> = cluster
        .nodes
        .iter()
        .zip(&nodes)
        .zip(&node_keys)
        .filter(|((_, d), _)| d.eligible)
        .map(|((n, d), &key)| Contribution {
            node: &d.name,
            flavors: &d.flavors,
            labels: &d.labels,
            annotations: &n.annotations,
            key,
        })
        .collect();
    let (resource_flavors, flavor_keys) =
        stored_flavors(store, &contributions, settings.aware_cpu_manufacturer);
    explain::flavors(rec, &resource_flavors);
    let topologies = derived_topologies(&nodes, &resource_flavors, previous, settings);
    let topology_names: BTreeSet<&str> = topologies.iter().map(|t| t.name.as_str()).collect();
    let specs = instance_type_specs(cluster, &resource_flavors);
    let table = NodeTable::new(&cluster.nodes, &nodes, &node_keys);
    let (instance_types, cluster_queues): (Vec<_>, Vec<_>) = specs
        .into_iter()
        .map(|(name, (spec, derived))| {
            let before = previous.and_then(|p| p.cluster_queues.iter().find(|q| q.name == name));
            derive_pool(
                store.map(|s| (s, settings_key)),
                &name,
                spec,
                derived,
                before,
                (&resource_flavors, &flavor_keys),
                &topology_names,
                &table,
                settings,
                rec,
            )
        })
        .unzip();
    let local_queues = local_queues(cluster, &cluster_queues, previous);
    explain::local_queues(rec, cluster, &local_queues);
    if let Some(store) = store {
        store.settled();
    }
    Derived {
        nodes,
        resource_flavors,
        instance_types,
        cluster_queues,
        local_queues,
        topologies,
    }
}

/// The generated Topologies after this quiescence (E3; E2 generates none): the profiled
/// nodes' ones, and the earlier ones [`flavor::topology_retired`] keeps.
fn derived_topologies(
    nodes: &[DerivedNode],
    flavors: &[ResourceFlavor],
    previous: Option<&Derived>,
    settings: &Settings,
) -> Vec<Topology> {
    if settings.era == Era::E2 {
        return Vec::new();
    }
    let profiles: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.labels.get(labels::TOPOLOGY_PROFILE).map(Text::as_str))
        .collect();
    flavor::generated_topologies(
        nodes
            .iter()
            .filter(|n| !n.topology_levels.is_empty())
            .map(|n| &n.topology_levels[..]),
        &profiles,
        flavors,
        previous.map_or(&[][..], |p| p.topologies.as_slice()),
    )
}

/// Rule 9's ResourceFlavors, each from the store when one serves the derivation, with its
/// step key (none without a store): a flavor's step reads the flavor, its contributors' names,
/// the awareness setting and its first contributor's labels and annotations, which that
/// node's step key stands for.
fn stored_flavors(
    store: Option<&dyn StepStore>,
    contributions: &[Contribution<'_>],
    aware: bool,
) -> (Vec<ResourceFlavor>, Vec<u64>) {
    let Some(store) = store else {
        return (flavor::resource_flavors(contributions, aware), Vec::new());
    };
    flavor::flavor_pools(contributions)
        .iter()
        .map(|p| {
            let key = fingerprint(&(p.flavor, p.first.key, &p.nodes, aware));
            (
                store.flavor(key, &mut || flavor::build_resource_flavor(p, aware)),
                key,
            )
        })
        .unzip()
}

/// [`NodeRules::derive_node`] from the store, with the step's key: the step reads the node
/// (labels, annotations, Devices), the TopologySources and the settings (`settings_key` is
/// theirs), and nothing else. Its gKey is the node's own labels' and annotations', so the key
/// need not name it, and a step served from the store skips reading it.
fn stored_node<'a>(
    store: &dyn StepStore,
    rules: &mut NodeRules<'a>,
    node: &'a Node,
    settings_key: u64,
) -> (DerivedNode, u64) {
    let key = fingerprint(&(node, rules.sources(), settings_key));
    let derived = store.node(key, &mut || {
        let g = rules.general_keys(node);
        rules.derive_node(node, &g)
    });
    (derived, key)
}

/// Rule 11: admin InstanceTypes as written; derived ones authored create-only per pool
/// identity, the first flavor (by name) of a pool being the first writer.
/// Returns name → (spec, derived-from-node).
fn instance_type_specs(
    cluster: &Cluster,
    flavors: &[ResourceFlavor],
) -> BTreeMap<String, (InstanceTypeSpec, bool)> {
    let mut specs: BTreeMap<String, (InstanceTypeSpec, bool)> = cluster
        .instance_types
        .iter()
        .map(|it| {
            (
                it.name.clone(),
                (
                    webhook::default_instance_type_spec(&it.spec),
                    it.derived_from_node,
                ),
            )
        })
        .collect();
    if cluster.settings.derived_from_node {
        let aware = cluster.settings.aware_cpu_manufacturer;
        for rf in flavors {
            // the first flavor of a pool builds its spec; the others only name the pool
            let name = pool::pool_name_of_flavor(&rf.flavor, aware);
            specs.entry(name).or_insert_with(|| {
                let identity = pool::pool_of_flavor(&rf.flavor, aware);
                let spec =
                    pool::derived_instance_type_spec(&identity, &rf.flavor, &rf.flavor.product);
                (webhook::default_instance_type_spec(&spec), true)
            });
        }
    }
    specs
}

/// Rules 12–16 and 19–23: one pool's InstanceType and ClusterQueue. The step reads the pool's
/// name, spec and authorship, its queue as it was, the settings, the flavors its selector picks,
/// those flavors' nodes and the Devices its devices selector matches; with a store (and the
/// settings' key), those are its key.
#[allow(clippy::too_many_arguments)]
fn derive_pool<'a, R: Record>(
    store: Option<(&dyn StepStore, u64)>,
    name: &'a str,
    spec: InstanceTypeSpec,
    derived: bool,
    before: Option<&ClusterQueue>,
    (flavors, flavor_keys): (&'a [ResourceFlavor], &[u64]),
    topologies: &BTreeSet<&str>,
    nodes: &'a NodeTable<'a>,
    settings: &Settings,
    rec: &mut R,
) -> (InstanceType, ClusterQueue) {
    let schedule = pool::spec_schedule_labels(&spec, settings.aware_cpu_manufacturer);
    // The queue's labels, whether the InstanceType reconciler creates it or re-applies them to
    // the queue that exists: the selectors are made from them. The queue itself is built only
    // when the pool is settled, not for a step the store serves.
    let queue_labels = queue::cluster_queue_labels(&schedule);
    let at = stored_selection(
        store,
        ("flavors", &queue_labels, flavor_keys, flavors.len()),
        || pool_flavors(&queue_labels, flavors, settings),
    );
    let selected: Vec<&ResourceFlavor> = at.iter().filter_map(|&i| flavors.get(i)).collect();
    explain::pool_flavors(rec, (name, &queue_labels), &selected, flavors.len());
    // With a store, each selected flavor is named by its step key.
    let selected_keys = match store {
        Some(_) => at
            .iter()
            .filter_map(|&i| flavor_keys.get(i).copied())
            .collect(),
        None => Vec::new(),
    };
    // The Topologies the selected flavors name that exist (NodeQueue's TAS validation).
    let topologies = selected
        .iter()
        .filter_map(|rf| rf.topology_name.clone())
        .filter(|t| topologies.contains(t.as_str()))
        .collect();
    let members = nodes.named(
        selected
            .iter()
            .flat_map(|rf| rf.nodes.iter().map(Text::as_str)),
    );
    // Settling writes the queue's state, annotations and groups, never its labels, so the
    // devices selector read from the created queue is the settled queue's.
    let devices = if spec.acceleratable {
        stored_selection(
            store,
            ("devices", &queue_labels, nodes.keys, nodes.rows.len()),
            || pool_devices(&queue_labels, nodes),
        )
    } else {
        Vec::new()
    };
    if R::ON {
        let names: Vec<&str> = devices
            .iter()
            .map(|&i| nodes.rows[i].1.name.as_str())
            .collect();
        explain::pool_devices(rec, (name, &queue_labels), &names, spec.acceleratable);
    }
    let pool = PoolInputs {
        name,
        spec,
        derived,
        before,
        queue_labels,
        selected,
        selected_keys,
        topologies,
        members,
        devices,
        nodes,
    };
    match store {
        Some((store, settings_key)) => {
            let key = fingerprint(&(&pool, settings_key));
            store.pool(key, &mut || settle_pool(&pool, settings, &mut NoRecord))
        }
        None => settle_pool(&pool, settings, rec),
    }
}

/// Everything one pool's step reads besides the settings. Its `Hash` names the pool's nodes by
/// their node-step keys (rule 7.5: the pool's nodes are its selected flavors' contributors;
/// rule 18: its Devices are those its devices selector matches) and its flavors by theirs.
struct PoolInputs<'a> {
    name: &'a str,
    spec: InstanceTypeSpec,
    derived: bool,
    /// The pool's queue as the derivation before left it, if it existed.
    before: Option<&'a ClusterQueue>,
    /// The labels the InstanceType reconciler gives the queue, new or existing: with `before`,
    /// `name` and the era, they make the queue it leaves before NodeQueue runs
    /// ([`PoolInputs::created`]).
    queue_labels: Labels,
    selected: Vec<&'a ResourceFlavor>,
    /// The selected flavors' step keys when a store serves the derivation (empty otherwise).
    selected_keys: Vec<u64>,
    /// The existing Topologies the selected flavors reference.
    topologies: BTreeSet<Text>,
    /// Rows of the pool's nodes and of the nodes whose Devices it reads.
    members: Vec<usize>,
    devices: Vec<usize>,
    nodes: &'a NodeTable<'a>,
}

impl std::hash::Hash for PoolInputs<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // What the created queue is made of (the era is in the settings' key).
        (
            self.name,
            &self.spec,
            self.derived,
            self.before,
            &self.queue_labels,
        )
            .hash(h);
        // A flavor's step key stands for the flavor; without keys for all, the flavors.
        if self.selected_keys.len() == self.selected.len() {
            self.selected_keys.hash(h);
        } else {
            self.selected.hash(h);
        }
        self.topologies.hash(h);
        for rows in [&self.members, &self.devices] {
            rows.len().hash(h);
            for &i in rows {
                self.nodes.keys[i].hash(h);
            }
        }
    }
}

impl PoolInputs<'_> {
    /// The queue as the InstanceType reconciler leaves it before NodeQueue runs: the existing
    /// one re-labelled, else a new one.
    fn created(&self, era: Era) -> ClusterQueue {
        let labels = self.queue_labels.clone();
        match self.before {
            Some(q) => queue::relabelled_cluster_queue(q, labels),
            None => queue::new_labelled_cluster_queue(self.name, labels, era),
        }
    }
}

/// Settles one pool's queue (rules 14–16) and writes its InstanceType (rules 12, 19–23).
fn settle_pool<R: Record>(
    pool: &PoolInputs<'_>,
    settings: &Settings,
    rec: &mut R,
) -> (InstanceType, ClusterQueue) {
    let mut spec = pool.spec.clone();
    let aware = settings.aware_cpu_manufacturer;
    let entrance = match settings.mutant {
        Some(Mutant::EntranceWrongHash) => nodefeature::local_queue_name(&spec.display_name),
        _ => nodefeature::local_queue_name(pool.name),
    };
    let mut it_labels =
        webhook::default_instance_type_labels(&entrance, &spec, &Labels::new(), aware);
    if pool.derived {
        it_labels.insert(
            Text::new_static(DERIVED_FROM_NODE),
            Text::new_static("true"),
        );
    }
    let members: Vec<&DerivedNode> = pool.members.iter().map(|&i| pool.nodes.rows[i].1).collect();
    let devices = pool.nodes.devices(&pool.devices);
    let world = queue_world(&pool.selected, &pool.topologies, &members);
    let inputs: Vec<PoolFlavor> = pool.selected.iter().map(|rf| pool_flavor(rf)).collect();
    let created = pool.created(settings.era);
    let mut settled = queue::settle_pool_queue(&created, spec.inactive, &inputs, &world, settings);
    spec.inactive = settled.inactive;
    explain::settled_queue(rec, &settled);
    mutate_queue(&mut settled.queue, settings);
    explain::mutated_queue(rec, &settled.queue, settings.mutant);
    let status = instance_type_status(
        &spec,
        &settled,
        &pool.selected,
        &devices,
        settings,
        entrance,
    );
    if R::ON {
        let named: Vec<(&str, &Devices)> = pool
            .devices
            .iter()
            .filter_map(|&i| {
                let (node, derived) = pool.nodes.rows[i];
                Some((derived.name.as_str(), node.devices.as_ref()?))
            })
            .collect();
        explain::views(
            rec,
            pool.name,
            &spec,
            &settled.queue,
            &named,
            settings.shared_once_max,
            &status,
        );
    }
    let it = InstanceType {
        name: pool.name.into(),
        labels: it_labels,
        spec,
        status,
    };
    (it, settled.queue)
}

/// Rule 14: the live ResourceFlavors the queue's flavor selector picks, as their positions in
/// `flavors` (name order).
fn pool_flavors(
    queue_labels: &Labels,
    flavors: &[ResourceFlavor],
    settings: &Settings,
) -> Vec<usize> {
    let Some(selector) = pool::pool_flavor_selector(queue_labels) else {
        return Vec::new();
    };
    (0..flavors.len())
        .filter(|&i| selects_flavor(&selector, &flavors[i].labels, settings.mutant))
        .collect()
}

/// A pool's selection (its flavors, or the nodes whose Devices it reads: positions in the
/// derivation's flavor or node list), from the store under its inputs (which selection, the
/// queue's labels, which the pool's selectors are made from, and the keys of every flavor or
/// node, in order) with the settings, or computed. Without a store, or without a key for every
/// item (never the case with one), it is computed.
fn stored_selection(
    store: Option<(&dyn StepStore, u64)>,
    (what, labels, keys, items): (&str, &Labels, &[u64], usize),
    select: impl Fn() -> Vec<usize>,
) -> Vec<usize> {
    match store {
        Some((store, settings_key)) if keys.len() == items => {
            let key = fingerprint(&(what, labels, keys, settings_key));
            store.selection(key, &mut || select())
        }
        _ => select(),
    }
}

/// The pool-selection seam: the real ⊇ test, or a mutant's broken variant of it.
fn selects_flavor(selector: &Labels, flavor_labels: &Labels, mutant: Option<Mutant>) -> bool {
    let without = |keep: &dyn Fn(&str) -> bool| -> Labels {
        selector
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    match mutant {
        Some(Mutant::SubstringPoolMatch) => selector.iter().all(|(k, v)| {
            flavor_labels
                .iter()
                .any(|(fk, fv)| fk.starts_with(k.as_str()) && fv == v)
        }),
        Some(Mutant::OsArchIgnored) => pool::flavor_selected_by_pool(
            &without(&|k| k != labels::OS && k != labels::ARCH),
            flavor_labels,
        ),
        Some(Mutant::CpuGroupIgnored) => pool::flavor_selected_by_pool(
            &without(&|k| !k.starts_with(labels::GENERAL_PREFIX)),
            flavor_labels,
        ),
        _ => pool::flavor_selected_by_pool(selector, flavor_labels),
    }
}

/// The queue seams: a shared cohort, or each flavor's quota one card (core) short.
fn mutate_queue(queue: &mut ClusterQueue, settings: &Settings) {
    match settings.mutant {
        Some(Mutant::CohortSet) => queue.cohort = "gpustack".into(),
        Some(Mutant::QuotaOffByOne) => {
            for group in &mut queue.resource_groups {
                let card = if group.covered_resources.iter().any(|r| r == "cpu") {
                    1
                } else {
                    crate::units::CREDITS_PER_CARD
                };
                for f in &mut group.flavors {
                    f.nominal_quota -= card;
                }
            }
        }
        _ => {}
    }
}

/// Rule 17 with history: every queue × eligible namespace. A queue that is new fans out to
/// every namespace; a namespace that is new gets the existing queues through the namespace
/// path (the seam of the late-namespace mutant).
fn local_queues(
    cluster: &Cluster,
    queues: &[ClusterQueue],
    previous: Option<&Derived>,
) -> Vec<LocalQueue> {
    let operator: Vec<&str> = queues.iter().map(|q| q.name.as_str()).collect();
    let names = queue::entrance_queues(&operator, &cluster.foreign_queues);
    let all = queue::local_queues(
        &names,
        &cluster.namespaces,
        &cluster.settings.system_namespace,
        nodefeature::local_queue_text,
    );
    let (Some(Mutant::LateNamespaceNoLocalQueue), Some(prev)) = (cluster.settings.mutant, previous)
    else {
        return all;
    };
    let old_queue = |q: &str| {
        prev.cluster_queues.iter().any(|p| p.name == q)
            || cluster.foreign_queues.iter().any(|f| f.name == q)
    };
    let old_namespace = |ns: &str| {
        prev.local_queues.iter().any(|l| l.namespace == ns) || prev.local_queues.is_empty()
    };
    all.into_iter()
        .filter(|l| !old_queue(&l.cluster_queue) || old_namespace(&l.namespace))
        .collect()
}

/// What NodeQueue reads of one selected ResourceFlavor.
fn pool_flavor(rf: &ResourceFlavor) -> PoolFlavor {
    PoolFlavor {
        name: rf.name.clone(),
        per_node_count: rf.flavor.count,
        capacity: rf.capacity,
        acceleratable: rf.flavor.acceleratable,
        manufacturer: rf.flavor.manufacturer.to_string(),
        terminating: false,
    }
}

/// The cluster as NodeQueue's validation sees it: the generated Topologies the flavors
/// reference (read from the derivation's Topology objects), each flavor's placement, and the
/// pool's nodes. A node backs the pool exactly when one of its flavors is selected (chain.md
/// §7.5), so the pool's nodes are the contributors of the selected flavors.
fn queue_world(
    selected: &[&ResourceFlavor],
    topologies: &BTreeSet<Text>,
    members: &[&DerivedNode],
) -> QueueWorld {
    // Validation only tests the flavors' nodeLabels against a node: keep just those keys.
    let keys: BTreeSet<&Text> = selected
        .iter()
        .flat_map(|rf| rf.node_labels.keys())
        .collect();
    let pool_nodes = pool_nodes(&keys, members);
    QueueWorld {
        topologies: topologies.clone(),
        placements: selected
            .iter()
            .map(|rf| {
                (
                    rf.name.clone(),
                    FlavorPlacement {
                        profile: rf.flavor.profile.clone(),
                        node_labels: rf.node_labels.clone(),
                        topology_name: rf.topology_name.clone().unwrap_or_default(),
                    },
                )
            })
            .collect(),
        nodes: pool_nodes,
    }
}

/// Each member as the plan check reads it: its name and its labels under `keys`. Members alike
/// under those keys share one map (a copied map is shared, not copied), found by the values'
/// hash; a pool of one node has nothing to share.
fn pool_nodes(keys: &BTreeSet<&Text>, members: &[&DerivedNode]) -> Vec<PoolNode> {
    let reduced = |values: &[Option<&Text>]| -> Labels {
        keys.iter()
            .zip(values)
            .filter_map(|(&k, v)| Some((k.clone(), (*v)?.clone())))
            .collect()
    };
    let node = |d: &DerivedNode, labels: Labels| PoolNode {
        name: d.name.clone(),
        labels,
    };
    // A BTreeSet of texts iterates in the byte order the labels are kept in.
    let sorted_keys = || keys.iter().map(|k| k.as_str());
    let mut values: Vec<Option<&Text>> = Vec::with_capacity(keys.len());
    if let [d] = members {
        d.labels.values_under(sorted_keys(), &mut values);
        return vec![node(d, reduced(&values))];
    }
    let mut alike: HashMap<Vec<Option<&Text>>, Labels> = HashMap::new();
    members
        .iter()
        .map(|d| {
            values.clear();
            d.labels.values_under(sorted_keys(), &mut values);
            let labels = match alike.get(values.as_slice()) {
                Some(set) => set.clone(),
                None => alike
                    .entry(values.clone())
                    .or_insert_with(|| reduced(&values))
                    .clone(),
            };
            node(d, labels)
        })
        .collect()
}

/// Rules 19–23: the InstanceType status from its settled queue, flavors and Devices (the
/// pool's Devices: none for a pool without accelerators).
fn instance_type_status(
    spec: &InstanceTypeSpec,
    settled: &Settled,
    selected: &[&ResourceFlavor],
    devices: &[&Devices],
    settings: &Settings,
    entrance: String,
) -> InstanceTypeStatus {
    let queue = &settled.queue;
    let mut status = InstanceTypeStatus {
        entrance: entrance.into(),
        ..InstanceTypeStatus::default()
    };
    if spec.acceleratable {
        let rule = match settings.mutant {
            Some(Mutant::SharedOnceMaxInShares) => SharedOnceMax::Shares,
            _ => settings.shared_once_max,
        };
        status.views = views::pool_views(devices, &spec.accelerator_group, rule, queue.stop_policy);
        if settings.mutant == Some(Mutant::OneTokenPool) {
            status.views.sliced =
                one_token_pool_sliced(devices, &spec.accelerator_group, rule, queue.stop_policy);
        }
    } else {
        // Kueue's status.flavorsReservation: the derivation admits no Workload, so nothing is
        // reserved; the view is still zero while the queue holds and drains.
        status.cpu = views::pool_cpu_view(queue, &[], settings.general_resources_overcommit);
    }
    let notes = detail_flavor_notes(spec, selected, settings);
    status.detail = detail::instance_type_detail(
        spec,
        settings.aware_cpu_manufacturer,
        notes.as_ref(),
        devices,
    );
    views::publish_status_profiles(&mut status.detail, &mut status.views.partitioned);
    status.phase = views::phase(queue.stop_policy, false, Some(settled.active));
    status
}

/// The one-token-pool mutant: partitioned cards are read as logically sliceable too.
fn one_token_pool_sliced(
    devices: &[&Devices],
    pool_key: &str,
    rule: SharedOnceMax,
    stop_policy: crate::objects::StopPolicy,
) -> crate::objects::ResourceView {
    let merged: Vec<Devices> = devices
        .iter()
        .map(|d| {
            let mut d = (*d).clone();
            for card in d.groups.iter_mut().flat_map(|g| g.cards.iter_mut()) {
                if let Some(cap) = card.capability.as_mut().filter(|c| c.is_partitioned()) {
                    cap.logical_sliced_count = cap.physical_sliced_count;
                    cap.physical_sliced_count = 0;
                }
            }
            d
        })
        .collect();
    let refs: Vec<&Devices> = merged.iter().collect();
    views::pool_views(&refs, pool_key, rule, stop_policy).sliced
}

/// §9.5: the notes of the first flavor (name order, as the API server lists) carrying the
/// pool's schedule labels, without the `note.gpustack.ai/` prefix.
fn detail_flavor_notes(
    spec: &InstanceTypeSpec,
    selected: &[&ResourceFlavor],
    settings: &Settings,
) -> Option<Labels> {
    let schedule = pool::spec_schedule_labels(spec, settings.aware_cpu_manufacturer);
    let rf = selected
        .iter()
        .find(|rf| pool::labels_contain(&rf.labels, &schedule))?;
    Some(
        rf.annotations
            .iter()
            .filter_map(|(k, v)| Some((Text::new(k.strip_prefix(NOTE_PREFIX)?), v.clone())))
            .collect(),
    )
}

/// Rule 18: the rows whose Devices labels the pool's devices selector matches.
fn pool_devices(queue_labels: &Labels, nodes: &NodeTable<'_>) -> Vec<usize> {
    pool::pool_devices_selector(queue_labels)
        .map(|selector| nodes.devices_matching(&selector))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;
    use crate::events::{Event, World};
    use crate::examples::{large_mixed, walkthrough};
    use crate::steps::LatestSteps;

    /// A step store keeping every step, counting the steps it served without computing.
    #[derive(Default)]
    struct Kept {
        nodes: Mutex<HashMap<u64, DerivedNode>>,
        pools: Mutex<HashMap<u64, (InstanceType, ClusterQueue)>>,
        flavors: Mutex<HashMap<u64, ResourceFlavor>>,
        selections: Mutex<HashMap<u64, Vec<usize>>>,
        served: Mutex<usize>,
    }

    impl Kept {
        fn get_or<T: Clone>(
            &self,
            table: &Mutex<HashMap<u64, T>>,
            key: u64,
            compute: &mut dyn FnMut() -> T,
        ) -> T {
            let kept = table.lock().unwrap().get(&key).cloned();
            if let Some(value) = kept {
                *self.served.lock().unwrap() += 1;
                return value;
            }
            let value = compute();
            table.lock().unwrap().insert(key, value.clone());
            value
        }
    }

    impl StepStore for Kept {
        fn node(&self, key: u64, compute: &mut dyn FnMut() -> DerivedNode) -> DerivedNode {
            self.get_or(&self.nodes, key, compute)
        }

        fn pool(
            &self,
            key: u64,
            compute: &mut dyn FnMut() -> (InstanceType, ClusterQueue),
        ) -> (InstanceType, ClusterQueue) {
            self.get_or(&self.pools, key, compute)
        }

        fn flavor(&self, key: u64, compute: &mut dyn FnMut() -> ResourceFlavor) -> ResourceFlavor {
            self.get_or(&self.flavors, key, compute)
        }

        fn selection(&self, key: u64, compute: &mut dyn FnMut() -> Vec<usize>) -> Vec<usize> {
            self.get_or(&self.selections, key, compute)
        }
    }

    #[test]
    fn a_derivation_through_a_step_store_equals_a_plain_one() {
        let kept = Arc::new(Kept::default());
        let deriver = Deriver::with_steps(kept.clone());
        let mut flipped = walkthrough();
        flipped.settings.aware_cpu_manufacturer ^= true;
        flipped.settings.mixed_on_node ^= true;
        // One store across clusters and settings: a key missing an input would hand out
        // another cluster's step.
        for cluster in [walkthrough(), flipped, large_mixed(6, 2)] {
            let plain = derive(&cluster);
            assert_eq!(deriver.derive(&cluster), plain, "first derivation");
            assert_eq!(deriver.derive(&cluster), plain, "served from the store");
            assert_eq!(
                deriver.derive_after(&cluster, Some(&plain)),
                derive_after(&cluster, Some(&plain)),
                "re-derivation"
            );
        }
        assert!(*kept.served.lock().unwrap() > 0, "the store served no step");
    }

    #[test]
    fn a_flavor_step_is_not_served_to_a_pool_whose_contributors_changed() {
        let deriver = Deriver::with_steps(Arc::new(Kept::default()));
        let cluster = large_mixed(40, 2);
        let plain = derive(&cluster);
        let shared = plain
            .resource_flavors
            .iter()
            .max_by_key(|rf| rf.nodes.len())
            .expect("the shape has flavors");
        assert!(shared.nodes.len() >= 2, "a flavor of several nodes");
        // Its last contributor leaves; the first, whose labels the flavor's notes read, stays.
        let mut fewer = cluster.clone();
        let leaving = shared.nodes.last().unwrap().to_string();
        fewer.nodes.retain(|n| n.name != leaving);
        assert_eq!(deriver.derive(&cluster), plain);
        assert_eq!(deriver.derive(&fewer), derive(&fewer));
        // Every node's CPU stepping changes: no flavor's identity reads it, the `cpuDetail`
        // note of a CPU flavor (read from its first contributor) does.
        for aware in [false, true] {
            let mut before = cluster.clone();
            before.settings.aware_cpu_manufacturer = aware;
            let mut stepped = before.clone();
            for n in &mut stepped.nodes {
                n.annotations
                    .insert("feature.gpustack.ai/cpu-stepping".into(), "7".into());
            }
            assert_eq!(deriver.derive(&before), derive(&before));
            let fresh = derive(&stepped);
            assert_ne!(fresh.resource_flavors, derive(&before).resource_flavors);
            assert_eq!(deriver.derive(&stepped), fresh, "aware {aware}");
        }
    }

    /// A pool settles from its queue as the derivation before left it (NodeQueue continues
    /// from the queue's groups and marks), so the same cluster after another history is
    /// another step: one store must not hand the first history's pools to the second.
    #[test]
    fn a_pool_step_is_not_served_to_a_queue_with_another_history() {
        let deriver = Deriver::with_steps(Arc::new(Kept::default()));
        let cluster = walkthrough();
        let settled = derive(&cluster);
        // The same queues, one of them left mid-migration in a phase NodeQueue refuses.
        let mut marked = settled.clone();
        marked.cluster_queues[0]
            .annotations
            .insert(Text::new_static(labels::MIGRATION_PHASE), "bogus".into());
        let histories = [None, Some(settled), Some(marked)];
        let fresh = histories
            .each_ref()
            .map(|before| derive_after(&cluster, before.as_ref()));
        assert_ne!(
            fresh[1], fresh[2],
            "the histories settle alike: the test would not tell them apart"
        );
        for (before, fresh) in histories.iter().zip(&fresh) {
            assert_eq!(&deriver.derive_after(&cluster, before.as_ref()), fresh);
        }
    }

    /// The incremental derivation's store, counting the steps it computed (nodes, flavors,
    /// pools) since last asked.
    #[derive(Default)]
    struct Counted {
        inner: LatestSteps,
        computed: Mutex<[usize; 3]>,
    }

    impl Counted {
        fn computed(&self) -> [usize; 3] {
            std::mem::take(&mut *self.computed.lock().unwrap())
        }

        fn counting<'a, T>(
            &'a self,
            kind: usize,
            compute: &'a mut dyn FnMut() -> T,
        ) -> impl FnMut() -> T + 'a {
            move || {
                self.computed.lock().unwrap()[kind] += 1;
                compute()
            }
        }
    }

    impl StepStore for Counted {
        fn node(&self, key: u64, compute: &mut dyn FnMut() -> DerivedNode) -> DerivedNode {
            self.inner.node(key, &mut self.counting(0, compute))
        }

        fn flavor(&self, key: u64, compute: &mut dyn FnMut() -> ResourceFlavor) -> ResourceFlavor {
            self.inner.flavor(key, &mut self.counting(1, compute))
        }

        fn pool(
            &self,
            key: u64,
            compute: &mut dyn FnMut() -> (InstanceType, ClusterQueue),
        ) -> (InstanceType, ClusterQueue) {
            self.inner.pool(key, &mut self.counting(2, compute))
        }

        fn settled(&self) {
            self.inner.settled()
        }
    }

    #[test]
    fn the_incremental_derivation_recomputes_only_what_a_change_touches() {
        let counted = Arc::new(Counted::default());
        let deriver = Deriver::with_steps(counted.clone());
        let cluster = large_mixed(40, 2);
        let fresh = derive(&cluster);
        let pools = fresh.cluster_queues.len();
        assert_eq!(deriver.derive(&cluster), fresh);
        assert_eq!(
            counted.computed()[0],
            40,
            "the first derivation computes every node"
        );
        assert_eq!(deriver.derive(&cluster), fresh);
        assert_eq!(
            counted.computed(),
            [0, 0, 0],
            "nothing changed, nothing re-derived"
        );

        // One node gains a label: that node re-derives, and only the pools it backs.
        let mut relabelled = cluster.clone();
        relabelled.nodes[7]
            .labels
            .insert("example.com/rack".into(), "r7".into());
        assert_eq!(deriver.derive(&relabelled), derive(&relabelled));
        let [nodes, _, pools_computed] = counted.computed();
        assert_eq!(nodes, 1, "only the changed node");
        assert!(
            (1..pools).contains(&pools_computed),
            "{pools_computed} of {pools} pools re-derived"
        );

        // A node leaves, another joins: no surviving node re-derives; the joining one does.
        let mut moved = relabelled.clone();
        let leaving = moved.nodes.remove(3);
        assert_eq!(deriver.derive(&moved), derive(&moved));
        assert_eq!(
            counted.computed()[0],
            0,
            "a node leaving re-derives no other node"
        );
        let mut joined = moved.clone();
        let mut joining = leaving;
        joining.name = "joining".into();
        joined.nodes.push(joining);
        assert_eq!(deriver.derive(&joined), derive(&joined));
        assert_eq!(counted.computed()[0], 1, "only the joining node");

        // A setting every node step reads: all re-derive, and still equal a fresh derivation.
        let mut flipped = joined.clone();
        flipped.settings.aware_cpu_manufacturer ^= true;
        assert_eq!(deriver.derive(&flipped), derive(&flipped));
        assert_eq!(counted.computed()[0], flipped.nodes.len());

        // The store holds the latest derivation's steps only, not every cluster seen.
        let (held_nodes, _, held_pools) = counted.inner.held();
        assert_eq!(held_nodes, flipped.nodes.len());
        assert_eq!(held_pools, derive(&flipped).cluster_queues.len());
    }

    #[test]
    fn a_world_deriving_through_a_step_store_steps_as_a_plain_one() {
        let deriver = Deriver::with_steps(Arc::new(Kept::default()));
        let mut plain = World::new(walkthrough());
        let mut stored = World::with_deriver(walkthrough(), deriver);
        let leaving = plain.cluster().nodes[0].name.clone();
        for event in [
            Event::AwarenessFlip,
            Event::MixingFlip,
            Event::NodeLeave { name: leaving },
            Event::AwarenessFlip,
        ] {
            assert_eq!(stored.apply(&event), plain.apply(&event), "{event:?}");
            assert_eq!(stored.admission.derived, plain.admission.derived);
            assert_eq!(stored.observe(), plain.observe());
        }
    }
}
