//! `verify findings`: the ledger of known findings and the regression seeds.

use super::*;

/// `verify findings [list|accept SIG|retire SIG]`.
pub(super) fn findings(
    action: Option<crate::cli::FindingsCommand>,
    known: &Path,
    regressions: &Path,
) -> Result<Outcome> {
    use crate::cli::FindingsCommand;
    let mut ledger = reports::Ledger::load(known).map_err(|e| UsageError(e.to_string()))?;
    match action {
        None => {
            prune_regressions(regressions)?;
            list_ledger(&ledger, known);
            Ok(Outcome::Held)
        }
        Some(FindingsCommand::List(output)) => {
            match output.format {
                OutputFormat::Table => list_ledger(&ledger, known),
                OutputFormat::Json => outln!("{}", ledger_json(&ledger, known)?),
            }
            Ok(Outcome::Held)
        }
        Some(FindingsCommand::Retire { signature }) => {
            let sig =
                reports::Ledger::resolve(&signature, ledger.findings.iter().map(|f| &f.signature))
                    .map_err(|e| UsageError(format!("{}: {e}", known.display())))?;
            if let Some(gone) = ledger.retire(&sig) {
                ledger.save(known)?;
                outln!("retired {sig}: {}", gone.title);
                if !gone.scenario.is_empty() {
                    outln!(
                        "its scenario {} is kept (delete it with the entry's commit)",
                        gone.scenario
                    );
                }
            }
            Ok(Outcome::Held)
        }
        Some(FindingsCommand::Accept {
            signature,
            run,
            status,
            title,
            link,
            runs,
        }) => accept_finding(
            &mut ledger,
            known,
            &signature,
            run.as_deref(),
            &runs,
            status,
            title,
            link,
        ),
    }
}

/// Prints every ledger entry.
pub(super) fn list_ledger(ledger: &reports::Ledger, known: &Path) {
    for k in &ledger.findings {
        outln!("known ({}): {}", k.status, k.title);
        outln!("  signature  {}", k.signature);
        if !k.scenario.is_empty() {
            outln!("  scenario   {} (verify replay {})", k.scenario, k.scenario);
        }
        outln!("  first seen {}", k.first_seen);
        if !k.link.is_empty() {
            outln!("  link       {}", k.link);
        }
    }
    outln!(
        "{} known finding(s) in {}",
        ledger.findings.len(),
        known.display()
    );
}

/// `verify findings list -o json`: the ledger's entries and where it was read.
#[derive(serde::Serialize)]
struct LedgerJson<'a> {
    ledger: &'a Path,
    findings: &'a [reports::KnownFinding],
}

/// The ledger as one JSON document.
fn ledger_json(ledger: &reports::Ledger, known: &Path) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&LedgerJson {
        ledger: known,
        findings: &ledger.findings,
    })
}

/// `verify findings accept SIG`: a run's finding into the ledger (its smallest scenario
/// copied beside the ledger, in `known/`), or a new status for an entry already there.
#[allow(clippy::too_many_arguments)]
pub(super) fn accept_finding(
    ledger: &mut reports::Ledger,
    known: &Path,
    prefix: &str,
    run: Option<&Path>,
    runs: &Path,
    status: Option<reports::Status>,
    title: Option<String>,
    link: Option<String>,
) -> Result<Outcome> {
    // an entry already in the ledger: change its status (and link)
    if let Ok(sig) = reports::Ledger::resolve(prefix, ledger.findings.iter().map(|f| &f.signature))
    {
        let Some(status) = status.or(link
            .as_ref()
            .and_then(|_| ledger.get(&sig).map(|k| k.status)))
        else {
            let now = ledger.get(&sig).map(|k| k.status.name()).unwrap_or("");
            return Err(UsageError(format!(
                "{sig} is already known ({now}): pass --status open|reported-upstream|accepted or --link"
            ))
            .into());
        };
        let mut entry = ledger
            .get(&sig)
            .cloned()
            .context("the entry just resolved")?;
        entry.status = status;
        entry.link = link.unwrap_or_default();
        ledger.accept(entry);
        ledger.save(known)?;
        outln!("{sig}: now {status}");
        return Ok(Outcome::Held);
    }
    let candidates: Vec<std::path::PathBuf> = match run {
        Some(r) => vec![r.to_path_buf()],
        None => {
            let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(runs)
                .with_context(|| format!("listing {}", runs.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join(reports::record::SUMMARY_FILE).exists())
                .collect();
            dirs.sort();
            dirs.reverse();
            dirs
        }
    };
    for dir in candidates {
        let Ok(loaded) = reports::load_run(&dir) else {
            continue;
        };
        let Ok(sig) =
            reports::Ledger::resolve(prefix, loaded.summary.findings.iter().map(|f| &f.signature))
        else {
            continue;
        };
        let Some(f) = loaded.summary.findings.iter().find(|f| f.signature == sig) else {
            continue;
        };
        let folder = known
            .parent()
            .map_or_else(|| Path::new("known").to_path_buf(), |p| p.join("known"));
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("creating {}", folder.display()))?;
        let copy = folder.join(format!("{}-{}.yaml", f.smallest.seed, f.property));
        std::fs::copy(dir.join(&f.smallest.scenario), &copy)
            .with_context(|| format!("copying the scenario to {}", copy.display()))?;
        let entry = reports::KnownFinding {
            signature: sig.clone(),
            title: title.unwrap_or_else(|| f.title.clone()),
            status: status.unwrap_or(reports::Status::Open),
            link: link.unwrap_or_default(),
            scenario: copy.display().to_string(),
            first_seen: format!("{}, seed {}", loaded.summary.run_id, f.smallest.seed),
        };
        outln!(
            "known ({}): {} — {sig}, scenario {}",
            entry.status,
            entry.title,
            entry.scenario
        );
        ledger.accept(entry);
        ledger.save(known)?;
        return Ok(Outcome::Held);
    }
    Err(UsageError(format!(
        "no finding `{prefix}` in {} or in a run under {}",
        known.display(),
        run.unwrap_or(runs).display()
    ))
    .into())
}

/// Replays every regression seed where it was found (a `twin-matches-model` seed on an
/// embedded twin, the rest on the model) and drops from the file the seeds that pass.
pub(super) fn prune_regressions(path: &Path) -> Result<()> {
    let regressions = scenario::Regressions::load(path).map_err(|e| UsageError(e.to_string()))?;
    let (twin, model): (Vec<_>, Vec<_>) = regressions
        .entries()
        .iter()
        .partition(|r| r.note == tier::TWIN_PROPERTY);
    let mut stale = std::collections::BTreeSet::new();
    for (tier, group) in [(fuzz::Tier::Model, model), (fuzz::Tier::Twin, twin)] {
        let seeds: Vec<u64> = group.iter().map(|r| r.seed).collect();
        if seeds.is_empty() {
            continue;
        }
        let mut config = fuzz::FuzzConfig {
            tier,
            seeds: 0,
            regressions: seeds.clone(),
            jobs: 1,
            shrink_steps: 0,
            ..fuzz::FuzzConfig::default()
        };
        config.twin.shrink_steps = 0;
        let report = fuzz::run(&config, &|_, _| {}).map_err(|e| anyhow::anyhow!(e))?;
        for seed in seeds {
            let failing = report.failures.iter().any(|f| f.seed == seed);
            let unjudged = report.inconclusive.iter().any(|(s, _)| *s == seed)
                || report.flaky.iter().any(|(s, _)| *s == seed);
            if failing || unjudged {
                outln!("regression seed {seed}: still fails (kept)");
            } else {
                outln!("regression seed {seed}: passes now (dropped)");
                stale.insert(seed);
            }
        }
    }
    if !stale.is_empty() {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let kept = reports::findings::without_seeds(&text, &stale);
        let tmp = path.with_extension("txt.tmp");
        std::fs::write(&tmp, kept).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    }
    Ok(())
}
