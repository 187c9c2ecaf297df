//! Findings end to end (issue [M11]): counterexamples fold by signature, the ledger turns a
//! known finding into a `known` line and exit 0 (`--strict`: 1), a mutant run leaves the
//! regression file alone and its counterexample replays with exit 1, the upstream issue holds
//! the cluster's manifests and the replay command, and `verify findings` manages the ledger.

mod common;

use common::text;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .output()
        .expect("run verify")
}

fn scratch_dir(name: &str) -> PathBuf {
    common::scratch_dir("findings", name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The run directories under `runs`, oldest first.
fn runs_in(runs: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

fn summary(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// A model-tier mutant run of `seeds` seeds with its own run dir, regressions and ledger.
fn mutant_run(dir: &Path, mutant: &str, seeds: &str, extra: &[&str]) -> Output {
    let runs = dir.join("runs");
    let regressions = dir.join("regressions.txt");
    let known = dir.join("known.yaml");
    let mut args = vec![
        "fuzz",
        "--tier",
        "model",
        "--seeds",
        seeds,
        "--mutant",
        mutant,
        "--run-dir",
        s(&runs),
        "--regressions",
        s(&regressions),
        "--known",
        s(&known),
    ];
    args.extend_from_slice(extra);
    verify(&args)
}

#[test]
fn a_mutant_run_folds_its_seeds_leaves_the_regressions_alone_and_replays_under_the_mutant() {
    let dir = scratch_dir("mutant");
    let regressions = dir.join("regressions.txt");
    let before = "# seeds\n7 # accounting\n";
    std::fs::write(&regressions, before).unwrap();
    // the regression seed is replayed first, under the mutant: seeds 7, 0..4
    let out = mutant_run(&dir, "quota-off-by-one", "4", &[]);
    let t = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a new finding fails the run: {t}"
    );
    assert_eq!(
        std::fs::read_to_string(&regressions).unwrap(),
        before,
        "a mutant's counterexamples never reach the regression file"
    );
    let run = runs_in(&dir.join("runs")).pop().unwrap();
    let sum = summary(&run);
    let cxs = sum["counterexamples"].as_array().unwrap();
    let findings = sum["findings"].as_array().unwrap();
    assert!(cxs.len() >= 2, "{t}");
    assert!(findings.len() < cxs.len(), "seeds fold: {findings:?}");
    for f in findings {
        let seeds = f["seeds"].as_array().unwrap();
        assert_eq!(f["count"].as_u64(), Some(seeds.len() as u64));
        assert_eq!(f["known"], serde_json::json!(false));
        let sig = f["signature"].as_str().unwrap();
        // the quota is one card short; a CPU pool's capacity follows it (upstream-most first)
        assert!(
            sig.starts_with("mutant-quota-off-by-one:ClusterQueue:spec.resourceGroups[0].flavors[].resources[].nominalQuota")
                || sig.starts_with("mutant-quota-off-by-one:InstanceType:status."),
            "a Kubernetes field path, not a Rust one: {sig}"
        );
    }
    let first = findings
        .iter()
        .find(|f| f["signature"].as_str().unwrap().contains(":ClusterQueue:"))
        .unwrap_or(&findings[0]);
    assert!(t.lines().any(|l| l.starts_with("NEW: ")), "{t}");
    // the counterexample replays under its mutant and still reproduces
    let scenario = run.join(first["smallest"]["scenario"].as_str().unwrap());
    let out = verify(&["replay", s(&scenario)]);
    let replayed = text(&out);
    assert_eq!(out.status.code(), Some(1), "{replayed}");
    assert!(
        replayed.contains("recorded violation of mutant-quota-off-by-one: reproduced"),
        "{replayed}"
    );
    // the report explains: the property, a table in Kubernetes paths
    let report =
        std::fs::read_to_string(run.join(first["smallest"]["report"].as_str().unwrap())).unwrap();
    assert!(report.contains("**Property:**"), "{report}");
    assert!(
        report.contains("| object | field | expected | observed |"),
        "{report}"
    );
    let table: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("## First divergent step"))
        .take_while(|l| !l.starts_with("```"))
        .collect();
    assert!(
        table
            .iter()
            .any(|l| l.contains("status.") || l.contains("spec.")),
        "{report}"
    );
    assert!(
        !table.iter().any(|l| l.contains("nominal_quota")),
        "{report}"
    );
    // and says why: the model's chain behind the first field, each decision with the model
    // function and the operator source it follows
    let why: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("## Why the model expects this"))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(!why.is_empty(), "{report}");
    assert!(
        why.iter()
            .all(|l| l.contains("— `model::") && l.contains(", following `")),
        "{report}"
    );
    assert!(
        why.iter()
            .any(|l| l.contains("`model::queue::settle_pool_queue`")),
        "{report}"
    );
    // the upstream issue: manifests a kubectl can apply, and the replay command
    let issue = dir.join("issue.md");
    let out = verify(&[
        "report",
        s(&run),
        "--finding",
        first["signature"].as_str().unwrap(),
        "--format",
        "issue",
        "--output",
        s(&issue),
        "--known",
        s(&dir.join("known.yaml")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(&issue).unwrap();
    assert!(md.contains("kind: Node\n"), "{md}");
    assert!(md.contains("kind: NodeFeature\n"), "{md}");
    assert!(md.contains("verify replay "), "{md}");
    assert!(md.contains("kubectl apply -f"), "{md}");
    assert!(md.contains("pkg/worker/controllers/worker/"), "{md}");
    assert!(md.contains("## Why the model expects this"), "{md}");
    assert!(md.contains("`model::pool::pool_flavor_selector`"), "{md}");
    // an unknown finding is a usage error
    let out = verify(&["report", s(&run), "--finding", "nope", "--format", "issue"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_finding_in_the_ledger_is_known_and_passes_and_strict_fails_it() {
    let dir = scratch_dir("known");
    let out = mutant_run(&dir, "cohort-set", "3", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let run = runs_in(&dir.join("runs")).pop().unwrap();
    let sum = summary(&run);
    let sig = sum["findings"][0]["signature"]
        .as_str()
        .unwrap()
        .to_string();
    // accept it from the run into the ledger
    let known = dir.join("known.yaml");
    let out = verify(&[
        "findings",
        "accept",
        &sig,
        "--run",
        s(&run),
        "--title",
        "cohort set on every queue",
        "--known",
        s(&known),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ledger = std::fs::read_to_string(&known).unwrap();
    assert!(ledger.contains(&sig), "{ledger}");
    assert!(ledger.contains("status: open"), "{ledger}");
    // the same run again: known, exit 0, a line starting `known`
    let out = mutant_run(&dir, "cohort-set", "3", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("known (open): cohort set on every queue, ")),
        "{t}"
    );
    let sum = summary(&runs_in(&dir.join("runs")).pop().unwrap());
    assert_eq!(sum["verdict"], serde_json::json!("known"));
    assert_eq!(sum["findings"][0]["known"], serde_json::json!(true));
    assert_eq!(sum["findings"][0]["status"], serde_json::json!("open"));
    // --strict fails on known findings too
    let out = mutant_run(&dir, "cohort-set", "3", &["--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // list, a status change, retire
    let out = verify(&["findings", "list", "--known", s(&known)]);
    assert!(
        text(&out).contains(&format!("signature  {sig}")),
        "{}",
        text(&out)
    );
    let out = verify(&[
        "findings",
        "accept",
        &sig,
        "--status",
        "reported-upstream",
        "--link",
        "https://example.invalid/1",
        "--known",
        s(&known),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(std::fs::read_to_string(&known)
        .unwrap()
        .contains("status: reported-upstream"));
    let out = verify(&["findings", "retire", &sig, "--known", s(&known)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!std::fs::read_to_string(&known).unwrap().contains(&sig));
}

#[test]
fn a_malformed_ledger_names_the_file_and_field_and_exits_2() {
    let dir = scratch_dir("malformed");
    let known = dir.join("known.yaml");
    std::fs::write(
        &known,
        "findings:\n- signature: x\n  title: t\n  status: fixed\n  first_seen: today\n",
    )
    .unwrap();
    let out = mutant_run(&dir, "cohort-set", "1", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("known.yaml: field `findings[0].status`"), "{t}");
    assert!(t.contains("reported-upstream"), "what was expected: {t}");
    let out = verify(&["findings", "list", "--known", s(&known)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_ledger_entry_that_no_longer_reproduces_is_printed_as_possibly_fixed() {
    let dir = scratch_dir("fixed");
    // the minimal example holds: as a ledger entry's scenario it no longer reproduces
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenario/examples/minimal.yaml");
    std::fs::write(
        dir.join("known.yaml"),
        format!(
            "findings:\n- signature: accounting:InstanceType:status.accelerator.capacity\n  title: old\n  status: open\n  scenario: {}\n  first_seen: then\n",
            example.display()
        ),
    )
    .unwrap();
    let out = verify(&[
        "fuzz",
        "--tier",
        "model",
        "--seeds",
        "2",
        "--run-dir",
        s(&dir.join("runs")),
        "--regressions",
        s(&dir.join("regressions.txt")),
        "--known",
        s(&dir.join("known.yaml")),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("possibly fixed: accounting:InstanceType:status.accelerator.capacity"),
        "{t}"
    );
}

#[test]
fn the_committed_ledger_names_the_generic_cpu_key_collision_by_its_scenarios_signature() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ledger = reports::Ledger::load(&root.join(reports::findings::KNOWN_FILE)).unwrap();
    let entry = ledger
        .findings
        .iter()
        .find(|f| f.title.starts_with("generic CPU key collides"))
        .expect("the collision is the ledger's first entry");
    let s = scenario::load(&root.join(&entry.scenario)).unwrap();
    let Some(model::scenario::Expectation::Violation { property, .. }) = s.expect.first() else {
        panic!("the entry's scenario records its violation");
    };
    // the signature comes from the oracle's structured violation, not the recorded words
    let v = oracle::check_all(&s)
        .into_iter()
        .find(|v| v.property == property)
        .expect("the scenario still violates its recorded property");
    let cx = reports::Counterexample::of_violation(18137, &v, s.clone(), 0);
    assert_eq!(cx.signature(), entry.signature);
    // its upstream issue's cluster: the Nodes, their NodeFeatures and Devices, as YAML
    let yaml = reports::findings::manifests_yaml(&fuzz::cluster_manifests(&s).unwrap()).unwrap();
    for kind in ["kind: Node\n", "kind: NodeFeature\n", "kind: Devices\n"] {
        assert_eq!(
            yaml.matches(kind).count(),
            s.cluster.nodes.len(),
            "{kind}: {yaml}"
        );
    }
    // and the scenario still reproduces it on the model (exit 1 while the operator gap stands)
    let out = verify(&["replay", s_path(&root.join(&entry.scenario))]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("recorded violation of accounting: reproduced"));
}

fn s_path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn findings_drops_regression_seeds_that_pass_and_keeps_the_rest() {
    let dir = scratch_dir("prune");
    let regressions = dir.join("regressions.txt");
    // seed 3 holds on the model; seed 0 holds on the twin (a twin-matches-model line)
    std::fs::write(
        &regressions,
        "# header\n3 # accounting\n0 # twin-matches-model\n",
    )
    .unwrap();
    let out = verify(&[
        "findings",
        "--regressions",
        s(&regressions),
        "--known",
        s(&dir.join("known.yaml")),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("regression seed 3: passes now (dropped)"), "{t}");
    assert!(t.contains("regression seed 0: passes now (dropped)"), "{t}");
    assert_eq!(std::fs::read_to_string(&regressions).unwrap(), "# header\n");
}
