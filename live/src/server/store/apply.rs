//! Server-side apply ([`Store::apply`]) and the field ownership every write keeps in
//! `managedFields`.

use super::*;

/// One server-side apply (a `PATCH` with `application/apply-patch+yaml`): the object it
/// addresses, the configuration applied and the field manager applying it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRequest<'a> {
    pub kind: &'a Kind,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub subresource: Subresource,
    /// The applied configuration (nulls in it are dropped).
    pub config: Value,
    pub field_manager: &'a str,
    /// Take the fields another manager owns instead of answering 409.
    pub force: bool,
}

impl Store {
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
    pub fn apply(&mut self, request: ApplyRequest<'_>) -> Result<Value, Status> {
        let ApplyRequest {
            kind,
            namespace,
            name,
            subresource,
            config,
            field_manager,
            force,
        } = request;
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
                Some(crate::server::status::StatusDetails {
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
pub(super) const FIELD_MANAGER_MAX_LENGTH: usize = 128;

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
pub(super) const NODE: &str = ".";

/// How a write's `managedFields` follow: an `Update` by a manager (create, update, every
/// patch type), or the entries an apply computed.
pub(super) enum Ownership<'a> {
    Update(&'a str),
    Applied(Vec<Managed>),
}

/// A field path: a sequence of object keys, ending in [`NODE`] when it names an object node
/// itself.
pub(super) type FieldPath = Vec<String>;

/// The operation a `managedFields` entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Operation {
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
pub(super) struct Managed {
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
pub(super) fn entries_of(managers: Vec<Managed>, now: &str) -> Vec<Value> {
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
pub(super) fn managed_view(kind: &Kind, subresource: Subresource, object: &Object) -> Value {
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
pub(super) struct Comparison {
    /// Paths that did not exist before.
    added: BTreeSet<FieldPath>,
    /// Paths that exist on both sides with another value (an object on both sides is not
    /// modified itself: its children are compared).
    modified: BTreeSet<FieldPath>,
    /// Paths that no longer exist.
    removed: BTreeSet<FieldPath>,
}

impl Comparison {
    pub(super) fn is_empty(&self) -> bool {
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

pub(super) fn compare(kind: &Kind, before: &Value, after: &Value) -> Comparison {
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
pub(super) fn is_leaf(view: &Value, p: &FieldPath) -> bool {
    if p.last().is_some_and(|k| k == NODE) {
        return value_at(view, p).is_some_and(Value::is_object);
    }
    value_at(view, p).is_some_and(|v| v.as_object().is_none_or(Map::is_empty))
}

/// The non-empty objects below the root of `view`, as [`NODE`] paths (`metadata` left out:
/// it is stripped with the fields the server sets; so are a built-in kind's value structs,
/// which structured-merge-diff never lists as members of their own, see
/// `builtin::is_value_struct`).
pub(super) fn object_nodes(kind: &Kind, view: &Value) -> BTreeSet<FieldPath> {
    fn walk(kind: &Kind, value: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        let Value::Object(m) = value else { return };
        if m.is_empty() {
            return;
        }
        if !prefix.is_empty()
            && prefix.as_slice() != ["metadata"]
            && !crate::server::builtin::is_value_struct(kind, prefix)
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
pub(super) fn record_update(
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
pub(super) fn applied_part(kind: &Kind, subresource: Subresource, config: &mut Object) -> Object {
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

pub(super) fn without_nulls(value: Value) -> Value {
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
pub(super) fn leaf_paths(config: &Object) -> BTreeSet<FieldPath> {
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
pub(super) fn value_at<'a>(value: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    path.iter()
        .filter(|k| *k != NODE)
        .try_fold(value, |v, k| v.get(k))
}

pub(super) fn remove_path(value: &mut Value, path: &FieldPath) {
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
pub(super) fn merge_config(target: &mut Value, config: &Value) {
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
pub(super) fn render_path(path: &FieldPath) -> String {
    path.iter().map(|k| format!(".{k}")).collect()
}

/// Owned leaf paths in the `FieldsV1` encoding: `{"f:spec": {"f:os": {}}}`.
pub(super) fn fields_v1(paths: &BTreeSet<FieldPath>) -> Value {
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
pub(super) fn read_managed(object: &Object) -> Vec<Managed> {
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
}
