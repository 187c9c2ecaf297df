//! The log on stderr (`-v`, `-q`, `RUST_LOG`): tracing events of verify and of the crates it
//! uses (kube-rs logs each request at debug), through one `tracing-subscriber` formatter.
//! Logging is for diagnosis; what a command reports stays on stdout (`outln!`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the subscriber: `RUST_LOG` when set (its bad directives are skipped), else the
/// filter `-v`/`-q` chose ([`crate::cli::Cli::ui`]).
pub fn init(ui: &crate::cli::Ui) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            EnvFilter::builder().parse_lossy(directives)
        }
        _ => EnvFilter::builder().parse_lossy(&ui.log_filter),
    };
    // a second subscriber (none is set elsewhere) would be refused: logging is then off
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
