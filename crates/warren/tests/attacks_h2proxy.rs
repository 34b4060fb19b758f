//! Attacks on mod_proxy_http's HTTP/2 side. The attacker is an anonymous
//! HTTP/2 client (Python's `h2`, proxy_h2/client.py) that resets its
//! streams in a flood or in the middle of their answers, opens answers it
//! never reads, sends a body past LimitRequestBody, dribbles the bodies
//! of many streams a byte at a time (each relayed to the backend as it
//! comes), or lies about a body's content-length (more DATA than told, a
//! request line among it; less, then the end); and a backend gone
//! bad (the site's own application, or one an attacker took over) that
//! sends interim answers without end, an interim head over 64 KB, or an
//! answer head that never ends. Each must cost the attacker's own streams
//! only: every backend connection closed, no thread held, 502/504/413 for
//! the streams concerned, and the next client served.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "proxy_h2/client.rs"]
#[allow(dead_code)]
mod h2client;
#[path = "proxy_upload/fixture.rs"]
mod fixture;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use backend::Backend;
use common::*;
use fixture::{backend_says, start_backend, wait_backend};
use h2client::{answers, client, spawn, start_endless, Answer, Stalled};

fn start(mpm: &str, backend: &Backend, extra: &str) -> Server {
    Server::start(mpm, &format!("Protocols h2c http/1.1\nProxyPass /api/ {}/\n{extra}\n", backend.url()))
}

/// Resets, at once and mid-answer: every backend connection they opened
/// is closed (on the loop at the reset; on a thread at ProxyTimeout), and
/// the attacker's connection, and the next client, are served.
fn resets_close_every_backend_connection(mpm: &str) {
    let backend = Backend::start();
    let endless = start_endless();
    let s = start(mpm, &backend, &format!("ProxyPass /endless/ http://127.0.0.1:{}/\nProxyTimeout 3\n", endless.port));
    let flood = client(&s, "flood", &["/endless/x", "40"]);
    assert!(flood == ["OK 200"] || flood[0].starts_with("GOAWAY"), "{flood:?}");
    assert_eq!(client(&s, "resetall", &["/endless/x", "4"]), ["OK 200"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while endless.closed.load(Ordering::SeqCst) < endless.accepted.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "{} of {} backend connections still open", endless.accepted.load(Ordering::SeqCst) - endless.closed.load(Ordering::SeqCst), endless.accepted.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(endless.accepted.load(Ordering::SeqCst) >= 1, "the mid-answer resets reached the backend");
    assert_eq!(answers(client(&s, "get", &["/api/after"]))[0].body(), "backend saw GET /after\n");
}

/// A body past LimitRequestBody is refused before the backend sees any of it.
fn bodies_past_the_limit_never_reach_the_backend(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "LimitRequestBody 100000\n");
    let got = answers(client(&s, "post", &["/api/echo/big", "400000"]));
    assert_eq!(got[0].status(), 413, "{}", got[0].0);
    let seen = answers(client(&s, "get", &["/api/seen"]));
    assert!(!seen[0].body().contains("/echo/big"), "{}", seen[0].body());
}

/// Interim answers without end, an interim head over 64 KB, a head that
/// never ends, and one that stops halfway: 502, 502, 502 and 504, each
/// logged naming the backend; the connection goes on.
fn bad_backend_heads_are_bad_gateways(mpm: &str) {
    let backend = Backend::start();
    let endless_head = TcpListener::bind("127.0.0.1:0").unwrap();
    let head_port = endless_head.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in endless_head.incoming().flatten() {
            std::thread::spawn(move || {
                let mut req = [0u8; 4096];
                let _ = conn.read(&mut req);
                if req.starts_with(b"GET /half") {
                    // Half a head, then nothing: ProxyTimeout's.
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/pl");
                    let _ = conn.read(&mut req);
                    return;
                }
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\n");
                // Fields until warren gives up (it closes the connection).
                while conn.write_all(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n").is_ok() {}
            });
        }
    });
    let s = start(mpm, &backend, &format!("ProxyPass /heads/ http://127.0.0.1:{head_port}/\nProxyTimeout 2\nH2EarlyHints on\n"));
    let got = answers(client(&s, "get", &["/api/many-hints", "/api/huge-hint", "/heads/endless", "/heads/half", "/api/fine"]));
    let statuses: Vec<i64> = got.iter().map(Answer::status).collect();
    assert_eq!(statuses, [502, 502, 502, 504, 200], "{}", s.read_log("error.log"));
    // Under every MPM the ten hints before the limit reached the client,
    // and none of the 70 KB one: an interim head is passed on only whole
    // and within bounds.
    let hints: Vec<usize> = got.iter().map(|a| a.interim().len()).collect();
    assert_eq!(hints, [10, 0, 0, 0, 0]);
    let log = s.wait_log("error.log", "(ProxyTimeout)");
    assert!(log.contains(&format!("from 127.0.0.1:{head_port}: ")) && log.contains(&format!("from 127.0.0.1:{}: more than 10 interim", backend.port)), "{log}");
}

/// Forty streams of one connection, each sending its body a byte at a
/// time: under event each is relayed on the loop (forty backend
/// connections, no thread), under prefork and worker the connection's
/// thread reads one at a time; either way other clients are served, and
/// once the attacker goes every backend connection it opened is closed,
/// none kept with part of a body.
fn dribbling_streams_cost_the_attacker_only(mpm: &str) {
    let b = start_backend();
    let s = Server::start(mpm, &format!("Protocols h2c http/1.1\nProxyPass /up/ {}/\nProxyPass /api/ {}/\nStartServers 1\nMaxRequestWorkers 4\n", b.url(), b.url()));
    let mut dribbler = spawn(&s, "dribble", &["/up/upload?id=drip", "40"]);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(dribbler.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "OPEN");
    let relayed = if mpm == "event" { 40 } else { 1 };
    let uploads_seen = || backend_says(&b, "/seen").matches("upload?id=drip").count();
    let deadline = Instant::now() + Duration::from_secs(30);
    while uploads_seen() < relayed {
        assert!(Instant::now() < deadline, "{} of {relayed} dribbled bodies reached the backend", uploads_seen());
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..3 {
        dribbler.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    }
    assert_eq!(answers(client(&s, "get", &["/api/other"]))[0].body(), "hello");
    let (code, out) = curl(&["--max-time", "20", &s.url("/api/h1")]);
    assert_eq!((code, String::from_utf8_lossy(&out).as_ref()), (0, "hello"));
    let _ = dribbler.kill();
    let _ = dribbler.wait();
    // Every dribbled body that reached the backend is cut, none kept.
    let started = uploads_seen() as i64;
    wait_backend(&b, "/cut", "every dribbled body's connection closed", |n| n == started);
}

/// A stream sending more DATA than its content-length (a request line
/// among it) and one ending short of it: each reset (PROTOCOL_ERROR), the
/// backend never sees a request in the extra bytes, and the connection
/// serves the next stream.
fn streams_lying_about_their_length_are_reset(mpm: &str) {
    let b = start_backend();
    let s = Server::start(mpm, &format!("Protocols h2c http/1.1\nProxyPass /up/ {}/\nProxyPass /api/ {}/\n", b.url(), b.url()));
    assert_eq!(client(&s, "lie", &["/up/upload?id=lie"]), ["RESET 1 1", "OK 200"]);
    let seen = backend_says(&b, "/seen");
    assert!(!seen.contains("smuggled"), "{seen}");
    // Neither body was taken whole.
    assert!(!backend_says(&b, "/progress?id=lie").trim().starts_with("10"), "a lying body reached the backend whole");
}

each_mpm!(resets_close_every_backend_connection, bodies_past_the_limit_never_reach_the_backend, bad_backend_heads_are_bad_gateways, dribbling_streams_cost_the_attacker_only, streams_lying_about_their_length_are_reset);

/// Under event: one connection's many answers left unread hold neither a
/// thread nor the loop: other clients, HTTP/2 and HTTP/1.1, are served.
/// (Under prefork and worker a thread serves a connection's streams in
/// turn, and a client that stops reading holds it, as Apache's would.)
#[test]
fn event_unread_answers_hold_no_thread() {
    let backend = Backend::start();
    let s = start("event", &backend, "StartServers 1\nMaxRequestWorkers 4\n");
    let big = ["/api/big?n=50000000"; 8];
    let stalled = [Stalled::start(&s, &big), Stalled::start(&s, &big)];
    assert_eq!(answers(client(&s, "get", &["/api/other"]))[0].body(), "backend saw GET /other\n");
    let (code, out) = curl(&["--max-time", "20", &s.url("/api/h1")]);
    assert_eq!((code, String::from_utf8_lossy(&out).as_ref()), (0, "backend saw GET /h1\n"));
    drop(stalled);
}

/// Under event: an answer whose client stopped reading it holds its
/// backend connection for H2StreamTimeout, not for as long as the client
/// likes: the stream is reset (a line names the client) and the backend
/// connection closed.
#[test]
fn event_an_unread_answer_holds_its_backend_only_for_h2streamtimeout() {
    let backend = Backend::start();
    let endless = start_endless();
    let s = start("event", &backend, &format!("ProxyPass /endless/ http://127.0.0.1:{}/\nTimeout 60\nH2StreamTimeout 2\nLogLevel info\n", endless.port));
    let stalled = Stalled::start(&s, &["/endless/x"]);
    s.wait_log("error.log", "(H2StreamTimeout); reset");
    let deadline = Instant::now() + Duration::from_secs(30);
    while endless.closed.load(Ordering::SeqCst) < endless.accepted.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the backend connection of the unread answer is still open\n{}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(answers(client(&s, "get", &["/api/after"]))[0].body(), "backend saw GET /after\n");
    drop(stalled);
}
