//! Attacks on WebSocket tunnels, played by an anonymous client: holding
//! tunnels open to take every thread of the server (under prefork and
//! worker a tunnel holds a thread; under event the loop carries it, and
//! many tunnels take none), and asking for an upgrade where the route does
//! not allow one to reach the backend's other protocol.

mod common;
#[path = "proxy_websocket/fixture.rs"]
#[allow(dead_code)]
mod fixture;

use common::*;
use fixture::{handshake, Backends};

fn tunnels_cannot_take_every_thread(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &format!("ProxyPass /ws/ ws://127.0.0.1:{}/\n", b.echo));
    // Worker: at most 8 children (MaxRequestWorkers 32 of 4 threads), each
    // letting tunnels hold 3 threads: 24 tunnels at most. Prefork: a child
    // is a tunnel; 20 stay under MaxRequestWorkers. Event: no thread each.
    let attempts = if mpm == "prefork" { 20 } else { 30 };
    let mut open = Vec::new();
    let (mut upgraded, mut refused) = (0, 0);
    for _ in 0..attempts {
        let (c, head) = handshake(&s, "/ws/echo");
        if head.starts_with("HTTP/1.1 101 ") {
            upgraded += 1;
            open.push(c);
        } else {
            assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
            refused += 1;
        }
    }
    if mpm != "worker" {
        // Prefork: a process each; event: the loop carries them all.
        assert_eq!(upgraded, attempts);
    } else {
        assert!((3..=24).contains(&upgraded), "{upgraded} tunnels opened, {refused} refused");
        assert!(refused >= attempts - 24, "{upgraded} tunnels opened, {refused} refused");
        let log = s.wait_log("error.log", "every thread this child may give to tunnels holds one");
        assert!(log.contains("every thread this child may give to tunnels holds one"), "{log}");
    }
    // With the tunnels open, ordinary requests are still served.
    for _ in 0..5 {
        assert_eq!(s.get("/").status, 200);
    }
    // Clients that go give their threads back: as many tunnels open again.
    drop(open);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut again = Vec::new();
    while again.len() < upgraded.min(3) {
        let (c, head) = handshake(&s, "/ws/echo");
        if head.starts_with("HTTP/1.1 101 ") {
            again.push(c);
        } else {
            assert!(std::time::Instant::now() < deadline, "tunnels whose clients went still hold their threads: {head}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

each_mpm!(tunnels_cannot_take_every_thread);
