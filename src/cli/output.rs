//! The conventions every command shares: how much is logged on stderr (`-v`, `-q`,
//! `RUST_LOG`) and whether a progress bar is drawn. Resolved here, without I/O, into plain
//! values `main.rs` and the commands use.

use super::*;

/// The crates of this workspace: the targets `-v`/`-q` set the level of.
const OUR_CRATES: [&str; 14] = [
    "verify",
    "model",
    "conformance",
    "reports",
    "generators",
    "scenario",
    "oracle",
    "fuzz",
    "live",
    "soak",
    "cases",
    "chart",
    "tier",
    "outcome",
];

/// How a command talks besides its output: the log filter and whether progress is drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ui {
    /// An `EnvFilter` directive for stderr's log, unless `RUST_LOG` is set (it wins).
    pub log_filter: String,
    /// Draw progress bars (off with `-q`).
    pub progress: bool,
}

impl Cli {
    /// `-q`/`-v…` resolved. Our crates log warnings by default, errors only with `-q`, and
    /// info, debug, trace with `-v`, `-vv`, `-vvv`; other crates (kube-rs, hyper) are silent
    /// unless asked: their failures reach the user as our errors. `-vv` shows kube-rs's
    /// requests (debug), `-vvv` everything.
    pub fn ui(&self) -> Ui {
        let (ours, theirs) = match (self.quiet, self.verbose) {
            (true, _) => ("error", "off"),
            (false, 0) => ("warn", "off"),
            (false, 1) => ("info", "warn"),
            (false, 2) => ("debug", "debug"),
            (false, _) => ("trace", "trace"),
        };
        let mut log_filter = theirs.to_string();
        for krate in OUR_CRATES {
            log_filter.push_str(&format!(",{krate}={ours}"));
        }
        Ui {
            log_filter,
            progress: !self.quiet,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(line: &str) -> Cli {
        let argv = std::iter::once("verify").chain(line.split_whitespace());
        Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("`verify {line}`: {e}"))
    }

    #[test]
    fn verbosity_sets_our_level_and_quiet_hides_progress() {
        for (line, ours, theirs, progress) in [
            ("cases", "verify=warn", "off,", true),
            ("-q cases", "verify=error", "off,", false),
            ("cases -v", "verify=info", "warn,", true),
            ("-vv cases", "live=debug", "debug,", true),
            ("--verbose -v -v cases", "outcome=trace", "trace,", true),
        ] {
            let ui = cli(line).ui();
            assert!(ui.log_filter.starts_with(theirs), "{line}: {ui:?}");
            assert!(ui.log_filter.contains(ours), "{line}: {ui:?}");
            assert_eq!(ui.progress, progress, "{line}");
        }
        let argv = ["verify", "-q", "-v", "cases"];
        assert!(Cli::try_parse_from(argv).is_err(), "-q and -v together");
    }
}
