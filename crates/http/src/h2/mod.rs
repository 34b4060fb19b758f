//! HTTP/2 (RFC 9113) without I/O, beside HTTP/1.1: bytes in, [`Event`]s
//! out, and frames queued for the MPM to write.
//!
//! - [`frame`]: the frame header and the ten frame types, parsed and
//!   written.
//! - [`hpack`]: header compression (RFC 7541): a [`hpack::Decoder`] per
//!   connection for the client's header blocks, with the limits against
//!   a decompression bomb, and an [`hpack::Encoder`] for ours.
//! - [`conn`]: one connection's state: the preface and SETTINGS exchange,
//!   stream states, flow control in both directions, PING, RST_STREAM,
//!   GOAWAY, and the limits against the known attacks (rapid reset,
//!   CONTINUATION flood, SETTINGS and PING floods). A request's header
//!   block becomes the same [`crate::RequestHead`] an HTTP/1.1 request
//!   gives, so the handlers answer both alike.
//! - `head` (private): a decoded field list checked against RFC 9113
//!   §8.2-8.3 and the head limits, and made a [`crate::RequestHead`].
//! - `budget` (private): the leaky buckets [`conn`] meters floods with.
//!
//! The MPM feeds what it reads to [`Connection::feed`], acts on the
//! events, answers with [`Connection::send_headers`] and
//! [`Connection::send_data`] within [`Connection::send_window`], and
//! writes [`Connection::output`].

pub mod conn;
pub mod frame;
mod budget;
mod head;
pub mod hpack;
mod huffman;

pub use conn::{ConnError, Connection, Event, H2Limits};

/// What a client sends first on an HTTP/2 connection (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether `buf` (the first bytes of a cleartext connection) is, or may
/// still become, the HTTP/2 preface: Some(true) it is, Some(false) it is
/// not, None too short to tell.
pub fn starts_with_preface(buf: &[u8]) -> Option<bool> {
    let n = buf.len().min(PREFACE.len());
    if buf[..n] != PREFACE[..n] {
        Some(false)
    } else if n == PREFACE.len() {
        Some(true)
    } else {
        None
    }
}

/// RFC 9113 §7 error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    NoError = 0x0,
    Protocol = 0x1,
    Internal = 0x2,
    FlowControl = 0x3,
    SettingsTimeout = 0x4,
    StreamClosed = 0x5,
    FrameSize = 0x6,
    RefusedStream = 0x7,
    Cancel = 0x8,
    Compression = 0x9,
    Connect = 0xa,
    EnhanceYourCalm = 0xb,
    InadequateSecurity = 0xc,
    Http11Required = 0xd,
}
