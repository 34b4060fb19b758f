//! How a response head is written on HTTP/1.x ([`write_response_head`]),
//! and how its body is framed ([`frame_response`]): Content-Length for a
//! body of known length, chunked for one produced as it goes (HTTP/1.1),
//! or the close that ends it (HTTP/1.0); no body for HEAD or a status
//! without one; and the Connection field that tells the client whether it
//! may send more.

use crate::request::{RequestHead, Version};
use crate::response::{status_allows_body, write_connection, write_content_length, write_header, write_status_line};

/// What a response head says besides its own fields.
#[derive(Clone, Copy, Debug)]
pub struct ResponseHead<'a> {
    pub status: u16,
    /// The Date field's value ([`crate::DateCache`]).
    pub date: &'a str,
    /// The Server field's value (ServerTokens).
    pub server: &'a str,
    pub body: BodyLength,
}

/// Writes a whole response head into `out` (status line, Date, Server,
/// `fields`, framing, Connection, blank line) for `request` (None: input
/// that did not parse, answered as HTTP/1.1), on a connection that may
/// stay `keep_alive`; returns how the body goes.
pub fn write_response_head<'f>(out: &mut Vec<u8>, head: &ResponseHead, fields: impl IntoIterator<Item = (&'f str, &'f str)>, request: Option<&RequestHead>, keep_alive: bool) -> Framing {
    write_status_line(out, head.status);
    out.extend_from_slice(b"Date: ");
    out.extend_from_slice(head.date.as_bytes());
    out.extend_from_slice(b"\r\nServer: ");
    out.extend_from_slice(head.server.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in fields {
        write_header(out, name, value);
    }
    let is_head = request.is_some_and(|r| r.method() == "HEAD");
    let version = request.map_or(Version::Http11, |r| r.version);
    frame_response(out, head.status, version, is_head, head.body, keep_alive)
}

/// What is known of a response body's length when its head is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLength {
    Known(u64),
    /// Produced as it is sent, length unannounced.
    Unknown,
}

/// How the body after a head is sent, and whether the connection stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framing {
    /// The body goes as chunks.
    pub chunked: bool,
    /// The body's bytes go at all (not for HEAD, 204, 304, 1xx).
    pub with_body: bool,
    pub keep_alive: bool,
}

/// Ends the head in `out` (after its status line and fields) with the
/// framing fields, the Connection field and the blank line, for a request
/// of `version` (`is_head`: a HEAD request) that may stay `keep_alive`.
pub fn frame_response(out: &mut Vec<u8>, status: u16, version: Version, is_head: bool, body: BodyLength, keep_alive: bool) -> Framing {
    let allowed = status_allows_body(status);
    let mut framing = Framing { chunked: false, with_body: allowed && !is_head, keep_alive };
    match body {
        BodyLength::Unknown if framing.with_body => {
            if version == Version::Http11 {
                framing.chunked = true;
                write_header(out, "Transfer-Encoding", "chunked");
            } else {
                // HTTP/1.0 learns where the body ends from the close.
                framing.keep_alive = false;
            }
        }
        BodyLength::Unknown => {}
        // A HEAD answer says the length its GET would have.
        BodyLength::Known(len) if allowed => write_content_length(out, len),
        BodyLength::Known(_) => {}
    }
    write_connection(out, version, framing.keep_alive);
    out.extend_from_slice(b"\r\n");
    framing
}
