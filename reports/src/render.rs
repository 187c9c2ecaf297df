//! `verify report RUN_DIR`: reads what a run directory holds and renders it as Markdown, JSON,
//! CSV, JUnit XML or one static offline HTML page (plots inlined). Reads only inside the run
//! directory it is given; a missing or malformed file is an error naming it.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::counterexample::{DivergenceRow, CSV_HEADER};
use crate::record::{ReportError, DIVERGENCES_FILE, SUMMARY_FILE};
use crate::summary::{CounterexampleEntry, RunSummary};

/// What `verify report` can print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    Md,
    Json,
    Csv,
    Junit,
    Html,
    /// One finding as an issue for the operator's tracker (`--finding SIG`; needs the
    /// cluster's manifests, which the caller renders: [`crate::findings::issue_markdown`]).
    Issue,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 6] = [
        ReportFormat::Md,
        ReportFormat::Json,
        ReportFormat::Csv,
        ReportFormat::Junit,
        ReportFormat::Html,
        ReportFormat::Issue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Md => "md",
            ReportFormat::Json => "json",
            ReportFormat::Csv => "csv",
            ReportFormat::Junit => "junit",
            ReportFormat::Html => "html",
            ReportFormat::Issue => "issue",
        }
    }

    /// Reads a format name; the error lists the names.
    pub fn parse(s: &str) -> Result<ReportFormat, UnknownFormat> {
        ReportFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// A report format name that is none of [`ReportFormat::ALL`]; the message lists the names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format `{0}`: expected {names}", names = ReportFormat::ALL.map(ReportFormat::name).join(", "))]
pub struct UnknownFormat(pub String);

/// One counterexample with its report's text (`None` when the report file is missing).
#[derive(Clone, Debug)]
pub struct LoadedCounterexample {
    pub entry: CounterexampleEntry,
    pub markdown: Option<String>,
}

/// Everything a run directory holds, read back.
#[derive(Clone, Debug)]
pub struct LoadedRun {
    pub path: PathBuf,
    pub summary: RunSummary,
    pub rows: Vec<DivergenceRow>,
    pub counterexamples: Vec<LoadedCounterexample>,
    /// (relative path, SVG text) of each plot found.
    pub plots: Vec<(String, String)>,
}

fn read(path: &Path) -> Result<String, ReportError> {
    fs::read_to_string(path).map_err(|e| ReportError::Read {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

/// Reads a run directory: `summary.json` (required), `divergences.csv`, the counterexample
/// reports and the plots the summary lists.
pub fn load_run(path: &Path) -> Result<LoadedRun, ReportError> {
    let summary_path = path.join(SUMMARY_FILE);
    let text = read(&summary_path)?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let mut summary: RunSummary =
        serde_path_to_error::deserialize(de).map_err(|e| ReportError::Read {
            path: summary_path.clone(),
            why: format!("field `{}`: {}", e.path(), e.inner()),
        })?;
    summary.settle_if_gone();
    let csv_path = path.join(DIVERGENCES_FILE);
    let rows = if csv_path.exists() {
        let mut reader = csv::Reader::from_path(&csv_path).map_err(|e| ReportError::Read {
            path: csv_path.clone(),
            why: e.to_string(),
        })?;
        reader
            .deserialize()
            .collect::<Result<Vec<DivergenceRow>, _>>()
            .map_err(|e| ReportError::Read {
                path: csv_path.clone(),
                why: e.to_string(),
            })?
    } else {
        Vec::new()
    };
    let inside = |rel: &str| -> Option<PathBuf> {
        let p = Path::new(rel);
        p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
            .then(|| path.join(p))
    };
    let counterexamples = summary
        .counterexamples
        .iter()
        .map(|entry| LoadedCounterexample {
            entry: entry.clone(),
            markdown: inside(&entry.report).and_then(|p| fs::read_to_string(p).ok()),
        })
        .collect();
    let plots = summary
        .plots
        .iter()
        .filter_map(|rel| {
            let text = fs::read_to_string(inside(rel)?).ok()?;
            Some((rel.clone(), text))
        })
        .collect();
    Ok(LoadedRun {
        path: path.to_path_buf(),
        summary,
        rows,
        counterexamples,
        plots,
    })
}

/// Renders a loaded run in `format`.
pub fn render_run(run: &LoadedRun, format: ReportFormat) -> Result<String, ReportError> {
    match format {
        ReportFormat::Md => Ok(markdown(run)),
        ReportFormat::Json => serde_json::to_string_pretty(&run.summary)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(|source| ReportError::Json {
                what: "summary as JSON",
                source,
            }),
        ReportFormat::Csv => csv_text(&run.rows),
        ReportFormat::Junit => junit_xml(&run.summary),
        ReportFormat::Html => Ok(html(run)),
        ReportFormat::Issue => Err(ReportError::IssueNeedsFinding),
    }
}

/// `divergences.csv` bytes: the header line (when asked) and one line per row.
pub(crate) fn csv_bytes(rows: &[DivergenceRow], header: bool) -> Result<Vec<u8>, ReportError> {
    let error = |e: csv::Error| csv_error(e);
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    if header {
        w.write_record(CSV_HEADER).map_err(error)?;
    }
    for row in rows {
        w.serialize(row).map_err(error)?;
    }
    w.into_inner().map_err(csv_error)
}

fn csv_error(e: impl std::error::Error + Send + Sync + 'static) -> ReportError {
    ReportError::Csv {
        source: Box::new(e),
    }
}

fn csv_text(rows: &[DivergenceRow]) -> Result<String, ReportError> {
    String::from_utf8(csv_bytes(rows, true)?).map_err(csv_error)
}

/// A rate with two significant decimals below 10/s, whole numbers above.
fn rate(per_second: f64) -> String {
    if per_second < 10.0 {
        format!("{per_second:.2}")
    } else {
        format!("{per_second:.0}")
    }
}

/// The run's key facts as (label, value) rows, shared by every rendering.
pub fn summary_rows(s: &RunSummary) -> Vec<(&'static str, String)> {
    let f = &s.figures;
    let mut rows = vec![
        ("run", s.run_id.clone()),
        ("command", s.command.clone()),
        ("tier", s.tier.clone()),
    ];
    if let Some(c) = &s.context {
        rows.push(("context", c.clone()));
    }
    let versions: Vec<String> = s.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
    rows.extend([
        ("versions", versions.join(", ")),
        (
            "seeds",
            format!(
                "{} judged of {} planned ({}{})",
                f.ran,
                s.seeds.planned,
                s.seeds.range,
                if s.seeds.regressions.is_empty() {
                    String::new()
                } else {
                    format!(", {} regression seed(s) first", s.seeds.regressions.len())
                }
            ),
        ),
        (
            "rate",
            format!(
                "{} scenarios/s ({} jobs, {:.2} s)",
                rate(f.scenarios_per_second),
                f.jobs,
                f.elapsed_seconds
            ),
        ),
        ("verdict", s.verdict.name().to_string()),
        ("counterexamples", f.failing.to_string()),
        (
            "findings",
            format!(
                "{} ({} known, {} new)",
                s.findings.len(),
                s.findings.iter().filter(|x| x.known).count(),
                s.findings.iter().filter(|x| !x.known).count()
            ),
        ),
    ]);
    for floor in &s.coverage_floors {
        rows.push((
            "coverage floor",
            format!(
                "{} {} (reached {})",
                floor.floor,
                if floor.met { "met" } else { "NOT MET" },
                floor.reached
            ),
        ));
    }
    rows
}

/// The run summary and coverage in Markdown, then every counterexample report.
fn markdown(run: &LoadedRun) -> String {
    let s = &run.summary;
    let mut out = format!("# verify run {}\n\n| | |\n|---|---|\n", s.run_id);
    for (label, value) in summary_rows(s) {
        let _ = writeln!(out, "| {label} | {} |", value.replace('|', "\\|"));
    }
    if !s.coverage.classes.is_empty() {
        out.push_str(
            "\n## Coverage\n\n| class | distinct | scenarios per value |\n|---|---|---|\n",
        );
        for (class, values) in &s.coverage.classes {
            let cells: Vec<String> = values.iter().map(|(v, n)| format!("{v}={n}")).collect();
            let _ = writeln!(out, "| {class} | {} | {} |", values.len(), cells.join(", "));
        }
    }
    if run.counterexamples.is_empty() {
        out.push_str("\nNo counterexamples.\n");
    }
    for cx in &run.counterexamples {
        out.push_str("\n---\n\n");
        match &cx.markdown {
            Some(md) => out.push_str(md),
            None => {
                let _ = writeln!(
                    out,
                    "# Counterexample: seed {} — `{}`\n\n(report {} is missing)",
                    cx.entry.seed, cx.entry.property, cx.entry.report
                );
            }
        }
    }
    out
}

/// JUnit XML: one test case per property the run checked (failing with the seeds that broke
/// it) and one per coverage floor.
pub fn junit_xml(s: &RunSummary) -> Result<String, ReportError> {
    let mut suite = TestSuite::new(format!("verify {} {}", s.tier, s.run_id));
    let mut properties: Vec<String> = if s.tier == "model" || s.tier == "twin" {
        oracle::properties::PROPERTIES
            .iter()
            .map(|p| p.to_string())
            .collect()
    } else {
        Vec::new()
    };
    for cx in &s.counterexamples {
        if !properties.contains(&cx.property) {
            properties.push(cx.property.clone());
        }
    }
    for property in &properties {
        let failing: Vec<&CounterexampleEntry> = s
            .counterexamples
            .iter()
            .filter(|c| &c.property == property)
            .collect();
        let status = match failing.first() {
            None => TestCaseStatus::success(),
            Some(first) => {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let seeds: Vec<String> = failing.iter().map(|c| c.seed.to_string()).collect();
                st.set_message(format!("seed(s) {}: {}", seeds.join(", "), first.message));
                st.set_type("counterexample");
                let replays: Vec<String> = failing
                    .iter()
                    .map(|c| {
                        format!(
                            "verify replay {}",
                            Path::new(&s.path).join(&c.scenario).display()
                        )
                    })
                    .collect();
                st.set_description(replays.join("\n"));
                st
            }
        };
        let mut case = TestCase::new(property.clone(), status);
        case.set_classname(format!("verify.{}", s.tier));
        suite.add_test_case(case);
    }
    for floor in &s.coverage_floors {
        let status = if floor.met {
            TestCaseStatus::success()
        } else {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_message(format!("reached {}", floor.reached));
            st.set_type("coverage");
            st
        };
        let mut case = TestCase::new(format!("coverage {}", floor.floor), status);
        case.set_classname("verify.coverage");
        suite.add_test_case(case);
    }
    let mut report = Report::new("verify");
    report.set_time(std::time::Duration::from_secs_f64(
        s.figures.elapsed_seconds.max(0.0),
    ));
    report.add_test_suite(suite);
    report.to_string().map_err(ReportError::Junit)
}

fn escape(s: &str) -> String {
    let mut out = String::new();
    let _ = pulldown_cmark_escape::escape_html(&mut out, s);
    out
}

/// Markdown to HTML with tables; image lines are dropped (the page inlines the plots).
fn markdown_html(md: &str) -> String {
    let kept: Vec<&str> = md
        .lines()
        .filter(|l| !l.trim_start().starts_with("!["))
        .collect();
    let text = kept.join("\n");
    let parser = pulldown_cmark::Parser::new_ext(&text, pulldown_cmark::Options::ENABLE_TABLES);
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, parser);
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:70em;margin:1em auto;padding:0 1em}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;\
text-align:left;vertical-align:top}code{background:#f4f4f4}.failed,.coverage-unmet{color:#b00}\
.held{color:#070}svg{max-width:100%;height:auto}";

/// One static page: summary, coverage (table and plot), every counterexample with its chart.
/// No script, no external resource: it renders offline.
fn html(run: &LoadedRun) -> String {
    let s = &run.summary;
    let plot = |rel: &str| {
        run.plots
            .iter()
            .find(|(p, _)| p == rel)
            .map(|(_, svg)| svg.clone())
    };
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>verify run {}</title>\
         <style>{STYLE}</style></head><body>\n<h1>verify run {}</h1>\n<section id=\"summary\">\
         <h2>Summary</h2><table>\n",
        escape(&s.run_id),
        escape(&s.run_id)
    );
    for (label, value) in summary_rows(s) {
        let class = if label == "verdict" {
            format!(" class=\"{}\"", s.verdict.name())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<tr><th>{label}</th><td{class}>{}</td></tr>",
            escape(&value)
        );
    }
    out.push_str("</table></section>\n");
    if !s.coverage.classes.is_empty() {
        out.push_str("<section id=\"coverage\"><h2>Coverage</h2><table><tr><th>class</th><th>distinct</th><th>scenarios per value</th></tr>\n");
        for (class, values) in &s.coverage.classes {
            let cells: Vec<String> = values.iter().map(|(v, n)| format!("{v}={n}")).collect();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(class),
                values.len(),
                escape(&cells.join(", "))
            );
        }
        out.push_str("</table>\n");
        if let Some(svg) = plot(crate::record::COVERAGE_PLOT) {
            out.push_str(&svg);
        }
        out.push_str("</section>\n");
    }
    out.push_str("<section id=\"counterexamples\"><h2>Counterexamples</h2>\n");
    if run.counterexamples.is_empty() {
        out.push_str("<p>No counterexamples.</p>\n");
    }
    for cx in &run.counterexamples {
        let _ = writeln!(out, "<article id=\"seed-{}\">", cx.entry.seed);
        match &cx.markdown {
            Some(md) => out.push_str(&markdown_html(md)),
            None => {
                let _ = writeln!(
                    out,
                    "<h3>seed {} — {}</h3><p>report {} is missing</p>",
                    cx.entry.seed,
                    escape(&cx.entry.property),
                    escape(&cx.entry.report)
                );
            }
        }
        if let Some(svg) = cx.entry.plot.as_deref().and_then(plot) {
            out.push_str(&svg);
        }
        out.push_str("</article>\n");
    }
    out.push_str("</section>\n</body></html>\n");
    out
}
