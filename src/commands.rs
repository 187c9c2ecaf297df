//! One function per command; each returns the process exit code (DESIGN.md "Exit codes").

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{
    AuditArgs, CheckArgs, CleanupArgs, Command, Format, FuzzArgs, SoakArgs, Tier, TwinCommand,
};

/// Bad input or a missing required input: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn dispatch(command: Command) -> Result<i32> {
    match command {
        Command::Fuzz(args) => fuzz(args),
        Command::Replay { file } => replay(&file),
        Command::Check(args) => check(args),
        Command::Soak(args) => soak(args),
        Command::Twin(TwinCommand::Serve {
            port,
            kubeconfig_out,
            context_name,
            walkthrough,
            faults,
            mutant,
            lag_ms,
        }) => twin_serve(
            port,
            kubeconfig_out.as_deref(),
            walkthrough,
            &TwinRun {
                faults,
                mutant,
                lag_ms,
                context_name,
            },
        ),
        Command::Mutants {
            list,
            seeds,
            jobs,
            tier,
            twin,
        } => {
            let tier = if twin { Tier::Twin } else { tier };
            mutants(list, seeds, jobs.unwrap_or(tier.default_jobs()), tier)
        }
        Command::Conformance { dir } => conformance(&dir),
        Command::Derive { cluster, format } => derive(cluster.as_deref(), format),
        Command::Cases => cases_index(),
        Command::Case(args) => case(args),
        Command::Report {
            run_dir,
            format,
            output,
            finding,
            known,
        } => match (format, finding) {
            (reports::ReportFormat::Issue, Some(sig)) => {
                issue_report(&run_dir, &sig, &known, output.as_deref())
            }
            (format, _) => report(&run_dir, format, output.as_deref()),
        },
        Command::Findings {
            action,
            known,
            regressions,
        } => findings(action, &known, &regressions),
        Command::Audit(args) => audit(args),
        Command::Cleanup(args) => cleanup(args),
        Command::Operator(args) => operator(args),
        Command::Chart(c) => crate::chart_cmd::dispatch(c),
    }
}

/// `verify cases`: the locked case index.
fn cases_index() -> Result<i32> {
    if let Some(e) = cases::index::index_error() {
        return Err(UsageError(e).into());
    }
    out!("{}", cases::render::index_text(cases::index()));
    Ok(0)
}

/// The live tier of `verify case`: a prepared cluster (banner, preflight, confirmation), its
/// hardware probed read-only, one lane of a run named after the case.
fn live_case_tier(args: &crate::cli::CaseArgs) -> std::result::Result<cases::TwinTier, i32> {
    if args.mutant.is_some() {
        eprintln!("verify: {}", crate::live_run::NO_MUTANT_ON_A_CLUSTER);
        return Err(2);
    }
    // the MIG cases' hardware step (cases::hardware); a bad MIG_* value is exit 2 before any
    // cluster is contacted
    let mig_cases = match (args.block, args.number) {
        (Some(crate::cli::CaseBlock::Mig), _) => true,
        (None, Some(n)) => cases::case(n).is_some_and(|c| c.is_ok_and(|c| c.toggles_mig())),
        _ => false,
    };
    let mut mig = if mig_cases {
        cases::hardware::MigNode::from_env(&|k| std::env::var(k).ok()).map_err(|e| {
            eprintln!("verify: {e}");
            2
        })?
    } else {
        None
    };
    let mut what = String::from(
        "fake Nodes, NodeFeatures, Devices and Namespaces (the case's shape, in run-unique pools)",
    );
    if let Some(node) = &mig {
        what.push_str(&format!(
            ", and switch MIG mode on the cards of {} (nvidia-smi -mig 1, then back) for the \
             MIG cases",
            node.node()
        ));
    }
    let p = crate::live_run::prepare(&args.live, &what)?;
    let settings = operator_settings(&args.live).map_err(|e| {
        eprintln!("verify: {e:#}");
        2
    })?;
    // read-only, before anything is written: one listing answers the hardware gates and, for
    // a case that needs a pool shape, which of the cluster's own pools has it
    let numbers: Vec<u32> = args.number.into_iter().collect(); // blocks need no pool shape
    let probed = live::client::preflight::block_on(async {
        let client = live::client::Client::from_kubeconfig(p.kubeconfig.clone(), &p.context)
            .await
            .map_err(|e| format!("probing the cluster: {e}"))?;
        let snapshot = live::audit::Snapshot::list(&client)
            .await
            .map_err(|e| format!("probing the cluster: {e}"))?;
        let pools = cases_pool_rows(&snapshot, &settings, &numbers)
            .await
            .map_err(|e| format!("reading the cluster's pools: {e}"))?;
        Ok::<_, String>((cases::probe::cluster_hardware(&snapshot), pools))
    })
    .map_err(|e| e.to_string())
    .and_then(|probed| probed);
    let (mut hardware, pool_rows) = probed.map_err(|e| {
        eprintln!("verify: {e}");
        3
    })?;
    let run = crate::live_run::run_name(&format!(
        "case-{}",
        args.number.map_or("block".into(), |n| n.to_string())
    ));
    outln!("run label: {}={run}.<token>", live::client::RUN_LABEL);
    let runner = p
        .runner(
            &run,
            0,
            fuzz::twin::TwinConfig::default(),
            args.live.teardown_budget,
        )
        .map_err(|e| {
            eprintln!("verify: {e}");
            3
        })?;
    // a MIG-capable card whose cards are all whole yet (case 27's start) shows no partition in
    // the Devices; the node itself answers (read-only: the modes query), and its answer is the
    // block's start modes
    let mut nvidia = hardware
        .iter()
        .any(|h| h == cases::probe::NVIDIA_PARTITIONS);
    if !nvidia && mig.as_mut().is_some_and(|node| node.mig_capable()) {
        hardware.push(cases::probe::NVIDIA_PARTITIONS.to_string());
        nvidia = true;
    }
    let tier = cases::TwinTier::on_cluster(runner, hardware).with_pool_rows(pool_rows);
    Ok(match mig {
        // without the card the MIG cases skip before their hardware step
        Some(node) if nvidia => {
            let node = node.interrupted_by(p.interrupt.clone());
            tier.with_mig_node(match args.block {
                Some(_) => node.in_block(),
                None => node,
            })
        }
        _ => tier,
    })
}

/// The live tier's pool rows of each case in `numbers` that needs a pool shape: the cluster's
/// pool that has it, and its audit against the model (read-only, from `snapshot`).
async fn cases_pool_rows(
    snapshot: &live::audit::Snapshot,
    settings: &model::Settings,
    numbers: &[u32],
) -> std::result::Result<std::collections::BTreeMap<u32, Vec<cases::Row>>, String> {
    let shaped: Vec<(u32, &cases::index::PoolShape)> = numbers
        .iter()
        .filter_map(|&n| Some((n, cases::index::entry(n)?.pool.as_ref()?)))
        .collect();
    if shaped.is_empty() {
        return Ok(Default::default());
    }
    let audit = live::audit::audit(snapshot, settings)
        .await
        .map_err(|e| e.to_string())?;
    Ok(shaped
        .into_iter()
        .map(|(n, shape)| (n, cases::probe::pool_rows(snapshot, &audit, Some(shape))))
        .collect())
}

/// `verify case --block rdma --report-only`: which RDMA readings a cluster shape can answer,
/// touching nothing (the model tier reads the embedded walkthrough; the live tier lists the
/// cluster read-only).
fn rdma_report_only(tier: Tier, live_args: &crate::cli::LiveArgs) -> Result<i32> {
    match tier {
        Tier::Live => {
            let listed = live::client::preflight::block_on(async {
                let client = match connect_checked(
                    live_args.cluster.kubeconfig.as_deref(),
                    live_args.cluster.context.as_deref(),
                    live::client::Access::ReadOnly,
                    false,
                )
                .await
                {
                    Ok(c) => c,
                    Err(code) => return Err(code),
                };
                live::audit::Snapshot::list(&client).await.map_err(|e| {
                    eprintln!("verify: {e}");
                    3
                })
            })
            .context("starting the async runtime")?;
            let snapshot = match listed {
                Ok(s) => s,
                Err(code) => return Ok(code),
            };
            let cluster = live::audit::cluster_of(&snapshot, &model::Settings::default())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            out!("{}", cases::block::rdma_report(&cluster, &snapshot.source));
            Ok(0)
        }
        Tier::Twin => Err(UsageError(
            "--report-only reads a cluster (--context) or the model tier's embedded shape".into(),
        )
        .into()),
        Tier::Model => {
            out!(
                "{}",
                cases::block::rdma_report(
                    &model::examples::walkthrough(),
                    "the model tier's embedded cluster shape (the walkthrough, research/chain.md §15)"
                )
            );
            Ok(0)
        }
    }
}

/// `verify case N | --block mig|rdma [--report-only]`: run on a tier, print tables, exit code.
fn case(args: crate::cli::CaseArgs) -> Result<i32> {
    use crate::cli::CaseBlock;
    let block = args.block.map(|b| match b {
        CaseBlock::Mig => cases::Block::Mig,
        CaseBlock::Rdma => cases::Block::Rdma,
    });
    let model_tier = cases::ModelTier {
        mutant: args.mutant,
    };
    let chosen = Tier::resolve(
        args.tier,
        false,
        args.live.cluster.context.as_deref(),
        Tier::Model,
    );
    if args.report_only {
        if block != Some(cases::Block::Rdma) {
            return Err(UsageError("--report-only applies to --block rdma only".into()).into());
        }
        return rdma_report_only(chosen, &args.live);
    }
    let env = |k: &str| std::env::var(k).ok();
    let run_on = |runner: &dyn cases::TierRunner| match (block, args.number) {
        (Some(b), _) => cases::run_block(b, runner, &env),
        (None, Some(n)) => cases::run_case(n, runner, &env).map(|r| vec![r]),
        (None, None) => Err("name a case number or --block".to_string()),
    };
    // the live tier's input gate (MIG_NODE_SSH, PPU_NODE_SSH) speaks before any cluster is
    // contacted
    if chosen == Tier::Live {
        let gated = run_on(&cases::UnavailableTier(cases::Tier::Live)).map_err(UsageError)?;
        if gated
            .iter()
            .any(|r| matches!(r.verdict, cases::Verdict::InputRequired { .. }))
        {
            print_case_runs(&gated, args.format)?;
            return Ok(cases::exit_code(&gated));
        }
    }
    let twin_tier = match chosen {
        Tier::Twin => Some(
            cases::TwinTier::start(args.mutant)
                .map_err(|e| anyhow::anyhow!("starting the embedded twin: {e}"))?,
        ),
        Tier::Live => match live_case_tier(&args) {
            Ok(t) => Some(t),
            Err(code) => return Ok(code),
        },
        Tier::Model => None,
    };
    let runner: &dyn cases::TierRunner = match &twin_tier {
        Some(t) => t,
        None => &model_tier,
    };
    let runs = run_on(runner).map_err(UsageError)?;
    print_case_runs(&runs, args.format)?;
    Ok(cases::exit_code(&runs))
}

/// Each case's table (and a block summary), or JUnit XML.
fn print_case_runs(runs: &[cases::CaseRun], format: crate::cli::CaseFormat) -> Result<()> {
    match format {
        crate::cli::CaseFormat::Table => {
            for r in runs {
                out!("{}", cases::render::case_text(r));
            }
            if runs.len() > 1 {
                outln!("\nblock summary:");
                for r in runs {
                    outln!("  {}", cases::render::verdict_line(r));
                }
            }
        }
        crate::cli::CaseFormat::Junit => {
            outln!("{}", cases::render::junit(runs).map_err(UsageError)?)
        }
    }
    Ok(())
}

fn conformance(dir: &Path) -> Result<i32> {
    let report = conformance::run_dir(dir).map_err(UsageError)?;
    out!("{}", report.render());
    Ok(report.exit_code())
}

fn derive(cluster: Option<&Path>, format: Format) -> Result<i32> {
    let cluster = match cluster {
        None => {
            // Announced first; on stderr for JSON so the document stays parseable.
            let note = "cluster: embedded walkthrough (research/chain.md §15)";
            match format {
                Format::Table => outln!("{note}"),
                Format::Json => eprintln!("{note}"),
            }
            model::examples::walkthrough()
        }
        Some(path) => read_cluster(path)?,
    };
    let derived = model::derive::derive(&cluster);
    match format {
        Format::Table => out!("{}", reports::derived_table(&derived)),
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&derived).context("rendering the derivation as JSON")?
        ),
    }
    Ok(0)
}

/// The live operator's settings: `--operator-settings FILE`, else the operator's defaults.
fn operator_settings(live: &crate::cli::LiveArgs) -> Result<model::Settings> {
    match &live.operator_settings {
        Some(path) => read_json(path),
        None => Ok(model::Settings::default()),
    }
}

/// A JSON file as `T`; errors name the file, the line and the field serde stopped at.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        UsageError(format!(
            "{}: field `{}`: {}",
            path.display(),
            e.path(),
            e.inner()
        ))
        .into()
    })
}

/// Reads a cluster shape; errors name the file, the line and the field serde stopped at.
fn read_cluster(path: &Path) -> Result<model::Cluster> {
    let cluster: model::Cluster = read_json(path)?;
    model::derive::validate(&cluster)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    Ok(cluster)
}

/// `verify fuzz`: announce the tier, replay regressions, run the seeds, record each
/// counterexample as found in the run directory, end with the summary table.
fn fuzz(args: FuzzArgs) -> Result<i32> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    let context = args.live.cluster.context.as_deref();
    let tier = Tier::resolve(args.tier, args.twin, context, Tier::Twin);
    outln!("{}", tier_banner(tier));
    let prepared = match tier {
        Tier::Live => match crate::live_run::prepare(
            &args.live,
            "fake Nodes, NodeFeatures, Devices and Namespaces (one set of run-unique pools per seed)",
        ) {
            Ok(p) => Some(p),
            Err(code) => return Ok(code),
        },
        _ => None,
    };
    let regressions =
        scenario::Regressions::load(&args.regressions).map_err(|e| UsageError(e.to_string()))?;
    let mut config = fuzz::FuzzConfig {
        tier: fuzz_tier(tier),
        seeds: args.seeds,
        seed: args.seed,
        jobs: args.jobs.unwrap_or(tier.default_jobs()),
        shard: args.shard,
        mutant: args.mutant,
        shape: generators::ShapeConfig {
            max_nodes: args.max_nodes,
            ..generators::ShapeConfig::default()
        },
        regressions: if args.seed.is_some() {
            Vec::new()
        } else {
            regressions.seeds()
        },
        ..fuzz::FuzzConfig::default()
    };
    if let Some(budget) = args.shrink_budget {
        config.twin.shrink_steps = budget;
    }
    let total = fuzz::seed_list(&config).len() as u64;
    let ledger = reports::Ledger::load(&args.known).map_err(|e| UsageError(e.to_string()))?;
    let recorder = start_run_record(&args, &config, total, tier.name())?
        .with_ledger(ledger.clone(), args.strict);
    outln!("run directory: {}", recorder.path().display());
    let run_id = recorder
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if let Some(p) = &prepared {
        config.shape.settings = Some(operator_settings(&args.live)?);
        outln!(
            "run label: {}={run_id}.<token> (one token per seed attempt)",
            live::client::RUN_LABEL
        );
        config.live = Some(fuzz::LiveConfig {
            kubeconfig: p.kubeconfig.clone(),
            context: p.context.clone(),
            run: run_id.clone(),
            interrupt: p.interrupt.clone(),
            teardown_budget: args.live.teardown_budget,
            overlay: p.overlay.clone(),
        });
        if p.overlay.is_some() {
            // one node hosts one seed's mocks at a time
            config.jobs = 1;
        }
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} seeds  {msg}  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let failures = AtomicU64::new(0);
    let judged = AtomicU64::new(0);
    // summary.json is also rewritten every tenth of the run (at least 100 seeds apart).
    let milestone = (total / 10).max(100);
    let started = std::time::Instant::now();
    let coverage = Mutex::new(reports::Coverage::default());
    let regressions = Mutex::new(regressions);
    let write_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let report = fuzz::run_observed(
        &config,
        &|_, failure| {
            if let Some(f) = failure {
                let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
                bar.set_message(format!("{n} failing"));
                if let Err(e) = record_failure(&recorder, &regressions, &args, &config, f, &bar) {
                    write_errors.lock().map(|mut v| v.push(e)).ok();
                }
            }
            bar.inc(1);
            let done = judged.fetch_add(1, Ordering::Relaxed) + 1;
            if done % milestone == 0 {
                let elapsed = started.elapsed().as_secs_f64();
                let figures = reports::Figures {
                    ran: done,
                    failing: 0,
                    elapsed_seconds: elapsed,
                    scenarios_per_second: done as f64 / elapsed.max(1e-9),
                    jobs: config.jobs,
                };
                if let Err(e) = recorder.progress(figures) {
                    write_errors.lock().map(|mut v| v.push(e.to_string())).ok();
                }
            }
        },
        &|s| {
            let shown = fuzz::coverage::shown(s, config.mutant);
            coverage.lock().map(|mut c| c.observe(shown)).ok();
        },
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    bar.finish_and_clear();
    if let Some(e) = write_errors.into_inner().unwrap_or_default().first() {
        anyhow::bail!("{e}");
    }
    for (seed, why) in &report.inconclusive {
        outln!("INCONCLUSIVE seed {seed}: {why}");
    }
    for (seed, what) in &report.flaky {
        outln!("FLAKY seed {seed}: {what}");
    }
    let mut leftovers = report.leftovers.clone();
    if let Some(p) = &prepared {
        leftovers.extend(p.sweep(&run_id));
        if report.interrupted {
            outln!("INTERRUPTED: stopped before every seed was judged; torn down");
        }
        for l in &leftovers {
            outln!("LEFTOVER {l}");
        }
        if leftovers.is_empty() {
            outln!(
                "teardown: nothing labelled {}={run_id}.* remains",
                live::client::RUN_LABEL
            );
        } else {
            outln!(
                "teardown left {} object(s): verify cleanup --run {run_id} --context {}",
                leftovers.len(),
                p.context
            );
        }
    }
    if report.ran == 0 {
        outln!("NOTHING WAS VERIFIED: no seed was run");
    }
    if config.tier != fuzz::Tier::Model {
        outln!(
            "gate-3 verdicts read back from Workloads on the wire: {}",
            report.verdicts
        );
    }
    outln!(
        "{} seeds, {} failing, in {:.2} s ({:.0} seeds/s, {} jobs)",
        report.ran,
        report.failures.len(),
        report.elapsed.as_secs_f64(),
        report.rate(),
        config.jobs
    );
    let coverage = coverage.into_inner().unwrap_or_default();
    let floors = reports::check_floors(&coverage, args.min_coverage.as_deref().unwrap_or(&[]));
    // a mutant run says nothing about the reference operator's known findings
    if config.mutant.is_none() {
        let seen = recorder.snapshot().findings;
        let fixed = possibly_fixed(&ledger, &seen);
        recorder
            .possibly_fixed(fixed)
            .context("recording possibly fixed findings")?;
    }
    let summary = recorder
        .finish(
            reports::Figures {
                ran: report.ran,
                failing: report.failures.len() as u64,
                elapsed_seconds: report.elapsed.as_secs_f64(),
                scenarios_per_second: report.rate(),
                jobs: config.jobs,
            },
            coverage,
            floors,
        )
        .context("finishing the run directory")?;
    reports::terminal::print_summary(&summary);
    // A counterexample (1) or an unmet floor (4) outranks a flaky divergence (5), which
    // outranks seeds that could not be judged, an interruption or leftovers (3).
    let unfinished = !report.inconclusive.is_empty() || report.interrupted || !leftovers.is_empty();
    Ok(match summary.verdict.exit_code() {
        0 if !report.flaky.is_empty() => 5,
        0 if unfinished => 3,
        code => code,
    })
}

/// Opens the run directory and writes its starting summary.
fn start_run_record(
    args: &FuzzArgs,
    config: &fuzz::FuzzConfig,
    total: u64,
    tier: &str,
) -> Result<reports::RunRecorder> {
    let dir = scenario::RunDir::create_now(&args.run_dir)
        .with_context(|| format!("creating a run directory under {}", args.run_dir.display()))?;
    let range = match config.seed {
        Some(s) => s.to_string(),
        None => match config.shard {
            Some((i, n)) => format!("0..{} shard {i}/{n}", config.seeds),
            None => format!("0..{}", config.seeds),
        },
    };
    let mut command: Vec<String> = std::env::args().skip(1).collect();
    command.insert(0, "verify".into());
    let summary = reports::RunSummary::start(
        dir.id(),
        &command.join(" "),
        tier,
        reports::Seeds {
            planned: total,
            range,
            regressions: config.regressions.clone(),
        },
    );
    reports::RunRecorder::start(dir, summary).context("writing the run's summary.json")
}

/// Writes one counterexample (report, scenario, CSV rows, summary, its finding) as soon as
/// the seed is judged. The regression file gets the first seed of each new finding of the
/// reference operator only: a mutant's counterexample proves nothing replayed without the
/// mutant (its scenario records the mutant, and `verify replay` replays under it), and a
/// known finding is the ledger's to track.
fn record_failure(
    recorder: &reports::RunRecorder,
    regressions: &std::sync::Mutex<scenario::Regressions>,
    args: &FuzzArgs,
    config: &fuzz::FuzzConfig,
    f: &fuzz::Failure,
    bar: &indicatif::ProgressBar,
) -> std::result::Result<(), String> {
    let recorded = recorder
        .record_finding(&fuzz::counterexample(f, config.mutant))
        .map_err(|e| format!("writing the counterexample of seed {}: {e}", f.seed))?;
    if config.mutant.is_none() && !recorded.known && recorded.first {
        regressions
            .lock()
            .map_err(|_| "the regression file's lock was poisoned".to_string())?
            .append(f.seed, &f.property)
            .map_err(|e| {
                format!(
                    "appending seed {} to {}: {e}",
                    f.seed,
                    args.regressions.display()
                )
            })?;
    }
    let shrunk = if f.shrinks == 0 && !recorded.first {
        "not shrunk: its finding already has a shrunk seed".to_string()
    } else {
        format!("shrunk to {} node(s), {} event(s)", f.nodes(), f.events())
    };
    let tag = if recorded.known && !args.strict {
        "known"
    } else {
        "FAIL"
    };
    bar.suspend(|| {
        outln!(
            "{tag} seed {}: {} ({shrunk}) -> {}\n  signature {}",
            f.seed,
            f.property,
            recorded.path.display(),
            recorded.signature
        )
    });
    Ok(())
}

/// `verify report RUN_DIR`: re-render what a run directory holds.
fn report(run_dir: &Path, format: reports::ReportFormat, output: Option<&Path>) -> Result<i32> {
    let run = reports::load_run(run_dir).map_err(|e| UsageError(e.to_string()))?;
    let text = reports::render_run(&run, format).map_err(|e| anyhow::anyhow!("{e}"))?;
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
            outln!("{}", path.display());
        }
        None => out!("{text}"),
    }
    Ok(0)
}

/// The first line of `verify fuzz` and `verify mutants`: where the chain is checked.
fn tier_banner(tier: Tier) -> &'static str {
    match tier {
        Tier::Model => "tier: model (the model's own properties; no cluster contacted)",
        Tier::Twin => {
            "tier: twin (embedded Kubernetes-API twin on 127.0.0.1, one per job; no cluster contacted)"
        }
        Tier::Live => {
            "tier: live (a cluster running the operator, fed run-unique mocks; only the run's pools are compared; a seed is checked up to its first awareness flip or joint timeout, neither of which a cluster lets verify step)"
        }
    }
}

fn fuzz_tier(tier: Tier) -> fuzz::Tier {
    match tier {
        Tier::Model => fuzz::Tier::Model,
        Tier::Twin => fuzz::Tier::Twin,
        Tier::Live => fuzz::Tier::Live,
    }
}

/// `verify replay FILE`: run the scenario, check every property and its expectations. A
/// recorded `twin-matches-model` violation is judged where it was found: on a fresh embedded
/// twin, under the mutant the scenario records (a model-tier mutant's `mutant-NAME` the
/// oracle replays itself).
fn replay(file: &Path) -> Result<i32> {
    let s = scenario::load(file).map_err(|e| UsageError(e.to_string()))?;
    let mut check = oracle::replay(&s);
    for (property, reproduced) in &mut check.recorded {
        if property == fuzz::twin::TWIN_PROPERTY {
            let mutant = fuzz::recorded_mutant(&s)
                .map_or("the reference operator".to_string(), |m| {
                    format!("mutant {m}")
                });
            outln!("replaying on an embedded twin running {mutant}");
            let divergence = fuzz::replay_on_twin(&s)
                .map_err(|e| anyhow::anyhow!("replaying on the twin: {e}"))?;
            if let Some(d) = &divergence {
                outln!("{}", d.message());
            }
            *reproduced = divergence.is_some();
        }
    }
    out!("{}", check.render());
    Ok(if check.held() { 0 } else { 1 })
}

/// `verify report RUN_DIR --finding SIG --format issue`: one finding as an issue for the
/// operator's tracker, its minimal cluster rendered by the twin's own converters.
fn issue_report(run_dir: &Path, sig: &str, known: &Path, output: Option<&Path>) -> Result<i32> {
    let run = reports::load_run(run_dir).map_err(|e| UsageError(e.to_string()))?;
    let ledger = reports::Ledger::load(known).map_err(|e| UsageError(e.to_string()))?;
    let signature =
        reports::Ledger::resolve(sig, run.summary.findings.iter().map(|f| &f.signature))
            .map_err(|e| UsageError(format!("{}: {e}", run_dir.display())))?;
    let finding = run
        .summary
        .findings
        .iter()
        .find(|f| f.signature == signature)
        .ok_or_else(|| UsageError(format!("{}: no finding {signature}", run_dir.display())))?;
    let scenario_file = run_dir.join(&finding.smallest.scenario);
    let scenario = scenario::load(&scenario_file).map_err(|e| UsageError(e.to_string()))?;
    let manifests = fuzz::cluster_manifests(&scenario).map_err(|e| anyhow::anyhow!(e))?;
    let message = run
        .summary
        .counterexamples
        .iter()
        .find(|c| c.seed == finding.smallest.seed)
        .map(|c| c.message.clone())
        .unwrap_or_default();
    let rows: Vec<reports::counterexample::DivergenceRow> = run
        .rows
        .iter()
        .filter(|r| r.seed == finding.smallest.seed)
        .cloned()
        .collect();
    let text = reports::findings::issue_markdown(&reports::findings::IssueInput {
        finding,
        known: ledger.get(&signature),
        scenario_path: scenario_file.display().to_string(),
        run_dir: run_dir.display().to_string(),
        message,
        why: reports::why::why_of_rows(&scenario, &rows, &signature),
        rows,
        manifests: &manifests,
    })
    .map_err(|e| anyhow::anyhow!("rendering the issue: {e}"))?;
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
            outln!("{}", path.display());
        }
        None => out!("{text}"),
    }
    Ok(0)
}

/// `verify mutants`: the catalog, or the kill table over `seeds` seeds each.
fn mutants(list: bool, seeds: u64, jobs: usize, tier: Tier) -> Result<i32> {
    use model::mutants::Mutant;
    if list {
        for m in Mutant::ALL {
            outln!("{:<32} {}", m.name(), m.describe());
        }
        return Ok(0);
    }
    outln!("{}", tier_banner(tier));
    outln!("each mutant fuzzed for up to {seeds} seeds");
    outln!(
        "{:<32} {:>8} {:>6} {:>7}  property",
        "MUTANT",
        "SEED",
        "NODES",
        "EVENTS"
    );
    let mut survivors = 0;
    for m in Mutant::ALL {
        let config = fuzz::FuzzConfig {
            tier: fuzz_tier(tier),
            seeds,
            jobs,
            mutant: Some(m),
            stop_at_first: true,
            ..fuzz::FuzzConfig::default()
        };
        let report = fuzz::run(&config, &|_, _| {}).map_err(|e| anyhow::anyhow!(e))?;
        match report.failures.first() {
            Some(f) => outln!(
                "{:<32} {:>8} {:>6} {:>7}  killed",
                m.name(),
                f.seed,
                f.nodes(),
                f.events()
            ),
            None => {
                survivors += 1;
                outln!(
                    "{:<32} {:>8} {:>6} {:>7}  SURVIVED",
                    m.name(),
                    "-",
                    "-",
                    "-"
                );
            }
        }
    }
    outln!(
        "{} killed, {} survived",
        Mutant::ALL.len() - survivors,
        survivors
    );
    Ok(if survivors == 0 { 0 } else { 1 })
}

/// `verify check`: explore the scope, print the report, write a counterexample scenario.
fn check(args: CheckArgs) -> Result<i32> {
    use generators::check::{run_check, CheckConfig, Search};
    let config = CheckConfig {
        nodes: args.nodes,
        cards: args.cards,
        workloads: args.workloads,
        threads: args.threads,
        search: if args.dfs { Search::Dfs } else { Search::Bfs },
        symmetry: args.symmetry,
        mutant: args.mutant,
        max_states: args.max_states,
        max_depth: args.max_depth,
        ..CheckConfig::default()
    };
    let report = run_check(&config).map_err(UsageError)?;
    out!("{}", report.render());
    if let Some((property, cx)) = report.first_violation() {
        let dir = scenario::RunDir::create_now(&args.run_dir).with_context(|| {
            format!("creating a run directory under {}", args.run_dir.display())
        })?;
        let path = dir
            .write_counterexample(0, property, &cx.scenario, &cx.steps.join("\n"))
            .context("writing the counterexample scenario")?;
        outln!("counterexample scenario: {}", path.display());
        return Ok(1);
    }
    Ok(0)
}

/// How `verify twin serve` runs: faults, mutant, reconcile lag (as given on the command line).
struct TwinRun {
    faults: Option<String>,
    mutant: Option<String>,
    lag_ms: u64,
    context_name: String,
}

/// `verify twin serve`: the twin on loopback, with its reference operator reconciling after
/// every write, until interrupted.
fn twin_serve(
    port: Option<u16>,
    kubeconfig_out: Option<&Path>,
    walkthrough: bool,
    run: &TwinRun,
) -> Result<i32> {
    let faults = run
        .faults
        .as_deref()
        .map(live::twin::faults::FaultConfig::parse)
        .transpose()
        .map_err(|e| UsageError(format!("--faults: {e}")))?;
    let mutant = run
        .mutant
        .as_deref()
        .map(str::parse::<model::mutants::Mutant>)
        .transpose()
        .map_err(|e| UsageError(format!("--mutant: {e}")))?;
    let operator = live::twin::operator::OperatorConfig {
        settings: model::Settings {
            mutant,
            ..model::Settings::default()
        },
        lag: std::time::Duration::from_millis(run.lag_ms),
    };
    let mut store = live::twin::store::Store::new(live::twin::store::StoreConfig {
        clock: live::twin::store::wall_clock(),
        ..live::twin::store::StoreConfig::default()
    });
    live::crd::install_validators(&mut store);
    // the chain's CRDs listed as objects, as a real cluster lists those it installed
    live::crd::install_crd_objects(&mut store, false)
        .map_err(|e| anyhow::anyhow!("writing the CRD objects: {}", e.message))?;
    // and the local APIServices of what it serves, kept as the aggregator keeps them
    store.install_api_services();
    // the joint AdmissionCheck the queues reference, as the operator's joint controller keeps
    // it (the twin runs none), so an audit of the twin finds what its queues name
    live::twin::admission::write_joint_check(&mut store, operator.settings.joint_check_active)
        .map_err(|e| anyhow::anyhow!("writing the joint AdmissionCheck: {}", e.message))?;
    if walkthrough {
        live::twin::read::write_mock(&mut store, &model::examples::walkthrough())
            .map_err(|e| anyhow::anyhow!("mocking the walkthrough cluster: {}", e.message))?;
    }
    let serve = live::twin::server::ServeConfig {
        faults: faults.clone(),
    };
    let (handle, _operator) = live::twin::operator::spawn_twin(port, store, serve, operator)
        .map_err(|e| UsageError(format!("cannot serve the twin on 127.0.0.1: {e}")))?;
    outln!("twin: serving the Kubernetes API on {}", handle.url());
    if let Some(f) = &faults {
        outln!(
            "faults: seed {} (conflict {}, throttle {}, error {}, watch-cut {}, slow {} by {} ms); counters at {}{}",
            f.seed,
            f.conflict_share,
            f.throttle_share,
            f.error_share,
            f.watch_cut_share,
            f.slow_share,
            f.delay.as_millis(),
            handle.url(),
            live::twin::counters::COUNTERS_PATH
        );
    }
    if let Some(m) = mutant {
        outln!("mutant: {m} ({})", m.describe());
    }
    if let Some(path) = kubeconfig_out {
        std::fs::write(
            path,
            live::twin::kubeconfig::kubeconfig_yaml(handle.url(), &run.context_name),
        )
        .with_context(|| format!("writing the kubeconfig to {}", path.display()))?;
        outln!(
            "kubeconfig: {} (context {})",
            path.display(),
            run.context_name
        );
    }
    outln!("stop with Ctrl-C");
    handle.wait().context("the twin stopped")?;
    Ok(0)
}

/// One malloc arena for the whole process, set before any thread starts: glibc gives each
/// allocating thread (the twin's server and operator threads, the client) its own arena, and
/// over a long soak they hold memory the soak no longer uses (+12 % at the peak of a 30-minute
/// twin soak with the default, +6 % with one; docs/benchmarks.md "Soak").
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's allocator tuning; called before other threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// `verify soak`: churn until the deadline, Ctrl-C or the first finding; series, checkpoint,
/// counterexample and a history row.
fn soak(args: SoakArgs) -> Result<i32> {
    one_malloc_arena();
    let context = args.live.cluster.context.as_deref();
    let tier = Tier::resolve(args.tier, args.twin, context, Tier::Model);
    let twin = tier == Tier::Twin;
    let on_cluster = tier == Tier::Live;
    if on_cluster && args.mutant.is_some() {
        return Err(UsageError(crate::live_run::NO_MUTANT_ON_A_CLUSTER.into()).into());
    }
    let faults = args
        .faults
        .as_deref()
        .map(live::twin::faults::FaultConfig::parse)
        .transpose()
        .map_err(|e| UsageError(format!("--faults: {e}")))?;
    if faults.is_some() && !twin {
        return Err(UsageError("--faults needs the twin tier (--twin)".into()).into());
    }
    let prepared = match on_cluster {
        true => match crate::live_run::prepare(
            &args.live,
            "fake Nodes, NodeFeatures, Devices and Namespaces churned for the whole soak (run-unique pools)",
        ) {
            Ok(p) => Some(p),
            Err(code) => return Ok(code),
        },
        false => None,
    };
    let mut config = soak::SoakConfig {
        seed: args.seed,
        shape: generators::ShapeConfig {
            max_nodes: args.max_nodes,
            settings: match on_cluster {
                true => Some(operator_settings(&args.live)?),
                false => None,
            },
            ..generators::ShapeConfig::default()
        },
        duration: args.duration,
        max_events: args.max_events,
        rate: args.rate,
        checkpoint_every: args.checkpoint_every,
        // the operator's flags are fixed on a twin or a cluster
        awareness_flips: tier == Tier::Model,
        // A twin (or cluster) replay costs a run and its convergence: fewer shrink candidates.
        shrink_budget: if tier == Tier::Model { 400 } else { 24 },
        ..soak::SoakConfig::default()
    };
    match &prepared {
        // Ctrl-C is already caught (a second one exits at once, leaving verify cleanup)
        Some(p) => config.stop = p.interrupt.clone(),
        None => {
            let stop = config.stop.clone();
            ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::Relaxed))
                .context("installing the Ctrl-C handler")?;
        }
    }
    let mutant = args.mutant;
    let twin_config = fuzz::twin::TwinConfig {
        faults,
        ..fuzz::twin::TwinConfig::default()
    };
    let soak_run = crate::live_run::run_name(&format!("soak-{}", args.seed));
    if prepared.is_some() {
        outln!("run label: {}={soak_run}.<token>", live::client::RUN_LABEL);
    }
    let lanes = std::sync::atomic::AtomicUsize::new(0);
    let make = |twin_config: &fuzz::twin::TwinConfig| -> Result<Box<dyn soak::Target>> {
        if let Some(p) = &prepared {
            // each target (the soak's, then each shrink replay's) is its own lane of the run
            let lane = lanes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let runner = p
                .runner(
                    &soak_run,
                    lane,
                    twin_config.clone(),
                    args.live.teardown_budget,
                )
                .map_err(|e| anyhow::anyhow!("connecting to the cluster: {e}"))?;
            return Ok(Box::new(soak::TwinTarget::on_cluster(runner)));
        }
        Ok(if twin {
            Box::new(
                soak::TwinTarget::start(twin_config.clone(), mutant)
                    .map_err(|e| anyhow::anyhow!("starting the embedded twin: {e}"))?,
            )
        } else {
            Box::new(soak::ModelTarget::new(mutant))
        })
    };
    let mut target = make(&twin_config)?;
    outln!("{}", target.describe());
    let dir = scenario::RunDir::create_now(&args.run_dir)
        .with_context(|| format!("creating a run directory under {}", args.run_dir.display()))?;
    outln!(
        "soak: seed {}, for {}, run directory {}",
        args.seed,
        humantime::format_duration(args.duration),
        dir.path().display()
    );
    let report = soak::run(
        &config,
        target.as_mut(),
        &mut || match make(&twin_config) {
            Ok(t) => t,
            // A replay twin that cannot start judges nothing: the model stands in, so the
            // stretch is kept whole rather than shrunk on a broken target.
            Err(_) => Box::new(soak::ModelTarget::new(mutant)),
        },
        &dir,
        &mut |s| {
            eprintln!(
                "  {:>8.1}s  {:>8} events  latency {:.2} ms  objects {}  rss {} KiB",
                s.elapsed_s, s.events_applied, s.quiescence_latency_ms, s.objects_alive, s.rss_kib
            )
        },
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let row = report.history_row(dir.id(), tier.name(), args.seed);
    soak::series::append_history(&args.history, &row)
        .with_context(|| format!("appending to {}", args.history.display()))?;
    if let Some(f) = &report.failure {
        outln!(
            "FAIL {} after {} events ({:.1} s): stretch of {} events shrunk to {} node(s), {} event(s) -> {}",
            f.finding.property,
            f.at_event,
            f.elapsed.as_secs_f64(),
            f.stretch_events,
            f.shrunk_nodes,
            f.shrunk_events,
            f.counterexample.display()
        );
    }
    if let soak::Verdict::Inconclusive(why) = &report.verdict {
        outln!("INCONCLUSIVE: {why}");
    }
    outln!(
        "{} events in {:.1} s ({:.0}/s), {} checkpoints, mean quiescence {:.2} ms, peak rss {} KiB, leftovers {}: {}",
        report.events,
        report.elapsed.as_secs_f64(),
        report.events_per_s(),
        report.checkpoints,
        report.mean_quiescence_ms,
        report.peak_rss_kib,
        report.leftovers,
        report.verdict.label()
    );
    Ok(report.verdict.exit_code())
}

/// Connects as `access` allows, prints the banner (context, server, operator version) and
/// runs the preflight (`operator`: also the operator's own objects); `Err(code)` when the
/// command must stop (printed already).
async fn connect_checked(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    access: live::client::Access,
    operator: bool,
) -> std::result::Result<live::client::Client, i32> {
    let client = connect_announced(kubeconfig, context, access).await?;
    let missing = client.preflight(access, operator).await;
    if !missing.is_empty() {
        for line in &missing {
            outln!("PREFLIGHT {line}");
        }
        outln!("preflight failed: {} missing piece(s)", missing.len());
        return Err(3);
    }
    Ok(client)
}

/// `verify operator`: the reference operator against a cluster until Ctrl-C.
fn operator(args: crate::cli::OperatorArgs) -> Result<i32> {
    let settings = match &args.operator_settings {
        Some(path) => read_json(path)?,
        None => model::Settings::default(),
    };
    let config = live::controller::ControllerConfig {
        settings,
        quota_by: match args.quota_by {
            crate::cli::QuotaBy::Kueue => live::twin::operator::QuotaBy::Kueue,
            crate::cli::QuotaBy::Model => live::twin::operator::QuotaBy::Model,
        },
        nfd_master: !args.no_nfd_master,
        credits_capacity: args.credits_capacity,
        ..live::controller::ControllerConfig::default()
    };
    live::client::preflight::block_on(async {
        let client = match connect_announced(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            live::client::Access::Mutating,
        )
        .await
        {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
        let target = client.target().clone();
        if target.context != live::client::TWIN_CONTEXT && !args.cluster.yes {
            if let Err(code) = crate::live_run::confirm(&format!(
                "verify will run the reference operator on context `{}` ({}): it creates, \
                 updates and deletes the operator's objects there until stopped.",
                target.context, target.server
            )) {
                return Ok(code);
            }
        }
        let log = |line: &str| outln!("operator: {line}");
        let stop = live::controller::interrupted();
        match live::controller::run(client.kube().clone(), config, stop, log).await {
            Ok(()) => Ok(0),
            Err(e) => {
                eprintln!("verify operator: {e}");
                Ok(3)
            }
        }
    })
    .context("starting the async runtime")?
}

/// Connects through the chosen context and prints the banner (context, server, operator);
/// `Err` is the exit code, the reason already said.
pub(crate) async fn connect_announced(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    access: live::client::Access,
) -> std::result::Result<live::client::Client, i32> {
    let client = match live::client::connect(kubeconfig, context, access).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("verify: {e}");
            return Err(e.exit_code());
        }
    };
    for line in client.banner().await {
        outln!("{line}");
    }
    Ok(client)
}

/// `verify audit`: a dump offline, or a cluster through the client (list only).
fn audit(args: AuditArgs) -> Result<i32> {
    let settings = model::Settings::default();
    let outcome = live::client::preflight::block_on(async {
        let snapshot = match &args.snapshot {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
                live::audit::Snapshot::parse(&text, &path.display().to_string())
            }
            None => {
                let client = match connect_checked(
                    args.kubeconfig.as_deref(),
                    args.context.as_deref(),
                    live::client::Access::ReadOnly,
                    true,
                )
                .await
                {
                    Ok(c) => c,
                    Err(code) => return Ok(Err(code)),
                };
                live::audit::Snapshot::list(&client)
                    .await
                    .map_err(live::audit::AuditError::from)
            }
        };
        let report = match snapshot {
            Ok(s) => live::audit::audit(&s, &settings).await,
            Err(e) => Err(e),
        };
        Ok::<_, UsageError>(Ok(report))
    })
    .context("starting the async runtime")??;
    match outcome {
        Err(code) => Ok(code),
        Ok(Ok(report)) => {
            out!("{}", report.render());
            Ok(report.exit_code())
        }
        Ok(Err(e)) => {
            eprintln!("verify: {e}");
            Ok(e.exit_code())
        }
    }
}

/// `verify cleanup`: tear down the named run (or every run) by label, then count leftovers.
fn cleanup(args: CleanupArgs) -> Result<i32> {
    let runs = match &args.run {
        Some(id) => live::client::Runs::One(
            live::client::RunId::new(id).map_err(|e| UsageError(e.to_string()))?,
        ),
        None => live::client::Runs::All,
    };
    live::client::preflight::block_on(async {
        let client = match connect_checked(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            live::client::Access::Mutating,
            false,
        )
        .await
        {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
        let target = client.target().clone();
        if target.context != live::client::TWIN_CONTEXT && !args.cluster.yes {
            let which = match &args.run {
                Some(id) => format!("run {id} (and its attempts {id}.*)"),
                None => "every run".into(),
            };
            if let Err(code) = crate::live_run::confirm(&format!(
                "verify will delete what {which} left on context `{}` ({}): objects labelled {} \
                 and the pools their tokens key.",
                target.context,
                target.server,
                live::client::RUN_LABEL
            )) {
                return Ok(code);
            }
        }
        match client.cleanup(&runs).await {
            Ok(done) => {
                out!("{}", done.render());
                Ok(if done.leftovers().is_empty() { 0 } else { 1 })
            }
            Err(e) => {
                eprintln!("verify: {e}");
                Ok(3)
            }
        }
    })
    .context("starting the async runtime")?
}

/// The ledger entries a run did not reproduce whose recorded minimal scenario no longer
/// fails on the model (entries found on the twin are not judged here: that needs a twin).
fn possibly_fixed(
    ledger: &reports::Ledger,
    seen: &[reports::FindingEntry],
) -> Vec<reports::Signature> {
    reports::findings::unseen(ledger, seen, |path| {
        let s = scenario::load(path).ok()?;
        let on_twin = s.expect.iter().any(|e| {
            matches!(e, model::scenario::Expectation::Violation { property, .. }
                if property == fuzz::twin::TWIN_PROPERTY)
        });
        if on_twin {
            return None;
        }
        Some(oracle::replay(&s).recorded.iter().any(|(_, r)| *r))
    })
    .into_iter()
    .filter(|(_, reproduces)| *reproduces == Some(false))
    .map(|(k, _)| k.signature.clone())
    .collect()
}

/// `verify findings [list|accept SIG|retire SIG]`.
fn findings(
    action: Option<crate::cli::FindingsCommand>,
    known: &Path,
    regressions: &Path,
) -> Result<i32> {
    use crate::cli::FindingsCommand;
    let mut ledger = reports::Ledger::load(known).map_err(|e| UsageError(e.to_string()))?;
    match action {
        None => {
            prune_regressions(regressions)?;
            list_ledger(&ledger, known);
            Ok(0)
        }
        Some(FindingsCommand::List) => {
            list_ledger(&ledger, known);
            Ok(0)
        }
        Some(FindingsCommand::Retire { signature }) => {
            let sig =
                reports::Ledger::resolve(&signature, ledger.findings.iter().map(|f| &f.signature))
                    .map_err(|e| UsageError(format!("{}: {e}", known.display())))?;
            if let Some(gone) = ledger.retire(&sig) {
                ledger.save(known)?;
                outln!("retired {sig}: {}", gone.title);
                if !gone.scenario.is_empty() {
                    outln!(
                        "its scenario {} is kept (delete it with the entry's commit)",
                        gone.scenario
                    );
                }
            }
            Ok(0)
        }
        Some(FindingsCommand::Accept {
            signature,
            run,
            status,
            title,
            link,
            runs,
        }) => accept_finding(
            &mut ledger,
            known,
            &signature,
            run.as_deref(),
            &runs,
            status,
            title,
            link,
        ),
    }
}

/// Prints every ledger entry.
fn list_ledger(ledger: &reports::Ledger, known: &Path) {
    for k in &ledger.findings {
        outln!("known ({}): {}", k.status, k.title);
        outln!("  signature  {}", k.signature);
        if !k.scenario.is_empty() {
            outln!("  scenario   {} (verify replay {})", k.scenario, k.scenario);
        }
        outln!("  first seen {}", k.first_seen);
        if !k.link.is_empty() {
            outln!("  link       {}", k.link);
        }
    }
    outln!(
        "{} known finding(s) in {}",
        ledger.findings.len(),
        known.display()
    );
}

/// `verify findings accept SIG`: a run's finding into the ledger (its smallest scenario
/// copied beside the ledger, in `known/`), or a new status for an entry already there.
#[allow(clippy::too_many_arguments)]
fn accept_finding(
    ledger: &mut reports::Ledger,
    known: &Path,
    prefix: &str,
    run: Option<&Path>,
    runs: &Path,
    status: Option<reports::Status>,
    title: Option<String>,
    link: Option<String>,
) -> Result<i32> {
    // an entry already in the ledger: change its status (and link)
    if let Ok(sig) = reports::Ledger::resolve(prefix, ledger.findings.iter().map(|f| &f.signature))
    {
        let Some(status) = status.or(link
            .as_ref()
            .and_then(|_| ledger.get(&sig).map(|k| k.status)))
        else {
            let now = ledger.get(&sig).map(|k| k.status.name()).unwrap_or("");
            return Err(UsageError(format!(
                "{sig} is already known ({now}): pass --status open|reported-upstream|accepted or --link"
            ))
            .into());
        };
        let mut entry = ledger
            .get(&sig)
            .cloned()
            .context("the entry just resolved")?;
        entry.status = status;
        entry.link = link.unwrap_or_default();
        ledger.accept(entry);
        ledger.save(known)?;
        outln!("{sig}: now {status}");
        return Ok(0);
    }
    let candidates: Vec<std::path::PathBuf> = match run {
        Some(r) => vec![r.to_path_buf()],
        None => {
            let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(runs)
                .with_context(|| format!("listing {}", runs.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join(reports::record::SUMMARY_FILE).exists())
                .collect();
            dirs.sort();
            dirs.reverse();
            dirs
        }
    };
    for dir in candidates {
        let Ok(loaded) = reports::load_run(&dir) else {
            continue;
        };
        let Ok(sig) =
            reports::Ledger::resolve(prefix, loaded.summary.findings.iter().map(|f| &f.signature))
        else {
            continue;
        };
        let Some(f) = loaded.summary.findings.iter().find(|f| f.signature == sig) else {
            continue;
        };
        let folder = known
            .parent()
            .map_or_else(|| Path::new("known").to_path_buf(), |p| p.join("known"));
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("creating {}", folder.display()))?;
        let copy = folder.join(format!("{}-{}.yaml", f.smallest.seed, f.property));
        std::fs::copy(dir.join(&f.smallest.scenario), &copy)
            .with_context(|| format!("copying the scenario to {}", copy.display()))?;
        let entry = reports::KnownFinding {
            signature: sig.clone(),
            title: title.unwrap_or_else(|| f.title.clone()),
            status: status.unwrap_or(reports::Status::Open),
            link: link.unwrap_or_default(),
            scenario: copy.display().to_string(),
            first_seen: format!("{}, seed {}", loaded.summary.run_id, f.smallest.seed),
        };
        outln!(
            "known ({}): {} — {sig}, scenario {}",
            entry.status,
            entry.title,
            entry.scenario
        );
        ledger.accept(entry);
        ledger.save(known)?;
        return Ok(0);
    }
    Err(UsageError(format!(
        "no finding `{prefix}` in {} or in a run under {}",
        known.display(),
        run.unwrap_or(runs).display()
    ))
    .into())
}

/// Replays every regression seed where it was found (a `twin-matches-model` seed on an
/// embedded twin, the rest on the model) and drops from the file the seeds that pass.
fn prune_regressions(path: &Path) -> Result<()> {
    let regressions = scenario::Regressions::load(path).map_err(|e| UsageError(e.to_string()))?;
    let (twin, model): (Vec<_>, Vec<_>) = regressions
        .entries()
        .iter()
        .partition(|r| r.note == fuzz::twin::TWIN_PROPERTY);
    let mut stale = std::collections::BTreeSet::new();
    for (tier, group) in [(fuzz::Tier::Model, model), (fuzz::Tier::Twin, twin)] {
        let seeds: Vec<u64> = group.iter().map(|r| r.seed).collect();
        if seeds.is_empty() {
            continue;
        }
        let mut config = fuzz::FuzzConfig {
            tier,
            seeds: 0,
            regressions: seeds.clone(),
            jobs: 1,
            shrink_steps: 0,
            ..fuzz::FuzzConfig::default()
        };
        config.twin.shrink_steps = 0;
        let report = fuzz::run(&config, &|_, _| {}).map_err(|e| anyhow::anyhow!(e))?;
        for seed in seeds {
            let failing = report.failures.iter().any(|f| f.seed == seed);
            let unjudged = report.inconclusive.iter().any(|(s, _)| *s == seed)
                || report.flaky.iter().any(|(s, _)| *s == seed);
            if failing || unjudged {
                outln!("regression seed {seed}: still fails (kept)");
            } else {
                outln!("regression seed {seed}: passes now (dropped)");
                stale.insert(seed);
            }
        }
    }
    if !stale.is_empty() {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let kept = reports::findings::without_seeds(&text, &stale);
        let tmp = path.with_extension("txt.tmp");
        std::fs::write(&tmp, kept).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    }
    Ok(())
}
