//! A derivation served by a step store (`model::steps`, handed to its worlds by `verify check`
//! as a `model::derive::Deriver`) returns
//! exactly what the model returns without one: after every event of generated scenarios, for
//! the world's own derivation, what it publishes and a fresh derivation. One store serves every
//! scenario, so it holds steps of other clusters, other settings and other histories, which a
//! key that forgot an input would hand out. The incremental derivation (`Deriver::incremental`,
//! one per world, keeping the latest derivation's steps) is held to the same. Gate 1's verdicts
//! and gate 2's TAS nodes, which the check's store keeps too, are held by the same replays:
//! every event's effect must agree.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use generators::check::tables::StepMemo;
use generators::{arb_scenario, ShapeConfig};
use model::cluster::{Cluster, SharedOnceMax};
use model::derive::{derive, DerivedNode, Deriver};
use model::events::{Event, World};
use model::lifecycle::PodWebhookVerdict;
use model::objects::{ClusterQueue, InstanceType, ResourceFlavor};
use model::placement::TasNode;
use model::steps::{LatestSteps, StepStore};
use model::workload::Workload;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A store (the check's, or the incremental one), counting how often a step was served
/// without computing, and apart from them how often a gate-1 verdict and a gate-2 TAS node
/// were.
#[derive(Default)]
struct Counting<S> {
    inner: S,
    asked: AtomicUsize,
    served: AtomicUsize,
    verdicts_asked: AtomicUsize,
    verdicts_served: AtomicUsize,
    tas_asked: AtomicUsize,
    tas_served: AtomicUsize,
}

/// Counts one ask in `asked` and, unless `compute` runs, one serving in `served`.
fn counted<'a, T>(
    (asked, served): (&'a AtomicUsize, &'a AtomicUsize),
    compute: &'a mut dyn FnMut() -> T,
) -> impl FnMut() -> T + 'a {
    asked.fetch_add(1, Ordering::Relaxed);
    served.fetch_add(1, Ordering::Relaxed);
    move || {
        served.fetch_sub(1, Ordering::Relaxed);
        compute()
    }
}

impl<S> Counting<S> {
    fn count<'a, T>(&'a self, compute: &'a mut dyn FnMut() -> T) -> impl FnMut() -> T + 'a {
        counted((&self.asked, &self.served), compute)
    }
}

impl<S: StepStore> StepStore for Counting<S> {
    fn node(&self, key: u64, compute: &mut dyn FnMut() -> DerivedNode) -> DerivedNode {
        let mut counted = self.count(compute);
        self.inner.node(key, &mut counted)
    }

    fn pool(
        &self,
        key: u64,
        compute: &mut dyn FnMut() -> (InstanceType, ClusterQueue),
    ) -> (InstanceType, ClusterQueue) {
        let mut counted = self.count(compute);
        self.inner.pool(key, &mut counted)
    }

    fn flavor(&self, key: u64, compute: &mut dyn FnMut() -> ResourceFlavor) -> ResourceFlavor {
        let mut counted = self.count(compute);
        self.inner.flavor(key, &mut counted)
    }

    fn selection(&self, key: u64, compute: &mut dyn FnMut() -> Vec<usize>) -> Vec<usize> {
        let mut counted = self.count(compute);
        self.inner.selection(key, &mut counted)
    }

    fn pod_webhook(
        &self,
        key: u64,
        compute: &mut dyn FnMut() -> PodWebhookVerdict,
    ) -> PodWebhookVerdict {
        let counters = (&self.verdicts_asked, &self.verdicts_served);
        self.inner.pod_webhook(key, &mut counted(counters, compute))
    }

    fn tas_node(&self, key: u64, compute: &mut dyn FnMut() -> TasNode) -> TasNode {
        let counters = (&self.tas_asked, &self.tas_served);
        self.inner.tas_node(key, &mut counted(counters, compute))
    }

    fn settled(&self) {
        self.inner.settled()
    }
}

#[test]
fn a_stored_derivation_equals_the_models_after_every_event() {
    let counting = Arc::new(Counting::<StepMemo>::default());
    let deriver = Deriver::with_steps(counting.clone());
    for (case, scenario) in scenarios(96).enumerate() {
        for cluster in variants(&scenario.cluster) {
            replay_both(&deriver, case, cluster, &scenario.events);
        }
    }
    let asked = counting.asked.load(Ordering::Relaxed);
    let served = counting.served.load(Ordering::Relaxed);
    // Not vacuous: the store was asked, and served steps it had kept (re-derivations after an
    // event that left most nodes and pools alone).
    assert!(asked > 1000, "the store was asked {asked} times");
    assert!(served * 3 > asked, "served {served} of {asked} steps");
    // Gate-1 verdicts too: submissions replayed under other settings meet the same Workload
    // and InstanceType again.
    let asked = counting.verdicts_asked.load(Ordering::Relaxed);
    let served = counting.verdicts_served.load(Ordering::Relaxed);
    assert!(
        served > 0 && served < asked,
        "served {served} of {asked} verdicts"
    );
    // TAS nodes too: gate 2 on topology-aware flavors meets the same node and labels again.
    let asked = counting.tas_asked.load(Ordering::Relaxed);
    let served = counting.tas_served.load(Ordering::Relaxed);
    assert!(
        served > 0 && served < asked,
        "served {served} of {asked} TAS nodes"
    );
}

#[test]
fn an_incremental_derivation_equals_the_models_after_every_event() {
    let (mut asked, mut served) = (0, 0);
    for (case, scenario) in scenarios(96).enumerate() {
        for cluster in variants(&scenario.cluster) {
            // each world its own store, as the soak's and the twin operator's
            let counting = Arc::new(Counting::<LatestSteps>::default());
            let deriver = Deriver::with_steps(counting.clone());
            replay_both(&deriver, case, cluster, &scenario.events);
            asked += counting.asked.load(Ordering::Relaxed);
            served += counting.served.load(Ordering::Relaxed);
        }
    }
    // Not vacuous: most steps after an event are the previous derivation's.
    assert!(asked > 1000, "the stores were asked {asked} times");
    assert!(served * 2 > asked, "served {served} of {asked} steps");
}

/// The walkthrough's T4 pool.
const T4: &str = "gpustack--nvidia-tesla-t4-linux-amd64";

/// Gate 1 reads the InstanceType fronting the Workload's queue: one Workload, under one pool
/// name whose InstanceType offers a MIG profile on one cluster and not on the other, gets each
/// cluster's own verdict through one store, whichever cluster asks first.
#[test]
fn a_stored_gate_one_verdict_is_the_fronting_instance_types() {
    let w = model::examples::workload(
        "mig",
        T4,
        1,
        &[
            ("nvidia.com/gpu.partitioned", "1"),
            ("nvidia.com/gpu.partitioned.mig-2g.10gb", "1"),
        ],
    );
    let (mig, logical) = (
        model::examples::walkthrough_with_mig_card(),
        model::examples::walkthrough(),
    );
    one_store_judges_each_as_the_plain_model(
        &w,
        [&mig, &logical],
        "the profile is offered on one cluster only",
    );
}

/// Gate 2's TAS view of a node reads the node's ledger: one Workload asking two T4 cards on a
/// cluster whose node-t4-b is free and on one where an earlier Workload holds all four of its
/// cards (node-t4-a has one) gets each cluster's own verdict through one store, whichever
/// cluster asks first.
#[test]
fn a_stored_tas_node_is_its_ledgers() {
    use model::lifecycle::AdmissionState;
    let gpus = |name, n| model::examples::workload(name, T4, 1, &[("nvidia.com/gpu", n)]);
    let free = model::examples::walkthrough();
    let mut holding = AdmissionState::new(free.clone());
    holding.submit(&gpus("first", "4"));
    one_store_judges_each_as_the_plain_model(
        &gpus("second", "2"),
        [&free, &holding.cluster],
        "node-t4-b has room on one cluster only",
    );
}

/// `w` submitted alone on each of two `clusters`, whose plain verdicts differ (`why`), gets
/// the plain verdict through one `StepMemo` serving both, in either order.
fn one_store_judges_each_as_the_plain_model(w: &Workload, clusters: [&Cluster; 2], why: &str) {
    use model::lifecycle::AdmissionState;
    let submit =
        |c: &Cluster, d: &Deriver| AdmissionState::with_deriver(c.clone(), d.clone()).submit(w);
    let plain = Deriver::plain();
    let [a, b] = clusters;
    assert_ne!(submit(a, &plain), submit(b, &plain), "{why}");
    for order in [[a, b], [b, a]] {
        let stored = Deriver::with_steps(Arc::new(StepMemo::default()));
        for c in order {
            assert_eq!(submit(c, &stored), submit(c, &plain));
        }
    }
}

/// `n` generated scenarios (with events), the same in every run.
fn scenarios(n: usize) -> impl Iterator<Item = model::scenario::Scenario> {
    let strategy = arb_scenario(&ShapeConfig::default());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: n as u32,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    (0..n).map(move |_| {
        strategy
            .new_tree(&mut runner)
            .expect("a scenario")
            .current()
    })
}

/// The cluster as generated, and with settings only a pool's step reads flipped (the CPU
/// view's overcommit, the SH once-max rule), so equal nodes meet different settings.
fn variants(cluster: &Cluster) -> Vec<Cluster> {
    let mut overcommit = cluster.clone();
    overcommit.settings.general_resources_overcommit ^= true;
    let mut once_max = cluster.clone();
    once_max.settings.shared_once_max = match cluster.settings.shared_once_max {
        SharedOnceMax::Cards => SharedOnceMax::Shares,
        SharedOnceMax::Shares => SharedOnceMax::Cards,
    };
    vec![cluster.clone(), overcommit, once_max]
}

/// Replays `events` on `cluster` with and without the store; every derivation must agree.
fn replay_both(deriver: &Deriver, case: usize, cluster: Cluster, events: &[Event]) {
    {
        let mut plain = World::new(cluster.clone());
        let mut stored = World::with_deriver(cluster, deriver.clone());
        assert_eq!(
            stored.admission.derived, plain.admission.derived,
            "case {case}: the initial derivation"
        );
        for (i, event) in events.iter().enumerate() {
            let effect = plain.apply(event);
            let stored_effect = stored.apply(event);
            assert_eq!(stored_effect, effect, "case {case}, event {i}: {event:?}");
            assert_eq!(
                stored.admission.derived, plain.admission.derived,
                "case {case}, event {i}: the world's derivation after {event:?}"
            );
            assert_eq!(
                stored.observe(),
                plain.observe(),
                "case {case}, event {i}: what the world publishes"
            );
            assert_eq!(
                deriver.derive(stored.cluster()),
                derive(plain.cluster()),
                "case {case}, event {i}: a fresh derivation"
            );
        }
    }
}
