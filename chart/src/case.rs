//! The chart suite's cases 1–8 (`.agents/skills/gpustack-operator-chart-e2e/cases/case-N.sh`;
//! research/cases.md §6), on the run contract of `verify case`: rows, a verdict, `NOTHING WAS
//! VERIFIED` on a skip. Each case's environment gate comes first; a gate that fails is a
//! whole-case skip, never a FAIL (cases.md §2.2). verify never deletes, upgrades or restarts
//! anything itself: helm does case 2's uninstall, and the legs of cases 4–7 that change the
//! cluster are SKIP rows naming what they would do.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cases::index::Suite;
use cases::run::verdict_of;
use cases::{CaseRun, Row, Status, Tier, Verdict};

use crate::checks::{self, bare, image_tag, row};
use crate::inventory::{self, Inventory};
use crate::leftovers;
use crate::release::{self, Release};
use crate::tools::{self, Pin};
use crate::ChartError;

/// The release name the suite installs and tears down (case-2.sh: one fixed literal).
pub const RELEASE: &str = "gpustack-operator";

/// The sub-releases the worker installs into the operator's namespace (case-2.sh
/// `OWNED_RELEASES`, besides the operator's own).
pub const OWNED_RELEASES: [&str; 5] = [
    "gpustack-operator-device-manager",
    "gpustack-kueue",
    "gpustack-node-feature-discovery",
    "gpustack-csi-driver-nfs",
    "gpustack-csi-driver-s3",
];

/// The file `verify chart install` saves the before-install inventory in.
pub const BEFORE_INSTALL: &str = "before-install.json";
/// Case 2's inventory right before the uninstall.
pub const BEFORE_UNINSTALL: &str = "before-uninstall.json";
/// Case 2's inventory after the drain.
pub const AFTER_UNINSTALL: &str = "after-uninstall.json";

/// The lowest helm that has `--take-ownership` (case 5's gate).
pub const TAKE_OWNERSHIP_HELM: (u64, u64, u64) = (3, 21, 0);

/// The budgets case 4 reads (case-4.sh: worker, Kueue, NFD master).
pub const HA_BUDGETS: [&str; 3] = [
    "gpustack-operator-worker",
    "kueue-manager-pdb",
    "node-feature-discovery-master",
];
/// The leader-election Leases case 4 moves (worker and Kueue).
pub const HA_LEASES: [&str; 2] = ["worker.gpustack.ai", "c1f6bfd2.kueue.x-k8s.io"];
/// The aggregated APIs the worker serves (case-4.sh).
pub const WORKER_APISERVICES: [&str; 2] = ["v1.gpustack.ai", "v1.worker.gpustack.ai"];
/// The control-plane Deployments case 4 counts replicas of.
pub const HA_DEPLOYMENTS: [&str; 3] = [
    "gpustack-operator-worker",
    "kueue-controller-manager",
    "node-feature-discovery-master",
];

/// Case 8's objects (case-8.sh).
pub const TOPOGRAPH_DEPLOYMENT: &str = "gpustack-operator-topograph";
pub const TOPOGRAPH_SERVICE_ACCOUNT: &str = "gpustack-operator-topograph";
pub const TOPOGRAPH_BROKERS: &str = "gpustack-operator-topograph-node-data-broker";
/// The EKS Pod Identity credential endpoint variable the API's container must carry.
pub const POD_IDENTITY_ENV: &str = "AWS_CONTAINER_CREDENTIALS_FULL_URI";

/// Where case 7 checks for an outbound network (the registry an older release is pulled from).
pub const OUTBOUND_PROBE: &str = "ghcr.io:443";

/// Everything a chart case may read.
#[derive(Clone, Debug)]
pub struct CaseConfig {
    /// The API server's address (recorded in the inventories taken).
    pub server: String,
    pub namespace: String,
    pub release: String,
    /// The tag the run built (case 1's optional EXPECTED_TAG).
    pub tag: Option<String>,
    /// Case 2 reads [`BEFORE_INSTALL`] from it and writes its own inventories there.
    pub run_dir: Option<PathBuf>,
    pub drain_budget: Duration,
    /// The cluster helm is pinned to.
    pub pin: Pin,
    /// Case 3: the operator repository's build script (`make package` wrapper).
    pub build_script: Option<PathBuf>,
    /// Case 3: the version stamped (`VERSION`), `v9.9.9` as case 3 uses.
    pub build_version: String,
    /// Case 3: the image the build produces (`PACKAGE_TAG` is its tag).
    pub image: String,
    /// Case 4: the replica count asked for.
    pub replicas: u32,
}

impl CaseConfig {
    pub fn new(namespace: &str, pin: Pin) -> Self {
        CaseConfig {
            server: String::new(),
            namespace: namespace.to_string(),
            release: RELEASE.to_string(),
            tag: None,
            run_dir: None,
            drain_budget: Duration::from_secs(300),
            pin,
            build_script: None,
            build_version: "v9.9.9".into(),
            image: "gpustack/gpustack-operator:dev-rel".into(),
            replicas: 2,
        }
    }
}

/// The locked title of chart case `n`, from the case index.
pub fn title(n: u32) -> Option<String> {
    cases::index()
        .iter()
        .find(|e| e.suite == Suite::Chart && e.number == n)
        .map(|e| e.title.clone())
}

fn finished(n: u32, rows: Vec<Row>) -> CaseRun {
    let verdict = verdict_of(&rows);
    CaseRun {
        number: n,
        title: title(n).unwrap_or_default(),
        tier: Tier::Live,
        rows,
        verdict,
    }
}

fn skipped(n: u32, why: impl Into<String>) -> CaseRun {
    CaseRun {
        number: n,
        title: title(n).unwrap_or_default(),
        tier: Tier::Live,
        rows: Vec::new(),
        verdict: Verdict::Skipped { why: why.into() },
    }
}

/// The gate of a case that needs no cluster to decide (case 3's docker builder): its skip,
/// printed before any connection or confirmation.
pub fn local_gate(n: u32) -> Option<CaseRun> {
    match n {
        3 => tools::docker_builder()
            .err()
            .map(|why| skipped(3, format!("needs a local docker builder: {why}"))),
        _ => None,
    }
}

/// Whether case `n` changes the cluster (or, case 3, the local docker images): it then needs
/// `--yes` or a confirmation. Cases 4–7 only read here (their changing legs are SKIP rows).
pub fn mutates(n: u32) -> bool {
    matches!(n, 2 | 3)
}

/// Whether case `n` cannot run at all without helm (its absence is exit 2, not a skip).
pub fn needs_helm(n: u32) -> bool {
    n == 2
}

/// Whether case `n` changes the cluster itself, so `--context` must name it.
pub fn changes_cluster(n: u32) -> bool {
    n == 2
}

/// Runs chart case `n`. Errors: a case number the suite lacks, a missing input or tool (exit 2),
/// a cluster that does not answer (exit 3).
pub async fn run(n: u32, client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    match n {
        1 => case1(client, cfg).await,
        2 => case2(client, cfg).await,
        3 => case3(client, cfg).await,
        4 => case4(client, cfg).await,
        5 => case5(client, cfg).await,
        6 => case6(client, cfg).await,
        7 => case7(client, cfg).await,
        8 => case8(client, cfg).await,
        _ => Err(ChartError::Tool(format!(
            "no chart case {n}: the chart suite has cases 1-8"
        ))),
    }
}

/// Case 1 (case-1.sh): the version triple. The deployed image tag of every operator Deployment,
/// the release's chart version and appVersion (the chart composes its tag as `v<appVersion>`,
/// so an appVersion keeping its `v` asks for a tag no registry serves), and the running
/// binary's version all agree, and equal the built tag when given.
pub async fn case1(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    let ns = &cfg.namespace;
    let mut rows = Vec::new();
    let release = release::latest_of(client, ns, &cfg.release).await?;
    let deployed = checks::operator_deployments(client, ns).await?;
    let app = match &release {
        None => {
            rows.push(row(
                Status::Fail,
                "release record readable",
                format!("no Helm record of release {} in {ns}", cfg.release),
            ));
            None
        }
        Some(r) => {
            rows.push(row(
                Status::Pass,
                "release record readable",
                format!(
                    "{} revision {} {} (chart {}-{}, appVersion {})",
                    r.record, r.revision, r.status, r.chart_name, r.chart_version, r.app_version
                ),
            ));
            rows.push(app_version_row(r));
            rows.push(if bare(&r.chart_version) == bare(&r.app_version) {
                row(
                    Status::Pass,
                    "chart version == appVersion",
                    r.chart_version.clone(),
                )
            } else {
                row(
                    Status::Fail,
                    "chart version == appVersion",
                    format!(
                        "chart version [{}] != appVersion [{}]",
                        r.chart_version, r.app_version
                    ),
                )
            });
            Some(r.app_version.clone())
        }
    };
    if deployed.is_empty() {
        rows.push(row(
            Status::Fail,
            "operator Deployments",
            format!(
                "no Deployment named {}* in {ns}",
                checks::OPERATOR_DEPLOYMENT_PREFIX
            ),
        ));
    }
    for d in &deployed {
        let tag = image_tag(&d.image).unwrap_or("");
        let object = format!("Deployment {ns}/{}", d.name);
        if let Some(app) = &app {
            rows.push(if !tag.is_empty() && bare(tag) == bare(app) {
                row(
                    Status::Pass,
                    "deployed image tag == release appVersion",
                    format!("{object} {}", d.image),
                )
            } else {
                row(
                    Status::Fail,
                    "deployed image tag == release appVersion",
                    format!(
                        "{object}: image tag [{tag}] != appVersion [{app}] ({})",
                        d.image
                    ),
                )
            });
        }
        if let Some(built) = &cfg.tag {
            rows.push(if tag == built {
                row(
                    Status::Pass,
                    "deployed image tag == built",
                    format!("{object} {}", d.image),
                )
            } else {
                row(
                    Status::Fail,
                    "deployed image tag == built",
                    format!("{object}: image tag [{tag}] != built [{built}]"),
                )
            });
        }
    }
    let worker = deployed
        .iter()
        .find(|d| d.name == "gpustack-operator-worker")
        .or(deployed.first());
    if let Some(w) = worker {
        rows.push(checks::binary_version_row(client, ns, &w.name).await?);
    }
    Ok(finished(1, rows))
}

/// The appVersion has no leading `v` (case-1.sh: the default image tag would double it).
fn app_version_row(r: &Release) -> Row {
    match r.app_version.as_str() {
        "" => row(
            Status::Fail,
            "release appVersion",
            format!("{} states no appVersion", r.record),
        ),
        a if a.starts_with('v') => row(
            Status::Fail,
            "release appVersion",
            format!("[{a}] keeps its \"v\": the chart's default image tag doubles it"),
        ),
        a => row(Status::Pass, "release appVersion", a.to_string()),
    }
}

/// Case 2 (case-2.sh): `helm uninstall`, a drain within a budget, then the whole-cluster
/// difference against the inventory taken before the install, plus the release records of the
/// release and its sub-releases, which must all be gone. verify deletes nothing itself.
pub async fn case2(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    let helm = tools::helm()?;
    let dir = cfg.run_dir.as_deref().ok_or_else(|| {
        ChartError::Tool(
            "case 2 needs --run-dir: the directory `verify chart install` wrote".into(),
        )
    })?;
    let before_path = dir.join(BEFORE_INSTALL);
    if !before_path.is_file() {
        return Err(ChartError::BadFile {
            file: before_path.display().to_string(),
            field: "(file)".into(),
            message:
                "missing: run `verify chart install` first, it saves the before-install inventory"
                    .into(),
        });
    }
    let before = Inventory::load(&before_path)?;
    let ns = &cfg.namespace;
    let mut rows = Vec::new();
    let pre = inventory::take(client, &cfg.server).await?;
    pre.save(&dir.join(BEFORE_UNINSTALL))?;
    let ran = tools::run(
        &helm,
        &tools::uninstall_args(&cfg.pin, &cfg.release, ns),
        &[],
    )?;
    rows.push(if ran.success {
        row(
            Status::Pass,
            "helm uninstall",
            format!("release {ns}/{}", cfg.release),
        )
    } else {
        row(
            Status::Fail,
            "helm uninstall",
            format!(
                "release {ns}/{} (exit {}): {}",
                cfg.release,
                ran.code.map_or("signal".into(), |c| c.to_string()),
                ran.first_line()
            ),
        )
    });
    let (after, drained) = drain(client, cfg, &before).await?;
    after.save(&dir.join(AFTER_UNINSTALL))?;
    rows.push(match drained {
        Ok(waited) => row(
            Status::Pass,
            "drained within the budget",
            format!("{} s of {} s", waited.as_secs(), cfg.drain_budget.as_secs()),
        ),
        Err(still) => row(
            Status::Fail,
            "drained within the budget",
            format!(
                "{still} object(s) of the release still present or deleting after {} s",
                cfg.drain_budget.as_secs()
            ),
        ),
    });
    rows.extend(leftover_rows(&before, &after));
    rows.extend(release_record_rows(client, ns, &cfg.release).await?);
    Ok(finished(2, rows))
}

/// Inventories until nothing of the release remains and nothing new is being deleted, or the
/// budget ends: the last inventory and either the time waited or how many objects remain.
async fn drain(
    client: &kube::Client,
    cfg: &CaseConfig,
    before: &Inventory,
) -> Result<(Inventory, Result<Duration, usize>), ChartError> {
    let start = Instant::now();
    loop {
        let now = inventory::take(client, &cfg.server).await?;
        let remaining = draining(&now, before, &cfg.release, &cfg.namespace);
        if remaining == 0 {
            return Ok((now, Ok(start.elapsed())));
        }
        if start.elapsed() >= cfg.drain_budget {
            return Ok((now, Err(remaining)));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Objects still draining: annotated for the release, or new since `before` and deleting.
pub fn draining(now: &Inventory, before: &Inventory, release: &str, namespace: &str) -> usize {
    let known: std::collections::BTreeSet<&str> =
        before.objects.iter().map(|o| o.uid.as_str()).collect();
    now.objects
        .iter()
        .filter(|o| !known.contains(o.uid.as_str()))
        .filter(|o| {
            (o.helm.release_name.as_deref() == Some(release)
                && o.helm.release_namespace.as_deref() == Some(namespace))
                || o.deletion_timestamp.is_some()
        })
        .count()
}

/// Case 2's leftover rows: one FAIL per leftover (with its release), one FAIL per user object
/// the run removed, a SKIP per resource one of the inventories could not list, or one PASS.
pub fn leftover_rows(before: &Inventory, after: &Inventory) -> Vec<Row> {
    let c = leftovers::compare(before, after);
    let mut rows: Vec<Row> = c
        .by_release
        .iter()
        .flat_map(|(release, items)| {
            items
                .iter()
                .map(move |l| row(Status::Fail, format!("no leftovers ({release})"), l.line()))
        })
        .collect();
    let removed = leftovers::removed(before, after);
    rows.extend(removed.iter().map(|o| {
        row(
            Status::Fail,
            "the user's pre-existing objects are untouched",
            format!("{} is gone", o.display()),
        )
    }));
    if c.count() == 0 {
        rows.push(row(
            Status::Pass,
            "no leftovers",
            format!(
                "{} new object(s), all allowed churn ({} rules)",
                c.allowed.len(),
                leftovers::ALLOWED.len()
            ),
        ));
    }
    if removed.is_empty() {
        rows.push(row(
            Status::Pass,
            "the user's pre-existing objects are untouched",
            format!("{} object(s) before the install", before.objects.len()),
        ));
    }
    rows.extend(
        c.unchecked
            .iter()
            .map(|r| row(Status::Skip, "resource not compared", r.clone())),
    );
    rows
}

/// No release record of the release or its sub-releases remains in `namespace`.
async fn release_record_rows(
    client: &kube::Client,
    namespace: &str,
    release: &str,
) -> Result<Vec<Row>, ChartError> {
    let owned: Vec<&str> = std::iter::once(release)
        .chain(OWNED_RELEASES.iter().copied())
        .collect();
    let left: Vec<String> = release::records(client, Some(namespace))
        .await?
        .into_iter()
        .filter(|r| owned.contains(&r.name.as_str()))
        .map(|r| format!("{} {} ({})", r.driver.kind(), r.record, r.status))
        .collect();
    Ok(if left.is_empty() {
        vec![row(
            Status::Pass,
            "no leftover releases",
            format!("none of {} in {namespace}", owned.join(", ")),
        )]
    } else {
        left.into_iter()
            .map(|l| row(Status::Fail, "no leftover releases", l))
            .collect()
    })
}

/// `verify chart install`: the before-install inventory into `run_dir`, then `helm install`.
/// Returns the inventory's summary and helm's answer.
pub async fn install(
    client: &kube::Client,
    cfg: &CaseConfig,
    chart: &str,
    values: &[PathBuf],
) -> Result<(String, tools::Ran), ChartError> {
    let helm = tools::helm()?;
    let dir = cfg
        .run_dir
        .as_deref()
        .ok_or_else(|| ChartError::Tool("install needs --run-dir".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| ChartError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let before = inventory::take(client, &cfg.server).await?;
    before.save(&dir.join(BEFORE_INSTALL))?;
    let args = tools::install_args(&cfg.pin, &cfg.release, chart, &cfg.namespace, values);
    let ran = tools::run(&helm, &args, &[])?;
    Ok((before.summary(), ran))
}

/// Case 3 (research/cases.md §6): the version stamped into a warm-cache build. Without a docker
/// daemon the case skips; with one it runs `--build-script` twice (cold, then warm) with
/// `VERSION`/`PACKAGE_TAG`, then asks the built image's binary for its version.
pub async fn case3(_client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    let docker = match tools::docker_builder() {
        Ok(d) => d,
        Err(why) => return Ok(skipped(3, format!("needs a local docker builder: {why}"))),
    };
    let Some(script) = &cfg.build_script else {
        let mut run = skipped(3, "");
        run.verdict = Verdict::InputRequired {
            variable: "--build-script (the operator repository's build script)".into(),
        };
        return Ok(run);
    };
    let tag = image_tag(&cfg.image).unwrap_or("dev-rel").to_string();
    let env = [
        ("VERSION", cfg.build_version.as_str()),
        ("PACKAGE_TAG", tag.as_str()),
    ];
    let mut rows = Vec::new();
    for leg in ["cold build", "warm-cache build"] {
        let ran = tools::run(script, &[], &env)?;
        let ok = ran.success;
        rows.push(row(
            if ok { Status::Pass } else { Status::Fail },
            leg,
            format!(
                "{} VERSION={} PACKAGE_TAG={tag}{}",
                script.display(),
                cfg.build_version,
                if ok {
                    String::new()
                } else {
                    format!(": {}", ran.output.lines().last().unwrap_or(""))
                }
            ),
        ));
        if !ok {
            return Ok(finished(3, rows));
        }
    }
    let args: Vec<String> = [
        "run",
        "--rm",
        "--entrypoint",
        "gpustack-operator",
        &cfg.image,
        "--version",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let ran = tools::run(&docker, &args, &[])?;
    let want = bare(&cfg.build_version).to_string();
    rows.push(match tools::binary_version(&ran.output) {
        Some(v) if v == want => row(
            Status::Pass,
            "stamped version == release version",
            format!("{} reports {v}", cfg.image),
        ),
        Some(v) => row(
            Status::Fail,
            "stamped version == release version",
            format!(
                "{} reports [{v}], built [{want}]: the warm cache kept an old stamp",
                cfg.image
            ),
        ),
        None => row(
            Status::Fail,
            "stamped version == release version",
            format!("{} --version said `{}`", cfg.image, ran.first_line()),
        ),
    });
    Ok(finished(3, rows))
}

/// The release's latest record, if it is installed.
async fn installed(client: &kube::Client, cfg: &CaseConfig) -> Result<Option<Release>, ChartError> {
    release::latest_of(client, &cfg.namespace, &cfg.release).await
}

/// The skip reason of a case that needs the release installed.
fn not_installed(cfg: &CaseConfig) -> String {
    format!(
        "release {} is not installed in {}",
        cfg.release, cfg.namespace
    )
}

/// Case 4 (case-4.sh): gates (helm, the release, REPLICAS ≥ 2, as many untainted schedulable
/// nodes, an install already running REPLICAS workers since verify upgrades nothing), then the
/// read-only checks: replicas ready, the budgets, the lease holders, the aggregated APIs. The
/// failover leg (delete the lease holder) is a SKIP row: verify deletes no Pod.
pub async fn case4(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    if let Err(e) = tools::helm() {
        return Ok(skipped(4, e.to_string()));
    }
    if installed(client, cfg).await?.is_none() {
        return Ok(skipped(4, not_installed(cfg)));
    }
    if cfg.replicas < 2 {
        return Ok(skipped(
            4,
            format!("REPLICAS={} leaves nothing to fail over", cfg.replicas),
        ));
    }
    let nodes = checks::schedulable_nodes(client).await?;
    if nodes < cfg.replicas as usize {
        return Ok(skipped(4, format!(
            "{nodes} untainted schedulable node(s); REPLICAS={} needs as many for a DoNotSchedule spread",
            cfg.replicas
        )));
    }
    let ns = &cfg.namespace;
    match checks::deployment_ready(client, ns, HA_DEPLOYMENTS[0]).await? {
        Some((_, wanted)) if wanted >= cfg.replicas as i32 => {}
        Some((_, wanted)) => {
            return Ok(skipped(4, format!(
                "Deployment {ns}/{} runs {wanted} replica(s); verify does not upgrade the release to REPLICAS={} (install the HA values first)",
                HA_DEPLOYMENTS[0], cfg.replicas
            )))
        }
        None => return Ok(skipped(4, format!("no Deployment {ns}/{}", HA_DEPLOYMENTS[0]))),
    }
    let mut rows = Vec::new();
    for d in HA_DEPLOYMENTS {
        rows.push(match checks::deployment_ready(client, ns, d).await? {
            None => row(Status::Skip, "replicas ready", format!("Deployment {ns}/{d} not installed (switched off)")),
            Some((ready, _)) if ready >= cfg.replicas as i32 => {
                row(Status::Pass, "replicas ready", format!("Deployment {ns}/{d} {ready}/{}", cfg.replicas))
            }
            Some((ready, _)) => row(
                Status::Fail,
                "replicas ready",
                format!("Deployment {ns}/{d} {ready}/{} (Pending Pods? the spread may be unsatisfiable)", cfg.replicas),
            ),
        });
    }
    rows.extend(checks::pdbs_exist(client, ns, &HA_BUDGETS).await?);
    rows.extend(checks::leases_held(client, ns, &HA_LEASES).await?);
    rows.extend(checks::apiservices_available(client, &WORKER_APISERVICES).await?);
    rows.push(row(
        Status::Skip,
        "leader failover",
        "not run by verify: it deletes the lease holder's Pod (run the operator's case-4.sh)",
    ));
    Ok(finished(4, rows))
}

/// Case 5 (case-5.sh): gates (helm ≥ 3.21 for `--take-ownership`, the release installed), then
/// the release is deployed; both adoption legs upgrade the release and are SKIP rows.
pub async fn case5(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    let helm = match tools::helm() {
        Ok(h) => h,
        Err(e) => return Ok(skipped(5, e.to_string())),
    };
    match tools::helm_version(&helm) {
        Ok(v) if v >= TAKE_OWNERSHIP_HELM => {}
        Ok((a, b, c)) => {
            return Ok(skipped(
                5,
                format!("helm v{a}.{b}.{c} has no --take-ownership (needs >= 3.21)"),
            ))
        }
        Err(why) => return Ok(skipped(5, why.to_string())),
    }
    let r = match installed(client, cfg).await? {
        Some(r) => r,
        None => return Ok(skipped(5, not_installed(cfg))),
    };
    let rows = vec![
        row(
            if r.status == "deployed" {
                Status::Pass
            } else {
                Status::Fail
            },
            "release is deployed",
            format!("{} revision {} {}", r.record, r.revision, r.status),
        ),
        row(
            Status::Skip,
            "upgrade without --take-ownership adopts nothing",
            "not run by verify: it upgrades the release (run the operator's case-5.sh)",
        ),
        row(
            Status::Skip,
            "upgrade with --take-ownership adopts in place",
            "not run by verify: it upgrades the release (run the operator's case-5.sh)",
        ),
    ];
    Ok(finished(5, rows))
}

/// Case 6 (case-6.sh): needs a cluster with no chart release (both 6 and 7 render the
/// cluster-scoped `gpustack-cpu-info` NodeFeatureRule); its legs deploy the image itself.
pub async fn case6(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    if let Some(r) = installed(client, cfg).await? {
        return Ok(skipped(
            6,
            format!(
                "a chart release is present ({}); image mode needs none",
                r.record
            ),
        ));
    }
    Ok(skipped(
        6,
        "image mode deploys the operator image, which installs its bundled chart; verify deploys nothing (run the operator's case-6.sh)",
    ))
}

/// Case 7 (case-7.sh): no chart release and an outbound network (the older release is pulled);
/// its legs install an older release and roll it forward.
pub async fn case7(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    if let Some(r) = installed(client, cfg).await? {
        return Ok(skipped(
            7,
            format!(
                "a chart release is present ({}); the roll-forward needs none",
                r.record
            ),
        ));
    }
    if let Err(why) = outbound(OUTBOUND_PROBE, Duration::from_secs(3)).await {
        return Ok(skipped(7, format!("no outbound network: {why}")));
    }
    Ok(skipped(
        7,
        "the roll-forward installs an older release and upgrades it; verify installs nothing (run the operator's case-7.sh)",
    ))
}

/// Whether a TCP connection to `address` opens within `within`.
pub async fn outbound(address: &str, within: Duration) -> Result<(), Unreachable> {
    let address = address.to_string();
    match tokio::time::timeout(within, tokio::net::TcpStream::connect(&address)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(source)) => Err(Unreachable::Refused { address, source }),
        Err(_) => Err(Unreachable::Timeout { address, within }),
    }
}

/// Why [`outbound`] reached nothing.
#[derive(Debug, thiserror::Error)]
pub enum Unreachable {
    #[error("{address}: {source}")]
    Refused {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{address}: no answer within {} s", within.as_secs())]
    Timeout { address: String, within: Duration },
}

/// Case 8 (case-8.sh, read-only): with `topograph.enabled` in the release's values, the AWS
/// provider is recorded, the Topograph API is ready with the Pod Identity credential endpoint,
/// and one ready node-data broker runs per Linux Node. Disabled or unreadable: a skip.
pub async fn case8(client: &kube::Client, cfg: &CaseConfig) -> Result<CaseRun, ChartError> {
    let r = match installed(client, cfg).await? {
        Some(r) => r,
        None => return Ok(skipped(8, not_installed(cfg))),
    };
    if r.config["topograph"]["enabled"].as_bool() != Some(true) {
        return Ok(skipped(
            8,
            format!("topograph.enabled is not true on release {}", r.name),
        ));
    }
    let ns = &cfg.namespace;
    let mut rows = Vec::new();
    let provider = r.config["topograph"]["provider"]["name"]
        .as_str()
        .unwrap_or("");
    rows.push(row(
        if provider == "aws" {
            Status::Pass
        } else {
            Status::Fail
        },
        "Helm records the AWS provider",
        format!(
            "provider={}",
            if provider.is_empty() {
                "missing"
            } else {
                provider
            }
        ),
    ));
    rows.push(
        match checks::deployment_ready(client, ns, TOPOGRAPH_DEPLOYMENT).await? {
            Some((ready, wanted)) if ready >= wanted && ready > 0 => row(
                Status::Pass,
                "Topograph API deployment is ready",
                format!("Deployment {ns}/{TOPOGRAPH_DEPLOYMENT} {ready}/{wanted}"),
            ),
            Some((ready, wanted)) => row(
                Status::Fail,
                "Topograph API deployment is ready",
                format!("Deployment {ns}/{TOPOGRAPH_DEPLOYMENT} {ready}/{wanted}"),
            ),
            None => row(
                Status::Fail,
                "Topograph API deployment is ready",
                format!("Deployment {ns}/{TOPOGRAPH_DEPLOYMENT} is missing"),
            ),
        },
    );
    let nodes = checks::linux_nodes(client).await?;
    rows.push(
        match checks::daemonset_ready(client, ns, TOPOGRAPH_BROKERS).await? {
            Some((ready, desired))
                if nodes > 0 && ready as usize == nodes && desired as usize == nodes =>
            {
                row(
                    Status::Pass,
                    "one node-data broker is ready on every Linux Node",
                    format!("ready={ready}, desired={desired}, nodes={nodes}"),
                )
            }
            Some((ready, desired)) => row(
                Status::Fail,
                "one node-data broker is ready on every Linux Node",
                format!("ready={ready}, desired={desired}, nodes={nodes}"),
            ),
            None => row(
                Status::Fail,
                "one node-data broker is ready on every Linux Node",
                format!("DaemonSet {ns}/{TOPOGRAPH_BROKERS} is missing"),
            ),
        },
    );
    let api_pods = checks::pods(
        client,
        ns,
        &format!(
            "app.kubernetes.io/name=topograph,app.kubernetes.io/instance={}",
            cfg.release
        ),
    )
    .await?;
    let with_identity = api_pods
        .iter()
        .filter(|p| {
            p.spec.as_ref().is_some_and(|s| {
                s.service_account_name.as_deref() == Some(TOPOGRAPH_SERVICE_ACCOUNT)
                    && s.containers
                        .iter()
                        .any(|c| c.env.iter().flatten().any(|e| e.name == POD_IDENTITY_ENV))
            })
        })
        .count();
    rows.push(row(
        if with_identity > 0 { Status::Pass } else { Status::Fail },
        "Topograph API uses the Pod Identity-bound ServiceAccount",
        format!("ServiceAccount={TOPOGRAPH_SERVICE_ACCOUNT}, Pods with {POD_IDENTITY_ENV}: {with_identity}"),
    ));
    let brokers = checks::pods(
        client,
        ns,
        &format!(
            "app.kubernetes.io/name=node-data-broker,app.kubernetes.io/instance={}",
            cfg.release
        ),
    )
    .await?;
    let not_ready = brokers
        .iter()
        .filter(|p| {
            !p.status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.ready))
        })
        .count();
    rows.push(row(
        if brokers.len() == nodes && not_ready == 0 {
            Status::Pass
        } else {
            Status::Fail
        },
        "all broker startup probes completed",
        format!(
            "pods={}, not-ready={not_ready}, nodes={nodes}",
            brokers.len()
        ),
    ));
    Ok(finished(8, rows))
}

/// The run directory's files case 2 reads and writes (for messages).
pub fn run_files(dir: &Path) -> [PathBuf; 3] {
    [
        dir.join(BEFORE_INSTALL),
        dir.join(BEFORE_UNINSTALL),
        dir.join(AFTER_UNINSTALL),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::{HelmOwnership, ObjectRecord, FORMAT};

    fn object(kind: &str, name: &str, uid: &str) -> ObjectRecord {
        ObjectRecord {
            kind: kind.into(),
            api_version: "v1".into(),
            resource: "x".into(),
            namespace: Some("ns".into()),
            name: name.into(),
            uid: uid.into(),
            finalizers: vec![],
            owner_references: vec![],
            helm: HelmOwnership::default(),
            labels: Default::default(),
            deletion_timestamp: None,
        }
    }

    fn inv(objects: Vec<ObjectRecord>) -> Inventory {
        Inventory {
            format: FORMAT.into(),
            objects,
            ..Inventory::default()
        }
    }

    #[test]
    fn every_chart_case_has_its_locked_title() {
        for n in 1..=8 {
            assert!(title(n).is_some_and(|t| !t.is_empty()), "case {n}");
        }
        assert_eq!(title(1).as_deref(), Some("Install + version consistency"));
    }

    #[test]
    fn leftover_rows_fail_per_leftover_and_pass_when_clean() {
        let before = inv(vec![object("ConfigMap", "mine", "u1")]);
        let clean = leftover_rows(&before, &before);
        assert!(clean.iter().all(|r| r.status == Status::Pass), "{clean:?}");
        let mut secret = object("Secret", "s1", "u2");
        secret.helm.release_name = Some(RELEASE.into());
        secret.helm.release_namespace = Some("gpustack-system".into());
        let after = inv(vec![secret]);
        let rows = leftover_rows(&before, &after);
        let fails: Vec<&Row> = rows.iter().filter(|r| r.status == Status::Fail).collect();
        assert_eq!(fails.len(), 2, "{rows:?}");
        assert!(fails.iter().any(|r| r.object == "Secret ns/s1"
            && r.check
                .contains("release gpustack-system/gpustack-operator")));
        assert!(fails
            .iter()
            .any(|r| r.object == "ConfigMap ns/mine is gone"));
    }

    #[test]
    fn draining_counts_the_release_and_deleting_new_objects() {
        let before = inv(vec![]);
        let mut owned = object("Secret", "a", "u1");
        owned.helm.release_name = Some(RELEASE.into());
        owned.helm.release_namespace = Some("ns".into());
        let mut deleting = object("ConfigMap", "b", "u2");
        deleting.deletion_timestamp = Some("t".into());
        let now = inv(vec![owned, deleting, object("ConfigMap", "c", "u3")]);
        assert_eq!(draining(&now, &before, RELEASE, "ns"), 2);
        assert_eq!(draining(&now, &before, RELEASE, "other"), 1);
    }

    #[test]
    fn only_cases_2_and_3_change_anything() {
        let mutating: Vec<u32> = (1..=8).filter(|&n| mutates(n)).collect();
        assert_eq!(mutating, [2, 3]);
    }
}
