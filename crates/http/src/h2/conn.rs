//! One HTTP/2 connection, server side, without I/O.
//!
//! [`Connection::feed`] takes the client's bytes: the preface, then whole
//! frames, each checked by [`frame`] and then against the connection's
//! state: the stream states of RFC 9113 §5.1, header blocks (HEADERS and
//! CONTINUATION, decoded by HPACK into [`Event::Request`]s through
//! [`super::head`]), flow control (§5.2, §6.9) in both directions, and
//! the control frames (SETTINGS, PING, GOAWAY, RST_STREAM,
//! WINDOW_UPDATE). The server answers through `send_*`; everything to
//! write gathers in one output buffer.
//!
//! Only open streams have state; a closed stream is known by its id being
//! at most the highest one seen (§5.1.1), so a client cannot make us keep
//! anything for the streams it is done with. The budgets against the
//! known attacks are the constants below, each with its reason.
//!
//! This file holds the connection's state, the frames as they come and
//! the control frames; `streams` the client's side of each stream (its
//! header block, DATA and stream errors); `send` ours (HEADERS, DATA,
//! credit, RST_STREAM, GOAWAY and the output buffer).

use std::time::Instant;

use super::budget::Leaky;
use super::frame::{self, Frame, FrameError, Header};
use super::hpack::{Decoder, Encoder};
use super::{ErrorCode, PREFACE};
use crate::error::HttpError;
use crate::head_scan::HeadLimits;
use crate::request::RequestHead;

mod send;
mod streams;

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
    /// RFC 8441: SETTINGS_ENABLE_CONNECT_PROTOCOL is announced and an
    /// extended CONNECT for `websocket` becomes a WebSocket upgrade
    /// request (see [`crate::RequestHead::is_h2_websocket`]); without it a
    /// `:protocol` field is malformed (§3).
    pub extended_connect: bool,
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

/// Answers (PING and SETTINGS ACKs, RST_STREAMs) queued since the output
/// was last written out. A client that reads what it is sent never comes
/// near: it would need 256 PINGs, SETTINGS or bad streams in one read of
/// ours. One that floods them without reading (the PING and SETTINGS
/// floods, CVE-2019-9512 and -9515) gets ENHANCE_YOUR_CALM once we hold
/// some 4 KB of answers for it, instead of an ever-growing buffer.
const MAX_UNWRITTEN_ANSWERS: u32 = 256;

/// SETTINGS frames a second (and the burst allowed) before
/// ENHANCE_YOUR_CALM: each one makes us walk every stream (for
/// INITIAL_WINDOW_SIZE) and answer; a client sends one at the start and
/// hardly ever another.
const SETTINGS_PER_SEC: u32 = 2;
const SETTINGS_BURST: u32 = 16;

/// Frames that carry nothing and end nothing (DATA without data or
/// END_STREAM, HEADERS or CONTINUATION fragments that are empty and do
/// not end the block): CVE-2019-9518's empty frames flood, frames that
/// cost us a parse each and no client needs.
const EMPTY_FRAMES_PER_SEC: u32 = 10;
const EMPTY_FRAMES_BURST: u32 = 100;

/// Rapid reset (CVE-2023-44487): streams the client resets before we
/// finished them, and streams refused for going over
/// MAX_CONCURRENT_STREAMS or reset as malformed, cost us a request's
/// start (a header block decoded at least) and give the client its
/// concurrency back at once. A browser cancelling a page's worth of
/// streams (all of MAX_CONCURRENT_STREAMS) twice in a row stays within
/// the burst of twice the limit; a steady rate of one limit's worth a
/// second is more than any navigation. An attack needs thousands a second.
const RESETS_BURST_PER_STREAM: u32 = 2;
const RESETS_MIN_PER_SEC: u32 = 10;

/// CONTINUATION flood (CVE-2024-27316 and kin): a header block is buffered
/// only up to twice the header list limit plus this (a block decodes to
/// at least its own size in list terms, less Huffman; twice leaves room
/// for the 431 answer over a mere connection error), and in at most
/// `MAX_CONTINUATIONS` frames. Both are checked as each frame's header
/// arrives, before its payload is taken.
const HEADER_BLOCK_SLACK: usize = 1024;
/// Clients fill CONTINUATIONs to the frame size (16 KB): 32 carry half a
/// megabyte. More are slivers, sent to make us work per frame.
const MAX_CONTINUATIONS: u32 = 32;

/// The dynamic table our responses' encoder may use, however large the
/// client's SETTINGS_HEADER_TABLE_SIZE: responses repeat few fields, and
/// the table is memory held for every connection.
const MAX_ENCODER_TABLE: u32 = 4096;

/// Our DATA and header frames are at most this large, the size every
/// client accepts (SETTINGS_MAX_FRAME_SIZE cannot be lower): larger
/// frames save a few header bytes and hold other streams' frames back.
const SEND_FRAME_SIZE: usize = frame::DEFAULT_MAX_FRAME_SIZE as usize;

/// The output buffer keeps up to this capacity once written out; above
/// it the memory is given back, so an idle connection holds no buffer.
const IDLE_OUTPUT_CAPACITY: usize = 512;

/// Streams we reset lately: frames the client sent before it saw our
/// RST_STREAM are ignored for them (§5.1 "closed") rather than answered
/// with STREAM_CLOSED. A handful covers what is in flight.
const RECENT_RESETS: usize = 4;

/// Fields a response may not carry over HTTP/2 (§8.2.2).
const HOP_BY_HOP: [&[u8]; 5] = [b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"];

/// A connection error: the code and the reason for the log.
type Fatal = (ErrorCode, &'static str);

fn fatal<T>(code: ErrorCode, why: &'static str) -> Result<T, Fatal> {
    Err((code, why))
}

/// An open stream (open, or half-closed either way). Closed streams have
/// no state at all.
#[derive(Debug)]
struct Stream {
    id: u32,
    /// The client may still send DATA or trailers (open or
    /// half-closed(local) — the latter only in passing: when we end our
    /// side first we reset the client's).
    recv_open: bool,
    /// What we may still send on it; i64 because a smaller
    /// SETTINGS_INITIAL_WINDOW_SIZE can make it negative (§6.9.2).
    send_window: i64,
    /// What the client may still send on it before we give credit.
    recv_window: i64,
    /// Credit owed to the client: consumed body bytes and padding.
    recv_owed: u64,
    /// Body bytes handed out in Event::Data the server has not yet
    /// reported consumed: given back to the connection if the stream
    /// goes first, so its window never leaks.
    unconsumed: u64,
    /// The part of `unconsumed` the connection's window has had back
    /// already ([`Connection::hold`]).
    held: u64,
    /// content-length's value, which the DATA must add up to (§8.1.1);
    /// Some(0) too when the request has no body.
    expected: Option<u64>,
    received: u64,
    /// The request was refused (Event::Refused): its body is unwanted,
    /// dropped and credited back at once.
    discard: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Preface,
    /// The preface came; the client's first frame must be SETTINGS.
    FirstSettings,
    Frames,
}

/// A header block that awaits its CONTINUATIONs.
#[derive(Clone, Copy, Debug)]
struct Pending {
    stream: u32,
    end_stream: bool,
    self_dependent: bool,
    continuations: u32,
}

/// The server side of one HTTP/2 connection.
pub struct Connection {
    limits: H2Limits,
    phase: Phase,
    decoder: Decoder,
    encoder: Encoder,
    /// Frames to write; `out[out_start..]` is what is still unwritten.
    out: Vec<u8>,
    out_start: usize,
    streams: Vec<Stream>,
    /// The highest stream id a client HEADERS used (opened, refused or
    /// ignored): every client stream up to it that is not in `streams`
    /// is closed (§5.1.1).
    max_stream: u32,
    /// The client has acknowledged our SETTINGS: its frames obey them.
    settings_acked: bool,
    /// The client's SETTINGS_INITIAL_WINDOW_SIZE.
    peer_initial_window: u32,
    /// The connection's send window, and what the client may still send
    /// on the connection and the credit we owe it.
    send_window: i64,
    recv_window: i64,
    recv_owed: u64,
    pending: Option<Pending>,
    /// A header block being gathered from CONTINUATIONs (a block in one
    /// frame is decoded where it lies).
    block: Vec<u8>,
    /// We sent GOAWAY (graceful): the last stream id it named.
    goaway_sent: Option<u32>,
    goaway_received: bool,
    /// After a GOAWAY either way, the last stream we take: frames of
    /// later streams are ignored (§6.8).
    last_taken: Option<u32>,
    error: Option<ConnError>,
    /// Streams we reset lately (see RECENT_RESETS), and the client did.
    recent_resets: [u32; RECENT_RESETS],
    recent_next: usize,
    peer_resets: [u32; RECENT_RESETS],
    peer_next: usize,
    answers_unwritten: u32,
    resets: Leaky,
    settings_budget: Leaky,
    empty_frames: Leaky,
}

impl Connection {
    /// A connection whose client preface is still to come (TLS with ALPN
    /// h2, or cleartext prior knowledge). Our SETTINGS (and the
    /// connection window's WINDOW_UPDATE) are queued at once.
    ///
    /// The MPM's read buffer must hold a whole frame: 9 bytes plus
    /// `limits.max_frame_size`.
    pub fn new(limits: H2Limits) -> Connection {
        let mut limits = limits;
        limits.max_frame_size = limits.max_frame_size.clamp(frame::DEFAULT_MAX_FRAME_SIZE, frame::MAX_MAX_FRAME_SIZE);
        limits.initial_window = limits.initial_window.min(frame::MAX_WINDOW);
        limits.connection_window = limits.connection_window.clamp(frame::DEFAULT_WINDOW, frame::MAX_WINDOW);
        let mut c = Connection {
            limits,
            phase: Phase::Preface,
            decoder: Decoder::new(limits.header_table_size as usize),
            encoder: Encoder::new(),
            out: Vec::new(),
            out_start: 0,
            streams: Vec::new(),
            max_stream: 0,
            settings_acked: false,
            peer_initial_window: frame::DEFAULT_WINDOW,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_window: i64::from(frame::DEFAULT_WINDOW),
            recv_owed: 0,
            pending: None,
            block: Vec::new(),
            goaway_sent: None,
            goaway_received: false,
            last_taken: None,
            error: None,
            recent_resets: [0; RECENT_RESETS],
            recent_next: 0,
            peer_resets: [0; RECENT_RESETS],
            peer_next: 0,
            answers_unwritten: 0,
            resets: Leaky::default(),
            settings_budget: Leaky::default(),
            empty_frames: Leaky::default(),
        };
        // ENABLE_PUSH is the client's to announce, not a server's.
        let mut settings = Vec::with_capacity(7);
        settings.push((frame::SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams));
        settings.push((frame::SETTINGS_INITIAL_WINDOW_SIZE, limits.initial_window));
        if limits.max_frame_size != frame::DEFAULT_MAX_FRAME_SIZE {
            settings.push((frame::SETTINGS_MAX_FRAME_SIZE, limits.max_frame_size));
        }
        settings.push((frame::SETTINGS_MAX_HEADER_LIST_SIZE, u32::try_from(limits.head.head).unwrap_or(u32::MAX)));
        if limits.header_table_size != 4096 {
            settings.push((frame::SETTINGS_HEADER_TABLE_SIZE, limits.header_table_size));
        }
        settings.push((frame::SETTINGS_NO_RFC7540_PRIORITIES, 1));
        if limits.extended_connect {
            settings.push((frame::SETTINGS_ENABLE_CONNECT_PROTOCOL, 1));
        }
        frame::write_settings(&mut c.out, &settings);
        let raise = limits.connection_window - frame::DEFAULT_WINDOW;
        if raise > 0 {
            frame::write_window_update(&mut c.out, 0, raise);
            c.recv_window = i64::from(limits.connection_window);
        }
        c
    }

    /// A connection upgraded from HTTP/1.1 (`Upgrade: h2c`, RFC 7540 §3.2):
    /// `http2_settings` is the request's HTTP2-Settings value (base64url);
    /// the request itself is stream 1, half-closed by the client, and the
    /// caller answers it as such. The client preface is still to come.
    pub fn upgraded(limits: H2Limits, http2_settings: &[u8]) -> Result<Connection, HttpError> {
        let bad = |why: &str| HttpError::new(400, format!("bad HTTP2-Settings: {why}"));
        let params = base64url_decode(http2_settings).ok_or_else(|| bad("not base64url"))?;
        if !params.len().is_multiple_of(6) {
            return Err(bad("not a whole number of settings"));
        }
        let mut c = Connection::new(limits);
        // The 101 response acknowledges these (RFC 7540 §3.2.1): no ACK.
        c.apply_settings(&params).map_err(|(_, why)| bad(why))?;
        c.max_stream = 1;
        let recv_window = c.initial_recv_window();
        c.streams.push(Stream {
            id: 1,
            recv_open: false,
            send_window: i64::from(c.peer_initial_window),
            recv_window,
            recv_owed: 0,
            unconsumed: 0,
            held: 0,
            expected: Some(0),
            received: 0,
            discard: false,
        });
        Ok(c)
    }

    /// Takes what the client sent: the preface, then whole frames.
    /// Returns how much of `input` was used (a partial frame is left for
    /// the next call). Events are appended to `events`.
    pub fn feed(&mut self, input: &[u8], now: Instant, events: &mut Vec<Event>) -> Result<usize, ConnError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let mut used = 0;
        if self.phase == Phase::Preface {
            let n = input.len().min(PREFACE.len());
            if input[..n] != PREFACE[..n] {
                return Err(self.fail((ErrorCode::Protocol, "not the HTTP/2 client preface")));
            }
            if n < PREFACE.len() {
                return Ok(0);
            }
            used = n;
            self.phase = Phase::FirstSettings;
        }
        while let Some(h) = input.get(used..).and_then(Header::parse) {
            if let Err(f) = self.check_header(&h) {
                return Err(self.fail(f));
            }
            let end = used + frame::HEADER_LEN + h.len as usize;
            let Some(payload) = input.get(used + frame::HEADER_LEN..end) else { break };
            if let Err(f) = self.frame(&h, payload, now, events) {
                return Err(self.fail(f));
            }
            used = end;
        }
        Ok(used)
    }

    /// What can be told from a frame's header alone, before waiting for
    /// its payload.
    fn check_header(&self, h: &Header) -> Result<(), Fatal> {
        if h.len > self.limits.max_frame_size {
            return fatal(ErrorCode::FrameSize, "frame larger than our SETTINGS_MAX_FRAME_SIZE");
        }
        if let Some(p) = &self.pending {
            // §6.10: a header block's frames may not be interleaved.
            if h.kind != frame::CONTINUATION || h.stream != p.stream {
                return fatal(ErrorCode::Protocol, "frame interleaved in a header block");
            }
            if p.continuations >= MAX_CONTINUATIONS {
                return fatal(ErrorCode::EnhanceYourCalm, "too many CONTINUATION frames");
            }
            if self.block.len().saturating_add(h.len as usize) > self.max_block() {
                return fatal(ErrorCode::EnhanceYourCalm, "header block too large");
            }
        } else if h.kind == frame::CONTINUATION {
            return fatal(ErrorCode::Protocol, "CONTINUATION without a header block");
        }
        if self.phase == Phase::FirstSettings && (h.kind != frame::SETTINGS || h.flags & frame::FLAG_ACK != 0) {
            return fatal(ErrorCode::Protocol, "the client's first frame is not SETTINGS");
        }
        Ok(())
    }

    fn max_block(&self) -> usize {
        self.limits.head.head.saturating_mul(2).saturating_add(HEADER_BLOCK_SLACK)
    }

    /// Queues GOAWAY for a connection error and stops everything.
    fn fail(&mut self, (code, why): Fatal) -> ConnError {
        let last = self.last_taken.map_or(self.max_stream, |last| last.min(self.max_stream));
        frame::write_goaway(&mut self.out, last, code, why.as_bytes());
        let e = ConnError { code, reason: why.to_string() };
        self.error = Some(e.clone());
        self.streams = Vec::new();
        self.pending = None;
        self.block = Vec::new();
        e
    }

    fn frame(&mut self, h: &Header, payload: &[u8], now: Instant, events: &mut Vec<Event>) -> Result<(), Fatal> {
        if self.phase == Phase::FirstSettings {
            self.phase = Phase::Frames;
        }
        let frame = match Frame::parse(h, payload) {
            Ok(f) => f,
            Err(FrameError::Connection(code, why)) => return fatal(code, why),
            Err(FrameError::Stream(id, code, _)) => return self.stream_error(id, code, events),
        };
        match frame {
            Frame::Data { stream, data, end_stream, flow_len } => self.data(stream, data, end_stream, flow_len, now, events),
            Frame::Headers { stream, block, end_stream, end_headers, priority } => {
                if stream.is_multiple_of(2) {
                    return fatal(ErrorCode::Protocol, "HEADERS on a server stream id");
                }
                if block.is_empty() && !end_headers {
                    self.empty_frame(now)?;
                }
                let self_dependent = priority.is_some_and(|p| p.depends_on == stream);
                if end_headers {
                    return self.header_block(stream, block, end_stream, self_dependent, now, events);
                }
                if block.len() > self.max_block() {
                    return fatal(ErrorCode::EnhanceYourCalm, "header block too large");
                }
                self.block.clear();
                self.block.extend_from_slice(block);
                self.pending = Some(Pending { stream, end_stream, self_dependent, continuations: 0 });
                Ok(())
            }
            Frame::Continuation { stream: _, block, end_headers } => {
                let Some(p) = self.pending.as_mut() else {
                    return fatal(ErrorCode::Protocol, "CONTINUATION without a header block");
                };
                p.continuations += 1;
                let p = *p;
                if block.is_empty() && !end_headers {
                    self.empty_frame(now)?;
                }
                self.block.extend_from_slice(block);
                if !end_headers {
                    return Ok(());
                }
                self.pending = None;
                let gathered = std::mem::take(&mut self.block);
                let result = self.header_block(p.stream, &gathered, p.end_stream, p.self_dependent, now, events);
                if self.error.is_none() && gathered.capacity() <= IDLE_OUTPUT_CAPACITY {
                    self.block = gathered;
                    self.block.clear();
                }
                result
            }
            Frame::Priority { .. } | Frame::Unknown => Ok(()),
            Frame::RstStream { stream, code: _ } => {
                if self.is_idle(stream) {
                    return fatal(ErrorCode::Protocol, "RST_STREAM on an idle stream");
                }
                if let Some(i) = self.find(stream) {
                    self.remove(i);
                    self.peer_resets[self.peer_next] = stream;
                    self.peer_next = (self.peer_next + 1) % RECENT_RESETS;
                    events.push(Event::Reset { stream });
                    self.count_reset(now)?;
                }
                Ok(())
            }
            Frame::Settings { ack: true, .. } => {
                self.settings_acked = true;
                Ok(())
            }
            Frame::Settings { ack: false, params } => {
                if !self.settings_budget.take(now, SETTINGS_PER_SEC, SETTINGS_BURST) {
                    return fatal(ErrorCode::EnhanceYourCalm, "SETTINGS flood");
                }
                self.apply_settings(params)?;
                self.count_answer()?;
                frame::write_settings_ack(&mut self.out);
                Ok(())
            }
            Frame::Ping { ack: true, .. } => Ok(()),
            Frame::Ping { ack: false, payload } => {
                self.count_answer()?;
                frame::write_ping(&mut self.out, true, payload);
                Ok(())
            }
            Frame::GoAway { .. } => {
                self.goaway_received = true;
                self.last_taken.get_or_insert(self.max_stream);
                Ok(())
            }
            Frame::WindowUpdate { stream: 0, increment } => {
                if increment == 0 {
                    return fatal(ErrorCode::Protocol, "WINDOW_UPDATE of 0 on the connection");
                }
                self.send_window += i64::from(increment);
                if self.send_window > i64::from(frame::MAX_WINDOW) {
                    return fatal(ErrorCode::FlowControl, "connection window over 2^31-1");
                }
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                if self.is_idle(stream) {
                    return fatal(ErrorCode::Protocol, "WINDOW_UPDATE on an idle stream");
                }
                // A closed stream's: late, ignored (§6.9), no state kept.
                let Some(i) = self.find(stream) else { return Ok(()) };
                if increment == 0 {
                    return self.stream_error(stream, ErrorCode::Protocol, events);
                }
                let s = &mut self.streams[i];
                s.send_window += i64::from(increment);
                if s.send_window > i64::from(frame::MAX_WINDOW) {
                    return self.stream_error(stream, ErrorCode::FlowControl, events);
                }
                Ok(())
            }
        }
    }

    /// A client stream id not used yet, or a server one (we push none).
    fn is_idle(&self, stream: u32) -> bool {
        stream.is_multiple_of(2) || stream > self.max_stream
    }

    fn find(&self, stream: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == stream)
    }

    fn empty_frame(&mut self, now: Instant) -> Result<(), Fatal> {
        if self.empty_frames.take(now, EMPTY_FRAMES_PER_SEC, EMPTY_FRAMES_BURST) {
            Ok(())
        } else {
            fatal(ErrorCode::EnhanceYourCalm, "empty frames flood")
        }
    }

    fn count_reset(&mut self, now: Instant) -> Result<(), Fatal> {
        let per_sec = self.limits.max_concurrent_streams.max(RESETS_MIN_PER_SEC);
        let burst = per_sec.saturating_mul(RESETS_BURST_PER_STREAM);
        if self.resets.take(now, per_sec, burst) {
            Ok(())
        } else {
            fatal(ErrorCode::EnhanceYourCalm, "streams reset or refused too fast (rapid reset)")
        }
    }

    fn count_answer(&mut self) -> Result<(), Fatal> {
        self.answers_unwritten += 1;
        if self.answers_unwritten > MAX_UNWRITTEN_ANSWERS {
            return fatal(ErrorCode::EnhanceYourCalm, "control frames sent faster than their answers are read");
        }
        Ok(())
    }

    fn apply_settings(&mut self, params: &[u8]) -> Result<(), Fatal> {
        for (id, value) in frame::settings(params) {
            match id {
                frame::SETTINGS_HEADER_TABLE_SIZE => self.encoder.set_max_table_size(value.min(MAX_ENCODER_TABLE) as usize),
                frame::SETTINGS_ENABLE_PUSH if value > 1 => return fatal(ErrorCode::Protocol, "SETTINGS_ENABLE_PUSH not 0 or 1"),
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value > frame::MAX_WINDOW {
                        return fatal(ErrorCode::FlowControl, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1");
                    }
                    let delta = i64::from(value) - i64::from(self.peer_initial_window);
                    for s in &mut self.streams {
                        s.send_window += delta;
                        if s.send_window > i64::from(frame::MAX_WINDOW) {
                            return fatal(ErrorCode::FlowControl, "a stream window over 2^31-1");
                        }
                    }
                    self.peer_initial_window = value;
                }
                // We send frames of the minimum size whatever the client allows.
                frame::SETTINGS_MAX_FRAME_SIZE if !(frame::DEFAULT_MAX_FRAME_SIZE..=frame::MAX_MAX_FRAME_SIZE).contains(&value) => {
                    return fatal(ErrorCode::Protocol, "SETTINGS_MAX_FRAME_SIZE out of range");
                }
                // MAX_CONCURRENT_STREAMS bounds pushes, which we never
                // make; MAX_HEADER_LIST_SIZE is advice our small response
                // heads keep to; unknown settings are ignored (§6.5.2).
                _ => {}
            }
        }
        Ok(())
    }

    /// A new stream's receive window: the one we announced, or before the
    /// client has seen our SETTINGS the default it may still assume.
    fn initial_recv_window(&self) -> i64 {
        if self.settings_acked {
            i64::from(self.limits.initial_window)
        } else {
            i64::from(self.limits.initial_window.max(frame::DEFAULT_WINDOW))
        }
    }
}

/// Base64url (RFC 4648 §5) without padding, as HTTP2-Settings carries it
/// (trailing `=` and the standard alphabet's `+` `/` tolerated).
fn base64url_decode(text: &[u8]) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        } as u32)
    }
    let text = text.trim_ascii();
    let end = text.iter().rposition(|&c| c != b'=').map_or(0, |i| i + 1);
    let text = &text[..end];
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for group in text.chunks(4) {
        let mut bits = 0u32;
        for &c in group {
            bits = bits << 6 | sextet(c)?;
        }
        bits <<= 6 * (4 - group.len() as u32);
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests;
