//! Command-line arguments. Parsing only: every command becomes a plain config for dispatch.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Verifier for the GPUStack operator's scheduling chain.
#[derive(Debug, Parser)]
#[command(name = "verify", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the model against the operator's conformance vectors (one line per file,
    /// then `N passed, M failed`). Exit 1 on a failed vector, 2 on a malformed file.
    Conformance {
        /// Folder of `*.json` vector files.
        #[arg(default_value = "../shared/conformance")]
        dir: PathBuf,
    },
    /// Derive every object of the chain for a cluster shape and print it.
    /// Without `--cluster`, the embedded walkthrough cluster is used.
    Derive {
        /// A cluster shape as JSON (nodes, namespaces, settings, instance_types).
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}
