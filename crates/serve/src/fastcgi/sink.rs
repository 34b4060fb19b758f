//! The HTTP/1.1 writer as a [`ResponseSink`] of an application's answer
//! ([`H1Sink`]), on the event loop and on threads alike: each piece
//! compressed if the answer is, framed (chunked or counted against its
//! Content-Length) and queued for the client, in memory or in a [`Spill`];
//! the end writes the last chunk. The HTTP/2 stream's sink is the stream's
//! [`Fed`](crate::h2::body_plan::Fed) body; the exchange that feeds
//! both is `warren_handler::fastcgi::Answer`.

use warren_handler::compress::StreamEncoder;
use warren_handler::fastcgi::ResponseSink;
use warren_http::h1::{BodyFramer, ShortBody};

use crate::exchange::{Chunk, Exchange, Output};
use crate::fastcgi::spill::Spill;

/// An answer sent at the client's pace (`flushpackets=on`, or a spill
/// file that is full) stops being read from the application while this
/// much waits for the client.
pub const RELAY_HIGH_WATER: u64 = 256 * 1024;

/// How a relayed body goes out, set once its head is queued.
pub struct BodyFraming {
    pub framer: BodyFramer,
    /// Where what the client has not taken waits, when the answer is read
    /// at the application's pace; None: relayed at the client's pace.
    pub spill: Option<Spill>,
    /// The encoder of a compressed answer (see `warren_handler::compress`).
    pub encoder: Option<StreamEncoder>,
}

impl BodyFraming {
    /// Whether the application is not to be read further until the client
    /// has taken some of `out`.
    pub fn full(&self, out: &Output) -> bool {
        let read_ahead = self.spill.as_ref().is_some_and(Spill::has_room);
        !read_ahead && out.pending() > RELAY_HIGH_WATER
    }
}

/// A connection's output taking an answer's body.
pub struct H1Sink<'a> {
    pub out: &'a mut Output,
    pub framing: &'a mut BodyFraming,
    /// For the access log's byte counts.
    pub ex: &'a mut Exchange,
}

impl ResponseSink for H1Sink<'_> {
    fn data(&mut self, bytes: Vec<u8>) {
        queue_piece(self.out, self.framing, self.ex, bytes);
    }

    fn end(&mut self) -> Result<(), String> {
        if let Some(mut encoder) = self.framing.encoder.take() {
            let mut last = Vec::new();
            encoder.finish(&mut last).map_err(|e| format!("compressing the answer: {e}"))?;
            queue_piece(self.out, self.framing, self.ex, last);
        }
        match self.framing.framer.finish() {
            Err(ShortBody) => Err("the application sent less than its Content-Length".into()),
            Ok(b"") => Ok(()),
            Ok(last) => {
                self.out.queue.push_back(Chunk::Bytes(last.to_vec()));
                self.ex.bytes_sent += last.len() as u64;
                Ok(())
            }
        }
    }

    /// The driver closes the connection without the last chunk: the
    /// client sees the body is incomplete.
    fn cut_short(&mut self) {
        self.framing.encoder = None;
    }

    fn full(&self) -> bool {
        self.framing.full(self.out)
    }
}

/// Frames a piece of a relayed body and queues it for the client.
fn queue_piece(out: &mut Output, f: &mut BodyFraming, ex: &mut Exchange, mut data: Vec<u8>) {
    if !f.framer.sends() || data.is_empty() {
        return;
    }
    if let Some(encoder) = f.encoder.as_mut() {
        let mut encoded = Vec::with_capacity(data.len() / 2 + 64);
        // Encoding into memory fails only on a broken encoder state; the
        // client then gets what was encoded so far and a cut body.
        if encoder.piece(&data, &mut encoded).is_err() {
            f.encoder = None;
        }
        data = encoded;
        if data.is_empty() {
            return;
        }
    }
    let (payload, framed) = f.framer.frame(data);
    ex.body_bytes += payload;
    ex.bytes_sent += framed.len() as u64;
    match f.spill.as_mut() {
        Some(spill) => spill.queue(out, framed),
        None => out.queue.push_back(Chunk::Bytes(framed)),
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
