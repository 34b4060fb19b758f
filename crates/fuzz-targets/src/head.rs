//! Request heads, read as the MPMs read them: a connection's bytes arrive in
//! pieces, `parse_head_from` resumes its scan on the grown buffer, a head's
//! body is decoded (or its length skipped) before the next head is parsed.
//!
//! The input is everything a client sent on one connection. It is read under
//! Apache's default limits and under limits small enough for short inputs
//! to reach each of them, whole, one byte at a time and in two or three
//! pieces; every reading must see the same heads, bodies and refusal. Each
//! head parsed is checked against its bytes (see [`check`]).

use warren_http::request::valid_host;
use warren_http::{parse_head, parse_head_from, BodyDecoder, BodyFraming, HeadLimits, HeadScan, RequestHead, Version};

const LIMITS: [HeadLimits; 2] = [
    // LimitRequestLine, LimitRequestFieldSize, LimitRequestFields and
    // LimitRequestHeadSize by default.
    HeadLimits { request_line: 8190, field_size: 8190, fields: 100, head: 64 * 1024 },
    // Each reachable by a few hundred bytes; the head's cap before the
    // others allow (40 + 2 + 4 * (24 + 2) + 2 = 148 bytes).
    HeadLimits { request_line: 40, field_size: 24, fields: 4, head: 120 },
];

pub fn run(data: &[u8]) {
    for limits in &LIMITS {
        let whole = read(&[data], limits);
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        agree(&whole, &read(&bytes, limits), data, "one byte at a time");
        for cuts in crate::cuts(data.len()) {
            agree(&whole, &read(&crate::pieces(data, &cuts), limits), data, &format!("cut at {cuts:?}"));
        }
    }
}

fn agree(whole: &Reading, other: &Reading, data: &[u8], how: &str) {
    assert_eq!(whole, other, "read whole and {how} differ on {:?}", String::from_utf8_lossy(data));
}

/// What a reading of a connection saw, in order.
#[derive(Debug, PartialEq, Eq)]
struct Reading {
    events: Vec<Event>,
    /// Bytes left unparsed at the end (a head not yet complete).
    pending: usize,
    /// Payload received of a body not yet complete.
    body_received: Option<u64>,
}

#[derive(Debug, PartialEq, Eq)]
enum Event {
    Head(Seen),
    /// A body read to its end, with its payload's length.
    Body(u64),
    /// The head was refused with this status; the connection ends.
    Refused(u16),
    /// The body was refused with this status; the connection ends.
    BodyRefused(u16),
}

/// Everything a parsed head tells its users.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    method: String,
    target: Vec<u8>,
    path_and_query: Vec<u8>,
    request_line: Vec<u8>,
    version: Version,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    framing: BodyFraming,
    keep_alive: bool,
    expect_continue: bool,
    host: Option<Vec<u8>>,
    wire_len: usize,
}

impl Seen {
    fn of(h: &RequestHead) -> Seen {
        Seen {
            method: h.method().to_string(),
            target: h.target().to_vec(),
            path_and_query: h.path_and_query().to_vec(),
            request_line: h.request_line().to_vec(),
            version: h.version,
            headers: h.headers().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
            framing: h.framing,
            keep_alive: h.keep_alive,
            expect_continue: h.expect_continue,
            host: h.host().map(<[u8]>::to_vec),
            wire_len: h.wire_len(),
        }
    }
}

/// One connection's bytes, arriving as `pieces`, read as event.rs and
/// blocking.rs read them.
fn read(pieces: &[&[u8]], limits: &HeadLimits) -> Reading {
    let mut rbuf: Vec<u8> = Vec::new();
    let mut scan = HeadScan::default();
    let mut body: Option<BodyDecoder> = None;
    let mut events = Vec::new();
    'pieces: for piece in pieces {
        rbuf.extend_from_slice(piece);
        loop {
            if let Some(dec) = body.as_mut() {
                let mut payload = 0usize;
                let used = match dec.feed(&rbuf, &mut |b| payload += b.len()) {
                    Ok(used) => used,
                    Err(e) => {
                        events.push(Event::BodyRefused(e.status));
                        break 'pieces;
                    }
                };
                assert!(used <= rbuf.len() && payload <= used, "the decoder used {used} of {} bytes for {payload} of payload", rbuf.len());
                rbuf.drain(..used);
                if !dec.is_done() {
                    assert!(rbuf.is_empty(), "the decoder left {} bytes before the end of its body", rbuf.len());
                    continue 'pieces;
                }
                events.push(Event::Body(dec.received));
                body = None;
            }
            if rbuf.is_empty() {
                continue 'pieces;
            }
            match parse_head_from(&mut scan, &rbuf, limits) {
                Ok(Some((head, used))) => {
                    check(&head, &rbuf, used, limits);
                    events.push(Event::Head(Seen::of(&head)));
                    rbuf.drain(..used);
                    scan = HeadScan::default();
                    if head.has_body() {
                        body = Some(BodyDecoder::new(head.framing));
                    }
                }
                Ok(None) => continue 'pieces,
                Err(e) => {
                    assert!(matches!(e.status, 400 | 414 | 417 | 431 | 501 | 505), "status {} for a head", e.status);
                    events.push(Event::Refused(e.status));
                    break 'pieces;
                }
            }
        }
    }
    let stopped = matches!(events.last(), Some(Event::Refused(_) | Event::BodyRefused(_)));
    Reading {
        events,
        pending: if stopped { 0 } else { rbuf.len() },
        body_received: if stopped { None } else { body.map(|d| d.received) },
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A head parsed from the start of `buf` in `used` bytes holds to its bytes,
/// its limits and RFC 9112's rules, and depends on those bytes only.
fn check(h: &RequestHead, buf: &[u8], used: usize, limits: &HeadLimits) {
    assert!(used > 0 && used <= buf.len() && buf[used - 1] == b'\n', "a head of {used} bytes in {}", buf.len());
    assert_eq!(h.wire_len(), used);
    assert!(used <= limits.head, "a head of {used} bytes past LimitRequestHeadSize");

    let (method, target) = (h.method().as_bytes(), h.target());
    assert!(!method.is_empty() && method.iter().all(|&b| is_tchar(b)), "method {method:?}");
    assert!(!target.is_empty() && target.iter().all(|&b| b > b' ' && b != 0x7f), "target {target:?}");
    let line = h.request_line();
    assert!(line.len() <= limits.request_line);
    let before_version = [method, b" ", target, b" "].concat();
    assert!(line.starts_with(&before_version) && line.len() == before_version.len() + 8, "request line {line:?}");
    assert!(line.ends_with(h.version.as_str().as_bytes()) || h.version == Version::Http11, "request line {line:?} for {:?}", h.version);
    // An absolute-form target's empty path reads as "/".
    let path = h.path_and_query();
    assert!(target.ends_with(path) || path.first() == Some(&b'/') && target.ends_with(&path[1..]), "path {path:?} of {target:?}");

    // An absolute-form target's authority is the Host field (added to an
    // HTTP/1.0 head without one), sized by the request line's limit.
    let absolute = target[0] != b'/' && target != b"*";
    let mut count = 0;
    for (name, value) in h.headers() {
        count += 1;
        assert!(!name.is_empty() && name.iter().all(|&b| is_tchar(b)), "field name {name:?}");
        assert!(!value.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0)), "field value {value:?}");
        if absolute && name.eq_ignore_ascii_case(b"host") {
            assert_eq!(Some(value), h.host(), "the Host field is the target's authority");
        } else {
            assert!(name.len() + 1 + value.len() <= limits.field_size);
        }
    }
    assert!(count <= limits.fields + usize::from(absolute));

    let te = h.header("transfer-encoding");
    let cl = h.header("content-length");
    match h.framing {
        BodyFraming::Chunked => assert!(te.is_some() && cl.is_none() && h.version == Version::Http11),
        BodyFraming::Length(n) => assert!(n > 0 && cl.is_some() && te.is_none()),
        BodyFraming::None => assert!(te.is_none()),
    }
    if h.version == Version::Http11 {
        assert!(h.host().is_some(), "an HTTP/1.1 head without a host");
    }
    if let Some(host) = h.host() {
        assert!(valid_host(host), "host {host:?}");
    }
    assert!(!h.expect_continue || h.version == Version::Http11);

    // The same verdict from the head's bytes alone, and none from one byte fewer.
    match parse_head(&buf[..used], limits) {
        Ok(Some((again, n))) => assert!(n == used && Seen::of(&again) == Seen::of(h), "the head alone parses otherwise"),
        other => panic!("the head alone is {:?}", other.map(|o| o.map(|(_, n)| n))),
    }
    match parse_head(&buf[..used - 1], limits) {
        Ok(None) => {}
        other => panic!("the head but its last byte is {:?}", other.map(|o| o.map(|(_, n)| n))),
    }
}
