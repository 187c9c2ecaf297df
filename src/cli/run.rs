//! The arguments of the commands that run scenarios: fuzz, soak, check, case.

use super::*;

/// `verify fuzz` arguments.
#[derive(Debug, clap::Args)]
pub struct FuzzArgs {
    /// How many seeds (0..N) to run.
    #[arg(long, default_value_t = 500)]
    pub seeds: u64,
    /// Replay exactly this seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Parallel workers (default: the cores on the model tier, four per core on the twin
    /// tier, whose workers mostly wait for quiescence; two on a cluster). On a cluster each
    /// worker's seeds get their own pools, so `--parallel K` runs K seeds side by side.
    #[arg(long, visible_alias = "parallel", value_parser = bounds::workers())]
    pub jobs: Option<usize>,
    /// Run one slice of the seed range, `I/N` (seeds with seed % N == I), or `auto` in a
    /// Kubernetes Indexed Job: I from `JOB_COMPLETION_INDEX`, N from `VERIFY_SHARD_COUNT`
    /// (docs/kubernetes.md).
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Diff the model against a mutated model (see `verify mutants --list`).
    #[arg(long)]
    pub mutant: Option<model::mutants::Mutant>,
    /// Tier to check: `model` (properties only), `twin` (also through an embedded
    /// Kubernetes-API twin on 127.0.0.1, the default) or `live` (also through a cluster running
    /// the operator; implied by `--context`).
    #[arg(long, value_enum)]
    pub tier: Option<Tier>,
    /// Short for `--tier twin`.
    #[arg(long, conflicts_with_all = ["tier", "context"])]
    pub twin: bool,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Evaluations a shrink may spend on the twin or the cluster when the model alone does
    /// not reproduce a failure (each is a full run of the candidate).
    #[arg(long)]
    pub shrink_budget: Option<u32>,
    /// Largest generated cluster, in nodes (at most 1000).
    #[arg(long, default_value_t = 4, value_parser = bounds::max_nodes())]
    pub max_nodes: usize,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub run_dir: PathBuf,
    /// The regression seed file, replayed first and appended on failure.
    #[arg(long, default_value = ".verify/regressions.txt")]
    pub regressions: PathBuf,
    /// The known-findings ledger: findings listed there do not fail the run.
    #[arg(long, default_value = reports::findings::KNOWN_FILE)]
    pub known: PathBuf,
    /// Fail on known findings too (exit 1 when any counterexample is found).
    #[arg(long)]
    pub strict: bool,
    /// Coverage floors, `CLASS=N` (N distinct values) or `CLASS:VALUE=N` (N scenarios), e.g.
    /// `vendors=2,modes:Shared=10,properties=6`. Classes: vendors, modes, families, nodes,
    /// events, properties. A floor not met makes the run exit 4 (a counterexample still
    /// exits 1).
    #[arg(long, value_parser = reports::parse_floors)]
    pub min_coverage: Option<Floors>,
}

/// `verify soak` arguments.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// How long to churn (e.g. `90s`, `30m`, `8h`).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub duration: std::time::Duration,
    /// Events per second, above 0 (default: as fast as quiescence allows).
    #[arg(long, value_parser = bounds::rate)]
    pub rate: Option<f64>,
    /// Seed of the initial cluster and of the event stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop after this many events even if time remains.
    #[arg(long)]
    pub max_events: Option<u64>,
    /// Tier to drive: the model against itself (default), the embedded twin through the
    /// kube-rs client, or a cluster running the operator (`live`, implied by `--context`).
    #[arg(long, value_enum)]
    pub tier: Option<Tier>,
    /// Short for `--tier twin`.
    #[arg(long, conflicts_with = "context")]
    pub twin: bool,
    #[command(flatten)]
    pub live: LiveArgs,
    /// On the twin tier, inject faults into the client's requests, replayable from a seed:
    /// `SEED[:conflict=0.05,throttle=0.05,error=0.05,watch-cut=0.2,slow=0.05,delay-ms=20]`.
    #[arg(long)]
    pub faults: Option<String>,
    /// Drive a mutated model, or on the twin tier a mutated operator; the soak must catch it.
    #[arg(long)]
    pub mutant: Option<model::mutants::Mutant>,
    /// Largest initial cluster, in nodes, at most 1000 (the stream keeps it within twice that).
    #[arg(long, default_value_t = 4, value_parser = bounds::max_nodes())]
    pub max_nodes: usize,
    /// Try to advance the checkpoint every this many events (at least 1).
    #[arg(long, default_value_t = 50, value_parser = bounds::at_least_one())]
    pub checkpoint_every: u64,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub run_dir: PathBuf,
    /// The history file: one row per soak run, for trends across nightly runs.
    #[arg(long, default_value = ".verify/soak-history.csv")]
    pub history: PathBuf,
}
/// All of `--min-coverage` as one value (an alias, so clap parses the list in one go).
pub type Floors = Vec<reports::Floor>;

/// `verify check` arguments.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    #[arg(long, default_value_t = 2)]
    pub cards: usize,
    #[arg(long, default_value_t = 4)]
    pub workloads: usize,
    /// Worker threads of the search (1 to 256) [default: 2; 1 with --bfs].
    #[arg(long, value_parser = bounds::workers())]
    pub threads: Option<usize>,
    /// Breadth-first on one thread: the shortest counterexample (several threads explore
    /// level by level only roughly), no symmetry reduction. Without --bfs or --dfs the search
    /// is breadth-first on 2 threads.
    #[arg(long, conflicts_with = "dfs")]
    pub bfs: bool,
    /// Depth-first: applies symmetry reduction with `--symmetry`.
    #[arg(long)]
    pub dfs: bool,
    /// Symmetry reduction over interchangeable nodes and cards (DFS only).
    #[arg(long)]
    pub symmetry: bool,
    /// Check a mutated model (see `verify mutants --list`).
    #[arg(long)]
    pub mutant: Option<model::mutants::Mutant>,
    /// Stop after about this many states (verdicts then hold within the bound only).
    #[arg(long)]
    pub max_states: Option<usize>,
    /// Explore paths of at most this many states (the initial state is depth 1).
    #[arg(long)]
    pub max_depth: Option<usize>,
    /// Where a counterexample's scenario file goes.
    #[arg(long, default_value = "runs")]
    pub run_dir: PathBuf,
}

/// `verify case` arguments.
#[derive(Debug, clap::Args)]
pub struct CaseArgs {
    /// The case number (see `verify cases`).
    #[arg(required_unless_present = "block", conflicts_with = "block")]
    pub number: Option<u32>,
    /// Run a hardware block in its runner's order (MIG: 27, 24, then the rest; RDMA: 80-84).
    #[arg(long, value_enum)]
    pub block: Option<CaseBlock>,
    /// With `--block rdma`: print which readings this cluster can answer and what each unmet
    /// requirement lacks, touching nothing.
    #[arg(long, requires = "block")]
    pub report_only: bool,
    /// Where the case runs: the model, an embedded twin, or a cluster running the operator
    /// (`live`, implied by `--context`; the case's scenario is mocked in run-unique pools).
    #[arg(long, value_enum)]
    pub tier: Option<Tier>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Output: the case table, JUnit XML for CI, or the rows and verdict as JSON.
    #[arg(short = 'o', long, visible_alias = "output-format", value_enum, default_value_t = CaseFormat::Table)]
    pub format: CaseFormat,
    /// Run on a mutated model (see `verify mutants --list`): the case should fail.
    #[arg(long)]
    pub mutant: Option<model::mutants::Mutant>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CaseBlock {
    Mig,
    Rdma,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CaseFormat {
    Table,
    Junit,
    Json,
}

/// `--shard`: a slice named on the command line, or one the plan takes from the environment
/// of a Kubernetes Indexed Job ([`super::plan`] resolves it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shard {
    /// `I/N`: seeds with seed % N == I.
    Fixed(u64, u64),
    /// `auto`: I from [`SHARD_INDEX_VAR`], N from [`SHARD_COUNT_VAR`].
    Auto,
}

/// The index of a Pod in an Indexed Job. The Job controller sets it in every container of a
/// Job with `completionMode: Indexed` (Kubernetes docs, "Jobs: Completion mode": "The Pod
/// index is available in ... the environment variable JOB_COMPLETION_INDEX"; Kubernetes
/// 1.22+).
pub const SHARD_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// The shard count: the Job's `completions`, passed by the manifest (deploy/fuzz-job.yaml),
/// since Kubernetes does not expose `completions` to the Pod as a variable.
pub const SHARD_COUNT_VAR: &str = "VERIFY_SHARD_COUNT";

/// `I/N` with I < N, or `auto`.
fn parse_shard(s: &str) -> Result<Shard, String> {
    if s == "auto" {
        return Ok(Shard::Auto);
    }
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("expected I/N (e.g. 0/4) or auto, got `{s}`"))?;
    let i: u64 = i
        .parse()
        .map_err(|_| format!("shard index `{i}` is not a number"))?;
    let n: u64 = n
        .parse()
        .map_err(|_| format!("shard count `{n}` is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!("shard {i}/{n}: expected 0 <= I < N"));
    }
    Ok(Shard::Fixed(i, n))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}
