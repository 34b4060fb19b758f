//! The HTTP/1.1 connection fed as a socket would feed it, in any pieces:
//! the mock transport of the serving layer's HTTP/1.1 side.

use std::time::{Duration, Instant};

use super::*;
use crate::conn::{ConnRules, KeepAlivePolicy, Next, Phase};
use crate::read_timeout::ReadTimeout;
use crate::head_scan::HeadLimits;
use crate::request::BodyFraming;
use crate::version::Version;

fn rules() -> ConnRules {
    ConnRules {
        limits: HeadLimits { request_line: 200, field_size: 200, fields: 20, head: 1000 },
        keep_alive: KeepAlivePolicy { enabled: true, max_requests: 0, timeout: Duration::from_secs(5) },
        timeout: Duration::from_secs(60),
        head_timeout: ReadTimeout { initial: 10, max: 20, min_rate: 100 },
        body_timeout: ReadTimeout { initial: 10, max: 0, min_rate: 100 },
    }
}

/// Feeds `input` `piece` bytes at a time; the heads and errors found.
fn heads(conn: &mut Connection, input: &[u8], piece: usize, now: Instant) -> Vec<Result<String, u16>> {
    let mut found = Vec::new();
    for part in input.chunks(piece) {
        conn.feed(part, now);
        loop {
            match conn.poll_head() {
                Poll::Head(h) => {
                    found.push(Ok(String::from_utf8_lossy(h.request_line()).into_owned()));
                    conn.after_response(true, true, false, now);
                }
                Poll::Error(e) => {
                    found.push(Err(e.status));
                    conn.refuse();
                }
                Poll::NeedMore => break,
            }
        }
    }
    found
}

/// Decodes a body fed `piece` bytes at a time; the payload and the end state.
fn body(framing: BodyFraming, limit: u64, input: &[u8], piece: usize) -> (Vec<u8>, Result<usize, u16>) {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    conn.start_body(framing, limit, false);
    conn.time_body(now);
    let mut payload = Vec::new();
    for part in input.chunks(piece) {
        conn.feed(part, now);
        let step = conn.poll_body(usize::MAX, &mut |d| payload.extend_from_slice(d));
        match step.state {
            BodyState::More => {}
            BodyState::Done => return (payload, Ok(conn.input().len())),
            BodyState::Error(e) => return (payload, Err(e.status)),
        }
    }
    (payload, Err(0))
}

#[test]
fn a_head_fed_a_byte_at_a_time() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    let got = heads(&mut conn, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", 1, now);
    assert_eq!(got, vec![Ok("GET /a HTTP/1.1".to_string())]);
    assert_eq!(conn.served(), 1);
    assert!(conn.is_idle(), "kept alive, nothing left: waiting for the next request");
}

#[test]
fn pipelined_requests_come_out_one_by_one_in_any_pieces() {
    let input = b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /3 HTTP/1.0\r\n\r\n";
    for piece in [1, 2, 7, 30, input.len()] {
        let now = Instant::now();
        let mut conn = Connection::new(rules(), now);
        let got = heads(&mut conn, input, piece, now);
        assert_eq!(got, vec![Ok("GET /1 HTTP/1.1".into()), Ok("GET /2 HTTP/1.1".into()), Ok("HEAD /3 HTTP/1.0".into())], "pieces of {piece}");
        assert_eq!(conn.served(), 3);
    }
}

#[test]
fn a_pipelined_head_is_timed_from_the_response_not_idle() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    conn.feed(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HT", now);
    assert!(matches!(conn.poll_head(), Poll::Head(_)));
    let later = now + Duration::from_secs(3);
    assert_eq!(conn.after_response(true, true, false, later), Next::KeepAlive);
    assert_eq!(conn.phase(), Phase::ReadingHead);
    assert_eq!(conn.deadline(false), rules().head_clock(later, 9).deadline());
    assert!(matches!(conn.timed_out(false), Expiry::Head(e) if e.status == 408));
}

#[test]
fn bad_and_oversized_heads_get_their_status() {
    let now = Instant::now();
    let long = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n", "a".repeat(300));
    for (input, status) in [(b"GET / HTTP/1.1\r\nHost x\r\n\r\n".to_vec(), 400), (long.into_bytes(), 431), (b"BAD\x01 / HTTP/1.1\r\n\r\n".to_vec(), 400)] {
        for piece in [1, 5, input.len()] {
            let mut conn = Connection::new(rules(), now);
            let got = heads(&mut conn, &input, piece, now);
            assert_eq!(got.first(), Some(&Err(status)), "{}", String::from_utf8_lossy(&input));
        }
    }
}

#[test]
fn keep_alive_or_close_after_a_response() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    conn.feed(b"GET / HTTP/1.0\r\n\r\n", now);
    let Poll::Head(h) = conn.poll_head() else { panic!("a head") };
    assert_eq!(h.version, Version::Http10);
    let keep = rules().keep_alive.keep_alive(&h, conn.served(), false);
    assert!(!keep, "HTTP/1.0 without keep-alive closes");
    assert_eq!(conn.after_response(true, keep, false, now), Next::Close);
    let mut conn = Connection::new(rules(), now);
    conn.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", now);
    assert!(matches!(conn.poll_head(), Poll::Head(_)));
    assert_eq!(conn.after_response(true, false, true, now), Next::Linger, "a body left unread is drained");
    assert_eq!(conn.phase(), Phase::Lingering);
    assert_eq!(conn.after_response(false, true, false, now), Next::Close, "a response not written whole");
    let mut tls = Connection::new(rules(), now).over_tls(true);
    assert_eq!(tls.after_response(true, false, false, now), Next::Linger, "TLS: the client's close_notify may be unread");
}

#[test]
fn waiting_between_requests_ends_quietly_or_lingers_when_stopping() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    assert!(matches!(conn.timed_out(false), Expiry::Close), "a new connection that sent nothing");
    heads(&mut conn, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 100, now);
    assert_eq!(conn.deadline(false), now + Duration::from_secs(5));
    assert_eq!(conn.deadline(true), now + crate::conn::DRAIN_IDLE);
    assert!(matches!(conn.timed_out(false), Expiry::Close));
    assert!(matches!(conn.timed_out(true), Expiry::Linger));
    let later = now + Duration::from_secs(1);
    assert!(conn.feed(b"G", later), "the next head begins, and its clock with it");
    assert_eq!(conn.deadline(false), rules().head_clock(later, 1).deadline());
}

#[test]
fn chunked_bodies_split_anywhere() {
    let input = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\nGET /next";
    for piece in 1..input.len() {
        let (payload, end) = body(BodyFraming::Chunked, 100, input, piece);
        let payload = String::from_utf8(payload).unwrap();
        assert_eq!(payload, "hello world", "pieces of {piece}");
        assert!(end.is_ok(), "pieces of {piece}: {end:?}");
    }
    let (_, end) = body(BodyFraming::Chunked, 100, input, input.len());
    assert_eq!(end, Ok(b"GET /next".len()), "what follows the body is left for the next head");
}

#[test]
fn bodies_over_the_limit_or_badly_framed() {
    assert_eq!(body(BodyFraming::Chunked, 8, b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 3).1, Err(413));
    assert_eq!(body(BodyFraming::Length(11), 8, b"hello world", 1).1, Err(413));
    assert_eq!(body(BodyFraming::Chunked, 100, b"zz\r\n", 1).1, Err(400));
    let (payload, end) = body(BodyFraming::Length(5), 5, b"helloGET", 2);
    assert_eq!((payload.as_slice(), end), (&b"hello"[..], Ok(1)), "what follows stays in the input");
}

#[test]
fn a_slow_body_times_out() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    conn.start_body(BodyFraming::Length(10), 100, true);
    assert!(conn.continue_due(), "the client waits for 100 Continue");
    assert!(!conn.continue_due(), "sent once");
    conn.time_body(now);
    assert_eq!(conn.deadline(false), now + Duration::from_secs(10));
    assert!(matches!(conn.timed_out(false), Expiry::Body(e) if e.status == 408));
}

#[test]
fn a_body_relayed_while_read_keeps_its_clock() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    conn.start_body(BodyFraming::Length(1000), u64::MAX, false);
    conn.time_body(now);
    conn.set_phase(Phase::Proxying);
    let before = conn.deadline(false);
    conn.feed(&[b'x'; 200], now);
    assert_eq!(conn.deadline(false), before + Duration::from_secs(2), "MinRate 100: 200 bytes earn two seconds");
    assert!(matches!(conn.timed_out(false), Expiry::Body(e) if e.status == 408));
    conn.poll_body(usize::MAX, &mut |_| {});
    conn.feed(&[b'x'; 800], now);
    conn.poll_body(usize::MAX, &mut |_| {});
    assert!(conn.body_done());
    assert!(matches!(conn.timed_out(false), Expiry::Close), "once the body is in, the backend's clock is the driver's");
}

#[test]
fn response_framing() {
    let frame = |status, version, is_head, len, keep| {
        let mut out = Vec::new();
        let f = frame_response(&mut out, status, version, is_head, len, keep);
        (String::from_utf8(out).unwrap(), f.chunked, f.keep_alive)
    };
    assert_eq!(frame(200, Version::Http11, false, BodyLength::Known(5), true), ("Content-Length: 5\r\n\r\n".into(), false, true));
    assert_eq!(frame(200, Version::Http11, true, BodyLength::Known(5), false), ("Content-Length: 5\r\nConnection: close\r\n\r\n".into(), false, false));
    assert_eq!(frame(200, Version::Http11, false, BodyLength::Unknown, true), ("Transfer-Encoding: chunked\r\n\r\n".into(), true, true));
    assert_eq!(frame(200, Version::Http10, false, BodyLength::Unknown, true), ("Connection: close\r\n\r\n".into(), false, false), "HTTP/1.0: the close ends the body");
    assert_eq!(frame(200, Version::Http10, false, BodyLength::Known(0), true), ("Content-Length: 0\r\nConnection: keep-alive\r\n\r\n".into(), false, true));
    assert_eq!(frame(304, Version::Http11, false, BodyLength::Known(5), true), ("\r\n".into(), false, true));
    assert_eq!(frame(200, Version::Http11, true, BodyLength::Unknown, true), ("\r\n".into(), false, true));
}

#[test]
fn a_whole_response_head() {
    let now = Instant::now();
    let mut conn = Connection::new(rules(), now);
    conn.feed(b"HEAD /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", now);
    let Poll::Head(req) = conn.poll_head() else { panic!("a head") };
    let head = ResponseHead { status: 200, date: "Sun, 06 Nov 1994 08:49:37 GMT", server: "warren", body: BodyLength::Known(12) };
    let mut out = Vec::new();
    let f = write_response_head(&mut out, &head, [("Content-Type", "text/plain"), ("X-Split", "a\r\nb")], Some(&req), true);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nServer: warren\r\nContent-Type: text/plain\r\nX-Split: a  b\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n"
    );
    assert_eq!(f, Framing { chunked: false, with_body: false, keep_alive: true }, "HEAD: the length, not the body");
    let mut out = Vec::new();
    let f = write_response_head(&mut out, &ResponseHead { status: 400, ..head }, [], None, false);
    assert!(String::from_utf8(out).unwrap().ends_with("Content-Length: 12\r\nConnection: close\r\n\r\n"));
    assert!(f.with_body, "input that did not parse is answered as HTTP/1.1 with a body");
}

#[test]
fn a_streamed_body_is_framed_piece_by_piece() {
    let chunked = Framing { chunked: true, with_body: true, keep_alive: true };
    let mut f = BodyFramer::new(chunked, None);
    assert_eq!(f.frame(b"hello".to_vec()), (5, b"5\r\nhello\r\n".to_vec()));
    assert_eq!(f.frame(Vec::new()), (0, Vec::new()), "an empty piece is no chunk (it would end the body)");
    assert_eq!(f.finish(), Ok(&b"0\r\n\r\n"[..]));
    let length = Framing { chunked: false, with_body: true, keep_alive: true };
    let mut f = BodyFramer::new(length, Some(8));
    assert_eq!(f.frame(b"hello".to_vec()), (5, b"hello".to_vec()));
    assert_eq!(f.finish(), Err(ShortBody), "3 bytes announced are missing");
    assert_eq!(f.frame(b" world".to_vec()), (3, b" wo".to_vec()), "never past the announced length");
    assert_eq!(f.finish(), Ok(&b""[..]));
    let head = Framing { chunked: false, with_body: false, keep_alive: true };
    let mut f = BodyFramer::new(head, Some(8));
    assert_eq!(f.frame(b"hello".to_vec()), (0, Vec::new()), "HEAD: read, not sent");
    assert!(!f.sends());
    assert_eq!(f.finish(), Ok(&b""[..]));
}

#[test]
fn switching_protocols_names_the_upgrade() {
    let mut out = Vec::new();
    let f = frame_response(&mut out, 101, Version::Http11, false, BodyLength::Known(0), true);
    assert_eq!(out, b"Connection: Upgrade\r\n\r\n");
    assert!(!f.keep_alive && !f.with_body);
}
