//! The Kubernetes manifests of `deploy/` (issue 20, "Scale-out on Kubernetes"): each one is a
//! typed Kubernetes object with no field the type does not know, the Indexed Job passes its
//! `completions` as the shard count, the ClusterRole grants exactly the verbs and kinds of
//! verify's own preflight access reviews (`needed_verbs`), and every object applies to the
//! embedded twin and reads back as written.

use std::collections::BTreeSet;
use std::path::PathBuf;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, PodSpec, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use live::client::preflight::{needed_verbs, Access};
use live::server::http::{spawn_configured, ServeConfig};
use live::server::kubeconfig::kubeconfig_yaml;
use live::server::store::{Store, StoreConfig};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const FILES: [&str; 5] = [
    "namespace.yaml",
    "rbac.yaml",
    "pvc.yaml",
    "fuzz-job.yaml",
    "soak-cronjob.yaml",
];

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Every document of every manifest, in apply order, as JSON.
fn manifests() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for file in FILES {
        let text = std::fs::read_to_string(deploy_dir().join(file)).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let value = Value::deserialize(doc).unwrap_or_else(|e| panic!("{file}: {e}"));
            if !value.is_null() {
                out.push((file.to_string(), value));
            }
        }
    }
    out
}

/// `value` as `T`, and `T` written back is `value`: nothing was dropped as unknown.
fn typed<T: DeserializeOwned + Serialize>(file: &str, value: &Value) -> T {
    let t: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    let back = serde_json::to_value(&t).unwrap();
    assert_eq!(&back, value, "{file}: a field its type does not know");
    t
}

fn one<T: DeserializeOwned + Serialize>(kind: &str) -> T {
    let all = manifests();
    let found: Vec<&(String, Value)> = all.iter().filter(|(_, v)| v["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in deploy/");
    typed(&found[0].0, &found[0].1)
}

#[test]
fn every_manifest_is_a_typed_object_with_no_unknown_field() {
    let all = manifests();
    let kinds: Vec<&str> = all
        .iter()
        .map(|(_, v)| v["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "PersistentVolumeClaim",
            "Job",
            "CronJob"
        ]
    );
    for (file, v) in &all {
        match v["kind"].as_str().unwrap() {
            "Namespace" => drop(typed::<Namespace>(file, v)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(file, v)),
            "ClusterRole" => drop(typed::<ClusterRole>(file, v)),
            "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(file, v)),
            "PersistentVolumeClaim" => drop(typed::<PersistentVolumeClaim>(file, v)),
            "Job" => drop(typed::<Job>(file, v)),
            "CronJob" => drop(typed::<CronJob>(file, v)),
            other => panic!("{file}: unexpected kind {other}"),
        }
    }
}

/// The Pod spec runs as the ServiceAccount, mounts the PVC at /runs and writes its runs there.
fn check_pod(what: &str, pod: &PodSpec, sa: &str, pvc: &str) -> Vec<String> {
    assert_eq!(pod.service_account_name.as_deref(), Some(sa), "{what}");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"), "{what}");
    let volume = pod.volumes.as_ref().unwrap().first().unwrap();
    let claim = volume.persistent_volume_claim.as_ref().unwrap();
    assert_eq!(claim.claim_name, pvc, "{what}");
    let c = &pod.containers[0];
    let mount = c.volume_mounts.as_ref().unwrap().first().unwrap();
    assert_eq!(
        (mount.name.as_str(), mount.mount_path.as_str()),
        (volume.name.as_str(), "/runs")
    );
    let args = c.args.clone().unwrap();
    let after = |flag: &str| {
        let i = args
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("{what}: no {flag}"));
        args[i + 1].clone()
    };
    // in-cluster configuration (live::client::preflight::IN_CLUSTER_CONTEXT), no terminal
    assert_eq!(
        after("--context"),
        live::client::preflight::IN_CLUSTER_CONTEXT
    );
    assert!(args.contains(&"--yes".to_string()), "{what}");
    assert!(after("--run-dir").starts_with("/runs/"), "{what}");
    args
}

#[test]
fn the_indexed_job_passes_its_completions_as_the_shard_count() {
    let sa: ServiceAccount = one("ServiceAccount");
    let pvc: PersistentVolumeClaim = one("PersistentVolumeClaim");
    let (sa, pvc) = (sa.metadata.name.unwrap(), pvc.metadata.name.unwrap());
    let job: Job = one("Job");
    let spec = job.spec.unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    let completions = spec.completions.unwrap();
    assert!(spec.parallelism.unwrap() <= completions);
    let pod = spec.template.spec.unwrap();
    let args = check_pod("the Job", &pod, &sa, &pvc);
    let shard = args.iter().position(|a| a == "--shard").unwrap();
    assert_eq!(args[0], "fuzz");
    assert_eq!(args[shard + 1], "auto");
    let env = pod.containers[0].env.clone().unwrap();
    let count = env.iter().find(|e| e.name == "VERIFY_SHARD_COUNT").unwrap();
    assert_eq!(count.value, Some(completions.to_string()));
    // the controller sets the index itself: a manifest that set it would shadow it
    assert!(!env.iter().any(|e| e.name == "JOB_COMPLETION_INDEX"));

    let cron: CronJob = one("CronJob");
    let spec = cron.spec.unwrap();
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
    let pod = spec.job_template.spec.unwrap().template.spec.unwrap();
    let args = check_pod("the CronJob", &pod, &sa, &pvc);
    assert_eq!(args[0], "soak");

    let binding: ClusterRoleBinding = one("ClusterRoleBinding");
    let role: ClusterRole = one("ClusterRole");
    assert_eq!(binding.role_ref.kind, "ClusterRole");
    assert_eq!(Some(binding.role_ref.name), role.metadata.name);
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", sa.as_str())
    );
    assert_eq!(subject.namespace.as_deref(), Some("verify"));
}

#[test]
fn the_cluster_role_grants_exactly_what_the_preflight_reviews() {
    let role: ClusterRole = one("ClusterRole");
    let mut granted = BTreeSet::new();
    for rule in role.rules.unwrap() {
        assert!(rule.resource_names.is_none() && rule.non_resource_urls.is_none());
        for group in rule.api_groups.unwrap() {
            for resource in rule.resources.clone().unwrap() {
                for verb in &rule.verbs {
                    granted.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    let needed: BTreeSet<(String, String, String)> = [Access::ReadOnly, Access::Mutating]
        .into_iter()
        .flat_map(needed_verbs)
        .map(|(verb, kind, sub)| {
            let resource = match sub {
                Some(s) => format!("{}/{s}", kind.plural),
                None => kind.plural.to_string(),
            };
            (kind.group.to_string(), resource, verb.to_string())
        })
        .collect();
    let missing: Vec<_> = needed.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&needed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "deploy/rbac.yaml: missing {missing:?}, not needed {extra:?}"
    );
}

/// Whether `got` holds everything `want` says (a server may add defaults and metadata).
fn holds(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| holds(gv, v))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| holds(a, b))
        }
        _ => got == want,
    }
}

#[test]
fn every_manifest_applies_to_the_twin_and_reads_back_as_written() {
    let twin = spawn_configured(
        None,
        Store::new(StoreConfig::default()),
        ServeConfig::default(),
    )
    .expect("a twin on loopback");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = live::client::Client::from_kubeconfig_yaml(
            &kubeconfig_yaml(twin.url(), "verify-twin"),
            "verify-twin",
        )
        .await
        .expect("a client");
        let kube = client.kube().clone();
        for (file, want) in manifests() {
            let api_version = want["apiVersion"].as_str().unwrap();
            let kind = want["kind"].as_str().unwrap();
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            // found through the twin's discovery, as kubectl apply finds it
            let gvk = GroupVersionKind::gvk(group, version, kind);
            let (resource, caps): (ApiResource, _) = kube::discovery::pinned_kind(&kube, &gvk)
                .await
                .unwrap_or_else(|e| panic!("{file}: {kind} is not served at {api_version}: {e}"));
            let api: Api<DynamicObject> = match want["metadata"]["namespace"].as_str() {
                Some(ns) => {
                    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced, "{kind}");
                    Api::namespaced_with(kube.clone(), ns, &resource)
                }
                None => Api::all_with(kube.clone(), &resource),
            };
            let object: DynamicObject = serde_json::from_value(want.clone()).unwrap();
            api.create(&PostParams::default(), &object)
                .await
                .unwrap_or_else(|e| panic!("{file}: creating the {kind}: {e}"));
            let name = want["metadata"]["name"].as_str().unwrap();
            let got = api
                .get(name)
                .await
                .unwrap_or_else(|e| panic!("{file}: reading the {kind} back: {e}"));
            let got = serde_json::to_value(&got).unwrap();
            assert!(
                holds(&got, &want),
                "{file}: {kind} {name} read back as {got:#}"
            );
            assert!(
                got["metadata"]["uid"].is_string(),
                "{file}: {kind} has no uid"
            );
        }
    });
    drop(twin);
}
