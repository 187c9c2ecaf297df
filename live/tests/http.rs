//! The twin's HTTP API, end to end on 127.0.0.1 (port 0) through a plain hyper client:
//! discovery shapes, the verbs and their codes, patch types, server-side apply, finalizers,
//! watch streams (events after the watch started, 410 as an ERROR event), errors as
//! `metav1.Status`, and — when `kubectl` is installed — a real third-party client.
//! No assertion depends on timing: waits on events are bounded, never sleeps.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{apply_yaml, call, get, instance_type, patch, post, put, runtime, send};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use live::server::counters::{Counts, COUNTERS_PATH};
use live::server::faults::{Fault, FaultConfig};
use live::server::http::{
    spawn_configured, spawn_on_loopback, spawn_with_store, ServeConfig, TwinHandle,
};
use live::server::kubeconfig::kubeconfig_yaml;
use live::server::store::{Store, StoreConfig};
use serde_json::{json, Value};

/// The longest wait for one watch event before the test fails.
const EVENT_WAIT: Duration = Duration::from_secs(10);

const IT: &str = "/apis/worker.gpustack.ai/v1alpha1/instancetypes";
const NODES: &str = "/api/v1/nodes";

fn twin() -> TwinHandle {
    match spawn_on_loopback(None) {
        Ok(t) => t,
        Err(e) => panic!("the twin did not start: {e}"),
    }
}

fn node(name: &str, zone: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"zone": zone}}})
}

fn rv(o: &Value) -> String {
    o.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.pointer("/metadata/name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts a `metav1.Status` failure with `code` and `reason`.
fn assert_status(got: &(u16, Value), code: u16, reason: &str) {
    assert_eq!(got.0, code, "{}", got.1);
    assert_eq!(got.1["kind"], "Status", "{}", got.1);
    assert_eq!(got.1["apiVersion"], "v1");
    assert_eq!(got.1["status"], "Failure");
    assert_eq!(got.1["code"], code);
    assert_eq!(got.1["reason"], reason, "{}", got.1);
}

#[test]
fn discovery_documents_have_the_apiserver_shapes() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let (code, api) = get(addr, "/api").await;
        assert_eq!(code, 200);
        assert_eq!(api["kind"], "APIVersions");
        assert_eq!(api["versions"], json!(["v1"]));
        assert_eq!(
            api["serverAddressByClientCIDRs"][0]["serverAddress"],
            addr.to_string()
        );

        let (_, core) = get(addr, "/api/v1").await;
        assert_eq!(core["kind"], "APIResourceList");
        assert_eq!(core["groupVersion"], "v1");
        let pods_status = core["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["name"] == "pods/status"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(pods_status["namespaced"], true);
        assert_eq!(pods_status["kind"], "Pod");

        let (_, groups) = get(addr, "/apis").await;
        assert_eq!(groups["kind"], "APIGroupList");
        assert_eq!(groups["apiVersion"], "v1");
        let served: Vec<String> = groups["groups"]
            .as_array()
            .map(|gs| {
                gs.iter()
                    .filter_map(|g| g["preferredVersion"]["groupVersion"].as_str())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            served,
            [
                "apiregistration.k8s.io/v1",
                "apps/v1",
                "batch/v1",
                "policy/v1",
                "rbac.authorization.k8s.io/v1",
                "admissionregistration.k8s.io/v1",
                "apiextensions.k8s.io/v1",
                "coordination.k8s.io/v1",
                "nfd.k8s-sigs.io/v1alpha1",
                "worker.gpustack.ai/v1alpha1",
                "kueue.x-k8s.io/v1beta2"
            ]
        );

        let (_, kueue) = get(addr, "/apis/kueue.x-k8s.io/v1beta2").await;
        assert_eq!(kueue["groupVersion"], "kueue.x-k8s.io/v1beta2");
        let workloads = kueue["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["name"] == "workloads"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(workloads["singularName"], "workload");
        assert_eq!(workloads["kind"], "Workload");
        assert_eq!(workloads["namespaced"], true);
        for verb in [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ] {
            assert!(
                workloads["verbs"]
                    .as_array()
                    .is_some_and(|v| v.contains(&json!(verb))),
                "{verb}"
            );
        }
        let (_, group) = get(addr, "/apis/worker.gpustack.ai").await;
        assert_eq!(group["kind"], "APIGroup");
        assert_eq!(group["preferredVersion"]["version"], "v1alpha1");

        let (code, version) = get(addr, "/version").await;
        assert_eq!(code, 200);
        assert_eq!(version["major"], "1");
        assert!(version["gitVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("v1.")));

        assert_status(&get(addr, "/openapi/v2").await, 404, "NotFound");
        // a served group's unknown resource is a Status; a group nobody serves falls
        // through to the catch-all's plain 404, as on a real apiserver
        assert_status(&get(addr, "/api/v1/nonexist").await, 404, "NotFound");
        let unserved = send(addr, "GET", "/apis/autoscaling/v2", "", Vec::new()).await;
        assert_eq!(unserved.status().as_u16(), 404);
        let text = match unserved.into_body().collect().await {
            Ok(b) => String::from_utf8_lossy(&b.to_bytes()).to_string(),
            Err(e) => panic!("body: {e}"),
        };
        assert_eq!(text, "404 page not found\n");
        assert_status(
            &call(addr, "POST", "/apis", "application/json", &json!({})).await,
            405,
            "MethodNotAllowed",
        );
    });
}

#[test]
fn create_get_list_with_selectors_and_optimistic_concurrency() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let (code, a) = post(addr, NODES, node("a", "east")).await;
        assert_eq!(code, 201);
        assert_eq!(a["metadata"]["uid"], "00000000-0000-4000-8000-000000000001");
        assert_eq!(post(addr, NODES, node("b", "west")).await.0, 201);
        assert_eq!(post(addr, NODES, node("c", "east")).await.0, 201);
        assert_status(
            &post(addr, NODES, node("a", "east")).await,
            409,
            "AlreadyExists",
        );

        let (code, got) = get(addr, "/api/v1/nodes/a").await;
        assert_eq!(code, 200);
        assert_eq!(got, a);

        let (code, list) = get(addr, "/api/v1/nodes?labelSelector=zone%3Deast").await;
        assert_eq!(code, 200);
        assert_eq!(list["kind"], "NodeList");
        assert_eq!(list["metadata"]["resourceVersion"], "3");
        assert_eq!(names(&list), ["a", "c"]);
        let (_, list) = get(addr, "/api/v1/nodes?fieldSelector=metadata.name%3Db").await;
        assert_eq!(names(&list), ["b"]);
        let (_, list) = get(addr, "/api/v1/nodes?labelSelector=zone+notin+(east)").await;
        assert_eq!(names(&list), ["b"]);
        assert_status(
            &get(addr, "/api/v1/nodes?labelSelector=zone%3D%3D%3D").await,
            400,
            "BadRequest",
        );

        // update with the current resourceVersion, then again with the now stale one
        let mut changed = a.clone();
        changed["metadata"]["labels"]["zone"] = json!("north");
        let (code, updated) = put(addr, "/api/v1/nodes/a", changed.clone()).await;
        assert_eq!(code, 200);
        assert_eq!(updated["metadata"]["labels"]["zone"], "north");
        assert_ne!(rv(&updated), rv(&a));
        assert_status(
            &put(addr, "/api/v1/nodes/a", changed).await,
            409,
            "Conflict",
        );
        // the name in the body must be the URL's
        assert_status(
            &put(addr, "/api/v1/nodes/b", updated).await,
            400,
            "BadRequest",
        );

        // namespaced kinds: the namespace must exist; the cross-namespace list sees all
        let wl = |name: &str| {
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                   "metadata": {"name": name}, "spec": {"queueName": "q"}})
        };
        let team = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads";
        assert_status(&post(addr, team, wl("w1")).await, 404, "NotFound");
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        let (code, ns) = post(addr, "/api/v1/namespaces", ns).await;
        assert_eq!(code, 201);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(post(addr, team, wl("w1")).await.0, 201);
        let (_, all) = get(addr, "/apis/kueue.x-k8s.io/v1beta2/workloads").await;
        assert_eq!(names(&all), ["w1"]);
        assert_eq!(all["items"][0]["metadata"]["namespace"], "team");
        assert_status(
            &post(addr, "/apis/kueue.x-k8s.io/v1beta2/workloads", wl("w2")).await,
            405,
            "MethodNotAllowed",
        );
    });
}

#[test]
fn status_subresource_separates_spec_and_status() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let (code, created) = post(addr, IT, instance_type("a10")).await;
        assert_eq!(code, 201);
        assert!(created.get("status").is_none());
        let item = format!("{IT}/a10");

        // status sent to the main resource is ignored
        let mut with_status = created.clone();
        with_status["status"] = json!({"phase": "Active"});
        with_status["spec"]["os"] = json!("windows");
        let (code, main) = put(addr, &item, with_status.clone()).await;
        assert_eq!(code, 200);
        assert_eq!(main["spec"]["os"], "windows");
        assert!(main.get("status").is_none());
        assert_eq!(main["metadata"]["generation"], 2);

        // spec sent to /status is ignored, status is taken; generation does not move
        let mut on_status = main.clone();
        on_status["status"] = json!({"phase": "Active"});
        on_status["spec"]["os"] = json!("linux");
        let (code, st) = put(addr, &format!("{item}/status"), on_status).await;
        assert_eq!(code, 200);
        assert_eq!(st["status"]["phase"], "Active");
        assert_eq!(st["spec"]["os"], "windows");
        assert_eq!(st["metadata"]["generation"], 2);

        // a merge patch on /status
        let (code, st) = patch(
            addr,
            &format!("{item}/status"),
            "application/merge-patch+json",
            json!({"status": {"phase": "Inactive"}, "spec": {"os": "linux"}}),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(st["status"]["phase"], "Inactive");
        assert_eq!(st["spec"]["os"], "windows");
        assert_eq!(get(addr, &format!("{item}/status")).await.1, st);

        // ResourceFlavor has no /status
        assert_status(
            &get(
                addr,
                "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/f/status",
            )
            .await,
            404,
            "NotFound",
        );
    });
}

#[test]
fn merge_json_and_unsupported_patches() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        post(addr, IT, instance_type("a10")).await;
        let item = format!("{IT}/a10");
        let (code, merged) = patch(
            addr,
            &item,
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"pool": null, "tier": "gold"}}}),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(merged["metadata"]["labels"], json!({"tier": "gold"}));

        let (code, patched) = patch(
            addr,
            &item,
            "application/json-patch+json",
            json!([{"op": "test", "path": "/spec/os", "value": "linux"},
                   {"op": "replace", "path": "/spec/arch", "value": "arm64"}]),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(patched["spec"]["arch"], "arm64");
        assert_status(
            &patch(
                addr,
                &item,
                "application/json-patch+json",
                json!([{"op": "test", "path": "/spec/os", "value": "plan9"}]),
            )
            .await,
            422,
            "Invalid",
        );

        // strategic merge: refused for custom resources, a merge patch for core kinds
        let smp = "application/strategic-merge-patch+json";
        let refused = patch(addr, &item, smp, json!({"spec": {"os": "x"}})).await;
        assert_status(&refused, 415, "UnsupportedMediaType");
        assert!(refused.1["message"]
            .as_str()
            .is_some_and(|m| m.contains("not supported for custom resources")));
        post(addr, NODES, node("n", "east")).await;
        let (code, n) = patch(
            addr,
            "/api/v1/nodes/n",
            smp,
            json!({"spec": {"unschedulable": true}}),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(n["spec"]["unschedulable"], true);
        assert_status(
            &patch(addr, &item, "text/plain", json!({})).await,
            415,
            "UnsupportedMediaType",
        );
        assert_status(
            &patch(
                addr,
                &format!("{IT}/missing"),
                "application/merge-patch+json",
                json!({}),
            )
            .await,
            404,
            "NotFound",
        );
        assert_status(
            &patch(
                addr,
                &format!("{item}?force=true"),
                "application/merge-patch+json",
                json!({}),
            )
            .await,
            422,
            "Invalid",
        );
    });
}

#[test]
fn a_patch_takes_an_applied_label_and_the_next_apply_conflicts_with_it() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let (code, _) = post(addr, NODES, node("n", "a")).await;
        assert_eq!(code, 201);
        let base = format!("{NODES}/n");
        let yaml = |v: &str| {
            format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    gpustack.ai/managed: \"{v}\"\n")
        };
        let (code, applied) = apply_yaml(
            addr,
            &format!("{base}?fieldManager=gpustack-worker&force=true"),
            &yaml("true"),
        )
        .await;
        assert_eq!(code, 200, "{applied}");
        let (code, patched) = patch(
            addr,
            &format!("{base}?fieldManager=verify"),
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"gpustack.ai/managed": "false"}}}),
        )
        .await;
        assert_eq!(code, 200, "{patched}");
        let entries = patched["metadata"]["managedFields"].clone();
        let by = |m: &str| {
            entries
                .as_array()
                .and_then(|e| e.iter().find(|e| e["manager"] == m))
                .cloned()
        };
        assert!(by("gpustack-worker").is_none(), "{entries}");
        let verify = by("verify").unwrap_or_default();
        assert_eq!(verify["operation"], "Update");
        assert_eq!(verify["apiVersion"], "v1");
        assert_eq!(
            verify["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:gpustack.ai/managed": {}}}})
        );
        let conflict = apply_yaml(
            addr,
            &format!("{base}?fieldManager=gpustack-worker"),
            &yaml("true"),
        )
        .await;
        assert_status(&conflict, 409, "Conflict");
        assert_eq!(
            conflict.1["message"],
            "Apply failed with 1 conflict: conflict with \"verify\" using v1: .metadata.labels.gpustack.ai/managed"
        );
        assert_eq!(
            conflict.1["details"]["causes"],
            json!([{"reason": "FieldManagerConflict",
                    "message": "conflict with \"verify\" using v1",
                    "field": ".metadata.labels.gpustack.ai/managed"}])
        );
        let (_, now) = get(addr, &base).await;
        assert_eq!(now["metadata"]["labels"]["gpustack.ai/managed"], "false");
    });
}

#[test]
fn server_side_apply_conflicts_until_forced() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let base = format!("{IT}/a10");
        let yaml = |os: &str| {
            format!(
                "apiVersion: worker.gpustack.ai/v1alpha1\nkind: InstanceType\nmetadata:\n  name: a10\nspec:\n  os: {os}\n  arch: amd64\n"
            )
        };
        let (code, created) =
            apply_yaml(addr, &format!("{base}?fieldManager=alice"), &yaml("linux")).await;
        assert_eq!(code, 201, "{created}");
        assert_eq!(created["metadata"]["managedFields"][0]["manager"], "alice");
        assert_eq!(created["metadata"]["managedFields"][0]["operation"], "Apply");

        // JSON is YAML: the same configuration as JSON is a no-op for the same manager
        let (code, again) = call(
            addr,
            "PATCH",
            &format!("{base}?fieldManager=alice"),
            "application/apply-patch+yaml",
            &json!({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
                    "metadata": {"name": "a10"}, "spec": {"os": "linux", "arch": "amd64"}}),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(rv(&again), rv(&created));

        let conflict = apply_yaml(addr, &format!("{base}?fieldManager=bob"), &yaml("windows")).await;
        assert_status(&conflict, 409, "Conflict");
        let causes = conflict.1["details"]["causes"].clone();
        assert_eq!(causes[0]["field"], ".spec.os");
        assert_eq!(causes[0]["reason"], "FieldManagerConflict");

        let (code, forced) = apply_yaml(
            addr,
            &format!("{base}?fieldManager=bob&force=true"),
            &yaml("windows"),
        )
        .await;
        assert_eq!(code, 200, "{forced}");
        assert_eq!(forced["spec"]["os"], "windows");
        let managers: Vec<&str> = forced["metadata"]["managedFields"]
            .as_array()
            .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(managers, ["alice", "bob"]);

        // an apply naming no manager is an invalid PatchOptions (422, as kube-apiserver 1.37
        // answers; it used to be a 400 here)
        assert_status(
            &apply_yaml(addr, &base, &yaml("linux")).await,
            422,
            "Invalid",
        );
        assert_status(
            &apply_yaml(addr, &format!("{base}?fieldManager=x"), "spec: [unclosed").await,
            400,
            "BadRequest",
        );
    });
}

#[test]
fn delete_waits_for_finalizers() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let mut it = instance_type("a10");
        it["metadata"]["finalizers"] = json!(["gpustack.ai/keep"]);
        post(addr, IT, it).await;
        let item = format!("{IT}/a10");
        let (code, deleting) = call(
            addr,
            "DELETE",
            &item,
            "application/json",
            &json!({"kind": "DeleteOptions", "apiVersion": "v1",
                    "propagationPolicy": "Background"}),
        )
        .await;
        assert_eq!(code, 200);
        assert!(deleting["metadata"]["deletionTimestamp"].is_string());
        assert_eq!(get(addr, &item).await.0, 200);

        let (code, gone) = patch(
            addr,
            &item,
            "application/merge-patch+json",
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(gone["metadata"]["name"], "a10");
        assert_status(&get(addr, &item).await, 404, "NotFound");
        assert_status(
            &call(addr, "DELETE", &item, "", &Value::Null).await,
            404,
            "NotFound",
        );

        // a Node's immediate delete answers a Status Success; a precondition is checked
        let (_, n) = post(addr, NODES, node("n", "east")).await;
        assert_status(
            &call(
                addr,
                "DELETE",
                "/api/v1/nodes/n",
                "application/json",
                &json!({"preconditions": {"uid": "not-it"}}),
            )
            .await,
            409,
            "Conflict",
        );
        let (code, done) = call(
            addr,
            "DELETE",
            "/api/v1/nodes/n?propagationPolicy=Foreground",
            "",
            &Value::Null,
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(done["kind"], "Status");
        assert_eq!(done["status"], "Success");
        assert_eq!(done["details"]["uid"], n["metadata"]["uid"]);
        assert_status(
            &call(addr, "DELETE", NODES, "", &Value::Null).await,
            405,
            "MethodNotAllowed",
        );
    });
}

#[test]
fn unknown_resources_and_bad_bodies_are_status_errors() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        let missing = get(addr, "/apis/worker.gpustack.ai/v1alpha1/gadgets").await;
        assert_status(&missing, 404, "NotFound");
        assert_status(&get(addr, "/api/v1/nodes/nope").await, 404, "NotFound");
        assert_eq!(
            get(addr, "/api/v1/nodes/nope").await.1["message"],
            "nodes \"nope\" not found"
        );
        assert_status(
            &get(
                addr,
                "/apis/worker.gpustack.ai/v1alpha1/namespaces/a/devices",
            )
            .await,
            404,
            "NotFound",
        );
        let broken = send(addr, "POST", NODES, "application/json", b"{".to_vec()).await;
        assert_eq!(broken.status().as_u16(), 400);
        assert_status(
            &post(addr, NODES, json!({"kind": "Node", "apiVersion": "v1"})).await,
            422,
            "Invalid",
        );
        assert_status(
            &post(
                addr,
                NODES,
                json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x"}}),
            )
            .await,
            400,
            "BadRequest",
        );
        assert_status(
            &call(
                addr,
                "POST",
                "/api/v1/nodes/x",
                "application/json",
                &json!({}),
            )
            .await,
            405,
            "MethodNotAllowed",
        );
        // a dry run answers as the write would and persists nothing (it used to be a 400)
        let (code, dry) = post(addr, &format!("{NODES}?dryRun=All"), node("d", "e")).await;
        assert_eq!(code, 201, "{dry}");
        assert!(dry["metadata"].get("resourceVersion").is_none(), "{dry}");
        assert_eq!(get(addr, &format!("{NODES}/d")).await.0, 404);
        assert_status(
            &post(addr, &format!("{NODES}?dryRun=Bogus"), node("d", "e")).await,
            422,
            "Invalid",
        );
    });
}

/// Reads watch lines from a streaming body, each within [`EVENT_WAIT`].
struct Lines {
    body: Incoming,
    buffer: Vec<u8>,
}

impl Lines {
    async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return serde_json::from_slice(&line).unwrap_or(Value::Null);
            }
            let frame = match tokio::time::timeout(EVENT_WAIT, self.body.frame()).await {
                Ok(Some(Ok(f))) => f,
                Ok(Some(Err(e))) => panic!("watch stream failed: {e}"),
                Ok(None) => return Value::Null,
                Err(_) => panic!("no watch event within {EVENT_WAIT:?}"),
            };
            if let Some(data) = frame.data_ref() {
                self.buffer.extend_from_slice(data);
            }
        }
    }
}

async fn watch(addr: SocketAddr, path: &str) -> Lines {
    let response = send(addr, "GET", path, "", Vec::new()).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    Lines {
        body: response.into_body(),
        buffer: Vec::new(),
    }
}

#[test]
fn watch_streams_events_written_after_it_started() {
    let twin = twin();
    let addr = twin.addr();
    runtime().block_on(async {
        post(addr, NODES, node("before", "east")).await;
        let (_, list) = get(addr, NODES).await;
        let from = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut events = watch(
            addr,
            &format!("{NODES}?watch=true&resourceVersion={from}&labelSelector=zone%3Deast&timeoutSeconds=60"),
        )
        .await;
        // the watch is open (headers received): write now
        let (_, created) = post(addr, NODES, node("n1", "east")).await;
        post(addr, NODES, node("ignored", "west")).await;
        patch(
            addr,
            "/api/v1/nodes/n1",
            "application/merge-patch+json",
            json!({"metadata": {"annotations": {"a": "b"}}}),
        )
        .await;
        let added = events.next().await;
        assert_eq!(added["type"], "ADDED");
        assert_eq!(added["object"], created);
        let modified = events.next().await;
        assert_eq!(modified["type"], "MODIFIED");
        assert_eq!(modified["object"]["metadata"]["annotations"]["a"], "b");
        // a label change out of the selector is a DELETED for this watch
        patch(
            addr,
            "/api/v1/nodes/n1",
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"zone": "west"}}}),
        )
        .await;
        let left = events.next().await;
        assert_eq!(left["type"], "DELETED");
        assert_eq!(left["object"]["metadata"]["name"], "n1");

        // writes made straight on the store (no notification) reach watchers too
        let store = twin.store().inner();
        let direct = match store.lock() {
            Ok(mut s) => s.create(&live::wire::kinds::NODE, None, node("direct", "east")),
            Err(e) => panic!("lock: {e}"),
        };
        assert!(direct.is_ok());
        let added = events.next().await;
        assert_eq!(added["object"]["metadata"]["name"], "direct");

        // resourceVersion 0: the current objects as ADDED first
        let mut from_zero = watch(addr, &format!("{NODES}?watch=1&resourceVersion=0")).await;
        let mut seen = Vec::new();
        for _ in 0..4 {
            let e = from_zero.next().await;
            assert_eq!(e["type"], "ADDED");
            seen.push(e["object"]["metadata"]["name"].as_str().unwrap_or("").to_string());
        }
        assert_eq!(seen, ["before", "direct", "ignored", "n1"]);

        // sendInitialEvents: ADDED for the current objects, then the end bookmark
        let mut initial = watch(
            addr,
            &format!("{NODES}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&fieldSelector=metadata.name%3Dbefore"),
        )
        .await;
        assert_eq!(initial.next().await["type"], "ADDED");
        let end = initial.next().await;
        assert_eq!(end["type"], "BOOKMARK");
        assert_eq!(
            end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );

        // timeoutSeconds=0 ends the stream
        let mut ended = watch(
            addr,
            &format!("{NODES}?watch=true&resourceVersion={}&timeoutSeconds=0", rv(&created)),
        )
        .await;
        let mut rest = Vec::new();
        loop {
            let e = ended.next().await;
            if e.is_null() {
                break;
            }
            rest.push(e);
        }
        assert!(rest.len() <= 5);
    });
}

#[test]
fn watch_from_a_too_old_resource_version_is_an_error_event_410() {
    let store = Store::new(StoreConfig {
        history_limit: 2,
        ..StoreConfig::default()
    });
    let twin = match spawn_with_store(None, store) {
        Ok(t) => t,
        Err(e) => panic!("the twin did not start: {e}"),
    };
    let addr = twin.addr();
    runtime().block_on(async {
        for i in 0..5 {
            post(addr, NODES, node(&format!("n{i}"), "east")).await;
        }
        let mut events = watch(addr, &format!("{NODES}?watch=true&resourceVersion=1")).await;
        let error = events.next().await;
        assert_eq!(error["type"], "ERROR");
        assert_eq!(error["object"]["kind"], "Status");
        assert_eq!(error["object"]["code"], 410);
        assert_eq!(error["object"]["reason"], "Expired");
        assert!(
            events.next().await.is_null(),
            "the stream ends after the 410"
        );
        // a recent resourceVersion still works
        let mut fine = watch(addr, &format!("{NODES}?watch=true&resourceVersion=4")).await;
        assert_eq!(fine.next().await["object"]["metadata"]["name"], "n4");
        assert_status(
            &get(addr, &format!("{NODES}?watch=true&resourceVersion=abc")).await,
            400,
            "BadRequest",
        );
    });
}

#[test]
fn shutdown_stops_serving() {
    let twin = twin();
    let addr = twin.addr();
    assert!(twin.url().starts_with("http://127.0.0.1:"));
    assert!(addr.ip().is_loopback());
    assert!(twin.shutdown().is_ok());
    assert!(std::net::TcpStream::connect(addr).is_err());
}

fn faulty_twin(faults: FaultConfig) -> TwinHandle {
    let config = ServeConfig {
        faults: Some(faults),
        ..ServeConfig::default()
    };
    match spawn_configured(None, Store::default(), config) {
        Ok(t) => t,
        Err(e) => panic!("the twin did not start: {e}"),
    }
}

/// Every request fails with the one fault whose share is 1; writes still reach the store
/// through creates (never conflicted) and discovery is never faulted.
#[test]
fn each_failure_fault_is_a_well_formed_status() {
    for (fault, code, reason) in [
        (Fault::Conflict, 409, "Conflict"),
        (Fault::Throttle, 429, "TooManyRequests"),
        (Fault::Error, 500, "InternalError"),
    ] {
        let mut config = FaultConfig::none(11);
        match fault {
            Fault::Conflict => config.conflict_share = 1.0,
            Fault::Throttle => config.throttle_share = 1.0,
            _ => config.error_share = 1.0,
        }
        config.retry_after_seconds = 2;
        let twin = faulty_twin(config);
        let addr = twin.addr();
        runtime().block_on(async {
            let (code_api, _) = get(addr, "/api").await;
            assert_eq!(code_api, 200, "discovery is never faulted");
            let target = format!("{NODES}/n1");
            let got = match fault {
                Fault::Conflict => {
                    assert_eq!(post(addr, NODES, node("n1", "east")).await.0, 201);
                    patch(
                        addr,
                        &target,
                        "application/merge-patch+json",
                        json!({"metadata": {"labels": {"a": "b"}}}),
                    )
                    .await
                }
                _ => {
                    let response = send(addr, "GET", &target, "", Vec::new()).await;
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    assert_eq!(
                        retry_after.as_deref(),
                        (fault == Fault::Throttle).then_some("2"),
                        "Retry-After only on a 429"
                    );
                    get(addr, &target).await
                }
            };
            assert_status(&got, code, reason);
            match fault {
                Fault::Conflict => {
                    assert_eq!(got.1["details"]["name"], "n1");
                    assert_eq!(got.1["details"]["kind"], "nodes");
                }
                Fault::Throttle => assert_eq!(got.1["details"]["retryAfterSeconds"], 2),
                _ => assert!(got.1["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Internal error occurred"))),
            }
        });
        assert!(twin.counters().faults(fault) >= 1, "{fault:?}");
    }
}

/// A cut watch sends its first batch, then its chunked stream ends.
#[test]
fn a_cut_watch_ends_after_its_first_batch() {
    let twin = faulty_twin(FaultConfig {
        watch_cut_share: 1.0,
        ..FaultConfig::none(5)
    });
    let addr = twin.addr();
    runtime().block_on(async {
        assert_eq!(post(addr, NODES, node("n1", "east")).await.0, 201);
        let mut lines = watch(addr, &format!("{NODES}?watch=true")).await;
        let first = lines.next().await;
        assert_eq!(first["type"], "ADDED");
        assert_eq!(first["object"]["metadata"]["name"], "n1");
        assert_eq!(lines.next().await, Value::Null, "the stream ended");
    });
    assert_eq!(twin.counters().faults(Fault::WatchCut), 1);
}

/// The codes a fixed sequence of requests gets from a twin with default shares.
fn codes_under_faults(seed: u64) -> (Vec<u16>, Counts) {
    let twin = faulty_twin(FaultConfig {
        slow_share: 0.2,
        delay: Duration::from_millis(1),
        ..FaultConfig::with_seed(seed)
    });
    let addr = twin.addr();
    let codes = runtime().block_on(async {
        let mut codes = Vec::new();
        for i in 0..40 {
            let name = format!("n{}", i % 4);
            let path = format!("{NODES}/{name}");
            codes.push(post(addr, NODES, node(&name, "east")).await.0);
            codes.push(get(addr, &path).await.0);
            let label = json!({"metadata": {"labels": {"i": i.to_string()}}});
            codes.push(
                patch(addr, &path, "application/merge-patch+json", label)
                    .await
                    .0,
            );
        }
        codes
    });
    (codes, twin.counters())
}

#[test]
fn the_same_seed_replays_the_same_faults() {
    let (a, counts_a) = codes_under_faults(42);
    let (b, counts_b) = codes_under_faults(42);
    assert_eq!(a, b);
    assert_eq!(counts_a, counts_b);
    for fault in [Fault::Conflict, Fault::Throttle, Fault::Error, Fault::Slow] {
        assert!(
            counts_a.faults(fault) > 0,
            "{fault:?} never happened: {counts_a:?}"
        );
    }
    let (c, _) = codes_under_faults(43);
    assert_ne!(a, c, "another seed, another sequence");
}

/// The counters count a known sequence per verb and resource, on the handle and at the
/// debug endpoint alike (which does not count itself).
#[test]
fn counters_count_requests_per_verb_and_resource() {
    let twin = twin();
    let addr = twin.addr();
    let served = runtime().block_on(async {
        get(addr, "/api").await;
        post(addr, NODES, node("a", "east")).await;
        post(addr, NODES, node("b", "east")).await;
        post(addr, IT, instance_type("t4")).await;
        get(addr, &format!("{NODES}/a")).await;
        get(addr, NODES).await;
        get(addr, &format!("{NODES}?labelSelector=zone%3Deast")).await;
        patch(
            addr,
            &format!("{NODES}/b"),
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .await;
        let (_, it) = get(addr, &format!("{IT}/t4")).await;
        put(addr, &format!("{IT}/t4/status"), it).await;
        call(addr, "DELETE", &format!("{NODES}/a"), "", &Value::Null).await;
        let (code, served) = get(addr, COUNTERS_PATH).await;
        assert_eq!(code, 200);
        served
    });
    let counts = twin.counters();
    assert_eq!(counts.requests("create", "nodes"), 2);
    assert_eq!(counts.requests("create", "instancetypes"), 1);
    assert_eq!(counts.requests("get", "nodes"), 1);
    assert_eq!(counts.requests("list", "nodes"), 2);
    assert_eq!(counts.requests("patch", "nodes"), 1);
    assert_eq!(counts.requests("get", "instancetypes"), 1);
    assert_eq!(counts.requests("update", "instancetypes/status"), 1);
    assert_eq!(counts.requests("delete", "nodes"), 1);
    assert_eq!(counts.requests("get", "/api"), 1);
    assert_eq!(counts.total_requests(), 11);
    assert!(counts.faults.is_empty());
    let served: Counts = serde_json::from_value(served).unwrap_or_default();
    assert_eq!(served, counts);
}

/// The charging Pod the mock binds to `node` for a card hosting two slices.
fn charging_pod_for(node: &str) -> Value {
    use model::devices::{Card, DeviceGroup, Devices, Ledger, Mode};
    let devices = Devices {
        groups: vec![DeviceGroup {
            manufacturer: "nvidia".into(),
            id: "a10".into(),
            cards: vec![Card {
                id: "GPU-0".into(),
                ledger: Some(Ledger {
                    mode: Mode::Sliced,
                    remaining_units: 1_000_000,
                    allocated_slices: 2,
                    ..Ledger::default()
                }),
                ..Card::default()
            }],
            ..DeviceGroup::default()
        }],
    };
    live::wire::pod::charging_pod(node, "charging", &devices).unwrap_or(Value::Null)
}

/// The kubectl to run: `$VERIFY_KUBECTL`, else `kubectl` on PATH.
fn kubectl_binary() -> String {
    std::env::var("VERIFY_KUBECTL").unwrap_or_else(|_| "kubectl".to_string())
}

/// The client's minor version (`kubectl version --client -o json`: `clientVersion.minor`,
/// e.g. `"20"` or `"32+"`), or `None` when kubectl does not run.
fn kubectl_minor(binary: &str) -> Option<u32> {
    let out = std::process::Command::new(binary)
        .args(["version", "--client", "-o", "json"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let minor = v.pointer("/clientVersion/minor")?.as_str()?;
    minor.trim_end_matches('+').parse().ok()
}

/// kubectl, when installed, works through the kubeconfig the twin writes. `patch
/// --subresource=status` needs kubectl ≥ 1.24; older clients (Debian bookworm's
/// `kubernetes-client` is 1.20) write the status with `replace --raw` on `/status`.
#[test]
fn kubectl_works_against_the_twin_when_installed() {
    let binary = kubectl_binary();
    let Some(minor) = kubectl_minor(&binary) else {
        println!("skipped: kubectl ({binary}) is not installed");
        return;
    };
    println!("kubectl {binary}: client 1.{minor}");
    let twin = twin();
    let dir = std::env::temp_dir().join(format!("verify-twin-kubectl-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let config = dir.join("kubeconfig");
    if let Err(e) = std::fs::write(&config, kubeconfig_yaml(twin.url(), "verify-twin")) {
        panic!("writing {}: {e}", config.display());
    }
    let manifest = dir.join("it.json");
    let it = instance_type("a10");
    let _ = std::fs::write(&manifest, serde_json::to_vec(&it).unwrap_or_default());
    let kubectl = |args: &[&str]| {
        let out = std::process::Command::new(&binary)
            .arg("--kubeconfig")
            .arg(&config)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(args)
            .output();
        match out {
            Ok(o) => (
                o.status.success(),
                String::from_utf8_lossy(&o.stdout).to_string()
                    + &String::from_utf8_lossy(&o.stderr),
            ),
            Err(e) => (false, e.to_string()),
        }
    };
    let manifest = manifest.to_string_lossy().to_string();
    let node_file = dir.join("node.json");
    let _ = std::fs::write(
        &node_file,
        serde_json::to_vec(&node("n1", "east")).unwrap_or_default(),
    );
    let node_file = node_file.to_string_lossy().to_string();
    let moved_file = dir.join("moved.json");
    let _ = std::fs::write(
        &moved_file,
        serde_json::to_vec(&node("n1", "west")).unwrap_or_default(),
    );
    let moved_file = moved_file.to_string_lossy().to_string();
    let pod_file = dir.join("pod.json");
    let _ = std::fs::write(&pod_file, charging_pod_for("n1").to_string());
    let pod_file = pod_file.to_string_lossy().to_string();
    let steps: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["create", "--validate=false", "-f", &manifest],
            "created",
        ),
        (
            vec!["get", "instancetypes", "-o", "name"],
            "instancetype.worker.gpustack.ai/a10",
        ),
        (
            vec!["get", "instype", "a10", "-o", "jsonpath={.spec.os}"],
            "linux",
        ),
        (
            vec![
                "apply",
                "--server-side",
                "--validate=false",
                "-f",
                &manifest,
            ],
            "serverside-applied",
        ),
        (
            vec![
                "patch",
                "instancetype",
                "a10",
                "--type=merge",
                "-p",
                r#"{"spec":{"arch":"arm64"}}"#,
            ],
            "patched",
        ),
    ];
    for (args, expect) in steps {
        let (ok, text) = kubectl(&args);
        assert!(ok && text.contains(expect), "kubectl {args:?}: {text}");
    }
    let status_path = "/apis/worker.gpustack.ai/v1alpha1/instancetypes/a10/status";
    let (ok, text) = if minor >= 24 {
        kubectl(&[
            "patch",
            "instancetype",
            "a10",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Active"}}"#,
        ])
    } else {
        let (ok, current) = kubectl(&["get", "instancetype", "a10", "-o", "json"]);
        assert!(ok, "kubectl get: {current}");
        let mut object: Value = serde_json::from_str(&current).unwrap_or(Value::Null);
        object["status"] = json!({"phase": "Active"});
        let status_file = dir.join("status.json");
        let _ = std::fs::write(&status_file, object.to_string());
        let status_file = status_file.to_string_lossy().to_string();
        kubectl(&[
            "replace",
            "--validate=false",
            "--raw",
            status_path,
            "-f",
            &status_file,
        ])
    };
    // `patch` says "patched", `replace --raw` prints the object; the next step reads it back
    assert!(
        ok && (text.contains("patched") || text.contains("Active")),
        "kubectl status write: {text}"
    );
    let steps: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "get",
                "instancetype",
                "a10",
                "-o",
                "jsonpath={.status.phase}",
            ],
            "Active",
        ),
        (vec!["get", "nodes"], "No resources found"),
        (
            vec!["apply", "--validate=false", "-f", &node_file],
            "created",
        ),
        (vec!["label", "node", "n1", "tier=gold"], "labeled"),
        (
            vec!["apply", "--validate=false", "-f", &moved_file],
            "configured",
        ),
        (
            vec!["get", "nodes", "-l", "tier=gold,zone=west", "-o", "name"],
            "node/n1",
        ),
        // a charging Pod as the client's mock writes it, bound to the Node
        (vec!["create", "namespace", "charging"], "created"),
        (
            vec!["apply", "--validate=false", "-f", &pod_file],
            "created",
        ),
        (
            vec![
                "get",
                "pods",
                "-A",
                "-o",
                "jsonpath={.items[*].spec.nodeName}",
            ],
            "n1",
        ),
        (
            vec![
                "get",
                "pod",
                "n1-charges-2",
                "-n",
                "charging",
                "-o",
                "jsonpath={.status.phase}",
            ],
            "Pending",
        ),
        (
            vec!["delete", "pod", "n1-charges-2", "-n", "charging"],
            "deleted",
        ),
        (vec!["delete", "node", "n1"], "deleted"),
        (vec!["delete", "instancetype", "a10"], "deleted"),
    ];
    for (args, expect) in steps {
        let (ok, text) = kubectl(&args);
        assert!(ok && text.contains(expect), "kubectl {args:?}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `POST /verify/v1/clock` moves the twin's virtual clock (later stamps read later, the
/// resourceVersion moves so the operator reconciles); a bad body is a 400 Status; the
/// endpoint is not counted.
#[test]
fn the_clock_endpoint_advances_the_virtual_clock() {
    use live::wire::clock::CLOCK_PATH;
    let twin = twin();
    let addr = twin.addr();
    let rv = twin
        .store()
        .read(live::server::store::Store::resource_version);
    let (code, body) = runtime().block_on(post(addr, CLOCK_PATH, json!({"advance": "30m"})));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["advancedSeconds"], json!(1800));
    assert_eq!(
        twin.store()
            .read(live::server::store::Store::resource_version),
        rv + 1
    );
    let (code, created) = runtime().block_on(post(addr, NODES, node("late", "east")));
    assert_eq!(code, 201, "{created}");
    let stamp = created
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    assert!(stamp.as_str() >= "2025-01-01T00:30:00Z", "{stamp}");
    let got = runtime().block_on(post(addr, CLOCK_PATH, json!({"advance": "later"})));
    assert_status(&got, 400, "BadRequest");
    let (code, body) = runtime().block_on(get(addr, CLOCK_PATH));
    assert_eq!(code, 200);
    assert_eq!(body["advancedSeconds"], json!(1800));
    assert_eq!(twin.counters().requests("create", "nodes"), 1);
}
