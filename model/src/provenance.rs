//! Why the model derived what it derived (issue [M11] item 4): the rule decisions of one
//! derivation, recorded by the derivation itself as it takes them (`derive::derive_explained`),
//! never recovered from its output afterwards.
//!
//! A [`Decision`] names the object it decided (kind, name), the field, the model function that
//! decided, the operator source that function follows, and one line saying what was decided
//! with which values. A [`Provenance`] keeps them in derivation order, with the edges "object A
//! is derived from object B" the derivation took (an InstanceType from its ClusterQueue, a
//! queue from the ResourceFlavors it selected, a flavor from the Nodes that contribute it), so
//! [`Provenance::explain`] can give the chain behind one field, upstream first.
//!
//! Recording goes through [`Record`]: [`NoRecord`] is the plain derivation's recorder, whose
//! `ON` is false, so no decision text is ever built there (the closures are not called).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The kinds of object a decision is about, upstream first (their order is the chain's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    Node,
    ResourceFlavor,
    ClusterQueue,
    InstanceType,
    LocalQueue,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::ResourceFlavor => "ResourceFlavor",
            Kind::ClusterQueue => "ClusterQueue",
            Kind::InstanceType => "InstanceType",
            Kind::LocalQueue => "LocalQueue",
        }
    }

    /// The kind a Kubernetes kind name stands for (`NodeLabels`, as the oracle's diffs name a
    /// node's labels, is the Node).
    pub fn parse(kind: &str) -> Option<Kind> {
        Some(match kind {
            "Node" | "NodeLabels" => Kind::Node,
            "ResourceFlavor" => Kind::ResourceFlavor,
            "ClusterQueue" => Kind::ClusterQueue,
            "InstanceType" => Kind::InstanceType,
            "LocalQueue" => Kind::LocalQueue,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An object of a derivation: its kind and name (a LocalQueue's is `namespace/name`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Object {
    pub kind: Kind,
    pub name: String,
}

impl Object {
    pub fn new(kind: Kind, name: impl Into<String>) -> Object {
        Object {
            kind,
            name: name.into(),
        }
    }
}

/// One rule decision of a derivation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The object decided.
    pub object: Object,
    /// The field decided, as the object's Kubernetes form names it
    /// (`metadata.labels["…"]`, `spec.resourceGroups`, `status.accelerator`).
    pub field: String,
    /// The model function that decided (`model::pool::pool_flavor_selector`).
    pub function: &'static str,
    /// The operator source it follows: file and function.
    pub source: &'static str,
    /// What was decided, with the values, in one line.
    pub decided: String,
}

/// Where a derivation's decisions go. `ON` tells a caller whether building a decision is worth
/// it: with [`NoRecord`] the closures passed to [`Record::decide`] are never called.
pub trait Record {
    const ON: bool;

    /// Records the decision `make` builds.
    fn decide(&mut self, make: impl FnOnce() -> Decision);

    /// Records that `object` is derived from `from`.
    fn derived_from(&mut self, object: impl FnOnce() -> Object, from: impl FnOnce() -> Object);
}

/// The plain derivation's recorder: records nothing, costs nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRecord;

impl Record for NoRecord {
    const ON: bool = false;

    #[inline(always)]
    fn decide(&mut self, _make: impl FnOnce() -> Decision) {}

    #[inline(always)]
    fn derived_from(&mut self, _object: impl FnOnce() -> Object, _from: impl FnOnce() -> Object) {}
}

/// Every decision of one derivation, in the order it took them, and what derives from what.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    pub decisions: Vec<Decision>,
    /// object → the objects it is derived from.
    pub upstream: BTreeMap<Object, BTreeSet<Object>>,
}

impl Record for Provenance {
    const ON: bool = true;

    fn decide(&mut self, make: impl FnOnce() -> Decision) {
        self.decisions.push(make());
    }

    fn derived_from(&mut self, object: impl FnOnce() -> Object, from: impl FnOnce() -> Object) {
        self.upstream.entry(object()).or_default().insert(from());
    }
}

impl Provenance {
    /// The objects `object` is derived from, transitively, itself included.
    pub fn lineage(&self, object: &Object) -> BTreeSet<Object> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![object.clone()];
        while let Some(o) = todo.pop() {
            if let Some(from) = self.upstream.get(&o) {
                todo.extend(from.iter().filter(|f| !seen.contains(*f)).cloned());
            }
            seen.insert(o);
        }
        seen
    }

    /// The chain behind `field` of the object `kind`/`name`: the decisions about the objects it
    /// is derived from (all of theirs: each shaped what this object reads), then the object's
    /// own decisions about that field (a decision about a containing or contained field
    /// counts; all of its own when none does). Upstream first: by the chain's kind order, then
    /// in derivation order. Empty for an object the derivation did not decide.
    pub fn explain(&self, kind: Kind, name: &str, field: &str) -> Vec<&Decision> {
        let object = Object::new(kind, name);
        let lineage = self.lineage(&object);
        let own: Vec<&Decision> = self
            .decisions
            .iter()
            .filter(|d| d.object == object)
            .collect();
        let related: Vec<&Decision> = own
            .iter()
            .copied()
            .filter(|d| fields_related(&d.field, field))
            .collect();
        let own = if related.is_empty() { own } else { related };
        let mut chain: Vec<&Decision> = self
            .decisions
            .iter()
            .filter(|d| d.object != object && lineage.contains(&d.object))
            .chain(own)
            .collect();
        // stable: derivation order within a kind
        chain.sort_by_key(|d| (d.object.kind, d.object == object));
        chain
    }
}

/// Whether one field path contains the other (`status.accelerator` and
/// `status.accelerator.capacity`), member selectors and indexes aside.
fn fields_related(a: &str, b: &str) -> bool {
    let (a, b) = (bare(a), bare(b));
    let within = |outer: &str, inner: &str| {
        inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('.'))
    };
    !a.is_empty() && !b.is_empty() && (within(&a, &b) || within(&b, &a))
}

/// A field path without its `[…]` selectors.
fn bare(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut depth = 0usize;
    for c in field.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(kind: Kind, name: &str, field: &str) -> Decision {
        Decision {
            object: Object::new(kind, name),
            field: field.into(),
            function: "model::test",
            source: "test.go",
            decided: format!("{kind} {name} {field}"),
        }
    }

    #[test]
    fn explain_walks_upstream_first_and_keeps_only_the_fields_own_decisions() {
        let mut p = Provenance::default();
        p.decide(|| decision(Kind::InstanceType, "it", "status.accelerator"));
        p.decide(|| decision(Kind::InstanceType, "it", "metadata.labels[\"x\"]"));
        p.decide(|| decision(Kind::ClusterQueue, "it", "spec.resourceGroups"));
        p.decide(|| decision(Kind::Node, "n", "metadata.labels[\"g\"]"));
        p.decide(|| decision(Kind::Node, "other", "metadata.labels[\"g\"]"));
        p.decide(|| decision(Kind::ResourceFlavor, "f", "nodes"));
        p.derived_from(
            || Object::new(Kind::InstanceType, "it"),
            || Object::new(Kind::ClusterQueue, "it"),
        );
        p.derived_from(
            || Object::new(Kind::ClusterQueue, "it"),
            || Object::new(Kind::ResourceFlavor, "f"),
        );
        p.derived_from(
            || Object::new(Kind::ResourceFlavor, "f"),
            || Object::new(Kind::Node, "n"),
        );
        let chain: Vec<String> = p
            .explain(Kind::InstanceType, "it", "status.accelerator.capacity")
            .iter()
            .map(|d| d.decided.clone())
            .collect();
        assert_eq!(
            chain,
            [
                "Node n metadata.labels[\"g\"]",
                "ResourceFlavor f nodes",
                "ClusterQueue it spec.resourceGroups",
                "InstanceType it status.accelerator",
            ]
        );
        assert!(p.explain(Kind::LocalQueue, "none", "spec").is_empty());
    }

    #[test]
    fn the_plain_recorder_never_builds_a_decision() {
        let mut r = NoRecord;
        r.decide(|| panic!("built"));
        r.derived_from(|| panic!("built"), || panic!("built"));
        const { assert!(!NoRecord::ON) };
    }

    #[test]
    fn fields_relate_by_containment_only() {
        assert!(fields_related(
            "status.accelerator",
            "status.accelerator.capacity"
        ));
        assert!(fields_related(
            "spec.resourceGroups",
            "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"
        ));
        assert!(!fields_related(
            "status.accelerator",
            "status.acceleratorShared"
        ));
        assert!(!fields_related("", "status"));
    }
}
