//! The commands that need no server: conformance, derive, report, replay, mutants, check.

use super::*;

pub(super) fn conformance(dir: &Path) -> Result<Outcome> {
    let report = conformance::run_dir(dir).map_err(|e| UsageError(e.to_string()))?;
    out!("{}", report.render());
    Ok(report.outcome())
}

pub(super) fn derive(cluster: Option<&Path>, format: Format) -> Result<Outcome> {
    let cluster = match cluster {
        None => {
            // Announced first; on stderr for JSON so the document stays parseable.
            let note = "cluster: embedded walkthrough (research/chain.md §15)";
            match format {
                Format::Table => outln!("{note}"),
                Format::Json => eprintln!("{note}"),
            }
            model::examples::walkthrough()
        }
        Some(path) => read_cluster(path)?,
    };
    let derived = model::derive::derive(&cluster);
    match format {
        Format::Table => out!("{}", reports::derived_table(&derived)),
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&derived).context("rendering the derivation as JSON")?
        ),
    }
    Ok(Outcome::Held)
}

/// `verify report RUN_DIR`: re-render what a run directory holds.
pub(super) fn report(
    run_dir: &Path,
    format: reports::ReportFormat,
    output: Option<&Path>,
) -> Result<Outcome> {
    let run = reports::load_run(run_dir).map_err(|e| UsageError(e.to_string()))?;
    let text = reports::render_run(&run, format).map_err(|e| anyhow::anyhow!("{e}"))?;
    write_or_print(&text, output)
}

/// The first line of `verify fuzz` and `verify mutants`: where the chain is checked.
/// `verify replay FILE`: run the scenario, check every property and its expectations. A
/// recorded `twin-matches-model` violation is judged where it was found: on a fresh embedded
/// twin, under the mutant the scenario records (a model-tier mutant's `mutant-NAME` the
/// oracle replays itself).
pub(super) fn replay(file: &Path) -> Result<Outcome> {
    let s = scenario::load(file).map_err(|e| UsageError(e.to_string()))?;
    if s.is_vacuous() {
        outln!(
            "NOTHING WAS VERIFIED: {} has no nodes, InstanceTypes, events or expectations",
            file.display()
        );
        return Ok(Outcome::NothingVerified);
    }
    let mut check = oracle::replay(&s);
    for (property, reproduced) in &mut check.recorded {
        if property == tier::TWIN_PROPERTY {
            let mutant = fuzz::recorded_mutant(&s)
                .map_or("the reference operator".to_string(), |m| {
                    format!("mutant {m}")
                });
            outln!("replaying on an embedded twin running {mutant}");
            let divergence = fuzz::replay_on_twin(&s)
                .map_err(|e| anyhow::anyhow!("replaying on the twin: {e}"))?;
            if let Some(d) = &divergence {
                outln!("{}", d.message);
            }
            *reproduced = divergence.is_some();
        }
    }
    out!("{}", check.render());
    Ok(if check.held() {
        Outcome::Held
    } else {
        Outcome::Failed
    })
}

/// `verify report RUN_DIR --finding SIG --format issue`: one finding as an issue for the
/// operator's tracker, its minimal cluster rendered by the twin's own converters.
pub(super) fn issue_report(
    run_dir: &Path,
    sig: &str,
    known: &Path,
    output: Option<&Path>,
) -> Result<Outcome> {
    let run = reports::load_run(run_dir).map_err(|e| UsageError(e.to_string()))?;
    let ledger = reports::Ledger::load(known).map_err(|e| UsageError(e.to_string()))?;
    let signature =
        reports::Ledger::resolve(sig, run.summary.findings.iter().map(|f| &f.signature))
            .map_err(|e| UsageError(format!("{}: {e}", run_dir.display())))?;
    let finding = run
        .summary
        .findings
        .iter()
        .find(|f| f.signature == signature)
        .ok_or_else(|| UsageError(format!("{}: no finding {signature}", run_dir.display())))?;
    let scenario_file = run_dir.join(&finding.smallest.scenario);
    let scenario = scenario::load(&scenario_file).map_err(|e| UsageError(e.to_string()))?;
    let manifests = fuzz::cluster_manifests(&scenario).map_err(|e| anyhow::anyhow!(e))?;
    let message = run
        .summary
        .counterexamples
        .iter()
        .find(|c| c.seed == finding.smallest.seed)
        .map(|c| c.message.clone())
        .unwrap_or_default();
    let rows: Vec<reports::counterexample::DivergenceRow> = run
        .rows
        .iter()
        .filter(|r| r.seed == finding.smallest.seed)
        .cloned()
        .collect();
    let text = reports::findings::issue_markdown(&reports::findings::IssueInput {
        finding,
        known: ledger.get(&signature),
        scenario_path: scenario_file.display().to_string(),
        run_dir: run_dir.display().to_string(),
        message,
        why: reports::why::why_of_rows(&scenario, &rows, &signature),
        rows,
        manifests: &manifests,
    })
    .map_err(|e| anyhow::anyhow!("rendering the issue: {e}"))?;
    write_or_print(&text, output)
}

/// `verify mutants --list -o json`: the catalog.
#[derive(serde::Serialize)]
struct MutantsJson {
    mutants: Vec<MutantJson>,
}

/// One mutant: its name (`--mutant NAME`) and the bug it injects.
#[derive(serde::Serialize)]
struct MutantJson {
    name: &'static str,
    description: &'static str,
}

/// `verify mutants --list`: each mutant's name and what it does, as a table or JSON.
pub(super) fn list_mutants(format: OutputFormat) -> Outcome {
    use model::mutants::Mutant;
    match format {
        OutputFormat::Table => {
            for m in Mutant::ALL {
                outln!("{:<32} {}", m.name(), m.describe());
            }
        }
        OutputFormat::Json => {
            let doc = MutantsJson {
                mutants: Mutant::ALL
                    .iter()
                    .map(|m| MutantJson {
                        name: m.name(),
                        description: m.describe(),
                    })
                    .collect(),
            };
            // plain strings only: serialising cannot fail
            outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        }
    }
    Outcome::Held
}

/// `verify mutants`: the kill table over `seeds` seeds per mutant.
pub(super) fn mutants(seeds: u64, jobs: usize, tier: Tier) -> Result<Outcome> {
    use model::mutants::Mutant;
    outln!("{}", tier.banner());
    outln!("each mutant fuzzed for up to {seeds} seeds");
    outln!(
        "{:<32} {:>8} {:>6} {:>7}  property",
        "MUTANT",
        "SEED",
        "NODES",
        "EVENTS"
    );
    let mut survivors = 0;
    for m in Mutant::ALL {
        let config = fuzz::FuzzConfig {
            tier,
            seeds,
            jobs,
            mutant: Some(m),
            stop_at_first: true,
            ..fuzz::FuzzConfig::default()
        };
        let report = fuzz::run(&config, &|_, _| {}).map_err(|e| anyhow::anyhow!(e))?;
        match report.failures.first() {
            Some(f) => outln!(
                "{:<32} {:>8} {:>6} {:>7}  killed",
                m.name(),
                f.seed,
                f.nodes(),
                f.events()
            ),
            None => {
                survivors += 1;
                outln!(
                    "{:<32} {:>8} {:>6} {:>7}  SURVIVED",
                    m.name(),
                    "-",
                    "-",
                    "-"
                );
            }
        }
    }
    outln!(
        "{} killed, {} survived",
        Mutant::ALL.len() - survivors,
        survivors
    );
    Ok(if survivors == 0 {
        Outcome::Held
    } else {
        Outcome::Failed
    })
}

/// `verify check`: explore the scope, print the report, write a counterexample scenario.
pub(super) fn check(args: CheckArgs) -> Result<Outcome> {
    let report = generators::check::run_check(&args.check_config())
        .map_err(|e| UsageError(e.to_string()))?;
    out!("{}", report.render());
    if let Some((property, cx)) = report.first_violation() {
        let dir = scenario::RunDir::create_now(&args.run_dir).with_context(|| {
            format!("creating a run directory under {}", args.run_dir.display())
        })?;
        let path = dir
            .write_counterexample(0, property, &cx.scenario, &cx.steps.join("\n"))
            .context("writing the counterexample scenario")?;
        outln!("counterexample scenario: {}", path.display());
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Held)
}

/// `text` into `output` (its path printed), or onto stdout.
fn write_or_print(text: &str, output: Option<&Path>) -> Result<Outcome> {
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
            outln!("{}", path.display());
        }
        None => out!("{text}"),
    }
    Ok(Outcome::Held)
}
