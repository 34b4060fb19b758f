//! Request body framing: Content-Length and chunked (RFC 9112 7.1), decoded
//! incrementally from whatever bytes have arrived.

use crate::error::HttpError;
use crate::request::BodyFraming;

/// The longest chunk extension accepted on one chunk-size line.
pub const MAX_CHUNK_EXTENSION: usize = 4096;
/// The most bytes of trailer fields accepted after the last chunk.
pub const MAX_TRAILERS: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunked {
    /// Reading hex digits of a chunk size.
    Size { size: u64, digits: u8 },
    /// After the size: an extension, up to the line end.
    Extension { size: u64, len: usize },
    /// Saw `\r` of the size line.
    SizeLf { size: u64 },
    Data { remaining: u64 },
    DataCr,
    DataLf,
    /// Trailer section; `line_len` bytes of the current line seen.
    Trailer { line_len: usize, total: usize, cr: bool },
    Done,
}

/// Decodes one request body. Feed it bytes as they arrive; it reports how
/// many it consumed and passes the payload bytes to a sink.
#[derive(Clone, Debug)]
pub struct BodyDecoder {
    state: Decoder,
    /// Payload bytes decoded so far.
    pub received: u64,
}

#[derive(Clone, Debug)]
enum Decoder {
    Length(u64),
    Chunked(Chunked),
}

impl BodyDecoder {
    pub fn new(framing: BodyFraming) -> BodyDecoder {
        let state = match framing {
            BodyFraming::None => Decoder::Length(0),
            BodyFraming::Length(n) => Decoder::Length(n),
            BodyFraming::Chunked => Decoder::Chunked(Chunked::Size { size: 0, digits: 0 }),
        };
        BodyDecoder { state, received: 0 }
    }

    pub fn is_done(&self) -> bool {
        matches!(self.state, Decoder::Length(0) | Decoder::Chunked(Chunked::Done))
    }

    /// Consumes a prefix of `input`, handing payload to `sink`. Returns the
    /// number of bytes consumed; stops at the end of the body.
    pub fn feed(&mut self, input: &[u8], sink: &mut dyn FnMut(&[u8])) -> Result<usize, HttpError> {
        match &mut self.state {
            Decoder::Length(remaining) => {
                let n = (*remaining).min(input.len() as u64) as usize;
                *remaining -= n as u64;
                self.received += n as u64;
                if n > 0 {
                    sink(&input[..n]);
                }
                Ok(n)
            }
            Decoder::Chunked(state) => {
                let mut i = 0;
                let mut received = 0u64;
                let bad = |why: &str| Err(HttpError::new(400, format!("bad chunked encoding: {why}")));
                while i < input.len() {
                    let b = input[i];
                    *state = match *state {
                        Chunked::Size { size, digits } => match (b as char).to_digit(16) {
                            Some(d) => {
                                if digits >= 16 {
                                    return bad("chunk size too large");
                                }
                                i += 1;
                                Chunked::Size { size: size << 4 | d as u64, digits: digits + 1 }
                            }
                            None if digits == 0 => return bad("missing chunk size"),
                            None if b == b';' || b == b' ' || b == b'\t' => {
                                i += 1;
                                Chunked::Extension { size, len: 1 }
                            }
                            None if b == b'\r' => {
                                i += 1;
                                Chunked::SizeLf { size }
                            }
                            None => return bad("invalid character in chunk size"),
                        },
                        Chunked::Extension { size, len } => {
                            if b == b'\r' {
                                i += 1;
                                Chunked::SizeLf { size }
                            } else if b == b'\n' || len >= MAX_CHUNK_EXTENSION {
                                return bad("chunk extension too long or bare LF");
                            } else {
                                i += 1;
                                Chunked::Extension { size, len: len + 1 }
                            }
                        }
                        Chunked::SizeLf { size } => {
                            if b != b'\n' {
                                return bad("expected LF after chunk size");
                            }
                            i += 1;
                            if size == 0 {
                                Chunked::Trailer { line_len: 0, total: 0, cr: false }
                            } else {
                                Chunked::Data { remaining: size }
                            }
                        }
                        Chunked::Data { remaining } => {
                            let n = remaining.min((input.len() - i) as u64) as usize;
                            sink(&input[i..i + n]);
                            i += n;
                            received += n as u64;
                            if remaining == n as u64 {
                                Chunked::DataCr
                            } else {
                                Chunked::Data { remaining: remaining - n as u64 }
                            }
                        }
                        Chunked::DataCr => {
                            if b != b'\r' {
                                return bad("chunk data longer than its size");
                            }
                            i += 1;
                            Chunked::DataLf
                        }
                        Chunked::DataLf => {
                            if b != b'\n' {
                                return bad("expected LF after chunk data");
                            }
                            i += 1;
                            Chunked::Size { size: 0, digits: 0 }
                        }
                        Chunked::Trailer { line_len, total, cr } => {
                            i += 1;
                            if total >= MAX_TRAILERS {
                                return bad("trailer section too large");
                            }
                            match (b, cr) {
                                (b'\r', false) => Chunked::Trailer { line_len, total: total + 1, cr: true },
                                (b'\n', true) if line_len == 0 => Chunked::Done,
                                (b'\n', true) => Chunked::Trailer { line_len: 0, total: total + 1, cr: false },
                                (_, true) => return bad("bare CR in trailer"),
                                (b'\n', false) => return bad("bare LF in trailer"),
                                _ => Chunked::Trailer { line_len: line_len + 1, total: total + 1, cr: false },
                            }
                        }
                        Chunked::Done => break,
                    };
                    if *state == Chunked::Done {
                        break;
                    }
                }
                self.received += received;
                Ok(i)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(framing: BodyFraming, input: &[u8], step: usize) -> Result<(Vec<u8>, usize), HttpError> {
        let mut d = BodyDecoder::new(framing);
        let mut out = Vec::new();
        let mut pos = 0;
        while !d.is_done() && pos < input.len() {
            let end = (pos + step).min(input.len());
            let n = d.feed(&input[pos..end], &mut |b| out.extend_from_slice(b))?;
            pos += n;
            if n == 0 && end == input.len() {
                break;
            }
        }
        assert!(d.is_done(), "not done after {pos} bytes");
        Ok((out, pos))
    }

    #[test]
    fn chunked_in_any_split() {
        let body = b"5\r\nhello\r\n6;name=val\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nGET /next";
        for step in 1..body.len() {
            let (out, used) = decode_all(BodyFraming::Chunked, body, step).unwrap();
            assert_eq!(out, b"hello world");
            assert_eq!(&body[used..], b"GET /next");
        }
    }

    #[test]
    fn length_stops_at_end() {
        let (out, used) = decode_all(BodyFraming::Length(3), b"abcdef", 10).unwrap();
        assert_eq!((out.as_slice(), used), (&b"abc"[..], 3));
    }

    #[test]
    fn chunked_errors() {
        for bad in [&b"zz\r\n"[..], b"5\r\nhelloX", b"5\nhello", b"FFFFFFFFFFFFFFFFF\r\n", b"\r\n"] {
            let mut d = BodyDecoder::new(BodyFraming::Chunked);
            assert!(d.feed(bad, &mut |_| {}).is_err(), "{bad:?}");
        }
        let long_ext = format!("1;{}\r\n", "x".repeat(MAX_CHUNK_EXTENSION + 1));
        let mut d = BodyDecoder::new(BodyFraming::Chunked);
        assert!(d.feed(long_ext.as_bytes(), &mut |_| {}).is_err());
    }
}
