//! The client's side of a stream: its header block (a request, refused
//! or malformed, or trailers), its DATA against content-length and the
//! receive windows, and the stream errors that reset it (§5.4.2), with
//! the memory of recent resets that tells a late frame from a protocol
//! error.

use std::time::Instant;

use super::{fatal, Connection, Event, Fatal, Stream, RECENT_RESETS};
use crate::h2::frame;
use crate::h2::head::{Fields, Problem};
use crate::h2::hpack::DecodeError;
use crate::h2::ErrorCode;
use crate::error::HttpError;

impl Connection {
    pub(super) fn data(&mut self, stream: u32, data: &[u8], end_stream: bool, flow_len: u32, now: Instant, events: &mut Vec<Event>) -> Result<(), Fatal> {
        let flow = i64::from(flow_len);
        if flow > self.recv_window {
            return fatal(ErrorCode::FlowControl, "DATA beyond the connection window");
        }
        self.recv_window -= flow;
        if self.is_idle(stream) {
            return fatal(ErrorCode::Protocol, "DATA on an idle stream");
        }
        if data.is_empty() && !end_stream {
            self.empty_frame(now)?;
        }
        let Some(i) = self.find(stream) else {
            // Closed: nobody takes the bytes, the connection gets them back.
            self.credit_connection(u64::from(flow_len));
            if self.recently_reset(stream) || self.after_goaway(stream) {
                return Ok(());
            }
            return self.stream_error(stream, ErrorCode::StreamClosed, events);
        };
        let s = &mut self.streams[i];
        if !s.recv_open {
            self.credit_connection(u64::from(flow_len));
            return self.stream_error(stream, ErrorCode::StreamClosed, events);
        }
        if flow > s.recv_window {
            self.credit_connection(u64::from(flow_len));
            return self.stream_error(stream, ErrorCode::FlowControl, events);
        }
        s.recv_window -= flow;
        s.received = s.received.saturating_add(data.len() as u64);
        let length_wrong = match s.expected {
            Some(n) => s.received > n || end_stream && s.received != n,
            None => false,
        };
        if length_wrong {
            self.credit_connection(u64::from(flow_len));
            return self.stream_error(stream, ErrorCode::Protocol, events);
        }
        if end_stream {
            s.recv_open = false;
        }
        let padding = u64::from(flow_len) - data.len() as u64;
        let (discard, no_body) = (s.discard, s.expected == Some(0));
        if discard {
            self.credit_connection(u64::from(flow_len));
            return Ok(());
        }
        s.unconsumed += data.len() as u64;
        // Padding is nobody's to consume: credited back at once.
        self.credit_stream(i, padding);
        self.credit_connection(padding);
        if !(data.is_empty() && (!end_stream || no_body)) {
            events.push(Event::Data { stream, data: data.to_vec(), end_stream });
        }
        Ok(())
    }

    pub(super) fn header_block(&mut self, stream: u32, block: &[u8], end_stream: bool, self_dependent: bool, now: Instant, events: &mut Vec<Event>) -> Result<(), Fatal> {
        let existing = self.find(stream);
        let is_new = stream > self.max_stream;
        if is_new && self.goaway_sent.is_some() && self.after_goaway(stream) {
            // After our GOAWAY no new stream is ours: its block is not
            // worth decoding (an attacker's, after a header list bomb,
            // would cost the most), and the table no longer matters for
            // the streams that remain, whose header blocks are done.
            self.max_stream = stream;
            return Ok(());
        }
        let limits = self.limits.head;
        // Decoded whatever becomes of the stream: the dynamic table must
        // stay in step with the client's.
        let mut fields = Fields::new(&limits, !is_new);
        fields.allow_protocol(self.limits.extended_connect);
        let too_large = match self.decoder.decode(block, limits.head, &mut |n, v| fields.add(n, v)) {
            Ok(()) => false,
            Err(DecodeError::ListTooLarge) => true,
            Err(DecodeError::Invalid(why)) => return fatal(ErrorCode::Compression, why),
        };
        if !is_new {
            let Some(i) = existing else {
                if self.recently_reset(stream) || self.after_goaway(stream) {
                    return Ok(());
                }
                // §5.1: after its RST_STREAM a stream is closed; an id
                // below the highest that we know nothing of was skipped
                // or finished, and reusing it is the PROTOCOL_ERROR of
                // §5.1.1 (ids only increase).
                if self.peer_resets.contains(&stream) {
                    return fatal(ErrorCode::StreamClosed, "HEADERS on a stream the client reset");
                }
                return fatal(ErrorCode::Protocol, "HEADERS on a closed or skipped stream id");
            };
            return self.trailers(i, &fields, end_stream, self_dependent, events);
        }
        self.max_stream = stream;
        if self.after_goaway(stream) {
            // §6.8: streams after GOAWAY are not ours to answer.
            return Ok(());
        }
        if self_dependent {
            self.count_reset(now)?;
            return self.stream_error(stream, ErrorCode::Protocol, events);
        }
        if self.streams.len() >= self.limits.max_concurrent_streams as usize {
            // §5.1.2: REFUSED_STREAM tells the client it may retry.
            self.count_reset(now)?;
            return self.stream_error(stream, ErrorCode::RefusedStream, events);
        }
        let outcome = if too_large {
            Err(Problem::Refused(HttpError::new(431, format!("header list larger than LimitRequestHeadSize ({})", limits.head))))
        } else {
            fields.head(end_stream, block.len())
        };
        let (expected, discard) = match outcome {
            Ok((head, expected)) => {
                events.push(Event::Request { stream, head });
                (expected, false)
            }
            Err(Problem::Refused(error)) => {
                events.push(Event::Refused { stream, error });
                if too_large {
                    self.refuse_further(stream);
                }
                (None, true)
            }
            Err(Problem::Malformed(_)) => {
                // A stream that ends before any work, like a reset one.
                self.count_reset(now)?;
                return self.stream_error(stream, ErrorCode::Protocol, events);
            }
        };
        let recv_window = self.initial_recv_window();
        self.streams.push(Stream {
            id: stream,
            recv_open: !end_stream,
            send_window: i64::from(self.peer_initial_window),
            recv_window,
            recv_owed: 0,
            unconsumed: 0,
            held: 0,
            expected,
            received: 0,
            discard,
        });
        Ok(())
    }

    /// A second header block on an open stream: trailers, which must end
    /// the stream (§8.1); checked, then dropped.
    pub(super) fn trailers(&mut self, i: usize, fields: &Fields, end_stream: bool, self_dependent: bool, events: &mut Vec<Event>) -> Result<(), Fatal> {
        let s = &mut self.streams[i];
        let stream = s.id;
        if !s.recv_open {
            return self.stream_error(stream, ErrorCode::StreamClosed, events);
        }
        let malformed = matches!(fields.problem(), Some(Problem::Malformed(_)));
        let length_wrong = s.expected.is_some_and(|n| n != s.received);
        if !end_stream || self_dependent || malformed || length_wrong {
            return self.stream_error(stream, ErrorCode::Protocol, events);
        }
        s.recv_open = false;
        if !s.discard && s.expected != Some(0) {
            events.push(Event::Data { stream, data: Vec::new(), end_stream: true });
        }
        Ok(())
    }

    /// A stream error (§5.4.2): RST_STREAM, and the stream forgotten
    /// (Event::Reset if the server knew it).
    pub(super) fn stream_error(&mut self, stream: u32, code: ErrorCode, events: &mut Vec<Event>) -> Result<(), Fatal> {
        self.count_answer()?;
        frame::write_rst_stream(&mut self.out, stream, code);
        self.remember_reset(stream);
        if let Some(i) = self.find(stream) {
            self.remove(i);
            events.push(Event::Reset { stream });
        }
        Ok(())
    }

    pub(super) fn remember_reset(&mut self, stream: u32) {
        self.recent_resets[self.recent_next % RECENT_RESETS] = stream;
        self.recent_next = (self.recent_next + 1) % RECENT_RESETS;
    }

    /// A stream begun after a GOAWAY: ignored, with all its frames.
    pub(super) fn after_goaway(&self, stream: u32) -> bool {
        self.last_taken.is_some_and(|last| stream > last)
    }

    pub(super) fn recently_reset(&self, stream: u32) -> bool {
        self.recent_resets.contains(&stream)
    }

    pub(super) fn remove(&mut self, i: usize) {
        let s = self.streams.swap_remove(i);
        self.credit_connection(s.unconsumed - s.held);
        if self.streams.is_empty() {
            // An idle connection holds no stream memory.
            self.streams = Vec::new();
        }
    }
}
