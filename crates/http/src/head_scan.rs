//! [`HeadScan`]: how far a request head that arrives in pieces has been
//! checked, so that each byte is looked at once however small the pieces
//! (re-parsing the whole buffer on every read made a head sent a hundred
//! bytes at a time cost time quadratic in its size). It is where the head's
//! lines are found and its limits applied, for `parse_head` too.

use std::ops::Range;

use crate::request::{parse_request_line, HeadLimits, HttpError, Version};

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
            if next > limits.head {
                return Err(head_too_large(limits));
            }
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
                    if line.len() > limits.request_line {
                        return Err(request_line_too_long(limits));
                    }
                    let (method, target, version) = parse_request_line(line)?;
                    let at = self.line;
                    self.request_line = Some(RequestLine { method: at + method.start..at + method.end, target: at + target.start..at + target.end, version, fields_start: next });
                }
                Some(request_line) => {
                    if line.is_empty() {
                        return Ok(Some(HeadShape { request_line: request_line.clone(), fields: self.fields, head_end: next }));
                    }
                    if line.len() > limits.field_size {
                        return Err(field_too_long(limits));
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

    /// A line without its end yet may already be too long.
    fn check_unfinished(&self, len: usize, limits: &HeadLimits) -> Result<(), HttpError> {
        if self.line + len >= limits.head {
            return Err(head_too_large(limits));
        }
        if self.request_line.is_none() && len > limits.request_line + 1 {
            return Err(request_line_too_long(limits));
        }
        if self.request_line.is_some() && len > limits.field_size + 1 {
            return Err(field_too_long(limits));
        }
        Ok(())
    }
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
