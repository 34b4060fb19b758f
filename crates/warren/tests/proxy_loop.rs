//! mod_proxy_http where the event MPM runs it on its loop (and, the same
//! behaviour, on the other MPMs' threads), against backends of the test's
//! own that misbehave on cue: an answer that comes in small pieces (head
//! split mid-field, chunked and sized bodies), a kept connection the
//! backend closes just as the next request arrives (a GET is sent again
//! on a new connection, a POST is not), a backend that stalls before its
//! head (504) or in the middle of its body past ProxyTimeout (the client's
//! connection is closed, its body cut), a client that does not read a
//! large answer while other requests are served, and a kept connection
//! closed by its backend while idle (still in the loop's epoll set) during
//! another backend's exchange for the same client connection.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use backend::{ask, read_head, Backend};
use common::*;

/// A backend on a thread of the test's: each connection it accepts is
/// handed to `serve` with its number (from 0).
struct Scripted {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Scripted {
    fn start(serve: fn(usize, TcpStream)) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                let n = count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(n, s));
            }
        });
        Scripted { port, accepted }
    }
}

/// Writes `pieces` one at a time, each its own segment: the pause only
/// keeps them apart on the wire (the test holds whatever way they arrive).
fn write_in_pieces(s: &mut TcpStream, pieces: &[&[u8]]) {
    s.set_nodelay(true).unwrap();
    for p in pieces {
        if s.write_all(p).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(15));
    }
}

fn in_pieces(_: usize, mut s: TcpStream) {
    while let Some(head) = read_head(&mut s) {
        if head.starts_with("GET /chunked") {
            write_in_pieces(&mut s, &[b"HTTP/1.1 200 OK\r\nContent-Ty", b"pe: text/plain\r\nTransfer-", b"Encoding: chunked\r\n\r\n5\r\nhel", b"lo\r\n6\r\n worl", b"d\r\n0\r\n", b"\r\n"]);
        } else if head.starts_with("GET /large") {
            // Larger than what the loop reads whole: streamed as it comes.
            let body = vec![b'z'; 200_000];
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n").unwrap();
            let parts: Vec<&[u8]> = body.chunks(50_000).collect();
            write_in_pieces(&mut s, &parts);
        } else {
            write_in_pieces(&mut s, &[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n", b"X-Piece: yes\r\n\r\nsized", b" body"]);
        }
    }
}

fn answers_in_pieces(mpm: &str) {
    let b = Scripted::start(in_pieces);
    let s = Server::start(mpm, &format!("ProxyPass /p/ http://127.0.0.1:{}/\n", b.port));
    let mut c = s.connect();
    let r = ask(&mut c, "GET /p/chunked HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
    assert_eq!((r.status, r.text()), (200, "hello world".to_string()));
    let r = ask(&mut c, "GET /p/sized HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
    assert_eq!((r.status, r.text(), r.header("X-Piece")), (200, "sized body".to_string(), Some("yes")));
    let r = ask(&mut c, "GET /p/large HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 200_000);
    assert!(r.body.iter().all(|&b| b == b'z'));
    // All three on one kept backend connection.
    assert_eq!(b.accepted.load(Ordering::SeqCst), 1);
}

/// The first connection answers one request, then closes as the next one
/// arrives, unanswered; later connections answer everything.
fn closes_kept(n: usize, mut s: TcpStream) {
    let mut served = 0;
    while let Some(head) = read_head(&mut s) {
        if n == 0 && served == 1 {
            return;
        }
        if head.starts_with("POST") {
            let mut body = [0u8; 4];
            let _ = s.read_exact(&mut body);
        }
        served += 1;
        let text = format!("connection {n} request {served}");
        let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len());
    }
}

fn kept_connection_closed_between_requests(mpm: &str) {
    let b = Scripted::start(closes_kept);
    let s = Server::start(mpm, &format!("ProxyPass /k/ http://127.0.0.1:{}/\nLogLevel debug\n", b.port));
    let mut c = s.connect();
    let get = "GET /k/a HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_eq!(ask(&mut c, get, false).text(), "connection 0 request 1");
    // The kept connection is closed under the GET: sent again on a new one.
    let r = ask(&mut c, get, false);
    assert_eq!((r.status, r.text()), (200, "connection 1 request 1".to_string()));
    assert_eq!(b.accepted.load(Ordering::SeqCst), 2);
    s.wait_log("error.log", "sending the request on a new one");
    // A POST is never sent twice: the same race gets it a 502, and the
    // client's connection goes on (its small body read to the end).
    let b = Scripted::start(closes_kept);
    let s = Server::start(mpm, &format!("ProxyPass /k/ http://127.0.0.1:{}/\n", b.port));
    let mut c = s.connect();
    assert_eq!(ask(&mut c, get, false).text(), "connection 0 request 1");
    let r = ask(&mut c, "POST /k/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n\r\nbody", false);
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(b.accepted.load(Ordering::SeqCst), 1);
    // The client's connection goes on.
    assert_eq!(ask(&mut c, get, false).text(), "connection 1 request 1");
}

/// Answers nothing for `/head`; for `/body`, a head and part of its body,
/// then nothing. The connection is held until the test ends.
fn stalls(_: usize, mut s: TcpStream) {
    let Some(head) = read_head(&mut s) else { return };
    if head.starts_with("GET /body") {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n");
        let _ = s.write_all(&[b'y'; 1000]);
    }
    std::thread::sleep(Duration::from_secs(60));
}

fn stall_past_proxy_timeout(mpm: &str) {
    let b = Scripted::start(stalls);
    let s = Server::start(mpm, &format!("ProxyPass /s/ http://127.0.0.1:{}/ timeout=1\n", b.port));
    let mut c = s.connect();
    let r = ask(&mut c, "GET /s/head HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
    assert_eq!(r.status, 504);
    assert_eq!(ask(&mut c, "GET /nothing-here HTTP/1.1\r\nHost: localhost\r\n\r\n", false).status, 404);
    s.wait_log("error.log", &format!("timeout reading the status line from 127.0.0.1:{}", b.port));
    // Stalled mid-body: the answer has begun, so the client's connection
    // is closed before the announced length.
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(b"GET /s/body HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("the connection was not closed: {e} after {} bytes", got.len()),
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(got.len() < 300_000);
    s.wait_log("error.log", "timed out (ProxyTimeout)");
}

fn slow_client_and_others_served(mpm: &str) {
    let backend = Backend::start();
    let s = Server::start(mpm, &format!("ProxyPass /api/ {}/\n", backend.url()));
    let n = 8 * 1024 * 1024;
    let mut slow = s.connect();
    slow.write_all(format!("GET /api/big?n={n} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes()).unwrap();
    // Its head has come; it reads nothing more for now.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        slow.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for i in 0..5 {
        let mut c = s.connect();
        let r = ask(&mut c, &format!("GET /api/other{i} HTTP/1.1\r\nHost: localhost\r\n\r\n"), false);
        assert_eq!(r.text(), format!("backend saw GET /other{i}\n"));
        assert!(Instant::now() < deadline);
    }
    let mut rest = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while dechunk(&rest).is_none() {
        let k = slow.read(&mut buf).unwrap();
        assert!(k > 0, "closed after {} bytes", rest.len());
        rest.extend_from_slice(&buf[..k]);
    }
    assert_eq!(dechunk(&rest).unwrap().0.len(), n);
}

/// Each request answered with its number on the connection, cacheable.
fn numbered_cacheable(n: usize, mut s: TcpStream) {
    let mut served = 0;
    while read_head(&mut s).is_some() {
        served += 1;
        let text = format!("answer {n}.{served}");
        let _ = write!(s, "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: {}\r\n\r\n{text}", text.len());
    }
}

/// A proxied answer under CacheEnable is stored and served from the cache
/// (the loop leaves such a request to the thread path, where the cache
/// captures answers): the backend is asked once for two requests.
fn cached_answers_are_not_taken_by_the_loop(mpm: &str) {
    let b = Scripted::start(numbered_cacheable);
    let dir = TempDir::new(&format!("proxy-loop-cache-{mpm}"));
    standard_site(&dir);
    let root = dir.0.join("cache");
    std::fs::create_dir(&root).unwrap();
    let _ = std::os::unix::fs::chown(&root, Some(nobody()), None);
    let conf = format!("ProxyPass /c/ http://127.0.0.1:{}/\nCacheRoot {}\nCacheEnable disk /c/\n", b.port, root.display());
    let s = Server::start_in(dir, mpm, &conf);
    let first = s.get("/c/page");
    assert_eq!((first.status, first.text()), (200, "answer 0.1".to_string()));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let again = s.get("/c/page");
        if again.header("Cache-Status").is_some_and(|v| v.contains("hit")) {
            assert_eq!(again.text(), "answer 0.1");
            break;
        }
        assert!(Instant::now() < deadline, "never a hit: {:?} {}", again.header("Cache-Status"), s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A kept connection stays in the loop's epoll set while idle, under the
/// token of the client connection that used it: backend A closes it while
/// that client connection's next request is being answered by backend B.
/// B's answer reaches the client whole, and A is asked again on a new
/// connection.
fn idle_connection_closed_during_another_exchange(mpm: &str) {
    let (close_a, closing) = std::sync::mpsc::channel::<()>();
    let (a_closed, wait_a) = std::sync::mpsc::channel::<()>();
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let a_port = a.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (n, mut s) in a.incoming().flatten().enumerate() {
            read_head(&mut s);
            let text = format!("a {n}");
            let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len());
            if n == 0 {
                let _ = closing.recv();
                drop(s);
                let _ = a_closed.send(());
            } else {
                // Held open until the test ends.
                std::mem::forget(s);
            }
        }
    });
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    let b_port = b.local_addr().unwrap().port();
    std::thread::spawn(move || {
        // Only the first exchange of all: the hang-up seen during it keeps
        // its connection from being kept, and the next one, on a new
        // connection, must not wait for a close that will not come again
        // (10 s, as long as the client's read timeout).
        let mut first = true;
        for mut s in b.incoming().flatten() {
            while read_head(&mut s).is_some() {
                // A's idle connection is closed while the first exchange runs.
                if std::mem::take(&mut first) {
                    let _ = close_a.send(());
                    let _ = wait_a.recv_timeout(Duration::from_secs(10));
                }
                let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nb 0");
            }
        }
    });
    let s = Server::start(mpm, &format!("ProxyPass /a/ http://127.0.0.1:{a_port}/\nProxyPass /b/ http://127.0.0.1:{b_port}/\n"));
    let mut c = s.connect();
    assert_eq!(ask(&mut c, "GET /a/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "a 0");
    assert_eq!(ask(&mut c, "GET /b/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "b 0");
    assert_eq!(ask(&mut c, "GET /a/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "a 1");
    assert_eq!(ask(&mut c, "GET /b/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).text(), "b 0");
}

each_mpm!(cached_answers_are_not_taken_by_the_loop, answers_in_pieces, kept_connection_closed_between_requests, stall_past_proxy_timeout, slow_client_and_others_served, idle_connection_closed_during_another_exchange);
