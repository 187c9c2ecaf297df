//! ResourceFlavors: eligible nodes' flavors grouped by name (research/chain.md §6.3, §17 rule 9;
//! node_flavor.go @187ec70).

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Node, Settings};
use crate::labels::{
    self, accelerator_feature_key, general_feature_key, note_key, Labels, Text, ACCELERATABLE,
    ARCH, OS, RESOURCE_TYPE, RESOURCE_TYPE_NODES, RESOURCE_TYPE_TOPOLOGY, TOPOLOGY_PROFILE,
};
use crate::nodefeature::{
    cpu_detail, effective_node_labels, node_flavors, node_is_eligible, profile_of_levels, CpuDetail,
};
use crate::objects::{NodeFlavor, ResourceFlavor, Toleration, Topology};

/// What one eligible node contributes: its name, its flavors, and the labels and annotations
/// the `cpuDetail` note is read from (only for a flavor's first contributor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contribution<'a> {
    pub node: &'a str,
    pub flavors: &'a [NodeFlavor],
    pub labels: &'a Labels,
    pub annotations: &'a Labels,
    /// The node's step key when a step store serves the derivation (0 otherwise): it stands
    /// for the node's labels and annotations in the key of a flavor step (`model::steps`).
    pub key: u64,
}

/// The flavor's own feature key: `acceleratable.…/<aKey>` or `general.…/<gKey>` (chain.md §6.3).
pub fn own_feature_key(f: &NodeFlavor) -> Text {
    if f.acceleratable {
        accelerator_feature_key(&f.accelerator_key)
    } else {
        general_feature_key(&f.general_key)
    }
}

/// `metadata.labels` of a ResourceFlavor pooled from `n` nodes (chain.md §6.3).
pub fn flavor_labels(f: &NodeFlavor, n: u64) -> Labels {
    let key = own_feature_key(f);
    let mut out = Vec::with_capacity(9);
    out.push((labels::count_key(&key), labels::int_text(f.count)));
    out.push((
        labels::concat_text(&[&key, ".capacity"]),
        labels::int_text(n.saturating_mul(f.count)),
    ));
    out.push((key, Text::new_static("true")));
    out.push((Text::new_static(OS), f.os.clone()));
    out.push((Text::new_static(ARCH), f.arch.clone()));
    out.push((
        Text::new_static(ACCELERATABLE),
        labels::bool_text(f.acceleratable),
    ));
    if f.acceleratable {
        out.push((
            general_feature_key(&f.general_key),
            Text::new_static("true"),
        ));
    }
    if !f.profile.is_empty() {
        out.push((Text::new_static(TOPOLOGY_PROFILE), f.profile.clone()));
    }
    out.push((
        Text::new_static(RESOURCE_TYPE),
        Text::new_static(RESOURCE_TYPE_NODES),
    ));
    out.into_iter().collect()
}

/// Whether a flavor carries the `cpuDetail` note: always on CPU flavors, on device flavors only
/// with `instance-type-aware-cpu-manufacturer` (chain.md §6.3).
pub fn carries_cpu_detail(f: &NodeFlavor, aware: bool) -> bool {
    !f.acceleratable || aware
}

/// `note.gpustack.ai/*` annotations of a ResourceFlavor (chain.md §6.3). Empty notes are kept, as
/// the operator writes them; `topologyProfile` only in E3 (non-empty profile); `cpuDetail` only
/// when `cpu` is given and [`carries_cpu_detail`] holds.
pub fn flavor_notes(f: &NodeFlavor, cpu: Option<&CpuDetail>, aware: bool) -> Labels {
    let mut notes = labels::of([
        (
            note_key!("acceleratable"),
            labels::bool_text(f.acceleratable),
        ),
        (note_key!("generalGroup"), f.general_key.clone()),
        (note_key!("acceleratorGroup"), f.accelerator_key.clone()),
        (note_key!("manufacturer"), f.manufacturer.clone()),
        (note_key!("product"), f.product.clone()),
        (note_key!("family"), f.family.clone()),
        (note_key!("memory"), f.memory.clone()),
        (note_key!("cores"), f.cores.clone()),
    ]);
    if !f.profile.is_empty() {
        notes.insert(note_key!("topologyProfile"), f.profile.clone());
    }
    if let Some(detail) = cpu.filter(|_| carries_cpu_detail(f, aware)) {
        notes.insert(
            note_key!("cpuDetail"),
            detail.note_json(f.acceleratable).into(),
        );
    }
    notes
}

/// The Kueue Topology a flavor references in E3: `gpustack-<profile>` (chain.md §2.4, §6.3),
/// none without a profile.
pub fn topology_name(profile: &str) -> Option<Text> {
    (!profile.is_empty()).then(|| crate::queue::topology_name(profile))
}

/// The Topology the node topology reconciler ensures for a node's levels: named after the
/// levels' profile, labelled `resource.gpustack.ai/type=topology`, the levels in order
/// (node_topology.go `ensureTopology`, `topologyLevelObjects`; corrections.md 15).
pub fn generated_topology(levels: &[String]) -> Topology {
    let profile = profile_of_levels(levels);
    Topology {
        name: topology_name(&profile).unwrap_or_default(),
        labels: Labels::from([(
            Text::new_static(RESOURCE_TYPE),
            Text::new_static(RESOURCE_TYPE_TOPOLOGY),
        )]),
        levels: levels.iter().map(|l| Text::from(l.as_str())).collect(),
    }
}

/// Whether a generated Topology is retired: no node carries its profile and no
/// ResourceFlavor uses it (node_flavor.go E3, after a flavor sync; chain.md §6.4).
pub fn topology_retired(
    topology: &Topology,
    node_profiles: &BTreeSet<&str>,
    flavors: &[ResourceFlavor],
) -> bool {
    let used = |profile: &str| topology_name(profile).as_deref() == Some(topology.name.as_str());
    !node_profiles.iter().any(|p| used(p)) && !flavors.iter().any(|rf| used(&rf.flavor.profile))
}

/// The generated Topologies at quiescence, by name: one ensured for every profiled node's
/// levels, plus each earlier one not [`topology_retired`]. An existing Topology is never
/// rewritten (its spec is immutable; a name fixes its levels through the hash).
pub fn generated_topologies<'a>(
    node_levels: impl IntoIterator<Item = &'a [String]>,
    node_profiles: &BTreeSet<&str>,
    flavors: &[ResourceFlavor],
    previous: &[Topology],
) -> Vec<Topology> {
    let mut out: BTreeMap<Text, Topology> = previous
        .iter()
        .filter(|t| !topology_retired(t, node_profiles, flavors))
        .map(|t| (t.name.clone(), t.clone()))
        .collect();
    // Alike nodes share their levels, and equal levels make the same Topology.
    let mut met: BTreeSet<&[String]> = BTreeSet::new();
    for levels in node_levels {
        if met.insert(levels) {
            let t = generated_topology(levels);
            out.entry(t.name.clone()).or_insert(t);
        }
    }
    out.into_values().collect()
}

/// What the flavor reconciler did to one ResourceFlavor between two quiescences, beyond the
/// in-place label updates (chain.md §6.4; node_flavor.go E3 @187ec70).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "transition", rename_all = "kebab-case")]
pub enum FlavorTransition {
    /// Its `spec.nodeLabels` drifted in the mixing selector only: deleted so that it is
    /// recreated fresh under the same name (`spec.nodeLabels` is otherwise immutable).
    Recreated { flavor: Text },
    /// No contributing node left: deleted. Kueue's `resource-in-use` finalizer kept it
    /// terminating while the listed queues still referenced it, until NodeQueue dropped it.
    Retired {
        flavor: Text,
        referenced_by: Vec<Text>,
    },
    /// A sibling (same base name, another profile) with no contributors: deleted after the
    /// sync of `kept`.
    SiblingRetired { flavor: Text, kept: Text },
    /// Deletion postponed (the operator requeues after 10 s): `node` matches the flavor's
    /// nodeLabels apart from the profile but has no profile label yet.
    Postponed { flavor: Text, node: Text },
}

/// The seconds the flavor reconciler waits before retrying a postponed deletion.
pub const POSTPONE_SECONDS: u32 = 10;

/// A flavor name without its `-fnv64-<hex>` profile tail: flavors of one node shape under
/// different profiles share it (node_flavor.go E3, sibling cleanup).
pub fn flavor_base_name(name: &str) -> &str {
    let marker = format!("-{}", crate::nodefeature::PROFILE_PREFIX);
    name.rfind(&marker).map_or(name, |i| &name[..i])
}

/// Whether two nodeLabels of one flavor name differ in the mixing selector only: the E3
/// `feature.gpustack.ai/cpu-only=true` pin (or the E2 @ee282a6
/// `feature.gpustack.ai/acceleratable=false` one) is present on one side and not the other
/// (node_flavor.go: the only spec drift it repairs, by deleting the flavor).
pub fn mixing_selector_drift(before: &Labels, after: &Labels) -> bool {
    let without = |l: &Labels| -> Labels {
        l.iter()
            .filter(|(k, _)| k.as_str() != crate::labels::CPU_ONLY && k.as_str() != ACCELERATABLE)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    before != after && without(before) == without(after)
}

/// Whether a flavor with no contributor waits: some node carries every nodeLabel but the
/// profile and has no profile label yet (node_flavor.go E3; requeue [`POSTPONE_SECONDS`]).
/// Returns that node.
pub fn deletion_postponed_by<'a>(
    rf: &ResourceFlavor,
    nodes: impl IntoIterator<Item = (&'a str, &'a Labels)>,
) -> Option<&'a str> {
    nodes
        .into_iter()
        .find(|(_, labels)| {
            !labels.contains_key(TOPOLOGY_PROFILE)
                && rf
                    .node_labels
                    .iter()
                    .filter(|(k, _)| k.as_str() != TOPOLOGY_PROFILE)
                    .all(|(k, v)| labels.get(k) == Some(v))
        })
        .map(|(name, _)| name)
}

/// The flavor reconciler's transitions from `before` (the flavors and queues of the previous
/// quiescence) to `after` (the flavors now contributed), judged against the nodes' labels.
/// A flavor gone from `after` is postponed, a retired sibling of a kept flavor, or retired;
/// one in both whose nodeLabels drifted in the mixing selector is recreated.
pub fn flavor_transitions<'a>(
    before: &[ResourceFlavor],
    queues_before: &[crate::objects::ClusterQueue],
    after: &[ResourceFlavor],
    nodes: impl IntoIterator<Item = (&'a str, &'a Labels)> + Clone,
) -> Vec<FlavorTransition> {
    let now: BTreeMap<&str, &ResourceFlavor> =
        after.iter().map(|rf| (rf.name.as_str(), rf)).collect();
    let mut out = Vec::new();
    for old in before {
        if let Some(new) = now.get(old.name.as_str()) {
            if mixing_selector_drift(&old.node_labels, &new.node_labels) {
                out.push(FlavorTransition::Recreated {
                    flavor: old.name.clone(),
                });
            }
            continue;
        }
        if let Some(node) = deletion_postponed_by(old, nodes.clone()) {
            out.push(FlavorTransition::Postponed {
                flavor: old.name.clone(),
                node: node.into(),
            });
            continue;
        }
        let base = flavor_base_name(&old.name);
        let sibling = after.iter().find(|rf| {
            flavor_base_name(&rf.name) == base && rf.flavor.profile != old.flavor.profile
        });
        out.push(match sibling {
            Some(kept) => FlavorTransition::SiblingRetired {
                flavor: old.name.clone(),
                kept: kept.name.clone(),
            },
            None => FlavorTransition::Retired {
                flavor: old.name.clone(),
                referenced_by: queues_before
                    .iter()
                    .filter(|q| {
                        q.resource_groups
                            .iter()
                            .flat_map(|g| &g.flavors)
                            .any(|f| f.flavor == old.name)
                    })
                    .map(|q| q.name.clone())
                    .collect(),
            },
        });
    }
    out
}

/// One flavor name's pool: identity from its first contributor, contributing node names.
pub struct FlavorPool<'a> {
    pub flavor: &'a NodeFlavor,
    pub first: Contribution<'a>,
    /// The contributors' names, sorted, each once.
    pub nodes: Vec<&'a str>,
}

/// Builds the ResourceFlavor of one pool (chain.md §6.3); the `cpuDetail` note, when the flavor
/// carries one, is read from the first contributor. Reads nothing but `p` and `aware`.
pub fn build_resource_flavor(p: &FlavorPool<'_>, aware: bool) -> ResourceFlavor {
    let n = p.nodes.len() as u64;
    let f = p.flavor;
    let cpu = carries_cpu_detail(f, aware).then(|| cpu_detail(p.first.labels, p.first.annotations));
    ResourceFlavor {
        name: f.name.clone(),
        labels: flavor_labels(f, n),
        annotations: flavor_notes(f, cpu.as_ref(), aware),
        node_labels: f.node_labels.clone(),
        tolerations: vec![Toleration {
            operator: Text::new_static("Exists"),
        }],
        topology_name: topology_name(&f.profile),
        flavor: f.clone(),
        nodes: p.nodes.iter().map(|s| Text::from(*s)).collect(),
        capacity: n.saturating_mul(f.count),
    }
}

/// Rule 9's grouping: one pool per flavor name over the given eligible nodes, identity from the
/// first contributor in the given order, sorted by name (chain.md §6.3, §17 rule 9;
/// node_flavor.go @187ec70).
pub fn flavor_pools<'a>(nodes: &[Contribution<'a>]) -> Vec<FlavorPool<'a>> {
    let mut pools: BTreeMap<&str, FlavorPool<'a>> = BTreeMap::new();
    for c in nodes {
        for f in c.flavors {
            pools
                .entry(f.name.as_str())
                .or_insert_with(|| FlavorPool {
                    flavor: f,
                    first: *c,
                    nodes: Vec::new(),
                })
                .nodes
                .push(c.node);
        }
    }
    pools
        .into_values()
        .map(|mut p| {
            p.nodes.sort_unstable();
            p.nodes.dedup();
            p
        })
        .collect()
}

/// Rule 9: one ResourceFlavor per pool of [`flavor_pools`], capacity = contributors × count.
pub fn resource_flavors(nodes: &[Contribution<'_>], aware: bool) -> Vec<ResourceFlavor> {
    flavor_pools(nodes)
        .iter()
        .map(|p| build_resource_flavor(p, aware))
        .collect()
}

/// Every ResourceFlavor of a cluster's nodes (chain.md §17 rules 1–9): effective labels,
/// eligibility, flavors, then [`resource_flavors`].
pub fn cluster_resource_flavors(nodes: &[Node], settings: &Settings) -> Vec<ResourceFlavor> {
    let read: Vec<(&Node, Labels, Vec<NodeFlavor>)> = nodes
        .iter()
        .filter_map(|n| {
            let labels = effective_node_labels(n, settings);
            node_is_eligible(&labels, settings).then(|| {
                let flavors = node_flavors(&labels, &n.annotations, settings);
                (n, labels, flavors)
            })
        })
        .collect();
    let contributions: Vec<Contribution<'_>> = read
        .iter()
        .map(|(n, labels, flavors)| Contribution {
            node: &n.name,
            flavors,
            labels,
            annotations: &n.annotations,
            key: 0,
        })
        .collect();
    resource_flavors(&contributions, settings.aware_cpu_manufacturer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Era;
    use crate::devices::Devices;
    use crate::labels::{text, CPU_ONLY, MANAGED};
    use crate::nodefeature::{group_id, DEFAULT_TOPOLOGY_PROFILE};

    fn node(
        name: &str,
        vendor: &str,
        cpu: &str,
        cores: u64,
        gpu: Option<(&str, u64, usize)>,
    ) -> Node {
        let mut n = crate::examples::nfd_node(name, vendor, cpu, cores);
        n.devices = gpu.map(|(product, mib, count)| Devices {
            groups: vec![crate::examples::nvidia_group(
                &group_id(product, "nvidia"),
                product,
                mib,
                count as u32,
            )],
        });
        n
    }

    /// The walkthrough cluster of chain.md §15.
    fn walkthrough() -> Vec<Node> {
        crate::examples::walkthrough().nodes
    }

    #[test]
    fn walkthrough_has_seven_flavors_with_the_e3_suffix() {
        let rfs = cluster_resource_flavors(&walkthrough(), &Settings::default());
        let names: Vec<_> = rfs.iter().map(|r| r.name.as_str()).collect();
        let suffix = format!("-{DEFAULT_TOPOLOGY_PROFILE}");
        let bare: Vec<_> = names
            .iter()
            .map(|n| n.strip_suffix(suffix.as_str()).unwrap_or("MISSING SUFFIX"))
            .collect();
        assert_eq!(bare, crate::examples::WALKTHROUGH_FLAVORS.to_vec());
        for rf in &rfs {
            assert_eq!(
                rf.topology_name.as_deref(),
                Some("gpustack-fnv64-87bf574bea2a4f23")
            );
            assert_eq!(rf.tolerations.len(), 1);
            assert_eq!(rf.nodes.len(), 1);
            assert_eq!(rf.capacity, rf.flavor.count);
        }
    }

    #[test]
    fn pooled_flavor_sums_capacity_and_keeps_the_first_identity() {
        let mut a = node(
            "node-b",
            "AMD",
            "AMD EPYC 7763 64-Core Processor",
            8,
            Some(("Tesla T4", 15360, 2)),
        );
        let mut b = node(
            "node-a",
            "AMD",
            "AMD EPYC 7763 64-Core Processor",
            8,
            Some(("Tesla T4", 15360, 2)),
        );
        a.annotations
            .insert("feature.gpustack.ai/cpu-physical-cores".into(), "4".into());
        b.annotations
            .insert("feature.gpustack.ai/cpu-physical-cores".into(), "64".into());
        let rfs = cluster_resource_flavors(&[a, b], &Settings::default());
        assert_eq!(rfs.len(), 2);
        let dev = &rfs[0];
        assert!(dev.flavor.acceleratable);
        assert_eq!(dev.nodes, vec!["node-a", "node-b"]);
        assert_eq!(dev.capacity, 4);
        let key = "acceleratable.feature.gpustack.ai/nvidia-tesla-t4";
        assert_eq!(
            dev.labels.get(&text!("{key}.capacity")).map(Text::as_str),
            Some("4")
        );
        assert_eq!(
            dev.labels.get(&text!("{key}.count")).map(Text::as_str),
            Some("2")
        );
        assert_eq!(
            dev.labels
                .get("general.feature.gpustack.ai/amd-epyc-7763")
                .map(Text::as_str),
            Some("true")
        );
        assert_eq!(
            dev.labels.get(ACCELERATABLE).map(Text::as_str),
            Some("true")
        );
        assert!(!dev.annotations.contains_key("note.gpustack.ai/cpuDetail"));
        let cpu = &rfs[1];
        assert_eq!(cpu.capacity, 16);
        assert_eq!(
            cpu.labels.get(ACCELERATABLE).map(Text::as_str),
            Some("false")
        );
        // Identity (and cpuDetail) from the first contributor in the given order: node-b.
        assert_eq!(
            cpu.annotations
                .get("note.gpustack.ai/cpuDetail")
                .map(Text::as_str),
            Some(r#"{"physicalCores":"4","cache":{}}"#)
        );
        assert_eq!(
            cpu.annotations
                .get("note.gpustack.ai/product")
                .map(Text::as_str),
            Some("AMD EPYC 7763 64-Core Processor")
        );
        assert_eq!(
            cpu.annotations
                .get("note.gpustack.ai/acceleratorGroup")
                .map(Text::as_str),
            Some("")
        );
    }

    #[test]
    fn aware_device_flavors_carry_the_cpu_detail() {
        let s = Settings {
            aware_cpu_manufacturer: true,
            ..Settings::default()
        };
        let rfs = cluster_resource_flavors(&walkthrough()[1..2], &s);
        let dev = rfs.iter().find(|r| r.flavor.acceleratable);
        let note = dev.and_then(|r| r.annotations.get("note.gpustack.ai/cpuDetail"));
        assert_eq!(
            note.map(Text::as_str),
            Some(r#"{"manufacturer":"amd","product":"AMD EPYC 7R32","cache":{}}"#)
        );
    }

    #[test]
    fn ineligible_nodes_contribute_nothing() {
        let mut nodes = walkthrough();
        nodes[0].labels.insert(MANAGED.into(), "false".into());
        let manual = Settings {
            manual_node_management: true,
            ..Settings::default()
        };
        assert!(cluster_resource_flavors(&nodes, &manual).is_empty());
        assert_eq!(
            cluster_resource_flavors(&nodes, &Settings::default()).len(),
            6
        );
    }

    #[test]
    fn e2_flavors_have_no_topology_and_mixing_off_pins_cpu_only_in_e3() {
        let e2 = Settings {
            era: Era::E2,
            ..Settings::default()
        };
        let rfs = cluster_resource_flavors(&walkthrough(), &e2);
        assert!(rfs.iter().all(|r| r.topology_name.is_none()
            && !r.labels.contains_key(TOPOLOGY_PROFILE)
            && !r
                .annotations
                .contains_key("note.gpustack.ai/topologyProfile")));
        let off = Settings {
            mixed_on_node: false,
            ..Settings::default()
        };
        let rfs = cluster_resource_flavors(&walkthrough(), &off);
        assert_eq!(rfs.len(), 4, "only node-cpu keeps a CPU flavor");
        let cpu: Vec<_> = rfs.iter().filter(|r| !r.flavor.acceleratable).collect();
        assert_eq!(cpu.len(), 1);
        assert_eq!(
            cpu[0].node_labels.get(CPU_ONLY).map(Text::as_str),
            Some("true")
        );
        assert!(!cpu[0].node_labels.contains_key(ACCELERATABLE));
    }

    #[test]
    fn plain_resource_flavors_group_by_name() {
        let f = |name: &str, count: u64| NodeFlavor {
            name: name.into(),
            general_key: "generic".into(),
            count,
            ..NodeFlavor::default()
        };
        let none = Labels::new();
        let (n2, n1) = (vec![f("b", 4)], vec![f("b", 4), f("a", 2)]);
        let at = |node, flavors| Contribution {
            node,
            flavors,
            labels: &none,
            annotations: &none,
            key: 0,
        };
        let rfs = resource_flavors(&[at("n2", &n2), at("n1", &n1)], false);
        let got: Vec<_> = rfs.iter().map(|r| (r.name.as_str(), r.capacity)).collect();
        assert_eq!(got, vec![("a", 2), ("b", 8)]);
        // CPU flavors always carry the cpuDetail note, read from the first contributor.
        assert!(rfs
            .iter()
            .all(|r| r.annotations.contains_key("note.gpustack.ai/cpuDetail")));
    }

    const ZONE: &str = "topology.kubernetes.io/zone";

    /// The walkthrough with a zone TopologySource selecting `node-t4-*` (both zone-labelled).
    fn zoned_walkthrough() -> crate::cluster::Cluster {
        let mut c = crate::examples::walkthrough();
        for n in c.nodes.iter_mut() {
            n.labels.insert(ZONE.into(), text!("z-{}", n.name));
        }
        for n in c.nodes.iter_mut().filter(|n| n.name.starts_with("node-t4")) {
            n.labels.insert("pool".into(), "t4".into());
        }
        c.topology_sources = vec![crate::cluster::TopologySource {
            name: "zones".into(),
            levels: vec![ZONE.into()],
            node_selector: crate::labels::from_pairs(&[("pool", "t4")]),
            ready: true,
        }];
        c
    }

    #[test]
    fn one_generated_topology_per_profile_in_use() {
        let hostname = crate::labels::HOSTNAME.to_string();
        let d = crate::derive::derive(&crate::examples::walkthrough());
        assert_eq!(
            d.topologies,
            vec![generated_topology(std::slice::from_ref(&hostname))]
        );
        let t = &d.topologies[0];
        assert_eq!(t.name, format!("gpustack-{DEFAULT_TOPOLOGY_PROFILE}"));
        assert_eq!(
            t.labels.get(RESOURCE_TYPE).map(Text::as_str),
            Some("topology")
        );
        let d = crate::derive::derive(&zoned_walkthrough());
        let names: Vec<&str> = d.topologies.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "gpustack-fnv64-87bf574bea2a4f23",
                "gpustack-fnv64-f7b1861ac0399767"
            ]
        );
        assert_eq!(d.topologies[1].levels, vec![ZONE.to_string(), hostname]);
        // every flavor's topologyName names a generated Topology
        for rf in &d.resource_flavors {
            assert!(
                names.contains(&rf.topology_name.as_deref().unwrap()),
                "{}",
                rf.name
            );
        }
        let e2 = crate::cluster::Cluster {
            settings: Settings {
                era: Era::E2,
                ..Settings::default()
            },
            ..zoned_walkthrough()
        };
        assert!(crate::derive::derive(&e2).topologies.is_empty());
    }

    #[test]
    fn a_topology_no_node_and_no_flavor_uses_is_retired() {
        let zoned = zoned_walkthrough();
        let before = crate::derive::derive(&zoned);
        assert_eq!(before.topologies.len(), 2);
        // the source goes away: the zone profile has no node and no flavor any more
        let plain = crate::cluster::Cluster {
            topology_sources: Vec::new(),
            ..zoned
        };
        let after = crate::derive::derive_after(&plain, Some(&before));
        assert_eq!(after.topologies, crate::derive::derive(&plain).topologies);
        assert_eq!(after.topologies.len(), 1);
        // a Topology a flavor still uses stays, even with no node carrying its profile
        let zone = before.topologies[1].clone();
        let using: Vec<ResourceFlavor> = before
            .resource_flavors
            .iter()
            .filter(|rf| rf.topology_name.as_deref() == Some(zone.name.as_str()))
            .cloned()
            .collect();
        assert!(!using.is_empty());
        let none = BTreeSet::new();
        assert!(!topology_retired(&zone, &none, &using));
        assert!(topology_retired(&zone, &none, &[]));
        let kept = generated_topologies(std::iter::empty(), &none, &using, &before.topologies);
        assert_eq!(kept, vec![zone]);
    }
}
