//! The twin's joint-admission controller writes `gpustack-model-deployment-joint` on the
//! Workloads as the model decides it (model_deployment_joint_admission.go; one rule:
//! `AdmissionState::joint_entry`): case 50's subject on a one-node 4-core CPU pool.

use std::path::PathBuf;

use live::operator::{reconcile, write_mock};
use live::server::store::{DeleteOptions, Store};
use live::server::structural::{crd_schema, validate};
use live::wire::kinds::{self, Kind};
use live::wire::workload::{read_check, read_joint_check, workload_object};
use model::admission::joint::{DeclaredRole, DeploymentReplica};
use model::admission::{CheckState, Verdict};
use model::cluster::{Cluster, Namespace};
use model::events::{Event, World};
use model::examples::{nfd_node, workload};
use model::workload::Workload;
use serde_json::Value;

const POOL: &str = "gpustack--generic-linux-amd64";

fn cluster() -> Cluster {
    Cluster {
        nodes: vec![nfd_node("cpu-0", "AMD", "AMD EPYC 7R32", 4)],
        namespaces: vec![Namespace {
            name: "default".into(),
            terminating: false,
        }],
        ..Cluster::default()
    }
}

fn replica(role: &str) -> Workload {
    Workload {
        deployment: Some(DeploymentReplica {
            deployment: "pd".into(),
            role: role.into(),
            ordinal: 0,
            roles: ["prefill", "decode"]
                .iter()
                .map(|n| DeclaredRole {
                    name: n.to_string(),
                    replicas: 1,
                    instance_type: POOL.into(),
                })
                .collect(),
        }),
        ..workload(&format!("pd-{role}-0"), POOL, 1, &[("cpu", "1")])
    }
}

fn filler(i: usize) -> Workload {
    workload(&format!("filler-{i}"), POOL, 1, &[("cpu", "1")])
}

fn object(store: &Store, name: &str) -> Value {
    store
        .get(&kinds::WORKLOAD, Some("default"), name)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn schema(kind: &Kind) -> Option<Value> {
    let dir = std::env::var_os("VERIFY_CRDS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/crds"));
    let path = dir.join(format!("{}_{}.yaml", kind.group, kind.plural));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| eprintln!("CRD check skipped: cannot read {}: {e}", path.display()))
        .ok()?;
    let crd: Value = serde_norway::from_str(&text).ok()?;
    crd_schema(&crd, None).cloned()
}

/// The joint entry the model writes for `w` in `world` (None: no entry).
fn model_entry(world: &World, w: &Workload) -> Option<Verdict> {
    world.admission.joint_entry(w)
}

#[test]
fn the_twin_writes_the_models_joint_states() {
    let c = cluster();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    let mut world = World::new(c.clone());
    let submit = |store: &mut Store, world: &mut World, w: &Workload| {
        assert!(store
            .create(&kinds::WORKLOAD, Some("default"), workload_object(w))
            .is_ok());
        world.apply(&Event::Submit {
            workload: w.clone(),
        });
    };
    for i in 0..3 {
        submit(&mut store, &mut world, &filler(i));
    }
    let first = reconcile(&mut store, &c.settings, None);
    assert!(first.is_ok(), "{first:?}");
    // Outside a deployment: Ready at once.
    let f0 = object(&store, "filler-0");
    assert_eq!(
        read_joint_check(&f0),
        model_entry(&world, &filler(0)),
        "{f0}"
    );
    assert_eq!(
        read_joint_check(&f0).map(|v| v.state),
        Some(CheckState::Ready)
    );
    submit(&mut store, &mut world, &replica("prefill"));
    submit(&mut store, &mut world, &replica("decode"));
    let second = reconcile(&mut store, &c.settings, first.as_ref().ok());
    assert!(second.is_ok(), "{second:?}");
    let prefill = object(&store, "pd-prefill-0");
    let decode = object(&store, "pd-decode-0");
    let held = read_joint_check(&prefill);
    assert_eq!(held, model_entry(&world, &replica("prefill")));
    let held = held.unwrap_or_else(|| panic!("no joint entry: {prefill}"));
    assert_eq!(held.state, CheckState::Pending);
    assert!(
        held.message.contains("belong to the roles decode."),
        "{}",
        held.message
    );
    // The holding role passed gate 3; the waiting one reserved nothing and carries no entry.
    assert_eq!(
        read_check(&prefill).map(|v| v.state),
        Some(CheckState::Ready)
    );
    assert_eq!(
        read_check(&decode).map(|v| v.state),
        Some(CheckState::Pending)
    );
    assert_eq!(read_joint_check(&decode), None);
    assert_eq!(model_entry(&world, &replica("decode")), None);
    if let Some(s) = schema(&kinds::WORKLOAD) {
        // valid against the real CRD; its defaults add only `spec.active`
        let mut defaulted = prefill.clone();
        defaulted["spec"]["active"] = serde_json::json!(true);
        assert_eq!(validate(&s, &prefill), Ok(defaulted));
    }
    // Deleting the filler: Kueue requeues the waiting role; the set opens.
    for i in 0..3 {
        let name = format!("filler-{i}");
        assert!(store
            .delete(
                &kinds::WORKLOAD,
                Some("default"),
                &name,
                &DeleteOptions::default()
            )
            .is_ok());
        world.apply(&Event::Finish {
            namespace: "default".into(),
            name,
        });
    }
    world.apply(&Event::Submit {
        workload: replica("decode"),
    });
    let third = reconcile(&mut store, &c.settings, second.as_ref().ok());
    assert!(third.is_ok(), "{third:?}");
    for role in ["prefill", "decode"] {
        let o = object(&store, &format!("pd-{role}-0"));
        let entry = read_joint_check(&o);
        assert_eq!(entry, model_entry(&world, &replica(role)), "{role}: {o}");
        assert_eq!(entry.map(|v| v.state), Some(CheckState::Ready), "{role}");
        assert_eq!(
            read_check(&o).map(|v| v.state),
            Some(CheckState::Ready),
            "{role}"
        );
    }
}

fn active(o: &Value) -> bool {
    live::wire::workload::is_active(o)
}

fn delete(store: &mut Store, world: &mut World, name: &str) {
    assert!(store
        .delete(
            &kinds::WORKLOAD,
            Some("default"),
            name,
            &DeleteOptions::default()
        )
        .is_ok());
    world.apply(&Event::Finish {
        namespace: "default".into(),
        name: name.into(),
    });
}

fn submit(store: &mut Store, world: &mut World, w: &Workload) {
    assert!(store
        .create(&kinds::WORKLOAD, Some("default"), workload_object(w))
        .is_ok());
    world.apply(&Event::Submit {
        workload: w.clone(),
    });
}

/// A held set is parked once the twin's clock has passed the bound since its entry turned
/// Pending, not when it has only reached it: the held replica gets the model's park message
/// and `spec.active=false`, its quota is released (a later Workload is admitted on it), and
/// the model's `Event::JointTimeout` agrees.
#[test]
fn a_held_set_is_parked_after_the_clock_passes_the_bound_and_not_before() {
    use model::admission::joint::{is_parked_message, INFEASIBLE_AFTER_SECONDS};
    let c = cluster();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    let mut world = World::new(c.clone());
    for i in 0..3 {
        submit(&mut store, &mut world, &filler(i));
    }
    submit(&mut store, &mut world, &replica("prefill"));
    submit(&mut store, &mut world, &replica("decode"));
    let mut previous = reconcile(&mut store, &c.settings, None).expect("reconcile");
    let held = read_joint_check(&object(&store, "pd-prefill-0"));
    assert_eq!(held.as_ref().map(|v| v.state), Some(CheckState::Pending));
    // Many passes and writes tick the store's stamps, but no time passes on the twin.
    for _ in 0..3 {
        previous = reconcile(&mut store, &c.settings, Some(&previous)).expect("reconcile");
    }
    store.advance_clock(INFEASIBLE_AFTER_SECONDS);
    previous = reconcile(&mut store, &c.settings, Some(&previous)).expect("reconcile");
    let prefill = object(&store, "pd-prefill-0");
    assert!(
        active(&prefill),
        "parked at the bound, not past it: {prefill}"
    );
    assert_eq!(read_joint_check(&prefill), held);
    store.advance_clock(1);
    previous = reconcile(&mut store, &c.settings, Some(&previous)).expect("reconcile");
    let prefill = object(&store, "pd-prefill-0");
    assert!(!active(&prefill), "not parked past the bound: {prefill}");
    let entry = read_joint_check(&prefill).expect("the park keeps the entry");
    assert_eq!(entry.state, CheckState::Pending);
    assert!(is_parked_message(&entry.message), "{}", entry.message);
    let parked = world.apply(&Event::JointTimeout {
        namespace: "default".into(),
        deployment: "pd".into(),
    });
    assert_eq!(
        parked,
        model::events::Effect::Parked {
            workloads: vec!["default/pd-prefill-0".into()]
        }
    );
    let member = world
        .admission
        .joint_member("default", "pd-prefill-0")
        .expect("tracked");
    assert_eq!(entry.message, member.message);
    // The waiting role was never reserved: it is not deactivated.
    assert!(active(&object(&store, "pd-decode-0")));
    // The parked replica's core is free again: with the waiting role gone (Kueue would
    // requeue it first), a new Workload is admitted on it.
    delete(&mut store, &mut world, "pd-decode-0");
    submit(&mut store, &mut world, &filler(3));
    reconcile(&mut store, &c.settings, Some(&previous)).expect("reconcile");
    let f3 = object(&store, "filler-3");
    assert_eq!(
        read_check(&f3).map(|v| v.state),
        Some(CheckState::Ready),
        "{f3}"
    );
    assert_eq!(read_joint_check(&f3), model_entry(&world, &filler(3)));
    // Still parked, the message as the park wrote it.
    let prefill = object(&store, "pd-prefill-0");
    assert!(!active(&prefill));
    assert_eq!(read_joint_check(&prefill), Some(entry));
    if let Some(s) = schema(&kinds::WORKLOAD) {
        assert_eq!(validate(&s, &prefill).as_ref(), Ok(&prefill));
    }
    delete(&mut store, &mut world, "filler-3");
}

/// A set that opened is Ready and is never parked, however far the clock moves.
#[test]
fn a_ready_set_is_never_parked() {
    let c = cluster();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    let mut world = World::new(c.clone());
    submit(&mut store, &mut world, &replica("prefill"));
    submit(&mut store, &mut world, &replica("decode"));
    let mut previous = reconcile(&mut store, &c.settings, None).expect("reconcile");
    for _ in 0..3 {
        store.advance_clock(3 * 3600);
        previous = reconcile(&mut store, &c.settings, Some(&previous)).expect("reconcile");
    }
    for role in ["prefill", "decode"] {
        let o = object(&store, &format!("pd-{role}-0"));
        assert!(active(&o), "{role}: {o}");
        let entry = read_joint_check(&o);
        assert_eq!(entry.as_ref().map(|v| v.state), Some(CheckState::Ready));
        assert_eq!(entry, model_entry(&world, &replica(role)), "{role}");
    }
}

/// An assembling set (a declared replica has no Workload yet) is Pending but never parked.
#[test]
fn an_assembling_set_is_not_parked() {
    let c = cluster();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    let mut world = World::new(c.clone());
    submit(&mut store, &mut world, &replica("prefill"));
    let previous = reconcile(&mut store, &c.settings, None).expect("reconcile");
    store.advance_clock(2 * 3600);
    reconcile(&mut store, &c.settings, Some(&previous)).expect("reconcile");
    let o = object(&store, "pd-prefill-0");
    assert!(active(&o), "{o}");
    let entry = read_joint_check(&o);
    assert_eq!(entry.as_ref().map(|v| v.state), Some(CheckState::Pending));
    assert_eq!(entry, model_entry(&world, &replica("prefill")));
}
