//! `meta.k8s.io/v1` Table output, as kubectl asks for it (`Accept: application/json;as=Table;
//! v=v1;g=meta.k8s.io`): the columns the real server defines for each kind and one row per
//! object, with the object as PartialObjectMetadata (`includeObject=Metadata`, the default),
//! whole (`Object`) or left out (`None`).
//!
//! Facts from kube-apiserver 1.37 (checked against one built here, `live/tests/real_server.rs`):
//! a custom resource shows Name plus its CRD version's `additionalPrinterColumns`, or Name and
//! Age (`date`) when it declares none (apiextensions-apiserver tableconvertor); Nodes,
//! Namespaces and Pods show the columns of pkg/printers/internalversion; a `date` or Age cell
//! is the age in the short form of apimachinery `duration.HumanDuration`; a path with no value
//! is a null cell.

use serde_json::{json, Value};

use super::store::unix_seconds_of;
use crate::wire::kinds::{self, Kind};

/// Whether the Accept header asks for a Table first (before plain JSON).
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        let params: Vec<&str> = first.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One column: its definition and how a cell is read.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub kind: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    cell: Cell,
}

#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Name,
    Age,
    /// A CRD printer column's JSONPath.
    Path(String),
    /// A core kind's computed cell.
    Core(&'static str),
    /// A built-in kind's computed cell that is a JSON value (counts are integers).
    Built(&'static str),
    /// `creationTimestamp` as RFC 3339 (a `date` column: "Created At").
    Created,
}

fn column(name: &str, kind: &str, priority: i64, description: &str, cell: Cell) -> Column {
    Column {
        name: name.into(),
        kind: kind.into(),
        format: if cell == Cell::Name { "name" } else { "" }.into(),
        description: description.into(),
        priority,
        cell,
    }
}

/// The columns of `kind`: its CRD's printer columns when given (a CRD version's
/// `additionalPrinterColumns`), else the kind's defaults.
pub fn columns(kind: &Kind, printer: Option<&[Value]>) -> Vec<Column> {
    let name = || column("Name", "string", 0, NAME_DESCRIPTION, Cell::Name);
    let age = |kind: &str| column("Age", kind, 0, AGE_DESCRIPTION, Cell::Age);
    let core = |n: &str, p: i64, d: &str, c: &'static str| column(n, "string", p, d, Cell::Core(c));
    let built =
        |n: &str, t: &str, p: i64, d: &str, c: &'static str| column(n, t, p, d, Cell::Built(c));
    match *kind {
        k if k == kinds::NODE => vec![
            name(),
            core("Status", 0, "The status of the node", "node-status"),
            core("Roles", 0, "The roles of the node", "node-roles"),
            age("string"),
            core("Version", 0, "Kubelet Version reported by the node.", "node-version"),
            core("Internal-IP", 1, "List of internal IPs in the cluster.", "node-internal-ip"),
            core("External-IP", 1, "List of external IPs in the cluster.", "node-external-ip"),
            core("OS-Image", 1, "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", "node-os-image"),
            core("Kernel-Version", 1, "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", "node-kernel"),
            core("Container-Runtime", 1, "Container Runtime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", "node-runtime"),
        ],
        k if k == kinds::NAMESPACE => vec![
            name(),
            core("Status", 0, "The status of the namespace", "namespace-status"),
            age("string"),
        ],
        k if k == kinds::POD => vec![
            name(),
            core("Ready", 0, "The aggregate readiness state of this pod for accepting traffic.", "pod-ready"),
            core("Status", 0, "The aggregate status of the containers in this pod.", "pod-status"),
            column("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", Cell::Core("pod-restarts")),
            age("string"),
            core("IP", 1, "The IP address assigned to the pod", "pod-ip"),
            core("Node", 1, "The name of the node where the pod is running", "pod-node"),
            core("Nominated Node", 1, "The name of the node where the pod is nominated to run", "pod-nominated"),
            core("Readiness Gates", 1, "The readiness gates of the pod", "pod-gates"),
        ],
        k if k == kinds::SECRET => vec![
            name(),
            built("Type", "string", 0, "The type of the secret", "secret-type"),
            built("Data", "string", 0, "The number of entries in the secret", "secret-data"),
            age("string"),
        ],
        k if k == kinds::CONFIG_MAP => vec![
            name(),
            built("Data", "string", 0, "The number of entries in the config map", "configmap-data"),
            age("string"),
        ],
        k if k == kinds::SERVICE_ACCOUNT => vec![name(), age("string")],
        k if k == kinds::DEPLOYMENT => vec![
            name(),
            built("Ready", "string", 0, "Number of the pod with ready state", "deployment-ready"),
            built("Up-to-date", "string", 0, "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", "deployment-updated"),
            built("Available", "string", 0, "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", "deployment-available"),
            age("string"),
            built("Containers", "string", 1, "Names of each container in the template.", "deployment-containers"),
            built("Images", "string", 1, "Images referenced by each container in the template.", "deployment-images"),
            built("Selector", "string", 1, "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.", "deployment-selector"),
        ],
        k if k == kinds::POD_DISRUPTION_BUDGET => vec![
            name(),
            built("Min Available", "string", 0, "The minimum number of pods that must be available.", "pdb-min"),
            built("Max Unavailable", "string", 0, "The maximum number of pods that may be unavailable.", "pdb-max"),
            built("Allowed Disruptions", "integer", 0, "Calculated number of pods that may be disrupted at this time.", "pdb-allowed"),
            age("string"),
        ],
        k if k == kinds::VALIDATING_WEBHOOK_CONFIGURATION
            || k == kinds::MUTATING_WEBHOOK_CONFIGURATION =>
        {
            vec![
                name(),
                built("Webhooks", "integer", 0, "Webhooks indicates the number of webhooks registered in this configuration", "webhooks"),
                age("string"),
            ]
        }
        k if k == kinds::API_SERVICE => vec![
            name(),
            built("Service", "string", 0, "The reference to the service that hosts this API endpoint.", "apiservice-service"),
            built("Available", "string", 0, "Whether this service is available.", "apiservice-available"),
            age("string"),
        ],
        k if k == kinds::LEASE => vec![
            name(),
            built("Holder", "string", 0, "The holder of the lease.", "lease-holder"),
            age("string"),
        ],
        k if k == kinds::CUSTOM_RESOURCE_DEFINITION => vec![
            name(),
            built("Scope", "string", 0, "The scope of the resources the definition serves.", "crd-scope"),
            built("Versions", "string", 0, "The versions served, the storage one marked.", "crd-versions"),
            column("Created At", "date", 0, AGE_DESCRIPTION, Cell::Created),
            built("Group", "string", 1, "The API group of the resources.", "crd-group"),
            built("Kind", "string", 1, "The kind of the resources.", "crd-kind"),
            built("ShortNames", "string", 1, "The short names of the resources.", "crd-short-names"),
            built("Established", "boolean", 1, "Whether the resources are served.", "crd-established"),
        ],
        k if k == kinds::CLUSTER_ROLE => vec![
            name(),
            column("Created At", "date", 0, AGE_DESCRIPTION, Cell::Created),
        ],
        k if k == kinds::CLUSTER_ROLE_BINDING => vec![
            name(),
            built("Role", "string", 0, "The role of the binding.", "binding-role"),
            age("string"),
        ],
        _ => match printer.filter(|p| !p.is_empty()) {
            Some(printer) => std::iter::once(name())
                .chain(printer.iter().map(printer_column))
                .collect(),
            None => vec![name(), age("date")],
        },
    }
}

fn printer_column(p: &Value) -> Column {
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let path = text("jsonPath");
    let cell = if path == ".metadata.creationTimestamp" {
        Cell::Age
    } else {
        Cell::Path(path)
    };
    Column {
        name: text("name"),
        kind: text("type"),
        format: text("format"),
        description: text("description"),
        priority: p.get("priority").and_then(Value::as_i64).unwrap_or(0),
        cell,
    }
}

/// How rows carry their object (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(query: Option<&str>) -> Include {
        match query {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

/// The Table of `objects` (each a whole object), `now_unix` the server's time for ages.
pub fn table(
    columns: &[Column],
    objects: &[Value],
    resource_version: &str,
    include: Include,
    now_unix: i64,
) -> Value {
    let definitions: Vec<Value> = columns
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.kind, "format": c.format,
                   "description": c.description, "priority": c.priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells: Vec<Value> = columns.iter().map(|c| cell(&c.cell, o, now_unix)).collect();
            let mut row = json!({"cells": cells});
            match include {
                Include::None => {}
                Include::Object => row["object"] = o.clone(),
                Include::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"].clone()})
                }
            }
            row
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
           "metadata": {"resourceVersion": resource_version},
           "columnDefinitions": definitions, "rows": rows})
}

fn cell(c: &Cell, o: &Value, now: i64) -> Value {
    match c {
        Cell::Name => o["metadata"]["name"].clone(),
        Cell::Age => json!(age(o["metadata"]["creationTimestamp"].as_str(), now)),
        Cell::Path(p) => json_path(o, p).cloned().unwrap_or(Value::Null),
        Cell::Core(which) => json!(core_cell(which, o)),
        Cell::Built(which) => built_cell(which, o),
        Cell::Created => o["metadata"]["creationTimestamp"].clone(),
    }
}

/// The cells of the built-in kinds' columns (pkg/printers/internalversion printers.go).
fn built_cell(which: &str, o: &Value) -> Value {
    let count = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_object)
            .map_or(0, |m| m.len())
    };
    let int = |p: &str| o.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let text_or = |p: &str, none: &str| match o.pointer(p) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => none.to_string(),
    };
    let containers = || -> Vec<Value> {
        o.pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let join = |field: &str| {
        containers()
            .iter()
            .filter_map(|c| c[field].as_str().map(str::to_string))
            .collect::<Vec<_>>()
            .join(",")
    };
    match which {
        "secret-type" => json!(text_or("/type", "")),
        "secret-data" => json!(count("/data")),
        "configmap-data" => json!(count("/data") + count("/binaryData")),
        "deployment-ready" => json!(format!(
            "{}/{}",
            int("/status/readyReplicas"),
            o.pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1)
        )),
        "deployment-updated" => json!(int("/status/updatedReplicas")),
        "deployment-available" => json!(int("/status/availableReplicas")),
        "deployment-containers" => json!(join("name")),
        "deployment-images" => json!(join("image")),
        "deployment-selector" => {
            let labels = o
                .pointer("/spec/selector/matchLabels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let shown: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            json!(if shown.is_empty() {
                "<none>".to_string()
            } else {
                shown.join(",")
            })
        }
        "pdb-min" => json!(text_or("/spec/minAvailable", "N/A")),
        "pdb-max" => json!(text_or("/spec/maxUnavailable", "N/A")),
        "pdb-allowed" => json!(int("/status/disruptionsAllowed")),
        "webhooks" => json!(o["webhooks"].as_array().map_or(0, Vec::len)),
        "apiservice-service" => match o.pointer("/spec/service/name") {
            Some(Value::String(name)) => json!(format!(
                "{}/{name}",
                o.pointer("/spec/service/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )),
            _ => json!("Local"),
        },
        "apiservice-available" => {
            let available = o["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Available");
            match available {
                Some(c) if c["status"] == "True" => json!("True"),
                Some(c) => json!(format!(
                    "{} ({})",
                    c["status"].as_str().unwrap_or(""),
                    c["reason"].as_str().unwrap_or("")
                )),
                None => json!("Unknown"),
            }
        }
        "crd-scope" => json!(text_or("/spec/scope", "")),
        "crd-versions" => {
            let shown: Vec<String> = o
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|v| {
                    let name = v["name"].as_str().unwrap_or("");
                    if v["storage"] == true {
                        format!("{name}(storage)")
                    } else {
                        name.to_string()
                    }
                })
                .collect();
            json!(shown.join(","))
        }
        "crd-group" => json!(text_or("/spec/group", "")),
        "crd-kind" => json!(text_or("/spec/names/kind", "")),
        "crd-short-names" => {
            let names: Vec<&str> = o
                .pointer("/spec/names/shortNames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            json!(names.join(","))
        }
        "crd-established" => json!(o["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True")),
        "lease-holder" => json!(text_or("/spec/holderIdentity", "<none>")),
        "binding-role" => json!(format!(
            "{}/{}",
            o.pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or(""),
            o.pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("")
        )),
        _ => Value::Null,
    }
}

/// A printer column's JSONPath: `.a.b`, with `[n]` indexes and `[?(@.k=="v")]` filters.
fn json_path<'a>(o: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = o;
    let mut rest = path.trim_start_matches('{').trim_end_matches('}');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            at = at.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(['"', '\'']);
                at = at
                    .as_array()?
                    .iter()
                    .find(|e| e.get(key.trim()).and_then(Value::as_str) == Some(want))?;
            } else {
                at = at.get(inner.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(at)
}

fn core_cell(which: &str, o: &Value) -> String {
    let none = || "<none>".to_string();
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_string);
    match which {
        "node-status" => {
            let ready = o["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Ready")
                .and_then(|c| c["status"].as_str());
            let mut s = match ready {
                Some("True") => "Ready",
                Some(_) => "NotReady",
                None => "Unknown",
            }
            .to_string();
            if o["spec"]["unschedulable"] == true {
                s.push_str(",SchedulingDisabled");
            }
            s
        }
        "node-roles" => {
            let labels = o["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let mut roles: Vec<String> = labels
                .iter()
                .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
                    Some(r) if !r.is_empty() => Some(r.to_string()),
                    _ if k == "kubernetes.io/role" => v.as_str().map(str::to_string),
                    _ => None,
                })
                .collect();
            roles.sort();
            roles.dedup();
            if roles.is_empty() {
                none()
            } else {
                roles.join(",")
            }
        }
        "node-version" => text("/status/nodeInfo/kubeletVersion").unwrap_or_default(),
        "node-internal-ip" | "node-external-ip" => {
            let want = if which == "node-internal-ip" {
                "InternalIP"
            } else {
                "ExternalIP"
            };
            o["status"]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["type"] == want)
                .and_then(|a| a["address"].as_str())
                .map_or_else(none, str::to_string)
        }
        "node-os-image" => text("/status/nodeInfo/osImage").unwrap_or_else(|| "<unknown>".into()),
        "node-kernel" => {
            text("/status/nodeInfo/kernelVersion").unwrap_or_else(|| "<unknown>".into())
        }
        "node-runtime" => {
            text("/status/nodeInfo/containerRuntimeVersion").unwrap_or_else(|| "<unknown>".into())
        }
        "namespace-status" => text("/status/phase").unwrap_or_default(),
        "pod-ready" => {
            let containers = o["spec"]["containers"].as_array().map_or(0, Vec::len);
            let ready = o["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["ready"] == true)
                .count();
            format!("{ready}/{containers}")
        }
        "pod-status" => text("/status/reason")
            .or_else(|| text("/status/phase"))
            .unwrap_or_else(|| "Pending".into()),
        "pod-restarts" => {
            let n: i64 = o["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["restartCount"].as_i64())
                .sum();
            n.to_string()
        }
        "pod-ip" => text("/status/podIP").unwrap_or_else(none),
        "pod-node" => text("/spec/nodeName").unwrap_or_else(none),
        "pod-nominated" => text("/status/nominatedNodeName").unwrap_or_else(none),
        "pod-gates" => none(),
        _ => String::new(),
    }
}

/// The age since an RFC 3339 time, as `duration.HumanDuration` prints it; `<unknown>`
/// without one.
fn age(created: Option<&str>, now: i64) -> String {
    match created.and_then(unix_seconds_of) {
        Some(t) => human_duration(now - i64::try_from(t).unwrap_or(i64::MAX)),
        None => "<unknown>".into(),
    }
}

/// apimachinery `duration.HumanDuration`, in whole seconds.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The printer columns of a CRD's storage version (empty when it declares none).
pub fn crd_printer_columns(crd: &Value) -> Vec<Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_print_as_the_apiserver_prints_them() {
        for (s, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (59, "59s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (9 * 3600, "9h"),
            (50 * 3600, "2d2h"),
            (10 * 86_400, "10d"),
            (3 * 365 * 86_400 + 86_400, "3y1d"),
        ] {
            assert_eq!(human_duration(s), want, "{s} s");
        }
        assert_eq!(unix_seconds_of("1970-01-02T00:00:10Z"), Some(86_410));
        assert_eq!(unix_seconds_of("2026-12-02T03:08:19Z"), Some(1_796_180_899));
    }

    #[test]
    fn kubectl_accept_headers_ask_for_a_table() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
        assert!(!wants_table(
            "application/json, application/json;as=Table;v=v1;g=meta.k8s.io"
        ));
    }

    #[test]
    fn a_crd_without_printer_columns_shows_name_and_age() {
        let it = columns(&kinds::INSTANCE_TYPE, None);
        let names: Vec<(&str, &str)> = it
            .iter()
            .map(|c| (c.name.as_str(), c.kind.as_str()))
            .collect();
        assert_eq!(names, [("Name", "string"), ("Age", "date")]);
        let printer = vec![
            json!({"name": "Cohort", "type": "string", "jsonPath": ".spec.cohortName"}),
            json!({"name": "Active", "type": "string", "priority": 1,
                   "jsonPath": ".status.conditions[?(@.type==\"Active\")].status"}),
        ];
        let cq = columns(&kinds::CLUSTER_QUEUE, Some(&printer));
        let o = json!({"metadata": {"name": "q", "creationTimestamp": "1970-01-01T00:00:00Z"},
                       "status": {"conditions": [{"type": "Active", "status": "True"}]}});
        let t = table(&cq, &[o], "7", Include::None, 30);
        assert_eq!(t["rows"][0]["cells"], json!(["q", null, "True"]));
        assert_eq!(t["columnDefinitions"][2]["priority"], 1);
    }
}
