//! The joint AdmissionCheck through the lifecycle (model_deployment_joint_admission.go): a
//! one-node CPU pool of 4 cores, replicas of a prefill/decode deployment asking one core each.

use model::admission::joint::{DeclaredRole, DeploymentReplica, PARKED_MARKER};
use model::cluster::{Cluster, Namespace};
use model::events::{Effect, Event, World};
use model::examples::{nfd_node, workload};
use model::lifecycle::{AdmissionState, JointPhase, Outcome};
use model::workload::Workload;

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

fn pd_roles() -> Vec<DeclaredRole> {
    ["prefill", "decode"]
        .iter()
        .map(|n| DeclaredRole {
            name: n.to_string(),
            replicas: 1,
            instance_type: POOL.into(),
        })
        .collect()
}

/// Replica `role`-0 of deployment `pd` asking `cores` cores.
fn replica(role: &str, cores: &str) -> Workload {
    Workload {
        deployment: Some(DeploymentReplica {
            deployment: "pd".into(),
            role: role.into(),
            ordinal: 0,
            roles: pd_roles(),
        }),
        ..workload(&format!("pd-{role}-0"), POOL, 1, &[("cpu", cores)])
    }
}

fn phase(s: &AdmissionState, name: &str) -> Option<JointPhase> {
    s.joint_member("default", name).map(|m| m.phase)
}

#[test]
fn a_workload_outside_a_deployment_is_ready_at_once() {
    let mut s = AdmissionState::new(cluster());
    let q = &s.observe().cluster_queues[0];
    assert!(
        q.admission_checks
            .iter()
            .any(|c| c == model::labels::JOINT_CHECK),
        "{q:?}"
    );
    assert_eq!(
        s.submit(&workload("bulk", POOL, 1, &[("cpu", "1")])),
        Outcome::Admitted
    );
    assert!(s.joint.is_empty());
    // A single-role deployment is outside the barrier too.
    let mut single = replica("prefill", "1");
    single.deployment.as_mut().unwrap().roles.truncate(1);
    assert_eq!(s.submit(&single), Outcome::Admitted);
}

#[test]
fn roles_that_all_fit_are_admitted_together() {
    let mut s = AdmissionState::new(cluster());
    let first = s.submit(&replica("prefill", "1"));
    let Outcome::Held { message } = first else {
        panic!("expected held, got {first:?}")
    };
    assert!(message.contains("the roles decode do not yet"), "{message}");
    assert!(
        !s.reserved.is_empty(),
        "the held replica keeps its reservation"
    );
    assert_eq!(s.submit(&replica("decode", "1")), Outcome::Admitted);
    assert_eq!(phase(&s, "pd-prefill-0"), Some(JointPhase::Admitted));
    assert_eq!(phase(&s, "pd-decode-0"), Some(JointPhase::Admitted));
}

#[test]
fn one_role_short_holds_every_replica_naming_the_waiting_role() {
    let mut s = AdmissionState::new(cluster());
    for i in 0..3 {
        let w = workload(&format!("filler-{i}"), POOL, 1, &[("cpu", "1")]);
        assert_eq!(s.submit(&w), Outcome::Admitted);
    }
    assert!(matches!(
        s.submit(&replica("prefill", "1")),
        Outcome::Held { .. }
    ));
    assert!(matches!(
        s.submit(&replica("decode", "1")),
        Outcome::Pending { .. }
    ));
    let held = s.joint_member("default", "pd-prefill-0").unwrap();
    assert_eq!(held.phase, JointPhase::Held);
    assert!(
        held.message.contains("1 of 2 replicas have reserved quota")
            && held.message.contains("belong to the roles decode.")
            && !held.message.contains("roles prefill"),
        "{}",
        held.message
    );
    assert_eq!(phase(&s, "pd-decode-0"), Some(JointPhase::Waiting));
    // Deleting the filler and requeueing the waiting role admits both.
    for i in 0..3 {
        s.finish("default", &format!("filler-{i}")).unwrap();
    }
    assert_eq!(s.submit(&replica("decode", "1")), Outcome::Admitted);
    assert_eq!(phase(&s, "pd-prefill-0"), Some(JointPhase::Admitted));
}

#[test]
fn the_bound_parks_a_settled_deployment_and_releases_its_quota() {
    let mut w = World::new(cluster());
    let submit = |w: &mut World, wl: Workload| match w.apply(&Event::Submit { workload: wl }) {
        Effect::Judged { outcome } => outcome,
        other => panic!("{other:?}"),
    };
    let timeout = Event::JointTimeout {
        namespace: "default".into(),
        deployment: "pd".into(),
    };
    assert!(matches!(
        submit(&mut w, replica("prefill", "4")),
        Outcome::Held { .. }
    ));
    // Still assembling (decode has no replica yet): the bound does not park it.
    assert!(matches!(w.apply(&timeout), Effect::Ignored { .. }));
    assert!(matches!(
        submit(&mut w, replica("decode", "1")),
        Outcome::Pending { .. }
    ));
    assert_eq!(
        w.apply(&timeout),
        Effect::Parked {
            workloads: vec!["default/pd-prefill-0".into()]
        }
    );
    let parked = w.admission.joint_member("default", "pd-prefill-0").unwrap();
    assert_eq!(parked.phase, JointPhase::Parked);
    assert!(parked.message.contains(PARKED_MARKER), "{}", parked.message);
    assert!(w.admission.reserved.is_empty() && w.admission.holds.is_empty());
    // A deactivated Workload is not considered again; the freed quota admits others.
    assert!(matches!(
        submit(&mut w, replica("prefill", "4")),
        Outcome::Pending { .. }
    ));
    assert_eq!(
        submit(&mut w, workload("other", POOL, 1, &[("cpu", "4")])),
        Outcome::Admitted
    );
}
