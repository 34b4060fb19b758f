//! Attacks on request bodies relayed to an HTTP backend as they arrive
//! (proxy_upload.rs's Python backend, which records how much of each body
//! it has read and every request line), played by anonymous clients of a
//! site that proxies `/up/`: many clients dribbling their bodies a byte at
//! a time (under the event MPM more of them than the server has threads:
//! they hold none, and a normal request is still answered, as are the
//! dribblers' next bytes; the same from clients that first wait for the
//! backend's 100 Continue), chunk data dressed as the body's end and a
//! smuggled request (it stays data), a chunk extension and a trailer (not
//! passed on), and a malformed chunk after a good one (400, and the
//! backend's connection with half a body is closed, never completed by
//! what the client sends next).

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "proxy_upload/fixture.rs"]
mod fixture;

use std::io::Write;
use std::net::TcpStream;

use backend::Backend;
use fixture::{backend_says, start_backend, wait_backend};
use common::*;

fn start(mpm: &str, b: &Backend) -> Server {
    Server::start(mpm, &format!("ProxyPass /up/ {}/\n", b.url()))
}

fn dribblers_hold_no_thread(mpm: &str) {
    dribblers(mpm, false);
}

fn dribblers_after_100_continue_hold_no_thread(mpm: &str) {
    dribblers(mpm, true);
}

/// Many clients each send a byte of their body (after the backend's 100
/// Continue if `expect`), then, once a normal request was answered, one more.
fn dribblers(mpm: &str, expect: bool) {
    let b = start_backend();
    let s = start(mpm, &b);
    // The test server's MaxRequestWorkers is 32: under the event MPM more
    // dribblers than that; under prefork and worker each holds a thread
    // (as in Apache), so fewer.
    let count = if mpm == "event" { 40 } else { 12 };
    let mut dribblers: Vec<TcpStream> = (0..count)
        .map(|i| {
            let mut c = s.connect();
            c.set_nodelay(true).unwrap();
            let expect_field = if expect { "Expect: 100-continue\r\n" } else { "" };
            c.write_all(format!("POST /up/upload?id=d{i} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n{expect_field}\r\n").as_bytes()).unwrap();
            if expect {
                let mut got = Vec::new();
                let mut byte = [0u8; 1];
                while !got.ends_with(b"\r\n\r\n") {
                    assert_eq!(read_some(&mut c, &mut byte).unwrap(), 1, "closed after {:?}", String::from_utf8_lossy(&got));
                    got.push(byte[0]);
                }
                assert_eq!(got, b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            c.write_all(b"a").unwrap();
            c
        })
        .collect();
    for i in 0..count {
        wait_backend(&b, &format!("/progress?id=d{i}"), "a dribbler's first byte", |n| n == 1);
    }
    // Every dribbler is mid-body: a normal request and a whole upload are answered.
    let r = s.get("/up/");
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));
    let mut c = s.connect();
    c.write_all(b"POST /up/upload?id=whole HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc").unwrap();
    let (raw, how) = read_to_end_of(&mut c);
    assert!(String::from_utf8_lossy(&raw).ends_with("framing=length bytes=3 sum=294"), "{how}: {}", String::from_utf8_lossy(&raw));
    // The dribblers are still served: each next byte goes on.
    for d in &mut dribblers {
        d.write_all(b"b").unwrap();
    }
    for i in 0..count {
        wait_backend(&b, &format!("/progress?id=d{i}"), "a dribbler's second byte", |n| n == 2);
    }
}

fn chunked_upload(s: &Server, id: &str, body: &[u8]) -> Vec<u8> {
    let mut c = s.connect();
    c.write_all(format!("POST /up/upload?id={id} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    c.write_all(body).unwrap();
    read_to_end_of(&mut c).0
}

fn chunk_data_stays_data(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b);
    let smuggled = b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut body = format!("{:x};ext=\"v\"\r\n", smuggled.len()).into_bytes();
    body.extend_from_slice(smuggled);
    body.extend_from_slice(b"\r\n0\r\nX-Trailer: evil\r\n\r\n");
    let answer = chunked_upload(&s, "dressed", &body);
    let sum = smuggled.iter().map(|&x| u64::from(x)).sum::<u64>();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.ends_with(&format!("framing=chunked bytes={} sum={sum}", smuggled.len())), "{text}");
    let seen = backend_says(&b, "/seen");
    assert!(!seen.contains("smuggled") && !seen.contains("Trailer"), "{seen}");
}

fn bad_chunk_mid_body_cuts_the_backend(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b);
    let mut c = s.connect();
    c.write_all(b"POST /up/upload?id=bad HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n").unwrap();
    wait_backend(&b, "/progress?id=bad", "the good chunk", |n| n == 5);
    // A size that is not hex, then what would end the body cleanly.
    c.write_all(b"zz\r\nworld\r\n0\r\n\r\n").unwrap();
    let (raw, how) = read_to_end_of(&mut c);
    assert_eq!(status_of(&raw), 400, "{how}: {}", String::from_utf8_lossy(&raw));
    wait_backend(&b, "/cut", "the backend's connection closed mid-body", |n| n == 1);
    // A size past any limit.
    let answer = chunked_upload(&s, "huge", b"ffffffffffffffffffffff\r\nx\r\n0\r\n\r\n");
    assert!(matches!(status_of(&answer), 400 | 413), "{}", String::from_utf8_lossy(&answer));
}

each_mpm!(dribblers_hold_no_thread, dribblers_after_100_continue_hold_no_thread, chunk_data_stays_data, bad_chunk_mid_body_cuts_the_backend);
