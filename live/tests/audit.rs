//! `verify audit --snapshot`: a dump of the twin after its reference operator reconciled the
//! walkthrough (listed the way the README's kubectl command lists it) audits clean; the same
//! dump with one ResourceFlavor edited reports exactly that flavor; malformed dumps name the
//! file and the field.

use live::audit::{audit, AuditError, NamespaceSource, Snapshot, AUDITED_KINDS};
use live::twin::kinds::{self, Kind};
use live::twin::operator::{reconcile, write_mock};
use live::twin::store::{Selector, Store};
use model::examples::{walkthrough, WALKTHROUGH_FLAVORS};
use model::Settings;
use oracle::ObjectKind;
use serde_json::{json, Value};

/// The kinds of `kubectl get nodes,devices,instancetypes,resourceflavors,clusterqueues,
/// localqueues,admissionchecks -A -o json` (no Namespaces).
fn kubectl_kinds() -> Vec<Kind> {
    AUDITED_KINDS
        .into_iter()
        .filter(|k| *k != kinds::NAMESPACE)
        .collect()
}

/// The walkthrough mocked and reconciled by the twin's reference operator.
fn reconciled() -> Store {
    let c = walkthrough();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    let first = reconcile(&mut store, &c.settings, None);
    assert!(first.is_ok(), "{first:?}");
    store
}

/// A v1 List of `kinds` from `store`; `managed_fields` false drops them as kubectl does by
/// default.
fn dump(store: &Store, kinds: &[Kind], managed_fields: bool) -> Value {
    let mut items = Vec::new();
    for kind in kinds {
        let listed = store
            .list(kind, None, &Selector::everything())
            .expect("the twin serves every audited kind");
        for mut o in listed.items {
            if !managed_fields {
                if let Some(meta) = o["metadata"].as_object_mut() {
                    meta.remove("managedFields");
                }
            }
            items.push(o);
        }
    }
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
}

fn run(snapshot: &Snapshot) -> Result<live::audit::Audit, AuditError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(audit(snapshot, &Settings::default()))
}

fn parse(doc: &Value) -> Snapshot {
    Snapshot::parse(&doc.to_string(), "dump.json").expect("a well-formed dump")
}

#[test]
fn the_reconciled_twin_audits_clean() {
    let doc = dump(&reconciled(), &kubectl_kinds(), true);
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
    assert_eq!(report.exit_code(), 0);
    assert_eq!(
        report.namespaces,
        NamespaceSource::FromLocalQueues(vec!["default".into(), "team-a".into()])
    );
    assert!(report.render().contains("no divergences"));
}

#[test]
fn without_managed_fields_it_still_audits_clean() {
    let doc = dump(&reconciled(), &kubectl_kinds(), false);
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
}

#[test]
fn listed_namespaces_are_used_when_present() {
    let doc = dump(&reconciled(), &AUDITED_KINDS, true);
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(
        report.namespaces,
        NamespaceSource::Listed(walkthrough().namespaces.len())
    );
    assert_eq!(report.differences, [], "{}", report.render());
}

#[test]
fn an_edited_flavor_is_the_one_finding() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let prefix = WALKTHROUGH_FLAVORS[1];
    let items = doc["items"].as_array_mut().expect("items");
    let rf = items
        .iter_mut()
        .find(|o| {
            o["kind"] == "ResourceFlavor"
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .expect("the A10G flavor is listed");
    let name = rf["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    rf["spec"]["nodeLabels"]["verify.gpustack.ai/edited"] = json!("yes");

    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report.findings.len(), 1, "{}", report.render());
    let root = &report.findings[0].root;
    assert_eq!(root.object.kind, ObjectKind::ResourceFlavor);
    assert_eq!(root.object.name, name);
    assert_eq!(root.differences.len(), 1, "{}", report.render());
    assert!(
        root.differences[0].field.contains("nodeLabels"),
        "{}",
        report.render()
    );
    assert!(report
        .render()
        .contains(&format!("finding 1: ResourceFlavor {name}")));
}

#[test]
fn a_malformed_dump_names_the_file_and_the_field() {
    let bad = |text: &str| match Snapshot::parse(text, "dump.json") {
        Err(e @ AuditError::Input { .. }) => {
            assert_eq!(e.exit_code(), 2);
            e.to_string()
        }
        other => panic!("expected an input error, got {other:?}"),
    };
    assert!(bad("{").starts_with("dump.json: (document): not JSON"));
    assert!(bad(r#"{"kind": "Node"}"#).starts_with("dump.json: kind: expected `List`"));
    assert!(bad(r#"{"kind": "List"}"#).starts_with("dump.json: items:"));
    let e = bad(r#"{"kind": "List", "items": [{"apiVersion": "v1", "metadata": {"name": "n"}}]}"#);
    assert!(e.starts_with("dump.json: items[0].kind: expected"), "{e}");
    let e = bad(
        r#"{"kind": "List", "items": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"}}]}"#,
    );
    assert!(
        e.starts_with("dump.json: items[0].metadata.namespace"),
        "{e}"
    );
}

#[test]
fn an_unreadable_node_names_the_item_and_field() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let node = doc["items"]
        .as_array_mut()
        .and_then(|items| items.iter_mut().find(|o| o["kind"] == "Node"))
        .expect("a node");
    node["status"]["capacity"]["cpu"] = json!("lots");
    let e = run(&parse(&doc)).expect_err("a bad quantity");
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("status.capacity.cpu"), "{e}");
    assert!(e.to_string().starts_with("dump.json: "), "{e}");
}

#[test]
fn other_kinds_are_ignored_and_counted() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    doc["items"]
        .as_array_mut()
        .expect("items")
        .push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}}));
    let snapshot = parse(&doc);
    assert_eq!(snapshot.ignored, ["v1/Pod"]);
    let report = run(&snapshot).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
}
