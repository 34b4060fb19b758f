//! WebSockets through the reverse proxy under each MPM, against a real
//! WebSocket server (the Python `websockets` package, fixture
//! proxy_websocket/backend.py): `ProxyPass ws://` (mod_proxy_wstunnel) and
//! `ProxyPass http:// upgrade=websocket` pass the handshake on, the
//! backend's 101 reaches the client, and frames go both ways until a side
//! closes; ProxyWebsocketIdleTimeout closes an idle tunnel; a route without
//! the upgrade forwards the request without Upgrade; a non-101 answer to
//! an upgrade is an ordinary answer; a 101 nobody asked for is a 502;
//! `wss://` to a TLS backend verified with SSLProxyCACertificateFile.
//!
//! The client is a raw socket doing RFC 6455's handshake and masked frames.
//! The Python comes from WARREN_TEST_PYTHON, else /opt/warren-test-venv
//! (test.sh installs `websockets` there).

mod common;
#[path = "proxy_websocket/fixture.rs"]
mod fixture;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use fixture::{frame, handshake, read_frame, send_frame, Backends, ACCEPT, KEY};

fn start(mpm: &str, b: &Backends, extra: &str) -> Server {
    let conf = format!(
        "ProxyPass /ws/ ws://127.0.0.1:{e}/\nProxyPass /app/ http://127.0.0.1:{e}/ upgrade=websocket\nProxyPass /plain/ http://127.0.0.1:{e}/\nProxyPass /stray/ http://127.0.0.1:{s}/\nProxyPass /stray-ws/ ws://127.0.0.1:{s}/\n{extra}",
        e = b.echo,
        s = b.stray
    );
    Server::start(mpm, &conf)
}

/// Reads until the connection ends; false if it is still open at the deadline.
fn closes_within(c: &mut TcpStream, limit: Duration) -> bool {
    c.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn echo_through_the_tunnel(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    for path in ["/ws/echo", "/app/echo"] {
        let (mut c, head) = handshake(&s, path);
        assert!(head.starts_with("HTTP/1.1 101 "), "{path}: {head}");
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains("\r\nupgrade: websocket\r\n"), "{path}: {head}");
        assert!(lower.contains("\r\nconnection: upgrade\r\n"), "{path}: {head}");
        assert!(head.contains(&format!("Sec-WebSocket-Accept: {ACCEPT}\r\n")), "{path}: {head}");
        assert!(!lower.contains("content-length") && !lower.contains("transfer-encoding"), "{path}: {head}");
        send_frame(&mut c, 1, b"hello");
        assert_eq!(read_frame(&mut c), (1, b"hello".to_vec()));
        // Larger than the tunnel's read chunks, both ways.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        send_frame(&mut c, 2, &big);
        let (op, back) = read_frame(&mut c);
        assert_eq!(op, 2);
        assert!(back == big, "{path}: the 300000-byte message came back as {} bytes, changed", back.len());
        // The handshake as the backend got it.
        send_frame(&mut c, 1, b"headers");
        let (_, seen) = read_frame(&mut c);
        let seen = String::from_utf8_lossy(&seen).to_ascii_lowercase();
        assert!(seen.contains("upgrade: websocket") && seen.contains("connection: upgrade"), "{seen}");
        assert!(seen.contains(&format!("sec-websocket-key: {}", KEY.to_ascii_lowercase())), "{seen}");
        assert!(seen.contains("x-forwarded-for: 127.0.0.1"), "{seen}");
        assert!(!seen.contains("keep-alive"), "{seen}");
        // The backend closes: its close frame comes, then the end.
        send_frame(&mut c, 1, b"close");
        let (op, _) = read_frame(&mut c);
        assert_eq!(op, 8, "{path}: expected the backend's close frame");
        // The closing handshake's answer: the backend then closes at once.
        send_frame(&mut c, 8, &1000u16.to_be_bytes());
        assert!(closes_within(&mut c, Duration::from_secs(20)), "{path}: the tunnel stayed open after the backend closed");
    }
    // The client closes: the server goes on serving others.
    let (c, head) = handshake(&s, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    drop(c.shutdown(std::net::Shutdown::Both));
    let (mut c, _) = handshake(&s, "/app/echo");
    send_frame(&mut c, 1, b"again");
    assert_eq!(read_frame(&mut c), (1, b"again".to_vec()));
}

fn wss_backend(mpm: &str) {
    let dir = TempDir::new("proxy-wss-ca");
    let certs = tls::Certs::make(&dir.0);
    let b = Backends::start_tls(&certs.cert("localhost"), &certs.key("localhost"));
    let conf = format!("SSLProxyEngine On\nSSLProxyVerify require\nSSLProxyCACertificateFile {}\nProxyPass /wss/ wss://localhost:{}/\n", certs.ca().display(), b.echo);
    let s = Server::start(mpm, &conf);
    let (mut c, head) = handshake(&s, "/wss/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head.contains(&format!("Sec-WebSocket-Accept: {ACCEPT}\r\n")), "{head}");
    // Many frames in a row: TLS records read ahead are not left waiting.
    for i in 0..50 {
        send_frame(&mut c, 1, format!("message {i}").as_bytes());
    }
    for i in 0..50 {
        assert_eq!(read_frame(&mut c), (1, format!("message {i}").into_bytes()));
    }
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    send_frame(&mut c, 2, &big);
    assert!(read_frame(&mut c) == (2, big), "the 200000-byte message came back changed");
    send_frame(&mut c, 1, b"close");
    assert_eq!(read_frame(&mut c).0, 8);
    send_frame(&mut c, 8, &1000u16.to_be_bytes());
    assert!(closes_within(&mut c, Duration::from_secs(20)), "the tunnel stayed open after the backend closed");
}

fn idle_tunnel_is_closed(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "ProxyWebsocketIdleTimeout 1\nLogLevel debug\n");
    let (mut c, head) = handshake(&s, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    send_frame(&mut c, 1, b"ping");
    assert_eq!(read_frame(&mut c), (1, b"ping".to_vec()));
    let quiet_since = Instant::now();
    assert!(closes_within(&mut c, Duration::from_secs(20)), "an idle tunnel stayed open past ProxyWebsocketIdleTimeout");
    assert!(quiet_since.elapsed() >= Duration::from_millis(900), "closed after {:?}, before its idle timeout", quiet_since.elapsed());
    let log = s.wait_log("error.log", "idle for 1 s");
    assert!(log.contains(&format!("WebSocket tunnel to 127.0.0.1:{} idle for 1 s", b.echo)), "{log}");
    // Without ProxyWebsocketIdleTimeout, the route's timeout= is the idle limit.
    let s = start(mpm, &b, &format!("ProxyPass /short/ ws://127.0.0.1:{}/ timeout=1\n", b.echo));
    let (mut c, head) = handshake(&s, "/short/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    send_frame(&mut c, 1, b"ping");
    assert_eq!(read_frame(&mut c), (1, b"ping".to_vec()));
    let quiet_since = Instant::now();
    assert!(closes_within(&mut c, Duration::from_secs(20)), "an idle tunnel stayed open past its route's timeout=");
    assert!(quiet_since.elapsed() >= Duration::from_millis(900), "closed after {:?}, before its idle timeout", quiet_since.elapsed());
}

fn upgrade_only_where_the_route_allows(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    // No upgrade=websocket: the request goes on without Upgrade, and the
    // WebSocket server refuses a plain GET with 426.
    let (_, head) = handshake(&s, "/plain/echo");
    assert!(head.starts_with("HTTP/1.1 426 "), "{head}");
    // A refusal of the upgrade is an ordinary answer, on a connection that goes on.
    let (mut c, head) = handshake(&s, "/app/forbidden");
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    let len: usize = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|l| l.trim().parse().ok()).expect("Content-Length");
    let mut body = vec![0u8; len];
    c.read_exact(&mut body).unwrap();
    assert_eq!(body, b"not here\n");
    // A 101 the request did not ask for (its Upgrade was not passed on) is a 502.
    let (_, head) = handshake(&s, "/stray/x");
    assert!(head.starts_with("HTTP/1.1 502 "), "{head}");
    let log = s.wait_log("error.log", "101 Switching Protocols to a request that asked for no upgrade");
    assert!(log.contains(&format!("127.0.0.1:{}", b.stray)), "{log}");
    // A plain request to a ws:// route is an ordinary request: the 101 is a 502.
    let r = s.get("/stray-ws/x");
    assert_eq!(r.status, 502);
}

/// The threads of the server's children, from /proc.
fn child_threads(s: &Server) -> usize {
    s.children().iter().map(|pid| std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0)).sum()
}

/// The children's thread count once it has stayed the same for half a
/// second (threads start as a child starts; bounded by a deadline).
fn steady_threads(s: &Server) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut last, mut same) = (child_threads(s), 0);
    while same < 10 {
        assert!(Instant::now() < deadline, "the children's threads never settled");
        std::thread::sleep(Duration::from_millis(50));
        let now = child_threads(s);
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}

/// Under event, the loop carries the tunnels: twelve idle tunnels (more
/// than the two children's eight threads) add no thread and keep none
/// busy. Under prefork and worker a tunnel holds its thread (a process
/// under prefork), as Apache's do: server-status shows them busy.
fn idle_tunnels_and_threads(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "<Location /server-status>\nSetHandler server-status\n</Location>\nExtendedStatus On\n");
    let tunnels = if mpm == "event" { 12 } else { 3 };
    // Both children up, with every thread they start with.
    s.wait_children(2);
    let threads_before = steady_threads(&s);
    let mut open = Vec::new();
    for i in 0..tunnels {
        let (mut c, head) = handshake(&s, "/ws/echo");
        assert!(head.starts_with("HTTP/1.1 101 "), "tunnel {i}: {head}");
        send_frame(&mut c, 1, format!("tunnel {i}").as_bytes());
        assert_eq!(read_frame(&mut c), (1, format!("tunnel {i}").into_bytes()));
        open.push(c);
    }
    if mpm == "event" {
        assert_eq!(child_threads(&s), threads_before, "idle tunnels took threads");
        let busy: usize = status_auto(&s)["BusyWorkers"].parse().unwrap();
        assert!(busy < tunnels, "{busy} busy workers with {tunnels} idle tunnels");
    } else {
        wait_status(&s, "every tunnel holding a worker", &|st| st["BusyWorkers"].parse::<usize>().unwrap() >= tunnels);
    }
    // Every tunnel still carries frames, and other requests are served.
    assert_eq!(s.get("/").status, 200);
    for (i, c) in open.iter_mut().enumerate() {
        send_frame(c, 1, format!("again {i}").as_bytes());
        assert_eq!(read_frame(c), (1, format!("again {i}").into_bytes()));
    }
}

/// A client's half-close reaches the backend, and what the backend sends
/// after it still reaches the client: the echo server answers the close
/// frame and closes, which ends the tunnel; then its request is logged.
fn half_close_is_passed_on(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    let (mut c, head) = handshake(&s, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    send_frame(&mut c, 8, &1000u16.to_be_bytes());
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_frame(&mut c).0, 8, "the backend's close frame did not come after the client's half-close");
    assert!(closes_within(&mut c, Duration::from_secs(20)), "the tunnel stayed open after both sides closed");
    // The request is logged once its tunnel has ended.
    let log = s.wait_log("access.log", "\"GET /ws/echo HTTP/1.1\" 101 ");
    assert_eq!(log.matches("\"GET /ws/echo HTTP/1.1\" 101 ").count(), 1, "{log}");
}

/// A graceful restart (HUP) leaves the tunnels of the old generation open
/// until they end, as Apache's children finish what they serve: frames
/// still go both ways through the old child, for longer than the 2 s
/// (Timeout) its other requests would get to finish; once its tunnel
/// closes, the old generation exits, and the new one takes tunnels.
fn tunnel_outlives_a_graceful_restart(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "Timeout 2\nProxyWebsocketIdleTimeout 30\nLogLevel debug\n");
    let (mut old, head) = handshake(&s, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let before = s.children();
    unsafe_kill(s.pid(), libc::SIGHUP);
    s.wait_log("error.log", "SIGHUP received");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.children().iter().any(|p| !before.contains(p)) {
        assert!(Instant::now() < deadline, "no new child after the graceful restart: {:?}", s.children());
        std::thread::sleep(Duration::from_millis(50));
    }
    let restarted = Instant::now();
    let mut i = 0;
    while restarted.elapsed() < Duration::from_secs(3) {
        send_frame(&mut old, 1, format!("after the restart {i}").as_bytes());
        assert_eq!(read_frame(&mut old), (1, format!("after the restart {i}").into_bytes()));
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    // The old generation goes once its tunnel has.
    drop(old);
    while before.iter().any(|p| children_of(s.pid()).contains(p)) {
        assert!(Instant::now() < deadline + Duration::from_secs(30), "old children {before:?} still there after their tunnel closed; {:?} {}", before.iter().map(|p| std::fs::read_to_string(format!("/proc/{p}/wchan")).unwrap_or_default()).collect::<Vec<_>>(), s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut new, head) = handshake(&s, "/app/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    send_frame(&mut new, 1, b"new");
    assert_eq!(read_frame(&mut new), (1, b"new".to_vec()));
}

/// A stop that is not graceful (SIGTERM) closes the tunnels: under event
/// the loop ends them at once (logged), where a graceful stop would wait
/// for them; under prefork and worker the thread holding one is ended with
/// its child by the parent, after the wait it gives a stopping child. The
/// event child ends its tunnels itself and exits by its own stop deadline,
/// which the parent's wait outlasts: it is never killed.
fn stop_closes_tunnels(mpm: &str) {
    let b = Backends::start();
    let mut s = start(mpm, &b, "LogLevel debug\n");
    let (mut c, head) = handshake(&s, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    send_frame(&mut c, 1, b"before");
    assert_eq!(read_frame(&mut c), (1, b"before".to_vec()));
    let stopper = std::thread::spawn(move || {
        s.stop();
        s
    });
    assert!(closes_within(&mut c, STOP_GRACE), "the tunnel stayed open through a stop");
    let s = stopper.join().unwrap();
    let log = s.read_log("error.log");
    if mpm == "event" {
        assert!(log.contains(&format!("WebSocket tunnel to 127.0.0.1:{} closed: the server is stopping", b.echo)), "{log}");
        assert!(!log.contains("still running, killing it"), "{log}");
    }
}

/// Messages as they come in practice: one frame in two pieces that reach
/// the server apart (the second must be read though the first read found
/// the socket drained), and bursts of many frames in one write, whose
/// echoes come back in pieces of their own.
fn pieces_and_bursts(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    let (mut c, head) = handshake(&s, "/ws/echo");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    for i in 0..20 {
        let f = frame(1, format!("in two pieces {i}").as_bytes());
        let (first, second) = f.split_at(f.len() / 2);
        c.write_all(first).unwrap();
        // A pause lets the pieces arrive apart (the test holds either way).
        std::thread::sleep(Duration::from_millis(5));
        c.write_all(second).unwrap();
        assert_eq!(read_frame(&mut c), (1, format!("in two pieces {i}").into_bytes()));
    }
    for round in 0..5 {
        let burst: Vec<u8> = (0..200).flat_map(|i| frame(1, format!("burst {round} {i}").as_bytes())).collect();
        c.write_all(&burst).unwrap();
        for i in 0..200 {
            assert_eq!(read_frame(&mut c), (1, format!("burst {round} {i}").into_bytes()));
        }
    }
}

plain_only! {
    /// Not over TLS (proxy_websocket_tls.rs): the harness's TLS relay
    /// writes one way at a time, blocking, so a tunnel full both ways would
    /// hold the relay itself for good.
    mod backpressure {
        use super::*;

        /// Backpressure both ways, and what follows it: the client sends without
        /// reading until its socket takes no more (the echoes fill the server's
        /// way back, the server stops reading the backend, the backend stops
        /// reading, the server stops reading the client), then reads everything
        /// while the rest is sent. Each side the server stopped reading because
        /// its buffer was full must be read again once there is room, though no
        /// new data arrives on it to say so.
        fn full_tunnel_drains_when_read_again(mpm: &str) {
            let b = Backends::start();
            let s = start(mpm, &b, "");
            let (mut c, head) = handshake(&s, "/ws/echo");
            assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
            // Small buffers at the client: the tunnel fills within what is sent
            // (the server's and the backend's own buffers grow to a few MB each).
            nix::sys::socket::setsockopt(&c, nix::sys::socket::sockopt::SndBuf, &65536).unwrap();
            nix::sys::socket::setsockopt(&c, nix::sys::socket::sockopt::RcvBuf, &65536).unwrap();
            let messages = 3072;
            let message = |i: usize| -> Vec<u8> { (0..16 * 1024).map(|j| ((i * 7 + j) % 251) as u8).collect() };
            let stream: Vec<u8> = (0..messages).flat_map(|i| frame(2, &message(i))).collect();
            c.set_nonblocking(true).unwrap();
            let mut sent = 0;
            let full = loop {
                match c.write(&stream[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break true,
                    Err(e) => panic!("sending: {e}"),
                }
                if sent == stream.len() {
                    break false;
                }
            };
            assert!(full, "{} bytes went without the tunnel filling: backpressure was not reached", stream.len());
            c.set_nonblocking(false).unwrap();
            let mut writer = c.try_clone().unwrap();
            let rest = stream[sent..].to_vec();
            let sending = std::thread::spawn(move || writer.write_all(&rest));
            for i in 0..messages {
                let (op, got) = read_frame(&mut c);
                assert!(op == 2 && got == message(i), "message {i} of {messages} came back changed ({} bytes, opcode {op})", got.len());
            }
            sending.join().unwrap().unwrap();
            send_frame(&mut c, 1, b"after");
            assert_eq!(read_frame(&mut c), (1, b"after".to_vec()));
        }

        crate::each_mpm!(full_tunnel_drains_when_read_again);
    }
}

each_mpm!(echo_through_the_tunnel, wss_backend, idle_tunnel_is_closed, upgrade_only_where_the_route_allows, idle_tunnels_and_threads, half_close_is_passed_on, tunnel_outlives_a_graceful_restart, stop_closes_tunnels, pieces_and_bursts);
