//! The twin's object store: the Kubernetes API semantics a real client relies on, in memory,
//! with no I/O (the HTTP server is layered on top). Semantics follow the apiserver's generic
//! registry (k8s.io/apiserver pkg/registry/generic/registry/store.go) and rest strategies.
//!
//! What the store manages in `metadata`: `uid` (injectable generator), `resourceVersion`
//! (one global counter, as a string), `creationTimestamp` (injectable clock), `generation`
//! (1 on create, +1 on every change outside `metadata`, and outside `status` for kinds with a
//! status subresource, and when deletion starts), `deletionTimestamp` and finalizers, and
//! `managedFields` for server-side apply.
//!
//! Field ownership follows the apiserver's field manager (see [`Store::apply`] and the
//! "field ownership" section): creates, updates and every patch type record an `Update`
//! entry for their manager (`*_by`; the plain methods write as [`NO_MANAGER`]) and take the
//! fields they change from every other manager; applies conflict with any other owner. It
//! is kept at the granularity of leaf paths, with every list atomic (the real server merges
//! associative lists item by item). Namespace deletion does not cascade and
//! `propagationPolicy` does not cascade.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use super::selector::Selector;
pub use super::status::{Cause, Status};
pub use crate::wire::kinds::{Kind, StatusOnCreate};

mod apply;
mod meta;
mod served;
mod time;

pub use apply::{
    manager_from_user_agent, manager_or_user_agent, ApplyRequest, NO_MANAGER, UNKNOWN_MANAGER,
};
pub use meta::{EventType, Gone, WatchEvent, NAMESPACE_NAME_LABEL};
pub use time::{rfc3339, sequential_uid, step_clock, unix_seconds_of, wall_clock, EPOCH_2025};
use {apply::*, meta::*, time::*};

/// Per-kind validation hook: returns the pruned object or the causes of rejection.
pub type Validator = Box<dyn Fn(&Value) -> Result<Value, Vec<Cause>> + Send + Sync>;
/// Produces the `uid` of the n-th created object (n starts at 1).
pub type UidSource = Box<dyn FnMut(u64) -> String + Send>;
/// Produces RFC 3339 timestamps for `creationTimestamp`, `deletionTimestamp` and managedFields.
pub type Clock = Box<dyn FnMut() -> String + Send>;

type Object = Map<String, Value>;

/// Store construction options.
pub struct StoreConfig {
    /// How many watch events are kept; a watch from before them is 410 Gone.
    pub history_limit: usize,
    /// The kinds served.
    pub kinds: Vec<Kind>,
    pub uid: UidSource,
    pub clock: Clock,
    /// Reject namespaced creates in a namespace with no Namespace object (NamespaceLifecycle).
    pub require_namespace: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_limit: 1000,
            kinds: crate::wire::kinds::served(),
            uid: Box::new(sequential_uid),
            clock: step_clock(EPOCH_2025, 1),
            require_namespace: true,
        }
    }
}

/// Which part of a resource a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// The main resource: `status` is ignored for kinds with a status subresource.
    Main,
    /// `/status`: only `status` changes.
    Status,
}

/// A patch body by content type.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// `application/merge-patch+json` (RFC 7386).
    Merge(Value),
    /// `application/json-patch+json` (RFC 6902).
    Json(Value),
    /// `application/strategic-merge-patch+json` (built-in kinds; see `strategic`).
    Strategic(Value),
}

/// Options of a delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `Orphan` keeps the dependents (their reference to the owner is removed); `Background`
    /// (the default) and `Foreground` delete the dependents left without an owner.
    pub propagation_policy: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted {
    /// The object is gone; this is its last state.
    Removed(Value),
    /// The object has finalizers: it is now marked deleting (`deletionTimestamp` set).
    Finalizing(Value),
}

impl Deleted {
    /// The object in the response body.
    pub fn object(&self) -> &Value {
        match self {
            Deleted::Removed(v) | Deleted::Finalizing(v) => v,
        }
    }
}

/// The answer to a list: the items and the store's resourceVersion at the time of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList {
    pub resource_version: u64,
    pub items: Vec<Value>,
}

impl ObjectList {
    /// The `<Kind>List` object a server returns.
    pub fn to_value(&self, kind: &Kind) -> Value {
        serde_json::json!({
            "apiVersion": kind.api_version(),
            "kind": format!("{}List", kind.kind),
            "metadata": {"resourceVersion": self.resource_version.to_string()},
            "items": self.items,
        })
    }
}

/// Where an object lives: kind, namespace ("" when cluster-scoped), name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    group: &'static str,
    kind: &'static str,
    namespace: String,
    name: String,
}

/// One recorded write.
#[derive(Debug, Clone)]
struct Recorded {
    resource_version: u64,
    group: &'static str,
    kind: &'static str,
    namespace: String,
    event_type: EventType,
    object: Value,
    previous: Option<Value>,
}

/// The in-memory object store.
pub struct Store {
    kinds: Vec<Kind>,
    objects: BTreeMap<Key, Object>,
    resource_version: u64,
    created: u64,
    history: VecDeque<Recorded>,
    history_limit: usize,
    /// The resourceVersion of the newest event dropped from the history (0: none dropped).
    evicted_through: u64,
    validators: HashMap<(&'static str, &'static str), Validator>,
    /// CRD `additionalPrinterColumns` per custom kind, for Table output.
    printer_columns: HashMap<(&'static str, &'static str), Vec<Value>>,
    uid: UidSource,
    clock: Clock,
    require_namespace: bool,
    /// The twin's virtual clock: seconds added to every stamp by [`Store::advance_clock`].
    advanced: u64,
    /// Every advance: (the stamp it was taken at, in Unix seconds, before the jump; seconds).
    advances: Vec<(u64, u64)>,
    /// Inside [`Store::dry_run`]: the apiserver's controllers (CRD establishing, the
    /// namespace's ServiceAccount) do not react to a write that is not persisted.
    dry: bool,
    /// The aggregator's autoregister controller runs ([`Store::install_api_services`]).
    api_services: bool,
    /// The discovery names (`spec.names`) of the kinds CRDs serve, by group and kind.
    crd_names: HashMap<(&'static str, &'static str), super::discovery::Names>,
}

impl Default for Store {
    fn default() -> Self {
        Store::new(StoreConfig::default())
    }
}

impl Store {
    /// An empty store.
    pub fn new(config: StoreConfig) -> Self {
        Store {
            kinds: config.kinds,
            objects: BTreeMap::new(),
            resource_version: 0,
            created: 0,
            history: VecDeque::new(),
            history_limit: config.history_limit.max(1),
            evicted_through: 0,
            validators: HashMap::new(),
            printer_columns: HashMap::new(),
            uid: config.uid,
            clock: config.clock,
            require_namespace: config.require_namespace,
            advanced: 0,
            advances: Vec::new(),
            dry: false,
            api_services: false,
            crd_names: HashMap::new(),
        }
    }

    /// Runs `write` as a dry run (`?dryRun=All`): validated, defaulted and admitted as a
    /// real write, its answer returned, and nothing persisted: the objects, the
    /// resourceVersion counter and the watch history are as before (registry/rest
    /// `dryRun`). The answer keeps the stored resourceVersion of the object it wrote (none
    /// for a create), as the apiserver's does.
    pub fn dry_run(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        name: Option<&str>,
        write: impl FnOnce(&mut Store) -> Result<Value, Status>,
    ) -> Result<Value, Status> {
        let before = name.and_then(|n| self.get(kind, namespace, n).ok());
        let saved = (
            self.objects.clone(),
            self.resource_version,
            self.created,
            self.history.clone(),
            self.evicted_through,
        );
        let was_dry = std::mem::replace(&mut self.dry, true);
        let answer = write(self);
        self.dry = was_dry;
        (
            self.objects,
            self.resource_version,
            self.created,
            self.history,
            self.evicted_through,
        ) = saved;
        let mut answer = answer?;
        if let Some(meta) = answer.get_mut("metadata").and_then(Value::as_object_mut) {
            match before
                .as_ref()
                .and_then(|b| b.pointer("/metadata/resourceVersion"))
            {
                Some(rv) => {
                    meta.insert("resourceVersion".into(), rv.clone());
                }
                None => {
                    meta.remove("resourceVersion");
                }
            }
        }
        Ok(answer)
    }

    /// The kinds served.
    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// `object` as a write would store it: pruned and defaulted by `kind`'s validator (itself
    /// when there is none or it does not validate: the write then reports why).
    pub fn as_stored(&self, kind: &Kind, object: &Value) -> Value {
        self.validators
            .get(&(kind.group, kind.kind))
            .and_then(|v| v(object).ok())
            .unwrap_or_else(|| object.clone())
    }

    /// An apply configuration must convert to the kind's typed object before anything else is
    /// judged (conflicts included): a wrongly typed field is a 500, as the apiserver answers
    /// when structured-merge-diff cannot build the typed patch. Missing required fields are
    /// no error here (a configuration is partial).
    fn check_typed_patch(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
        config: &Object,
    ) -> Result<(), Status> {
        let Some(validator) = self.validators.get(&(kind.group, kind.kind)) else {
            return Ok(());
        };
        let Err(causes) = validator(&Value::Object(config.clone())) else {
            return Ok(());
        };
        let Some(bad) = causes.iter().find(|c| c.reason == "FieldValueTypeInvalid") else {
            return Ok(());
        };
        let at = bad
            .field
            .split('.')
            .try_fold(&Value::Object(config.clone()), |v, part| {
                let (key, index) = match part.split_once('[') {
                    Some((k, i)) => (k, i.trim_end_matches(']').parse::<usize>().ok()),
                    None => (part, None),
                };
                let v = v.get(key)?;
                match index {
                    Some(i) => v.get(i),
                    None => Some(v),
                }
            })
            .cloned();
        let shown = match at {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let expected = bad
            .message
            .rsplit_once("must be of type ")
            .map(|(_, t)| t.split(':').next().unwrap_or(t).trim().to_string())
            .unwrap_or_default();
        Err(Status::failure(
            500,
            "",
            format!(
                "failed to create typed patch object ({}/{name}; {}, Kind={}): .{}: expected {expected}, got &{{{shown}}}",
                namespace.unwrap_or(""),
                kind.api_version(),
                kind.kind,
                bad.field
            ),
            None,
        ))
    }

    /// The fields of `object` its kind's schema would prune, as `fieldValidation=Strict`
    /// names them (`spec.dropped`, `spec.items[0].x`), sorted; none for a kind without a
    /// schema, or when the object does not validate at all (the write then says why).
    pub fn unknown_fields(&self, kind: &Kind, object: &Value) -> Vec<String> {
        let Some(validator) = self.validators.get(&(kind.group, kind.kind)) else {
            return Vec::new();
        };
        let Ok(kept) = validator(object) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        pruned_paths(object, &kept, "", &mut out);
        out.retain(|p| !matches!(p.as_str(), "apiVersion" | "kind" | "metadata"));
        out.sort();
        out
    }

    /// The printer columns of `kind`'s CRD (see `table::columns`).
    pub fn set_printer_columns(&mut self, kind: &Kind, columns: Vec<Value>) {
        self.printer_columns
            .insert((kind.group, kind.kind), columns);
    }

    /// The printer columns set for `kind`, if any.
    pub fn printer_columns(&self, kind: &Kind) -> Option<&[Value]> {
        self.printer_columns
            .get(&(kind.group, kind.kind))
            .map(Vec::as_slice)
    }

    /// Plugs a validator for `kind`, run on every write (see `structural::validator`).
    pub fn set_validator(&mut self, kind: &Kind, validator: Validator) {
        self.validators.insert((kind.group, kind.kind), validator);
    }

    /// Creates an object: 409 AlreadyExists, 422 Invalid when `metadata.name` is missing.
    /// The writer is [`NO_MANAGER`] (a client with no `fieldManager` and no User-Agent);
    /// [`Store::create_by`] names it.
    pub fn create(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        object: Value,
    ) -> Result<Value, Status> {
        self.create_by(kind, namespace, object, NO_MANAGER)
    }

    /// [`Store::create`] by `manager`, who becomes the `Update` owner of every field it set.
    pub fn create_by(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        object: Value,
        manager: &str,
    ) -> Result<Value, Status> {
        self.served(kind)?;
        let object = into_object(object)?;
        self.create_object(kind, namespace, object, Ownership::Update(manager))
    }

    /// Puts `object` in as another server listed it: its uid, creationTimestamp, generation,
    /// managedFields, finalizers and deletionTimestamp are kept, and nothing is validated,
    /// defaulted or admitted (that server did it). Only the resourceVersion becomes this
    /// store's. What a mirror of a real cluster is built from (`crate::operator::controller`).
    pub fn restore(&mut self, kind: &Kind, object: Value) -> Result<Value, Status> {
        self.served(kind)?;
        let object = into_object(object)?;
        let text = |k: &str| {
            object
                .get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (namespace, name) = (text("namespace"), text("name"));
        let key = self.key(kind, Some(&namespace), &name)?;
        let previous = self.objects.get(&key).cloned();
        Ok(self.commit(kind, &key, Some(object), previous))
    }

    /// Reads one object: 404 NotFound.
    pub fn get(&self, kind: &Kind, namespace: Option<&str>, name: &str) -> Result<Value, Status> {
        self.served(kind)?;
        let key = self.key(kind, namespace, name)?;
        self.objects
            .get(&key)
            .map(|o| Value::Object(o.clone()))
            .ok_or_else(|| Status::not_found(kind, name))
    }

    /// Lists the objects of `kind` (in `namespace`, or all) that `selector` selects,
    /// ordered by namespace then name, with the list's resourceVersion.
    pub fn list(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> Result<ObjectList, Status> {
        self.served(kind)?;
        let items = self
            .objects
            .iter()
            .filter(|(k, _)| k.group == kind.group && k.kind == kind.kind)
            .filter(|(k, _)| namespace.is_none_or(|ns| ns.is_empty() || k.namespace == ns))
            .map(|(_, o)| Value::Object(o.clone()))
            .filter(|o| selector.matches(o))
            .collect();
        Ok(ObjectList {
            resource_version: self.resource_version,
            items,
        })
    }

    /// Replaces the main resource: 409 Conflict on a stale `metadata.resourceVersion`
    /// (custom resources must carry one: 422 otherwise); `status` is ignored for kinds
    /// with a status subresource.
    /// The writer is [`NO_MANAGER`]; [`Store::update_by`] names it.
    pub fn update(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        object: Value,
    ) -> Result<Value, Status> {
        self.update_by(kind, namespace, object, NO_MANAGER)
    }

    /// [`Store::update`] by `manager`, who takes the ownership of every field it changed.
    pub fn update_by(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        object: Value,
        manager: &str,
    ) -> Result<Value, Status> {
        self.served(kind)?;
        let object = into_object(object)?;
        let key = self.key(kind, namespace, &name_of(&object))?;
        let ownership = Ownership::Update(manager);
        self.write(kind, &key, object, Subresource::Main, true, ownership)
    }

    /// Replaces `status` only (`/status`): spec and metadata changes are ignored. The writer
    /// is [`NO_MANAGER`]; [`Store::update_status_by`] names it.
    pub fn update_status(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        object: Value,
    ) -> Result<Value, Status> {
        self.update_status_by(kind, namespace, object, NO_MANAGER)
    }

    /// [`Store::update_status`] by `manager` (its entry names the `status` subresource).
    pub fn update_status_by(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        object: Value,
        manager: &str,
    ) -> Result<Value, Status> {
        self.status_served(kind)?;
        let object = into_object(object)?;
        let key = self.key(kind, namespace, &name_of(&object))?;
        let ownership = Ownership::Update(manager);
        self.write(kind, &key, object, Subresource::Status, true, ownership)
    }

    /// Patches the main resource or `/status` with a merge patch or a JSON patch. A
    /// `metadata.resourceVersion` left in the patched object acts as a precondition. The
    /// writer is [`NO_MANAGER`]; [`Store::patch_by`] names it.
    pub fn patch(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
        subresource: Subresource,
        patch: &Patch,
    ) -> Result<Value, Status> {
        self.patch_by(kind, namespace, name, subresource, patch, NO_MANAGER)
    }

    /// [`Store::patch`] by `manager`: every patch type is an `Update` of the fields it changed.
    pub fn patch_by(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
        subresource: Subresource,
        patch: &Patch,
        manager: &str,
    ) -> Result<Value, Status> {
        match subresource {
            Subresource::Main => self.served(kind)?,
            Subresource::Status => self.status_served(kind)?,
        }
        let key = self.key(kind, namespace, name)?;
        let current = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| Status::not_found(kind, name))?;
        let mut doc = Value::Object(current);
        match patch {
            Patch::Merge(body) => {
                if !body.is_object() {
                    return Err(Status::bad_request("a merge patch must be a JSON object"));
                }
                json_patch::merge(&mut doc, body);
            }
            Patch::Json(body) => {
                let ops: json_patch::Patch = serde_json::from_value(body.clone())
                    .map_err(|e| Status::bad_request(format!("invalid JSON patch: {e}")))?;
                json_patch::patch(&mut doc, &ops).map_err(|e| {
                    Status::failure(422, "Invalid", format!("the JSON patch failed: {e}"), None)
                })?;
            }
            Patch::Strategic(body) => {
                use super::strategic::StrategicError;
                super::strategic::apply(&mut doc, body).map_err(|e| match e {
                    StrategicError::MissingMergeKey(..) => {
                        Status::failure(500, "InternalError", e.to_string(), None)
                    }
                    _ => Status::bad_request(e.to_string()),
                })?;
            }
        }
        let patched = into_object(doc)?;
        if name_of(&patched) != name {
            return Err(Status::bad_request("a patch may not change metadata.name"));
        }
        let ownership = Ownership::Update(manager);
        self.write(kind, &key, patched, subresource, false, ownership)
    }

    /// Deletes an object. With finalizers it is only marked deleting (`deletionTimestamp`,
    /// generation + 1); it goes when its last finalizer is removed. Once it is gone its
    /// dependents are garbage-collected by `propagationPolicy` (`collect_dependents`).
    pub fn delete(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted, Status> {
        self.served(kind)?;
        if let Some(policy) = &options.propagation_policy {
            if !matches!(policy.as_str(), "Orphan" | "Background" | "Foreground") {
                return Err(Status::invalid(
                    kind,
                    name,
                    vec![Cause::new(
                        "propagationPolicy",
                        "FieldValueNotSupported",
                        format!(
                            "Unsupported value: \"{policy}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                        ),
                    )],
                ));
            }
        }
        let key = self.key(kind, namespace, name)?;
        let current = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| Status::not_found(kind, name))?;
        let meta = current.get("metadata").cloned().unwrap_or(Value::Null);
        if let Some(rv) = &options.resource_version {
            if meta.get("resourceVersion").and_then(Value::as_str) != Some(rv.as_str()) {
                return Err(Status::conflict(
                    kind,
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                ));
            }
        }
        if let Some(uid) = &options.uid {
            let actual = meta.get("uid").and_then(Value::as_str).unwrap_or("");
            if actual != uid {
                return Err(Status::conflict(
                    kind,
                    name,
                    &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"),
                ));
            }
        }
        if *kind == crate::wire::kinds::NAMESPACE && finalizers(&current).is_empty() {
            return Ok(self.terminate_namespace(&key, current));
        }
        if *kind == crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION
            && meta.get("deletionTimestamp").is_none()
        {
            return Ok(self.delete_crd(&key, current));
        }
        if finalizers(&current).is_empty() {
            let gone = self.commit(kind, &key, None, Some(current));
            let orphan = options.propagation_policy.as_deref() == Some("Orphan");
            self.collect_dependents(&gone, orphan);
            return Ok(Deleted::Removed(gone));
        }
        if meta.get("deletionTimestamp").is_some() {
            return Ok(Deleted::Finalizing(Value::Object(current)));
        }
        let mut marked = current.clone();
        let mut m = take_meta(&mut marked);
        m.insert("deletionTimestamp".into(), Value::String(self.stamp()));
        m.insert("deletionGracePeriodSeconds".into(), Value::from(0));
        if kind.tracks_generation() {
            let generation = m.get("generation").and_then(Value::as_i64).unwrap_or(0);
            m.insert("generation".into(), Value::from(generation + 1));
        }
        marked.insert("metadata".into(), Value::Object(m));
        if *kind == crate::wire::kinds::NAMESPACE {
            // held by a finalizer of its own: Terminating until it is removed (the twin's
            // namespace controller leaves its contents to the clients then)
            marked.insert("status".into(), serde_json::json!({"phase": "Terminating"}));
        }
        let stored = self.commit(kind, &key, Some(marked), Some(current));
        Ok(Deleted::Finalizing(stored))
    }

    /// What the apiserver's and kube-controller-manager's controllers do after a persisted
    /// write, at once (the twin has no time between the write and their reaction): a new
    /// Namespace gets its `default` ServiceAccount (the serviceaccount controller; kube-local
    /// runs no root-ca-cert-publisher, so there is no `kube-root-ca.crt` ConfigMap), a CRD
    /// is established or cleaned up ([`Store::reconcile_crd`]).
    fn after_write(&mut self, kind: &Kind, key: &Key) {
        if self.dry {
            return;
        }
        if *kind == crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION {
            self.reconcile_crd(&key.name);
        }
        if *kind == crate::wire::kinds::NAMESPACE {
            self.default_service_account(&key.name);
        }
    }

    /// 404 unless the store serves `kind`.
    fn served(&self, kind: &Kind) -> Result<(), Status> {
        if self.kinds.contains(kind) {
            Ok(())
        } else {
            Err(Status::no_such_resource(&kind.qualified_resource()))
        }
    }

    /// 404 unless the store serves `kind` with a status subresource.
    fn status_served(&self, kind: &Kind) -> Result<(), Status> {
        self.served(kind)?;
        if kind.has_status {
            Ok(())
        } else {
            Err(Status::no_such_resource(&format!(
                "{}/status",
                kind.qualified_resource()
            )))
        }
    }

    /// The key of a named object, resolving its scope.
    fn key(&self, kind: &Kind, namespace: Option<&str>, name: &str) -> Result<Key, Status> {
        let namespace = match (kind.namespaced, namespace.filter(|ns| !ns.is_empty())) {
            (false, _) => String::new(),
            (true, Some(ns)) => ns.to_string(),
            (true, None) => {
                return Err(Status::bad_request(format!(
                    "a namespace is required for the namespaced resource {}",
                    kind.qualified_resource()
                )))
            }
        };
        Ok(Key {
            group: kind.group,
            kind: kind.kind,
            namespace,
            name: name.to_string(),
        })
    }

    /// Create with server-managed metadata and the `managedFields` of `ownership`.
    fn create_object(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        mut object: Object,
        ownership: Ownership,
    ) -> Result<Value, Status> {
        check_type_meta(kind, &object)?;
        let mut meta = take_meta(&mut object);
        let body_ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_string);
        let namespace = match (namespace.filter(|ns| !ns.is_empty()), body_ns) {
            (Some(a), Some(b)) if kind.namespaced && a != b => {
                return Err(Status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ))
            }
            (Some(a), _) => Some(a.to_string()),
            (None, b) => b,
        };
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() && !generate.is_empty() {
            name = format!("{generate}{}", name_suffix(self.created + 1));
        }
        if name.is_empty() {
            return Err(Status::invalid(
                kind,
                "",
                vec![Cause::new(
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                )],
            ));
        }
        if let Some(cause) = invalid_name(kind, &name) {
            return Err(Status::invalid(kind, &name, vec![cause]));
        }
        let key = self.key(kind, namespace.as_deref(), &name)?;
        if kind.namespaced && self.require_namespace {
            let ns_key = Key {
                group: "",
                kind: "Namespace",
                namespace: String::new(),
                name: key.namespace.clone(),
            };
            if !self.objects.contains_key(&ns_key) {
                return Err(Status::not_found(
                    &crate::wire::kinds::NAMESPACE,
                    &key.namespace,
                ));
            }
        }
        if self.objects.contains_key(&key) {
            return Err(Status::already_exists(kind, &name));
        }
        for server_owned in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
        ] {
            meta.remove(server_owned);
        }
        meta.insert("name".into(), Value::String(name.clone()));
        if kind.namespaced {
            meta.insert("namespace".into(), Value::String(key.namespace.clone()));
        } else {
            meta.remove("namespace");
        }
        self.created += 1;
        let now = self.stamp();
        meta.insert("uid".into(), Value::String((self.uid)(self.created)));
        meta.insert("creationTimestamp".into(), Value::String(now.clone()));
        if kind.tracks_generation() {
            meta.insert("generation".into(), Value::from(1));
        }
        match kind.status_on_create() {
            StatusOnCreate::Keep => {}
            StatusOnCreate::Clear => {
                object.remove("status");
            }
            StatusOnCreate::Phase(phase) => {
                object.insert("status".into(), serde_json::json!({ "phase": phase }));
            }
            StatusOnCreate::Empty => {
                object.insert("status".into(), serde_json::json!({}));
            }
        }
        set_type_meta(kind, &mut object);
        object.insert("metadata".into(), Value::Object(meta));
        prepare_namespace(kind, &mut object);
        let mut object = self.validated(kind, &name, object)?;
        // what the creation set is owned as it was stored (after pruning)
        let managers = match ownership {
            Ownership::Applied(managers) => managers,
            Ownership::Update(manager) => {
                let mut managers = Vec::new();
                let view = managed_view(kind, Subresource::Main, &object);
                let changes = compare(kind, &Value::Object(Object::new()), &view);
                record_update(
                    &mut managers,
                    &changes,
                    &view,
                    manager,
                    Subresource::Main,
                    kind,
                    || now.clone(),
                );
                managers
            }
        };
        let entries = entries_of(managers, &now);
        if *kind == crate::wire::kinds::NAMESPACE {
            namespace_finalizer(&mut object);
        }
        let mut meta = take_meta(&mut object);
        if !entries.is_empty() {
            meta.insert("managedFields".into(), Value::Array(entries));
        }
        object.insert("metadata".into(), Value::Object(meta));
        let created = self.commit(kind, &key, Some(object), None);
        self.after_write(kind, &key);
        Ok(created)
    }

    /// Update of an existing object through `subresource`; `require_rv` enforces a
    /// resourceVersion for kinds that disallow unconditional updates; `ownership` says how
    /// `managedFields` follow (an update's manager takes what it changed; an apply's are
    /// computed by [`Store::apply`]).
    fn write(
        &mut self,
        kind: &Kind,
        key: &Key,
        mut incoming: Object,
        subresource: Subresource,
        require_rv: bool,
        ownership: Ownership,
    ) -> Result<Value, Status> {
        check_type_meta(kind, &incoming)?;
        let name = key.name.as_str();
        let old = self
            .objects
            .get(key)
            .cloned()
            .ok_or_else(|| Status::not_found(kind, name))?;
        let old_meta = old
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let new_meta = take_meta(&mut incoming);
        check_preconditions(kind, name, &old_meta, &new_meta, require_rv)?;
        let mut candidate = match subresource {
            Subresource::Main => {
                let mut c = incoming;
                if kind.has_status {
                    match old.get("status") {
                        Some(s) => c.insert("status".into(), s.clone()),
                        None => c.remove("status"),
                    };
                }
                c.insert(
                    "metadata".into(),
                    Value::Object(merged_meta(&old_meta, new_meta)),
                );
                c
            }
            Subresource::Status => {
                let mut c = old.clone();
                match incoming.remove("status") {
                    Some(s) => c.insert("status".into(), s),
                    None => c.remove("status"),
                };
                c
            }
        };
        set_type_meta(kind, &mut candidate);
        if subresource == Subresource::Main {
            prepare_namespace(kind, &mut candidate);
        }
        check_finalizers_while_deleting(kind, name, &old, &candidate)?;
        let mut candidate = self.validated(kind, name, candidate)?;
        let mut meta = take_meta(&mut candidate);
        if kind.tracks_generation() && spec_part(kind, &candidate) != spec_part(kind, &old) {
            let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
            meta.insert("generation".into(), Value::from(generation + 1));
        }
        candidate.insert("metadata".into(), Value::Object(meta));
        let managers = match ownership {
            Ownership::Applied(managers) => Some(managers),
            Ownership::Update(manager) => {
                let before = managed_view(kind, subresource, &old);
                let after = managed_view(kind, subresource, &candidate);
                let changes = compare(kind, &before, &after);
                // nothing changed: the entries stay exactly as stored
                (!changes.is_empty()).then(|| {
                    let mut managers = read_managed(&old);
                    let (clock, advanced) = (&mut self.clock, self.advanced);
                    record_update(
                        &mut managers,
                        &changes,
                        &Value::Object(candidate.clone()),
                        manager,
                        subresource,
                        kind,
                        move || offset_stamp(clock(), advanced),
                    );
                    managers
                })
            }
        };
        if let Some(managers) = managers {
            let mut meta = take_meta(&mut candidate);
            let entries = entries_of(managers, "");
            if entries.is_empty() {
                meta.remove("managedFields");
            } else {
                meta.insert("managedFields".into(), Value::Array(entries));
            }
            candidate.insert("metadata".into(), Value::Object(meta));
        }
        if candidate == old {
            return Ok(Value::Object(old));
        }
        let deleting = candidate
            .get("metadata")
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some();
        if deleting && finalizers(&candidate).is_empty() {
            let gone = self.commit(kind, key, None, Some(candidate));
            self.collect_dependents(&gone, false);
            self.after_write(kind, key);
            return Ok(gone);
        }
        let written = self.commit(kind, key, Some(candidate), Some(old));
        self.after_write(kind, key);
        Ok(written)
    }

    /// Runs the kind's validator (if any) and keeps server-owned metadata.
    fn validated(&self, kind: &Kind, name: &str, object: Object) -> Result<Object, Status> {
        // the built-in kinds' decoding, defaults and validation come first, as the
        // apiserver decodes and defaults before any admission or validation
        let object = super::builtin::prepare(kind, name, object)?;
        let Some(validator) = self.validators.get(&(kind.group, kind.kind)) else {
            return Ok(object);
        };
        let value = Value::Object(object);
        let pruned = validator(&value).map_err(|causes| Status::invalid(kind, name, causes))?;
        let mut pruned = into_object(pruned)?;
        if let Some(meta) = value.get("metadata") {
            pruned.insert("metadata".into(), meta.clone());
        }
        set_type_meta(kind, &mut pruned);
        Ok(pruned)
    }

    /// Stores `new` (or removes the object when `None`), bumps the resourceVersion and
    /// records the event. Returns the object as stored (or as last seen, for a delete).
    fn commit(
        &mut self,
        kind: &Kind,
        key: &Key,
        new: Option<Object>,
        previous: Option<Object>,
    ) -> Value {
        self.resource_version += 1;
        let rv = Value::String(self.resource_version.to_string());
        let (event_type, mut object) = match (new, &previous) {
            (Some(o), None) => (EventType::Added, o),
            (Some(o), Some(_)) => (EventType::Modified, o),
            (None, Some(p)) => (EventType::Deleted, p.clone()),
            (None, None) => (EventType::Deleted, Object::new()),
        };
        let mut meta = take_meta(&mut object);
        meta.insert("resourceVersion".into(), rv);
        object.insert("metadata".into(), Value::Object(meta));
        if event_type == EventType::Deleted {
            self.objects.remove(key);
        } else {
            self.objects.insert(key.clone(), object.clone());
        }
        let object = Value::Object(object);
        self.history.push_back(Recorded {
            resource_version: self.resource_version,
            group: kind.group,
            kind: kind.kind,
            namespace: key.namespace.clone(),
            event_type,
            object: object.clone(),
            previous: previous.map(Value::Object),
        });
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.evicted_through = dropped.resource_version;
            }
        }
        object
    }
}

/// The paths present in `given` and absent from `kept` (what pruning dropped).
fn pruned_paths(given: &Value, kept: &Value, at: &str, out: &mut Vec<String>) {
    match (given, kept) {
        (Value::Object(g), Value::Object(k)) => {
            for (key, value) in g {
                if at.is_empty() && key == "metadata" {
                    continue;
                }
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match k.get(key) {
                    Some(kept_value) => pruned_paths(value, kept_value, &path, out),
                    None => out.push(path),
                }
            }
        }
        (Value::Array(g), Value::Array(k)) => {
            for (i, (value, kept_value)) in g.iter().zip(k).enumerate() {
                pruned_paths(value, kept_value, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Why the apiserver refuses `name` for a new object of `kind`: a Namespace's must be a
/// lowercase RFC 1123 label, every other kind's a lowercase RFC 1123 subdomain
/// (apimachinery `ValidateObjectMeta` with the kind's name validation; messages as its).
fn invalid_name(kind: &Kind, name: &str) -> Option<Cause> {
    if *kind == crate::wire::kinds::API_SERVICE {
        // an APIService is named `<version>.<group>` (core: `v1.`), checked against its
        // spec by the aggregator's own validation, not as a subdomain
        return None;
    }
    let message = if *kind == crate::wire::kinds::NAMESPACE {
        if super::pods::is_dns_label(name) {
            return None;
        }
        format!("Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
    } else {
        if model::resources::is_dns1123_subdomain(name) {
            return None;
        }
        format!("Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    };
    Some(Cause::new("metadata.name", "FieldValueInvalid", message))
}

/// 400 unless the body is a JSON object.
fn into_object(value: Value) -> Result<Object, Status> {
    match value {
        Value::Object(o) => Ok(o),
        other => Err(Status::bad_request(format!(
            "the body must be a JSON object, not {}",
            match other {
                Value::Array(_) => "an array",
                Value::Null => "null",
                _ => "a scalar",
            }
        ))),
    }
}

/// 400 when the body's `apiVersion`/`kind` name another kind.
fn check_type_meta(kind: &Kind, object: &Object) -> Result<(), Status> {
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let k = object.get("kind").and_then(Value::as_str);
    if api_version.is_some_and(|a| a != kind.api_version()) || k.is_some_and(|k| k != kind.kind) {
        return Err(Status::bad_request(format!(
            "the body is a {}/{}, not a {}/{}",
            api_version.unwrap_or(""),
            k.unwrap_or(""),
            kind.api_version(),
            kind.kind
        )));
    }
    Ok(())
}

fn set_type_meta(kind: &Kind, object: &mut Object) {
    object.insert("apiVersion".into(), Value::String(kind.api_version()));
    object.insert("kind".into(), Value::String(kind.kind.to_string()));
}

/// Removes and returns `metadata` (an empty map if absent or not an object).
fn take_meta(object: &mut Object) -> Object {
    match object.remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Object::new(),
    }
}

fn name_of(object: &Object) -> String {
    object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A 5-character generateName suffix derived from the creation serial.
fn name_suffix(serial: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = serial.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..5)
        .map(|_| {
            let i = (n % ALPHABET.len() as u64) as usize;
            n /= ALPHABET.len() as u64;
            ALPHABET.get(i).map(|&b| b as char).unwrap_or('x')
        })
        .collect()
}

/// Stale resourceVersion → 409; missing one where required → 422; uid mismatch → 409.
fn check_preconditions(
    kind: &Kind,
    name: &str,
    old: &Object,
    new: &Object,
    require_rv: bool,
) -> Result<(), Status> {
    match new.get("resourceVersion") {
        Some(rv) if rv.as_str() != old.get("resourceVersion").and_then(Value::as_str) => {
            return Err(Status::conflict(
                kind,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        None if require_rv && !kind.allows_unconditional_update() => {
            return Err(Status::invalid(
                kind,
                name,
                vec![Cause::new(
                    "metadata.resourceVersion",
                    "FieldValueInvalid",
                    "Invalid value: 0x0: must be specified for an update",
                )],
            ));
        }
        _ => {}
    }
    if let Some(uid) = new.get("uid").and_then(Value::as_str) {
        let actual = old.get("uid").and_then(Value::as_str).unwrap_or("");
        if uid != actual {
            return Err(Status::conflict(
                kind,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            ));
        }
    }
    Ok(())
}

/// The client's metadata with the server-owned fields taken from the stored object.
fn merged_meta(old: &Object, mut new: Object) -> Object {
    for server_owned in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "resourceVersion",
    ] {
        match old.get(server_owned) {
            Some(v) => new.insert(server_owned.to_string(), v.clone()),
            None => new.remove(server_owned),
        };
    }
    new
}

/// Everything whose change bumps `generation`: all but metadata (and status when it is a
/// subresource).
fn spec_part(kind: &Kind, object: &Object) -> Object {
    object
        .iter()
        .filter(|(k, _)| k.as_str() != "metadata" && !(kind.has_status && k.as_str() == "status"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_name_suffixes_differ() {
        assert_ne!(name_suffix(1), name_suffix(2));
        assert_eq!(name_suffix(1).len(), 5);
    }
}
