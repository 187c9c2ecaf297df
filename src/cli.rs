//! Command-line arguments. Parsing only: every command becomes a plain config for dispatch.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Verifier for the GPUStack operator's scheduling chain.
#[derive(Debug, Parser)]
#[command(name = "verify", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
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
    /// The operator's locked e2e cases: number, locked title, scope, Needs, mutation posture,
    /// and whether verify models it (with the reason when it does not).
    Cases,
    /// Run one locked case (`verify case 14`) or a hardware block (`--block mig|rdma`): a
    /// `STATUS | CHECK | OBJECT` table, then a verdict. Exit 0 pass or skip (a skip prints
    /// NOTHING WAS VERIFIED), 1 any FAIL, 2 input required or tier not available yet.
    Case(CaseArgs),
    /// Re-render a run directory (`runs/<run-id>/`): its summary, coverage and
    /// counterexamples as Markdown, the summary as JSON, the divergences as CSV, JUnit XML,
    /// or one static offline HTML page with the plots inlined. Exit 2 if the directory has
    /// no readable summary.json.
    Report {
        /// The run directory.
        run_dir: PathBuf,
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
}

/// `verify findings` subcommands.
#[derive(Debug, Subcommand)]
pub enum FindingsCommand {
    /// Print the ledger: each finding's status, title, signature, scenario and first sighting.
    List,
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
    #[arg(long, visible_alias = "parallel")]
    pub jobs: Option<usize>,
    /// Run one slice of the seed range, `I/N` (seeds with seed % N == I).
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
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
    /// Largest generated cluster, in nodes.
    #[arg(long, default_value_t = 4)]
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
    /// Events per second (default: as fast as quiescence allows).
    #[arg(long)]
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
    /// Largest initial cluster, in nodes (the stream keeps it within twice that).
    #[arg(long, default_value_t = 4)]
    pub max_nodes: usize,
    /// Try to advance the checkpoint every this many events.
    #[arg(long, default_value_t = 50)]
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
        /// Name the kubeconfig's context: any name but `verify-twin` makes verify treat the
        /// twin as a real cluster (it then needs `--context` and a confirmation or `--yes`).
        #[arg(long, default_value = "verify-twin")]
        context_name: String,
        /// Start with the mocked Nodes, Namespaces and Devices of the walkthrough cluster
        /// (research/chain.md §15); the reference operator derives the rest.
        #[arg(long)]
        walkthrough: bool,
        /// Inject faults into client requests, replayable from a seed:
        /// `SEED[:conflict=0.05,throttle=0.05,error=0.05,watch-cut=0.2,slow=0.05,delay-ms=20,retry-after=1]`.
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Tier {
    Model,
    Twin,
    Live,
}

impl Tier {
    /// `--tier`/`--twin`/`--context` resolved: `--twin` is the twin, an explicit `--tier`
    /// wins, a context means the live tier, else `default` (the twin for fuzz, the model for
    /// soak and case).
    pub fn resolve(tier: Option<Tier>, twin: bool, context: Option<&str>, default: Tier) -> Tier {
        match (twin, tier, context) {
            (true, _, _) => Tier::Twin,
            (false, Some(t), _) => t,
            (false, None, Some(_)) => Tier::Live,
            (false, None, None) => default,
        }
    }

    /// The tier's name in run summaries and history rows.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Model => "model",
            Tier::Twin => "twin",
            Tier::Live => "live",
        }
    }

    /// Workers when `--jobs` is not given: the cores, four per core on the twin tier, two
    /// lanes on a cluster.
    pub fn default_jobs(self) -> usize {
        match self {
            Tier::Model => default_jobs(),
            Tier::Twin => 4 * default_jobs(),
            Tier::Live => 2,
        }
    }
}

/// Which cluster a command changes, and the confirmation it asks for (DESIGN.md "Safety on a
/// real cluster").
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ClusterArgs {
    /// Kubeconfig context of the cluster (required to change a real cluster; the kubeconfig's
    /// current context is never changed). On fuzz, case and soak it implies `--tier live`.
    #[arg(long)]
    pub context: Option<String>,
    /// Kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Answer the confirmation a change to a real cluster asks for (for CI). Without a
    /// terminal and without `--yes`, such a command refuses (exit 2).
    #[arg(long)]
    pub yes: bool,
}

/// Where a live run writes.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct LiveArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// How long each teardown waits for the operator to drop what it derived from the mocks.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub teardown_budget: std::time::Duration,
    /// Mock onto this real node instead of fake ones, as the operator's e2e suite does: a
    /// Ready node with no Devices of its own; only its NodeFeature and Devices are written, the
    /// Node itself never. One seed at a time; nodes joining or leaving are left out.
    #[arg(long)]
    pub overlay_node: Option<String>,
    /// The cluster operator's settings as JSON (model `Settings` fields: `aware_cpu_manufacturer`,
    /// `mixed_on_node`, …, `system_namespace`), when they differ from the operator's defaults.
    /// A cluster runs one configuration, so generated scenarios use exactly these.
    #[arg(long)]
    pub operator_settings: Option<PathBuf>,
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
    /// Output: the case table, or JUnit XML for CI.
    #[arg(long, value_enum, default_value_t = CaseFormat::Table)]
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
    /// A dump of `kubectl get nodes,devices,instancetypes,resourceflavors,clusterqueues,
    /// localqueues,admissionchecks,topologies -A -o json --show-managed-fields` (see docs/audit.md);
    /// audited offline. A dump without topologies (the older command) leaves them unjudged.
    #[arg(long, conflicts_with_all = ["context", "kubeconfig"])]
    pub snapshot: Option<PathBuf>,
    /// Kubeconfig context to audit (default: the kubeconfig's current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

/// `verify operator` arguments.
#[derive(Debug, clap::Args)]
pub struct OperatorArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Who decides gates 1–2 (quota and flavor assignment): a real Kueue on the cluster, or
    /// the model (a server without Kueue).
    #[arg(long, value_enum, default_value_t = QuotaBy::Kueue)]
    pub quota_by: QuotaBy,
    /// The cluster runs NFD's master: do not apply NodeFeature labels onto Nodes.
    #[arg(long)]
    pub no_nfd_master: bool,
    /// The operator's settings as JSON (model `Settings` fields), when they differ from the
    /// defaults.
    #[arg(long)]
    pub operator_settings: Option<PathBuf>,
    /// Advertise each mocked node's cards as credits in its allocatable: Kueue 0.17's TAS
    /// books a reservation in credits and admits nothing no node advertises (docs/kube-local.md).
    #[arg(long)]
    pub credits_capacity: bool,
}

/// Who decides gates 1–2 for `verify operator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QuotaBy {
    Kueue,
    Model,
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
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// `verify chart` subcommands (logic in the `chart` crate).
#[derive(Debug, Subcommand)]
pub enum ChartCommand {
    /// Read-only: every object of every listable resource (cluster-scoped and in every
    /// namespace) as JSON: kind, group/version, namespace, name, uid, finalizers, owner
    /// references, Helm ownership, deletionTimestamp; resources that cannot be listed are
    /// recorded with the reason. Exit 0 written, 3 cluster unreachable.
    Inventory {
        #[command(flatten)]
        cluster: ChartCluster,
        /// Where the inventory JSON goes.
        #[arg(long)]
        output: PathBuf,
    },
    /// Everything AFTER holds that BEFORE did not (by uid; recreated names marked), grouped
    /// by the Helm release that created it, stuck finalizers shown, the cluster's own churn
    /// allowed by named rules. Exit 0 none, 1 leftovers, 2 a bad file.
    Leftovers {
        #[arg(long)]
        before: PathBuf,
        #[arg(long)]
        after: PathBuf,
    },
    /// Helm release records read through the API (Secret and ConfigMap drivers), no helm
    /// binary: name, revision, status, chart name, chart version and appVersion of each
    /// release's latest revision. Exit 2 on a malformed record (named).
    Release {
        #[command(flatten)]
        cluster: ChartCluster,
        /// Only this namespace (default: all namespaces).
        #[arg(long)]
        namespace: Option<String>,
        /// Only this release.
        #[arg(long)]
        name: Option<String>,
    },
    /// Saves the before-install inventory in --run-dir, then runs the user's `helm install`
    /// with the chart and values, pinned to --context. Mutating: --yes or a confirmation.
    Install {
        #[command(flatten)]
        cluster: ChartCluster,
        /// The chart (a path, a .tgz or a repo/chart reference helm understands).
        #[arg(long)]
        chart: String,
        /// Values files, in order.
        #[arg(long)]
        values: Vec<PathBuf>,
        #[arg(long, default_value = "gpustack-system")]
        namespace: String,
        #[arg(long, default_value = chart::case::RELEASE)]
        release: String,
        /// The run directory (case 2 reads the before-install inventory from it).
        #[arg(long)]
        run_dir: PathBuf,
    },
    /// One chart case (1-8): a STATUS | CHECK | OBJECT table, then a verdict. Exit 0 pass or
    /// skip (a skip prints NOTHING WAS VERIFIED), 1 any FAIL, 2 missing input or tool.
    Case(ChartCaseArgs),
}

/// The cluster a chart command reads (or, for install and cases 2-3, changes).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ChartCluster {
    /// Kubeconfig context (required to change a real cluster; default for reading: the
    /// kubeconfig's current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Kubeconfig file (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Answer the confirmation a change asks for.
    #[arg(long)]
    pub yes: bool,
}

/// `verify chart case` arguments.
#[derive(Debug, clap::Args)]
pub struct ChartCaseArgs {
    /// The chart case number (1-8).
    pub number: u32,
    #[command(flatten)]
    pub cluster: ChartCluster,
    /// The operator's namespace.
    #[arg(long, default_value = "gpustack-system")]
    pub namespace: String,
    #[arg(long, default_value = chart::case::RELEASE)]
    pub release: String,
    /// Case 1: the tag the run built; every operator Deployment must run it.
    #[arg(long)]
    pub tag: Option<String>,
    /// Case 2: the run directory `verify chart install` wrote.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Case 2: how long to wait for the uninstall to drain.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "300s")]
    pub drain_budget: std::time::Duration,
    /// Case 3: the operator repository's build script (run twice: cold, then warm cache).
    #[arg(long)]
    pub build_script: Option<PathBuf>,
    /// Case 3: the version stamped (VERSION).
    #[arg(long, default_value = "v9.9.9")]
    pub build_version: String,
    /// Case 3: the image the build produces (its tag is PACKAGE_TAG).
    #[arg(long, default_value = "gpustack/gpustack-operator:dev-rel")]
    pub image: String,
    /// Case 4: the replica count.
    #[arg(long, default_value_t = 2)]
    pub replicas: u32,
    /// Output: the case table, or JUnit XML for CI.
    #[arg(long, value_enum, default_value_t = CaseFormat::Table)]
    pub format: CaseFormat,
}
