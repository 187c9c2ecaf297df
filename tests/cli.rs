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
