//! `structural::validate` against the real CRD schemas in ../shared/crds (read at test time;
//! each test prints a reason and passes vacuously when the directory is absent).

use live::server::status::Cause;
use live::server::store::{Patch, Store, Subresource};
use live::server::structural::{crd_schema, validate, validator};
use live::wire::kinds::{self, Kind};
use serde_json::{json, Value};

use live::crd::shared_crds_dir as crds_dir;

/// The storage-version schema of `<group>_<plural>.yaml`, or `None` (with a printed reason).
fn schema(kind: &Kind) -> Option<Value> {
    let path = crds_dir().join(format!("{}_{}.yaml", kind.group, kind.plural));
    let crd: Value = match live::crd::shared_crd(kind) {
        Ok(v) => v,
        Err(e @ live::crd::SharedCrdError::Unreadable { .. }) => {
            eprintln!("skipped: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        crd.pointer("/spec/names/plural").and_then(Value::as_str),
        Some(kind.plural),
        "{}",
        path.display()
    );
    let served = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage") == Some(&json!(true)));
    assert_eq!(
        served.and_then(|v| v.get("name")).and_then(Value::as_str),
        Some(kind.version),
        "storage version of {}",
        kind.plural
    );
    let scope = crd.pointer("/spec/scope").and_then(Value::as_str);
    let expected_scope = if kind.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    };
    assert_eq!(scope, Some(expected_scope), "scope of {}", kind.plural);
    let has_status = served
        .and_then(|v| v.pointer("/subresources/status"))
        .is_some();
    assert_eq!(
        has_status, kind.has_status,
        "status subresource of {}",
        kind.plural
    );
    crd_schema(&crd, None).cloned()
}

fn view() -> Value {
    json!({"capacity": "4", "remaining": 2, "onceMaxRequest": "1"})
}

fn instance_type() -> Value {
    json!({
        "apiVersion": "worker.gpustack.ai/v1alpha1",
        "kind": "InstanceType",
        "metadata": {"name": "nvidia-a10g", "labels": {"x": "y"}, "annotations": {"a": "b"}},
        "spec": {
            "acceleratable": true, "acceleratorGroup": "nvidia-a10g", "generalGroup": "generic",
            "os": "linux", "arch": "amd64",
            "unitResources": {"cpu": "4", "ram": "16Gi"}, "localStorage": "100Gi",
            "displayName": "A10G"
        },
        "status": {
            "phase": "Active", "entrance": "gpustack-fnv64-0123456789abcdef",
            "accelerator": view(), "acceleratorShared": view(), "acceleratorSliced": view(),
            "acceleratorPartitioned": {"capacity": "0", "remaining": "0", "onceMaxRequest": "0",
                                       "remainingProfiles": [{"name": "1g.10gb", "count": 7}]},
            "cpu": view()
        }
    })
}

fn causes(r: Result<Value, Vec<Cause>>) -> Vec<(String, String)> {
    r.err()
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.field, c.reason))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn every_chain_crd_matches_the_kind_registry() {
    for kind in kinds::ALL.iter().filter(|k| k.is_custom()) {
        if let Some(s) = schema(kind) {
            assert_eq!(s.get("type"), Some(&json!("object")), "{}", kind.plural);
        }
    }
}

#[test]
fn a_valid_instance_type_passes_unchanged() {
    let Some(s) = schema(&kinds::INSTANCE_TYPE) else {
        return;
    };
    let o = instance_type();
    assert_eq!(validate(&s, &o), Ok(o));
}

#[test]
fn an_unknown_instance_type_field_is_pruned() {
    let Some(s) = schema(&kinds::INSTANCE_TYPE) else {
        return;
    };
    let mut o = instance_type();
    o["spec"]["gpuCount"] = json!(8);
    o["spec"]["unitResources"]["disk"] = json!("1Ti");
    o["status"]["accelerator"]["bogus"] = json!(true);
    o["topLevel"] = json!("x");
    assert_eq!(validate(&s, &o), Ok(instance_type()));
}

#[test]
fn a_wrong_type_is_rejected_naming_spec_os() {
    let Some(s) = schema(&kinds::INSTANCE_TYPE) else {
        return;
    };
    let mut o = instance_type();
    o["spec"]["os"] = json!(7);
    o["spec"]["acceleratable"] = json!("yes");
    o["status"]["cpu"]["capacity"] = json!(true);
    assert_eq!(
        causes(validate(&s, &o)),
        [
            pair("spec.acceleratable", "FieldValueTypeInvalid"),
            pair("spec.os", "FieldValueTypeInvalid"),
            pair("status.cpu.capacity", "FieldValueTypeInvalid"),
        ]
    );
}

#[test]
fn missing_required_fields_are_rejected_naming_them() {
    let Some(s) = schema(&kinds::INSTANCE_TYPE) else {
        return;
    };
    let mut o = instance_type();
    if let Some(spec) = o["spec"].as_object_mut() {
        spec.remove("localStorage");
    }
    // null on a non-nullable field is pruned, so a required one is then missing
    o["status"]["acceleratorPartitioned"] = Value::Null;
    assert_eq!(
        causes(validate(&s, &o)),
        [
            pair("spec.localStorage", "FieldValueRequired"),
            pair("status.acceleratorPartitioned", "FieldValueRequired"),
        ]
    );
    let Some(d) = schema(&kinds::DEVICES) else {
        return;
    };
    let no_spec = json!({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "Devices", "metadata": {"name": "n1"}});
    assert_eq!(
        causes(validate(&d, &no_spec)),
        [pair("spec", "FieldValueRequired")]
    );
}

#[test]
fn devices_ledger_validates_nested_lists() {
    let Some(d) = schema(&kinds::DEVICES) else {
        return;
    };
    let card = json!({
        "id": "GPU-0", "index": 0, "physicalIndexes": null,
        "topology": {"pciBusId": "0000:01:00.0", "pciRootId": "0000:00", "pciClass": "0x0302",
                     "numaAffinity": "0", "cpuAffinity": "0-15"},
        "status": {"unhealthy": false}
    });
    let mut o = json!({
        "apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "Devices", "metadata": {"name": "n1"},
        "spec": {"groups": [{"id": "0", "manufacturer": "nvidia", "name": "A10G", "memory": 23028,
                              "accelerators": [card]}]},
        "status": {"groups": [{"id": "0", "manufacturer": "nvidia",
                                "accelerators": [{"id": "GPU-0", "index": 0, "mode": 1, "allocated": 100}]}]}
    });
    let pruned = validate(&d, &o);
    assert_eq!(pruned.as_ref().err(), None);
    // null stays where nullable
    assert_eq!(
        pruned.ok().and_then(|p| p
            .pointer("/spec/groups/0/accelerators/0/physicalIndexes")
            .cloned()),
        Some(Value::Null)
    );
    o["spec"]["groups"][0]["accelerators"][0]["topology"]["pciBusId"] = json!(1);
    o["spec"]["groups"][0]["memory"] = json!("23028");
    if let Some(a) = o["status"]["groups"][0]["accelerators"][0].as_object_mut() {
        a.remove("mode");
    }
    assert_eq!(
        causes(validate(&d, &o)),
        [
            pair(
                "spec.groups[0].accelerators[0].topology.pciBusId",
                "FieldValueTypeInvalid"
            ),
            pair("spec.groups[0].memory", "FieldValueTypeInvalid"),
            pair(
                "status.groups[0].accelerators[0].mode",
                "FieldValueRequired"
            ),
        ]
    );
}

#[test]
fn kueue_and_nfd_objects_validate() {
    let cases = [
        (
            kinds::CLUSTER_QUEUE,
            json!({"metadata": {"name": "cq"}, "spec": {
                "resourceGroups": [{"coveredResources": ["credits.gpustack.ai/nvidia"],
                    "flavors": [{"name": "rf", "resources": [{"name": "credits.gpustack.ai/nvidia", "nominalQuota": "6400000"}]}]}],
                "stopPolicy": "None",
                "admissionChecksStrategy": {"admissionChecks": [{"name": "gpustack-node-devices"}]}}}),
        ),
        (
            kinds::RESOURCE_FLAVOR,
            json!({"metadata": {"name": "rf"}, "spec": {"nodeLabels": {"kubernetes.io/os": "linux"},
                "tolerations": [{"operator": "Exists"}]}}),
        ),
        (
            kinds::LOCAL_QUEUE,
            json!({"metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": "cq"}}),
        ),
        (
            kinds::ADMISSION_CHECK,
            json!({"metadata": {"name": "gpustack-node-devices"}, "spec": {"controllerName": "worker.gpustack.ai/node-devices"}}),
        ),
        (
            kinds::NODE_FEATURE,
            json!({"metadata": {"name": "n1-gpustack-worker", "namespace": "gpustack-system"},
                   "spec": {"labels": {"feature.gpustack.ai/acceleratable": "true"}}}),
        ),
    ];
    for (kind, mut o) in cases {
        let Some(s) = schema(&kind) else { return };
        o["apiVersion"] = json!(kind.api_version());
        o["kind"] = json!(kind.kind);
        // the schema's defaults fill what the object leaves out, as the apiserver's
        // structural defaulting does (seen on kube-apiserver 1.37: live/tests/real_server.rs)
        let mut want = o.clone();
        if kind == kinds::CLUSTER_QUEUE {
            want["spec"]["flavorFungibility"] =
                json!({"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"});
            want["spec"]["preemption"] = json!({"borrowWithinCohort": {"policy": "Never"},
                "reclaimWithinCohort": "Never", "withinClusterQueue": "Never"});
            want["spec"]["queueingStrategy"] = json!("BestEffortFIFO");
        }
        if kind == kinds::LOCAL_QUEUE {
            want["spec"]["stopPolicy"] = json!("None");
        }
        assert_eq!(validate(&s, &o), Ok(want), "{}", kind.kind);
    }
    let Some(cq) = schema(&kinds::CLUSTER_QUEUE) else {
        return;
    };
    let bad = json!({"metadata": {"name": "cq"}, "spec": {"stopPolicy": "Pause"}});
    assert_eq!(
        causes(validate(&cq, &bad)),
        [pair("spec.stopPolicy", "FieldValueNotSupported")]
    );
    let Some(ac) = schema(&kinds::ADMISSION_CHECK) else {
        return;
    };
    let missing = json!({"metadata": {"name": "ac"}, "spec": {}});
    assert_eq!(
        causes(validate(&ac, &missing)),
        [pair("spec.controllerName", "FieldValueRequired")]
    );
}

#[test]
fn a_workload_validates_against_the_large_schema() {
    let Some(w) = schema(&kinds::WORKLOAD) else {
        return;
    };
    let o = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "team"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                     "resources": {"requests": {"credits.gpustack.ai/nvidia": "1600000"}}}]}}}]},
        "status": {"admissionChecks": [{"name": "gpustack-node-devices", "state": "Pending",
                   "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
    });
    let mut defaulted = o.clone();
    defaulted["spec"]["active"] = json!(true);
    assert_eq!(validate(&w, &o), Ok(defaulted));
    let mut bad = o.clone();
    bad["status"]["admissionChecks"][0]["state"] = json!("Maybe");
    assert_eq!(
        causes(validate(&w, &bad)),
        [pair(
            "status.admissionChecks[0].state",
            "FieldValueNotSupported"
        )]
    );
}

#[test]
fn the_store_rejects_through_a_crd_validator_with_a_status_naming_the_field() {
    let Some(s) = schema(&kinds::INSTANCE_TYPE) else {
        return;
    };
    let mut store = Store::default();
    store.set_validator(&kinds::INSTANCE_TYPE, validator(s));
    let mut o = instance_type();
    o["spec"]["unknown"] = json!(1);
    let created = store.create(&kinds::INSTANCE_TYPE, None, o);
    let created = created.map_err(|e| e.message);
    assert_eq!(
        created.as_ref().map(|c| c["spec"].get("unknown").is_none()),
        Ok(true)
    );
    // the status write must carry all six required views
    let bad = store.patch(
        &kinds::INSTANCE_TYPE,
        None,
        "nvidia-a10g",
        Subresource::Status,
        &Patch::Merge(json!({"status": {"phase": "Active"}})),
    );
    let err = bad.err();
    assert_eq!(err.as_ref().map(|e| e.code), Some(422));
    let fields: Vec<String> = err
        .and_then(|e| e.details)
        .map(|d| d.causes.into_iter().map(|c| c.field).collect())
        .unwrap_or_default();
    assert_eq!(
        fields,
        [
            "status.accelerator",
            "status.acceleratorPartitioned",
            "status.acceleratorShared",
            "status.acceleratorSliced",
            "status.cpu"
        ]
    );
    let good = store.patch(
        &kinds::INSTANCE_TYPE,
        None,
        "nvidia-a10g",
        Subresource::Status,
        &Patch::Merge(json!({"status": instance_type()["status"].clone()})),
    );
    assert_eq!(
        good.map(|g| g["status"]["phase"].clone()).ok(),
        Some(json!("Active"))
    );
    let wrong = store.patch(
        &kinds::INSTANCE_TYPE,
        None,
        "nvidia-a10g",
        Subresource::Main,
        &Patch::Merge(json!({"spec": {"os": 1}})),
    );
    assert_eq!(
        wrong.err().map(|e| e.message),
        Some("InstanceType.worker.gpustack.ai \"nvidia-a10g\" is invalid: spec.os: Invalid value: \"integer\": spec.os in body must be of type string: \"integer\"".to_string())
    );
}
