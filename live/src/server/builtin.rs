//! What a real apiserver does to the built-in kinds a chart writes before it stores them: the
//! decoding of their typed fields (a Secret's `data` is bytes, so it must be base64), the
//! defaults of k8s.io/kubernetes pkg/apis/{core,apps,policy,admissionregistration}/v1
//! defaults.go, the strategies' PrepareForCreate (a Secret's `stringData` folded into `data`)
//! and the few validations a chart can trip (config keys, a Deployment's selector and
//! containers). Pure: one object in, the object to store (or why not) out.

use serde_json::{json, Map, Value};

use super::status::{Cause, Status};
use crate::wire::kinds::{self, Kind};

type Object = Map<String, Value>;

/// `object` of `kind` as the server would store it: decoded, defaulted, validated. Kinds
/// without built-in rules pass through unchanged.
pub fn prepare(kind: &Kind, name: &str, mut object: Object) -> Result<Object, Status> {
    match *kind {
        k if k == kinds::SECRET => {
            check_base64_map(kind, &object, "data")?;
            fold_string_data(&mut object);
            object
                .entry("type")
                .or_insert_with(|| Value::String("Opaque".into()));
            let causes = config_key_causes(&object, "data");
            invalid_unless_empty(kind, name, causes)?;
        }
        k if k == kinds::CONFIG_MAP => {
            check_base64_map(kind, &object, "binaryData")?;
            let mut causes = config_key_causes(&object, "data");
            causes.extend(config_key_causes(&object, "binaryData"));
            invalid_unless_empty(kind, name, causes)?;
        }
        k if k == kinds::JOB => super::batch::default_job(&mut object),
        k if k == kinds::CRON_JOB => super::batch::default_cron_job(&mut object),
        k if k == kinds::PERSISTENT_VOLUME_CLAIM => {
            super::batch::default_persistent_volume_claim(&mut object)
        }
        k if k == kinds::DEPLOYMENT => {
            default_deployment(&mut object);
            invalid_unless_empty(kind, name, deployment_causes(&object))?;
        }
        k if k == kinds::POD_DISRUPTION_BUDGET => {
            // policy/v1 PodDisruptionBudgetStatus's counts are not omitempty: a typed object
            // always carries them, 0 until the disruption controller counts
            if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
                for count in [
                    "disruptionsAllowed",
                    "currentHealthy",
                    "desiredHealthy",
                    "expectedPods",
                ] {
                    default_field(status, count, json!(0));
                }
            }
        }
        k if k == kinds::VALIDATING_WEBHOOK_CONFIGURATION
            || k == kinds::MUTATING_WEBHOOK_CONFIGURATION =>
        {
            let mutating = k == kinds::MUTATING_WEBHOOK_CONFIGURATION;
            if let Some(hooks) = object.get_mut("webhooks").and_then(Value::as_array_mut) {
                hooks.iter_mut().for_each(|h| default_webhook(h, mutating));
            }
        }
        k if k == kinds::API_SERVICE => {
            // kube-aggregator validation: the name is `<spec.version>.<spec.group>`
            let spec = |f: &str| {
                object
                    .get("spec")
                    .and_then(|s| s.get(f))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            if name != format!("{}.{}", spec("version"), spec("group")) {
                let cause = Cause::new(
                    "metadata.name",
                    "FieldValueInvalid",
                    format!("Invalid value: {name:?}: must be spec.version+\".\"+spec.group"),
                );
                return Err(Status::invalid(kind, name, vec![cause]));
            }
        }
        k if k == kinds::CUSTOM_RESOURCE_DEFINITION => {
            super::crds::default_crd(&mut object);
            invalid_unless_empty(kind, name, super::crds::crd_causes(name, &object))?;
        }
        _ => {}
    }
    Ok(object)
}

fn invalid_unless_empty(kind: &Kind, name: &str, causes: Vec<Cause>) -> Result<(), Status> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid(kind, name, causes))
    }
}

/// Whether `path` of a built-in `kind` is a Go value struct (a non-pointer struct field):
/// structured-merge-diff lists a map or an optional (pointer) struct as a member of its own
/// (`.` in `fieldsV1`) when a manager sets it, never a value struct, which always exists.
/// Custom resources have none (every object of a schema is optional).
pub fn is_value_struct(kind: &Kind, path: &[String]) -> bool {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match (kind.group, kind.kind) {
        ("apps", "Deployment") => matches!(
            path.as_slice(),
            ["spec"]
                | ["spec", "template"]
                | ["spec", "template", "metadata"]
                | ["spec", "template", "spec"]
                | ["spec", "strategy"]
                | ["status"]
        ),
        ("policy", "PodDisruptionBudget") => matches!(path.as_slice(), ["spec"] | ["status"]),
        ("coordination.k8s.io", "Lease") => path.as_slice() == ["spec"],
        ("apiregistration.k8s.io", "APIService") => {
            matches!(path.as_slice(), ["spec"] | ["status"])
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => matches!(
            path.as_slice(),
            ["spec"] | ["spec", "names"] | ["status"] | ["status", "acceptedNames"]
        ),
        _ => false,
    }
}

// ---- Secrets and ConfigMaps ----

/// A byte field that is not base64 fails the decoding of the whole object: 400, as the
/// apiserver's codec answers ("… cannot be handled as a Secret: illegal base64 data …").
fn check_base64_map(kind: &Kind, object: &Object, field: &str) -> Result<(), Status> {
    let Some(map) = object.get(field).and_then(Value::as_object) else {
        return Ok(());
    };
    for value in map.values() {
        let Some(text) = value.as_str() else { continue };
        if let Err(at) = decode_base64(text) {
            return Err(Status::bad_request(format!(
                "{k} in version \"{v}\" cannot be handled as a {k}: illegal base64 data at input byte {at}",
                k = kind.kind,
                v = kind.version
            )));
        }
    }
    Ok(())
}

/// The Secret strategy's PrepareForCreate/Update: every `stringData` entry is written into
/// `data` (base64), overriding a `data` entry of the same key, and `stringData` is dropped
/// (pkg/registry/core/secret/strategy.go; a write-only field).
fn fold_string_data(object: &mut Object) {
    let Some(Value::Object(strings)) = object.remove("stringData") else {
        return;
    };
    if strings.is_empty() {
        return;
    }
    let data = object
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            data.insert(key, Value::String(encode_base64(text.as_bytes())));
        }
    }
}

/// Each key of `object[field]` must be a config key (apimachinery validation
/// `IsConfigMapKey`: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.` or `..`).
fn config_key_causes(object: &Object, field: &str) -> Vec<Cause> {
    let Some(map) = object.get(field).and_then(Value::as_object) else {
        return Vec::new();
    };
    map.keys()
        .filter_map(|key| {
            let problem = config_key_problem(key)?;
            Some(Cause::new(
                &format!("{field}[{key}]"),
                "FieldValueInvalid",
                format!("Invalid value: {key:?}: {problem}"),
            ))
        })
        .collect()
}

fn config_key_problem(key: &str) -> Option<&'static str> {
    if key.len() > 253 {
        return Some("must be no more than 253 characters");
    }
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Some(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        );
    }
    match key {
        "." => Some("must not be '.'"),
        ".." => Some("must not be '..'"),
        _ if key.starts_with("..") => Some("must not start with '..'"),
        _ => None,
    }
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                let index = ((n >> (18 - 6 * i)) & 63) as usize;
                out.push(char::from(BASE64_ALPHABET[index]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_value(c: u8) -> Option<u32> {
    BASE64_ALPHABET
        .iter()
        .position(|a| *a == c)
        .and_then(|p| u32::try_from(p).ok())
}

/// Decodes standard base64 with padding as Go's `encoding/base64.StdEncoding` does (which
/// the apiserver's JSON decoding of `[]byte` uses): `\r` and `\n` are skipped; on failure,
/// the offset of the byte where the input stopped being valid (Go's `CorruptInputError`).
pub fn decode_base64(text: &str) -> Result<Vec<u8>, usize> {
    let src = text.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        // one quantum: up to four symbols
        let mut buf = [0u32; 4];
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                // the input ended inside a quantum: padding is required
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if c == b'\r' || c == b'\n' {
                continue;
            }
            if c == b'=' {
                // padding: only as the third or fourth symbol, and only at the end
                match j {
                    0 | 1 => return Err(si - 1),
                    2 => {
                        while si < src.len() && matches!(src[si], b'\r' | b'\n') {
                            si += 1;
                        }
                        if si == src.len() {
                            return Err(src.len());
                        }
                        if src[si] != b'=' {
                            return Err(si - 1);
                        }
                        si += 1;
                    }
                    _ => {}
                }
                while si < src.len() && matches!(src[si], b'\r' | b'\n') {
                    si += 1;
                }
                if si < src.len() {
                    return Err(si);
                }
                let n = (buf[0] << 18) | (buf[1] << 12) | (buf[2] << 6);
                out.push(((n >> 16) & 0xff) as u8);
                if j == 3 {
                    out.push(((n >> 8) & 0xff) as u8);
                }
                return Ok(out);
            }
            match base64_value(c) {
                Some(v) => buf[j] = v,
                None => return Err(si - 1),
            }
            j += 1;
        }
        let n = (buf[0] << 18) | (buf[1] << 12) | (buf[2] << 6) | buf[3];
        out.extend([
            ((n >> 16) & 0xff) as u8,
            ((n >> 8) & 0xff) as u8,
            (n & 0xff) as u8,
        ]);
    }
    Ok(out)
}

// ---- Deployments and their Pod template ----

/// Inserts `value` at `key` when absent.
fn default_field(object: &mut Object, key: &str, value: Value) {
    object.entry(key).or_insert(value);
}

/// The object at `key`, created empty when absent (None when it is not an object).
fn object_at<'a>(object: &'a mut Object, key: &str) -> Option<&'a mut Object> {
    object
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

/// apps/v1 `SetDefaults_Deployment` and the Pod template's defaults.
fn default_deployment(object: &mut Object) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default_field(spec, "replicas", json!(1));
    if let Some(strategy) = object_at(spec, "strategy") {
        default_field(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type") == Some(&json!("RollingUpdate")) {
            if let Some(rolling) = object_at(strategy, "rollingUpdate") {
                default_field(rolling, "maxUnavailable", json!("25%"));
                default_field(rolling, "maxSurge", json!("25%"));
            }
        }
    }
    default_field(spec, "revisionHistoryLimit", json!(10));
    default_field(spec, "progressDeadlineSeconds", json!(600));
    if let Some(pod) = spec
        .get_mut("template")
        .and_then(Value::as_object_mut)
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        default_pod_spec(pod);
    }
}

/// core/v1 `SetDefaults_PodSpec` and what it reaches (containers, ports, probes, volumes).
pub fn default_pod_spec(pod: &mut Object) {
    for list in ["initContainers", "containers"] {
        if let Some(containers) = pod.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
            }
        }
    }
    default_field(pod, "restartPolicy", json!("Always"));
    default_field(pod, "terminationGracePeriodSeconds", json!(30));
    default_field(pod, "dnsPolicy", json!("ClusterFirst"));
    default_field(pod, "securityContext", json!({}));
    default_field(pod, "schedulerName", json!("default-scheduler"));
    if let Some(volumes) = pod.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            for source in ["secret", "configMap"] {
                if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
                    default_field(s, "defaultMode", json!(420));
                }
            }
        }
    }
}

/// A container's defaults: the termination message, the pull policy (`Always` for a
/// `:latest` or untagged image, else `IfNotPresent`), empty resources, TCP ports, probes.
fn default_container(c: &mut Object) {
    let policy = pull_policy(c.get("image").and_then(Value::as_str).unwrap_or(""));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_field(p, "protocol", json!("TCP"));
        }
    }
    default_field(c, "resources", json!({}));
    default_field(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_field(c, "terminationMessagePolicy", json!("File"));
    default_field(c, "imagePullPolicy", json!(policy));
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_field(p, "timeoutSeconds", json!(1));
            default_field(p, "periodSeconds", json!(10));
            default_field(p, "successThreshold", json!(1));
            default_field(p, "failureThreshold", json!(3));
            if let Some(get) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                default_field(get, "path", json!("/"));
                default_field(get, "scheme", json!("HTTP"));
            }
        }
    }
}

/// `Always` when the image names no tag or the `latest` tag (a digest counts as a tag).
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// apps/v1 validation a chart can trip: a selector, matching the template's labels, and
/// containers each with a name and an image.
fn deployment_causes(object: &Object) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let selector = &spec["selector"];
    let match_labels = selector["matchLabels"].as_object();
    let has_expressions = selector["matchExpressions"]
        .as_array()
        .is_some_and(|e| !e.is_empty());
    if match_labels.is_none_or(Map::is_empty) && !has_expressions {
        causes.push(Cause::new(
            "spec.selector",
            "FieldValueRequired",
            "Required value",
        ));
    }
    let labels = spec["template"]["metadata"]["labels"].as_object();
    if let Some(wanted) = match_labels.filter(|m| !m.is_empty()) {
        let selected = wanted
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        if !selected {
            // the labels shown as JSON (keys sorted), as field.Invalid renders a map
            let shown = Value::Object(labels.cloned().unwrap_or_default());
            causes.push(Cause::new(
                "spec.template.metadata.labels",
                "FieldValueInvalid",
                format!("Invalid value: {shown}: `selector` does not match template `labels`"),
            ));
        }
    }
    let containers = spec["template"]["spec"]["containers"].as_array();
    match containers {
        None => causes.push(Cause::new(
            "spec.template.spec.containers",
            "FieldValueRequired",
            "Required value",
        )),
        Some(list) if list.is_empty() => causes.push(Cause::new(
            "spec.template.spec.containers",
            "FieldValueRequired",
            "Required value",
        )),
        Some(list) => {
            for (i, c) in list.iter().enumerate() {
                for field in ["name", "image"] {
                    if c[field].as_str().is_none_or(str::is_empty) {
                        causes.push(Cause::new(
                            &format!("spec.template.spec.containers[{i}].{field}"),
                            "FieldValueRequired",
                            "Required value",
                        ));
                    }
                }
            }
        }
    }
    causes
}

// ---- webhook configurations ----

/// admissionregistration/v1 `SetDefaults_{Validating,Mutating}Webhook`, its rules' scope and
/// a service reference's port.
fn default_webhook(hook: &mut Value, mutating: bool) {
    let Some(h) = hook.as_object_mut() else {
        return;
    };
    default_field(h, "failurePolicy", json!("Fail"));
    default_field(h, "matchPolicy", json!("Equivalent"));
    default_field(h, "namespaceSelector", json!({}));
    default_field(h, "objectSelector", json!({}));
    default_field(h, "timeoutSeconds", json!(10));
    if mutating {
        default_field(h, "reinvocationPolicy", json!("Never"));
    }
    if let Some(rules) = h.get_mut("rules").and_then(Value::as_array_mut) {
        for r in rules.iter_mut().filter_map(Value::as_object_mut) {
            default_field(r, "scope", json!("*"));
        }
    }
    if let Some(service) = h
        .get_mut("clientConfig")
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        default_field(service, "port", json!(443));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_reports_go_offsets() {
        for text in ["", "a", "hello", "world!", "\u{0}\u{1}\u{2}\u{ff}"] {
            let encoded = encode_base64(text.as_bytes());
            assert_eq!(decode_base64(&encoded), Ok(text.as_bytes().to_vec()));
        }
        assert_eq!(encode_base64(b"hello"), "aGVsbG8=");
        assert_eq!(decode_base64("d29y\nbGQ="), Ok(b"world".to_vec()));
        // the space of "not base64!" is byte 3, as the real server reports it
        assert_eq!(decode_base64("not base64!"), Err(3));
        assert_eq!(decode_base64("abc"), Err(0));
        assert_eq!(decode_base64("ab=c"), Err(2));
        assert_eq!(decode_base64("a==="), Err(1));
    }

    #[test]
    fn a_secret_folds_string_data_and_defaults_its_type() {
        let secret = json!({"metadata": {"name": "s"}, "stringData": {"a": "hello"},
                            "data": {"a": "eA==", "b": "d29ybGQ="}});
        let stored = prepare(
            &kinds::SECRET,
            "s",
            secret.as_object().cloned().unwrap_or_default(),
        );
        let stored = stored.map(Value::Object).unwrap_or_default();
        assert_eq!(stored["data"], json!({"a": "aGVsbG8=", "b": "d29ybGQ="}));
        assert_eq!(stored["type"], "Opaque");
        assert!(stored.get("stringData").is_none());
        let bad = json!({"data": {"b": "not base64!"}});
        let refused = prepare(
            &kinds::SECRET,
            "s",
            bad.as_object().cloned().unwrap_or_default(),
        );
        assert_eq!(refused.map_err(|s| (s.code, s.message)), Err((400, "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3".to_string())));
        let bad_key = json!({"data": {"bad key!": "AA=="}});
        let refused = prepare(
            &kinds::SECRET,
            "s3",
            bad_key.as_object().cloned().unwrap_or_default(),
        );
        assert_eq!(refused.map_err(|s| s.code), Err(422));
    }

    #[test]
    fn an_api_service_is_named_after_its_version_and_group() {
        let named = |name: &str| {
            let o = json!({"spec": {"group": "apps", "version": "v1"}});
            prepare(
                &kinds::API_SERVICE,
                name,
                o.as_object().cloned().unwrap_or_default(),
            )
            .map(|_| ())
            .map_err(|s| s.code)
        };
        assert_eq!(named("v1.apps"), Ok(()));
        assert_eq!(named("apps"), Err(422));
    }

    #[test]
    fn a_deployment_is_defaulted_as_the_real_server_does() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
                {"name": "c", "image": "nginx:1.0", "ports": [{"containerPort": 80}]},
                {"name": "side", "image": "busybox"}]}}}});
        let stored = prepare(
            &kinds::DEPLOYMENT,
            "d",
            d.as_object().cloned().unwrap_or_default(),
        )
        .map(Value::Object)
        .unwrap_or_default();
        let spec = &stored["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "Always");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        let unselected = json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
                {"name": "c"}]}}}});
        let refused = prepare(
            &kinds::DEPLOYMENT,
            "d",
            unselected.as_object().cloned().unwrap_or_default(),
        );
        let causes: Vec<String> = refused
            .err()
            .and_then(|s| s.details)
            .map(|d| d.causes.into_iter().map(|c| c.field).collect())
            .unwrap_or_default();
        assert_eq!(
            causes,
            [
                "spec.template.metadata.labels",
                "spec.template.spec.containers[0].image"
            ]
        );
    }
}
