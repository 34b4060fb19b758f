//! How a response head is written on HTTP/1.x ([`write_response_head`]),
//! and how its body is framed ([`frame_response`], and [`BodyFramer`] for
//! one produced as it is sent): Content-Length for a
//! body of known length, chunked for one produced as it goes (HTTP/1.1),
//! or the close that ends it (HTTP/1.0); no body for HEAD or a status
//! without one; and the Connection field that tells the client whether it
//! may send more.

use crate::request::RequestHead;
use crate::version::Version;
use crate::response::{status_allows_body, write_chunk, write_connection, write_content_length, write_header, write_status_line, LAST_CHUNK};

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
    if status == 101 {
        // Switching protocols (a proxied WebSocket): no more HTTP on this
        // connection, and Connection names the upgrade, not a close.
        framing.keep_alive = false;
        out.extend_from_slice(b"Connection: Upgrade\r\n\r\n");
        return framing;
    }
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

/// A body produced while it is sent (an application's answer), framed
/// piece by piece as its head's [`Framing`] said.
#[derive(Clone, Copy, Debug)]
pub struct BodyFramer {
    chunked: bool,
    /// What is left of an announced Content-Length.
    remaining: Option<u64>,
    /// False for HEAD (and statuses without a body): read, not sent.
    send: bool,
}

/// A body that ended before the length its head announced: the connection
/// must close, or the client would wait for the rest or take what follows
/// as part of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortBody;

impl BodyFramer {
    /// For a body whose head was framed so, `announced` bytes long if the
    /// application said.
    pub fn new(framing: Framing, announced: Option<u64>) -> BodyFramer {
        BodyFramer { chunked: framing.chunked, remaining: announced, send: framing.with_body }
    }

    /// Whether the body's bytes go to the client at all.
    pub fn sends(&self) -> bool {
        self.send
    }

    /// One piece for the wire: never past an announced length, wrapped as
    /// a chunk when chunked. Returns the payload bytes kept and the bytes
    /// to send (none when nothing is sent).
    pub fn frame(&mut self, mut piece: Vec<u8>) -> (u64, Vec<u8>) {
        if !self.send || piece.is_empty() {
            return (0, Vec::new());
        }
        if let Some(left) = self.remaining.as_mut() {
            piece.truncate((*left).min(piece.len() as u64) as usize);
            *left -= piece.len() as u64;
        }
        let payload = piece.len() as u64;
        if !self.chunked {
            return (payload, piece);
        }
        let mut framed = Vec::with_capacity(piece.len() + 16);
        write_chunk(&mut framed, &piece);
        (payload, framed)
    }

    /// The body has ended: what closes it on the wire (the last chunk), or
    /// [`ShortBody`] if less came than was announced.
    pub fn finish(&self) -> Result<&'static [u8], ShortBody> {
        if !self.send {
            return Ok(b"");
        }
        if self.remaining.is_some_and(|left| left > 0) {
            return Err(ShortBody);
        }
        Ok(if self.chunked { LAST_CHUNK } else { b"" })
    }
}
