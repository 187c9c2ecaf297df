//! Helpers the binary's end-to-end tests share.

use std::io::{Read, Write};

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
