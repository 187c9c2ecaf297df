//! The reference operator's input on a store: the model [`Cluster`] read from it through
//! [`crate::wire::read`]'s readers ([`read_cluster`]), and its inverse on a store
//! ([`write_mock`]), which writes a model cluster the way a mock kubelet, NFD and Device Manager
//! would leave it.

use model::cluster::{Cluster, Settings};
use serde_json::Value;

use crate::server::selector::Selector;
use crate::server::store::{DeleteOptions, Status, Store};
use crate::wire::kinds::{self, Kind};
use crate::wire::read::{cluster_from, mock_objects, name_of, ReadError};

/// Reads the cluster shape from the store (research/chain.md §17 inputs). Nodes and Namespaces
/// come in the store's (name) order; `settings` are the operator's flags.
pub fn read_cluster(store: &Store, settings: &Settings) -> Result<Cluster, ReadError> {
    cluster_from(settings, |kind| list(store, kind))
}

fn list(store: &Store, kind: &Kind) -> Result<Vec<Value>, ReadError> {
    store
        .list(kind, None, &Selector::everything())
        .map(|l| l.items)
        .map_err(|s| ReadError::List {
            kind: kind.kind,
            message: s.message,
        })
}

/// Writes [`mock_objects`] into `store` the way their writers would: each object created, a
/// status the create drops (kinds with a status subresource) written through `/status`, and a
/// deleting object deleted after its create (the apiserver ignores a `deletionTimestamp` sent on
/// create; the mock finalizer keeps the object, marked deleting).
pub fn write_mock(store: &mut Store, cluster: &Cluster) -> Result<(), Status> {
    for (kind, ns, o) in mock_objects(cluster) {
        write_object(store, &kind, ns.as_deref(), &o)?;
    }
    Ok(())
}

/// Writes one object as its writer would (see [`write_mock`]): create, the status through
/// `/status`, and a delete when it carries a `deletionTimestamp` (a finalizer keeps it).
pub fn write_object(
    store: &mut Store,
    kind: &Kind,
    ns: Option<&str>,
    o: &Value,
) -> Result<(), Status> {
    let mut created = store.create(kind, ns, o.clone())?;
    let status = o.get("status").filter(|s| !s.is_null());
    if let Some(status) = status.filter(|s| created.get("status") != Some(*s)) {
        if kind.has_status && *kind != kinds::NAMESPACE {
            created["status"] = status.clone();
            store.update_status(kind, ns, created)?;
        }
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        store.delete(kind, ns, &name_of(o), &DeleteOptions::default())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use model::cluster::Settings;
    use serde_json::json;

    use super::*;
    use crate::wire::read::tests::networked;
    use crate::wire::read::{devices_object, FIELD_MANAGER};

    #[test]
    fn a_label_patched_over_the_workers_apply_is_read_as_input() {
        use crate::server::store::{ApplyRequest, Patch, Subresource};
        let mut store = Store::default();
        let node = json!({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": "n", "labels": {"zone": "a"}}});
        let read = |store: &Store| {
            read_cluster(store, &Settings::default())
                .ok()
                .and_then(|c| c.nodes.into_iter().find(|n| n.name == "n"))
                .map(|n| n.labels)
                .unwrap_or_default()
        };
        assert!(store.create(&kinds::NODE, None, node).is_ok());
        let applied = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "labels": {"gpustack.ai/managed": "true"}}});
        let by_worker = store.apply(ApplyRequest {
            kind: &kinds::NODE,
            namespace: None,
            name: "n",
            subresource: Subresource::Main,
            config: applied,
            field_manager: FIELD_MANAGER,
            force: true,
        });
        assert!(by_worker.is_ok());
        // the worker's own label is its output, not input
        assert_eq!(read(&store).get("gpustack.ai/managed"), None);
        let patch = Patch::Merge(json!({"metadata": {"labels": {"gpustack.ai/managed": "false"}}}));
        let by_verify =
            store.patch_by(&kinds::NODE, None, "n", Subresource::Main, &patch, "verify");
        assert!(by_verify.is_ok());
        // verify's patch took the label: it is input now
        assert_eq!(
            read(&store)
                .get("gpustack.ai/managed")
                .map(model::labels::Text::as_str),
            Some("false")
        );
    }

    #[test]
    fn a_networked_cluster_passes_the_devices_crd_and_round_trips_through_the_store() {
        let c = networked();
        let node = c.nodes.iter().find(|n| !n.network.is_empty()).unwrap();
        let o = devices_object(&node.name, node.devices.as_ref().unwrap(), &node.network);
        // the object is one the Devices CRD admits without pruning a field
        let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/crds/worker.gpustack.ai_devices.yaml");
        match std::fs::read_to_string(&crd) {
            Err(e) => eprintln!("skipped the CRD check: {}: {e}", crd.display()),
            Ok(text) => {
                let crd: Value = serde_norway::from_str(&text).unwrap();
                let schema = crate::server::structural::crd_schema(&crd, None).unwrap();
                assert_eq!(
                    crate::server::structural::validate(schema, &o).as_ref(),
                    Ok(&o)
                );
            }
        }
        // through the store and back
        let mut store = Store::default();
        assert_eq!(write_mock(&mut store, &c), Ok(()));
        let read = read_cluster(&store, &c.settings).unwrap();
        let back = read.nodes.iter().find(|n| n.name == node.name).unwrap();
        assert_eq!(back.network, node.network);
    }

    #[test]
    fn the_twins_operator_labels_the_node_with_rdma_and_fabric() {
        let c = networked();
        let node = c.nodes.iter().find(|n| !n.network.is_empty()).unwrap();
        let mut store = Store::default();
        assert_eq!(write_mock(&mut store, &c), Ok(()));
        crate::operator::reconcile(&mut store, &c.settings, None).unwrap();
        let o = store
            .get(&kinds::NODE, None, &node.name)
            .expect("the node is there");
        let labels = &o["metadata"]["labels"];
        assert_eq!(labels[model::rdma::RDMA_CAPABLE], json!("true"));
        assert_eq!(labels[model::rdma::RDMA_NUMA], json!("0_1"));
        assert_eq!(labels[model::rdma::RDMA_DISTANCE], json!("PIX"));
        assert_eq!(
            labels[model::rdma::FABRIC_DOMAIN],
            json!("nvlink-0123456789abcdef0123456789abcdef-0")
        );
        // the derivation the twin made agrees with the model's
        let model_labels = model::derive::derive(&c)
            .nodes
            .into_iter()
            .find(|n| n.name == node.name)
            .unwrap()
            .labels;
        for (k, v) in model_labels
            .iter()
            .filter(|(k, _)| model::rdma::is_rdma_or_fabric_label(k))
        {
            assert_eq!(labels[k.as_str()], json!(v), "{k}");
        }
    }
}
