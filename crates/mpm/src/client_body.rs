//! The request body as a thread that owns the connection reads it
//! ([`ClientBody`]): decoded (length or chunked) as it is asked for,
//! limited by LimitRequestBody, timed by RequestReadTimeout body=, with
//! 100 Continue sent when the client waits for it. The blocking driver
//! discards it through this; a FastCGI exchange on a thread streams it to
//! the application.

use std::io::{self, Write};
use crate::client_stream::ClientStream;
use std::time::Instant;

use nix::poll::PollFlags;
use warren_handler::spool::Spooled;
use warren_handler::RequestBody;
use warren_http::conn::received_body_within;
use warren_http::response::CONTINUE;
use warren_http::{BodyDecoder, BodyFraming, ConnRules, HttpError, ReadClock, RequestHead};

use crate::exchange::{read_onto, wait_for};

/// How much one read from the client asks for.
const READ_CHUNK: usize = 16 * 1024;

/// The request body, read from the connection on demand.
pub struct ClientBody<'a> {
    stream: &'a ClientStream,
    /// Bytes already received after the head (the start of the body, and
    /// possibly a pipelined next request, which is left there).
    rbuf: &'a mut Vec<u8>,
    decoder: Option<BodyDecoder>,
    length: Option<u64>,
    limit: u64,
    /// RequestReadTimeout body= and Timeout.
    rules: &'a ConnRules,
    /// Started at the first read.
    clock: Option<ReadClock>,
    expect_continue: bool,
    /// Bytes taken from the connection, framing included (for `%I`).
    pub wire_bytes: u64,
    /// The whole body, read already by the event loop.
    spooled: Option<Spooled>,
}

impl<'a> ClientBody<'a> {
    pub fn new(stream: &'a ClientStream, rbuf: &'a mut Vec<u8>, head: &RequestHead, limit: u64, rules: &'a ConnRules) -> ClientBody<'a> {
        let (decoder, length) = match head.framing {
            BodyFraming::None => (None, None),
            BodyFraming::Length(n) => (Some(BodyDecoder::new(head.framing)), Some(n)),
            BodyFraming::Chunked => (Some(BodyDecoder::new(head.framing)), None),
        };
        ClientBody { stream, rbuf, decoder, length, limit, rules, clock: None, expect_continue: head.expect_continue, wire_bytes: 0, spooled: None }
    }

    /// A body the event loop has read whole: nothing is read from the connection.
    pub fn already_read(stream: &'a ClientStream, rbuf: &'a mut Vec<u8>, body: Spooled, rules: &'a ConnRules) -> ClientBody<'a> {
        ClientBody { stream, rbuf, decoder: None, length: Some(body.len()), limit: u64::MAX, rules, clock: None, expect_continue: false, wire_bytes: 0, spooled: Some(body) }
    }

    /// Whether all of the body has been taken off the connection.
    pub fn finished(&self) -> bool {
        self.decoder.as_ref().is_none_or(BodyDecoder::is_done)
    }
}

impl RequestBody for ClientBody<'_> {
    fn length(&self) -> Option<u64> {
        self.length
    }

    fn present(&self) -> bool {
        self.decoder.is_some() || self.spooled.is_some()
    }

    fn take_spooled(&mut self) -> Option<Spooled> {
        self.spooled.take()
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let Some(dec) = self.decoder.as_mut() else { return Ok(0) };
        // The body's clock starts when it is first read, with what came with the head.
        let clock = self.clock.get_or_insert_with(|| self.rules.body_clock(Instant::now(), self.rbuf.len()));
        loop {
            if dec.is_done() {
                return Ok(0);
            }
            if !self.rbuf.is_empty() {
                // Decoded bytes never outnumber the input they came from.
                let take = self.rbuf.len().min(buf.len());
                let mut n = 0;
                let used = dec.feed(&self.rbuf[..take], &mut |d| {
                    buf[n..n + d.len()].copy_from_slice(d);
                    n += d.len();
                })?;
                self.rbuf.drain(..used);
                self.wire_bytes += used as u64;
                received_body_within(dec.received, self.limit)?;
                if n > 0 {
                    return Ok(n);
                }
                if dec.is_done() {
                    return Ok(0);
                }
                if used > 0 && !self.rbuf.is_empty() {
                    continue;
                }
            }
            if self.expect_continue {
                self.expect_continue = false;
                let _ = (&*self.stream).write_all(CONTINUE);
            }
            let left = clock.deadline().saturating_duration_since(Instant::now());
            if left.is_zero() || !wait_for(self.stream, PollFlags::POLLIN, left) {
                return Err(clock.timeout_error());
            }
            match read_onto(self.stream, self.rbuf, READ_CHUNK) {
                Ok(0) => return Err(HttpError::new(400, "connection closed in the middle of the request body")),
                Ok(n) => clock.received(n as u64, Instant::now()),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(HttpError::new(400, format!("error reading the request body: {e}"))),
            }
        }
    }
}
