//! `verify fuzz`: the seed loop on a tier, its run record and its failures saved.

use super::*;

/// `verify fuzz`: announce the tier, replay regressions, run the seeds with each
/// counterexample recorded as found (`fuzz::record::FuzzRun`), end with the summary table.
/// `progress`: draw the progress bar (on a terminal; `-q` draws none).
pub(super) fn fuzz(args: FuzzArgs, progress: bool) -> Result<Outcome> {
    use std::sync::Mutex;

    let tier = args.tier();
    outln!("{}", tier.banner());
    // bad input (the regression file, `--shard auto` outside an Indexed Job) is refused before
    // any cluster is contacted
    let regressions =
        scenario::Regressions::load(&args.regressions).map_err(|e| UsageError(e.to_string()))?;
    let mut config = args
        .fuzz_config(regressions.seeds(), |var| std::env::var(var).ok())
        .map_err(UsageError)?;
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
    if prepared.as_ref().is_some_and(|p| p.overlay.is_some()) {
        // one node hosts one seed's mocks at a time
        config.jobs = 1;
    }
    if prepared.is_none() {
        // before the run directory is printed, so a Ctrl-C from then on is heard; a live run's
        // handler is installed by its preparation (it also restores MIG cards)
        let stop = config.interrupt.clone();
        ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::Relaxed))
            .context("installing the Ctrl-C handler")?;
    }
    let total = fuzz::SeedPlan::of(&config).len();
    let ledger = reports::Ledger::load(&args.known).map_err(|e| UsageError(e.to_string()))?;
    let record = fuzz::record::RecordConfig {
        run_base: args.run_dir.clone(),
        command: command_line(),
        regressions_path: args.regressions.clone(),
        ledger,
        strict: args.strict,
    };
    let run = fuzz::record::FuzzRun::start(&config, record, regressions)?;
    tracing::info!(path = %run.path().display(), "run directory created");
    tracing::debug!(
        tier = ?config.tier,
        seeds = config.seeds,
        jobs = config.jobs,
        shard = ?config.shard,
        regressions = config.regressions.len(),
        "fuzz config"
    );
    outln!("run directory: {}", run.path().display());
    let run_id = run.run_label();
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
    }
    let bar = match progress {
        true => indicatif::ProgressBar::new(total),
        false => indicatif::ProgressBar::hidden(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} seeds  {msg}  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let failing = std::sync::atomic::AtomicU64::new(0);
    let coverage = Mutex::new(reports::Coverage::default());
    let write_errors: Mutex<Vec<fuzz::record::RecordError>> = Mutex::new(Vec::new());
    let keep = |result: std::result::Result<(), fuzz::record::RecordError>| {
        if let Err(e) = result {
            write_errors.lock().map(|mut v| v.push(e)).ok();
        }
    };
    let report = fuzz::run_observed(
        &config,
        &|_, failure| {
            if let Some(f) = failure {
                let n = failing.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                bar.set_message(format!("{n} failing"));
                keep(run.record_failure(f).map(|r| print_failure(f, &r, &bar)));
            }
            bar.inc(1);
            keep(run.judged_one());
        },
        &|s, deriver| {
            let shown = fuzz::coverage::shown_through(s, config.mutant, deriver);
            coverage.lock().map(|mut c| c.observe(shown)).ok();
        },
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    bar.finish_and_clear();
    if let Some(e) = write_errors
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .next()
    {
        return Err(e.into());
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
    if report.interrupted {
        let torn = if prepared.is_some() {
            "; torn down"
        } else {
            ""
        };
        outln!("INTERRUPTED: stopped before every seed was judged{torn}");
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
    let summary = run.finish(&report, coverage, floors)?;
    reports::terminal::print_summary(&summary);
    Ok(report.outcome(&summary, !leftovers.is_empty()))
}

/// One recorded counterexample as a line above the progress bar.
fn print_failure(
    f: &fuzz::Failure,
    r: &fuzz::record::RecordedFailure,
    bar: &indicatif::ProgressBar,
) {
    bar.suspend(|| {
        outln!(
            "{} seed {}: {} ({}) -> {}\n  signature {}",
            r.tag,
            f.seed,
            f.property,
            r.shrunk,
            r.recorded.path.display(),
            r.recorded.signature
        )
    });
}
