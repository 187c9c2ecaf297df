//! The node-devices AdmissionCheck end to end through HTTP: the walkthrough cluster mocked on a
//! served twin with its reference operator, Workloads of several families created with a plain
//! hyper client, and each Workload's `gpustack-node-devices` entry read back and compared with
//! what the model's lifecycle (`AdmissionState::submit`, in the same order) decides.
//! No assertion depends on timing: the test waits (bounded) until every Workload has a verdict.

mod common;

use std::time::Duration;

use common::{get, post, runtime};
use live::operator::{spawn_twin_with_operator, write_mock, OperatorHandle};
use live::server::http::TwinHandle;
use live::server::store::Store;
use live::wire::workload::{outcome_of, read_check, workload_object};
use model::cluster::Cluster;
use model::examples::{walkthrough, workload};
use model::labels::{HOSTNAME, NODE_DEVICES_CHECK};
use model::lifecycle::{AdmissionState, Outcome};
use model::workload::Workload;
use serde_json::Value;

const T4: &str = "gpustack--nvidia-tesla-t4-linux-amd64";
const A10G: &str = "gpustack--nvidia-a10g-linux-amd64";
const WORKLOADS: &str = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads";

/// Five 60 % slices that Kueue's TAS puts on node-t4-b's four cards (its summed units and
/// the fit label admit them) but that fit four cards only one each (gate 3 Retry), whole cards,
/// a slice, a shared pair with no room left (node-t4-a's one card fails its `.count` pin, the
/// 4d flavor's quota is taken: Pending), one more than quota, a bad request.
fn workloads() -> Vec<Workload> {
    vec![
        workload(
            "frag",
            T4,
            5,
            &[
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", "60"),
            ],
        ),
        workload("whole", T4, 4, &[("nvidia.com/gpu", "1")]),
        workload(
            "slice",
            A10G,
            1,
            &[
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", "20"),
            ],
        ),
        workload("shared", T4, 1, &[("nvidia.com/gpu.shared", "2")]),
        workload("one-more", T4, 1, &[("nvidia.com/gpu", "1")]),
        workload("too-many", T4, 1, &[("nvidia.com/gpu", "1")]),
        workload("garbage", A10G, 1, &[("nvidia.com/gpu", "two")]),
    ]
}

#[test]
fn workloads_get_the_models_verdicts_through_http() {
    let cluster = walkthrough();
    let mut model = AdmissionState::new(cluster.clone());
    let expected: Vec<(String, Outcome)> = workloads()
        .iter()
        .map(|w| (w.name.clone(), model.submit(w)))
        .collect();
    let kinds: std::collections::BTreeSet<&str> = expected
        .iter()
        .map(|(_, o)| match o {
            Outcome::Admitted => "admitted",
            Outcome::Held { .. } => "held",
            Outcome::Retry { .. } => "retry",
            Outcome::Pending { .. } => "pending",
            Outcome::Rejected { .. } => "rejected",
            Outcome::Unplaceable { .. } => "unplaceable",
        })
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["admitted", "pending", "rejected", "retry"],
        "the sequence covers every verdict: {expected:?}"
    );

    let (got, twin, operator) = verdicts_through_http(&cluster, &workloads());
    let addr = twin.addr();
    let mut want: Vec<(String, Option<Outcome>)> =
        expected.into_iter().map(|(n, o)| (n, Some(o))).collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);

    // the AdmissionCheck is there and Active; a second look at a Workload changes nothing
    runtime().block_on(async {
        let path = format!("/apis/kueue.x-k8s.io/v1beta2/admissionchecks/{NODE_DEVICES_CHECK}");
        let (code, check) = get(addr, &path).await;
        assert_eq!(code, 200);
        assert_eq!(
            check["spec"]["controllerName"],
            "worker.gpustack.ai/node-devices"
        );
        assert_eq!(check["status"]["conditions"][0]["type"], "Active");
        assert_eq!(check["status"]["conditions"][0]["status"], "True");
        let (_, whole) = get(addr, &format!("{WORKLOADS}/whole")).await;
        let entry = &whole["status"]["admissionChecks"][0];
        assert_eq!(entry["name"], NODE_DEVICES_CHECK);
        assert_eq!(entry["state"], "Ready");
        assert!(entry["lastTransitionTime"].is_string());
        let (_, frag) = get(addr, &format!("{WORKLOADS}/frag")).await;
        assert_eq!(
            frag["status"]["admissionChecks"][0]["requeueAfterSeconds"],
            Value::from(30)
        );
    });
    operator.stop();
    assert!(twin.shutdown().is_ok());
}

/// Serves `cluster` on a twin with its reference operator, creates `workloads` in order and
/// reads every Workload's verdict back (name-sorted) once each has one.
fn verdicts_through_http(
    cluster: &Cluster,
    workloads: &[Workload],
) -> (Vec<(String, Option<Outcome>)>, TwinHandle, OperatorHandle) {
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, cluster), Ok(()));
    let spawned = spawn_twin_with_operator(None, store, cluster.settings.clone());
    let Ok((twin, operator)) = spawned else {
        panic!("spawn: {:?}", spawned.err());
    };
    let addr = twin.addr();
    let got = runtime().block_on(async {
        for w in workloads {
            let (code, body) = post(addr, WORKLOADS, workload_object(w)).await;
            assert_eq!(code, 201, "{body}");
        }
        for _ in 0..1000 {
            let (_, list) = get(addr, WORKLOADS).await;
            let items = list["items"].as_array().cloned().unwrap_or_default();
            let mut verdicts: Vec<(String, Option<Outcome>)> = items
                .iter()
                .map(|o| {
                    let name = o["metadata"]["name"].as_str().unwrap_or_default();
                    (name.to_string(), read_check(o).as_ref().map(outcome_of))
                })
                .collect();
            if verdicts.len() == workloads.len() && verdicts.iter().all(|(_, v)| v.is_some()) {
                verdicts.sort_by(|a, b| a.0.cmp(&b.0));
                return verdicts;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("not every Workload got a verdict: {:?}", operator.last());
    });
    (got, twin, operator)
}

/// Kueue's TAS on the twin: with a second 4-card T4 node in the 4d flavor (12.8M credits), one
/// Pod of five whole cards fits the quota but no single node and stays Pending with no quota
/// reserved, while two Pods of three cards (one per node) are admitted.
#[test]
fn a_pod_above_every_node_but_within_the_pool_stays_pending_on_the_twin() {
    let mut cluster = walkthrough();
    let mut copy = cluster
        .nodes
        .iter()
        .find(|n| n.name == "node-t4-b")
        .cloned()
        .expect("walkthrough has node-t4-b");
    copy.name = "node-t4-c".into();
    copy.labels.insert(HOSTNAME.into(), "node-t4-c".into());
    cluster.nodes.push(copy);
    let workloads = [
        workload("five", T4, 1, &[("nvidia.com/gpu", "5")]),
        workload("two", T4, 2, &[("nvidia.com/gpu", "3")]),
    ];
    let mut model = AdmissionState::new(cluster.clone());
    let expected: Vec<(String, Option<Outcome>)> = workloads
        .iter()
        .map(|w| (w.name.clone(), Some(model.submit(w))))
        .collect();
    match &expected[0].1 {
        Some(Outcome::Pending { reason }) => {
            assert!(
                reason.contains("doesn't allow to fit any of 1 pod(s)"),
                "{reason}"
            )
        }
        other => panic!("the model admits five cards on no node: {other:?}"),
    }
    assert_eq!(expected[1].1, Some(Outcome::Admitted));
    let (got, twin, operator) = verdicts_through_http(&cluster, &workloads);
    let mut want = expected;
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
    operator.stop();
    assert!(twin.shutdown().is_ok());
}
