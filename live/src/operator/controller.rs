//! The reference operator as a controller process against any API server (`verify operator
//! --context C`, issue M12): the twin's reconcile ([`reconcile_with`]) run on a mirror of what
//! kube-rs watches deliver, its writes replayed on the server.
//!
//! Watches say when to pass; each pass lists every kind afresh and copies the objects verbatim
//! into a fresh twin [`Store`] (uids, creation
//! times, managedFields, finalizers kept: [`Store::restore`]), with the server's own CRD schemas
//! as its validators, so defaults are the server's and a no-op stays a no-op. The reconcile
//! writes into the mirror; its journal ([`Writes`]) is replayed in order with the same verbs:
//! creates and updates under the operator's field manager, each update and status update with
//! the resourceVersion the server last gave, deletes preconditioned on the uid, and the Node
//! labels as server-side applies by their own managers (`gpustack-worker`, and `nfd-master`
//! when the process also plays NFD's master). A conflict means the mirror was stale: the pass
//! stops and the next one starts from the watches again, as a controller requeues.
//!
//! With [`QuotaBy::Kueue`] (a real Kueue runs beside it) gates 1–2 are Kueue's: only Workloads
//! it reserved quota for are judged, on the flavors it assigned.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    Preconditions,
};
use kube::runtime::{watcher, WatchStreamExt};
use model::cluster::Settings;
use model::derive::{Derived, Deriver};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::operator::admission::joint_check_object;
use crate::operator::{
    reconcile_with, NodeApply, OperatorError, QuotaBy, Writes, OPERATOR_FIELD_MANAGER,
};
use crate::server::store::{wall_clock, Store, StoreConfig};
use crate::server::structural;
use crate::wire::kinds::{self, Kind};
use crate::wire::read::{meta_text, name_of};

/// How the controller process runs.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// The operator's settings (with `settings.mutant`, a mutated rule).
    pub settings: Settings,
    /// Who decides gates 1–2: a real Kueue beside it, or the model (a server without Kueue).
    pub quota_by: QuotaBy,
    /// Also play NFD's master (apply NodeFeature labels onto Nodes): a cluster without NFD.
    pub nfd_master: bool,
    /// How long a pass waits after the first event it sees, so a burst is taken at once.
    pub debounce: Duration,
    /// A pass runs at least this often, even without events.
    pub resync: Duration,
    /// Advertise each node's cards as `credits.gpustack.ai/<manufacturer>` in its
    /// `status.allocatable` ([`credits_capacity`]): Kueue 0.17's TAS counts a reservation in
    /// the quota resources its transformations produce, which no device plugin advertises.
    pub credits_capacity: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            settings: Settings::default(),
            quota_by: QuotaBy::Kueue,
            nfd_master: true,
            debounce: Duration::from_millis(50),
            resync: Duration::from_secs(1),
            credits_capacity: false,
        }
    }
}

/// Why the controller could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("discovery of {api_version} failed: {source}")]
    Discovery {
        api_version: String,
        source: kube::Error,
    },
    #[error(
        "the server serves none of the operator's kinds {missing:?}: install the chain's CRDs"
    )]
    NotServed { missing: Vec<String> },
    #[error("reading the CRD {name}: {source}")]
    Crd { name: String, source: kube::Error },
    #[error("writing {what}: {source}")]
    Write { what: String, source: kube::Error },
}

/// What one pass did, for the process's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// `verb Kind [namespace/]name` per write the server took.
    pub written: Vec<String>,
    /// Why the pass stopped early: a conflict or a missing object (the mirror was stale), or
    /// a reconcile error (bad input the operator refuses).
    pub stopped: Option<String>,
}

/// The kind as kube-rs addresses it dynamically.
fn api_resource(kind: &Kind) -> ApiResource {
    ApiResource {
        group: kind.group.to_string(),
        version: kind.version.to_string(),
        api_version: kind.api_version(),
        kind: kind.kind.to_string(),
        plural: kind.plural.to_string(),
    }
}

fn api(client: &kube::Client, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
    let ar = api_resource(kind);
    match namespace.filter(|_| kind.namespaced) {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// The operator's kinds the server serves (discovery), and the names of those it does not.
pub async fn served_kinds(
    client: &kube::Client,
) -> Result<(Vec<Kind>, Vec<String>), ControllerError> {
    let mut served = Vec::new();
    let mut missing = Vec::new();
    for kind in kinds::ALL {
        let listed = if kind.group.is_empty() {
            client.list_core_api_resources(kind.version).await
        } else {
            client.list_api_group_resources(&kind.api_version()).await
        };
        match listed {
            Ok(l) if l.resources.iter().any(|r| r.name == kind.plural) => served.push(kind),
            Ok(_) | Err(kube::Error::Api(_)) => missing.push(kind.qualified_resource()),
            Err(source) => {
                return Err(ControllerError::Discovery {
                    api_version: kind.api_version(),
                    source,
                })
            }
        }
    }
    if served.is_empty() {
        return Err(ControllerError::NotServed { missing });
    }
    Ok((served, missing))
}

/// The server's own schema of each custom kind served (`openAPIV3Schema` of the version the
/// twin speaks), so the mirror validates and defaults exactly as the server does.
async fn server_schemas(
    client: &kube::Client,
    kinds: &[Kind],
) -> Result<Vec<(Kind, Value)>, ControllerError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut out = Vec::new();
    for kind in kinds.iter().filter(|k| k.is_custom()) {
        let name = format!("{}.{}", kind.plural, kind.group);
        // a server that serves the kind but lists no CRD object for it (the embedded twin)
        // validates on its own; the mirror then takes what it lists as it is
        let crd = match crds.get_opt(&name).await {
            Ok(Some(crd)) => crd,
            Ok(None) | Err(kube::Error::Api(_)) => continue,
            Err(source) => return Err(ControllerError::Crd { name, source }),
        };
        let value = serde_json::to_value(&crd).unwrap_or(Value::Null);
        if let Some(schema) = structural::crd_schema(&value, Some(kind.version)) {
            out.push((*kind, schema.clone()));
        }
    }
    Ok(out)
}

/// Starts one watch per kind; every event (or watch error, retried with backoff) wakes
/// `notify`. The watches only say when to pass: a pass lists afresh ([`snapshot`]), so it
/// never works on a cache that has not caught up with a write (its own included).
fn watch_all(client: &kube::Client, kinds: &[Kind], notify: &Arc<Notify>) {
    for kind in kinds {
        let ar = api_resource(kind);
        let stream = watcher(
            Api::<DynamicObject>::all_with(client.clone(), &ar),
            watcher::Config::default(),
        )
        .default_backoff();
        let notify = Arc::clone(notify);
        tokio::spawn(async move {
            futures::pin_mut!(stream);
            while stream.next().await.is_some() {
                notify.notify_one();
            }
        });
    }
}

/// Every object of `kinds` as the server lists it now (a quorum read each), type meta filled in.
async fn snapshot(
    client: &kube::Client,
    kinds: &[Kind],
) -> Result<Vec<(Kind, Vec<Value>)>, kube::Error> {
    // every kind at once: a pass starts on a whole picture sooner, which is what the live
    // tier's quiet windows wait for (each list is its own consistent read either way)
    let lists = kinds
        .iter()
        .map(|kind| async move { api(client, kind, None).list(&ListParams::default()).await });
    let listed = futures::future::try_join_all(lists).await?;
    let mut out = Vec::new();
    for (kind, listed) in kinds.iter().zip(listed) {
        let items = listed
            .items
            .iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .map(|mut o| {
                o["apiVersion"] = json!(kind.api_version());
                o["kind"] = json!(kind.kind);
                o
            })
            .collect();
        out.push((*kind, items));
    }
    Ok(out)
}

/// `(kind, namespace, name)`: where an object lives.
type Place = (&'static str, String, String);

fn place(kind: &Kind, o: &Value) -> Place {
    (kind.kind, meta_text(o, "namespace"), name_of(o))
}

/// Every watched object's place and resourceVersion: a pass is needed when it moved.
fn fingerprint(snapshot: &[(Kind, Vec<Value>)]) -> Vec<(Place, String)> {
    let mut out: Vec<(Place, String)> = snapshot
        .iter()
        .flat_map(|(k, items)| {
            items
                .iter()
                .map(|o| (place(k, o), meta_text(o, "resourceVersion")))
        })
        .collect();
    out.sort();
    out
}

/// A mirror's uids, told apart from the server's at a glance.
fn mirror_uid(n: u64) -> String {
    format!("mirror-{n}")
}

/// A fresh store holding `snapshot` verbatim (Namespaces first), validating with `schemas`.
fn mirror(snapshot: &[(Kind, Vec<Value>)], schemas: &[(Kind, Value)]) -> Store {
    let mut store = Store::new(StoreConfig {
        clock: wall_clock(),
        uid: Box::new(mirror_uid),
        ..StoreConfig::default()
    });
    for (kind, schema) in schemas {
        store.set_validator(kind, structural::validator(schema.clone()));
    }
    let namespaces_first = snapshot
        .iter()
        .filter(|(k, _)| *k == kinds::NAMESPACE)
        .chain(snapshot.iter().filter(|(k, _)| *k != kinds::NAMESPACE));
    for (kind, items) in namespaces_first {
        for o in items {
            // an object the mirror cannot hold is one the reconcile cannot read either; it
            // is left out as a server would not have listed it
            let _ = store.restore(kind, o.clone());
        }
    }
    store
}

/// What the server last said of each object the pass touches: its uid and resourceVersion,
/// and the server's uid for each object the mirror created (owner references name them).
#[derive(Default)]
struct Known {
    versions: HashMap<Place, (String, String)>,
    uids: HashMap<String, String>,
}

impl Known {
    fn of(snapshot: &[(Kind, Vec<Value>)]) -> Known {
        let versions = snapshot
            .iter()
            .flat_map(|(k, items)| {
                items.iter().map(|o| {
                    let meta = (meta_text(o, "uid"), meta_text(o, "resourceVersion"));
                    (place(k, o), meta)
                })
            })
            .collect();
        Known {
            versions,
            uids: HashMap::new(),
        }
    }

    fn version_of(&self, at: &Place) -> Option<String> {
        self.versions.get(at).map(|(_, rv)| rv.clone())
    }

    /// Takes in what the server answered a write; returns the object's resourceVersion now.
    fn learn(
        &mut self,
        kind: &Kind,
        mirror_uid: Option<String>,
        answer: &DynamicObject,
    ) -> Option<String> {
        let o = serde_json::to_value(answer).unwrap_or(Value::Null);
        let (uid, rv) = (meta_text(&o, "uid"), meta_text(&o, "resourceVersion"));
        if let Some(m) = mirror_uid {
            self.uids.insert(m, uid.clone());
        }
        self.versions.insert(place(kind, &o), (uid, rv.clone()));
        Some(rv)
    }
}

/// The mirror's object as a body for the server: the server's own bookkeeping dropped
/// (uid, creation time, generation, managedFields, resourceVersion: set by the caller), and
/// owner references naming the server's uids.
fn body(mut o: Value, known: &Known) -> Value {
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            meta.remove(k);
        }
        if let Some(refs) = meta
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            for r in refs {
                let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
                if let Some(real) = known.uids.get(uid) {
                    r["uid"] = json!(real);
                }
            }
        }
    }
    o
}

/// A write the server refused because the mirror was stale (409, 404, 410): the pass ends.
fn stale(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if [404, 409, 410].contains(&s.code))
}

/// The final state in the mirror of every object the journal names (absent: deleted), taken
/// before any request so the mirror is not held across them.
fn final_states(mirror: &Store, writes: &Writes) -> HashMap<Place, Value> {
    let mut out = HashMap::new();
    for (_, kind_name, key) in &writes.done {
        let Some(kind) = kinds::ALL.iter().find(|k| k.kind == *kind_name) else {
            continue;
        };
        let (ns, name) = split_key(kind, key);
        if let Ok(o) = mirror.get(kind, ns.as_deref(), &name) {
            out.insert((kind.kind, ns.unwrap_or_default(), name), o);
        }
    }
    out
}

/// `namespace/name` or `name`, as the journal writes a key.
fn split_key(kind: &Kind, key: &str) -> (Option<String>, String) {
    match key.split_once('/') {
        Some((ns, name)) if kind.namespaced => (Some(ns.to_string()), name.to_string()),
        _ => (None, key.to_string()),
    }
}

/// Replays `writes` onto the server in order, each object as the mirror left it (`finals`);
/// stops at the first write the server refuses as stale.
async fn replay(
    client: &kube::Client,
    finals: &HashMap<Place, Value>,
    writes: &Writes,
    known: &mut Known,
    nfd_master: bool,
) -> Result<Pass, ControllerError> {
    let mut pass = Pass::default();
    let mut applies = writes.applies.iter();
    let mut done: HashSet<(&str, &str, &str)> = HashSet::new();
    for (verb, kind_name, key) in &writes.done {
        let Some(kind) = kinds::ALL.iter().find(|k| k.kind == *kind_name) else {
            continue;
        };
        let (ns, name) = split_key(kind, key);
        if *verb == "apply" {
            let Some(apply) = applies.next() else {
                continue;
            };
            if apply.manager == crate::operator::NFD_FIELD_MANAGER && !nfd_master {
                continue;
            }
            let before = known.version_of(&(kind.kind, String::new(), key.clone()));
            match apply_node(client, apply).await {
                Ok(answer) => {
                    // a no-op apply leaves the resourceVersion: nothing was written
                    if known.learn(kind, None, &answer) != before {
                        pass.written
                            .push(format!("apply Node {key} ({})", apply.manager));
                    }
                }
                Err(e) if stale(&e) => return Ok(stopped(pass, verb, kind, key, &e)),
                Err(source) => return Err(write_failed(verb, kind, key, source)),
            }
            continue;
        }
        // the journal's later write of the same object sends the same final state
        if !done.insert((verb, kind_name, key)) {
            continue;
        }
        let at = (kind.kind, ns.clone().unwrap_or_default(), name.clone());
        let current = finals.get(&at).cloned();
        let outcome = match (*verb, current) {
            ("create", Some(o)) => {
                let mirror_uid = Some(meta_text(&o, "uid"));
                let sent: DynamicObject = match serde_json::from_value(body(o, known)) {
                    Ok(d) => d,
                    Err(_) => continue,
                };
                let pp = PostParams {
                    field_manager: Some(OPERATOR_FIELD_MANAGER.into()),
                    ..PostParams::default()
                };
                api(client, kind, ns.as_deref())
                    .create(&pp, &sent)
                    .await
                    .map(|answer| known.learn(kind, mirror_uid, &answer).is_some())
            }
            ("update" | "update status", Some(o)) => {
                let Some((_, rv)) = known.versions.get(&at).cloned() else {
                    continue;
                };
                let mut sent = body(o, known);
                sent["metadata"]["resourceVersion"] = json!(rv);
                let pp = PostParams {
                    field_manager: Some(OPERATOR_FIELD_MANAGER.into()),
                    ..PostParams::default()
                };
                let api = api(client, kind, ns.as_deref());
                let answer = if *verb == "update" {
                    match serde_json::from_value::<DynamicObject>(sent) {
                        Ok(d) => api.replace(&name, &pp, &d).await,
                        Err(_) => continue,
                    }
                } else {
                    let bytes = serde_json::to_vec(&sent).unwrap_or_default();
                    api.replace_status(&name, &pp, bytes).await
                };
                // a no-op update leaves the resourceVersion: nothing was written
                answer.map(|a| known.learn(kind, None, &a) != Some(rv))
            }
            ("delete", _) => {
                let uid = known.versions.get(&at).map(|(uid, _)| uid.clone());
                let dp = DeleteParams {
                    preconditions: uid.map(|uid| Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                api(client, kind, ns.as_deref())
                    .delete(&name, &dp)
                    .await
                    .map(|_| true)
            }
            _ => continue,
        };
        match outcome {
            Ok(true) => pass.written.push(format!("{verb} {} {key}", kind.kind)),
            Ok(false) => {}
            Err(e) if stale(&e) => return Ok(stopped(pass, verb, kind, key, &e)),
            Err(source) => return Err(write_failed(verb, kind, key, source)),
        }
    }
    Ok(pass)
}

fn stopped(mut pass: Pass, verb: &str, kind: &Kind, key: &str, e: &kube::Error) -> Pass {
    pass.stopped = Some(format!(
        "{verb} {} {key}: {e} (the mirror was stale)",
        kind.kind
    ));
    pass
}

fn write_failed(verb: &str, kind: &Kind, key: &str, source: kube::Error) -> ControllerError {
    ControllerError::Write {
        what: format!("{verb} {} {key}", kind.kind),
        source,
    }
}

/// A Node's labels applied server-side by the apply's own manager (forced: they are its).
async fn apply_node(
    client: &kube::Client,
    apply: &NodeApply,
) -> Result<DynamicObject, kube::Error> {
    let pp = PatchParams::apply(apply.manager).force();
    api(client, &kinds::NODE, None)
        .patch(&apply.node, &pp, &Patch::Apply(&apply.config))
        .await
}

/// The joint AdmissionCheck, created if absent and marked Active if it is not: the
/// operator's joint controller keeps it (research/corrections.md 9), and Kueue leaves a
/// ClusterQueue that references a missing or inactive check inactive. True when it wrote.
async fn ensure_joint_check(client: &kube::Client) -> Result<bool, ControllerError> {
    let checks = api(client, &kinds::ADMISSION_CHECK, None);
    let name = model::labels::JOINT_CHECK;
    let failed = |source| ControllerError::Write {
        what: format!("AdmissionCheck {name}"),
        source,
    };
    let object = joint_check_object(true);
    let found = checks.get_opt(name).await.map_err(failed)?;
    let active = found.as_ref().is_some_and(|o| {
        let o = serde_json::to_value(o).unwrap_or(Value::Null);
        o.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Active" && c["status"] == "True")
    });
    if active {
        return Ok(false);
    }
    if found.is_none() {
        let sent: DynamicObject = serde_json::from_value(object.clone())
            .map_err(|e| failed(kube::Error::SerdeError(e)))?;
        let pp = PostParams {
            field_manager: Some(OPERATOR_FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        checks.create(&pp, &sent).await.map_err(failed)?;
    }
    // a merge patch of the status: Kueue may have touched the object meanwhile
    let status = Patch::Merge(json!({"status": object["status"]}));
    let pp = PatchParams {
        field_manager: Some(OPERATOR_FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    checks
        .patch_status(name, &pp, &status)
        .await
        .map_err(failed)?;
    Ok(true)
}

/// One pass: mirror, reconcile, replay. `previous` is the last derivation and `deriver` the
/// incremental one holding its steps (both kept across passes, as the twin's operator keeps
/// them).
async fn pass(
    client: &kube::Client,
    config: &ControllerConfig,
    snapshot: &[(Kind, Vec<Value>)],
    schemas: &[(Kind, Value)],
    (previous, deriver): (&mut Option<Derived>, &Deriver),
) -> Result<Pass, ControllerError> {
    let (writes, finals, cluster) = {
        let mut store = mirror(snapshot, schemas);
        // what the pass read, for the credits stand-in (before the reconcile writes)
        let cluster = config
            .credits_capacity
            .then(|| crate::operator::read_cluster(&store, &config.settings).ok())
            .flatten();
        let reconciled = reconcile_with(
            &mut store,
            &config.settings,
            previous.as_ref(),
            config.quota_by,
            deriver,
        );
        let (derived, writes) = match reconciled {
            Ok(r) => r,
            Err(e) => return Ok(refused(e)),
        };
        *previous = Some(derived);
        let finals = final_states(&store, &writes);
        (writes, finals, cluster)
    };
    let mut known = Known::of(snapshot);
    let mut done = replay(client, &finals, &writes, &mut known, config.nfd_master).await?;
    if let Some(cluster) = cluster.filter(|_| done.stopped.is_none()) {
        done.written
            .extend(credits_capacity(client, snapshot, &cluster).await?);
    }
    Ok(done)
}

/// Kueue 0.17 (0.17.0 and 0.17.1, the operator's go.mod pin) books a TAS reservation in the
/// Workload's quota resources (`ComputeTASNetUsage` reads `podSetAssignments[].resourceUsage`,
/// i.e. after the transformations) and checks it against the node's allocatable
/// (`TASFlavorSnapshot.Fits`): a Workload whose credits no node advertises is never admitted
/// ("Workload no longer fits after processing another workload"). Placement itself reads the
/// Pod's own requests. Standing in for a device plugin, each Node with Devices gets
/// `credits.gpustack.ai/<manufacturer>` = its cards of that manufacturer × D (the pool's
/// quota per card, chain.md §10.2) merged into `status.allocatable`. Returns the Nodes patched.
async fn credits_capacity(
    client: &kube::Client,
    snapshot: &[(Kind, Vec<Value>)],
    cluster: &model::cluster::Cluster,
) -> Result<Vec<String>, ControllerError> {
    let nodes = snapshot
        .iter()
        .filter(|(k, _)| *k == kinds::NODE)
        .flat_map(|(_, items)| items);
    let mut patched = Vec::new();
    for node in cluster.nodes.iter().filter(|n| n.devices.is_some()) {
        let mut wanted = serde_json::Map::new();
        for g in node.devices.iter().flat_map(|d| &d.groups) {
            let key = model::resources::credits_resource_name(&g.manufacturer);
            let cards = i64::try_from(g.cards.len()).unwrap_or(i64::MAX);
            let sum = wanted
                .get(&key)
                .and_then(Value::as_str)
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0)
                .saturating_add(cards.saturating_mul(model::units::CREDITS_PER_CARD));
            wanted.insert(key, json!(sum.to_string()));
        }
        let listed = nodes.clone().find(|o| name_of(o) == node.name);
        let has = |k: &String, v: &Value| {
            listed.and_then(|o| o.pointer("/status/allocatable")?.get(k)) == Some(v)
        };
        if wanted.iter().all(|(k, v)| has(k, v)) {
            continue;
        }
        let patch = Patch::Merge(json!({"status": {"allocatable": wanted}}));
        let pp = PatchParams {
            field_manager: Some("verify-credits-capacity".into()),
            ..PatchParams::default()
        };
        match api(client, &kinds::NODE, None)
            .patch_status(&node.name, &pp, &patch)
            .await
        {
            Ok(_) => patched.push(format!(
                "patch status Node {} (credits capacity)",
                node.name
            )),
            Err(e) if stale(&e) => {}
            Err(source) => {
                return Err(write_failed(
                    "patch status",
                    &kinds::NODE,
                    &node.name,
                    source,
                ))
            }
        }
    }
    Ok(patched)
}

fn refused(e: OperatorError) -> Pass {
    Pass {
        written: Vec::new(),
        stopped: Some(format!("reconcile: {e}")),
    }
}

/// Runs the reference operator against `client` until `stop` resolves: watches every
/// operator kind the server serves, and passes after each burst of events (at least every
/// `config.resync`). `log` gets one line per write and per early stop; a pass is repeated
/// after a stale write, and skipped while nothing moved since a pass that wrote nothing.
pub async fn run(
    client: kube::Client,
    config: ControllerConfig,
    stop: impl Future<Output = ()>,
    log: impl Fn(&str),
) -> Result<(), ControllerError> {
    let (kinds, missing) = served_kinds(&client).await?;
    for m in &missing {
        log(&format!("not served, not watched: {m}"));
    }
    let schemas = server_schemas(&client, &kinds).await?;
    if ensure_joint_check(&client).await? {
        log(&format!(
            "made AdmissionCheck {} Active",
            model::labels::JOINT_CHECK
        ));
    }
    let notify = Arc::new(Notify::new());
    watch_all(&client, &kinds, &notify);
    log(&format!("watching {} kinds; reconciling", kinds.len()));
    tokio::pin!(stop);
    let mut previous = None;
    let deriver = Deriver::incremental();
    let mut settled: Option<Vec<(Place, String)>> = None;
    loop {
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = notify.notified() => tokio::time::sleep(config.debounce).await,
            _ = tokio::time::sleep(config.resync) => {}
        }
        let now = match snapshot(&client, &kinds).await {
            Ok(now) => now,
            Err(e) => {
                log(&format!("listing: {e}"));
                continue;
            }
        };
        let print = fingerprint(&now);
        if settled.as_ref() == Some(&print) {
            continue;
        }
        let done = pass(&client, &config, &now, &schemas, (&mut previous, &deriver)).await;
        let done = match done {
            Ok(p) => p,
            Err(e) => {
                // a write the server refused for another reason: said, and tried again
                log(&format!("{e}"));
                settled = None;
                continue;
            }
        };
        for line in &done.written {
            log(line);
        }
        if let Some(why) = &done.stopped {
            log(why);
        }
        // settled: nothing to write (a refused input waits for a change too)
        let refused = done
            .stopped
            .as_deref()
            .is_some_and(|s| s.starts_with("reconcile:"));
        settled = (done.written.is_empty() && (done.stopped.is_none() || refused)).then_some(print);
    }
}

/// Resolves on the first Ctrl-C (SIGINT): how `verify operator` is stopped.
pub async fn interrupted() {
    if tokio::signal::ctrl_c().await.is_err() {
        // no signal handling here: never stop by signal
        std::future::pending::<()>().await;
    }
}
