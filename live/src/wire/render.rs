//! The reference operator's output side: a model [`Derived`] rendered as the Kubernetes JSON the
//! real operator writes, field names exactly as the CRDs in shared/crds (research/chain.md §6.3,
//! §8–§11). No rule is decided here: every value comes from the derivation.

use model::credits::Quantity;
use model::derive::{Derived, DerivedNode};
use model::detail::{ACCELERATOR_CPU_FIELDS, CPU_CACHE_FIELDS, CPU_FIELDS};
use model::labels::Labels;
use model::objects::{
    ClusterQueue, Detail, InstanceType, LocalQueue, PartitionView, Phase, ResourceFlavor,
    ResourceView, StopPolicy, Topology,
};
use serde_json::{json, Map, Value};

use super::kinds::{self, Kind};

/// One rendered object: its kind, namespace (namespaced kinds only) and body.
pub type Rendered = (Kind, Option<String>, Value);

/// Every object of `derived`: Node label sets first, then Topologies, ResourceFlavors,
/// InstanceTypes, ClusterQueues and LocalQueues (the order the chain creates them in).
pub fn render(derived: &Derived) -> Vec<Rendered> {
    let mut out: Vec<Rendered> = derived
        .nodes
        .iter()
        .map(|n| (kinds::NODE, None, node_labels(n)))
        .collect();
    out.extend(render_besides_nodes(derived));
    out
}

/// [`render`]'s objects but the Node label sets: the objects the operator creates.
pub fn render_besides_nodes(derived: &Derived) -> Vec<Rendered> {
    let mut out: Vec<Rendered> = Vec::new();
    out.extend(
        derived
            .topologies
            .iter()
            .map(|t| (kinds::TOPOLOGY, None, topology(t))),
    );
    out.extend(
        derived
            .resource_flavors
            .iter()
            .map(|rf| (kinds::RESOURCE_FLAVOR, None, resource_flavor(rf))),
    );
    out.extend(derived.instance_types.iter().map(|it| {
        (
            kinds::INSTANCE_TYPE,
            None,
            instance_type(it, queue_stop_policy(derived, it)),
        )
    }));
    out.extend(
        derived
            .cluster_queues
            .iter()
            .map(|cq| (kinds::CLUSTER_QUEUE, None, cluster_queue(cq))),
    );
    out.extend(derived.local_queues.iter().map(|lq| {
        (
            kinds::LOCAL_QUEUE,
            Some(lq.namespace.to_string()),
            local_queue(lq),
        )
    }));
    out
}

fn meta(name: &str, labels: &Labels, annotations: &Labels) -> Value {
    let mut m = json!({"name": name});
    if !labels.is_empty() {
        m["labels"] = json!(labels);
    }
    if !annotations.is_empty() {
        m["annotations"] = json!(annotations);
    }
    m
}

/// An `ownerReferences[]` entry without its `uid`, which only the store knows: the writer
/// resolves it ([`crate::operator`]) before the object is sent. `blockOwnerDeletion` is left
/// out when false, as Go's `omitempty` pointer leaves it.
pub fn owner_reference(o: &model::objects::OwnerReference) -> Value {
    let mut r = json!({"apiVersion": o.api_version, "kind": o.kind, "name": o.name});
    if o.controller {
        r["controller"] = json!(true);
    }
    if o.block_owner_deletion {
        r["blockOwnerDeletion"] = json!(true);
    }
    r
}

/// The Node with the labels the Worker and Device Manager merge onto it (chain.md §2, rule 6).
pub fn node_labels(node: &DerivedNode) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node.labels},
    })
}

/// A generated Kueue Topology (devices.md §5): its type label and `spec.levels[].nodeLabel`.
pub fn topology(t: &Topology) -> Value {
    let levels: Vec<Value> = t.levels.iter().map(|l| json!({"nodeLabel": l})).collect();
    json!({
        "apiVersion": kinds::TOPOLOGY.api_version(), "kind": "Topology",
        "metadata": meta(&t.name, &t.labels, &Labels::new()),
        "spec": {"levels": levels},
    })
}

/// A Kueue ResourceFlavor (chain.md §6.3): nodeLabels, tolerations, topologyName (E3).
pub fn resource_flavor(rf: &ResourceFlavor) -> Value {
    let mut spec = json!({"nodeLabels": rf.node_labels, "tolerations": rf.tolerations});
    if let Some(t) = &rf.topology_name {
        spec["topologyName"] = json!(t);
    }
    json!({
        "apiVersion": kinds::RESOURCE_FLAVOR.api_version(), "kind": "ResourceFlavor",
        "metadata": meta(&rf.name, &rf.labels, &rf.annotations),
        "spec": spec,
    })
}

/// A canonical quantity (`resource.Quantity` marshals as its `String()`).
fn quantity(n: i64) -> Value {
    json!(Quantity::from_int(n).to_string())
}

fn view(v: &ResourceView) -> Value {
    json!({
        "onceMaxRequest": quantity(v.once_max_request),
        "remaining": quantity(v.remaining),
        "capacity": quantity(v.capacity),
    })
}

fn partition_view(p: &PartitionView) -> Value {
    let mut o = view(&p.view);
    o["allocatedProfiles"] = json!(p.allocated_profiles);
    o["remainingProfiles"] = json!(p.remaining_profiles);
    o
}

fn phase(p: Phase) -> &'static str {
    match p {
        Phase::Active => "Active",
        Phase::Inactive => "Inactive",
        Phase::Draining => "Draining",
        Phase::Transitioning => "Transitioning",
    }
}

/// `InstanceTypeDetail` (chain.md §9.5). The CPU note's fields go into `detail.cpu` on an
/// accelerated pool and inline into `detail` on a CPU pool (model::detail `foldDetailCPU`);
/// `cache.<f>` keys become the nested `cache` object.
fn detail(d: &Detail, acceleratable: bool) -> Value {
    let mut o = json!({
        "manufacturer": d.manufacturer, "product": d.product, "family": d.family,
        "memory": d.memory, "cores": d.cores,
        "runtimeVersion": d.runtime_version, "runtimeVersions": d.runtime_versions,
        "slicedDetail": {
            "logical": {
                "count": d.sliced_detail.logical.count,
                "coresPercentageOvercommit": d.sliced_detail.logical.cores_percentage_overcommit,
            },
            "physical": {
                "count": d.sliced_detail.physical.count,
                "profiles": d.sliced_detail.physical.profiles.iter().map(|p| {
                    let mut o = json!({"name": p.name, "count": p.count});
                    if let Some(m) = p.memory_mib {
                        o["memoryMib"] = json!(m);
                    }
                    o
                }).collect::<Vec<_>>(),
            },
        },
    });
    let cpu = cpu_fields(&d.cpu, acceleratable);
    if acceleratable {
        if !cpu.is_empty() {
            o["cpu"] = Value::Object(cpu);
        }
    } else if let Some(obj) = o.as_object_mut() {
        obj.extend(cpu);
    }
    o
}

fn cpu_fields(cpu: &Labels, acceleratable: bool) -> Map<String, Value> {
    let identity: &[&str] = if acceleratable {
        &ACCELERATOR_CPU_FIELDS
    } else {
        &[]
    };
    let mut out = Map::new();
    for key in identity.iter().chain(CPU_FIELDS.iter()) {
        if let Some(v) = cpu.get(key) {
            out.insert((*key).to_string(), json!(v));
        }
    }
    let cache: Map<String, Value> = CPU_CACHE_FIELDS
        .iter()
        .filter_map(|f| {
            cpu.get(format!("cache.{f}").as_str())
                .map(|v| ((*f).to_string(), json!(v)))
        })
        .collect();
    if !cache.is_empty() {
        out.insert("cache".into(), Value::Object(cache));
    }
    out
}

/// The StopPolicy of the pool's ClusterQueue (the InstanceType's name), when derived.
fn queue_stop_policy(derived: &Derived, it: &InstanceType) -> Option<StopPolicy> {
    let queue = derived.cluster_queues.iter().find(|q| q.name == it.name);
    queue.map(|q| q.stop_policy)
}

/// An InstanceType: spec as authored, status as computed (instance_type.go @01712e2;
/// chain.md §9). Views are quantities. `phaseMessage` is the model's
/// `phase_message::settled_phase_message` for the pool queue's StopPolicy (none without a queue).
pub fn instance_type(it: &InstanceType, stop_policy: Option<StopPolicy>) -> Value {
    let s = &it.status;
    let mut o = json!({
        "apiVersion": kinds::INSTANCE_TYPE.api_version(), "kind": "InstanceType",
        "metadata": meta(&it.name, &it.labels, &Labels::new()),
        "spec": it.spec,
        "status": {
            "detail": detail(&s.detail, it.spec.acceleratable),
            "entrance": s.entrance,
            "phase": phase(s.phase),
            "accelerator": view(&s.views.exclusive),
            "acceleratorShared": view(&s.views.shared),
            "acceleratorSliced": view(&s.views.sliced),
            "acceleratorPartitioned": partition_view(&s.views.partitioned),
            "cpu": view(&s.cpu),
        },
    });
    let message = stop_policy.map(model::phase_message::settled_phase_message);
    if let Some(m) = message.filter(|m| !m.is_empty()) {
        o["status"]["phaseMessage"] = json!(m);
    }
    o
}

/// A ClusterQueue (chain.md §10.1–10.2): isolated (no cohortName), the model's namespace
/// selector, fungibility and preemption (absent when the model leaves them unset), one resource
/// group, checks through `admissionChecksStrategy` (Kueue v1beta2 has no plain `admissionChecks`
/// list).
pub fn cluster_queue(cq: &ClusterQueue) -> Value {
    let groups: Vec<Value> = cq
        .resource_groups
        .iter()
        .map(|g| {
            let flavors: Vec<Value> = g
                .flavors
                .iter()
                .map(|f| {
                    let resources: Vec<Value> = g
                        .covered_resources
                        .iter()
                        .map(|r| json!({"name": r, "nominalQuota": quantity(f.nominal_quota)}))
                        .collect();
                    json!({"name": f.flavor, "resources": resources})
                })
                .collect();
            json!({"coveredResources": g.covered_resources, "flavors": flavors})
        })
        .collect();
    let mut spec = json!({
        "stopPolicy": cq.stop_policy.name(),
        "resourceGroups": groups,
    });
    if let Some(sel) = &cq.namespace_selector {
        spec["namespaceSelector"] = if sel.is_empty() {
            json!({})
        } else {
            json!({ "matchLabels": sel })
        };
    }
    if let Some(f) = &cq.flavor_fungibility {
        spec["flavorFungibility"] =
            json!({"whenCanBorrow": f.when_can_borrow, "whenCanPreempt": f.when_can_preempt});
    }
    if let Some(p) = &cq.preemption {
        spec["preemption"] = json!({
            "reclaimWithinCohort": p.reclaim_within_cohort,
            "borrowWithinCohort": {"policy": p.borrow_within_cohort_policy},
            "withinClusterQueue": p.within_cluster_queue,
        });
    }
    if !cq.cohort.is_empty() {
        spec["cohortName"] = json!(cq.cohort);
    }
    if !cq.admission_checks.is_empty() {
        spec["admissionChecksStrategy"] = json!({
            "admissionChecks": cq.admission_checks.iter().map(|n| json!({"name": n})).collect::<Vec<_>>(),
        });
    }
    json!({
        "apiVersion": kinds::CLUSTER_QUEUE.api_version(), "kind": "ClusterQueue",
        "metadata": meta(&cq.name, &cq.labels, &cq.annotations),
        "spec": spec,
    })
}

/// A LocalQueue (chain.md §11): the pool's entrance in one namespace.
pub fn local_queue(lq: &LocalQueue) -> Value {
    let mut m = meta(&lq.name, &Labels::new(), &lq.annotations);
    m["namespace"] = json!(lq.namespace);
    m["ownerReferences"] = json!([owner_reference(&lq.owner)]);
    json!({
        "apiVersion": kinds::LOCAL_QUEUE.api_version(), "kind": "LocalQueue",
        "metadata": m,
        "spec": {"clusterQueue": lq.cluster_queue},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::objects::{FlavorQuota, ResourceGroup, StopPolicy};

    #[test]
    fn quantities_are_canonical() {
        assert_eq!(quantity(1_600_000), json!("1600k"));
        assert_eq!(quantity(48), json!("48"));
        assert_eq!(quantity(0), json!("0"));
    }

    #[test]
    fn a_queue_without_checks_has_no_strategy_and_each_covered_resource_a_quota() {
        let cq = ClusterQueue {
            name: "q".into(),
            stop_policy: StopPolicy::Hold,
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: vec![FlavorQuota {
                    flavor: "f".into(),
                    nominal_quota: 16,
                }],
            }],
            ..ClusterQueue::default()
        };
        let o = cluster_queue(&cq);
        assert!(o["spec"].get("admissionChecksStrategy").is_none());
        assert!(o["spec"].get("cohortName").is_none());
        assert_eq!(o["spec"]["stopPolicy"], json!("Hold"));
        assert_eq!(
            o["spec"]["resourceGroups"][0]["flavors"][0]["resources"],
            json!([{"name": "cpu", "nominalQuota": "16"}])
        );
        let checked = ClusterQueue {
            admission_checks: vec!["gpustack-node-devices".into()],
            ..cq
        };
        assert_eq!(
            cluster_queue(&checked)["spec"]["admissionChecksStrategy"],
            json!({"admissionChecks": [{"name": "gpustack-node-devices"}]})
        );
    }

    /// The creation shape's isolation constants come from the model (instance_type.go
    /// `createClusterQueue`), not from the renderer.
    #[test]
    fn a_created_queue_renders_its_isolation_policy() {
        let cq = model::queue::new_cluster_queue("q", &Labels::new(), model::cluster::Era::E3);
        let spec = &cluster_queue(&cq)["spec"];
        assert_eq!(spec["namespaceSelector"], json!({}));
        assert_eq!(
            spec["flavorFungibility"],
            json!({"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"})
        );
        assert_eq!(
            spec["preemption"],
            json!({"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"},
                   "withinClusterQueue": "LowerPriority"})
        );
        let bare = cluster_queue(&ClusterQueue::default());
        assert!(bare["spec"].get("preemption").is_none());
        assert!(bare["spec"].get("namespaceSelector").is_none());
    }

    #[test]
    fn cpu_detail_nests_on_accelerated_pools_and_inlines_on_cpu_pools() {
        let mut d = Detail::default();
        d.cpu.insert("physicalCores".into(), "32".into());
        d.cpu.insert("manufacturer".into(), "amd".into());
        d.cpu.insert("cache.l2".into(), "1MiB".into());
        d.cpu.insert("bogus".into(), "x".into());
        let acc = detail(&d, true);
        assert_eq!(
            acc["cpu"],
            json!({"manufacturer": "amd", "physicalCores": "32", "cache": {"l2": "1MiB"}})
        );
        let cpu = detail(&d, false);
        assert!(cpu.get("cpu").is_none());
        assert_eq!(cpu["physicalCores"], json!("32"));
        assert_eq!(cpu["cache"], json!({"l2": "1MiB"}));
        // the identity stays the pool's own on a CPU pool
        assert_eq!(cpu["manufacturer"], json!(""));
    }
    #[test]
    fn an_instance_type_carries_the_phase_message_of_its_queue() {
        // the first pool's type, made inactive by an administrator: its queue is held
        let mut c = model::examples::walkthrough();
        let first = model::derive::derive(&c).instance_types.remove(0);
        c.instance_types.push(model::cluster::ExistingInstanceType {
            name: first.name.to_string(),
            spec: model::objects::InstanceTypeSpec {
                inactive: true,
                ..first.spec
            },
            derived_from_node: true,
        });
        let d = model::derive::derive(&c);
        let it = |name: &str| {
            render(&d)
                .into_iter()
                .find(|(k, _, o)| *k == kinds::INSTANCE_TYPE && o["metadata"]["name"] == name)
                .map(|(_, _, o)| o)
        };
        for q in &d.cluster_queues {
            let Some(o) = it(&q.name) else { continue };
            let want = match q.stop_policy {
                StopPolicy::None => "Can admit new workloads.",
                StopPolicy::Hold => "cluster queue is held",
                StopPolicy::HoldAndDrain => "cluster queue is held and drained",
            };
            assert_eq!(o["status"]["phaseMessage"], json!(want), "{}", q.name);
        }
        let held = d
            .cluster_queues
            .iter()
            .filter(|q| q.stop_policy == StopPolicy::Hold);
        assert!(held.count() >= 1, "an inactive type holds its queue");
        let lone = InstanceType::default();
        assert!(instance_type(&lone, None)["status"]
            .get("phaseMessage")
            .is_none());
    }
}
