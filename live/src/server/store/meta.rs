//! What the store keeps in `metadata` beyond the versions: finalizers and deletion, garbage
//! collection by owner references, the Namespace's finalizer, name label and ServiceAccount, and
//! the watch history (events seen through a label selector, 410 Gone past the kept history).

use super::*;

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

impl Store {
    /// A Namespace's deletion (none of its own finalizers left): the apiserver marks it
    /// Terminating (deletionTimestamp, `status.phase`), the answer the client gets; the
    /// namespace controller then deletes everything in it and finalizes it. The twin's
    /// controller is instant: the contents and the Namespace are gone when the answer is sent.
    pub(super) fn terminate_namespace(&mut self, key: &Key, current: Object) -> Deleted {
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

    /// The serviceaccount controller's `default` ServiceAccount in a new namespace: written
    /// through a typed client that sends no managed fields, so it carries none.
    pub(super) fn default_service_account(&mut self, namespace: &str) {
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

    /// The garbage collector's part once `gone` has left the store (kube-controller-manager's
    /// garbagecollector; the Kubernetes "Garbage Collection" and "Owners and Dependents"
    /// pages): a dependent naming `gone`'s uid in `ownerReferences` whose other owners are all
    /// gone too is deleted (which collects its own dependents), one with a remaining owner
    /// loses only the dangling reference; with `orphan` every dependent is kept and loses the
    /// reference. Foreground deletion is collected like background here: the twin has no
    /// clock between the two, so dependents go in the same call either way.
    pub(super) fn collect_dependents(&mut self, gone: &Value, orphan: bool) {
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
}

/// The owners' uids an object names in `metadata.ownerReferences`.
pub(super) fn owner_uids(o: &Object) -> Vec<String> {
    o.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The event a watcher with `selector` sees for a recorded write, if any.
pub(super) fn seen_through(r: &Recorded, selector: &Selector) -> Option<WatchEvent> {
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

pub(super) fn finalizers(object: &Object) -> Vec<Value> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// 422 when a deleting object gains a finalizer (ObjectMeta validation).
pub(super) fn check_finalizers_while_deleting(
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

/// The `kubernetes.io/metadata.name` label the apiserver sets on every write of a Namespace
/// (owned by the writer, as kube-apiserver 1.37 records it).
pub(super) fn prepare_namespace(kind: &Kind, object: &mut Object) {
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
pub(super) fn namespace_finalizer(object: &mut Object) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Object {
        into_object(v).unwrap_or_default()
    }

    #[test]
    fn owners_and_finalizers_are_read_from_metadata() {
        let o = object(json!({"metadata": {
            "ownerReferences": [{"uid": "a"}, {"name": "no-uid"}, {"uid": "b"}],
            "finalizers": ["x"]}}));
        assert_eq!(owner_uids(&o), ["a", "b"]);
        assert_eq!(finalizers(&o), [json!("x")]);
        assert!(owner_uids(&Object::new()).is_empty());
        assert!(finalizers(&Object::new()).is_empty());
    }

    #[test]
    fn a_deleting_object_may_drop_finalizers_but_not_gain_one() {
        let kind = crate::wire::kinds::NODE;
        let with = |f: Value| object(json!({"metadata": {"finalizers": f}}));
        let deleting = object(json!({"metadata": {
            "deletionTimestamp": "2025-01-01T00:00:00Z", "finalizers": ["a", "b"]}}));
        let dropped = check_finalizers_while_deleting(&kind, "n", &deleting, &with(json!(["a"])));
        assert_eq!(dropped, Ok(()));
        let gained =
            check_finalizers_while_deleting(&kind, "n", &deleting, &with(json!(["a", "c"])));
        assert_eq!(gained.map_err(|s| s.http_code()), Err(422));
        let live = with(json!([]));
        assert_eq!(
            check_finalizers_while_deleting(&kind, "n", &live, &with(json!(["c"]))),
            Ok(())
        );
    }

    #[test]
    fn a_watcher_sees_an_object_leave_and_enter_its_selector() {
        let selector = Selector::parse("app=a", "").expect("a selector");
        let labelled = |app: &str| json!({"metadata": {"name": "p", "labels": {"app": app}, "resourceVersion": "1"}});
        let modified = |before: &str, now: &str| Recorded {
            resource_version: 7,
            group: "",
            kind: "Pod",
            namespace: "ns".into(),
            event_type: EventType::Modified,
            object: labelled(now),
            previous: Some(labelled(before)),
        };
        let seen = |r: &Recorded| seen_through(r, &selector).map(|e| (e.event_type, e.object));
        assert_eq!(
            seen(&modified("a", "a")).map(|e| e.0),
            Some(EventType::Modified)
        );
        assert_eq!(
            seen(&modified("b", "a")).map(|e| e.0),
            Some(EventType::Added)
        );
        assert_eq!(seen(&modified("b", "b")), None);
        // leaving: the previous state, at the event's resourceVersion
        let left = seen(&modified("a", "b")).expect("an event");
        assert_eq!(left.0, EventType::Deleted);
        assert_eq!(left.1["metadata"]["labels"]["app"], json!("a"));
        assert_eq!(left.1["metadata"]["resourceVersion"], json!("7"));
    }
}
