//! `verify check` ([M4]): verdicts on a small scope, symmetry, the in-flight window, every
//! mutant caught, every always-property shown failing. Scopes are the smallest that reach
//! what a test needs (debug builds run the model rules ~10× slower than release); each test
//! names its scope.

use generators::check::properties::{self, Broken};
use generators::check::{run_check, ChainModel, CheckConfig, CheckReport, Search, State, Verdict};
use model::mutants::Mutant;

fn scope(nodes: usize, cards: usize, workloads: usize) -> CheckConfig {
    CheckConfig {
        nodes,
        cards,
        workloads,
        threads: 2,
        ..CheckConfig::default()
    }
}

fn small() -> CheckConfig {
    scope(2, 1, 2)
}

fn check(config: CheckConfig) -> CheckReport {
    run_check(&config).expect("the scope is in range")
}

/// The names of the violated properties.
fn violated(r: &CheckReport) -> Vec<&'static str> {
    r.properties
        .iter()
        .filter(|p| matches!(p.verdict, Verdict::Violated(_)))
        .map(|p| p.name)
        .collect()
}

/// Each property's verdict kind, for comparing two searches.
fn verdicts(r: &CheckReport) -> Vec<(&'static str, &'static str)> {
    r.properties
        .iter()
        .map(|p| {
            let v = match p.verdict {
                Verdict::Held => "held",
                Verdict::Violated(_) => "violated",
                Verdict::Reached(_) => "reached",
                Verdict::NotReached => "not reached",
            };
            (p.name, v)
        })
        .collect()
}

#[test]
fn small_scope_holds_and_is_not_vacuous() {
    let r = check(small());
    assert!(r.complete, "{}", r.render());
    assert!(!r.violated(), "{}", r.render());
    // Gate 2 places every Pod with Kueue's TAS at hostname level: on one-card nodes it sees
    // each card's state through the node's allocatable and fit labels, so gate 3 never
    // disagrees and no Retry is reachable here (it was, before gate 2 placed Pods).
    let unreached: Vec<&str> = r
        .properties
        .iter()
        .filter(|p| !p.always && !matches!(p.verdict, Verdict::Reached(_)))
        .map(|p| p.name)
        .collect();
    assert_eq!(unreached, ["a Retry happens"], "{}", r.render());
}

#[test]
fn bfs_and_dfs_explore_the_same_states() {
    // Memo tables fill in a different order under DFS; the reachable set must not change.
    let bfs = check(small());
    let dfs = check(CheckConfig {
        search: Search::Dfs,
        ..small()
    });
    assert_eq!(bfs.unique_states, dfs.unique_states);
    assert_eq!(verdicts(&bfs), verdicts(&dfs));
}

#[test]
fn symmetry_over_identical_nodes_reduces_states_and_keeps_verdicts() {
    // Scope 2 × 1 × 2: node-0 and node-1 are the same kind (amd64, AMD EPYC, one A100).
    let plain = check(CheckConfig {
        search: Search::Dfs,
        ..small()
    });
    let reduced = check(CheckConfig {
        search: Search::Dfs,
        symmetry: true,
        ..small()
    });
    assert!(plain.complete && reduced.complete);
    assert!(
        reduced.unique_states < plain.unique_states,
        "symmetry {} vs plain {}",
        reduced.unique_states,
        plain.unique_states
    );
    assert_eq!(verdicts(&plain), verdicts(&reduced));
}

#[test]
fn symmetry_over_cards_of_one_node_reduces_states() {
    // Scope 1 × 2 × 0: the two cards of node-0 are interchangeable while nothing holds them.
    let plain = check(CheckConfig {
        search: Search::Dfs,
        ..scope(1, 2, 0)
    });
    let reduced = check(CheckConfig {
        search: Search::Dfs,
        symmetry: true,
        ..scope(1, 2, 0)
    });
    assert!(reduced.unique_states < plain.unique_states);
    assert_eq!(verdicts(&plain), verdicts(&reduced));
}

#[test]
fn bfs_reports_the_shortest_counterexample() {
    // The cohort is wrong from the start: the shortest path to it is the initial state.
    let r = check(CheckConfig {
        mutant: Some(Mutant::CohortSet),
        threads: 1,
        ..small()
    });
    let (_, cx) = r.first_violation().expect("cohort-set is caught");
    assert!(cx.steps.is_empty(), "{}", r.render());
    assert_eq!(cx.first_failing, None);
}

#[test]
fn out_of_range_scopes_are_errors_naming_the_option() {
    let e = run_check(&scope(9, 1, 0)).unwrap_err();
    assert!(e.to_string().contains("--nodes"), "{e}");
    let e = run_check(&scope(4, 5, 0)).unwrap_err();
    assert!(e.to_string().contains("--cards"), "{e}");
    let e = run_check(&scope(1, 1, 9)).unwrap_err();
    assert!(e.to_string().contains("--workloads"), "{e}");
}

/// The smallest scope that reaches each mutant (the default scope reaches every one but
/// cpu-group-ignored; see generators/README.md), the depth bound (`max_depth`: stateright
/// checks the states of a path shorter than the bound, so a counterexample of `n` steps needs
/// `n + 2`), the property that catches it and the counterexample's length. The bound keeps
/// the debug-mode search to a few dozen states.
const MUTANT_SCOPES: [(Mutant, [usize; 3], usize, &str, usize); 9] = [
    (
        Mutant::SubstringPoolMatch,
        [1, 1, 0],
        2,
        "[M3] invariance, pool isolation, idempotence",
        0,
    ),
    // Needs an amd64 and an arm64 node: slot 2 is the arm64 one.
    (Mutant::OsArchIgnored, [3, 1, 0], 2, "[M3] structure", 0),
    // Needs two CPU kinds on one arch: slot 3 (Intel, amd64) is past the default 3 nodes.
    (Mutant::CpuGroupIgnored, [4, 1, 0], 3, "[M3] structure", 1),
    (Mutant::OneTokenPool, [1, 1, 0], 3, "[M3] accounting", 1),
    (Mutant::CohortSet, [1, 1, 0], 2, "[M3] structure", 0),
    (Mutant::QuotaOffByOne, [1, 1, 1], 2, "[M3] accounting", 0),
    (
        Mutant::SharedOnceMaxInShares,
        [1, 1, 0],
        2,
        "[M3] accounting",
        0,
    ),
    (Mutant::EntranceWrongHash, [1, 1, 0], 2, "[M3] structure", 0),
    (
        Mutant::LateNamespaceNoLocalQueue,
        [1, 1, 0],
        3,
        "[M3] structure",
        1,
    ),
];

#[test]
fn every_mutant_is_caught_where_the_unmutated_chain_holds() {
    assert_eq!(
        MUTANT_SCOPES.map(|m| m.0).to_vec(),
        Mutant::ALL.to_vec(),
        "every mutant of model::mutants has a scope here"
    );
    for (mutant, [nodes, cards, workloads], depth, property, steps) in MUTANT_SCOPES {
        let bounded = CheckConfig {
            max_depth: Some(depth),
            threads: 1,
            ..scope(nodes, cards, workloads)
        };
        let control = check(bounded.clone());
        assert!(
            !control.violated(),
            "{mutant} control:\n{}",
            control.render()
        );
        let r = check(CheckConfig {
            mutant: Some(mutant),
            ..bounded
        });
        let (name, cx) = r
            .first_violation()
            .unwrap_or_else(|| panic!("{mutant} not caught:\n{}", r.render()));
        assert_eq!(name, property, "{mutant}:\n{}", r.render());
        assert_eq!(cx.steps.len(), steps, "{mutant}:\n{}", r.render());
        assert!(!cx.message.is_empty(), "{mutant}");
        assert_eq!(
            cx.scenario.cluster.settings.mutant,
            Some(mutant),
            "the scenario replays the mutant"
        );
    }
}

#[test]
fn every_always_property_is_reported_when_it_fails() {
    // Scope 1 × 1 × 1: wl-0 asks one whole card; it is admitted after two steps (gate 3
    // Ready, then its Pods land), where the seam breaks one property.
    for p in properties::ALL
        .iter()
        .filter(|p| p.kind == properties::Kind::Always)
    {
        let r = check(CheckConfig {
            broken: Some(Broken { bit: p.bit }),
            threads: 1,
            ..scope(1, 1, 1)
        });
        assert_eq!(violated(&r), vec![p.name], "{}", r.render());
        let (_, cx) = r.first_violation().expect("violated");
        assert_eq!(cx.steps.len(), 2, "{}", r.render());
        assert_eq!(cx.first_failing, Some(1), "{}", r.render());
        assert!(cx.message.contains("test seam"), "{}", cx.message);
        assert!(r.render().contains("first fails here"));
    }
}

#[test]
fn an_m3_counterexample_replays_under_the_oracle_name() {
    // Scope 1 × 1 × 0, late-namespace-no-local-queue: one step (namespace created).
    let r = check(CheckConfig {
        mutant: Some(Mutant::LateNamespaceNoLocalQueue),
        max_depth: Some(3),
        threads: 1,
        ..scope(1, 1, 0)
    });
    let (_, cx) = r.first_violation().expect("caught");
    let replay = oracle::replay(&cx.scenario);
    assert!(
        replay.recorded.iter().all(|(_, reproduced)| *reproduced),
        "{}",
        replay.render()
    );
    assert!(!replay.recorded.is_empty());
}

#[test]
fn gate3_forgetting_inflight_workloads_is_caught() {
    // Scope 1 × 2 × 4, paths of ≤ 4 steps. Found: gate 3 judges wl-0 (one whole card) Ready;
    // before its Pods land, a gate 3 that forgets in-flight Workloads (admission.md §6.5)
    // budgets the same card to wl-3 (a 60 % slice); wl-0 lands, then wl-3's charge is refused.
    let bounded = CheckConfig {
        max_depth: Some(6),
        threads: 1,
        ..scope(1, 2, 4)
    };
    let r = check(CheckConfig {
        count_inflight: false,
        ..bounded.clone()
    });
    assert_eq!(
        violated(&r),
        vec!["gate-3 Ready is placeable"],
        "{}",
        r.render()
    );
    let (_, cx) = r.first_violation().expect("violated");
    assert_eq!(cx.steps.len(), 4, "{}", r.render());
    assert_eq!(cx.first_failing, Some(3), "{}", r.render());
    let sound = check(bounded);
    assert!(!sound.violated(), "{}", sound.render());
}

#[test]
fn verdicts_are_never_shared_between_models() {
    // Verdicts are cached per thread for the last state judged. Two models of scope 1 × 1 × 0,
    // one with the cohort-set mutant (its initial state breaks [M3] structure): their initial
    // states are equal field for field once the registry slot (reused when a check ends) is
    // made equal, and the second must not be answered from the first's cache.
    let structure = 1 << properties::M3_STRUCTURE;
    let sound = ChainModel::new(1, 1, 0, None, true).expect("in range");
    let first = sound.initial_state();
    assert_ne!(sound.verdicts(&first) & structure, 0);
    let mutated = ChainModel::new(1, 1, 0, Some(Mutant::CohortSet), true).expect("in range");
    let second = State {
        scope: first.scope,
        ..mutated.initial_state()
    };
    assert_eq!(first, second, "the test needs equal states");
    assert_eq!(mutated.verdicts(&second) & structure, 0);
}

#[test]
fn gate3_retries_a_whole_card_on_a_node_whose_cards_hold_shares() {
    // Scope 1 × 2 × 3: wl-2 takes one share on each of node-0's two cards; wl-0 then asks for
    // a whole card. Kueue's TAS counts node-0's `nvidia.com/gpu` allocatable, which shares do
    // not hold, so gate 2 places it there; gate 3 finds no whole card: Retry.
    let r = check(CheckConfig {
        threads: 1,
        ..scope(1, 2, 3)
    });
    assert!(r.complete && !r.violated(), "{}", r.render());
    let retry = r
        .properties
        .iter()
        .find(|p| p.name == "a Retry happens")
        .expect("the property is checked");
    let Verdict::Reached(steps) = &retry.verdict else {
        panic!("a Retry is reachable here: {}", r.render());
    };
    let text = steps.join("\n");
    assert!(text.contains("wl-2 (Shared(2))"), "{text}");
    assert!(text.contains("judge wl-0 (Exclusive(1))"), "{text}");
}

#[test]
fn a_mixing_flip_is_a_step_that_changes_the_structure_and_flips_back() {
    // Scope 1 × 1 × 0: node-0 is accelerated, so with mixing off it leaves the CPU flavor
    // (retired); flipping back brings it in again.
    use generators::check::Action;
    use stateright::Model;
    let m = ChainModel::new(1, 1, 0, None, true).expect("in range");
    let start = m.initial_state();
    assert!(start.mixed, "instance-type-mixed-on-node defaults to true");
    let mut actions = Vec::new();
    m.actions(&start, &mut actions);
    assert!(actions.contains(&Action::MixingFlip));
    let off = m
        .next_state(&start, Action::MixingFlip)
        .expect("a flip always applies");
    assert!(!off.mixed);
    assert_ne!(off.structure, start.structure);
    let cpu_flavors = |s: &State| {
        m.structure(s.structure)
            .derived
            .resource_flavors
            .iter()
            .filter(|rf| !rf.flavor.acceleratable)
            .count()
    };
    assert!(cpu_flavors(&start) > 0);
    assert_eq!(cpu_flavors(&off), 0);
    let on = m
        .next_state(&off, Action::MixingFlip)
        .expect("a flip always applies");
    assert!(on.mixed);
    assert_eq!(cpu_flavors(&on), cpu_flavors(&start));
    let step = m.describe(&Action::MixingFlip);
    assert!(step.contains("instance-type-mixed-on-node"), "{step}");
    assert_eq!(
        m.event_of(&Action::MixingFlip),
        Some(model::events::Event::MixingFlip)
    );
}
