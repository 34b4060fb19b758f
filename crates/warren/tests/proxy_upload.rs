//! Request bodies through mod_proxy_http as the client sends them, against
//! a Python backend (proxy_upload/backend.py) that records how much of each
//! body it has read and can hold a body after its first piece: the first
//! bytes reach the backend before the client has sent the last (Content-
//! Length and chunked, kept as the client framed them); a backend that
//! stops reading stops warren reading the client (the client cannot send
//! its whole body); `SetEnv proxy-sendcl` reads a chunked body whole and
//! sends its length (`proxy-sendchunked` wins over it); a client that stalls
//! mid-body gets its timeout and the backend's connection is closed, not
//! kept; a body over LimitRequestBody gets 413; a backend's answer before
//! the body's end reaches the client at once under the event MPM (the
//! threads of prefork and worker send the whole body first, as Apache).

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "proxy_upload/fixture.rs"]
mod fixture;

use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use backend::Backend;
use fixture::{backend_says, start_backend, wait_backend};
use common::*;

fn start(mpm: &str, b: &Backend, extra: &str) -> Server {
    Server::start(mpm, &format!("ProxyPass /up/ {}/\n{extra}", b.url()))
}

/// A body of `n` bytes, not all alike, and its sum as backend.py counts it.
fn body_of(n: usize) -> (Vec<u8>, u64) {
    let body: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let sum = body.iter().map(|&b| u64::from(b)).sum::<u64>() % (1 << 32);
    (body, sum)
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// Reads one whole answer (the connection may go on).
fn read_answer(s: &mut TcpStream) -> Resp {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !response_complete(&got) {
        match read_some(s, &mut buf) {
            Ok(0) | Err(_) => panic!("the connection ended after {:?}", String::from_utf8_lossy(&got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    parse_response(&got).0
}

/// The body's first half goes, the backend must have read some of it
/// before the second half is sent, then the answer says what it got.
fn streamed(mpm: &str, chunked: bool) {
    let b = start_backend();
    let s = start(mpm, &b, "");
    let (body, sum) = body_of(300_000);
    let id = format!("{mpm}-{chunked}");
    let mut c = s.connect();
    let framing = if chunked { "Transfer-Encoding: chunked".to_string() } else { format!("Content-Length: {}", body.len()) };
    c.write_all(format!("POST /up/upload?id={id} HTTP/1.1\r\nHost: localhost\r\n{framing}\r\n\r\n").as_bytes()).unwrap();
    let (first, rest) = body.split_at(100_000);
    let send = |c: &mut TcpStream, part: &[u8]| c.write_all(&if chunked { chunk(part) } else { part.to_vec() }).unwrap();
    send(&mut c, first);
    wait_backend(&b, &format!("/progress?id={id}"), "the first bytes before the last are sent", |n| n > 0);
    send(&mut c, rest);
    if chunked {
        c.write_all(b"0\r\n\r\n").unwrap();
    }
    let r = read_answer(&mut c);
    assert_eq!(r.status, 200, "{}", r.text());
    let expected = format!("framing={} bytes=300000 sum={sum}", if chunked { "chunked" } else { "length" });
    assert_eq!(r.text(), expected);
    // The connection goes on.
    c.write_all(b"GET /up/ HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(read_answer(&mut c).text(), "hello");
}

fn content_length_body_streams(mpm: &str) {
    streamed(mpm, false);
}

fn chunked_body_streams_chunked(mpm: &str) {
    streamed(mpm, true);
}

/// Sends a chunked body whole and returns the backend's account of it.
fn chunked_upload(s: &Server, target: &str, body: &[u8]) -> Resp {
    let mut c = s.connect();
    let mut req = format!("POST /up/{target} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n").into_bytes();
    for part in body.chunks(30_000) {
        req.extend_from_slice(&chunk(part));
    }
    req.extend_from_slice(b"0\r\n\r\n");
    c.write_all(&req).unwrap();
    read_answer(&mut c)
}

fn sendcl_sends_a_length(mpm: &str) {
    let b = start_backend();
    let (body, sum) = body_of(100_000);
    let s = start(mpm, &b, "SetEnvIf Request_URI ^/up/ proxy-sendcl\nSetEnvIf Request_URI ^/up/both proxy-sendchunked\n");
    let r = chunked_upload(&s, "upload?id=buffered", &body);
    assert_eq!(r.text(), format!("framing=length bytes=100000 sum={sum}"));
    let r = chunked_upload(&s, "both?id=both", &body);
    assert_eq!(r.text(), format!("framing=chunked bytes=100000 sum={sum}"));
}

/// Writes `data` without blocking, as far as the peer takes it; returns
/// how much went and whether the peer stopped taking it for `quiet`.
fn write_until_stuck(c: &mut TcpStream, data: &[u8], quiet: Duration) -> (usize, bool) {
    c.set_nonblocking(true).unwrap();
    let mut sent = 0;
    let mut stuck_since: Option<Instant> = None;
    while sent < data.len() {
        match c.write(&data[sent..(sent + 65536).min(data.len())]) {
            Ok(n) => {
                sent += n;
                stuck_since = None;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let since = *stuck_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= quiet {
                    c.set_nonblocking(false).unwrap();
                    return (sent, true);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("writing the body: {e}"),
        }
    }
    c.set_nonblocking(false).unwrap();
    (sent, false)
}

fn slow_backend_holds_the_client_back(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "");
    const LEN: usize = 32 << 20;
    let (body, sum) = body_of(LEN);
    let id = format!("held-{mpm}");
    let mut c = s.connect();
    c.write_all(format!("POST /up/upload?id={id}&hold HTTP/1.1\r\nHost: localhost\r\nContent-Length: {LEN}\r\n\r\n").as_bytes()).unwrap();
    // Spooled, the whole body would be taken while the backend holds; held
    // back, the buffers on the way fill and the client must stop.
    let (sent, stuck) = write_until_stuck(&mut c, &body, Duration::from_secs(2));
    assert!(stuck, "the client sent its whole body ({sent} bytes) while the backend read none of it");
    assert!(sent < LEN);
    let read = wait_backend(&b, &format!("/progress?id={id}"), "the backend's first piece", |n| n > 0);
    assert!(read <= 4096, "the held backend read {read}");
    backend_says(&b, &format!("/release?id={id}"));
    c.write_all(&body[sent..]).unwrap();
    let r = read_answer(&mut c);
    assert_eq!(r.text(), format!("framing=length bytes={LEN} sum={sum}"), "{}", s.read_log("error.log"));
}

fn client_stalling_mid_body_times_out(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "RequestReadTimeout body=2\n");
    let id = format!("stall-{mpm}");
    let mut c = s.connect();
    c.write_all(format!("POST /up/upload?id={id} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n").as_bytes()).unwrap();
    c.write_all(&[b'x'; 50_000]).unwrap();
    wait_backend(&b, &format!("/progress?id={id}"), "the body's first half", |n| n > 0);
    // Nothing more: the body's clock runs out.
    let (raw, _) = read_to_end_of(&mut c);
    assert_eq!(status_of(&raw), 408, "{}", String::from_utf8_lossy(&raw));
    // The backend's connection carrying half a body is closed, not kept.
    wait_backend(&b, "/cut", "the backend's connection closed mid-body", |n| n == 1);
    let log = s.wait_log("error.log", "read timeout");
    assert!(log.contains("127.0.0.1"), "{log}");
    // The next upload goes through, on a connection of its own.
    let r = chunked_upload(&s, &format!("upload?id=after-{mpm}"), b"fine");
    assert_eq!(r.text(), format!("framing=chunked bytes=4 sum={}", b"fine".iter().map(|&x| u64::from(x)).sum::<u64>()));
}

fn upload_over_limit_gets_413(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "LimitRequestBody 100000\n");
    // Announced too large: refused before the backend is asked.
    let mut c = s.connect();
    c.write_all(b"POST /up/upload?id=announced HTTP/1.1\r\nHost: localhost\r\nContent-Length: 200000\r\n\r\n").unwrap();
    let (raw, _) = read_to_end_of(&mut c);
    assert_eq!(status_of(&raw), 413, "{}", String::from_utf8_lossy(&raw));
    assert_eq!(backend_says(&b, "/progress?id=announced").trim(), "-1");
    // Chunked, found too large on the way: the backend's connection is cut.
    let (body, _) = body_of(200_000);
    let r = chunked_upload(&s, "upload?id=chunked", &body);
    assert_eq!(r.status, 413, "{}", r.text());
    wait_backend(&b, "/cut", "the backend's connection closed mid-body", |n| n == 1);
}

fn early_answer_before_the_body_ends(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "RequestReadTimeout body=2\n");
    let mut c = s.connect();
    c.write_all(b"POST /up/early HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n").unwrap();
    c.write_all(&[b'x'; 1000]).unwrap();
    // The client sends nothing more and reads.
    let (raw, how) = read_to_end_of(&mut c);
    let text = String::from_utf8_lossy(&raw);
    if mpm == "event" {
        assert_eq!(status_of(&raw), 413, "{how}: {text}");
        assert!(text.ends_with("too large for me") && text.contains("Connection: close"), "{text}");
    } else {
        assert_eq!(status_of(&raw), 408, "{how}: {text}");
    }
}

each_mpm!(early_answer_before_the_body_ends, content_length_body_streams, chunked_body_streams_chunked, sendcl_sends_a_length, slow_backend_holds_the_client_back, client_stalling_mid_body_times_out, upload_over_limit_gets_413);
