//! mod_proxy_http for HTTP/2 clients, driven by Python's `h2`
//! (proxy_h2/client.py) against the Python fixture backend
//! (proxy_http/backend.py) and backends of the test's own. Under each MPM:
//! streams of one connection answered at once (small, large, chunked
//! answers), a body sent on, 103 Early Hints (H2EarlyHints: HEADERS
//! ahead of the final answer while it is still awaited, several, none when
//! off; over TLS and h2c Upgrade as nghttp shows them), ProxyTimeout
//! before the answer (504) and in its body (the stream reset), a refused
//! connection and a malformed answer, a kept connection closed under a
//! stream's request (a GET sent again, a POST not). Under event only, where the loop
//! carries such streams with no thread: kept backend connections shared with HTTP/1.1
//! clients, clients that stop reading holding no thread, and a stream
//! reset mid-answer closing its backend connection.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "proxy_h2/client.rs"]
#[allow(dead_code)]
mod h2client;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use backend::{ask, dead_port, read_head, Backend};
use common::*;
use common::h2::H2Server;
use h2client::{answers, client, hinted, start_endless, Answer, Stalled};

fn start(mpm: &str, backend: &Backend, extra: &str) -> Server {
    Server::start(mpm, &format!("Protocols h2c http/1.1\nProxyPass /api/ {}/\nProxyPass /dead/ http://127.0.0.1:{}/\n{extra}\n", backend.url(), dead_port()))
}

fn streams_are_answered_at_once(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let got = answers(client(&s, "get", &["/api/one", "/api/big?n=300000", "/api/big?n=1000", "/api/echo/x", "/api/two"]));
    assert_eq!((got[0].status(), got[0].body().as_str()), (200, "backend saw GET /one\n"));
    assert_eq!((got[1].status(), got[1].body().as_str()), (200, "<300000 bytes>"));
    assert_eq!((got[2].status(), got[2].body()), (200, "x".repeat(1000)));
    // The backend's hop-by-hop fields stay behind.
    assert!(got[3].body().starts_with("GET /echo/x HTTP/1.1\n") && got[3].0["fields"].get("x-hop").is_none(), "{}", got[3].0);
    assert_eq!(got[4].body(), "backend saw GET /two\n");
    assert!(got.iter().all(|a| a.0["reset"].is_null()), "a stream was reset");
    // A body goes on with its length.
    let posted = answers(client(&s, "post", &["/api/echo/up", "70000"]));
    let body = posted[0].body();
    assert!(posted[0].status() == 200 && body.contains("\nContent-Length: 70000\n") && body.contains("\nbody-length: 70000\n"), "{}", posted[0].0);
}

fn early_hints_reach_http2_clients(mpm: &str) {
    let backend = Backend::start();
    // Off by default, as in Apache: the answer alone.
    let s = start(mpm, &backend, "");
    let got = answers(client(&s, "get", &["/api/hints"]));
    assert_eq!((got[0].status(), got[0].body().as_str(), got[0].interim().len()), (200, "hinted: body-length 0, expect None\n", 0));
    // On, a 103 is a HEADERS frame ahead of the answer, under every MPM:
    // the loop sends it, or the thread working out the answer does.
    let (held_port, release) = start_held_answer();
    let s = start(mpm, &backend, &format!("H2EarlyHints on\nProxyPass /held/ http://127.0.0.1:{held_port}/\n"));
    let got = answers(client(&s, "get", &["/api/hints"]));
    assert_eq!((got[0].status(), got[0].body().as_str()), (200, "hinted: body-length 0, expect None\n"));
    let hints = vec!["103 </late.js>; rel=preload".to_owned()];
    assert_eq!(got[0].interim(), hints);
    // It comes while the answer is still awaited, not with it: the backend
    // answers only once the client has shown the hint.
    let (hint, answer) = hinted(&s, "/held/x", || release.send(()).unwrap());
    assert_eq!(hint, "103 </held.css>; rel=preload");
    assert_eq!((answer.status(), answer.body().as_str(), answer.interim().len()), (200, "held answer\n", 1));
    // Through a balancer the stream is proxied on a thread: under event,
    // the thread hands its hints to the loop to send ahead.
    let s = start(mpm, &backend, &format!("H2EarlyHints on\n<Proxy balancer://hinting>\n    BalancerMember {}\n</Proxy>\nProxyPass /bal/ balancer://hinting/\n", backend.url()));
    let got = answers(client(&s, "get", &["/bal/hints"]));
    assert_eq!((got[0].status(), got[0].body().as_str()), (200, "hinted: body-length 0, expect None\n"));
    assert_eq!(got[0].interim(), hints);
    // Ten hints go on, each its own HEADERS, the eleventh is a 502; the
    // connection serves the next stream.
    let got = answers(client(&s, "seq", &["GET:/api/many-hints", "GET:/api/hints"]));
    assert_eq!((got[0].status(), got[0].interim().len()), (502, 10));
    assert_eq!((got[1].status(), got[1].interim()), (200, hints));
}

/// The same as nghttp shows the frames (the 103's HEADERS, then the
/// answer's, on the stream), over TLS (h2 by ALPN) and on a connection
/// upgraded from HTTP/1.1 (h2c, the request stream 1).
fn early_hints_reach_nghttp(mpm: &str) {
    let backend = Backend::start();
    let h = H2Server::start(mpm, "hints", &[], &format!("H2EarlyHints on\nProxyPass /api/ {}/\n", backend.url()));
    for args in [vec![format!("https://127.0.0.1:{}/api/hints", h.tls_port)], vec!["-u".to_owned(), format!("http://127.0.0.1:{}/api/hints", h.s.port)]] {
        let mut with_verbose = vec!["-v"];
        with_verbose.extend(args.iter().map(String::as_str));
        let (ok, out, err) = h.nghttp(&with_verbose);
        let out = String::from_utf8_lossy(&out);
        assert!(ok, "nghttp {args:?}: {err}\n{out}");
        let at = |what: &str| out.find(what).unwrap_or_else(|| panic!("{args:?}: no {what:?} in:\n{out}"));
        let (hint, link, answer, body) = (at(") :status: 103"), at(") link: </late.js>; rel=preload"), at(") :status: 200"), at("hinted: body-length 0"));
        assert!(hint < link && link < answer && answer < body, "{args:?}:\n{out}");
    }
}

fn backend_failures_are_answered(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "ProxyTimeout 2\n");
    let got = answers(client(&s, "get", &["/api/hang", "/dead/x", "/api/malformed", "/api/short", "/api/fine"]));
    let statuses: Vec<i64> = got.iter().map(Answer::status).collect();
    assert_eq!(statuses, [504, 503, 502, 502, 200], "{}", s.read_log("error.log"));
    let log = s.wait_log("error.log", "ProxyTimeout");
    assert!(log.contains(&format!("timeout reading the status line from 127.0.0.1:{} (ProxyTimeout)", backend.port)), "{log}");
    // Silent past ProxyTimeout in the middle of its body: the stream,
    // begun, is reset (INTERNAL_ERROR), not ended as if whole.
    let endless = start_endless();
    let s = start(mpm, &backend, &format!("ProxyPass /endless/ http://127.0.0.1:{}/\nProxyTimeout 1\n", endless.port));
    let got = answers(client(&s, "get", &["/endless/x", "/api/fine"]));
    assert_eq!((got[0].status(), got[0].0["reset"].as_i64(), got[0].0["ended"].as_bool()), (200, Some(2), Some(false)), "{}", got[0].0);
    assert_eq!(got[1].body(), "backend saw GET /fine\n");
}

/// A backend whose first connection is closed under its second request,
/// unanswered; later connections answer everything. Returns its port and
/// how many connections it accepted.
fn start_closing_kept() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let n = count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut served = 0;
                while let Some(head) = read_head(&mut s) {
                    if n == 0 && served == 1 {
                        return;
                    }
                    if head.starts_with("POST") {
                        let _ = s.read_exact(&mut [0u8; 4]);
                    }
                    served += 1;
                    let text = format!("connection {n} request {served}");
                    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len());
                }
            });
        }
    });
    (port, accepted)
}

/// A backend that sends a 103 (Link: </held.css>) at once and its final
/// answer only when the returned sender says so: a hint the client sees
/// before that went ahead of the answer.
fn start_held_answer() -> (u16, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (release, released) = mpsc::channel();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            if read_head(&mut s).is_none() {
                continue;
            }
            let _ = s.write_all(b"HTTP/1.1 103 Early Hints\r\nLink: </held.css>; rel=preload\r\n\r\n");
            if released.recv().is_err() {
                return;
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nheld answer\n");
            while read_head(&mut s).is_some() {}
        }
    });
    (port, release)
}

/// A kept connection the backend closes under the next request: a GET is
/// sent again on a new one, a POST (whose body went) gets 502.
fn kept_connection_closed_under_a_stream(mpm: &str) {
    let backend = Backend::start();
    let (port, accepted) = start_closing_kept();
    let s = start(mpm, &backend, &format!("ProxyPass /k/ http://127.0.0.1:{port}/\nLogLevel debug\n"));
    let got = answers(client(&s, "seq", &["GET:/k/a", "GET:/k/a"]));
    assert_eq!((got[0].body().as_str(), got[1].body().as_str()), ("connection 0 request 1", "connection 1 request 1"));
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    s.wait_log("error.log", "sending the request on a new one");
    let (port, accepted) = start_closing_kept();
    let s = start(mpm, &backend, &format!("ProxyPass /k/ http://127.0.0.1:{port}/\n"));
    let got = answers(client(&s, "seq", &["GET:/k/a", "POST:/k/a", "GET:/k/a"]));
    let statuses: Vec<i64> = got.iter().map(Answer::status).collect();
    assert_eq!(statuses, [200, 502, 200]);
    assert_eq!(got[2].body(), "connection 1 request 1");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

each_mpm!(streams_are_answered_at_once, early_hints_reach_http2_clients, early_hints_reach_nghttp, backend_failures_are_answered, kept_connection_closed_under_a_stream);

/// One event child, so that every client connection meets the same loop.
const ONE_CHILD: &str = "StartServers 1\nMaxRequestWorkers 4\n";

#[test]
fn event_kept_connections_are_shared_with_http11() {
    let backend = Backend::start();
    let s = start("event", &backend, ONE_CHILD);
    let mut c = s.connect();
    let get = |p: &str| format!("GET {p} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(ask(&mut c, &get("/api/a"), false).text(), "backend saw GET /a\n");
    for _ in 0..3 {
        let got = answers(client(&s, "get", &["/api/b"]));
        assert_eq!(got[0].body(), "backend saw GET /b\n");
    }
    assert_eq!(ask(&mut c, &get("/api/connections"), false).text(), "1", "backend connections opened for 5 requests, HTTP/1.1 and HTTP/2");
}

#[test]
fn event_clients_that_stop_reading_hold_no_thread() {
    let backend = Backend::start();
    let s = start("event", &backend, ONE_CHILD);
    // More stalled answers (each far larger than what may wait in warren)
    // than the child has threads: on threads they would take them all.
    let stalled: Vec<Stalled> = (0..6).map(|_| Stalled::start(&s, &["/api/big?n=50000000"])).collect();
    let got = answers(client(&s, "get", &["/api/after", "/api/big?n=200000"]));
    assert_eq!((got[0].body().as_str(), got[1].body().as_str()), ("backend saw GET /after\n", "<200000 bytes>"));
    let (code, out) = curl(&["--max-time", "20", &s.url("/api/h1")]);
    assert_eq!((code, String::from_utf8_lossy(&out).as_ref()), (0, "backend saw GET /h1\n"));
    drop(stalled);
}

#[test]
fn event_a_stream_reset_mid_answer_closes_its_backend_connection() {
    let backend = Backend::start();
    let endless = start_endless();
    let s = start("event", &backend, &format!("ProxyPass /endless/ http://127.0.0.1:{}/\nProxyTimeout 300\n", endless.port));
    assert_eq!(client(&s, "reset", &["/endless/x"]), ["OK 200"]);
    // Well before ProxyTimeout, the backend sees its connection closed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while endless.closed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the backend connection stayed open after the stream was reset");
        std::thread::sleep(Duration::from_millis(20));
    }
}
