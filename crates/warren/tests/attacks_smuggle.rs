//! Request smuggling through mod_proxy_http, played by an anonymous client
//! of a site that proxies `/api/` to an HTTP backend (the Python fixture of
//! proxy_http.rs, which records every request line it gets): the framing
//! variants attacks_proxy.rs does not try, each known to split a front end
//! from a back end somewhere: a space before a field's colon, a signed or
//! listed Content-Length, codings before or after chunked, chunked in an
//! HTTP/1.0 request, chunk sizes that overflow or carry `0x`, a chunk line
//! ended by a bare LF, a vertical tab before `chunked`, a Content-Length in
//! the trailer. A request hidden in a body must never reach the backend as
//! a request of its own; each attempt is refused or framed as warren read it.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use backend::Backend;
use common::*;

fn framing_variants_never_reach_the_backend_as_requests(mpm: &str) {
    let backend = Backend::start();
    let s = Server::start(mpm, &format!("ProxyPass /api/ {}/\n", backend.url()));
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    let post = "POST /api/echo HTTP/1.1\r\nHost: localhost\r\n";
    let attempts = [
        format!("{post}Transfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("{post}Content-Length: +5\r\n\r\nhello{smuggled}"),
        format!("{post}Content-Length: 5, {}\r\n\r\nhello{smuggled}", 5 + smuggled.len()),
        format!("{post}Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("{post}Transfer-Encoding: xchunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("POST /api/echo HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("{post}Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\n{smuggled}"),
        format!("{post}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n{smuggled}"),
        format!("{post}Transfer-Encoding: chunked\r\n\r\n{:x};a=b\n{smuggled}\r\n0\r\n\r\n", smuggled.len()),
        format!("{post}Transfer-Encoding: \x0bchunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("{post}Transfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: {}\r\n\r\n{smuggled}", smuggled.len()),
    ];
    for attempt in &attempts {
        let answer = s.raw(attempt.as_bytes());
        let status = status_of(&answer);
        assert!(matches!(status, 200 | 400 | 404 | 501), "{attempt:?}: {}", String::from_utf8_lossy(&answer));
    }
    let seen = s.get("/api/seen").text();
    let lines: Vec<&str> = seen.lines().filter(|l| !l.starts_with("GET /seen ")).collect();
    assert!(lines.iter().all(|l| !l.contains("smuggled")), "the backend got a smuggled request: {lines:?}");
    // Whatever was let through reached the backend once per request warren answered.
    assert!(lines.len() <= attempts.len(), "{lines:?}");
    // The refusals name the client.
    let log = s.wait_log("error.log", "[client 127.0.0.1");
    assert!(log.lines().any(|l| l.contains("[client 127.0.0.1")), "{log}");
}

each_mpm!(framing_variants_never_reach_the_backend_as_requests);
