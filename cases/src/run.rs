//! One case's rows and verdict (cases.md §2.1–2.3): a row per expectation the oracle checked,
//! a row for the chain's properties, a SKIP row per assertion only a cluster answers.

use model::scenario::Scenario;
use outcome::{Concluded, Outcome};

use crate::library::LockedCase;
use crate::tier::Tier;

/// A row's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

/// `STATUS | CHECK | OBJECT`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    pub status: Status,
    pub check: String,
    pub object: String,
    /// For an expectation row, its index in the scenario's `expect` list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expectation: Option<usize>,
}

/// How a case ended (as JSON: `{"kind": "pass", "skipped": 0}`, …).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// No FAIL and at least one PASS.
    Pass {
        skipped: usize,
    },
    Fail {
        failed: usize,
    },
    /// Nothing ran (whole-case skip, or every row skipped): exit 0, `NOTHING WAS VERIFIED`.
    Skipped {
        why: String,
    },
    /// A required input is missing: exit 2.
    InputRequired {
        variable: String,
    },
    /// The tier cannot run cases yet: exit 2.
    Unavailable {
        #[serde(serialize_with = "tier_name")]
        tier: Tier,
    },
}

/// A tier as its name (`model`, `twin`, `live`).
fn tier_name<S: serde::Serializer>(tier: &Tier, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(tier.name())
}

impl Concluded for Verdict {
    fn outcome(&self) -> Outcome {
        match self {
            Verdict::Pass { .. } => Outcome::Held,
            Verdict::Skipped { .. } => Outcome::NothingVerified,
            Verdict::Fail { .. } => Outcome::Failed,
            Verdict::InputRequired { .. } | Verdict::Unavailable { .. } => Outcome::Usage,
        }
    }
}

impl Concluded for CaseRun {
    fn outcome(&self) -> Outcome {
        self.verdict.outcome()
    }
}

/// One case on one tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseRun {
    pub number: u32,
    pub title: String,
    pub tier: Tier,
    pub rows: Vec<Row>,
    pub verdict: Verdict,
}

impl CaseRun {
    /// A case that never started (gate, unavailable tier, whole-case skip).
    pub fn not_run(case: &LockedCase, tier: Tier, verdict: Verdict) -> Self {
        CaseRun {
            number: case.header.number,
            title: case.header.title.clone(),
            tier,
            rows: Vec::new(),
            verdict,
        }
    }

    /// Rows that failed an expectation (not the properties row).
    pub fn failed_expectations(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.status == Status::Fail && r.expectation.is_some())
    }
}

/// The verdict of a finished row list (cases.md §2.1, §2.3: all-skipped is "nothing verified").
pub fn verdict_of(rows: &[Row]) -> Verdict {
    let failed = rows.iter().filter(|r| r.status == Status::Fail).count();
    let passed = rows.iter().filter(|r| r.status == Status::Pass).count();
    let skipped = rows.iter().filter(|r| r.status == Status::Skip).count();
    if failed > 0 {
        Verdict::Fail { failed }
    } else if passed == 0 {
        Verdict::Skipped {
            why: format!("0 passed, 0 failed, {skipped} skipped"),
        }
    } else {
        Verdict::Pass { skipped }
    }
}

/// How a row that only a running workload answers reads (on every tier).
pub const LIVE_ONLY: &str = "not checked by verify (needs running workloads): ";

/// Replays `s` (the case's scenario, possibly with a mutant) through `oracle::replay` and
/// turns its verdicts into rows.
pub fn run_on_model(case: &LockedCase, s: &Scenario) -> CaseRun {
    let mut rows = Vec::new();
    if !s.expect.is_empty() {
        let check = oracle::replay(s);
        rows.extend(check.checks.iter().map(|c| Row {
            status: if c.held { Status::Pass } else { Status::Fail },
            check: c.check.clone(),
            object: c.object.clone(),
            expectation: Some(c.index),
        }));
        rows.push(Row {
            status: if check.violations.is_empty() {
                Status::Pass
            } else {
                Status::Fail
            },
            check: "the chain's six properties hold on this scenario".into(),
            object: if check.violations.is_empty() {
                format!("scenario {}", s.name)
            } else {
                check
                    .violations
                    .iter()
                    .map(|v| format!("{}: {}", v.property, v.message))
                    .collect::<Vec<_>>()
                    .join("; ")
            },
            expectation: None,
        });
    }
    rows.extend(case.header.live_only.iter().map(|l| Row {
        // a runtime fact no tier of verify reads (running containers, a device manager)
        status: Status::Skip,
        check: l.check.clone(),
        object: format!("{LIVE_ONLY}{}", l.why),
        expectation: None,
    }));
    let verdict = verdict_of(&rows);
    CaseRun {
        number: case.header.number,
        title: case.header.title.clone(),
        tier: Tier::Model,
        rows,
        verdict,
    }
}
