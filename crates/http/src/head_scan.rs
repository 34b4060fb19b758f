//! [`HeadScan`]: how far a request head that arrives in pieces has been
//! checked, so that each byte is looked at once however small the pieces
//! (re-parsing the whole buffer on every read made a head sent a hundred
//! bytes at a time cost time quadratic in its size). It is where the head's
//! lines are found and its limits applied, for `parse_head` too.

use std::ops::Range;

use crate::error::HttpError;
use crate::version::Version;

/// LimitRequestLine, LimitRequestFieldSize, LimitRequestFields.
#[derive(Clone, Copy, Debug)]
pub struct HeadLimits {
    pub request_line: usize,
    pub field_size: usize,
    pub fields: usize,
    /// LimitRequestHeadSize: the whole head, request line and fields. The
    /// other three multiplied allow some 800 KB, a lot of memory for a
    /// client to make a child hold per connection.
    pub head: usize,
}

/// The lines of a partly received head checked so far. Applies the head
/// limits as each line ends, so that a head that breaks one is refused as
/// soon as the offending line (or too much of it) is in; `parse_head_from`
/// tokenises the fields once, on the complete head.
#[derive(Clone, Debug, Default)]
pub struct HeadScan {
    /// Where the first line not yet ended starts.
    line: usize,
    /// How much of that line has been searched for its end.
    searched: usize,
    request_line: Option<RequestLine>,
    fields: usize,
}

/// The request line, once it has ended: where its parts are in the buffer.
#[derive(Clone, Debug)]
pub(crate) struct RequestLine {
    pub method: Range<usize>,
    pub target: Range<usize>,
    pub version: Version,
    /// Where the header fields start (after the line's end).
    pub fields_start: usize,
}

/// A complete head as the scan found it.
pub(crate) struct HeadShape {
    pub request_line: RequestLine,
    /// How many field lines there are.
    pub fields: usize,
    /// Where the head ends (after the empty line).
    pub head_end: usize,
}

impl HeadScan {
    /// Checks what `buf` holds beyond the last call (the same buffer, grown
    /// at its end). Ok(Some): the head is complete. Ok(None): more is
    /// needed. Err: the answer to give.
    pub(crate) fn advance(&mut self, buf: &[u8], limits: &HeadLimits) -> Result<Option<HeadShape>, HttpError> {
        if self.line + self.searched > buf.len() {
            // The buffer lost its start without the scan being reset:
            // checking again from the start is slower but always right.
            *self = HeadScan::default();
        }
        loop {
            let from = self.line + self.searched;
            let Some(nl) = buf[from..].iter().position(|&b| b == b'\n').map(|i| from + i) else {
                self.searched = buf.len() - self.line;
                return self.check_unfinished(self.searched, limits).map(|()| None);
            };
            let end = if nl > self.line && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
            let line = &buf[self.line..end];
            self.searched = 0;
            let next = nl + 1;
            let limit = self.line_limit(limits);
            self.first_broken(line.len() > limit, next > limits.head, limits)?;
            match &self.request_line {
                None => {
                    // RFC 9112 2.2: empty lines before the request line are ignored, a few.
                    if line.is_empty() {
                        self.line = next;
                        if self.line > 64 {
                            return Err(HttpError::new(400, "too many empty lines before the request line"));
                        }
                        continue;
                    }
                    let (method, target, version) = parse_request_line(line)?;
                    let at = self.line;
                    self.request_line = Some(RequestLine { method: at + method.start..at + method.end, target: at + target.start..at + target.end, version, fields_start: next });
                }
                Some(request_line) => {
                    if line.is_empty() {
                        return Ok(Some(HeadShape { request_line: request_line.clone(), fields: self.fields, head_end: next }));
                    }
                    self.fields += 1;
                    if self.fields > limits.fields {
                        return Err(HttpError::new(431, format!("more header fields than LimitRequestFields ({})", limits.fields)));
                    }
                    if matches!(line[0], b' ' | b'\t') {
                        return Err(HttpError::new(400, "obsolete line folding (obs-fold) in a header field"));
                    }
                }
            }
            self.line = next;
        }
    }

    /// A line without its end yet may already be too long (`len` of its
    /// bytes are in, a CR perhaps among them), or take the head past its cap.
    fn check_unfinished(&self, len: usize, limits: &HeadLimits) -> Result<(), HttpError> {
        let limit = self.line_limit(limits);
        self.first_broken(len > limit + 1, self.line + len >= limits.head, limits)
    }

    /// LimitRequestLine or LimitRequestFieldSize, for the line being read.
    fn line_limit(&self, limits: &HeadLimits) -> usize {
        if self.request_line.is_none() {
            limits.request_line
        } else {
            limits.field_size
        }
    }

    /// The answer for a line that breaks its own limit, or takes the head
    /// past LimitRequestHeadSize, or both. Both: the limit its bytes reach
    /// first, as they would arriving one at a time (its own once the buffer
    /// holds `self.line + limit + 2` bytes, the head's at `limits.head`), so
    /// that the status does not depend on how the head was cut into reads: a
    /// 70 KB request line was a 431 sent at once and a 414 trickled.
    fn first_broken(&self, line_broken: bool, head_broken: bool, limits: &HeadLimits) -> Result<(), HttpError> {
        let line_first = self.line.saturating_add(self.line_limit(limits)).saturating_add(2) < limits.head;
        if line_broken && (line_first || !head_broken) {
            return Err(if self.request_line.is_none() { request_line_too_long(limits) } else { field_too_long(limits) });
        }
        if head_broken {
            return Err(head_too_large(limits));
        }
        Ok(())
    }
}

pub(crate) fn parse_request_line(line: &[u8]) -> Result<(Range<usize>, Range<usize>, Version), HttpError> {
    let bad = |why: &str| Err(HttpError::new(400, format!("malformed request line: {why}")));
    let Some(sp1) = line.iter().position(|&b| b == b' ') else {
        return bad("no request-target");
    };
    let Some(sp2) = line.iter().rposition(|&b| b == b' ') else { return bad("no version") };
    if sp1 == 0 || !line[..sp1].iter().all(|&b| is_tchar(b)) {
        return bad("bad method");
    }
    if sp2 == sp1 {
        return bad("no HTTP version (HTTP/0.9 is not supported)");
    }
    let target = sp1 + 1..sp2;
    if target.is_empty() || line[target.clone()].iter().any(|&b| b <= b' ' || b == 0x7f) {
        return bad("bad request-target (spaces or control characters)");
    }
    let v = &line[sp2 + 1..];
    let version = match v {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit() => {
            if *major == b'1' {
                // RFC 9110 6.2: a higher minor version is served as 1.1.
                Version::Http11
            } else {
                return Err(HttpError::new(505, format!("HTTP version {} not supported", String::from_utf8_lossy(v))));
            }
        }
        _ => return bad("bad HTTP version"),
    };
    let t = &line[target.clone()];
    if t[0] != b'/' && t != b"*" && !(t.len() > 7 && (t[..7].eq_ignore_ascii_case(b"http://") || t.len() > 8 && t[..8].eq_ignore_ascii_case(b"https://"))) {
        return bad("request-target is not origin-form, absolute-form or *");
    }
    Ok((0..sp1, target, version))
}

/// A byte of an RFC 9110 token (methods, field names, `:protocol`).
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn request_line_too_long(limits: &HeadLimits) -> HttpError {
    HttpError::new(414, format!("request line longer than LimitRequestLine ({})", limits.request_line))
}

fn head_too_large(limits: &HeadLimits) -> HttpError {
    HttpError::new(431, format!("request header section larger than LimitRequestHeadSize ({})", limits.head))
}

fn field_too_long(limits: &HeadLimits) -> HttpError {
    HttpError::new(431, format!("header field longer than LimitRequestFieldSize ({})", limits.field_size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{parse_head, parse_head_from};

    const LIMITS: HeadLimits = HeadLimits { request_line: 64, field_size: 32, fields: 4, head: 150 };

    /// A head fed `step` bytes at a time, the scan resumed each time, gets
    /// the verdict parse_head gives the same bytes at once: the same head
    /// and length, or an error with the same status, at the same point.
    fn agree(input: &[u8], step: usize) {
        let mut scan = HeadScan::default();
        let mut end = 0;
        while end < input.len() {
            end = (end + step).min(input.len());
            let buf = &input[..end];
            let resumed = parse_head_from(&mut scan, buf, &LIMITS);
            let at_once = parse_head(buf, &LIMITS);
            match (&resumed, &at_once) {
                (Ok(None), Ok(None)) => continue,
                (Ok(Some((a, n))), Ok(Some((b, m)))) => {
                    assert_eq!((a.request_line(), n), (b.request_line(), m));
                    assert_eq!(a.headers().collect::<Vec<_>>(), b.headers().collect::<Vec<_>>());
                }
                (Err(a), Err(b)) => assert_eq!(a.status, b.status, "{:?} at {end}", String::from_utf8_lossy(input)),
                _ => panic!("resumed {:?} but at once {:?} for {:?}", resumed.map(|p| p.map(|(_, n)| n)), at_once.map(|p| p.map(|(_, n)| n)), String::from_utf8_lossy(buf)),
            }
            return;
        }
    }

    #[test]
    fn resumed_in_pieces_as_at_once() {
        let long_line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(80));
        let long_field = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "b".repeat(40));
        let cases: Vec<Vec<u8>> = vec![
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\nHost: a\n\nbody".to_vec(),
            b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            "\n".repeat(70).into_bytes(),
            long_line.into_bytes(),
            long_field.into_bytes(),
            b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n".to_vec(),
            b"GET / HTTP/9.9\r\n\r\n".to_vec(),
            b"BAD REQUEST\r\n\r\n".to_vec(),
            format!("GET / HTTP/1.1\r\nX: {}", "c".repeat(40)).into_bytes(),
            format!("GET /{}", "d".repeat(80)).into_bytes(),
            // Over LimitRequestHeadSize (150) with every line inside its limits:
            // complete, and still unfinished.
            format!("GET /{} HTTP/1.1\r\nHost: a\r\n{}\r\n", "p".repeat(40), "X: 01234567890123456789012345678\r\n".repeat(3)).into_bytes(),
            format!("GET /{} HTTP/1.1\r\nX: {}\r\nY: {}", "e".repeat(60), "f".repeat(30), "g".repeat(30)).into_bytes(),
        ];
        for case in &cases {
            for step in [1, 2, 3, 7, 1000] {
                agree(case, step);
            }
        }
    }

    #[test]
    fn the_whole_head_is_capped() {
        // Every line inside its limit; the head is 129 bytes and the path.
        let head = |path: usize| format!("GET /{} HTTP/1.1\r\nHost: a\r\n{}\r\n", "p".repeat(path), "X: 01234567890123456789012345678\r\n".repeat(3));
        let e = parse_head(head(40).as_bytes(), &LIMITS).unwrap_err();
        assert_eq!(e.status, 431);
        assert!(e.reason.contains("LimitRequestHeadSize (150)"), "{}", e.reason);
        // A head of exactly the cap is fine; a buffer that holds the cap
        // without the head's end is not.
        let exact = head(21);
        assert_eq!(exact.len(), LIMITS.head);
        assert!(parse_head(exact.as_bytes(), &LIMITS).unwrap().is_some());
        let short = HeadLimits { head: exact.len() - 1, ..LIMITS };
        assert_eq!(parse_head(&exact.as_bytes()[..exact.len() - 1], &short).unwrap_err().status, 431);
    }

    /// The verdict on `input` fed `step` bytes at a time: the first that is
    /// not "more is needed", or that, at its end.
    fn verdict(input: &[u8], step: usize) -> Result<Option<usize>, HttpError> {
        let mut scan = HeadScan::default();
        let mut end = 0;
        loop {
            end = (end + step).min(input.len());
            match parse_head_from(&mut scan, &input[..end], &LIMITS) {
                Ok(None) if end < input.len() => continue,
                v => return v.map(|h| h.map(|(_, n)| n)),
            }
        }
    }

    #[test]
    fn a_line_past_two_limits_gets_one_answer_however_it_arrives() {
        // Past LimitRequestLine (64) from its 66th byte and past
        // LimitRequestHeadSize (150) too: 414, which trickled it was and
        // sent at once it was not (431).
        let request_line = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(200));
        // A field past LimitRequestFieldSize (32) before the cap, and one
        // after lines at their limits (66 + 2 * 34 bytes), which reaches the
        // cap first.
        let field = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "b".repeat(200));
        let full = format!("A: {}\r\n", "f".repeat(29));
        let late_field = format!("GET /{} HTTP/1.1\r\n{full}{full}X: {}\r\n\r\n", "c".repeat(50), "d".repeat(200));
        for (input, status, limit) in [(request_line, 414, "LimitRequestLine"), (field, 431, "LimitRequestFieldSize"), (late_field, 431, "LimitRequestHeadSize")] {
            let whole = verdict(input.as_bytes(), input.len());
            let e = whole.clone().unwrap_err();
            assert!(e.status == status && e.reason.contains(limit), "{e}");
            for step in [1, 2, 3, 7, 50, 100] {
                assert_eq!(verdict(input.as_bytes(), step), whole, "{step} bytes at a time");
            }
        }
    }

    #[test]
    fn each_byte_is_searched_once() {
        // A field line arriving a byte at a time: the scan resumes where it
        // stopped, so its position only moves forward.
        let input = format!("GET / HTTP/1.1\r\nX: {}", "e".repeat(30));
        let mut scan = HeadScan::default();
        for end in 1..=input.len() {
            let before = scan.line + scan.searched;
            assert!(scan.advance(&input.as_bytes()[..end], &LIMITS).unwrap().is_none());
            assert!(scan.line + scan.searched >= before);
            assert_eq!(scan.line + scan.searched, end);
        }
    }
}
