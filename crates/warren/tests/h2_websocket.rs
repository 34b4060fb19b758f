//! WebSockets over HTTP/2 (RFC 8441) under each MPM, with a real HTTP/2
//! client (the `h2` package from PyPI, h2_websocket/client.py) and the real
//! WebSocket echo backend of proxy_websocket.rs (Python `websockets`).
//!
//! With `H2WebSockets on` (off by default, as in Apache), under every MPM
//! (the event loop carries the tunnels; under prefork and worker the thread
//! serving the connection polls them beside its socket):
//! SETTINGS_ENABLE_CONNECT_PROTOCOL is announced; an extended CONNECT to a `ws://` or `upgrade=websocket`
//! route gets 200 and echoes both ways (a message larger than every
//! window), over h2c with prior knowledge and over TLS with ALPN h2; two
//! tunnels and a GET share a connection; a client's RST_STREAM, the
//! backend's close and ProxyWebsocketIdleTimeout each end one tunnel and
//! leave the connection; a SIGTERM resets tunnels at once, a graceful
//! restart at its deadline; CONNECTs RFC 8441/9113 refuse are refused, and
//! one to a URL with no WebSocket backend gets that URL's error or
//! mod_http2's 502. With it off, nothing is announced and an extended
//! CONNECT is a malformed request.
//!
//! The Python comes from WARREN_TEST_PYTHON, else /opt/warren-test-venv
//! (test.sh installs h2 and websockets there).

mod common;
#[path = "proxy_websocket/fixture.rs"]
#[allow(dead_code)]
mod fixture;

#[path = "h2_websocket/run.rs"]
mod run;

use common::*;
use fixture::Backends;
use run::run_case;

each_mpm!(off_unless_configured, echo_over_h2c, echo_over_tls, wss_backend, a_client_that_stops_reading, stop_resets_tunnels, graceful_restart_ends_tunnels_at_the_deadline, a_tunnel_keeps_its_thread_busy, over_an_upgraded_h2c_connection, tunnels_and_a_get_share_a_connection, client_reset_ends_one_tunnel, backend_close_ends_the_stream, idle_tunnel_is_reset, refused_as_the_rfcs_say);

fn conf(b: &Backends, extra: &str) -> String {
    format!(
        "Protocols h2 h2c http/1.1\nH2WebSockets on\nProxyPass /ws/ ws://127.0.0.1:{e}/\nProxyPass /app/ http://127.0.0.1:{e}/ upgrade=websocket\nProxyPass /plain/ http://127.0.0.1:{e}/\nProxyPass /forbidden-ws/ ws://127.0.0.1:{e}/\nProxyPass /stray-ws/ ws://127.0.0.1:{s}/\n{extra}",
        e = b.echo,
        s = b.stray
    )
}

fn logged(s: &Server, needle: &str) {
    let log = s.wait_log("error.log", needle);
    assert!(log.contains(needle), "no {needle:?} in the error log:\n{log}");
}

/// Every MPM carries HTTP/2 tunnels: the event loop, and under prefork
/// and worker the thread that serves the connection.
fn carries(_mpm: &str) -> bool {
    true
}

/// H2WebSockets is off by default, as in Apache: nothing announced, an
/// extended CONNECT malformed, under every MPM.
fn off_unless_configured(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, "").replace("H2WebSockets on\n", ""));
    run_case(&s, false, "refused", "/ws/echo");
}

fn echo_over_h2c(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, ""));
    if !carries(mpm) {
        run_case(&s, false, "refused", "/ws/echo");
        return;
    }
    for path in ["/ws/echo", "/app/echo"] {
        let out = run_case(&s, false, "echo", path);
        assert!(out.starts_with("OK echo"), "client.py echo {path}: {out:?}\nerror log:\n{}", s.read_log("error.log"));
    }
    // Logged as the request it stands for, with the stream's status.
    let access = s.read_log("access.log");
    assert!(access.lines().any(|l| l.contains("\"GET /ws/echo HTTP/2.0\" 200")), "{access}");
}

fn echo_over_tls(mpm: &str) {
    let b = Backends::start();
    let dir = TempDir::new(&format!("h2ws-tls-{mpm}"));
    standard_site(&dir);
    let tls = common::tls::Certs::make(&dir.0).directives("localhost");
    let s = Server::start_in(dir, mpm, &format!("{tls}{}", conf(&b, "")));
    run_case(&s, true, if carries(mpm) { "echo" } else { "refused" }, "/ws/echo");
}

/// Flow control as backpressure: a client that does not credit what it
/// gets holds the tunnel at one window, then gets the rest.
fn a_client_that_stops_reading(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, ""));
    run_case(&s, false, if carries(mpm) { "backpressure" } else { "refused" }, "/ws/echo");
}

/// A stop that is not graceful (SIGTERM) resets the tunnels at once, as it
/// closes HTTP/1.1 ones.
fn stop_resets_tunnels(mpm: &str) {
    let b = Backends::start();
    let mut s = Server::start(mpm, &conf(&b, "LogLevel debug\n"));
    if !carries(mpm) {
        run_case(&s, false, "refused", "/ws/echo");
        return;
    }
    let mut client = run::command(&s, false, "stopped", "/ws/echo").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("start client.py");
    let mut said = std::io::BufReader::new(client.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut said, &mut line).unwrap();
    assert_eq!(line.trim(), "OPEN", "client.py: {line}");
    s.stop();
    // The client's waits are bounded: it exits.
    let out = client.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut said, &mut rest).unwrap();
    assert!(out.status.success() && rest.contains("OK stopped"), "client.py: {rest}\n{}\nerror log:\n{}", String::from_utf8_lossy(&out.stderr), s.read_log("error.log"));
    let log = s.read_log("error.log");
    assert!(log.contains(&format!("WebSocket tunnel to 127.0.0.1:{} closed: the server is stopping", b.echo)), "{log}");
}

/// A graceful restart (SIGHUP): the old generation's HTTP/2 connection is
/// told to go (GOAWAY) and its tunnel ends at the stop's deadline (Timeout,
/// here 2 s), rather than holding the old child as long as it lasts; the
/// new generation carries tunnels.
fn graceful_restart_ends_tunnels_at_the_deadline(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, "Timeout 2\nProxyWebsocketIdleTimeout 60\nLogLevel debug\n"));
    let mut client = run::command(&s, false, "stopped", "/ws/echo").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("start client.py");
    let mut said = std::io::BufReader::new(client.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut said, &mut line).unwrap();
    assert_eq!(line.trim(), "OPEN", "client.py: {line}");
    unsafe_kill(s.pid(), libc::SIGHUP);
    // The client's waits are bounded (20 s, the idle limit 60 s): it ends
    // only if the server ends the tunnel.
    let out = client.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut said, &mut rest).unwrap();
    assert!(out.status.success() && rest.contains("OK stopped"), "client.py: {rest}\n{}\nerror log:\n{}", String::from_utf8_lossy(&out.stderr), s.read_log("error.log"));
    logged(&s, &format!("WebSocket tunnel to 127.0.0.1:{} closed", b.echo));
    run_case(&s, false, "echo", "/ws/echo");
}

/// The scoreboard while a tunnel is open and idle: under prefork and
/// worker the thread carrying it is busy (W), not waiting on a kept-alive
/// connection (K), so the parent keeps spares for new clients; under event
/// the loop carries it and no thread is held.
fn a_tunnel_keeps_its_thread_busy(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, "ExtendedStatus On\n<Location \"/server-status\">\nSetHandler server-status\n</Location>\n"));
    let scoreboard = || s.get("/server-status?auto").text().lines().find_map(|l| l.strip_prefix("Scoreboard: ").map(str::to_owned)).expect("a Scoreboard line");
    let before = scoreboard();
    let mut client = run::command(&s, false, "stopped", "/ws/echo").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("start client.py");
    let mut said = std::io::BufReader::new(client.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut said, &mut line).unwrap();
    assert_eq!(line.trim(), "OPEN", "client.py: {line}");
    let during = scoreboard();
    let _ = client.kill();
    let _ = client.wait();
    let writing = |board: &str| board.matches('W').count();
    match mpm {
        "event" => assert_eq!(writing(&during), writing(&before), "before {before}, with a tunnel {during}"),
        _ => assert_eq!(writing(&during), writing(&before) + 1, "before {before}, with a tunnel {during}"),
    }
}

/// A connection that began in HTTP/1.1 and upgraded (`Upgrade: h2c`)
/// announces and carries tunnels as one that opened in HTTP/2.
fn over_an_upgraded_h2c_connection(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, ""));
    run_case(&s, false, if carries(mpm) { "upgraded" } else { "refused" }, "/ws/echo");
}

/// A `wss://` backend (TLS, verified with SSLProxyCACertificateFile): its
/// socket's TLS records are pushed out as the stream's DATA comes.
fn wss_backend(mpm: &str) {
    let dir = TempDir::new(&format!("h2ws-wss-{mpm}"));
    standard_site(&dir);
    let certs = common::tls::Certs::make(&dir.0);
    let b = Backends::start_tls(&certs.cert("localhost"), &certs.key("localhost"));
    let conf = format!("Protocols h2 h2c http/1.1\nH2WebSockets on\nSSLProxyEngine On\nSSLProxyVerify require\nSSLProxyCACertificateFile {}\nProxyPass /wss/ wss://localhost:{}/\n", certs.ca().display(), b.echo);
    let s = Server::start_in(dir, mpm, &conf);
    run_case(&s, false, if carries(mpm) { "echo" } else { "refused" }, "/wss/echo");
}

fn tunnels_and_a_get_share_a_connection(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, ""));
    run_case(&s, false, if carries(mpm) { "multi" } else { "refused" }, "/ws/echo");
}

fn client_reset_ends_one_tunnel(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, "LogLevel debug\n"));
    if !carries(mpm) {
        run_case(&s, false, "refused", "/app/echo");
        return;
    }
    run_case(&s, false, "reset", "/app/echo");
    logged(&s, "closed by the client (RST_STREAM)");
}

fn backend_close_ends_the_stream(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, "LogLevel debug\n"));
    if !carries(mpm) {
        run_case(&s, false, "refused", "/ws/echo");
        return;
    }
    run_case(&s, false, "backend_close", "/ws/echo");
    run_case(&s, false, "client_ended_at_once", "/ws/echo");
    logged(&s, "closed by the backend");
}

fn idle_tunnel_is_reset(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, "ProxyWebsocketIdleTimeout 1\nLogLevel debug\n"));
    if !carries(mpm) {
        run_case(&s, false, "refused", "/ws/echo");
        return;
    }
    run_case(&s, false, "idle", "/ws/echo");
    logged(&s, "(ProxyWebsocketIdleTimeout)");
}

fn refused_as_the_rfcs_say(mpm: &str) {
    let b = Backends::start();
    let s = Server::start(mpm, &conf(&b, ""));
    if !carries(mpm) {
        run_case(&s, false, "refused", "/ws/echo");
        return;
    }
    run_case(&s, false, "rejections", "/ws/echo");
    logged(&s, "/index.html answered 200 without a WebSocket tunnel");
    // The stray backend's 101 carries no Sec-WebSocket-Accept.
    logged(&s, "answered 101 without the Sec-WebSocket-Accept of our key (none)");
}
