//! The case library against its index, the model and the mutant catalog.

use std::collections::BTreeSet;

use cases::index::{index, index_error, Suite};
use cases::library::{cases, number_of, FILES};
use cases::run::{Status, Verdict};
use cases::tier::CaseTier;
use model::mutants::Mutant;
use outcome::{Concluded, Outcome};

/// Cases whose expectations the model does not meet today, with the reason. Each is a finding
/// about the model (or the case), kept visible: the test requires exactly these rows to fail.
const KNOWN_MODEL_DIVERGENCES: &[(u32, &str, &str)] = &[];

/// Mutants no locked case's expectations catch (the fuzzer and properties still do).
const UNGUARDED: &[Mutant] = &[
    Mutant::SubstringPoolMatch,
    Mutant::OsArchIgnored,
    Mutant::CpuGroupIgnored,
    Mutant::SharedOnceMaxInShares,
    Mutant::LateNamespaceNoLocalQueue,
];

#[test]
fn the_index_lists_every_used_number_once_and_the_chart_suite() {
    assert_eq!(index_error(), None);
    let operator: Vec<u32> = index()
        .iter()
        .filter(|e| e.suite == Suite::Operator)
        .map(|e| e.number)
        .collect();
    let want: Vec<u32> = (1..=115).filter(|n| ![33, 46, 92].contains(n)).collect();
    assert_eq!(operator, want);
    let chart: Vec<u32> = index()
        .iter()
        .filter(|e| e.suite == Suite::Chart)
        .map(|e| e.number)
        .collect();
    assert_eq!(chart, (1..=8).collect::<Vec<_>>());
    for e in index() {
        assert!(
            !e.title.is_empty() && !e.scope.is_empty(),
            "case {}",
            e.number
        );
        if let Some(why) = &e.not_modelled {
            assert!(!why.is_empty(), "case {} needs a reason", e.number);
        }
    }
    let retired: Vec<u32> = index()
        .iter()
        .filter(|e| !e.in_locked_index)
        .map(|e| e.number)
        .collect();
    assert_eq!(retired, vec![10, 17, 58, 69, 72]);
}

#[test]
fn every_file_parses_names_its_own_number_and_agrees_with_the_index() {
    for c in cases() {
        let c = c.unwrap_or_else(|e| panic!("{e}"));
        let n = c.header.number;
        assert_eq!(number_of(c.file), Some(n), "{} carries case {n}", c.file);
        let entry = cases::index::entry(n).unwrap_or_else(|| panic!("case {n} not in the index"));
        assert_eq!(c.header.title, entry.title, "case {n}: the locked title");
        assert_eq!(
            c.header.posture == model::scenario::Posture::Mutating,
            entry.mutates,
            "case {n}: posture"
        );
        let has_checks = !c.scenario.expect.is_empty();
        assert_eq!(
            entry.modelled(),
            has_checks,
            "case {n}: modelled in the index iff its file has expectations"
        );
        assert!(
            !c.header.goal.is_empty()
                && !c.header.expected.is_empty()
                && !c.header.cleanup.is_empty(),
            "case {n}: header fields"
        );
        assert!(
            !c.header.inputs.is_empty() && !c.header.environment.is_empty(),
            "case {n}: header fields"
        );
    }
    // Every modelled index entry has a file.
    let files: BTreeSet<u32> = FILES.iter().filter_map(|(f, _)| number_of(f)).collect();
    for e in index()
        .iter()
        .filter(|e| e.suite == Suite::Operator && e.modelled())
    {
        assert!(
            files.contains(&e.number),
            "case {} is modelled but has no file",
            e.number
        );
    }
}

#[test]
fn the_chain_cases_of_section_5_are_all_modelled() {
    for n in [
        1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 14, 16, 17, 18, 19, 20, 22, 24, 27, 40, 41, 50, 68, 88,
        95, 96, 106,
    ] {
        assert!(
            cases::index::entry(n).is_some_and(|e| e.modelled()),
            "case {n}"
        );
    }
}

#[test]
fn every_modelled_case_passes_on_the_model() {
    let tier = CaseTier::model(None);
    for c in cases() {
        let c = c.unwrap();
        let run = tier.run(&c);
        let n = c.header.number;
        let failed: Vec<&str> = run
            .rows
            .iter()
            .filter(|r| r.status == Status::Fail)
            .map(|r| r.check.as_str())
            .collect();
        let known: Vec<&str> = KNOWN_MODEL_DIVERGENCES
            .iter()
            .filter(|(k, _, _)| *k == n)
            .map(|(_, check, _)| *check)
            .collect();
        assert_eq!(failed, known, "case {n}: {run:#?}");
        if c.scenario.expect.is_empty() {
            assert!(matches!(run.verdict, Verdict::Skipped { .. }), "case {n}");
        } else if known.is_empty() {
            assert!(matches!(run.verdict, Verdict::Pass { .. }), "case {n}");
        }
    }
}

#[test]
fn each_case_fails_under_the_mutants_it_guards_against() {
    let mut guarded = BTreeSet::new();
    for c in cases() {
        let c = c.unwrap();
        for &m in &c.header.guards {
            guarded.insert(m);
            let run = CaseTier::model(Some(m)).run(&c);
            assert!(
                run.failed_expectations().next().is_some(),
                "case {} does not catch {m}: {run:#?}",
                c.header.number
            );
            assert_eq!(run.verdict.outcome(), Outcome::Failed);
        }
    }
    let unguarded: Vec<Mutant> = Mutant::ALL
        .into_iter()
        .filter(|m| !guarded.contains(m))
        .collect();
    assert_eq!(
        unguarded, UNGUARDED,
        "update UNGUARDED (and docs/cases.md) to match"
    );
}

#[test]
fn case_24_catches_the_single_token_pool() {
    let c = cases::case(24).unwrap().unwrap();
    let run = CaseTier::model(Some(Mutant::OneTokenPool)).run(&c);
    assert!(run
        .failed_expectations()
        .any(|r| r.check.contains("only PLAINSET serves logical slices")));
}

#[test]
fn case_6_keeps_the_original_ledger_sequence() {
    let c = cases::case(6).unwrap().unwrap();
    let text = scenario::to_yaml(&c.scenario);
    let run = CaseTier::model(None).run(&c);
    for (step, ex, sh, sl) in [
        (0, 8, 80, 800),
        (1, 6, 60, 600),
        (2, 4, 58, 400),
        (3, 2, 38, 360),
        (4, 2, 38, 356),
        (5, 1, 28, 256),
    ] {
        for (view, want) in [("EX", ex), ("SH", sh), ("SL", sl)] {
            let row = run
                .rows
                .iter()
                .find(|r| r.check == format!("ledger step {step}: {view} remaining {want}"))
                .unwrap_or_else(|| panic!("no row for step {step} {view} {want}\n{text}"));
            assert_eq!(row.status, Status::Pass, "{row:?}");
        }
    }
}

#[test]
fn every_file_in_the_scenarios_folder_is_embedded() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| format!("scenarios/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = FILES.iter().map(|(f, _)| f.to_string()).collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
}
