//! `BodyDecoder` on chunked bodies (and, briefly, on a Content-Length).
//!
//! The input is what follows a head with `Transfer-Encoding: chunked`: the
//! body and perhaps the next request. The decoder is fed it whole, one byte
//! at a time and in pieces, as the MPMs feed it what each read returned,
//! and must give the same payload, stop at the same byte and refuse the
//! same bodies each way; it must never claim more bytes than it was given
//! nor leave any unclaimed before its end. [`reference`] reads the same
//! rules from the whole input in one pass, written as the grammar of RFC
//! 9112 7.1 rather than as a state machine; the two must agree.

use warren_http::body::{MAX_CHUNK_EXTENSION, MAX_TRAILERS};
use warren_http::{BodyDecoder, BodyFraming};

pub fn run(data: &[u8]) {
    let whole = decode(BodyFraming::Chunked, &[data]);
    let bytes: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(whole, decode(BodyFraming::Chunked, &bytes), "fed one byte at a time");
    for cuts in crate::cuts(data.len()) {
        assert_eq!(whole, decode(BodyFraming::Chunked, &crate::pieces(data, &cuts)), "cut at {cuts:?}");
    }
    assert_eq!(whole, reference(data), "the decoder and the grammar differ on {:?}", String::from_utf8_lossy(data));

    // A Content-Length body takes exactly its length, however it arrives.
    let n = data.len() / 2;
    let want = Decoded { payload: data[..n].to_vec(), used: n, outcome: Outcome::Done };
    assert_eq!(decode(BodyFraming::Length(n as u64), &[data]), want);
    assert_eq!(decode(BodyFraming::Length(n as u64), &bytes), want);
}

#[derive(Debug, PartialEq, Eq)]
pub struct Decoded {
    payload: Vec<u8>,
    /// Bytes taken from the input (the body's end, or all of it).
    used: usize,
    outcome: Outcome,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// The input ended inside the body.
    NeedMore,
    Refused(u16),
}

/// Feeds `pieces` in turn, each preceded by what the last feed left, as a
/// connection's buffer is.
fn decode(framing: BodyFraming, pieces: &[&[u8]]) -> Decoded {
    let mut d = BodyDecoder::new(framing);
    let mut payload = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut used = 0;
    for piece in pieces {
        if d.is_done() {
            break;
        }
        buf.extend_from_slice(piece);
        let before = payload.len();
        let n = match d.feed(&buf, &mut |b| payload.extend_from_slice(b)) {
            Ok(n) => n,
            Err(e) => {
                assert_eq!(e.status, 400);
                // How much earlier feeds used depends on the pieces: not compared.
                return Decoded { payload, used: 0, outcome: Outcome::Refused(e.status) };
            }
        };
        assert!(n <= buf.len(), "used {n} of {} bytes", buf.len());
        assert!(payload.len() - before <= n, "{} bytes of payload from {n} bytes", payload.len() - before);
        assert!(d.is_done() || n == buf.len(), "stopped at {n} of {} bytes before the end", buf.len());
        assert_eq!(d.received, payload.len() as u64);
        buf.drain(..n);
        used += n;
    }
    if d.is_done() {
        // Done is for good: what follows is the next request's.
        assert_eq!(d.feed(b"0\r\n\r\n", &mut |_| panic!("payload after the end")), Ok(0));
    }
    Decoded { payload, used, outcome: if d.is_done() { Outcome::Done } else { Outcome::NeedMore } }
}

/// RFC 9112 7.1, with warren's bounds (16 hex digits of size, extensions and
/// trailers of bounded length, CRLF line ends only), read from the whole
/// input at once.
///
/// ```text
/// chunked-body = *chunk last-chunk trailer-section CRLF
/// chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
/// last-chunk   = 1*("0") [ chunk-ext ] CRLF
/// ```
pub fn reference(data: &[u8]) -> Decoded {
    let mut payload = Vec::new();
    let mut at = 0;
    let refused = |payload: Vec<u8>| Decoded { payload, used: 0, outcome: Outcome::Refused(400) };
    let need_more = |payload: Vec<u8>| Decoded { payload, used: data.len(), outcome: Outcome::NeedMore };
    loop {
        // chunk-size: the hex digits up to the first other byte.
        let digits = data[at..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits > 16 {
            return refused(payload);
        }
        if at + digits == data.len() {
            return need_more(payload);
        }
        if digits == 0 {
            return refused(payload);
        }
        let size = u64::from_str_radix(std::str::from_utf8(&data[at..at + digits]).expect("hex"), 16).expect("16 digits fit");
        at += digits;
        // chunk-ext: from `;` (or the whitespace before it) to the CR.
        if matches!(data[at], b';' | b' ' | b'\t') {
            let Some(len) = data[at..].iter().position(|&b| b == b'\r' || b == b'\n') else {
                return if data.len() - at > MAX_CHUNK_EXTENSION { refused(payload) } else { need_more(payload) };
            };
            if len > MAX_CHUNK_EXTENSION || data[at + len] == b'\n' {
                return refused(payload);
            }
            at += len;
        }
        // CRLF
        match &data[at..] {
            [] | [b'\r'] => return need_more(payload),
            [b'\r', b'\n', ..] => at += 2,
            _ => return refused(payload),
        }
        if size == 0 {
            break;
        }
        // chunk-data CRLF
        let available = (data.len() - at) as u64;
        if available < size {
            payload.extend_from_slice(&data[at..]);
            return need_more(payload);
        }
        let end = at + size as usize;
        payload.extend_from_slice(&data[at..end]);
        at = end;
        match &data[at..] {
            [] | [b'\r'] => return need_more(payload),
            [b'\r', b'\n', ..] => at += 2,
            _ => return refused(payload),
        }
    }
    // trailer-section CRLF: lines ending in CRLF (bare CR or LF refused) up
    // to an empty one, the whole within MAX_TRAILERS bytes.
    let start = at;
    loop {
        let line_start = at;
        let Some(end) = data[at..].iter().position(|&b| b == b'\r' || b == b'\n').map(|i| at + i) else {
            return if data.len() - start > MAX_TRAILERS { refused(payload) } else { need_more(payload) };
        };
        if end - start >= MAX_TRAILERS || data[end] == b'\n' {
            return refused(payload);
        }
        if end + 1 == data.len() {
            return need_more(payload);
        }
        if data[end + 1] != b'\n' || end + 1 - start >= MAX_TRAILERS {
            return refused(payload);
        }
        if end == line_start {
            return Decoded { payload, used: end + 2, outcome: Outcome::Done };
        }
        at = end + 2;
    }
}
