//! One function per command; each returns the process exit code (DESIGN.md "Exit codes").

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{Command, Format};

/// Bad input or a missing required input: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn dispatch(command: Command) -> Result<i32> {
    match command {
        Command::Conformance { dir } => conformance(&dir),
        Command::Derive { cluster, format } => derive(cluster.as_deref(), format),
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
