//! The conventions every command shares: how much is logged on stderr (`-v`, `-q`,
//! `RUST_LOG`), whether a progress bar is drawn, and `-o json` for the commands that print
//! tables. Resolved here, without I/O, into plain values `main.rs` and the commands use.

use super::*;

/// `-o/--output-format`: a command's table as text, or as one JSON document on stdout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Json,
}

/// The `-o/--output-format` option of a command that prints a table.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct OutputArgs {
    /// Print the table as text, or as one JSON document.
    #[arg(short = 'o', long = "output-format", value_enum, default_value_t)]
    pub format: OutputFormat,
}

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

    #[test]
    fn tables_take_output_format_json() {
        let json = |line: &str| match cli(line).command {
            Command::Cases(o) => o.format,
            Command::Mutants { output, .. } => output.format,
            Command::Findings {
                action: Some(FindingsCommand::List(o)),
                ..
            } => o.format,
            Command::Case(args) => match args.format {
                CaseFormat::Json => OutputFormat::Json,
                _ => OutputFormat::Table,
            },
            other => panic!("`verify {line}` parsed as {other:?}"),
        };
        assert_eq!(json("cases"), OutputFormat::Table);
        for line in [
            "cases -o json",
            "cases --output-format json",
            "mutants --list -o json",
            "findings list -o json",
            "case 14 -o json",
            "case 14 --output-format json",
            "case 14 --format json",
        ] {
            assert_eq!(json(line), OutputFormat::Json, "verify {line}");
        }
        let Command::Case(args) = cli("case 14 -o junit").command else {
            panic!("not case")
        };
        assert_eq!(args.format, CaseFormat::Junit);
    }
}
