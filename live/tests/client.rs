//! The kube-rs client against the embedded twin (its reference operator reconciling, its
//! validators the project's own schemas), through a kubeconfig the test writes: mock, wait by
//! watching, observe, diff against the model, tear down.

use std::path::PathBuf;
use std::time::Duration;

use live::client::{diff, expected, mocked_cluster, Client, Quiescence, Quiescer, RunId};
use live::operator::{spawn_twin_with_operator, OperatorHandle};
use live::server::http::TwinHandle;
use live::server::kubeconfig::kubeconfig_yaml;
use live::server::store::{Store, StoreConfig};
use model::events::{Event, World};
use model::mutants::Mutant;
use model::Settings;

const WINDOW: Duration = Duration::from_millis(150);
const BUDGET: Duration = Duration::from_secs(30);

struct Twin {
    handle: TwinHandle,
    _operator: OperatorHandle,
    kubeconfig: PathBuf,
    _dir: tempdir::Dir,
}

mod tempdir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn twin(settings: Settings) -> Twin {
    let mut store = Store::new(StoreConfig::default());
    live::server::schemas::install_validators(&mut store);
    let (handle, operator) =
        spawn_twin_with_operator(None, store, settings).expect("the twin serves on loopback");
    let dir = std::env::temp_dir().join(format!(
        "verify-client-{}-{}",
        std::process::id(),
        handle.addr().port()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_yaml(handle.url(), "verify-twin")).expect("write");
    Twin {
        handle,
        _operator: operator,
        kubeconfig,
        _dir: tempdir::Dir(dir),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn the_walkthrough_mocked_through_the_client_matches_the_model_and_tears_down_clean() {
    let t = twin(Settings::default());
    runtime().block_on(async {
        let client = Client::connect(&t.kubeconfig, "verify-twin")
            .await
            .expect("connects");
        assert_eq!(client.target().server, t.handle.url());
        let run = RunId::new("walkthrough-1").expect("valid id");
        let cluster = mocked_cluster(&model::examples::walkthrough(), &run);
        let mut quiescer = Quiescer::new(&client, &run);
        let writes = client.mock(&cluster, &run).await.expect("mock");
        assert!(writes >= cluster.nodes.len() * 2);
        let q = quiescer.wait(WINDOW, BUDGET).await;
        assert!(matches!(q, Quiescence::Quiet { .. }), "{q:?}");
        let observed = client.observe().await.expect("observe");
        let want = expected(&World::new(cluster.clone()).observe());
        assert!(
            want.len() > cluster.nodes.len(),
            "the walkthrough derives objects"
        );
        let differences = diff(&want, &observed);
        assert!(
            differences.is_empty(),
            "{}",
            oracle::render_table(&differences)
        );

        // a node leaves: the client syncs, the operator re-derives, the model agrees
        let mut world = World::new(cluster.clone());
        let leaving = cluster.nodes[0].name.clone();
        let event = Event::NodeLeave { name: leaving };
        apply_and_match(&client, &mut quiescer, &run, &mut world, &event).await;

        let teardown = client.teardown(&run).await.expect("teardown");
        assert!(!teardown.deleted.is_empty());
        assert_eq!(teardown.leftovers, Vec::<String>::new());
        assert_eq!(
            client.labelled(&run).await.expect("list"),
            Vec::<String>::new()
        );
    });
}

#[test]
fn a_mutated_operator_shows_up_in_the_diff() {
    let t = twin(Settings {
        mutant: Some(Mutant::QuotaOffByOne),
        ..Settings::default()
    });
    runtime().block_on(async {
        let client = Client::connect(&t.kubeconfig, "verify-twin")
            .await
            .expect("connects");
        let run = RunId::new("mutant").expect("valid id");
        let cluster = mocked_cluster(&model::examples::walkthrough(), &run);
        let mut quiescer = Quiescer::new(&client, &run);
        client.mock(&cluster, &run).await.expect("mock");
        let q = quiescer.wait(WINDOW, BUDGET).await;
        assert!(matches!(q, Quiescence::Quiet { .. }), "{q:?}");
        let observed = client.observe().await.expect("observe");
        let differences = diff(&expected(&World::new(cluster).observe()), &observed);
        assert!(
            differences
                .iter()
                .any(|d| d.kind == oracle::ObjectKind::ClusterQueue
                    && d.field.contains("nominalQuota")),
            "{}",
            oracle::render_table(&differences)
        );
    });
}

#[test]
fn an_unknown_context_is_refused_and_the_kubeconfig_is_left_as_it_was() {
    let t = twin(Settings::default());
    let before = std::fs::read_to_string(&t.kubeconfig).expect("read");
    runtime().block_on(async {
        let err = Client::connect(&t.kubeconfig, "prod")
            .await
            .err()
            .expect("refused");
        let text = err.to_string();
        assert!(
            text.contains("`prod`") && text.contains("verify-twin"),
            "{text}"
        );
        let missing = t.kubeconfig.with_file_name("absent");
        let err = Client::connect(&missing, "verify-twin")
            .await
            .err()
            .expect("refused");
        assert!(err.to_string().contains("absent"), "{err}");
    });
    assert_eq!(
        std::fs::read_to_string(&t.kubeconfig).expect("read"),
        before
    );
}

#[test]
fn a_budget_too_small_to_list_is_inconclusive_not_a_panic() {
    let t = twin(Settings::default());
    runtime().block_on(async {
        let client = Client::connect(&t.kubeconfig, "verify-twin")
            .await
            .expect("connects");
        let run = RunId::new("short").expect("valid id");
        let mut quiescer = Quiescer::new(&client, &run);
        let q = quiescer
            .wait(Duration::from_secs(3600), Duration::ZERO)
            .await;
        assert!(matches!(q, Quiescence::Inconclusive { .. }), "{q:?}");
    });
}

#[test]
fn run_ids_are_label_values() {
    assert!(RunId::new("run-20261130-1").is_ok());
    assert!(RunId::new("").is_err());
    assert!(RunId::new("-x").is_err());
    assert!(RunId::new("a/b").is_err());
    assert!(RunId::new(&"x".repeat(64)).is_err());
    // a run prints its directory's name; its objects carry that id lower-cased
    assert_eq!(
        RunId::new("20261201T181703Z-4ddea6")
            .expect("valid")
            .as_str(),
        "20261201t181703z-4ddea6"
    );
    assert_eq!(
        RunId::new("Case-14").expect("valid").selector(),
        "verify.gpustack.ai/run=case-14"
    );
}

#[test]
fn a_node_mocked_as_deleting_goes_when_it_leaves() {
    let t = twin(Settings::default());
    runtime().block_on(async {
        let client = Client::connect(&t.kubeconfig, "verify-twin")
            .await
            .expect("connects");
        let run = RunId::new("deleting").expect("valid id");
        let mut cluster = mocked_cluster(&model::examples::walkthrough(), &run);
        cluster.nodes[0].deleting = true;
        let name = cluster.nodes[0].name.clone();
        client.mock(&cluster, &run).await.expect("mock");
        let nodes = client
            .list::<k8s_openapi::api::core::v1::Node>(None, Some(&run.selector()))
            .await
            .expect("list");
        let held = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(&name));
        assert!(held.is_some_and(|n| n.metadata.deletion_timestamp.is_some()));
        let mut after = cluster.clone();
        after.nodes.retain(|n| n.name != name);
        client
            .sync(Some(&cluster), &after, &run)
            .await
            .expect("sync");
        let left = client.labelled(&run).await.expect("list");
        assert!(
            !left.iter().any(|o| o == &format!("Node {name}")),
            "{left:?}"
        );
    });
}

/// Applies `event` to `world`, syncs the twin to the new shape, waits for quiescence and
/// asserts the twin's objects are the model's; returns what the event did.
async fn apply_and_match(
    client: &Client,
    quiescer: &mut Quiescer,
    run: &RunId,
    world: &mut World,
    event: &Event,
) -> model::events::Effect {
    let before = world.cluster().clone();
    let effect = world.apply(event);
    client
        .sync(Some(&before), world.cluster(), run)
        .await
        .expect("sync");
    let q = quiescer.wait(WINDOW, BUDGET).await;
    assert!(matches!(q, Quiescence::Quiet { .. }), "{q:?}");
    let observed = client.observe().await.expect("observe");
    let differences = diff(&expected(&world.observe()), &observed);
    assert!(
        differences.is_empty(),
        "after {event:?}:\n{}",
        oracle::render_table(&differences)
    );
    effect
}

/// The finding "sliced ledgers on the wire": the Devices CRD has no `allocatedSlices`, so a
/// slice's slot travels as the charging Pod's allocation record, and the twin's operator counts
/// it back from the Pods bound to the node. One A10G card with a single slot takes one slice:
/// the model's SL view has no free slot left, and neither must the twin's.
#[test]
fn a_sliced_charge_keeps_its_slot_on_the_wire() {
    let t = twin(Settings::default());
    runtime().block_on(async {
        let client = Client::connect(&t.kubeconfig, "verify-twin")
            .await
            .expect("connects");
        let run = RunId::new("slots").expect("valid id");
        let mut shape = model::examples::walkthrough();
        let a10g = shape
            .nodes
            .iter_mut()
            .find(|n| n.name == "node-a10g")
            .expect("the walkthrough has an A10G node");
        for card in a10g
            .devices
            .iter_mut()
            .flat_map(|d| &mut d.groups)
            .flat_map(|g| &mut g.cards)
        {
            if let Some(cap) = &mut card.capability {
                cap.logical_sliced_count = 1;
            }
        }
        let cluster = mocked_cluster(&shape, &run);
        let mut quiescer = Quiescer::new(&client, &run);
        client.mock(&cluster, &run).await.expect("mock");
        let mut world = World::new(cluster.clone());
        let slice = model::examples::workload(
            "one-slice",
            "gpustack--nvidia-a10g-linux-amd64",
            1,
            &[
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", "20"),
            ],
        );
        let event = Event::Submit { workload: slice };
        let effect = apply_and_match(&client, &mut quiescer, &run, &mut world, &event).await;
        assert!(
            matches!(
                effect,
                model::events::Effect::Judged {
                    outcome: model::lifecycle::Outcome::Admitted
                }
            ),
            "{effect:?}"
        );
        let sl = world
            .observe()
            .instance_types
            .iter()
            .find(|it| it.name == "gpustack--nvidia-a10g-linux-amd64")
            .map(|it| it.status.views.sliced.remaining);
        assert_eq!(sl, Some(0), "the model: the card's only slot is taken");
        let pods = client
            .list::<k8s_openapi::api::core::v1::Pod>(None, Some(&run.selector()))
            .await
            .expect("list pods");
        let bound: Vec<_> = pods
            .iter()
            .filter_map(|p| p.spec.as_ref()?.node_name.clone())
            .collect();
        assert_eq!(bound, ["node-a10g"], "one charging Pod, bound to the node");

        // the slice finishes: its Pod goes, the slot is free again on both sides
        let event = Event::Finish {
            namespace: "default".into(),
            name: "one-slice".into(),
        };
        apply_and_match(&client, &mut quiescer, &run, &mut world, &event).await;
        let teardown = client.teardown(&run).await.expect("teardown");
        assert_eq!(teardown.leftovers, Vec::<String>::new());
    });
}

/// The admission test's sequence through the kube-rs client: each Workload whose verdict gate 3
/// gives in the wire's state (earlier charges on the ledger, no earlier Workload left) is
/// submitted, its verdict read back by watching and compared, and it is withdrawn; the model's
/// charge is then written as the mock writes any hold, so the next Workload meets it. A Workload whose queue fronts no pool gets no gate-3 verdict.
#[test]
fn gate_three_verdicts_are_read_back_and_the_workloads_withdrawn() {
    use live::client::{gate3_expectation, verdict_agrees, Readback};
    use model::admission::CheckState;
    use model::examples::workload;

    let t = twin(Settings::default());
    runtime().block_on(async {
        let client = Client::connect(&t.kubeconfig, "verify-twin")
            .await
            .expect("connects");
        let run = RunId::new("verdicts-1").expect("valid id");
        let cluster = mocked_cluster(&model::examples::walkthrough(), &run);
        let mut quiescer = Quiescer::new(&client, &run);
        client.mock(&cluster, &run).await.expect("mock");
        let q = quiescer.wait(WINDOW, BUDGET).await;
        assert!(matches!(q, Quiescence::Quiet { .. }), "{q:?}");

        const T4: &str = "gpustack--nvidia-tesla-t4-linux-amd64";
        let mut world = World::new(cluster.clone());
        let mut states = Vec::new();
        // Five 60 % slices: Kueue's TAS puts them on node-t4-b (summed units and the fit
        // label admit them), gate 3 fits its four cards one each: Retry. (A shared pair after
        // `whole` no longer reaches gate 3: TAS keeps it Pending.)
        let frag = [
            ("nvidia.com/gpu.sliced", "1"),
            ("nvidia.com/gpu.sliced.memory-percentage", "60"),
        ];
        for w in [
            workload("frag", T4, 5, &frag),
            workload("whole", T4, 4, &[("nvidia.com/gpu", "1")]),
            workload("one-more", T4, 1, &[("nvidia.com/gpu", "1")]),
        ] {
            let before = world.cluster().clone();
            // the wire holds every earlier charge and no earlier Workload
            let alone = world.admission.alone().submit(&w);
            if let Some(want) = gate3_expectation(&alone) {
                let got = client
                    .gate3_verdict(&w, &run, BUDGET)
                    .await
                    .expect("readback");
                let Readback::Verdict(v, _) = got else {
                    panic!("{}: no verdict: {got:?}", w.name);
                };
                assert!(verdict_agrees(&want, &v), "{}: {want:?} vs {v:?}", w.name);
                states.push(v.state);
            }
            world.apply(&Event::Submit { workload: w });
            client
                .sync(Some(&before), world.cluster(), &run)
                .await
                .expect("sync");
            let q = quiescer.wait(WINDOW, BUDGET).await;
            assert!(matches!(q, Quiescence::Quiet { .. }), "{q:?}");
        }
        assert!(
            states.contains(&CheckState::Ready) && states.contains(&CheckState::Retry),
            "the sequence reads back a Ready and a Retry: {states:?}"
        );
        let left = client
            .list::<live::crd::Workload>(None, Some(&run.selector()))
            .await
            .expect("list");
        assert!(left.is_empty(), "withdrawn: {left:?}");

        // its queue fronts no pool: Kueue (played by the twin) leaves it Pending
        let stray = workload("stray", "no-such-pool", 1, &[("nvidia.com/gpu", "1")]);
        let got = client
            .gate3_verdict(&stray, &run, Duration::from_millis(600))
            .await
            .expect("readback");
        assert!(matches!(got, Readback::Undecided { .. }), "{got:?}");

        let teardown = client.teardown(&run).await.expect("teardown");
        assert_eq!(teardown.leftovers, Vec::<String>::new());
    });
}
