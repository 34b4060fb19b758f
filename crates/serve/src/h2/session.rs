//! One HTTP/2 connection's streams, between the codec and the handler:
//! each request the codec gives is routed and answered as an HTTP/1.1
//! request is (same [`Site::handle`], same response plans, same access
//! log), and the answers are sent as DATA within the flow-control windows,
//! a piece of each stream in turn. No I/O here: the event loop and the
//! blocking driver feed it what they read, run its [`Task`]s their own way
//! and write [`Connection::output`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;

use warren_handler::gateway::Gateway;
use warren_handler::proxy_http::response::Interim;
use warren_handler::site::LogWriters;
use warren_handler::spool::{Spool, Spooled};
use warren_handler::{Body, ConnInfo, Outcome, RequestBody, Response, Site};
use warren_http::conn::received_body_within;
use warren_http::h2::{ConnError, Connection, ErrorCode, Event};
use warren_http::response::status_allows_body;
use warren_http::{BodyFraming, DateCache, HttpError, RequestHead};

use super::body_plan::{BodyPlan, Fed, Piece, Producer, Taken};
use crate::exchange::{panic_response, Exchange};
use crate::serve::{self, Carrier, Records, Router, Started};
use warren_mpm::scoreboard::ThreadSlot;

mod upload;
mod ws;
pub use upload::{Pulled, UploadRule};
pub use ws::{BackendReadiness, WsStream};

/// How much DATA a stream sends before the next stream has its turn.
const TURN: usize = 16 * 1024;
/// Output the session builds ahead of the socket: enough to fill a send
/// buffer, little enough that an idle-ish connection holds little.
pub const OUTPUT_AHEAD: usize = 64 * 1024;

/// What the driver lends the session while it works.
pub struct Ctx<'a> {
    pub site: &'a Site,
    pub logs: &'a mut LogWriters,
    pub date: &'a mut DateCache,
    /// The scoreboard slot requests are counted on.
    pub slot: &'a ThreadSlot,
}

/// Work a stream's answer needs that may block: the driver runs it where
/// blocking is fine and gives the response back with
/// [`Session::complete`].
pub struct Task {
    pub stream: u32,
    pub work: Work,
    pub head: RequestHead,
    pub info: ConnInfo,
    /// For the last filters, which run where the work ran (a streamed body
    /// is compressed as it is produced there).
    pub timing: warren_handler::filters::Timing,
    /// Set when the stream has ended without waiting for this (the client
    /// reset it, the connection went): work not yet begun is skipped, so
    /// that requests reset at once cost no application time.
    pub dropped: Arc<AtomicBool>,
}

pub enum Work {
    Blocking(Box<dyn FnOnce() -> Response + Send>),
    Gateway(Box<Gateway>, Option<Spooled>),
    /// An HTTP backend exchange whose body the driver relays as the
    /// client sends it ([`Session::take_upload`]).
    Upload(Box<Gateway>),
    /// Routing that runs a site owner's patterns ([`Outcome::OffLoop`]),
    /// then whatever it leads to, with the body read whole if there is one.
    Route(Option<Spooled>),
}

impl Task {
    /// Whether nobody waits for this work's answer any more.
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Runs the work and its last filters: the response to complete the
    /// stream with.
    pub fn run(self, site: &Site) -> Response {
        self.run_with_interims(site, &mut |_| {})
    }

    /// As [`Task::run`], a backend's interim answers (103 Early Hints)
    /// handed to `interim` as they come, for the driver to send ahead.
    pub fn run_with_interims(self, site: &Site, interim: &mut dyn FnMut(&Interim)) -> Response {
        self.run_inner(site, interim, None)
    }

    /// Runs a [`Work::Upload`] with the stream's body as its driver reads
    /// it (`body`, which also passes interim answers on).
    pub fn run_upload(self, site: &Site, body: &mut dyn RequestBody) -> Response {
        self.run_inner(site, &mut |_| {}, Some(body))
    }

    fn run_inner(self, site: &Site, interim: &mut dyn FnMut(&Interim), live: Option<&mut dyn RequestBody>) -> Response {
        let Task { work, head, info, timing, .. } = self;
        let resp = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match work {
            Work::Blocking(w) => w(),
            Work::Gateway(gw, body) => site.run_gateway(gw, &head, &info, &mut SpooledBody { body, length: body_length(&head), interim }),
            Work::Upload(gw) => match live {
                Some(body) => site.run_gateway(gw, &head, &info, body),
                // A driver's upload rule names only what it runs with the
                // body itself; had one come here, it would have no body.
                None => panic_response(site, &head, &info),
            },
            Work::Route(body) => match crate::serve::route_on_thread(site, &head, &info) {
                Outcome::Ready(r) => r,
                Outcome::Gateway(gw) => site.run_gateway(gw, &head, &info, &mut SpooledBody { body, length: body_length(&head), interim }),
                Outcome::Blocking(_) | Outcome::OffLoop => unreachable!("routing on a thread ends in an answer or a gateway"),
            },
        }))
        .unwrap_or_else(|_| panic_response(site, &head, &info));
        crate::exchange::last_filters(resp, Some(&head), timing, site)
    }
}

fn body_length(head: &RequestHead) -> Option<u64> {
    match head.framing {
        BodyFraming::Length(n) => Some(n),
        _ => None,
    }
}

/// A request body the session has read whole, for a FastCGI application.
struct SpooledBody<'a> {
    body: Option<Spooled>,
    length: Option<u64>,
    interim: &'a mut dyn FnMut(&Interim),
}

impl RequestBody for SpooledBody<'_> {
    fn length(&self) -> Option<u64> {
        self.length.or_else(|| self.body.as_ref().map(Spooled::len))
    }
    fn present(&self) -> bool {
        self.body.is_some()
    }
    fn read(&mut self, _buf: &mut [u8]) -> Result<usize, HttpError> {
        // Everything was handed over by take_spooled.
        Ok(0)
    }
    fn take_spooled(&mut self) -> Option<Spooled> {
        Some(self.body.take().unwrap_or(Spooled::None))
    }

    fn interim(&mut self, answer: &Interim) {
        (self.interim)(answer);
    }
}

struct Stream {
    id: u32,
    ex: Exchange,
    info: ConnInfo,
    state: State,
    /// When its body last moved, either way (H2StreamTimeout).
    moved: Instant,
    /// Shared with the [`Task`] working out its answer, if one is.
    dropped: Option<Arc<AtomicBool>>,
    /// An RFC 8441 WebSocket stream: its DATA is the tunnel's.
    ws: Option<Box<WsStream>>,
    /// A body relayed as it comes: its DATA waits for the exchange.
    upload: Option<upload::Upload>,
}

impl Stream {
    /// Whether what holds the stream up is the client: its body, or its
    /// window (a body a worker thread produces may wait on the application).
    fn waits_on_client(&self) -> bool {
        if self.upload.as_ref().is_some_and(upload::Upload::waits_on_client) {
            return true;
        }
        match &self.state {
            State::Receiving { .. } => true,
            State::Sending(BodyPlan::Channel { .. }) | State::Working => false,
            // Nothing queued: it waits on the application.
            State::Sending(BodyPlan::Fed(f)) => f.queued() > 0,
            State::Sending(_) => true,
            // Its idle limit is the tunnel's (ProxyWebsocketIdleTimeout).
            State::Tunnel => false,
        }
    }
}

enum State {
    /// The body is arriving; the gateway that takes it (or the routing
    /// off the loop that may lead to one) waits for all of it.
    Receiving { then: Outcome, spool: Spool },
    /// Its answer is being worked out by a [`Task`].
    Working,
    /// Its response head is out; the body goes as the windows allow.
    Sending(BodyPlan),
    /// An RFC 8441 tunnel under way: the driver moves its bytes
    /// ([`Session::pump_tunnel`]).
    Tunnel,
}

/// The streams of one HTTP/2 connection and the codec under them.
pub struct Session {
    pub codec: Connection,
    /// The connection's facts; each request gets a copy its client may
    /// change (mod_remoteip).
    pub info: ConnInfo,
    streams: Vec<Stream>,
    events: Vec<Event>,
    /// Requests taken on this connection, for `%k`.
    served: u32,
    /// Where the next turn at sending starts, so every stream has its go.
    next_turn: usize,
    piece: Vec<u8>,
    /// The most body bytes one stream sends in a turn (H2MaxDataFrameLen
    /// bounds it; the codec splits at the client's frame size anyway).
    turn: usize,
    /// Upgraded from HTTP/1.1, and the client's preface has not come yet:
    /// no DATA goes before it. A client reads the 101 and what follows in
    /// one buffer until it has switched, and sends its preface once it has
    /// (curl 7.88, Debian 12's, fails with "connection buffer size is too
    /// small to store data following HTTP Upgrade response header" when a
    /// window's worth of DATA lands behind the 101); the preface tells it
    /// has switched. Costs an upgraded stream one round trip.
    awaiting_preface: bool,
    /// RFC 8441 tunnels opened and not yet ended by the driver
    /// ([`Session::end_tunnel`]); a reset stream's stays counted until then.
    tunnels: usize,
    /// Which gateways the driver streams a body to ([`Session::set_upload_rule`]).
    upload_rule: Option<(UploadRule, bool)>,
}

impl Session {
    /// `max_data_frame_len`: H2MaxDataFrameLen (0: no bound of ours).
    pub fn new(codec: Connection, info: ConnInfo, max_data_frame_len: u32) -> Session {
        let turn = match max_data_frame_len {
            0 => TURN,
            n => TURN.min(n as usize),
        };
        Session { codec, info, streams: Vec::new(), events: Vec::new(), served: 0, next_turn: 0, piece: Vec::new(), turn, awaiting_preface: false, tunnels: 0, upload_rule: None }
    }

    /// No stream is open on either side: the connection is idle.
    pub fn is_idle(&self) -> bool {
        self.streams.is_empty() && self.codec.open_streams() == 0
    }

    /// Streams whose answer is out on a [`Task`] or a worker thread's pieces.
    pub fn has_work_out(&self) -> bool {
        self.streams.iter().any(|s| matches!(s.state, State::Working | State::Tunnel | State::Sending(BodyPlan::Channel { .. } | BodyPlan::Fed(_))))
    }

    /// Takes what the client sent; returns how much was used. Work that
    /// may block is appended to `tasks`.
    pub fn feed(&mut self, ctx: &mut Ctx, input: &[u8], now: Instant, tasks: &mut Vec<Task>) -> Result<usize, ConnError> {
        let mut events = std::mem::take(&mut self.events);
        let used = self.codec.feed(input, now, &mut events);
        // The codec takes the preface whole or not at all.
        if matches!(used, Ok(n) if n > 0) {
            self.awaiting_preface = false;
        }
        for event in events.drain(..) {
            match event {
                Event::Request { stream, head } => self.start(ctx, stream, head, tasks),
                Event::Refused { stream, error } => self.refuse(ctx, stream, &error),
                Event::Data { stream, data, end_stream } => {
                    if self.tunnel_data(stream, &data, end_stream) || self.upload_data(ctx, stream, &data, end_stream) {
                        continue;
                    }
                    self.codec.consumed(stream, data.len());
                    self.body_data(ctx, stream, &data, end_stream, tasks);
                }
                Event::Reset { stream } => self.drop_stream(ctx, stream),
            }
        }
        self.events = events;
        used
    }

    /// The HTTP/1.1 request that asked for the upgrade: stream 1.
    pub fn start_upgraded(&mut self, ctx: &mut Ctx, head: RequestHead, tasks: &mut Vec<Task>) {
        self.awaiting_preface = true;
        self.start(ctx, 1, head, tasks);
    }

    fn start(&mut self, ctx: &mut Ctx, id: u32, head: RequestHead, tasks: &mut Vec<Task>) {
        self.served += 1;
        let mut info = self.info;
        let Started { exchange: ex, outcome } = serve::start(ctx.site, ctx.slot, head, &mut info, Carrier::Http2, Router::Loop);
        let ws = ex.head.as_ref().is_some_and(RequestHead::is_h2_websocket).then(Box::default);
        self.streams.push(Stream { id, ex, info, state: State::Working, moved: Instant::now(), dropped: None, ws, upload: None });
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => return self.body_error(ctx, id, &e),
        };
        let head = self.head(id);
        // Only an application reads the body: once it is whole, or as it
        // comes where the driver streams it to an HTTP backend; routing off
        // the loop may lead to one. Any other answer goes now, the body
        // dropped as it comes.
        let takes_body = match &outcome {
            Outcome::Gateway(gw) => gw.takes_body(),
            Outcome::OffLoop => true,
            _ => false,
        };
        let has_body = takes_body && head.framing != BodyFraming::None;
        if has_body && matches!(&outcome, Outcome::Gateway(gw) if self.streams_upload(gw, head)) {
            // Its exchange starts now and takes the body as it comes.
            self.stream_mut(id).expect("just added").upload = Some(upload::Upload::default());
            self.settle(ctx, id, outcome, None, tasks);
        } else if has_body {
            self.stream_mut(id).expect("just added").state = State::Receiving { then: outcome, spool: Spool::default() };
        } else {
            self.settle(ctx, id, outcome, None, tasks);
        }
    }

    fn head(&self, id: u32) -> &RequestHead {
        let s = self.streams.iter().find(|s| s.id == id).expect("stream");
        s.ex.head.as_ref().expect("a stream's exchange has its head")
    }

    fn stream_mut(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    fn settle(&mut self, ctx: &mut Ctx, id: u32, outcome: Outcome, body: Option<Spooled>, tasks: &mut Vec<Task>) {
        let work = match outcome {
            Outcome::Ready(resp) => return self.respond(ctx, id, resp, false, Producer::Here),
            Outcome::Blocking(w) => Work::Blocking(w),
            Outcome::Gateway(gw) if self.stream_mut(id).is_some_and(|s| s.upload.is_some()) => Work::Upload(gw),
            Outcome::Gateway(gw) => Work::Gateway(gw, body),
            Outcome::OffLoop => Work::Route(body),
        };
        let Some(s) = self.stream_mut(id) else { return };
        s.state = State::Working;
        let head = s.ex.head.clone().expect("head");
        let timing = warren_handler::filters::Timing { received: s.ex.started, start: s.ex.start };
        let dropped = Arc::new(AtomicBool::new(false));
        s.dropped = Some(dropped.clone());
        tasks.push(Task { stream: id, work, head, info: s.info, timing, dropped });
    }

    fn body_data(&mut self, ctx: &mut Ctx, id: u32, data: &[u8], end: bool, tasks: &mut Vec<Task>) {
        let Some(s) = self.stream_mut(id) else { return };
        s.ex.bytes_received += data.len() as u64;
        s.moved = Instant::now();
        let State::Receiving { spool, .. } = &mut s.state else { return };
        let pushed = spool.push(data).map_err(warren_handler::fastcgi::spool_error);
        let received = s.ex.bytes_received;
        if let Err(e) = pushed.and_then(|_| received_body_within(received, s.ex.body_limit)) {
            self.body_error(ctx, id, &e);
            return;
        }
        if !end {
            return;
        }
        let State::Receiving { then, spool } = std::mem::replace(&mut s.state, State::Working) else { unreachable!("checked above") };
        match spool.finish() {
            Ok(body) => self.settle(ctx, id, then, Some(body), tasks),
            Err(e) => self.body_error(ctx, id, &warren_handler::fastcgi::spool_error(e)),
        }
    }

    /// A body the server will not take (too large, unreadable): the error
    /// answer; the codec resets the client's side once ours has ended.
    fn body_error(&mut self, ctx: &mut Ctx, id: u32, e: &HttpError) {
        let Some(s) = self.stream_mut(id) else { return };
        let resp = s.ex.body_error(e, ctx.site, &s.info);
        self.respond(ctx, id, resp, false, Producer::Here);
    }

    /// A request the codec refused (a header list over the limits, a
    /// field HTTP/2 forbids): answered on its stream, logged like an
    /// unparsable HTTP/1.1 request.
    fn refuse(&mut self, ctx: &mut Ctx, id: u32, e: &HttpError) {
        self.served += 1;
        let mut ex = Exchange::new(None, true, 0);
        ex.raw_line = b"(HTTP/2 request)".to_vec();
        let resp = ctx.site.protocol_error(e.status, &self.info, &e.reason);
        self.streams.push(Stream { id, ex, info: self.info, state: State::Working, moved: Instant::now(), dropped: None, ws: None, upload: None });
        self.respond(ctx, id, resp, false, Producer::Here);
    }

    /// What a stream's work that ran elsewhere than a [`Task`] came to (the
    /// event loop's FastCGI relay): an answer, with its last filters still
    /// to apply, or more work (an internal redirect, an ErrorDocument).
    pub fn settle_work(&mut self, ctx: &mut Ctx, id: u32, outcome: Outcome, tasks: &mut Vec<Task>) {
        if self.stream_mut(id).is_some_and(|s| matches!(s.state, State::Working)) {
            self.settle(ctx, id, outcome, None, tasks);
        }
    }

    /// The answer a [`Task`] worked out (its last filters applied), and
    /// the pieces of its body if a worker thread goes on producing them.
    pub fn complete(&mut self, ctx: &mut Ctx, id: u32, resp: Response, pieces: Option<Receiver<Piece>>) {
        if self.stream_mut(id).is_some_and(|s| matches!(s.state, State::Working)) {
            self.respond(ctx, id, resp, true, pieces.map_or(Producer::Here, Producer::Thread));
        }
    }

    /// An answer whose body the event loop reads from the application and
    /// hands over as it comes ([`Session::fed`]): its head goes now.
    pub fn respond_fed(&mut self, ctx: &mut Ctx, id: u32, resp: Response) {
        if self.stream_mut(id).is_some_and(|s| matches!(s.state, State::Working)) {
            self.respond(ctx, id, resp, false, Producer::Loop);
        }
    }

    /// An interim answer (103 Early Hints ...) ahead of the final one: a
    /// HEADERS frame without END_STREAM (RFC 9113 8.1), while the stream's
    /// answer is still being worked out.
    pub fn interim(&mut self, id: u32, answer: &Interim) {
        if self.stream_mut(id).is_some_and(|s| matches!(s.state, State::Working)) {
            let fields: Vec<(&str, &str)> = answer.fields.iter().map(|(n, v)| (&n[..], v.as_str())).collect();
            self.codec.send_headers(id, answer.status, &fields, false);
        }
    }

    /// Where the loop puts the body of a [`Session::respond_fed`] answer;
    /// None once the stream takes no more of it (reset, or a HEAD).
    pub fn fed(&mut self, id: u32) -> Option<&mut Fed> {
        let s = self.stream_mut(id)?;
        if matches!(&s.state, State::Sending(BodyPlan::Fed(f)) if f.queued() == 0) {
            // It waited on the application until now, not on the client:
            // H2StreamTimeout's clock for the client starts here.
            s.moved = Instant::now();
        }
        match &mut s.state {
            State::Sending(BodyPlan::Fed(f)) => Some(f),
            _ => None,
        }
    }

    /// Sends a response's head, and sets its body going.
    fn respond(&mut self, ctx: &mut Ctx, id: u32, resp: Response, filtered: bool, producer: Producer) {
        let Some(s) = self.streams.iter_mut().find(|s| s.id == id) else { return };
        let resp = if filtered { resp } else { s.ex.last_filters(resp, ctx.site) };
        let resp = ws::not_a_tunnel(ctx, s, resp);
        let is_head = s.ex.head.as_ref().is_some_and(|h| h.method() == "HEAD");
        let with_body = status_allows_body(resp.status);
        let mut fields: Vec<(&str, &str)> = Vec::with_capacity(resp.headers.len() + 3);
        let date = ctx.date.now().to_owned();
        fields.push(("date", &date));
        fields.push(("server", &ctx.site.server_header));
        for (name, value) in &resp.headers {
            fields.push((name, value));
        }
        let length = match &resp.body {
            Body::Stream { len: None, .. } => None,
            body => Some(body.len()),
        };
        let length_text = length.filter(|_| with_body).map(|n| n.to_string());
        if let Some(n) = &length_text {
            fields.push(("content-length", n));
        }
        let head_size: u64 = fields.iter().map(|(n, v)| (n.len() + v.len() + 4) as u64).sum::<u64>() + 13;
        let plan = if with_body && !is_head { BodyPlan::new(resp.body, producer) } else { None };
        self.codec.send_headers(id, resp.status, &fields, plan.is_none());
        drop(fields);
        s.ex.bytes_sent = head_size;
        s.ex.record(resp.status, resp.host, resp.filename, resp.headers, resp.filters);
        match plan {
            Some(plan) => s.state = State::Sending(plan),
            None => self.finish_stream(ctx, id, false),
        }
    }

    /// Sends DATA for the streams that have some, each a turn, until the
    /// windows close, the bodies wait, or [`OUTPUT_AHEAD`] is queued.
    /// Returns whether anything was queued.
    pub fn produce(&mut self, ctx: &mut Ctx) -> bool {
        let mut progress = false;
        if self.awaiting_preface {
            return progress;
        }
        let mut idle_turns = 0;
        while self.codec.output().len() < OUTPUT_AHEAD && !self.streams.is_empty() && idle_turns < self.streams.len() {
            let i = self.next_turn % self.streams.len();
            self.next_turn = i + 1;
            let id = self.streams[i].id;
            let window = self.codec.send_window(id);
            let State::Sending(plan) = &mut self.streams[i].state else {
                idle_turns += 1;
                continue;
            };
            if window == 0 {
                idle_turns += 1;
                continue;
            }
            match plan.take(window.min(self.turn), &mut self.piece) {
                Taken::Data { last } => {
                    let sent = self.codec.send_data(id, &self.piece, last);
                    debug_assert_eq!(sent, self.piece.len(), "within the window");
                    let s = &mut self.streams[i];
                    s.ex.body_bytes += sent as u64;
                    s.ex.bytes_sent += sent as u64;
                    s.moved = Instant::now();
                    progress = true;
                    idle_turns = 0;
                    if last {
                        self.finish_stream(ctx, id, false);
                    }
                }
                Taken::Wait => idle_turns += 1,
                Taken::Failed => {
                    // An end would claim the body whole: the client is told it is not.
                    self.codec.reset(id, ErrorCode::Internal);
                    self.finish_stream(ctx, id, true);
                    progress = true;
                }
            }
        }
        if self.piece.capacity() > TURN {
            self.piece = Vec::new();
        }
        progress
    }

    /// The client reset the stream, or the codec did: its work is dropped
    /// (a worker thread's pieces stop when their receiver goes).
    fn drop_stream(&mut self, ctx: &mut Ctx, id: u32) {
        if self.stream_mut(id).is_some() {
            self.finish_stream(ctx, id, true);
        }
    }

    fn finish_stream(&mut self, ctx: &mut Ctx, id: u32, aborted: bool) {
        let Some(i) = self.streams.iter().position(|s| s.id == id) else { return };
        let s = self.streams.swap_remove(i);
        if let Some(dropped) = &s.dropped {
            dropped.store(true, Ordering::Relaxed);
        }
        ctx.slot.metrics.h2_stream();
        serve::end(&mut Records { site: ctx.site, logs: ctx.logs, slot: ctx.slot }, &s.ex, &s.info, self.served, aborted);
        if self.streams.is_empty() {
            self.streams = Vec::new();
        }
    }

    /// Resets the streams whose body has not moved for `timeout`
    /// (H2StreamTimeout): a request body that stopped coming, an answer
    /// the client's window holds back. Streams waiting on an application
    /// are ProxyTimeout's. Returns how many were reset.
    pub fn expire_streams(&mut self, ctx: &mut Ctx, now: Instant, timeout: std::time::Duration) -> usize {
        let stalled: Vec<u32> = self
            .streams
            .iter()
            .filter(|s| s.waits_on_client() && now.saturating_duration_since(s.moved) >= timeout)
            .map(|s| s.id)
            .collect();
        for &id in &stalled {
            ctx.site.error_log.log(warren_config::LogLevel::Info, Some(self.info.useragent), &format!("HTTP/2: stream {id} made no progress for {} s (H2StreamTimeout); reset", timeout.as_secs()));
            self.codec.reset(id, ErrorCode::Cancel);
            self.finish_stream(ctx, id, true);
        }
        stalled.len()
    }

    /// When the stream that has waited longest on the client (to read
    /// its answer, or to send its body) will have waited `timeout`: the
    /// time [`Session::expire_streams`] must be called by.
    pub fn client_wait_deadline(&self, timeout: std::time::Duration) -> Option<Instant> {
        self.streams.iter().filter(|s| s.waits_on_client()).map(|s| s.moved + timeout).min()
    }

    /// The connection is going away (closed, timed out): every stream
    /// still open is logged as cut short.
    pub fn abort_all(&mut self, ctx: &mut Ctx) {
        while let Some(s) = self.streams.first() {
            let id = s.id;
            self.finish_stream(ctx, id, true);
        }
    }
}
