//! Command-line arguments. Parsing only: every command becomes a plain config for dispatch.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
pub use tier::Tier;

mod bounds;
mod cluster;
mod output;
mod plan;
mod run;

pub use cluster::*;
pub use output::*;
pub use run::*;

/// Verifier for the GPUStack operator's scheduling chain.
#[derive(Debug, Parser)]
#[command(name = "verify", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    /// Log more on stderr: -v info, -vv debug (kube-rs's requests), -vvv trace. RUST_LOG,
    /// when set, wins.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Log errors only, and draw no progress bar.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// DESIGN.md "Exit codes", plus 4 for an unmet coverage floor.
pub const EXIT_CODES: &str = "Exit codes: 0 all held (or nothing verified, which is printed); \
1 a counterexample or any FAIL; 2 usage error or missing input; 3 inconclusive \
(infrastructure failure, no quiescence); 4 a coverage floor (--min-coverage) not met; \
5 flaky (a divergence that did not reproduce).";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate scenarios from seeds and check the chain's properties on each (the main job).
    /// A failure is shrunk, written under the run directory, and folded by its signature into
    /// one finding per root cause; a finding in the ledger (`.verify/known.yaml`) prints as
    /// `known (…)` and does not fail the run. A new finding's first seed is appended to the
    /// regression file (never a mutant's), which every later run replays first. Each run
    /// writes `runs/<run-id>/` (summary.json, divergences.csv, counterexamples/, junit.xml,
    /// plots/) and ends with a summary table. Exit 1 on a new finding (any, with --strict), 4
    /// on an unmet `--min-coverage` floor.
    Fuzz(FuzzArgs),
    /// The known-findings ledger `.verify/known.yaml`. Without a subcommand: replays the
    /// regression seeds, drops those that no longer fail from the regression file, then lists
    /// the ledger.
    Findings {
        #[command(subcommand)]
        action: Option<FindingsCommand>,
        /// The ledger file.
        #[arg(long, default_value = reports::findings::KNOWN_FILE, global = true)]
        known: PathBuf,
        /// The regression seed file.
        #[arg(long, default_value = ".verify/regressions.txt", global = true)]
        regressions: PathBuf,
    },
    /// Exhaustive model checking of the chain's dynamics within a small scope (stateright).
    /// Prints states generated/unique, depth, each property's verdict and wall time; a
    /// violation is written as a scenario file. Exit 1 on a violated property.
    #[command(after_help = generators::check::SEARCH_HELP)]
    Check(CheckArgs),
    /// Churn for a while: a stream of node, card, Workload and namespace events at a steady
    /// rate, with the invariants checked and the target diffed at every quiescent point.
    /// Writes series.csv, checkpoint.yaml and any counterexample under the run directory and
    /// appends one row to the history file. Exit 0 held, 1 a finding, 3 inconclusive.
    Soak(SoakArgs),
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
        #[command(flatten)]
        output: OutputArgs,
        /// Seeds to try per mutant.
        #[arg(long, default_value_t = 500)]
        seeds: u64,
        #[arg(long, value_parser = bounds::workers())]
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
    /// The operator's locked e2e cases: number, locked title, scope, Needs, mutation posture,
    /// and whether verify models it (with the reason when it does not).
    Cases(OutputArgs),
    /// Run one locked case (`verify case 14`) or a hardware block (`--block mig|rdma`): a
    /// `STATUS | CHECK | OBJECT` table, then a verdict. Exit 0 pass or skip (a skip prints
    /// NOTHING WAS VERIFIED), 1 any FAIL, 2 input required or tier not available yet.
    Case(CaseArgs),
    /// Re-render a run directory (`runs/<run-id>/`): its summary, coverage and
    /// counterexamples as Markdown, the summary as JSON, the divergences as CSV, JUnit XML,
    /// or one static offline HTML page with the plots inlined. Exit 2 if the directory has
    /// no readable summary.json.
    ///
    /// With `--merge OUT`, joins the run directories of the shards of one `verify fuzz --shard`
    /// campaign into a new run directory OUT (findings folded by signature, the verdict
    /// recomputed) and prints its summary; exits with the merged verdict's code.
    Report {
        /// The run directory (with --merge: every shard's).
        #[arg(required = true, value_name = "RUN_DIR")]
        run_dirs: Vec<PathBuf>,
        /// Merge the shard run directories into this new run directory.
        #[arg(long, value_name = "OUT", conflicts_with_all = ["finding", "output", "format"])]
        merge: Option<PathBuf>,
        /// md, json, csv, junit, html, or issue (one finding as Markdown for the operator's
        /// tracker: needs --finding).
        #[arg(long, default_value = "md", value_parser = reports::ReportFormat::parse)]
        format: reports::ReportFormat,
        /// Write here instead of standard output.
        #[arg(long)]
        output: Option<PathBuf>,
        /// The finding's signature (or a unique prefix of it), for `--format issue`.
        #[arg(long)]
        finding: Option<String>,
        /// The ledger the issue reads titles and links from.
        #[arg(long, default_value = reports::findings::KNOWN_FILE)]
        known: PathBuf,
    },
    /// Read-only audit: predict the operator's objects from the Nodes and Devices with the
    /// model and diff them against a cluster (`--context`) or a kubectl dump (`--snapshot`),
    /// divergences folded along the derivation graph. Writes nothing. Exit 0 none, 1
    /// divergences, 2 bad input, 3 cluster unreachable or preflight failed.
    Audit(AuditArgs),
    /// Run the reference operator (the model-driven reconcilers and the gpustack-node-devices
    /// AdmissionCheck controller) against a cluster through watches, until Ctrl-C: with a
    /// real apiserver and Kueue (`scripts/kube start`) it makes a cluster the live tier runs
    /// on. It writes the operator's objects: `--context` is required, and `--yes` or a
    /// confirmation. Exit 0 when stopped, 2 refused, 3 unreachable or not serving the chain.
    Operator(OperatorArgs),
    /// Remove what an interrupted run left behind (objects labelled `verify.gpustack.ai/run`),
    /// then check that nothing with the label remains. Exit 1 if something remains.
    Cleanup(CleanupArgs),
    /// The Helm chart contract (the operator's chart e2e suite): whole-cluster inventories,
    /// leftovers after an uninstall, Helm release records read through the API, the install
    /// that saves the before-inventory, and chart cases 1-8 (`verify chart case 1`).
    #[command(subcommand)]
    Chart(ChartCommand),
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
    /// Print a completion script for SHELL on standard output (e.g. `verify completions bash
    /// > ~/.local/share/bash-completion/completions/verify`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on standard output (`verify man | man -l -`).
    #[command(alias = "manpage")]
    Man,
}

/// `verify findings` subcommands.
#[derive(Debug, Subcommand)]
pub enum FindingsCommand {
    /// Print the ledger: each finding's status, title, signature, scenario and first sighting.
    List(OutputArgs),
    /// Add a finding of a run to the ledger (its smallest scenario copied to .verify/known/),
    /// or change the status of one already there.
    Accept {
        /// The signature, or a unique prefix of it.
        signature: String,
        /// The run directory that found it (default: the newest under runs/ that has it).
        #[arg(long)]
        run: Option<PathBuf>,
        /// open, reported-upstream or accepted (default: open for a new entry).
        #[arg(long, value_parser = reports::Status::parse)]
        status: Option<reports::Status>,
        /// The entry's title (default: the finding's headline).
        #[arg(long)]
        title: Option<String>,
        /// Where it is discussed (an upstream issue, a docs/ section).
        #[arg(long)]
        link: Option<String>,
        /// Where run directories are.
        #[arg(long, default_value = "runs")]
        runs: PathBuf,
    },
    /// Remove a finding from the ledger (once the operator fixed it).
    Retire {
        /// The signature, or a unique prefix of it.
        signature: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TwinCommand {
    /// Serve the twin until interrupted; prints its URL and writes a kubeconfig for it.
    Serve {
        /// Port on 127.0.0.1 (default: any free port).
        #[arg(long)]
        port: Option<u16>,
        /// Write a kubeconfig (context `verify-twin`, or `--context-name`) here.
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        /// Name the kubeconfig's context. Under `verify-twin` the twin issues a token (written
        /// into the kubeconfig) by which verify recognises it; under any other name it issues
        /// none and plays a real cluster (`--context` and a confirmation or `--yes` needed).
        #[arg(long, default_value = "verify-twin")]
        context_name: String,
        /// Start with the mocked Nodes, Namespaces and Devices of the walkthrough cluster
        /// (research/chain.md §15); the reference operator derives the rest.
        #[arg(long)]
        walkthrough: bool,
        /// Inject faults into client requests, replayable from a seed: `SEED[:SPEC]`, SPEC a
        /// comma-separated list of rates and knobs, e.g. `7:conflict=0.05,throttle=0.05,
        /// error=0.05,watch-cut=0.2,slow=0.05,delay-ms=20,retry-after=1` (no spaces).
        #[arg(long, value_name = "SEED[:SPEC]")]
        faults: Option<String>,
        /// Run the reference operator with this mutated rule (`verify mutants --list`).
        #[arg(long)]
        mutant: Option<String>,
        /// Milliseconds the reference operator waits after a write before reconciling.
        #[arg(long, default_value_t = 0)]
        lag_ms: u64,
    },
}
