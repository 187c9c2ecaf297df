//! The live tier, run against a twin that plays a real cluster: served on loopback with its
//! own objects (the walkthrough cluster) and its own operator, reached through a kubeconfig
//! whose context is not the twin's, exactly as `verify fuzz --context` reaches a cluster.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fuzz::{scenario_for, FuzzConfig, LiveConfig, Tier};
use generators::ShapeConfig;
use live::client::{localize, Client, Kubeconfig, Token};
use live::operator::{spawn_twin, OperatorHandle};
use live::server::http::{ServeConfig, TwinHandle};
use live::server::store::{Store, StoreConfig};
use model::events::{Effect, World};
use model::mutants::Mutant;
use proptest::prelude::*;
use tier::{ApiConfig, ApiError, ApiTarget, Lane};

const CONTEXT: &str = "kind-verify-test";

/// A twin holding the walkthrough cluster, its operator mutated by `mutant`.
fn cluster(mutant: Option<Mutant>) -> (TwinHandle, OperatorHandle, Kubeconfig) {
    let mut store = Store::new(StoreConfig::default());
    live::server::schemas::install_validators(&mut store);
    live::operator::write_mock(&mut store, &model::examples::walkthrough())
        .expect("the walkthrough mocks");
    let settings = model::Settings {
        mutant,
        ..model::Settings::default()
    };
    let (twin, operator) =
        spawn_twin(None, store, ServeConfig::default(), settings).expect("the twin serves");
    let yaml = live::server::kubeconfig::kubeconfig_yaml(twin.url(), CONTEXT);
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
    (twin, operator, kubeconfig)
}

fn lane(run: &str) -> Lane {
    Lane {
        run: run.into(),
        lane: 0,
        interrupt: Arc::new(AtomicBool::new(false)),
        teardown_budget: Duration::from_secs(20),
        overlay: None,
    }
}

/// A live run `run` on the twin playing a cluster.
fn live_config(kubeconfig: Kubeconfig, run: &str) -> LiveConfig {
    LiveConfig {
        kubeconfig,
        context: CONTEXT.into(),
        run: run.into(),
        interrupt: Arc::new(AtomicBool::new(false)),
        teardown_budget: Duration::from_secs(20),
        overlay: None,
    }
}

/// Scenarios as a cluster with the operator's default settings can run them.
fn live_shape() -> ShapeConfig {
    ShapeConfig {
        settings: Some(model::Settings::default()),
        ..ShapeConfig::default()
    }
}

/// Everything the cluster holds that no run created, reduced as the diff reads it.
fn own_objects(kubeconfig: &Kubeconfig) -> live::client::Observed {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = Client::from_kubeconfig(kubeconfig.clone(), CONTEXT)
            .await
            .expect("connects");
        let mut observed = client.observe().await.expect("observes");
        for objects in observed.objects.values_mut() {
            objects.retain(|id, _| !id.contains("vfy"));
        }
        observed
    })
}

#[test]
fn seeds_run_on_a_cluster_agree_leave_nothing_and_touch_none_of_its_objects() {
    let (_twin, _operator, kubeconfig) = cluster(None);
    let before = own_objects(&kubeconfig);
    assert!(!before.is_empty());
    let mut runner = ApiTarget::connect(
        kubeconfig.clone(),
        CONTEXT,
        ApiConfig::default(),
        lane("live-test"),
        "gpustack-system",
    )
    .expect("connects");
    for seed in 0..6 {
        let s = scenario_for(seed, &live_shape()).expect("a scenario");
        match runner.judge(&s, None) {
            Ok(None) => {}
            Ok(Some(d)) => panic!("seed {seed}: {}", d.message),
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    // Workloads went to the run's own (localized) queues and their verdicts agreed
    assert!(
        runner.verdicts_read() > 0,
        "no gate-3 verdict was read back"
    );
    assert_eq!(runner.leftovers(), Vec::<String>::new());
    assert_eq!(own_objects(&kubeconfig), before);
}

/// The first seed on which operator mutant `m` publishes different objects (before any
/// awareness flip, which a cluster's operator cannot take) and whose scenario has something to
/// delete (two nodes, or a node and an event), so a shrink can make it smaller.
fn seed_changing_an_object(m: Mutant) -> u64 {
    (0..200)
        .find(|&seed| {
            let s = scenario_for(seed, &live_shape()).expect("a scenario");
            if s.cluster.nodes.len() + s.events.len() < 2 {
                return false;
            }
            let mut mutated = s.clone();
            mutated.cluster.settings.mutant = Some(m);
            let checked = s
                .events
                .iter()
                .position(model::events::Event::flips_setting)
                .unwrap_or(s.events.len());
            oracle::compare_runs(&s, &mutated).is_some_and(|d| {
                d.step <= checked
                    && d.differences
                        .iter()
                        .any(|x| x.kind != oracle::ObjectKind::Effect)
            })
        })
        .expect("a seed where the mutant changes an object")
}

#[test]
fn a_mutated_operator_on_the_cluster_is_caught_and_reproduced() {
    let m = Mutant::QuotaOffByOne;
    let seed = seed_changing_an_object(m);
    let s = scenario_for(seed, &live_shape()).expect("a scenario");
    let (_twin, _operator, kubeconfig) = cluster(Some(m));
    let mut runner = ApiTarget::connect(
        kubeconfig,
        CONTEXT,
        ApiConfig::default(),
        lane("live-mutant"),
        "gpustack-system",
    )
    .expect("connects");
    match runner.judge(&s, None) {
        Ok(Some(d)) => {
            assert!(d.message.contains("diverges"));
            // folded along the derivation graph: upstream-most objects first
            assert!(d.message.contains("finding 1: "), "{}", d.message);
        }
        Ok(None) => panic!("seed {seed}: the mutated operator was not caught"),
        Err(ApiError::Flaky(d)) => panic!("seed {seed}: did not reproduce: {}", d.message),
        Err(e) => panic!("seed {seed}: {e}"),
    }
    assert_eq!(runner.leftovers(), Vec::<String>::new());
}

#[test]
fn the_fuzz_loop_runs_the_live_tier_side_by_side() {
    let (_twin, _operator, kubeconfig) = cluster(None);
    let report = fuzz::run(
        &FuzzConfig {
            tier: Tier::Live,
            seeds: 4,
            jobs: 2,
            shape: live_shape(),
            live: Some(live_config(kubeconfig, "live-loop")),
            ..FuzzConfig::default()
        },
        &|_, _| {},
    )
    .expect("runs");
    assert_eq!(report.ran, 4);
    assert!(report.failures.is_empty() && report.inconclusive.is_empty());
    assert!(report.flaky.is_empty() && report.leftovers.is_empty());
}

/// A divergence only the cluster shows (its operator is mutated; the model is not) is shrunk
/// by deletion, candidates side by side in pools of their own: the counterexample is smaller
/// than the seed's scenario, still diverges, and every candidate was torn down.
#[test]
fn a_divergence_on_a_cluster_shrinks_side_by_side_and_leaves_nothing() {
    let m = Mutant::QuotaOffByOne;
    let seed = seed_changing_an_object(m);
    let original = scenario_for(seed, &live_shape()).expect("a scenario");
    let (_twin, _operator, kubeconfig) = cluster(Some(m));
    let report = fuzz::run(
        &FuzzConfig {
            tier: Tier::Live,
            seed: Some(seed),
            jobs: 1,
            shape: live_shape(),
            twin: ApiConfig {
                shrink_steps: 40,
                shrink_width: 3,
                ..ApiConfig::default()
            },
            live: Some(live_config(kubeconfig, "live-shrink")),
            ..FuzzConfig::default()
        },
        &|_, _| {},
    )
    .expect("runs");
    let [failure] = report.failures.as_slice() else {
        panic!("one failure expected: {report:?}");
    };
    let size = |s: &model::scenario::Scenario| s.events.len() + s.cluster.nodes.len();
    assert!(failure.shrinks > 0, "nothing was deleted");
    assert!(
        size(&failure.scenario) < size(&original),
        "{} < {}",
        size(&failure.scenario),
        size(&original)
    );
    assert!(failure.message.contains("diverges"), "{}", failure.message);
    assert!(report.flaky.is_empty(), "{:?}", report.flaky);
    assert_eq!(report.leftovers, Vec::<String>::new());
}

/// The outcome of each event without the names localization changes.
fn effects(s: &model::scenario::Scenario) -> Vec<String> {
    let mut world = World::new(s.cluster.clone());
    s.events
        .iter()
        .map(|e| match world.apply(e) {
            Effect::Judged { outcome } => format!("{outcome:?}")
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .unwrap_or_default()
                .to_string(),
            Effect::Evicted { workloads } => format!("evicted {}", workloads.len()),
            Effect::Parked { workloads } => format!("parked {}", workloads.len()),
            Effect::Ignored { .. } => "ignored".into(),
            other => format!("{other:?}"),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Localizing keeps what happens: every Workload meets the same outcome in the localized
    /// scenario, and the chain derives as many objects of each kind.
    #[test]
    fn localizing_keeps_every_outcome_and_object_count(s in generators::arb_scenario(&live_shape())) {
        let token = Token::new("prop", 0, 0);
        let local = localize(&s, &token);
        prop_assume!(local.events.len() == s.events.len());
        prop_assert_eq!(effects(&s), effects(&local));
        let (a, b) = (World::new(s.cluster.clone()).observe(), World::new(local.cluster.clone()).observe());
        prop_assert_eq!(a.resource_flavors.len(), b.resource_flavors.len());
        prop_assert_eq!(a.instance_types.len(), b.instance_types.len());
        prop_assert_eq!(a.local_queues.len(), b.local_queues.len());
    }
}

/// A cluster's clock is not the client's: on the live tier a seed is stepped only up to its
/// first joint timeout; the embedded twin steps every event (its clock moves past the bound).
#[test]
fn the_live_tier_stops_at_a_joint_timeout_and_the_twin_does_not() {
    use model::events::Event;
    let (_twin, _operator, kubeconfig) = cluster(None);
    let live = ApiTarget::connect(
        kubeconfig,
        CONTEXT,
        ApiConfig::default(),
        lane("live-joint"),
        "gpustack-system",
    )
    .expect("connects");
    let events = vec![
        Event::NamespaceCreate { name: "a".into() },
        Event::JointTimeout {
            namespace: "a".into(),
            deployment: "md-0".into(),
        },
        Event::NamespaceCreate { name: "b".into() },
    ];
    assert_eq!(live.steppable(&events), &events[..1]);
    let twin = ApiTarget::start(ApiConfig::default()).expect("a twin");
    assert_eq!(twin.steppable(&events), &events[..]);
}
