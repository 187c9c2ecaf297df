//! The twin's validators from CRD schemas: the project's own ([`install_validators`], the typed
//! resources of [`crate::crd`]) or the real CRDs in shared/crds ([`install_shared_validators`]),
//! and the CRD objects themselves as a cluster lists them ([`install_crd_objects`]).

use super::status::Status;
use super::store::Store;
use super::structural;
use crate::crd::{own_crds, own_schema, shared_crd, SharedCrdError};
use crate::wire::kinds;

/// Replaces the twin's validators (and printer columns) with the real CRDs' from [`shared_crds_dir`] for
/// every custom kind that has one there, as `scripts/kube start` installs the real CRDs and the
/// project's own only where those are missing. Returns how many it installed.
pub fn install_shared_validators(store: &mut Store) -> Result<usize, SharedCrdError> {
    let mut installed = 0;
    for kind in kinds::ALL.iter().filter(|k| k.is_custom()) {
        let crd = match shared_crd(kind) {
            Ok(crd) => crd,
            Err(SharedCrdError::Unreadable { .. }) => continue,
            Err(e) => return Err(e),
        };
        if let Some(schema) = structural::crd_schema(&crd, None) {
            store.set_validator(kind, structural::validator(schema.clone()));
            store.set_printer_columns(kind, super::table::crd_printer_columns(&crd));
            installed += 1;
        }
    }
    Ok(installed)
}

/// Writes the CRD object of every chain kind the twin serves, as a real cluster lists the
/// CRDs `scripts/kube start` installed: the real one from [`shared_crds_dir`] when
/// `from_shared` and it is there, else the project's own. Each is established at once and
/// serves its kind as before (its schema becomes the kind's validator, so pass the same
/// `from_shared` as the validators were installed with). A CRD already stored is left as it
/// is. Returns how many it wrote.
pub fn install_crd_objects(store: &mut Store, from_shared: bool) -> Result<usize, Status> {
    let crd_kind = kinds::CUSTOM_RESOURCE_DEFINITION;
    let mut written = 0;
    for (kind, own) in own_crds() {
        if !store.kinds().contains(&kind) {
            continue;
        }
        let name = kind.qualified_resource();
        if store.get(&crd_kind, None, &name).is_ok() {
            continue;
        }
        let shared = if from_shared {
            shared_crd(&kind).ok()
        } else {
            None
        };
        let object = match shared {
            Some(crd) => crd,
            None => {
                let mut crd = serde_json::to_value(&own)
                    .map_err(|e| Status::bad_request(format!("the CRD of {name}: {e}")))?;
                // the real CRDs' short names and categories (the discovery tables carry
                // them), which the generated CRDs do not declare
                let short = super::discovery::short_names(&kind);
                let categories = super::discovery::categories(&kind);
                if let Some(names) = crd
                    .pointer_mut("/spec/names")
                    .and_then(serde_json::Value::as_object_mut)
                {
                    if !short.is_empty() {
                        names.insert("shortNames".into(), serde_json::json!(short));
                    }
                    if !categories.is_empty() {
                        names.insert("categories".into(), serde_json::json!(categories));
                    }
                }
                crd
            }
        };
        store.create_by(&crd_kind, None, object, "verify")?;
        written += 1;
    }
    Ok(written)
}

/// Installs the project's own schemas as the twin's validators, so whatever verify writes is
/// checked (and pruned) against the types it reads back with.
pub fn install_validators(store: &mut Store) {
    for (kind, crd) in own_crds() {
        if let Some(schema) = own_schema(&crd) {
            store.set_validator(&kind, structural::validator(schema));
        }
        if let Ok(value) = serde_json::to_value(&crd) {
            store.set_printer_columns(&kind, super::table::crd_printer_columns(&value));
        }
    }
    // Pods (core, no CRD): the apiserver's checks on what a charging Pod carries
    super::pods::install_validator(store);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::selector::Selector;
    use crate::wire::kinds::Kind;

    #[test]
    fn the_chain_crds_are_listed_as_established_objects_and_serve_as_before() {
        let mut store = Store::default();
        install_validators(&mut store);
        let before: Vec<Kind> = store.kinds().to_vec();
        let written = install_crd_objects(&mut store, false);
        assert_eq!(written.map_err(|s| s.message), Ok(own_crds().len()));
        assert_eq!(store.kinds(), before.as_slice());
        let crd_kind = kinds::CUSTOM_RESOURCE_DEFINITION;
        let listed = store.list(&crd_kind, None, &Selector::default());
        let names: Vec<String> = listed
            .map(|l| l.to_value(&crd_kind))
            .ok()
            .and_then(|v| v["items"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        assert!(names.contains(&"instancetypes.worker.gpustack.ai".to_string()));
        let it = store.get(&crd_kind, None, "instancetypes.worker.gpustack.ai");
        let it = it.unwrap_or_default();
        assert!(crate::server::crds::has_condition(&it, "Established"));
        // discovery keeps the real CRDs' short names
        let doc = crate::server::discovery::api_resource_list_named(
            store.kinds(),
            "kueue.x-k8s.io",
            "v1beta2",
            |k| store.runtime_names(k),
        )
        .unwrap_or_default();
        let workloads = doc["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == "workloads")
            .cloned()
            .unwrap_or_default();
        assert_eq!(workloads["shortNames"][0], "kwl");
        // installing again writes nothing
        assert_eq!(install_crd_objects(&mut store, false).ok(), Some(0));
    }
}
