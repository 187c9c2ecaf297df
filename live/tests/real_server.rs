//! The twin checked against a real kube-apiserver (issue M12): the same request sequence is sent
//! to both, through the same kube-rs client, and what each answered is compared: status codes
//! and reasons, generation, resourceVersion order, managedFields ownership, the status
//! subresource, finalizers, dry runs, selectors, watch events and kubectl's Table output. Every
//! difference is a twin bug.
//!
//! The real server is the one `scripts/kube start DIR` brings up (kube-apiserver, etcd and Kueue
//! built from their Go modules); set `VERIFY_KUBE_LOCAL=DIR`. Without it the test prints why
//! and passes, as it does where `go` is absent. Objects are named with a per-run token and
//! deleted afterwards; no assertion depends on timing (watches are bounded by the server's own
//! `timeoutSeconds`, and only events already recorded are compared).

mod common;

use std::path::PathBuf;

use common::instance_type;
use http::{Method, Request};
use http_body_util::BodyExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use live::server::http::{spawn_with_store, TwinHandle};
use live::server::kubeconfig::kubeconfig_yaml;
use live::server::store::Store;
use serde_json::{json, Value};

const IT: &str = "/apis/worker.gpustack.ai/v1alpha1/instancetypes";
const NODES: &str = "/api/v1/nodes";
const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The real cluster's directory, when one is up.
fn kube_local() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("VERIFY_KUBE_LOCAL")?);
    dir.join("kubeconfig").is_file().then_some(dir)
}

async fn client(kubeconfig: Kubeconfig, context: &str) -> kube::Client {
    let options = KubeConfigOptions {
        context: Some(context.into()),
        ..KubeConfigOptions::default()
    };
    let config = match kube::Config::from_custom_kubeconfig(kubeconfig, &options).await {
        Ok(c) => c,
        Err(e) => panic!("kubeconfig context {context}: {e}"),
    };
    match kube::Client::try_from(config) {
        Ok(c) => c,
        Err(e) => panic!("client for {context}: {e}"),
    }
}

/// One answer: the code and the body as JSON (a watch stream's lines as an array).
#[derive(Debug, Clone)]
struct Answer {
    code: u16,
    body: Value,
}

async fn call(c: &kube::Client, method: Method, path: &str, ctype: &str, body: Value) -> Answer {
    call_accept(c, method, path, ctype, "application/json", body).await
}

async fn call_accept(
    c: &kube::Client,
    method: Method,
    path: &str,
    ctype: &str,
    accept: &str,
    body: Value,
) -> Answer {
    let bytes = match &body {
        Value::Null => Vec::new(),
        Value::String(s) => s.clone().into_bytes(),
        other => other.to_string().into_bytes(),
    };
    let request = match Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ctype)
        .header("accept", accept)
        .body(kube::client::Body::from(bytes))
    {
        Ok(r) => r,
        Err(e) => panic!("request {path}: {e}"),
    };
    let response = match c.send(request).await {
        Ok(r) => r,
        Err(e) => panic!("{path}: {e}"),
    };
    let code = response.status().as_u16();
    let raw = match response.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => panic!("{path}: body: {e}"),
    };
    let text = String::from_utf8_lossy(&raw);
    let body = serde_json::from_str(&text).unwrap_or_else(|_| {
        // a watch stream: one JSON event per line
        Value::Array(
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        )
    });
    Answer { code, body }
}

fn rv(a: &Answer) -> u64 {
    a.body["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Who owns what, as a comparable value: per managedFields entry its manager, operation,
/// subresource and fieldsV1 (times and order dropped).
fn ownership(o: &Value) -> Value {
    let mut entries: Vec<Value> = o["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            json!({"manager": e["manager"], "operation": e["operation"],
                   "subresource": e.get("subresource").cloned().unwrap_or(Value::Null),
                   "fieldsV1": e["fieldsV1"]})
        })
        .collect();
    entries.sort_by_key(|e| e.to_string());
    Value::Array(entries)
}

/// What a step is judged on: the code, a Status's reason, and the named parts of an object.
fn seen(a: &Answer, parts: &[&str]) -> Value {
    let mut out = json!({"code": a.code});
    if a.body["kind"] == "Status" {
        out["reason"] = a.body["reason"].clone();
    }
    for p in parts {
        out[*p] = match *p {
            "ownership" => ownership(&a.body),
            "labels" => a.body["metadata"]["labels"].clone(),
            "generation" => a.body["metadata"]["generation"].clone(),
            "spec" => a.body["spec"].clone(),
            "status" => a.body["status"].clone(),
            "deleting" => json!(a.body["metadata"].get("deletionTimestamp").is_some()),
            "finalizers" => a.body["metadata"]["finalizers"].clone(),
            "names" => a.body["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| i["metadata"]["name"].clone())
                .collect(),
            "columns" => a.body["columnDefinitions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| json!([c["name"], c["type"]]))
                .collect(),
            "rows" => json!(a.body["rows"].as_array().map_or(0, Vec::len)),
            "kind" => a.body["kind"].clone(),
            "message" => a.body["message"].clone(),
            "conflict" => json!(a.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("\"alpha\""))),
            pointer if pointer.starts_with('/') => {
                a.body.pointer(pointer).cloned().unwrap_or(Value::Null)
            }
            other => panic!("no part {other}"),
        };
    }
    out
}

/// The watch events after a resourceVersion, restricted to one run's objects.
fn events(a: &Answer, token: &str) -> Value {
    a.body
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.contains(token))
        })
        .map(|e| {
            json!([
                e["type"],
                e["object"]["metadata"]["name"],
                e["object"]["metadata"]["labels"]
            ])
        })
        .collect()
}

/// The sequence, run against one server; each step named, with what was seen. Names carry
/// `token` so the runs never meet on the real server.
async fn sequence(c: &kube::Client, token: &str) -> Vec<(String, Value)> {
    let mut steps: Vec<(String, Value)> = Vec::new();
    let mut note = |name: &str, v: Value| steps.push((name.to_string(), v));
    let a = format!("verify-diff-{token}-a");
    let one = |n: &str| format!("{IT}/{n}");

    let created = call(c, Method::POST, IT, "application/json", instance_type(&a)).await;
    note(
        "create",
        seen(&created, &["generation", "ownership", "labels"]),
    );
    let again = call(c, Method::POST, IT, "application/json", instance_type(&a)).await;
    note("create again", seen(&again, &[]));
    let missing = call(c, Method::GET, &one("verify-diff-none"), "", Value::Null).await;
    note("get missing", seen(&missing, &[]));

    let mut spec_changed = created.body.clone();
    spec_changed["spec"]["localStorage"] = json!("200Gi");
    let put = call(
        c,
        Method::PUT,
        &one(&a),
        "application/json",
        spec_changed.clone(),
    )
    .await;
    note("update spec", seen(&put, &["generation", "ownership"]));
    note(
        "resourceVersion grows on update",
        json!(rv(&put) > rv(&created)),
    );
    let stale = call(c, Method::PUT, &one(&a), "application/json", spec_changed).await;
    note("update with a stale resourceVersion", seen(&stale, &[]));

    let mut invalid_status = put.body.clone();
    invalid_status["status"] = json!({"phase": "Active"});
    let refused = call(
        c,
        Method::PUT,
        &format!("{}/status", one(&a)),
        "application/json",
        invalid_status,
    )
    .await;
    note("update status missing required views", seen(&refused, &[]));
    let view = json!({"capacity": 4, "remaining": 4, "onceMaxRequest": 4});
    let mut with_status = put.body.clone();
    with_status["spec"]["localStorage"] = json!("300Gi");
    with_status["status"] = json!({
        "phase": "Active", "accelerator": view, "acceleratorShared": view,
        "acceleratorSliced": view, "cpu": view,
        "acceleratorPartitioned": {"capacity": 0, "remaining": 0, "onceMaxRequest": 0},
    });
    let status = call(
        c,
        Method::PUT,
        &format!("{}/status", one(&a)),
        "application/json",
        with_status,
    )
    .await;
    note(
        "update status",
        seen(&status, &["generation", "spec", "ownership"]),
    );

    let merged = call(
        c,
        Method::PATCH,
        &one(&a),
        MERGE,
        json!({"metadata": {"labels": {"m": "1"}}}),
    )
    .await;
    note(
        "merge patch a label",
        seen(&merged, &["generation", "labels"]),
    );
    let patched = call(
        c,
        Method::PATCH,
        &one(&a),
        JSON_PATCH,
        json!([{"op": "add", "path": "/metadata/labels/j", "value": "2"}]),
    )
    .await;
    note(
        "json patch a label",
        seen(&patched, &["labels", "ownership"]),
    );
    let strategic = call(
        c,
        Method::PATCH,
        &one(&a),
        STRATEGIC,
        json!({"metadata": {"labels": {"s": "3"}}}),
    )
    .await;
    note(
        "strategic merge patch on a custom resource",
        seen(&strategic, &[]),
    );

    let applied = |labels: Value| {
        json!({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
               "metadata": {"name": a, "labels": labels}})
    };
    let alpha = call(
        c,
        Method::PATCH,
        &format!("{}?fieldManager=alpha", one(&a)),
        APPLY,
        applied(json!({"x": "1"})),
    )
    .await;
    note("apply by alpha", seen(&alpha, &["labels", "ownership"]));
    let beta = call(
        c,
        Method::PATCH,
        &format!("{}?fieldManager=beta", one(&a)),
        APPLY,
        applied(json!({"x": "2"})),
    )
    .await;
    note("conflicting apply by beta", seen(&beta, &["conflict"]));
    let forced = call(
        c,
        Method::PATCH,
        &format!("{}?fieldManager=beta&force=true", one(&a)),
        APPLY,
        applied(json!({"x": "2"})),
    )
    .await;
    note(
        "forced apply by beta",
        seen(&forced, &["labels", "ownership"]),
    );
    let alpha_drops = call(
        c,
        Method::PATCH,
        &format!("{}?fieldManager=alpha", one(&a)),
        APPLY,
        applied(json!({})),
    )
    .await;
    note(
        "alpha applies without x",
        seen(&alpha_drops, &["labels", "ownership"]),
    );
    let beta_drops = call(
        c,
        Method::PATCH,
        &format!("{}?fieldManager=beta", one(&a)),
        APPLY,
        applied(json!({})),
    )
    .await;
    note(
        "beta applies without x",
        seen(&beta_drops, &["labels", "ownership"]),
    );
    let mut gamma_body = beta_drops.body.clone();
    gamma_body["metadata"]["labels"]["y"] = json!("g");
    let gamma = call(
        c,
        Method::PUT,
        &format!("{}?fieldManager=gamma", one(&a)),
        "application/json",
        gamma_body,
    )
    .await;
    note("update by gamma", seen(&gamma, &["labels", "ownership"]));

    let no_manager = call(
        c,
        Method::PATCH,
        &one(&a),
        APPLY,
        applied(json!({"z": "1"})),
    )
    .await;
    note(
        "apply without a fieldManager",
        seen(&no_manager, &["message"]),
    );
    let status_applied = call(
        c,
        Method::PATCH,
        &format!("{}/status?fieldManager=delta&force=true", one(&a)),
        APPLY,
        json!({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
               "metadata": {"name": a}, "status": {"phase": "Inactive"}}),
    )
    .await;
    note(
        "apply to the status subresource",
        seen(&status_applied, &["generation", "ownership", "status"]),
    );
    let wrong_type = call(
        c,
        Method::PATCH,
        &format!("{}?fieldManager=epsilon", one(&a)),
        APPLY,
        json!({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
               "metadata": {"name": a}, "spec": {"acceleratable": "yes"}}),
    )
    .await;
    note(
        "apply a wrongly typed field",
        seen(&wrong_type, &["message"]),
    );

    let node = format!("verify-diff-{token}-node");
    let node_applied = call(
        c,
        Method::PATCH,
        &format!("{NODES}/{node}?fieldManager=alpha"),
        APPLY,
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": node, "labels": {"zone": "z1"}}}),
    )
    .await;
    note(
        "apply creates a Node",
        seen(&node_applied, &["labels", "ownership", "generation"]),
    );

    let selected = call(
        c,
        Method::GET,
        &format!("{IT}?labelSelector=y%3Dg,pool%3Da"),
        "",
        Value::Null,
    )
    .await;
    let mine: Vec<Value> = selected.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| {
            i["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.contains(token))
        })
        .map(|i| i["metadata"]["name"].clone())
        .collect();
    note(
        "list by label selector",
        json!({"code": selected.code, "names": mine}),
    );

    let f = format!("verify-diff-{token}-f");
    let mut held = instance_type(&f);
    held["metadata"]["finalizers"] = json!(["verify.gpustack.ai/hold"]);
    let held_created = call(c, Method::POST, IT, "application/json", held).await;
    note(
        "create with a finalizer",
        seen(&held_created, &["finalizers"]),
    );
    let deleting = call(c, Method::DELETE, &one(&f), "", Value::Null).await;
    note(
        "delete with a finalizer",
        seen(&deleting, &["deleting", "finalizers"]),
    );
    let still = call(c, Method::GET, &one(&f), "", Value::Null).await;
    note("get while finalizing", seen(&still, &["deleting"]));
    let released = call(
        c,
        Method::PATCH,
        &one(&f),
        MERGE,
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    note("remove the finalizer", seen(&released, &["deleting"]));
    let gone = call(c, Method::GET, &one(&f), "", Value::Null).await;
    note("get after the finalizer", seen(&gone, &[]));

    let d = format!("verify-diff-{token}-dry");
    let dry = call(
        c,
        Method::POST,
        &format!("{IT}?dryRun=All"),
        "application/json",
        instance_type(&d),
    )
    .await;
    note("dry-run create", seen(&dry, &["labels"]));
    let not_there = call(c, Method::GET, &one(&d), "", Value::Null).await;
    note("get after a dry run", seen(&not_there, &[]));

    let table = call_accept(
        c,
        Method::GET,
        &format!("{IT}?labelSelector=y%3Dg"),
        "",
        TABLE,
        Value::Null,
    )
    .await;
    note("list as a Table", seen(&table, &["kind", "columns"]));
    let one_table = call_accept(c, Method::GET, &one(&a), "", TABLE, Value::Null).await;
    note(
        "get one as a Table",
        seen(&one_table, &["kind", "columns", "rows"]),
    );

    let watched = call(
        c,
        Method::GET,
        &format!(
            "{IT}?watch=true&resourceVersion={}&timeoutSeconds=1",
            rv(&created)
        ),
        "",
        Value::Null,
    )
    .await;
    note(
        "watch from the create's resourceVersion",
        json!({"code": watched.code, "events": events(&watched, token)}),
    );

    for path in [one(&a), format!("{NODES}/{node}")] {
        call(c, Method::DELETE, &path, "", Value::Null).await;
    }
    steps
}

/// Namespaced objects, Kueue's kinds (its webhooks default and validate them on the real
/// cluster), paging, field selectors and a namespace's deletion.
async fn namespaced_sequence(c: &kube::Client, token: &str) -> Vec<(String, Value)> {
    let mut steps: Vec<(String, Value)> = Vec::new();
    let mut note = |name: &str, v: Value| steps.push((name.to_string(), v));
    let ns = format!("verify-diff-{token}-ns");
    let namespace = call(
        c,
        Method::POST,
        "/api/v1/namespaces",
        "application/json",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    note(
        "create a namespace",
        seen(
            &namespace,
            &["labels", "ownership", "status", "spec", "generation"],
        ),
    );
    let flavor = format!("verify-diff-{token}-rf");
    let rf = call(
        c,
        Method::POST,
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        "application/json",
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": flavor}, "spec": {"nodeLabels": {"pool": "a"}}}),
    )
    .await;
    note("create a ResourceFlavor", seen(&rf, &["spec"]));
    let cq = format!("verify-diff-{token}-cq");
    let queue = call(
        c,
        Method::POST,
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        "application/json",
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": cq},
               "spec": {"namespaceSelector": {}, "resourceGroups": [{
                   "coveredResources": ["cpu"],
                   "flavors": [{"name": flavor, "resources": [
                       {"name": "cpu", "nominalQuota": "6400k"}]}]}]}}),
    )
    .await;
    note("create a ClusterQueue", seen(&queue, &["spec"]));
    let lq_path = format!("/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues");
    for i in 0..3 {
        let lq = call(
            c,
            Method::POST,
            &lq_path,
            "application/json",
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": format!("lq-{i}"), "namespace": ns},
                   "spec": {"clusterQueue": cq}}),
        )
        .await;
        note(&format!("create LocalQueue {i}"), seen(&lq, &["spec"]));
    }
    let wrong_ns = call(
        c,
        Method::POST,
        &lq_path,
        "application/json",
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "lq-x", "namespace": "elsewhere"},
               "spec": {"clusterQueue": cq}}),
    )
    .await;
    note(
        "create with another namespace in the body",
        seen(&wrong_ns, &[]),
    );
    let page = call(
        c,
        Method::GET,
        &format!("{lq_path}?limit=2"),
        "",
        Value::Null,
    )
    .await;
    let cont = page.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .to_string();
    note(
        "list a page of two",
        json!({"code": page.code, "names": seen(&page, &["names"])["names"],
               "more": !cont.is_empty(),
               "remaining": page.body["metadata"].get("remainingItemCount")}),
    );
    let rest = call(
        c,
        Method::GET,
        &format!("{lq_path}?limit=2&continue={cont}"),
        "",
        Value::Null,
    )
    .await;
    note(
        "list the next page",
        json!({"code": rest.code, "names": seen(&rest, &["names"])["names"],
               "more": rest.body["metadata"].get("continue").is_some_and(|c| c != "")}),
    );
    let by_field = call(
        c,
        Method::GET,
        &format!("{lq_path}?fieldSelector=metadata.name%3Dlq-1"),
        "",
        Value::Null,
    )
    .await;
    note("list by field selector", seen(&by_field, &["names"]));
    let bad_field = call(
        c,
        Method::GET,
        &format!("{lq_path}?fieldSelector=spec.clusterQueue%3D{cq}"),
        "",
        Value::Null,
    )
    .await;
    note("list by an unsupported field", seen(&bad_field, &[]));
    let deleted = call(
        c,
        Method::DELETE,
        &format!("/api/v1/namespaces/{ns}"),
        "",
        Value::Null,
    )
    .await;
    note(
        "delete the namespace",
        json!({"code": deleted.code, "phase": deleted.body["status"]["phase"],
               "deleting": seen(&deleted, &["deleting"])["deleting"]}),
    );
    for path in [
        format!("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{cq}"),
        format!("/apis/kueue.x-k8s.io/v1beta2/resourceflavors/{flavor}"),
    ] {
        call(c, Method::DELETE, &path, "", Value::Null).await;
    }
    steps
}

/// A CRD's conditions without their times: type, status, reason, message.
fn conditions(a: &Answer) -> Value {
    a.body["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!([c["type"], c["status"], c["reason"], c["message"]]))
        .collect()
}

/// The resources of a discovery document: name, kind, scope.
fn resources(a: &Answer) -> Value {
    let list: Vec<Value> = a.body["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            json!([
                r["name"],
                r["kind"],
                r["namespaced"],
                r["singularName"],
                r["shortNames"],
                r["categories"]
            ])
        })
        .collect();
    json!({"code": a.code, "resources": list})
}

/// GETs `path` until `done` holds of the answer (at most ~10 s): a real server's
/// controllers (the serviceaccount controller, CRD establishing and cleanup) act after the
/// write returns; the twin's have acted before. Only the final answer is compared.
async fn settled(c: &kube::Client, path: &str, done: impl Fn(&Answer) -> bool) -> Answer {
    let mut answer = call(c, Method::GET, path, "", Value::Null).await;
    for _ in 0..100 {
        if done(&answer) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        answer = call(c, Method::GET, path, "", Value::Null).await;
    }
    answer
}

/// What kubectl reads off OpenAPI v3 before it writes a file: the PATCH of `path` in the
/// document of `group_version` (`apis/apps/v1`), its action and kind, and whether it takes
/// the parameters kubectl sends.
async fn openapi_patch(c: &kube::Client, group_version: &str, path: &str) -> Value {
    // a real server adds a new CRD's document to the index a moment after it serves it
    let index = settled(c, "/openapi/v3", |a| {
        a.body["paths"][group_version]["serverRelativeURL"].is_string()
    })
    .await;
    let Some(url) = index.body["paths"][group_version]["serverRelativeURL"].as_str() else {
        return json!({"index": index.code, "listed": false});
    };
    let doc = call(c, Method::GET, url, "", Value::Null).await;
    let patch = &doc.body["paths"][path]["patch"];
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let takes: Vec<bool> = ["dryRun", "fieldManager", "fieldValidation", "force"]
        .iter()
        .map(|n| names.contains(n))
        .collect();
    json!({"index": index.code, "doc": doc.code, "action": patch["x-kubernetes-action"],
           "gvk": patch["x-kubernetes-group-version-kind"], "takes": takes})
}

/// One object as kubectl asks for it: a Table's columns (name, type) and its row count.
async fn one_table(c: &kube::Client, path: &str) -> Value {
    let t = call_accept(c, Method::GET, path, "", TABLE, Value::Null).await;
    let mut out = seen(&t, &["kind", "columns", "rows"]);
    // the cells, but those that read the clock or a per-run name
    let columns: Vec<String> = t.body["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    out["cells"] = t.body["rows"][0]["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .zip(&columns)
        .filter(|(_, c)| !matches!(c.as_str(), "Name" | "Age" | "Created At" | "Group"))
        .map(|(v, _)| v.clone())
        .collect();
    out
}

/// The built-in kinds a chart installs: Secrets (stringData, base64, keys), ConfigMaps, the
/// namespace's ServiceAccount, a Deployment and `kubectl set image`, a CRD from creation to
/// deletion with a custom object of it, webhook configurations, Leases, PodDisruptionBudgets
/// and ClusterRoles.
async fn chart_sequence(c: &kube::Client, token: &str) -> Vec<(String, Value)> {
    let mut steps: Vec<(String, Value)> = Vec::new();
    let mut note = |name: &str, v: Value| steps.push((name.to_string(), v));
    let ns = format!("verify-diff-{token}-chart");
    let created = call(
        c,
        Method::POST,
        "/api/v1/namespaces",
        "application/json",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    note("create the chart's namespace", seen(&created, &[]));
    let core = format!("/api/v1/namespaces/{ns}");
    let accounts = settled(c, &format!("{core}/serviceaccounts"), |a| {
        a.body["items"].as_array().is_some_and(|i| !i.is_empty())
    })
    .await;
    note(
        "a new namespace's ServiceAccounts",
        seen(&accounts, &["names"]),
    );
    let sa = call(
        c,
        Method::GET,
        &format!("{core}/serviceaccounts/default"),
        "",
        Value::Null,
    )
    .await;
    note(
        "the default ServiceAccount",
        seen(&sa, &["ownership", "generation", "/secrets"]),
    );
    note(
        "a ServiceAccount as a Table",
        one_table(c, &format!("{core}/serviceaccounts/default")).await,
    );
    let maps = call(
        c,
        Method::GET,
        &format!("{core}/configmaps"),
        "",
        Value::Null,
    )
    .await;
    note("a new namespace's ConfigMaps", seen(&maps, &["names"]));

    let secrets = format!("{core}/secrets");
    let secret = call(
        c,
        Method::POST,
        &format!("{secrets}?fieldManager=chart"),
        "application/json",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
               "stringData": {"a": "hello", "b": "override"}, "data": {"b": "d29ybGQ=", "c": "AAE="}}),
    )
    .await;
    note(
        "create a Secret with stringData",
        seen(
            &secret,
            &["/data", "/type", "/stringData", "generation", "ownership"],
        ),
    );
    note(
        "a Secret as a Table",
        one_table(c, &format!("{secrets}/s")).await,
    );
    let bad = call(
        c,
        Method::POST,
        &secrets,
        "application/json",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"},
               "data": {"b": "not base64!"}}),
    )
    .await;
    note("create a Secret with bad base64", seen(&bad, &["message"]));
    let bad_key = call(
        c,
        Method::POST,
        &secrets,
        "application/json",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"},
               "data": {"bad key!": "AA=="}}),
    )
    .await;
    note(
        "create a Secret with a bad key",
        seen(&bad_key, &["message"]),
    );
    let patched = call(
        c,
        Method::PATCH,
        &format!("{secrets}/s"),
        MERGE,
        json!({"stringData": {"d": "more"}, "type": null}),
    )
    .await;
    note(
        "merge patch a Secret's stringData",
        seen(&patched, &["/data", "/type", "/stringData"]),
    );
    let listed = call(c, Method::GET, &secrets, "", Value::Null).await;
    note("list Secrets", seen(&listed, &["names"]));
    let deleted = call(c, Method::DELETE, &format!("{secrets}/s"), "", Value::Null).await;
    note("delete a Secret", seen(&deleted, &["kind", "/status"]));

    let configmaps = format!("{core}/configmaps");
    let cm = call(
        c,
        Method::POST,
        &configmaps,
        "application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
               "data": {"k": "v"}, "binaryData": {"b": "AAE="}}),
    )
    .await;
    note(
        "create a ConfigMap",
        seen(&cm, &["/data", "/binaryData", "generation", "ownership"]),
    );
    note(
        "a ConfigMap as a Table",
        one_table(c, &format!("{configmaps}/cm")).await,
    );
    let cm_patched = call(
        c,
        Method::PATCH,
        &format!("{configmaps}/cm"),
        STRATEGIC,
        json!({"data": {"k": null, "l": "w"}}),
    )
    .await;
    note(
        "strategic merge patch a ConfigMap",
        seen(&cm_patched, &["/data", "ownership"]),
    );
    let cm_bad = call(
        c,
        Method::POST,
        &configmaps,
        "application/json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"},
               "binaryData": {"b": "abc"}}),
    )
    .await;
    note(
        "create a ConfigMap with bad base64",
        seen(&cm_bad, &["message"]),
    );
    let cm_deleted = call(
        c,
        Method::DELETE,
        &format!("{configmaps}/cm"),
        "",
        Value::Null,
    )
    .await;
    note("delete a ConfigMap", seen(&cm_deleted, &["kind"]));

    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let deployment = call(
        c,
        Method::POST,
        &format!("{deployments}?fieldManager=chart"),
        "application/json",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"selector": {"matchLabels": {"app": "d"}},
                        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
                            "containers": [
                                {"name": "c", "image": "nginx:1.0",
                                 "ports": [{"containerPort": 80}],
                                 "readinessProbe": {"httpGet": {"port": 80}}},
                                {"name": "side", "image": "busybox"}],
                            "volumes": [{"name": "cfg", "configMap": {"name": "cm"}}]}}}}),
    )
    .await;
    note(
        "create a Deployment",
        seen(&deployment, &["spec", "status", "generation"]),
    );
    // what `kubectl set image deployment/d c=nginx:2.0` sends
    let set_image = call(
        c,
        Method::PATCH,
        &format!("{deployments}/d?fieldManager=kubectl-set"),
        STRATEGIC,
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "side"}],
            "containers": [{"image": "nginx:2.0", "name": "c"}]}}}}),
    )
    .await;
    note(
        "kubectl set image (strategic merge patch)",
        seen(&set_image, &["spec", "generation"]),
    );
    note(
        "a Deployment as a Table",
        one_table(c, &format!("{deployments}/d")).await,
    );
    note(
        "resourceVersion grows on set image",
        json!(rv(&set_image) > rv(&deployment)),
    );
    let removed = call(
        c,
        Method::PATCH,
        &format!("{deployments}/d"),
        STRATEGIC,
        json!({"spec": {"template": {"spec": {
            "containers": [{"name": "side", "$patch": "delete"}]}}}}),
    )
    .await;
    note(
        "strategic merge patch deletes a container",
        seen(&removed, &["/spec/template/spec/containers", "generation"]),
    );
    let unselected = call(
        c,
        Method::POST,
        &deployments,
        "application/json",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
               "spec": {"selector": {"matchLabels": {"app": "x"}},
                        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
                            "containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await;
    note(
        "create a Deployment whose selector misses its template",
        seen(&unselected, &["message"]),
    );
    note(
        "OpenAPI v3 of a Deployment's PATCH",
        openapi_patch(
            c,
            "apis/apps/v1",
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
        )
        .await,
    );
    let d_deleted = call(
        c,
        Method::DELETE,
        &format!("{deployments}/d"),
        "",
        Value::Null,
    )
    .await;
    note("delete a Deployment", seen(&d_deleted, &["kind"]));

    let installed = call(
        c,
        Method::GET,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/instancetypes.worker.gpustack.ai",
        "",
        Value::Null,
    )
    .await;
    note(
        "an installed CRD is listed as an object",
        json!({"code": installed.code, "names": installed.body["spec"]["names"],
               "scope": installed.body["spec"]["scope"],
               "conditions": conditions(&installed),
               "stored": installed.body["status"]["storedVersions"]}),
    );

    let apiservices = "/apis/apiregistration.k8s.io/v1/apiservices";
    for name in [
        "v1.",
        "v1.apps",
        "v1.apiextensions.k8s.io",
        "v1alpha1.worker.gpustack.ai",
    ] {
        let service = call(
            c,
            Method::GET,
            &format!("{apiservices}/{name}"),
            "",
            Value::Null,
        )
        .await;
        note(
            &format!("the local APIService {name}"),
            json!({"code": service.code, "spec": service.body["spec"],
                   "labels": service.body["metadata"]["labels"],
                   "conditions": conditions(&service),
                   "ownership": ownership(&service.body)}),
        );
    }
    let listed_services = call(c, Method::GET, apiservices, "", Value::Null).await;
    let among: Vec<Value> = seen(&listed_services, &["names"])["names"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| {
            ["v1.", "v1.apps", "v1.policy", "v1beta2.kueue.x-k8s.io"]
                .contains(&n.as_str().unwrap_or(""))
        })
        .cloned()
        .collect();
    note(
        "list APIServices",
        json!({"code": listed_services.code, "names": among}),
    );
    note(
        "an APIService as a Table",
        one_table(c, &format!("{apiservices}/v1.apps")).await,
    );

    let group = format!("t{token}.verify.example.com");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd_name = format!("widgets.{group}");
    let crd_body = json!({"apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition", "metadata": {"name": crd_name},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget",
                           "shortNames": ["wd"], "categories": ["verify-diff"]},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": {
                             "size": {"type": "integer"}}}}}}}]}});
    let crd = call(
        c,
        Method::POST,
        &format!("{crds}?fieldManager=chart"),
        "application/json",
        crd_body.clone(),
    )
    .await;
    note(
        "create a CRD",
        seen(&crd, &["spec", "status", "generation", "ownership"]),
    );
    let crd_path = format!("{crds}/{crd_name}");
    let established = settled(c, &crd_path, |a| {
        a.body["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
    })
    .await;
    note(
        "the CRD established",
        json!({"code": established.code, "conditions": conditions(&established),
               "accepted": established.body["status"]["acceptedNames"],
               "stored": established.body["status"]["storedVersions"],
               "rv grew": rv(&established) > rv(&crd)}),
    );
    note("a CRD as a Table", one_table(c, &crd_path.clone()).await);
    let gv = format!("/apis/{group}/v1");
    let discovered = settled(c, &gv, |a| a.code == 200).await;
    let own_service = format!("{apiservices}/v1.{group}");
    let registered = settled(c, &own_service, |a| a.code == 200).await;
    note(
        "the CRD's group version gets its APIService",
        json!({"code": registered.code, "spec": registered.body["spec"],
               "labels": registered.body["metadata"]["labels"],
               "conditions": conditions(&registered)}),
    );
    note(
        "discovery lists the CRD's resources",
        resources(&discovered),
    );
    note(
        "OpenAPI v3 of the CRD's PATCH",
        openapi_patch(
            c,
            &format!("apis/{group}/v1"),
            &format!("/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}"),
        )
        .await,
    );
    let group_doc = call(c, Method::GET, &format!("/apis/{group}"), "", Value::Null).await;
    note(
        "discovery lists the CRD's group",
        seen(&group_doc, &["/preferredVersion"]),
    );
    let listed_crds = call(
        c,
        Method::GET,
        &format!("{crds}?fieldSelector=metadata.name%3D{crd_name}"),
        "",
        Value::Null,
    )
    .await;
    note("list the CRD", seen(&listed_crds, &["names"]));
    let widgets = format!("{gv}/namespaces/{ns}/widgets");
    let widget = call(
        c,
        Method::POST,
        &widgets,
        "application/json",
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
               "metadata": {"name": "w"}, "spec": {"size": 3, "dropped": true}}),
    )
    .await;
    note(
        "create a custom object of the CRD",
        seen(&widget, &["spec", "generation", "ownership"]),
    );
    let wrong_type = call(
        c,
        Method::POST,
        &widgets,
        "application/json",
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
               "metadata": {"name": "w2"}, "spec": {"size": "big"}}),
    )
    .await;
    note(
        "a custom object against the CRD's schema",
        seen(&wrong_type, &[]),
    );
    let strict = call(
        c,
        Method::POST,
        &format!("{widgets}?fieldValidation=Strict"),
        "application/json",
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
               "metadata": {"name": "w3"}, "spec": {"size": 3, "dropped": true,
               "other": {"x": 1}}, "extra": 1}),
    )
    .await;
    note(
        "a custom object with unknown fields, strictly",
        seen(&strict, &["message"]),
    );
    let bogus = call(
        c,
        Method::POST,
        &format!("{widgets}?fieldValidation=Bogus"),
        "application/json",
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
               "metadata": {"name": "w4"}}),
    )
    .await;
    note("an unknown fieldValidation", seen(&bogus, &["message"]));
    let listed_widgets = call(c, Method::GET, &widgets, "", Value::Null).await;
    note("list the custom objects", seen(&listed_widgets, &["names"]));
    let misnamed = call(c, Method::POST, crds, "application/json", {
        let mut b = crd_body.clone();
        b["metadata"]["name"] = json!(format!("gadgets.{group}"));
        b
    })
    .await;
    note("create a misnamed CRD", seen(&misnamed, &["message"]));
    let crd_deleted = call(c, Method::DELETE, &crd_path, "", Value::Null).await;
    note(
        "delete the CRD",
        json!({"code": crd_deleted.code, "kind": crd_deleted.body["kind"],
               "deleting": seen(&crd_deleted, &["deleting"])["deleting"],
               "finalizers": crd_deleted.body["metadata"]["finalizers"],
               "conditions": conditions(&crd_deleted),
               "generation": crd_deleted.body["metadata"]["generation"]}),
    );
    let crd_gone = settled(c, &crd_path, |a| a.code == 404).await;
    note("the CRD is gone", seen(&crd_gone, &[]));
    let undiscovered = settled(c, &gv, |a| a.code == 404).await;
    note("discovery no longer lists it", seen(&undiscovered, &[]));
    let unregistered = settled(c, &own_service, |a| a.code == 404).await;
    note("its APIService is gone", seen(&unregistered, &[]));
    let widget_gone = call(c, Method::GET, &format!("{widgets}/w"), "", Value::Null).await;
    note("its custom object is gone", seen(&widget_gone, &[]));

    for (plural, kind) in [
        (
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
        ),
        (
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
        ),
    ] {
        let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
        let name = format!("verify-diff-{token}-hook");
        let hook = call(
            c,
            Method::POST,
            &path,
            "application/json",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                   "metadata": {"name": name},
                   "webhooks": [{"name": "v.verify.example.com",
                       "clientConfig": {"service": {"name": "svc", "namespace": ns, "path": "/v"}},
                       "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                  "operations": ["CREATE"], "resources": ["deployments"]}],
                       "namespaceSelector": {"matchLabels": {"verify-diff": token}},
                       "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        )
        .await;
        note(
            &format!("create a {kind}"),
            seen(&hook, &["/webhooks", "generation"]),
        );
        note(
            &format!("a {kind} as a Table"),
            one_table(c, &format!("{path}/{name}")).await,
        );
        let listed = call(
            c,
            Method::GET,
            &format!("{path}?fieldSelector=metadata.name%3D{name}"),
            "",
            Value::Null,
        )
        .await;
        note(&format!("list {plural}"), seen(&listed, &["names"]));
        let gone = call(
            c,
            Method::DELETE,
            &format!("{path}/{name}"),
            "",
            Value::Null,
        )
        .await;
        note(&format!("delete a {kind}"), seen(&gone, &["kind"]));
    }

    let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
    let lease = call(
        c,
        Method::POST,
        &leases,
        "application/json",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "l"},
               "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
    )
    .await;
    note(
        "create a Lease",
        seen(&lease, &["spec", "generation", "ownership"]),
    );
    note(
        "a Lease as a Table",
        one_table(c, &format!("{leases}/l")).await,
    );
    let renewed = call(
        c,
        Method::PATCH,
        &format!("{leases}/l"),
        MERGE,
        json!({"spec": {"holderIdentity": "you"}}),
    )
    .await;
    note("patch a Lease", seen(&renewed, &["spec", "ownership"]));
    let lease_gone = call(c, Method::DELETE, &format!("{leases}/l"), "", Value::Null).await;
    note("delete a Lease", seen(&lease_gone, &["kind"]));

    let pdbs = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets");
    let pdb = call(
        c,
        Method::POST,
        &pdbs,
        "application/json",
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "p"},
               "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "d"}}}}),
    )
    .await;
    note(
        "create a PodDisruptionBudget",
        seen(&pdb, &["spec", "status", "generation"]),
    );
    note(
        "a PodDisruptionBudget as a Table",
        one_table(c, &format!("{pdbs}/p")).await,
    );
    let pdb_gone = call(c, Method::DELETE, &format!("{pdbs}/p"), "", Value::Null).await;
    note("delete a PodDisruptionBudget", seen(&pdb_gone, &["kind"]));

    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let role_name = format!("verify-diff-{token}-role");
    let role = call(
        c,
        Method::POST,
        roles,
        "application/json",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": role_name},
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    )
    .await;
    note(
        "create a ClusterRole",
        seen(&role, &["/rules", "generation", "ownership"]),
    );
    note(
        "a ClusterRole as a Table",
        one_table(c, &format!("{roles}/{role_name}")).await,
    );
    let role_gone = call(
        c,
        Method::DELETE,
        &format!("{roles}/{role_name}"),
        "",
        Value::Null,
    )
    .await;
    note("delete a ClusterRole", seen(&role_gone, &["kind"]));

    let ns_gone = call(c, Method::DELETE, &core, "", Value::Null).await;
    note("delete the chart's namespace", seen(&ns_gone, &[]));
    steps
}

#[test]
fn the_twin_answers_as_the_real_apiserver_does() {
    let Some(dir) = kube_local() else {
        println!(
            "skipped: VERIFY_KUBE_LOCAL does not name a running local cluster \
             (scripts/kube build && scripts/kube start DIR, then VERIFY_KUBE_LOCAL=DIR)"
        );
        return;
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => panic!("no runtime: {e}"),
    };
    // the twin validates as the real server does: the real CRDs where ../shared has them,
    // the project's own elsewhere (scripts/kube installs the same)
    let mut store = Store::default();
    live::server::schemas::install_validators(&mut store);
    match live::server::schemas::install_shared_validators(&mut store) {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            println!(
                "skipped: no real CRDs under {}",
                live::crd::shared_crds_dir().display()
            );
            return;
        }
        Err(e) => panic!("{e}"),
    }
    // the CRDs a real cluster lists, the same files
    if let Err(e) = live::server::schemas::install_crd_objects(&mut store, true) {
        panic!("the CRD objects: {e}");
    }
    store.install_api_services();
    let twin: TwinHandle = match spawn_with_store(None, store) {
        Ok(t) => t,
        Err(e) => panic!("the twin did not start: {e}"),
    };
    let token = format!("{:x}", std::process::id());
    let (real, twinned) = runtime.block_on(async {
        let real_config = match Kubeconfig::read_from(dir.join("kubeconfig")) {
            Ok(k) => k,
            Err(e) => panic!("{}: {e}", dir.display()),
        };
        let twin_config = match Kubeconfig::from_yaml(&kubeconfig_yaml(twin.url(), "verify-twin")) {
            Ok(k) => k,
            Err(e) => panic!("twin kubeconfig: {e}"),
        };
        let (real_client, twin_client) = (
            client(real_config, "kube-local").await,
            client(twin_config, "verify-twin").await,
        );
        let mut real = sequence(&real_client, &token).await;
        let mut twinned = sequence(&twin_client, &token).await;
        real.extend(namespaced_sequence(&real_client, &token).await);
        twinned.extend(namespaced_sequence(&twin_client, &token).await);
        real.extend(chart_sequence(&real_client, &token).await);
        twinned.extend(chart_sequence(&twin_client, &token).await);
        (real, twinned)
    });
    let mut differences = Vec::new();
    for ((step, want), (_, got)) in real.iter().zip(&twinned) {
        if want != got {
            differences.push(format!(
                "{step}:\n  real kube-apiserver: {want}\n  twin:                {got}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} steps differ:\n{}",
        differences.len(),
        real.len(),
        differences.join("\n")
    );
}
