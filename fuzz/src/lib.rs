//! The fuzz loop (DESIGN.md "verify fuzz"): seeds → scenarios → properties → shrink →
//! counterexample files, in parallel jobs, optionally one shard of the seed range. On the twin
//! and live tiers each seed is also stepped on a [`tier::ApiTarget`] (an embedded twin, or a
//! lane of a cluster) and diffed against the model.

pub mod coverage;
pub mod record;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use generators::check::tables::StepMemo;
use generators::{arb_scenario_through, ShapeConfig};
use model::derive::Deriver;
use model::mutants::Mutant;
use model::scenario::{Expectation, Scenario};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use tier::{ApiConfig, ApiError, ApiTarget, Divergence, TWIN_PROPERTY};

pub use tier::Tier;

/// The cluster a live run writes to.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    pub kubeconfig: live::client::Kubeconfig,
    pub context: String,
    /// The run's id: every object carries `verify.gpustack.ai/run=<run>.<token>`.
    pub run: String,
    /// Set on Ctrl-C: workers stop between write steps and tear down.
    pub interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// How long each teardown waits for the operator to drop what it derived.
    pub teardown_budget: Duration,
    /// A real node to mock onto instead of fake ones (`--overlay-node`; one lane only).
    pub overlay: Option<live::client::OverlayNode>,
}

/// What one fuzz run does.
#[derive(Clone, Debug)]
pub struct FuzzConfig {
    pub tier: Tier,
    pub twin: ApiConfig,
    /// Seeds `0..seeds` (before sharding).
    pub seeds: u64,
    /// Run exactly this seed instead of a range.
    pub seed: Option<u64>,
    pub jobs: usize,
    /// `(index, count)`: run only seeds with `seed % count == index`.
    pub shard: Option<(u64, u64)>,
    pub mutant: Option<Mutant>,
    pub shape: ShapeConfig,
    /// Seeds replayed before the range (the regression file).
    pub regressions: Vec<u64>,
    /// Upper bound on shrink steps per failure.
    pub shrink_steps: u32,
    /// Stop at the first failure (the mutant kill table wants the first seed).
    pub stop_at_first: bool,
    /// Where the live tier writes (required by [`Tier::Live`]).
    pub live: Option<LiveConfig>,
    /// Set on Ctrl-C on any tier: workers take no further seed, the run finishes its reports
    /// and says it was interrupted (a live run's own flag is [`LiveConfig::interrupt`]).
    pub interrupt: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Default for FuzzConfig {
    fn default() -> Self {
        FuzzConfig {
            tier: Tier::Model,
            twin: ApiConfig::default(),
            seeds: 500,
            seed: None,
            jobs: 1,
            shard: None,
            mutant: None,
            shape: ShapeConfig::default(),
            regressions: Vec::new(),
            shrink_steps: 4096,
            stop_at_first: false,
            live: None,
            interrupt: std::sync::Arc::default(),
        }
    }
}

/// A property a seed broke, with the minimal scenario that still breaks it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    pub property: String,
    pub message: String,
    /// The shrunk scenario (its `expect` records the violation).
    pub scenario: Scenario,
    /// Shrink steps that kept the failure.
    pub shrinks: u32,
    /// Expected versus observed per field: the oracle's violation's differences on the model
    /// tier, what the twin read back that differs from the model (Kubernetes field paths) on
    /// the twin tier.
    pub fields: Vec<oracle::Difference>,
    /// The oracle check that decided the expected value (a model-tier property violation).
    pub rule: Option<&'static str>,
}

impl Failure {
    pub fn nodes(&self) -> usize {
        self.scenario.cluster.nodes.len()
    }
    pub fn events(&self) -> usize {
        self.scenario.events.len()
    }
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct FuzzReport {
    /// Seeds judged (regressions included).
    pub ran: u64,
    pub failures: Vec<Failure>,
    /// Seeds the twin could not judge: `(seed, why)` (exit 3 when nothing failed).
    pub inconclusive: Vec<(u64, String)>,
    /// Seeds whose divergence did not reproduce from a clean state: `(seed, what)` (exit 5).
    pub flaky: Vec<(u64, String)>,
    /// Objects a live run's teardowns could not remove (`verify cleanup` finds them).
    pub leftovers: Vec<String>,
    /// Ctrl-C stopped the run before every seed was judged.
    pub interrupted: bool,
    /// Gate-3 verdicts read back from Workloads on the wire (twin and live tiers).
    pub verdicts: u64,
    pub elapsed: Duration,
}

impl FuzzReport {
    pub fn rate(&self) -> f64 {
        self.ran as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The seeds a run judges: regressions first, then the (sharded) range or the one seed, a
/// range seed already replayed as a regression once. Lazy: `--seeds 18446744073709551615` is
/// a long run, not every seed allocated up front (which aborted the process).
#[derive(Clone, Debug)]
pub struct SeedPlan {
    regressions: Vec<u64>,
    one: Option<u64>,
    count: u64,
    shard: Option<(u64, u64)>,
}

impl SeedPlan {
    pub fn of(config: &FuzzConfig) -> SeedPlan {
        SeedPlan {
            regressions: config.regressions.clone(),
            one: config.seed,
            count: config.seeds,
            shard: config.shard.filter(|(i, n)| *n > 0 && i < n),
        }
    }

    /// Positions of the range part.
    fn range_len(&self) -> u64 {
        match (self.one, self.shard) {
            (Some(_), _) => 1,
            (None, Some((i, n))) => self.count.saturating_sub(i).div_ceil(n),
            (None, None) => self.count,
        }
    }

    /// The range part's seed at position `k`.
    fn range_seed(&self, k: u64) -> u64 {
        match (self.one, self.shard) {
            (Some(s), _) => s,
            (None, Some((i, n))) => i + k * n,
            (None, None) => k,
        }
    }

    fn in_range(&self, seed: u64) -> bool {
        match (self.one, self.shard) {
            (Some(s), _) => seed == s,
            (None, Some((i, n))) => seed < self.count && seed % n == i,
            (None, None) => seed < self.count,
        }
    }

    /// Positions in all: each is a seed or a repeat ([`SeedPlan::at`]).
    pub fn positions(&self) -> u64 {
        (self.regressions.len() as u64).saturating_add(self.range_len())
    }

    /// Seeds judged: the positions less the range seeds the regressions already replayed.
    pub fn len(&self) -> u64 {
        let mut repeated: Vec<u64> = self
            .regressions
            .iter()
            .copied()
            .filter(|s| self.in_range(*s))
            .collect();
        repeated.sort_unstable();
        repeated.dedup();
        self.positions() - repeated.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Position `i`: `None` past the end, `Some(None)` a range seed the regressions already
    /// replayed, else its seed.
    pub fn at(&self, i: u64) -> Option<Option<u64>> {
        let first = self.regressions.len() as u64;
        if let Some(&s) = usize::try_from(i)
            .ok()
            .and_then(|i| self.regressions.get(i))
        {
            return Some(Some(s));
        }
        let k = i - first;
        if k >= self.range_len() {
            return None;
        }
        let seed = self.range_seed(k);
        Some((!self.regressions.contains(&seed)).then_some(seed))
    }

    /// The seeds in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.positions()).filter_map(|i| self.at(i).flatten())
    }
}

/// [`SeedPlan::iter`] collected (for small runs and tests).
pub fn seed_list(config: &FuzzConfig) -> Vec<u64> {
    SeedPlan::of(config).iter().collect()
}

/// The deterministic random source of one seed.
fn rng_for(seed: u64) -> TestRng {
    seeded_rng(seed, b"verify:1")
}

/// A ChaCha source from `seed` and a `salt` (at most 24 bytes) naming what draws from it, so
/// streams of the same seed for different purposes stay apart.
pub fn seeded_rng(seed: u64, salt: &[u8]) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let salt = &salt[..salt.len().min(24)];
    bytes[8..8 + salt.len()].copy_from_slice(salt);
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// The scenario seed `seed` generates (what `--seed S` replays exactly).
pub fn scenario_for(seed: u64, shape: &ShapeConfig) -> Result<Scenario, GenerateError> {
    let mut s = scenario_tree(seed, shape, &Deriver::plain())?.current();
    s.seed = Some(seed);
    s.name = format!("seed-{seed}");
    Ok(s)
}

/// The value tree seed `seed` draws, its pools derived through `deriver` (the tree keeps it
/// for every cluster it shrinks to). The deriver changes no draw: any deriver gives the same
/// scenarios.
fn scenario_tree(
    seed: u64,
    shape: &ShapeConfig,
    deriver: &Deriver,
) -> Result<Box<dyn ValueTree<Value = Scenario>>, GenerateError> {
    let mut runner = TestRunner::new_with_rng(Config::default(), rng_for(seed));
    arb_scenario_through(shape, deriver)
        .new_tree(&mut runner)
        .map_err(|reason| GenerateError {
            seed,
            reason: reason.to_string(),
        })
}

/// proptest could not draw a scenario for a seed (its `Reason` is no `std::error::Error`, so
/// its text is kept).
#[derive(Debug, thiserror::Error)]
#[error("seed {seed}: cannot generate a scenario: {reason}")]
pub struct GenerateError {
    pub seed: u64,
    pub reason: String,
}

/// Why a fuzz run stopped without a report.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    #[error(transparent)]
    Generate(#[from] GenerateError),
    #[error("the live tier needs a cluster (--context)")]
    NoCluster,
    /// A worker's twin (or its lane of the cluster) could not be started.
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// What a judge found: the message, the differing fields and, for a property violation, the
/// oracle check that decided (all from the oracle's or the twin's structured result).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub message: String,
    pub fields: Vec<oracle::Difference>,
    pub rule: Option<&'static str>,
}

impl From<oracle::Violation> for Found {
    fn from(v: oracle::Violation) -> Found {
        Found {
            message: v.message,
            fields: v.differences,
            rule: Some(v.check),
        }
    }
}

/// The first property a scenario breaks: a violated property, or with a mutant the first
/// divergence between the model and the mutated model.
pub fn first_violation(s: &Scenario, mutant: Option<Mutant>) -> Option<(String, Found)> {
    first_violation_through(s, mutant, &scenario_deriver())
}

/// [`first_violation`], the model's properties deriving through `deriver` (a mutant's
/// comparison derives on its own).
fn first_violation_through(
    s: &Scenario,
    mutant: Option<Mutant>,
    deriver: &Deriver,
) -> Option<(String, Found)> {
    match mutant {
        None => oracle::check_all_through(s, deriver)
            .into_iter()
            .next()
            .map(|v| (v.property.to_string(), Found::from(v))),
        Some(m) => {
            let mut mutated = s.clone();
            mutated.cluster.settings.mutant = Some(m);
            oracle::compare_runs(s, &mutated).map(|d| {
                let message = format!(
                    "diverges at step {}: {}",
                    d.step,
                    oracle::render_table(&d.differences)
                );
                (
                    format!("mutant-{m}"),
                    Found {
                        message,
                        fields: d.differences,
                        rule: None,
                    },
                )
            })
        }
    }
}

/// A deriver whose step store lives for one scenario: its generation (the pools submissions
/// name), its coverage replay and its properties derive the same cluster or variants of it
/// that differ in a few nodes or a setting, so most node and pool steps are computed once (a
/// store kept across seeds would fill with steps no later seed asks for).
fn scenario_deriver() -> Deriver {
    Deriver::with_steps(std::sync::Arc::new(StepMemo::default()))
}

/// `s` run under mutant `m` (what a mutant check compares the model with).
pub fn mutated(s: &Scenario, m: Mutant) -> Scenario {
    let mut mutated = s.clone();
    mutated.cluster.settings.mutant = Some(m);
    mutated
}

/// Judges one seed on the model tier and, on failure, shrinks it while the same property
/// keeps failing.
pub fn judge_seed(seed: u64, config: &FuzzConfig) -> Result<Option<Failure>, Judged> {
    judge_seed_observed(seed, config, &|_, _| {})
}

/// [`judge_seed`], showing `on_generated` the scenario the seed generated (before shrinking),
/// for statistics, and the deriver its judgement derives through (a look that derives through
/// it shares the judgement's node and pool steps).
pub fn judge_seed_observed(
    seed: u64,
    config: &FuzzConfig,
    on_generated: &(dyn Fn(&Scenario, &Deriver) + Sync),
) -> Result<Option<Failure>, Judged> {
    judge_seed_on(seed, config, None, on_generated)
}

/// Why a seed got no verdict.
#[derive(Debug, thiserror::Error)]
pub enum Judged {
    /// The scenario could not be generated.
    #[error(transparent)]
    Generate(#[from] GenerateError),
    /// The twin could not judge it (infrastructure, no quiescence).
    #[error("seed {seed}: {source}")]
    Inconclusive {
        seed: u64,
        #[source]
        source: ApiError,
    },
    /// A cluster divergence that a clean re-run did not reproduce.
    #[error("seed {seed}: {message}")]
    Flaky { seed: u64, message: String },
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}

fn judged(seed: u64, e: ApiError) -> Judged {
    match e {
        ApiError::Flaky(d) => Judged::Flaky {
            seed,
            message: d.message,
        },
        ApiError::Interrupted => Judged::Interrupted,
        source => Judged::Inconclusive { seed, source },
    }
}

/// Judges one seed: the model's properties (or, on the model tier with a mutant, the model
/// against the mutated model); then, with a twin, the scenario through it. A failure is shrunk
/// with the model where the model reproduces it, else on the twin within
/// `config.twin.shrink_steps` evaluations.
pub fn judge_seed_on(
    seed: u64,
    config: &FuzzConfig,
    twin: Option<&mut ApiTarget>,
    on_generated: &(dyn Fn(&Scenario, &Deriver) + Sync),
) -> Result<Option<Failure>, Judged> {
    judge_seed_folding(seed, config, twin, on_generated, None)
}

/// The signatures a run has already shrunk a counterexample of.
pub type Shrunk = Mutex<BTreeSet<reports::Signature>>;

fn twin_found(d: Divergence) -> Found {
    Found {
        message: d.message,
        fields: d.differences,
        rule: None,
    }
}

/// [`judge_seed_on`], sharing `shrunk` across a run: a failure whose signature (issue [M11])
/// some seed of the run already shrank is recorded as generated, unshrunk (it folds into that
/// finding, which keeps the smallest scenario), and the time goes to new root causes.
pub fn judge_seed_folding(
    seed: u64,
    config: &FuzzConfig,
    mut twin: Option<&mut ApiTarget>,
    on_generated: &(dyn Fn(&Scenario, &Deriver) + Sync),
    shrunk: Option<&Shrunk>,
) -> Result<Option<Failure>, Judged> {
    // One store for the seed's generation, its coverage and its judgement: all three derive
    // the generated cluster.
    let deriver = scenario_deriver();
    // One scenario for every look: `current()` rebuilds it from the value tree each call.
    let generated = scenario_tree(seed, &config.shape, &deriver)?.current();
    on_generated(&generated, &deriver);
    // On the twin tier the mutant is the twin operator's; the model tier compares models.
    let model_mutant = if twin.is_some() { None } else { config.mutant };
    let by_model = |s: &Scenario| first_violation(s, model_mutant);
    let found = match first_violation_through(&generated, model_mutant, &deriver) {
        Some((p, f)) => Some(((p, f), false)),
        None => match twin.as_deref_mut() {
            None => None,
            Some(t) => t
                .judge(&generated, config.mutant)
                .map_err(|e| judged(seed, e))?
                .map(|d| ((TWIN_PROPERTY.to_string(), twin_found(d)), true)),
        },
    };
    let Some(((property, found), on_twin)) = found else {
        return Ok(None);
    };
    let unshrunk = failure(seed, config, &property, generated.clone(), found.clone(), 0);
    let first_signature = counterexample(&unshrunk, config.mutant).signature();
    if shrunk.is_some_and(|set| set.lock().is_ok_and(|set| set.contains(&first_signature))) {
        return Ok(Some(unshrunk));
    }
    // The seed drawn again for shrinking, deriving plainly: the seed's store would keep every
    // cluster the tree shrinks to, and each candidate is judged with a store of its own.
    drop(deriver);
    let mut tree = scenario_tree(seed, &config.shape, &Deriver::plain())?;
    let (scenario, found, shrinks) = match (on_twin, twin) {
        // The mutated model disagrees with the model too: shrink there, confirm on the twin.
        (true, Some(t))
            if config
                .mutant
                .is_some_and(|m| first_violation(&generated, Some(m)).is_some()) =>
        {
            let m = config.mutant;
            let (small, _, shrinks) = shrink(&mut tree, found.clone(), config.shrink_steps, |s| {
                first_violation(s, m).map(|(_, f)| f)
            });
            match t.judge(&small, config.mutant) {
                Ok(Some(d)) => (small, twin_found(d), shrinks),
                _ => (first_scenario(seed, config)?, found, 0),
            }
        }
        // On a cluster, deletions are judged side by side in disjoint pools; the result is
        // confirmed as any divergence is (a clean re-run), else the seed's scenario stands.
        (true, Some(t)) if t.on_cluster() => {
            let start = tree.current();
            let mut judge = |batch: &[Scenario]| {
                t.judge_side_by_side(batch)
                    .into_iter()
                    .map(|r| matches!(r, Ok(Some(_))))
                    .collect()
            };
            let shrunk = generators::deletion::shrink_by_deletion(
                &start,
                config.twin.shrink_steps as usize,
                config.twin.shrink_width,
                &mut judge,
            );
            match shrunk.kept {
                0 => (start, found, 0),
                kept => match t.judge(&shrunk.scenario, None) {
                    Ok(Some(d)) => (shrunk.scenario, twin_found(d), kept),
                    _ => (start, found, 0),
                },
            }
        }
        (true, Some(t)) => shrink(&mut tree, found, config.twin.shrink_steps, |s| {
            t.judge(s, config.mutant).ok().flatten().map(twin_found)
        }),
        _ => shrink(&mut tree, found, config.shrink_steps, |s| {
            by_model(s).filter(|(p, _)| *p == property).map(|(_, f)| f)
        }),
    };
    let f = failure(seed, config, &property, scenario, found, shrinks);
    if let Some(set) = shrunk {
        let last = counterexample(&f, config.mutant).signature();
        if let Ok(mut set) = set.lock() {
            set.insert(first_signature);
            set.insert(last);
        }
    }
    Ok(Some(f))
}

/// The mutant a counterexample's scenario was found under: its `mutant:` field, as
/// [`failure`] writes it on the model and the twin tier; for a file written before that field
/// existed, the description's opening [`MUTANT_NOTE`]`NAME:` (still read, so old counterexamples
/// keep replaying under their mutant). What `verify replay` replays the twin with.
pub fn recorded_mutant(s: &Scenario) -> Option<Mutant> {
    if let Some(name) = &s.mutant {
        return name.trim().parse().ok();
    }
    s.description
        .strip_prefix(MUTANT_NOTE)?
        .split(':')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// How a mutant counterexample's description opens: `diverges under mutant NAME: …`.
pub const MUTANT_NOTE: &str = "diverges under mutant ";

/// A failure with its scenario named and its violation recorded.
fn failure(
    seed: u64,
    config: &FuzzConfig,
    property: &str,
    mut scenario: Scenario,
    found: Found,
    shrinks: u32,
) -> Failure {
    scenario.seed = Some(seed);
    scenario.name = format!("seed-{seed}-{property}");
    if let Some(m) = config.mutant {
        scenario.mutant = Some(m.to_string());
        scenario.description = format!("{MUTANT_NOTE}{m}: {}", m.describe());
    }
    scenario.expect = vec![Expectation::Violation {
        property: property.to_string(),
        message: found.message.clone(),
    }];
    Failure {
        seed,
        property: property.to_string(),
        message: found.message,
        scenario,
        shrinks,
        fields: found.fields,
        rule: found.rule,
    }
}

fn first_scenario(seed: u64, config: &FuzzConfig) -> Result<Scenario, Judged> {
    Ok(scenario_for(seed, &config.shape)?)
}

/// Shrinks `tree` while `fails` keeps failing (at most `steps` candidates): the smallest
/// failing scenario, its message, and the shrink steps that kept the failure.
fn shrink<T>(
    tree: &mut Box<dyn ValueTree<Value = Scenario>>,
    message: T,
    steps: u32,
    mut fails: impl FnMut(&Scenario) -> Option<T>,
) -> (Scenario, T, u32) {
    let mut best = (tree.current(), message);
    let mut shrinks = 0;
    let mut tried = 0;
    if tree.simplify() {
        loop {
            tried += 1;
            if tried > steps {
                break;
            }
            let candidate = tree.current();
            let advanced = match fails(&candidate) {
                Some(msg) => {
                    best = (candidate, msg);
                    shrinks += 1;
                    tree.simplify()
                }
                None => tree.complicate(),
            };
            if !advanced {
                break;
            }
        }
    }
    (best.0, best.1, shrinks)
}

/// Runs the seeds on `config.jobs` threads; `on_done(seed, failure)` is called once per seed
/// (progress, writing counterexamples) from the worker that judged it.
pub fn run(
    config: &FuzzConfig,
    on_done: &(dyn Fn(u64, Option<&Failure>) + Sync),
) -> Result<FuzzReport, FuzzError> {
    run_observed(config, on_done, &|_, _| {})
}

/// [`run`], also showing `on_generated` every generated scenario (shape statistics) and its
/// seed's deriver ([`judge_seed_observed`]).
pub fn run_observed(
    config: &FuzzConfig,
    on_done: &(dyn Fn(u64, Option<&Failure>) + Sync),
    on_generated: &(dyn Fn(&Scenario, &Deriver) + Sync),
) -> Result<FuzzReport, FuzzError> {
    let seeds = SeedPlan::of(config);
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let ran = AtomicU64::new(0);
    let failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    let errors: Mutex<Vec<FuzzError>> = Mutex::new(Vec::new());
    let inconclusive: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let flaky: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let leftovers: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let verdicts = AtomicU64::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let interrupted = std::sync::atomic::AtomicBool::new(false);
    let shrunk: Shrunk = Mutex::new(BTreeSet::new());
    let shrunk = &shrunk;
    std::thread::scope(|scope| {
        for lane in 0..config.jobs.max(1) {
            let (errors, stop, flaky, leftovers, interrupted) =
                (&errors, &stop, &flaky, &leftovers, &interrupted);
            let (failures, inconclusive, next, ran, seeds, verdicts) =
                (&failures, &inconclusive, &next, &ran, &seeds, &verdicts);
            scope.spawn(move || {
                let mut twin = match runner_for(config, lane) {
                    Ok(t) => t,
                    Err(e) => {
                        errors.lock().map(|mut v| v.push(e)).ok();
                        return;
                    }
                };
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if config.interrupt.load(Ordering::Relaxed)
                        || config
                            .live
                            .as_ref()
                            .is_some_and(|l| l.interrupt.load(Ordering::Relaxed))
                    {
                        interrupted.store(true, Ordering::Relaxed);
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(at) = seeds.at(i) else { break };
                    let Some(seed) = at else { continue };
                    match judge_seed_folding(
                        seed,
                        config,
                        twin.as_mut(),
                        on_generated,
                        Some(shrunk),
                    ) {
                        Ok(found) => {
                            ran.fetch_add(1, Ordering::Relaxed);
                            on_done(seed, found.as_ref());
                            if let Some(f) = found {
                                if config.stop_at_first {
                                    stop.store(true, Ordering::Relaxed);
                                }
                                failures.lock().map(|mut v| v.push(f)).ok();
                            }
                        }
                        Err(why @ Judged::Inconclusive { .. }) => {
                            on_done(seed, None);
                            let why = why.to_string();
                            inconclusive.lock().map(|mut v| v.push((seed, why))).ok();
                        }
                        Err(what @ Judged::Flaky { .. }) => {
                            ran.fetch_add(1, Ordering::Relaxed);
                            on_done(seed, None);
                            let what = what.to_string();
                            flaky.lock().map(|mut v| v.push((seed, what))).ok();
                        }
                        Err(Judged::Interrupted) => {
                            interrupted.store(true, Ordering::Relaxed);
                            stop.store(true, Ordering::Relaxed);
                        }
                        Err(Judged::Generate(e)) => {
                            errors.lock().map(|mut v| v.push(e.into())).ok();
                        }
                    }
                }
                if let Some(t) = &twin {
                    leftovers.lock().map(|mut v| v.extend(t.leftovers())).ok();
                    verdicts.fetch_add(t.verdicts_read(), Ordering::Relaxed);
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap_or_default();
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    let mut failures = failures.into_inner().unwrap_or_default();
    failures.sort_by_key(|f| f.seed);
    let mut inconclusive = inconclusive.into_inner().unwrap_or_default();
    inconclusive.sort();
    let mut flaky = flaky.into_inner().unwrap_or_default();
    flaky.sort();
    Ok(FuzzReport {
        ran: ran.into_inner(),
        failures,
        inconclusive,
        flaky,
        leftovers: leftovers.into_inner().unwrap_or_default(),
        interrupted: interrupted.into_inner(),
        verdicts: verdicts.into_inner(),
        elapsed: started.elapsed(),
    })
}

/// Worker `lane`'s runner for the tier: none on the model tier, its own embedded twin, or a
/// lane of the live run.
fn runner_for(config: &FuzzConfig, lane: usize) -> Result<Option<ApiTarget>, FuzzError> {
    match config.tier {
        Tier::Model => Ok(None),
        Tier::Twin => Ok(Some(ApiTarget::start(config.twin.clone())?)),
        Tier::Live => {
            let live = config.live.as_ref().ok_or(FuzzError::NoCluster)?;
            ApiTarget::connect(
                live.kubeconfig.clone(),
                &live.context,
                config.twin.clone(),
                tier::Lane {
                    run: live.run.clone(),
                    lane,
                    interrupt: live.interrupt.clone(),
                    teardown_budget: live.teardown_budget,
                    overlay: live.overlay.clone(),
                },
                model::labels::DEFAULT_SYSTEM_NAMESPACE,
            )
            .map(Some)
            .map_err(FuzzError::from)
        }
    }
}

/// A failure as the reports show it: with a mutant, where the mutated run first parts from
/// the model and the four views that differ there.
pub fn counterexample(f: &Failure, mutant: Option<Mutant>) -> reports::Counterexample {
    let cx = reports::Counterexample::violation(
        f.seed,
        &f.property,
        &f.message,
        f.scenario.clone(),
        f.shrinks,
    )
    .with_rule(f.rule);
    match mutant {
        // A twin divergence is what the twin published; its message carries that table, and
        // the model-against-mutated-model comparison would show something else.
        Some(m) if f.property != TWIN_PROPERTY => {
            let observed = mutated(&f.scenario, m);
            let cx = cx.against(&observed);
            let fields = kube_fields(&cx, &observed);
            cx.with_fields(fields)
        }
        _ if !f.fields.is_empty() => cx.with_fields(f.fields.clone()),
        _ => cx,
    }
}

/// The differences of a model-against-model divergence in Kubernetes field paths: both
/// derivations at the divergent step rendered as the twin's operator writes them
/// (`live::client::expected`, the renderer of `live::wire::render`) and diffed as the twin
/// tier diffs what it reads back, plus the event effects that differ. The model's own rows
/// stand when the rendering shows no difference.
fn kube_fields(cx: &reports::Counterexample, observed: &Scenario) -> Vec<oracle::Difference> {
    let Some(d) = &cx.divergence else {
        return Vec::new();
    };
    let expected = live::client::expected(&oracle::observe_at(&cx.scenario, d.step));
    let seen = live::client::expected(&oracle::observe_at(observed, d.step));
    let mut fields = live::client::diff(&expected, &seen);
    fields.extend(
        d.differences
            .iter()
            .filter(|x| x.kind == oracle::ObjectKind::Effect)
            .cloned(),
    );
    if fields.is_empty() {
        d.differences.clone()
    } else {
        fields
    }
}

/// A failure's Markdown report (`reports::counterexample_markdown`), naming the scenario file
/// as `counterexamples/<seed>.yaml` in its run directory.
pub fn failure_report(f: &Failure) -> String {
    reports::counterexample_markdown(
        &counterexample(f, None),
        &format!("{}/{}.yaml", scenario::COUNTEREXAMPLES_DIR, f.seed),
        None,
    )
}

/// Where the run's files go.
pub fn default_run_base() -> PathBuf {
    PathBuf::from("runs")
}

/// The run label an upstream issue's manifests carry (`kubectl delete … -l` removes them).
pub const ISSUE_RUN: &str = "verify-issue";

/// A scenario's initial cluster as the objects to `kubectl apply` on a cluster running the
/// operator: Namespaces, Nodes (labels, annotations, CPU capacity, a NoSchedule taint so no
/// real Pod lands), a NodeFeature per Node and its Devices, labelled `run=verify-issue`. The
/// same objects the live tier writes (`live::client::mock::run_objects`, built from the twin's
/// own conversion `live::wire::read::mock_objects`), so the issue shows what `verify` tested.
pub fn cluster_manifests(
    s: &Scenario,
) -> Result<Vec<serde_json::Value>, live::client::ClientError> {
    let run = live::client::RunId::new(ISSUE_RUN)?;
    let cluster = live::client::mock::mocked_cluster(&s.cluster, &run);
    Ok(live::client::mock::run_objects(&cluster, &run)
        .into_iter()
        .map(|(kind, namespace, mut object)| {
            if let Some(ns) = namespace {
                object["metadata"]["namespace"] = serde_json::json!(ns);
            }
            if object.get("apiVersion").is_none() {
                object["apiVersion"] = serde_json::json!(kind.api_version());
            }
            object
        })
        .collect())
}

/// Replays a twin counterexample (`twin-matches-model`) on a fresh embedded twin, under the
/// mutant its scenario records: the divergence, if it still reproduces.
pub fn replay_on_twin(s: &Scenario) -> Result<Option<Divergence>, ApiError> {
    let mut runner = ApiTarget::start(ApiConfig::default())?;
    runner.judge(s, recorded_mutant(s))
}
