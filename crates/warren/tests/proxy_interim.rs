//! Interim (1xx) answers through mod_proxy_http under each MPM, against the
//! Python fixture backend (proxy_http/backend.py): a backend's 103 Early
//! Hints reach an HTTP/1.1 client ahead of the final answer (and not an
//! HTTP/1.0 one), `Expect: 100-continue` goes to the backend and its 100
//! Continue is what lets the client send its body, a final answer first
//! spares the client the upload, a backend that ignores Expect still gets
//! the body, a backend that sends interim answers without end gets 502, and
//! a balancer's member's hints reach the client as well.
//! Under the event MPM both a GET and an upload waiting for 100 are
//! relayed on the loop; prefork and worker run both on threads.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use backend::{ask, Backend};
use common::*;

fn start(mpm: &str, backend: &Backend) -> Server {
    Server::start(mpm, &format!("Protocols h2c http/1.1\nProxyPass /api/ {}/\n", backend.url()))
}

/// Reads one head (interim or final) off `c`, byte by byte, within a deadline.
fn next_head(c: &mut TcpStream) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert!(Instant::now() < deadline, "no whole head within 20 s: {:?}", String::from_utf8_lossy(&got));
        match c.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            other => panic!("connection ended after {:?}: {other:?}", String::from_utf8_lossy(&got)),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

fn connect(s: &Server) -> TcpStream {
    let c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c
}

fn early_hints_come_before_the_answer(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend);
    let mut c = connect(&s);
    c.write_all(b"GET /api/hints HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(next_head(&mut c), "HTTP/1.1 103 Early Hints\r\nLink: </late.js>; rel=preload\r\n\r\n");
    let r = ask(&mut c, "", false);
    assert_eq!((r.status, r.text().as_str()), (200, "hinted: body-length 0, expect None\n"));
    // The connection goes on, and so does the backend's.
    assert_eq!(ask(&mut c, "GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "backend saw GET /x\n");
    // curl shows it as it comes.
    let out = std::process::Command::new("curl").args(["-sv", "--max-time", "30", &s.url("/api/hints")]).output().unwrap();
    let verbose = String::from_utf8_lossy(&out.stderr);
    let hint = verbose.find("< HTTP/1.1 103 Early Hints").unwrap_or_else(|| panic!("{verbose}"));
    assert!(verbose[hint..].contains("< Link: </late.js>; rel=preload") && verbose[hint..].contains("< HTTP/1.1 200 OK"), "{verbose}");
    // No 1xx to an HTTP/1.0 client (RFC 9110 15.2).
    let raw = s.raw(b"GET /api/hints HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("hinted: body-length 0, expect None\n"), "{text}");
    // HTTP/2 clients get the answer, and the hint only with H2EarlyHints
    // on (off by default, as in Apache: proxy_h2.rs tests it).
    let (code, out) = curl(&["--http2-prior-knowledge", "-i", &s.url("/api/hints")]);
    let text = String::from_utf8_lossy(&out);
    assert!(code == 0 && text.starts_with("HTTP/2 200") && text.ends_with("expect None\n"), "{code} {text}");
}

fn expect_waits_for_the_backends_continue(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend);
    let mut c = connect(&s);
    c.write_all(b"POST /api/hints HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n").unwrap();
    // The backend's 103 comes before its 100: this 100 is the backend's,
    // not one warren sent on its own as the request came.
    assert_eq!(next_head(&mut c), "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n");
    assert_eq!(next_head(&mut c), "HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(b"hello").unwrap();
    assert_eq!(next_head(&mut c), "HTTP/1.1 103 Early Hints\r\nLink: </late.js>; rel=preload\r\n\r\n");
    let r = ask(&mut c, "", false);
    assert_eq!((r.status, r.text().as_str()), (200, "hinted: body-length 5, expect 100-continue\n"));
    assert_eq!(ask(&mut c, "GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "backend saw GET /x\n");
    // A chunked upload the same way, with curl (which waits for the 100).
    let (code, out) = curl(&["-H", "Expect: 100-continue", "-H", "Transfer-Encoding: chunked", "--data-binary", "chunked!", &s.url("/api/echo/up")]);
    let text = String::from_utf8_lossy(&out);
    assert!(code == 0 && text.contains("Expect: 100-continue\n") && text.contains("body-length: 8\n") && text.ends_with("chunked!"), "{code} {text}");
}

fn a_final_answer_first_spares_the_upload(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend);
    let mut c = connect(&s);
    c.write_all(b"POST /api/early HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n").unwrap();
    // No 100 Continue: the backend's final answer, and the connection closed
    // (the body it would have carried never came).
    let head = next_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 413 ") && head.to_ascii_lowercase().contains("connection: close\r\n"), "{head}");
    let mut rest = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut buf = [0u8; 4096];
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => rest.extend_from_slice(&buf[..n]),
            Err(_) => assert!(Instant::now() < deadline, "the connection stayed open"),
        }
    }
    assert_eq!(rest, b"too big\n");
    // The same from a backend that keeps its connection and would read the
    // body after its answer: that connection is not given another request.
    let mut c = connect(&s);
    c.write_all(b"POST /api/refuse HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n").unwrap();
    let head = next_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 401 ") && head.to_ascii_lowercase().contains("connection: close\r\n"), "{head}");
    let mut c = connect(&s);
    assert_eq!(ask(&mut c, "GET /api/next HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "backend saw GET /next\n");
    // A backend that ignores Expect gets the body all the same (after a
    // wait that warren bounds, with warren's own 100 Continue).
    let mut c = connect(&s);
    c.write_all(b"POST /api/no-continue HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n").unwrap();
    assert_eq!(next_head(&mut c), "HTTP/1.1 100 Continue\r\n\r\n");
    let r = ask(&mut c, "hello", false);
    assert_eq!((r.status, r.text().as_str()), (200, "got 5 bytes\n"));
}

fn endless_interim_answers_are_a_bad_gateway(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend);
    let mut c = connect(&s);
    c.write_all(b"GET /api/many-hints HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    // Ten are passed on, the eleventh ends it.
    for _ in 0..10 {
        assert_eq!(next_head(&mut c), "HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload\r\n\r\n");
    }
    let r = ask(&mut c, "", false);
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(ask(&mut c, "GET /api/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "backend saw GET /x\n");
    let log = s.wait_log("error.log", "interim");
    assert!(log.contains(&format!("error reading the status line from 127.0.0.1:{}: more than 10 interim (1xx) answers", backend.port)), "{log}");
}

/// Through a balancer: its member's hints reach the client too.
fn early_hints_come_through_a_balancer(mpm: &str) {
    let backend = Backend::start();
    let s = Server::start(mpm, &format!("<Proxy balancer://hinting>\n    BalancerMember {}\n</Proxy>\nProxyPass /bal/ balancer://hinting/\n", backend.url()));
    let mut c = connect(&s);
    c.write_all(b"GET /bal/hints HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    assert_eq!(next_head(&mut c), "HTTP/1.1 103 Early Hints\r\nLink: </late.js>; rel=preload\r\n\r\n");
    let r = ask(&mut c, "", false);
    assert_eq!((r.status, r.text().as_str()), (200, "hinted: body-length 0, expect None\n"));
    assert_eq!(ask(&mut c, "GET /bal/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "backend saw GET /x\n");
}

each_mpm!(early_hints_come_through_a_balancer, early_hints_come_before_the_answer, expect_waits_for_the_backends_continue, a_final_answer_first_spares_the_upload, endless_interim_answers_are_a_bad_gateway,);
