//! `verify check` ([M4]): verdicts on a small scope, the in-flight window, mutants, and
//! always-properties failing where they must.

use generators::check::{run_check, CheckConfig, Search, Verdict};
use model::mutants::Mutant;

fn small() -> CheckConfig {
    CheckConfig {
        nodes: 2,
        cards: 1,
        workloads: 2,
        threads: 2,
        ..CheckConfig::default()
    }
}

#[test]
fn small_scope_holds_and_is_not_vacuous() {
    let r = run_check(&small());
    assert!(r.complete, "{}", r.render());
    assert!(!r.violated(), "{}", r.render());
    for p in r.properties.iter().filter(|p| !p.always) {
        assert!(
            matches!(p.verdict, Verdict::Reached(_)),
            "{} not reached:\n{}",
            p.name,
            r.render()
        );
    }
}

#[test]
fn quota_and_cohort_mutants_are_caught() {
    for m in [Mutant::QuotaOffByOne, Mutant::CohortSet] {
        let r = run_check(&CheckConfig {
            mutant: Some(m),
            ..small()
        });
        assert!(r.violated(), "{m}: {}", r.render());
    }
}

#[test]
fn dfs_with_symmetry_agrees_with_bfs() {
    let bfs = run_check(&small());
    let dfs = run_check(&CheckConfig {
        search: Search::Dfs,
        symmetry: true,
        ..small()
    });
    assert_eq!(bfs.violated(), dfs.violated());
    assert!(dfs.unique_states <= bfs.unique_states);
}

#[test]
fn bfs_reports_the_shortest_counterexample() {
    // The cohort is wrong from the start: the shortest path to it is the initial state.
    let r = run_check(&CheckConfig {
        mutant: Some(Mutant::CohortSet),
        threads: 1,
        ..small()
    });
    let (_, cx) = r.first_violation().expect("cohort-set is caught");
    assert!(cx.steps.is_empty(), "{}", r.render());
    assert_eq!(cx.first_failing, None);
}
