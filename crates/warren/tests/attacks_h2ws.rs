//! Attacks on WebSockets over HTTP/2 (RFC 8441), played by an anonymous
//! HTTP/2 client (the `h2` package, h2_websocket/client.py) under each
//! MPM (the event loop carries the tunnels; under prefork and worker, the
//! thread serving the connection): many tunnels on one connection (bounded
//! by H2MaxSessionStreams, the rest REFUSED_STREAM, the ones taken
//! working), tunnels opened and reset in a flood (rapid reset: GOAWAY
//! ENHANCE_YOUR_CALM), tunnels opened by a client that never reads again
//! (each closed at its idle limit, the connection at Timeout, other
//! clients served meanwhile), an extended CONNECT to
//! paths with no WebSocket backend (a static file, a missing one, a route
//! without upgrade=websocket: never a 200), and fields smuggled into the
//! CONNECT (CR LF or NUL in :protocol or a field, a list for :protocol,
//! the Upgrade/Connection fields HTTP/2 forbids, an absolute :path, a Host
//! other than :authority).

mod common;
#[path = "proxy_websocket/fixture.rs"]
#[allow(dead_code)]
mod fixture;
#[path = "h2_websocket/run.rs"]
mod run;

use common::*;
use fixture::Backends;
use run::run_case;

each_mpm!(many_tunnels_on_one_connection_are_bounded, a_flood_of_tunnels_reset_at_once_is_stopped, a_client_that_never_reads, connect_to_paths_without_a_websocket_backend, fields_smuggled_into_the_connect);

/// Under worker a connection whose thread carries tunnels holds one of
/// the child's tunnel places (all its threads but one), as an HTTP/1.1
/// tunnel does: HTTP/2 connections with a tunnel each could otherwise
/// hold every thread. (Under prefork a child is its one connection, and
/// under event the loop carries tunnels, holding no thread.)
#[test]
fn worker_http2_tunnels_leave_a_thread() {
    use std::io::BufRead;
    use std::process::Stdio;
    let b = Backends::start();
    let s = start("worker", &b, "StartServers 1\nServerLimit 1\nThreadsPerChild 2\nMinSpareThreads 1\nMaxSpareThreads 2\nMaxRequestWorkers 2\n");
    let mut holder = run::command(&s, false, "hold", "/ws/echo").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start client.py");
    let mut said = std::io::BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    said.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "HELD", "client.py: {line}\nerror log:\n{}", s.read_log("error.log"));
    // The child's other thread: no tunnel for it, but it still serves.
    run_case(&s, false, "no_thread_left", "/ws/echo");
    let log = s.wait_log("error.log", "every thread this child may give to tunnels holds one");
    assert!(log.contains("every thread this child may give to tunnels holds one"), "{log}");
    drop(holder.stdin.take());
    let out = holder.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn start(mpm: &str, b: &Backends, extra: &str) -> Server {
    let conf = format!("Protocols h2 h2c http/1.1\nH2WebSockets on\nProxyPass /ws/ ws://127.0.0.1:{e}/\nProxyPass /plain/ http://127.0.0.1:{e}/\nProxyPass /forbidden-ws/ ws://127.0.0.1:{e}/\nProxyPass /stray-ws/ ws://127.0.0.1:{s}/\n{extra}", e = b.echo, s = b.stray);
    Server::start(mpm, &conf)
}

fn many_tunnels_on_one_connection_are_bounded(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "H2MaxSessionStreams 8\n");
    let out = run_case(&s, false, "many", "/ws/echo");
    assert!(out.contains("8 open, 4 refused"), "{out}");
}

fn a_flood_of_tunnels_reset_at_once_is_stopped(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    run_case(&s, false, "reset_flood", "/ws/echo");
    let needle = "streams reset or refused too fast (rapid reset)";
    let log = s.wait_log("error.log", needle);
    assert!(log.contains(needle), "{log}");
    // The server still serves a new connection's tunnel.
    run_case(&s, false, "multi", "/ws/echo");
}

fn connect_to_paths_without_a_websocket_backend(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    run_case(&s, false, "rejections", "/ws/echo");
}

fn fields_smuggled_into_the_connect(mpm: &str) {
    let b = Backends::start();
    let s = start(mpm, &b, "");
    run_case(&s, false, "smuggle", "/ws/echo");
}

/// Tunnels whose client never reads again cannot move: each is closed at
/// ProxyWebsocketIdleTimeout and the connection at Timeout, while another
/// client's tunnels and requests are served.
fn a_client_that_never_reads(mpm: &str) {
    use std::io::{BufRead, Read};
    use std::process::Stdio;
    let b = Backends::start();
    let s = start(mpm, &b, "ProxyWebsocketIdleTimeout 2\nTimeout 3\nLogLevel debug\n");
    let mut client = run::command(&s, false, "never_reading", "/ws/echo").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start client.py");
    let mut said = std::io::BufReader::new(client.stdout.take().unwrap());
    let mut line = String::new();
    said.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "SENT 6", "client.py: {line}\nerror log:\n{}", s.read_log("error.log"));
    run_case(&s, false, "multi", "/ws/echo");
    let idle = format!("WebSocket tunnel to 127.0.0.1:{} idle for 2 s: closed", b.echo);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.read_log("error.log").matches(&idle).count() < 6 {
        assert!(std::time::Instant::now() < deadline, "the unread tunnels were not closed at their idle limit:\n{}", s.read_log("error.log"));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(client.stdin.take());
    let out = client.wait_with_output().unwrap();
    let mut rest = String::new();
    said.read_to_string(&mut rest).unwrap();
    assert!(out.status.success() && rest.contains("OK never_reading"), "client.py: {rest}\n{}\nerror log:\n{}", String::from_utf8_lossy(&out.stderr), s.read_log("error.log"));
}
