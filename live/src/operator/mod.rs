//! The twin's reference operator: reads the cluster from the store ([`read_cluster`]), derives
//! every object with the model (`model::derive::Deriver`, incrementally in a running
//! operator), renders them ([`render`]) and applies the difference to the store. It
//! re-implements no rule of the chain; what it decides is only *how* to write: create what is
//! missing, update what changed (status through `/status`), delete the operator's objects the
//! derivation dropped, and apply the Worker's Node labels with its own field manager.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use model::cluster::Settings;
use model::derive::{Derived, Deriver};
use model::labels::{
    Labels, QUEUE_ANNOTATION, RESOURCE_TYPE, RESOURCE_TYPE_INSTANCETYPES, RESOURCE_TYPE_NODES,
    RESOURCE_TYPE_TOPOLOGY,
};
use serde_json::{json, Map, Value};

pub mod admission;
pub mod controller;
pub mod input;

pub use crate::wire::read::{mock_objects, ReadError, FIELD_MANAGER};
pub use crate::wire::render::render;
pub use input::{read_cluster, write_mock};

use crate::server::http::{spawn_configured, ServeConfig, SharedStore, TwinHandle};
use crate::server::selector::Selector;
use crate::server::store::{ApplyRequest, DeleteOptions, Status, Store, Subresource};
use crate::wire::kinds::{self, Kind};
pub use admission::QuotaBy;

/// Why a reconcile stopped: the input could not be read, or the store refused a write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperatorError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{verb} {kind} {name}: {status}")]
    Write {
        verb: &'static str,
        kind: &'static str,
        name: String,
        status: Status,
    },
}

/// What one reconcile wrote (empty when the store already matched the derivation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// `(verb, kind, namespace/name)` per write, in order.
    pub done: Vec<(&'static str, &'static str, String)>,
    /// Each server-side apply that changed a Node, with what was applied: what a mirror
    /// replays on the server it mirrors (`crate::operator::controller`).
    pub applies: Vec<NodeApply>,
}

/// One server-side apply onto a Node: its field manager and the applied configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeApply {
    pub manager: &'static str,
    pub node: String,
    pub config: Value,
}

/// Reads, derives after `previous`, renders and applies (chain.md §17; the caller keeps the
/// returned derivation as the next `previous`).
pub fn reconcile(
    store: &mut Store,
    settings: &Settings,
    previous: Option<&Derived>,
) -> Result<Derived, OperatorError> {
    reconcile_logged(store, settings, previous).map(|(d, _)| d)
}

/// [`reconcile`], also returning the writes it made.
pub fn reconcile_logged(
    store: &mut Store,
    settings: &Settings,
    previous: Option<&Derived>,
) -> Result<(Derived, Writes), OperatorError> {
    reconcile_with(store, settings, previous, QuotaBy::Model, &Deriver::plain())
}

/// [`reconcile_logged`] with gates 1–2 decided by `quota_by` (the model's, or a real Kueue's
/// reservations read off the Workloads), deriving through `deriver`: an operator that keeps
/// running holds one `Deriver::incremental()` for all its reconciles, so each re-derives only
/// what changed since the last.
pub fn reconcile_with(
    store: &mut Store,
    settings: &Settings,
    previous: Option<&Derived>,
    quota_by: QuotaBy,
    deriver: &Deriver,
) -> Result<(Derived, Writes), OperatorError> {
    let mut writes = Writes::default();
    merge_node_features(store, &mut writes)?;
    let cluster = read_cluster(store, settings)?;
    let derived = deriver.derive_after(&cluster, previous);
    let input_labels = |name: &str| {
        cluster
            .nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.labels.clone())
            .unwrap_or_default()
    };
    // the node-devices check and the Workloads' verdicts (gates 1–5 by the model); views
    // follow the cards admitted Workloads hold, as `model::events::World::observe`
    admission::ensure_admission_check(store, settings, &mut writes)?;
    let published =
        admission::judge_workloads(store, &cluster, &derived, quota_by, deriver, &mut writes)?
            .map(|state| state.observe());
    let rendered = render(published.as_ref().unwrap_or(&derived));
    for (kind, namespace, object) in &rendered {
        let ns = namespace.as_deref();
        if *kind == kinds::NODE {
            let name = crate::wire::read::name_of(object);
            apply_node_labels(
                store,
                &name,
                &worker_labels(object, &input_labels(&name)),
                &mut writes,
            )?;
        } else {
            ensure(store, kind, ns, object, &mut writes)?;
        }
    }
    prune(store, &rendered, &mut writes)?;
    delete_orphan_devices(store, &cluster, &mut writes)?;
    Ok((derived, writes))
}

/// The labels the Worker/DM add on top of the node's own: derived labels the input lacks or
/// has with another value.
fn worker_labels(object: &Value, input: &Labels) -> Labels {
    model::labels::of(
        object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
            .filter(|(k, v)| input.get(k).is_none_or(|have| have != v)),
    )
}

pub(crate) fn write_err(
    verb: &'static str,
    kind: &Kind,
    name: &str,
) -> impl FnOnce(Status) -> OperatorError {
    let kind = kind.kind;
    let name = name.to_string();
    move |status| OperatorError::Write {
        verb,
        kind,
        name,
        status,
    }
}

/// The field manager of the operator's creates and updates: it names none, so the apiserver
/// records the prefix of its User-Agent, which controller-runtime derives from the binary's
/// name (`rest.DefaultKubernetesUserAgent`; the binary is `cmd/gpustack-operator`).
pub const OPERATOR_FIELD_MANAGER: &str = "gpustack-operator";

/// Server-side apply of the Worker's labels on one Node (force: the Worker owns them). A
/// no-op apply writes nothing; labels it no longer applies are removed by the apply itself.
/// The field manager NFD's master applies NodeFeature labels with.
pub const NFD_FIELD_MANAGER: &str = "nfd-master";

/// The label namespace NFD always lets a NodeFeature write onto its Node (other namespaces
/// need nfd-master's `extraLabelNs`, which the twin does not configure).
const NFD_LABEL_PREFIX: &str = "feature.node.kubernetes.io/";

/// Plays NFD's master: each NodeFeature tied to a Node by `nfd.node.kubernetes.io/node-name`
/// has its `spec.labels` in NFD's own namespace applied onto that Node (field manager
/// `nfd-master`; a label the NodeFeature stops carrying is removed by the apply). A
/// NodeFeature whose Node does not exist waits for it.
fn merge_node_features(store: &mut Store, writes: &mut Writes) -> Result<(), OperatorError> {
    let features = store
        .list(&kinds::NODE_FEATURE, None, &Selector::everything())
        .map(|l| l.items)
        .unwrap_or_default();
    let mut by_node: std::collections::BTreeMap<String, Map<String, Value>> = Default::default();
    for f in &features {
        let Some(node) = f
            .pointer("/metadata/labels")
            .and_then(|l| l.get(crate::crd::nfd::NODE_NAME_LABEL))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let labels = by_node.entry(node.to_string()).or_default();
        for (k, v) in string_map(f, "/spec/labels") {
            if k.starts_with(NFD_LABEL_PREFIX) {
                labels.insert(k, v);
            }
        }
    }
    for (node, labels) in by_node {
        if store.get(&kinds::NODE, None, &node).is_err() {
            continue;
        }
        let before = store.resource_version();
        let config = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": labels}});
        store
            .apply(ApplyRequest {
                kind: &kinds::NODE,
                namespace: None,
                name: &node,
                subresource: Subresource::Main,
                config: config.clone(),
                field_manager: NFD_FIELD_MANAGER,
                force: true,
            })
            .map_err(write_err("apply", &kinds::NODE, &node))?;
        if store.resource_version() != before {
            writes.done.push(("apply", "Node", node.clone()));
            writes.applies.push(NodeApply {
                manager: NFD_FIELD_MANAGER,
                node,
                config,
            });
        }
    }
    Ok(())
}

fn apply_node_labels(
    store: &mut Store,
    name: &str,
    labels: &Labels,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let before = store.resource_version();
    let config =
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}});
    store
        .apply(ApplyRequest {
            kind: &kinds::NODE,
            namespace: None,
            name,
            subresource: Subresource::Main,
            config: config.clone(),
            field_manager: FIELD_MANAGER,
            force: true,
        })
        .map_err(write_err("apply", &kinds::NODE, name))?;
    if store.resource_version() != before {
        writes.done.push(("apply", "Node", name.to_string()));
        writes.applies.push(NodeApply {
            manager: FIELD_MANAGER,
            node: name.to_string(),
            config,
        });
    }
    Ok(())
}

fn string_map(o: &Value, pointer: &str) -> Map<String, Value> {
    o.pointer(pointer)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Creates `desired` if absent; otherwise updates what differs. InstanceTypes are create-only
/// in spec (chain.md §8.4: derived ones are never updated; admin ones are the admin's), so only
/// their labels (merged) and status are written. Status goes through `/status` for kinds with
/// a status subresource.
fn ensure(
    store: &mut Store,
    kind: &Kind,
    ns: Option<&str>,
    desired: &Value,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let name = crate::wire::read::name_of(desired);
    let key = match ns {
        Some(ns) => format!("{ns}/{name}"),
        None => name.clone(),
    };
    let resolved = with_owner_uids(store, desired)?;
    let desired = &resolved;
    let current = match store.get(kind, ns, &name) {
        Ok(c) => Some(c),
        Err(s) if s.code == 404 => None,
        Err(s) => return Err(write_err("get", kind, &name)(s)),
    };
    let mut current = match current {
        Some(c) => c,
        None => {
            let created = store
                .create_by(kind, ns, desired.clone(), OPERATOR_FIELD_MANAGER)
                .map_err(write_err("create", kind, &name))?;
            writes.done.push(("create", kind.kind, key.clone()));
            created
        }
    };
    // A Topology's levels are immutable: the operator never rewrites an existing one (a
    // drifted one is an error it reports, node_topology.go `ensureTopology`).
    if *kind == kinds::TOPOLOGY {
        return Ok(());
    }
    let create_only_spec = *kind == kinds::INSTANCE_TYPE;
    let mut next = current.clone();
    let mut labels = string_map(&current, "/metadata/labels");
    labels.extend(string_map(desired, "/metadata/labels"));
    if !create_only_spec {
        labels = string_map(desired, "/metadata/labels");
        next["metadata"]["annotations"] =
            Value::Object(string_map(desired, "/metadata/annotations"));
        next["spec"] = desired.get("spec").cloned().unwrap_or(Value::Null);
        match desired.pointer("/metadata/ownerReferences") {
            Some(refs) => next["metadata"]["ownerReferences"] = refs.clone(),
            None => {
                if let Some(m) = next["metadata"].as_object_mut() {
                    m.remove("ownerReferences");
                }
            }
        }
    }
    next["metadata"]["labels"] = Value::Object(labels);
    if !kind.has_status {
        if let Some(s) = desired.get("status") {
            next["status"] = s.clone();
        }
    }
    // compared as the server would store it: a CRD's defaults are not a change to make
    let next = store.as_stored(kind, &next);
    if differs(&current, &next) {
        current = store
            .update_by(kind, ns, next, OPERATOR_FIELD_MANAGER)
            .map_err(write_err("update", kind, &name))?;
        writes.done.push(("update", kind.kind, key.clone()));
    }
    if kind.has_status {
        if let Some(status) = desired.get("status") {
            let mut wanted = current.clone();
            wanted["status"] = status.clone();
            let status = store
                .as_stored(kind, &wanted)
                .get("status")
                .cloned()
                .unwrap_or_else(|| status.clone());
            let status = &status;
            if current.get("status") != Some(status) {
                let mut next = current;
                next["status"] = status.clone();
                store
                    .update_status_by(kind, ns, next, OPERATOR_FIELD_MANAGER)
                    .map_err(write_err("update status", kind, &name))?;
                writes.done.push(("update status", kind.kind, key));
            }
        }
    }
    Ok(())
}

/// Fills each `ownerReferences[].uid` of `desired` with its owner's, read from the store, as
/// the operator's `controllerutil`-style helpers copy it from the owner object they hold.
/// Owners are cluster-scoped here (a LocalQueue's ClusterQueue).
fn with_owner_uids(store: &Store, desired: &Value) -> Result<Value, OperatorError> {
    let mut out = desired.clone();
    let Some(refs) = out
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return Ok(out);
    };
    for r in refs.iter_mut() {
        let text = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (owner_kind, owner) = (text("kind"), text("name"));
        let Some(kind) = kinds::ALL.iter().find(|k| k.kind == owner_kind) else {
            continue;
        };
        let o = store
            .get(kind, None, &owner)
            .map_err(write_err("get", kind, &owner))?;
        r["uid"] = o.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
    }
    Ok(out)
}

/// Whether labels, annotations, owners, spec or status differ (an absent map equals an empty
/// one).
fn differs(current: &Value, next: &Value) -> bool {
    let maps = ["/metadata/labels", "/metadata/annotations"];
    let owners = |o: &Value| o.pointer("/metadata/ownerReferences").cloned();
    owners(current) != owners(next)
        || maps
            .iter()
            .any(|p| string_map(current, p) != string_map(next, p))
        || ["spec", "status"].iter().any(|k| {
            let a = current.get(*k).filter(|v| !v.is_null());
            let b = next.get(*k).filter(|v| !v.is_null());
            a != b
        })
}

/// Whether an object of `kind` is one the operator writes and so may delete: ResourceFlavors
/// labelled `resource.gpustack.ai/type=nodes`, Topologies `=topology` (retired when no node
/// and no flavor uses their profile, chain.md §6.4), ClusterQueues labelled `=instancetypes`,
/// LocalQueues annotated `schedule.gpustack.ai/queue` (chain.md §6.3, §10.1, §11). InstanceTypes
/// never: derived ones are create-only (§8.4) and the rest are the administrator's.
fn operator_owned(kind: &Kind, o: &Value) -> bool {
    let label = |k: &str| {
        o.pointer("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if *kind == kinds::RESOURCE_FLAVOR {
        label(RESOURCE_TYPE).as_deref() == Some(RESOURCE_TYPE_NODES)
    } else if *kind == kinds::TOPOLOGY {
        label(RESOURCE_TYPE).as_deref() == Some(RESOURCE_TYPE_TOPOLOGY)
    } else if *kind == kinds::CLUSTER_QUEUE {
        label(RESOURCE_TYPE).as_deref() == Some(RESOURCE_TYPE_INSTANCETYPES)
    } else if *kind == kinds::LOCAL_QUEUE {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(QUEUE_ANNOTATION))
            .is_some()
    } else {
        false
    }
}

/// Deletes the operator's objects the derivation no longer has, dependents first.
fn prune(
    store: &mut Store,
    rendered: &[crate::wire::render::Rendered],
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    for kind in [
        kinds::LOCAL_QUEUE,
        kinds::CLUSTER_QUEUE,
        kinds::RESOURCE_FLAVOR,
        kinds::TOPOLOGY,
    ] {
        let wanted: BTreeSet<(Option<String>, String)> = rendered
            .iter()
            .filter(|(k, _, _)| *k == kind)
            .map(|(_, ns, o)| (ns.clone(), crate::wire::read::name_of(o)))
            .collect();
        let existing = store
            .list(&kind, None, &Selector::everything())
            .map_err(write_err("list", &kind, ""))?
            .items;
        for o in existing.iter().filter(|o| operator_owned(&kind, o)) {
            let name = crate::wire::read::name_of(o);
            let ns = o
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            if wanted.contains(&(ns.clone(), name.clone()))
                || o.pointer("/metadata/deletionTimestamp").is_some()
            {
                continue;
            }
            store
                .delete(&kind, ns.as_deref(), &name, &DeleteOptions::default())
                .map_err(write_err("delete", &kind, &name))?;
            let key = ns.map_or(name.clone(), |ns| format!("{ns}/{name}"));
            writes.done.push(("delete", kind.kind, key));
        }
    }
    Ok(())
}

/// The Worker deletes a node's Devices once its Node is gone (NodeDevicesReconciler,
/// pkg/worker/controllers/worker/node_devices.go; research/devices.md §1.1).
fn delete_orphan_devices(
    store: &mut Store,
    cluster: &model::cluster::Cluster,
    writes: &mut Writes,
) -> Result<(), OperatorError> {
    let kind = kinds::DEVICES;
    let orphans: Vec<String> = store
        .list(&kind, None, &Selector::everything())
        .map_err(write_err("list", &kind, ""))?
        .items
        .iter()
        .map(crate::wire::read::name_of)
        .filter(|n| !cluster.nodes.iter().any(|node| &node.name == n))
        .collect();
    for name in orphans {
        store
            .delete(&kind, None, &name, &DeleteOptions::default())
            .map_err(write_err("delete", &kind, &name))?;
        writes.done.push(("delete", "Devices", name));
    }
    Ok(())
}

/// How the reference operator runs: the operator's settings (with `settings.mutant`, the
/// mutated rule of `model::mutants` it runs instead of the documented one) and how long it
/// waits after noticing a write before it reconciles (writes landing meanwhile are taken in
/// the same reconcile), so a client's quiescence detection meets a real delay.
#[derive(Debug, Clone, Default)]
pub struct OperatorConfig {
    pub settings: Settings,
    pub lag: Duration,
}

impl From<Settings> for OperatorConfig {
    fn from(settings: Settings) -> Self {
        OperatorConfig {
            settings,
            lag: Duration::ZERO,
        }
    }
}

/// The reference operator running beside a served twin: a background thread that reconciles
/// after every write it sees (the store's resourceVersion moved since its own last reconcile).
/// It polls every [`OPERATOR_POLL`] through [`SharedStore`]; stopping (or dropping) the handle
/// ends the thread.
pub struct OperatorHandle {
    stop: Arc<AtomicBool>,
    last: Arc<Mutex<Option<Result<Derived, OperatorError>>>>,
    reconciles: Arc<AtomicU64>,
    /// The store's resourceVersion the latest reconcile left (its own writes included).
    reconciled: Arc<AtomicU64>,
    thread: Option<thread::JoinHandle<()>>,
}

/// How often the operator thread looks for a write.
pub const OPERATOR_POLL: Duration = Duration::from_millis(20);

impl OperatorHandle {
    /// The outcome of the latest reconcile (`None` before the first).
    pub fn last(&self) -> Option<Result<Derived, OperatorError>> {
        self.last
            .lock()
            .map(|g| g.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// How many reconciles ran so far.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::SeqCst)
    }

    /// The store's resourceVersion after the latest reconcile: the operator has seen every
    /// write up to it. Shared, so a caller can wait on it without holding the handle.
    pub fn reconciled(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.reconciled)
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for OperatorHandle {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Sleeps `lag` in [`OPERATOR_POLL`] steps; false when asked to stop meanwhile.
fn wait_lag(lag: Duration, stop: &AtomicBool) -> bool {
    let mut left = lag;
    while !left.is_zero() {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let step = left.min(OPERATOR_POLL);
        thread::sleep(step);
        left -= step;
    }
    !stop.load(Ordering::SeqCst)
}

/// Runs [`reconcile`] on `shared` after every write (once `config.lag` has passed), until the
/// handle stops. A failed reconcile is kept in [`OperatorHandle::last`] and retried on the
/// next write. `config` may be plain [`Settings`] (no lag).
pub fn run_operator(
    shared: SharedStore,
    config: impl Into<OperatorConfig>,
) -> std::io::Result<OperatorHandle> {
    let OperatorConfig { settings, lag } = config.into();
    let stop = Arc::new(AtomicBool::new(false));
    let last = Arc::new(Mutex::new(None));
    let reconciles = Arc::new(AtomicU64::new(0));
    let reconciled = Arc::new(AtomicU64::new(0));
    let (stop_flag, last_out, count, done) = (
        Arc::clone(&stop),
        Arc::clone(&last),
        Arc::clone(&reconciles),
        Arc::clone(&reconciled),
    );
    let thread = thread::Builder::new()
        .name("verify-twin-operator".into())
        .spawn(move || {
            let mut previous: Option<Derived> = None;
            let deriver = Deriver::incremental();
            let mut seen: Option<u64> = None;
            while !stop_flag.load(Ordering::SeqCst) {
                let rv = shared.read(Store::resource_version);
                if seen != Some(rv) {
                    if !wait_lag(lag, &stop_flag) {
                        return;
                    }
                    // the outcome is published before the store's lock is released, so
                    // whoever sees the reconciled state also sees its outcome and count
                    seen = Some(shared.write(|s| {
                        let outcome = reconcile_with(
                            s,
                            &settings,
                            previous.as_ref(),
                            QuotaBy::Model,
                            &deriver,
                        )
                        .map(|(d, _)| d);
                        if let Ok(d) = &outcome {
                            previous = Some(d.clone());
                        }
                        if let Ok(mut slot) = last_out.lock() {
                            *slot = Some(outcome);
                        }
                        count.fetch_add(1, Ordering::SeqCst);
                        let rv = s.resource_version();
                        done.store(rv, Ordering::SeqCst);
                        rv
                    }));
                }
                thread::sleep(OPERATOR_POLL);
            }
        })?;
    Ok(OperatorHandle {
        stop,
        last,
        reconciles,
        reconciled,
        thread: Some(thread),
    })
}

/// A twin on loopback serving `store`, with the reference operator reconciling after every
/// write (see [`run_operator`]; `config` may be plain [`Settings`]).
pub fn spawn_twin_with_operator(
    port: Option<u16>,
    store: Store,
    config: impl Into<OperatorConfig>,
) -> std::io::Result<(TwinHandle, OperatorHandle)> {
    spawn_twin(port, store, ServeConfig::default(), config)
}

/// [`spawn_twin_with_operator`] with the server's faults from `serve`.
pub fn spawn_twin(
    port: Option<u16>,
    store: Store,
    serve: ServeConfig,
    config: impl Into<OperatorConfig>,
) -> std::io::Result<(TwinHandle, OperatorHandle)> {
    let twin = spawn_configured(port, store, serve)?;
    let operator = run_operator(twin.store(), config)?;
    Ok((twin, operator))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_labels_are_the_derived_ones_the_input_lacks() {
        let node = json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}});
        let input = model::labels::from_pairs(&[("a", "1"), ("b", "0")]);
        let got: Vec<model::labels::Text> = worker_labels(&node, &input)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(got, ["b", "c"]);
    }

    #[test]
    fn only_marked_queues_and_flavors_are_the_operators() {
        let rf = json!({"metadata": {"labels": {RESOURCE_TYPE: RESOURCE_TYPE_NODES}}});
        assert!(operator_owned(&kinds::RESOURCE_FLAVOR, &rf));
        assert!(!operator_owned(&kinds::CLUSTER_QUEUE, &rf));
        let cq = json!({"metadata": {"labels": {RESOURCE_TYPE: RESOURCE_TYPE_INSTANCETYPES}}});
        assert!(operator_owned(&kinds::CLUSTER_QUEUE, &cq));
        let lq = json!({"metadata": {"annotations": {QUEUE_ANNOTATION: "q"}}});
        assert!(operator_owned(&kinds::LOCAL_QUEUE, &lq));
        assert!(!operator_owned(
            &kinds::LOCAL_QUEUE,
            &json!({"metadata": {}})
        ));
        assert!(!operator_owned(&kinds::INSTANCE_TYPE, &cq));
    }

    #[test]
    fn an_absent_map_equals_an_empty_one() {
        let a = json!({"metadata": {"labels": {}}, "spec": {"x": 1}});
        let b = json!({"metadata": {}, "spec": {"x": 1}, "status": null});
        assert!(!differs(&a, &b));
        assert!(differs(&a, &json!({"metadata": {}, "spec": {"x": 2}})));
    }

    /// A TopologySource's profile reaches the Nodes and a `gpustack-<profile>` Topology is
    /// created; once the source is gone that Topology has no node and no flavor and is deleted,
    /// while the hostname-only one stays.
    #[test]
    fn topologies_follow_the_sources() {
        let zone = "topology.kubernetes.io/zone";
        let mut cluster = model::examples::walkthrough();
        for n in &mut cluster.nodes {
            n.labels.insert(zone.into(), "z1".into());
            n.labels.insert("pool".into(), "zoned".into());
        }
        cluster.nodes[0].labels.remove("pool");
        cluster.topology_sources = vec![model::cluster::TopologySource {
            name: "zones".into(),
            levels: vec![zone.into()],
            node_selector: model::labels::from_pairs(&[("pool", "zoned")]),
            ready: true,
        }];
        let mut store = Store::default();
        super::input::write_mock(&mut store, &cluster).expect("mock");
        let first = reconcile(&mut store, &cluster.settings, None).expect("reconcile");
        let names = |store: &Store| -> Vec<String> {
            store
                .list(&kinds::TOPOLOGY, None, &Selector::everything())
                .expect("list")
                .items
                .iter()
                .map(crate::wire::read::name_of)
                .collect()
        };
        let zoned = "gpustack-fnv64-f7b1861ac0399767";
        let plain = "gpustack-fnv64-87bf574bea2a4f23";
        assert_eq!(names(&store), [plain, zoned]);
        let t = store.get(&kinds::TOPOLOGY, None, zoned).expect("zoned");
        assert_eq!(t.pointer("/spec/levels/0/nodeLabel"), Some(&json!(zone)));
        assert_eq!(
            t.pointer("/metadata/labels/resource.gpustack.ai~1type"),
            Some(&json!("topology"))
        );
        let node = store.get(&kinds::NODE, None, "node-t4-a").expect("node");
        assert_eq!(
            node.pointer("/metadata/labels/topology.gpustack.ai~1profile"),
            Some(&json!("fnv64-f7b1861ac0399767"))
        );
        store
            .delete(
                &kinds::TOPOLOGY_SOURCE,
                None,
                "zones",
                &DeleteOptions::default(),
            )
            .expect("delete the source");
        reconcile(&mut store, &cluster.settings, Some(&first)).expect("reconcile");
        assert_eq!(names(&store), [plain]);
    }
}
