//! The case table, verdict lines, the index table and JUnit XML.

use cases::run::{CaseRun, Row, Status, Verdict};
use cases::tier::Tier;
use outcome::{Concluded, Outcome};

fn run(rows: Vec<Row>) -> CaseRun {
    let verdict = cases::run::verdict_of(&rows);
    CaseRun {
        number: 14,
        title: "t".into(),
        tier: Tier::Model,
        rows,
        verdict,
    }
}

fn row(status: Status, check: &str, object: &str) -> Row {
    Row {
        status,
        check: check.into(),
        object: object.into(),
        expectation: None,
    }
}

#[test]
fn the_table_prints_status_check_object_then_the_verdict() {
    let r = run(vec![
        row(Status::Pass, "a", "x | y"),
        row(Status::Skip, "b", "why"),
    ]);
    let text = cases::render::case_text(&r);
    assert!(
        text.contains("STATUS | CHECK | OBJECT\nPASS | a | x | y\nSKIP | b | why\n"),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("CASE 14 PASS with 1 SKIPPED row(s); each SKIPPED row verified nothing"),
        "{text}"
    );
}

#[test]
fn all_skipped_is_nothing_verified_and_any_fail_is_exit_1() {
    let skipped = run(vec![row(Status::Skip, "b", "why")]);
    assert!(matches!(skipped.verdict, Verdict::Skipped { .. }));
    assert!(cases::render::case_text(&skipped).contains("NOTHING WAS VERIFIED"));
    let failed = run(vec![
        row(Status::Pass, "a", "x"),
        row(Status::Fail, "c", "got 3"),
    ]);
    assert_eq!(failed.verdict, Verdict::Fail { failed: 1 });
    assert_eq!(failed.verdict.outcome(), Outcome::Failed);
}

#[test]
fn junit_has_one_case_per_row_with_failures_and_skips() {
    let xml = cases::render::junit(&[run(vec![
        row(Status::Pass, "a", "x"),
        row(Status::Fail, "c", "got 3"),
        row(Status::Skip, "b", "why"),
    ])])
    .unwrap();
    assert!(
        xml.contains("<testsuite name=\"case-14\" tests=\"3\""),
        "{xml}"
    );
    assert!(xml.contains("failures=\"1\""), "{xml}");
    assert!(
        xml.contains("disabled=\"1\"") && xml.contains("<skipped"),
        "{xml}"
    );
    assert!(xml.contains("got 3"), "{xml}");
}

#[test]
fn the_index_table_lists_posture_scope_and_why_not_modelled() {
    let text = cases::render::index_text(cases::index());
    assert!(
        text.contains("14 | yes | MUTATING | CHAIN+DEVPLUGIN |"),
        "{text}"
    );
    assert!(text.contains("1 | yes | READ-ONLY | CHAIN |"), "{text}");
    assert!(text.contains("53 | no (KV cache"), "{text}");
    assert!(text.contains("chart-2 | no ("), "{text}");
}
