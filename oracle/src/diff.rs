//! Structured differences between two derivations: which object (kind + name), which field
//! (a path into its serialized form), and the two values. Objects are matched by identity
//! (name; LocalQueue by `namespace/name`), never by position, so list order at the top level
//! is not a difference; fields are compared by walking both objects' JSON values. A field the
//! Kubernetes schema types as a quantity or int-or-string ([`value_class`]) is compared by
//! value (`6400k` = `6400000`, `"72"` = `72`), as the API machinery does; every other field by
//! its JSON value, so a label value `"72"` stays a string.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use model::derive::Derived;
use serde::Serialize;
use serde_json::Value;

/// The kinds of object a derivation holds, plus the effect of an event (for replays).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ObjectKind {
    ResourceFlavor,
    InstanceType,
    ClusterQueue,
    LocalQueue,
    /// A node's effective labels and the labels of its Devices object.
    NodeLabels,
    /// A node's Devices object (worker.gpustack.ai; only property violations name it: the
    /// chain reads it, it does not publish it).
    Devices,
    /// A generated Kueue Topology (`gpustack-<profile>`), compared in its Kubernetes shape.
    Topology,
    /// What an event did (only [`crate::replay::compare_runs`] reports it).
    Effect,
}

impl ObjectKind {
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::ResourceFlavor => "ResourceFlavor",
            ObjectKind::InstanceType => "InstanceType",
            ObjectKind::ClusterQueue => "ClusterQueue",
            ObjectKind::LocalQueue => "LocalQueue",
            ObjectKind::NodeLabels => "NodeLabels",
            ObjectKind::Topology => "Topology",
            ObjectKind::Devices => "Devices",
            ObjectKind::Effect => "Effect",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One field that differs. `field` is empty when a whole object is missing on one side;
/// `None` on a side means the object or field is absent there. Values are compact JSON.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Difference {
    pub kind: ObjectKind,
    pub name: String,
    pub field: String,
    pub expected: Option<String>,
    pub observed: Option<String>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &Option<String>| shorten(v.as_deref().unwrap_or("<absent>"), MAX_MESSAGE);
        write!(
            f,
            "{} {} {}: expected {}, observed {}",
            self.kind,
            self.name,
            if self.field.is_empty() {
                "(object)"
            } else {
                &self.field
            },
            side(&self.expected),
            side(&self.observed)
        )
    }
}

/// Every difference between two derivations, in (kind, name, field) order.
pub fn diff(expected: &Derived, observed: &Derived) -> Vec<Difference> {
    diff_filtered(expected, observed, None)
}

/// [`diff`] restricted to the objects of the named pools: their InstanceTypes and
/// ClusterQueues, the ResourceFlavors either side's queue lists, and their LocalQueues.
/// Node labels are not pool objects and are left out.
pub fn diff_restricted(
    expected: &Derived,
    observed: &Derived,
    pools: &BTreeSet<String>,
) -> Vec<Difference> {
    let flavors: BTreeSet<String> = [expected, observed]
        .iter()
        .flat_map(|d| d.cluster_queues.iter())
        .filter(|q| pools.contains(q.name.as_str()))
        .flat_map(|q| q.resource_groups.iter())
        .flat_map(|g| g.flavors.iter().map(|f| f.flavor.to_string()))
        .collect();
    diff_filtered(expected, observed, Some(&Scope { pools, flavors }))
}

/// The objects a restricted diff keeps.
struct Scope<'a> {
    pools: &'a BTreeSet<String>,
    flavors: BTreeSet<String>,
}

/// A node's published labels, the part of a node the chain writes.
#[derive(PartialEq, Serialize)]
struct NodeLabels<'a> {
    #[serde(skip)]
    name: &'a str,
    labels: &'a model::labels::Labels,
    devices_labels: &'a Option<model::labels::Labels>,
}

fn diff_filtered(
    expected: &Derived,
    observed: &Derived,
    scope: Option<&Scope<'_>>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let pool = |name: &str| scope.is_none_or(|s| s.pools.contains(name));
    diff_list(
        ObjectKind::ResourceFlavor,
        &expected.resource_flavors,
        &observed.resource_flavors,
        |o| o.name.to_string(),
        |o| scope.is_none_or(|s| s.flavors.contains(o.name.as_str())),
        &mut out,
    );
    diff_list(
        ObjectKind::InstanceType,
        &expected.instance_types,
        &observed.instance_types,
        |o| o.name.to_string(),
        |o| pool(&o.name),
        &mut out,
    );
    diff_list(
        ObjectKind::ClusterQueue,
        &expected.cluster_queues,
        &observed.cluster_queues,
        |o| o.name.to_string(),
        |o| pool(&o.name),
        &mut out,
    );
    diff_list(
        ObjectKind::LocalQueue,
        &expected.local_queues,
        &observed.local_queues,
        |o| format!("{}/{}", o.namespace, o.name),
        |o| pool(&o.cluster_queue),
        &mut out,
    );
    fn node_labels(d: &Derived) -> Vec<NodeLabels<'_>> {
        d.nodes
            .iter()
            .map(|n| NodeLabels {
                name: &n.name,
                labels: &n.labels,
                devices_labels: &n.devices_labels,
            })
            .collect()
    }
    diff_list(
        ObjectKind::NodeLabels,
        &node_labels(expected),
        &node_labels(observed),
        |n| n.name.to_string(),
        |_| scope.is_none(),
        &mut out,
    );
    let flavor_topologies: BTreeSet<&str> = [expected, observed]
        .iter()
        .flat_map(|d| d.resource_flavors.iter())
        .filter(|rf| scope.is_none_or(|s| s.flavors.contains(rf.name.as_str())))
        .filter_map(|rf| rf.topology_name.as_deref())
        .collect();
    diff_list(
        ObjectKind::Topology,
        &topology_objects(expected),
        &topology_objects(observed),
        |t| t.name.to_string(),
        |t| scope.is_none() || flavor_topologies.contains(t.name),
        &mut out,
    );
    out
}

/// A generated Topology as the API serves it: labels and `spec.levels[].nodeLabel`
/// (shared/crds/kueue.x-k8s.io_topologies.yaml), so a difference is named by its
/// Kubernetes field path (`spec.levels[0].nodeLabel`).
#[derive(PartialEq, Serialize)]
struct TopologyObject<'a> {
    #[serde(skip)]
    name: &'a str,
    labels: &'a model::labels::Labels,
    spec: TopologySpec<'a>,
}

#[derive(PartialEq, Serialize)]
struct TopologySpec<'a> {
    levels: Vec<TopologyLevel<'a>>,
}

#[derive(PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct TopologyLevel<'a> {
    node_label: &'a str,
}

fn topology_objects(d: &Derived) -> Vec<TopologyObject<'_>> {
    d.topologies
        .iter()
        .map(|t| TopologyObject {
            name: &t.name,
            labels: &t.labels,
            spec: TopologySpec {
                levels: t
                    .levels
                    .iter()
                    .map(|l| TopologyLevel { node_label: l })
                    .collect(),
            },
        })
        .collect()
}

/// One kind's objects matched by identity; equal objects are skipped without serializing.
/// A later duplicate identity is kept under a `#n` suffix so it still shows up.
fn diff_list<T: Serialize + PartialEq>(
    kind: ObjectKind,
    expected: &[T],
    observed: &[T],
    identity: impl Fn(&T) -> String,
    keep: impl Fn(&T) -> bool,
    out: &mut Vec<Difference>,
) {
    // Lists equal item by item match by identity to equal objects, which `diff_maps` skips:
    // the usual answer of a property that holds, without building either side's map.
    if expected == observed {
        return;
    }
    let (e, o) = (
        by_identity(expected, &identity, &keep),
        by_identity(observed, &identity, &keep),
    );
    diff_maps(
        kind,
        &e,
        &o,
        |v: &T| serde_json::to_value(v).unwrap_or(Value::Null),
        out,
    );
}

/// Objects already in their published JSON form (e.g. read back from a cluster), matched by
/// identity (the map key) and compared field by field like [`diff`].
pub fn diff_objects(
    kind: ObjectKind,
    expected: &BTreeMap<String, Value>,
    observed: &BTreeMap<String, Value>,
) -> Vec<Difference> {
    fn by_ref(m: &BTreeMap<String, Value>) -> BTreeMap<String, &Value> {
        m.iter().map(|(k, v)| (k.clone(), v)).collect()
    }
    let mut out = Vec::new();
    diff_maps(
        kind,
        &by_ref(expected),
        &by_ref(observed),
        |v: &Value| v.clone(),
        &mut out,
    );
    out
}

/// Two sides matched by identity: equal objects are skipped, the rest walked as JSON.
fn diff_maps<T: PartialEq + ?Sized>(
    kind: ObjectKind,
    e: &BTreeMap<String, &T>,
    o: &BTreeMap<String, &T>,
    json: impl Fn(&T) -> Value,
    out: &mut Vec<Difference>,
) {
    let names: BTreeSet<&String> = e.keys().chain(o.keys()).collect();
    for name in names {
        let mut push = |field: String, x: Option<&Value>, y: Option<&Value>| {
            let (expected, observed) = render_pair(x, y);
            out.push(Difference {
                kind,
                name: name.clone(),
                field,
                expected,
                observed,
            })
        };
        match (e.get(name), o.get(name)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) => {
                let at = Path::root(kind);
                diff_values(&at, &json(x), &json(y), &mut push)
            }
            (x, y) => push(
                String::new(),
                x.map(|v| json(v)).as_ref(),
                y.map(|v| json(v)).as_ref(),
            ),
        }
    }
}

/// A compact fixed-width table of differences for reports (values cut at 60 characters).
pub fn render_table(differences: &[Difference]) -> String {
    if differences.is_empty() {
        return "no differences\n".to_string();
    }
    let rows: Vec<[String; 5]> = differences
        .iter()
        .map(|d| {
            [
                d.kind.to_string(),
                d.name.clone(),
                if d.field.is_empty() {
                    "(object)".into()
                } else {
                    d.field.clone()
                },
                shorten(d.expected.as_deref().unwrap_or("<absent>"), MAX_CELL),
                shorten(d.observed.as_deref().unwrap_or("<absent>"), MAX_CELL),
            ]
        })
        .collect();
    let header = ["KIND", "NAME", "FIELD", "EXPECTED", "OBSERVED"].map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

const MAX_CELL: usize = 60;
/// Values in a one-line difference are cut at this many characters.
const MAX_MESSAGE: usize = 120;

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

/// The kept items by identity; a repeated identity gets a `#n` suffix.
fn by_identity<'a, T>(
    items: &'a [T],
    identity: &impl Fn(&T) -> String,
    keep: &impl Fn(&T) -> bool,
) -> BTreeMap<String, &'a T> {
    let mut by = BTreeMap::new();
    for item in items.iter().filter(|i| keep(i)) {
        let name = identity(item);
        let mut key = name.clone();
        let mut n = 1;
        while by.contains_key(&key) {
            n += 1;
            key = format!("{name}#{n}");
        }
        by.insert(key, item);
    }
    by
}

/// Compact JSON of a value; a bare string is shown without quotes.
pub fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Both sides of a difference rendered; when they would read the same (a string `"72"`
/// against a number `72` in a field compared as JSON), strings keep their quotes so the
/// report shows what differs.
fn render_pair(x: Option<&Value>, y: Option<&Value>) -> (Option<String>, Option<String>) {
    let (a, b) = (x.map(render), y.map(render));
    if a.is_some() && a == b {
        return (x.map(Value::to_string), y.map(Value::to_string));
    }
    (a, b)
}

/// Receives one difference: path, expected side, observed side.
type Push<'a> = dyn FnMut(String, Option<&Value>, Option<&Value>) + 'a;

/// Where the walk is: the displayed path (members by identity or index) and the schema path
/// (every member as `[]`) that [`value_class`] reads, for one kind of object.
struct Path {
    kind: ObjectKind,
    shown: String,
    schema: String,
}

impl Path {
    fn root(kind: ObjectKind) -> Path {
        Path {
            kind,
            shown: String::new(),
            schema: String::new(),
        }
    }

    fn key(&self, key: &str) -> Path {
        Path {
            kind: self.kind,
            shown: join_key(&self.shown, key),
            schema: if self.schema.is_empty() {
                key.to_string()
            } else {
                format!("{}.{key}", self.schema)
            },
        }
    }

    fn member(&self, shown: String) -> Path {
        Path {
            kind: self.kind,
            shown: format!("{}[{shown}]", self.shown),
            schema: format!("{}[]", self.schema),
        }
    }
}

/// Walks two values in step; leaves that differ (or subtrees present on one side only) are
/// reported at their path.
fn diff_values(path: &Path, e: &Value, o: &Value, push: &mut Push<'_>) {
    match (e, o) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let p = path.key(k);
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff_values(&p, x, y, push),
                    (x, y) => push(p.shown, x, y),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => match (identities(a), identities(b)) {
            (Some((key, ia)), Some((other, ib))) if key == other => {
                let ids: BTreeSet<&String> = ia.keys().chain(ib.keys()).collect();
                for id in ids {
                    let p = path.member(format!("{key}={id}"));
                    match (ia.get(id), ib.get(id)) {
                        (Some(x), Some(y)) => diff_values(&p, x, y, push),
                        (x, y) => push(p.shown, x.copied(), y.copied()),
                    }
                }
                // Same members in another order is a difference too (order is published).
                let order_a: Vec<&String> = member_order(a, key);
                let order_b: Vec<&String> = member_order(b, key);
                if ia.len() == ib.len() && ia.keys().eq(ib.keys()) && order_a != order_b {
                    push(format!("{}[order]", path.shown), Some(e), Some(o));
                }
            }
            _ => {
                for i in 0..a.len().max(b.len()) {
                    let p = path.member(i.to_string());
                    match (a.get(i), b.get(i)) {
                        (Some(x), Some(y)) => diff_values(&p, x, y, push),
                        (x, y) => push(p.shown, x, y),
                    }
                }
            }
        },
        _ if e == o => {}
        _ if same_value(value_class(path.kind, &path.schema), e, o) => {}
        _ => push(path.shown.clone(), Some(e), Some(o)),
    }
}

/// How a leaf field is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueClass {
    /// A `resource.Quantity`, or an int-or-string holding one: by value.
    Quantity,
    /// Anything else: by its JSON value (a string is never equal to a number).
    Json,
}

/// The views of an InstanceType's status, each `{onceMaxRequest, remaining, capacity}`
/// int-or-string quantities (shared/crds/worker.gpustack.ai_instancetypes.yaml).
const INSTANCE_TYPE_VIEWS: [&str; 5] = [
    "accelerator",
    "acceleratorShared",
    "acceleratorSliced",
    "acceleratorPartitioned",
    "cpu",
];
const VIEW_FIELDS: [&str; 3] = ["onceMaxRequest", "remaining", "capacity"];

/// The quantity fields of a ClusterQueue (shared/crds/kueue.x-k8s.io_clusterqueues.yaml):
/// each flavor's resource quotas, and the usage rows of its status.
const CLUSTER_QUEUE_QUANTITIES: [&str; 7] = [
    "spec.resourceGroups[].flavors[].resources[].nominalQuota",
    "spec.resourceGroups[].flavors[].resources[].borrowingLimit",
    "spec.resourceGroups[].flavors[].resources[].lendingLimit",
    "status.flavorsReservation[].resources[].total",
    "status.flavorsReservation[].resources[].borrowed",
    "status.flavorsUsage[].resources[].total",
    "status.flavorsUsage[].resources[].borrowed",
];

/// Which fields of a published object are quantities, by schema path (members as `[]`). Node
/// labels, annotations, ResourceFlavor and LocalQueue fields are strings and stay strings.
pub fn value_class(kind: ObjectKind, schema_path: &str) -> ValueClass {
    let quantity = match kind {
        ObjectKind::ClusterQueue => CLUSTER_QUEUE_QUANTITIES.contains(&schema_path),
        ObjectKind::InstanceType => schema_path
            .strip_prefix("status.")
            .and_then(|rest| rest.split_once('.'))
            .is_some_and(|(view, field)| {
                INSTANCE_TYPE_VIEWS.contains(&view) && VIEW_FIELDS.contains(&field)
            }),
        _ => false,
    };
    if quantity {
        ValueClass::Quantity
    } else {
        ValueClass::Json
    }
}

/// Whether two leaves of `class` are the same value: quantities when both parse and are
/// equal (`resource.Quantity.Cmp`, model::credits), whether written as a string or a number.
pub fn same_value(class: ValueClass, e: &Value, o: &Value) -> bool {
    match class {
        ValueClass::Json => e == o,
        ValueClass::Quantity => match (quantity_of(e), quantity_of(o)) {
            (Some(a), Some(b)) => a.micro() == b.micro(),
            _ => e == o,
        },
    }
}

/// A leaf as a quantity: a string in the quantity grammar, or a JSON number.
fn quantity_of(v: &Value) -> Option<model::credits::Quantity> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    model::credits::parse_quantity(&text).ok()
}

/// Keys that identify array members, tried in order.
const IDENTITY_KEYS: [&str; 2] = ["name", "flavor"];

/// If every member is an object with a distinct string under one identity key, that key
/// and the members by identity.
fn identities(items: &[Value]) -> Option<(&'static str, BTreeMap<String, &Value>)> {
    if items.is_empty() {
        return None;
    }
    IDENTITY_KEYS.into_iter().find_map(|key| {
        let mut by = BTreeMap::new();
        for item in items {
            let id = item.get(key)?.as_str()?.to_string();
            if by.insert(id, item).is_some() {
                return None;
            }
        }
        Some((key, by))
    })
}

fn member_order<'a>(items: &'a [Value], key: &str) -> Vec<&'a String> {
    items
        .iter()
        .filter_map(|i| match i.get(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        })
        .collect()
}

/// `a.b` for identifier-like keys, `a["k.with/dots"]` otherwise.
fn join_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{key:?}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::examples;

    #[test]
    fn a_derivation_equals_itself() {
        let d = model::derive::derive(&examples::walkthrough());
        assert!(diff(&d, &d).is_empty());
    }

    #[test]
    fn a_changed_view_is_reported_at_its_path() {
        let d = model::derive::derive(&examples::walkthrough());
        let mut o = d.clone();
        o.instance_types[0].status.views.exclusive.remaining += 1;
        let name = o.instance_types[0].name.clone();
        let got = diff(&d, &o);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, ObjectKind::InstanceType);
        assert_eq!(got[0].name, name);
        assert_eq!(got[0].field, "status.views.exclusive.remaining");
        assert_ne!(got[0].expected, got[0].observed);
    }

    #[test]
    fn missing_and_extra_objects_have_one_side_absent() {
        let d = model::derive::derive(&examples::walkthrough());
        let mut o = d.clone();
        let gone = o.local_queues.remove(0);
        let mut extra = o.resource_flavors[0].clone();
        extra.name = "gpustack--extra".into();
        o.resource_flavors.push(extra);
        let got = diff(&d, &o);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().any(|x| x.kind == ObjectKind::ResourceFlavor
            && x.name == "gpustack--extra"
            && x.expected.is_none()
            && x.observed.is_some()));
        assert!(got.iter().any(|x| x.kind == ObjectKind::LocalQueue
            && x.name == format!("{}/{}", gone.namespace, gone.name)
            && x.observed.is_none()));
    }

    #[test]
    fn top_level_order_is_not_a_difference_but_nested_order_is() {
        let d = model::derive::derive(&examples::walkthrough());
        let mut o = d.clone();
        o.local_queues.reverse();
        o.instance_types.reverse();
        assert!(diff(&d, &o).is_empty());
        let q = o
            .cluster_queues
            .iter_mut()
            .find(|q| {
                q.resource_groups
                    .first()
                    .is_some_and(|g| g.flavors.len() > 1)
            })
            .expect("the T4 queue has two flavors");
        q.resource_groups[0].flavors.reverse();
        let got = diff(&d, &o);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].field.ends_with("flavors[order]"), "{got:?}");
    }

    #[test]
    fn label_keys_with_dots_are_quoted_in_paths() {
        let d = model::derive::derive(&examples::walkthrough());
        let mut o = d.clone();
        o.nodes[0]
            .labels
            .insert("kubernetes.io/os".into(), "windows".into());
        let got = diff(&d, &o);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, ObjectKind::NodeLabels);
        assert_eq!(got[0].field, "labels[\"kubernetes.io/os\"]");
        assert_eq!(got[0].observed.as_deref(), Some("windows"));
    }

    #[test]
    fn a_differing_or_missing_rdma_label_is_reported_at_its_path() {
        use model::devices::{Interface, Link, LinkState};
        let mut c = examples::walkthrough();
        let node = c.nodes.iter_mut().find(|n| n.devices.is_some()).unwrap();
        node.network.interfaces.push(Interface {
            name: "ens1f0".into(),
            numa_affinity: "1".into(),
            rdma: true,
            rdma_device: "mlx5_0".into(),
            link: Some(Link {
                state: LinkState::Ok,
                reason: String::new(),
            }),
            ..Interface::default()
        });
        let name = node.name.clone();
        let d = model::derive::derive(&c);
        let at = d.nodes.iter().position(|n| n.name == name).unwrap();
        assert_eq!(
            d.nodes[at]
                .labels
                .get(model::rdma::RDMA_NUMA)
                .map(model::labels::Text::as_str),
            Some("1")
        );
        // an observer that published another NUMA set and dropped the capable gate
        let mut o = d.clone();
        o.nodes[at]
            .labels
            .insert(model::rdma::RDMA_NUMA.into(), "0_1".into());
        o.nodes[at].labels.remove(model::rdma::RDMA_CAPABLE);
        let mut got = diff(&d, &o);
        got.sort_by(|a, b| a.field.cmp(&b.field));
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got
            .iter()
            .all(|x| x.kind == ObjectKind::NodeLabels && x.name == name));
        assert_eq!(got[0].field, "labels[\"feature.gpustack.ai/rdma.capable\"]");
        assert_eq!(got[0].observed, None);
        assert_eq!(got[1].field, "labels[\"feature.gpustack.ai/rdma.numa\"]");
        assert_eq!(got[1].observed.as_deref(), Some("0_1"));
    }

    #[test]
    fn a_topology_level_difference_names_its_kubernetes_field_path() {
        let d = model::derive::derive(&examples::walkthrough());
        assert_eq!(d.topologies.len(), 1);
        let mut o = d.clone();
        o.topologies[0].levels[0] = "topology.kubernetes.io/zone".into();
        let got = diff(&d, &o);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, ObjectKind::Topology);
        assert_eq!(got[0].name, d.topologies[0].name);
        assert_eq!(got[0].field, "spec.levels[0].nodeLabel");
        assert_eq!(got[0].expected.as_deref(), Some("kubernetes.io/hostname"));
        assert_eq!(
            got[0].observed.as_deref(),
            Some("topology.kubernetes.io/zone")
        );
        // a missing Topology is one difference with the observed side absent
        o.topologies.clear();
        let got = diff(&d, &o);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].field.is_empty() && got[0].observed.is_none());
    }

    #[test]
    fn restriction_keeps_only_the_named_pools() {
        let d = model::derive::derive(&examples::walkthrough());
        let mut o = d.clone();
        for it in &mut o.instance_types {
            it.status.views.exclusive.capacity += 1;
        }
        let a10g = "gpustack--nvidia-a10g-linux-amd64".to_string();
        let got = diff_restricted(&d, &o, &BTreeSet::from([a10g.clone()]));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].name, a10g);
        assert_eq!(diff(&d, &o).len(), 3);
    }

    fn published(name: &str, o: Value) -> BTreeMap<String, Value> {
        BTreeMap::from([(name.to_string(), o)])
    }

    fn queue_with_quota(quota: Value) -> Value {
        serde_json::json!({"spec": {"resourceGroups": [{"flavors": [{"name": "f",
            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": quota}]}]}]}})
    }

    #[test]
    fn quantities_compare_by_value_however_they_are_spelled() {
        let q = |v: &str| Value::String(v.into());
        for (a, b) in [
            (q("6400k"), q("6400000")),
            (q("1Gi"), q("1073741824")),
            (q("500m"), q("0.5")),
            (q("1e3"), q("1000")),
            (q("72"), serde_json::json!(72)),
            (q("6400k"), serde_json::json!(6400000)),
            (serde_json::json!(0.5), q("500m")),
        ] {
            assert!(same_value(ValueClass::Quantity, &a, &b), "{a} = {b}");
            let kind = ObjectKind::ClusterQueue;
            let got = diff_objects(
                kind,
                &published("q", queue_with_quota(a.clone())),
                &published("q", queue_with_quota(b.clone())),
            );
            assert_eq!(got, [], "{a} vs {b}");
        }
        for (a, b) in [
            (q("6400k"), q("6401k")),
            (q("1Gi"), q("1G")),
            (q("72"), q("72m")),
        ] {
            assert!(!same_value(ValueClass::Quantity, &a, &b), "{a} != {b}");
        }
        // not a quantity on one side: compared as JSON
        assert!(!same_value(ValueClass::Quantity, &q("lots"), &q("72")));
        assert!(same_value(ValueClass::Quantity, &q("lots"), &q("lots")));
    }

    #[test]
    fn a_real_quantity_difference_names_the_field_and_both_values() {
        let kind = ObjectKind::ClusterQueue;
        let got = diff_objects(
            kind,
            &published("q", queue_with_quota(serde_json::json!("6400k"))),
            &published("q", queue_with_quota(serde_json::json!("6401k"))),
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            got[0].field,
            "spec.resourceGroups[0].flavors[name=f].resources[name=nvidia.com/gpu].nominalQuota"
        );
        assert_eq!(got[0].expected.as_deref(), Some("6400k"));
        assert_eq!(got[0].observed.as_deref(), Some("6401k"));
    }

    #[test]
    fn instance_type_views_are_quantities_and_labels_stay_strings() {
        let kind = ObjectKind::InstanceType;
        let it = |v: Value, label: Value| {
            serde_json::json!({"labels": {"n": label}, "status": {"cpu": {"capacity": v},
                "detail": {"memory": "72"}}})
        };
        let same = diff_objects(
            kind,
            &published("t", it(serde_json::json!("72"), serde_json::json!("72"))),
            &published("t", it(serde_json::json!(72), serde_json::json!("72"))),
        );
        assert_eq!(same, []);
        let label = diff_objects(
            kind,
            &published("t", it(serde_json::json!("72"), serde_json::json!("72"))),
            &published("t", it(serde_json::json!("72"), serde_json::json!(72))),
        );
        assert_eq!(label.len(), 1, "{label:?}");
        assert_eq!(label[0].field, "labels.n");
        // the string keeps its quotes so the two sides do not read alike
        assert_eq!(label[0].expected.as_deref(), Some("\"72\""));
        assert_eq!(label[0].observed.as_deref(), Some("72"));
        assert_eq!(value_class(kind, "status.detail.memory"), ValueClass::Json);
        assert_eq!(
            value_class(kind, "status.acceleratorPartitioned.onceMaxRequest"),
            ValueClass::Quantity
        );
        assert_eq!(
            value_class(ObjectKind::NodeLabels, "labels.cpu"),
            ValueClass::Json
        );
    }

    #[test]
    fn the_table_has_a_header_and_one_row_per_difference() {
        let rows = vec![Difference {
            kind: ObjectKind::ClusterQueue,
            name: "q".into(),
            field: "cohort".into(),
            expected: Some(String::new()),
            observed: Some("gpustack".into()),
        }];
        let t = render_table(&rows);
        assert_eq!(t.lines().count(), 2, "{t}");
        assert!(t.starts_with("KIND"), "{t}");
        assert!(t.contains("gpustack"), "{t}");
        assert_eq!(render_table(&[]), "no differences\n");
    }
}
