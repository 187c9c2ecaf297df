//! `verify cases` and `verify case N`: the operator's locked end-to-end cases on a tier.

use super::*;

/// `verify cases`: the locked case index, as a table or JSON.
pub(super) fn cases_index(format: OutputFormat) -> Result<Outcome> {
    if let Some(e) = cases::index::index_error() {
        return Err(UsageError(e).into());
    }
    match format {
        OutputFormat::Table => out!("{}", cases::render::index_text(cases::index())),
        OutputFormat::Json => outln!("{}", cases::render::index_json(cases::index())?),
    }
    Ok(Outcome::Held)
}

/// The live tier of `verify case`: a prepared cluster (banner, preflight, confirmation), its
/// hardware probed read-only, one lane of a run named after the case.
/// The live case tier, and the run's Ctrl-C flag.
pub(super) fn live_case_tier(
    args: &crate::cli::CaseArgs,
) -> std::result::Result<(cases::CaseTier, Interrupt), Outcome> {
    if args.mutant.is_some() {
        eprintln!("verify: {}", crate::live_run::NO_MUTANT_ON_A_CLUSTER);
        return Err(Outcome::Usage);
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
            Outcome::Usage
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
        Outcome::Usage
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
        Outcome::Inconclusive
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
            tier::ApiConfig::default(),
            args.live.teardown_budget,
        )
        .map_err(|e| {
            eprintln!("verify: {e}");
            Outcome::Inconclusive
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
    let tier = cases::CaseTier::on_cluster(runner, hardware).with_pool_rows(pool_rows);
    let interrupt = p.interrupt.clone();
    let tier = match mig {
        // without the card the MIG cases skip before their hardware step
        Some(node) if nvidia => {
            let node = node.interrupted_by(p.interrupt.clone());
            tier.with_mig_node(match args.block {
                Some(_) => node.in_block(),
                None => node,
            })
        }
        _ => tier,
    };
    Ok((tier, interrupt))
}

/// Set by Ctrl-C during a live run.
pub(super) type Interrupt = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// The live tier's pool rows of each case in `numbers` that needs a pool shape: the cluster's
/// pool that has it, and its audit against the model (read-only, from `snapshot`).
pub(super) async fn cases_pool_rows(
    snapshot: &live::audit::Snapshot<'_>,
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
    let audit = live::audit::audit(snapshot, settings).map_err(|e| e.to_string())?;
    Ok(shaped
        .into_iter()
        .map(|(n, shape)| (n, cases::probe::pool_rows(snapshot, &audit, Some(shape))))
        .collect())
}

/// `verify case --block rdma --report-only`: which RDMA readings a cluster shape can answer,
/// touching nothing (the model tier reads the embedded walkthrough; the live tier lists the
/// cluster read-only).
pub(super) fn rdma_report_only(tier: Tier, live_args: &crate::cli::LiveArgs) -> Result<Outcome> {
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
                    Outcome::Inconclusive
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
            Ok(Outcome::Held)
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
            Ok(Outcome::Held)
        }
    }
}

/// `verify case N | --block mig|rdma [--report-only]`: run on a tier, print tables, exit code.
pub(super) fn case(args: crate::cli::CaseArgs) -> Result<Outcome> {
    use crate::cli::CaseBlock;
    let block = args.block.map(|b| match b {
        CaseBlock::Mig => cases::Block::Mig,
        CaseBlock::Rdma => cases::Block::Rdma,
    });
    let model_tier = cases::CaseTier::model(args.mutant);
    let chosen = args.tier();
    if args.report_only {
        if block != Some(cases::Block::Rdma) {
            return Err(UsageError("--report-only applies to --block rdma only".into()).into());
        }
        return rdma_report_only(chosen, &args.live);
    }
    let env = |k: &str| std::env::var(k).ok();
    let run_on = |runner: &cases::CaseTier| match (block, args.number) {
        (Some(b), _) => cases::run_block(b, runner, &env).map_err(|e| e.to_string()),
        (None, Some(n)) => cases::run_case(n, runner, &env)
            .map(|r| vec![r])
            .map_err(|e| e.to_string()),
        (None, None) => Err("name a case number or --block".to_string()),
    };
    // the live tier's input gate (MIG_NODE_SSH, PPU_NODE_SSH) speaks before any cluster is
    // contacted
    if chosen == Tier::Live {
        let gated = run_on(&cases::CaseTier::unavailable(cases::Tier::Live)).map_err(UsageError)?;
        if gated
            .iter()
            .any(|r| matches!(r.verdict, cases::Verdict::InputRequired { .. }))
        {
            print_case_runs(&gated, args.format)?;
            return Ok(gated.outcome());
        }
    }
    let mut interrupt = None;
    let twin_tier = match chosen {
        Tier::Twin => Some(
            cases::CaseTier::twin(args.mutant)
                .map_err(|e| anyhow::anyhow!("starting the embedded twin: {e}"))?,
        ),
        Tier::Live => match live_case_tier(&args) {
            Ok((t, flag)) => {
                interrupt = Some(flag);
                Some(t)
            }
            Err(code) => return Ok(code),
        },
        Tier::Model => None,
    };
    let runner: &cases::CaseTier = match &twin_tier {
        Some(t) => t,
        None => &model_tier,
    };
    let runs = run_on(runner).map_err(UsageError)?;
    print_case_runs(&runs, args.format)?;
    // a case cut short by Ctrl-C was not judged: its failed steps are the interruption's
    if interrupt.is_some_and(|i| i.load(std::sync::atomic::Ordering::Relaxed)) {
        outln!("INTERRUPTED: stopped before the case finished; torn down");
        return Ok(Outcome::Inconclusive);
    }
    Ok(runs.outcome())
}

/// Each case's table (and a block summary), JUnit XML, or JSON.
pub(super) fn print_case_runs(
    runs: &[cases::CaseRun],
    format: crate::cli::CaseFormat,
) -> Result<()> {
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
            outln!(
                "{}",
                cases::render::junit(runs).map_err(|e| UsageError(e.to_string()))?
            )
        }
        crate::cli::CaseFormat::Json => outln!("{}", cases::render::case_json(runs)?),
    }
    Ok(())
}
