//! The twin store's API semantics, verb by verb, through the public API only.

use live::server::selector::Selector;
use live::server::status::Status;
use live::server::store::{
    ApplyRequest, DeleteOptions, Deleted, EventType, Patch, Store, StoreConfig, Subresource,
    WatchEvent,
};
use live::wire::kinds::{self, CLUSTER_QUEUE, INSTANCE_TYPE, LOCAL_QUEUE, NAMESPACE, NODE, POD};
use serde_json::{json, Value};

fn rv(o: &Value) -> u64 {
    o.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn generation(o: &Value) -> i64 {
    o.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn code<T: std::fmt::Debug>(r: Result<T, live::server::status::Status>) -> u16 {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(s) => s.code,
    }
}

fn it(name: &str) -> Value {
    json!({
        "apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
        "metadata": {"name": name, "labels": {"pool": "a"}},
        "spec": {"acceleratable": true, "os": "linux", "arch": "amd64",
                 "unitResources": {"cpu": "4", "ram": "16Gi"}, "localStorage": "100Gi"},
        "status": {"phase": "Active"}
    })
}

fn store() -> Store {
    Store::default()
}

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error: {e:?}"),
    }
}

#[test]
fn create_sets_server_metadata_and_get_returns_it() {
    let mut s = store();
    let created = ok(s.create(&INSTANCE_TYPE, None, it("a10")));
    assert_eq!(
        created["metadata"]["uid"],
        "00000000-0000-4000-8000-000000000001"
    );
    assert_eq!(
        created["metadata"]["creationTimestamp"],
        "2025-01-01T00:00:00Z"
    );
    assert_eq!(created["metadata"]["resourceVersion"], "1");
    assert_eq!(generation(&created), 1);
    assert_eq!(created["apiVersion"], "worker.gpustack.ai/v1alpha1");
    // status is dropped on create for a status-subresource custom resource
    assert!(created.get("status").is_none());
    assert_eq!(ok(s.get(&INSTANCE_TYPE, None, "a10")), created);
}

#[test]
fn injected_uid_and_clock_are_used() {
    let mut s = Store::new(StoreConfig {
        uid: Box::new(|n| format!("uid-{n}")),
        clock: Box::new(|| "2030-06-01T12:00:00Z".to_string()),
        ..StoreConfig::default()
    });
    let a = ok(s.create(&NODE, None, json!({"metadata": {"name": "n1"}})));
    let b = ok(s.create(&NODE, None, json!({"metadata": {"name": "n2"}})));
    assert_eq!(a["metadata"]["uid"], "uid-1");
    assert_eq!(b["metadata"]["uid"], "uid-2");
    assert_eq!(b["metadata"]["creationTimestamp"], "2030-06-01T12:00:00Z");
}

#[test]
fn create_errors() {
    let mut s = store();
    ok(s.create(&NODE, None, json!({"metadata": {"name": "n1"}})));
    let dup = s.create(&NODE, None, json!({"metadata": {"name": "n1"}}));
    let dup = dup.err().map(|e| (e.code, e.reason, e.message));
    assert_eq!(
        dup,
        Some((
            409,
            "AlreadyExists".into(),
            "nodes \"n1\" already exists".into()
        ))
    );
    let unnamed = s.create(&NODE, None, json!({"metadata": {}})).err();
    assert_eq!(unnamed.as_ref().map(|e| e.code), Some(422));
    let cause = unnamed.and_then(|e| e.details).map(|d| d.causes);
    assert_eq!(
        cause.and_then(|c| c.first().map(|c| c.field.clone())),
        Some("metadata.name".to_string())
    );
    assert_eq!(code(s.create(&NODE, None, json!([1]))), 400);
    assert_eq!(
        code(s.create(
            &NODE,
            None,
            json!({"kind": "Pod", "metadata": {"name": "x"}})
        )),
        400
    );
    // namespaced kinds need an existing namespace
    let lq = json!({"metadata": {"name": "q"}, "spec": {"clusterQueue": "cq"}});
    let missing_ns = s.create(&LOCAL_QUEUE, Some("team"), lq.clone()).err();
    assert_eq!(
        missing_ns.map(|e| (e.code, e.message)),
        Some((404, "namespaces \"team\" not found".to_string()))
    );
    assert_eq!(code(s.create(&LOCAL_QUEUE, None, lq.clone())), 400);
    ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": "team"}})));
    let created = ok(s.create(&LOCAL_QUEUE, Some("team"), lq.clone()));
    assert_eq!(created["metadata"]["namespace"], "team");
    let mismatch = json!({"metadata": {"name": "q2", "namespace": "other"}});
    assert_eq!(code(s.create(&LOCAL_QUEUE, Some("team"), mismatch)), 400);
}

#[test]
fn generate_name_and_status_on_create_per_kind() {
    let mut s = store();
    let ns = ok(s.create(
        &NAMESPACE,
        None,
        json!({"metadata": {"generateName": "ns-"}}),
    ));
    let name = ns["metadata"]["name"].as_str().unwrap_or("").to_string();
    assert!(name.starts_with("ns-") && name.len() == 8, "{name}");
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    let pod = ok(s.create(
        &POD,
        Some(&name),
        json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}}),
    ));
    assert_eq!(pod["status"], json!({"phase": "Pending"}));
    let node = ok(s.create(
        &NODE,
        None,
        json!({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "8"}}}),
    ));
    assert_eq!(node["status"]["capacity"]["cpu"], "8");
}

#[test]
fn get_and_unknown_kinds_are_not_found() {
    let mut s = Store::new(StoreConfig {
        kinds: vec![NODE],
        ..StoreConfig::default()
    });
    let e = s.get(&NODE, None, "nope").err();
    assert_eq!(
        e.map(|e| (e.code, e.reason, e.details.map(|d| d.kind))),
        Some((404, "NotFound".to_string(), Some("nodes".to_string())))
    );
    assert_eq!(code(s.create(&INSTANCE_TYPE, None, it("x"))), 404);
    assert_eq!(code(s.get(&INSTANCE_TYPE, None, "x")), 404);
    // NodeFeature has no status subresource
    let mut s = store();
    assert_eq!(
        code(s.update_status(
            &kinds::NODE_FEATURE,
            Some("default"),
            json!({"metadata": {"name": "x"}})
        )),
        404
    );
}

#[test]
fn list_filters_by_selectors_and_namespace_and_reports_its_resource_version() {
    let mut s = store();
    for ns in ["a", "b"] {
        ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": ns}})));
    }
    for (ns, name, tier) in [
        ("a", "q1", "gold"),
        ("a", "q2", "silver"),
        ("b", "q1", "gold"),
        ("b", "q3", ""),
    ] {
        let mut labels = json!({"app": "kueue"});
        if !tier.is_empty() {
            labels["tier"] = json!(tier);
        }
        ok(s.create(
            &LOCAL_QUEUE,
            Some(ns),
            json!({"metadata": {"name": name, "labels": labels}}),
        ));
    }
    let names = |ns: Option<&str>, l: &str, f: &str| -> Vec<String> {
        let sel = ok(Selector::parse(l, f));
        ok(s.list(&LOCAL_QUEUE, ns, &sel))
            .items
            .iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["metadata"]["namespace"].as_str().unwrap_or(""),
                    o["metadata"]["name"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(names(None, "", ""), ["a/q1", "a/q2", "b/q1", "b/q3"]);
    assert_eq!(names(Some("a"), "", ""), ["a/q1", "a/q2"]);
    assert_eq!(names(None, "tier=gold", ""), ["a/q1", "b/q1"]);
    assert_eq!(names(None, "tier==gold", ""), ["a/q1", "b/q1"]);
    assert_eq!(names(None, "tier!=gold", ""), ["a/q2", "b/q3"]);
    assert_eq!(names(None, "tier in (silver, bronze)", ""), ["a/q2"]);
    assert_eq!(names(None, "tier notin (gold)", ""), ["a/q2", "b/q3"]);
    assert_eq!(names(None, "tier", ""), ["a/q1", "a/q2", "b/q1"]);
    assert_eq!(names(None, "!tier", ""), ["b/q3"]);
    assert_eq!(names(None, "app=kueue,!tier", ""), ["b/q3"]);
    assert_eq!(names(None, "", "metadata.name=q1"), ["a/q1", "b/q1"]);
    assert_eq!(
        names(None, "", "metadata.namespace=b,metadata.name!=q1"),
        ["b/q3"]
    );
    assert_eq!(names(None, "tier=gold", "metadata.namespace=a"), ["a/q1"]);
    let list = ok(s.list(&LOCAL_QUEUE, None, &Selector::everything()));
    assert_eq!(list.resource_version, s.resource_version());
    let v = list.to_value(&LOCAL_QUEUE);
    assert_eq!(v["kind"], "LocalQueueList");
    assert_eq!(
        v["metadata"]["resourceVersion"],
        s.resource_version().to_string()
    );
}

#[test]
fn resource_versions_increase_across_kinds_and_writes() {
    let mut s = store();
    let mut seen = vec![];
    let n = ok(s.create(&NODE, None, json!({"metadata": {"name": "n"}})));
    seen.push(rv(&n));
    let c = ok(s.create(&INSTANCE_TYPE, None, it("t")));
    seen.push(rv(&c));
    let mut t = c.clone();
    t["spec"]["os"] = json!("windows");
    let u = ok(s.update(&INSTANCE_TYPE, None, t));
    seen.push(rv(&u));
    let p = ok(s.patch(
        &NODE,
        None,
        "n",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    ));
    seen.push(rv(&p));
    let d = ok(s.delete(&NODE, None, "n", &DeleteOptions::default()));
    seen.push(rv(d.object()));
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(s.resource_version(), *seen.last().unwrap_or(&0));
}

#[test]
fn update_bumps_generation_only_for_spec_changes() {
    let mut s = store();
    let c = ok(s.create(&INSTANCE_TYPE, None, it("t")));
    // metadata-only change: new resourceVersion, same generation
    let mut m = c.clone();
    m["metadata"]["labels"]["extra"] = json!("1");
    let m = ok(s.update(&INSTANCE_TYPE, None, m));
    assert_eq!(generation(&m), 1);
    assert!(rv(&m) > rv(&c));
    // spec change: generation 2
    let mut sp = m.clone();
    sp["spec"]["arch"] = json!("arm64");
    let sp = ok(s.update(&INSTANCE_TYPE, None, sp));
    assert_eq!(generation(&sp), 2);
    // status via update_status: generation unchanged
    let mut st = sp.clone();
    st["status"] = json!({"phase": "Active"});
    let st = ok(s.update_status(&INSTANCE_TYPE, None, st));
    assert_eq!(generation(&st), 2);
    // a no-op update keeps the resourceVersion and records nothing
    let again = ok(s.update(&INSTANCE_TYPE, None, st.clone()));
    assert_eq!(rv(&again), rv(&st));
    // a kind without status subresource: a status change is a spec change
    ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": "d"}})));
    let nf = ok(s.create(
        &kinds::NODE_FEATURE,
        Some("d"),
        json!({"metadata": {"name": "f"}, "spec": {}}),
    ));
    let mut nf2 = nf.clone();
    nf2["status"] = json!({"x": 1});
    assert_eq!(
        generation(&ok(s.update(&kinds::NODE_FEATURE, Some("d"), nf2))),
        2
    );
}

#[test]
fn optimistic_concurrency() {
    let mut s = store();
    let c = ok(s.create(&INSTANCE_TYPE, None, it("t")));
    let mut first = c.clone();
    first["spec"]["os"] = json!("windows");
    ok(s.update(&INSTANCE_TYPE, None, first));
    let mut stale = c.clone();
    stale["spec"]["arch"] = json!("arm64");
    let e = s.update(&INSTANCE_TYPE, None, stale).err();
    assert_eq!(
        e.map(|e| (e.code, e.reason, e.message)),
        Some((
            409,
            "Conflict".to_string(),
            "Operation cannot be fulfilled on instancetypes.worker.gpustack.ai \"t\": the object has been modified; please apply your changes to the latest version and try again".to_string()
        ))
    );
    // custom resources require a resourceVersion on update; core kinds do not
    let mut unconditional = c.clone();
    if let Some(m) = unconditional["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    assert_eq!(code(s.update(&INSTANCE_TYPE, None, unconditional)), 422);
    ok(s.create(&NODE, None, json!({"metadata": {"name": "n"}})));
    let n = ok(s.update(
        &NODE,
        None,
        json!({"metadata": {"name": "n", "labels": {"a": "b"}}}),
    ));
    assert_eq!(n["metadata"]["labels"]["a"], "b");
    // stale status update too
    assert_eq!(code(s.update_status(&INSTANCE_TYPE, None, c.clone())), 409);
    // missing object
    assert_eq!(
        code(s.update(&NODE, None, json!({"metadata": {"name": "zz"}}))),
        404
    );
    // a merge patch carrying a stale resourceVersion is a conflict
    let stale_patch =
        Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "spec": {"os": "x"}}));
    assert_eq!(
        code(s.patch(&INSTANCE_TYPE, None, "t", Subresource::Main, &stale_patch)),
        409
    );
    // a wrong uid is a precondition conflict
    let cur = ok(s.get(&INSTANCE_TYPE, None, "t"));
    let mut wrong_uid = cur.clone();
    wrong_uid["metadata"]["uid"] = json!("other");
    assert_eq!(code(s.update(&INSTANCE_TYPE, None, wrong_uid)), 409);
}

#[test]
fn status_subresource_separation() {
    let mut s = store();
    let c = ok(s.create(&INSTANCE_TYPE, None, it("t")));
    // status on the main resource is ignored
    let mut main = c.clone();
    main["status"] = json!({"phase": "Broken"});
    main["spec"]["os"] = json!("windows");
    let main = ok(s.update(&INSTANCE_TYPE, None, main));
    assert!(main.get("status").is_none());
    assert_eq!(main["spec"]["os"], "windows");
    // spec and metadata on /status are ignored
    let mut st = main.clone();
    st["status"] = json!({"phase": "Active"});
    st["spec"]["os"] = json!("plan9");
    st["metadata"]["labels"]["sneaky"] = json!("1");
    let st = ok(s.update_status(&INSTANCE_TYPE, None, st));
    assert_eq!(st["status"]["phase"], "Active");
    assert_eq!(st["spec"]["os"], "windows");
    assert!(st["metadata"]["labels"].get("sneaky").is_none());
    // a later main update keeps the status
    let mut again = st.clone();
    again["spec"]["arch"] = json!("arm64");
    again["status"] = json!(null);
    let again = ok(s.update(&INSTANCE_TYPE, None, again));
    assert_eq!(again["status"]["phase"], "Active");
    // the same through patches
    let p = ok(s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Main,
        &Patch::Merge(json!({"status": {"phase": "X"}})),
    ));
    assert_eq!(p["status"]["phase"], "Active");
    let p = ok(s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Status,
        &Patch::Merge(json!({"status": {"phaseMessage": "ok"}, "spec": {"os": "y"}})),
    ));
    assert_eq!(
        p["status"],
        json!({"phase": "Active", "phaseMessage": "ok"})
    );
    assert_eq!(p["spec"]["os"], "windows");
}

#[test]
fn merge_and_json_patches() {
    let mut s = store();
    ok(s.create(&INSTANCE_TYPE, None, it("t")));
    let merged = ok(s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Main,
        &Patch::Merge(
            json!({"metadata": {"labels": {"pool": null, "new": "1"}}, "spec": {"inactive": true}}),
        ),
    ));
    assert_eq!(merged["metadata"]["labels"], json!({"new": "1"}));
    assert_eq!(merged["spec"]["inactive"], true);
    assert_eq!(generation(&merged), 2);
    let jp = ok(s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Main,
        &Patch::Json(json!([
            {"op": "test", "path": "/spec/os", "value": "linux"},
            {"op": "replace", "path": "/spec/os", "value": "windows"},
            {"op": "remove", "path": "/spec/inactive"}
        ])),
    ));
    assert_eq!(jp["spec"]["os"], "windows");
    assert!(jp["spec"].get("inactive").is_none());
    let status = ok(s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Status,
        &Patch::Json(json!([
            {"op": "add", "path": "/status", "value": {"phase": "Active"}}
        ])),
    ));
    assert_eq!(status["status"]["phase"], "Active");
    // a failing test op leaves the object unchanged: 422
    let before = ok(s.get(&INSTANCE_TYPE, None, "t"));
    let failed = s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Main,
        &Patch::Json(json!([
            {"op": "replace", "path": "/spec/os", "value": "x"},
            {"op": "test", "path": "/spec/arch", "value": "sparc"}
        ])),
    );
    assert_eq!(code(failed), 422);
    assert_eq!(ok(s.get(&INSTANCE_TYPE, None, "t")), before);
    // malformed patch bodies are 400; a missing object 404; renaming 400
    assert_eq!(
        code(s.patch(
            &INSTANCE_TYPE,
            None,
            "t",
            Subresource::Main,
            &Patch::Json(json!({"op": "add"}))
        )),
        400
    );
    assert_eq!(
        code(s.patch(
            &INSTANCE_TYPE,
            None,
            "t",
            Subresource::Main,
            &Patch::Merge(json!([1]))
        )),
        400
    );
    assert_eq!(
        code(s.patch(
            &INSTANCE_TYPE,
            None,
            "nope",
            Subresource::Main,
            &Patch::Merge(json!({}))
        )),
        404
    );
    assert_eq!(
        code(s.patch(
            &INSTANCE_TYPE,
            None,
            "t",
            Subresource::Main,
            &Patch::Merge(json!({"metadata": {"name": "u"}}))
        )),
        400
    );
}

#[test]
fn finalizers_hold_deletion_until_the_last_is_removed() {
    let mut s = store();
    ok(s.create(
        &CLUSTER_QUEUE,
        None,
        json!({"metadata": {"name": "cq", "finalizers": ["a", "b"]}, "spec": {}}),
    ));
    let d = ok(s.delete(
        &CLUSTER_QUEUE,
        None,
        "cq",
        &DeleteOptions {
            propagation_policy: Some("Foreground".into()),
            ..DeleteOptions::default()
        },
    ));
    let Deleted::Finalizing(marked) = d else {
        panic!("expected Finalizing, got {d:?}")
    };
    assert_eq!(
        marked["metadata"]["deletionTimestamp"],
        "2025-01-01T00:00:01Z"
    );
    assert_eq!(generation(&marked), 2);
    // deleting again is a no-op
    let again = ok(s.delete(&CLUSTER_QUEUE, None, "cq", &DeleteOptions::default()));
    assert_eq!(again, Deleted::Finalizing(marked.clone()));
    // the deletion mark cannot be removed by an update, nor a finalizer added
    let mut add = marked.clone();
    add["metadata"]["finalizers"] = json!(["a", "b", "c"]);
    assert_eq!(code(s.update(&CLUSTER_QUEUE, None, add)), 422);
    let mut one = marked.clone();
    one["metadata"]["finalizers"] = json!(["b"]);
    if let Some(m) = one["metadata"].as_object_mut() {
        m.remove("deletionTimestamp");
    }
    let one = ok(s.update(&CLUSTER_QUEUE, None, one));
    assert!(one["metadata"].get("deletionTimestamp").is_some());
    // removing the last finalizer removes the object
    let last = ok(s.patch(
        &CLUSTER_QUEUE,
        None,
        "cq",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    ));
    assert!(rv(&last) > rv(&one));
    assert_eq!(code(s.get(&CLUSTER_QUEUE, None, "cq")), 404);
    let events = ok(s.watch_since(&CLUSTER_QUEUE, None, &Selector::everything(), rv(&one)));
    assert_eq!(
        events.iter().map(|e| e.event_type).collect::<Vec<_>>(),
        [EventType::Deleted]
    );
}

#[test]
fn delete_errors_and_preconditions() {
    let mut s = store();
    assert_eq!(
        code(s.delete(&NODE, None, "n", &DeleteOptions::default())),
        404
    );
    let n = ok(s.create(&NODE, None, json!({"metadata": {"name": "n"}})));
    let bad_policy = DeleteOptions {
        propagation_policy: Some("Sideways".into()),
        ..DeleteOptions::default()
    };
    assert_eq!(code(s.delete(&NODE, None, "n", &bad_policy)), 422);
    let stale = DeleteOptions {
        resource_version: Some("999".into()),
        ..DeleteOptions::default()
    };
    assert_eq!(code(s.delete(&NODE, None, "n", &stale)), 409);
    let wrong_uid = DeleteOptions {
        uid: Some("x".into()),
        ..DeleteOptions::default()
    };
    assert_eq!(code(s.delete(&NODE, None, "n", &wrong_uid)), 409);
    let fine = DeleteOptions {
        resource_version: Some(rv(&n).to_string()),
        propagation_policy: Some("Background".into()),
        ..DeleteOptions::default()
    };
    assert!(matches!(
        ok(s.delete(&NODE, None, "n", &fine)),
        Deleted::Removed(_)
    ));
    assert_eq!(code(s.get(&NODE, None, "n")), 404);
}

fn types(events: &[WatchEvent]) -> Vec<(EventType, String)> {
    events
        .iter()
        .map(|e| {
            (
                e.event_type,
                e.object["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn watch_returns_events_after_a_resource_version() {
    let mut s = store();
    ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": "unrelated"}})));
    let start = s.resource_version();
    ok(s.create(
        &NODE,
        None,
        json!({"metadata": {"name": "n1", "labels": {"gpu": "yes"}}}),
    ));
    let mid = s.resource_version();
    ok(s.create(&NODE, None, json!({"metadata": {"name": "n2"}})));
    ok(s.patch(
        &NODE,
        None,
        "n1",
        Subresource::Main,
        &Patch::Merge(json!({"spec": {"unschedulable": true}})),
    ));
    ok(s.create(&INSTANCE_TYPE, None, it("other-kind")));
    ok(s.delete(&NODE, None, "n2", &DeleteOptions::default()));
    let all = ok(s.watch_since(&NODE, None, &Selector::everything(), start));
    assert_eq!(
        types(&all),
        [
            (EventType::Added, "n1".to_string()),
            (EventType::Added, "n2".to_string()),
            (EventType::Modified, "n1".to_string()),
            (EventType::Deleted, "n2".to_string()),
        ]
    );
    let rvs: Vec<u64> = all.iter().map(|e| rv(&e.object)).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]));
    let later = ok(s.watch_since(&NODE, None, &Selector::everything(), mid));
    assert_eq!(later.len(), 3);
    let none = ok(s.watch_since(&NODE, None, &Selector::everything(), s.resource_version()));
    assert!(none.is_empty());
    // rv 0: synthetic ADDED of the current state
    let synthetic = ok(s.watch_since(&NODE, None, &Selector::everything(), 0));
    assert_eq!(types(&synthetic), [(EventType::Added, "n1".to_string())]);
    // serialised as the wire format
    let wire = serde_json::to_value(&all[0]).unwrap_or(Value::Null);
    assert_eq!(wire["type"], "ADDED");
    // bookmark
    let b = s.bookmark(&NODE);
    assert_eq!(b.event_type, EventType::Bookmark);
    assert_eq!(
        b.object["metadata"]["resourceVersion"],
        s.resource_version().to_string()
    );
    assert_eq!(
        serde_json::to_value(&b).unwrap_or(Value::Null)["type"],
        "BOOKMARK"
    );
}

#[test]
fn watch_through_a_selector_sees_objects_enter_and_leave() {
    let mut s = store();
    ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": "unrelated"}})));
    let start = s.resource_version();
    ok(s.create(
        &NODE,
        None,
        json!({"metadata": {"name": "n", "labels": {"gpu": "no"}}}),
    ));
    ok(s.patch(
        &NODE,
        None,
        "n",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"labels": {"gpu": "yes"}}})),
    ));
    ok(s.patch(
        &NODE,
        None,
        "n",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"annotations": {"a": "1"}}})),
    ));
    let left = ok(s.patch(
        &NODE,
        None,
        "n",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"labels": {"gpu": "no"}}})),
    ));
    ok(s.delete(&NODE, None, "n", &DeleteOptions::default()));
    let sel = ok(Selector::parse("gpu=yes", ""));
    let seen = ok(s.watch_since(&NODE, None, &sel, start));
    assert_eq!(
        seen.iter().map(|e| e.event_type).collect::<Vec<_>>(),
        [EventType::Added, EventType::Modified, EventType::Deleted]
    );
    // the DELETED of an object leaving the selection is its last selected state
    let gone = &seen[2].object;
    assert_eq!(gone["metadata"]["labels"]["gpu"], "yes");
    assert_eq!(rv(gone), rv(&left));
    // namespace scoping of watches
    ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": "a"}})));
    ok(s.create(&NAMESPACE, None, json!({"metadata": {"name": "b"}})));
    let here = s.resource_version();
    ok(s.create(&LOCAL_QUEUE, Some("a"), json!({"metadata": {"name": "q"}})));
    ok(s.create(&LOCAL_QUEUE, Some("b"), json!({"metadata": {"name": "q"}})));
    assert_eq!(
        ok(s.watch_since(&LOCAL_QUEUE, Some("b"), &Selector::everything(), here)).len(),
        1
    );
    assert_eq!(
        ok(s.watch_since(&LOCAL_QUEUE, None, &Selector::everything(), here)).len(),
        2
    );
}

#[test]
fn watch_from_before_the_history_window_is_gone() {
    let mut s = Store::new(StoreConfig {
        history_limit: 3,
        ..StoreConfig::default()
    });
    for i in 0..5 {
        ok(s.create(&NODE, None, json!({"metadata": {"name": format!("n{i}")}})));
    }
    // events 3, 4, 5 are kept; watching from 2 needs only those
    assert_eq!(
        ok(s.watch_since(&NODE, None, &Selector::everything(), 2)).len(),
        3
    );
    let gone = s.watch_since(&NODE, None, &Selector::everything(), 1).err();
    let status = gone.map(|g| g.0);
    assert_eq!(
        status
            .as_ref()
            .map(|s| (s.code, s.reason.as_str(), s.message.as_str())),
        Some((410, "Expired", "too old resource version: 1 (3)"))
    );
    let body = status.map(|s| s.to_value()).unwrap_or(Value::Null);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["status"], "Failure");
    // rv 0 still works (a fresh list-watch)
    assert_eq!(
        ok(s.watch_since(&NODE, None, &Selector::everything(), 0)).len(),
        5
    );
}

#[test]
fn server_side_apply_creates_merges_and_records_managers() {
    let mut s = store();
    let cfg = json!({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
                     "metadata": {"name": "t", "labels": {"pool": "a"}},
                     "spec": {"os": "linux", "arch": "amd64"}, "status": {"phase": "ignored"}});
    let created = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: cfg,
        field_manager: "alice",
        force: false,
    }));
    assert_eq!(created["spec"], json!({"os": "linux", "arch": "amd64"}));
    assert!(created.get("status").is_none());
    assert_eq!(generation(&created), 1);
    let mf = &created["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "alice");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(mf["fieldsType"], "FieldsV1");
    assert_eq!(
        mf["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:pool": {}}}, "f:spec": {"f:arch": {}, "f:os": {}}})
    );
    // bob applies a disjoint field: no conflict, both are managers
    let bob = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"spec": {"inactive": true}}),
        field_manager: "bob",
        force: false,
    }));
    assert_eq!(
        bob["spec"],
        json!({"os": "linux", "arch": "amd64", "inactive": true})
    );
    assert_eq!(generation(&bob), 2);
    assert_eq!(
        bob["metadata"]["managedFields"].as_array().map(Vec::len),
        Some(2)
    );
    // bob applying alice's field with the same value is shared, not a conflict
    ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"spec": {"inactive": true, "os": "linux"}}),
        field_manager: "bob",
        force: false,
    }));
    // alice stops applying arch: it is removed; re-applying is idempotent (no new rv)
    let less = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"metadata": {"labels": {"pool": "a"}}, "spec": {"os": "linux"}}),
        field_manager: "alice",
        force: false,
    }));
    assert!(less["spec"].get("arch").is_none());
    let same = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"metadata": {"labels": {"pool": "a"}}, "spec": {"os": "linux"}}),
        field_manager: "alice",
        force: false,
    }));
    assert_eq!(same, less);
    assert_eq!(rv(&same), rv(&less));
    // os stays while bob still owns it, even when alice stops applying it
    let alice_drops_os = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"metadata": {"labels": {"pool": "a"}}}),
        field_manager: "alice",
        force: false,
    }));
    assert_eq!(alice_drops_os["spec"]["os"], "linux");
}

#[test]
fn server_side_apply_conflicts_and_force() {
    let mut s = store();
    ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"spec": {"os": "linux", "arch": "amd64"}}),
        field_manager: "alice",
        force: false,
    }));
    let e = s
        .apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({"spec": {"os": "windows", "arch": "arm64"}}),
            field_manager: "bob",
            force: false,
        })
        .err();
    assert_eq!(e.as_ref().map(|e| e.code), Some(409));
    assert_eq!(
        e.as_ref().map(|e| e.message.as_str()),
        Some("Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.arch\n- .spec.os")
    );
    let fields: Vec<String> = e
        .and_then(|e| e.details)
        .map(|d| d.causes.into_iter().map(|c| c.field).collect())
        .unwrap_or_default();
    assert_eq!(fields, [".spec.arch", ".spec.os"]);
    // unchanged after the conflict
    assert_eq!(ok(s.get(&INSTANCE_TYPE, None, "t"))["spec"]["os"], "linux");
    // replacing a whole owned subtree conflicts too
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({"spec": "flat"}),
            field_manager: "carol",
            force: false
        })),
        409
    );
    // force takes ownership
    let forced = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"spec": {"os": "windows"}}),
        field_manager: "bob",
        force: true,
    }));
    assert_eq!(forced["spec"]["os"], "windows");
    let managers: Vec<(String, Value)> = forced["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap_or("").to_string(),
                m["fieldsV1"].clone(),
            )
        })
        .collect();
    assert_eq!(
        managers,
        [
            ("alice".to_string(), json!({"f:spec": {"f:arch": {}}})),
            ("bob".to_string(), json!({"f:spec": {"f:os": {}}})),
        ]
    );
    // alice now conflicts with bob on os
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({"spec": {"os": "linux", "arch": "amd64"}}),
            field_manager: "alice",
            force: false
        })),
        409
    );
}

#[test]
fn server_side_apply_on_status_and_errors() {
    let mut s = store();
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Status,
            config: json!({"status": {"phase": "A"}}),
            field_manager: "ctl",
            force: false
        })),
        404
    );
    ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Main,
        config: json!({"spec": {"os": "linux"}}),
        field_manager: "admin",
        force: false,
    }));
    let st = ok(s.apply(ApplyRequest {
        kind: &INSTANCE_TYPE,
        namespace: None,
        name: "t",
        subresource: Subresource::Status,
        config: json!({"spec": {"os": "x"}, "status": {"phase": "Active"}}),
        field_manager: "ctl",
        force: false,
    }));
    assert_eq!(st["status"]["phase"], "Active");
    assert_eq!(st["spec"]["os"], "linux");
    assert_eq!(generation(&st), 1);
    let entry = st["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["manager"] == "ctl"))
        .cloned();
    assert_eq!(
        entry.map(|e| e["subresource"].clone()),
        Some(json!("status"))
    );
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({}),
            field_manager: "",
            force: false
        })),
        422
    );
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({"metadata": {"name": "u"}}),
            field_manager: "m",
            force: false
        })),
        400
    );
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({"kind": "Node"}),
            field_manager: "m",
            force: false
        })),
        400
    );
    // a stale resourceVersion in an apply is a conflict
    assert_eq!(
        code(s.apply(ApplyRequest {
            kind: &INSTANCE_TYPE,
            namespace: None,
            name: "t",
            subresource: Subresource::Main,
            config: json!({"metadata": {"resourceVersion": "1"}, "spec": {"arch": "x"}}),
            field_manager: "m",
            force: false
        })),
        409
    );
}

#[test]
fn validators_prune_and_reject() {
    let mut s = store();
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["os"], "properties": {"os": {"type": "string"}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
    }});
    s.set_validator(&INSTANCE_TYPE, live::server::structural::validator(schema));
    let c = ok(s.create(
        &INSTANCE_TYPE,
        None,
        json!({"metadata": {"name": "t"}, "spec": {"os": "linux", "junk": 1}}),
    ));
    assert_eq!(c["spec"], json!({"os": "linux"}));
    assert_eq!(c["metadata"]["uid"], "00000000-0000-4000-8000-000000000001");
    let bad = s
        .create(
            &INSTANCE_TYPE,
            None,
            json!({"metadata": {"name": "u"}, "spec": {"os": 1}}),
        )
        .err();
    assert_eq!(bad.as_ref().map(|e| e.code), Some(422));
    assert_eq!(
        bad.map(|e| e.message),
        Some("InstanceType.worker.gpustack.ai \"u\" is invalid: spec.os: Invalid value: \"integer\": spec.os in body must be of type string: \"integer\"".to_string())
    );
    let missing = s
        .patch(
            &INSTANCE_TYPE,
            None,
            "t",
            Subresource::Main,
            &Patch::Json(json!([{"op": "remove", "path": "/spec/os"}])),
        )
        .err();
    assert_eq!(
        missing.and_then(|e| e.details).map(|d| d
            .causes
            .into_iter()
            .map(|c| (c.field, c.reason))
            .collect::<Vec<_>>()),
        Some(vec![(
            "spec.os".to_string(),
            "FieldValueRequired".to_string()
        )])
    );
    // pruning an unknown field is not a spec change
    let mut same = c.clone();
    same["spec"]["other"] = json!(true);
    let same = ok(s.update(&INSTANCE_TYPE, None, same));
    assert_eq!(rv(&same), rv(&c));
    assert_eq!(generation(&same), 1);
    let st = ok(s.patch(
        &INSTANCE_TYPE,
        None,
        "t",
        Subresource::Status,
        &Patch::Merge(json!({"status": {"phase": "A", "junk": 2}})),
    ));
    assert_eq!(st["status"], json!({"phase": "A"}));
}

// ---- field ownership, after the examples of the Kubernetes server-side apply documentation
// (https://kubernetes.io/docs/reference/using-api/server-side-apply/) ----

/// `(manager, operation, fieldsV1)` of every `managedFields` entry, in stored order.
fn owners(o: &Value) -> Vec<(String, String, Value)> {
    o.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

fn label(key: &str) -> Value {
    json!({"f:metadata": {"f:labels": {format!("f:{key}"): {}}}})
}

/// [`label`] by the `Update` that created the labels map (which it then owns too).
fn created_label(key: &str) -> Value {
    json!({"f:metadata": {"f:labels": {".": {}, format!("f:{key}"): {}}}})
}

fn node_labels(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": labels}})
}

fn apply_node(s: &mut Store, labels: Value, manager: &str, force: bool) -> Result<Value, Status> {
    s.apply(ApplyRequest {
        kind: &NODE,
        namespace: None,
        name: "n",
        subresource: Subresource::Main,
        config: node_labels(labels),
        field_manager: manager,
        force,
    })
}

fn conflict_of(r: Result<Value, Status>) -> (String, Vec<(String, String, String)>) {
    let e = match r {
        Ok(v) => panic!("expected a conflict, got {v}"),
        Err(e) => e,
    };
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"), "{e:?}");
    let causes = e
        .details
        .map(|d| {
            d.causes
                .into_iter()
                .map(|c| (c.reason, c.message, c.field))
                .collect()
        })
        .unwrap_or_default();
    (e.message, causes)
}

#[test]
fn a_create_records_an_update_entry_owning_every_field_it_set() {
    let mut s = store();
    let c = ok(s.create_by(&INSTANCE_TYPE, None, it("a10"), "admin"));
    let entries = c["metadata"]["managedFields"].as_array().cloned();
    let entry = entries.as_ref().and_then(|e| e.first()).cloned();
    assert_eq!(entries.map(|e| e.len()), Some(1));
    let entry = entry.unwrap_or_default();
    assert_eq!(entry["manager"], "admin");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "worker.gpustack.ai/v1alpha1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    // the create's own time; status is the status subresource's, not owned here
    assert_eq!(entry["time"], c["metadata"]["creationTimestamp"]);
    // the objects it created are owned themselves (`.`), as kube-apiserver 1.37 records
    // them (live/tests/real_server.rs compares the two)
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:pool": {}}},
               "f:spec": {".": {}, "f:acceleratable": {}, "f:arch": {}, "f:localStorage": {},
                          "f:os": {}, "f:unitResources": {".": {}, "f:cpu": {}, "f:ram": {}}}})
    );
    assert!(entry.get("subresource").is_none());
    // the store records the manager it is given (the HTTP layer gives `unknown` to a
    // request naming none: managedfields buildmanagerinfo.go, tested in real_server.rs)
    let anonymous = ok(s.create(&NODE, None, node_labels(json!({"zone": "a"}))));
    assert_eq!(
        owners(&anonymous),
        [(String::new(), "Update".to_string(), created_label("zone"))]
    );
}

#[test]
fn an_update_takes_only_the_fields_it_changed() {
    let mut s = store();
    let c = ok(s.create_by(&INSTANCE_TYPE, None, it("a10"), "admin"));
    let mut next = c.clone();
    next["spec"]["os"] = json!("windows");
    next["metadata"]["labels"]["team"] = json!("ml");
    let u = ok(s.update_by(&INSTANCE_TYPE, None, next, "ops"));
    let got = owners(&u);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "admin");
    assert!(got[0].2.pointer("/f:spec/f:os").is_none());
    assert!(got[0].2.pointer("/f:spec/f:arch").is_some());
    assert_eq!(
        got[1],
        (
            "ops".to_string(),
            "Update".to_string(),
            json!({"f:metadata": {"f:labels": {"f:team": {}}}, "f:spec": {"f:os": {}}})
        )
    );
    // the same object again changes nothing: no write, the entries stay as they were
    let same = ok(s.update_by(&INSTANCE_TYPE, None, u.clone(), "someone"));
    assert_eq!(same, u);
    // a field removed by a JSON patch is owned by nobody any more
    let removed = ok(s.patch_by(
        &INSTANCE_TYPE,
        None,
        "a10",
        Subresource::Main,
        &Patch::Json(json!([{"op": "remove", "path": "/metadata/labels/team"}])),
        "janitor",
    ));
    assert_eq!(
        owners(&removed)[1].2,
        json!({"f:spec": {"f:os": {}}}),
        "{:?}",
        owners(&removed)
    );
    assert_eq!(owners(&removed).len(), 2, "a removal owns nothing");
    // a status write is recorded against the status subresource
    let st = ok(s.patch_by(
        &INSTANCE_TYPE,
        None,
        "a10",
        Subresource::Status,
        &Patch::Merge(json!({"status": {"phase": "Active"}})),
        "controller",
    ));
    let entry = st["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == "controller"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["subresource"], "status");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {".": {}, "f:phase": {}}})
    );
    // ... and leaves the main resource's owners as they were
    let before: Vec<_> = owners(&removed);
    let after: Vec<_> = owners(&st)
        .into_iter()
        .filter(|o| o.0 != "controller")
        .collect();
    assert_eq!(after, before);
    // a main-resource write leaves the status owner alone
    let relabelled = ok(s.patch_by(
        &INSTANCE_TYPE,
        None,
        "a10",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"labels": {"pool": "b"}}})),
        "ops",
    ));
    assert!(owners(&relabelled)
        .iter()
        .any(|o| o.0 == "controller" && o.2 == json!({"f:status": {".": {}, "f:phase": {}}})));
}

#[test]
fn a_patch_moves_an_applied_field_to_the_patcher_and_a_plain_reapply_conflicts() {
    // the documentation's "kubectl scale" over an applied replicas: here the worker applies
    // a Node label and verify's patch rewrites it
    let mut s = store();
    ok(s.create_by(&NODE, None, node_labels(json!({"zone": "a"})), "kubelet"));
    let applied = ok(apply_node(
        &mut s,
        json!({"gpustack.ai/managed": "true"}),
        "gpustack-worker",
        true,
    ));
    assert_eq!(
        owners(&applied),
        [
            (
                "gpustack-worker".to_string(),
                "Apply".to_string(),
                label("gpustack.ai/managed")
            ),
            (
                "kubelet".to_string(),
                "Update".to_string(),
                created_label("zone")
            ),
        ]
    );
    let patched = ok(s.patch_by(
        &NODE,
        None,
        "n",
        Subresource::Main,
        &Patch::Merge(json!({"metadata": {"labels": {"gpustack.ai/managed": "false"}}})),
        "verify",
    ));
    // the applier's entry lost its only field and is gone; the patcher owns the label
    assert_eq!(
        owners(&patched),
        [
            (
                "kubelet".to_string(),
                "Update".to_string(),
                created_label("zone")
            ),
            (
                "verify".to_string(),
                "Update".to_string(),
                label("gpustack.ai/managed")
            ),
        ]
    );
    // re-applying the old value without force is a conflict naming the patcher
    let (message, causes) = conflict_of(apply_node(
        &mut s,
        json!({"gpustack.ai/managed": "true"}),
        "gpustack-worker",
        false,
    ));
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"verify\" using v1: .metadata.labels.gpustack.ai/managed"
    );
    assert_eq!(
        causes,
        [(
            "FieldManagerConflict".to_string(),
            "conflict with \"verify\" using v1".to_string(),
            ".metadata.labels.gpustack.ai/managed".to_string()
        )]
    );
    assert_eq!(
        ok(s.get(&NODE, None, "n"))["metadata"]["labels"]["gpustack.ai/managed"],
        "false"
    );
    // re-applying the patched value is no conflict: the worker shares it with verify
    let shared = ok(apply_node(
        &mut s,
        json!({"gpustack.ai/managed": "false"}),
        "gpustack-worker",
        false,
    ));
    let holders: Vec<String> = owners(&shared)
        .into_iter()
        .filter(|o| o.2 == label("gpustack.ai/managed"))
        .map(|o| o.0)
        .collect();
    assert_eq!(holders, ["gpustack-worker", "verify"]);
    // with force the applier takes the field back
    let forced = ok(apply_node(
        &mut s,
        json!({"gpustack.ai/managed": "true"}),
        "gpustack-worker",
        true,
    ));
    assert_eq!(forced["metadata"]["labels"]["gpustack.ai/managed"], "true");
    assert_eq!(
        owners(&forced),
        [
            (
                "gpustack-worker".to_string(),
                "Apply".to_string(),
                label("gpustack.ai/managed")
            ),
            (
                "kubelet".to_string(),
                "Update".to_string(),
                created_label("zone")
            ),
        ]
    );
}

#[test]
fn a_field_two_appliers_share_conflicts_with_both_and_stays_until_both_drop_it() {
    let mut s = store();
    ok(apply_node(&mut s, json!({"x": "1"}), "alice", false));
    ok(apply_node(&mut s, json!({"x": "1"}), "bob", false));
    // carol changing it conflicts with both, grouped by manager as the apiserver words it
    let (message, causes) = conflict_of(apply_node(&mut s, json!({"x": "2"}), "carol", false));
    assert_eq!(
        message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .metadata.labels.x\nconflicts with \"bob\":\n- .metadata.labels.x"
    );
    let managers: Vec<&str> = causes.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        managers,
        ["conflict with \"alice\"", "conflict with \"bob\""]
    );
    // alice drops it: bob still owns it, so it stays
    let alice_dropped = ok(apply_node(&mut s, json!({"y": "1"}), "alice", false));
    assert_eq!(alice_dropped["metadata"]["labels"]["x"], "1");
    // bob drops it too (an apply of no labels at all): nobody owns it, so it is removed
    let bob_dropped = ok(apply_node(&mut s, Value::Null, "bob", false));
    assert!(bob_dropped["metadata"]["labels"].get("x").is_none());
    assert_eq!(bob_dropped["metadata"]["labels"]["y"], "1");
    assert_eq!(
        owners(&bob_dropped),
        [("alice".to_string(), "Apply".to_string(), label("y"))]
    );
}

#[test]
fn an_applier_dropping_a_field_an_updater_also_owns_keeps_it() {
    let mut s = store();
    // the creator owns `x`; alice applies the same value (shared), then stops applying it
    ok(s.create_by(&NODE, None, node_labels(json!({"x": "1"})), "creator"));
    ok(apply_node(
        &mut s,
        json!({"x": "1", "y": "1"}),
        "alice",
        false,
    ));
    let dropped = ok(apply_node(&mut s, json!({"y": "1"}), "alice", false));
    assert_eq!(dropped["metadata"]["labels"], json!({"x": "1", "y": "1"}));
    // an applier changing a field an updater set conflicts with that updater
    let (message, _) = conflict_of(apply_node(&mut s, json!({"x": "2"}), "alice", false));
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"creator\" using v1: .metadata.labels.x"
    );
}
