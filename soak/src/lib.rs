//! `verify soak`: a time-bounded stream of churn events (nodes joining and leaving, cards
//! changing family, Workloads of every family arriving and finishing, namespaces, awareness
//! and mixing flips) applied to a target at a steady rate; at every quiescent point the
//! model's invariants are checked and the target's objects diffed against the model. A time
//! series is written as the run goes, the last good point is kept as a checkpoint scenario,
//! and the first finding ends the run with its stretch (checkpoint + events since) shrunk
//! into a replayable counterexample. The target is any [`tier::Target`]: the model, or an
//! [`tier::ApiTarget`] (the embedded twin, a cluster).

pub mod invariants;
pub mod series;
pub mod stream;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use model::derive::Deriver;
use model::events::{Event, World};
use model::scenario::{Expectation, Scenario};
use scenario::RunDir;

pub use invariants::Finding;
pub use series::{HistoryRow, Sample};

use tier::{ApiError, Target};

use generators::ShapeConfig;
use stream::EventStream;

/// What a soak run does and for how long.
#[derive(Clone, Debug)]
pub struct SoakConfig {
    pub seed: u64,
    /// Bounds of the initial cluster (generated from `seed` as `verify fuzz --seed` does).
    pub shape: ShapeConfig,
    /// Wall-clock budget; the run stops at the first quiescent point past it.
    pub duration: Duration,
    /// Stop after this many events (tests bound runs by events, never by time).
    pub max_events: Option<u64>,
    /// Events per second; `None` applies them as fast as the target reaches quiescence.
    pub rate: Option<f64>,
    /// At most one series row per this interval (and always one at the end).
    pub sample_every: Duration,
    /// Try to advance the checkpoint every this many events.
    pub checkpoint_every: u64,
    /// Most replays spent shrinking a failing stretch.
    pub shrink_budget: usize,
    /// Set by Ctrl-C: the run stops at the next quiescent point and tears down.
    pub stop: Arc<AtomicBool>,
    /// Whether the stream may flip the settings, awareness and mixing (not on the twin: its
    /// operator's flags are fixed).
    pub awareness_flips: bool,
}

impl Default for SoakConfig {
    fn default() -> Self {
        SoakConfig {
            seed: 0,
            shape: ShapeConfig::default(),
            duration: Duration::from_secs(60),
            max_events: None,
            rate: None,
            sample_every: Duration::from_secs(1),
            checkpoint_every: 50,
            shrink_budget: 400,
            stop: Arc::new(AtomicBool::new(false)),
            awareness_flips: true,
        }
    }
}

/// How a soak ended (DESIGN.md exit codes: 0, 1, 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Held,
    Failed,
    /// The target could not answer (no quiescence, infrastructure); nothing was judged wrong.
    Inconclusive(String),
}

impl outcome::Concluded for Verdict {
    fn outcome(&self) -> outcome::Outcome {
        match self {
            Verdict::Held => outcome::Outcome::Held,
            Verdict::Failed => outcome::Outcome::Failed,
            Verdict::Inconclusive(_) => outcome::Outcome::Inconclusive,
        }
    }
}

impl Verdict {
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Held => "held",
            Verdict::Failed => "failed",
            Verdict::Inconclusive(_) => "inconclusive",
        }
    }
}

/// The first finding of a run, shrunk and written.
#[derive(Clone, Debug)]
pub struct SoakFailure {
    pub finding: Finding,
    /// Events applied when it was found.
    pub at_event: u64,
    pub elapsed: Duration,
    /// Events in the stretch from the last checkpoint, and after shrinking.
    pub stretch_events: usize,
    pub shrunk_events: usize,
    pub shrunk_nodes: usize,
    pub counterexample: PathBuf,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct SoakReport {
    pub events: u64,
    pub elapsed: Duration,
    pub samples: u64,
    pub failure: Option<SoakFailure>,
    /// Objects of the run left after teardown (must be 0).
    pub leftovers: usize,
    pub checkpoints: u64,
    pub peak_rss_kib: u64,
    pub mean_quiescence_ms: f64,
    pub verdict: Verdict,
}

impl SoakReport {
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The run's row in the history file.
    pub fn history_row(&self, run: &str, tier: &str, seed: u64) -> HistoryRow {
        HistoryRow {
            run: run.to_string(),
            tier: tier.to_string(),
            seed,
            duration_s: self.elapsed.as_secs_f64(),
            events: self.events,
            events_per_s: self.events_per_s(),
            first_failure_s: self.failure.as_ref().map(|f| f.elapsed.as_secs_f64()),
            mean_quiescence_ms: self.mean_quiescence_ms,
            peak_rss_kib: self.peak_rss_kib,
            verdict: self.verdict.label().to_string(),
        }
    }
}

/// Writing the run's files failed.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    #[error(transparent)]
    Generate(#[from] fuzz::GenerateError),
}

/// Why a run stopped without a verdict (inconclusive, exit 3): the target could not answer,
/// or the run could not go on.
#[derive(Debug, thiserror::Error)]
enum Stopped {
    #[error(transparent)]
    Target(#[from] ApiError),
    #[error(transparent)]
    Stream(#[from] stream::DrawError),
    #[error(transparent)]
    Checkpoint(#[from] scenario::ScenarioError),
    #[error("{}: {source}", path.display())]
    Series {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The reference's invariants at a quiescent point: the first one broken.
fn broken_invariant(reference: &World) -> Option<Finding> {
    invariants::at_quiescence(reference, &reference.observe())
        .into_iter()
        .next()
}

/// The checks of one quiescent point: the reference's invariants, then the target's diff.
pub fn check_point(
    reference: &World,
    target: &mut dyn Target,
) -> Result<Option<Finding>, ApiError> {
    if let Some(f) = broken_invariant(reference) {
        return Ok(Some(f));
    }
    Ok(tier::divergence_of(target)?.map(Finding::from))
}

/// Replays a stretch on a fresh reference and `target` (through [`tier::step_scenario`]): the
/// first finding and the step it appeared at (0 = the checkpoint itself, k = after event k).
/// The target is torn down after.
pub fn judge_stretch(
    s: &Scenario,
    target: &mut dyn Target,
) -> Result<Option<(usize, Finding)>, ApiError> {
    let mut reference = s.start();
    let outcome = tier::step_scenario(target, s, &s.events, |event| {
        if let Some(e) = event {
            reference.apply(e);
        }
        broken_invariant(&reference)
    });
    target.teardown()?;
    outcome
}

/// How long `write` took (a quiescence latency of the series).
fn timed(write: impl FnOnce() -> Result<(), ApiError>) -> Result<Duration, ApiError> {
    let started = Instant::now();
    write()?;
    Ok(started.elapsed())
}

/// A scenario that rebuilds `reference` exactly: its cluster with every hold released, then
/// the held Workloads resubmitted in submission order. `None` when resubmitting does not land
/// them where they are (placement moved with the shape since), so the caller keeps its last
/// checkpoint instead of writing an inexact one.
pub fn checkpoint_of(reference: &World, submitted: &[(u64, Event)]) -> Option<Scenario> {
    let mut free = reference.clone();
    let held: Vec<String> = free.admission.holds.keys().cloned().collect();
    for key in &held {
        let (ns, name) = key.split_once('/')?;
        free.admission.finish(ns, name).ok()?;
    }
    let resubmits: Vec<Event> = submitted
        .iter()
        .filter(|(_, e)| match e {
            Event::Submit { workload } => {
                held.contains(&format!("{}/{}", workload.namespace, workload.name))
            }
            _ => false,
        })
        .map(|(_, e)| e.clone())
        .collect();
    let s = Scenario {
        name: "soak-checkpoint".into(),
        cluster: free.cluster().clone(),
        events: resubmits,
        published: Some(model::derive::Derived::clone(&free.admission.derived)),
        ..Scenario::default()
    };
    let mut again = s.start();
    for e in &s.events {
        again.apply(e);
    }
    let same = again.cluster() == reference.cluster()
        && again.admission.holds == reference.admission.holds
        && again.admission.reserved == reference.admission.reserved
        && again.observe() == reference.observe();
    same.then_some(s)
}

/// Runs a soak: `target` is driven, `replay_target` builds a fresh target of the same tier to
/// shrink a failing stretch on, `on_sample` sees each series row as it is written.
pub fn run(
    config: &SoakConfig,
    target: &mut dyn Target,
    replay_target: &mut dyn FnMut() -> Box<dyn Target>,
    dir: &RunDir,
    on_sample: &mut dyn FnMut(&Sample),
) -> Result<SoakReport, SoakError> {
    let started = Instant::now();
    let initial = fuzz_initial_cluster(config)?;
    let series_path = dir.path().join("series.csv");
    let mut series =
        series::SeriesWriter::create(&series_path).map_err(|source| SoakError::Write {
            path: series_path.clone(),
            source,
        })?;
    let mut stats = Stats::default();
    // the reference re-derives after every event: incrementally, as a running operator does
    let mut reference = World::with_deriver(initial.cluster.clone(), Deriver::incremental());
    let mut stream = EventStream::new(config.seed, config.shape.clone());
    if !config.awareness_flips {
        stream = stream.without_awareness_flips();
    }
    let mut stretch = Scenario {
        name: format!("soak-{}", config.seed),
        cluster: initial.cluster.clone(),
        ..Scenario::default()
    };
    // Submissions of Workloads that may still be held (a checkpoint resubmits them).
    let mut submitted: Vec<(u64, Event)> = Vec::new();
    let mut verdict = Verdict::Held;
    let mut failure = None;
    let mut finding = None;

    let outcome = (|| -> Result<(), Stopped> {
        stats.latency(timed(|| target.start(&initial))?);
        finding = check_point(&reference, target)?;
        while finding.is_none() && !done(config, &stats, started) {
            pace(config, stats.events, started);
            let event = stream.next(&reference).map_err(Stopped::Stream)?;
            reference.apply(&event);
            stats.latency(timed(|| target.apply(&event))?);
            stats.events += 1;
            if matches!(event, Event::Submit { .. }) {
                submitted.push((stats.events, event.clone()));
            }
            stretch.events.push(event);
            finding = check_point(&reference, target)?;
            if finding.is_none() && stats.events % config.checkpoint_every.max(1) == 0 {
                if let Some(cp) = checkpoint_of(&reference, &submitted) {
                    scenario::save(&dir.path().join("checkpoint.yaml"), &cp)?;
                    submitted.retain(|(_, e)| cp.events.contains(e));
                    stretch = Scenario {
                        name: format!("soak-{}", config.seed),
                        ..cp
                    };
                    stats.checkpoints += 1;
                }
            }
            if stats.last_sample.elapsed() >= config.sample_every {
                stats
                    .sample(
                        &mut series,
                        target,
                        started,
                        on_sample,
                        finding.is_some(),
                        &reference,
                    )
                    .map_err(|source| Stopped::Series {
                        path: series_path.clone(),
                        source,
                    })?;
            }
        }
        Ok(())
    })();
    if let Err(e) = outcome {
        verdict = Verdict::Inconclusive(e.to_string());
    }
    if let Some(found) = finding {
        verdict = Verdict::Failed;
        failure = Some(write_failure(
            config,
            dir,
            &stretch,
            found,
            &stats,
            started,
            replay_target,
        )?);
    }
    stats
        .sample(
            &mut series,
            target,
            started,
            on_sample,
            failure.is_some(),
            &reference,
        )
        .map_err(|source| SoakError::Write {
            path: series_path.clone(),
            source,
        })?;
    let samples = series::read_series(&series_path).map_err(|e| SoakError::Write {
        path: series_path.clone(),
        source: std::io::Error::other(e),
    })?;
    let plots_dir = dir.path().join("plots");
    series::write_plots(&plots_dir, &samples).map_err(|source| SoakError::Write {
        path: plots_dir,
        source,
    })?;
    let leftovers = match target.teardown() {
        Ok(n) => n,
        Err(e) => {
            if verdict == Verdict::Held {
                verdict = Verdict::Inconclusive(format!("teardown: {e}"));
            }
            usize::MAX
        }
    };
    if leftovers > 0 && leftovers != usize::MAX && verdict == Verdict::Held {
        verdict = Verdict::Inconclusive(format!("{leftovers} objects left after teardown"));
    }
    Ok(SoakReport {
        events: stats.events,
        elapsed: started.elapsed(),
        samples: stats.samples,
        failure,
        leftovers,
        checkpoints: stats.checkpoints,
        peak_rss_kib: stats.peak_rss_kib,
        mean_quiescence_ms: stats.mean_latency_ms(),
        verdict,
    })
}

/// The initial cluster seed `seed` generates (the same one `verify fuzz --seed` starts from).
fn fuzz_initial_cluster(config: &SoakConfig) -> Result<Scenario, SoakError> {
    fuzz::scenario_for(config.seed, &config.shape).map_err(SoakError::Generate)
}

fn done(config: &SoakConfig, stats: &Stats, started: Instant) -> bool {
    config.stop.load(Ordering::Relaxed)
        || config.max_events.is_some_and(|n| stats.events >= n)
        || started.elapsed() >= config.duration
}

/// Waits until event `applied + 1` is due at `rate` events per second.
fn pace(config: &SoakConfig, applied: u64, started: Instant) {
    let Some(rate) = config.rate.filter(|r| *r > 0.0) else {
        return;
    };
    // a rate so low that the next event is due past what a Duration holds: wait out the soak
    let due = Duration::try_from_secs_f64(applied as f64 / rate).unwrap_or(Duration::MAX);
    let elapsed = started.elapsed();
    if let Some(wait) = due.checked_sub(elapsed) {
        // never past the soak's end, and in slices so a Ctrl-C is heard within one
        let wait = wait.min(config.duration.saturating_sub(elapsed));
        let slice = Duration::from_millis(200);
        let until = Instant::now().checked_add(wait);
        while !config.stop.load(Ordering::Relaxed) {
            let left = until.map_or(slice, |u| u.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(slice));
        }
    }
}

/// Shrinks the failing stretch on fresh targets and writes it as a counterexample.
fn write_failure(
    config: &SoakConfig,
    dir: &RunDir,
    stretch: &Scenario,
    found: Finding,
    stats: &Stats,
    started: Instant,
    replay_target: &mut dyn FnMut() -> Box<dyn Target>,
) -> Result<SoakFailure, SoakError> {
    let property = found.property.clone();
    let mut fails = |s: &Scenario| matches!(judge_stretch(s, replay_target().as_mut()), Ok(Some((_, f))) if f.property == property);
    // Shrink only a stretch that reproduces from its checkpoint; else keep it whole.
    let (mut shrunk, _) = if fails(stretch) {
        // one replay at a time: each replay target is a fresh lane of its own
        let mut judge = |batch: &[Scenario]| batch.iter().map(&mut fails).collect();
        let shrunk =
            generators::deletion::shrink_by_deletion(stretch, config.shrink_budget, 1, &mut judge);
        (shrunk.scenario, shrunk.judged)
    } else {
        (stretch.clone(), 0)
    };
    let step = judge_stretch(&shrunk, replay_target().as_mut())
        .ok()
        .flatten()
        .map_or(shrunk.events.len(), |(step, _)| step);
    shrunk.seed = Some(config.seed);
    shrunk.name = format!("soak-{}-{}", config.seed, found.property);
    shrunk.description = format!(
        "soak seed {}: {} after {} events ({} in the stretch from the last checkpoint)",
        config.seed,
        found.property,
        stats.events,
        stretch.events.len()
    );
    shrunk.expect = vec![Expectation::Violation {
        property: found.property.clone(),
        message: found.message.clone(),
    }];
    let report = failure_markdown(&found, stats.events, stretch, &shrunk, step);
    let path = dir.write_counterexample(config.seed, &found.property, &shrunk, &report)?;
    Ok(SoakFailure {
        at_event: stats.events,
        elapsed: started.elapsed(),
        stretch_events: stretch.events.len(),
        shrunk_events: shrunk.events.len(),
        shrunk_nodes: shrunk.cluster.nodes.len(),
        counterexample: path,
        finding: found,
    })
}

fn failure_markdown(
    found: &Finding,
    at_event: u64,
    stretch: &Scenario,
    shrunk: &Scenario,
    step: usize,
) -> String {
    format!(
        "# Soak counterexample: {}\n\nFound after {at_event} events. The stretch from the last \
         checkpoint ({} node(s), {} event(s)) shrank to {} node(s) and {} event(s); the \
         property first fails at step {step} (0 = the checkpoint itself).\n\n## What failed\n\n\
         {}\n\nReplay with `verify replay` on the scenario file beside this report.\n",
        found.property,
        stretch.cluster.nodes.len(),
        stretch.events.len(),
        shrunk.cluster.nodes.len(),
        shrunk.events.len(),
        found.message
    )
}

/// Running counters between samples.
struct Stats {
    events: u64,
    samples: u64,
    checkpoints: u64,
    latency_total: Duration,
    latency_count: u64,
    window_total: Duration,
    window_count: u64,
    last_sample: Instant,
    peak_rss_kib: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            events: 0,
            samples: 0,
            checkpoints: 0,
            latency_total: Duration::ZERO,
            latency_count: 0,
            window_total: Duration::ZERO,
            window_count: 0,
            last_sample: Instant::now(),
            peak_rss_kib: 0,
        }
    }
}

impl Stats {
    fn latency(&mut self, d: Duration) {
        self.latency_total += d;
        self.latency_count += 1;
        self.window_total += d;
        self.window_count += 1;
    }

    fn mean_latency_ms(&self) -> f64 {
        if self.latency_count == 0 {
            return 0.0;
        }
        self.latency_total.as_secs_f64() * 1000.0 / self.latency_count as f64
    }

    fn sample(
        &mut self,
        series: &mut series::SeriesWriter,
        target: &dyn Target,
        started: Instant,
        on_sample: &mut dyn FnMut(&Sample),
        found: bool,
        reference: &World,
    ) -> std::io::Result<()> {
        let objects = if target.mirrors_reference() {
            tier::objects_of(reference)
        } else {
            target.objects_alive()
        };
        let rss = series::rss_kib();
        self.peak_rss_kib = self.peak_rss_kib.max(rss);
        let latency = if self.window_count == 0 {
            0.0
        } else {
            self.window_total.as_secs_f64() * 1000.0 / self.window_count as f64
        };
        let sample = Sample {
            elapsed_s: started.elapsed().as_secs_f64(),
            events_applied: self.events,
            divergences: u64::from(found),
            quiescence_latency_ms: latency,
            api_calls: target.api_calls(),
            objects_alive: objects as u64,
            rss_kib: rss,
        };
        series.push(&sample)?;
        on_sample(&sample);
        self.samples += 1;
        self.window_total = Duration::ZERO;
        self.window_count = 0;
        self.last_sample = Instant::now();
        Ok(())
    }
}
