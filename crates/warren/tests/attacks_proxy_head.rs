//! Attacks on mod_proxy_http's parsing of a backend's answer and on the
//! request it sends, played by a hostile or broken backend (a scripted
//! one here, answering each request path with a chosen head, and noting
//! which of its connections each request came on) and by an anonymous
//! client. The backend tries response splitting and smuggling through its
//! head (obs-fold, a bare CR, a field name with a space, two or signed
//! Content-Lengths, both framings, a 1xx before the final head, too many
//! fields, a head trickled a byte per write) and contradicts itself about
//! keeping the connection (HTTP/1.0 `Connection: keep-alive, close`); the
//! client names fields in Connection in odd cases to have them dropped or
//! kept, and percent-encodes what the backend's request line must keep
//! as data. Two routes to one address, one plain and one TLS, must not
//! share a kept connection; a backend marked down by retry= must stay down
//! for its time and come back after it.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// What the scripted backend got: each request's connection number and
/// request line, in order.
type Seen = Arc<Mutex<Vec<(usize, String)>>>;

/// The answer to a request for `path` (without the route's prefix).
fn answer_for(path: &str, head: &str) -> Vec<u8> {
    let ok = |fields: &str| format!("HTTP/1.1 200 OK\r\n{fields}\r\nok").into_bytes();
    match path {
        "/obs-fold" => ok("X-A: a\r\n Set-Cookie: folded=1\r\nContent-Length: 2\r\n"),
        "/bare-cr" => ok("X-A: a\rSet-Cookie: split=1\r\nContent-Length: 2\r\n"),
        "/space-in-name" => ok("Set-Cookie : spaced=1\r\nContent-Length: 2\r\n"),
        "/two-lengths" => ok("Content-Length: 2\r\nContent-Length: 40\r\n"),
        "/length-list" => ok("Content-Length: 2, 40\r\n"),
        "/signed-length" => ok("Content-Length: +2\r\n"),
        "/zeros-length" => ok("Content-Length: 0002\r\n"),
        "/both-framings" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n2\r\nok\r\n0\r\n\r\n".to_vec(),
        "/interim-then-final" => b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        "/many-fields" => ok(&((0..201).map(|i| format!("X-F{i}: v\r\n")).collect::<String>() + "Content-Length: 2\r\n")),
        "/trickled" => ok("X-Trickled: yes\r\nContent-Length: 2\r\n"),
        "/http10-keep-alive-close" => b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        "/http11-close-keep-alive" => ok("Connection: close, keep-alive\r\nContent-Length: 2\r\n"),
        "/echo" => format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{head}", head.len()).into_bytes(),
        _ => ok("Content-Length: 2\r\n"),
    }
}

/// A backend that answers each request as [`answer_for`] says and keeps
/// every connection open (whatever its answer said), so that warren alone
/// decides whether one is used again.
fn scripted_backend() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (port, serve_from(listener))
}

/// Serves each connection `listener` accepts on a thread of its own, in
/// the order they came; what they saw is recorded in the returned list.
fn serve_from(listener: TcpListener) -> Seen {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for (number, conn) in listener.incoming().enumerate() {
            let Ok(conn) = conn else { continue };
            let record = record.clone();
            std::thread::spawn(move || serve(conn, number, &record));
        }
    });
    seen
}

fn serve(mut conn: TcpStream, number: usize, seen: &Mutex<Vec<(usize, String)>>) {
    let _ = conn.set_nodelay(true);
    // A TLS handshake gets what a plain server says to one.
    let mut first = [0u8; 1];
    if conn.peek(&mut first).is_ok_and(|n| n == 1) && first[0] == 0x16 {
        seen.lock().unwrap().push((number, "TLS handshake".into()));
        let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        return;
    }
    while let Some(head) = backend::read_head(&mut conn) {
        let line = head.lines().next().unwrap_or("").to_string();
        let path = line.split(' ').nth(1).unwrap_or("").to_string();
        seen.lock().unwrap().push((number, line));
        let answer = answer_for(&path, &head);
        let written = if path == "/trickled" {
            // A byte per write, so that the head comes in many reads.
            answer.iter().try_for_each(|b| conn.write_all(std::slice::from_ref(b)))
        } else {
            conn.write_all(&answer)
        };
        if written.is_err() {
            return;
        }
    }
}

fn start(mpm: &str, port: u16) -> Server {
    Server::start(mpm, &format!("ProxyPass /b/ http://127.0.0.1:{port}/\n"))
}

/// Every trick in the backend's head ends in a 502 or in an answer framed
/// and written by warren: never a field the backend smuggled in.
fn hostile_heads_are_refused_or_reframed(mpm: &str) {
    let (port, _) = scripted_backend();
    let s = start(mpm, port);
    for path in ["/obs-fold", "/bare-cr", "/space-in-name", "/two-lengths", "/length-list", "/signed-length", "/many-fields"] {
        let answer = s.raw(format!("GET /b{path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes());
        let text = String::from_utf8_lossy(&answer);
        assert_eq!(status_of(&answer), 502, "{path}: {text}");
        assert!(!text.contains("Set-Cookie") && !text.contains("X-F200"), "{path}: {text}");
    }
    // Each refusal is logged with its reason.
    for why in ["malformed response head", "conflicting Content-Length values: 2, 40", "bad Content-Length: +2"] {
        assert!(s.wait_log("error.log", why).contains(why), "no error-log line saying {why}");
    }
    for path in ["/zeros-length", "/both-framings", "/interim-then-final", "/trickled"] {
        let answer = s.raw(format!("GET /b{path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes());
        let answers = parse_all(&answer);
        let last = answers.last().unwrap_or_else(|| panic!("{path}: no answer"));
        assert_eq!((last.status, last.text().as_str()), (200, "ok"), "{path}: {}", String::from_utf8_lossy(&answer));
        let text = String::from_utf8_lossy(&answer);
        assert!(!text.contains("Content-Length: 40") && !text.contains("0002"), "{path}: the backend's framing reached the client: {text}");
    }
    let r = s.get("/b/trickled");
    assert_eq!(r.header("X-Trickled"), Some("yes"), "a head read in pieces lost a field");
}

/// A backend connection its answer says is not kept is never sent
/// another request, whatever else the answer says (RFC 9112 9.3: `close`
/// wins), nor one whose answer had both framings.
fn a_connection_said_closed_is_not_reused(mpm: &str) {
    for first in ["/http10-keep-alive-close", "/http11-close-keep-alive", "/both-framings"] {
        let (port, seen) = scripted_backend();
        let s = start(mpm, port);
        // One client connection, so one child (and one loop) sends both.
        let mut c = s.connect();
        let r1 = backend::ask(&mut c, &format!("GET /b{first} HTTP/1.1\r\nHost: localhost\r\n\r\n"), false);
        assert_eq!((r1.status, r1.text().as_str()), (200, "ok"), "{first}");
        let r2 = backend::ask(&mut c, "GET /b/next HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
        assert_eq!(r2.status, 200);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_ne!(seen[0].0, seen[1].0, "after {first} the next request went on the same backend connection: {seen:?}");
    }
    // The control: a plain answer's connection is kept.
    let (port, seen) = scripted_backend();
    let s = start(mpm, port);
    let mut c = s.connect();
    for _ in 0..2 {
        assert_eq!(backend::ask(&mut c, "GET /b/plain HTTP/1.1\r\nHost: localhost\r\n\r\n", false).status, 200);
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].0, seen[1].0, "a kept connection was not used: {seen:?}");
}

/// Fields the client names in Connection, in any case, and the hop-by-hop
/// ones, do not reach the backend; `Connection: close, keep-alive` is the
/// client's hop only.
fn connection_names_in_any_case_are_dropped(mpm: &str) {
    let (port, _) = scripted_backend();
    let s = start(mpm, port);
    let r = s.get_with(
        "/b/echo",
        "Connection: close, KEEP-ALIVE, x-SeCrEt\r\nX-Secret: 1\r\nkeep-alive: timeout=5\r\nTE: trailers\r\nPROXY-Authorization: Basic eA==\r\nProxy-Foo: 1\r\nUpgrade: h2c\r\nTrailer: X\r\nX-Kept: yes\r\n",
    );
    let seen = r.text().to_ascii_lowercase();
    for gone in ["x-secret", "keep-alive", "\nte:", "proxy-", "upgrade", "trailer", "connection: keep-alive"] {
        assert!(!seen.contains(gone), "{gone} reached the backend: {seen}");
    }
    assert!(seen.contains("x-kept: yes"), "{seen}");
}

/// What the client percent-encoded stays data in the backend's request
/// line: `%`, `?`, `#`, non-ASCII bytes, spaces, an encoded `%41`; raw
/// non-ASCII bytes are encoded; a NUL goes nowhere.
fn encoded_path_bytes_stay_data(mpm: &str) {
    let (port, seen) = scripted_backend();
    let s = start(mpm, port);
    // A NUL decoded in the path goes nowhere.
    let r = s.get("/b/a%00g");
    assert!(r.status == 400 || r.status == 404, "{}", r.status);
    let got = seen.lock().unwrap().clone();
    assert!(got.is_empty(), "{got:?}");
    // An encoded slash is refused, as Apache's AllowEncodedSlashes Off does.
    assert_eq!(s.get("/b/a%2Fb").status, 404);
    // A raw `#` has no place in a request-target.
    assert_eq!(status_of(&s.raw(b"GET /b/frag#x?y HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")), 400);
    let got = seen.lock().unwrap().clone();
    assert!(got.is_empty(), "{got:?}");
    let r = s.get("/b/a%25b%3Fc%23d%C3%A9e%20f%2541?q=1");
    assert_eq!(r.status, 200);
    let last = seen.lock().unwrap().last().map(|(_, l)| l.clone());
    assert_eq!(last.as_deref(), Some("GET /a%25b%3Fc%23d%C3%A9e%20f%2541?q=1 HTTP/1.1"));
    // Raw non-ASCII bytes in the client's path are encoded for the backend.
    let answer = s.raw("GET /b/\u{e9}t\u{e9} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".as_bytes());
    assert_eq!(status_of(&answer), 200, "{}", String::from_utf8_lossy(&answer));
    let last = seen.lock().unwrap().last().map(|(_, l)| l.clone());
    assert_eq!(last.as_deref(), Some("GET /%C3%A9t%C3%A9 HTTP/1.1"));
    let all: Vec<String> = seen.lock().unwrap().iter().map(|(_, l)| l.clone()).collect();
    assert!(all.iter().all(|l| l.is_ascii() && !l.contains('\0') && l.matches(' ').count() == 2), "{all:?}");
}

/// A plain route and a TLS one to the same address: the TLS route never
/// gets the plain route's kept connection (it would then talk plaintext
/// to what it was told to reach over TLS).
fn plain_and_tls_routes_do_not_share_a_connection(mpm: &str) {
    let (port, seen) = scripted_backend();
    let s = Server::start(mpm, &format!("SSLProxyEngine On\nProxyPass /plain/ http://127.0.0.1:{port}/\nProxyPass /tls/ https://127.0.0.1:{port}/\n"));
    let mut c = s.connect();
    assert_eq!(backend::ask(&mut c, "GET /plain/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).status, 200);
    let r = backend::ask(&mut c, "GET /tls/secret HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
    assert_eq!(r.status, 502, "the TLS route was answered over plaintext: {}", r.text());
    let lines: Vec<String> = seen.lock().unwrap().iter().map(|(_, l)| l.clone()).collect();
    assert!(lines.iter().all(|l| !l.contains("/secret")), "a plaintext request for the TLS route: {lines:?}");
    assert!(lines.iter().any(|l| l == "TLS handshake"), "the TLS route opened no connection of its own: {lines:?}");
}

/// retry=: a backend that refused a connection is not tried again for
/// its time (though it now listens), another backend's down time does not
/// touch it, and once the time is over it is tried again.
fn a_backend_down_stays_down_for_retry_then_comes_back(mpm: &str) {
    let long = free_port_to_bind_later();
    let short = free_port_to_bind_later();
    let s = Server::start(mpm, &format!("ProxyPass /long/ http://127.0.0.1:{long}/ retry=600\nProxyPass /short/ http://127.0.0.1:{short}/ retry=1\n"));
    // One client connection: one child's record of what is down.
    let mut c = s.connect();
    for route in ["/long/x", "/short/x"] {
        assert_eq!(backend::ask(&mut c, &format!("GET {route} HTTP/1.1\r\nHost: localhost\r\n\r\n"), false).status, 503, "{route}");
    }
    let long_listener = TcpListener::bind(("127.0.0.1", long)).unwrap();
    long_listener.set_nonblocking(true).unwrap();
    let short_listener = TcpListener::bind(("127.0.0.1", short)).unwrap();
    serve_from(short_listener);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = backend::ask(&mut c, "GET /short/back HTTP/1.1\r\nHost: localhost\r\n\r\n", false);
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503);
        assert!(Instant::now() < deadline, "the backend was not tried again after retry=1");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(backend::ask(&mut c, "GET /long/x HTTP/1.1\r\nHost: localhost\r\n\r\n", false).status, 503, "retry=600 ran out early");
    assert!(long_listener.accept().is_err(), "warren connected to a backend within its retry= time");
}

each_mpm!(
    hostile_heads_are_refused_or_reframed,
    a_connection_said_closed_is_not_reused,
    connection_names_in_any_case_are_dropped,
    encoded_path_bytes_stay_data,
    plain_and_tls_routes_do_not_share_a_connection,
    a_backend_down_stays_down_for_retry_then_comes_back
);
