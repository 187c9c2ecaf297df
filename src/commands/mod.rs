//! One function per command; each returns the process exit code (DESIGN.md "Exit codes").

use std::path::Path;

use anyhow::{Context, Result};
use outcome::{Concluded, Outcome};

use crate::cli::{
    AuditArgs, CheckArgs, CleanupArgs, Command, Format, FuzzArgs, OutputFormat, SoakArgs, Tier,
    TwinCommand,
};

mod cluster;
mod fuzzing;
mod ledger;
mod locked;
mod merging;
mod offline;
mod serve;
mod shell;
mod soaking;

pub(crate) use cluster::*;
use fuzzing::*;
use ledger::*;
use locked::*;
use merging::*;
use offline::*;
use serve::*;
use shell::*;
use soaking::*;

/// Bad input or a missing required input: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs `command`; `ui` says whether progress is drawn (`-q` draws none).
pub fn dispatch(command: Command, ui: &crate::cli::Ui) -> Result<Outcome> {
    tracing::info!("{} (verify {})", command_line(), env!("CARGO_PKG_VERSION"));
    tracing::debug!(?command, "dispatching");
    match command {
        Command::Fuzz(args) => fuzz(args, ui.progress),
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
            output,
            seeds,
            jobs,
            tier,
            twin,
        } => {
            let tier = if twin { Tier::Twin } else { tier };
            if list {
                return Ok(list_mutants(output.format));
            }
            if output.format == OutputFormat::Json {
                return Err(UsageError("-o json applies to `verify mutants --list`".into()).into());
            }
            mutants(seeds, jobs.unwrap_or(tier.default_jobs()), tier)
        }
        Command::Conformance { dir } => conformance(&dir),
        Command::Derive { cluster, format } => derive(cluster.as_deref(), format),
        Command::Cases(output) => cases_index(output.format),
        Command::Case(args) => case(args),
        Command::Report {
            run_dirs,
            merge: Some(out),
            ..
        } => merge_shards(&out, &run_dirs),
        Command::Report {
            run_dirs,
            merge: None,
            format,
            output,
            finding,
            known,
        } => {
            let [run_dir] = &run_dirs[..] else {
                return Err(UsageError(format!(
                    "verify report renders one run directory ({} given): to join shards, \
                     use --merge OUT",
                    run_dirs.len()
                ))
                .into());
            };
            match (format, finding) {
                (reports::ReportFormat::Issue, Some(sig)) => {
                    issue_report(run_dir, &sig, &known, output.as_deref())
                }
                (format, _) => report(run_dir, format, output.as_deref()),
            }
        }
        Command::Findings {
            action,
            known,
            regressions,
        } => findings(action, &known, &regressions),
        Command::Audit(args) => audit(args),
        Command::Cleanup(args) => cleanup(args),
        Command::Operator(args) => operator(args),
        Command::Chart(c) => crate::chart_cmd::dispatch(c),
        Command::Completions { shell } => Ok(completions(shell)),
        Command::Man => man_page(),
    }
}

/// The command line as typed, for the run's summary and the log.
fn command_line() -> String {
    std::iter::once("verify".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The live operator's settings: `--operator-settings FILE`, else the operator's defaults.
fn operator_settings(live: &crate::cli::LiveArgs) -> Result<model::Settings> {
    match &live.operator_settings {
        Some(path) => read_settings(path),
        None => Ok(model::Settings::default()),
    }
}

/// An operator-settings file. Every key must be a setting: a typo in a real cluster's settings
/// (`mixedOnNode` for `mixed_on_node`) would otherwise leave that setting at its default and
/// the verdicts judged against a cluster the file does not describe.
fn read_settings(path: &Path) -> Result<model::Settings> {
    let mut unknown = Vec::new();
    let settings: model::Settings = read_json_with(path, |key| unknown.push(key))?;
    if unknown.is_empty() {
        return Ok(settings);
    }
    let known = serde_json::to_value(model::Settings::default())
        .ok()
        .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()))
        .unwrap_or_default();
    Err(UsageError(format!(
        "{}: unknown setting(s) {}; the settings are {}",
        path.display(),
        unknown
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", "),
        known.join(", ")
    ))
    .into())
}

/// A JSON file as `T`; errors name the file, the line and the field serde stopped at.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    read_json_with(path, |_| {})
}

/// [`read_json`], handing each key `T` does not know (as its path, `a.b`) to `ignored`.
fn read_json_with<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut ignored: impl FnMut(String),
) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let mut note = |p: serde_ignored::Path<'_>| ignored(p.to_string());
    let de = serde_ignored::Deserializer::new(de, &mut note);
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
