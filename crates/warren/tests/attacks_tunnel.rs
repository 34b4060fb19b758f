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

/// Several children, among which one client's tunnels spread: a prefork
/// child holds one tunnel, so the client's three are in three children.
/// (Worker and event children take connections as the kernel wakes them,
/// event filling one loop first: their tunnels spread as it happens.)
fn several_children(mpm: &str) -> &'static str {
    match mpm {
        "prefork" => "StartServers 5\nMinSpareServers 5\nMaxSpareServers 10\n",
        _ => "StartServers 3\nServerLimit 3\nMinSpareThreads 1\nMaxSpareThreads 24\nThreadsPerChild 8\nMaxRequestWorkers 24\n",
    }
}

/// Opens the client's three tunnels; the next upgrade is refused (503, a
/// log line naming the client).
fn take_three(s: &Server) -> Vec<TcpStream> {
    let open: Vec<TcpStream> = (0..3)
        .map(|i| {
            let (c, head) = handshake(s, &format!("/ws/{i}"));
            assert!(head.starts_with("HTTP/1.1 101 "), "tunnel {i}: {head}");
            c
        })
        .collect();
    let (_, head) = handshake(s, "/ws/one-too-many");
    assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
    open
}

/// Upgrades until one is let through (within a deadline).
fn opens_again(s: &Server) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (c, head) = handshake(s, "/ws/again");
        if head.starts_with("HTTP/1.1 101 ") {
            return c;
        }
        assert!(head.starts_with("HTTP/1.1 503 ") && Instant::now() < deadline, "{head}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One address gets ProxyWebsocketMaxPerClient tunnels in the whole
/// server, however many children hold them; the next upgrade is refused,
/// ordinary requests from it still served, and a tunnel that ends gives
/// its place back.
fn one_address_cannot_take_every_tunnel(mpm: &str) {
    let (port, _) = sink_backend();
    let s = Server::start(mpm, &format!("{}ProxyWebsocketMaxPerClient 3\nProxyPass /ws/ ws://127.0.0.1:{port}/\n", several_children(mpm)));
    let mut open = take_three(&s);
    let log = s.wait_log("error.log", "tunnels (ProxyWebsocketMaxPerClient");
    assert!(log.lines().any(|l| l.contains("this client holds 3 tunnels (ProxyWebsocketMaxPerClient") && l.contains("[client 127.0.0.1")), "{log}");
    assert_eq!(s.get("/").status, 200);
    // One closes: once its child has seen it go, a new one opens.
    drop(open.pop());
    open.push(opens_again(&s));
}

/// A child killed (SIGKILL) with the client's tunnels open gives their
/// places back: the client is not refused for tunnels nobody holds.
fn tunnels_of_a_killed_child_are_given_back(mpm: &str) {
    let (port, _) = sink_backend();
    let s = Server::start(mpm, &format!("{}ProxyWebsocketMaxPerClient 3\nProxyPass /ws/ ws://127.0.0.1:{port}/\n", several_children(mpm)));
    let open = take_three(&s);
    for pid in s.children() {
        unsafe_kill(pid, 9);
    }
    drop(open);
    let _again = opens_again(&s);
}

each_mpm!(a_flooding_tunnel_does_not_starve_other_clients, one_address_cannot_take_every_tunnel, tunnels_of_a_killed_child_are_given_back);
