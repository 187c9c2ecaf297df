//! The node rules of one derivation (chain.md §17 rules 1–8 and 18), each applied once per
//! distinct input rather than once per node. A large cluster has many alike nodes: a few CPU
//! models, a few card models and driver versions, a few core and card counts. What a rule
//! builds from the same inputs is the same, so the derivation formats the label keys of each
//! gKey and aKey once, writes each distinct device group's labels once, builds each distinct
//! list of flavors, topology levels and Devices label set once, and hands every node a shared
//! copy. The rules themselves are `nodefeature`'s and `pool`'s; this file only remembers their
//! results, keyed by everything each one reads (`GeneralKeyInputs`, `GroupLabelInputs`,
//! `FlavorInputs`, the choice of TopologySource and populated levels, `DevicesLabelInputs`), so
//! a remembered result is the one the rule would compute.

use std::hash::{BuildHasher, Hash, Hasher};
use std::rc::Rc;
use std::sync::Arc;

// Keyed by label texts of the cluster being derived, never by input chosen for collisions.
use foldhash::HashMap;
use hashbrown::HashTable;

use crate::cluster::{Era, Node, Settings, TopologySource};
use crate::derive::DerivedNode;
use crate::labels::{Labels, Text};
use crate::nodefeature::{
    self, AcceleratorLabelKeys, FlavorInputs, GeneralKeyInputs, GeneralLabelKeys, GroupLabelInputs,
    NodePlatform,
};
use crate::objects::NodeFlavor;
use crate::pool::{self, DevicesLabelInputs, DevicesLabelReads};

/// One derivation's node rules: its settings and TopologySources, and what the rules computed
/// so far for the inputs they met.
pub(crate) struct NodeRules<'a> {
    settings: &'a Settings,
    sources: &'a [TopologySource],
    /// Rule 2's gKey and its label keys, per distinct CPU identity (chain.md §3.1). The keys
    /// are handed out by `Rc`, not copied: a copy of their texts takes and drops a shared
    /// count apiece, an atomic operation each (docs/benchmarks.md, fourteenth run).
    general: HashMap<GeneralKeyInputs<'a>, Rc<GeneralLabelKeys>>,
    /// The label keys of each aKey met, handed out as the gKey's are.
    accelerators: HashMap<Text, Rc<AcceleratorLabelKeys>>,
    /// Rule 4's labels of each distinct device group, as a map to merge into a node's.
    groups: HashMap<GroupLabelInputs<'a>, Labels>,
    /// Rule 8's flavors, per distinct list of flavor inputs (the settings are the
    /// derivation's): every node with that list shares one. Found by the inputs read from a
    /// node's labels, compared with the inputs each stored flavor was built from, so finding
    /// a list copies no text.
    flavors: HashTable<Arc<[NodeFlavor]>>,
    /// The hasher of the two memos found by borrowed inputs (flavors, Devices labels).
    memo_hasher: foldhash::fast::RandomState,
    /// Rule 18's Devices labels, per distinct input (a copy shares the map), found as the
    /// flavors are: by the inputs read from a node's labels, compared with the stored ones.
    devices_labels: HashTable<(DevicesLabelInputs, Labels)>,
    /// Rule 6's levels and their profile: each source's levels normalised once, when a node
    /// first takes its levels from it, and the levels and profile per choice of source and
    /// populated prefix, shared by every node with that choice.
    levels: Levels<'a>,
}

/// What a derivation remembers of rule 6 (see [`NodeRules`]).
struct Levels<'a> {
    sources: &'a [TopologySource],
    normalized: Vec<Option<Vec<String>>>,
    chosen: HashMap<LevelChoice, ChosenLevels>,
}

/// The source a node takes its levels from (none when none or several select it) and how many
/// of that source's normalised levels the node carries: its levels depend on nothing else.
type LevelChoice = (Option<usize>, usize);

/// A node's levels and their profile.
struct ChosenLevels {
    levels: Arc<[String]>,
    profile: Text,
}

impl<'a> Levels<'a> {
    fn new(sources: &'a [TopologySource]) -> Self {
        Levels {
            sources,
            normalized: vec![None; sources.len()],
            chosen: HashMap::default(),
        }
    }

    /// [`nodefeature::node_topology_levels`] of `labels`, and their profile.
    fn of(&mut self, labels: &Labels) -> &ChosenLevels {
        let source = nodefeature::only_selecting_source(labels, self.sources);
        let normalized: &[String] = match source {
            Some(i) => self.normalized[i].get_or_insert_with(|| {
                nodefeature::normalize_topology_levels(&self.sources[i].levels)
            }),
            None => &[],
        };
        let populated = nodefeature::populated_level_count(labels, normalized);
        self.chosen.entry((source, populated)).or_insert_with(|| {
            let levels = nodefeature::levels_ending_in_hostname(&normalized[..populated]);
            ChosenLevels {
                profile: nodefeature::profile_of_levels(&levels),
                levels: levels.into(),
            }
        })
    }
}

impl<'a> NodeRules<'a> {
    pub(crate) fn new(settings: &'a Settings, sources: &'a [TopologySource]) -> Self {
        NodeRules {
            settings,
            sources,
            general: HashMap::default(),
            accelerators: HashMap::default(),
            groups: HashMap::default(),
            flavors: HashTable::new(),
            memo_hasher: Default::default(),
            devices_labels: HashTable::new(),
            levels: Levels::new(sources),
        }
    }

    /// The TopologySources the nodes are profiled against.
    pub(crate) fn sources(&self) -> &'a [TopologySource] {
        self.sources
    }

    /// The gKey of `node` (from its own labels and annotations) and the keys derived from it.
    pub(crate) fn general_keys(&mut self, node: &'a Node) -> Rc<GeneralLabelKeys> {
        let inputs = GeneralKeyInputs::of(&node.labels, &node.annotations);
        self.general
            .entry(inputs)
            .or_insert_with(|| Rc::new(GeneralLabelKeys::of(&nodefeature::general_key_of(&inputs))))
            .clone()
    }

    /// Rules 1–8 and 18 for one node whose gKey's keys are `g`, profiled against the sources.
    pub(crate) fn derive_node(&mut self, node: &'a Node, g: &GeneralLabelKeys) -> DerivedNode {
        let settings = self.settings;
        let (groups, levels) = (&mut self.groups, &mut self.levels);
        let labels = nodefeature::effective_node_labels_by(
            node,
            settings,
            g,
            |group, out| {
                if let Some(inputs) = GroupLabelInputs::of(group) {
                    let written = groups
                        .entry(inputs)
                        .or_insert_with(|| nodefeature::group_labels(&inputs));
                    out.overlay(written);
                }
            },
            |labels| levels.of(labels).profile.clone(),
        );
        let topology_levels = match settings.era {
            Era::E3 => self.levels.of(&labels).levels.clone(),
            Era::E2 => Arc::default(),
        };
        let platform = NodePlatform::of(&labels);
        let eligible = platform.is_eligible(settings);
        let a_keys = self.accelerator_keys(&labels);
        let flavors = if eligible {
            let inputs = nodefeature::node_flavor_inputs(
                &labels,
                &platform,
                &node.annotations,
                settings,
                g,
                &a_keys,
            );
            self.flavors_of(&inputs)
        } else {
            Arc::default()
        };
        let devices_labels = node
            .devices
            .as_ref()
            .map(|_| self.devices_labels_of(&DevicesLabelReads::of(&platform, g, &a_keys)));
        DerivedNode {
            name: node.name.as_str().into(),
            labels,
            eligible,
            flavors,
            devices_labels,
            topology_levels,
        }
    }

    /// The flavors of `inputs` ([`nodefeature::flavor_of`]), built for the first node with
    /// these inputs and shared by the next.
    fn flavors_of(&mut self, inputs: &[FlavorInputs<'_>]) -> Arc<[NodeFlavor]> {
        let hasher = &self.memo_hasher;
        let hash = inputs_hash(hasher, inputs.iter().copied());
        let built_from_inputs = |flavors: &Arc<[NodeFlavor]>| {
            flavors.len() == inputs.len()
                && flavors
                    .iter()
                    .zip(inputs)
                    .all(|(f, i)| FlavorInputs::of_flavor(f) == *i)
        };
        if let Some(flavors) = self.flavors.find(hash, built_from_inputs) {
            return flavors.clone();
        }
        let flavors: Arc<[NodeFlavor]> = inputs
            .iter()
            .map(|i| nodefeature::flavor_of(i, self.settings))
            .collect();
        self.flavors.insert_unique(hash, flavors.clone(), |stored| {
            inputs_hash(hasher, stored.iter().map(FlavorInputs::of_flavor))
        });
        flavors
    }

    /// Rule 18's Devices labels of `reads` ([`pool::devices_labels_of`]), built for the first
    /// node with these inputs and shared by the next.
    fn devices_labels_of(
        &mut self,
        reads: &DevicesLabelReads<'_, Rc<AcceleratorLabelKeys>>,
    ) -> Labels {
        let hasher = &self.memo_hasher;
        let hash = reads.hash_with(hasher);
        if let Some((_, labels)) = self.devices_labels.find(hash, |(i, _)| reads.are(i)) {
            return labels.clone();
        }
        let inputs = reads.to_inputs();
        let labels = pool::devices_labels_of(&inputs);
        self.devices_labels
            .insert_unique(hash, (inputs, labels.clone()), |(i, _)| i.hash_with(hasher));
        labels
    }

    /// Rule 5's aKeys of `labels`, each with its label keys.
    fn accelerator_keys(&mut self, labels: &Labels) -> Vec<Rc<AcceleratorLabelKeys>> {
        nodefeature::accelerator_keys_in(labels)
            .map(|a_key| match self.accelerators.get(a_key) {
                Some(keys) => keys.clone(),
                None => {
                    let keys = Rc::new(AcceleratorLabelKeys::of(a_key));
                    self.accelerators.insert(keys.key.clone(), keys.clone());
                    keys
                }
            })
            .collect()
    }
}

/// One hash of a list of flavor inputs, whether read from a node or from built flavors.
fn inputs_hash<'i>(
    hasher: &impl BuildHasher,
    inputs: impl ExactSizeIterator<Item = FlavorInputs<'i>>,
) -> u64 {
    let mut state = hasher.build_hasher();
    state.write_usize(inputs.len());
    inputs.for_each(|i| i.hash(&mut state));
    state.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Cluster;

    /// The node rules applied to one node at a time, nothing remembered: the reference.
    fn derived_alone(node: &Node, settings: &Settings, sources: &[TopologySource]) -> DerivedNode {
        let g_key = nodefeature::general_key(&node.labels, &node.annotations);
        let labels = nodefeature::effective_node_labels_with_key(node, settings, &g_key, sources);
        let a_keys = nodefeature::accelerator_keys(&labels);
        let eligible = nodefeature::node_is_eligible(&labels, settings);
        let flavors = if eligible {
            nodefeature::node_flavors_with_keys(
                &labels,
                &node.annotations,
                settings,
                &g_key,
                &a_keys,
            )
            .into()
        } else {
            Arc::default()
        };
        let a_keys: Vec<_> = a_keys.iter().map(|a| AcceleratorLabelKeys::of(a)).collect();
        DerivedNode {
            name: node.name.as_str().into(),
            devices_labels: node
                .devices
                .as_ref()
                .map(|_| pool::devices_labels(&labels, &GeneralLabelKeys::of(&g_key), &a_keys)),
            topology_levels: match settings.era {
                Era::E3 => nodefeature::node_topology_levels(&labels, sources).into(),
                Era::E2 => Arc::default(),
            },
            labels,
            eligible,
            flavors,
        }
    }

    /// `cluster` with TopologySources: one selecting every node (region, zone, then topograph
    /// tiers finest first), one selecting arm64 nodes too (so those take no source's levels),
    /// one not ready; its nodes carry none, some or all of the levels.
    fn zoned(mut cluster: Cluster) -> Cluster {
        let tier = |n: u32| format!("fabric.topograph.run/tier-{n}");
        let source =
            |name: &str, levels: Vec<String>, selector: &[(&str, &str)], ready| TopologySource {
                name: name.into(),
                levels,
                node_selector: crate::labels::from_pairs(selector),
                ready,
            };
        let (region, zone) = (
            "topology.kubernetes.io/region",
            "topology.kubernetes.io/zone",
        );
        cluster.topology_sources = vec![
            source(
                "all",
                vec![region.into(), zone.into(), tier(1), tier(2)],
                &[],
                true,
            ),
            source(
                "arm",
                vec![zone.into()],
                &[(crate::labels::ARCH, "arm64")],
                true,
            ),
            source("off", vec![region.into()], &[], false),
        ];
        for (n, node) in cluster.nodes.iter_mut().enumerate() {
            let levels = [region.to_string(), zone.into(), tier(1), tier(2)];
            for (i, level) in levels.into_iter().enumerate().take(n % 5) {
                node.labels
                    .insert(level.into(), format!("v{}", n % (i + 2)).into());
            }
        }
        cluster
    }

    /// Every node derived through one `NodeRules` (results shared among alike nodes) equals the
    /// same node derived by the rules alone, in both eras and mixing settings, with and without
    /// TopologySources.
    #[test]
    fn a_node_derives_the_same_with_its_neighbours_results_as_alone() {
        let mut clusters: Vec<Cluster> = vec![
            crate::examples::large_mixed(128, 4),
            crate::examples::walkthrough(),
            zoned(crate::examples::large_mixed(96, 2)),
        ];
        for base in clusters.clone() {
            for (era, mixed) in [(Era::E3, true), (Era::E3, false), (Era::E2, false)] {
                let mut c = base.clone();
                c.settings.era = era;
                c.settings.mixed_on_node = mixed;
                clusters.push(c);
            }
        }
        let (mut flavors_handed, mut flavors_built, mut levels_beyond_hostname) = (0, 0, 0);
        for cluster in &clusters {
            let (settings, sources) = (&cluster.settings, &cluster.topology_sources[..]);
            let mut rules = NodeRules::new(settings, sources);
            for node in &cluster.nodes {
                let g = rules.general_keys(node);
                let derived = rules.derive_node(node, &g);
                assert_eq!(
                    derived,
                    derived_alone(node, settings, sources),
                    "{}",
                    node.name
                );
                flavors_handed += derived.flavors.len();
                levels_beyond_hostname += usize::from(derived.topology_levels.len() > 1);
                // Each flavor reads back the inputs it was built from (what finding a
                // remembered list relies on).
                let a_keys = rules.accelerator_keys(&derived.labels);
                let inputs = nodefeature::node_flavor_inputs(
                    &derived.labels,
                    &NodePlatform::of(&derived.labels),
                    &node.annotations,
                    settings,
                    &g,
                    &a_keys,
                );
                if derived.eligible {
                    let read_back: Vec<_> = derived
                        .flavors
                        .iter()
                        .map(FlavorInputs::of_flavor)
                        .collect();
                    assert_eq!(read_back, inputs, "{}", node.name);
                }
            }
            flavors_built += rules.flavors.iter().map(|list| list.len()).sum::<usize>();
        }
        // Not vacuous: some nodes took levels from a source, and most nodes' flavors were
        // remembered from an alike node.
        assert!(levels_beyond_hostname > 0);
        assert!(
            flavors_built * 2 < flavors_handed,
            "{flavors_built} flavors built for {flavors_handed} handed out"
        );
    }
}
