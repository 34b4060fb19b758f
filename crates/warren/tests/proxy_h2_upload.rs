//! HTTP/2 request bodies through mod_proxy_http as the client sends them,
//! with Python's `h2` (proxy_h2/client.py) against the backend that
//! records how each body arrives (proxy_upload/backend.py). Under each
//! MPM: the first half reaches the backend before the client sends the
//! second (with its content-length, or chunked when it told none; curl's
//! body from a pipe too);
//! `proxy-sendcl` still reads the body whole and sends a length; a backend
//! that stops reading shuts the stream's window (the client cannot send
//! its whole body) and the body goes whole once it reads on; a body over
//! LimitRequestBody gets 413 and the backend's connection is cut; a client
//! resetting its stream mid-body closes the backend's connection and the
//! connection serves the next stream; a stream that stops sending is reset
//! after H2StreamTimeout.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "proxy_h2/client.rs"]
#[allow(dead_code)]
mod h2client;
#[path = "proxy_upload/fixture.rs"]
mod fixture;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

use backend::Backend;
use common::*;
use fixture::{backend_says, start_backend, wait_backend};
use h2client::{answers, client, spawn, Answer};

fn start(mpm: &str, b: &Backend, extra: &str) -> Server {
    Server::start(mpm, &format!("Protocols h2c http/1.1\nProxyPass /up/ {}/\nProxyPass /api/ {}/\n{extra}", b.url(), b.url()))
}

/// The sum backend.py reports for client.py's upload and push bodies of
/// `n` bytes (i % 251); a post's is all "x".
fn sum_of(n: usize) -> u64 {
    (0..n).map(|i| (i % 251) as u64).sum::<u64>() % (1 << 32)
}

/// A client.py run that waits on the test: its output's lines come through
/// a channel, its standard input says when to go on.
struct Waiting {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Waiting {
    fn start(s: &Server, case: &str, args: &[&str]) -> Waiting {
        let mut child = spawn(s, case, args);
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Waiting { child, lines }
    }

    /// The next line, within a deadline (None: the client ended first).
    fn line(&self, s: &Server) -> Option<String> {
        match self.lines.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => Some(l),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("client.py said nothing for 60 s\n{}", s.read_log("error.log")),
        }
    }

    fn go_on(&mut self) {
        self.child.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    }

    /// Its last line, once it has ended well.
    fn finish(mut self, s: &Server) -> String {
        let mut last = String::new();
        while let Some(l) = self.line(s) {
            last = l;
        }
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(self.child.wait().unwrap().success(), "client.py: {err}\n{}", s.read_log("error.log"));
        last
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn first_half_reaches_the_backend_before_the_second(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "");
    for (framing, extra) in [("length", ""), ("chunked", "chunked")] {
        let id = format!("{mpm}-{framing}");
        let mut c = Waiting::start(&s, "upload", &[&format!("/up/upload?id={id}"), "300000", extra]);
        assert_eq!(c.line(&s).as_deref(), Some("HALF"));
        wait_backend(&b, &format!("/progress?id={id}"), "the first half before the second is sent", |n| n > 0);
        c.go_on();
        let answer = Answer(serde_json::from_str(&c.finish(&s)).unwrap());
        assert_eq!((answer.status(), answer.body()), (200, format!("framing={framing} bytes=300000 sum={}", sum_of(300_000))), "{}", s.read_log("error.log"));
    }
}

/// The same with curl (nghttp2) as the client, h2c with prior knowledge,
/// its body from a pipe (`-T -`, sent as it is read): no length known,
/// so the backend gets it chunked.
fn curl_body_from_a_pipe_streams(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "");
    let id = format!("curl-{mpm}");
    let mut curl = std::process::Command::new("curl")
        .args(["-s", "--max-time", "60", "--http2-prior-knowledge", "-X", "POST", "-T", "-", &s.url(&format!("/up/upload?id={id}"))])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run curl");
    let mut input = curl.stdin.take().unwrap();
    input.write_all(&[b'x'; 100_000]).unwrap();
    input.flush().unwrap();
    wait_backend(&b, &format!("/progress?id={id}"), "curl's first bytes before its last are sent", |n| n > 0);
    input.write_all(&[b'y'; 100_000]).unwrap();
    drop(input);
    let mut out = String::new();
    curl.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(curl.wait().unwrap().success(), "{out}\n{}", s.read_log("error.log"));
    assert_eq!(out, format!("framing=chunked bytes=200000 sum={}", 100_000 * (u64::from(b'x') + u64::from(b'y'))));
}

/// More uploads at once on one connection than its window holds for
/// waiting streams: each is answered whole (a thread reading one stream's
/// body while the others' DATA waits unconsumed would starve it of the
/// connection's window).
fn parallel_uploads_on_one_connection(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "H2StreamTimeout 120\n");
    let got = answers(client(&s, "uploads", &["/up/upload?id=many", "8", "300000"]));
    assert_eq!(got.len(), 8);
    for answer in got {
        assert_eq!((answer.status(), answer.body()), (200, format!("framing=length bytes=300000 sum={}", sum_of(300_000))), "{}", s.read_log("error.log"));
    }
}

/// Under event, where each stream's body is relayed at once: six uploads
/// to a backend that holds them after their first piece, then two to one
/// that reads: those two are answered while the six are held (held DATA
/// gives the connection its window back; only the streams' own windows
/// stay shut). (A thread of prefork or worker works out one stream after
/// another: a held one holds those behind it, as under mod_http2 there.)
#[test]
fn event_held_uploads_leave_the_connection_its_window() {
    let b = start_backend();
    let s = start("event", &b, "");
    // Each held body is larger than what the sockets to the backend take,
    // so that its stream's window shuts with DATA held.
    let got = answers(client(&s, "uploads", &["/up/upload?id=free", "2", "300000", "/up/upload?id=stuck&hold", "6", "16000000"]));
    for answer in got {
        assert_eq!((answer.status(), answer.body()), (200, format!("framing=length bytes=300000 sum={}", sum_of(300_000))), "{}", s.read_log("error.log"));
    }
    backend_says(&b, "/release?id=stuck");
}

/// `proxy-sendcl` keeps reading the body whole and sending its length.
fn sendcl_still_sends_a_length(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "SetEnvIf Request_URI ^/up/ proxy-sendcl\n");
    let got = answers(client(&s, "post", &["/up/upload?id=whole", "100000", "chunked"]));
    assert_eq!(got[0].body(), format!("framing=length bytes=100000 sum={}", 100_000 * u64::from(b'x')));
}

fn slow_backend_shuts_the_window(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "");
    const LEN: usize = 32 << 20;
    let id = format!("held-{mpm}");
    let c = Waiting::start(&s, "push", &[&format!("/up/upload?id={id}&hold"), &LEN.to_string()]);
    let read = wait_backend(&b, &format!("/progress?id={id}"), "the backend's first piece", |n| n > 0);
    assert!(read <= 4096, "the held backend read {read}");
    // Spooled, the whole body would be taken while the backend holds; held
    // back, the windows shut and the client must stop.
    let mut sent = 0;
    loop {
        match c.lines.recv_timeout(Duration::from_secs(2)) {
            Ok(line) => match line.strip_prefix("SENT ") {
                Some(n) => sent = n.parse().unwrap(),
                None => panic!("the stream ended while the backend read nothing: {line}"),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("client.py ended"),
        }
    }
    // What may wait on the way: the stream window, 64 KB, and the socket
    // buffers between warren and the backend (at most a few MB each).
    assert!(sent < LEN / 2, "the client sent {sent} of {LEN} bytes while the backend read {read}");
    backend_says(&b, &format!("/release?id={id}"));
    let answer = Answer(serde_json::from_str(&c.finish(&s)).unwrap());
    assert_eq!(answer.body(), format!("framing=length bytes={LEN} sum={}", sum_of(LEN)), "{}", s.read_log("error.log"));
}

fn body_over_the_limit_gets_413(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "LimitRequestBody 100000\n");
    let got = answers(client(&s, "post", &["/up/upload?id=big", "300000", "chunked"]));
    assert_eq!(got[0].status(), 413, "{}", got[0].0);
    let log = s.wait_log("error.log", "LimitRequestBody");
    assert!(log.contains("127.0.0.1"), "{log}");
    // The backend never has the whole body: its connection, if it got as
    // far as the body, is cut.
    if backend_says(&b, "/progress?id=big").trim() != "-1" {
        wait_backend(&b, "/cut", "the backend's connection closed mid-body", |n| n == 1);
    }
    let got = answers(client(&s, "post", &["/up/upload?id=small", "1000", "chunked"]));
    assert_eq!(got[0].body(), format!("framing=chunked bytes=1000 sum={}", 1000 * u64::from(b'x')));
}

fn reset_mid_body_closes_the_backend_connection(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "");
    let id = format!("reset-{mpm}");
    let mut c = Waiting::start(&s, "uploadreset", &[&format!("/up/upload?id={id}"), "300000"]);
    assert_eq!(c.line(&s).as_deref(), Some("HALF"));
    wait_backend(&b, &format!("/progress?id={id}"), "the first half", |n| n > 0);
    c.go_on();
    assert_eq!(c.finish(&s), "OK 200");
    wait_backend(&b, "/cut", "the backend's connection closed mid-body", |n| n == 1);
}

fn stalled_body_is_reset_after_h2streamtimeout(mpm: &str) {
    let b = start_backend();
    let s = start(mpm, &b, "H2StreamTimeout 2\nLogLevel info\n");
    let id = format!("stall-{mpm}");
    let c = Waiting::start(&s, "upload", &[&format!("/up/upload?id={id}"), "300000"]);
    assert_eq!(c.line(&s).as_deref(), Some("HALF"));
    // The client sends nothing more: the stream is reset, the backend's
    // connection carrying half a body closed.
    wait_backend(&b, "/cut", "the backend's connection closed mid-body", |n| n == 1);
    s.wait_log("error.log", "H2StreamTimeout");
    drop(c);
}

each_mpm!(first_half_reaches_the_backend_before_the_second, curl_body_from_a_pipe_streams, parallel_uploads_on_one_connection, sendcl_still_sends_a_length, slow_backend_shuts_the_window, body_over_the_limit_gets_413, reset_mid_body_closes_the_backend_connection, stalled_body_is_reset_after_h2streamtimeout);
