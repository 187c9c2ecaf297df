//! The `verify` binary end to end: outputs, exit codes and error messages.

mod common;

use common::http_get;
use std::path::PathBuf;
use std::process::{Command, Output};

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .output()
        .expect("run verify")
}

fn scratch(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("verify-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn derive_announces_the_embedded_cluster_and_prints_its_pools() {
    let out = verify(&["derive"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("embedded walkthrough"),
        "{text}"
    );
    assert!(
        text.contains("gpustack--nvidia-tesla-t4-linux-amd64"),
        "{text}"
    );
    assert!(text.contains("gpustack-fnv64-6b371caa2da0b799"), "{text}");
}

#[test]
fn derive_json_is_a_parseable_document() {
    let out = verify(&["derive", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["instance_types"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_bad_cluster_file_names_the_field_and_exits_2() {
    let bad = scratch(
        "bad-mode.json",
        r#"{"nodes": [{"name": "n1", "devices": {"groups": [{"manufacturer": "nvidia", "id": "a10",
            "cards": [{"id": "c0", "ledger": {"mode": 9}}]}]}}]}"#,
    );
    let out = verify(&["derive", "--cluster", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-mode.json"), "{err}");
    assert!(
        err.contains("nodes[0].devices.groups[0].cards[0].ledger.mode"),
        "{err}"
    );
    assert!(err.contains("unknown device allocation mode 9"), "{err}");

    let negative = scratch(
        "negative.json",
        r#"{"nodes": [{"name": "n1", "cpu_millis": -4}]}"#,
    );
    let out = verify(&["derive", "--cluster", negative.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nodes[0].cpu_millis"));

    let vendor = scratch(
        "vendor.json",
        r#"{"nodes": [{"name": "n1", "devices": {"groups": [{"manufacturer": "acme", "id": "x"}]}}]}"#,
    );
    let out = verify(&["derive", "--cluster", vendor.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nodes[0].devices.groups[0].manufacturer")
    );
}

#[test]
fn conformance_on_a_missing_folder_is_a_usage_error() {
    let out = verify(&["conformance", "/nonexistent-verify-folder"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn conformance_over_the_shared_vectors_passes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    if !dir.is_dir() {
        println!("skipped: ../shared/conformance is absent beside the checkout");
        return;
    }
    let out = verify(&["conformance", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(last.contains(" 0 failed"), "{last}");
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("verify-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn fuzz_announces_its_tier_and_passes_on_the_real_model() {
    let dir = scratch_dir("fuzz-ok");
    let regressions = dir.join("regressions.txt");
    let out = verify(&[
        "fuzz",
        "--tier",
        "model",
        "--seeds",
        "20",
        "--run-dir",
        dir.join("runs").to_str().unwrap(),
        "--regressions",
        regressions.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.lines().next().unwrap().starts_with("tier: model"),
        "{text}"
    );
    assert!(text.contains("20 seeds, 0 failing"), "{text}");
    assert!(!regressions.exists(), "nothing failed, nothing recorded");
}

#[test]
fn a_mutant_counterexample_is_written_recorded_and_replayable() {
    let dir = scratch_dir("fuzz-mutant");
    let regressions = dir.join("regressions.txt");
    let runs = dir.join("runs");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "fuzz",
            "--tier",
            "model",
            "--seeds",
            "3",
            "--mutant",
            "cohort-set",
            "--run-dir",
            runs.to_str().unwrap(),
            "--regressions",
            regressions.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        verify(&args)
    };
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let written: Vec<PathBuf> = walk(&dir.join("runs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    assert_eq!(written.len(), 3, "one counterexample per seed: {written:?}");
    // A mutant's counterexamples stay out of the regression file (issue [M11] item 3: replayed
    // without the mutant they prove nothing); this test pinned the old appending before.
    assert!(
        !regressions.exists(),
        "no regression seed from a mutant run"
    );
    // The recorded counterexample replays: the divergence still reproduces (exit 1).
    let out = verify(&["replay", written[0].to_str().unwrap()]);
    let replayed = String::from_utf8_lossy(&out.stdout);
    assert!(
        replayed.contains("recorded violation of mutant-cohort-set: reproduced"),
        "{replayed}"
    );
    assert!(replayed.contains("counterexample: see above"), "{replayed}");
    assert_eq!(out.status.code(), Some(1), "{replayed}");
    // --seed replays exactly one seed, without the regression list.
    let out = run(&["--seed", "1"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 seeds, 1 failing"));
}

#[test]
fn the_minimal_example_replays_and_holds() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenario/examples/minimal.yaml");
    let out = verify(&["replay", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("all properties and expectations held"),
        "{text}"
    );
}

/// A scenario with nothing to derive, step or expect holds vacuously: the replay says it
/// verified nothing (exit 0) instead of "held".
#[test]
fn an_empty_scenario_verifies_nothing_and_says_so() {
    for (name, body) in [
        ("empty.yaml", "name: empty\ncluster: {}\nevents: []\n"),
        (
            "no-nodes.yaml",
            "name: n\ncluster:\n  namespaces: [{name: default}]\nevents: []\n",
        ),
    ] {
        let file = scratch(name, body);
        let out = verify(&["replay", file.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains("NOTHING WAS VERIFIED"), "{text}");
        assert!(!text.contains("held"), "{text}");
    }
}

/// Kubernetes refuses a negative request before any rule reads it: a scenario submitting
/// one is bad input naming the quantity's field, not a Workload to admit.
#[test]
fn a_negative_gpu_request_is_refused_with_its_field() {
    let minimal = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenario/examples/minimal.yaml"),
    )
    .unwrap();
    let body = minimal.replace("nvidia.com/gpu: \"1\"", "nvidia.com/gpu: \"-1\"");
    assert_ne!(body, minimal);
    let file = scratch("negative.yaml", &body);
    let out = verify(&["replay", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"events[0].workload.pod_sets[0].containers[0].requests."nvidia.com/gpu""#),
        "{err}"
    );
    assert!(err.contains("must be greater than or equal to 0"), "{err}");
}

/// A typo in an operator-settings file would leave that setting at its default and judge a
/// cluster the file does not describe: unknown keys are refused by name.
#[test]
fn an_unknown_operator_setting_is_refused_by_name() {
    let settings = scratch(
        "settings.json",
        r#"{"mixed_on_node": true, "mixedOnNode": true}"#,
    );
    // the settings are read before the cluster is contacted
    let out = verify(&[
        "operator",
        "--operator-settings",
        settings.to_str().unwrap(),
        "--context",
        "nowhere",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--yes",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("settings.json"), "{err}");
    assert!(err.contains("`mixedOnNode`"), "{err}");
    assert!(err.contains("mixed_on_node"), "{err}");
}

/// A file of deeply nested flow collections is refused before the YAML parser sees it (the
/// parser's time grows with depth squared: 10 s for 40 KB of `[[[…]]]`), naming where.
#[test]
fn deeply_nested_yaml_is_refused_where_it_passes_the_bound() {
    let depth = 20_000;
    let body = format!(
        "name: x\ncluster: {{}}\nevents: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let file = scratch("nested.yaml", &body);
    let out = verify(&["replay", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nested.yaml:3:73"), "{err}");
    assert!(err.contains("nested deeper than 64 levels"), "{err}");
}

#[test]
fn a_malformed_scenario_names_the_line_and_field() {
    let bad = scratch(
        "bad.yaml",
        "name: x\ncluster:\n  nodes:\n    - name: n1\n      cpu_millis: lots\n",
    );
    let out = verify(&["replay", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml:5"), "{err}");
    assert!(err.contains("cluster.nodes[0].cpu_millis"), "{err}");
}

#[test]
fn mutants_list_names_the_catalog() {
    let out = verify(&["mutants", "--list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text.lines().count(), model::mutants::Mutant::ALL.len());
    assert!(text.contains("substring-pool-match"));
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn the_readme_scenario_example_replays_and_holds() {
    let readme = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/scenarios.md"),
    )
    .unwrap();
    let start = readme.find("```yaml\n").expect("README has a YAML example") + "```yaml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let file = scratch("readme-example.yaml", &readme[start..end]);
    let out = verify(&["replay", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("event 0: admitted"), "{text}");
}

#[test]
fn check_prints_every_verdict_and_exits_by_them() {
    let out = verify(&["check", "--nodes", "1", "--cards", "1", "--workloads", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("unique"), "{text}");
    assert!(
        text.contains("[always] no card overcommitted: held"),
        "{text}"
    );
    let dir = scratch_dir("check-mutant");
    let runs = dir.join("runs");
    let out = verify(&[
        "check",
        "--nodes",
        "1",
        "--cards",
        "1",
        "--workloads",
        "1",
        "--mutant",
        "cohort-set",
        "--run-dir",
        runs.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("counterexample scenario:"), "{text}");
}

#[test]
fn check_of_an_out_of_range_scope_is_a_usage_error_naming_the_option() {
    let out = verify(&["check", "--nodes", "9"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--nodes"), "{err}");
}

#[test]
fn fuzz_defaults_to_the_twin_and_says_so_first() {
    let dir = scratch_dir("fuzz-twin");
    let out = verify(&[
        "fuzz",
        "--seeds",
        "3",
        "--run-dir",
        dir.join("runs").to_str().unwrap(),
        "--regressions",
        dir.join("r.txt").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("tier: twin (embedded Kubernetes-API twin on 127.0.0.1"),
        "{first}"
    );
    assert!(first.contains("no cluster contacted"), "{first}");
    assert!(text.contains("3 seeds, 0 failing"), "{text}");
}

#[test]
fn a_mutant_in_the_twins_operator_fails_the_twin_tier_with_a_counterexample() {
    let dir = scratch_dir("fuzz-twin-mutant");
    let out = verify(&[
        "fuzz",
        "--twin",
        "--mutant",
        "quota-off-by-one",
        "--seed",
        "0",
        "--run-dir",
        dir.join("runs").to_str().unwrap(),
        "--regressions",
        dir.join("r.txt").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL seed 0: twin-matches-model"), "{text}");
    let reports: Vec<PathBuf> = walk(&dir.join("runs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains("nominalQuota"), "{report}");
    // the scenario records the twin operator's mutant and replays on a twin under it (it
    // replayed on the model alone before, and said it no longer reproduced)
    let yaml = reports[0].with_extension("yaml");
    let out = verify(&["replay", yaml.to_str().unwrap()]);
    let replayed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{replayed}");
    assert!(
        replayed.contains("replaying on an embedded twin running mutant quota-off-by-one"),
        "{replayed}"
    );
    assert!(
        replayed.contains("recorded violation of twin-matches-model: reproduced"),
        "{replayed}"
    );
    assert!(
        !std::fs::read_to_string(dir.join("r.txt")).is_ok_and(|t| !t.trim().is_empty()),
        "a mutant's seed is not a regression"
    );
}

#[test]
fn a_run_of_no_seed_says_nothing_was_verified() {
    let dir = scratch_dir("fuzz-none");
    let out = verify(&[
        "fuzz",
        "--seeds",
        "0",
        "--run-dir",
        dir.join("runs").to_str().unwrap(),
        "--regressions",
        dir.join("r.txt").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("NOTHING WAS VERIFIED"));
}

#[test]
fn twin_serve_answers_discovery_on_loopback_and_writes_a_kubeconfig() {
    use std::io::{BufRead, BufReader};
    let dir = scratch_dir("twin");
    let kubeconfig = dir.join("kubeconfig");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_verify"))
        .args([
            "twin",
            "serve",
            "--kubeconfig-out",
            kubeconfig.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the twin");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first.rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{first}");
    let second = lines.next().unwrap().unwrap();
    assert!(second.starts_with("kubeconfig:"), "{second}");
    let response = http_get(&common::served_addr(&first), "/api");
    let _ = child.kill();
    let _ = child.wait();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("APIVersions"), "{response}");
    let config = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(config.contains(&url), "{config}");
}

#[test]
fn twin_serve_with_the_walkthrough_derives_its_three_queues() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(["twin", "serve", "--walkthrough"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the twin");
    let first = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let addr = common::served_addr(&first);
    // The operator reconciles right after start; wait for it, bounded.
    let mut body = String::new();
    for _ in 0..200 {
        body = http_get(&addr, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues");
        if body.matches("\"gpustack--").count() >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    for q in [
        "gpustack--generic-linux-amd64",
        "gpustack--nvidia-a10g-linux-amd64",
        "gpustack--nvidia-tesla-t4-linux-amd64",
    ] {
        assert!(body.contains(q), "{q} missing: {body}");
    }
}

#[test]
fn cases_lists_the_index_with_modelled_and_reasons() {
    let out = verify(&["cases"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("CASE | MODELLED | POSTURE | SCOPE | TITLE | NEEDS"),
        "{text}"
    );
    assert!(text.contains("14 | yes | MUTATING |"), "{text}");
    assert!(text.contains("never used"), "{text}");
}

#[test]
fn case_14_prints_its_table_and_passes_on_the_model() {
    let out = verify(&["case", "14"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("STATUS | CHECK | OBJECT"), "{text}");
    assert!(text.contains("CASE 14 PASS"), "{text}");
}

#[test]
fn a_mutant_the_case_guards_against_fails_it() {
    let out = verify(&["case", "24", "--mutant", "one-token-pool"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CASE 24 FAIL"));
}

#[test]
fn live_mig_without_the_address_exits_2_naming_it_and_the_twin_runs_a_case() {
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(["case", "--block", "mig", "--tier", "live"])
        .env_remove("MIG_NODE_SSH")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("MIG_NODE_SSH"));
    let out = verify(&["case", "14", "--tier", "twin"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(cases::TWIN_CHECK), "{text}");
    assert!(text.contains("CASE 14 PASS"), "{text}");
}

#[test]
fn rdma_report_only_names_what_each_unmet_requirement_lacks() {
    let out = verify(&["case", "--block", "rdma", "--report-only"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nothing touched"), "{text}");
    assert!(text.contains("| endpoint | UNMET | lacks"), "{text}");
    assert!(text.contains("| accelerator | MET |"), "{text}");
}

#[test]
fn junit_output_is_xml_and_an_unused_number_exits_2() {
    let out = verify(&["case", "--block", "rdma", "--format", "junit"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("<?xml"), "{text}");
    assert!(text.contains("case-80"), "{text}");
    let out = verify(&["case", "33"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never used"));
}

#[test]
fn a_case_file_replays_with_verify_replay() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/cases/scenarios/06.yaml");
    let out = verify(&["replay", file]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The one run directory a fuzz run wrote under `runs`.
fn only_run(runs: &std::path::Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn a_fuzz_run_leaves_a_run_directory_that_report_re_renders() {
    let dir = scratch_dir("fuzz-report");
    let runs = dir.join("runs");
    let out = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args([
            "fuzz",
            "--tier",
            "model",
            "--seeds",
            "2",
            "--mutant",
            "cohort-set",
            "--run-dir",
            runs.to_str().unwrap(),
            "--regressions",
            dir.join("r.txt").to_str().unwrap(),
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(!text.contains('\u{1b}'), "no colour with NO_COLOR: {text}");
    let run = only_run(&runs);
    assert!(text.contains(&format!("run directory: {}", run.display())));
    // The closing summary table names the verdict and each report.
    assert!(text.contains("verdict          failed"), "{text}");
    assert!(text.contains("counterexamples/0.md"), "{text}");
    assert!(text.contains("coverage over 2 scenarios"), "{text}");

    let report = |format: &str| {
        let out = verify(&["report", run.to_str().unwrap(), "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}");
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    assert_eq!(json["verdict"], "failed");
    assert_eq!(json["figures"]["ran"], 2);
    assert_eq!(json["counterexamples"][0]["property"], "mutant-cohort-set");
    assert_eq!(
        json["coverage"]["classes"]["properties"]["mutant-cohort-set"],
        2
    );
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json, on_disk);
    let csv = report("csv");
    assert!(csv.starts_with("seed,property,step,kind,name,field,expected,observed\n"));
    assert!(
        csv.contains("\n0,mutant-cohort-set,0,ClusterQueue,"),
        "{csv}"
    );
    let junit = report("junit");
    assert!(
        junit.contains("<testcase name=\"mutant-cohort-set\""),
        "{junit}"
    );
    assert!(
        junit.contains("<failure message=\"seed(s) 0, 1:"),
        "{junit}"
    );
    let md = report("md");
    assert!(
        md.contains("# Counterexample: seed 1 — `mutant-cohort-set`"),
        "{md}"
    );
    let page = dir.join("page.html");
    let out = verify(&[
        "report",
        run.to_str().unwrap(),
        "--format",
        "html",
        "--output",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<td class=\"failed\">failed</td>"), "{html}");

    // A folder that is not a run directory: exit 2, naming the file it needed.
    let out = verify(&["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("summary.json"));
    let out = verify(&["report", run.to_str().unwrap(), "--format", "pdf"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected md, json, csv, junit, html"));
}

#[test]
fn an_unmet_coverage_floor_exits_4_and_a_bad_floor_exits_2() {
    let dir = scratch_dir("fuzz-floor");
    let runs = dir.join("runs");
    let fuzz = |floor: &str| {
        verify(&[
            "fuzz",
            "--seeds",
            "4",
            "--run-dir",
            runs.to_str().unwrap(),
            "--regressions",
            dir.join("r.txt").to_str().unwrap(),
            "--min-coverage",
            floor,
        ])
    };
    let out = fuzz("nodes=1,vendors:no-such-vendor=1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains("vendors:no-such-vendor=1 NOT MET (reached 0)"),
        "{text}"
    );
    assert!(text.contains("nodes=1 met"), "{text}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(only_run(&runs).join("summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["verdict"], "coverage-unmet");
    assert_eq!(fuzz("properties=1").status.code(), Some(0));
    let out = fuzz("vendors");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected CLASS=N"));
}

/// `verify audit --snapshot` and `verify cleanup`: exit codes and messages (the audit's logic
/// is tested in live/tests/audit.rs).
mod audit_and_cleanup {
    use super::{scratch, verify};
    use live::operator::{reconcile, write_mock};
    use live::server::store::Store;
    use serde_json::{json, Value};

    /// The walkthrough reconciled by the twin's reference operator, listed as kubectl would;
    /// the joint AdmissionCheck Active, as an installed operator keeps it (the twin has no
    /// joint controller, and the audit reads the checks).
    fn walkthrough_dump() -> Value {
        let c = model::examples::walkthrough();
        let mut store = Store::default();
        assert_eq!(write_mock(&mut store, &c), Ok(()));
        assert!(live::operator::admission::write_joint_check(&mut store, true).is_ok());
        assert!(reconcile(&mut store, &c.settings, None).is_ok());
        live::audit::kubectl_dump(&store)
    }

    #[test]
    fn a_clean_dump_exits_0_and_an_edited_flavor_exits_1() {
        let mut doc = walkthrough_dump();
        let clean = scratch("audit-clean.json", &doc.to_string());
        let out = verify(&["audit", "--snapshot", clean.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.starts_with("audit: "), "{text}");
        assert!(text.contains("no divergences"), "{text}");

        let rf = doc["items"]
            .as_array_mut()
            .and_then(|items| items.iter_mut().find(|o| o["kind"] == "ResourceFlavor"))
            .expect("a flavor");
        rf["spec"]["nodeLabels"]["verify.gpustack.ai/edited"] = json!("yes");
        let edited = scratch("audit-edited.json", &doc.to_string());
        let out = verify(&["audit", "--snapshot", edited.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains("finding 1: ResourceFlavor "), "{text}");
        assert!(text.contains("1 finding(s), 1 difference(s)"), "{text}");
    }

    /// A cluster lists kinds one after another: a LocalQueue listed after its namespace went
    /// (a run's teardown just before) is left out as going with it, not a bad input or a
    /// divergence (back-to-back runs exited 2 on it).
    #[test]
    fn local_queues_of_a_namespace_that_went_are_left_out() {
        let mut doc = walkthrough_dump();
        let items = doc["items"].as_array_mut().expect("items");
        let mut gone = items
            .iter()
            .find(|o| o["kind"] == "LocalQueue")
            .expect("a LocalQueue")
            .clone();
        gone["metadata"]["namespace"] = json!("run-gone");
        items.push(gone);
        let namespaces: std::collections::BTreeSet<String> = items
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str())
            .filter(|ns| *ns != "run-gone")
            .map(str::to_string)
            .collect();
        for ns in namespaces {
            items.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        }
        let dump = scratch("audit-gone-namespace.json", &doc.to_string());
        let out = verify(&["audit", "--snapshot", dump.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(
            text.contains("left out: 1 object(s) in namespaces not listed"),
            "{text}"
        );
        assert!(text.contains("LocalQueue run-gone/"), "{text}");
    }

    #[test]
    fn a_bad_dump_exits_2_naming_file_and_field() {
        let bad = scratch(
            "audit-bad.json",
            r#"{"kind": "List", "items": [{"kind": "Node"}]}"#,
        );
        let out = verify(&["audit", "--snapshot", bad.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("audit-bad.json: items[0].apiVersion"), "{err}");
        let out = verify(&["audit", "--snapshot", "/nonexistent/dump.json"]);
        assert_eq!(out.status.code(), Some(2));
    }

    #[test]
    fn cleanup_refuses_a_real_cluster_without_context() {
        let kubeconfig = scratch(
            "audit-kubeconfig",
            &live::server::kubeconfig::kubeconfig_yaml("https://10.0.0.1:6443", "docker-desktop"),
        );
        let out = verify(&[
            "cleanup",
            "--all-runs",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("--context docker-desktop"), "{err}");
        assert!(out.stdout.is_empty(), "nothing contacted");
    }
}

/// A reader that went away (`verify fuzz … | head -1`): the run neither panics nor leaves its
/// summary `running`; it ends with its own verdict. The pipe's read end is closed before the
/// child writes, so every write fails (EPIPE), whatever the timing.
#[test]
fn a_closed_stdout_neither_panics_nor_loses_the_run_summary() {
    let dir = scratch_dir("closed-stdout");
    let runs = dir.join("runs");
    let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args([
            "fuzz",
            "--tier",
            "model",
            "--seeds",
            "3",
            "--run-dir",
            runs.to_str().unwrap(),
            "--regressions",
            dir.join("r.txt").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary = std::fs::read_to_string(only_run(&runs).join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["verdict"], "held", "{summary}");

    let report = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(["report", only_run(&runs).to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut report = report;
    drop(report.stdout.take());
    let out = report.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ctrl-C and kills: a stopped run says it was interrupted (exit 3, summary `interrupted`);
/// a killed run's summary, still `running`, reads as `interrupted` once its process is gone;
/// `twin serve` stops on Ctrl-C with exit 0.
mod interrupted {
    use super::common::signal;
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};

    /// A long model-tier fuzz run and its run directory, once it printed it (its Ctrl-C
    /// handler is installed by then).
    fn long_fuzz(name: &str) -> (Child, PathBuf) {
        let runs = std::env::temp_dir().join(format!("verify-int-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&runs);
        std::fs::create_dir_all(&runs).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
            .args([
                "fuzz", "--tier", "model", "--seeds", "1000000", "--jobs", "1",
            ])
            .arg("--run-dir")
            .arg(&runs)
            .arg("--regressions")
            .arg(runs.join("regressions.txt"))
            .arg("--known")
            .arg(runs.join("known.yaml"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the run");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let dir = loop {
            let line = lines.next().expect("the run prints its directory").unwrap();
            if let Some(d) = line.strip_prefix("run directory: ") {
                break PathBuf::from(d);
            }
        };
        std::thread::spawn(move || for _ in lines {});
        (child, dir)
    }

    fn verdict(dir: &Path) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_verify"))
            .args(["report", dir.to_str().unwrap(), "--format", "json"])
            .output()
            .expect("verify report");
        let summary: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("the summary as JSON");
        summary["verdict"].as_str().unwrap_or_default().to_string()
    }

    #[test]
    fn a_fuzz_run_stopped_by_ctrl_c_exits_3_and_says_interrupted() {
        let (mut child, dir) = long_fuzz("sigint");
        signal(&child, "-INT");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(3), "{status:?}");
        assert_eq!(verdict(&dir), "interrupted");
    }

    #[test]
    fn a_killed_fuzz_run_reads_as_interrupted() {
        let (mut child, dir) = long_fuzz("sigkill");
        signal(&child, "-KILL");
        let _ = child.wait();
        let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        assert!(summary.contains("\"running\""), "{summary}");
        assert_eq!(verdict(&dir), "interrupted");
    }

    #[test]
    fn twin_serve_stops_on_ctrl_c_with_exit_0() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
            .args(["twin", "serve"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the twin");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // the handler is installed before this line
        for line in lines.by_ref() {
            if line.unwrap().starts_with("stop with Ctrl-C") {
                break;
            }
        }
        signal(&child, "-INT");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{status:?}");
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        assert!(rest.iter().any(|l| l == "twin: stopped"), "{rest:?}");
    }
}

/// Command-line conventions (issue [M16]): completions, the man page, wrapped help, the log on
/// stderr, `-o json`, and one sentence for a server that cannot be reached.
mod conventions {
    use super::*;

    /// `verify ARGS` with `RUST_LOG` set to `rust_log`, or unset.
    fn verify_log(args: &[&str], rust_log: Option<&str>) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_verify"));
        cmd.args(args).env_remove("RUST_LOG");
        if let Some(directives) = rust_log {
            cmd.env("RUST_LOG", directives);
        }
        cmd.output().expect("run verify")
    }

    fn json(out: &Output) -> serde_json::Value {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "not one JSON document ({e}):\n{}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    #[test]
    fn completions_name_the_subcommands_and_the_man_page_is_roff() {
        let out = verify(&["completions", "bash"]);
        assert_eq!(out.status.code(), Some(0));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains("_verify"), "{script}");
        assert!(script.contains("fuzz"), "{script}");
        for shell in ["zsh", "fish", "elvish", "powershell"] {
            let out = verify(&["completions", shell]);
            assert_eq!(out.status.code(), Some(0), "{shell}");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("fuzz"),
                "{shell}"
            );
        }
        assert_eq!(verify(&["completions", "tcsh"]).status.code(), Some(2));
        for man in ["man", "manpage"] {
            let out = verify(&[man]);
            assert_eq!(out.status.code(), Some(0));
            let page = String::from_utf8_lossy(&out.stdout);
            assert!(page.contains(".TH"), "{page}");
            assert!(page.contains("verify"), "{page}");
        }
    }

    /// `verify PATH… --help` and, recursively, the help of each subcommand it lists.
    fn assert_help_wrapped(path: &mut Vec<String>, seen: &mut usize) {
        let mut args = path.clone();
        args.push("--help".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = verify(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        let longest = help.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(
            longest <= 100,
            "{args:?}: a line of {longest} chars\n{help}"
        );
        *seen += 1;
        let commands = help
            .split("\nCommands:\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or("");
        // a command's line starts with two spaces and its name; wrapped text is indented more
        let names: Vec<String> = commands
            .lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_string)
            .collect();
        for name in names {
            path.push(name);
            assert_help_wrapped(path, seen);
            path.pop();
        }
    }

    #[test]
    fn help_is_wrapped_at_100_columns_without_a_terminal() {
        let mut seen = 0;
        assert_help_wrapped(&mut Vec::new(), &mut seen);
        assert!(seen > 20, "only {seen} help pages found");
    }

    #[test]
    fn verbose_and_rust_log_write_a_log_on_stderr_and_quiet_refuses_verbose() {
        let plain = verify_log(&["cases"], None);
        assert_eq!(plain.status.code(), Some(0));
        assert!(plain.stderr.is_empty(), "{:?}", plain.stderr);
        let verbose = verify_log(&["-v", "cases"], None);
        assert_eq!(verbose.status.code(), Some(0));
        let log = String::from_utf8_lossy(&verbose.stderr);
        assert!(
            log.contains("INFO") && log.contains("verify -v cases"),
            "{log}"
        );
        assert_eq!(verbose.stdout, plain.stdout, "the log leaves stdout alone");
        let debug = verify_log(&["cases"], Some("debug"));
        let log = String::from_utf8_lossy(&debug.stderr);
        assert!(
            log.contains("DEBUG") && log.contains("dispatching"),
            "{log}"
        );
        // RUST_LOG wins over -q
        let env_wins = verify_log(&["-q", "cases"], Some("verify=debug"));
        assert!(String::from_utf8_lossy(&env_wins.stderr).contains("dispatching"));
        assert_eq!(
            verify_log(&["-q", "-v", "cases"], None).status.code(),
            Some(2)
        );
    }

    #[test]
    fn tables_print_as_one_json_document_with_o_json() {
        let cases = json(&verify(&["cases", "-o", "json"]));
        let rows = cases["cases"].as_array().expect("cases[]");
        assert_eq!(Some(rows.len() as u64), cases["total"].as_u64());
        let case14 = rows.iter().find(|c| c["number"] == 14).expect("case 14");
        assert_eq!(case14["modelled"], true, "{case14}");
        assert_eq!(case14["posture"], "MUTATING", "{case14}");

        let findings = json(&verify(&["findings", "list", "-o", "json"]));
        let first = &findings["findings"][0];
        assert!(first["signature"].as_str().is_some(), "{findings}");
        assert!(first["status"].as_str().is_some(), "{findings}");

        let mutants = json(&verify(&["mutants", "--list", "--output-format", "json"]));
        let names: Vec<&str> = mutants["mutants"]
            .as_array()
            .expect("mutants[]")
            .iter()
            .filter_map(|m| m["name"].as_str())
            .collect();
        assert!(names.contains(&"quota-off-by-one"), "{names:?}");
        let kill_table = verify(&["mutants", "-o", "json", "--seeds", "1"]);
        assert_eq!(kill_table.status.code(), Some(2), "JSON is for --list only");

        let case = json(&verify(&["case", "14", "-o", "json"]));
        let run = &case["runs"][0];
        assert_eq!(run["number"], 14, "{case}");
        assert_eq!(run["verdict"]["kind"], "pass", "{case}");
        let skipped = run["verdict"]["skipped"].as_u64().expect("skipped");
        let line = run["verdict_line"].as_str().unwrap_or_default();
        assert!(line.starts_with("CASE 14 PASS"), "{case}");
        let rows = run["rows"].as_array().expect("rows[]");
        let status = |s: &str| rows.iter().filter(|r| r["status"] == s).count() as u64;
        assert_eq!((status("FAIL"), status("SKIP")), (0, skipped), "{case}");
        assert!(status("PASS") > 0, "{case}");
        assert!(rows
            .iter()
            .all(|r| r["check"].is_string() && r["object"].is_string()));
    }

    /// kubectl says "The connection to the server … was refused": one sentence, not a
    /// preflight line per check that could not run.
    #[test]
    fn an_unreachable_server_is_one_sentence_naming_it_and_exits_3() {
        let kubeconfig = scratch(
            "unreachable-kubeconfig",
            &live::server::kubeconfig::kubeconfig_yaml("https://127.0.0.1:1", "nowhere"),
        );
        let dir = scratch_dir("unreachable");
        let k = kubeconfig.to_str().unwrap();
        let runs = dir.join("runs");
        let regressions = dir.join("r.txt");
        for args in [
            vec!["audit", "--kubeconfig", k, "--context", "nowhere"],
            vec![
                "fuzz",
                "--kubeconfig",
                k,
                "--context",
                "nowhere",
                "--yes",
                "--seeds",
                "1",
                "--run-dir",
                runs.to_str().unwrap(),
                "--regressions",
                regressions.to_str().unwrap(),
            ],
        ] {
            let out = verify_log(&args, None);
            let err = String::from_utf8_lossy(&out.stderr);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(3), "{args:?}: {err}{text}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains("https://127.0.0.1:1"), "{err}");
            assert!(err.to_lowercase().contains("refused"), "{err}");
            assert!(!text.contains("PREFLIGHT"), "{text}");
        }
    }
}
