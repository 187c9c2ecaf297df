//! Divergences folded along the chain's derivation graph (issue 7 "Observing and diffing"):
//! node → ResourceFlavor → pool → InstanceType / ClusterQueue → LocalQueue. A pool is the
//! name its InstanceType and ClusterQueue share (research/chain.md §10), so a flavor points at
//! both. The upstream-most divergent objects lead; what they feed is listed beneath them, so one
//! wrong ResourceFlavor reads as one finding with its consequences, not as many.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use model::derive::Derived;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, Reversed};
use petgraph::Direction;
use serde::Serialize;

use crate::diff::{Difference, ObjectKind};

/// One object in the graph: its kind and identity (`name`; LocalQueue `namespace/name`;
/// NodeLabels the node's name), as in [`Difference`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ObjectId {
    pub kind: ObjectKind,
    pub name: String,
}

impl ObjectId {
    pub fn new(kind: ObjectKind, name: impl Into<String>) -> Self {
        ObjectId {
            kind,
            name: name.into(),
        }
    }

    fn of(d: &Difference) -> Self {
        ObjectId::new(d.kind, d.name.clone())
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// Position along the chain, upstream first: findings are listed in this order.
pub fn chain_rank(kind: ObjectKind) -> u8 {
    match kind {
        ObjectKind::Devices | ObjectKind::NodeLabels => 0,
        ObjectKind::Topology => 1,
        ObjectKind::ResourceFlavor => 2,
        ObjectKind::InstanceType => 3,
        ObjectKind::ClusterQueue => 4,
        ObjectKind::LocalQueue => 5,
        ObjectKind::Effect => 6,
    }
}

/// Which object is derived from which, for one derivation.
#[derive(Clone, Debug, Default)]
pub struct DerivationGraph {
    graph: DiGraph<ObjectId, ()>,
    index: HashMap<ObjectId, NodeIndex>,
}

impl DerivationGraph {
    /// The edges of `derived`: each contributing node → its flavor (the flavor's node list),
    /// each flavor → the InstanceType and ClusterQueue of every pool whose queue lists it, each
    /// ClusterQueue → its LocalQueues.
    pub fn from_derived(derived: &Derived) -> Self {
        let mut g = DerivationGraph::default();
        g.add_derived(derived);
        g
    }

    /// Adds the edges of another derivation (e.g. the observed side when it is one).
    pub fn add_derived(&mut self, derived: &Derived) {
        // a node's profile label names the Topology made for it; a flavor's topologyName
        // names the Topology it is scheduled by (devices.md §5)
        for node in &derived.nodes {
            let profile = node.labels.get(model::labels::TOPOLOGY_PROFILE);
            if let Some(name) = profile.and_then(|p| model::flavor::topology_name(p)) {
                self.edge(
                    ObjectId::new(ObjectKind::NodeLabels, node.name.clone()),
                    ObjectId::new(ObjectKind::Topology, name),
                );
            }
        }
        for rf in &derived.resource_flavors {
            let flavor = ObjectId::new(ObjectKind::ResourceFlavor, rf.name.clone());
            if let Some(t) = &rf.topology_name {
                self.edge(
                    ObjectId::new(ObjectKind::Topology, t.clone()),
                    flavor.clone(),
                );
            }
            for node in &rf.nodes {
                self.edge(
                    ObjectId::new(ObjectKind::NodeLabels, node.clone()),
                    flavor.clone(),
                );
            }
            self.vertex(flavor);
        }
        for it in &derived.instance_types {
            self.vertex(ObjectId::new(ObjectKind::InstanceType, it.name.clone()));
        }
        for cq in &derived.cluster_queues {
            let flavors = cq
                .resource_groups
                .iter()
                .flat_map(|g| g.flavors.iter().map(|f| f.flavor.clone()));
            for flavor in flavors {
                let from = ObjectId::new(ObjectKind::ResourceFlavor, flavor);
                for kind in [ObjectKind::InstanceType, ObjectKind::ClusterQueue] {
                    self.edge(from.clone(), ObjectId::new(kind, cq.name.clone()));
                }
            }
            self.vertex(ObjectId::new(ObjectKind::ClusterQueue, cq.name.clone()));
        }
        for lq in &derived.local_queues {
            self.edge(
                ObjectId::new(ObjectKind::ClusterQueue, lq.cluster_queue.clone()),
                ObjectId::new(
                    ObjectKind::LocalQueue,
                    format!("{}/{}", lq.namespace, lq.name),
                ),
            );
        }
    }

    fn vertex(&mut self, id: ObjectId) -> NodeIndex {
        if let Some(&i) = self.index.get(&id) {
            return i;
        }
        let i = self.graph.add_node(id.clone());
        self.index.insert(id, i);
        i
    }

    fn edge(&mut self, from: ObjectId, to: ObjectId) {
        let (a, b) = (self.vertex(from), self.vertex(to));
        self.graph.update_edge(a, b, ());
    }

    /// The objects `id` is derived from, directly.
    pub fn parents(&self, id: &ObjectId) -> Vec<&ObjectId> {
        self.index
            .get(id)
            .map(|&i| {
                self.graph
                    .neighbors_directed(i, Direction::Incoming)
                    .map(|p| &self.graph[p])
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every object `id` is derived from, directly or not (itself excluded).
    fn ancestors(&self, id: &ObjectId) -> Vec<&ObjectId> {
        let Some(&start) = self.index.get(id) else {
            return Vec::new();
        };
        let reversed = Reversed(&self.graph);
        let mut dfs = Dfs::new(reversed, start);
        let mut out = Vec::new();
        while let Some(i) = dfs.next(reversed) {
            if i != start {
                out.push(&self.graph[i]);
            }
        }
        out
    }
}

/// One divergent object and its differences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergent {
    pub object: ObjectId,
    pub differences: Vec<Difference>,
}

/// An upstream-most divergent object, with the divergent objects derived from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub root: Divergent,
    /// Downstream divergent objects, in chain order.
    pub consequences: Vec<Divergent>,
}

impl Finding {
    /// Every difference of the finding, root first.
    pub fn differences(&self) -> impl Iterator<Item = &Difference> {
        std::iter::once(&self.root)
            .chain(&self.consequences)
            .flat_map(|d| &d.differences)
    }
}

/// Groups `differences` by object and folds each divergent object under the upstream-most
/// divergent objects it is derived from. An object reachable from several roots is listed under
/// the first in chain order, so every difference appears exactly once. Objects the graph does
/// not know (e.g. present only on the observed side) stand as their own findings.
pub fn fold(differences: &[Difference], graph: &DerivationGraph) -> Vec<Finding> {
    let mut by_object: BTreeMap<(u8, ObjectId), Vec<Difference>> = BTreeMap::new();
    for d in differences {
        by_object
            .entry((chain_rank(d.kind), ObjectId::of(d)))
            .or_default()
            .push(d.clone());
    }
    let divergent = |id: &ObjectId| by_object.contains_key(&(chain_rank(id.kind), id.clone()));
    let divergent_ancestors = |id: &ObjectId| -> Vec<ObjectId> {
        graph
            .ancestors(id)
            .into_iter()
            .filter(|a| divergent(a))
            .cloned()
            .collect()
    };
    let mut roots: BTreeMap<(u8, ObjectId), Vec<(u8, ObjectId)>> = BTreeMap::new();
    let mut under: Vec<((u8, ObjectId), (u8, ObjectId))> = Vec::new();
    for key in by_object.keys() {
        let upstream: Vec<(u8, ObjectId)> = divergent_ancestors(&key.1)
            .into_iter()
            .filter(|a| divergent_ancestors(a).is_empty())
            .map(|a| (chain_rank(a.kind), a))
            .collect();
        match upstream.into_iter().min() {
            None => {
                roots.entry(key.clone()).or_default();
            }
            Some(root) => under.push((root, key.clone())),
        }
    }
    for (root, key) in under {
        roots.entry(root).or_default().push(key);
    }
    let take = |key: &(u8, ObjectId)| Divergent {
        object: key.1.clone(),
        differences: by_object.get(key).cloned().unwrap_or_default(),
    };
    roots
        .into_iter()
        .map(|(root, mut below)| {
            below.sort();
            Finding {
                root: take(&root),
                consequences: below.iter().map(take).collect(),
            }
        })
        .collect()
}

/// A plain-text report: one block per finding, the root's differences, then each consequence
/// indented beneath it.
pub fn render_findings(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "no divergences\n".to_string();
    }
    let mut out = String::new();
    for (n, f) in findings.iter().enumerate() {
        let _ = writeln!(
            out,
            "finding {}: {} ({} downstream object{})",
            n + 1,
            f.root.object,
            f.consequences.len(),
            if f.consequences.len() == 1 { "" } else { "s" }
        );
        for d in &f.root.differences {
            let _ = writeln!(out, "  {}", field_line(d));
        }
        for c in &f.consequences {
            let _ = writeln!(out, "  └ {}", c.object);
            for d in &c.differences {
                let _ = writeln!(out, "      {}", field_line(d));
            }
        }
    }
    out
}

/// A difference without its object (the block heading names it).
fn field_line(d: &Difference) -> String {
    let full = d.to_string();
    let prefix = format!("{} {} ", d.kind, d.name);
    full.strip_prefix(&prefix).unwrap_or(&full).to_string()
}
