//! A plain hyper HTTP/1 client for the twin's tests: one request per connection, the code and
//! the JSON body back. Shared by the tests that talk to a served twin.
#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

pub fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("no runtime: {e}"),
    }
}

/// Sends one request on a fresh connection and returns the response (body unread).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Response<Incoming> {
    let stream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => panic!("connect {addr}: {e}"),
    };
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
    {
        Ok(x) => x,
        Err(e) => panic!("handshake: {e}"),
    };
    tokio::spawn(conn);
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("accept", "application/json");
    if !content_type.is_empty() {
        builder = builder.header("content-type", content_type);
    }
    let request = match builder.body(Full::new(Bytes::from(body))) {
        Ok(r) => r,
        Err(e) => panic!("request: {e}"),
    };
    match sender.send_request(request).await {
        Ok(r) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    }
}

/// One request; the status code and the JSON body (checked to be `application/json`).
pub async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(body).unwrap_or_default()
    };
    let response = send(addr, method, path, content_type, bytes).await;
    let code = response.status().as_u16();
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "{method} {path}"
    );
    let bytes = match response.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => panic!("body of {method} {path}: {e}"),
    };
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, value)
}

pub async fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    call(addr, "GET", path, "", &Value::Null).await
}

pub async fn post(addr: SocketAddr, path: &str, body: Value) -> (u16, Value) {
    call(addr, "POST", path, "application/json", &body).await
}

pub async fn put(addr: SocketAddr, path: &str, body: Value) -> (u16, Value) {
    call(addr, "PUT", path, "application/json", &body).await
}

pub async fn patch(addr: SocketAddr, path: &str, content_type: &str, body: Value) -> (u16, Value) {
    call(addr, "PATCH", path, content_type, &body).await
}

/// A server-side apply with a YAML body.
pub async fn apply_yaml(addr: SocketAddr, path: &str, yaml: &str) -> (u16, Value) {
    let response = send(
        addr,
        "PATCH",
        path,
        "application/apply-patch+yaml",
        yaml.as_bytes().to_vec(),
    )
    .await;
    let code = response.status().as_u16();
    let bytes = match response.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => panic!("body: {e}"),
    };
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// An InstanceType every field of whose spec the real CRD requires, labelled `pool=a`.
pub fn instance_type(name: &str) -> Value {
    serde_json::json!({
        "apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "InstanceType",
        "metadata": {"name": name, "labels": {"pool": "a"}},
        "spec": {"acceleratable": true, "os": "linux", "arch": "amd64",
                 "unitResources": {"cpu": "4", "ram": "16Gi"}, "localStorage": "100Gi"},
    })
}
