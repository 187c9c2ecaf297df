//! The compact summary printed at the end of `verify fuzz`. Colour goes through anstream,
//! which drops it when stdout is not a terminal, when `NO_COLOR` is set (or `CLICOLOR=0`),
//! so pipes, CI logs and files stay plain.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use crate::render::summary_rows;
use crate::summary::{RunSummary, Verdict};

fn verdict_style(v: Verdict) -> Style {
    let colour = match v {
        Verdict::Held | Verdict::Known => AnsiColor::Green,
        Verdict::Failed => AnsiColor::Red,
        Verdict::CoverageUnmet
        | Verdict::Running
        | Verdict::NothingVerified
        | Verdict::Interrupted => AnsiColor::Yellow,
    };
    Style::new().fg_color(Some(colour.into())).bold()
}

/// The summary rows, the counterexample table and the coverage table, with colour escapes
/// on the verdict and failures (strip them with `anstream::adapter::strip_str` or print
/// through [`print_summary`]).
pub fn summary_text(s: &RunSummary) -> String {
    let bold = Style::new().bold();
    let verdict = verdict_style(s.verdict);
    let mut out = String::new();
    let width = summary_rows(s)
        .iter()
        .map(|(l, _)| l.len())
        .max()
        .unwrap_or(0);
    for (label, value) in summary_rows(s) {
        let style = if label == "verdict" {
            verdict
        } else if label == "coverage floor" && value.contains("NOT MET") {
            verdict_style(Verdict::CoverageUnmet)
        } else {
            Style::new()
        };
        let _ = writeln!(
            out,
            "  {bold}{label:<width$}{bold:#}  {style}{value}{style:#}"
        );
    }
    if !s.counterexamples.is_empty() {
        let rows: Vec<Vec<String>> = s
            .counterexamples
            .iter()
            .map(|c| {
                vec![
                    c.seed.to_string(),
                    c.property.clone(),
                    c.nodes.to_string(),
                    c.cards.to_string(),
                    c.events.to_string(),
                    std::path::Path::new(&s.path)
                        .join(&c.report)
                        .display()
                        .to_string(),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&crate::table(
            &["SEED", "PROPERTY", "NODES", "CARDS", "EVENTS", "REPORT"],
            &rows,
        ));
    }
    if !s.findings.is_empty() {
        let _ = writeln!(
            out,
            "\n  {bold}findings{bold:#} ({} counterexample(s) folded by root cause)",
            s.counterexamples.len()
        );
        for f in &s.findings {
            let style = if f.known {
                Style::new()
            } else {
                verdict_style(Verdict::Failed)
            };
            let line = f.line();
            let path = std::path::Path::new(&s.path).join(&f.smallest.report);
            let _ = writeln!(out, "{style}{line}{style:#}");
            let _ = writeln!(
                out,
                "    signature {}\n    seeds {}; smallest: seed {} ({} node(s), {} event(s)) {}",
                f.signature,
                f.seeds
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                f.smallest.seed,
                f.smallest.nodes,
                f.smallest.events,
                path.display()
            );
        }
    }
    for sig in &s.possibly_fixed {
        let _ = writeln!(
            out,
            "possibly fixed: {sig} (its minimal scenario no longer reproduces; `verify findings retire` drops it)"
        );
    }
    if !s.coverage.classes.is_empty() {
        let _ = writeln!(
            out,
            "\n  {bold}coverage{bold:#} over {} scenarios",
            s.coverage.scenarios
        );
        out.push_str(&s.coverage.table());
    }
    out
}

/// Prints [`summary_text`] to stdout, coloured only on a terminal without `NO_COLOR`.
pub fn print_summary(s: &RunSummary) {
    use std::io::Write as _;
    let mut stdout = anstream::stdout();
    let _ = stdout.write_all(summary_text(s).as_bytes());
    let _ = stdout.flush();
}
