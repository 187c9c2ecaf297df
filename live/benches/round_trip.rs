//! The twin's round trip on loopback: create a Node, then get it, over one kept-alive HTTP/1
//! connection (as kube-rs and kubectl reuse theirs). Target: ≤ 1 ms median (issue 6).
//! Run: `cargo bench -p live --bench round_trip`.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use live::server::http::spawn_on_loopback;
use tokio::net::TcpStream;

/// One request on the kept-alive connection; the status code (the body is read to its end).
async fn send(sender: &mut SendRequest<Full<Bytes>>, method: &str, path: &str, body: Bytes) -> u16 {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(body));
    let Ok(request) = request else {
        return 0;
    };
    let Ok(response) = sender.send_request(request).await else {
        return 0;
    };
    let code = response.status().as_u16();
    let _ = response.into_body().collect().await;
    code
}

fn round_trip(c: &mut Criterion) {
    let twin = match spawn_on_loopback(None) {
        Ok(t) => t,
        Err(e) => panic!("the twin did not start: {e}"),
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("no runtime: {e}"),
    };
    let addr = twin.addr();
    let mut sender = rt.block_on(async {
        let stream = match TcpStream::connect(addr).await {
            Ok(s) => s,
            Err(e) => panic!("connect {addr}: {e}"),
        };
        let _ = stream.set_nodelay(true);
        let (sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
        {
            Ok(x) => x,
            Err(e) => panic!("handshake: {e}"),
        };
        tokio::spawn(conn);
        sender
    });
    let n = AtomicU64::new(0);
    c.bench_function("twin create+get Node (keep-alive)", |b| {
        b.iter(|| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            let body = format!(
                r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n{i}","labels":{{"zone":"a"}}}}}}"#
            );
            rt.block_on(async {
                let created = send(&mut sender, "POST", "/api/v1/nodes", Bytes::from(body)).await;
                let got = send(&mut sender, "GET", &format!("/api/v1/nodes/n{i}"), Bytes::new()).await;
                assert_eq!((created, got), (201, 200));
            })
        })
    });
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
