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

/// 2025-01-01T00:00:00Z in Unix seconds, the default clock's start.
pub const EPOCH_2025: u64 = 1_735_689_600;

/// A deterministic UUID-shaped uid for the n-th object.
pub fn sequential_uid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// A logical clock: `start`, then `start + step`, … seconds, as RFC 3339.
pub fn step_clock(start: u64, step: u64) -> Clock {
    let mut now = start;
    Box::new(move || {
        let t = rfc3339(now);
        now = now.saturating_add(step);
        t
    })
}

/// The machine's clock (what `verify twin serve` uses; tests keep the deterministic
/// [`step_clock`]).
pub fn wall_clock() -> Clock {
    Box::new(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(EPOCH_2025, |d| d.as_secs());
        rfc3339(now)
    })
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub fn rfc3339(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let secs = unix_seconds % 86_400;
    // civil-from-days (Howard Hinnant's algorithm), shifted to start on 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` (what [`rfc3339`] writes, fractional seconds ignored) as Unix
/// seconds; `None` when it is not one.
pub fn unix_seconds_of(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<u64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, m, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    // days-from-civil (Howard Hinnant's algorithm), the inverse of `rfc3339`'s.
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let yoe = y % 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + sec)
}

/// A clock reading `t` moved `advanced` seconds on (unreadable readings are kept as they are).
fn offset_stamp(t: String, advanced: u64) -> String {
    if advanced == 0 {
        return t;
    }
    match unix_seconds_of(&t) {
        Some(u) => rfc3339(u.saturating_add(advanced)),
        None => t,
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

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
}

/// One watch event, serialised as `{"type": "ADDED", "object": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchEvent {
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub object: Value,
}

/// A watch from a resourceVersion older than the kept history: 410 Gone, reason Expired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Gone(pub Status);

impl From<Gone> for Status {
    fn from(g: Gone) -> Self {
        g.0
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

    /// The store's clock now, RFC 3339 (what it stamps creations with), for writers that set
    /// a timestamp field themselves (`lastTransitionTime`).
    pub fn now(&mut self) -> String {
        self.stamp()
    }

    /// The clock's reading plus what [`Store::advance_clock`] added.
    fn stamp(&mut self) -> String {
        offset_stamp((self.clock)(), self.advanced)
    }

    /// Moves the twin's virtual clock `seconds` forward (the twin-only admin request
    /// `POST /verify/v1/clock`): later stamps read that much later, and
    /// [`Store::advanced_since`] counts it. It is a write, so the resourceVersion moves and
    /// the reference operator reconciles (nothing else changes: no watch event is sent).
    pub fn advance_clock(&mut self, seconds: u64) {
        let at = self.stamp();
        let at = unix_seconds_of(&at).unwrap_or(0);
        self.advanced = self.advanced.saturating_add(seconds);
        self.advances.push((at, seconds));
        self.resource_version += 1;
    }

    /// The seconds [`Store::advance_clock`] added in all.
    pub fn advanced(&self) -> u64 {
        self.advanced
    }

    /// The seconds the virtual clock was advanced since `stamp` (an RFC 3339 time this store
    /// wrote): what a bound measured from a `lastTransitionTime` counts on the twin. The
    /// second a stamp ticks per write is bookkeeping, not time passing, so only advances
    /// count: nothing on the twin times out unless a client moves its clock. An unreadable
    /// stamp has seen no advance.
    pub fn advanced_since(&self, stamp: &str) -> u64 {
        let Some(since) = unix_seconds_of(stamp) else {
            return 0;
        };
        self.advances
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, s)| s)
            .sum()
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

    /// Server-side apply of `config` by `field_manager` (creates the object if absent).
    ///
    /// As the apiserver's field manager (structured-merge-diff `Updater.Apply`), at the
    /// granularity of leaf paths (objects recurse; lists, scalars and empty objects are
    /// leaves, so every list is atomic): the manager's `Apply` entry becomes exactly the leaf
    /// paths of `config`; the object is the current one with the paths the manager applied
    /// before and no longer applies removed (unless another manager, of any operation, owns
    /// them too), deep-merged with `config`. A field another manager owns whose value this
    /// changes is a conflict: 409 naming manager and field unless `force`, which moves the
    /// field to this manager. Applying a value equal to the live one shares the field.
    /// Nulls in `config` are dropped.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        name: &str,
        subresource: Subresource,
        config: Value,
        field_manager: &str,
        force: bool,
    ) -> Result<Value, Status> {
        match subresource {
            Subresource::Main => self.served(kind)?,
            Subresource::Status => self.status_served(kind)?,
        }
        if field_manager.is_empty() {
            // PatchOptions validation (apimachinery ValidatePatchOptions)
            let cause = Cause::new(
                "fieldManager",
                "FieldValueRequired",
                "Required value: is required for apply patch",
            );
            return Err(Status::failure(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                Some(super::status::StatusDetails {
                    group: "meta.k8s.io".into(),
                    kind: "PatchOptions".into(),
                    causes: vec![cause],
                    ..Default::default()
                }),
            ));
        }
        let mut config = into_object(config)?;
        check_type_meta(kind, &config)?;
        self.check_typed_patch(kind, namespace, name, &config)?;
        let given_name = name_of(&config);
        if !given_name.is_empty() && given_name != name {
            return Err(Status::bad_request(
                "the name of the object does not match the name in the URL",
            ));
        }
        let precondition = config
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .cloned();
        let applied = applied_part(kind, subresource, &mut config);
        let paths = leaf_paths(&applied);
        let key = self.key(kind, namespace, name)?;
        let Some(current) = self.objects.get(&key).cloned() else {
            if subresource == Subresource::Status {
                return Err(Status::not_found(kind, name));
            }
            let mut object = applied;
            let mut meta = take_meta(&mut object);
            meta.insert("name".into(), Value::String(name.to_string()));
            object.insert("metadata".into(), Value::Object(meta));
            let applier = Managed::new(field_manager, Operation::Apply, subresource, kind, paths);
            return self.create_object(kind, namespace, object, Ownership::Applied(vec![applier]));
        };
        let mut managers = read_managed(&current);
        let mine = |m: &Managed| m.is(field_manager, Operation::Apply, subresource);
        let own_before: BTreeSet<FieldPath> = managers
            .iter()
            .filter(|m| mine(m))
            .flat_map(|m| m.paths.iter().cloned())
            .collect();
        let mut candidate = Value::Object(current.clone());
        for stale in own_before.difference(&paths) {
            let co_owned = managers.iter().any(|m| !mine(m) && m.paths.contains(stale));
            if !co_owned {
                remove_path(&mut candidate, stale);
            }
        }
        merge_config(&mut candidate, &Value::Object(applied));
        let mut candidate = into_object(candidate)?;
        let before = managed_view(kind, subresource, &current);
        let after = managed_view(kind, subresource, &candidate);
        let changes = compare(kind, &before, &after);
        let mut conflicts: Vec<(String, String)> = managers
            .iter()
            .filter(|m| !mine(m))
            .flat_map(|m| {
                m.paths
                    .iter()
                    .filter(|q| changes.touches(q))
                    .map(|q| (m.printed(), render_path(q)))
            })
            .collect();
        if !conflicts.is_empty() && !force {
            conflicts.sort();
            return Err(Status::apply_conflict(&conflicts));
        }
        // forced (or none): the others lose what this apply changed and what no longer exists
        // (existence in the whole object: a status entry's fields are outside a main view)
        let whole = Value::Object(candidate.clone());
        for m in managers.iter_mut().filter(|m| !mine(m)) {
            m.paths
                .retain(|q| !changes.touches(q) && value_at(&whole, q).is_some());
        }
        // the manager's entry keeps its time when its fields are unchanged (the apiserver
        // ignores timestamp-only managedFields changes, so a no-op apply writes nothing)
        match managers.iter_mut().find(|m| mine(m)) {
            Some(m) if m.paths == paths && changes.is_empty() => {}
            Some(m) => {
                m.paths = paths;
                m.time = Some(self.stamp());
            }
            None => {
                let mut fresh =
                    Managed::new(field_manager, Operation::Apply, subresource, kind, paths);
                fresh.time = Some(self.stamp());
                managers.push(fresh);
            }
        }
        let mut meta = take_meta(&mut candidate);
        match precondition {
            Some(rv) => meta.insert("resourceVersion".into(), rv),
            None => meta.remove("resourceVersion"),
        };
        candidate.insert("metadata".into(), Value::Object(meta));
        let ownership = Ownership::Applied(managers);
        self.write(kind, &key, candidate, subresource, false, ownership)
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

    /// A Namespace's deletion (none of its own finalizers left): the apiserver marks it
    /// Terminating (deletionTimestamp, `status.phase`), the answer the client gets; the
    /// namespace controller then deletes everything in it and finalizes it. The twin's
    /// controller is instant: the contents and the Namespace are gone when the answer is sent.
    fn terminate_namespace(&mut self, key: &Key, current: Object) -> Deleted {
        let mut terminating = current.clone();
        let mut m = take_meta(&mut terminating);
        m.insert("deletionTimestamp".into(), Value::String((self.clock)()));
        terminating.insert("metadata".into(), Value::Object(m));
        terminating.insert("status".into(), serde_json::json!({"phase": "Terminating"}));
        let contents: Vec<Key> = self
            .objects
            .keys()
            .filter(|k| k.namespace == key.name && !k.namespace.is_empty())
            .cloned()
            .collect();
        for k in contents {
            let Some(kind) = self
                .kinds
                .iter()
                .find(|c| c.group == k.group && c.kind == k.kind)
                .copied()
            else {
                continue;
            };
            if let Some(o) = self.objects.get(&k).cloned() {
                self.commit(&kind, &k, None, Some(o));
            }
        }
        self.commit(&crate::wire::kinds::NAMESPACE, key, None, Some(current));
        Deleted::Finalizing(Value::Object(terminating))
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

    /// The serviceaccount controller's `default` ServiceAccount in a new namespace: written
    /// through a typed client that sends no managed fields, so it carries none.
    fn default_service_account(&mut self, namespace: &str) {
        let sa = crate::wire::kinds::SERVICE_ACCOUNT;
        if !self.kinds.contains(&sa) || self.get(&sa, Some(namespace), "default").is_ok() {
            return;
        }
        let Ok(live) = self.get(&crate::wire::kinds::NAMESPACE, None, namespace) else {
            return;
        };
        if live.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let object = serde_json::json!({"metadata": {"name": "default", "namespace": namespace}});
        let Ok(object) = into_object(object) else {
            return;
        };
        // a failure leaves the namespace without one, as a failing controller would
        let _ = self.create_object(&sa, Some(namespace), object, Ownership::Applied(Vec::new()));
    }

    /// The apiextensions-apiserver's controllers on CRD `name`: a live CRD has its names
    /// accepted, then is established, then its kinds are served (each step one status
    /// write by `kube-apiserver`, as on a real server); a CRD being deleted has its custom
    /// objects deleted and its kinds unserved, then loses the cleanup finalizer (and goes,
    /// when it was the last); a CRD gone leaves no kind behind.
    fn reconcile_crd(&mut self, name: &str) {
        let crd_kind = crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION;
        let Ok(crd) = self.get(&crd_kind, None, name) else {
            return;
        };
        let deleting = crd.pointer("/metadata/deletionTimestamp").is_some();
        if deleting {
            let held = crd
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|x| x == super::crds::CLEANUP_FINALIZER));
            if held {
                self.unserve_crd(&crd);
                let mut released = crd.clone();
                if let Some(f) = released
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    f.retain(|x| x != super::crds::CLEANUP_FINALIZER);
                }
                let _ = self.update_by(&crd_kind, None, released, super::crds::SERVER_MANAGER);
            }
            return;
        }
        let now = self.stamp();
        if let Some(status) = super::crds::next_status(&crd, &now) {
            let mut next = crd.clone();
            next["status"] = status;
            // each step re-enters here through `after_write` and takes the next one
            let _ = self.update_status_by(&crd_kind, None, next, super::crds::SERVER_MANAGER);
            return;
        }
        self.serve_crd(&crd);
    }

    /// Serves the kinds of an established CRD (replacing what it served before), validated
    /// by its storage version's schema, listed with its printer columns.
    fn serve_crd(&mut self, crd: &Value) {
        let kinds = super::crds::served_kinds(crd);
        let Some(first) = kinds.first().copied() else {
            return;
        };
        let mut served: Vec<Kind> = self
            .kinds
            .iter()
            .filter(|k| !(k.group == first.group && k.kind == first.kind))
            .copied()
            .collect();
        let at = self
            .kinds
            .iter()
            .position(|k| k.group == first.group && k.kind == first.kind)
            .unwrap_or(served.len())
            .min(served.len());
        for (i, k) in kinds.iter().enumerate() {
            served.insert(at + i, *k);
        }
        self.kinds = served;
        if let Some(schema) = super::structural::crd_schema(crd, None) {
            self.set_validator(&first, super::structural::validator(schema.clone()));
        }
        self.set_printer_columns(&first, super::table::crd_printer_columns(crd));
        let list = |p: &str| -> Vec<String> {
            crd.pointer(p)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let names = super::discovery::Names {
            singular: crd
                .pointer("/spec/names/singular")
                .and_then(Value::as_str)
                .map_or_else(|| first.kind.to_ascii_lowercase(), str::to_string),
            short: list("/spec/names/shortNames"),
            categories: list("/spec/names/categories"),
        };
        self.crd_names.insert((first.group, first.kind), names);
        self.sync_api_services();
    }

    /// The discovery names of a kind a CRD serves (None for the kinds served from the start
    /// that no CRD object describes).
    pub fn runtime_names(&self, kind: &Kind) -> Option<super::discovery::Names> {
        self.crd_names.get(&(kind.group, kind.kind)).cloned()
    }

    /// Deletes every object of the CRD's kind (each a DELETED event) and stops serving it.
    fn unserve_crd(&mut self, crd: &Value) {
        let kinds = super::crds::served_kinds(crd);
        let Some(first) = kinds.first().copied() else {
            return;
        };
        let keys: Vec<Key> = self
            .objects
            .keys()
            .filter(|k| k.group == first.group && k.kind == first.kind)
            .cloned()
            .collect();
        for key in keys {
            if let Some(o) = self.objects.get(&key).cloned() {
                self.commit(&first, &key, None, Some(o));
            }
        }
        self.kinds
            .retain(|k| !(k.group == first.group && k.kind == first.kind));
        self.validators.remove(&(first.group, first.kind));
        self.printer_columns.remove(&(first.group, first.kind));
        self.crd_names.remove(&(first.group, first.kind));
        self.sync_api_services();
    }

    /// Starts the kube-aggregator's autoregister controller: every group version served
    /// gets its local APIService (`<version>.<group>`, `v1.` for core) at once, and from
    /// then on one appears when a CRD serves a new group version and goes when none
    /// serves it any more. Opt-in (`verify twin serve` and the differential test call it):
    /// a store made for a test holds only the objects the test wrote.
    pub fn install_api_services(&mut self) {
        self.api_services = true;
        self.sync_api_services();
    }

    /// The autoregister controller's pass (see [`Store::install_api_services`]).
    fn sync_api_services(&mut self) {
        let kind = crate::wire::kinds::API_SERVICE;
        if !self.api_services || self.dry || !self.kinds.contains(&kind) {
            return;
        }
        let wanted: Vec<Value> = super::apiservices::wanted(&self.kinds);
        let names: Vec<String> = wanted
            .iter()
            .filter_map(|a| a.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let stale: Vec<Key> = self
            .objects
            .iter()
            .filter(|(k, o)| {
                k.group == kind.group
                    && k.kind == kind.kind
                    && !names.contains(&k.name)
                    && super::apiservices::is_automanaged(o)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            if let Some(o) = self.objects.get(&key).cloned() {
                self.commit(&kind, &key, None, Some(o));
            }
        }
        for service in wanted {
            let Ok(mut object) = into_object(service) else {
                continue;
            };
            let name = name_of(&object);
            if self.get(&kind, None, &name).is_ok() {
                continue;
            }
            let status = object.remove("status");
            let owner = Ownership::Update(super::crds::SERVER_MANAGER);
            if self.create_object(&kind, None, object, owner).is_err() {
                continue;
            }
            // the availability controller's condition: a write with no managed fields
            let Ok(key) = self.key(&kind, None, &name) else {
                continue;
            };
            if let (Some(mut live), Some(mut status)) = (self.objects.get(&key).cloned(), status) {
                let now = self.stamp();
                if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut)
                {
                    for c in conditions.iter_mut() {
                        c["lastTransitionTime"] = Value::String(now.clone());
                    }
                }
                live.insert("status".into(), status);
                let managers = Ownership::Applied(read_managed(&live));
                let _ = self.write(&kind, &key, live, Subresource::Status, false, managers);
            }
        }
    }

    /// A CRD's delete (apiextensions-apiserver registry/customresourcedefinition/etcd.go
    /// Delete): the CRD is marked deleting with the cleanup finalizer and a Terminating
    /// condition, the answer the client gets (generation unchanged); the cleanup then runs at
    /// once ([`Store::reconcile_crd`]).
    fn delete_crd(&mut self, key: &Key, current: Object) -> Deleted {
        let crd_kind = crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION;
        let mut marked = current.clone();
        let now = self.stamp();
        let mut m = take_meta(&mut marked);
        m.insert("deletionTimestamp".into(), Value::String(now.clone()));
        let mut held = finalizers(&current);
        if !held.iter().any(|f| f == super::crds::CLEANUP_FINALIZER) {
            held.push(Value::String(super::crds::CLEANUP_FINALIZER.into()));
        }
        m.insert("finalizers".into(), Value::Array(held));
        marked.insert("metadata".into(), Value::Object(m));
        if let Some(conditions) = marked
            .get_mut("status")
            .and_then(|s| s.get_mut("conditions"))
        {
            let mut list = conditions.as_array().cloned().unwrap_or_default();
            list.push(super::crds::terminating_condition(&now));
            *conditions = Value::Array(list);
        }
        let stored = self.commit(&crd_kind, key, Some(marked), Some(current));
        self.after_write(&crd_kind, key);
        Deleted::Finalizing(stored)
    }

    /// The events of `kind` (in `namespace`, or all) after `resource_version`, as a watch
    /// sees them through `selector` (an object that stops matching is a DELETED of its
    /// previous state, one that starts matching is ADDED). `resource_version` 0 means
    /// "any": synthetic ADDED events for the current objects. 410 Gone (reason Expired)
    /// when events after `resource_version` have left the history.
    pub fn watch_since(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        selector: &Selector,
        resource_version: u64,
    ) -> Result<Vec<WatchEvent>, Gone> {
        if resource_version == 0 {
            let items = self
                .list(kind, namespace, selector)
                .map(|l| l.items)
                .unwrap_or_default();
            return Ok(items
                .into_iter()
                .map(|object| WatchEvent {
                    event_type: EventType::Added,
                    object,
                })
                .collect());
        }
        if resource_version < self.evicted_through {
            return Err(Gone(Status::expired(
                resource_version,
                self.evicted_through + 1,
            )));
        }
        let in_scope = |r: &&Recorded| {
            r.group == kind.group
                && r.kind == kind.kind
                && r.resource_version > resource_version
                && namespace.is_none_or(|ns| ns.is_empty() || r.namespace == ns)
        };
        Ok(self
            .history
            .iter()
            .filter(in_scope)
            .filter_map(|r| seen_through(r, selector))
            .collect())
    }

    /// A BOOKMARK event carrying the current resourceVersion.
    pub fn bookmark(&self, kind: &Kind) -> WatchEvent {
        WatchEvent {
            event_type: EventType::Bookmark,
            object: serde_json::json!({
                "apiVersion": kind.api_version(),
                "kind": kind.kind,
                "metadata": {"resourceVersion": self.resource_version.to_string()},
            }),
        }
    }

    // ---- internals ----

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

    /// The garbage collector's part once `gone` has left the store (kube-controller-manager's
    /// garbagecollector; the Kubernetes "Garbage Collection" and "Owners and Dependents"
    /// pages): a dependent naming `gone`'s uid in `ownerReferences` whose other owners are all
    /// gone too is deleted (which collects its own dependents), one with a remaining owner
    /// loses only the dangling reference; with `orphan` every dependent is kept and loses the
    /// reference. Foreground deletion is collected like background here: the twin has no
    /// clock between the two, so dependents go in the same call either way.
    fn collect_dependents(&mut self, gone: &Value, orphan: bool) {
        let Some(uid) = gone.pointer("/metadata/uid").and_then(Value::as_str) else {
            return;
        };
        let names_uid = |o: &Object, uid: &str| owner_uids(o).iter().any(|u| u == uid);
        let dependents: Vec<(Key, Object)> = self
            .objects
            .iter()
            .filter(|(_, o)| names_uid(o, uid))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect();
        let live_uids: std::collections::HashSet<String> = self
            .objects
            .values()
            .filter_map(|o| o.get("metadata")?.get("uid")?.as_str().map(str::to_string))
            .collect();
        for (key, object) in dependents {
            let Some(kind) = self
                .kinds
                .iter()
                .find(|k| k.group == key.group && k.kind == key.kind)
                .copied()
            else {
                continue;
            };
            let remaining = owner_uids(&object)
                .into_iter()
                .any(|u| u != uid && live_uids.contains(&u));
            if !orphan && !remaining {
                let ns = Some(key.namespace.as_str()).filter(|n| !n.is_empty());
                let _ = self.delete(&kind, ns, &key.name, &DeleteOptions::default());
                continue;
            }
            let mut next = object.clone();
            let mut meta = take_meta(&mut next);
            if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                if refs.is_empty() {
                    meta.remove("ownerReferences");
                }
            }
            next.insert("metadata".into(), Value::Object(meta));
            self.commit(&kind, &key, Some(next), Some(object));
        }
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

/// The owners' uids an object names in `metadata.ownerReferences`.
fn owner_uids(o: &Object) -> Vec<String> {
    o.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The event a watcher with `selector` sees for a recorded write, if any.
fn seen_through(r: &Recorded, selector: &Selector) -> Option<WatchEvent> {
    let now = selector.matches(&r.object);
    let before = r.previous.as_ref().is_some_and(|p| selector.matches(p));
    let event = |event_type, object: &Value| {
        Some(WatchEvent {
            event_type,
            object: object.clone(),
        })
    };
    match r.event_type {
        EventType::Added if now => event(EventType::Added, &r.object),
        EventType::Modified if now && before => event(EventType::Modified, &r.object),
        EventType::Modified if now => event(EventType::Added, &r.object),
        EventType::Modified if before => {
            // no longer selected: the previous state, at the event's resourceVersion
            let mut gone = r.previous.clone().unwrap_or(Value::Null);
            if let Some(m) = gone.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert(
                    "resourceVersion".into(),
                    Value::String(r.resource_version.to_string()),
                );
            }
            event(EventType::Deleted, &gone)
        }
        EventType::Deleted if before => event(EventType::Deleted, &r.object),
        _ => None,
    }
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

fn finalizers(object: &Object) -> Vec<Value> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
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

/// 422 when a deleting object gains a finalizer (ObjectMeta validation).
fn check_finalizers_while_deleting(
    kind: &Kind,
    name: &str,
    old: &Object,
    new: &Object,
) -> Result<(), Status> {
    let deleting = old
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some();
    let before = finalizers(old);
    if deleting && finalizers(new).iter().any(|f| !before.contains(f)) {
        return Err(Status::invalid(
            kind,
            name,
            vec![Cause::new(
                "metadata.finalizers",
                "FieldValueForbidden",
                "Forbidden: no new finalizers can be added if the object is being deleted",
            )],
        ));
    }
    Ok(())
}

/// Everything whose change bumps `generation`: all but metadata (and status when it is a
/// subresource).
/// The `kubernetes.io/metadata.name` label the apiserver sets on every write of a Namespace
/// (owned by the writer, as kube-apiserver 1.37 records it).
fn prepare_namespace(kind: &Kind, object: &mut Object) {
    if *kind != crate::wire::kinds::NAMESPACE {
        return;
    }
    let name = name_of(object);
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Object::new()));
        if let Some(l) = labels.as_object_mut() {
            l.insert(NAMESPACE_NAME_LABEL.into(), Value::String(name));
        }
    }
}

/// The `kubernetes` finalizer a created Namespace gets in `spec.finalizers` when it lacks it
/// (namespace strategy PrepareForCreate; owned by nobody).
fn namespace_finalizer(object: &mut Object) {
    let spec = object
        .entry("spec")
        .or_insert_with(|| Value::Object(Object::new()));
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let finalizers = spec
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = finalizers.as_array_mut() {
        if !list.iter().any(|f| f == "kubernetes") {
            list.push(Value::String("kubernetes".into()));
        }
    }
}

/// The label every Namespace carries with its own name (corev1 `LabelMetadataName`).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn spec_part(kind: &Kind, object: &Object) -> Object {
    object
        .iter()
        .filter(|(k, _)| k.as_str() != "metadata" && !(kind.has_status && k.as_str() == "status"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

// ---- field ownership (managedFields) ----
//
// As the apiserver's field manager keeps it (k8s.io/apiserver pkg/endpoints/handlers/
// fieldmanager and sigs.k8s.io/structured-merge-diff `merge.Updater`), at the granularity of
// leaf paths with every list atomic: a create, update or patch makes its manager the `Update`
// owner of the fields it added or changed and takes them away from every other manager; an
// apply makes its manager the `Apply` owner of exactly the fields it applied. A field that no
// longer exists is owned by nobody; an entry left with no fields is dropped.

/// The manager of a write that names none: the apiserver falls back to the User-Agent's
/// prefix ([`manager_from_user_agent`]), which is empty for a client that sends none.
pub const NO_MANAGER: &str = "";

/// How many bytes of a User-Agent a derived manager keeps (`FieldManagerMaxLength`).
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The manager of a write without `?fieldManager=`, as the apiserver derives it from the
/// User-Agent (handlers/rest.go `prefixFromUserAgent`): the part before the first `/`, its
/// unprintable characters dropped, cut to 128 bytes. `kubectl/v1.31.0 (linux/amd64) …` is
/// `kubectl`.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut manager = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if manager.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        manager.push(c);
    }
    manager
}

/// The `fieldManager` of a write, or the manager derived from its User-Agent when it names
/// none (handlers/rest.go `managerOrUserAgent`).
/// A write with neither is recorded as `unknown` (managedfields/internal/buildmanagerinfo.go).
pub fn manager_or_user_agent(field_manager: Option<&str>, user_agent: &str) -> String {
    let manager = match field_manager.filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => manager_from_user_agent(user_agent),
    };
    if manager.is_empty() {
        UNKNOWN_MANAGER.to_string()
    } else {
        manager
    }
}

/// The manager of a write that names none and sends no User-Agent.
pub const UNKNOWN_MANAGER: &str = "unknown";

/// The last element of a path that owns an object node itself (FieldsV1's `"."`): an
/// `Update` that creates a non-empty object owns the object as well as its fields.
const NODE: &str = ".";

/// How a write's `managedFields` follow: an `Update` by a manager (create, update, every
/// patch type), or the entries an apply computed.
enum Ownership<'a> {
    Update(&'a str),
    Applied(Vec<Managed>),
}

/// A field path: a sequence of object keys, ending in [`NODE`] when it names an object node
/// itself.
type FieldPath = Vec<String>;

/// The operation a `managedFields` entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry with its owned leaf paths.
#[derive(Debug, Clone)]
struct Managed {
    manager: String,
    operation: Operation,
    subresource: Subresource,
    api_version: String,
    /// `None` until stamped (a fresh entry takes the write's time).
    time: Option<String>,
    paths: BTreeSet<FieldPath>,
}

impl Managed {
    fn new(
        manager: &str,
        operation: Operation,
        subresource: Subresource,
        kind: &Kind,
        paths: BTreeSet<FieldPath>,
    ) -> Self {
        Managed {
            manager: manager.to_string(),
            operation,
            subresource,
            api_version: kind.api_version(),
            time: None,
            paths,
        }
    }

    /// Whether this is the entry of `manager`'s `operation` through `subresource` (the
    /// apiserver's manager identifier; one version per kind, so the apiVersion never splits
    /// an `Update` entry here).
    fn is(&self, manager: &str, operation: Operation, subresource: Subresource) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }

    /// The manager as a conflict names it (fieldmanager `printManager`): `"kubectl"`, with
    /// ` with subresource "status"` for a status entry and ` using v1` for an `Update` one.
    fn printed(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if self.subresource == Subresource::Status {
            out.push_str(" with subresource \"status\"");
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    /// The entry in the real format (`FieldsV1`); an empty manager is left out, as Go's
    /// `omitempty` leaves it.
    fn to_entry(&self) -> Value {
        let mut entry = Object::new();
        if !self.manager.is_empty() {
            entry.insert("manager".into(), Value::String(self.manager.clone()));
        }
        entry.insert(
            "operation".into(),
            Value::String(self.operation.as_str().into()),
        );
        entry.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(time) = &self.time {
            entry.insert("time".into(), Value::String(time.clone()));
        }
        entry.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        entry.insert("fieldsV1".into(), fields_v1(&self.paths));
        if self.subresource == Subresource::Status {
            entry.insert("subresource".into(), Value::String("status".into()));
        }
        Value::Object(entry)
    }
}

/// The entries to store: the non-empty ones, unstamped ones stamped with `now` (when not
/// empty), sorted as the apiserver sorts them (fieldmanager `sortEncodedManagedFields`:
/// operation, time, manager, apiVersion, subresource).
fn entries_of(managers: Vec<Managed>, now: &str) -> Vec<Value> {
    let mut managers: Vec<Managed> = managers
        .into_iter()
        .filter(|m| !m.paths.is_empty())
        .map(|mut m| {
            if m.time.is_none() && !now.is_empty() {
                m.time = Some(now.to_string());
            }
            m
        })
        .collect();
    managers.sort_by(|a, b| {
        let sub = |m: &Managed| m.subresource == Subresource::Status;
        (a.operation, &a.time, &a.manager, &a.api_version, sub(a)).cmp(&(
            b.operation,
            &b.time,
            &b.manager,
            &b.api_version,
            sub(b),
        ))
    });
    managers.iter().map(Managed::to_entry).collect()
}

/// The part of an object whose fields are owned through `subresource`: no type meta and no
/// server-set metadata (fieldmanager's stripped fields); for a kind with a status
/// subresource, `status` alone through `/status` and everything but `status` through the
/// main resource (the strategies' reset fields).
fn managed_view(kind: &Kind, subresource: Subresource, object: &Object) -> Value {
    let mut view = Object::new();
    for (key, value) in object {
        let keep = match (key.as_str(), subresource) {
            ("apiVersion" | "kind", _) => false,
            ("status", Subresource::Status) => true,
            (_, Subresource::Status) => false,
            ("status", Subresource::Main) => !kind.has_status,
            _ => true,
        };
        if keep {
            view.insert(key.clone(), value.clone());
        }
    }
    if let Some(Value::Object(meta)) = view.get_mut("metadata") {
        for server_set in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ] {
            meta.remove(server_set);
        }
        if meta.is_empty() {
            view.remove("metadata");
        }
    }
    Value::Object(view)
}

/// What a write changed between two views, leaf path by leaf path (typed.Comparison).
#[derive(Debug, Default)]
struct Comparison {
    /// Paths that did not exist before.
    added: BTreeSet<FieldPath>,
    /// Paths that exist on both sides with another value (an object on both sides is not
    /// modified itself: its children are compared).
    modified: BTreeSet<FieldPath>,
    /// Paths that no longer exist.
    removed: BTreeSet<FieldPath>,
}

impl Comparison {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Whether the write set the owned field `q`: added or modified it, or replaced an
    /// object above it with a scalar or a list.
    fn touches(&self, q: &FieldPath) -> bool {
        self.added.contains(q)
            || self.modified.contains(q)
            || self
                .modified
                .iter()
                .any(|p| p.len() < q.len() && q.starts_with(p))
    }
}

fn compare(kind: &Kind, before: &Value, after: &Value) -> Comparison {
    let leaves = |v: &Value| v.as_object().map(leaf_paths).unwrap_or_default();
    let (old, new) = (leaves(before), leaves(after));
    let mut c = Comparison::default();
    // object nodes appear and vanish as members of their own (typed.Comparison over
    // fieldpath sets; the root and `metadata` are stripped like the server-set fields)
    let (old_nodes, new_nodes) = (object_nodes(kind, before), object_nodes(kind, after));
    c.added.extend(new_nodes.difference(&old_nodes).cloned());
    c.removed.extend(old_nodes.difference(&new_nodes).cloned());
    for p in new.iter().filter(|p| value_at(before, p).is_none()) {
        c.added.insert(p.clone());
    }
    for p in old.iter().filter(|p| value_at(after, p).is_none()) {
        c.removed.insert(p.clone());
    }
    for p in old.union(&new) {
        if let (Some(a), Some(b)) = (value_at(before, p), value_at(after, p)) {
            if a != b && !(a.is_object() && b.is_object()) {
                c.modified.insert(p.clone());
            }
        }
    }
    c
}

/// A leaf of `view` (a scalar, a list or an empty object) or an object node of it
/// ([`NODE`]), as an owned path must be.
fn is_leaf(view: &Value, p: &FieldPath) -> bool {
    if p.last().is_some_and(|k| k == NODE) {
        return value_at(view, p).is_some_and(Value::is_object);
    }
    value_at(view, p).is_some_and(|v| v.as_object().is_none_or(Map::is_empty))
}

/// The non-empty objects below the root of `view`, as [`NODE`] paths (`metadata` left out:
/// it is stripped with the fields the server sets; so are a built-in kind's value structs,
/// which structured-merge-diff never lists as members of their own, see
/// `builtin::is_value_struct`).
fn object_nodes(kind: &Kind, view: &Value) -> BTreeSet<FieldPath> {
    fn walk(kind: &Kind, value: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        let Value::Object(m) = value else { return };
        if m.is_empty() {
            return;
        }
        if !prefix.is_empty()
            && prefix.as_slice() != ["metadata"]
            && !super::builtin::is_value_struct(kind, prefix)
        {
            let mut node = prefix.clone();
            node.push(NODE.to_string());
            out.insert(node);
        }
        for (k, v) in m {
            prefix.push(k.clone());
            walk(kind, v, prefix, out);
            prefix.pop();
        }
    }
    let mut out = BTreeSet::new();
    walk(kind, view, &mut Vec::new(), &mut out);
    out
}

/// An `Update` by `manager` through `subresource` (fieldmanager `managedFieldsUpdater` over
/// `Updater.Update`, which always forces): every manager loses the fields it changed and
/// the ones gone from `after` (the whole object as written, not the subresource's view);
/// when it changed any, its own entry gains them and takes the write's time.
fn record_update(
    managers: &mut Vec<Managed>,
    changes: &Comparison,
    after: &Value,
    manager: &str,
    subresource: Subresource,
    kind: &Kind,
    now: impl FnOnce() -> String,
) {
    for m in managers.iter_mut() {
        m.paths
            .retain(|q| !changes.touches(q) && value_at(after, q).is_some());
    }
    let taken: BTreeSet<FieldPath> = changes
        .added
        .union(&changes.modified)
        .filter(|p| is_leaf(after, p))
        .cloned()
        .collect();
    if !taken.is_empty() {
        let time = Some(now());
        match managers
            .iter_mut()
            .find(|m| m.is(manager, Operation::Update, subresource))
        {
            Some(m) => {
                m.paths.extend(taken);
                m.time = time;
            }
            None => {
                let mut fresh = Managed::new(manager, Operation::Update, subresource, kind, taken);
                fresh.time = time;
                managers.push(fresh);
            }
        }
    }
    managers.retain(|m| !m.paths.is_empty());
}

/// The part of an apply configuration that is applied: no type meta, no server-owned
/// metadata, no nulls; for a status-subresource kind only `status` via `/status` and
/// never `status` via the main resource.
fn applied_part(kind: &Kind, subresource: Subresource, config: &mut Object) -> Object {
    let mut applied = Object::new();
    for (key, value) in std::mem::take(config) {
        let keep = match (key.as_str(), subresource) {
            ("apiVersion" | "kind", _) => false,
            ("metadata", Subresource::Main) => true,
            ("status", Subresource::Main) => !kind.has_status,
            ("status", Subresource::Status) => true,
            (_, Subresource::Status) => false,
            _ => true,
        };
        if keep {
            applied.insert(key, without_nulls(value));
        }
    }
    if let Some(Value::Object(meta)) = applied.get_mut("metadata") {
        meta.retain(|k, _| {
            matches!(
                k.as_str(),
                "labels" | "annotations" | "finalizers" | "ownerReferences"
            )
        });
        if meta.is_empty() {
            applied.remove("metadata");
        }
    }
    applied
}

fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The leaf paths of a configuration: objects recurse; lists, scalars, empty objects are leaves.
fn leaf_paths(config: &Object) -> BTreeSet<FieldPath> {
    fn walk(value: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        match value {
            Value::Object(m) if !m.is_empty() => {
                for (k, v) in m {
                    prefix.push(k.clone());
                    walk(v, prefix, out);
                    prefix.pop();
                }
            }
            _ => {
                out.insert(prefix.clone());
            }
        }
    }
    let mut out = BTreeSet::new();
    for (k, v) in config {
        walk(v, &mut vec![k.clone()], &mut out);
    }
    out
}

/// The value at `path` (a [`NODE`] path names the object it ends in).
fn value_at<'a>(value: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    path.iter()
        .filter(|k| *k != NODE)
        .try_fold(value, |v, k| v.get(k))
}

fn remove_path(value: &mut Value, path: &FieldPath) {
    let Some((last, parents)) = path.split_last().filter(|(last, _)| *last != NODE) else {
        return;
    };
    let mut at = value;
    for k in parents {
        match at.get_mut(k) {
            Some(next) => at = next,
            None => return,
        }
    }
    if let Some(m) = at.as_object_mut() {
        m.remove(last);
    }
}

/// Deep merge: objects merge key by key, everything else is replaced.
fn merge_config(target: &mut Value, config: &Value) {
    match (target.as_object_mut(), config.as_object()) {
        (Some(t), Some(c)) => {
            for (k, v) in c {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        merge_config(existing, v)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *target = config.clone(),
    }
}

/// `.spec.os` as the apiserver prints a conflicting field.
fn render_path(path: &FieldPath) -> String {
    path.iter().map(|k| format!(".{k}")).collect()
}

/// Owned leaf paths in the `FieldsV1` encoding: `{"f:spec": {"f:os": {}}}`.
fn fields_v1(paths: &BTreeSet<FieldPath>) -> Value {
    let mut fields = Value::Object(Object::new());
    for path in paths {
        let mut at = &mut fields;
        for k in path {
            let Some(m) = at.as_object_mut() else { break };
            let key = if k == NODE {
                NODE.to_string()
            } else {
                format!("f:{k}")
            };
            at = m.entry(key).or_insert_with(|| Value::Object(Object::new()));
        }
    }
    fields
}

/// The entries of an object's `managedFields`, with their leaf paths.
fn read_managed(object: &Object) -> Vec<Managed> {
    fn walk(fields: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        let children: Vec<(&String, &Value)> = fields
            .as_object()
            .map(|m| m.iter().filter(|(k, _)| k.starts_with("f:")).collect())
            .unwrap_or_default();
        if fields.get(NODE).is_some() && !prefix.is_empty() {
            let mut node = prefix.clone();
            node.push(NODE.to_string());
            out.insert(node);
        }
        if children.is_empty() {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            return;
        }
        for (k, v) in children {
            prefix.push(k.trim_start_matches("f:").to_string());
            walk(v, prefix, out);
            prefix.pop();
        }
    }
    let text = |e: &Value, key: &str| e.get(key).and_then(Value::as_str).map(str::to_string);
    object
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let mut paths = BTreeSet::new();
            walk(
                e.get("fieldsV1").unwrap_or(&Value::Null),
                &mut Vec::new(),
                &mut paths,
            );
            Managed {
                manager: text(e, "manager").unwrap_or_default(),
                operation: if text(e, "operation").as_deref() == Some("Apply") {
                    Operation::Apply
                } else {
                    Operation::Update
                },
                subresource: if text(e, "subresource").as_deref() == Some("status") {
                    Subresource::Status
                } else {
                    Subresource::Main
                },
                api_version: text(e, "apiVersion").unwrap_or_default(),
                time: text(e, "time"),
                paths,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(EPOCH_2025), "2025-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400 + 3661), "2000-02-29T01:01:01Z");
        for t in [0, EPOCH_2025, 951_782_400 + 3661, 4_102_444_799] {
            assert_eq!(unix_seconds_of(&rfc3339(t)), Some(t), "{t}");
        }
        assert_eq!(unix_seconds_of("2025-13-01T00:00:00Z"), None);
        assert_eq!(unix_seconds_of("yesterday"), None);
    }

    /// Only an advance moves the virtual clock's count; stamps after it read later.
    #[test]
    fn the_virtual_clock_counts_only_advances() {
        let mut store = Store::default();
        let before = store.now();
        for _ in 0..5000 {
            store.now();
        }
        assert_eq!(store.advanced_since(&before), 0);
        let rv = store.resource_version();
        store.advance_clock(1800);
        assert_eq!(store.resource_version(), rv + 1);
        assert_eq!(store.advanced_since(&before), 1800);
        let after = store.now();
        assert!(
            unix_seconds_of(&after) >= unix_seconds_of(&before).map(|b| b + 1800 + 5000),
            "{before} → {after}"
        );
        assert_eq!(store.advanced_since(&after), 0);
    }

    #[test]
    fn leaf_paths_and_fields_v1_round_trip() {
        let config =
            json!({"spec": {"a": 1, "b": {"c": [1]}, "e": {}}, "metadata": {"labels": {"x": "y"}}});
        let Value::Object(config) = config else {
            return;
        };
        let paths = leaf_paths(&config);
        let rendered: Vec<String> = paths.iter().map(render_path).collect();
        assert_eq!(
            rendered,
            [".metadata.labels.x", ".spec.a", ".spec.b.c", ".spec.e"]
        );
        let node = &crate::wire::kinds::NODE;
        let entry = Managed::new(
            "m",
            Operation::Apply,
            Subresource::Main,
            node,
            paths.clone(),
        )
        .to_entry();
        assert_eq!(entry["fieldsV1"]["f:spec"]["f:b"]["f:c"], json!({}));
        let mut obj = Object::new();
        obj.insert("metadata".into(), json!({"managedFields": [entry]}));
        let back = read_managed(&obj);
        assert_eq!(back.len(), 1);
        assert_eq!(back.first().map(|m| m.paths.clone()), Some(paths));
    }

    #[test]
    fn merge_config_replaces_lists_and_merges_objects() {
        let mut t = json!({"a": {"x": 1, "l": [1, 2]}, "b": 2});
        merge_config(&mut t, &json!({"a": {"y": 2, "l": [3]}}));
        assert_eq!(t, json!({"a": {"x": 1, "y": 2, "l": [3]}, "b": 2}));
    }

    #[test]
    fn generate_name_suffixes_differ() {
        assert_ne!(name_suffix(1), name_suffix(2));
        assert_eq!(name_suffix(1).len(), 5);
    }
}
