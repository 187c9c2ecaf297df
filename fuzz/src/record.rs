//! A fuzz run's record on disk, kept as the run goes: the run directory opened with its
//! starting summary, each counterexample written as soon as its seed is judged (report,
//! scenario, CSV rows, its finding), the regression file appended for a new finding of the
//! reference operator, the summary rewritten at milestones, and the finish with the ledger's
//! say. The CLI only shows what this returns (progress bar, lines) and maps the outcome.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use outcome::{Concluded, Outcome};
use reports::record::ReportError;
use reports::{Coverage, FindingEntry, FloorCheck, Ledger, RunRecorder, RunSummary};
use scenario::{Regressions, RunDir, ScenarioError};

use crate::{counterexample, Failure, FuzzConfig, FuzzReport};

/// Why the run's record could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The run directory could not be created under the given folder.
    #[error("creating a run directory under {}: {source}", base.display())]
    RunDir {
        /// The folder run directories go in.
        base: PathBuf,
        /// What the filesystem said (boxed: the error stays small on the happy path).
        #[source]
        source: Box<ScenarioError>,
    },
    /// A file of the run directory could not be written.
    #[error("{what}: {source}")]
    Report {
        /// What was being written.
        what: String,
        /// The report writer's error.
        #[source]
        source: Box<ReportError>,
    },
    /// The regression file could not be appended to.
    #[error("appending seed {seed} to {}: {source}", path.display())]
    Regression {
        /// The seed of the new finding.
        seed: u64,
        /// The regression file.
        path: PathBuf,
        /// What the filesystem said.
        #[source]
        source: Box<ScenarioError>,
    },
}

/// Where a run keeps its record, and what it was asked to do.
#[derive(Clone, Debug)]
pub struct RecordConfig {
    /// The folder run directories go in (`--run-dir`).
    pub run_base: PathBuf,
    /// The command line as typed, for the summary.
    pub command: String,
    /// The regression file (`--regressions`).
    pub regressions_path: PathBuf,
    /// The known-findings ledger, whose findings do not fail the run.
    pub ledger: Ledger,
    /// Known findings fail the run too (`--strict`).
    pub strict: bool,
}

/// One counterexample as recorded, for the caller to print.
#[derive(Clone, Debug)]
pub struct RecordedFailure {
    /// `known` for a ledgered finding (unless strict), else `FAIL`.
    pub tag: &'static str,
    /// What the shrink came to, or why it was skipped.
    pub shrunk: String,
    /// The report and scenario, and the finding's signature.
    pub recorded: reports::Recorded,
}

/// A fuzz run's record as it goes (shared by the workers' observer callbacks).
pub struct FuzzRun {
    recorder: RunRecorder,
    regressions: Mutex<Regressions>,
    regressions_path: PathBuf,
    ledger: Ledger,
    strict: bool,
    mutant: Option<model::mutants::Mutant>,
    jobs: usize,
    judged: AtomicU64,
    /// The summary is rewritten every tenth of the run, at least 100 seeds apart.
    milestone: u64,
    started: Instant,
}

impl FuzzRun {
    /// Opens the run directory and writes its starting summary. `regressions` is the
    /// regression file as read (its seeds are already in `config`).
    pub fn start(
        config: &FuzzConfig,
        record: RecordConfig,
        regressions: Regressions,
    ) -> Result<FuzzRun, RecordError> {
        let dir = RunDir::create_now(&record.run_base).map_err(|source| RecordError::RunDir {
            base: record.run_base.clone(),
            source: Box::new(source),
        })?;
        let total = crate::SeedPlan::of(config).len();
        let summary = RunSummary::start(
            dir.id(),
            &record.command,
            config.tier.name(),
            reports::Seeds {
                planned: total,
                range: seed_range(config),
                regressions: config.regressions.clone(),
            },
        );
        let recorder = RunRecorder::start(dir, summary)
            .map_err(writing("writing the run's summary.json"))?
            .with_ledger(record.ledger.clone(), record.strict);
        Ok(FuzzRun {
            recorder,
            regressions: Mutex::new(regressions),
            regressions_path: record.regressions_path,
            ledger: record.ledger,
            strict: record.strict,
            mutant: config.mutant,
            jobs: config.jobs,
            judged: AtomicU64::new(0),
            milestone: (total / 10).max(100),
            started: Instant::now(),
        })
    }

    /// The run directory.
    pub fn path(&self) -> &Path {
        self.recorder.path()
    }

    /// The run's id as its objects' run label carries it ([`live::client::RunId`]: lower case).
    pub fn run_label(&self) -> String {
        self.path()
            .file_name()
            .and_then(|n| live::client::RunId::new(&n.to_string_lossy()).ok())
            .map(|id| id.as_str().to_string())
            .unwrap_or_default()
    }

    /// Writes one counterexample as soon as its seed is judged. The regression file gets the
    /// first seed of each new finding of the reference operator only: a mutant's
    /// counterexample proves nothing replayed without the mutant (its scenario records the
    /// mutant, and `verify replay` replays under it), and a known finding is the ledger's.
    pub fn record_failure(&self, f: &Failure) -> Result<RecordedFailure, RecordError> {
        let recorded = self
            .recorder
            .record_finding(&counterexample(f, self.mutant))
            .map_err(writing(format!(
                "writing the counterexample of seed {}",
                f.seed
            )))?;
        if self.mutant.is_none() && !recorded.known && recorded.first {
            self.regressions
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .append(f.seed, &f.property)
                .map_err(|source| RecordError::Regression {
                    seed: f.seed,
                    path: self.regressions_path.clone(),
                    source: Box::new(source),
                })?;
        }
        let shrunk = if f.shrinks == 0 && !recorded.first {
            "not shrunk: its finding already has a shrunk seed".to_string()
        } else {
            format!("shrunk to {} node(s), {} event(s)", f.nodes(), f.events())
        };
        let tag = if recorded.known && !self.strict {
            "known"
        } else {
            "FAIL"
        };
        Ok(RecordedFailure {
            tag,
            shrunk,
            recorded,
        })
    }

    /// Counts one judged seed; at each milestone the summary is rewritten with the figures
    /// so far, so a run killed midway leaves them.
    pub fn judged_one(&self) -> Result<(), RecordError> {
        let done = self.judged.fetch_add(1, Ordering::Relaxed) + 1;
        if done % self.milestone != 0 {
            return Ok(());
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let figures = reports::Figures {
            ran: done,
            failing: 0,
            elapsed_seconds: elapsed,
            scenarios_per_second: done as f64 / elapsed.max(1e-9),
            jobs: self.jobs,
        };
        self.recorder
            .progress(figures)
            .map_err(writing("rewriting summary.json at a milestone"))
    }

    /// Closes the record: the ledger findings this run did not see and whose minimal
    /// scenario no longer fails ([`possibly_fixed`], never for a mutant run), the figures,
    /// the coverage and its floors. Returns the final summary.
    pub fn finish(
        self,
        report: &FuzzReport,
        coverage: Coverage,
        floors: Vec<FloorCheck>,
    ) -> Result<RunSummary, RecordError> {
        if self.mutant.is_none() {
            let seen = self.recorder.snapshot().findings;
            self.recorder
                .possibly_fixed(possibly_fixed(&self.ledger, &seen))
                .map_err(writing("recording possibly fixed findings"))?;
        }
        let summary = self
            .recorder
            .finish(
                reports::Figures {
                    ran: report.ran,
                    failing: report.failures.len() as u64,
                    elapsed_seconds: report.elapsed.as_secs_f64(),
                    scenarios_per_second: report.rate(),
                    jobs: self.jobs,
                },
                coverage,
                floors,
            )
            .map_err(writing("finishing the run directory"))?;
        if !report.interrupted {
            return Ok(summary);
        }
        self.recorder
            .interrupted()
            .map_err(writing("recording the interruption"))
    }
}

/// The ledger entries a run did not reproduce whose recorded minimal scenario no longer
/// fails on the model (entries found on the twin are not judged here: that needs a twin).
pub fn possibly_fixed(ledger: &Ledger, seen: &[FindingEntry]) -> Vec<reports::Signature> {
    reports::findings::unseen(ledger, seen, |path| {
        let s = scenario::load(path).ok()?;
        let on_twin = s.expect.iter().any(|e| {
            matches!(e, model::scenario::Expectation::Violation { property, .. }
                if property == tier::TWIN_PROPERTY)
        });
        if on_twin {
            return None;
        }
        Some(oracle::replay(&s).recorded.iter().any(|(_, r)| *r))
    })
    .into_iter()
    .filter(|(_, reproduces)| *reproduces == Some(false))
    .map(|(k, _)| k.signature.clone())
    .collect()
}

/// The seeds as the summary names them: one seed, or the range and its shard.
fn seed_range(config: &FuzzConfig) -> String {
    match (config.seed, config.shard) {
        (Some(s), _) => s.to_string(),
        (None, Some((i, n))) => format!("0..{} shard {i}/{n}", config.seeds),
        (None, None) => format!("0..{}", config.seeds),
    }
}

/// A report writer's error, said with what was being written.
fn writing(what: impl Into<String>) -> impl FnOnce(ReportError) -> RecordError {
    let what = what.into();
    move |source| RecordError::Report {
        what,
        source: Box::new(source),
    }
}

impl FuzzReport {
    /// How the run ended, given its summary's verdict and whether anything is left on a
    /// cluster: a counterexample or an unmet floor outranks a flaky divergence, which
    /// outranks seeds that could not be judged, an interruption or leftovers.
    pub fn outcome(&self, summary: &RunSummary, leftovers: bool) -> Outcome {
        let judged = summary.verdict.outcome();
        let unfinished = !self.inconclusive.is_empty() || self.interrupted || leftovers;
        if !judged.passed() {
            judged
        } else if !self.flaky.is_empty() {
            Outcome::Flaky
        } else if unfinished {
            Outcome::Inconclusive
        } else {
            judged
        }
    }
}
