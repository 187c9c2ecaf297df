//! The arguments that name a cluster, and the commands that act on one: audit, operator,
//! cleanup, chart.

use super::*;

/// Which cluster a command changes, and the confirmation it asks for (DESIGN.md "Safety on a
/// real cluster").
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ClusterArgs {
    /// Kubeconfig context of the cluster (required to change a real cluster; a read-only
    /// command defaults to the kubeconfig's current context, which is never changed). On fuzz,
    /// case and soak it implies `--tier live`.
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
        cluster: ClusterArgs,
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
        cluster: ClusterArgs,
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
        cluster: ClusterArgs,
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

/// `verify chart case` arguments.
#[derive(Debug, clap::Args)]
pub struct ChartCaseArgs {
    /// The chart case number (1-8).
    pub number: u32,
    #[command(flatten)]
    pub cluster: ClusterArgs,
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
    /// Output: the case table, JUnit XML for CI, or the rows and verdict as JSON.
    #[arg(short = 'o', long, visible_alias = "output-format", value_enum, default_value_t = CaseFormat::Table)]
    pub format: CaseFormat,
}
