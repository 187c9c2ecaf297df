//! The defaults a real apiserver gives the kinds verify's own Kubernetes manifests create
//! (deploy/): batch/v1 Jobs and CronJobs, from k8s.io/kubernetes pkg/apis/batch/v1/defaults.go
//! (`SetDefaults_Job`, `SetDefaults_CronJob`), and core/v1 PersistentVolumeClaims, from
//! pkg/apis/core/v1/defaults.go (`SetDefaults_PersistentVolumeClaim`,
//! `SetDefaults_PersistentVolumeClaimSpec`). Pod templates get the Pod spec's defaults
//! ([`super::builtin::default_pod_spec`]). Not done: the Job strategy's generated selector and
//! `batch.kubernetes.io/controller-uid` labels (they need the uid the store assigns later).

use serde_json::{json, Map, Value};

type Object = Map<String, Value>;

fn default_field(object: &mut Object, key: &str, value: Value) {
    object.entry(key).or_insert(value);
}

fn spec(object: &mut Object) -> Option<&mut Object> {
    object.get_mut("spec").and_then(Value::as_object_mut)
}

/// `SetDefaults_Job`: completions and parallelism 1 when both are unset (else parallelism 1),
/// backoffLimit 6 (max int32 with a per-index limit), completionMode NonIndexed, suspend
/// false, podReplacementPolicy TerminatingOrFailed without a pod failure policy (Failed with
/// one); the Pod template's defaults.
pub fn default_job(object: &mut Object) {
    let Some(spec) = spec(object) else {
        return;
    };
    default_job_spec(spec);
}

fn default_job_spec(spec: &mut Object) {
    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default_field(spec, "parallelism", json!(1));
    let limit = if spec.contains_key("backoffLimitPerIndex") {
        i64::from(i32::MAX)
    } else {
        6
    };
    default_field(spec, "backoffLimit", json!(limit));
    default_field(spec, "completionMode", json!("NonIndexed"));
    default_field(spec, "suspend", json!(false));
    let replacement = if spec.contains_key("podFailurePolicy") {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_field(spec, "podReplacementPolicy", json!(replacement));
    if let Some(pod) = spec
        .get_mut("template")
        .and_then(Value::as_object_mut)
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        super::builtin::default_pod_spec(pod);
    }
}

/// `SetDefaults_CronJob`: concurrencyPolicy Allow, suspend false, history limits 3 successful
/// and 1 failed; its Job template's spec as a Job's.
pub fn default_cron_job(object: &mut Object) {
    let Some(spec) = spec(object) else {
        return;
    };
    default_field(spec, "concurrencyPolicy", json!("Allow"));
    default_field(spec, "suspend", json!(false));
    default_field(spec, "successfulJobsHistoryLimit", json!(3));
    default_field(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(job) = spec
        .get_mut("jobTemplate")
        .and_then(Value::as_object_mut)
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        default_job_spec(job);
    }
}

/// `SetDefaults_PersistentVolumeClaim(Spec)`: volumeMode Filesystem, status phase Pending.
pub fn default_persistent_volume_claim(object: &mut Object) {
    if let Some(spec) = spec(object) {
        default_field(spec, "volumeMode", json!("Filesystem"));
    }
    let status = object
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(status) = status.as_object_mut() {
        default_field(status, "phase", json!("Pending"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: Value) -> Object {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_indexed_job_keeps_what_it_says_and_gets_the_rest_of_the_defaults() {
        let mut job = object(
            json!({"spec": {"completionMode": "Indexed", "completions": 4,
            "template": {"spec": {"containers": [{"name": "c", "image": "verify:0.1.0"}]}}}}),
        );
        default_job(&mut job);
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(
            (spec["completions"].clone(), spec["parallelism"].clone()),
            (json!(4), json!(1))
        );
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
        let mut plain = object(json!({"spec": {"backoffLimitPerIndex": 1}}));
        default_job(&mut plain);
        assert_eq!(plain["spec"]["completions"], 1);
        assert_eq!(plain["spec"]["backoffLimit"], i64::from(i32::MAX));
    }

    #[test]
    fn a_cron_job_and_a_claim_get_their_defaults() {
        let mut cron = object(json!({"spec": {"schedule": "0 1 * * *",
            "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {"backoffLimit": 0}}}}));
        default_cron_job(&mut cron);
        let spec = &cron["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(
            (
                spec["successfulJobsHistoryLimit"].clone(),
                spec["failedJobsHistoryLimit"].clone()
            ),
            (json!(3), json!(1))
        );
        assert_eq!(spec["jobTemplate"]["spec"]["backoffLimit"], 0);
        assert_eq!(spec["jobTemplate"]["spec"]["completionMode"], "NonIndexed");
        let mut claim = object(json!({"spec": {"accessModes": ["ReadWriteMany"]}}));
        default_persistent_volume_claim(&mut claim);
        assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
        assert_eq!(claim["status"]["phase"], "Pending");
    }
}
