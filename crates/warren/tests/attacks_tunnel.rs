//! Attacks on WebSocket tunnels by an anonymous client with a fast link
//! to a backend that takes whatever it is sent: flooding one tunnel as
//! fast as loopback goes, to hold the event loop that carries every other
//! connection of the child while other clients wait; and opening tunnel
//! after tunnel from one address, to take all of a child's connections
//! (under event a tunnel holds no thread, so nothing else bounds them).

mod common;
#[path = "proxy_websocket/fixture.rs"]
#[allow(dead_code)]
mod fixture;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use fixture::handshake;

/// One child where a child holds many connections: the flood and the
/// other client share one event loop (under worker, one child's threads).
/// A prefork child is one connection: the harness's several children.
fn one_child(mpm: &str) -> &'static str {
    match mpm {
        "prefork" => "",
        _ => "StartServers 1\nServerLimit 1\nMinSpareThreads 1\nMaxSpareThreads 8\nThreadsPerChild 8\nMaxRequestWorkers 8\n",
    }
}

/// A backend that answers each request 101 and then reads and drops all
/// that comes, as fast as it comes; counts the bytes.
fn sink_backend() -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let taken = Arc::new(AtomicU64::new(0));
    let count = taken.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let count = count.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match conn.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let _ = conn.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n @ 1..) = conn.read(&mut buf) {
                    count.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
    });
    (port, taken)
}

/// A GET of `/` on a new connection, tried until it is answered 200 or 20 s
/// have passed (a loaded machine is slow; a starved loop never answers).
fn answered_within_deadline(s: &Server) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", s.port)) else { continue };
        c.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)))).unwrap();
        if c.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").is_err() {
            continue;
        }
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer);
        if answer.starts_with(b"HTTP/1.1 200 ") {
            return true;
        }
    }
    false
}

/// While one client floods its tunnel (the backend taking it all as fast
/// as it comes), another client's GET is answered, and the flood goes on.
fn a_flooding_tunnel_does_not_starve_other_clients(mpm: &str) {
    let (port, taken) = sink_backend();
    let s = Server::start(mpm, &format!("{}ProxyPass /ws/ ws://127.0.0.1:{port}/\n", one_child(mpm)));
    let (mut c, head) = handshake(&s, "/ws/flood");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = stop.clone();
    let flood = std::thread::spawn(move || {
        let chunk = vec![0x5au8; 1 << 16];
        while !flooding.load(Ordering::Relaxed) && c.write_all(&chunk).is_ok() {}
    });
    // The flood is flowing before the other client asks.
    settle(|| taken.load(Ordering::Relaxed) > 8 << 20);
    let before = taken.load(Ordering::Relaxed);
    assert!(before > 8 << 20, "the flood did not get going: {before} bytes");
    let answered = answered_within_deadline(&s);
    // And the tunnel still moves (the loop came back to it).
    settle(|| taken.load(Ordering::Relaxed) > before);
    let after = taken.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    assert!(answered, "a GET was not answered while a tunnel flooded");
    assert!(after > before, "the tunnel stopped moving once the GET was answered");
}

/// One address gets ProxyWebsocketMaxPerClient tunnels in a child; the
/// next upgrade is refused (503, a log line naming the client), ordinary
/// requests from it still served, and a tunnel that ends gives its place back.
fn one_address_cannot_take_every_tunnel(mpm: &str) {
    let (port, _) = sink_backend();
    let s = Server::start(mpm, &format!("{}ProxyWebsocketMaxPerClient 3\nProxyPass /ws/ ws://127.0.0.1:{port}/\n", one_child(mpm)));
    let mut open: Vec<TcpStream> = (0..3)
        .map(|i| {
            let (c, head) = handshake(&s, &format!("/ws/{i}"));
            assert!(head.starts_with("HTTP/1.1 101 "), "tunnel {i}: {head}");
            c
        })
        .collect();
    let (_, head) = handshake(&s, "/ws/one-too-many");
    assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
    let log = s.wait_log("error.log", "tunnels in this child (ProxyWebsocketMaxPerClient");
    assert!(log.lines().any(|l| l.contains("this client holds 3 tunnels in this child (ProxyWebsocketMaxPerClient") && l.contains("[client 127.0.0.1")), "{log}");
    assert_eq!(s.get("/").status, 200);
    // One closes: once the child has seen it go, a new one opens.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (c, head) = handshake(&s, "/ws/again");
        if head.starts_with("HTTP/1.1 101 ") {
            open.push(c);
            break;
        }
        assert!(head.starts_with("HTTP/1.1 503 ") && Instant::now() < deadline, "{head}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

each_mpm!(a_flooding_tunnel_does_not_starve_other_clients);

// The bound is counted in each child: a prefork child is one tunnel (its
// one thread), so it never applies there; MaxRequestWorkers bounds them.
mod event_per_client {
    #[test]
    fn one_address_cannot_take_every_tunnel() {
        super::one_address_cannot_take_every_tunnel("event")
    }
}
mod worker_per_client {
    #[test]
    fn one_address_cannot_take_every_tunnel() {
        super::one_address_cannot_take_every_tunnel("worker")
    }
}
