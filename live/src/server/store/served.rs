//! The kinds a store serves beyond its built-ins: each CRD established and its kind served
//! (validated by its schema, listed with its printer columns), unserved when it goes, and the
//! aggregator's APIService objects kept in step with the served groups.

use super::*;

impl Store {
    /// The apiextensions-apiserver's controllers on CRD `name`: a live CRD has its names
    /// accepted, then is established, then its kinds are served (each step one status
    /// write by `kube-apiserver`, as on a real server); a CRD being deleted has its custom
    /// objects deleted and its kinds unserved, then loses the cleanup finalizer (and goes,
    /// when it was the last); a CRD gone leaves no kind behind.
    pub(super) fn reconcile_crd(&mut self, name: &str) {
        let crd_kind = crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION;
        let Ok(crd) = self.get(&crd_kind, None, name) else {
            return;
        };
        let deleting = crd.pointer("/metadata/deletionTimestamp").is_some();
        if deleting {
            let held = crd
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| {
                    f.iter()
                        .any(|x| x == crate::server::crds::CLEANUP_FINALIZER)
                });
            if held {
                self.unserve_crd(&crd);
                let mut released = crd.clone();
                if let Some(f) = released
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    f.retain(|x| x != crate::server::crds::CLEANUP_FINALIZER);
                }
                let _ = self.update_by(
                    &crd_kind,
                    None,
                    released,
                    crate::server::crds::SERVER_MANAGER,
                );
            }
            return;
        }
        let now = self.stamp();
        if let Some(status) = crate::server::crds::next_status(&crd, &now) {
            let mut next = crd.clone();
            next["status"] = status;
            // each step re-enters here through `after_write` and takes the next one
            let _ =
                self.update_status_by(&crd_kind, None, next, crate::server::crds::SERVER_MANAGER);
            return;
        }
        self.serve_crd(&crd);
    }

    /// Serves the kinds of an established CRD (replacing what it served before), validated
    /// by its storage version's schema, listed with its printer columns.
    pub(super) fn serve_crd(&mut self, crd: &Value) {
        let kinds = crate::server::crds::served_kinds(crd);
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
        if let Some(schema) = crate::server::structural::crd_schema(crd, None) {
            self.set_validator(&first, crate::server::structural::validator(schema.clone()));
        }
        self.set_printer_columns(&first, crate::server::table::crd_printer_columns(crd));
        let list = |p: &str| -> Vec<String> {
            crd.pointer(p)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let names = crate::server::discovery::Names {
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
    pub fn runtime_names(&self, kind: &Kind) -> Option<crate::server::discovery::Names> {
        self.crd_names.get(&(kind.group, kind.kind)).cloned()
    }

    /// Deletes every object of the CRD's kind (each a DELETED event) and stops serving it.
    pub(super) fn unserve_crd(&mut self, crd: &Value) {
        let kinds = crate::server::crds::served_kinds(crd);
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
    pub(super) fn sync_api_services(&mut self) {
        let kind = crate::wire::kinds::API_SERVICE;
        if !self.api_services || self.dry || !self.kinds.contains(&kind) {
            return;
        }
        let wanted: Vec<Value> = crate::server::apiservices::wanted(&self.kinds);
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
                    && crate::server::apiservices::is_automanaged(o)
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
            let owner = Ownership::Update(crate::server::crds::SERVER_MANAGER);
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
    pub(super) fn delete_crd(&mut self, key: &Key, current: Object) -> Deleted {
        let crd_kind = crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION;
        let mut marked = current.clone();
        let now = self.stamp();
        let mut m = take_meta(&mut marked);
        m.insert("deletionTimestamp".into(), Value::String(now.clone()));
        let mut held = finalizers(&current);
        if !held
            .iter()
            .any(|f| f == crate::server::crds::CLEANUP_FINALIZER)
        {
            held.push(Value::String(crate::server::crds::CLEANUP_FINALIZER.into()));
        }
        m.insert("finalizers".into(), Value::Array(held));
        marked.insert("metadata".into(), Value::Object(m));
        if let Some(conditions) = marked
            .get_mut("status")
            .and_then(|s| s.get_mut("conditions"))
        {
            let mut list = conditions.as_array().cloned().unwrap_or_default();
            list.push(crate::server::crds::terminating_condition(&now));
            *conditions = Value::Array(list);
        }
        let stored = self.commit(&crd_kind, key, Some(marked), Some(current));
        self.after_write(&crd_kind, key);
        Deleted::Finalizing(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_serves_its_names_until_it_is_deleted() {
        let kind = crate::wire::kinds::DEVICES;
        let mut store = Store::default();
        assert_eq!(store.runtime_names(&kind), None);
        let crd = serde_json::to_value(<crate::crd::Devices as kube::CustomResourceExt>::crd())
            .expect("the CRD serialises");
        let crd_kind = crate::wire::kinds::CUSTOM_RESOURCE_DEFINITION;
        assert!(store.create(&crd_kind, None, crd).is_ok());
        let names = store.runtime_names(&kind).map(|n| n.singular);
        assert_eq!(names.as_deref(), Some("devices"));
        let name = kind.qualified_resource();
        assert!(store
            .delete(&crd_kind, None, &name, &DeleteOptions::default())
            .is_ok());
        assert_eq!(store.runtime_names(&kind), None);
        assert!(store.get(&crd_kind, None, &name).is_err());
    }
}
