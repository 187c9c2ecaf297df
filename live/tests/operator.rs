//! The twin's reference operator end to end: the walkthrough cluster (research/chain.md §15)
//! written as mock objects, reconciled, and compared with the model's own derivation.

use std::collections::BTreeMap;
use std::path::PathBuf;

use live::operator::{mock_objects, read_cluster, reconcile, reconcile_logged, render, write_mock};
use live::server::store::{DeleteOptions, Selector, Store};
use live::server::structural::{crd_schema, validate};
use live::wire::kinds::{self, Kind};
use model::cluster::{Cluster, Node, Settings};
use model::derive::derive;
use model::devices::{Card, DeviceGroup, Devices, Ledger, Mode, ProfileCount};
use model::events::{Event, World};
use model::examples::walkthrough;
use serde_json::{json, Value};

fn store_with(cluster: &Cluster) -> Store {
    let mut store = Store::default();
    let written = write_mock(&mut store, cluster);
    assert_eq!(written, Ok(()));
    store
}

/// The cluster in the store's order (nodes and namespaces by name).
fn canonical(mut c: Cluster) -> Cluster {
    c.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    c.namespaces.sort_by(|a, b| a.name.cmp(&b.name));
    c.instance_types.sort_by(|a, b| a.name.cmp(&b.name));
    c
}

fn items(store: &Store, kind: &Kind) -> Vec<Value> {
    store
        .list(kind, None, &Selector::everything())
        .map(|l| l.items)
        .unwrap_or_default()
}

fn by_name(items: &[Value]) -> BTreeMap<String, Value> {
    items
        .iter()
        .map(|o| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            let key = if ns.is_empty() {
                name.to_string()
            } else {
                format!("{ns}/{name}")
            };
            (key, o.clone())
        })
        .collect()
}

fn quotas(cq: &Value) -> Vec<(String, String)> {
    cq["spec"]["resourceGroups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["flavors"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            (
                f["name"].as_str().unwrap_or_default().to_string(),
                f["resources"][0]["nominalQuota"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

fn q(n: i64) -> String {
    model::credits::Quantity::from_int(n).to_string()
}

#[test]
fn round_trip_of_the_walkthrough() {
    let c = walkthrough();
    let store = store_with(&c);
    assert_eq!(read_cluster(&store, &c.settings), Ok(canonical(c)));
}

fn mig_node() -> Node {
    let mut node = model::examples::nfd_node("node-mig", "AMD", "AMD EPYC 7763", 64);
    let capability = model::ledger::catalogs::a100_40gb();
    let ledger = Ledger {
        mode: Mode::Partitioned,
        remaining_units: 1_600_000 - 2 * 228_571,
        remaining_profiles: vec![ProfileCount {
            name: "1g.5gb".into(),
            count: 5,
        }],
        allocated_profiles: vec![ProfileCount {
            name: "1g.5gb".into(),
            count: 2,
        }],
        allocated_slices: 0,
    };
    node.devices = Some(Devices {
        groups: vec![DeviceGroup {
            manufacturer: "nvidia".into(),
            id: "a100-sxm4-40gb".into(),
            name: "NVIDIA A100-SXM4-40GB".into(),
            memory_mib: 40960,
            runtime_version: "12.4".into(),
            cards: vec![
                Card {
                    id: "GPU-mig-0".into(),
                    index: 0,
                    capability: Some(capability.clone()),
                    ledger: Some(ledger),
                },
                Card {
                    id: "GPU-mig-1".into(),
                    index: 1,
                    capability: Some(capability),
                    ledger: None,
                },
            ],
            ..DeviceGroup::default()
        }],
    });
    node
}

/// A sliced card's hosted slices are in no Devices CRD: they come back from the charging Pod
/// `mock_objects` binds to the node (one container per slice). Without a namespace to hold
/// the Pod, they read as 0.
#[test]
fn round_trip_of_a_card_hosting_slices() {
    let mut c = walkthrough();
    let at = c
        .nodes
        .iter()
        .position(|n| n.devices.is_some())
        .expect("the walkthrough has accelerated nodes");
    let card = c.nodes[at]
        .devices
        .iter_mut()
        .flat_map(|d| &mut d.groups)
        .flat_map(|g| &mut g.cards)
        .next()
        .expect("an accelerated node has a card");
    card.ledger = Some(Ledger {
        mode: Mode::Sliced,
        remaining_units: 1_600_000 - 3 * 320_000,
        allocated_slices: 3,
        ..Ledger::default()
    });
    let store = store_with(&c);
    let pods = items(&store, &kinds::POD);
    assert_eq!(pods.len(), 1, "one charging Pod");
    assert_eq!(pods[0]["spec"]["nodeName"], json!(c.nodes[at].name));
    assert_eq!(read_cluster(&store, &c.settings), Ok(canonical(c.clone())));

    c.namespaces.clear();
    let store = store_with(&c);
    assert!(items(&store, &kinds::POD).is_empty());
    let read = read_cluster(&store, &c.settings).expect("reads");
    let slices: Vec<u32> = read
        .nodes
        .iter()
        .flat_map(|n| n.devices.iter().flat_map(|d| &d.groups))
        .flat_map(|g| &g.cards)
        .filter_map(|card| card.ledger.as_ref().map(|l| l.allocated_slices))
        .collect();
    assert!(slices.iter().all(|s| *s == 0), "{slices:?}");
}

#[test]
fn round_trip_of_a_mig_card_with_carved_instances() {
    let mut c = walkthrough();
    c.nodes.push(mig_node());
    c.nodes[0].deleting = true;
    c.namespaces[1].terminating = true;
    let store = store_with(&c);
    assert_eq!(read_cluster(&store, &c.settings), Ok(canonical(c)));
}

#[test]
fn a_malformed_devices_field_is_an_error_naming_it() {
    let c = walkthrough();
    let mut store = store_with(&c);
    let mut d = store
        .get(&kinds::DEVICES, None, "node-t4-b")
        .unwrap_or_default();
    d["status"]["groups"][0]["accelerators"][1]["mode"] = json!(9);
    assert!(store.update_status(&kinds::DEVICES, None, d).is_ok());
    let err = read_cluster(&store, &c.settings)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Devices node-t4-b: status.groups[0].accelerators[1].mode"),
        "{err}"
    );
    let mut n = store
        .get(&kinds::NODE, None, "node-cpu")
        .unwrap_or_default();
    n["status"]["capacity"]["cpu"] = json!("lots");
    assert!(store.update_status(&kinds::NODE, None, n).is_ok());
    let err = read_cluster(&store, &c.settings)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("Node node-cpu: status.capacity.cpu"), "{err}");
}

#[test]
fn reconcile_writes_the_models_objects() {
    let c = walkthrough();
    let mut store = store_with(&c);
    let derived = reconcile(&mut store, &Settings::default(), None);
    assert!(derived.is_ok(), "{derived:?}");
    let model = derive(&c);

    let rfs = by_name(&items(&store, &kinds::RESOURCE_FLAVOR));
    let want: Vec<&str> = model
        .resource_flavors
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(rfs.keys().map(String::as_str).collect::<Vec<_>>(), {
        let mut w = want.clone();
        w.sort();
        w
    });
    for rf in &model.resource_flavors {
        let o = &rfs[rf.name.as_str()];
        assert_eq!(o["spec"]["nodeLabels"], json!(rf.node_labels));
        assert_eq!(o["spec"]["topologyName"], json!(rf.topology_name));
        assert_eq!(o["metadata"]["labels"], json!(rf.labels));
    }

    let its = by_name(&items(&store, &kinds::INSTANCE_TYPE));
    assert_eq!(its.len(), model.instance_types.len());
    for it in &model.instance_types {
        let o = &its[it.name.as_str()];
        assert_eq!(
            o["status"]["entrance"],
            json!(it.status.entrance),
            "{}",
            it.name
        );
        assert_eq!(o["spec"], json!(it.spec));
        let v = &it.status.views;
        assert_eq!(
            o["status"]["accelerator"],
            json!({"onceMaxRequest": q(v.exclusive.once_max_request), "remaining": q(v.exclusive.remaining), "capacity": q(v.exclusive.capacity)})
        );
        assert_eq!(
            o["status"]["acceleratorShared"]["capacity"],
            json!(q(v.shared.capacity))
        );
        assert_eq!(
            o["status"]["acceleratorSliced"]["remaining"],
            json!(q(v.sliced.remaining))
        );
        assert_eq!(
            o["status"]["cpu"]["capacity"],
            json!(q(it.status.cpu.capacity))
        );
    }
    // the walkthrough's numbers (chain.md §15): the A10G pool has one card, the CPU pool 72 cores
    let a10g = &its["gpustack--nvidia-a10g-linux-amd64"];
    assert_eq!(a10g["status"]["accelerator"]["capacity"], json!("1"));
    assert_eq!(a10g["status"]["acceleratorShared"]["capacity"], json!("10"));

    let cqs = by_name(&items(&store, &kinds::CLUSTER_QUEUE));
    assert_eq!(cqs.len(), model.cluster_queues.len());
    for cq in &model.cluster_queues {
        let got = quotas(&cqs[cq.name.as_str()]);
        let want: Vec<(String, String)> = cq
            .resource_groups
            .iter()
            .flat_map(|g| {
                g.flavors
                    .iter()
                    .map(|f| (f.flavor.to_string(), q(f.nominal_quota)))
            })
            .collect();
        assert_eq!(got, want, "{}", cq.name);
        assert_eq!(
            cqs[cq.name.as_str()]["spec"]["stopPolicy"],
            json!(cq.stop_policy.name())
        );
    }
    assert_eq!(
        quotas(&cqs["gpustack--nvidia-a10g-linux-amd64"])
            .iter()
            .map(|(_, n)| n.as_str())
            .collect::<Vec<_>>(),
        ["1600k"]
    );

    let lqs = by_name(&items(&store, &kinds::LOCAL_QUEUE));
    let want: Vec<String> = model
        .local_queues
        .iter()
        .map(|l| format!("{}/{}", l.namespace, l.name))
        .collect();
    let mut sorted = want.clone();
    sorted.sort();
    assert_eq!(lqs.keys().cloned().collect::<Vec<_>>(), sorted);
    for lq in &model.local_queues {
        let o = &lqs[&format!("{}/{}", lq.namespace, lq.name)];
        assert_eq!(o["spec"]["clusterQueue"], json!(lq.cluster_queue));
    }

    // the Nodes carry the merged labels
    let nodes = by_name(&items(&store, &kinds::NODE));
    for n in &model.nodes {
        assert_eq!(
            nodes[n.name.as_str()]["metadata"]["labels"],
            json!(n.labels),
            "{}",
            n.name
        );
    }
}

#[test]
fn a_second_reconcile_writes_nothing() {
    let c = walkthrough();
    let mut store = store_with(&c);
    let first = reconcile(&mut store, &c.settings, None);
    assert!(first.is_ok(), "{first:?}");
    let rv = store.resource_version();
    let again = reconcile_logged(&mut store, &c.settings, first.as_ref().ok());
    let (derived, writes) = again.unwrap_or_default();
    assert_eq!(writes.done, []);
    assert_eq!(store.resource_version(), rv);
    // reading back the store derives what the model derived (objects, not just names)
    assert_eq!(
        Some(derived.cluster_queues),
        first.ok().map(|d| d.cluster_queues)
    );
}

#[test]
fn a_node_leaving_shrinks_the_cpu_pool_and_keeps_the_a10g_instance_type() {
    let c = walkthrough();
    let mut store = store_with(&c);
    let first = reconcile(&mut store, &c.settings, None).ok();
    let deleted = store.delete(&kinds::NODE, None, "node-a10g", &DeleteOptions::default());
    assert!(deleted.is_ok());
    let after = reconcile(&mut store, &c.settings, first.as_ref());
    assert!(after.is_ok(), "{after:?}");

    let mut world = World::new(c.clone());
    world.apply(&Event::NodeLeave {
        name: "node-a10g".into(),
    });
    let expected = world.observe();

    let cqs = by_name(&items(&store, &kinds::CLUSTER_QUEUE));
    for cq in &expected.cluster_queues {
        let want: Vec<(String, String)> = cq
            .resource_groups
            .iter()
            .flat_map(|g| {
                g.flavors
                    .iter()
                    .map(|f| (f.flavor.to_string(), q(f.nominal_quota)))
            })
            .collect();
        assert_eq!(quotas(&cqs[cq.name.as_str()]), want, "{}", cq.name);
    }
    let total = |cq: &Value| -> i64 {
        quotas(cq)
            .iter()
            .filter_map(|(_, n)| n.parse::<i64>().ok())
            .sum()
    };
    assert_eq!(total(&cqs["gpustack--generic-linux-amd64"]), 68);
    assert_eq!(quotas(&cqs["gpustack--nvidia-a10g-linux-amd64"]), []);

    let its = by_name(&items(&store, &kinds::INSTANCE_TYPE));
    let a10g = &its["gpustack--nvidia-a10g-linux-amd64"];
    assert_eq!(a10g["status"]["accelerator"]["capacity"], json!("0"));
    assert_eq!(its.len(), expected.instance_types.len());
    for it in &expected.instance_types {
        assert_eq!(
            its[it.name.as_str()]["status"]["phase"],
            json!(format!("{:?}", it.status.phase))
        );
    }
    // the A10G flavor is gone, and so is the node's Devices
    let rfs = by_name(&items(&store, &kinds::RESOURCE_FLAVOR));
    assert_eq!(rfs.len(), expected.resource_flavors.len());
    assert!(store.get(&kinds::DEVICES, None, "node-a10g").is_err());
}

/// `$VERIFY_CRDS_DIR`, else `<workspace>/../shared/crds`.
fn crds_dir() -> PathBuf {
    std::env::var_os("VERIFY_CRDS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/crds"))
}

fn schema(kind: &Kind) -> Option<Value> {
    let path = crds_dir().join(format!("{}_{}.yaml", kind.group, kind.plural));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| eprintln!("skipped: cannot read {}: {e}", path.display()))
        .ok()?;
    let crd: Value = serde_norway::from_str(&text).ok()?;
    crd_schema(&crd, None).cloned()
}

#[test]
fn every_rendered_object_exists_in_its_crd_unpruned() {
    let mut c = walkthrough();
    c.nodes.push(mig_node());
    let derived = derive(&c);
    let mut objects = render(&derived);
    objects.extend(mock_objects(&c));
    let mut checked = 0;
    for (kind, _, o) in objects.iter().filter(|(k, _, _)| k.is_custom()) {
        let Some(s) = schema(kind) else {
            return;
        };
        let name = o["metadata"]["name"].clone();
        let stored = validate(&s, o);
        assert!(
            stored.as_ref().is_ok_and(|v| kept_whole(o, v)),
            "{} {name}: {stored:?}",
            kind.kind
        );
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
}

#[test]
fn the_served_twin_reconciles_after_a_write() {
    use live::operator::spawn_twin_with_operator;
    let c = walkthrough();
    let spawned = spawn_twin_with_operator(None, Store::default(), c.settings.clone());
    let Ok((twin, operator)) = spawned else {
        panic!("spawn: {:?}", spawned.err());
    };
    let shared = twin.store();
    assert_eq!(shared.write(|s| write_mock(s, &c)), Ok(()));
    let want = derive(&c).cluster_queues.len();
    let mut got = 0;
    for _ in 0..250 {
        got = shared.read(|s| items(s, &kinds::CLUSTER_QUEUE).len());
        if got == want && matches!(operator.last(), Some(Ok(_))) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(got, want);
    assert!(matches!(operator.last(), Some(Ok(_))));
    operator.stop();
    assert!(twin.shutdown().is_ok());
}

#[test]
fn the_workers_labels_are_output_not_input_and_stale_ones_go() {
    let c = walkthrough();
    let mut store = store_with(&c);
    let first = reconcile(&mut store, &c.settings, None);
    assert!(first.is_ok(), "{first:?}");
    let read = read_cluster(&store, &c.settings).unwrap_or_default();
    let mut expected = canonical(c.clone());
    expected.instance_types = read.instance_types.clone();
    assert_eq!(read, expected);
    assert!(read.instance_types.iter().all(|it| it.derived_from_node));

    // the A10G card goes away: the node's accelerator labels are the worker's, so they go too
    let mut bare = c.clone();
    bare.nodes[1].devices = None;
    assert_ne!(derive(&bare).nodes[1].labels, derive(&c).nodes[1].labels);
    let gone = store.delete(
        &kinds::DEVICES,
        None,
        "node-a10g",
        &DeleteOptions::default(),
    );
    assert!(gone.is_ok());
    let mid = reconcile(&mut store, &c.settings, first.as_ref().ok());
    assert!(mid.is_ok(), "{mid:?}");
    let nodes = by_name(&items(&store, &kinds::NODE));
    for n in derive(&bare).nodes {
        assert_eq!(
            nodes[n.name.as_str()]["metadata"]["labels"],
            json!(n.labels),
            "{}",
            n.name
        );
    }
    // and come back with it
    let devices = mock_objects(&c)
        .into_iter()
        .find(|(k, _, o)| *k == kinds::DEVICES && o["metadata"]["name"] == "node-a10g");
    let back = devices.map(|(_, _, o)| o).unwrap_or_default();
    assert!(store.create(&kinds::DEVICES, None, back.clone()).is_ok());
    let mut cur = store
        .get(&kinds::DEVICES, None, "node-a10g")
        .unwrap_or_default();
    cur["status"] = back["status"].clone();
    assert!(store.update_status(&kinds::DEVICES, None, cur).is_ok());
    let last = reconcile(&mut store, &c.settings, mid.as_ref().ok());
    assert!(last.is_ok());
    let nodes = by_name(&items(&store, &kinds::NODE));
    for n in derive(&c).nodes {
        assert_eq!(
            nodes[n.name.as_str()]["metadata"]["labels"],
            json!(n.labels),
            "{}",
            n.name
        );
    }
}

#[test]
fn reconcile_through_crd_validators_is_idempotent() {
    let mut store = Store::default();
    // a kind without a real CRD (TopologySource) is served unvalidated; the rest still are
    for kind in kinds::ALL.iter().filter(|k| k.is_custom()) {
        let Some(s) = schema(kind) else {
            continue;
        };
        store.set_validator(kind, live::server::structural::validator(s));
    }
    let mut c = walkthrough();
    c.nodes.push(mig_node());
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    assert_eq!(read_cluster(&store, &c.settings), Ok(canonical(c.clone())));
    let first = reconcile(&mut store, &c.settings, None);
    assert!(first.is_ok(), "{first:?}");
    let rv = store.resource_version();
    let again = reconcile_logged(&mut store, &c.settings, first.as_ref().ok());
    assert_eq!(again.map(|(_, w)| w.done), Ok(vec![]));
    assert_eq!(store.resource_version(), rv);
    assert_eq!(
        items(&store, &kinds::INSTANCE_TYPE).len(),
        derive(&c).instance_types.len()
    );
}

/// Polls `shared` until `done` holds (bounded; the wait is on the store's state, never on time).
fn wait_until(shared: &live::server::http::SharedStore, done: impl Fn(&Store) -> bool) -> bool {
    for _ in 0..1000 {
        if shared.read(&done) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// With a reconcile lag and a mutant, the served operator still reaches the mutated model's
/// objects: here `quota-off-by-one` gives every flavor one card less than the model.
#[test]
fn a_lagging_operator_runs_the_mutated_rule() {
    use live::operator::{spawn_twin_with_operator, OperatorConfig};
    use model::mutants::Mutant;
    let c = walkthrough();
    let mut mutated = c.clone();
    mutated.settings.mutant = Some(Mutant::QuotaOffByOne);
    let config = OperatorConfig {
        settings: mutated.settings.clone(),
        lag: std::time::Duration::from_millis(150),
    };
    let spawned = spawn_twin_with_operator(None, Store::default(), config);
    let Ok((twin, operator)) = spawned else {
        panic!("spawn: {:?}", spawned.err());
    };
    let shared = twin.store();
    assert_eq!(shared.write(|s| write_mock(s, &c)), Ok(()));
    let want: BTreeMap<String, Vec<(String, String)>> = derive(&mutated)
        .cluster_queues
        .iter()
        .map(|cq| {
            let quotas = cq
                .resource_groups
                .iter()
                .flat_map(|g| &g.flavors)
                .map(|f| (f.flavor.to_string(), q(f.nominal_quota)))
                .collect();
            (cq.name.to_string(), quotas)
        })
        .collect();
    let got = |s: &Store| -> BTreeMap<String, Vec<(String, String)>> {
        by_name(&items(s, &kinds::CLUSTER_QUEUE))
            .into_iter()
            .map(|(k, v)| (k, quotas(&v)))
            .collect()
    };
    assert!(
        wait_until(&shared, |s| got(s) == want),
        "{:?}",
        shared.read(got)
    );
    let nominal = |cluster: &Cluster| -> Vec<i64> {
        derive(cluster)
            .cluster_queues
            .iter()
            .flat_map(|cq| cq.resource_groups.iter().flat_map(|g| &g.flavors))
            .map(|f| f.nominal_quota)
            .collect()
    };
    assert_ne!(nominal(&c), nominal(&mutated), "the mutant changes a quota");
    assert!(operator.reconciles() >= 1);
    operator.stop();
    assert!(twin.shutdown().is_ok());
}

/// The Workloads a client submits and the verdicts and AdmissionCheck the operator writes fit
/// the real Kueue CRDs unpruned (skipped with a printed reason when ../shared/crds is absent).
#[test]
fn workloads_verdicts_and_the_admission_check_fit_their_crds_unpruned() {
    use live::wire::workload::workload_object;
    use model::examples::workload;
    let (Some(wl_schema), Some(ac_schema)) =
        (schema(&kinds::WORKLOAD), schema(&kinds::ADMISSION_CHECK))
    else {
        return;
    };
    let c = walkthrough();
    let mut store = store_with(&c);
    let submitted = [
        workload(
            "whole",
            "gpustack--nvidia-tesla-t4-linux-amd64",
            2,
            &[("nvidia.com/gpu", "1")],
        ),
        workload("bad", "no-such-queue", 1, &[("cpu", "1")]),
    ];
    for w in &submitted {
        let o = workload_object(w);
        let stored = validate(&wl_schema, &o);
        assert!(
            stored.as_ref().is_ok_and(|v| kept_whole(&o, v)),
            "{}: {stored:?}",
            w.name
        );
        assert!(store.create(&kinds::WORKLOAD, Some("default"), o).is_ok());
    }
    let done = reconcile(&mut store, &c.settings, None);
    assert!(done.is_ok(), "{done:?}");
    let judged = items(&store, &kinds::WORKLOAD);
    assert_eq!(judged.len(), submitted.len());
    for o in judged {
        assert!(
            o["status"]["admissionChecks"][0]["state"].is_string(),
            "{o}"
        );
        let stored = validate(&wl_schema, &o);
        assert!(
            stored.as_ref().is_ok_and(|v| kept_whole(&o, v)),
            "{stored:?}"
        );
    }
    let again = reconcile_logged(&mut store, &c.settings, done.as_ref().ok());
    assert_eq!(
        again.map(|(_, w)| w.done),
        Ok(vec![]),
        "verdicts are written once"
    );
    let check = items(&store, &kinds::ADMISSION_CHECK);
    assert_eq!(check.len(), 1);
    assert_eq!(check[0]["status"]["conditions"][0]["reason"], "Ready");
    let stored = validate(&ac_schema, &check[0]);
    assert!(
        stored.as_ref().is_ok_and(|v| kept_whole(&check[0], v)),
        "{stored:?}"
    );
}

/// The reference operator plays NFD's master: a NodeFeature's labels in NFD's namespace land
/// on its Node (and a label it stops carrying goes away), so the CPU key the chain derives
/// follows what NFD reported, not what the Node was created with.
#[test]
fn node_feature_labels_are_merged_onto_their_node() {
    let mut node = model::examples::nfd_node("cpu-a", "AMD", "AMD EPYC 7R32", 4);
    node.labels.remove(model::labels::CPU_VENDOR);
    node.annotations.clear();
    let cluster = Cluster {
        nodes: vec![node],
        ..walkthrough()
    };
    let mut store = store_with(&cluster);
    let settings = cluster.settings.clone();
    let flavors = |store: &Store| -> Vec<String> {
        store
            .list(&kinds::RESOURCE_FLAVOR, None, &Selector::everything())
            .unwrap()
            .items
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    reconcile(&mut store, &settings, None).unwrap();
    assert!(
        flavors(&store)
            .iter()
            .all(|f| f.starts_with("gpustack--generic-")),
        "{:?}",
        flavors(&store)
    );
    let feature = |vendor: Option<&str>| {
        let mut labels = serde_json::Map::new();
        labels.insert("example.com/not-nfd".into(), json!("ignored"));
        if let Some(v) = vendor {
            labels.insert(model::labels::CPU_VENDOR.into(), json!(v));
        }
        json!({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": "cpu-a-nfd", "namespace": settings.system_namespace,
                "labels": {"nfd.node.kubernetes.io/node-name": "cpu-a"}},
            "spec": {"labels": labels}})
    };
    let ns = Some(settings.system_namespace.as_str());
    store
        .create(&kinds::NODE_FEATURE, ns, feature(Some("AMD")))
        .unwrap();
    reconcile(&mut store, &settings, None).unwrap();
    let node = store.get(&kinds::NODE, None, "cpu-a").unwrap();
    assert_eq!(
        node["metadata"]["labels"][model::labels::CPU_VENDOR],
        json!("AMD")
    );
    assert!(node["metadata"]["labels"]
        .get("example.com/not-nfd")
        .is_none());
    assert!(
        flavors(&store)
            .iter()
            .any(|f| f.starts_with("gpustack--amd-")),
        "{:?}",
        flavors(&store)
    );
    // NFD stops reporting the vendor: the label leaves the Node again.
    let mut changed = store.get(&kinds::NODE_FEATURE, ns, "cpu-a-nfd").unwrap();
    changed["spec"] = feature(None)["spec"].clone();
    store.update(&kinds::NODE_FEATURE, ns, changed).unwrap();
    reconcile(&mut store, &settings, None).unwrap();
    let node = store.get(&kinds::NODE, None, "cpu-a").unwrap();
    assert!(node["metadata"]["labels"]
        .get(model::labels::CPU_VENDOR)
        .is_none());
}

/// Every LocalQueue the operator writes is controlled by its ClusterQueue (the owner's uid as
/// the store gave it), a foreign ClusterQueue gets LocalQueues too (chain.md §11: a created
/// Namespace enqueues every non-terminating queue), and deleting a queue lets the garbage
/// collector take its LocalQueues with it (nothing recreates them).
#[test]
fn local_queues_are_owned_by_their_queue_and_go_with_it() {
    let cluster = Cluster {
        foreign_queues: vec![
            model::cluster::ForeignQueue {
                name: "team-a".into(),
                terminating: false,
            },
            model::cluster::ForeignQueue {
                name: "team-gone".into(),
                terminating: true,
            },
        ],
        ..walkthrough()
    };
    let mut store = store_with(&cluster);
    let settings = cluster.settings.clone();
    let derived = reconcile(&mut store, &settings, None).unwrap();
    let queues = by_name(&items(&store, &kinds::CLUSTER_QUEUE));
    let lqs = items(&store, &kinds::LOCAL_QUEUE);
    assert_eq!(lqs.len(), derived.local_queues.len());
    for lq in &lqs {
        let cq = lq["spec"]["clusterQueue"].as_str().unwrap();
        let refs = lq["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 1, "{lq}");
        assert_eq!(refs[0]["kind"], "ClusterQueue");
        assert_eq!(refs[0]["apiVersion"], "kueue.x-k8s.io/v1beta2");
        assert_eq!(refs[0]["name"], cq);
        assert_eq!(refs[0]["controller"], true);
        assert_eq!(refs[0]["uid"], queues[cq]["metadata"]["uid"], "{lq}");
    }
    let of = |q: &str, lqs: &[Value]| {
        lqs.iter()
            .filter(|l| l["spec"]["clusterQueue"] == q)
            .count()
    };
    let eligible = cluster
        .namespaces
        .iter()
        .filter(|n| model::queue::namespace_gets_local_queues(n, &settings.system_namespace))
        .count();
    assert!(eligible > 0);
    assert_eq!(of("team-a", &lqs), eligible);
    assert_eq!(of("team-gone", &lqs), 0);

    store
        .delete(
            &kinds::CLUSTER_QUEUE,
            None,
            "team-a",
            &DeleteOptions::default(),
        )
        .unwrap();
    assert_eq!(of("team-a", &items(&store, &kinds::LOCAL_QUEUE)), 0);
    let again = reconcile(&mut store, &settings, Some(&derived)).unwrap();
    assert_eq!(of("team-a", &items(&store, &kinds::LOCAL_QUEUE)), 0);
    assert!(again
        .local_queues
        .iter()
        .all(|l| l.cluster_queue != "team-a"));
}

/// The garbage collector as the API server's: `Orphan` keeps a dependent and strips the
/// reference; a dependent with another live owner only loses the dangling one.
#[test]
fn orphaned_and_co_owned_dependents_survive_their_owner() {
    let mut store = Store::default();
    store
        .create(
            &kinds::NAMESPACE,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        )
        .unwrap();
    let cq = |name: &str| json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {}});
    let uid = |o: &Value| o["metadata"]["uid"].clone();
    let a = store.create(&kinds::CLUSTER_QUEUE, None, cq("a")).unwrap();
    let b = store.create(&kinds::CLUSTER_QUEUE, None, cq("b")).unwrap();
    let owner = |o: &Value, name: &str| json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "name": name, "uid": uid(o)});
    let lq = |name: &str, owners: Vec<Value>| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": owners}, "spec": {"clusterQueue": "a"}})
    };
    store
        .create(
            &kinds::LOCAL_QUEUE,
            Some("ns"),
            lq("only-a", vec![owner(&a, "a")]),
        )
        .unwrap();
    store
        .create(
            &kinds::LOCAL_QUEUE,
            Some("ns"),
            lq("a-and-b", vec![owner(&a, "a"), owner(&b, "b")]),
        )
        .unwrap();
    store
        .delete(&kinds::CLUSTER_QUEUE, None, "a", &DeleteOptions::default())
        .unwrap();
    assert!(store
        .get(&kinds::LOCAL_QUEUE, Some("ns"), "only-a")
        .is_err());
    let kept = store
        .get(&kinds::LOCAL_QUEUE, Some("ns"), "a-and-b")
        .unwrap();
    assert_eq!(kept["metadata"]["ownerReferences"], json!([owner(&b, "b")]));
    let orphan = DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..DeleteOptions::default()
    };
    store
        .delete(&kinds::CLUSTER_QUEUE, None, "b", &orphan)
        .unwrap();
    let kept = store
        .get(&kinds::LOCAL_QUEUE, Some("ns"), "a-and-b")
        .unwrap();
    assert!(kept["metadata"].get("ownerReferences").is_none(), "{kept}");
}

/// Whether `stored` holds every field of `written` with its value: nothing was pruned or
/// changed (a CRD default may add fields).
fn kept_whole(written: &Value, stored: &Value) -> bool {
    match (written, stored) {
        (Value::Object(w), Value::Object(s)) => w
            .iter()
            .all(|(k, v)| v.is_null() || s.get(k).is_some_and(|sv| kept_whole(v, sv))),
        (w, s) => w == s,
    }
}
