//! Attacks on interim (1xx) answers through mod_proxy_http, under each
//! MPM. The attacker is an anonymous client that asks for 100 Continue
//! and then never sends its body (each such upload, passed on end to end,
//! holds a thread while it waits), and a hostile or broken backend behind
//! a ProxyPass that sends a 100 nobody asked for, a 103 too large to be a
//! head, or interim answers without end.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::{Read, Write};
use std::time::Duration;

use backend::{ask, Backend};
use common::*;

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

/// Clients that ask for 100 Continue and then send nothing hold at most
/// half an event child's threads (none when the loop relays the upload,
/// as here): a request that needs a thread is still answered (the stalled
/// bodies would hold them for two minutes).
fn stalled_uploads_leave_threads(mpm: &str) {
    let backend = Backend::start();
    // One event child of four threads: two may wait on uploads.
    let one_child = if mpm == "event" { "MaxRequestWorkers 4\n" } else { "" };
    let conf = format!("{one_child}RequestReadTimeout body=120\nProxyPass /api/ {}/\nProxyPass /byname/ http://localhost:{}/\n", backend.url(), backend.port);
    let s = Server::start(mpm, &conf);
    let mut stalled = Vec::new();
    for _ in 0..12 {
        let mut c = s.connect();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c.write_all(b"POST /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n").unwrap();
        let mut interim = [0u8; 25];
        c.read_exact(&mut interim).unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
        stalled.push(c);
    }
    // A backend named by host name is asked from a thread.
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    assert_eq!(ask(&mut c, &get("/byname/free"), false).text(), "backend saw GET /free\n");
    drop(stalled);
}

/// What a backend sends before its answer reaches the client only as
/// RFC 9110 lets it: an unasked 100 is dropped, a 103 larger than a head
/// may be is a 502 naming the backend, and the client's connection goes on.
fn hostile_interim_answers(mpm: &str) {
    let backend = Backend::start();
    let s = Server::start(mpm, &format!("ProxyPass /api/ {}/\n", backend.url()));
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let r = ask(&mut c, &get("/api/unasked-100"), false);
    assert_eq!((r.status, r.text().as_str()), (200, "after an unasked 100\n"));
    let r = ask(&mut c, &get("/api/huge-hint"), false);
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(ask(&mut c, &get("/api/after"), false).text(), "backend saw GET /after\n");
    let log = s.wait_log("error.log", "larger than");
    assert!(log.contains(&format!("error reading the status line from 127.0.0.1:{}: response head larger than 65536 bytes", backend.port)), "{log}");
}

each_mpm!(stalled_uploads_leave_threads, hostile_interim_answers);
