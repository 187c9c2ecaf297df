//! `verify`: parse the arguments, dispatch to one command, turn its result into an exit code.

/// Writes a line to stdout for a reader that may go away (`| head`, a closed pipe, a full
/// `/dev/full`): a failed write is dropped, never a panic, so a run goes on, finishes the
/// reports it writes and exits with its own verdict.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// [`outln!`] without the newline.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod chart_cmd;
mod cli;
mod commands;
mod live_run;
mod logging;

use clap::Parser;
use outcome::Outcome;

/// The model's derivations allocate many small strings: on jemalloc `verify fuzz --tier model`
/// runs 1.3x and a one-thread `verify check` 1.4x faster than on glibc's allocator, and a twin
/// soak holds less memory (docs/benchmarks.md, "Twelfth run"). Off with `--no-default-features`.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
mod jemalloc {
    #[global_allocator]
    static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

    /// jemalloc's compiled-in options (its `malloc_conf` string; `_RJEM_MALLOC_CONF` still
    /// wins): freed pages go back to the system after 1 s rather than 10 s. With the default a
    /// twin soak's RSS rose in bursts for as long as the decay (peak +27 % over the warm-up
    /// level against glibc's +10 %); at 1 s fuzz and check run as fast and a check holds 7 %
    /// less (docs/benchmarks.md, "Twelfth run").
    #[export_name = "_rjem_malloc_conf"]
    static CONF: Conf = Conf(c"dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr());

    /// The `const char *` jemalloc reads its options from.
    #[repr(transparent)]
    struct Conf(*const std::ffi::c_char);

    // SAFETY: the pointer is to a static, immutable C string.
    unsafe impl Sync for Conf {}
}

fn main() {
    let args = cli::Cli::parse();
    let ui = args.ui();
    logging::init(&ui);
    let outcome = match commands::dispatch(args.command, &ui) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("verify: {}", said_once(&e));
            e.downcast_ref::<commands::UsageError>()
                .map_or(Outcome::Inconclusive, |_| Outcome::Usage)
        }
    };
    std::process::exit(exit_code(outcome));
}

/// The error and its causes, each said once: a library error names its source in its own
/// message, so a cause whose text was already said is not repeated.
fn said_once(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1).map(ToString::to_string) {
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

/// DESIGN.md "Exit codes", the only place they are numbers (also `verify --help`,
/// [`cli::EXIT_CODES`]).
fn exit_code(outcome: Outcome) -> i32 {
    match outcome {
        Outcome::Held | Outcome::NothingVerified => 0,
        Outcome::Failed => 1,
        Outcome::Usage => 2,
        Outcome::Inconclusive => 3,
        Outcome::CoverageUnmet => 4,
        Outcome::Flaky => 5,
    }
}
