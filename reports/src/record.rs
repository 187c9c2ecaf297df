//! Writing a run directory as the run goes: `summary.json` at start, at every counterexample
//! and at the end (atomically rewritten), a `divergences.csv` row per differing field appended
//! as found, each counterexample's scenario and report as found, and at the end `junit.xml`
//! and the coverage plot. A run killed midway keeps everything it had recorded.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use scenario::{RunDir, ScenarioError, COUNTEREXAMPLES_DIR};

use crate::counterexample::{counterexample_markdown, divergence_rows, Counterexample};
use crate::coverage::{Coverage, FloorCheck};
use crate::findings::{fold, Ledger, Signature, Smallest};
use crate::plots::{coverage_svg, four_views_svg};
use crate::render::{csv_bytes, junit_xml};
use crate::summary::{CounterexampleEntry, Figures, RunSummary, Verdict};

pub const SUMMARY_FILE: &str = "summary.json";
pub const DIVERGENCES_FILE: &str = "divergences.csv";
pub const JUNIT_FILE: &str = "junit.xml";
pub const PLOTS_DIR: &str = "plots";
pub const COVERAGE_PLOT: &str = "plots/coverage.svg";

/// What can go wrong writing or reading a run directory.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Write(#[from] ScenarioError),
    /// A file of the run directory is missing or malformed.
    #[error("{}: {why}", path.display())]
    Read { path: PathBuf, why: String },
    /// `--format issue` without a finding.
    #[error("--format issue reports one finding: name it with --finding SIG")]
    IssueNeedsFinding,
    /// The summary (`summary.json`, `summary as JSON`) could not be encoded.
    #[error("{what}: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// `divergences.csv` could not be written.
    #[error("{DIVERGENCES_FILE}: {source}")]
    Csv {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("JUnit XML: {0}")]
    Junit(#[source] quick_junit::SerializeError),
    #[error(transparent)]
    Draw(#[from] crate::plots::DrawError),
}

/// The run directory of a run in progress. Shared by the run's worker threads.
#[derive(Debug)]
pub struct RunRecorder {
    dir: RunDir,
    summary: Mutex<RunSummary>,
    /// The known findings, which do not fail the run (unless `strict`).
    ledger: Option<Ledger>,
    strict: bool,
}

/// What [`RunRecorder::record_finding`] wrote and how the counterexample folded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The scenario file.
    pub path: PathBuf,
    pub signature: Signature,
    /// Its signature is in the ledger.
    pub known: bool,
    /// The first counterexample of this signature in the run.
    pub first: bool,
}

impl RunRecorder {
    /// Takes over a fresh run directory: writes the starting summary (its `run_id` set to the
    /// directory's) and the CSV header.
    pub fn start(dir: RunDir, mut summary: RunSummary) -> Result<RunRecorder, ReportError> {
        summary.run_id = dir.id().to_string();
        summary.path = dir.path().display().to_string();
        dir.append_file(DIVERGENCES_FILE, &csv_bytes(&[], true)?)?;
        let recorder = RunRecorder {
            dir,
            summary: Mutex::new(summary),
            ledger: None,
            strict: false,
        };
        recorder.save(&recorder.snapshot())?;
        Ok(recorder)
    }

    /// Judges findings against `ledger`: known ones are listed as known and do not fail the
    /// run, unless `strict`.
    pub fn with_ledger(mut self, ledger: Ledger, strict: bool) -> RunRecorder {
        self.ledger = Some(ledger);
        self.strict = strict;
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Whether `signature` is in the ledger.
    pub fn is_known(&self, signature: &Signature) -> bool {
        self.ledger
            .as_ref()
            .is_some_and(|l| l.get(signature).is_some())
    }

    /// The summary as recorded so far.
    pub fn snapshot(&self) -> RunSummary {
        self.summary
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn save(&self, summary: &RunSummary) -> Result<(), ReportError> {
        let json = serde_json::to_vec_pretty(summary).map_err(|source| ReportError::Json {
            what: "summary.json",
            source,
        })?;
        self.dir.replace_file(SUMMARY_FILE, &json)?;
        Ok(())
    }

    /// Changes the summary and rewrites `summary.json` under one lock, so concurrent
    /// milestones never write an older summary over a newer one.
    fn update(&self, change: impl FnOnce(&mut RunSummary)) -> Result<RunSummary, ReportError> {
        let mut guard = self
            .summary
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        change(&mut guard);
        self.save(&guard)?;
        Ok(guard.clone())
    }

    /// Records one counterexample now: the four-view chart (if its views differ), the scenario
    /// and its report, its CSV rows, and the summary. Returns the scenario file's path.
    pub fn record(&self, cx: &Counterexample) -> Result<PathBuf, ReportError> {
        self.record_finding(cx).map(|r| r.path)
    }

    /// [`RunRecorder::record`], also folding the counterexample into the run's findings by its
    /// signature.
    pub fn record_finding(&self, cx: &Counterexample) -> Result<Recorded, ReportError> {
        let signature = cx.signature();
        let plot = if cx.views.is_empty() {
            None
        } else {
            let rel = format!("{PLOTS_DIR}/{}-views.svg", cx.seed);
            let svg = four_views_svg(&cx.views)?;
            self.dir.replace_file(&rel, svg.as_bytes())?;
            Some(rel)
        };
        // The report names the scenario file as it will be written (a repeated seed gets a
        // suffix; the summary then records the real name).
        let expected_yaml = self
            .dir
            .path()
            .join(COUNTEREXAMPLES_DIR)
            .join(format!("{}.yaml", cx.seed));
        let markdown = counterexample_markdown(
            cx,
            &expected_yaml.display().to_string(),
            plot.as_ref().map(|p| format!("../{p}")).as_deref(),
        );
        let yaml = self
            .dir
            .write_counterexample(cx.seed, &cx.property, &cx.scenario, &markdown)?;
        let rows = csv_bytes(&divergence_rows(cx), false)?;
        self.dir.append_file(DIVERGENCES_FILE, &rows)?;
        let relative = |p: &Path| {
            p.strip_prefix(self.dir.path())
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        };
        let entry = CounterexampleEntry {
            seed: cx.seed,
            property: cx.property.clone(),
            message: cx.message.clone(),
            nodes: cx.scenario.cluster.nodes.len(),
            cards: cx
                .scenario
                .cluster
                .nodes
                .iter()
                .map(|n| crate::counterexample::node_shape(n).cards)
                .sum(),
            events: cx.scenario.events.len(),
            shrinks: cx.shrinks,
            scenario: relative(&yaml),
            report: relative(&yaml.with_extension("md")),
            plot: plot.clone(),
            first_divergent_step: cx.divergence.as_ref().map(|d| d.step),
            signature: signature.clone(),
        };
        let smallest = Smallest {
            seed: entry.seed,
            nodes: entry.nodes,
            events: entry.events,
            scenario: entry.scenario.clone(),
            report: entry.report.clone(),
        };
        let headline = crate::findings::title(cx);
        let mut first = false;
        self.update(|s| {
            first = !s.findings.iter().any(|f| f.signature == signature);
            fold(
                &mut s.findings,
                signature.clone(),
                &headline,
                &cx.property,
                smallest,
                self.ledger.as_ref(),
            );
            s.counterexamples.push(entry);
            s.counterexamples.sort_by_key(|c| c.seed);
            s.figures.failing = s.counterexamples.len() as u64;
            if let Some(p) = plot {
                s.plots.push(p);
            }
        })?;
        Ok(Recorded {
            path: yaml,
            known: self.is_known(&signature),
            signature,
            first,
        })
    }

    /// Records the ledger entries this run did not reproduce whose scenarios no longer fail.
    pub fn possibly_fixed(&self, fixed: Vec<Signature>) -> Result<(), ReportError> {
        self.update(|s| s.possibly_fixed = fixed).map(|_| ())
    }

    /// A milestone without a counterexample: the figures so far.
    pub fn progress(&self, figures: Figures) -> Result<(), ReportError> {
        self.update(|s| {
            s.figures = Figures {
                failing: s.figures.failing,
                ..figures
            }
        })
        .map(|_| ())
    }

    /// Marks a finished run as stopped before every seed was judged: `interrupted`, unless a
    /// counterexample already failed it.
    pub fn interrupted(&self) -> Result<RunSummary, ReportError> {
        let summary = self.update(|s| {
            if s.verdict != Verdict::Failed {
                s.verdict = Verdict::Interrupted;
            }
        })?;
        self.dir
            .replace_file(JUNIT_FILE, junit_xml(&summary)?.as_bytes())?;
        Ok(summary)
    }

    /// Ends the run: final figures, coverage and floors, the verdict, the coverage plot,
    /// `junit.xml` and the summary. Returns the final summary.
    pub fn finish(
        &self,
        figures: Figures,
        coverage: Coverage,
        floors: Vec<FloorCheck>,
    ) -> Result<RunSummary, ReportError> {
        let plot = if coverage.classes.is_empty() {
            None
        } else {
            let svg = coverage_svg(&coverage)?;
            self.dir.replace_file(COVERAGE_PLOT, svg.as_bytes())?;
            Some(COVERAGE_PLOT.to_string())
        };
        let summary = self.update(|s| {
            s.figures = Figures {
                failing: s.counterexamples.len() as u64,
                ..figures
            };
            let known = s
                .counterexamples
                .iter()
                .filter(|c| !self.strict && self.is_known(&c.signature))
                .count();
            let new = s.counterexamples.len() - known;
            s.verdict = Verdict::of_findings(s.figures.ran, new, known, &floors);
            s.coverage = coverage;
            s.coverage_floors = floors;
            if let Some(p) = plot {
                if !s.plots.contains(&p) {
                    s.plots.push(p);
                }
            }
        })?;
        self.dir
            .replace_file(JUNIT_FILE, junit_xml(&summary)?.as_bytes())?;
        Ok(summary)
    }
}
