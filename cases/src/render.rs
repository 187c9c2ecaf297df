//! Case output (cases.md §2.1–2.3): a banner, the `STATUS | CHECK | OBJECT` table, then one
//! verdict line; `NOTHING WAS VERIFIED` whenever no check ran. JUnit XML for CI.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;

use crate::index::IndexEntry;
use crate::run::{CaseRun, Row, Status, Verdict};

/// The banner, the table and the verdict line of one case.
pub fn case_text(run: &CaseRun) -> String {
    let mut out = format!(
        "== CASE {} — {} == (tier: {})\n",
        run.number,
        run.title,
        run.tier.name()
    );
    if !run.rows.is_empty() {
        out.push_str("\nSTATUS | CHECK | OBJECT\n");
        for r in &run.rows {
            out.push_str(&format!(
                "{} | {} | {}\n",
                r.status.name(),
                r.check,
                r.object
            ));
        }
        out.push('\n');
    }
    out.push_str(&verdict_line(run));
    out.push('\n');
    out
}

/// `CASE N PASS`, `CASE N PASS with K SKIPPED row(s)…`, `CASE N FAIL (…)`, or a skip banner.
pub fn verdict_line(run: &CaseRun) -> String {
    let n = run.number;
    match &run.verdict {
        Verdict::Pass { skipped: 0 } => format!("CASE {n} PASS"),
        Verdict::Pass { skipped } => format!(
            "CASE {n} PASS with {skipped} SKIPPED row(s); each SKIPPED row verified nothing"
        ),
        Verdict::Fail { failed } => format!("CASE {n} FAIL ({failed} failed row(s))"),
        Verdict::Skipped { why } => {
            format!("== CASE {n} — SKIPPED == NOTHING WAS VERIFIED: {why}")
        }
        Verdict::InputRequired { variable } => {
            format!("CASE {n} needs input: {variable} is not set (input required; nothing was run)")
        }
        Verdict::Unavailable { tier } => format!(
            "CASE {n}: the {} tier is not available yet (only the model tier runs cases)",
            tier.name()
        ),
    }
}

/// The index as a table: number, posture, modelled, scope, Needs, title (and the reason a
/// case is not modelled).
pub fn index_text(entries: &[IndexEntry]) -> String {
    let mut out = String::from("CASE | MODELLED | POSTURE | SCOPE | TITLE | NEEDS\n");
    let mut last_suite = None;
    for e in entries {
        if last_suite != Some(e.suite) {
            if last_suite.is_some() {
                out.push_str("\nchart suite (.agents/skills/gpustack-operator-chart-e2e/)\n");
            }
            last_suite = Some(e.suite);
        }
        let number = match e.suite {
            crate::index::Suite::Operator => e.number.to_string(),
            crate::index::Suite::Chart => format!("chart-{}", e.number),
        };
        let retired = if e.in_locked_index {
            ""
        } else {
            " [older index only]"
        };
        let modelled = match &e.not_modelled {
            None => "yes".to_string(),
            Some(why) => format!("no ({why})"),
        };
        out.push_str(&format!(
            "{number} | {modelled} | {} | {} | {}{retired} | {}\n",
            e.posture(),
            e.scope_text(),
            e.title,
            e.needs
        ));
    }
    let modelled = entries.iter().filter(|e| e.modelled()).count();
    out.push_str(&format!(
        "\n{} cases, {modelled} modelled; numbers 33, 46 and 92 were never used\n",
        entries.len()
    ));
    out
}

/// `verify case N -o json`: every case run's rows and verdict, as one document.
#[derive(Serialize)]
pub struct CaseRunsJson<'a> {
    pub runs: Vec<CaseRunJson<'a>>,
}

/// One case run: what [`case_text`] prints, as data.
#[derive(Serialize)]
pub struct CaseRunJson<'a> {
    pub number: u32,
    pub title: &'a str,
    pub tier: &'static str,
    pub rows: &'a [Row],
    pub verdict: &'a Verdict,
    /// The verdict line of the table ([`verdict_line`]).
    pub verdict_line: String,
}

/// [`CaseRunsJson`] of `runs`, pretty-printed.
pub fn case_json(runs: &[CaseRun]) -> serde_json::Result<String> {
    let runs = runs
        .iter()
        .map(|r| CaseRunJson {
            number: r.number,
            title: &r.title,
            tier: r.tier.name(),
            rows: &r.rows,
            verdict: &r.verdict,
            verdict_line: verdict_line(r),
        })
        .collect();
    serde_json::to_string_pretty(&CaseRunsJson { runs })
}

/// `verify cases -o json`: the index, each entry with what [`index_text`] derives from it.
#[derive(Serialize)]
pub struct IndexJson<'a> {
    pub cases: Vec<IndexRowJson<'a>>,
    pub total: usize,
    pub modelled: usize,
}

/// One index entry, its posture and whether it is modelled.
#[derive(Serialize)]
pub struct IndexRowJson<'a> {
    #[serde(flatten)]
    pub entry: &'a IndexEntry,
    pub modelled: bool,
    pub posture: &'static str,
}

/// [`IndexJson`] of `entries`, pretty-printed.
pub fn index_json(entries: &[IndexEntry]) -> serde_json::Result<String> {
    let cases: Vec<IndexRowJson> = entries
        .iter()
        .map(|entry| IndexRowJson {
            entry,
            modelled: entry.modelled(),
            posture: entry.posture(),
        })
        .collect();
    let modelled = cases.iter().filter(|c| c.modelled).count();
    serde_json::to_string_pretty(&IndexJson {
        total: cases.len(),
        modelled,
        cases,
    })
}

/// JUnit XML: one suite per case, one test case per row (FAIL → failure, SKIP → skipped).
pub fn junit(runs: &[CaseRun]) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("verify cases");
    for run in runs {
        let mut suite = TestSuite::new(format!("case-{}", run.number));
        for (i, r) in run.rows.iter().enumerate() {
            let status = match r.status {
                Status::Pass => TestCaseStatus::success(),
                Status::Fail => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(r.object.clone());
                    s
                }
                Status::Skip => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(r.object.clone());
                    s
                }
            };
            let mut tc = TestCase::new(format!("{:02} {}", i + 1, r.check), status);
            tc.set_classname(format!("case-{}", run.number));
            suite.add_test_case(tc);
        }
        if run.rows.is_empty() {
            let mut s = TestCaseStatus::skipped();
            s.set_message(verdict_line(run));
            suite.add_test_case(TestCase::new("case", s));
        }
        report.add_test_suite(suite);
    }
    report.to_string()
}
