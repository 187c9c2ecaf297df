//! Run directories built here from fixture runs (the walkthrough cluster under a mutant, and a
//! property violation), then read back and rendered in every format; the tests check the
//! content: field values in Markdown, CSV, JUnit and JSON, bar heights in the SVG charts, the
//! summary in the HTML (in headless Chromium when one is installed).

use std::fs;
use std::path::Path;
use std::process::Command;

use model::events::Event;
use model::mutants::Mutant;
use model::scenario::Scenario;
use reports::plots::{EXPECTED_COLOUR, OBSERVED_COLOUR};
use reports::{
    check_floors, load_run, parse_floors, render_run, Counterexample, Coverage, Figures,
    ReportFormat, RunRecorder, RunSummary, Seeds, Verdict,
};
use scenario::RunDir;

const MUTANT: Mutant = Mutant::SharedOnceMaxInShares;

fn walkthrough_with_a_submission() -> Scenario {
    let cluster = model::examples::walkthrough();
    let pool = model::derive::derive(&cluster).instance_types[0]
        .name
        .clone();
    Scenario {
        name: "fixture".into(),
        seed: Some(7),
        cluster,
        events: vec![Event::Submit {
            workload: model::examples::workload("infer", &pool, 1, &[("nvidia.com/gpu", "1")]),
        }],
        ..Scenario::default()
    }
}

/// The mutant fixture: the walkthrough against the same scenario under `MUTANT`.
fn mutant_counterexample() -> Counterexample {
    let s = walkthrough_with_a_submission();
    let mut mutated = s.clone();
    mutated.cluster.settings.mutant = Some(MUTANT);
    Counterexample::violation(7, &format!("mutant-{MUTANT}"), "diverges", s, 3).against(&mutated)
}

fn violation_counterexample() -> Counterexample {
    let mut s = walkthrough_with_a_submission();
    s.events.clear();
    Counterexample::violation(
        9,
        "accounting",
        "quota = capacity: expected 4000, observed 3000",
        s,
        0,
    )
}

fn start(base: &Path) -> RunRecorder {
    let dir = RunDir::create(base, "20261130T000000Z-fixture").unwrap();
    let summary = RunSummary::start(
        "ignored",
        "verify fuzz --seeds 10",
        "model",
        Seeds {
            planned: 10,
            range: "0..10".into(),
            regressions: vec![7],
        },
    );
    RunRecorder::start(dir, summary).unwrap()
}

fn coverage() -> Coverage {
    let mut c = Coverage::default();
    c.observe([
        ("vendors", "nvidia".to_string()),
        ("modes", "None".to_string()),
        ("nodes", "3".to_string()),
    ]);
    c.observe([("vendors", "amd".to_string()), ("nodes", "1".to_string())]);
    c
}

/// `height` of every `<rect>` filled with `colour`, in document order.
fn bar_heights(svg: &str, colour: plotters::style::RGBColor) -> Vec<u32> {
    let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", colour.0, colour.1, colour.2);
    svg.split("<rect")
        .skip(1)
        .filter(|r| r.split('>').next().is_some_and(|tag| tag.contains(&fill)))
        .map(|r| {
            let h = r.split("height=\"").nth(1).unwrap();
            h[..h.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

/// The trimmed text of every `<text>` element.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim().to_string()
        })
        .collect()
}

#[test]
fn a_four_view_divergence_is_recorded_with_its_report_rows_and_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = start(tmp.path());
    let run = rec.path().to_path_buf();
    // The summary is on disk from the start.
    let early: RunSummary =
        serde_json::from_str(&fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(early.verdict, Verdict::Running);
    assert_eq!(early.run_id, "20261130T000000Z-fixture");

    let cx = mutant_counterexample();
    let d = cx.divergence.clone().expect("the mutant diverges");
    assert!(!cx.views.is_empty(), "SH once-max differs in some pool");
    let yaml = rec.record(&cx).unwrap();
    assert_eq!(yaml, run.join("counterexamples/7.yaml"));
    assert_eq!(scenario::load(&yaml).unwrap(), cx.scenario);

    // The report: property, replay command, the scenario table, the first divergent step and
    // each differing field with both values.
    let md = fs::read_to_string(run.join("counterexamples/7.md")).unwrap();
    assert!(md.starts_with(&format!("# Counterexample: seed 7 — `mutant-{MUTANT}`")));
    assert!(
        md.contains(&format!("`verify replay {}`", yaml.display())),
        "{md}"
    );
    let nodes = cx.scenario.cluster.nodes.len();
    assert!(
        md.contains(&format!("Shrunk in 3 step(s) to {nodes} node(s), ")),
        "{md}"
    );
    for node in &cx.scenario.cluster.nodes {
        assert!(md.contains(&format!("| {} |", node.name)), "{md}");
    }
    assert!(
        md.contains("| 0 | submit | default/infer 1×nvidia.com/gpu=1 |"),
        "{md}"
    );
    assert!(
        md.contains(&format!("## First divergent step: {}", d.step)),
        "{md}"
    );
    for x in &d.differences {
        let row = format!(
            "| {} {} | {} | {} | {} |",
            x.kind,
            x.name,
            x.field,
            x.expected.as_deref().unwrap_or("(absent)"),
            x.observed.as_deref().unwrap_or("(absent)")
        );
        assert!(md.contains(&row), "missing {row} in {md}");
    }
    assert!(md.contains("](../plots/7-views.svg)"), "{md}");

    // The chart: per pool, view and figure one expected and one observed bar, their heights
    // ordered like the values.
    let svg = fs::read_to_string(run.join("plots/7-views.svg")).unwrap();
    let (exp, obs) = (
        bar_heights(&svg, EXPECTED_COLOUR),
        bar_heights(&svg, OBSERVED_COLOUR),
    );
    assert_eq!(exp.len(), 12 * cx.views.len());
    assert_eq!(obs.len(), exp.len());
    let sh = &cx.views[0];
    let (e, o) = (
        sh.expected.shared.once_max_request,
        sh.observed.shared.once_max_request,
    );
    assert_ne!(e, o, "the mutant changes SH once-max");
    // Panel 1 (SH), figure 2 (onceMax).
    assert_eq!(exp[5].cmp(&obs[5]), e.cmp(&o), "{svg}");
    assert_eq!(exp[3], obs[3], "SH capacity agrees");
    let texts = svg_texts(&svg);
    assert!(texts.contains(&o.to_string()), "{texts:?}");
    assert!(texts.contains(&format!("SH {}", sh.instance_type)));

    // One CSV row per differing field, written as found.
    let csv = fs::read_to_string(run.join("divergences.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "seed,property,step,kind,name,field,expected,observed"
    );
    assert_eq!(lines.len(), 1 + d.differences.len());
    assert!(lines[1].starts_with(&format!("7,mutant-{MUTANT},{},", d.step)));

    // The summary now lists it; the run is still running.
    let mid: RunSummary =
        serde_json::from_str(&fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(mid.verdict, Verdict::Running);
    assert_eq!(mid.counterexamples.len(), 1);
    assert_eq!(mid.counterexamples[0].scenario, "counterexamples/7.yaml");
    assert_eq!(
        mid.counterexamples[0].plot.as_deref(),
        Some("plots/7-views.svg")
    );
    assert_eq!(mid.counterexamples[0].first_divergent_step, Some(d.step));
}

#[test]
fn a_run_killed_before_it_finished_still_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let run = {
        let rec = start(tmp.path());
        rec.record(&violation_counterexample()).unwrap();
        rec.path().to_path_buf()
        // Dropped without finish(): what a killed run leaves.
    };
    let loaded = load_run(&run).unwrap();
    assert_eq!(loaded.summary.verdict, Verdict::Running);
    let md = render_run(&loaded, ReportFormat::Md).unwrap();
    assert!(md.contains("| verdict | running |"), "{md}");
    assert!(
        md.contains("# Counterexample: seed 9 — `accounting`"),
        "{md}"
    );
    // the oracle's words in a fenced block, not a blockquote (which collapsed its tables)
    assert!(
        md.contains("```text\nquota = capacity: expected 4000, observed 3000\n```"),
        "{md}"
    );
    assert!(!run.join("junit.xml").exists());
}

#[test]
fn a_finished_run_renders_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = start(tmp.path());
    rec.record(&mutant_counterexample()).unwrap();
    rec.record(&violation_counterexample()).unwrap();
    let floors = parse_floors("vendors=2,modes:Shared=1").unwrap();
    let checks = check_floors(&coverage(), &floors);
    let summary = rec
        .finish(
            Figures {
                ran: 10,
                failing: 0,
                elapsed_seconds: 0.5,
                scenarios_per_second: 20.0,
                jobs: 2,
            },
            coverage(),
            checks,
        )
        .unwrap();
    assert_eq!(summary.verdict, Verdict::Failed);
    assert_eq!(summary.figures.failing, 2);
    let run = rec.path().to_path_buf();
    let loaded = load_run(&run).unwrap();

    // JSON: the summary as written.
    let json: serde_json::Value =
        serde_json::from_str(&render_run(&loaded, ReportFormat::Json).unwrap()).unwrap();
    assert_eq!(json["verdict"], "failed");
    assert_eq!(json["figures"]["ran"], 10);
    assert_eq!(json["seeds"]["regressions"][0], 7);
    assert_eq!(json["coverage"]["classes"]["vendors"]["amd"], 1);
    assert_eq!(json["coverage_floors"][0]["met"], true);
    assert_eq!(json["coverage_floors"][1]["floor"], "modes:Shared=1");
    assert_eq!(json["coverage_floors"][1]["met"], false);
    assert_eq!(json["counterexamples"][1]["property"], "accounting");
    let cards: usize = violation_counterexample()
        .scenario
        .cluster
        .nodes
        .iter()
        .map(|n| reports::counterexample::node_shape(n).cards)
        .sum();
    assert!(cards > 0);
    assert_eq!(json["counterexamples"][1]["cards"], cards);

    // CSV: the violation's row carries its message.
    let csv = render_run(&loaded, ReportFormat::Csv).unwrap();
    assert!(csv.contains(
        "9,accounting,,Violation,accounting,,property holds,\"quota = capacity: expected 4000, observed 3000\""
    ), "{csv}");

    // JUnit: a case per property, failing ones with their seed; a case per floor.
    let junit = render_run(&loaded, ReportFormat::Junit).unwrap();
    assert_eq!(junit, fs::read_to_string(run.join("junit.xml")).unwrap());
    let case = |name: &str| {
        let start = junit
            .find(&format!("<testcase name=\"{name}\""))
            .unwrap_or_else(|| panic!("no case {name} in {junit}"));
        let end = junit[start..]
            .find("</testcase>")
            .map_or(junit.len(), |e| start + e);
        let self_closing = junit[start..].find("/>").map_or(usize::MAX, |e| start + e);
        junit[start..end.min(self_closing)].to_string()
    };
    assert!(case("accounting").contains("<failure message=\"seed(s) 9: quota = capacity"));
    assert!(case(&format!("mutant-{MUTANT}")).contains("seed(s) 7"));
    assert!(!case("invariance").contains("<failure"));
    assert!(case("coverage modes:Shared=1").contains("reached 0"));
    assert!(!case("coverage vendors=2").contains("<failure"));
    assert!(
        junit.contains("tests=\"9\"") && junit.contains("failures=\"3\""),
        "{junit}"
    );

    // Markdown: summary rows and both reports.
    let md = render_run(&loaded, ReportFormat::Md).unwrap();
    assert!(md.contains("| verdict | failed |"));
    assert!(
        md.contains("| rate | 20 scenarios/s (2 jobs, 0.50 s) |"),
        "{md}"
    );
    assert!(
        md.contains("| seeds | 10 judged of 10 planned (0..10, 1 regression seed(s) first) |"),
        "{md}"
    );
    assert!(
        md.contains("| coverage floor | modes:Shared=1 NOT MET (reached 0) |"),
        "{md}"
    );
    assert!(md.contains("| vendors | 2 | amd=1, nvidia=1 |"), "{md}");
    assert!(md.contains("seed 7") && md.contains("seed 9"));

    // Coverage plot: a bar per value.
    let svg = fs::read_to_string(run.join("plots/coverage.svg")).unwrap();
    let bars = bar_heights(&svg, reports::plots::COVERAGE_COLOUR);
    assert_eq!(bars.len(), 5, "{svg}");
    assert!(svg_texts(&svg).contains(&"amd: 1".to_string()));

    // HTML: one page, tables rendered, plots inline, nothing fetched.
    let html = render_run(&loaded, ReportFormat::Html).unwrap();
    assert!(
        html.contains("<th>verdict</th><td class=\"failed\">failed</td>"),
        "{html}"
    );
    assert!(html.contains("<article id=\"seed-7\">"));
    assert_eq!(html.matches("<svg").count(), 2, "coverage + the four views");
    assert!(html.contains("<td>status.views.shared"), "{html}");
    assert!(!html.contains("src=\"http") && !html.contains("<script"));
    let page = run.join("report.html");
    fs::write(&page, &html).unwrap();
    open_in_chromium(&page, &summary);

    // Terminal: the same facts; colour escapes only in the raw text.
    let raw = reports::terminal::summary_text(&summary);
    let plain = anstream::adapter::strip_str(&raw).to_string();
    assert!(raw.contains('\u{1b}'));
    assert!(!plain.contains('\u{1b}'));
    assert!(
        plain.contains("verdict") && plain.contains("failed"),
        "{plain}"
    );
    assert!(plain.contains("counterexamples/9.md"), "{plain}");
}

/// Loads the page in headless Chromium (Debian's `chromium`, or `$VERIFY_CHROMIUM`) and checks
/// the rendered DOM shows the summary; skipped with a reason when no browser is installed.
fn open_in_chromium(page: &Path, summary: &RunSummary) {
    let candidates = ["chromium", "chromium-browser", "google-chrome"];
    let browser = std::env::var("VERIFY_CHROMIUM").ok().or_else(|| {
        candidates
            .iter()
            .find(|c| {
                Command::new(c)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
            .map(|c| c.to_string())
    });
    let Some(browser) = browser else {
        println!("skipped: no chromium on PATH (set VERIFY_CHROMIUM to a browser binary)");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains(&format!("verify run {}", summary.run_id)),
        "chromium rendered no summary: {dom}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dom.contains("<td class=\"failed\">failed</td>"), "{dom}");
}

/// The known collision's committed scenario, signed by the oracle's own violation.
fn known_collision_counterexample() -> Option<Counterexample> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.verify/known/18137-accounting.yaml");
    let s = scenario::load(&path).unwrap();
    let v = oracle::check_all(&s)
        .into_iter()
        .find(|v| v.property == "accounting")?;
    Some(Counterexample::of_violation(18137, &v, s, 0))
}

#[test]
fn a_report_says_why_the_model_expects_its_value_in_markdown_and_html() {
    let Some(cx) = known_collision_counterexample() else {
        println!("skipped: the collision no longer reproduces (the ledger entry is stale)");
        return;
    };
    let md = reports::counterexample_markdown(&cx, "counterexamples/18137.yaml", None);
    let why: Vec<&str> = md
        .lines()
        .skip_while(|l| *l != "## Why the model expects this")
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(why.len() >= 3, "{md}");
    assert!(why[0].starts_with("1. "), "{md}");
    // the general-feature label behind the collision, the queue's refusal, each with its
    // model function and operator source
    assert!(
        why.iter()
            .any(|l| l.contains("general.feature.gpustack.ai/generic=true")
                && l.contains("`model::nodefeature::worker_node_labels_with_key`")
                && l.contains("ConstructNodeCapacityLabels")),
        "{md}"
    );
    assert!(
        why.iter()
            .any(|l| l.contains("OverlappingSelectors") && l.contains("node_queue.go")),
        "{md}"
    );
    // the same section on the HTML page: a list, and the table still a table
    let tmp = tempfile::tempdir().unwrap();
    let rec = start(tmp.path());
    rec.record(&cx).unwrap();
    let summary = rec
        .finish(
            Figures {
                ran: 1,
                failing: 0,
                elapsed_seconds: 0.1,
                scenarios_per_second: 10.0,
                jobs: 1,
            },
            coverage(),
            Vec::new(),
        )
        .unwrap();
    let loaded = load_run(rec.path()).unwrap();
    let html = render_run(&loaded, ReportFormat::Html).unwrap();
    assert!(
        html.contains("<h2>Why the model expects this</h2>"),
        "{html}"
    );
    assert!(html.contains("<ol>\n<li>"), "{html}");
    assert!(
        html.contains("<td>status.accelerator.capacity</td>"),
        "{html}"
    );
    // divergences.csv: the violation's row per field, not its message
    let csv = render_run(&loaded, ReportFormat::Csv).unwrap();
    assert!(
        csv.contains("18137,accounting,,InstanceType,gpustack--mthreads-mtt-s4000-linux-arm64,status.accelerator.capacity,0,4"),
        "{csv}"
    );
    let page = rec.path().join("report.html");
    fs::write(&page, &html).unwrap();
    open_in_chromium(&page, &summary);
}
