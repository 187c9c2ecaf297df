//! Writing a model cluster into a cluster as the mocks a kubelet, NFD and the Device Manager
//! would leave (research/devices.md §2.4): the objects come from the twin's own conversion
//! (`wire::read::mock_objects`), each labelled with the run, plus a NodeFeature per Node tied
//! by `nfd.node.kubernetes.io/node-name`, and fake Nodes tainted so no real Pod lands.
//! [`Client::sync`] moves the cluster from one shape to the next with the fewest writes.

use std::collections::BTreeMap;

use model::cluster::{Cluster, Namespace};
use model::nodefeature::accelerator_node_labels;
use serde_json::{json, Map, Value};

use super::scoped::describe;
use super::{Client, ClientError, RunId, MOCK_TAINT, RUN_LABEL};
use crate::crd::nfd::NODE_NAME_LABEL;
use crate::wire::kinds::{self, Kind};
use crate::wire::read::{mock_objects, name_of};

/// The cluster as the run writes it, which is what the model must be asked about: every node
/// carries the run label, the system namespace (home of the mocked NodeFeatures) exists, and
/// there is no foreign ClusterQueue.
pub fn mocked_cluster(cluster: &Cluster, run: &RunId) -> Cluster {
    mocked_cluster_keeping(cluster, run, &std::collections::BTreeSet::new())
}

/// [`mocked_cluster`], leaving the real nodes `kept` as they are (no run label on them).
pub fn mocked_cluster_keeping(
    cluster: &Cluster,
    run: &RunId,
    kept: &std::collections::BTreeSet<String>,
) -> Cluster {
    let mut c = cluster.clone();
    // no foreign ClusterQueue is created on a real cluster: the operator would give it a
    // LocalQueue in every namespace, objects the run does not own (DESIGN.md safety rules)
    c.foreign_queues.clear();
    for node in c.nodes.iter_mut().filter(|n| !kept.contains(&n.name)) {
        node.labels.insert(RUN_LABEL.into(), run.as_str().into());
    }
    let system = c.settings.system_namespace.clone();
    if !c.namespaces.iter().any(|n| n.name == system) {
        c.namespaces.push(Namespace {
            name: system,
            terminating: false,
        });
    }
    c
}

/// One object a run writes: kind, namespace, body.
type Mocked = (Kind, Option<String>, Value);

/// The objects for `cluster` (already [`mocked_cluster`]), each with the run label; Nodes
/// tainted; a NodeFeature per Node in the system namespace carrying the Node's labels and,
/// for a node with Devices, the Device Manager's accelerator labels.
pub fn run_objects(cluster: &Cluster, run: &RunId) -> Vec<Mocked> {
    let mut out = Vec::new();
    // NodeFeatures live in the system namespace; a scenario that deletes it takes them along
    let system = &cluster.settings.system_namespace;
    let features = cluster
        .namespaces
        .iter()
        .any(|n| &n.name == system && !n.terminating);
    for (kind, ns, mut o) in mock_objects(cluster) {
        o["metadata"]["labels"][RUN_LABEL] = json!(run.as_str());
        if kind == kinds::NODE {
            o["spec"] = json!({"taints": [
                {"key": MOCK_TAINT, "value": run.as_str(), "effect": "NoSchedule"}
            ]});
            let node = name_of(&o);
            // what NFD's worker and, for a node with Devices, the Device Manager would report
            // (no DM runs on a fake node: the mock recipe's step 1, devices.md §2.4)
            let mut labels = o["metadata"]["labels"].clone();
            let modelled = cluster.nodes.iter().find(|n| n.name == node);
            let devices = modelled.and_then(|n| n.devices.as_ref());
            if let (Some(devices), Some(map)) = (devices, labels.as_object_mut()) {
                // the DM's NodeFeature also carries the RDMA and fabric labels (rdma.go)
                let network = modelled.map(|n| &n.network).cloned().unwrap_or_default();
                let dm = accelerator_node_labels(devices)
                    .into_iter()
                    .chain(model::rdma::network_node_labels(devices, &network));
                for (k, v) in dm {
                    map.insert(k.to_string(), json!(v));
                }
            }
            out.push((kind, ns, o));
            if !features {
                continue;
            }
            out.push((
                kinds::NODE_FEATURE,
                Some(cluster.settings.system_namespace.clone()),
                json!({
                    "apiVersion": kinds::NODE_FEATURE.api_version(), "kind": "NodeFeature",
                    "metadata": {
                        "name": format!("{node}-verify"),
                        "labels": {NODE_NAME_LABEL: node, RUN_LABEL: run.as_str()},
                    },
                    "spec": {"labels": labels},
                }),
            ));
        } else {
            if kind == kinds::POD {
                // a charging Pod is bound to a fake Node, whose mock taint it must tolerate
                if let Some(t) = o["spec"]["tolerations"].as_array_mut() {
                    t.push(json!({"key": MOCK_TAINT, "operator": "Equal", "value": run.as_str(), "effect": "NoSchedule"}));
                }
            }
            out.push((kind, ns, o));
        }
    }
    out
}

fn key(o: &Mocked) -> (String, Option<String>, String) {
    (o.0.kind.to_string(), o.1.clone(), name_of(&o.2))
}

/// `patch` that turns `old` into `new` under JSON merge patch (keys only in `old` → null).
fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = Map::new();
            for (k, v) in b {
                match a.get(k) {
                    Some(x) if x == v => {}
                    Some(x) => {
                        out.insert(k.clone(), merge_patch(x, v));
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.insert(k.clone(), Value::Null);
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

impl Client {
    /// Writes `cluster` (see [`mocked_cluster`]) from nothing.
    pub async fn mock(&self, cluster: &Cluster, run: &RunId) -> Result<usize, ClientError> {
        self.sync(None, cluster, run).await
    }

    /// Moves the mocks from `from` (what the run wrote last; `None` = nothing) to `to`:
    /// creates, patches (main resource, then `/status`) and deletes only what differs.
    /// InstanceTypes are create-only (chain.md §8.4). Returns the writes made.
    pub async fn sync(
        &self,
        from: Option<&Cluster>,
        to: &Cluster,
        run: &RunId,
    ) -> Result<usize, ClientError> {
        // Existing InstanceTypes are mocked once, at the start: later ones in a model cluster
        // are those the operator authored (model::events::World remembers them).
        let initial = from.is_none();
        let kept = |o: &Mocked| {
            let name = name_of(&o.2);
            (o.0 == kinds::NAMESPACE && self.kept_namespaces.contains(&name))
                || (o.0 == kinds::NODE && self.kept_nodes.contains(&name))
        };
        let mine = |o: &Mocked| (initial || o.0 != kinds::INSTANCE_TYPE) && !kept(o);
        let old: BTreeMap<_, Mocked> = from
            .map(|c| run_objects(c, run))
            .unwrap_or_default()
            .into_iter()
            .filter(mine)
            .map(|o| (key(&o), o))
            .collect();
        let new: Vec<Mocked> = run_objects(to, run).into_iter().filter(mine).collect();
        let mut writes = 0;
        for o in &new {
            writes += match old.get(&key(o)) {
                None => self.create_mock(o).await?,
                Some(before) if before.2 == o.2 => 0,
                Some(before) => self.update_mock(before, o).await?,
            };
        }
        let kept: Vec<_> = new.iter().map(key).collect();
        // A leaving node goes first, then what hangs off it: its Devices gone first would
        // make it a CPU node for a moment (and Devices of a gone Node are garbage anyway).
        let mut gone: Vec<&Mocked> = old.values().filter(|o| !kept.contains(&key(o))).collect();
        gone.sort_by_key(|o| o.0 != kinds::NODE);
        for o in gone {
            let name = name_of(&o.2);
            let ns = o.1.as_deref();
            if o.2.pointer("/metadata/deletionTimestamp").is_some() {
                // mocked as deleting: its only finalizer is the mock's, which now lets it go
                let release = json!({"metadata": {"finalizers": null}});
                crate::with_type!(o.0, K => self.merge::<K>(ns, &name, &release).await.map(|_| ())?, _ => ());
                writes += 1;
            }
            crate::with_type!(o.0, K => self.delete::<K>(ns, &name).await?, _ => ());
            writes += 1;
        }
        Ok(writes)
    }

    /// Create; a status the create drops goes through `/status`; a deleting object is deleted
    /// after its create (its mock finalizer keeps it, marked deleting).
    async fn create_mock(&self, (kind, ns, o): &Mocked) -> Result<usize, ClientError> {
        let ns = ns.as_deref();
        let name = name_of(o);
        let unknown = || ClientError::Object {
            object: describe(kind.kind, ns, &name),
            message: "verify has no type for this kind".into(),
        };
        crate::with_type!(kind, K => self.create::<K>(ns, o.clone()).await.map(|_| ())?, _ => return Err(unknown()));
        let mut writes = 1;
        let status = o.get("status").filter(|s| !s.is_null());
        if let Some(status) = status.filter(|_| kind.has_status && *kind != kinds::NAMESPACE) {
            crate::with_type!(kind, K => self.merge_status::<K>(ns, &name, status).await.map(|_| ())?, _ => ());
            writes += 1;
        }
        if o.pointer("/metadata/deletionTimestamp").is_some() {
            crate::with_type!(kind, K => self.delete::<K>(ns, &name).await?, _ => ());
            writes += 1;
        }
        Ok(writes)
    }

    /// Patch the main resource (labels, annotations, spec) and `/status` where they changed.
    async fn update_mock(&self, before: &Mocked, after: &Mocked) -> Result<usize, ClientError> {
        let (kind, ns, o) = after;
        let ns = ns.as_deref();
        let name = name_of(o);
        let mut writes = 0;
        let main = |v: &Value| {
            json!({
                "metadata": {
                    "labels": v.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                    "annotations": v.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
                },
                "spec": v.get("spec").cloned().unwrap_or(Value::Null),
            })
        };
        let patch = merge_patch(&main(&before.2), &main(o));
        if patch.as_object().is_some_and(|m| !m.is_empty()) {
            crate::with_type!(kind, K => self.merge::<K>(ns, &name, &patch).await.map(|_| ())?, _ => ());
            writes += 1;
        }
        let status = |v: &Value| v.get("status").cloned().unwrap_or(Value::Null);
        if status(&before.2) != status(o) && *kind != kinds::NAMESPACE {
            crate::with_type!(kind, K => self.merge_status::<K>(ns, &name, &status(o)).await.map(|_| ())?, _ => ());
            writes += 1;
        }
        Ok(writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_patch_nulls_what_went_and_keeps_what_stayed_out() {
        let old = json!({"labels": {"a": "1", "b": "2"}, "spec": {"x": 1}});
        let new = json!({"labels": {"a": "1", "c": "3"}, "spec": {"x": 2}});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"labels": {"b": null, "c": "3"}, "spec": {"x": 2}})
        );
        assert_eq!(merge_patch(&old, &old), json!({}));
    }

    #[test]
    fn every_object_carries_the_run_and_each_node_a_node_feature() {
        let run = RunId::new("r1").expect("valid");
        let cluster = mocked_cluster(&model::examples::walkthrough(), &run);
        let objects = run_objects(&cluster, &run);
        assert!(objects
            .iter()
            .all(|(_, _, o)| o["metadata"]["labels"][RUN_LABEL] == json!("r1")));
        let features: Vec<_> = objects
            .iter()
            .filter(|(k, _, _)| *k == kinds::NODE_FEATURE)
            .collect();
        assert_eq!(features.len(), cluster.nodes.len());
        assert!(features
            .iter()
            .all(|(_, ns, _)| ns.as_deref() == Some(cluster.settings.system_namespace.as_str())));
        assert!(cluster
            .namespaces
            .iter()
            .any(|n| n.name == cluster.settings.system_namespace));
    }

    #[test]
    fn a_node_with_devices_reports_its_accelerator_labels_through_its_node_feature() {
        let run = RunId::new("r1").expect("valid");
        let cluster = mocked_cluster(&model::examples::walkthrough(), &run);
        let objects = run_objects(&cluster, &run);
        for node in &cluster.nodes {
            let feature = objects
                .iter()
                .find(|(k, _, o)| {
                    *k == kinds::NODE_FEATURE
                        && o["metadata"]["name"] == json!(format!("{}-verify", node.name))
                })
                .expect("a NodeFeature per node");
            let labels = feature.2["spec"]["labels"].as_object().expect("labels");
            let wanted = node
                .devices
                .as_ref()
                .map(accelerator_node_labels)
                .unwrap_or_default();
            assert_eq!(node.devices.is_some(), !wanted.is_empty());
            for (k, v) in wanted {
                assert_eq!(
                    labels.get(k.as_str()),
                    Some(&json!(v)),
                    "{}: {k}",
                    node.name
                );
            }
        }
    }
}
