//! `verify chart …`: parse → a plain config → the `chart` crate. The connection is the live
//! tier's (`live::client::connect`: `--kubeconfig`/`KUBECONFIG`, `--context` required to
//! change a real cluster); tables and JUnit are `cases::render`'s.

use anyhow::{Context, Result};

use crate::cli::{CaseFormat, ChartCaseArgs, ChartCommand, ClusterArgs};
use crate::commands::UsageError;
use outcome::{Concluded, Outcome};

pub fn dispatch(command: ChartCommand) -> Result<Outcome> {
    match command {
        ChartCommand::Leftovers { before, after } => leftovers(&before, &after),
        ChartCommand::Inventory { cluster, output } => {
            on_cluster(&cluster, false, |c| async move {
                let inventory = chart::inventory::take(c.kube(), &c.target().server).await?;
                inventory.save(&output)?;
                for u in &inventory.unlisted {
                    outln!("UNLISTED {} ({})", u.resource, u.reason);
                }
                outln!("{} written to {}", inventory.summary(), output.display());
                Ok(Outcome::Held)
            })
        }
        ChartCommand::Release {
            cluster,
            namespace,
            name,
        } => on_cluster(&cluster, false, |c| async move {
            let all = chart::release::records(c.kube(), namespace.as_deref()).await?;
            let latest: Vec<chart::Release> = chart::release::latest(all)
                .into_iter()
                .filter(|r| name.as_deref().is_none_or(|n| r.name == n))
                .collect();
            if latest.is_empty() {
                outln!(
                    "no Helm release records{}{}",
                    name.as_deref()
                        .map_or(String::new(), |n| format!(" of {n}")),
                    namespace
                        .as_deref()
                        .map_or(String::new(), |n| format!(" in {n}"))
                );
                return Ok(Outcome::Failed);
            }
            for r in &latest {
                out!("{}", r.render());
            }
            Ok(Outcome::Held)
        }),
        ChartCommand::Install {
            cluster,
            chart,
            values,
            namespace,
            release,
            run_dir,
        } => {
            if let Some(code) = helm_or_exit() {
                return Ok(code);
            }
            on_cluster(&cluster.clone(), true, |c| async move {
                let mut cfg = config_for(&c, &cluster, &namespace);
                cfg.release = release;
                cfg.run_dir = Some(run_dir.clone());
                let (summary, ran) = chart::case::install(c.kube(), &cfg, &chart, &values).await?;
                outln!(
                    "before-install inventory: {summary}, in {}",
                    run_dir.join(chart::case::BEFORE_INSTALL).display()
                );
                if !ran.output.is_empty() {
                    outln!("{}", ran.output);
                }
                if ran.success {
                    outln!("helm install {} done", cfg.release);
                    Ok(Outcome::Held)
                } else {
                    outln!("helm install failed (exit {:?})", ran.code);
                    Ok(Outcome::Failed)
                }
            })
        }
        ChartCommand::Case(args) => case(args),
    }
}

/// The helm pin and defaults for one connected client.
fn config_for(
    c: &live::client::Client,
    cluster: &ClusterArgs,
    namespace: &str,
) -> chart::case::CaseConfig {
    let mut cfg = chart::case::CaseConfig::new(
        namespace,
        chart::tools::Pin {
            kubeconfig: cluster.kubeconfig.clone(),
            context: c.target().context.clone(),
        },
    );
    cfg.server = c.target().server.clone();
    cfg
}

/// helm on PATH, asked before any connection or confirmation: its absence is exit 2.
fn helm_or_exit() -> Option<Outcome> {
    match chart::tools::helm() {
        Ok(_) => None,
        Err(e) => {
            eprintln!("verify: {e}");
            Some(e.outcome())
        }
    }
}

/// Connects (mutating commands need `--context` and a confirmation), prints the banner, runs
/// `f`; a chart error is printed and becomes its exit code.
fn on_cluster<F, Fut>(cluster: &ClusterArgs, mutating: bool, f: F) -> Result<Outcome>
where
    F: FnOnce(live::client::Client) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<Outcome, chart::ChartError>>,
{
    on_cluster_confirming(cluster, mutating, mutating, f)
}

/// [`on_cluster`] with the pinned context (`pinned`) and the confirmation (`confirm`) apart:
/// case 3 changes local images only, so it asks but needs no `--context`.
fn on_cluster_confirming<F, Fut>(
    cluster: &ClusterArgs,
    pinned: bool,
    confirm: bool,
    f: F,
) -> Result<Outcome>
where
    F: FnOnce(live::client::Client) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<Outcome, chart::ChartError>>,
{
    let access = if pinned {
        live::client::Access::Mutating
    } else {
        live::client::Access::ReadOnly
    };
    live::client::preflight::block_on(async {
        let client = match crate::commands::connect_announced(
            cluster.kubeconfig.as_deref(),
            cluster.context.as_deref(),
            access,
        )
        .await
        {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
        if confirm && !cluster.yes {
            let question = format!(
                "This changes the cluster of context `{}` ({}).",
                client.target().context,
                client.target().server
            );
            if let Err(code) = crate::live_run::confirm(&question) {
                return Ok(code);
            }
        }
        match f(client).await {
            Ok(code) => Ok(code),
            Err(e) => {
                eprintln!("verify: {e}");
                Ok(e.outcome())
            }
        }
    })
    .context("starting the async runtime")?
}

fn leftovers(before: &std::path::Path, after: &std::path::Path) -> Result<Outcome> {
    let load =
        |p: &std::path::Path| chart::Inventory::load(p).map_err(|e| UsageError(e.to_string()));
    let (a, b) = (load(before)?, load(after)?);
    let c = chart::compare(&a, &b);
    out!("{}", c.render());
    Ok(c.outcome())
}

fn case(args: ChartCaseArgs) -> Result<Outcome> {
    let n = args.number;
    if chart::case::title(n).is_none() {
        return Err(UsageError(format!("no chart case {n}: the chart suite has cases 1-8")).into());
    }
    let format = args.format;
    let print = |run: &cases::CaseRun| -> std::result::Result<(), chart::ChartError> {
        match format {
            CaseFormat::Table => out!("{}", cases::render::case_text(run)),
            CaseFormat::Junit => match cases::render::junit(std::slice::from_ref(run)) {
                Ok(xml) => outln!("{xml}"),
                Err(e) => return Err(chart::ChartError::Tool(e.to_string())),
            },
            CaseFormat::Json => match cases::render::case_json(std::slice::from_ref(run)) {
                Ok(json) => outln!("{json}"),
                Err(e) => return Err(chart::ChartError::Tool(e.to_string())),
            },
        }
        Ok(())
    };
    if chart::case::needs_helm(n) {
        if let Some(code) = helm_or_exit() {
            return Ok(code);
        }
    }
    if let Some(run) = chart::case::local_gate(n) {
        print(&run).map_err(|e| UsageError(e.to_string()))?;
        return Ok(run.verdict.outcome());
    }
    let cluster = args.cluster.clone();
    let (pinned, confirm) = (chart::case::changes_cluster(n), chart::case::mutates(n));
    on_cluster_confirming(&cluster, pinned, confirm, |c| async move {
        let mut cfg = config_for(&c, &args.cluster, &args.namespace);
        cfg.release = args.release;
        cfg.tag = args.tag;
        cfg.run_dir = args.run_dir;
        cfg.drain_budget = args.drain_budget;
        cfg.build_script = args.build_script;
        cfg.build_version = args.build_version;
        cfg.image = args.image;
        cfg.replicas = args.replicas;
        let run = chart::case::run(n, c.kube(), &cfg).await?;
        print(&run)?;
        Ok(run.verdict.outcome())
    })
}
