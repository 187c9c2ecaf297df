//! `verify report --merge OUT RUN_DIR…`: the run directories of the shards of one fuzz campaign
//! (`verify fuzz --shard I/N`, one per Pod of an Indexed Job) joined into one run directory,
//! as one unsharded run over the same seeds would have written it: the counterexamples (their
//! files copied), the findings folded again by signature, the divergence rows, the coverage
//! summed and its floors and plot redone, the verdict recomputed, `junit.xml` rewritten.
//!
//! Every shard replays the regression seeds first, so a regression seed's counterexample is in
//! every shard: a seed is taken once, from the first shard (in the order given) that has it.
//! Shards run side by side, so the merged wall time is the longest shard's.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use scenario::RunDir;

use crate::coverage::{check_floors, parse_floors, Coverage, FloorCheck};
use crate::findings::FindingEntry;
use crate::plots::coverage_svg;
use crate::record::{ReportError, COVERAGE_PLOT, DIVERGENCES_FILE, JUNIT_FILE, SUMMARY_FILE};
use crate::render::{csv_bytes, junit_xml, load_run, LoadedRun};
use crate::summary::{Figures, RunSummary, Seeds, Verdict};

/// Why shard run directories could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge: name at least one run directory")]
    NoRuns,
    /// A shard's run directory could not be read (the error names the file).
    #[error("reading a shard: {0}")]
    Read(#[source] Box<ReportError>),
    /// The runs are not shards of one campaign.
    #[error("{} is not a shard of the same campaign as {}: {what} is `{other}`, not `{first}`", path.display(), first_path.display())]
    Mismatch {
        what: &'static str,
        first: String,
        other: String,
        first_path: PathBuf,
        path: PathBuf,
    },
    /// A run that was not started with `--shard I/N`.
    #[error("{} is not a shard (its seeds are `{range}`; expected `0..N shard I/C`, from `verify fuzz --shard`)", path.display())]
    NotAShard { path: PathBuf, range: String },
    /// Two run directories hold the same shard (or are the same run).
    #[error("{} and {} are both shard {index}/{count}", first.display(), second.display())]
    SameShard {
        index: u64,
        count: u64,
        first: PathBuf,
        second: PathBuf,
    },
    /// OUT exists already, or cannot be created.
    #[error("creating the merged run directory {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: Box<scenario::ScenarioError>,
    },
    #[error("copying {} into the merged run: {source}", from.display())]
    Copy {
        from: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A recorded coverage floor no longer parses.
    #[error("coverage floor `{floor}` of {}: {why}", path.display())]
    Floor {
        floor: String,
        path: PathBuf,
        why: String,
    },
    #[error("writing the merged run: {0}")]
    Write(#[source] Box<ReportError>),
}

/// The shard `(base range, index, count)` a summary's seeds name (`0..40 shard 1/4`).
fn shard_of(seeds: &Seeds) -> Option<(&str, u64, u64)> {
    let (base, shard) = seeds.range.split_once(" shard ")?;
    let (i, n) = shard.split_once('/')?;
    Some((base, i.parse().ok()?, n.parse().ok()?))
}

/// Merges the shard run directories `runs` into a new run directory `out` (which must not
/// exist) and returns its summary. `command` is recorded as the merged run's command.
pub fn merge_runs(out: &Path, runs: &[PathBuf], command: &str) -> Result<RunSummary, MergeError> {
    let loaded: Vec<LoadedRun> = runs
        .iter()
        .map(|p| load_run(p).map_err(|e| MergeError::Read(Box::new(e))))
        .collect::<Result<_, _>>()?;
    if loaded.is_empty() {
        return Err(MergeError::NoRuns);
    }
    let range = check_shards(&loaded)?;
    let dir = create(out)?;
    let mut summary = joined_summary(&loaded, &dir, command, range)?;
    copy_counterexamples(&loaded, &dir, &summary)?;
    let seeds: BTreeSet<u64> = summary.counterexamples.iter().map(|c| c.seed).collect();
    let mut rows = Vec::new();
    let mut taken = BTreeSet::new();
    for run in &loaded {
        // a seed's rows from the shard its counterexample was taken from only
        let from_here: BTreeSet<u64> = run
            .summary
            .counterexamples
            .iter()
            .map(|c| c.seed)
            .filter(|s| seeds.contains(s) && !taken.contains(s))
            .collect();
        rows.extend(
            run.rows
                .iter()
                .filter(|r| from_here.contains(&r.seed))
                .cloned(),
        );
        taken.extend(from_here);
    }
    rows.sort_by_key(|r| r.seed);
    let write = |rel: &str, bytes: &[u8]| {
        dir.replace_file(rel, bytes)
            .map(|_| ())
            .map_err(|e| MergeError::Write(Box::new(ReportError::Write(e))))
    };
    write(DIVERGENCES_FILE, &csv_bytes(&rows, true).map_err(written)?)?;
    if !summary.coverage.classes.is_empty() {
        let svg = coverage_svg(&summary.coverage).map_err(|e| written(e.into()))?;
        write(COVERAGE_PLOT, svg.as_bytes())?;
        summary.plots.push(COVERAGE_PLOT.to_string());
    }
    write(JUNIT_FILE, junit_xml(&summary).map_err(written)?.as_bytes())?;
    let json = serde_json::to_vec_pretty(&summary).map_err(|source| {
        written(ReportError::Json {
            what: "summary.json",
            source,
        })
    })?;
    write(SUMMARY_FILE, &json)?;
    Ok(summary)
}

fn written(e: ReportError) -> MergeError {
    MergeError::Write(Box::new(e))
}

/// Checks that the runs are distinct shards of one campaign (same tier, context, versions,
/// seed range and shard count) and returns the merged range: the base range when every shard
/// is there, else which shards are.
fn check_shards(loaded: &[LoadedRun]) -> Result<String, MergeError> {
    let first = &loaded[0];
    let not_a_shard = |run: &LoadedRun| MergeError::NotAShard {
        path: run.path.clone(),
        range: run.summary.seeds.range.clone(),
    };
    let (base, _, count) = shard_of(&first.summary.seeds).ok_or_else(|| not_a_shard(first))?;
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for run in loaded {
        let s = &run.summary;
        let (b, i, n) = shard_of(&s.seeds).ok_or_else(|| not_a_shard(run))?;
        let mismatch = |what, a: String, b: String| MergeError::Mismatch {
            what,
            first: a,
            other: b,
            first_path: first.path.clone(),
            path: run.path.clone(),
        };
        let f = &first.summary;
        if s.tier != f.tier {
            return Err(mismatch("the tier", f.tier.clone(), s.tier.clone()));
        }
        if s.context != f.context {
            let show = |c: &Option<String>| c.clone().unwrap_or_else(|| "(none)".into());
            return Err(mismatch("the context", show(&f.context), show(&s.context)));
        }
        if s.versions != f.versions {
            let show = |v: &BTreeMap<String, String>| format!("{v:?}");
            return Err(mismatch(
                "the versions",
                show(&f.versions),
                show(&s.versions),
            ));
        }
        if (b, n) != (base, count) {
            return Err(mismatch(
                "the seed range and shard count",
                format!("{base} of {count} shards"),
                format!("{b} of {n} shards"),
            ));
        }
        if let Some(other) = seen.insert(i, &run.path) {
            return Err(MergeError::SameShard {
                index: i,
                count: n,
                first: other.to_path_buf(),
                second: run.path.clone(),
            });
        }
    }
    let range = if seen.len() as u64 == count {
        base.to_string()
    } else {
        let shards: Vec<String> = seen.keys().map(u64::to_string).collect();
        format!("{base} shards {} of {count}", shards.join(","))
    };
    Ok(range)
}

/// Creates OUT (its parent made if needed); refuses one that exists.
fn create(out: &Path) -> Result<RunDir, MergeError> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    RunDir::create(parent, &name).map_err(|source| MergeError::Create {
        path: out.to_path_buf(),
        source: Box::new(source),
    })
}

/// The merged summary: counterexamples once per seed, findings folded by signature, figures
/// summed (wall time: the longest shard), coverage summed and floors re-checked, the verdict
/// recomputed.
fn joined_summary(
    loaded: &[LoadedRun],
    dir: &RunDir,
    command: &str,
    range: String,
) -> Result<RunSummary, MergeError> {
    let first = &loaded[0].summary;
    let mut s = RunSummary::start(
        dir.id(),
        command,
        &first.tier,
        Seeds {
            planned: loaded.iter().map(|r| r.summary.seeds.planned).sum(),
            range,
            regressions: first.seeds.regressions.clone(),
        },
    );
    s.path = dir.path().display().to_string();
    s.context = first.context.clone();
    s.versions = first.versions.clone();
    s.pid = None;
    let mut coverage = Coverage::default();
    let mut findings: Vec<FindingEntry> = Vec::new();
    let mut figures = Figures::default();
    let mut possibly_fixed = BTreeSet::new();
    for run in loaded {
        let r = &run.summary;
        for seed in &r.seeds.regressions {
            if !s.seeds.regressions.contains(seed) {
                s.seeds.regressions.push(*seed);
            }
        }
        for cx in &r.counterexamples {
            if !s.counterexamples.iter().any(|c| c.seed == cx.seed) {
                s.counterexamples.push(cx.clone());
            }
        }
        for f in &r.findings {
            fold_finding(&mut findings, f);
        }
        for p in &r.plots {
            if p != COVERAGE_PLOT && !s.plots.contains(p) {
                s.plots.push(p.clone());
            }
        }
        coverage.merge(&r.coverage);
        figures.ran += r.figures.ran;
        figures.jobs += r.figures.jobs;
        figures.elapsed_seconds = figures.elapsed_seconds.max(r.figures.elapsed_seconds);
        possibly_fixed.extend(r.possibly_fixed.iter().cloned());
    }
    s.counterexamples.sort_by_key(|c| c.seed);
    findings.sort_by(|a, b| a.signature.cmp(&b.signature));
    figures.failing = s.counterexamples.len() as u64;
    if figures.elapsed_seconds > 0.0 {
        figures.scenarios_per_second = figures.ran as f64 / figures.elapsed_seconds;
    }
    s.coverage_floors = floors(loaded, &coverage)?;
    s.possibly_fixed = possibly_fixed
        .into_iter()
        .filter(|sig| !findings.iter().any(|f| &f.signature == sig))
        .collect();
    s.verdict = verdict(loaded, &findings, &s, &figures);
    s.findings = findings;
    s.figures = figures;
    s.coverage = coverage;
    Ok(s)
}

/// One shard's finding into the merged ones: seeds joined, the smallest scenario kept.
fn fold_finding(findings: &mut Vec<FindingEntry>, f: &FindingEntry) {
    let Some(have) = findings.iter_mut().find(|x| x.signature == f.signature) else {
        findings.push(f.clone());
        return;
    };
    for seed in &f.seeds {
        if !have.seeds.contains(seed) {
            have.seeds.push(*seed);
        }
    }
    have.seeds.sort_unstable();
    have.count = have.seeds.len();
    let key = |x: &crate::findings::Smallest| (x.nodes, x.events, x.seed);
    if key(&f.smallest) < key(&have.smallest) {
        have.smallest = f.smallest.clone();
        if !have.known {
            // a new finding is titled by its smallest counterexample's headline
            have.title = f.title.clone();
        }
    }
    have.known |= f.known;
    have.status = have.status.or(f.status);
}

/// The shards' coverage floors (one set: each shard was given the same `--min-coverage`)
/// checked again against the summed coverage.
fn floors(loaded: &[LoadedRun], coverage: &Coverage) -> Result<Vec<FloorCheck>, MergeError> {
    let mut specs: Vec<(String, &Path)> = Vec::new();
    for run in loaded {
        for f in &run.summary.coverage_floors {
            if !specs.iter().any(|(s, _)| s == &f.floor) {
                specs.push((f.floor.clone(), &run.path));
            }
        }
    }
    let mut parsed = Vec::new();
    for (spec, path) in specs {
        let floors = parse_floors(&spec).map_err(|e| MergeError::Floor {
            floor: spec.clone(),
            path: path.join(SUMMARY_FILE),
            why: e.to_string(),
        })?;
        parsed.extend(floors);
    }
    Ok(check_floors(coverage, &parsed))
}

/// The merged verdict, as [`Verdict::of_findings`] decides a finished run's: counterexamples of
/// findings no shard's ledger knew are new. A shard that failed on known findings
/// (`--strict`) fails the merge; one that did not finish (`running`, `interrupted`) makes the
/// merge `interrupted` unless it failed.
fn verdict(
    loaded: &[LoadedRun],
    findings: &[FindingEntry],
    s: &RunSummary,
    figures: &Figures,
) -> Verdict {
    let known_sig = |sig| findings.iter().any(|f| &f.signature == sig && f.known);
    let known = s
        .counterexamples
        .iter()
        .filter(|c| known_sig(&c.signature))
        .count();
    let new = s.counterexamples.len() - known;
    let shards = loaded.iter().map(|r| r.summary.verdict);
    let verdict = Verdict::of_findings(figures.ran, new, known, &s.coverage_floors);
    if verdict == Verdict::Failed || shards.clone().any(|v| v == Verdict::Failed) {
        Verdict::Failed
    } else if shards
        .clone()
        .any(|v| matches!(v, Verdict::Running | Verdict::Interrupted))
    {
        Verdict::Interrupted
    } else {
        verdict
    }
}

/// Copies each merged counterexample's files (scenario, report, plot) from the shard it was
/// taken from to the same place in OUT; the report's mentions of the shard's directory are
/// rewritten to OUT's, so its replay command names the merged copy.
fn copy_counterexamples(
    loaded: &[LoadedRun],
    dir: &RunDir,
    summary: &RunSummary,
) -> Result<(), MergeError> {
    let mut done = BTreeSet::new();
    for run in loaded {
        for cx in &run.summary.counterexamples {
            let taken = summary
                .counterexamples
                .iter()
                .any(|c| c.seed == cx.seed && c.scenario == cx.scenario);
            if !taken || !done.insert(cx.seed) {
                continue;
            }
            let files = [Some(&cx.scenario), Some(&cx.report), cx.plot.as_ref()];
            for rel in files.into_iter().flatten() {
                let from = run.path.join(rel);
                let copy = |source: Box<dyn std::error::Error + Send + Sync>| MergeError::Copy {
                    from: from.clone(),
                    source,
                };
                let mut bytes = fs::read(&from).map_err(|e| copy(e.into()))?;
                if rel.ends_with(".md") {
                    let mut text = String::from_utf8_lossy(&bytes).into_owned();
                    for shard_dir in [run.summary.path.clone(), run.path.display().to_string()] {
                        if !shard_dir.is_empty() {
                            text = text.replace(&shard_dir, &summary.path);
                        }
                    }
                    bytes = text.into_bytes();
                }
                dir.replace_file(rel, &bytes).map_err(|e| copy(e.into()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Signature, Smallest};
    use crate::summary::CounterexampleEntry;

    fn cx(seed: u64, sig: &str, nodes: usize) -> (CounterexampleEntry, FindingEntry) {
        let entry = CounterexampleEntry {
            seed,
            property: "accounting".into(),
            message: "m".into(),
            nodes,
            cards: 1,
            events: 0,
            shrinks: 0,
            scenario: format!("counterexamples/{seed}.yaml"),
            report: format!("counterexamples/{seed}.md"),
            plot: None,
            first_divergent_step: None,
            signature: Signature(sig.into()),
        };
        let finding = FindingEntry {
            signature: Signature(sig.into()),
            title: format!("title of {seed}"),
            property: "accounting".into(),
            seeds: vec![seed],
            count: 1,
            smallest: Smallest {
                seed,
                nodes,
                events: 0,
                scenario: entry.scenario.clone(),
                report: entry.report.clone(),
            },
            known: sig == "known",
            status: (sig == "known").then_some(crate::findings::Status::Open),
        };
        (entry, finding)
    }

    /// A shard run directory holding `cxs` (their files too) as `verify fuzz --shard` leaves it.
    fn shard(base: &Path, i: u64, cxs: &[(u64, &str, usize)]) -> PathBuf {
        let dir = RunDir::create(base, &format!("shard-{i}")).unwrap();
        let seeds = Seeds {
            planned: 5,
            range: format!("0..10 shard {i}/2"),
            regressions: vec![3],
        };
        let mut s = RunSummary::start(dir.id(), "verify fuzz", "model", seeds);
        s.path = dir.path().display().to_string();
        s.figures.ran = 5;
        s.coverage.observe([("vendors", "nvidia".to_string())]);
        let mut findings = Vec::new();
        for &(seed, sig, nodes) in cxs {
            let (entry, finding) = cx(seed, sig, nodes);
            let md = format!("replay {}/{}", s.path, entry.scenario);
            dir.replace_file(&entry.scenario, b"cluster: {}\n").unwrap();
            dir.replace_file(&entry.report, md.as_bytes()).unwrap();
            s.counterexamples.push(entry);
            fold_finding(&mut findings, &finding);
        }
        s.findings = findings;
        s.verdict = Verdict::Failed;
        let json = serde_json::to_vec(&s).unwrap();
        dir.replace_file(SUMMARY_FILE, &json).unwrap();
        dir.path().to_path_buf()
    }

    #[test]
    fn findings_fold_by_signature_across_shards_and_a_replayed_seed_counts_once() {
        let base = std::env::temp_dir().join(format!("reports-merge-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        // seed 3 is the regression seed both shards replayed
        let a = shard(&base, 0, &[(3, "known", 2), (4, "new", 3), (6, "new", 2)]);
        let b = shard(&base, 1, &[(3, "known", 2), (5, "new", 1), (7, "known", 1)]);
        let out = base.join("merged");
        let s = merge_runs(&out, &[a, b], "verify report --merge").unwrap();
        let seeds: Vec<u64> = s.counterexamples.iter().map(|c| c.seed).collect();
        assert_eq!(seeds, [3, 4, 5, 6, 7]);
        let folded: Vec<(&str, &[u64], u64, bool)> = s
            .findings
            .iter()
            .map(|f| (f.signature.as_str(), &f.seeds[..], f.smallest.seed, f.known))
            .collect();
        assert_eq!(
            folded,
            [
                ("known", &[3, 7][..], 7, true),
                ("new", &[4, 5, 6][..], 5, false)
            ]
        );
        // a new finding is titled by its smallest counterexample
        assert_eq!(s.findings[1].title, "title of 5");
        assert_eq!((s.figures.ran, s.figures.failing), (10, 5));
        assert_eq!(s.seeds.range, "0..10");
        assert_eq!(s.coverage.count("vendors", "nvidia"), 2);
        assert_eq!(s.verdict, Verdict::Failed);
        // every counterexample's files, the report pointing into the merged run
        let md = fs::read_to_string(out.join("counterexamples/5.md")).unwrap();
        assert_eq!(
            md,
            format!("replay {}/counterexamples/5.yaml", out.display())
        );
        for f in [SUMMARY_FILE, JUNIT_FILE, DIVERGENCES_FILE, COVERAGE_PLOT] {
            assert!(out.join(f).is_file(), "{f}");
        }
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn a_failed_shard_fails_the_merge_a_missing_shard_is_named_and_one_twice_refused() {
        let base = std::env::temp_dir().join(format!("reports-merge-k-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let a = shard(&base, 0, &[(3, "known", 2)]);
        let s = merge_runs(&base.join("one"), std::slice::from_ref(&a), "m").unwrap();
        // shard 1 of 2 is missing: the range says which shards are there
        assert_eq!(s.seeds.range, "0..10 shards 0 of 2");
        // the shard's own verdict (failed, as under --strict) stands
        assert_eq!(s.verdict, Verdict::Failed);
        let err = merge_runs(&base.join("two"), &[a.clone(), a], "m").unwrap_err();
        assert!(
            matches!(err, MergeError::SameShard { index: 0, .. }),
            "{err}"
        );
        assert!(!base.join("two").exists());
        let _ = fs::remove_dir_all(&base);
    }
}
