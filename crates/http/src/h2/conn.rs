//! One HTTP/2 connection, server side, without I/O.

use std::time::Instant;

use super::ErrorCode;
use crate::request::{HeadLimits, HttpError, RequestHead};

/// What the server allows a client, from the configuration (Apache's H2*
/// directives), announced in our SETTINGS where the protocol has one.
#[derive(Clone, Copy, Debug)]
pub struct H2Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS (H2MaxSessionStreams, 100).
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: what a client may send on a stream
    /// before we return credit (H2WindowSize, 65535).
    pub initial_window: u32,
    /// The connection's receive window, raised from 65535 by a
    /// WINDOW_UPDATE right after our SETTINGS.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE we accept (16384).
    pub max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE (4096).
    pub header_table_size: u32,
    /// LimitRequestLine, LimitRequestFieldSize, LimitRequestFields and
    /// LimitRequestHeadSize, applied to a decoded request as to an
    /// HTTP/1.1 head (431 / 414 answers); `head` is also announced as
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub head: HeadLimits,
}

/// A connection error (RFC 9113 §5.4.1): GOAWAY with `code` has been
/// queued; write the output, then close.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnError {
    pub code: ErrorCode,
    /// For the error log.
    pub reason: String,
}

/// What the client's frames mean to the server.
#[derive(Debug)]
pub enum Event {
    /// A request's header block is complete and valid. `head.framing` is
    /// None when HEADERS ended the stream, `Length(n)` with a
    /// content-length, else `Chunked` (a body of unknown length, ended by
    /// END_STREAM).
    Request { stream: u32, head: RequestHead },
    /// A request the server must refuse with an HTTP answer (431 for a
    /// header list over the limits, 400 for a field HTTP/2 forbids, ...):
    /// answer it on the stream like any response.
    Refused { stream: u32, error: HttpError },
    /// Request body bytes. Credit for them goes back to the client only
    /// once the server calls [`Connection::consumed`].
    Data { stream: u32, data: Vec<u8>, end_stream: bool },
    /// The stream is gone (the client reset it, or we did for its error):
    /// drop whatever work it has.
    Reset { stream: u32 },
}

/// The server side of one HTTP/2 connection.
pub struct Connection {}

impl Connection {
    /// A connection whose client preface is still to come (TLS with ALPN
    /// h2, or cleartext prior knowledge). Our SETTINGS (and the
    /// connection window's WINDOW_UPDATE) are queued at once.
    pub fn new(limits: H2Limits) -> Connection {
        let _ = limits;
        todo!()
    }

    /// A connection upgraded from HTTP/1.1 (`Upgrade: h2c`, RFC 7540 §3.2):
    /// `http2_settings` is the request's HTTP2-Settings value (base64url);
    /// the request itself is stream 1, half-closed by the client, and the
    /// caller answers it as such. The client preface is still to come.
    pub fn upgraded(limits: H2Limits, http2_settings: &[u8]) -> Result<Connection, HttpError> {
        let _ = (limits, http2_settings);
        todo!()
    }

    /// Takes what the client sent: the preface, then whole frames.
    /// Returns how much of `input` was used (a partial frame is left for
    /// the next call). Events are appended to `events`.
    pub fn feed(&mut self, input: &[u8], now: Instant, events: &mut Vec<Event>) -> Result<usize, ConnError> {
        let _ = (input, now, events);
        todo!()
    }

    /// Queues a response's HEADERS (and CONTINUATIONs): `:status` then
    /// `fields` (lower-cased by the codec; hop-by-hop fields dropped).
    pub fn send_headers(&mut self, stream: u32, status: u16, fields: &[(&str, &str)], end_stream: bool) {
        let _ = (stream, status, fields, end_stream);
        todo!()
    }

    /// How many body bytes `stream` may send now: the smaller of its window
    /// and the connection's (0 for a stream that is gone).
    pub fn send_window(&self, stream: u32) -> usize {
        let _ = stream;
        todo!()
    }

    /// Queues DATA frames for up to `send_window(stream)` bytes of `data`
    /// (split at the client's SETTINGS_MAX_FRAME_SIZE); END_STREAM on the
    /// last when `end_stream` and all of `data` went. Returns how much went.
    pub fn send_data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> usize {
        let _ = (stream, data, end_stream);
        todo!()
    }

    /// Resets a stream we will not finish (RST_STREAM with `code`).
    pub fn reset(&mut self, stream: u32, code: ErrorCode) {
        let _ = (stream, code);
        todo!()
    }

    /// The server has taken `n` body bytes of `stream` from
    /// [`Event::Data`]: credit goes back to the client (WINDOW_UPDATE when
    /// worth a frame).
    pub fn consumed(&mut self, stream: u32, n: usize) {
        let _ = (stream, n);
        todo!()
    }

    /// Graceful shutdown: GOAWAY (NO_ERROR) naming the last stream taken;
    /// new streams are refused from then on, the open ones finish.
    pub fn go_away(&mut self) {
        todo!()
    }

    /// Bytes waiting to be written to the client.
    pub fn output(&self) -> &[u8] {
        todo!()
    }

    /// `n` bytes of [`Connection::output`] have been written.
    pub fn written(&mut self, n: usize) {
        let _ = n;
        todo!()
    }

    /// Streams open (not closed in both directions, not reset).
    pub fn open_streams(&self) -> usize {
        todo!()
    }

    /// The connection is done: GOAWAY sent or received and no stream is
    /// open, or a connection error was queued. Close once output is written.
    pub fn is_finished(&self) -> bool {
        todo!()
    }
}
