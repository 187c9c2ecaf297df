//! The `verify` binary end to end: outputs, exit codes and error messages.

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
    let recorded = std::fs::read_to_string(&regressions).unwrap();
    assert_eq!(recorded.lines().count(), 3, "{recorded}");
    // The recorded counterexample replays: the divergence still reproduces (exit 1).
    let out = verify(&["replay", written[0].to_str().unwrap()]);
    let replayed = String::from_utf8_lossy(&out.stdout);
    assert!(
        replayed.contains("recorded violation of mutant-cohort-set: reproduced"),
        "{replayed}"
    );
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
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
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
fn a_run_of_no_seed_says_nothing_was_verified() {
    let dir = scratch_dir("fuzz-none");
    let out = verify(&[
        "fuzz",
        "--seeds",
        "0",
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
    let response = http_get(url.trim_start_matches("http://"), "/api");
    let _ = child.kill();
    let _ = child.wait();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("APIVersions"), "{response}");
    let config = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(config.contains(&url), "{config}");
}

/// One HTTP GET on the twin; the response text.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
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
    let addr = first
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_start_matches("http://")
        .to_string();
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

/// `verify audit --snapshot` and `verify cleanup`: exit codes and messages (the audit's logic
/// is tested in live/tests/audit.rs).
mod audit_and_cleanup {
    use super::{scratch, verify};
    use live::audit::AUDITED_KINDS;
    use live::twin::kinds;
    use live::twin::operator::{reconcile, write_mock};
    use live::twin::store::{Selector, Store};
    use serde_json::{json, Value};

    /// The walkthrough reconciled by the twin's reference operator, listed as kubectl would.
    fn walkthrough_dump() -> Value {
        let c = model::examples::walkthrough();
        let mut store = Store::default();
        assert_eq!(write_mock(&mut store, &c), Ok(()));
        assert!(reconcile(&mut store, &c.settings, None).is_ok());
        // the kinds of the README's kubectl command: the audited ones but Namespaces
        let items: Vec<Value> = AUDITED_KINDS
            .iter()
            .filter(|k| **k != kinds::NAMESPACE)
            .flat_map(|k| {
                store
                    .list(k, None, &Selector::everything())
                    .map(|l| l.items)
                    .unwrap_or_default()
            })
            .collect();
        json!({"apiVersion": "v1", "kind": "List", "items": items})
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
            &live::twin::kubeconfig::kubeconfig_yaml("https://10.0.0.1:6443", "docker-desktop"),
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
