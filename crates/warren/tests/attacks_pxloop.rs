//! Attacks on proxying as the event loop does it (and, the same rules, on
//! the other MPMs' threads), played by a hostile or broken HTTP backend
//! that tries to get its bytes to a client they are not for: a body longer
//! than its Content-Length (the surplus must never become the next
//! request's answer), an unasked second answer sent after the first, a
//! head larger than warren takes, a head that smuggles a line break or
//! announces two lengths. Each gets a 502 or its own client's answer only,
//! and the clients' connections go on. And by a client filling a busy
//! unix-socket backend's listen queue for a moment: no outage follows.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use backend::{ask, read_head};
use common::*;

/// The hostile backend: what it answers to each path; `/n` tells which
/// request number of all it is, so that a misdelivered answer shows.
fn hostile(mut s: TcpStream, count: Arc<AtomicUsize>) {
    while let Some(head) = read_head(&mut s) {
        let n = count.fetch_add(1, Ordering::SeqCst);
        let path = head.split(' ').nth(1).unwrap_or("").to_string();
        let own = format!("answer {n}");
        let plain = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{own}", own.len());
        let reply = match path.as_str() {
            // The surplus looks like an answer of its own.
            "/longer" => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstolen".to_string(),
            "/second" => format!("{plain}HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstolen"),
            "/huge" => format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 2\r\n\r\nok", "a".repeat(70 * 1024)),
            "/split" => "HTTP/1.1 200 OK\r\nX-A: 1\rSet-Cookie: evil=1\r\nContent-Length: 2\r\n\r\nok".to_string(),
            "/twolengths" => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 6\r\n\r\nokokok".to_string(),
            _ => plain,
        };
        if s.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn start_hostile() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || hostile(s, count));
        }
    });
    port
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

fn surplus_never_reaches_another_request(mpm: &str) {
    let port = start_hostile();
    let s = Server::start(mpm, &format!("ProxyPass /h/ http://127.0.0.1:{port}/\n"));
    for path in ["/h/longer", "/h/second"] {
        let mut c = s.connect();
        let r = ask(&mut c, &get(path), false);
        assert_eq!(r.status, 200, "{path}");
        assert_ne!(r.text(), "stolen");
        // Every later request, on this client connection and on others,
        // gets the answer the backend gave it.
        for _ in 0..3 {
            let r = ask(&mut c, &get("/h/plain"), false);
            assert!(r.text().starts_with("answer "), "{path}: {}", r.text());
            let mut other = s.connect();
            let r = ask(&mut other, &get("/h/plain"), false);
            assert!(r.text().starts_with("answer "), "{path}: {}", r.text());
        }
    }
}

fn broken_heads_get_502(mpm: &str) {
    let port = start_hostile();
    let s = Server::start(mpm, &format!("ProxyPass /h/ http://127.0.0.1:{port}/\n"));
    let mut c = s.connect();
    for path in ["/h/huge", "/h/split", "/h/twolengths"] {
        let r = ask(&mut c, &get(path), false);
        assert_eq!(r.status, 502, "{path}: {:?}", r.headers);
        assert!(r.header("Set-Cookie").is_none());
        assert!(ask(&mut c, &get("/h/plain"), false).text().starts_with("answer "), "after {path}");
    }
    let log = s.wait_log("error.log", "conflicting Content-Length");
    assert!(log.contains(&format!("error reading the status line from 127.0.0.1:{port}")), "{log}");
}

/// A unix-socket backend that accepts nothing until told (a line on its
/// standard input), its backlog 0; then it answers each request `ok`.
const SLOW_ACCEPTER: &str = r#"
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
s.listen(0)
print("ready", flush=True)
sys.stdin.readline()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        got = b""
        while b"\r\n\r\n" not in got:
            more = c.recv(4096)
            if not more:
                break
            got += more
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    except OSError:
        pass
    c.close()
"#;

/// Any client can fill a busy unix-socket backend's backlog for a moment:
/// a connect refused for that (EAGAIN) is this request's 503 at most,
/// never the backend marked down for `retry=` (which made every request
/// of the next 60 s a 503 once the backend had caught up).
fn a_full_backlog_is_no_outage(mpm: &str) {
    use std::io::BufRead;
    let sock = std::env::temp_dir().join(format!("warren-pxloop-{}-{mpm}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let mut backend = std::process::Command::new("python3").arg("-c").arg(SLOW_ACCEPTER).arg(&sock).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(backend.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    // The one connection a backlog of 0 holds, with its request.
    let mut filler = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    filler.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let s = Server::start(mpm, &format!("ProxyPass /u/ unix:{}|http://localhost/\n", sock.display()));
    let first = std::thread::scope(|scope| {
        let asking = scope.spawn(|| s.get("/u/x"));
        // The event loop answers at once; a thread waits in connect() for the backlog.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !asking.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        backend.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        backend.stdin.as_mut().unwrap().flush().unwrap();
        asking.join().unwrap()
    });
    assert!(matches!(first.status, 200 | 503), "{}", first.status);
    // The backend now drains its queue at its own pace: a request may
    // still find it full (a 503 for that request alone), but within 20 s,
    // far inside retry='s 60, one is answered: the backend was not marked down.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let next = loop {
        let r = s.get("/u/x");
        if r.status == 200 || std::time::Instant::now() >= deadline {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = backend.kill();
    let _ = backend.wait();
    let _ = std::fs::remove_file(&sock);
    assert_eq!((next.status, next.text()), (200, "ok".to_string()), "the backend was marked down for a full backlog; error log:\n{}", s.read_log("error.log"));
    drop(filler);
}

/// A unix-socket backend whose listen queue stays full holds no thread past
/// the route's timeout: the request gets its answer (a thread's connect is
/// bounded by the socket's send timeout; it used to wait for good).
fn a_backlog_that_stays_full_holds_no_thread(mpm: &str) {
    use std::io::BufRead;
    let sock = std::env::temp_dir().join(format!("warren-pxloop-full-{}-{mpm}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let mut backend = std::process::Command::new("python3").arg("-c").arg(SLOW_ACCEPTER).arg(&sock).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(backend.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let filler = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    let s = Server::start(mpm, &format!("ProxyPass /u/ unix:{}|http://localhost/ timeout=1\n", sock.display()));
    let r = s.get("/u/x");
    let _ = backend.kill();
    let _ = backend.wait();
    let _ = std::fs::remove_file(&sock);
    drop(filler);
    assert_eq!(r.status, 503, "{}", s.read_log("error.log"));
}

each_mpm!(surplus_never_reaches_another_request, broken_heads_get_502, a_full_backlog_is_no_outage, a_backlog_that_stays_full_holds_no_thread);
