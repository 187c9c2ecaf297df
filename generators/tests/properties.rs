//! Properties of the generators themselves: everything they produce is a valid, consistent
//! input, replays without panicking, and shrinks to small shapes.

use std::sync::Arc;
use std::time::Instant;

use generators::check::tables::StepMemo;
use generators::devices::{arb_devices_with, MockKey};
use generators::{
    arb_cluster, arb_scenario, arb_scenario_through, arb_workload, pools_of, ShapeConfig,
};
use model::cluster::Cluster;
use model::derive::{derive, validate, Deriver};
use model::devices::Mode;
use model::events::{Event, World};
use model::nodefeature::local_queue_name;
use model::units::UNITS_PER_CARD;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};

/// Cards across every node and group of a cluster.
fn total_cards(c: &Cluster) -> usize {
    c.nodes
        .iter()
        .filter_map(|n| n.devices.as_ref())
        .flat_map(|d| &d.groups)
        .map(|g| g.cards.len())
        .sum()
}

/// Deriving pools through a step store (what a fuzz seed's generation does) draws the very
/// scenario a plain derivation draws, and the store holds the pools it derived.
#[test]
fn a_step_store_changes_no_draw() {
    let config = ShapeConfig::default();
    let mut filled = 0;
    for seed in 0..24u8 {
        let draw = |deriver: &Deriver| {
            let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
            let mut runner = TestRunner::new_with_rng(Config::default(), rng);
            let tree = arb_scenario_through(&config, deriver).new_tree(&mut runner);
            tree.expect("a scenario is drawn").current()
        };
        let memo = Arc::new(StepMemo::default());
        let through = draw(&Deriver::with_steps(memo.clone()));
        assert_eq!(through, draw(&Deriver::plain()), "seed byte {seed}");
        let pools = derive(&through.cluster).instance_types.len();
        assert_eq!(
            memo.pools.len(),
            pools,
            "seed byte {seed}: one step per pool"
        );
        filled += usize::from(pools > 0);
    }
    assert!(filled > 0, "some draw has a pool");
}

/// A runner whose random source is fixed, so a shrink test sees the same cases every run.
fn deterministic_runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    )
}

/// Every ledger row is one the device manager could write for its card's capability.
fn check_ledgers(cluster: &Cluster) -> Result<(), String> {
    for node in &cluster.nodes {
        let Some(devices) = &node.devices else {
            continue;
        };
        let hygon_families: Vec<bool> = devices
            .groups
            .iter()
            .filter(|g| g.manufacturer == "hygon")
            .flat_map(|g| g.cards.iter().map(|c| c.is_partitioned()))
            .collect();
        if hygon_families.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("{}: Hygon cards in two families", node.name));
        }
        for group in &devices.groups {
            for card in &group.cards {
                let at = format!("{}/{}", node.name, card.id);
                let cap = card
                    .capability
                    .clone()
                    .ok_or(format!("{at}: no capability"))?;
                let row = card.ledger.clone().ok_or(format!("{at}: no ledger"))?;
                if !(0..=UNITS_PER_CARD).contains(&row.remaining_units) {
                    return Err(format!("{at}: remaining {}", row.remaining_units));
                }
                if row.allocated_slices > cap.logical_sliced_count {
                    return Err(format!(
                        "{at}: {} slices of {}",
                        row.allocated_slices, cap.logical_sliced_count
                    ));
                }
                let has_profiles =
                    !row.allocated_profiles.is_empty() || !row.remaining_profiles.is_empty();
                if has_profiles != cap.is_partitioned() {
                    return Err(format!("{at}: profiles {has_profiles} on {cap:?}"));
                }
                let mode_fits = match row.mode {
                    Mode::None => row.remaining_units == UNITS_PER_CARD,
                    Mode::Exclusive => row.remaining_units == 0 && !cap.is_partitioned(),
                    Mode::Shared => !cap.is_partitioned(),
                    Mode::Sliced => cap.is_logically_sliceable() && row.allocated_slices > 0,
                    Mode::Partitioned => cap.is_partitioned() && !row.allocated_profiles.is_empty(),
                    Mode::Visibility => false,
                };
                if !mode_fits {
                    return Err(format!("{at}: mode {:?} with {row:?} on {cap:?}", row.mode));
                }
                for p in &row.remaining_profiles {
                    let max = cap
                        .physical_profiles
                        .iter()
                        .find(|c| c.name == p.name)
                        .map(|c| c.count)
                        .ok_or(format!("{at}: profile {} not in catalog", p.name))?;
                    if p.count > max {
                        return Err(format!("{at}: {} free {} of {max}", p.name, p.count));
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 256, failure_persistence: None, ..Config::default() })]

    #[test]
    fn generated_clusters_validate(c in arb_cluster(&ShapeConfig::default())) {
        prop_assert_eq!(validate(&c), Ok(()));
        let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
        for n in &c.nodes {
            prop_assert_eq!(
                n.labels.get(model::labels::HOSTNAME).map(model::labels::Text::as_str),
                Some(n.name.as_str())
            );
        }
        prop_assert!((1..=4).contains(&names.len()));
        prop_assert!((1..=4).contains(&c.namespaces.len()));
        prop_assert!(c.settings.mutant.is_none());
    }

    /// What the device plugins advertise is the allocatable of the same cards with every
    /// non-partitioned ledger row freed (a partitioned card keeps its carved layout): the
    /// definition `node_advertised` computes without copying the Devices.
    #[test]
    fn advertised_capacity_is_allocatable_with_every_mode_freed(
        d in generators::devices::arb_devices()
    ) {
        let mut freed = d.clone();
        for c in freed.groups.iter_mut().flat_map(|g| &mut g.cards) {
            if let Some(row) = c.ledger.as_mut().filter(|r| r.mode != Mode::Partitioned) {
                row.mode = Mode::None;
            }
        }
        prop_assert_eq!(
            model::placement::node_advertised(&d),
            model::placement::node_allocatable(&freed)
        );
    }

    #[test]
    fn generated_ledgers_are_consistent(c in arb_cluster(&ShapeConfig::default())) {
        prop_assert_eq!(check_ledgers(&c), Ok(()));
    }

    #[test]
    fn workloads_name_an_existing_entrance(
        (c, w) in arb_cluster(&ShapeConfig::default()).prop_flat_map(|c| {
            let pools = pools_of(&c);
            (Just(c), arb_workload(&pools))
        })
    ) {
        let derived = derive(&c);
        if derived.cluster_queues.is_empty() {
            return Ok(());
        }
        prop_assert!(
            derived.cluster_queues.iter().any(|q| local_queue_name(&q.name) == w.queue),
            "queue {} names no pool", w.queue
        );
        prop_assert!(c.namespaces.iter().any(|n| n.name == w.namespace));
        prop_assert!(!w.pod_sets.is_empty());
    }

    #[test]
    fn scenarios_replay_without_panicking(s in arb_scenario(&ShapeConfig::default())) {
        prop_assert!(s.events.len() <= 8);
        let mut world = World::new(s.cluster.clone());
        for e in &s.events {
            world.apply(e);
            prop_assert_eq!(validate(world.cluster()), Ok(()));
            prop_assert_eq!(check_ledgers(world.cluster()), Ok(()));
        }
        let _ = world.observe();
    }

    #[test]
    fn mock_key_makes_every_group_run_unique(d in arb_devices_with(4, MockKey::run("r42"))) {
        for g in &d.groups {
            prop_assert!(g.name.ends_with("-vfyr42"), "{}", g.name);
            prop_assert!(g.id.ends_with("vfyr42"), "{}", g.id);
            prop_assert!(g.accelerator_key().len() <= 40, "{}", g.accelerator_key());
        }
    }
}

#[test]
fn submitted_workloads_name_pools_of_the_initial_cluster() {
    let mut runner = TestRunner::deterministic();
    let strategy = arb_scenario(&ShapeConfig::default());
    let mut submits = 0;
    for _ in 0..200 {
        let s = strategy.new_tree(&mut runner).unwrap().current();
        let queues: Vec<String> = derive(&s.cluster)
            .cluster_queues
            .iter()
            .map(|q| local_queue_name(&q.name))
            .collect();
        for e in &s.events {
            if let Event::Submit { workload } = e {
                submits += 1;
                assert!(queues.contains(&workload.queue), "{}", workload.queue);
            }
        }
    }
    assert!(submits > 100, "only {submits} submissions in 200 scenarios");
}

#[test]
fn a_failing_node_count_shrinks_to_two_bare_nodes() {
    let mut runner = deterministic_runner(512);
    let result = runner.run(&arb_cluster(&ShapeConfig::default()), |c| {
        prop_assert!(c.nodes.len() <= 1);
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, c)) => {
            assert_eq!(c.nodes.len(), 2, "{c:#?}");
            let cards: usize = total_cards(&c);
            assert_eq!(cards, 0, "{c:#?}");
            assert_eq!(c.namespaces.len(), 1, "{c:#?}");
        }
        other => panic!("expected a shrunk failure, got {other:?}"),
    }
}

#[test]
fn a_failing_card_count_shrinks_to_one_node_with_two_cards() {
    // The predicate's minimum is two cards on one node (in one group, or one card in each of
    // two groups: both are minimal, shrinking may stop at either).
    let mut runner = deterministic_runner(512);
    let result = runner.run(&arb_cluster(&ShapeConfig::default()), |c| {
        let cards: usize = total_cards(&c);
        prop_assert!(cards <= 1);
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, c)) => {
            assert_eq!(c.nodes.len(), 1, "{c:#?}");
            let cards: usize = total_cards(&c);
            assert_eq!(cards, 2, "{c:#?}");
        }
        other => panic!("expected a shrunk failure, got {other:?}"),
    }
}

/// Generation speed of single-node scenarios (printed, never asserted).
#[test]
fn single_node_generation_rate() {
    let config = ShapeConfig {
        max_nodes: 1,
        ..ShapeConfig::default()
    };
    let strategy = arb_scenario(&config);
    let mut runner = TestRunner::deterministic();
    let n = 2_000;
    let start = Instant::now();
    let mut events = 0;
    for _ in 0..n {
        events += strategy
            .new_tree(&mut runner)
            .unwrap()
            .current()
            .events
            .len();
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{n} single-node scenarios ({events} events) in {secs:.3}s: {:.0}/s",
        n as f64 / secs
    );
}

/// The generated submissions reach every gate's verdict: admitted, rejected at the webhook,
/// pending at quota (or for a missing entrance), retried at the node-devices check, and held
/// by the joint check (a ModelDeployment replica waiting for its sibling).
#[test]
fn generated_submissions_reach_every_verdict() {
    use model::events::Effect;
    use model::lifecycle::Outcome;
    let strategy = arb_scenario(&ShapeConfig::default());
    let mut runner = TestRunner::deterministic();
    let mut seen = [0usize; 5];
    for _ in 0..400 {
        let s = strategy.new_tree(&mut runner).unwrap().current();
        let mut world = World::new(s.cluster);
        for e in &s.events {
            if let Effect::Judged { outcome } = world.apply(e) {
                let slot = match outcome {
                    Outcome::Admitted => 0,
                    Outcome::Rejected { .. } => 1,
                    Outcome::Pending { .. } => 2,
                    Outcome::Retry { .. } => 3,
                    Outcome::Held { .. } => 4,
                    Outcome::Unplaceable { .. } => continue,
                };
                seen[slot] += 1;
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "admitted/rejected/pending/retry/held: {seen:?}"
    );
    assert!(seen[0] > seen[1], "mostly valid requests: {seen:?}");
}
