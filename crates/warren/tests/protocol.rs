//! HTTP/1.1 protocol rules (RFC 9112/9110) against the real server, as a
//! table of raw requests and the status each must get; keep-alive,
//! pipelining, bodies, Expect, timeouts and lingering close.

mod common;
use common::*;

use std::io::Write;
use std::time::{Duration, Instant};

plain_only! {
    each_mpm!(
        rfc_table,
        keep_alive_http11_and_http10,
        pipelining,
        max_keep_alive_requests,
        keep_alive_off,
        body_is_discarded_then_next_request,
        chunked_body_is_discarded,
        limit_request_body,
        expect_100_continue,
        slow_client_gets_408,
        request_read_timeout_cuts_a_stalled_head,
        request_read_timeout_max_cuts_a_trickle,
        request_read_timeout_min_rate_extends,
        request_read_timeout_cuts_a_stalled_body,
        request_read_timeout_silent_and_keep_alive,
        keep_alive_timeout_closes,
        limits_from_config,
        head_size_is_capped,
        bad_requests_are_logged,
        server_tokens,
        garbage_never_kills_a_child,
    );
}

// Over TLS (protocol_tls.rs), through the harness's relay: all but the
// cases about slow clients and timeouts, which the relay's own buffering
// and connection to warren would blur.
over_tls_only! {
    each_mpm!(
        rfc_table,
        keep_alive_http11_and_http10,
        pipelining,
        max_keep_alive_requests,
        keep_alive_off,
        body_is_discarded_then_next_request,
        chunked_body_is_discarded,
        limit_request_body,
        expect_100_continue,
        limits_from_config,
        head_size_is_capped,
        bad_requests_are_logged,
        server_tokens,
        garbage_never_kills_a_child,
    );
}

fn rfc_table(mpm: &str) {
    let s = Server::start(mpm, "");
    let long_line = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(9000));
    let long_field = format!("GET / HTTP/1.1\r\nHost: a\r\nX-Big: {}\r\n\r\n", "b".repeat(9000));
    let many_fields = format!("GET / HTTP/1.1\r\nHost: a\r\n{}\r\n", "X-F: 1\r\n".repeat(101));
    let long_ext = format!("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(5000));
    let table: Vec<(&str, &str, &[u16])> = vec![
        ("plain GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", &[200]),
        ("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", &[200]),
        ("request line over LimitRequestLine", &long_line, &[414]),
        ("field over LimitRequestFieldSize", &long_field, &[400, 431]),
        ("more fields than LimitRequestFields", &many_fields, &[400, 431]),
        ("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", &[400]),
        ("two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", &[400]),
        ("invalid Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", &[400]),
        ("Host with bad port", "GET / HTTP/1.1\r\nHost: a:xyz\r\n\r\n", &[400]),
        ("whitespace before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", &[400]),
        ("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", &[400]),
        ("CL and TE", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", &[400]),
        ("invalid CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n", &[400]),
        ("conflicting CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", &[400]),
        ("negative CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", &[400]),
        ("TE gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", &[501]),
        ("TE gzip, chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &[501]),
        ("HTTP/1.0 with TE", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", &[400]),
        ("HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", &[505]),
        ("HTTP/3.0 request line", "GET / HTTP/3.0\r\nHost: a\r\n\r\n", &[505]),
        ("malformed version", "GET / HTXP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("HTTP/0.9 style", "GET /\r\n\r\n", &[400]),
        ("double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("bad method token", "GE(T / HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("relative target", "GET index.html HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("chunk extension too long", &long_ext, &[400]),
        ("bad chunk size", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", &[400]),
        ("unknown expectation", "GET / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n", &[417]),
        ("NUL in field", "GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", &[400]),
        ("absolute-form", "GET http://localhost/index.html HTTP/1.1\r\nHost: x\r\n\r\n", &[200]),
        ("asterisk OPTIONS", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", &[200]),
        ("asterisk GET", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("unknown method", "BREW / HTTP/1.1\r\nHost: a\r\n\r\n", &[501]),
        // Apache's default handler answers POST with the file.
        ("POST to a file", "POST /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", &[200]),
        ("DELETE", "DELETE /a.txt HTTP/1.1\r\nHost: a\r\n\r\n", &[405]),
        ("dot-dot above root", "GET /../../etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("encoded dot-dot", "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("encoded slash", "GET /sub%2fpage.html HTTP/1.1\r\nHost: a\r\n\r\n", &[404]),
        ("encoded NUL", "GET /a.txt%00.html HTTP/1.1\r\nHost: a\r\n\r\n", &[404]),
        ("bad escape", "GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", &[400]),
        ("higher minor version", "GET / HTTP/1.5\r\nHost: a\r\n\r\n", &[200]),
        ("leading empty line", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &[200]),
    ];
    let mut failures = Vec::new();
    for (name, raw, want) in &table {
        let got = status_of(&s.raw(raw.as_bytes()));
        if !want.contains(&got) {
            failures.push(format!("{name}: got {got}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn keep_alive_http11_and_http10(mpm: &str) {
    let s = Server::start(mpm, "");
    let mut c = s.connect();
    for _ in 0..3 {
        c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let mut buf = [0u8; 4096];
        let n = read_some(&mut c, &mut buf).unwrap();
        let (r, _) = parse_response(&buf[..n]);
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"0123456789abcdefghij");
        assert_eq!(r.header("Connection"), None, "HTTP/1.1 keep-alive is implicit");
    }
    // HTTP/1.0 without keep-alive: the server closes.
    let out = s.raw(b"GET /a.txt HTTP/1.0\r\n\r\n");
    let (r, _) = parse_response(&out);
    assert_eq!(r.header("Connection"), Some("close"));
    // HTTP/1.0 asking for keep-alive gets it, and says so.
    let mut c = s.connect();
    c.write_all(b"GET /a.txt HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    let n = read_some(&mut c, &mut buf).unwrap();
    let (r, _) = parse_response(&buf[..n]);
    assert_eq!(r.header("Connection"), Some("keep-alive"));
    c.write_all(b"GET /a.txt HTTP/1.0\r\n\r\n").unwrap();
    let rest = read_to_close(&mut c);
    assert_eq!(parse_response(&rest).0.status, 200);
}

fn pipelining(mpm: &str) {
    let s = Server::start(mpm, "");
    let reqs = "GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\nHEAD /index.html HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\nGET /sub/page.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    let out = s.raw(reqs.as_bytes());
    let (r1, rest) = parse_response(&out);
    let (r2, rest) = parse_response_for(rest, true);
    let (r3, rest) = parse_response(rest);
    let (r4, rest) = parse_response(rest);
    assert_eq!((r1.status, r2.status, r3.status, r4.status), (200, 200, 404, 200));
    assert_eq!(r2.header("Content-Length"), Some("19"));
    assert_eq!(r4.body, b"sub page");
    assert!(rest.is_empty());
}

fn max_keep_alive_requests(mpm: &str) {
    let s = Server::start(mpm, "MaxKeepAliveRequests 2");
    let out = s.raw(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: a\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n");
    let all = parse_all(&out);
    assert_eq!(all.len(), 2, "the connection closes after the second response");
    assert_eq!(all[1].header("Connection"), Some("close"));
}

fn keep_alive_off(mpm: &str) {
    let s = Server::start(mpm, "KeepAlive Off");
    let out = s.raw(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n");
    let all = parse_all(&out);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].header("Connection"), Some("close"));
}

fn body_is_discarded_then_next_request(mpm: &str) {
    let s = Server::start(mpm, "");
    let out = s.raw(b"GET /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nHELLOGET /sub/page.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let all = parse_all(&out);
    assert_eq!(all.iter().map(|r| r.status).collect::<Vec<_>>(), vec![200, 200]);
    assert_eq!(all[1].body, b"sub page");
}

fn chunked_body_is_discarded(mpm: &str) {
    let s = Server::start(mpm, "");
    let out = s.raw(b"POST /a.txt HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let all = parse_all(&out);
    assert_eq!(all.iter().map(|r| r.status).collect::<Vec<_>>(), vec![200, 200]);
    assert_eq!((all[0].body.as_slice(), all[1].body.as_slice()), (&b"0123456789abcdefghij"[..], &b"0123456789abcdefghij"[..]));
}

fn limit_request_body(mpm: &str) {
    let s = Server::start(mpm, "LimitRequestBody 10\n<Location /sub>\nLimitRequestBody 100\n</Location>");
    let out = s.raw(b"POST /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world");
    assert_eq!(status_of(&out), 413);
    let out = s.raw(b"POST /sub/page.html HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world");
    assert_eq!(status_of(&out), 200, "the Location's larger limit applies");
    let out = s.raw(b"POST /a.txt HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n");
    assert_eq!(status_of(&out), 413, "a chunked body is counted as it arrives");
}

fn expect_100_continue(mpm: &str) {
    let s = Server::start(mpm, "");
    let mut c = s.connect();
    c.write_all(b"PUT /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n").unwrap();
    let mut buf = [0u8; 256];
    let n = read_some(&mut c, &mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 100 Continue\r\n\r\n"), "{:?}", String::from_utf8_lossy(&buf[..n]));
    c.write_all(b"data").unwrap();
    let mut out = buf[25..n].to_vec();
    while out.windows(4).position(|w| w == b"\r\n\r\n").is_none() {
        let n = read_some(&mut c, &mut buf).unwrap();
        assert!(n > 0, "closed before the final answer: {:?}", String::from_utf8_lossy(&out));
        out.extend_from_slice(&buf[..n]);
    }
    assert_eq!(parse_response(&out).0.status, 405);
}

fn slow_client_gets_408(mpm: &str) {
    let s = Server::start(mpm, "Timeout 1");
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n").unwrap();
    let start = Instant::now();
    let out = read_to_close(&mut c);
    assert_eq!(status_of(&out), 408, "{:?}", String::from_utf8_lossy(&out));
    // Timeout (1 s) bounds the wait, not RequestReadTimeout's header=20-40.
    assert!(start.elapsed() < Duration::from_secs(15), "cut off after {:?}, not about Timeout", start.elapsed());
    // A body that stops arriving is cut off too.
    let mut c = s.connect();
    c.write_all(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\npartial").unwrap();
    let out = read_to_close(&mut c);
    assert_eq!(status_of(&out), 408);
}

/// The error log's lines that contain `needle`, once the log has one.
fn log_lines(s: &Server, needle: &str) -> Vec<String> {
    s.wait_log("error.log", needle).lines().filter(|l| l.contains(needle)).map(str::to_string).collect()
}

const RRT: &str = "RequestReadTimeout header=1-2,MinRate=500 body=1,MinRate=500";

/// A head that stops coming is cut by RequestReadTimeout's initial header
/// timeout (Timeout, 60 s, would wait much longer): 408, logged once with
/// the client's address and the limit.
fn request_read_timeout_cuts_a_stalled_head(mpm: &str) {
    let s = Server::start(mpm, RRT);
    let start = Instant::now();
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n").unwrap();
    let out = read_to_close(&mut c);
    let took = start.elapsed();
    assert_eq!(status_of(&out), 408, "{:?}", String::from_utf8_lossy(&out));
    // Not before the 1 s header timeout; long before Timeout (60 s).
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(20), "cut after {took:?}");
    let why = "request header read timeout (RequestReadTimeout header=1-2,MinRate=500)";
    let lines = log_lines(&s, why);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("[client 127.0.0.1:"), "{lines:?}");
}

/// A head trickled faster than MinRate is still cut at the maximum.
fn request_read_timeout_max_cuts_a_trickle(mpm: &str) {
    let s = Server::start(mpm, RRT);
    let start = Instant::now();
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let line = |i: usize| format!("X-Pad-{i:03}: {}\r\n", "v".repeat(1000 - 13));
    // 1,000 bytes at once already earn the most the maximum allows.
    c.write_all(format!("GET /a.txt HTTP/1.1\r\nHost: a\r\n{}", line(0)).as_bytes()).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let mut c = c.try_clone().unwrap();
        let done = done.clone();
        std::thread::spawn(move || {
            // 1,000 bytes every 300 ms: 3,300 bytes a second, until cut (at
            // most 18 s; 60 lines stay under the 64 KB and 100 field caps).
            for i in 1..60 {
                std::thread::sleep(Duration::from_millis(300));
                if done.load(std::sync::atomic::Ordering::Relaxed) || c.write_all(line(i).as_bytes()).is_err() {
                    return;
                }
            }
        })
    };
    let out = read_to_close(&mut c);
    let took = start.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(status_of(&out), 408, "{:?}", String::from_utf8_lossy(&out));
    // At the 2 s maximum: a server that let MinRate extend past it would
    // read the trickle to its end, 18 s on.
    assert!(took >= Duration::from_millis(1900) && took < Duration::from_secs(15), "cut after {took:?}");
    let lines = log_lines(&s, "request header read timeout (RequestReadTimeout header=1-2,MinRate=500)");
    assert_eq!(lines.len(), 1, "{lines:?}");
}

/// Bytes received raise the timeout by a second per MinRate bytes: a head
/// (and a body) whose first 5,000 bytes came at once may finish after the
/// initial timeout (1 s; the rest comes after 1.5 s, well inside the 10 s
/// the 5,000 bytes earned, however late a loaded machine wakes the test).
fn request_read_timeout_min_rate_extends(mpm: &str) {
    let s = Server::start(mpm, "RequestReadTimeout header=1-11,MinRate=500 body=1,MinRate=500");
    let pad = format!("X-Pad: {}\r\n", "v".repeat(5000));
    let mut c = s.connect();
    c.write_all(format!("GET /a.txt HTTP/1.1\r\nHost: a\r\n{pad}").as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    c.write_all(b"Connection: close\r\n\r\n").unwrap();
    let out = read_to_close(&mut c);
    assert_eq!(status_of(&out), 200, "{:?}", String::from_utf8_lossy(&out));
    // A body: 5,000 of its 5,010 bytes with the head, the rest after 1.5 s.
    let mut c = s.connect();
    c.write_all(format!("POST /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 5010\r\nConnection: close\r\n\r\n{}", "b".repeat(5000)).as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    c.write_all(b"0123456789").unwrap();
    let out = read_to_close(&mut c);
    assert_eq!(status_of(&out), 200, "{:?}", String::from_utf8_lossy(&out));
    assert!(!s.read_log("error.log").contains("read timeout"));
}

/// A body that stops coming is cut by RequestReadTimeout body=.
fn request_read_timeout_cuts_a_stalled_body(mpm: &str) {
    let s = Server::start(mpm, RRT);
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    c.write_all(b"POST /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\npartial").unwrap();
    let start = Instant::now();
    let out = read_to_close(&mut c);
    let took = start.elapsed();
    assert_eq!(status_of(&out), 408, "{:?}", String::from_utf8_lossy(&out));
    // Not before body=1; long before Timeout (60 s).
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(20), "cut after {took:?}");
    let lines = log_lines(&s, "request body read timeout (RequestReadTimeout body=1,MinRate=500)");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("[client 127.0.0.1:"), "{lines:?}");
}

/// A connection that sends nothing is closed after the header timeout
/// without an answer or a log line; a kept-alive one waits
/// KeepAliveTimeout for its next request, whose head is timed from its
/// first byte.
fn request_read_timeout_silent_and_keep_alive(mpm: &str) {
    // KeepAliveTimeout far longer than the idle pause below, so that a
    // late wake-up of this test cannot reach it.
    let s = Server::start(mpm, &format!("{RRT}\nKeepAliveTimeout 30"));
    let start = Instant::now();
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let out = read_to_close(&mut c);
    let took = start.elapsed();
    assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));
    // TCP_DEFER_ACCEPT holds a silent connection back for a second or more
    // first; then the header timeout (1-2 s), long before Timeout (60 s).
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(20), "closed after {took:?}");

    let mut c = s.connect();
    c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !response_complete(&got) {
        let n = read_some(&mut c, &mut buf).unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(status_of(&got), 200);
    // Idle for longer than the header timeout's maximum (2 s), shorter than KeepAliveTimeout.
    std::thread::sleep(Duration::from_millis(3000));
    c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").unwrap();
    let out = read_to_close(&mut c);
    assert_eq!(status_of(&out), 200, "{:?}", String::from_utf8_lossy(&out));
    assert!(!s.read_log("error.log").contains("read timeout"));
}

fn keep_alive_timeout_closes(mpm: &str) {
    let s = Server::start(mpm, "KeepAliveTimeout 1");
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let start = Instant::now();
    let out = read_to_close(&mut c);
    assert_eq!(status_of(&out), 200);
    let waited = start.elapsed();
    // Not before KeepAliveTimeout (its clock starts after our request);
    // long before Timeout (60 s), which would close it otherwise.
    assert!(waited >= Duration::from_millis(900) && waited < Duration::from_secs(15), "closed after {waited:?}");
}

fn limits_from_config(mpm: &str) {
    let s = Server::start(mpm, "LimitRequestLine 50\nLimitRequestFieldSize 40\nLimitRequestFields 3");
    assert_eq!(status_of(&s.raw(format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "x".repeat(60)).as_bytes())), 414);
    let r = s.raw(format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "y".repeat(50)).as_bytes());
    assert!([400, 431].contains(&status_of(&r)));
    let r = s.raw(b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n");
    assert!([400, 431].contains(&status_of(&r)));
    assert_eq!(status_of(&s.raw(b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n")), 200);
}

/// The whole head is capped (64 KB by default) whatever the other limits
/// allow, whether it arrives at once or in pieces, and the refusal is logged
/// with the client's address and the limit.
fn head_size_is_capped(mpm: &str) {
    // `n` fields of `size` bytes, each inside LimitRequestFieldSize.
    let head = |n: usize, size: usize| {
        let fields: String = (0..n).map(|i| format!("X-{i:02}: {}\r\n", "v".repeat(size - 7))).collect();
        format!("GET /a.txt HTTP/1.1\r\nHost: a\r\n{fields}\r\n")
    };
    let s = Server::start(mpm, "");
    // 99 fields of 6,000 bytes: inside LimitRequestFields too.
    assert_eq!(status_of(&s.raw(head(99, 6000).as_bytes())), 431);
    let log = s.wait_log("error.log", "LimitRequestHeadSize (65536)");
    assert!(log.lines().any(|l| l.contains("LimitRequestHeadSize (65536)") && l.contains("[client 127.0.0.1:")), "{log}");
    // The same head in 1,000-byte pieces.
    let mut c = s.connect();
    for piece in head(99, 6000).as_bytes().chunks(1000) {
        if c.write_all(piece).is_err() {
            break;
        }
    }
    assert_eq!(status_of(&read_to_close(&mut c)), 431);
    // Just under the cap is served.
    assert_eq!(status_of(&s.raw(head(10, 6000).as_bytes())), 200);
    let s = Server::start(mpm, "LimitRequestHeadSize 2000");
    assert_eq!(status_of(&s.raw(head(30, 100).as_bytes())), 431);
    assert_eq!(status_of(&s.raw(head(10, 100).as_bytes())), 200);
}

fn bad_requests_are_logged(mpm: &str) {
    let s = Server::start(mpm, "");
    assert_eq!(status_of(&s.raw(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")), 400);
    let log = s.wait_log("error.log", "more than one Host");
    assert!(log.contains("[error]") && log.contains("[client 127.0.0.1:"), "{log}");
    let access = s.wait_log("access.log", "\" 400 ");
    assert!(access.contains("\"GET / HTTP/1.1\" 400 "), "{access}");
}

fn server_tokens(mpm: &str) {
    let s = Server::start(mpm, "ServerTokens Prod");
    let r = s.get("/a.txt");
    assert_eq!(r.header("Server"), Some("warren"));
    assert!(r.header("Date").is_some_and(|d| d.ends_with(" GMT")));
    let s = Server::start(mpm, "");
    assert!(s.get("/a.txt").header("Server").unwrap().starts_with("warren/"));
}

/// Mutated requests (a fixed pseudo-random sequence) never crash a child:
/// afterwards the same children serve, and none was replaced.
fn garbage_never_kills_a_child(mpm: &str) {
    let s = Server::start(mpm, "Timeout 2");
    let before = {
        let mut c = s.wait_children(2);
        c.sort();
        c
    };
    let seeds: [&[u8]; 4] = [
        b"GET /a.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-3,5-9\r\nIf-None-Match: \"x\"\r\n\r\n",
        b"POST /a.txt HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\n\r\n",
        b"GET /sub/../%2e/index.html?q=%zz HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nab",
        b"\r\nHEAD http://a:80/space%20name.txt HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let specials = b"\r\n :;,%/\\\"\0\x7f\xff-0123456789abcdefHTP.*?=";
    for i in 0..300 {
        let mut req = seeds[i % seeds.len()].to_vec();
        for _ in 0..(1 + next() % 6) {
            let pos = (next() % (req.len() as u64 + 1)) as usize;
            match next() % 4 {
                0 if pos < req.len() => {
                    req.remove(pos);
                }
                1 => req.insert(pos, specials[(next() % specials.len() as u64) as usize]),
                2 if pos < req.len() => req[pos] = specials[(next() % specials.len() as u64) as usize],
                _ => {
                    let dup: Vec<u8> = req[pos..(pos + 8).min(req.len())].to_vec();
                    req.splice(pos..pos, dup);
                }
            }
        }
        let mut c = s.connect();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.write_all(&req);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let out = read_to_close(&mut c);
        if !out.is_empty() {
            assert!(out.starts_with(b"HTTP/1.1 "), "{:?} -> {:?}", String::from_utf8_lossy(&req), String::from_utf8_lossy(&out));
        }
    }
    assert_eq!(s.get("/a.txt").status, 200);
    // Every child is still there (prefork may have started more for the
    // connections that waited meanwhile).
    let after = s.children();
    assert!(before.iter().all(|c| after.contains(c)), "a child died: {before:?} -> {after:?}");
    let log = s.read_log("error.log");
    assert!(!log.contains("replacing it"), "{log}");
}
