//! The request body as a thread that owns the connection reads it
//! ([`ClientBody`]): decoded (length or chunked) as it is asked for,
//! limited by LimitRequestBody, timed by RequestReadTimeout body=, with
//! 100 Continue sent when the client waits for it. The blocking driver
//! discards it through this; a FastCGI exchange on a thread streams it to
//! the application.

use std::io;
use crate::client_stream::ClientStream;
use std::time::Instant;

use nix::poll::PollFlags;
use warren_handler::spool::Spooled;
use warren_handler::RequestBody;
use warren_http::h1::{BodyState, Connection, Expiry};
use warren_http::response::CONTINUE;
use warren_http::{BodyFraming, HttpError, RequestHead};

use crate::exchange::{read_onto, wait_for, Output};

/// How much one read from the client asks for.
const READ_CHUNK: usize = 16 * 1024;

/// Writes an interim answer whole, on a socket that may be non-blocking
/// (an event child's thread): a full send buffer is waited for until
/// `deadline`, not left with half a head written.
fn send_all(stream: &ClientStream, bytes: &[u8], deadline: Instant) -> bool {
    let mut out = Output { wbuf: bytes.to_vec(), ..Output::default() };
    out.write_all_within(stream, || deadline.saturating_duration_since(Instant::now()))
}

/// The request body, read from the connection on demand.
pub struct ClientBody<'a> {
    stream: &'a ClientStream,
    /// The connection's HTTP/1.1 state: what was received after the head
    /// (the start of the body, maybe a pipelined next request, which is
    /// left there), the body's framing, limit and clock.
    conn: &'a mut Connection,
    /// The body's framing, LimitRequestBody and whether the client waits
    /// for 100 Continue, until its first read.
    unread: Option<(BodyFraming, u64, bool)>,
    present: bool,
    length: Option<u64>,
    /// Bytes taken from the connection, framing included (for `%I`).
    pub wire_bytes: u64,
    /// The whole body, read already by the event loop.
    spooled: Option<Spooled>,
}

impl<'a> ClientBody<'a> {
    pub fn new(stream: &'a ClientStream, conn: &'a mut Connection, head: &RequestHead, limit: u64) -> ClientBody<'a> {
        let length = match head.framing {
            BodyFraming::Length(n) => Some(n),
            BodyFraming::None | BodyFraming::Chunked => None,
        };
        let present = head.framing != BodyFraming::None;
        let unread = present.then_some((head.framing, limit, head.expect_continue));
        ClientBody { stream, conn, unread, present, length, wire_bytes: 0, spooled: None }
    }

    /// A body the event loop has read whole: nothing is read from the connection.
    pub fn already_read(stream: &'a ClientStream, conn: &'a mut Connection, body: Spooled) -> ClientBody<'a> {
        ClientBody { stream, conn, unread: None, present: false, length: Some(body.len()), wire_bytes: 0, spooled: Some(body) }
    }

    /// Whether all of the body has been taken off the connection.
    pub fn finished(&self) -> bool {
        match self.unread {
            Some((framing, ..)) => framing == BodyFraming::Length(0),
            None => !self.present || self.conn.body_done(),
        }
    }
}

impl RequestBody for ClientBody<'_> {
    fn length(&self) -> Option<u64> {
        self.length
    }

    fn present(&self) -> bool {
        self.present || self.spooled.is_some()
    }

    fn take_spooled(&mut self) -> Option<Spooled> {
        self.spooled.take()
    }

    fn interim(&mut self, answer: &warren_handler::proxy_http::response::Interim) {
        // Nothing of the response has gone yet: it goes straight out. A
        // client gone meanwhile is found when the final answer is sent.
        let _ = send_all(self.stream, &answer.to_h1(), self.conn.deadline(false));
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        if !self.present {
            return Ok(0);
        }
        // The body's clock starts when it is first read, with what came with the head.
        if let Some((framing, limit, expect_continue)) = self.unread.take() {
            self.conn.start_body(framing, limit, expect_continue);
            self.conn.time_body(Instant::now());
        }
        loop {
            if self.conn.body_done() {
                return Ok(0);
            }
            if !self.conn.input().is_empty() {
                // Decoded bytes never outnumber the input they came from.
                let mut n = 0;
                let step = self.conn.poll_body(buf.len(), &mut |d| {
                    buf[n..n + d.len()].copy_from_slice(d);
                    n += d.len();
                });
                self.wire_bytes += step.used as u64;
                match step.state {
                    BodyState::Error(e) => return Err(e),
                    _ if n > 0 => return Ok(n),
                    BodyState::Done => return Ok(0),
                    BodyState::More if step.used > 0 && !self.conn.input().is_empty() => continue,
                    BodyState::More => {}
                }
            }
            if self.conn.continue_due() {
                let _ = send_all(self.stream, CONTINUE, self.conn.deadline(false));
            }
            let left = self.conn.deadline(false).saturating_duration_since(Instant::now());
            if left.is_zero() || !wait_for(self.stream, PollFlags::POLLIN, left) {
                return Err(match self.conn.timed_out(false) {
                    Expiry::Body(e) | Expiry::Head(e) => e,
                    Expiry::Linger | Expiry::Close => HttpError::new(408, "request body read timeout"),
                });
            }
            match read_onto(self.stream, self.conn.input_mut(), READ_CHUNK) {
                Ok(0) => return Err(HttpError::new(400, "connection closed in the middle of the request body")),
                Ok(n) => {
                    self.conn.received(n, Instant::now());
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(HttpError::new(400, format!("error reading the request body: {e}"))),
            }
        }
    }
}
