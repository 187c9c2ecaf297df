//! Typed custom resources: the fields verify writes and reads of each kind on the chain, as
//! kube `CustomResource`s. Their generated CRDs ([`own_crds`]) are the project's own structural
//! schemas: `tests/own_schemas.rs` checks them against the real CRDs in shared/crds, and the
//! embedded twin validates with them ([`install_validators`]).

pub mod kueue;
pub mod nfd;
pub mod topology;
pub mod worker;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor, Workload};
pub use nfd::NodeFeature;
pub use topology::{Topology, TopologySource};
pub use worker::{Devices, InstanceType};

use crate::server::store::Store;
use crate::server::structural;
use crate::wire::kinds::{self, Kind};

/// Where the real CRDs are read from in tests: `$VERIFY_CRDS_DIR`, else `../shared/crds`
/// beside the workspace (data only, never copied into the repository).
pub fn shared_crds_dir() -> std::path::PathBuf {
    std::env::var_os("VERIFY_CRDS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/crds")
        })
}

/// Why a real CRD could not be had from [`shared_crds_dir`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharedCrdError {
    /// The file is not there (tests skip, printing this).
    #[error("cannot read {path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path} does not parse: {message}")]
    Malformed { path: String, message: String },
}

/// The real CRD of `kind` (`<group>_<plural>.yaml` in [`shared_crds_dir`]) as JSON.
pub fn shared_crd(kind: &Kind) -> Result<serde_json::Value, SharedCrdError> {
    let path = shared_crds_dir().join(format!("{}_{}.yaml", kind.group, kind.plural));
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| SharedCrdError::Unreadable {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    serde_norway::from_str(&text).map_err(|e| SharedCrdError::Malformed {
        path: shown,
        message: e.to_string(),
    })
}

/// Every typed custom resource's generated CRD, with the twin kind it serves.
pub fn own_crds() -> Vec<(Kind, CustomResourceDefinition)> {
    vec![
        (kinds::NODE_FEATURE, NodeFeature::crd()),
        (kinds::DEVICES, Devices::crd()),
        (kinds::INSTANCE_TYPE, InstanceType::crd()),
        (kinds::TOPOLOGY_SOURCE, TopologySource::crd()),
        (kinds::TOPOLOGY, Topology::crd()),
        (kinds::RESOURCE_FLAVOR, ResourceFlavor::crd()),
        (kinds::CLUSTER_QUEUE, ClusterQueue::crd()),
        (kinds::LOCAL_QUEUE, LocalQueue::crd()),
        (kinds::ADMISSION_CHECK, AdmissionCheck::crd()),
        (kinds::WORKLOAD, Workload::crd()),
    ]
}

/// The `openAPIV3Schema` of a generated CRD's (only) version, as JSON.
pub fn own_schema(crd: &CustomResourceDefinition) -> Option<serde_json::Value> {
    let value = serde_json::to_value(crd).ok()?;
    structural::crd_schema(&value, None).cloned()
}

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
            store.set_printer_columns(kind, crate::server::table::crd_printer_columns(&crd));
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
pub fn install_crd_objects(
    store: &mut Store,
    from_shared: bool,
) -> Result<usize, crate::server::status::Status> {
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
                let mut crd = serde_json::to_value(&own).map_err(|e| {
                    crate::server::status::Status::bad_request(format!("the CRD of {name}: {e}"))
                })?;
                // the real CRDs' short names and categories (the discovery tables carry
                // them), which the generated CRDs do not declare
                let short = crate::server::discovery::short_names(&kind);
                let categories = crate::server::discovery::categories(&kind);
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
            store.set_printer_columns(&kind, crate::server::table::crd_printer_columns(&value));
        }
    }
    // Pods (core, no CRD): the apiserver's checks on what a charging Pod carries
    crate::wire::pod::install_validator(store);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::selector::Selector;

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
