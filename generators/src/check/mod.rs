//! `verify check`: exhaustive exploration of the chain's dynamics within a small scope, with
//! stateright ([M4], issue 5). The state is the cluster shape (nodes × cards from a fixed
//! palette), the interned structure at the last quiescence, Workload statuses (pending, Retry,
//! Ready-but-uncharged = in flight, admitted) and the per-card ledger; each action calls one
//! model rule (see [`chain`]). Every reachable state is checked against the properties in
//! [`properties`]; a violation comes back as the action path, a numbered step list and a
//! replayable [`model::scenario::Scenario`].

pub mod chain;
pub mod memo;
pub mod palette;
pub mod properties;
pub mod state;
pub mod tables;
pub mod trace;

use std::time::{Duration, Instant};

use model::mutants::Mutant;
use model::scenario::Scenario;
use stateright::{Checker, HasDiscoveries, Model};

pub use chain::{Action, ChainModel, ScopeError};
pub use state::State;

/// `--help` text for the search options.
pub const SEARCH_HELP: &str = "\
Default: breadth-first on 2 threads (faster; a counterexample is short, not always the \
shortest). --bfs: breadth-first on one thread; a violation is reported with the SHORTEST \
counterexample path. Symmetry reduction is NOT applied breadth-first (stateright 0.31 applies \
it in DFS only). \
--dfs: depth-first; with --symmetry, states equal up to renaming interchangeable nodes (same \
kind: labels, CPU, cards) and reordering the cards of a node no Workload holds are explored \
once (fewer states, counterexamples not shortest). --symmetry without --dfs changes nothing.";

/// Which search order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Search {
    /// Breadth-first: shortest counterexamples; ignores symmetry (stateright 0.31).
    #[default]
    Bfs,
    /// Depth-first: the only order that applies symmetry reduction.
    Dfs,
}

/// The scope and options of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    pub nodes: usize,
    pub cards: usize,
    pub workloads: usize,
    pub threads: usize,
    pub search: Search,
    /// Symmetry reduction over interchangeable nodes and cards (DFS only; ignored under BFS).
    pub symmetry: bool,
    pub mutant: Option<Mutant>,
    /// Stop after about this many generated states (verdicts are then "within the bound").
    pub max_states: Option<usize>,
    /// Explore paths of at most this many states (the initial state is depth 1; verdicts are
    /// then "within the bound").
    pub max_depth: Option<usize>,
    /// Gate 3 counts Ready-but-uncharged Workloads (admission.md §6.5). `false` checks the
    /// variant that forgets them, which the checker must catch as an overcommit.
    pub count_inflight: bool,
    /// Test seam: report this always-property failing once a Workload is admitted.
    pub broken: Option<properties::Broken>,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            nodes: 3,
            cards: 2,
            workloads: 4,
            threads: 1,
            search: Search::Bfs,
            symmetry: false,
            mutant: None,
            max_states: None,
            max_depth: None,
            count_inflight: true,
            broken: None,
        }
    }
}

/// How a property came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// An always-property held in every explored state.
    Held,
    /// An always-property failed; the counterexample.
    Violated(Box<Counterexample>),
    /// A sometimes-property was reached; the numbered steps reaching it.
    Reached(Vec<String>),
    NotReached,
}

/// A path to a state where a property fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// One line per action.
    pub steps: Vec<String>,
    /// Index into `steps` of the action after which the property first fails (`None`: the
    /// initial state already fails).
    pub first_failing: Option<usize>,
    /// Why the property fails in the last state.
    pub message: String,
    /// The cluster and the events taken, replayable by `verify replay`.
    pub scenario: Scenario,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyReport {
    pub name: &'static str,
    pub always: bool,
    pub verdict: Verdict,
}

/// What a check found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub config: CheckConfig,
    pub states_generated: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    pub wall: Duration,
    /// Whether every reachable state was explored (no bound hit, no early stop).
    pub complete: bool,
    pub properties: Vec<PropertyReport>,
    /// Entries per memo table (how often each kind of model work ran; see `tables`).
    pub memo: Vec<tables::MemoStat>,
}

impl CheckReport {
    /// Whether an always-property was violated (the CLI exits 1 then).
    pub fn violated(&self) -> bool {
        self.properties
            .iter()
            .any(|p| matches!(p.verdict, Verdict::Violated(_)))
    }

    /// The first violation, if any.
    pub fn first_violation(&self) -> Option<(&'static str, &Counterexample)> {
        self.properties.iter().find_map(|p| match &p.verdict {
            Verdict::Violated(c) => Some((p.name, c.as_ref())),
            _ => None,
        })
    }

    /// Unique states per second of wall time.
    pub fn unique_per_second(&self) -> f64 {
        self.unique_states as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The report as `verify check` prints it.
    pub fn render(&self) -> String {
        trace::render(self)
    }
}

/// Explores the scope of `config` and reports every property's verdict.
///
/// BFS reports the shortest counterexample and ignores `symmetry` (stateright 0.31 applies
/// symmetry reduction in DFS only); DFS with `symmetry` explores states equal up to a
/// renaming of interchangeable nodes and reordering of a node's unheld cards once. With a
/// mutant the search stops at the first violation. An out-of-range scope is an error naming
/// the option.
pub fn run_check(config: &CheckConfig) -> Result<CheckReport, ScopeError> {
    Ok(explore(config, ChainModel::for_check(config)?))
}

/// Explores the scope of `config` with `model`, whose tables may already hold model answers
/// (the benchmark's floor: the same exploration with no model work left to do).
pub fn explore(config: &CheckConfig, model: ChainModel) -> CheckReport {
    let mut builder = model.checker().threads(config.threads.max(1));
    if let Some(n) = config.max_states {
        builder = builder.target_state_count(n);
    }
    if let Some(d) = config.max_depth {
        builder = builder.target_max_depth(d);
    }
    if config.mutant.is_some() || config.broken.is_some() {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    let start = Instant::now();
    match config.search {
        Search::Bfs => collect(config, builder.spawn_bfs().join(), start),
        Search::Dfs if config.symmetry => collect(
            config,
            builder
                .symmetry_fn(chain::representative)
                .spawn_dfs()
                .join(),
            start,
        ),
        Search::Dfs => collect(config, builder.spawn_dfs().join(), start),
    }
}

fn collect(config: &CheckConfig, checker: impl Checker<ChainModel>, start: Instant) -> CheckReport {
    let wall = start.elapsed();
    let model = checker.model();
    let discoveries = checker.discoveries();
    let properties = properties::ALL
        .iter()
        .map(|p| {
            let always = p.kind == properties::Kind::Always;
            let verdict = match (discoveries.get(p.name), always) {
                (None, true) => Verdict::Held,
                (None, false) => Verdict::NotReached,
                (Some(path), true) => Verdict::Violated(Box::new(trace::counterexample(
                    model,
                    p,
                    path.clone().into_vec(),
                ))),
                (Some(path), false) => {
                    Verdict::Reached(trace::steps(model, &path.clone().into_actions()))
                }
            };
            PropertyReport {
                name: p.name,
                always,
                verdict,
            }
        })
        .collect::<Vec<_>>();
    let unique = checker.unique_state_count();
    let stopped_early = config
        .max_states
        .is_some_and(|n| checker.state_count() >= n)
        || config.max_depth.is_some_and(|d| checker.max_depth() >= d)
        || ((config.mutant.is_some() || config.broken.is_some())
            && properties
                .iter()
                .any(|p| matches!(p.verdict, Verdict::Violated(_))));
    CheckReport {
        config: config.clone(),
        states_generated: checker.state_count(),
        unique_states: unique,
        max_depth: checker.max_depth(),
        wall,
        complete: checker.is_done() && !stopped_early,
        properties,
        memo: model.tables.sizes(),
    }
}
