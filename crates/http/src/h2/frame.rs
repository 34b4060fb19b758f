//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header and each type's payload.
//!
//! [`Header::parse`] reads a frame header; [`Frame::parse`] checks a whole
//! frame against the rules that need no connection state (which stream
//! ids a type may use, payload sizes, padding) and gives its fields as
//! slices of the input. What depends on the stream's state (§5.1) is
//! [`super::conn`]'s business. The `write_*` functions append frames to
//! an output buffer; tests use them to play the client too.

use super::ErrorCode;

/// Size of every frame's header.
pub const HEADER_LEN: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value and lower bound (§6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// SETTINGS_MAX_FRAME_SIZE's upper bound (§6.5.2): 2^24-1.
pub const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// The largest flow-control window (§6.9.1): 2^31-1.
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The windows every stream and the connection start with (§6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

/// DATA, HEADERS.
pub const FLAG_END_STREAM: u8 = 0x1;
/// SETTINGS, PING.
pub const FLAG_ACK: u8 = 0x1;
/// HEADERS, PUSH_PROMISE, CONTINUATION.
pub const FLAG_END_HEADERS: u8 = 0x4;
/// DATA, HEADERS, PUSH_PROMISE.
pub const FLAG_PADDED: u8 = 0x8;
/// HEADERS.
pub const FLAG_PRIORITY: u8 = 0x20;

/// SETTINGS parameters (§6.5.2; RFC 9218 §2.1 for the last).
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;
/// RFC 8441 §3: the server takes extended CONNECT (`:protocol`).
pub const SETTINGS_ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
pub const SETTINGS_NO_RFC7540_PRIORITIES: u16 = 0x9;

/// A frame header (§4.1). The reserved bit of the stream id is ignored,
/// as the RFC requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Payload length (24 bits).
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Header {
    /// The header at the start of `buf`, None if fewer than 9 bytes.
    pub fn parse(buf: &[u8]) -> Option<Header> {
        let b: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Header {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
        })
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// A frame that breaks a rule of its type, with what §5.4 makes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The whole connection is to be torn down (GOAWAY).
    Connection(ErrorCode, &'static str),
    /// Only the stream is (RST_STREAM); the connection carries on.
    Stream(u32, ErrorCode, &'static str),
}

/// A stream dependency (the PRIORITY frame's payload, or HEADERS' when
/// FLAG_PRIORITY is set). Warren serves streams in the order it can and
/// ignores priorities (RFC 9113 §5.3.2 allows it); only the self-dependency
/// rule is enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    pub exclusive: bool,
    pub depends_on: u32,
    pub weight: u8,
}

impl Priority {
    fn parse(b: &[u8; 5]) -> Priority {
        let word = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Priority { exclusive: word & !MAX_WINDOW != 0, depends_on: word & MAX_WINDOW, weight: b[4] }
    }
}

/// A frame as parsed, borrowing its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
        /// The whole payload's length, padding included: what counts
        /// against flow control (§6.1).
        flow_len: u32,
    },
    Headers {
        stream: u32,
        /// The field block fragment, padding and priority removed.
        block: &'a [u8],
        end_stream: bool,
        end_headers: bool,
        priority: Option<Priority>,
    },
    Priority {
        stream: u32,
        priority: Priority,
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    Settings {
        ack: bool,
        /// Whole 6-byte parameters; see [`settings`].
        params: &'a [u8],
    },
    Ping {
        ack: bool,
        payload: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        code: u32,
        debug: &'a [u8],
    },
    WindowUpdate {
        stream: u32,
        /// May be 0, which is an error whose kind depends on the stream.
        increment: u32,
    },
    Continuation {
        stream: u32,
        block: &'a [u8],
        end_headers: bool,
    },
    /// A type this implementation does not know: ignored (§4.1, §5.5).
    Unknown,
}

fn conn_err<T>(code: ErrorCode, why: &'static str) -> Result<T, FrameError> {
    Err(FrameError::Connection(code, why))
}

/// Strips the padding of a DATA, HEADERS or PUSH_PROMISE payload (§6.1).
fn unpad<'a>(h: &Header, payload: &'a [u8]) -> Result<&'a [u8], FrameError> {
    if !h.has(FLAG_PADDED) {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return conn_err(ErrorCode::FrameSize, "padded frame without a pad length");
    };
    // "The length of the padding is the length of the frame payload or
    // greater": the pad length byte counts in the payload.
    match rest.len().checked_sub(pad as usize) {
        Some(len) => Ok(&rest[..len]),
        None => conn_err(ErrorCode::Protocol, "padding longer than the frame's payload"),
    }
}

impl<'a> Frame<'a> {
    /// Checks a frame sent by a client. `payload` must be exactly
    /// `header.len` bytes; the frame size limit is the caller's.
    pub fn parse(h: &Header, payload: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        debug_assert_eq!(payload.len(), h.len as usize);
        let on_stream_0 = h.stream == 0;
        match h.kind {
            DATA => {
                if on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "DATA on stream 0");
                }
                let data = unpad(h, payload)?;
                Ok(Frame::Data { stream: h.stream, data, end_stream: h.has(FLAG_END_STREAM), flow_len: h.len })
            }
            HEADERS => {
                if on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "HEADERS on stream 0");
                }
                let mut block = unpad(h, payload)?;
                let mut priority = None;
                if h.has(FLAG_PRIORITY) {
                    // A field block's frame is too short: the HPACK state
                    // may be lost with it, so it is the connection's error.
                    let Some((fields, rest)) = block.split_first_chunk::<5>() else {
                        return conn_err(ErrorCode::FrameSize, "HEADERS too short for its priority");
                    };
                    priority = Some(Priority::parse(fields));
                    block = rest;
                }
                Ok(Frame::Headers { stream: h.stream, block, end_stream: h.has(FLAG_END_STREAM), end_headers: h.has(FLAG_END_HEADERS), priority })
            }
            PRIORITY => {
                if on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "PRIORITY on stream 0");
                }
                let Ok(fields) = <&[u8; 5]>::try_from(payload) else {
                    return Err(FrameError::Stream(h.stream, ErrorCode::FrameSize, "PRIORITY not 5 bytes"));
                };
                let priority = Priority::parse(fields);
                if priority.depends_on == h.stream {
                    return Err(FrameError::Stream(h.stream, ErrorCode::Protocol, "stream depends on itself"));
                }
                Ok(Frame::Priority { stream: h.stream, priority })
            }
            RST_STREAM => {
                if on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "RST_STREAM on stream 0");
                }
                let Ok(code) = <[u8; 4]>::try_from(payload) else {
                    return conn_err(ErrorCode::FrameSize, "RST_STREAM not 4 bytes");
                };
                Ok(Frame::RstStream { stream: h.stream, code: u32::from_be_bytes(code) })
            }
            SETTINGS => {
                if !on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "SETTINGS on a stream");
                }
                let ack = h.has(FLAG_ACK);
                if ack && !payload.is_empty() {
                    return conn_err(ErrorCode::FrameSize, "SETTINGS ACK with a payload");
                }
                if !payload.len().is_multiple_of(6) {
                    return conn_err(ErrorCode::FrameSize, "SETTINGS not a multiple of 6 bytes");
                }
                Ok(Frame::Settings { ack, params: payload })
            }
            PUSH_PROMISE => conn_err(ErrorCode::Protocol, "PUSH_PROMISE from a client"),
            PING => {
                if !on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "PING on a stream");
                }
                let Ok(payload) = <[u8; 8]>::try_from(payload) else {
                    return conn_err(ErrorCode::FrameSize, "PING not 8 bytes");
                };
                Ok(Frame::Ping { ack: h.has(FLAG_ACK), payload })
            }
            GOAWAY => {
                if !on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "GOAWAY on a stream");
                }
                let Some((fixed, debug)) = payload.split_first_chunk::<8>() else {
                    return conn_err(ErrorCode::FrameSize, "GOAWAY shorter than 8 bytes");
                };
                let last_stream = u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]) & MAX_WINDOW;
                let code = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
                Ok(Frame::GoAway { last_stream, code, debug })
            }
            WINDOW_UPDATE => {
                let Ok(increment) = <[u8; 4]>::try_from(payload) else {
                    return conn_err(ErrorCode::FrameSize, "WINDOW_UPDATE not 4 bytes");
                };
                Ok(Frame::WindowUpdate { stream: h.stream, increment: u32::from_be_bytes(increment) & MAX_WINDOW })
            }
            CONTINUATION => {
                if on_stream_0 {
                    return conn_err(ErrorCode::Protocol, "CONTINUATION on stream 0");
                }
                Ok(Frame::Continuation { stream: h.stream, block: payload, end_headers: h.has(FLAG_END_HEADERS) })
            }
            _ => Ok(Frame::Unknown),
        }
    }
}

/// The (identifier, value) pairs of a SETTINGS payload checked by
/// [`Frame::parse`] (a multiple of 6 bytes; a trailing fragment is skipped).
pub fn settings(params: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    params.chunks_exact(6).map(|p| (u16::from_be_bytes([p[0], p[1]]), u32::from_be_bytes([p[2], p[3], p[4], p[5]])))
}

/// Appends a frame header. `len` must fit 24 bits (every caller's frames
/// are bounded by a max frame size of at most 2^24-1).
pub fn write_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len <= MAX_MAX_FRAME_SIZE as usize);
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

/// Appends a whole frame.
pub fn write_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    write_header(out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
}

pub fn write_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    write_header(out, params.len() * 6, SETTINGS, 0, 0);
    for (id, value) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_header(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub fn write_ping(out: &mut Vec<u8>, ack: bool, payload: [u8; 8]) {
    write_frame(out, PING, if ack { FLAG_ACK } else { 0 }, 0, &payload);
}

pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_frame(out, WINDOW_UPDATE, 0, stream, &(increment & MAX_WINDOW).to_be_bytes());
}

pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    write_frame(out, RST_STREAM, 0, stream, &(code as u32).to_be_bytes());
}

pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    write_header(out, 8 + debug.len(), GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&(code as u32).to_be_bytes());
    out.extend_from_slice(debug);
}

/// One DATA frame; `data` must fit the peer's max frame size.
pub fn write_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    write_frame(out, DATA, if end_stream { FLAG_END_STREAM } else { 0 }, stream, data);
}

/// A field block as HEADERS then as many CONTINUATIONs as `max_frame`
/// requires (the block may not be split otherwise: nothing may come
/// between them on the connection).
pub fn write_headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let max_frame = max_frame.max(1);
    let mut chunks = block.chunks(max_frame).peekable();
    let end_stream = if end_stream { FLAG_END_STREAM } else { 0 };
    let Some(first) = chunks.next() else {
        write_header(out, 0, HEADERS, end_stream | FLAG_END_HEADERS, stream);
        return;
    };
    let mut kind = HEADERS;
    let mut flags = end_stream;
    let mut chunk = first;
    loop {
        let last = chunks.peek().is_none();
        write_frame(out, kind, flags | if last { FLAG_END_HEADERS } else { 0 }, stream, chunk);
        match chunks.next() {
            Some(next) => chunk = next,
            None => return,
        }
        kind = CONTINUATION;
        flags = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_one(buf: &[u8]) -> Result<Frame<'_>, FrameError> {
        let h = Header::parse(buf).expect("a header");
        let payload = &buf[HEADER_LEN..];
        assert_eq!(payload.len(), h.len as usize, "one whole frame");
        Frame::parse(&h, payload)
    }

    #[test]
    fn header_round_trip_and_reserved_bit() {
        let mut out = Vec::new();
        write_header(&mut out, 0x12_3456, 0xfa, 0x5a, 0x7fff_ffff);
        assert_eq!(out, [0x12, 0x34, 0x56, 0xfa, 0x5a, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(Header::parse(&out), Some(Header { len: 0x12_3456, kind: 0xfa, flags: 0x5a, stream: 0x7fff_ffff }));
        out[5] = 0xff; // the reserved bit is ignored
        assert_eq!(Header::parse(&out).unwrap().stream, 0x7fff_ffff);
        assert_eq!(Header::parse(&out[..8]), None);
    }

    #[test]
    fn round_trips() {
        let mut out = Vec::new();
        write_data(&mut out, 3, b"hello", true);
        assert_eq!(parse_one(&out), Ok(Frame::Data { stream: 3, data: b"hello", end_stream: true, flow_len: 5 }));

        out.clear();
        write_settings(&mut out, &[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20), (0xabcd, 7)]);
        let Ok(Frame::Settings { ack: false, params }) = parse_one(&out) else { panic!() };
        assert_eq!(settings(params).collect::<Vec<_>>(), [(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20), (0xabcd, 7)]);

        out.clear();
        write_settings_ack(&mut out);
        assert_eq!(parse_one(&out), Ok(Frame::Settings { ack: true, params: b"" }));

        out.clear();
        write_ping(&mut out, true, *b"12345678");
        assert_eq!(parse_one(&out), Ok(Frame::Ping { ack: true, payload: *b"12345678" }));

        out.clear();
        write_window_update(&mut out, 5, 1000);
        assert_eq!(parse_one(&out), Ok(Frame::WindowUpdate { stream: 5, increment: 1000 }));

        out.clear();
        write_rst_stream(&mut out, 7, ErrorCode::Cancel);
        assert_eq!(parse_one(&out), Ok(Frame::RstStream { stream: 7, code: 8 }));

        out.clear();
        write_goaway(&mut out, 9, ErrorCode::EnhanceYourCalm, b"calm");
        assert_eq!(parse_one(&out), Ok(Frame::GoAway { last_stream: 9, code: 0xb, debug: b"calm" }));

        out.clear();
        write_frame(&mut out, PRIORITY, 0, 3, &[0x80, 0, 0, 1, 15]);
        assert_eq!(parse_one(&out), Ok(Frame::Priority { stream: 3, priority: Priority { exclusive: true, depends_on: 1, weight: 15 } }));

        out.clear();
        write_frame(&mut out, 0xee, 0xff, 0, b"whatever");
        assert_eq!(parse_one(&out), Ok(Frame::Unknown));
    }

    #[test]
    fn headers_split_into_continuations() {
        let block: Vec<u8> = (0..25).collect();
        let mut out = Vec::new();
        write_headers(&mut out, 1, &block, true, 10);
        let mut at = 0;
        let mut frames = Vec::new();
        while let Some(h) = Header::parse(&out[at..]) {
            let payload = &out[at + HEADER_LEN..at + HEADER_LEN + h.len as usize];
            frames.push(Frame::parse(&h, payload).unwrap());
            at += HEADER_LEN + h.len as usize;
        }
        assert_eq!(at, out.len());
        assert_eq!(
            frames,
            [
                Frame::Headers { stream: 1, block: &block[..10], end_stream: true, end_headers: false, priority: None },
                Frame::Continuation { stream: 1, block: &block[10..20], end_headers: false },
                Frame::Continuation { stream: 1, block: &block[20..], end_headers: true },
            ]
        );

        out.clear();
        write_headers(&mut out, 1, &block[..10], false, 10);
        assert_eq!(parse_one(&out), Ok(Frame::Headers { stream: 1, block: &block[..10], end_stream: false, end_headers: true, priority: None }));
    }

    #[test]
    fn padding_and_priority() {
        let mut out = Vec::new();
        // pad length 3, priority on stream 1 weight 16, block "ab", padding.
        write_frame(&mut out, HEADERS, FLAG_PADDED | FLAG_PRIORITY | FLAG_END_HEADERS, 3, &[3, 0, 0, 0, 1, 16, b'a', b'b', 0, 0, 0]);
        assert_eq!(
            parse_one(&out),
            Ok(Frame::Headers { stream: 3, block: b"ab", end_stream: false, end_headers: true, priority: Some(Priority { exclusive: false, depends_on: 1, weight: 16 }) })
        );

        out.clear();
        write_frame(&mut out, DATA, FLAG_PADDED, 1, &[2, b'x', 0, 0]);
        assert_eq!(parse_one(&out), Ok(Frame::Data { stream: 1, data: b"x", end_stream: false, flow_len: 4 }));

        // All padding, nothing else: allowed.
        out.clear();
        write_frame(&mut out, DATA, FLAG_PADDED, 1, &[3, 0, 0, 0]);
        assert_eq!(parse_one(&out), Ok(Frame::Data { stream: 1, data: b"", end_stream: false, flow_len: 4 }));

        out.clear();
        write_frame(&mut out, DATA, FLAG_PADDED, 1, &[4, 0, 0, 0]);
        assert_eq!(parse_one(&out), Err(FrameError::Connection(ErrorCode::Protocol, "padding longer than the frame's payload")));

        out.clear();
        write_frame(&mut out, DATA, FLAG_PADDED, 1, &[]);
        assert!(matches!(parse_one(&out), Err(FrameError::Connection(ErrorCode::FrameSize, _))));

        out.clear();
        write_frame(&mut out, HEADERS, FLAG_PADDED | FLAG_PRIORITY, 1, &[1, 0, 0, 0, 1, 0]);
        assert!(matches!(parse_one(&out), Err(FrameError::Connection(ErrorCode::FrameSize, _))));
    }

    #[test]
    fn rules_of_each_type() {
        use ErrorCode::*;
        let conn = |kind, flags, stream, payload: &[u8]| {
            let mut out = Vec::new();
            write_frame(&mut out, kind, flags, stream, payload);
            match parse_one(&out) {
                Err(FrameError::Connection(code, _)) => Some(code),
                _ => None,
            }
        };
        assert_eq!(conn(DATA, 0, 0, b"x"), Some(Protocol));
        assert_eq!(conn(HEADERS, 0, 0, b""), Some(Protocol));
        assert_eq!(conn(PRIORITY, 0, 0, &[0; 5]), Some(Protocol));
        assert_eq!(conn(RST_STREAM, 0, 0, &[0; 4]), Some(Protocol));
        assert_eq!(conn(RST_STREAM, 0, 1, &[0; 5]), Some(FrameSize));
        assert_eq!(conn(SETTINGS, 0, 1, b""), Some(Protocol));
        assert_eq!(conn(SETTINGS, FLAG_ACK, 0, &[0; 6]), Some(FrameSize));
        assert_eq!(conn(SETTINGS, 0, 0, &[0; 7]), Some(FrameSize));
        assert_eq!(conn(PUSH_PROMISE, 0, 1, &[0; 4]), Some(Protocol));
        assert_eq!(conn(PING, 0, 1, &[0; 8]), Some(Protocol));
        assert_eq!(conn(PING, 0, 0, &[0; 7]), Some(FrameSize));
        assert_eq!(conn(GOAWAY, 0, 1, &[0; 8]), Some(Protocol));
        assert_eq!(conn(GOAWAY, 0, 0, &[0; 7]), Some(FrameSize));
        assert_eq!(conn(WINDOW_UPDATE, 0, 1, &[0; 3]), Some(FrameSize));
        assert_eq!(conn(CONTINUATION, 0, 0, b""), Some(Protocol));
        assert_eq!(conn(PING, 0, 0, &[0; 8]), None);

        let mut out = Vec::new();
        write_frame(&mut out, PRIORITY, 0, 3, &[0; 4]);
        assert_eq!(parse_one(&out), Err(FrameError::Stream(3, FrameSize, "PRIORITY not 5 bytes")));
        out.clear();
        write_frame(&mut out, PRIORITY, 0, 3, &[0, 0, 0, 3, 0]);
        assert_eq!(parse_one(&out), Err(FrameError::Stream(3, Protocol, "stream depends on itself")));
    }
}
