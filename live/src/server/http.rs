//! The twin's HTTP server: the Kubernetes API over the store on 127.0.0.1, HTTP/1.1 (hyper),
//! one JSON body per request and chunked JSON lines for watches
//! (k8s.io/apiserver pkg/endpoints/handlers/watch.go: `{"type": …, "object": …}` per line,
//! a too-old resourceVersion answered by one `ERROR` event carrying the 410 `Status`).
//!
//! Writers notify watchers through a [`tokio::sync::watch`] channel kept next to the store
//! ([`SharedStore`]), never inside it; watchers also re-check the store every
//! [`POLL_INTERVAL`], so writes made straight on the `Arc<Mutex<Store>>` reach them too.

use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::counters::{Counters, Counts, COUNTERS_PATH};
use super::faults::{fault_status, Decision, Eligible, FaultConfig, Faults};
use super::routes::{self, ApiRequest, Query, Reply, Target, WatchRequest};
use super::status::Status;
use super::store::{Store, WatchEvent};
use crate::wire::clock::CLOCK_PATH;
use crate::wire::identity::{identity_body, TWIN_PATH};

/// How often a watcher re-checks the store for writes that did not notify.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How often an idle watch that allows bookmarks gets one.
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);
/// The largest request body accepted (the apiserver's 3 MiB limit).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The store shared by the server's connections, with the channel that tells watchers a
/// write happened (it carries the store's latest resourceVersion).
#[derive(Clone)]
pub struct SharedStore {
    store: Arc<Mutex<Store>>,
    changed: Arc<watch::Sender<u64>>,
}

impl SharedStore {
    /// Wraps a store.
    pub fn new(store: Arc<Mutex<Store>>) -> Self {
        let rv = lock(&store).resource_version();
        SharedStore {
            store,
            changed: Arc::new(watch::Sender::new(rv)),
        }
    }

    /// The store itself (writes made through it reach watchers within [`POLL_INTERVAL`]).
    pub fn inner(&self) -> Arc<Mutex<Store>> {
        Arc::clone(&self.store)
    }

    /// Reads the store.
    pub fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&lock(&self.store))
    }

    /// Writes the store and wakes the watchers when the resourceVersion moved.
    pub fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        let (out, before, after) = {
            let mut store = lock(&self.store);
            let before = store.resource_version();
            let out = f(&mut store);
            (out, before, store.resource_version())
        };
        if after != before {
            self.changed.send_replace(after);
        }
        out
    }
}

/// Locks the store; a poisoned lock (a panic elsewhere) still yields the store.
fn lock(store: &Mutex<Store>) -> MutexGuard<'_, Store> {
    store
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A response body: one JSON document, or the lines of a watch as they come.
pub enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx
                .poll_recv(cx)
                .map(|line| line.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            Body::Full(Some(b)) => http_body::SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => http_body::SizeHint::with_exact(0),
            Body::Stream(_) => http_body::SizeHint::default(),
        }
    }
}

/// How a twin serves: the faults it injects into client requests (none by default), and the
/// token it answers [`TWIN_PATH`] with (none: it answers there as a cluster does, 404).
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    pub faults: Option<FaultConfig>,
    pub identity: Option<String>,
}

/// What every connection of one server shares: the store, the fault source, the counters.
#[derive(Clone)]
struct Served {
    store: SharedStore,
    identity: Option<Arc<str>>,
    faults: Option<Arc<Faults>>,
    counters: Arc<Counters>,
}

/// Serves the Kubernetes API over `store` on `listener` until the task is dropped.
/// Refuses a listener not bound to a loopback address.
pub async fn serve(listener: TcpListener, store: Arc<Mutex<Store>>) -> std::io::Result<()> {
    serve_until(listener, SharedStore::new(store), std::future::pending()).await
}

/// Serves until `shutdown` completes; open connections are dropped with the runtime.
pub async fn serve_until(
    listener: TcpListener,
    store: SharedStore,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_configured(
        listener,
        store,
        &ServeConfig::default(),
        Arc::new(Counters::default()),
        shutdown,
    )
    .await
}

/// [`serve_until`] with faults from `config`, counting requests in `counters`.
pub async fn serve_configured(
    listener: TcpListener,
    store: SharedStore,
    config: &ServeConfig,
    counters: Arc<Counters>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let served = Served {
        store,
        faults: config.faults.clone().map(|f| Arc::new(Faults::new(f))),
        identity: config.identity.as_deref().map(Arc::from),
        counters,
    };
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("the twin serves on loopback only, not on {local}"),
        ));
    }
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // a failed accept (e.g. too many open files) is not the server's end
                Err(_) => continue,
            },
        };
        let _ = stream.set_nodelay(true);
        let served = served.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| respond(served.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Reads a request body, up to [`MAX_BODY_BYTES`].
async fn read_body(mut body: Incoming) -> Result<Vec<u8>, Status> {
    let mut out = Vec::new();
    loop {
        let frame =
            std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx)).await;
        match frame {
            None => return Ok(out),
            Some(Err(e)) => {
                return Err(Status::bad_request(format!(
                    "reading the request body: {e}"
                )))
            }
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    out.extend_from_slice(data);
                }
                if out.len() > MAX_BODY_BYTES {
                    return Err(Status::failure(
                        413,
                        "RequestEntityTooLarge",
                        "the request body is too large",
                        None,
                    ));
                }
            }
        }
    }
}

/// A response with a JSON body.
fn json_response(code: u16, body: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Body::Full(Some(Bytes::from(bytes))));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn text_response(code: u16, text: String) -> Response<Body> {
    let mut response = Response::new(Body::Full(Some(Bytes::from(text))));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Counts a request and draws its faults (resource requests only; discovery and the
/// counters endpoint are never faulted).
fn count_and_decide(served: &Served, method: &str, path: &str, query: &str) -> Decision {
    let target = served.store.read(|s| routes::parse_path(s.kinds(), path));
    let query = Query::parse(query);
    let Ok(target) = target else {
        // discovery and the access reviews (created, never stored)
        let verb = if method == "POST" { "create" } else { "get" };
        served.counters.request(verb, path);
        return Decision::default();
    };
    let (verb, resource) = routes::request_verb(method, &target, &query, path);
    served.counters.request(verb, &resource);
    let (Some(faults), Target::Resource(r)) = (&served.faults, &target) else {
        return Decision::default();
    };
    let decision = faults.decide(Eligible {
        write_to_object: r.name.is_some() && matches!(verb, "update" | "patch" | "delete"),
        watch: verb == "watch",
    });
    served.counters.faults(&decision.faults());
    decision
}

/// The response of a failure fault: its Status, and `Retry-After` on a 429.
fn fault_response(served: &Served, decision: &Decision, path: &str) -> Option<Response<Body>> {
    let fault = decision.fail?;
    let faults = served.faults.as_ref()?;
    let target = served
        .store
        .read(|s| routes::parse_path(s.kinds(), path))
        .ok()?;
    let Target::Resource(r) = target else {
        return None;
    };
    let retry_after = faults.retry_after_seconds();
    let body = fault_status(fault, &r.kind, r.name.as_deref().unwrap_or(""), retry_after);
    let code = body.get("code").and_then(Value::as_u64).unwrap_or(500) as u16;
    let mut response = json_response(code, &body);
    if fault == super::faults::Fault::Throttle {
        response
            .headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from(retry_after));
    }
    Some(response)
}

/// Answers one HTTP request.
async fn respond(served: Served, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(s) => return Ok(json_response(s.http_code(), &s.to_value())),
    };
    let path = parts.uri.path();
    if path == COUNTERS_PATH {
        let counts = serde_json::to_value(served.counters.snapshot()).unwrap_or(Value::Null);
        return Ok(json_response(200, &counts));
    }
    if let (TWIN_PATH, Some(token)) = (path, &served.identity) {
        return Ok(json_response(200, &identity_body(token)));
    }
    if path == CLOCK_PATH {
        let method = parts.method.as_str();
        let (code, reply) = served
            .store
            .write(|s| super::clock::clock_request(s, method, &body));
        return Ok(json_response(code, &reply));
    }
    let decision = count_and_decide(
        &served,
        parts.method.as_str(),
        path,
        parts.uri.query().unwrap_or(""),
    );
    if let Some(delay) = decision.delay {
        tokio::time::sleep(delay).await;
    }
    if let Some(response) = fault_response(&served, &decision, path) {
        return Ok(response);
    }
    let store = served.store;
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .unwrap_or("")
    };
    let api = ApiRequest {
        method: parts.method.as_str(),
        path: parts.uri.path(),
        query: parts.uri.query().unwrap_or(""),
        content_type: header(CONTENT_TYPE),
        host: header(HOST),
        user_agent: header(USER_AGENT),
        accept: header(ACCEPT),
        body: &body,
    };
    let reply = store.write(|s| routes::handle(s, &api));
    Ok(match reply {
        Reply::Json(code, v) => json_response(code, &v),
        Reply::Text(code, text) => text_response(code, text),
        Reply::Watch(w) => {
            let (tx, rx) = mpsc::channel(256);
            tokio::spawn(stream_watch(store, *w, tx, decision.cut_watch));
            let mut response = Response::new(Body::Stream(rx));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
    })
}

/// One watch line: the event as JSON and a newline.
fn line(event: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// The `ERROR` event carrying a `Status` (a 410 Gone for a too-old resourceVersion).
fn error_event(status: &Status) -> Value {
    json!({"type": "ERROR", "object": status.to_value()})
}

/// What the watcher sends next: events, and whether the watch ends (410).
struct Batch {
    lines: Vec<Bytes>,
    gone: bool,
}

/// The events after `since` (updating it to the store's resourceVersion), or the 410.
fn next_batch(store: &Store, w: &WatchRequest, since: &mut u64) -> Batch {
    let ns = w.namespace.as_deref();
    match store.watch_since(&w.kind, ns, &w.selector, *since) {
        Ok(events) => {
            *since = store.resource_version();
            Batch {
                lines: events.iter().map(event_line).collect(),
                gone: false,
            }
        }
        Err(gone) => Batch {
            lines: vec![line(&error_event(&gone.0))],
            gone: true,
        },
    }
}

fn event_line(e: &WatchEvent) -> Bytes {
    line(&serde_json::to_value(e).unwrap_or(Value::Null))
}

/// The BOOKMARK that ends the initial events of a `sendInitialEvents` watch.
fn initial_events_end(store: &Store, w: &WatchRequest) -> Bytes {
    let mut bookmark = store.bookmark(&w.kind);
    if let Some(meta) = bookmark
        .object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
    {
        meta.insert(
            "annotations".into(),
            json!({"k8s.io/initial-events-end": "true"}),
        );
    }
    event_line(&bookmark)
}

/// Sends `lines`; false when the client has gone.
async fn send_all(tx: &mpsc::Sender<Bytes>, lines: Vec<Bytes>) -> bool {
    for l in lines {
        if tx.send(l).await.is_err() {
            return false;
        }
    }
    true
}

/// Streams a watch: the history after its resourceVersion, then new events as they are
/// written, until its timeout, a 410, or the client's disconnect; a `cut` watch ends after
/// its first batch (an injected fault: the client sees the stream end and re-watches).
async fn stream_watch(store: SharedStore, w: WatchRequest, tx: mpsc::Sender<Bytes>, cut: bool) {
    let deadline = Instant::now() + w.timeout;
    let mut changed = store.changed.subscribe();
    let mut since = if w.send_initial_events {
        0
    } else {
        w.resource_version
    };
    let first = store.read(|s| {
        let mut batch = next_batch(s, &w, &mut since);
        if w.send_initial_events && !batch.gone {
            batch.lines.push(initial_events_end(s, &w));
        }
        batch
    });
    if !send_all(&tx, first.lines).await || first.gone || cut {
        return;
    }
    let mut poll = tokio::time::interval(POLL_INTERVAL);
    let mut bookmark =
        tokio::time::interval_at(Instant::now() + BOOKMARK_INTERVAL, BOOKMARK_INTERVAL);
    loop {
        let mut want_bookmark = false;
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return,
            _ = tx.closed() => return,
            r = changed.changed() => if r.is_err() { return },
            _ = poll.tick() => {},
            _ = bookmark.tick(), if w.allow_bookmarks => want_bookmark = true,
        }
        let batch = store.read(|s| {
            if s.resource_version() == since && !want_bookmark {
                return Batch {
                    lines: Vec::new(),
                    gone: false,
                };
            }
            let mut batch = next_batch(s, &w, &mut since);
            if want_bookmark && !batch.gone {
                batch.lines.push(event_line(&s.bookmark(&w.kind)));
            }
            batch
        });
        if !send_all(&tx, batch.lines).await || batch.gone {
            return;
        }
    }
}

/// A twin serving on a background thread; dropping it (or [`TwinHandle::shutdown`]) stops it.
pub struct TwinHandle {
    url: String,
    addr: SocketAddr,
    store: SharedStore,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<std::io::Result<()>>>,
}

impl TwinHandle {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The served store (write through it to wake watchers at once).
    pub fn store(&self) -> SharedStore {
        self.store.clone()
    }

    /// The requests served so far per verb and resource, and the faults injected.
    pub fn counters(&self) -> Counts {
        self.counters.snapshot()
    }

    /// Blocks until the server stops (it stops only on [`TwinHandle::shutdown`] or drop, so
    /// this is for a foreground `twin serve` that exits the process to end).
    pub fn wait(mut self) -> std::io::Result<()> {
        match self.thread.take().map(thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the twin's server thread panicked")),
            None => Ok(()),
        }
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(mut self) -> std::io::Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.thread.take().map(thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the twin's server thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for TwinHandle {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Starts a twin over an empty default store on 127.0.0.1 (`None` or `Some(0)`: any free
/// port) on a background thread with its own tokio runtime.
pub fn spawn_on_loopback(port: Option<u16>) -> std::io::Result<TwinHandle> {
    spawn_with_store(port, Store::default())
}

/// As [`spawn_on_loopback`], serving `store`.
pub fn spawn_with_store(port: Option<u16>, store: Store) -> std::io::Result<TwinHandle> {
    spawn_configured(port, store, ServeConfig::default())
}

/// As [`spawn_with_store`], with faults from `config`.
pub fn spawn_configured(
    port: Option<u16>,
    store: Store,
    config: ServeConfig,
) -> std::io::Result<TwinHandle> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port.unwrap_or(0)))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let shared = SharedStore::new(Arc::new(Mutex::new(store)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("verify-twin")
        .enable_all()
        .build()?;
    let (tx, rx) = oneshot::channel::<()>();
    let served = shared.clone();
    let counters = Arc::new(Counters::default());
    let counted = Arc::clone(&counters);
    let thread = thread::Builder::new()
        .name("verify-twin".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                serve_configured(listener, served, &config, counted, async {
                    let _ = rx.await;
                })
                .await
            })
        })?;
    Ok(TwinHandle {
        url: format!("http://{addr}"),
        addr,
        store: shared,
        counters,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}
