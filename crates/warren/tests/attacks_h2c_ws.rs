//! An anonymous client against this session's HTTP/2 WebSocket code
//! (RFC 8441, on the event loop and on the threads of prefork and worker): it asks for an `Upgrade: h2c` whose
//! request is also a WebSocket handshake (`Upgrade: h2c, websocket`), so
//! that stream 1 of the upgraded connection carries an HTTP/1.1 WebSocket
//! request that the proxy takes up with a real WebSocket backend. Such a
//! stream must still get an answer, under each MPM, rather than be left
//! waiting with its connection held.

mod common;
#[path = "proxy_websocket/fixture.rs"]
#[allow(dead_code)]
mod fixture;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::h2::{RawH2, HEADERS, RST_STREAM};
use common::*;
use fixture::{Backends, KEY};

each_mpm!(an_upgraded_websocket_request_is_answered);

/// The HTTP/1.1 request up to its 101 (h2c): the socket and what followed.
fn upgrade(port: u16, request: &str) -> (TcpStream, Vec<u8>) {
    let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    sock.write_all(request.as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        assert!(Instant::now() < deadline, "no answer to the upgrade: {}", String::from_utf8_lossy(&got));
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk) {
            Ok(0) => panic!("closed before answering the upgrade: {}", String::from_utf8_lossy(&got)),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&got[..end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 101") && head.to_ascii_lowercase().contains("upgrade: h2c"), "not upgraded to h2c: {head}");
    (sock, got[end..].to_vec())
}

fn an_upgraded_websocket_request_is_answered(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &format!("Protocols h2 h2c http/1.1\nH2WebSockets on\nProxyPass /ws/ ws://127.0.0.1:{}/\n", b.echo));
    let request = format!("GET /ws/echo HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c, websocket\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n");
    let (sock, rest) = upgrade(s.port, &request);
    let mut c = RawH2::upgraded(sock, rest);
    // Stream 1 is the upgraded request: it gets a response or a reset.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "stream 1 got no answer within 20 s\n{}", s.read_log("error.log"));
        match c.next_frame(left) {
            Some(f) if f.stream == 1 && (f.kind == HEADERS || f.kind == RST_STREAM) => break,
            Some(_) => {}
            None => assert!(!c.closed(Duration::ZERO), "the connection closed without answering stream 1\n{}", s.read_log("error.log")),
        }
    }
}
