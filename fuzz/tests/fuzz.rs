//! The fuzz loop: seeds are deterministic, shards partition the range, and every mutant of the
//! catalog is found within 500 seeds and shrinks to a small scenario.

use fuzz::{judge_seed, run, scenario_for, seed_list, FuzzConfig, SeedPlan};
use generators::ShapeConfig;
use model::mutants::Mutant;

#[test]
fn a_seed_always_generates_the_same_scenario() {
    let shape = ShapeConfig::default();
    for seed in [0, 7, 123_456] {
        assert_eq!(
            scenario_for(seed, &shape).unwrap(),
            scenario_for(seed, &shape).unwrap()
        );
    }
    assert_ne!(
        scenario_for(1, &shape).unwrap(),
        scenario_for(2, &shape).unwrap()
    );
}

#[test]
fn shards_partition_the_range_and_regressions_come_first() {
    let base = FuzzConfig {
        seeds: 10,
        ..FuzzConfig::default()
    };
    let mut all: Vec<u64> = (0..3)
        .flat_map(|i| {
            seed_list(&FuzzConfig {
                shard: Some((i, 3)),
                ..base.clone()
            })
        })
        .collect();
    all.sort();
    assert_eq!(all, (0..10).collect::<Vec<_>>());
    let with_regressions = seed_list(&FuzzConfig {
        regressions: vec![42, 3],
        ..base
    });
    assert_eq!(&with_regressions[..3], &[42, 3, 0]);
    assert_eq!(with_regressions.iter().filter(|&&s| s == 3).count(), 1);
}

/// `--seeds 18446744073709551615` is a long run, planned lazily (it once aborted allocating
/// every seed); the count of seeds judged matches the seeds listed.
#[test]
fn a_huge_seed_range_is_planned_lazily_and_counted_once_per_seed() {
    let plan = SeedPlan::of(&FuzzConfig {
        seeds: u64::MAX,
        regressions: vec![5, 7, 5],
        shard: Some((1, 2)),
        ..FuzzConfig::default()
    });
    assert_eq!(plan.iter().take(6).collect::<Vec<_>>(), [5, 7, 5, 1, 3, 9]);
    assert_eq!(plan.len(), 3 + (u64::MAX - 1).div_ceil(2) - 2);
    for config in [
        FuzzConfig {
            seeds: 10,
            regressions: vec![3, 42, 3],
            ..FuzzConfig::default()
        },
        FuzzConfig {
            seeds: 11,
            shard: Some((2, 4)),
            regressions: vec![6, 7],
            ..FuzzConfig::default()
        },
        FuzzConfig {
            seed: Some(4),
            regressions: vec![4],
            ..FuzzConfig::default()
        },
    ] {
        assert_eq!(SeedPlan::of(&config).len(), seed_list(&config).len() as u64);
    }
}

#[test]
fn the_unmutated_model_holds_on_a_hundred_seeds() {
    let report = run(
        &FuzzConfig {
            seeds: 100,
            jobs: 2,
            ..FuzzConfig::default()
        },
        &|_, _| {},
    )
    .unwrap();
    assert_eq!(report.ran, 100);
    let found: Vec<_> = report
        .failures
        .iter()
        .map(|f| (f.seed, &f.property, &f.message))
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn every_mutant_is_found_within_500_seeds_and_shrinks_to_at_most_3_nodes() {
    let mut sizes = Vec::new();
    for m in Mutant::ALL {
        let config = FuzzConfig {
            seeds: 500,
            jobs: 2,
            mutant: Some(m),
            stop_at_first: true,
            shrink_steps: 512,
            ..FuzzConfig::default()
        };
        let report = run(&config, &|_, _| {}).unwrap();
        let f = report
            .failures
            .first()
            .unwrap_or_else(|| panic!("mutant {m} survived 500 seeds"));
        assert!(f.nodes() <= 3, "{m}: shrunk to {} nodes", f.nodes());
        assert_eq!(f.property, format!("mutant-{m}"));
        // The shrunk scenario still shows the divergence, and names its mutant.
        assert!(fuzz::first_violation(&f.scenario, Some(m)).is_some(), "{m}");
        assert_eq!(f.scenario.mutant.as_deref(), Some(m.name()));
        assert_eq!(fuzz::recorded_mutant(&f.scenario), Some(m));
        sizes.push((f.nodes(), f.events()));
    }
    sizes.sort();
    let median = sizes[sizes.len() / 2];
    assert!(
        median.0 <= 2 && median.1 <= 3,
        "median shrunk size {median:?}"
    );
}

#[test]
fn judging_a_seed_twice_gives_the_same_counterexample() {
    let config = FuzzConfig {
        mutant: Some(Mutant::CohortSet),
        shrink_steps: 256,
        ..FuzzConfig::default()
    };
    let a = judge_seed(0, &config)
        .unwrap()
        .expect("cohort-set shows on seed 0");
    let b = judge_seed(0, &config).unwrap().unwrap();
    assert_eq!(a.scenario, b.scenario);
    assert_eq!(a.nodes(), 1);
}

#[test]
fn every_generated_scenario_is_counted_once_in_the_coverage() {
    let config = FuzzConfig {
        seeds: 24,
        jobs: 2,
        ..FuzzConfig::default()
    };
    let coverage = std::sync::Mutex::new(reports::Coverage::default());
    let report = fuzz::run_observed(&config, &|_, _| {}, &|s, deriver| {
        // Through the seed's step store the replay sees what a plain one sees.
        let shown = fuzz::coverage::shown_through(s, None, deriver);
        assert_eq!(shown, fuzz::coverage::shown(s, None));
        coverage.lock().unwrap().observe(shown);
    })
    .unwrap();
    let coverage = coverage.into_inner().unwrap();
    assert_eq!(coverage.scenarios, report.ran);
    assert_eq!(coverage.scenarios, 24);
    // What seed 0 generates is counted under its node count.
    let first = scenario_for(0, &config.shape).unwrap();
    let nodes = first.cluster.nodes.len().to_string();
    assert!(coverage.count("nodes", &nodes) >= 1, "{coverage:?}");
    let per_count: u64 = coverage.classes["nodes"].values().sum();
    assert_eq!(per_count, 24, "one node count per scenario");
}

#[test]
fn the_recorded_mutant_is_the_field_else_the_old_description_prefix() {
    let mut s = model::scenario::Scenario::default();
    assert_eq!(fuzz::recorded_mutant(&s), None);
    // written before the field existed: the description's opening still names it
    s.description = format!("{}cohort-set: every queue in one cohort", fuzz::MUTANT_NOTE);
    assert_eq!(fuzz::recorded_mutant(&s), Some(Mutant::CohortSet));
    // the field wins
    s.mutant = Some("quota-off-by-one".into());
    assert_eq!(fuzz::recorded_mutant(&s), Some(Mutant::QuotaOffByOne));
    s.mutant = Some("no-such-mutant".into());
    assert_eq!(fuzz::recorded_mutant(&s), None);
}
