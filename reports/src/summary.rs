//! `summary.json`: what a run was asked to do, what it found and its verdict. Rewritten whole
//! at each milestone, so a run killed midway leaves a readable summary of what it had.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::coverage::{Coverage, FloorCheck};

/// How a run ended (or that it has not yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Still running, or killed before it finished.
    Running,
    /// Every property held on every seed.
    Held,
    /// At least one counterexample of a finding not in the ledger (or, with `--strict`, any).
    Failed,
    /// Every counterexample is of a finding the ledger knows (exit 0; `--strict` fails it).
    Known,
    /// Every property held, but a coverage floor was not reached.
    CoverageUnmet,
    /// No seed was judged.
    NothingVerified,
    /// Stopped before every seed was judged: by Ctrl-C, or killed (a `running` summary whose
    /// process is gone, [`RunSummary::settle_if_gone`]).
    Interrupted,
}

impl outcome::Concluded for Verdict {
    /// How the run ended for its caller: known findings do not fail it; a run still
    /// `running` when asked was not judged.
    fn outcome(&self) -> outcome::Outcome {
        match self {
            Verdict::Held | Verdict::Known => outcome::Outcome::Held,
            Verdict::NothingVerified => outcome::Outcome::NothingVerified,
            Verdict::Failed => outcome::Outcome::Failed,
            Verdict::Running | Verdict::Interrupted => outcome::Outcome::Inconclusive,
            Verdict::CoverageUnmet => outcome::Outcome::CoverageUnmet,
        }
    }
}

impl Verdict {
    /// The verdict of a finished run (a counterexample outranks a coverage floor).
    pub fn of(ran: u64, failing: usize, floors: &[FloorCheck]) -> Verdict {
        Verdict::of_findings(ran, failing, 0, floors)
    }

    /// The verdict with the ledger's say: `new` counterexamples of findings the ledger does not
    /// know fail the run, `known` ones do not (the caller counts them as new under `--strict`).
    /// A new counterexample outranks a coverage floor, which outranks known findings.
    pub fn of_findings(ran: u64, new: usize, known: usize, floors: &[FloorCheck]) -> Verdict {
        if new > 0 {
            Verdict::Failed
        } else if ran == 0 {
            Verdict::NothingVerified
        } else if floors.iter().any(|f| !f.met) {
            Verdict::CoverageUnmet
        } else if known > 0 {
            Verdict::Known
        } else {
            Verdict::Held
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Running => "running",
            Verdict::Held => "held",
            Verdict::Failed => "failed",
            Verdict::Known => "known",
            Verdict::CoverageUnmet => "coverage-unmet",
            Verdict::NothingVerified => "nothing-verified",
            Verdict::Interrupted => "interrupted",
        }
    }
}

/// Which seeds a run judges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seeds {
    /// Seeds planned (regressions included).
    pub planned: u64,
    /// `0..500`, `0..500 shard 1/4`, `42`.
    pub range: String,
    /// Regression seeds replayed first.
    pub regressions: Vec<u64>,
}

/// The run's numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Seeds judged so far.
    pub ran: u64,
    pub failing: u64,
    pub elapsed_seconds: f64,
    pub scenarios_per_second: f64,
    pub jobs: usize,
}

/// One counterexample as the summary lists it; paths are relative to the run directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterexampleEntry {
    pub seed: u64,
    pub property: String,
    pub message: String,
    pub nodes: usize,
    pub cards: usize,
    pub events: usize,
    pub shrinks: u32,
    /// `counterexamples/<seed>.yaml`.
    pub scenario: String,
    /// `counterexamples/<seed>.md`.
    pub report: String,
    /// `plots/<seed>-views.svg`, for a four-view divergence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plot: Option<String>,
    /// The first step at which the two runs part (0 = initially, k = after event k-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_divergent_step: Option<usize>,
    /// Its root cause ([`crate::findings::Signature`]).
    #[serde(default)]
    pub signature: crate::findings::Signature,
}

/// The whole `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub run_id: String,
    /// Where the run directory was written (as the run was started; file paths in the
    /// summary are relative to it).
    #[serde(default)]
    pub path: String,
    /// The command line, as typed.
    pub command: String,
    pub tier: String,
    /// The kube context of a live run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Component → version (`verify`, the operator's when known).
    pub versions: BTreeMap<String, String>,
    pub seeds: Seeds,
    pub verdict: Verdict,
    pub figures: Figures,
    pub coverage: Coverage,
    #[serde(default)]
    pub coverage_floors: Vec<FloorCheck>,
    pub counterexamples: Vec<CounterexampleEntry>,
    /// The counterexamples folded by root cause, each known to the ledger or new.
    #[serde(default)]
    pub findings: Vec<crate::findings::FindingEntry>,
    /// Ledger entries this run did not reproduce and whose minimal scenario no longer fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub possibly_fixed: Vec<crate::findings::Signature>,
    /// Relative paths of the run's plots.
    #[serde(default)]
    pub plots: Vec<String>,
    /// The process writing the run, so a reader can tell a run still going from one killed
    /// while `running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl RunSummary {
    /// A summary for a run that is starting.
    pub fn start(run_id: &str, command: &str, tier: &str, seeds: Seeds) -> RunSummary {
        RunSummary {
            run_id: run_id.to_string(),
            path: String::new(),
            command: command.to_string(),
            tier: tier.to_string(),
            context: None,
            versions: BTreeMap::from([("verify".to_string(), env!("CARGO_PKG_VERSION").into())]),
            seeds,
            verdict: Verdict::Running,
            figures: Figures::default(),
            coverage: Coverage::default(),
            coverage_floors: Vec::new(),
            counterexamples: Vec::new(),
            findings: Vec::new(),
            possibly_fixed: Vec::new(),
            plots: Vec::new(),
            pid: Some(std::process::id()),
        }
    }

    /// A summary still `running` whose process is gone was killed: it says `interrupted`.
    /// Where processes cannot be looked up (no `/proc`), or the process is there, it stays.
    pub fn settle_if_gone(&mut self) {
        if self.verdict == Verdict::Running && self.pid.is_some_and(process_gone) {
            self.verdict = Verdict::Interrupted;
        }
    }
}

/// Whether process `pid` is known to have ended (Linux `/proc`; elsewhere never known).
fn process_gone(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcome::{Concluded, Outcome};

    #[test]
    fn verdicts_rank_and_map_to_exit_codes() {
        let unmet = [FloorCheck {
            floor: "vendors=3".into(),
            reached: 1,
            met: false,
        }];
        assert_eq!(Verdict::of(10, 1, &unmet), Verdict::Failed);
        assert_eq!(Verdict::of(10, 0, &unmet), Verdict::CoverageUnmet);
        assert_eq!(Verdict::of(10, 0, &[]), Verdict::Held);
        assert_eq!(Verdict::of(0, 0, &[]), Verdict::NothingVerified);
        assert_eq!(Verdict::of_findings(10, 0, 4, &[]), Verdict::Known);
        assert_eq!(Verdict::of_findings(10, 1, 4, &[]), Verdict::Failed);
        assert_eq!(
            Verdict::of_findings(10, 0, 4, &unmet),
            Verdict::CoverageUnmet
        );
        assert!(Verdict::Known.outcome().passed());
        assert_eq!(Verdict::CoverageUnmet.outcome(), Outcome::CoverageUnmet);
        assert_eq!(Verdict::Failed.outcome(), Outcome::Failed);
        assert_eq!(
            serde_json::to_string(&Verdict::CoverageUnmet).unwrap(),
            "\"coverage-unmet\""
        );
    }
}
