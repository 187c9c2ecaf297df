//! `verify report --merge` end to end (issue 20, "Scale-out on Kubernetes"): the shards of a
//! fuzz campaign (`verify fuzz --shard I/N`, each its own run directory, as the Pods of an
//! Indexed Job write them) merge into one run directory whose findings (signatures and the
//! seeds of each) and counterexample seeds equal one unsharded run's over the same seeds.
//!
//! The mutant `cohort-set` makes nearly every seed fail, so there are many counterexamples to
//! fold. A mutant run never appends to the regression file, so the seed it holds is replayed
//! first by every shard: the merge must take it once.
//!
//! Not every mutant gives a sharding-independent result: under `quota-off-by-one`, a seed
//! whose failure's signature some other seed of the same run already shrank is recorded
//! unshrunk (`fuzz::judge_seed_folding`), and for a few seeds the shrunk and unshrunk
//! signatures differ, so which finding such a seed folds into depends on what else its run
//! judged first (also between `--jobs 1` and `--jobs 2` unsharded). The merge cannot undo
//! that; the mutants here shrink within their signature.

mod common;

use common::text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn verify(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .current_dir(cwd)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("VERIFY_SHARD_COUNT")
        .output()
        .expect("run verify")
}

fn scratch_dir(name: &str) -> PathBuf {
    common::scratch_dir("merge", name)
}

/// The one run directory `verify fuzz --run-dir base` made.
fn only_run(base: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().unwrap()
}

fn summary(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// signature → its seeds, as a summary lists its findings.
fn findings(s: &serde_json::Value) -> BTreeMap<String, Vec<u64>> {
    s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let seeds = f["seeds"].as_array().unwrap();
            (
                f["signature"].as_str().unwrap().to_string(),
                seeds.iter().map(|x| x.as_u64().unwrap()).collect(),
            )
        })
        .collect()
}

fn counterexample_seeds(s: &serde_json::Value) -> Vec<u64> {
    s["counterexamples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["seed"].as_u64().unwrap())
        .collect()
}

/// Runs `fuzz` (its arguments) unsharded and as `shards` shards in `dir`, each with its own
/// run directory and the same regression file (holding `regression`) and empty ledger;
/// merges the shards; returns the unsharded and merged run directories.
fn unsharded_and_merged(
    dir: &Path,
    fuzz: &[&str],
    shards: u64,
    regression: u64,
) -> (PathBuf, Vec<PathBuf>, PathBuf) {
    std::fs::write(dir.join("regressions.txt"), format!("{regression}\n")).unwrap();
    let run = |run_dir: &str, shard: Option<String>| {
        let mut args: Vec<String> = ["fuzz", "-q", "--regressions", "regressions.txt"]
            .into_iter()
            .chain(["--known", "known.yaml", "--run-dir", run_dir])
            .chain(fuzz.iter().copied())
            .map(String::from)
            .collect();
        if let Some(s) = shard {
            args.extend(["--shard".into(), s]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = verify(&args, dir);
        // the mutant is caught: a new finding, exit 1
        assert_eq!(
            out.status.code(),
            Some(1),
            "verify {args:?}: {}",
            text(&out)
        );
        only_run(&dir.join(run_dir))
    };
    let full = run("full", None);
    let parts: Vec<PathBuf> = (0..shards)
        .map(|i| run(&format!("shard-{i}"), Some(format!("{i}/{shards}"))))
        .collect();
    let mut merge: Vec<String> = vec!["report".into(), "--merge".into(), "merged".into()];
    merge.extend(parts.iter().map(|p| p.display().to_string()));
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    let out = verify(&merge, dir);
    // the merged verdict is the unsharded one's: failed, exit 1
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("merged {shards} shard run(s) into merged")),
        "{}",
        text(&out)
    );
    // every shard judged only part of the range, and replayed the regression seed
    for part in &parts {
        let s = summary(part);
        let seeds = counterexample_seeds(&s);
        assert!(seeds.contains(&regression), "{}: {seeds:?}", part.display());
    }
    (full, parts, dir.join("merged"))
}

/// The merged run equals the unsharded one in what it found; its files are all there.
fn assert_same_findings(full: &Path, parts: &[PathBuf], merged: &Path) {
    let (a, b) = (summary(full), summary(merged));
    let found = findings(&a);
    assert!(
        !found.is_empty(),
        "the unsharded run found nothing to compare"
    );
    assert_eq!(findings(&b), found);
    assert_eq!(counterexample_seeds(&b), counterexample_seeds(&a));
    assert_eq!(b["verdict"], a["verdict"]);
    assert_eq!(b["seeds"]["range"], a["seeds"]["range"]);
    assert_eq!(b["figures"]["failing"], a["figures"]["failing"]);
    // coverage is the shards' summed (a regression seed counted in each shard that replayed it)
    let scenarios = |s: &serde_json::Value| s["coverage"]["scenarios"].as_u64().unwrap();
    let summed: u64 = parts.iter().map(|p| scenarios(&summary(p))).sum();
    assert_eq!(scenarios(&b), summed);
    assert!(summed >= scenarios(&a));
    for c in b["counterexamples"].as_array().unwrap() {
        for file in ["scenario", "report"] {
            let rel = c[file].as_str().unwrap();
            assert!(merged.join(rel).is_file(), "{rel} not copied");
        }
    }
    // the divergence rows: every shard's, a seed's taken once (the first shard's); which
    // seeds have rows is the unsharded run's (a seed's rows themselves can differ: a seed
    // recorded unshrunk, its signature already shrunk by another seed of its run, has more)
    let rows = |run: &Path| -> Vec<(u64, String)> {
        let csv = std::fs::read_to_string(run.join("divergences.csv")).unwrap();
        csv.lines()
            .skip(1)
            .map(|l| (l.split(',').next().unwrap().parse().unwrap(), l.to_string()))
            .collect()
    };
    let mut expected: Vec<(u64, String)> = Vec::new();
    for part in parts {
        let taken: Vec<u64> = expected.iter().map(|(s, _)| *s).collect();
        expected.extend(rows(part).into_iter().filter(|(s, _)| !taken.contains(s)));
    }
    expected.sort();
    let mut got = rows(merged);
    got.sort();
    assert_eq!(got, expected);
    let seeds = |rows: &[(u64, String)]| {
        let mut s: Vec<u64> = rows.iter().map(|(s, _)| *s).collect();
        s.dedup();
        s
    };
    let mut unsharded = rows(full);
    unsharded.sort();
    assert_eq!(seeds(&got), seeds(&unsharded));
    let junit = std::fs::read_to_string(merged.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    assert!(merged.join("plots/coverage.svg").is_file());
    // the merged run renders as any run does
    let out = verify(
        &["report", "merged", "--format", "md"],
        merged.parent().unwrap(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn four_model_tier_shards_merge_into_the_unsharded_runs_findings() {
    let dir = scratch_dir("model");
    let fuzz = ["--tier", "model", "--seeds", "40", "--mutant", "cohort-set"];
    let (full, parts, merged) = unsharded_and_merged(&dir, &fuzz, 4, 5);
    assert_same_findings(&full, &parts, &merged);
    // the regression seed, replayed by all four shards, is one counterexample
    let seeds = counterexample_seeds(&summary(&merged));
    assert_eq!(seeds.iter().filter(|s| **s == 5).count(), 1, "{seeds:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_twin_tier_shards_merge_into_the_unsharded_runs_findings() {
    let dir = scratch_dir("twin");
    let fuzz = [
        "--tier",
        "twin",
        "--seeds",
        "3",
        "--mutant",
        "entrance-wrong-hash",
    ];
    let (full, parts, merged) = unsharded_and_merged(&dir, &fuzz, 2, 0);
    assert_same_findings(&full, &parts, &merged);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn merging_refuses_what_is_not_shards_of_one_campaign() {
    let dir = scratch_dir("refuse");
    let fuzz = |run_dir: &str, extra: &[&str]| {
        let mut args = vec!["fuzz", "-q", "--tier", "model", "--seeds", "6"];
        args.extend([
            "--regressions",
            "r.txt",
            "--known",
            "k.yaml",
            "--run-dir",
            run_dir,
        ]);
        args.extend(extra);
        let out = verify(&args, &dir);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        only_run(&dir.join(run_dir)).display().to_string()
    };
    let a = fuzz("a", &["--shard", "0/2"]);
    let b = fuzz("b", &["--shard", "0/2"]);
    let c = fuzz("c", &["--shard", "1/3"]);
    let whole = fuzz("whole", &[]);
    for (runs, says) in [
        (vec![a.as_str(), b.as_str()], "are both shard 0/2"),
        (
            vec![a.as_str(), c.as_str()],
            "is not a shard of the same campaign",
        ),
        (vec![a.as_str(), whole.as_str()], "is not a shard"),
        (vec![a.as_str(), "nowhere"], "nowhere"),
    ] {
        let mut args = vec!["report", "--merge", "out"];
        args.extend(&runs);
        let out = verify(&args, &dir);
        assert_eq!(out.status.code(), Some(2), "{runs:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{runs:?}: {}", text(&out));
        assert!(
            !dir.join("out").exists(),
            "{runs:?} left a merged directory"
        );
    }
    // OUT is a new run directory, never written over
    std::fs::create_dir(dir.join("taken")).unwrap();
    let out = verify(&["report", "--merge", "taken", &a], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("exists"), "{}", text(&out));
    // --merge writes a run directory, not a rendering
    let out = verify(&["report", "--merge", "out", &a, "--format", "json"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // without --merge, one run directory
    let out = verify(&["report", &a, &c], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--merge"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shard_auto_outside_an_indexed_job_is_a_usage_error_naming_the_variable() {
    let dir = scratch_dir("auto");
    let args = ["fuzz", "--tier", "model", "--seeds", "4", "--shard", "auto"];
    let out = verify(&args, &dir);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("JOB_COMPLETION_INDEX"),
        "{}",
        text(&out)
    );
    assert!(
        !dir.join("runs").exists(),
        "a refused run made a run directory"
    );
    // as a Pod of an Indexed Job with completions 2 runs it: shard 1/2
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .args(["--regressions", "r.txt", "--known", "k.yaml"])
        .current_dir(&dir)
        .env("JOB_COMPLETION_INDEX", "1")
        .env("VERIFY_SHARD_COUNT", "2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = summary(&only_run(&dir.join("runs")));
    assert_eq!(s["seeds"]["range"], "0..4 shard 1/2");
    assert_eq!(s["figures"]["ran"], 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `verify twin serve` playing a cluster whose operator runs the mutant `mutant`; killed on
/// drop.
struct Served {
    child: std::process::Child,
    kubeconfig: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, mutant: &str) -> Served {
    use std::io::BufRead;
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args([
            "twin",
            "serve",
            "--walkthrough",
            "--context-name",
            "kind-verify",
        ])
        .args(["--mutant", mutant, "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the twin");
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = String::new();
    for line in lines {
        let line = line.unwrap();
        if addr.is_empty() {
            addr = common::served_addr(&line);
        }
        // the kubeconfig is written once the line naming it is printed
        if line.starts_with("kubeconfig:") {
            break;
        }
    }
    // the preflight wants the operator's pools: wait for its first reconcile, bounded
    for _ in 0..200 {
        let queues = common::http_get(&addr, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues");
        if queues.contains("gpustack--") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Served { child, kubeconfig }
}

/// The Indexed Job path (deploy/fuzz-job.yaml) against a twin playing a cluster whose operator
/// has a bug: two Pods' worth of `verify fuzz --shard auto --context …`, side by side, their
/// shard from JOB_COMPLETION_INDEX and VERIFY_SHARD_COUNT as the Job controller and the
/// manifest set them, merge into the findings of one unsharded live run.
#[test]
fn an_indexed_jobs_shards_against_a_served_twin_merge_into_the_unsharded_runs_findings() {
    let dir = scratch_dir("indexed");
    let twin = serve(&dir, "entrance-wrong-hash");
    let fuzz = |run_dir: &str, index: Option<u64>| {
        // a cluster's finding is new, so a run appends its seed to its regression file: each
        // run starts from the same (empty) one
        let regressions = format!("{run_dir}.regressions.txt");
        std::fs::write(dir.join(&regressions), "").unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_verify"));
        c.args(["fuzz", "-q", "--kubeconfig"])
            .arg(&twin.kubeconfig)
            .args(["--context", "kind-verify", "--yes", "--seeds", "2"])
            .args(["--regressions", &regressions, "--known", "known.yaml"])
            .args(["--run-dir", run_dir])
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(i) = index {
            c.args(["--shard", "auto"])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("VERIFY_SHARD_COUNT", "2");
        }
        c.spawn().expect("run verify")
    };
    let check = |child: std::process::Child| {
        let out = child.wait_with_output().unwrap();
        // the operator's bug is a new finding: exit 1
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("teardown: nothing labelled"),
            "{}",
            text(&out)
        );
    };
    check(fuzz("full", None));
    let shards: Vec<_> = (0..2)
        .map(|i| fuzz(&format!("shard-{i}"), Some(i)))
        .collect();
    shards.into_iter().for_each(check);
    let parts: Vec<PathBuf> = (0..2)
        .map(|i| only_run(&dir.join(format!("shard-{i}"))))
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let range = summary(part)["seeds"]["range"].clone();
        assert_eq!(range, format!("0..2 shard {i}/2"));
    }
    let mut args = vec!["report", "--merge", "merged"];
    let shown: Vec<String> = parts.iter().map(|p| p.display().to_string()).collect();
    args.extend(shown.iter().map(String::as_str));
    let out = verify(&args, &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let (full, merged) = (
        summary(&only_run(&dir.join("full"))),
        summary(&dir.join("merged")),
    );
    assert!(!findings(&full).is_empty());
    assert_eq!(findings(&merged), findings(&full));
    assert_eq!(counterexample_seeds(&merged), counterexample_seeds(&full));
    assert_eq!(merged["context"], full["context"]);
    assert_eq!(merged["tier"], full["tier"]);
    drop(twin);
    let _ = std::fs::remove_dir_all(&dir);
}
