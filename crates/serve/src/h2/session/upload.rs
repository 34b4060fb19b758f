//! A stream's request body relayed to its backend as the client sends it
//! (mod_proxy_http's streamed body, Apache's default), where the driver
//! can: the stream's work starts at its head, and its DATA waits in
//! [`Upload`] until the driver's exchange takes it
//! ([`Session::take_upload`]). Only then is the stream's window credited
//! back to the client, so that window is the backpressure: a backend that
//! reads slowly closes the client's window, and warren holds at most that
//! window plus what the exchange has queued. The connection's window is
//! credited as the DATA comes ([`Connection::hold`](warren_http::h2::Connection::hold)):
//! one slow backend must not starve the connection's other streams.
//! LimitRequestBody is counted on the DATA as it comes (413 while the
//! answer has not begun, the stream reset after); a stream that stops sending is H2StreamTimeout's; the codec
//! already resets a stream whose DATA disagrees with its content-length.
//! A body read whole first (`proxy-sendcl`, FastCGI, a gateway the driver
//! cannot stream to) is the session's spool, as before.

use std::sync::atomic::Ordering;
use std::time::Instant;

use warren_handler::gateway::Gateway;
use warren_http::conn::received_body_within;
use warren_http::h2::ErrorCode;
use warren_http::{HttpError, RequestHead};

use super::{Ctx, Session, State};

/// Which gateways a driver streams a body to as it comes.
pub type UploadRule = fn(&Gateway, &RequestHead) -> bool;

/// The client's body of a stream whose exchange takes it as it comes.
#[derive(Default)]
pub(super) struct Upload {
    /// DATA the exchange has not taken yet (at most the stream's window).
    held: Vec<u8>,
    /// The client sent END_STREAM.
    ended: bool,
}

impl Upload {
    /// Whether the stream waits on its client to send more.
    pub(super) fn waits_on_client(&self) -> bool {
        self.held.is_empty() && !self.ended
    }
}

/// What [`Session::take_upload`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Pulled {
    /// Bytes were handed over (maybe none): more is to come.
    More(usize),
    /// The body's last bytes were handed over: it is whole.
    End(usize),
    /// The stream takes no body any more (reset, answered, refused).
    Gone,
}

impl Session {
    /// Sets which gateways this connection's driver streams a body to;
    /// `one_at_a_time`: a driver that runs the streams' work one after
    /// another streams one body at a time, the others' read whole (their
    /// DATA taken at once), so that a stream whose work waits its turn has
    /// its body come in meanwhile rather than its client held at its window.
    pub fn set_upload_rule(&mut self, rule: UploadRule, one_at_a_time: bool) {
        self.upload_rule = Some((rule, one_at_a_time));
    }

    /// Whether a stream starting with `gw` has its body streamed.
    pub(super) fn streams_upload(&self, gw: &Gateway, head: &RequestHead) -> bool {
        match self.upload_rule {
            Some((rule, one_at_a_time)) => rule(gw, head) && !(one_at_a_time && self.streams.iter().any(|s| s.upload.is_some())),
            None => false,
        }
    }

    /// DATA for a stream whose body is relayed as it comes: kept for the
    /// exchange, its stream's window not credited back yet. False if `id` is no such stream.
    pub(super) fn upload_data(&mut self, ctx: &mut Ctx, id: u32, data: &[u8], end: bool) -> bool {
        let Some(s) = self.stream_mut(id) else { return false };
        let Some(up) = s.upload.as_mut() else { return false };
        up.held.extend_from_slice(data);
        up.ended |= end;
        s.ex.bytes_received += data.len() as u64;
        s.moved = Instant::now();
        let within = received_body_within(s.ex.bytes_received, s.ex.body_limit);
        self.codec.hold(id, data.len());
        if let Err(e) = within {
            self.upload_refused(ctx, id, &e);
        }
        true
    }

    /// Hands the exchange at most `room` bytes of the stream's body (to
    /// `push`), credited back to the client as they go.
    pub fn take_upload(&mut self, id: u32, room: usize, push: &mut dyn FnMut(&[u8])) -> Pulled {
        let Some(s) = self.stream_mut(id) else { return Pulled::Gone };
        let Some(up) = s.upload.as_mut() else { return Pulled::Gone };
        let n = room.min(up.held.len());
        if n > 0 {
            push(&up.held[..n]);
            up.held.drain(..n);
            // The client's clock starts again from here (H2StreamTimeout).
            s.moved = Instant::now();
        }
        let whole = up.ended && up.held.is_empty();
        if whole {
            s.upload = None;
        } else if up.held.capacity() > 2 * up.held.len().max(16 * 1024) {
            up.held.shrink_to_fit();
        }
        self.codec.consumed(id, n);
        if whole {
            Pulled::End(n)
        } else {
            Pulled::More(n)
        }
    }

    /// The exchange ends before taking the whole body (its answer came
    /// first, or it failed): what is held is credited back, and what the
    /// client still sends is dropped as it comes (the codec resets its side
    /// once the answer has ended).
    pub fn end_upload(&mut self, id: u32) {
        let Some(s) = self.stream_mut(id) else { return };
        if let Some(up) = s.upload.take() {
            self.codec.consumed(id, up.held.len());
        }
    }

    /// The body is refused (over LimitRequestBody): the exchange is told to
    /// end (its backend connection, holding part of a body, is closed), and
    /// the client gets the error, or the stream is reset if its answer has begun.
    fn upload_refused(&mut self, ctx: &mut Ctx, id: u32, e: &HttpError) {
        self.end_upload(id);
        let Some(s) = self.stream_mut(id) else { return };
        if let Some(dropped) = &s.dropped {
            dropped.store(true, Ordering::Relaxed);
        }
        if matches!(s.state, State::Working) {
            return self.body_error(ctx, id, e);
        }
        ctx.site.error_log.log(warren_config::LogLevel::Error, Some(s.info.useragent), &e.reason);
        self.codec.reset(id, ErrorCode::Cancel);
        self.finish_stream(ctx, id, true);
    }
}
