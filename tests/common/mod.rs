//! Helpers the binary's end-to-end tests share.

// each test binary uses some of them
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Child, Command};

/// The `127.0.0.1:PORT` that `verify twin serve`'s first line (`… on http://127.0.0.1:PORT`)
/// names.
pub fn served_addr(first_line: &str) -> String {
    first_line
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .trim_start_matches("http://")
        .to_string()
}

/// One HTTP GET on a twin at `addr` (`127.0.0.1:PORT`); the whole response text.
pub fn http_get(addr: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// One HTTP POST of a JSON `body` to a twin at `addr`; the whole response text.
pub fn http_post(addr: &str, path: &str, body: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Sends `sig` (`-INT`, `-KILL`) to `child` with kill(1).
pub fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
}

/// A command's stdout then stderr, as one text for assertion messages.
pub fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// An empty scratch directory `verify-<tag>-<pid>-<name>` under the temp dir.
pub fn scratch_dir(tag: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("verify-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
