//! One FastCGI answer, read once for every protocol and driver (the shape
//! of h2o's generator and ostream in `lib/core` and
//! `lib/handler/fastcgi.c`). An [`Answer`] is fed the application's bytes
//! by whoever reads its socket (a thread that blocks, or the event loop);
//! it gives back the head once it has come ([`Answer::head`]: a local
//! redirect, the whole answer, or the head and the body so far), then
//! moves the body into a [`ResponseSink`] ([`Answer::pump`]): the
//! HTTP/1.1 writer, an HTTP/2 stream, or the body a thread pulls. The
//! records, the CGI header block, stderr, the end of the request, what a
//! failure means and when an answer is cut short are decided here only;
//! the drivers move bytes.

use std::io::{self, Read};

use super::{Piece, PoolLease, ResponseReader};
use crate::gateway::error::GatewayError;
use crate::gateway::Gateway;
use crate::{Body, Response};

/// Where the body of an answer goes once its head has gone out.
pub trait ResponseSink {
    /// More of the body.
    fn data(&mut self, bytes: Vec<u8>);
    /// The body is whole: end it (a chunked body's last chunk, an HTTP/2
    /// END_STREAM). Err says why it cannot be ended as whole (shorter
    /// than its Content-Length, compression failed).
    fn end(&mut self) -> Result<(), String>;
    /// The answer broke off: the sink must not claim it whole.
    fn cut_short(&mut self);
    /// Whether so much waits for the client that the application is not
    /// to be read further for now (the client's pace holds it back).
    fn full(&self) -> bool;
}

/// What the answer's head came to.
pub enum AtHead {
    /// A local `Location:` with status 200: serve that URL instead.
    Redirect(String),
    /// All of the answer: the body is in the response (sent with a
    /// Content-Length, in one write with the head).
    Whole(Response),
    /// The head and the body so far; the rest goes through [`Answer::pump`].
    Partial {
        /// Its body still to be given (by the driver, as `Body::Stream`).
        response: Response,
        first: Vec<u8>,
        /// The application's Content-Length.
        len: Option<u64>,
        /// Read at the application's pace, what the client has not taken
        /// held by warren (see [`Gateway::buffers`]).
        buffers: bool,
    },
}

/// What moving the body on came to.
#[derive(Debug)]
pub enum Pumped {
    /// Everything that had come is in the sink; more is needed.
    More,
    /// The answer ended, whole, and the sink has ended it.
    Ended,
    /// The answer broke off after its head; the sink has been told.
    CutShort(GatewayError),
}

/// What a failure to read the application means.
#[derive(Debug)]
pub enum Failure {
    /// Before the head: the request is answered with this error.
    Failed(GatewayError),
    /// A pool's child went away before any of its answer came: another
    /// child may be given the request.
    Lost(GatewayError),
    /// After the head: the client's answer is left incomplete.
    CutShort(GatewayError),
}

pub struct Answer {
    reader: ResponseReader,
    /// The head has been given out; the body follows.
    head_given: bool,
    ended: bool,
}

impl Answer {
    pub fn new(reader: ResponseReader) -> Answer {
        Answer { reader, head_given: false, ended: false }
    }

    /// Bytes the application sent.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.reader.push(bytes);
    }

    /// Reads once from the application (where blocking is fine); 0 at its end.
    pub fn fill_from<R: Read>(&mut self, stream: &mut R) -> io::Result<usize> {
        self.reader.fill_from(stream)
    }

    /// Whether the head has been given out.
    pub fn head_given(&self) -> bool {
        self.head_given
    }

    /// The head, once it has come (None: more is needed). All of the body
    /// that came with it is gathered: the answer may be whole.
    pub fn head(&mut self, gw: &Gateway) -> Result<Option<AtHead>, GatewayError> {
        debug_assert!(!self.head_given, "one head");
        let mut h = loop {
            match self.reader.next_piece()? {
                None => return Ok(None),
                Some(Piece::Head(h)) => break h,
                // The reader gives nothing else before the head.
                Some(Piece::Data(_) | Piece::End) => {}
            }
        };
        self.head_given = true;
        if let Some(location) = h.redirect.take() {
            self.ended = true;
            return Ok(Some(AtHead::Redirect(location)));
        }
        let mut response = gw.response(&mut h);
        let mut body = std::mem::take(&mut h.first_body);
        loop {
            match self.reader.next_piece()? {
                Some(Piece::Data(d)) => body.extend_from_slice(&d),
                Some(Piece::End) => {
                    if let Some(n) = h.content_length {
                        body.truncate(n.min(body.len() as u64) as usize);
                    }
                    self.ended = true;
                    response.body = Body::Bytes(body);
                    return Ok(Some(AtHead::Whole(response)));
                }
                Some(Piece::Head(_)) | None => {
                    let buffers = gw.buffers(&h);
                    return Ok(Some(AtHead::Partial { response, first: body, len: h.content_length, buffers }));
                }
            }
        }
    }

    /// Moves what has come of the body into `sink`.
    pub fn pump(&mut self, sink: &mut dyn ResponseSink) -> Pumped {
        debug_assert!(self.head_given, "the body follows the head");
        if self.ended {
            return Pumped::Ended;
        }
        loop {
            match self.reader.next_piece() {
                Ok(None) => return Pumped::More,
                Ok(Some(Piece::Data(d))) => sink.data(d),
                Ok(Some(Piece::End)) => {
                    self.ended = true;
                    return match sink.end() {
                        Ok(()) => Pumped::Ended,
                        Err(why) => Pumped::CutShort(GatewayError { status: 502, why: format!("FastCGI: answer from {}: {why}", self.reader.backend()) }),
                    };
                }
                // The reader gives one head.
                Ok(Some(Piece::Head(_))) => {}
                Err(e) => {
                    self.ended = true;
                    sink.cut_short();
                    return Pumped::CutShort(e);
                }
            }
        }
    }

    /// Whether the answer has ended (whole, redirected or cut short).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The application closed its connection with the answer unfinished.
    pub fn closed(&self) -> GatewayError {
        GatewayError { status: 502, why: format!("FastCGI: {} closed the connection before the end of its answer", self.reader.backend()) }
    }

    /// What a failure to read the application means now: `gone` when it
    /// closed or reset the connection; `lease` the pool's child it was.
    pub fn failure(&mut self, error: GatewayError, gone: bool, lease: Option<&dyn PoolLease>) -> Failure {
        if self.head_given {
            self.ended = true;
            return Failure::CutShort(error);
        }
        // A child killed by its manager is not lost: it took too long.
        if gone && self.reader.nothing_yet() && lease.is_some_and(|l| !l.terminated()) {
            return Failure::Lost(error);
        }
        Failure::Failed(error)
    }

    /// Logs an answer that broke off after its head was sent.
    pub fn log_cut_short(&self, e: &GatewayError) {
        self.reader.log_cut_short(e);
    }
}

impl GatewayError {
    /// The error of a request whose pool child was killed for
    /// request_terminate_timeout becomes a 504, as php-fpm's.
    pub fn or_killed(self, lease: Option<&dyn PoolLease>) -> GatewayError {
        match lease {
            Some(l) if l.terminated() => GatewayError { status: 504, why: format!("{} (killed by request_terminate_timeout)", self.why) },
            _ => self,
        }
    }
}

/// The sink of a body a thread pulls piece by piece
/// ([`crate::BodySource`]): the pieces land in its buffer.
pub struct Pulled<'a> {
    pub out: &'a mut Vec<u8>,
}

impl ResponseSink for Pulled<'_> {
    fn data(&mut self, bytes: Vec<u8>) {
        if self.out.is_empty() {
            *self.out = bytes;
        } else {
            self.out.extend_from_slice(&bytes);
        }
    }

    fn end(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn cut_short(&mut self) {}

    /// The thread writes each piece before it pulls the next.
    fn full(&self) -> bool {
        false
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
