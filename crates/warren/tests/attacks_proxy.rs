//! Attacks through mod_proxy_http, played by an anonymous client of a site
//! that proxies `/api/` to an HTTP backend (the Python fixture of
//! proxy_http.rs, which records every request line it gets): request
//! smuggling (Content-Length with Transfer-Encoding, two lengths, obs-fold,
//! a bare LF), a Connection field naming X-Forwarded-For to strip the
//! proxy's own, Host injection, CR LF and dot-segments smuggled encoded in
//! the path. Each must reach the backend as exactly the one request warren
//! answered, or not at all.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use backend::Backend;
use common::*;

fn start(mpm: &str, backend: &Backend, extra: &str) -> Server {
    let b = backend.url();
    Server::start(mpm, &format!("ProxyPass /api/ {b}/\n{extra}"))
}

/// The request lines the backend got, but the one asking for them.
fn seen(s: &Server) -> Vec<String> {
    let r = s.get("/api/seen");
    r.text().lines().filter(|l| !l.starts_with("GET /seen ")).map(str::to_string).collect()
}

fn smuggling_is_refused_or_framed(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    let attempts = [
        format!("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: {}\r\n\r\n{smuggled}", smuggled.len()),
        format!("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n{smuggled}"),
        format!("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n\r\nabc{smuggled}"),
        format!("GET /api/echo HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n b\r\n\r\n{smuggled}"),
        format!("POST /api/echo HTTP/1.1\nHost: localhost\nContent-Length: 3\n\nabc{smuggled}"),
    ];
    for attempt in &attempts {
        let answer = s.raw(attempt.as_bytes());
        let status = status_of(&answer);
        assert!(status == 400 || status == 200 || status == 501, "{attempt:?}: {}", String::from_utf8_lossy(&answer));
    }
    let lines = seen(&s);
    assert!(lines.iter().all(|l| !l.contains("smuggled")), "the backend got a smuggled request: {lines:?}");
    // Whatever was let through reached the backend once per request warren answered.
    assert!(lines.len() <= attempts.len(), "{lines:?}");
}

fn connection_cannot_strip_forwarded_for(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let r = s.get_with("/api/echo", "X-Forwarded-For: 6.6.6.6\r\nConnection: X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Server\r\nX-Forwarded-Host: evil.example\r\n");
    let seen = r.text();
    // The client's own are dropped as hop-by-hop; the proxy's are still sent.
    assert!(seen.contains("X-Forwarded-For: 127.0.0.1\n"), "{seen}");
    assert!(!seen.contains("6.6.6.6"), "{seen}");
    assert!(seen.contains("X-Forwarded-Host: localhost\n"), "{seen}");
    assert!(!seen.contains("evil.example"), "{seen}");
}

fn host_injection(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    // Without ProxyPreserveHost the backend's own name is sent, whatever the client says.
    let r = s.get_from("evil.example", "/api/echo");
    assert!(r.text().contains(&format!("Host: 127.0.0.1:{}\n", backend.port)), "{}", r.text());
    let preserving = start(mpm, &backend, "ProxyPreserveHost On\n");
    for bad in ["GET /api/echo HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", "GET /api/echo HTTP/1.1\r\nHost: a.example/../x\r\n\r\n", "GET /api/echo HTTP/1.1\r\nHost: a b\r\n\r\n", "GET /api/echo HTTP/1.1\r\nHost: a.example\0x\r\n\r\n"] {
        let answer = preserving.raw(bad.as_bytes());
        assert_eq!(status_of(&answer), 400, "{bad:?}: {}", String::from_utf8_lossy(&answer));
    }
    // An absolute-form target names the host: it, not a second Host, is what the backend gets.
    let answer = preserving.raw(b"GET http://good.example/api/echo HTTP/1.1\r\nHost: good.example\r\nConnection: close\r\n\r\n");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("\nHost: good.example\n") && !text.contains("evil"), "{text}");
}

fn encoded_line_breaks_and_dots_stay_data(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let r = s.get("/api/x%0d%0aX-Injected:%20yes%0d%0a%0d%0aGET%20/smuggled%20HTTP/1.1");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "backend saw GET /x%0D%0AX-Injected:%20yes%0D%0A%0D%0AGET%20/smuggled%20HTTP/1.1\n");
    // Dot-segments, plain or encoded, are resolved before routing: no climbing out of /api/ on the backend.
    for path in ["/api/../api/echo/x", "/api/%2e%2e/secret", "/api/.%2e/secret", "/api/%252e%252e/secret"] {
        let _ = s.get(path);
    }
    let lines = seen(&s);
    assert!(lines.iter().all(|l| !l.contains("/../") && !l.to_ascii_lowercase().contains("%2e%2e/") && !l.starts_with("GET /secret ")), "{lines:?}");
    // Decoded once here, so the backend decodes it to `%2e%2e`, never to `..`.
    assert!(lines.iter().any(|l| l == "GET /%252e%252e/secret HTTP/1.1"), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains('\r') && !l.contains("GET /smuggled")), "{lines:?}");
}

each_mpm!(smuggling_is_refused_or_framed, connection_cannot_strip_forwarded_for, host_injection, encoded_line_breaks_and_dots_stay_data);
