//! `verify audit --snapshot`: a dump of the twin after its reference operator reconciled the
//! walkthrough (listed the way docs/audit.md's kubectl command lists it) audits clean; the same
//! dump with one ResourceFlavor edited reports exactly that flavor; malformed dumps name the
//! file and the field. Quantities are compared by value however the dump spells them, and the
//! queues' AdmissionChecks are predicted from the AdmissionChecks the dump lists.

use live::audit::{audit, cluster_of, AuditError, CheckState, Listed, NamespaceSource, Snapshot};
use live::operator::admission::write_joint_check;
use live::operator::{reconcile, write_mock};
use live::server::store::{Selector, Store};
use live::wire::kinds::AUDITED_KINDS;
use live::wire::kinds::{self, Kind};
use live::wire::read::Listing;
use model::examples::{walkthrough, WALKTHROUGH_FLAVORS};
use model::labels::{JOINT_CHECK, NODE_DEVICES_CHECK};
use model::Settings;
use oracle::ObjectKind;
use outcome::{Concluded, Outcome};
use serde_json::{json, Value};

/// The kinds of `kubectl get nodes,devices,instancetypes,resourceflavors,clusterqueues,
/// localqueues,admissionchecks -A -o json` (no Namespaces).
fn kubectl_kinds() -> Vec<Kind> {
    AUDITED_KINDS
        .into_iter()
        .filter(|k| *k != kinds::NAMESPACE)
        .collect()
}

/// The walkthrough mocked and reconciled by the twin's reference operator, with the joint
/// AdmissionCheck Active (the operator's joint controller keeps it; the twin has none).
fn reconciled() -> Store {
    let c = walkthrough();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    let joint = write_joint_check(&mut store, true);
    assert!(joint.is_ok(), "{joint:?}");
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

fn run(snapshot: &Snapshot<'_>) -> Result<live::audit::Audit, AuditError> {
    audit(snapshot, &Settings::default())
}

/// `doc` written and parsed as a dump file would be (the snapshot borrows the text; a test's
/// few dumps live until it ends).
fn parse(doc: &Value) -> Snapshot<'static> {
    let text: &'static str = Box::leak(doc.to_string().into_boxed_str());
    Snapshot::parse(text, "dump.json").expect("a well-formed dump")
}

#[test]
fn the_reconciled_twin_audits_clean() {
    let doc = dump(&reconciled(), &kubectl_kinds(), true);
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
    assert!(report.outcome().passed());
    assert_eq!(
        report.namespaces,
        NamespaceSource::FromLocalQueues(vec!["default".into(), "team-a".into()])
    );
    assert!(report.render().contains("no divergences"));
    assert_eq!(
        report.checks,
        [
            (NODE_DEVICES_CHECK, CheckState::Active),
            (JOINT_CHECK, CheckState::Active)
        ]
    );
    assert!(report.render().contains(&format!(
        "admission checks: {NODE_DEVICES_CHECK} Active, {JOINT_CHECK} Active"
    )));
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
    assert_eq!(report.outcome(), Outcome::Failed);
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
            assert_eq!(e.outcome(), Outcome::Usage);
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
    // an item or its metadata of another JSON type, or a name that is not text
    let e = bad(r#"{"kind": "List", "items": [7]}"#);
    assert!(
        e.starts_with("dump.json: items[0].apiVersion: expected"),
        "{e}"
    );
    let e = bad(
        r#"{"kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": "n"}]}"#,
    );
    assert!(
        e.starts_with("dump.json: items[0].metadata.name: expected"),
        "{e}"
    );
    let e = bad(
        r#"{"kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": 3}}]}"#,
    );
    assert!(
        e.starts_with("dump.json: items[0].metadata.name: expected"),
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
    assert_eq!(e.outcome(), Outcome::Usage);
    assert!(e.to_string().contains("status.capacity.cpu"), "{e}");
    assert!(e.to_string().starts_with("dump.json: "), "{e}");
}

/// `doc`'s text with each item's `apiVersion` and `kind` written after its other members (JSON
/// does not order members; `kubectl` writes the type first).
fn with_type_last(doc: &Value) -> String {
    let items: Vec<String> = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            let o = o.as_object().expect("an object");
            let (head, body): (Vec<_>, Vec<_>) = o
                .iter()
                .partition(|(k, _)| *k == "apiVersion" || *k == "kind");
            let members: Vec<String> = body
                .into_iter()
                .chain(head)
                .map(|(k, v)| format!("{}: {v}", json!(k)))
                .collect();
            format!("{{{}}}", members.join(", "))
        })
        .collect();
    format!(r#"{{"kind": "List", "items": [{}]}}"#, items.join(", "))
}

/// A Node or Devices object whose type comes before its body is read in one pass into its
/// reader's parts; one whose type comes after is parsed whole and read from its value: the
/// same cluster, and the same audit.
#[test]
fn an_item_whose_type_comes_last_reads_the_same() {
    let doc = dump(&reconciled(), &kubectl_kinds(), true);
    let in_order = parse(&doc);
    let text = with_type_last(&doc);
    let type_last = Snapshot::parse(&text, "dump.json").expect("a well-formed dump");
    let parts = |s: &Snapshot<'_>| {
        s.items
            .iter()
            .filter(|(_, _, o)| !matches!(o, Listed::Parsed(_)))
            .count()
    };
    assert_eq!(parts(&type_last), 0, "read whole");
    assert!(parts(&in_order) > 0, "read into parts");
    let settings = Settings::default();
    assert_eq!(
        cluster_of(&in_order, &settings).expect("reads"),
        cluster_of(&type_last, &settings).expect("reads")
    );
    let report = run(&type_last).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
    // and a Node's parts, as a value, read the same as the Node
    let node_value: Vec<Value> = in_order
        .items
        .iter()
        .filter(|(_, k, _)| *k == kinds::NODE)
        .map(|(_, _, o)| o.value().into_owned())
        .collect();
    let devices_value: Vec<Value> = in_order
        .items
        .iter()
        .filter(|(_, k, _)| *k == kinds::DEVICES)
        .map(|(_, _, o)| o.value().into_owned())
        .collect();
    let from_values = live::wire::read::cluster_from(&settings, |kind| {
        Ok(match *kind {
            k if k == kinds::NODE => node_value.clone(),
            k if k == kinds::DEVICES => devices_value.clone(),
            _ => Vec::new(),
        })
    })
    .expect("reads");
    let from_parts = live::wire::read::cluster_from(&settings, |kind| {
        Ok(in_order
            .items
            .iter()
            .filter(|(_, k, _)| k == kind && (*k == kinds::NODE || *k == kinds::DEVICES))
            .map(|(_, _, o)| o)
            .collect::<Vec<_>>())
    })
    .expect("reads");
    assert!(!from_parts.nodes.is_empty());
    assert_eq!(from_values.nodes, from_parts.nodes);
}

/// A label the Worker applied (its own output, not the model's input) that a Node no longer
/// carries, or carries with another value, is the one difference, at that Node's label; the
/// other Nodes, alike on both sides, are none.
#[test]
fn a_nodes_changed_own_label_is_the_one_difference() {
    let doc = dump(&reconciled(), &kubectl_kinds(), true);
    let (i, name, key) = doc["items"]
        .as_array()
        .and_then(|items| {
            items.iter().enumerate().find_map(|(i, o)| {
                let owned = o["metadata"]["managedFields"]
                    .as_array()?
                    .iter()
                    .find(|m| m["manager"] == "gpustack-worker" && m["operation"] == "Apply")?;
                let key = owned["fieldsV1"]["f:metadata"]["f:labels"]
                    .as_object()?
                    .keys()
                    .find_map(|k| k.strip_prefix("f:"))?
                    .to_string();
                let name = o["metadata"]["name"].as_str()?.to_string();
                (o["kind"] == "Node").then_some((i, name, key))
            })
        })
        .expect("a node with a label the worker applied");
    let was = doc["items"][i]["metadata"]["labels"][&key].clone();
    assert!(was.is_string(), "{key}");
    let mut changed = doc.clone();
    changed["items"][i]["metadata"]["labels"][&key] = json!("changed-by-hand");
    let mut removed = doc.clone();
    removed["items"][i]["metadata"]["labels"]
        .as_object_mut()
        .expect("labels")
        .remove(&key);
    for (doc, observed) in [(changed, Some("changed-by-hand")), (removed, None)] {
        let report = run(&parse(&doc)).expect("the audit runs");
        assert_eq!(report.differences.len(), 1, "{}", report.render());
        let d = &report.differences[0];
        assert_eq!(
            (d.kind, d.name.as_str(), d.field.as_str()),
            (
                ObjectKind::NodeLabels,
                name.as_str(),
                format!("labels[\"{key}\"]").as_str()
            ),
            "{}",
            report.render()
        );
        assert_eq!(d.expected.as_deref(), was.as_str());
        assert_eq!(d.observed.as_deref(), observed);
    }
}

/// A Node's member its reader refuses is refused as the dump is read, naming the item and the
/// field path.
#[test]
fn a_refused_node_member_names_its_item_and_field() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let i = doc["items"]
        .as_array()
        .and_then(|items| items.iter().position(|o| o["kind"] == "Node"))
        .expect("a node");
    doc["items"][i]["metadata"]["labels"]["kubernetes.io/os"] = json!(7);
    let e = match Snapshot::parse(&doc.to_string(), "dump.json") {
        Err(e @ AuditError::Input { .. }) => e.to_string(),
        other => panic!("expected an input error, got {other:?}"),
    };
    assert!(
        e.starts_with(&format!(
            "dump.json: items[{i}].metadata.labels.kubernetes.io/os: invalid type: integer `7`"
        )),
        "{e}"
    );
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

/// An object listed twice is malformed input naming both items; the items' order is not.
#[test]
fn a_twice_listed_object_is_refused_and_order_does_not_matter() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let items = doc["items"].as_array_mut().expect("items");
    items.reverse();
    let reversed = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(reversed.differences, [], "{}", reversed.render());
    let items = doc["items"].as_array_mut().expect("items");
    let node = items
        .iter()
        .position(|o| o["kind"] == "Node")
        .expect("a node");
    let copy = items[node].clone();
    items.push(copy);
    let e = run(&parse(&doc)).expect_err("a node listed twice");
    assert_eq!(e.outcome(), Outcome::Usage);
    let text = e.to_string();
    assert!(text.starts_with("dump.json: items["), "{text}");
    assert!(
        text.contains("is listed twice") && text.contains(&format!("items[{node}]")),
        "{text}"
    );
}

/// The dump's items of `kind`, mutably.
fn items_of<'a>(doc: &'a mut Value, kind: &str) -> Vec<&'a mut Value> {
    doc["items"]
        .as_array_mut()
        .expect("items")
        .iter_mut()
        .filter(|o| o["kind"] == kind)
        .collect()
}

/// Every `nominalQuota` of a listed ClusterQueue, mutably.
fn quotas(queue: &mut Value) -> Vec<&mut Value> {
    let mut out = Vec::new();
    for group in queue["spec"]["resourceGroups"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        for flavor in group["flavors"].as_array_mut().into_iter().flatten() {
            for r in flavor["resources"].as_array_mut().into_iter().flatten() {
                out.push(&mut r["nominalQuota"]);
            }
        }
    }
    out
}

fn value_of(q: &Value) -> i128 {
    let text = q.as_str().expect("a quantity string");
    model::credits::parse_quantity(text)
        .expect("a quantity")
        .value()
}

#[test]
fn respelled_quantities_are_no_divergence() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let mut suffixed = 0;
    for q in items_of(&mut doc, "ClusterQueue")
        .into_iter()
        .flat_map(quotas)
    {
        // `6400k` as `6400000`, a plain `48` as the JSON integer 48
        let v = value_of(q);
        suffixed += usize::from(q.as_str() != Some(&v.to_string()));
        *q = if suffixed % 2 == 0 {
            json!(v.to_string())
        } else {
            json!(v)
        };
    }
    assert!(
        suffixed > 0,
        "the walkthrough's quotas use suffixes (1600k)"
    );
    let mut views = 0;
    for it in items_of(&mut doc, "InstanceType") {
        for view in [
            "accelerator",
            "acceleratorShared",
            "acceleratorSliced",
            "cpu",
        ] {
            for field in ["onceMaxRequest", "remaining", "capacity"] {
                let q = &mut it["status"][view][field];
                if q.is_string() {
                    *q = json!(value_of(q));
                    views += 1;
                }
            }
        }
    }
    assert!(views > 0, "the InstanceTypes publish views");
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
}

#[test]
fn a_changed_quota_is_reported_with_its_field_and_both_values() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let mut queues = items_of(&mut doc, "ClusterQueue");
    let queue = queues
        .iter_mut()
        .find(|q| {
            q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
                .as_str()
                .is_some_and(|s| s.ends_with('k'))
        })
        .expect("a queue with a quota in k");
    let name = queue["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let flavor = &mut queue["spec"]["resourceGroups"][0]["flavors"][0];
    let flavor_name = flavor["name"].as_str().unwrap_or_default().to_string();
    let resource = &mut flavor["resources"][0];
    let resource_name = resource["name"].as_str().unwrap_or_default().to_string();
    let before = resource["nominalQuota"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let after = format!("{}k", value_of(&resource["nominalQuota"]) / 1000 + 1);
    resource["nominalQuota"] = json!(after);

    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences.len(), 1, "{}", report.render());
    let d = &report.differences[0];
    assert_eq!(
        (d.kind, d.name.as_str()),
        (ObjectKind::ClusterQueue, name.as_str())
    );
    assert_eq!(
        d.field,
        format!(
            "spec.resourceGroups[0].flavors[name={flavor_name}].resources[name={resource_name}].nominalQuota"
        )
    );
    assert_eq!(d.expected.as_deref(), Some(before.as_str()));
    assert_eq!(d.observed.as_deref(), Some(after.as_str()));
    assert!(report
        .render()
        .contains(&format!("expected {before}, observed {after}")));
}

/// The dump without the node-devices check (`absent`) or with it not Active, and with the
/// check dropped from every queue's `admissionChecksStrategy` when `strip_queues`.
fn without_node_devices(absent: bool, strip_queues: bool) -> Value {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    if absent {
        doc["items"].as_array_mut().expect("items").retain(|o| {
            !(o["kind"] == "AdmissionCheck" && o["metadata"]["name"] == NODE_DEVICES_CHECK)
        });
    } else {
        for check in items_of(&mut doc, "AdmissionCheck") {
            if check["metadata"]["name"] == NODE_DEVICES_CHECK {
                check["status"]["conditions"][0]["status"] = json!("False");
            }
        }
    }
    if strip_queues {
        for q in items_of(&mut doc, "ClusterQueue") {
            if let Some(checks) = q
                .pointer_mut("/spec/admissionChecksStrategy/admissionChecks")
                .and_then(Value::as_array_mut)
            {
                checks.retain(|c| c["name"] != NODE_DEVICES_CHECK);
            }
        }
    }
    doc
}

#[test]
fn a_node_devices_check_not_active_is_predicted_off_the_queues() {
    for absent in [true, false] {
        let report = run(&parse(&without_node_devices(absent, true))).expect("the audit runs");
        assert_eq!(
            report.differences,
            [],
            "absent={absent}: {}",
            report.render()
        );
        let state = if absent {
            CheckState::Absent
        } else {
            CheckState::NotActive
        };
        assert_eq!(report.checks[0], (NODE_DEVICES_CHECK, state));
    }
}

#[test]
fn queues_carrying_a_check_that_is_not_active_diverge() {
    let report = run(&parse(&without_node_devices(true, false))).expect("the audit runs");
    assert_eq!(report.outcome(), Outcome::Failed);
    assert!(!report.differences.is_empty());
    for d in &report.differences {
        assert_eq!(d.kind, ObjectKind::ClusterQueue, "{}", report.render());
        assert!(d.field.contains("admissionChecksStrategy"), "{d}");
        assert!(
            d.observed
                .as_deref()
                .is_some_and(|o| o.contains(NODE_DEVICES_CHECK)),
            "{d}"
        );
    }
    assert!(report.render().contains("absent (not Active)"));
}

/// The reconciled walkthrough's dump lists its Topologies (the hostname-only one at least)
/// and they audit clean, judged.
#[test]
fn the_topologies_in_the_dump_audit_clean() {
    let doc = dump(&reconciled(), &kubectl_kinds(), true);
    let listed = doc["items"]
        .as_array()
        .map_or(0, |i| i.iter().filter(|o| o["kind"] == "Topology").count());
    assert!(listed >= 1, "{doc}");
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
    assert!(report.not_in_dump.is_empty());
    assert!(
        report.counts.contains(&("topologies", listed)),
        "{:?}",
        report.counts
    );
    assert!(!report.render().contains("not in the dump"));
}

/// One Topology's level changed: one divergence, on `spec.levels[…]` of that Topology.
#[test]
fn a_changed_topology_level_is_one_divergence() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    let mut topologies = items_of(&mut doc, "Topology");
    let t = topologies.first_mut().expect("a Topology");
    let name = t["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    t["spec"]["levels"][0]["nodeLabel"] = json!("topology.kubernetes.io/zone");
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences.len(), 1, "{}", report.render());
    let d = &report.differences[0];
    assert_eq!(d.kind, ObjectKind::Topology, "{d:?}");
    assert_eq!(d.name, name);
    assert!(d.field.starts_with("spec.levels["), "{d:?}");
    assert_eq!(
        d.observed.as_deref(),
        Some("topology.kubernetes.io/zone"),
        "{d:?}"
    );
    assert_eq!(report.outcome(), Outcome::Failed);
}

/// A dump from the older command (no `topologies`): the kind is not in the dump and is not
/// judged; everything else audits as before (exit 0).
#[test]
fn a_dump_without_topologies_says_so_and_judges_the_rest() {
    let older: Vec<Kind> = kubectl_kinds()
        .into_iter()
        .filter(|k| *k != kinds::TOPOLOGY)
        .collect();
    let doc = dump(&reconciled(), &older, true);
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
    assert!(report.outcome().passed());
    assert_eq!(report.not_in_dump, ["topologies"]);
    assert!(
        report
            .render()
            .contains("not in the dump: topologies (not judged"),
        "{}",
        report.render()
    );
    // the rest is still judged: an edited flavor is still found
    let mut doc = doc;
    let mut flavors = items_of(&mut doc, "ResourceFlavor");
    flavors[0]["spec"]["nodeLabels"]["verify.gpustack.ai/edited"] = json!("yes");
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences.len(), 1, "{}", report.render());
}

/// An administrator's own Topology (not labelled as the operator's) is not judged; an
/// operator Topology that lost its label reads as the operator's missing one.
#[test]
fn only_the_operators_topologies_are_judged() {
    let mut doc = dump(&reconciled(), &kubectl_kinds(), true);
    doc["items"].as_array_mut().expect("items").push(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
        "metadata": {"name": "admins-own"},
        "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
    }));
    let report = run(&parse(&doc)).expect("the audit runs");
    assert_eq!(report.differences, [], "{}", report.render());
    let mut topologies = items_of(&mut doc, "Topology");
    let ours = topologies
        .iter_mut()
        .find(|t| t["metadata"]["name"] != "admins-own")
        .expect("an operator Topology");
    ours["metadata"]["labels"] = json!({});
    let report = run(&parse(&doc)).expect("the audit runs");
    assert!(!report.differences.is_empty(), "{}", report.render());
    assert!(
        report
            .differences
            .iter()
            .all(|d| d.kind == ObjectKind::Topology),
        "{}",
        report.render()
    );
}
