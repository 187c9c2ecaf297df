//! Reading back what the operator derived, and diffing it against the model: Nodes (their
//! labels), ResourceFlavors, InstanceTypes, ClusterQueues and LocalQueues, each reduced to the
//! part the operator writes (labels minus the run label, annotations, spec, and an
//! InstanceType's status). The expected side is the model's derivation rendered by the twin's
//! own renderer (`wire::render`), reduced through the same typed round trip, so both sides
//! differ only where the objects do; `oracle::diff_objects` reports field by field, comparing
//! quantity and int-or-string fields by value (`6400k` = `6400000`, `"72"` = `72`), so a
//! cluster that spells a quota or a view differently is not a difference.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use model::derive::{Derived, DerivedNode};
use oracle::{diff_objects, Difference, ObjectKind};
use serde_json::{json, Map, Value};

use super::scoped::{normalized, Scoped};
use super::{Client, ClientError, RUN_LABEL};
use crate::crd::{ClusterQueue, InstanceType, LocalQueue, ResourceFlavor, Topology};
use crate::wire::fields::at;
use crate::wire::kinds::{self, Kind};
use crate::wire::render::{node_labels as node_labels_object, render_besides_nodes};

/// Observed (or expected) objects by kind, then identity (`name`; LocalQueue `namespace/name`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub objects: BTreeMap<ObjectKind, BTreeMap<String, Value>>,
}

impl Observed {
    /// How many objects, all kinds together.
    pub fn len(&self) -> usize {
        self.objects.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds an object as a cluster listed it (a parsed `kubectl get -o json` item, or one the
    /// twin renders): through verify's type for its kind, as [`Client::observe`] reads it. A
    /// Node contributes its label map only ([`reduce`]), which both sides hold as strings, so
    /// it skips the round trip through the whole Node type.
    pub(crate) fn insert_listed(&mut self, kind: &Kind, object: &Value) {
        match object_kind(kind) {
            None => {}
            Some(ObjectKind::NodeLabels) => self.insert(kind, object),
            Some(_) => self.insert(kind, &through_type(kind, object.clone())),
        }
    }

    /// Adds a Node from the labels its reader read (`wire::read::NodeDoc`), in the form
    /// [`insert`](Self::insert) gives a listed Node (the audit adds the Nodes whose labels are
    /// not the derived ones).
    pub(crate) fn insert_node<'l>(
        &mut self,
        name: &str,
        labels: impl Iterator<Item = (&'l str, &'l str)>,
    ) {
        let labels = labels
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        self.insert_node_labels(name.to_string(), labels);
    }

    /// A derived Node as expected: its rendered labels (`wire::render::node_labels`), moved
    /// into the entry rather than copied through a listing.
    pub(crate) fn insert_expected_node(&mut self, node: &DerivedNode) {
        let mut object = node_labels_object(node);
        let labels = match object.pointer_mut("/metadata/labels").map(Value::take) {
            Some(Value::Object(labels)) => labels,
            _ => Map::new(),
        };
        self.insert_node_labels(node.name.to_string(), labels);
    }

    /// A Node's entry: its label map, as [`reduce`] keeps a listed Node's.
    fn insert_node_labels(&mut self, name: String, labels: Map<String, Value>) {
        self.objects
            .entry(ObjectKind::NodeLabels)
            .or_default()
            .insert(name, node_labels(labels));
    }

    pub(crate) fn insert(&mut self, kind: &Kind, object: &Value) {
        let Some(k) = object_kind(kind) else { return };
        let name = crate::wire::read::name_of(object);
        let id = match at(object, "/metadata/namespace").and_then(Value::as_str) {
            Some(ns) if kind.namespaced => format!("{ns}/{name}"),
            _ => name,
        };
        self.objects
            .entry(k)
            .or_default()
            .insert(id, reduce(k, object));
    }
}

/// Whether [`Observed::insert_listed`] keeps objects of `kind` (Devices, Namespaces, … it
/// does not).
pub fn observes(kind: &Kind) -> bool {
    object_kind(kind).is_some()
}

/// The oracle's kind for a twin kind that the operator writes.
fn object_kind(kind: &Kind) -> Option<ObjectKind> {
    Some(match kind.kind {
        "Node" => ObjectKind::NodeLabels,
        "ResourceFlavor" => ObjectKind::ResourceFlavor,
        "InstanceType" => ObjectKind::InstanceType,
        "ClusterQueue" => ObjectKind::ClusterQueue,
        "LocalQueue" => ObjectKind::LocalQueue,
        "Topology" => ObjectKind::Topology,
        _ => return None,
    })
}

/// The part of an object the operator writes. A Node's is its label set; the run label is
/// verify's bookkeeping and is left out of every other kind's labels.
fn reduce(kind: ObjectKind, o: &Value) -> Value {
    let map = |pointer: &str| -> Map<String, Value> {
        at(o, pointer)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    if kind == ObjectKind::NodeLabels {
        return node_labels(map("/metadata/labels"));
    }
    let mut labels = map("/metadata/labels");
    labels.remove(RUN_LABEL);
    let mut out = json!({"labels": labels, "annotations": map("/metadata/annotations")});
    out["spec"] = o.get("spec").cloned().unwrap_or(Value::Null);
    if kind == ObjectKind::LocalQueue {
        out["ownerReferences"] = owners_by_value(o);
    }
    if kind == ObjectKind::InstanceType {
        out["status"] = o.get("status").cloned().unwrap_or(Value::Null);
    }
    out
}

/// A Node as observed: its label map.
fn node_labels(labels: Map<String, Value>) -> Value {
    Value::Object(Map::from_iter([(
        "labels".to_string(),
        Value::Object(labels),
    )]))
}

/// `metadata.ownerReferences` as the operator decides them: who owns it and how, without the
/// owner's `uid` (the API server's, unknown to the model) and with the optional booleans read
/// as false when absent.
fn owners_by_value(o: &Value) -> Value {
    let refs = o
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
            let flag = |k: &str| r.get(k).and_then(Value::as_bool).unwrap_or(false);
            json!({
                "apiVersion": text("apiVersion"), "kind": text("kind"), "name": text("name"),
                "controller": flag("controller"), "blockOwnerDeletion": flag("blockOwnerDeletion"),
            })
        })
        .collect();
    Value::Array(refs)
}

/// `object` through verify's type for `kind`.
fn through_type(kind: &Kind, object: Value) -> Value {
    crate::with_type!(kind, K => normalized::<K>(object), _ => object)
}

/// What the model's derivation says the operator's objects must be.
pub fn expected(derived: &Derived) -> Observed {
    let mut out = expected_besides_nodes(derived);
    for node in &derived.nodes {
        out.insert_expected_node(node);
    }
    out
}

/// [`expected`] but the Nodes' label sets (the audit adds only the Nodes whose labels differ).
pub fn expected_besides_nodes(derived: &Derived) -> Observed {
    let mut out = Observed::default();
    for (kind, namespace, mut object) in render_besides_nodes(derived) {
        if let Some(ns) = namespace {
            object["metadata"]["namespace"] = json!(ns);
        }
        out.insert_listed(&kind, &object);
    }
    out
}

/// Every difference between expected and observed, kind by kind.
pub fn diff(expected: &Observed, observed: &Observed) -> Vec<Difference> {
    let empty = BTreeMap::new();
    let kinds: std::collections::BTreeSet<&ObjectKind> = expected
        .objects
        .keys()
        .chain(observed.objects.keys())
        .collect();
    kinds
        .into_iter()
        .flat_map(|k| {
            diff_objects(
                *k,
                expected.objects.get(k).unwrap_or(&empty),
                observed.objects.get(k).unwrap_or(&empty),
            )
        })
        .collect()
}

impl Client {
    /// Lists the operator's objects and reduces them for [`diff`].
    pub async fn observe(&self) -> Result<Observed, ClientError> {
        let mut out = Observed::default();
        self.observe_kind::<Node>(&kinds::NODE, &mut out).await?;
        self.observe_kind::<ResourceFlavor>(&kinds::RESOURCE_FLAVOR, &mut out)
            .await?;
        self.observe_kind::<InstanceType>(&kinds::INSTANCE_TYPE, &mut out)
            .await?;
        self.observe_kind::<ClusterQueue>(&kinds::CLUSTER_QUEUE, &mut out)
            .await?;
        self.observe_kind::<LocalQueue>(&kinds::LOCAL_QUEUE, &mut out)
            .await?;
        self.observe_kind::<Topology>(&kinds::TOPOLOGY, &mut out)
            .await?;
        Ok(out)
    }

    async fn observe_kind<K: Scoped>(
        &self,
        kind: &Kind,
        out: &mut Observed,
    ) -> Result<(), ClientError> {
        for object in self.list::<K>(None, None).await? {
            out.insert(kind, &serde_json::to_value(&object).unwrap_or(Value::Null));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `nominalQuota` of the observed ClusterQueues, mutably.
    fn quotas(observed: &mut Observed) -> Vec<&mut Value> {
        let queues = observed
            .objects
            .entry(ObjectKind::ClusterQueue)
            .or_default();
        let mut out = Vec::new();
        for q in queues.values_mut() {
            let groups = q["spec"]["resourceGroups"].as_array_mut();
            for g in groups.into_iter().flatten() {
                for f in g["flavors"].as_array_mut().into_iter().flatten() {
                    for r in f["resources"].as_array_mut().into_iter().flatten() {
                        out.push(&mut r["nominalQuota"]);
                    }
                }
            }
        }
        out
    }

    /// The audit observes each Node from what its reader read (`wire::read::NodeDoc`), from
    /// the Node's text.
    #[test]
    fn a_node_is_observed_the_same_from_what_its_reader_reads() {
        let node = crate::wire::read::tests::listed_node();
        let text = node.to_string();
        let read: crate::wire::read::NodeDoc = crate::wire::doc::from_text(&text).unwrap();
        let mut from_reader = Observed::default();
        from_reader.insert_node(read.name(), read.labels());
        let mut listed = Observed::default();
        listed.insert_listed(&kinds::NODE, &node);
        assert_eq!(from_reader, listed);
        assert_eq!(
            listed.objects[&ObjectKind::NodeLabels]["n"]["labels"]
                .as_object()
                .map(Map::len),
            Some(2)
        );
    }

    /// The expected Nodes take their rendered labels as they are, not through a listing.
    #[test]
    fn an_expected_node_is_its_rendered_labels_as_listed() {
        let derived = model::derive::derive(&model::examples::walkthrough());
        let mut listed = Observed::default();
        for (kind, _, object) in crate::wire::render::render(&derived)
            .iter()
            .filter(|(k, _, _)| *k == kinds::NODE)
        {
            listed.insert_listed(kind, object);
        }
        let want = expected(&derived);
        assert!(!listed.is_empty());
        assert_eq!(
            want.objects.get(&ObjectKind::NodeLabels),
            listed.objects.get(&ObjectKind::NodeLabels)
        );
    }

    /// The twin and live tiers compare the generated Kueue Topology objects too: what the
    /// model derives is expected, and a changed level is a difference at its field path.
    #[test]
    fn topologies_are_expected_and_a_changed_level_differs() {
        let derived = model::derive::derive(&model::examples::walkthrough());
        let want = expected(&derived);
        let topologies = &want.objects[&ObjectKind::Topology];
        assert_eq!(topologies.len(), derived.topologies.len());
        assert!(!topologies.is_empty());
        let mut changed = want.clone();
        let t = changed
            .objects
            .get_mut(&ObjectKind::Topology)
            .and_then(|m| m.values_mut().next())
            .unwrap();
        t["spec"]["levels"][0]["nodeLabel"] = json!("topology.kubernetes.io/zone");
        let got = diff(&want, &changed);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, ObjectKind::Topology);
        assert!(got[0].field.contains("levels"), "{got:?}");
    }

    #[test]
    fn observed_quantities_compare_by_value() {
        let derived = model::derive::derive(&model::examples::walkthrough());
        let want = expected(&derived);
        let mut respelled = want.clone();
        let mut n = 0;
        for q in quotas(&mut respelled) {
            let v = q
                .as_str()
                .and_then(|s| model::credits::parse_quantity(s).ok())
                .map(|q| q.value())
                .expect("a rendered quota");
            *q = json!(v);
            n += 1;
        }
        assert!(n > 0);
        assert_eq!(diff(&want, &respelled), []);
        let mut changed = respelled.clone();
        if let Some(q) = quotas(&mut changed).into_iter().next() {
            *q = json!(q.as_i64().unwrap_or_default() + 1000);
        }
        let got = diff(&want, &changed);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].field.ends_with("nominalQuota"), "{got:?}");
    }
}
