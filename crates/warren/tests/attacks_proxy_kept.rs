//! Attacks on the event loop's HTTP proxying. Its kept backend connections,
//! played by a backend that writes more than its answer (a second, stray
//! answer right behind the first, as a buggy application or one answering a
//! request it read differently does) and a client whose next request would
//! go on that connection: the stray bytes must never be taken as the next
//! request's answer (another client's answer reaching this one). The first
//! answer fills exactly one of the event loop's reads, so that the stray
//! bytes stay in the socket with no new readiness edge to come for them.
//! Then a backend that refuses an upload at its head (413) and closes with
//! the body unread, while the client goes on sending: the loop's next write
//! to it fails, and its answer must still reach the client, not a 502 of
//! warren's. Last, a body relayed as it arrives whose tail the loop has
//! read but held back (64 KB waiting for the backend already): it must
//! follow once the backend takes what waits, though the client, having sent
//! everything, raises no event.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;

/// The event loop's read size (serve's READ_CHUNK).
const LOOP_READ: usize = 16 * 1024;

/// A backend whose first answer is exactly [`LOOP_READ`] bytes with a
/// stray answer ("STRAY") right behind it in the same write; every later
/// request, on any connection, is answered "fresh".
fn stray_backend() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answered = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let answered = answered.clone();
            std::thread::spawn(move || serve(conn, &answered));
        }
    });
    port
}

fn serve(mut conn: TcpStream, answered: &AtomicUsize) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            got.drain(..end + 4);
            let answer = if answered.fetch_add(1, Ordering::SeqCst) == 0 {
                let head_of = |len: usize| format!("HTTP/1.1 200 OK\r\nContent-Length: {len:05}\r\nContent-Type: text/plain\r\n\r\n");
                let body_len = LOOP_READ - head_of(0).len();
                let mut a = head_of(body_len).into_bytes();
                a.resize(LOOP_READ, b'a');
                a.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nSTRAY");
                a
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nfresh".to_vec()
            };
            if conn.write_all(&answer).is_err() {
                return;
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Two GETs on one client connection (so one child, one loop): the second
/// would go on the backend connection kept from the first.
fn stray_bytes_are_not_the_next_answer(mpm: &str) {
    let port = stray_backend();
    let s = Server::start(mpm, &format!("ProxyPass /kept/ http://127.0.0.1:{port}/\n"));
    let mut c = s.connect();
    c.write_all(b"GET /kept/first HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut first = Vec::new();
    let mut buf = [0u8; 8192];
    while !response_complete(&first) {
        let n = read_some(&mut c, &mut buf).unwrap();
        assert!(n > 0, "closed after {} bytes", first.len());
        first.extend_from_slice(&buf[..n]);
    }
    let (r1, _) = parse_response(&first);
    assert_eq!(r1.status, 200);
    assert!(r1.body.iter().all(|&b| b == b'a'), "the first answer is the backend's first");
    c.write_all(b"GET /kept/second HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let (r2, _) = parse_response(&read_to_close(&mut c));
    assert_eq!(r2.text(), "fresh", "the second request got the bytes the backend wrote after the first answer");
}


/// A backend that answers 413 as soon as it has a request's head and
/// closes, the body unread.
fn refusing_backend() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                if backend::read_head(&mut conn).is_none() {
                    return;
                }
                let _ = conn.write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n");
            });
        }
    });
    port
}

fn an_early_refusal_reaches_the_client(mpm: &str) {
    let port = refusing_backend();
    let s = Server::start(mpm, &format!("ProxyPass /refuse/ http://127.0.0.1:{port}/\n"));
    const BODY: usize = 8 << 20;
    let mut c = s.connect();
    let mut writer = c.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(format!("POST /refuse/up HTTP/1.1\r\nHost: localhost\r\nContent-Length: {BODY}\r\n\r\n").as_bytes());
        for piece in vec![b'x'; BODY].chunks(64 * 1024) {
            if writer.write_all(piece).is_err() {
                return;
            }
        }
    });
    let (r, _) = parse_response(&read_to_close(&mut c));
    let _ = sender.join();
    assert_eq!(r.status, 413, "{}", r.text());
}


/// Whether a connection to `port` waits for its handshake (SYN_SENT in
/// /proc/net/tcp).
fn connecting_to(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let remote = format!(":{port:04X}");
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[2].ends_with(&remote) && f[3] == "02"
    })
}

/// Answers a request with the length of the body it read.
fn count_body_plain(mut conn: TcpStream) {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let end = loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    let Some(length) = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse::<usize>().ok()) else { return };
    let mut body = got.len() - end;
    while body < length {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => body += n,
        }
    }
    let text = body.to_string();
    let _ = conn.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}", text.len()).as_bytes());
}

/// The loop holds back what the client sent past its 64 KB for the backend
/// (the backend's connection still being made: its listen queue is full,
/// so the handshake waits for a SYN sent again): the client's whole body,
/// its last read short (the socket drained), partly taken. Once the
/// connection is made and the queued bytes go in one write, the rest must
/// follow: no event will come from the client, who has sent everything
/// (before, the upload waited for its clock to end it: 408).
fn a_held_back_body_follows(mpm: &str) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    nix::sys::socket::listen(&listener, nix::sys::socket::Backlog::new(0).unwrap()).unwrap();
    // Connections the backend does not accept yet, until its queue is full.
    let mut fillers = Vec::new();
    while let Ok(f) = TcpStream::connect_timeout(&std::net::SocketAddr::from(([127, 0, 0, 1], port)), std::time::Duration::from_millis(300)) {
        fillers.push(f);
    }
    let s = Server::start(mpm, &format!("ProxyPass /held/ http://127.0.0.1:{port}/\nRequestReadTimeout body=3\n"));
    let mut c = s.connect();
    let head = |body: usize| format!("POST /held/up HTTP/1.1\r\nHost: localhost\r\nContent-Length: {body}\r\nConnection: close\r\n\r\n");
    // Three full reads of the loop's and a short one (the loop's reads
    // take 16 KB): the 64 KB run out within the last one.
    let total = 3 * LOOP_READ + LOOP_READ - 1;
    let body = total - head(50_000).len();
    let mut request = head(body).into_bytes();
    request.resize(total, b'x');
    c.write_all(&request).unwrap();
    // Once warren's connection waits for its handshake, the backend accepts.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !connecting_to(port) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || count_body_plain(conn));
        }
    });
    drop(fillers);
    let (r, _) = parse_response(&read_to_close(&mut c));
    assert_eq!((r.status, r.text()), (200, body.to_string()));
}

each_mpm!(stray_bytes_are_not_the_next_answer, an_early_refusal_reaches_the_client, a_held_back_body_follows);
