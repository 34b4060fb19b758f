//! Attacks on WebSockets over HTTP/2 (RFC 8441), played by an anonymous
//! HTTP/2 client (the `h2` package, h2_websocket/client.py) against the
//! event MPM, whose loop carries the tunnels (the thread MPMs refuse every
//! extended CONNECT; h2_websocket.rs checks that under each MPM): many
//! tunnels on one connection (bounded by H2MaxSessionStreams, the rest
//! REFUSED_STREAM, the ones taken working), tunnels opened and reset in a
//! flood (rapid reset: GOAWAY ENHANCE_YOUR_CALM), an extended CONNECT to
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

fn start(b: &Backends, extra: &str) -> Server {
    let conf = format!("Protocols h2 h2c http/1.1\nH2WebSockets on\nProxyPass /ws/ ws://127.0.0.1:{e}/\nProxyPass /plain/ http://127.0.0.1:{e}/\nProxyPass /forbidden-ws/ ws://127.0.0.1:{e}/\nProxyPass /stray-ws/ ws://127.0.0.1:{s}/\n{extra}", e = b.echo, s = b.stray);
    Server::start("event", &conf)
}

#[test]
fn many_tunnels_on_one_connection_are_bounded() {
    let b = Backends::start();
    let s = start(&b, "H2MaxSessionStreams 8\n");
    let out = run_case(&s, false, "many", "/ws/echo");
    assert!(out.contains("8 open, 4 refused"), "{out}");
}

#[test]
fn a_flood_of_tunnels_reset_at_once_is_stopped() {
    let b = Backends::start();
    let s = start(&b, "");
    run_case(&s, false, "reset_flood", "/ws/echo");
    let needle = "streams reset or refused too fast (rapid reset)";
    let log = s.wait_log("error.log", needle);
    assert!(log.contains(needle), "{log}");
    // The server still serves a new connection's tunnel.
    run_case(&s, false, "multi", "/ws/echo");
}

#[test]
fn connect_to_paths_without_a_websocket_backend() {
    let b = Backends::start();
    let s = start(&b, "");
    run_case(&s, false, "rejections", "/ws/echo");
}

#[test]
fn fields_smuggled_into_the_connect() {
    let b = Backends::start();
    let s = start(&b, "");
    run_case(&s, false, "smuggle", "/ws/echo");
}
