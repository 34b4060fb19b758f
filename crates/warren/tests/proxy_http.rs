//! mod_proxy_http under each MPM, against a real HTTP/1.1 backend (the
//! Python fixture proxy_http/backend.py): the request as the backend gets
//! it (hop-by-hop fields gone, X-Forwarded-*, Host), kept backend
//! connections reused, a chunked upload and a large download streamed,
//! ProxyPassReverse on a redirect and a cookie, Expect: 100-continue, HEAD,
//! HTTP/2 clients, ProxyErrorOverride, and backends that refuse, hang,
//! reset, cut their body short or send no HTTP: 503, 504, 502 with a log
//! line naming the backend, and the client's next request served.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::{Read, Write};

use backend::{ask, dead_port, Backend};
use common::*;

fn start(mpm: &str, backend: &Backend, extra: &str) -> Server {
    let b = backend.url();
    let conf = format!(
        "Protocols h2c http/1.1\nProxyPass /api/ {b}/\nProxyPassReverse /api/ {b}/\nProxyPassReverseCookieDomain backend.internal localhost\nProxyPassReverseCookiePath /app /api/app\n\
         ProxyPass /slow/ {b}/ timeout=1\nProxyPass /dead/ http://127.0.0.1:{}/ retry=0\nProxyPassMatch ^/m/(.*)\\.txt$ {b}/echo/$1.text\n\
         <Location /loc/>\n    ProxyPass {b}/\n    ProxyPassReverse {b}/\n</Location>\n{extra}",
        dead_port()
    );
    Server::start(mpm, &conf)
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

fn request_as_backend_saw_it(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let r = s.get_with(
        "/api/echo/a%20b/%25zz%0d%0aX:%20y?q=1&r=%20",
        "Connection: keep-alive, X-Private\r\nX-Private: hop\r\nKeep-Alive: 300\r\nTE: trailers\r\nProxy-Authorization: Basic eA==\r\nX-Forwarded-For: 10.9.8.7\r\nX-App: kept\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = r.text();
    // The decoded path is encoded again: what the client encoded stays data.
    assert!(seen.starts_with("GET /echo/a%20b/%25zz%0D%0AX:%20y?q=1&r=%20 HTTP/1.1\n"), "{seen}");
    assert!(seen.contains(&format!("Host: 127.0.0.1:{}\n", backend.port)), "{seen}");
    assert!(seen.contains("X-Forwarded-For: 10.9.8.7, 127.0.0.1\n"), "{seen}");
    assert!(seen.contains("X-Forwarded-Host: localhost\n"), "{seen}");
    assert!(seen.contains("X-Forwarded-Server: localhost\n"), "{seen}");
    assert!(seen.contains("X-App: kept\n"), "{seen}");
    for hop in ["X-Private", "Keep-Alive", "TE:", "Proxy-Authorization"] {
        assert!(!seen.contains(hop), "{hop} reached the backend: {seen}");
    }
    // The backend's hop-by-hop fields do not reach the client.
    assert_eq!(r.header("X-Hop"), None);
    assert_eq!(r.header("Keep-Alive"), None);
    // ProxyPassMatch with a group.
    let r = s.get("/m/page.txt");
    assert!(r.text().starts_with("GET /echo/page.text HTTP/1.1\n"), "{}", r.text());
}

fn preserve_host_and_no_added_headers(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "ProxyPreserveHost On\nProxyAddHeaders Off\nProxyVia On\n");
    let r = s.get_from("www.example.test", "/api/echo");
    let seen = r.text();
    assert!(seen.contains("Host: www.example.test\n"), "{seen}");
    assert!(!seen.contains("X-Forwarded"), "{seen}");
    assert!(seen.contains("Via: 1.1 localhost:"), "{seen}");
    assert!(r.header("Via").is_some_and(|v| v.starts_with("1.1 localhost:")), "{:?}", r.headers);
}

fn backend_connections_are_kept(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let mut c = s.connect();
    for i in 0..10 {
        let r = ask(&mut c, &get(&format!("/api/n{i}")), false);
        assert_eq!(r.text(), format!("backend saw GET /n{i}\n"));
    }
    // One client connection is served by one child: its requests share one backend connection.
    let r = ask(&mut c, &get("/api/connections"), false);
    assert_eq!(r.text(), "1", "backend connections opened for 11 requests");
    // disablereuse: one connection per request.
    drop(c);
    let s2 = start(mpm, &backend, "");
    drop(s);
    let before: u32 = s2.get("/api/connections").text().parse().unwrap();
    let s3 = Server::start(mpm, &format!("ProxyPass /api/ {}/ disablereuse=On\n", backend.url()));
    let mut c = s3.connect();
    for _ in 0..3 {
        assert_eq!(ask(&mut c, &get("/api/x"), false).status, 200);
    }
    let after: u32 = ask(&mut c, &get("/api/connections"), false).text().parse().unwrap();
    // s2's own request opened one; each of s3's four opened one.
    assert_eq!(after, before + 4);
}

fn chunked_upload_and_expect(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let payload: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut c = s.connect();
    c.write_all(b"POST /api/echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n").unwrap();
    let mut interim = [0u8; 25];
    c.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    for piece in payload.chunks(7000) {
        c.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).unwrap();
        c.write_all(piece).unwrap();
        c.write_all(b"\r\n").unwrap();
    }
    let r = ask(&mut c, "0\r\n\r\n", false);
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(text.contains("body-length: 300000\n"), "{}", &text[..text.len().min(600)]);
    // Passed on end to end: the 100 read above was the backend's.
    assert!(text.contains("Expect: 100-continue\n"), "Expect did not reach the backend");
    assert!(r.body.ends_with(&payload[payload.len() - 1000..]));
    // The same connection goes on.
    assert_eq!(ask(&mut c, &get("/api/after"), false).text(), "backend saw GET /after\n");
}

fn big_download_streams(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let n = 30 * 1024 * 1024;
    let mut c = s.connect();
    c.write_all(get(&format!("/api/big?n={n}")).as_bytes()).unwrap();
    // The head comes before the backend has sent much of the body, with no length: streamed.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        c.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Transfer-Encoding: chunked"), "{head}");
    let mut rest = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while dechunk(&rest).is_none() {
        let k = c.read(&mut buf).unwrap();
        assert!(k > 0, "closed after {} bytes", rest.len());
        rest.extend_from_slice(&buf[..k]);
    }
    let (body, _) = dechunk(&rest).unwrap();
    assert_eq!(body.len(), n);
    assert!(body.iter().all(|&b| b == b'x'));
    // HEAD: the backend's length, no body.
    let r = ask(&mut c, "HEAD /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n", true);
    assert_eq!(r.status, 200);
    assert!(r.header("Content-Length").is_some_and(|l| l.parse::<u32>().unwrap() > 0), "{:?}", r.headers);
    assert_eq!(ask(&mut c, &get("/api/after"), false).text(), "backend saw GET /after\n");
}

fn reverse_rewrites_redirects_and_cookies(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let r = s.get("/api/redirect");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Location"), Some("http://localhost/api/landing?x=1"));
    // The same from a `<Location>` section's ProxyPass and ProxyPassReverse.
    let r = s.get("/loc/redirect");
    assert_eq!(r.header("Location"), Some("http://localhost/loc/landing?x=1"));
    let r = s.get("/api/cookie");
    assert_eq!(r.header("Set-Cookie"), Some("sid=1; Domain=localhost; Path=/api/app"));
}

fn failing_backends(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let mut c = s.connect();
    for (path, status) in [("/dead/x", 503), ("/slow/hang", 504), ("/api/short", 502), ("/api/malformed", 502), ("/api/reset", 502)] {
        let r = ask(&mut c, &get(path), false);
        assert_eq!(r.status, status, "{path}: {}", r.text());
        // The client's connection goes on.
        assert_eq!(ask(&mut c, &get("/api/ok"), false).text(), "backend saw GET /ok\n", "after {path}");
    }
    let log = s.wait_log("error.log", "status line");
    let port = backend.port;
    assert!(log.contains(&format!("proxy: HTTP: timeout reading the status line from 127.0.0.1:{port}")), "{log}");
    assert!(log.contains("attempt to connect to 127.0.0.1:"), "{log}");
    assert!(log.contains(&format!("error reading the response body from 127.0.0.1:{port}")), "{log}");
    assert!(log.contains(&format!("error reading the status line from 127.0.0.1:{port}: malformed")), "{log}");
    // A POST whose body the backend does not read still gets its answer.
    let r = ask(&mut c, "POST /api/early HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello", false);
    assert_eq!(r.status, 413);
}

fn retry_keeps_a_dead_backend_out(mpm: &str) {
    let port = dead_port();
    let s = Server::start(mpm, &format!("ProxyPass /gone/ http://127.0.0.1:{port}/ retry=30\n"));
    let mut c = s.connect();
    assert_eq!(ask(&mut c, &get("/gone/a"), false).status, 503);
    let r = ask(&mut c, &get("/gone/b"), false);
    assert_eq!(r.status, 503);
    let log = s.wait_log("error.log", "in error state");
    assert!(log.contains(&format!("backend 127.0.0.1:{port} is in error state")), "{log}");
}

fn error_override(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "ProxyErrorOverride On\n");
    let r = s.get("/api/error");
    assert_eq!(r.status, 500);
    assert!(!r.text().contains("the backend's own error page"), "{}", r.text());
    assert!(r.text().contains("Internal Server Error"), "{}", r.text());
    assert_eq!(s.get("/api/fine").status, 200);
}

fn http2_clients(mpm: &str) {
    let backend = Backend::start();
    let s = start(mpm, &backend, "");
    let (code, out) = curl(&["--http2-prior-knowledge", "-i", "--data-binary", "h2 body", &s.url("/api/echo/h2")]);
    assert_eq!(code, 0);
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/2 200"), "{text}");
    assert!(text.contains("POST /echo/h2 HTTP/1.1\n") && text.ends_with("h2 body"), "{text}");
    let (code, out) = curl(&["--http2-prior-knowledge", &s.url("/api/big?n=3000000")]);
    assert_eq!((code, out.len()), (0, 3_000_000));
    let (_, out) = curl(&["--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", &s.url("/slow/hang")]);
    assert_eq!(out, b"504");
}

each_mpm!(
    request_as_backend_saw_it,
    preserve_host_and_no_added_headers,
    backend_connections_are_kept,
    chunked_upload_and_expect,
    big_download_streams,
    reverse_rewrites_redirects_and_cookies,
    failing_backends,
    retry_keeps_a_dead_backend_out,
    error_override,
    http2_clients,
);
