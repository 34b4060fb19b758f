//! One HTTP/1.1 connection without I/O: its input buffer, the head being
//! scanned, the body being decoded, the clocks of both, and what follows a
//! response. The driver reads into [`Connection::input_mut`] and reports
//! it with [`Connection::received`] (or hands bytes to
//! [`Connection::feed`]), then asks [`Connection::poll_head`] or
//! [`Connection::poll_body`]; when nothing comes it waits until
//! [`Connection::deadline`] and then does what [`Connection::timed_out`]
//! says.

use std::time::Instant;

use crate::body::BodyDecoder;
use crate::conn::{received_body_within, ConnRules, KeepAlivePolicy, Next, Phase};
use crate::head_scan::HeadScan;
use crate::read_timeout::ReadClock;
use crate::error::HttpError;
use crate::request::{parse_head_from, BodyFraming, RequestHead};

/// What [`Connection::poll_head`] found in the input.
#[derive(Debug)]
pub enum Poll {
    /// A whole head, taken off the input; what follows it stays there.
    Head(RequestHead),
    /// The input is not a request (or too large a one): answer with this
    /// status ([`Connection::refuse`]), then close.
    Error(HttpError),
    /// More input is needed.
    NeedMore,
}

/// What a connection whose [`Connection::deadline`] passed comes to.
#[derive(Debug)]
pub enum Expiry {
    /// A head was cut short by its clock: answer 408, then close.
    Head(HttpError),
    /// A body was cut short by its clock: answer 408, then close.
    Body(HttpError),
    /// A stopping server's idle connection: drain what may still arrive.
    Linger,
    /// Nothing was begun: close quietly.
    Close,
}

/// How far [`Connection::poll_body`] went.
#[derive(Debug)]
pub struct BodyStep {
    /// Input taken, framing included (for `%I`).
    pub used: usize,
    pub state: BodyState,
}

#[derive(Debug)]
pub enum BodyState {
    /// Wait for more input.
    More,
    /// The body is whole; what follows it stays in the input.
    Done,
    /// Bad framing (400) or over LimitRequestBody (413): answer, then close.
    Error(HttpError),
}

/// One HTTP/1.1 connection, from its first byte to its close.
#[derive(Debug)]
pub struct Connection {
    rules: ConnRules,
    /// Input not yet taken (a head in progress, a body's next bytes, a
    /// pipelined request).
    input: Vec<u8>,
    scan: HeadScan,
    phase: Phase,
    /// The clock of the head or body being read; none while idle between requests.
    clock: Option<ReadClock>,
    /// When the wait for the next request began.
    idle_since: Instant,
    /// Requests begun on the connection (heads and input that failed as one).
    served: u32,
    body: Option<BodyDecoder>,
    body_limit: u64,
    /// The client waits for `100 Continue` before it sends the body.
    continue_due: bool,
    /// The bytes travel in TLS records.
    tls: bool,
}

impl Connection {
    /// A new connection, accepted at `now`: its first head is timed from now.
    pub fn new(rules: ConnRules, now: Instant) -> Connection {
        Connection {
            rules,
            input: Vec::new(),
            scan: HeadScan::default(),
            phase: Phase::ReadingHead,
            clock: Some(rules.head_clock(now, 0)),
            idle_since: now,
            served: 0,
            body: None,
            body_limit: u64::MAX,
            continue_due: false,
            tls: false,
        }
    }

    /// The connection carries TLS: it never closes without lingering.
    pub fn over_tls(mut self, tls: bool) -> Connection {
        self.tls = tls;
        self
    }

    pub fn rules(&self) -> &ConnRules {
        &self.rules
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The driver has begun sending a response (`Writing`) or relaying an
    /// application's (`Proxying`); reading phases are this type's own.
    pub fn set_phase(&mut self, phase: Phase) {
        debug_assert!(matches!(phase, Phase::Writing | Phase::Proxying));
        self.phase = phase;
    }

    /// Requests begun so far, the one at hand included.
    pub fn served(&self) -> u32 {
        self.served
    }

    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// The input buffer, for a read straight into it (then
    /// [`Connection::received`]) or for what comes before HTTP (a PROXY
    /// header) or instead of it (HTTP/2).
    pub fn input_mut(&mut self) -> &mut Vec<u8> {
        &mut self.input
    }

    /// `n` bytes were read onto the input at `now`. True if they begin a
    /// kept-alive connection's next head (whose clock starts now).
    pub fn received(&mut self, n: usize, now: Instant) -> bool {
        if n == 0 {
            return false;
        }
        let mut begun = false;
        if self.phase == Phase::KeepAlive {
            self.phase = Phase::ReadingHead;
            self.clock = Some(self.rules.head_clock(now, 0));
            begun = true;
        }
        // A body relayed while it is read (`Proxying`) keeps its clock too.
        if matches!(self.phase, Phase::ReadingHead | Phase::ReadingBody) || (self.phase == Phase::Proxying && !self.body_done()) {
            if let Some(clock) = self.clock.as_mut() {
                clock.received(n as u64, now);
            }
        }
        begun
    }

    /// Appends `data`, read at `now`; see [`Connection::received`].
    pub fn feed(&mut self, data: &[u8], now: Instant) -> bool {
        self.input.extend_from_slice(data);
        self.received(data.len(), now)
    }

    /// Looks for a whole head at the start of the input, applying the head
    /// limits (431, 400) as far as it has come.
    pub fn poll_head(&mut self) -> Poll {
        if self.input.is_empty() {
            return Poll::NeedMore;
        }
        match parse_head_from(&mut self.scan, &self.input, &self.rules.limits) {
            Ok(Some((head, used))) => {
                self.input.drain(..used);
                self.scan = HeadScan::default();
                self.served += 1;
                Poll::Head(head)
            }
            Ok(None) => Poll::NeedMore,
            Err(e) => Poll::Error(e),
        }
    }

    /// When waiting for input gives up: the clock of the head or body being
    /// read, or KeepAliveTimeout (cut short when `stopping`) between requests.
    pub fn deadline(&self, stopping: bool) -> Instant {
        match &self.clock {
            Some(clock) => clock.deadline(),
            None => self.rules.keep_alive.idle_deadline(self.idle_since, stopping),
        }
    }

    /// What the connection comes to when [`Connection::deadline`] has
    /// passed with no more input.
    pub fn timed_out(&self, stopping: bool) -> Expiry {
        match (self.phase, &self.clock) {
            (Phase::ReadingHead, Some(clock)) if !self.input.is_empty() => Expiry::Head(clock.timeout_error()),
            (Phase::ReadingBody, Some(clock)) => Expiry::Body(clock.timeout_error()),
            (Phase::Proxying, Some(clock)) if !self.body_done() => Expiry::Body(clock.timeout_error()),
            (Phase::KeepAlive, _) if KeepAlivePolicy::idle_end(stopping) == Next::Linger => Expiry::Linger,
            _ => Expiry::Close,
        }
    }

    /// Whether the connection waits between requests with nothing read.
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::KeepAlive
    }

    /// The request at hand has a body framed so, limited by
    /// LimitRequestBody (`limit`), whose client may wait for `100
    /// Continue` (`expect_continue`). Its clock starts with
    /// [`Connection::time_body`].
    pub fn start_body(&mut self, framing: BodyFraming, limit: u64, expect_continue: bool) {
        self.body = Some(BodyDecoder::new(framing));
        self.body_limit = limit;
        self.phase = Phase::ReadingBody;
        self.continue_due = expect_continue;
    }

    /// Whether to send [`crate::response::CONTINUE`] now, before waiting
    /// for the body: once, and only if the client asked for it. The body
    /// is read whatever the answer will be (it is discarded if unused), so
    /// the client is told to go on rather than left waiting.
    pub fn continue_due(&mut self) -> bool {
        std::mem::take(&mut self.continue_due)
    }

    /// The body is timed from `now`, counting what came with the head.
    pub fn time_body(&mut self, now: Instant) {
        self.clock = Some(self.rules.body_clock(now, self.input.len()));
    }

    /// Whether a body was started and has been read whole.
    pub fn body_done(&self) -> bool {
        self.body.as_ref().is_none_or(BodyDecoder::is_done)
    }

    /// Decodes the body from at most `max_input` bytes of input, handing
    /// its payload to `sink` (never more bytes than were taken).
    pub fn poll_body(&mut self, max_input: usize, sink: &mut dyn FnMut(&[u8])) -> BodyStep {
        let Some(dec) = self.body.as_mut() else { return BodyStep { used: 0, state: BodyState::Done } };
        let take = self.input.len().min(max_input);
        let used = match dec.feed(&self.input[..take], sink) {
            Ok(used) => used,
            Err(e) => return BodyStep { used: 0, state: BodyState::Error(e) },
        };
        self.input.drain(..used);
        let state = match received_body_within(dec.received, self.body_limit) {
            Err(e) => BodyState::Error(e),
            Ok(()) if dec.is_done() => BodyState::Done,
            Ok(()) => BodyState::More,
        };
        BodyStep { used, state }
    }

    /// The response went out (`written` whole, or not) on an exchange that
    /// said `keep_alive`, maybe with input left unread (`unread_input`):
    /// what follows. Kept alive, the connection waits for its next head
    /// from `now`, or times a pipelined one that has begun from now.
    pub fn after_response(&mut self, written: bool, keep_alive: bool, unread_input: bool, now: Instant) -> Next {
        self.body = None;
        self.continue_due = false;
        // Over TLS the client's close_notify may come after the request:
        // closing with it unread would reset the connection and cut the
        // response short at the client, so a TLS connection always lingers.
        let next = Next::after_response(written, keep_alive, unread_input || self.tls);
        match next {
            Next::KeepAlive if self.input.is_empty() => {
                self.phase = Phase::KeepAlive;
                self.clock = None;
                self.idle_since = now;
            }
            Next::KeepAlive => {
                self.phase = Phase::ReadingHead;
                self.clock = Some(self.rules.head_clock(now, self.input.len()));
            }
            Next::Linger => self.linger(),
            Next::Close => {}
        }
        next
    }

    /// Half-closed: what still comes is drained, not parsed.
    pub fn linger(&mut self) {
        self.phase = Phase::Lingering;
    }

    /// The input did not make a request (bad, too large, too slow): it is
    /// answered as one that failed, counted, and dropped.
    pub fn refuse(&mut self) {
        self.served += 1;
        self.discard_input();
    }

    /// After an error answer, nothing left in the input can be trusted to
    /// start a request.
    pub fn discard_input(&mut self) {
        self.input.clear();
        self.scan = HeadScan::default();
        self.body = None;
        self.continue_due = false;
    }

    /// Frees the input buffer of an idle connection (idle connections hold none).
    pub fn release_input(&mut self) {
        if self.input.is_empty() {
            self.input = Vec::new();
        }
    }
}
