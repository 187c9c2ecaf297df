//! Command-line arguments. Parsing only: every command becomes a plain config for dispatch.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Verifier for the GPUStack operator's scheduling chain.
#[derive(Debug, Parser)]
#[command(name = "verify", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate scenarios from seeds and check the chain's properties on each (the main job).
    /// A failure is shrunk, written under the run directory, and its seed appended to the
    /// regression file, which every later run replays first. Exit 1 on a counterexample.
    Fuzz(FuzzArgs),
    /// Exhaustive model checking of the chain's dynamics within a small scope (stateright).
    /// Prints states generated/unique, depth, each property's verdict and wall time; a
    /// violation is written as a scenario file. Exit 1 on a violated property.
    #[command(after_help = generators::check::SEARCH_HELP)]
    Check(CheckArgs),
    /// The embedded twin: a Kubernetes API server on 127.0.0.1 for kubectl and kube-rs.
    #[command(subcommand)]
    Twin(TwinCommand),
    /// Re-run a scenario file (a case, a counterexample or a checkpoint) and check it.
    Replay {
        /// The scenario YAML file.
        file: PathBuf,
    },
    /// The operator-bug catalog: with `--list` the names; otherwise fuzz each mutant and print
    /// the kill table (seed that found it, shrunk size). Exit 1 if a mutant survives.
    Mutants {
        #[arg(long)]
        list: bool,
        /// Seeds to try per mutant.
        #[arg(long, default_value_t = 500)]
        seeds: u64,
        #[arg(long)]
        jobs: Option<usize>,
        /// Tier the mutants are fuzzed on (`twin`: the twin's operator runs each mutant).
        #[arg(long, value_enum, default_value_t = Tier::Model)]
        tier: Tier,
        /// Short for `--tier twin`.
        #[arg(long)]
        twin: bool,
    },
    /// Run the model against the operator's conformance vectors (one line per file,
    /// then `N passed, M failed`). Exit 1 on a failed vector, 2 on a malformed file.
    Conformance {
        /// Folder of `*.json` vector files.
        #[arg(default_value = "../shared/conformance")]
        dir: PathBuf,
    },
    /// Read-only audit: predict the operator's objects from the Nodes and Devices with the
    /// model and diff them against a cluster (`--context`) or a kubectl dump (`--snapshot`),
    /// divergences folded along the derivation graph. Writes nothing. Exit 0 none, 1
    /// divergences, 2 bad input, 3 cluster unreachable or preflight failed.
    Audit(AuditArgs),
    /// Remove what an interrupted run left behind (objects labelled `verify.gpustack.ai/run`),
    /// then check that nothing with the label remains. Exit 1 if something remains.
    Cleanup(CleanupArgs),
    /// Derive every object of the chain for a cluster shape and print it.
    /// Without `--cluster`, the embedded walkthrough cluster is used.
    Derive {
        /// A cluster shape as JSON (nodes, namespaces, settings, instance_types).
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

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
    /// tier, whose workers mostly wait for quiescence).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run one slice of the seed range, `I/N` (seeds with seed % N == I).
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// Diff the model against a mutated model (see `verify mutants --list`).
    #[arg(long)]
    pub mutant: Option<model::mutants::Mutant>,
    /// Tier to check: `model` (properties only) or `twin` (also through an embedded
    /// Kubernetes-API twin on 127.0.0.1, the default).
    #[arg(long, value_enum)]
    pub tier: Option<Tier>,
    /// Short for `--tier twin`.
    #[arg(long, conflicts_with = "tier")]
    pub twin: bool,
    /// Largest generated cluster, in nodes.
    #[arg(long, default_value_t = 4)]
    pub max_nodes: usize,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub run_dir: PathBuf,
    /// The regression seed file, replayed first and appended on failure.
    #[arg(long, default_value = ".verify/regressions.txt")]
    pub regressions: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum TwinCommand {
    /// Serve the twin until interrupted; prints its URL and writes a kubeconfig for it.
    Serve {
        /// Port on 127.0.0.1 (default: any free port).
        #[arg(long)]
        port: Option<u16>,
        /// Write a kubeconfig (context `verify-twin`) here.
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        /// Start with the mocked Nodes, Namespaces and Devices of the walkthrough cluster
        /// (research/chain.md §15); the reference operator derives the rest.
        #[arg(long)]
        walkthrough: bool,
    },
}

/// `verify check` arguments.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    #[arg(long, default_value_t = 2)]
    pub cards: usize,
    #[arg(long, default_value_t = 4)]
    pub workloads: usize,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Breadth-first (default): shortest counterexample, no symmetry reduction.
    #[arg(long, conflicts_with = "dfs")]
    pub bfs: bool,
    /// Depth-first: applies symmetry reduction with `--symmetry`.
    #[arg(long)]
    pub dfs: bool,
    /// Symmetry reduction over interchangeable cards (DFS only).
    #[arg(long)]
    pub symmetry: bool,
    /// Check a mutated model (see `verify mutants --list`).
    #[arg(long)]
    pub mutant: Option<model::mutants::Mutant>,
    /// Stop after about this many states (verdicts then hold within the bound only).
    #[arg(long)]
    pub max_states: Option<usize>,
    /// Where a counterexample's scenario file goes.
    #[arg(long, default_value = "runs")]
    pub run_dir: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Tier {
    Model,
    Twin,
}

impl Tier {
    /// `--tier`/`--twin` resolved: the twin unless the model tier was asked for.
    pub fn chosen(tier: Option<Tier>, twin: bool) -> Tier {
        match (tier, twin) {
            (_, true) => Tier::Twin,
            (Some(t), false) => t,
            (None, false) => Tier::Twin,
        }
    }

    /// Workers when `--jobs` is not given: the cores, four per core on the twin tier.
    pub fn default_jobs(self) -> usize {
        match self {
            Tier::Model => default_jobs(),
            Tier::Twin => 4 * default_jobs(),
        }
    }
}

/// Both cores by default (the machine's parallelism).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `I/N` with I < N.
fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("expected I/N (e.g. 0/4), got `{s}`"))?;
    let i: u64 = i
        .parse()
        .map_err(|_| format!("shard index `{i}` is not a number"))?;
    let n: u64 = n
        .parse()
        .map_err(|_| format!("shard count `{n}` is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!("shard {i}/{n}: expected 0 <= I < N"));
    }
    Ok((i, n))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

/// `verify audit` arguments.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// A `kubectl get … -A -o json` dump (see README); audited offline.
    #[arg(long, conflicts_with_all = ["context", "kubeconfig"])]
    pub snapshot: Option<PathBuf>,
    /// Kubeconfig context to audit (default: the kubeconfig's current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

/// `verify cleanup` arguments.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["run", "all_runs"])))]
pub struct CleanupArgs {
    /// The run id (the value of its `verify.gpustack.ai/run` label).
    #[arg(long)]
    pub run: Option<String>,
    /// Every run that left labelled objects.
    #[arg(long)]
    pub all_runs: bool,
    /// Kubeconfig context (required unless it is the embedded twin's `verify-twin`).
    #[arg(long)]
    pub context: Option<String>,
    /// Kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}
