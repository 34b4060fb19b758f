//! Attacks on WebSocket tunnels, played by an anonymous client: holding
//! tunnels open to take every thread of the server (under prefork and
//! worker a tunnel holds a thread; under event the loop carries it, and
//! many tunnels take none), and flooding a tunnel with one endless frame
//! toward a backend that reads nothing. And by a hostile backend: garbage
//! after its 101, a 101 without `Upgrade: websocket`, no HTTP at all.

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


/// A backend of the attacker's (a socket in the test): reads one request
/// head, sends `answer`, then leaves the connection open without reading
/// until the test ends.
fn hostile_backend(answer: Vec<u8>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match std::io::Read::read(&mut conn, &mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let _ = std::io::Write::write_all(&mut conn, &answer);
            held.push(conn);
        }
    });
    port
}

const SWITCHING: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";

/// What a backend sends after its 101 is the tunnel's, passed on unread
/// and unchanged (as Apache's mod_proxy_wstunnel does): garbage that is no
/// WebSocket frame reaches the client as it was, and nobody else.
fn backend_garbage_after_101(mpm: &str) {
    let garbage: Vec<u8> = (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let port = hostile_backend([SWITCHING, &garbage].concat());
    let s = Server::start(mpm, &format!("ProxyPass /ws/ ws://127.0.0.1:{port}/\n"));
    let (mut c, head) = handshake(&s, "/ws/x");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let mut got = vec![0u8; garbage.len()];
    std::io::Read::read_exact(&mut c, &mut got).unwrap();
    assert!(got == garbage, "the bytes after the 101 came changed");
    // Another client is served as usual.
    assert_eq!(s.get("/").status, 200);
}

/// A 101 without `Upgrade: websocket`, and a head that is no HTTP at all,
/// are the backend's failure: 502, with an error-log line naming it.
fn backend_bad_switch_is_502(mpm: &str) {
    let no_upgrade = hostile_backend(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n".to_vec());
    let other = hostile_backend(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n".to_vec());
    let garbage = hostile_backend(b"\x00\xff\xfe not HTTP at all\r\n\r\n".to_vec());
    let s = Server::start(mpm, &format!("ProxyPass /a/ ws://127.0.0.1:{no_upgrade}/\nProxyPass /b/ ws://127.0.0.1:{other}/\nProxyPass /c/ ws://127.0.0.1:{garbage}/\n"));
    for (path, port) in [("/a/x", no_upgrade), ("/b/x", other), ("/c/x", garbage)] {
        let (_, head) = handshake(&s, path);
        assert!(head.starts_with("HTTP/1.1 502 "), "{path}: {head}");
        let log = s.wait_log("error.log", &format!("127.0.0.1:{port}"));
        assert!(log.contains(&format!("127.0.0.1:{port}")), "{log}");
    }
    assert!(s.read_log("error.log").contains("101 Switching Protocols without Upgrade: websocket"));
    assert_eq!(s.get("/").status, 200);
}

/// A client sending one huge frame (a 2^62-byte length, then as many bytes
/// as it can) to a backend that reads nothing: the tunnel holds at most
/// its high-water mark, so the client's writes stop; the server does not
/// buffer what the backend has not taken.
fn huge_frame_meets_backpressure(mpm: &str) {
    let port = hostile_backend(SWITCHING.to_vec());
    let s = Server::start(mpm, &format!("ProxyPass /ws/ ws://127.0.0.1:{port}/\n"));
    let (mut c, head) = handshake(&s, "/ws/x");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let mut frame = vec![0x82u8, 0x80 | 127];
    frame.extend_from_slice(&(1u64 << 62).to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    std::io::Write::write_all(&mut c, &frame).unwrap();
    // A blocked write (2 s with nothing taken) ends the flood.
    c.set_write_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    let mut sent = 0usize;
    while sent < 256 << 20 {
        match std::io::Write::write(&mut c, &chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    // The kernel's buffers on three sockets, plus the tunnel's 256 KB.
    assert!(sent < 48 << 20, "{} MB went into a tunnel whose backend reads nothing", sent >> 20);
    assert_eq!(s.get("/").status, 200);
}

each_mpm!(tunnels_cannot_take_every_thread, backend_garbage_after_101, backend_bad_switch_is_502, huge_frame_meets_backpressure);
