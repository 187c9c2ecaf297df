//! `verify fuzz`: the seed loop on a tier, its run record and its failures saved.

use super::*;

/// `verify fuzz`: announce the tier, replay regressions, run the seeds, record each
/// counterexample as found in the run directory, end with the summary table.
pub(super) fn fuzz(args: FuzzArgs) -> Result<Outcome> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    let tier = args.tier();
    outln!("{}", tier.banner());
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
    let mut config = args.fuzz_config(regressions.seeds());
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
    let judged = summary.verdict.outcome();
    Ok(match judged {
        o if o.passed() && !report.flaky.is_empty() => Outcome::Flaky,
        o if o.passed() && unfinished => Outcome::Inconclusive,
        o => o,
    })
}

/// Opens the run directory and writes its starting summary.
pub(super) fn start_run_record(
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
pub(super) fn record_failure(
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
