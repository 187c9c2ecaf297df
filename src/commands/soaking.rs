//! `verify soak`: a long event stream on a tier, its series and leftovers.

use super::*;

/// `verify soak`: churn until the deadline, Ctrl-C or the first finding; series, checkpoint,
/// counterexample and a history row.
pub(super) fn soak(args: SoakArgs) -> Result<Outcome> {
    let tier = args.tier();
    lean_allocator_for_soak(tier);
    let twin = tier == Tier::Twin;
    let on_cluster = tier == Tier::Live;
    let faults = args.faults().map_err(UsageError)?;
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
    let settings = match on_cluster {
        true => Some(operator_settings(&args.live)?),
        false => None,
    };
    let mut config = args.soak_config(settings);
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
    let twin_config = tier::ApiConfig {
        faults,
        ..tier::ApiConfig::default()
    };
    let soak_run = crate::live_run::run_name(&format!("soak-{}", args.seed));
    if prepared.is_some() {
        outln!("run label: {}={soak_run}.<token>", live::client::RUN_LABEL);
    }
    let lanes = std::sync::atomic::AtomicUsize::new(0);
    let make = |twin_config: &tier::ApiConfig| -> Result<Box<dyn tier::Target>> {
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
            return Ok(Box::new(runner));
        }
        Ok(if twin {
            Box::new(
                tier::ApiTarget::start(twin_config.clone())
                    .map_err(|e| anyhow::anyhow!("starting the embedded twin: {e}"))?
                    .with_mutant(mutant),
            )
        } else {
            Box::new(tier::ModelTarget::new(mutant))
        })
    };
    let mut target = make(&twin_config)?;
    outln!("{}", target.describe());
    let dir = scenario::RunDir::create_now(&args.run_dir)
        .with_context(|| format!("creating a run directory under {}", args.run_dir.display()))?;
    tracing::info!(path = %dir.path().display(), "run directory created");
    tracing::debug!(?config, "soak config");
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
            Err(_) => Box::new(tier::ModelTarget::new(mutant)),
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
    Ok(report.verdict.outcome())
}
