//! Helm release records read through the API, without a helm binary.
//!
//! Helm 3's storage drivers (helm `pkg/storage/driver`, `secrets.go`, `cfgmaps.go`, `util.go`):
//! - a record is named `sh.helm.release.v1.<release>.v<revision>`, labelled `owner=helm`,
//!   `name=<release>`, `status=<status>`, `version=<revision>`; the Secret driver's Secrets are
//!   of type `helm.sh/release.v1`;
//! - the payload under the `release` key is the release as JSON, gzipped, then base64 (std
//!   alphabet) as text (`encodeRelease`); the Secret driver stores that text as the Secret's
//!   bytes, so the API's JSON carries it base64-encoded once more, while the ConfigMap driver
//!   stores the text as the ConfigMap's string value;
//! - reading accepts an ungzipped payload too: the gzip magic bytes decide (`decodeRelease`).

use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::ListParams;
use kube::Api;
use serde::Serialize;
use serde_json::Value;

use crate::ChartError;

/// The Secret type of Helm 3's release records.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";
/// The record name's prefix.
pub const NAME_PREFIX: &str = "sh.helm.release.v1.";
/// gzip's magic bytes (and deflate method), as Helm's decoder tests them.
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// Which storage driver a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Driver {
    Secret,
    ConfigMap,
}

impl Driver {
    pub fn kind(self) -> &'static str {
        match self {
            Driver::Secret => "Secret",
            Driver::ConfigMap => "ConfigMap",
        }
    }
}

/// What a record says about its release.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Release {
    pub name: String,
    pub namespace: String,
    pub revision: u64,
    pub status: String,
    pub chart_name: String,
    pub chart_version: String,
    pub app_version: String,
    /// The values the user gave (`config`), for checks that read them (case 8).
    #[serde(skip)]
    pub config: Value,
    pub driver: Driver,
    /// The Secret or ConfigMap holding it, `namespace/name`.
    pub record: String,
}

impl Release {
    /// The fields a user asks for, one per line.
    pub fn render(&self) -> String {
        format!(
            "release: {}\nnamespace: {}\nrevision: {}\nstatus: {}\nchart: {}\nchart version: {}\nappVersion: {}\nrecord: {} {}\n",
            self.name,
            self.namespace,
            self.revision,
            self.status,
            self.chart_name,
            self.chart_version,
            self.app_version,
            self.driver.kind(),
            self.record
        )
    }
}

/// `(release, revision)` from a record name, or `None` when it is not Helm's form.
pub fn parse_record_name(name: &str) -> Option<(String, u64)> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let (release, revision) = rest.rsplit_once(".v")?;
    let revision = revision.parse().ok()?;
    (!release.is_empty()).then(|| (release.to_string(), revision))
}

/// Decodes a payload as Helm's drivers store it under `release` (base64 text of gzipped JSON,
/// or of plain JSON) into the release JSON.
pub fn decode_payload(text: &[u8]) -> Result<Value, PayloadError> {
    let trimmed: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&trimmed)
        .map_err(PayloadError::NotBase64)?;
    let json = if bytes.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(PayloadError::NotGzip)?;
        out
    } else {
        bytes
    };
    serde_json::from_slice(&json).map_err(PayloadError::NotJson)
}

/// A record payload that is not Helm's encoding of release JSON.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("data.release is not base64: {0}")]
    NotBase64(#[source] base64::DecodeError),
    #[error("data.release is not valid gzip: {0}")]
    NotGzip(#[source] std::io::Error),
    #[error("data.release is not release JSON: {0}")]
    NotJson(#[source] serde_json::Error),
}

/// Release JSON that lacks a field a release needs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the release JSON has no {0}")]
pub struct MissingField(pub &'static str);

/// Encodes release JSON exactly as Helm's `encodeRelease` does (gzip, then base64 text): the
/// value a ConfigMap record holds, and the bytes a Secret record holds.
pub fn encode_payload(release: &Value) -> String {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // writing into a Vec cannot fail
    let _ = gz.write_all(release.to_string().as_bytes());
    let bytes = gz.finish().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The release a record's JSON describes (the revision from the JSON's `version`).
pub fn release_from_json(
    json: &Value,
    driver: Driver,
    record: &str,
) -> Result<Release, MissingField> {
    let text = |v: &Value, what: &'static str| -> Result<String, MissingField> {
        v.as_str().map(str::to_string).ok_or(MissingField(what))
    };
    let meta = &json["chart"]["metadata"];
    Ok(Release {
        name: text(&json["name"], "name")?,
        namespace: json["namespace"].as_str().unwrap_or("").to_string(),
        revision: json["version"]
            .as_u64()
            .ok_or(MissingField("version (revision)"))?,
        status: text(&json["info"]["status"], "info.status")?,
        chart_name: text(&meta["name"], "chart.metadata.name")?,
        chart_version: text(&meta["version"], "chart.metadata.version")?,
        app_version: meta["appVersion"].as_str().unwrap_or("").to_string(),
        config: json["config"].clone(),
        driver,
        record: record.to_string(),
    })
}

/// One record: its name checked against Helm's form, its payload decoded.
pub fn decode_record(
    driver: Driver,
    namespace: &str,
    name: &str,
    payload: Option<&[u8]>,
) -> Result<Release, ChartError> {
    let record = format!("{namespace}/{name}");
    let bad = |message: String| ChartError::BadRecord {
        kind: driver.kind(),
        record: record.clone(),
        message,
    };
    let (release, revision) = parse_record_name(name).ok_or_else(|| {
        bad(format!(
            "the name is not {NAME_PREFIX}<release>.v<revision>"
        ))
    })?;
    let payload = payload.ok_or_else(|| bad("it has no data.release".into()))?;
    let json = decode_payload(payload).map_err(|e| bad(e.to_string()))?;
    let r = release_from_json(&json, driver, &record).map_err(|e| bad(e.to_string()))?;
    if r.name != release || r.revision != revision {
        return Err(bad(format!(
            "the name says {release} revision {revision}, the JSON {} revision {}",
            r.name, r.revision
        )));
    }
    Ok(r)
}

/// Every release record of both drivers in `namespace` (all namespaces when `None`), decoded.
/// A malformed record is an error naming it.
pub async fn records(
    client: &kube::Client,
    namespace: Option<&str>,
) -> Result<Vec<Release>, ChartError> {
    // every Secret and ConfigMap, filtered here: helm itself selects `owner=helm`, but a
    // record written by hand (`kubectl create secret generic … --type=helm.sh/release.v1`)
    // carries no labels and is still the release's record
    let lp = ListParams::default();
    let api_error = |what: &str, e: kube::Error| ChartError::Api {
        what: what.to_string(),
        message: match e {
            kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
            other => other.to_string(),
        },
    };
    let secrets: Api<Secret> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut out = Vec::new();
    let list = secrets
        .list(&lp)
        .await
        .map_err(|e| api_error("listing Secrets", e))?;
    for s in list.items {
        if s.type_.as_deref() != Some(SECRET_TYPE) {
            continue;
        }
        let ns = s.metadata.namespace.clone().unwrap_or_default();
        let name = s.metadata.name.clone().unwrap_or_default();
        let payload = s
            .data
            .as_ref()
            .and_then(|d| d.get("release"))
            .map(|b| b.0.as_slice());
        out.push(decode_record(Driver::Secret, &ns, &name, payload)?);
    }
    let maps: Api<ConfigMap> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let list = maps
        .list(&lp)
        .await
        .map_err(|e| api_error("listing ConfigMaps", e))?;
    for c in list.items {
        let ns = c.metadata.namespace.clone().unwrap_or_default();
        let name = c.metadata.name.clone().unwrap_or_default();
        if !name.starts_with(NAME_PREFIX) {
            continue;
        }
        let payload = c
            .data
            .as_ref()
            .and_then(|d| d.get("release"))
            .map(String::as_bytes);
        out.push(decode_record(Driver::ConfigMap, &ns, &name, payload)?);
    }
    Ok(out)
}

/// The latest revision of each release (by namespace and name), in name order.
pub fn latest(records: Vec<Release>) -> Vec<Release> {
    let mut by: BTreeMap<(String, String), Release> = BTreeMap::new();
    for r in records {
        let ns = r.record.split('/').next().unwrap_or("").to_string();
        let key = (ns, r.name.clone());
        match by.get(&key) {
            Some(old) if old.revision >= r.revision => {}
            _ => {
                by.insert(key, r);
            }
        }
    }
    by.into_values().collect()
}

/// The latest revision of release `name` in `namespace`, if there is a record of it.
pub async fn latest_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Release>, ChartError> {
    let all = records(client, Some(namespace)).await?;
    Ok(latest(all).into_iter().find(|r| r.name == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    fn release_json(name: &str, revision: u64, version: &str) -> Value {
        json!({
            "name": name,
            "namespace": "gpustack-system",
            "version": revision,
            "info": {"status": "deployed", "description": "Install complete"},
            "chart": {"metadata": {"name": "gpustack-operator", "version": version, "appVersion": version}},
            "config": {"topograph": {"enabled": false}},
            "manifest": "---\n",
        })
    }

    /// Helm's secrets driver: gzip, base64 into a string, stored as the Secret's bytes (which
    /// the API's JSON base64-encodes again).
    fn helm_encode(release: &Value) -> String {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(serde_json::to_vec(release).unwrap_or_default().as_slice())
            .unwrap_or_default();
        base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap_or_default())
    }

    #[test]
    fn a_record_encoded_as_helm_encodes_it_decodes() {
        let json = release_json("gpustack-operator", 3, "0.6.1");
        let payload = helm_encode(&json);
        // the Secret as the API serves it: data.release is base64 of the payload text
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "sh.helm.release.v1.gpustack-operator.v3", "namespace": "gpustack-system"},
            "type": SECRET_TYPE,
            "data": {"release": base64::engine::general_purpose::STANDARD.encode(payload.as_bytes())},
        }))
        .unwrap_or_default();
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get("release"))
            .map(|b| b.0.as_slice());
        let r = decode_record(
            Driver::Secret,
            "gpustack-system",
            "sh.helm.release.v1.gpustack-operator.v3",
            bytes,
        );
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(r.name, "gpustack-operator");
        assert_eq!(r.revision, 3);
        assert_eq!(r.status, "deployed");
        assert_eq!(r.chart_name, "gpustack-operator");
        assert_eq!(r.chart_version, "0.6.1");
        assert_eq!(r.app_version, "0.6.1");
        assert!(r.render().contains("chart version: 0.6.1"));
    }

    #[test]
    fn our_encoder_round_trips_and_plain_json_is_read_too() {
        let json = release_json("r", 1, "1.0.0");
        assert_eq!(
            decode_payload(encode_payload(&json).as_bytes()).ok(),
            Some(json.clone())
        );
        let plain = base64::engine::general_purpose::STANDARD.encode(json.to_string());
        assert_eq!(decode_payload(plain.as_bytes()).ok(), Some(json));
    }

    #[test]
    fn a_malformed_record_names_the_secret() {
        let name = "sh.helm.release.v1.r.v1";
        for (payload, expect) in [
            (Some(&b"%%%"[..]), "not base64"),
            (Some(&b"H4sIAAAA"[..]), "not valid gzip"),
            (None, "no data.release"),
        ] {
            match decode_record(Driver::Secret, "ns", name, payload) {
                Err(e) => {
                    let text = e.to_string();
                    assert!(text.contains("Secret ns/sh.helm.release.v1.r.v1"), "{text}");
                    assert!(text.contains(expect), "{text}");
                }
                Ok(r) => panic!("decoded {r:?}"),
            }
        }
        let other = encode_payload(&release_json("other", 1, "1.0.0"));
        match decode_record(Driver::Secret, "ns", name, Some(other.as_bytes())) {
            Err(e) => assert!(e.to_string().contains("the name says r revision 1"), "{e}"),
            Ok(r) => panic!("decoded {r:?}"),
        }
        match decode_record(Driver::ConfigMap, "ns", "sh.helm.release.v1.r", Some(b"")) {
            Err(e) => assert!(
                e.to_string().contains("ConfigMap ns/sh.helm.release.v1.r"),
                "{e}"
            ),
            Ok(r) => panic!("decoded {r:?}"),
        }
    }

    #[test]
    fn record_names_parse_with_dots_in_the_release() {
        assert_eq!(
            parse_record_name("sh.helm.release.v1.my.app.v12"),
            Some(("my.app".into(), 12))
        );
        assert_eq!(parse_record_name("sh.helm.release.v1.x.vx"), None);
        assert_eq!(parse_record_name("other"), None);
    }

    #[test]
    fn the_latest_revision_wins() {
        let at = |rev: u64, version: &str| {
            let json = release_json("r", rev, version);
            release_from_json(
                &json,
                Driver::Secret,
                &format!("ns/sh.helm.release.v1.r.v{rev}"),
            )
        };
        let all: Vec<Release> = [at(1, "1.0.0"), at(3, "3.0.0"), at(2, "2.0.0")]
            .into_iter()
            .flatten()
            .collect();
        let l = latest(all);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].revision, 3);
        assert_eq!(l[0].chart_version, "3.0.0");
    }
}
