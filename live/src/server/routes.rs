//! The REST mapping of the Kubernetes API onto the store: which path addresses what
//! (k8s.io/apiserver pkg/endpoints/installer.go), which verb a method and query make, how a
//! PATCH's Content-Type picks the patch type (pkg/endpoints/handlers/patch.go), and the
//! response code of each verb. Pure: no sockets; the server feeds it one request at a time
//! and streams the [`WatchRequest`]s it returns.

use std::time::Duration;

use serde_json::{json, Value};

use super::discovery;
use super::selector::Selector;
use super::status::Status;
use super::store::{
    manager_or_user_agent, ApplyRequest, DeleteOptions, Deleted, Patch, Store, Subresource,
};
use super::table;
use crate::wire::kinds::Kind;

/// The default (and the longest) watch a client gets when it sends no `timeoutSeconds`.
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/version`
    Version,
    /// `/api`
    ApiVersions,
    /// `/apis`
    GroupList,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`
    ResourceList { group: String, version: String },
    /// A collection, an object or an object's `/status`.
    Resource(ResourcePath),
}

/// A resource path: kind, namespace (from `/namespaces/{ns}/`), name, and `/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub status: bool,
}

/// One request as the router sees it.
#[derive(Debug, Clone, Copy)]
pub struct ApiRequest<'a> {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, …
    pub method: &'a str,
    /// The path, not yet percent-decoded.
    pub path: &'a str,
    /// The raw query string (no `?`).
    pub query: &'a str,
    /// The `Content-Type` header ("" when absent).
    pub content_type: &'a str,
    /// The `Host` header, echoed in `/api`'s `serverAddressByClientCIDRs`.
    pub host: &'a str,
    /// The `User-Agent` header ("" when absent): a write without `?fieldManager=` is
    /// recorded under its prefix.
    pub user_agent: &'a str,
    /// The `Accept` header ("" when absent): kubectl asks for a Table.
    pub accept: &'a str,
    pub body: &'a [u8],
}

/// A watch to stream: what to watch and from where.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub selector: Selector,
    /// 0: from "now", starting with synthetic ADDED events for the current objects.
    pub resource_version: u64,
    pub allow_bookmarks: bool,
    /// `sendInitialEvents=true`: ADDED for the current objects, then a BOOKMARK annotated
    /// `k8s.io/initial-events-end`.
    pub send_initial_events: bool,
    pub timeout: Duration,
}

/// The router's answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An HTTP code and a JSON body.
    Json(u16, Value),
    /// A watch stream (HTTP 200, chunked JSON lines).
    Watch(Box<WatchRequest>),
    /// An HTTP code and a plain-text body (the apiserver's catch-all handler).
    Text(u16, String),
}

impl Reply {
    fn ok(code: u16, v: Value) -> Self {
        Reply::Json(code, v)
    }
}

impl From<Status> for Reply {
    fn from(s: Status) -> Self {
        Reply::Json(s.http_code(), s.to_value())
    }
}

/// The query parameters of a request, percent-decoded.
#[derive(Debug, Clone, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parses `a=b&c=d` (form-urlencoded, as Go's `url.ParseQuery`).
    pub fn parse(raw: &str) -> Self {
        Query(
            form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean parameter: `true`/`1` (Go's strconv.ParseBool also takes `t`, `T`, `TRUE`).
    pub fn flag(&self, name: &str) -> bool {
        matches!(
            self.get(name),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }
}

/// 404 for a path the server does not serve.
fn not_served(path: &str) -> Status {
    Status::no_such_resource(&format!("get {path}"))
}

/// 405 MethodNotAllowed for a verb the resource does not allow.
pub fn method_not_allowed() -> Status {
    Status::failure(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        None,
    )
}

/// Decodes one percent-encoded path segment.
fn decode_segment(s: &str) -> String {
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// What `path` addresses among `kinds` (installer.go's routes).
pub fn parse_path(kinds: &[Kind], path: &str) -> Result<Target, Status> {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode_segment)
        .collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["version"] => Ok(Target::Version),
        ["api"] => Ok(Target::ApiVersions),
        ["apis"] => Ok(Target::GroupList),
        ["api", version] => Ok(Target::ResourceList {
            group: String::new(),
            version: version.to_string(),
        }),
        ["apis", group] => Ok(Target::Group(group.to_string())),
        ["apis", group, version] => Ok(Target::ResourceList {
            group: group.to_string(),
            version: version.to_string(),
        }),
        ["api", version, rest @ ..] => resource_path(kinds, "", version, rest, path),
        ["apis", group, version, rest @ ..] => resource_path(kinds, group, version, rest, path),
        _ => Err(not_served(path)),
    }
}

/// The resource addressed by the segments after the group version.
fn resource_path(
    kinds: &[Kind],
    group: &str,
    version: &str,
    rest: &[&str],
    path: &str,
) -> Result<Target, Status> {
    // `/namespaces/{ns}/{plural}…` is namespaced unless it is the Namespace's own `/status`.
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..] if *plural != "status" => {
            (Some(ns.to_string()), [&[*plural][..], tail].concat())
        }
        other => (None, other.to_vec()),
    };
    let (plural, name, status) = match rest.as_slice() {
        [plural] => (*plural, None, false),
        [plural, name] => (*plural, Some(name.to_string()), false),
        [plural, name, "status"] => (*plural, Some(name.to_string()), true),
        _ => return Err(not_served(path)),
    };
    let kind = kinds
        .iter()
        .find(|k| k.group == group && k.version == version && k.plural == plural)
        .copied()
        .ok_or_else(|| not_served(path))?;
    // a cluster-scoped kind has no namespaced path, a namespaced kind has only the
    // cross-namespace collection without one
    if (namespace.is_some() && !kind.namespaced)
        || (namespace.is_none() && kind.namespaced && name.is_some())
    {
        return Err(not_served(path));
    }
    if status && !kind.has_status {
        return Err(not_served(path));
    }
    Ok(Target::Resource(ResourcePath {
        kind,
        namespace,
        name,
        status,
    }))
}

/// The Kubernetes verb of a request and the resource it counts against (the plural,
/// `plural/status` for the subresource; the path itself for discovery), as the apiserver's
/// request info names them (k8s.io/apiserver pkg/endpoints/request/requestinfo.go).
pub fn request_verb(
    method: &str,
    target: &Target,
    query: &Query,
    path: &str,
) -> (&'static str, String) {
    let Target::Resource(r) = target else {
        return ("get", path.to_string());
    };
    let verb = match (method, r.name.is_some()) {
        ("GET", false) if query.flag("watch") => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => "other",
    };
    let resource = if r.status {
        format!("{}/status", r.kind.plural)
    } else {
        r.kind.plural.to_string()
    };
    (verb, resource)
}

/// Where a client asks what it may do (authorization.k8s.io/v1 SelfSubjectAccessReview).
pub const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// A SelfSubjectAccessReview answered as an API server without RBAC answers it: allowed.
fn access_review(req: &ApiRequest) -> Reply {
    if req.method != "POST" {
        return method_not_allowed().into();
    }
    match decode_body(req) {
        Ok(mut review) => {
            review["status"] = serde_json::json!({
                "allowed": true,
                "reason": "the embedded twin has no RBAC: every request is allowed",
            });
            Reply::ok(201, review)
        }
        Err(s) => s.into(),
    }
}

/// Answers one request against `store`.
pub fn handle(store: &mut Store, req: &ApiRequest) -> Reply {
    if req.path == ACCESS_REVIEWS {
        return access_review(req);
    }
    if let Some(rest) = req.path.strip_prefix("/openapi/v3") {
        return openapi(store.kinds(), rest, req.method);
    }
    if unserved_group(store.kinds(), req.path).is_some() {
        // no API group of that name: the request falls through every group's handler to
        // the apiserver's catch-all, which answers Go's plain 404 (no Status)
        return Reply::Text(404, "404 page not found\n".to_string());
    }
    let target = match parse_path(store.kinds(), req.path) {
        Ok(t) => t,
        Err(s) => return s.into(),
    };
    let discovery = |doc: Option<Value>| match (req.method, doc) {
        ("GET", Some(v)) => Reply::ok(200, v),
        ("GET", None) => not_served(req.path).into(),
        _ => method_not_allowed().into(),
    };
    match target {
        Target::Version => discovery(Some(discovery::version_info())),
        Target::ApiVersions => {
            let host = if req.host.is_empty() {
                "127.0.0.1"
            } else {
                req.host
            };
            discovery(Some(discovery::api_versions(host)))
        }
        Target::GroupList => discovery(Some(discovery::api_group_list(store.kinds()))),
        Target::Group(g) => discovery(discovery::api_group(store.kinds(), &g)),
        Target::ResourceList { group, version } => discovery(discovery::api_resource_list_named(
            store.kinds(),
            &group,
            &version,
            |k| store.runtime_names(k),
        )),
        Target::Resource(r) => match resource(store, &r, req) {
            Ok(reply) => reply,
            Err(s) => s.into(),
        },
    }
}

/// `GET /openapi/v3[/api/v1|/apis/{group}/{version}]` (see [`super::openapi`]).
fn openapi(kinds: &[Kind], rest: &str, method: &str) -> Reply {
    if method != "GET" {
        return method_not_allowed().into();
    }
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let doc = match parts.as_slice() {
        [] => Some(super::openapi::index(kinds)),
        ["api", version] => super::openapi::document(kinds, "", version),
        ["apis", group, version] => super::openapi::document(kinds, group, version),
        _ => None,
    };
    match doc {
        Some(d) => Reply::ok(200, d),
        None => Reply::Text(404, "404 page not found\n".to_string()),
    }
}

/// The group of an `/apis/{group}…` path when no served kind is in it.
fn unserved_group<'a>(kinds: &[Kind], path: &'a str) -> Option<&'a str> {
    let group = path.strip_prefix("/apis/")?.split('/').next()?;
    if group.is_empty() || kinds.iter().any(|k| k.group == group) {
        return None;
    }
    Some(group)
}

/// The verb on a resource path.
fn resource(store: &mut Store, r: &ResourcePath, req: &ApiRequest) -> Result<Reply, Status> {
    let query = Query::parse(req.query);
    let ns = r.namespace.as_deref();
    let kind = &r.kind;
    let mut dry: Vec<String> = query
        .get("dryRun")
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .into_iter()
        .collect();
    if req.method == "DELETE" {
        dry.extend(body_dry_run(req.body));
    }
    if !dry.is_empty() {
        let values: Vec<&str> = dry.iter().map(String::as_str).collect();
        check_dry_run(req.method, &values)?;
        if req.method == "GET" {
            return resource_now(store, r, req, &query);
        }
        let name = r.name.clone();
        let written = store.dry_run(kind, ns, name.as_deref(), |store| {
            match resource_now(store, r, req, &query)? {
                Reply::Json(_, body) => Ok(body),
                _ => Err(Status::bad_request("a dry run answers with an object")),
            }
        })?;
        let code = if req.method == "POST" { 201 } else { 200 };
        return Ok(Reply::ok(code, written));
    }
    resource_now(store, r, req, &query)
}

/// A list cut to `?limit=` items from `?continue=` on (apiserver chunking): `continue` names
/// where the next page starts, `remainingItemCount` how many follow when no selector
/// narrowed the list. Items are in key order (namespace, name) as etcd keeps them. A
/// continuation reads the store as it is now, not as it was at the first page.
fn page(list: &mut Value, query: &Query) -> Result<(), Status> {
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => 0,
        Some(l) => l
            .parse::<usize>()
            .map_err(|_| Status::bad_request(format!("invalid limit: {l:?}")))?,
    };
    let start = match query.get("continue").filter(|c| !c.is_empty()) {
        None => None,
        Some(token) => Some(continue_start(token).ok_or_else(|| {
            Status::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        })?),
    };
    let key = |o: &Value| {
        let text = |k: &str| o["metadata"][k].as_str().unwrap_or("").to_string();
        format!("{}/{}", text("namespace"), text("name"))
    };
    let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    items.sort_by_key(key);
    if let Some(start) = &start {
        items.retain(|o| key(o).as_str() > start.as_str());
    }
    if limit == 0 || items.len() <= limit {
        return Ok(());
    }
    let rest = items.split_off(limit);
    let next = items.last().map(key).unwrap_or_default();
    let narrowed = ["labelSelector", "fieldSelector"]
        .iter()
        .any(|k| query.get(k).is_some_and(|v| !v.is_empty()));
    let meta = &mut list["metadata"];
    meta["continue"] = Value::String(continue_token(&next));
    if !narrowed {
        meta["remainingItemCount"] = Value::from(rest.len());
    }
    Ok(())
}

/// An opaque continue token: the last key served, hex-encoded.
fn continue_token(last_key: &str) -> String {
    last_key.bytes().map(|b| format!("{b:02x}")).collect()
}

fn continue_start(token: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// `objects` as the Table kubectl asks for (the kind's columns, `?includeObject=`).
fn as_table(store: &Store, kind: &Kind, objects: &[Value], rv: &str, query: &Query) -> Value {
    let columns = table::columns(kind, store.printer_columns(kind));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let include = table::Include::parse(query.get("includeObject"));
    table::table(&columns, objects, rv, include, now)
}

/// `dryRun` accepts `All` only (apimachinery validation `ValidateDryRun`): 422 otherwise.
fn check_dry_run(method: &str, values: &[&str]) -> Result<(), Status> {
    match values.iter().find(|v| **v != "All") {
        None => Ok(()),
        Some(bad) => {
            let options = match method {
                "POST" => "CreateOptions",
                "PUT" => "UpdateOptions",
                "PATCH" => "PatchOptions",
                _ => "DeleteOptions",
            };
            Err(Status::failure(
                422,
                "Invalid",
                format!(
                    "{options}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [{bad:?}]: supported values: \"All\""
                ),
                None,
            ))
        }
    }
}

/// The verb on a resource path, persisted.
fn resource_now(
    store: &mut Store,
    r: &ResourcePath,
    req: &ApiRequest,
    query: &Query,
) -> Result<Reply, Status> {
    let ns = r.namespace.as_deref();
    let kind = &r.kind;
    let query = query.clone();
    let sub = if r.status {
        Subresource::Status
    } else {
        Subresource::Main
    };
    match (req.method, r.name.as_deref()) {
        ("GET", None) if query.flag("watch") => {
            Ok(Reply::Watch(Box::new(watch_request(kind, ns, &query)?)))
        }
        ("GET", None) => {
            let selector = selector_of(&query)?;
            let list = store.list(kind, ns, &selector)?;
            let mut value = list.to_value(kind);
            page(&mut value, &query)?;
            if table::wants_table(req.accept) {
                let items = value["items"].as_array().cloned().unwrap_or_default();
                let rv = value["metadata"]["resourceVersion"].as_str().unwrap_or("");
                return Ok(Reply::ok(200, as_table(store, kind, &items, rv, &query)));
            }
            Ok(Reply::ok(200, value))
        }
        ("POST", None) if kind.namespaced && ns.is_none() => Err(method_not_allowed()),
        ("POST", None) => {
            let body = decode_body(req)?;
            check_field_validation(store, kind, "CreateOptions", &query, &body)?;
            let manager = writer(&query, req);
            Ok(Reply::ok(201, store.create_by(kind, ns, body, &manager)?))
        }
        ("GET", Some(name)) => {
            let object = store.get(kind, ns, name)?;
            if table::wants_table(req.accept) && !r.status {
                let rv = object["metadata"]["resourceVersion"].as_str().unwrap_or("");
                let t = as_table(store, kind, std::slice::from_ref(&object), rv, &query);
                return Ok(Reply::ok(200, t));
            }
            Ok(Reply::ok(200, object))
        }
        ("PUT", Some(name)) => {
            let body = decode_body(req)?;
            check_body_names(kind, ns, name, &body)?;
            check_field_validation(store, kind, "UpdateOptions", &query, &body)?;
            let manager = writer(&query, req);
            let updated = match sub {
                Subresource::Main => store.update_by(kind, ns, body, &manager)?,
                Subresource::Status => store.update_status_by(kind, ns, body, &manager)?,
            };
            Ok(Reply::ok(200, updated))
        }
        ("PATCH", Some(name)) => patch(store, kind, ns, name, sub, &query, req),
        ("DELETE", Some(name)) if !r.status => {
            let options = delete_options(&query, req.body)?;
            let code = 200;
            match store.delete(kind, ns, name, &options)? {
                Deleted::Removed(last) if returns_status_on_delete(kind) => {
                    Ok(Reply::ok(code, delete_success(kind, name, &last)))
                }
                done => Ok(Reply::ok(code, done.object().clone())),
            }
        }
        _ => Err(method_not_allowed()),
    }
}

/// `?fieldValidation=`: `""`, `Ignore`, `Warn` or `Strict`, else 422 (apimachinery
/// `ValidateFieldValidation`); `Strict` refuses an object with fields its schema would prune,
/// 400 as the strict decoder answers ("… strict decoding error: unknown field …"). The twin
/// knows the fields of the kinds it has a schema of (custom resources); a built-in kind's
/// unknown fields are pruned silently, as `Ignore` would.
fn check_field_validation(
    store: &Store,
    kind: &Kind,
    options: &str,
    query: &Query,
    body: &Value,
) -> Result<(), Status> {
    let directive = query.get("fieldValidation").unwrap_or("");
    if !matches!(directive, "" | "Ignore" | "Warn" | "Strict") {
        return Err(Status::failure(
            422,
            "Invalid",
            format!(
                "{options}.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: {directive:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
            ),
            None,
        ));
    }
    if directive != "Strict" {
        return Ok(());
    }
    let unknown = store.unknown_fields(kind, body);
    if unknown.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    Err(Status::bad_request(format!(
        "{k} in version {v:?} cannot be handled as a {k}: strict decoding error: {}",
        named.join(", "),
        k = kind.kind,
        v = kind.version
    )))
}

/// The manager of a create, update or non-apply patch: `?fieldManager=`, else the
/// User-Agent's prefix (handlers/create.go, update.go, patch.go `managerOrUserAgent`). An
/// apply takes `fieldManager` only: it is required there.
fn writer(query: &Query, req: &ApiRequest) -> String {
    manager_or_user_agent(query.get("fieldManager"), req.user_agent)
}

/// The label and field selectors of a list or watch.
fn selector_of(query: &Query) -> Result<Selector, Status> {
    Selector::parse(
        query.get("labelSelector").unwrap_or(""),
        query.get("fieldSelector").unwrap_or(""),
    )
}

/// A `resourceVersion` query parameter: "" and "0" mean "any" (0).
fn resource_version_of(query: &Query) -> Result<u64, Status> {
    match query.get("resourceVersion").unwrap_or("") {
        "" => Ok(0),
        rv => rv
            .parse()
            .map_err(|_| Status::bad_request(format!("invalid resource version: {rv:?}"))),
    }
}

/// The watch a `?watch=true` list asks for.
fn watch_request(kind: &Kind, ns: Option<&str>, query: &Query) -> Result<WatchRequest, Status> {
    let timeout = match query.get("timeoutSeconds") {
        None | Some("") => DEFAULT_WATCH_TIMEOUT,
        Some(t) => t
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| Status::bad_request(format!("invalid timeoutSeconds: {t:?}")))?
            .min(DEFAULT_WATCH_TIMEOUT),
    };
    Ok(WatchRequest {
        kind: *kind,
        namespace: ns.map(str::to_string),
        selector: selector_of(query)?,
        resource_version: resource_version_of(query)?,
        allow_bookmarks: query.flag("allowWatchBookmarks"),
        send_initial_events: query.flag("sendInitialEvents"),
        timeout,
    })
}

/// The request body as JSON (YAML for `application/yaml`): 400 when it does not parse.
fn decode_body(req: &ApiRequest) -> Result<Value, Status> {
    match media_type(req.content_type) {
        "application/yaml" | "application/apply-patch+yaml" => decode_yaml(req.body),
        _ => serde_json::from_slice(req.body)
            .map_err(|e| Status::bad_request(format!("the request body is not valid JSON: {e}"))),
    }
}

/// YAML (of which JSON is a subset) as a JSON value.
fn decode_yaml(body: &[u8]) -> Result<Value, Status> {
    serde_norway::from_slice(body)
        .map_err(|e| Status::bad_request(format!("the request body is not valid YAML: {e}")))
}

/// The media type of a Content-Type header, without parameters (`; charset=utf-8`).
fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

/// 400 when an update's body names another object than its URL (handlers/update.go).
fn check_body_names(kind: &Kind, ns: Option<&str>, name: &str, body: &Value) -> Result<(), Status> {
    let meta = body.get("metadata");
    let body_name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    if body_name != Some(name) {
        return Err(Status::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            body_name.unwrap_or("")
        )));
    }
    let body_ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if kind.namespaced && body_ns.is_some_and(|b| Some(b) != ns) {
        return Err(Status::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// The patch types a kind accepts, as the 415 message lists them.
fn accepted_patch_types(kind: &Kind) -> &'static str {
    if kind.is_custom() {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    }
}

/// 415 UnsupportedMediaType for a patch type the kind does not accept (patch.go).
fn unsupported_patch(kind: &Kind, content_type: &str) -> Status {
    Status::failure(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}{}",
            accepted_patch_types(kind),
            if media_type(content_type) == "application/strategic-merge-patch+json" {
                " (strategic merge patch is not supported for custom resources)"
            } else {
                ""
            }
        ),
        None,
    )
}

/// PATCH by Content-Type: merge, JSON, apply (SSA), strategic (built-in kinds only).
fn patch(
    store: &mut Store,
    kind: &Kind,
    ns: Option<&str>,
    name: &str,
    sub: Subresource,
    query: &Query,
    req: &ApiRequest,
) -> Result<Reply, Status> {
    let media = media_type(req.content_type);
    if media != "application/apply-patch+yaml" && query.get("force").is_some() {
        return Err(Status::failure(
            422,
            "Invalid",
            "force: Forbidden: may not be specified for non-apply patch",
            None,
        ));
    }
    let json_body = || {
        serde_json::from_slice::<Value>(req.body)
            .map_err(|e| Status::bad_request(format!("the patch is not valid JSON: {e}")))
    };
    let manager = writer(query, req);
    let patched = match media {
        "application/merge-patch+json" => {
            store.patch_by(kind, ns, name, sub, &Patch::Merge(json_body()?), &manager)?
        }
        "application/json-patch+json" => {
            store.patch_by(kind, ns, name, sub, &Patch::Json(json_body()?), &manager)?
        }
        "application/strategic-merge-patch+json" if !kind.is_custom() => store.patch_by(
            kind,
            ns,
            name,
            sub,
            &Patch::Strategic(json_body()?),
            &manager,
        )?,
        "application/apply-patch+yaml" => {
            let config = decode_yaml(req.body)?;
            let manager = query.get("fieldManager").unwrap_or("");
            let existed = store.get(kind, ns, name).is_ok();
            let applied = store.apply(ApplyRequest {
                kind,
                namespace: ns,
                name,
                subresource: sub,
                config,
                field_manager: manager,
                force: query.flag("force"),
            })?;
            return Ok(Reply::ok(if existed { 200 } else { 201 }, applied));
        }
        _ => return Err(unsupported_patch(kind, req.content_type)),
    };
    Ok(Reply::ok(200, patched))
}

/// Kinds whose immediate delete answers a `Status` `Success` rather than the object: the
/// generic registry's default (`ReturnDeletedObject` false); pods, namespaces,
/// ServiceAccounts and custom resources return the object (their registries set it).
fn returns_status_on_delete(kind: &Kind) -> bool {
    let returns_object = kind.is_custom()
        || (kind.group.is_empty() && matches!(kind.kind, "Pod" | "Namespace" | "ServiceAccount"));
    !returns_object
}

/// The `Status` `Success` of an immediate delete (registry/store.go Delete).
fn delete_success(kind: &Kind, name: &str, last: &Value) -> Value {
    let uid = last
        .pointer("/metadata/uid")
        .cloned()
        .unwrap_or(Value::Null);
    let mut details = json!({"name": name, "kind": kind.plural, "uid": uid});
    if let (false, Some(d)) = (kind.group.is_empty(), details.as_object_mut()) {
        d.insert("group".into(), json!(kind.group));
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// The `dryRun` of a DeleteOptions body (kubectl's `delete --dry-run=server` sends it there).
fn body_dry_run(body: &[u8]) -> Vec<String> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|b| b.get("dryRun").cloned())
        .and_then(|d| d.as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// `DeleteOptions` from the body (if any) and the query (`propagationPolicy`).
fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, Status> {
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| Status::bad_request(format!("invalid DeleteOptions: {e}")))?
    };

    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let orphan_dependents = body.get("orphanDependents").and_then(Value::as_bool);
    let propagation_policy = text(body.get("propagationPolicy"))
        .or_else(|| query.get("propagationPolicy").map(str::to_string))
        .or_else(|| orphan_dependents.map(|o| if o { "Orphan" } else { "Background" }.to_string()));
    Ok(DeleteOptions {
        propagation_policy,
        resource_version: text(body.pointer("/preconditions/resourceVersion")),
        uid: text(body.pointer("/preconditions/uid")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::store::manager_from_user_agent;
    use crate::wire::kinds::{ALL, DEVICES, NAMESPACE, NODE, WORKLOAD};

    fn target(path: &str) -> Result<Target, u16> {
        parse_path(&ALL, path).map_err(|s| s.code)
    }

    fn res(kind: Kind, ns: Option<&str>, name: Option<&str>, status: bool) -> Result<Target, u16> {
        Ok(Target::Resource(ResourcePath {
            kind,
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
            status,
        }))
    }

    #[test]
    fn paths_resolve_scope_and_subresource() {
        assert_eq!(target("/api/v1/nodes"), res(NODE, None, None, false));
        assert_eq!(
            target("/api/v1/nodes/n1/status"),
            res(NODE, None, Some("n1"), true)
        );
        assert_eq!(
            target("/api/v1/namespaces/team"),
            res(NAMESPACE, None, Some("team"), false)
        );
        assert_eq!(
            target("/api/v1/namespaces/team/status"),
            res(NAMESPACE, None, Some("team"), true)
        );
        assert_eq!(
            target("/apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads/w/status"),
            res(WORKLOAD, Some("team"), Some("w"), true)
        );
        assert_eq!(
            target("/apis/kueue.x-k8s.io/v1beta2/workloads"),
            res(WORKLOAD, None, None, false)
        );
        assert_eq!(
            target("/apis/worker.gpustack.ai/v1alpha1/devices/n%2D1"),
            res(DEVICES, None, Some("n-1"), false)
        );
    }

    #[test]
    fn wrong_scope_unknown_kinds_and_status_less_kinds_are_404() {
        assert_eq!(target("/apis/kueue.x-k8s.io/v1beta2/workloads/w"), Err(404));
        assert_eq!(
            target("/apis/worker.gpustack.ai/v1alpha1/namespaces/a/devices"),
            Err(404)
        );
        assert_eq!(target("/apis/apps/v1/deployments"), Err(404));
        assert_eq!(
            target("/apis/kueue.x-k8s.io/v1beta2/resourceflavors/f/status"),
            Err(404)
        );
        assert_eq!(target("/api/v1/nodes/n/proxy"), Err(404));
        assert_eq!(target("/healthz/x"), Err(404));
    }

    #[test]
    fn query_flags_and_decoding() {
        let q = Query::parse("watch=1&labelSelector=a%3Db%2Cc&force=true");
        assert!(q.flag("watch"));
        assert!(q.flag("force"));
        assert!(!q.flag("allowWatchBookmarks"));
        assert_eq!(q.get("labelSelector"), Some("a=b,c"));
    }

    #[test]
    fn strategic_merge_is_refused_for_custom_resources_only() {
        let mut store = Store::default();
        let req =
            |path: &'static str, method: &'static str, ct: &'static str, body: &'static [u8]| {
                ApiRequest {
                    method,
                    path,
                    query: "",
                    content_type: ct,
                    host: "",
                    user_agent: "",
                    accept: "",
                    body,
                }
            };
        let r = handle(
            &mut store,
            &req(
                "/api/v1/nodes",
                "POST",
                "application/json",
                br#"{"metadata":{"name":"n"}}"#,
            ),
        );
        assert!(matches!(r, Reply::Json(201, _)));
        let smp = "application/strategic-merge-patch+json";
        let r = handle(
            &mut store,
            &req(
                "/api/v1/nodes/n",
                "PATCH",
                smp,
                br#"{"metadata":{"labels":{"a":"b"},"$setElementOrder/x":[]}}"#,
            ),
        );
        match r {
            Reply::Json(200, v) => assert_eq!(v["metadata"]["labels"]["a"], "b"),
            other => panic!("{other:?}"),
        }
        let r = handle(
            &mut store,
            &req(
                "/apis/worker.gpustack.ai/v1alpha1/devices/n",
                "PATCH",
                smp,
                b"{}",
            ),
        );
        match r {
            Reply::Json(415, v) => assert_eq!(v["reason"], "UnsupportedMediaType"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_write_without_field_manager_is_recorded_under_the_user_agent_prefix() {
        let mut store = Store::default();
        let manager_of = |r: Reply| match r {
            Reply::Json(_, v) => v["metadata"]["managedFields"]
                .as_array()
                .and_then(|e| e.last())
                .map(|e| e["manager"].clone()),
            Reply::Watch(_) | Reply::Text(..) => None,
        };
        let post = ApiRequest {
            method: "POST",
            path: "/api/v1/nodes",
            query: "",
            content_type: "application/json",
            host: "",
            user_agent: "kubectl/v1.31.0 (linux/amd64) kubernetes/abcdef0",
            accept: "",
            body: br#"{"metadata":{"name":"n","labels":{"a":"b"}}}"#,
        };
        assert_eq!(
            manager_of(handle(&mut store, &post)),
            Some(json!("kubectl"))
        );
        // `?fieldManager=` wins over the User-Agent, on every patch type
        let patch = ApiRequest {
            method: "PATCH",
            path: "/api/v1/nodes/n",
            query: "fieldManager=verify",
            content_type: "application/strategic-merge-patch+json",
            body: br#"{"metadata":{"labels":{"a":"c"}}}"#,
            ..post
        };
        assert_eq!(
            manager_of(handle(&mut store, &patch)),
            Some(json!("verify"))
        );
        // the prefix drops unprintable characters and keeps at most 128 bytes
        assert_eq!(manager_from_user_agent("kube\u{7}let/1.31"), "kubelet");
        assert_eq!(manager_from_user_agent(&"m".repeat(200)).len(), 128);
        assert_eq!(manager_from_user_agent(""), "");
    }

    #[test]
    fn delete_options_from_body_and_query() {
        let o = delete_options(
            &Query::parse("propagationPolicy=Orphan"),
            br#"{"preconditions":{"uid":"u1"}}"#,
        );
        let o = o.unwrap_or_default();
        assert_eq!(o.propagation_policy.as_deref(), Some("Orphan"));
        assert_eq!(o.uid.as_deref(), Some("u1"));
        assert!(delete_options(&Query::default(), b"{").is_err());
        assert_eq!(
            delete_options(&Query::default(), b"").unwrap_or_default(),
            DeleteOptions::default()
        );
    }
}
