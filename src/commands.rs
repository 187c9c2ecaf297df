//! One function per command; each returns the process exit code (DESIGN.md "Exit codes").

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{AuditArgs, CheckArgs, CleanupArgs, Command, Format, FuzzArgs, Tier, TwinCommand};

/// Bad input or a missing required input: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn dispatch(command: Command) -> Result<i32> {
    match command {
        Command::Fuzz(args) => fuzz(args),
        Command::Replay { file } => replay(&file),
        Command::Check(args) => check(args),
        Command::Twin(TwinCommand::Serve {
            port,
            kubeconfig_out,
            walkthrough,
        }) => twin_serve(port, kubeconfig_out.as_deref(), walkthrough),
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
        Command::Audit(args) => audit(args),
        Command::Cleanup(args) => cleanup(args),
    }
}

fn conformance(dir: &Path) -> Result<i32> {
    let report = conformance::run_dir(dir).map_err(UsageError)?;
    print!("{}", report.render());
    Ok(report.exit_code())
}

fn derive(cluster: Option<&Path>, format: Format) -> Result<i32> {
    let cluster = match cluster {
        None => {
            // Announced first; on stderr for JSON so the document stays parseable.
            let note = "cluster: embedded walkthrough (research/chain.md §15)";
            match format {
                Format::Table => println!("{note}"),
                Format::Json => eprintln!("{note}"),
            }
            model::examples::walkthrough()
        }
        Some(path) => read_cluster(path)?,
    };
    let derived = model::derive::derive(&cluster);
    match format {
        Format::Table => print!("{}", reports::derived_table(&derived)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&derived).context("rendering the derivation as JSON")?
        ),
    }
    Ok(0)
}

/// Reads a cluster shape; errors name the file, the line and the field serde stopped at.
fn read_cluster(path: &Path) -> Result<model::Cluster> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let cluster: model::Cluster = serde_path_to_error::deserialize(de).map_err(|e| {
        UsageError(format!(
            "{}: field `{}`: {}",
            path.display(),
            e.path(),
            e.inner()
        ))
    })?;
    model::derive::validate(&cluster)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    Ok(cluster)
}

/// `verify fuzz`: announce the tier, replay regressions, run the seeds, write counterexamples.
fn fuzz(args: FuzzArgs) -> Result<i32> {
    let tier = Tier::chosen(args.tier, args.twin);
    println!("{}", tier_banner(tier));
    let regressions =
        scenario::Regressions::load(&args.regressions).map_err(|e| UsageError(e.to_string()))?;
    let config = fuzz::FuzzConfig {
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
    let total = fuzz::seed_list(&config).len() as u64;
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} seeds  {msg}  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let failures = std::sync::atomic::AtomicU64::new(0);
    let report = fuzz::run(&config, &|_, failure| {
        if failure.is_some() {
            let n = failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            bar.set_message(format!("{n} failing"));
        }
        bar.inc(1);
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    bar.finish_and_clear();
    let mut written = Vec::new();
    if !report.failures.is_empty() {
        let dir = scenario::RunDir::create_now(&args.run_dir).with_context(|| {
            format!("creating a run directory under {}", args.run_dir.display())
        })?;
        let mut regressions = regressions;
        for f in &report.failures {
            let path = dir
                .write_counterexample(f.seed, &f.property, &f.scenario, &fuzz::failure_report(f))
                .with_context(|| format!("writing the counterexample of seed {}", f.seed))?;
            regressions.append(f.seed, &f.property).with_context(|| {
                format!(
                    "appending seed {} to {}",
                    f.seed,
                    args.regressions.display()
                )
            })?;
            written.push(path);
        }
    }
    for (f, path) in report.failures.iter().zip(&written) {
        println!(
            "FAIL seed {}: {} (shrunk to {} node(s), {} event(s)) -> {}",
            f.seed,
            f.property,
            f.nodes(),
            f.events(),
            path.display()
        );
    }
    for (seed, why) in &report.inconclusive {
        println!("INCONCLUSIVE seed {seed}: {why}");
    }
    if report.ran == 0 {
        println!("NOTHING WAS VERIFIED: no seed was run");
    }
    println!(
        "{} seeds, {} failing, in {:.2} s ({:.0} seeds/s, {} jobs)",
        report.ran,
        report.failures.len(),
        report.elapsed.as_secs_f64(),
        report.rate(),
        config.jobs
    );
    Ok(if !report.failures.is_empty() {
        1
    } else if !report.inconclusive.is_empty() {
        3
    } else {
        0
    })
}

/// The first line of `verify fuzz` and `verify mutants`: where the chain is checked.
fn tier_banner(tier: Tier) -> &'static str {
    match tier {
        Tier::Model => "tier: model (the model's own properties; no cluster contacted)",
        Tier::Twin => {
            "tier: twin (embedded Kubernetes-API twin on 127.0.0.1, one per job; no cluster contacted)"
        }
    }
}

fn fuzz_tier(tier: Tier) -> fuzz::Tier {
    match tier {
        Tier::Model => fuzz::Tier::Model,
        Tier::Twin => fuzz::Tier::Twin,
    }
}

/// `verify replay FILE`: run the scenario, check every property and its expectations.
fn replay(file: &Path) -> Result<i32> {
    let s = scenario::load(file).map_err(|e| UsageError(e.to_string()))?;
    let check = oracle::replay(&s);
    print!("{}", check.render());
    Ok(if check.held() { 0 } else { 1 })
}

/// `verify mutants`: the catalog, or the kill table over `seeds` seeds each.
fn mutants(list: bool, seeds: u64, jobs: usize, tier: Tier) -> Result<i32> {
    use model::mutants::Mutant;
    if list {
        for m in Mutant::ALL {
            println!("{:<32} {}", m.name(), m.describe());
        }
        return Ok(0);
    }
    println!("{}", tier_banner(tier));
    println!("each mutant fuzzed for up to {seeds} seeds");
    println!(
        "{:<32} {:>8} {:>6} {:>7}  property",
        "MUTANT", "SEED", "NODES", "EVENTS"
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
            Some(f) => println!(
                "{:<32} {:>8} {:>6} {:>7}  killed",
                m.name(),
                f.seed,
                f.nodes(),
                f.events()
            ),
            None => {
                survivors += 1;
                println!(
                    "{:<32} {:>8} {:>6} {:>7}  SURVIVED",
                    m.name(),
                    "-",
                    "-",
                    "-"
                );
            }
        }
    }
    println!(
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
        ..CheckConfig::default()
    };
    let report = run_check(&config);
    print!("{}", report.render());
    if let Some((property, cx)) = report.first_violation() {
        let dir = scenario::RunDir::create_now(&args.run_dir).with_context(|| {
            format!("creating a run directory under {}", args.run_dir.display())
        })?;
        let path = dir
            .write_counterexample(0, property, &cx.scenario, &cx.steps.join("\n"))
            .context("writing the counterexample scenario")?;
        println!("counterexample scenario: {}", path.display());
        return Ok(1);
    }
    Ok(0)
}

/// `verify twin serve`: the twin on loopback, with its reference operator reconciling after
/// every write, until interrupted.
fn twin_serve(port: Option<u16>, kubeconfig_out: Option<&Path>, walkthrough: bool) -> Result<i32> {
    let mut store = live::twin::store::Store::new(live::twin::store::StoreConfig {
        clock: live::twin::store::wall_clock(),
        ..live::twin::store::StoreConfig::default()
    });
    live::crd::install_validators(&mut store);
    if walkthrough {
        live::twin::read::write_mock(&mut store, &model::examples::walkthrough())
            .map_err(|e| anyhow::anyhow!("mocking the walkthrough cluster: {}", e.message))?;
    }
    let (handle, _operator) =
        live::twin::operator::spawn_twin_with_operator(port, store, model::Settings::default())
            .map_err(|e| UsageError(format!("cannot serve the twin on 127.0.0.1: {e}")))?;
    println!("twin: serving the Kubernetes API on {}", handle.url());
    if let Some(path) = kubeconfig_out {
        std::fs::write(
            path,
            live::twin::kubeconfig::kubeconfig_yaml(handle.url(), "verify-twin"),
        )
        .with_context(|| format!("writing the kubeconfig to {}", path.display()))?;
        println!("kubeconfig: {} (context verify-twin)", path.display());
    }
    println!("stop with Ctrl-C");
    handle.wait().context("the twin stopped")?;
    Ok(0)
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
    let client = match live::client::connect(kubeconfig, context, access).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("verify: {e}");
            return Err(e.exit_code());
        }
    };
    for line in client.banner().await {
        println!("{line}");
    }
    let missing = client.preflight(access, operator).await;
    if !missing.is_empty() {
        for line in &missing {
            println!("PREFLIGHT {line}");
        }
        println!("preflight failed: {} missing piece(s)", missing.len());
        return Err(3);
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
            print!("{}", report.render());
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
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            live::client::Access::Mutating,
            false,
        )
        .await
        {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
        match client.cleanup(&runs).await {
            Ok(done) => {
                print!("{}", done.render());
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
