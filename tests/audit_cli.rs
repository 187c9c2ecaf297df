//! `verify audit --snapshot` and `verify cleanup` through the binary: exit codes and the
//! messages a user sees (the audit's logic is tested in live/tests/audit.rs).

use std::path::PathBuf;
use std::process::{Command, Output};

use live::twin::kinds::{self, Kind};
use live::twin::operator::{reconcile, write_mock};
use live::twin::store::{Selector, Store};
use serde_json::{json, Value};

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .output()
        .expect("run verify")
}

fn scratch(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("verify-audit-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write");
    path
}

/// The walkthrough reconciled by the twin's reference operator, listed as kubectl would.
fn walkthrough_dump() -> Value {
    let c = model::examples::walkthrough();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    assert!(reconcile(&mut store, &c.settings, None).is_ok());
    let kinds: [Kind; 7] = [
        kinds::NODE,
        kinds::DEVICES,
        kinds::INSTANCE_TYPE,
        kinds::RESOURCE_FLAVOR,
        kinds::CLUSTER_QUEUE,
        kinds::LOCAL_QUEUE,
        kinds::ADMISSION_CHECK,
    ];
    let items: Vec<Value> = kinds
        .iter()
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
    let clean = scratch("clean.json", &doc.to_string());
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
    let edited = scratch("edited.json", &doc.to_string());
    let out = verify(&["audit", "--snapshot", edited.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("finding 1: ResourceFlavor "), "{text}");
    assert!(text.contains("1 finding(s), 1 difference(s)"), "{text}");
}

#[test]
fn a_bad_dump_exits_2_naming_file_and_field() {
    let bad = scratch(
        "bad.json",
        r#"{"kind": "List", "items": [{"kind": "Node"}]}"#,
    );
    let out = verify(&["audit", "--snapshot", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.json: items[0].apiVersion"), "{err}");
    let out = verify(&["audit", "--snapshot", "/nonexistent/dump.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cleanup_refuses_a_real_cluster_without_context() {
    let kubeconfig = scratch(
        "kubeconfig",
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
