//! HTTP proxying (mod_proxy_http) on the event loop, for HTTP/1.1 clients:
//! a non-blocking connection to the backend joins the epoll set, the
//! request (head and a body the loop has read whole) goes out as one
//! write (or a body relayed as the client sends it: [`super::proxy_upload`]),
//! and the answer is fed to the handler's sans-IO
//! [`HttpRelay`] as it comes: a small answer is sent whole, a larger one
//! relayed to the client as it arrives, read from the backend only while
//! the client keeps up. Connections whose answer ended cleanly are kept in
//! the loop's own idle set ([`IdleBackends`]) for the next request, still
//! in the epoll set (taken again by the same client connection, the usual
//! case under keep-alive, one costs no epoll call at all); one the
//! backend closed meanwhile gets a replayable request sent again on a new
//! connection. ProxyTimeout is the connection's deadline on the loop's
//! timers. What the loop cannot do without blocking (TLS to the backend,
//! WebSocket upgrades, a body spooled to a file, a backend named by host
//! name) goes to a worker thread as before.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::time::Instant;

use nix::sys::epoll::{EpollEvent, EpollFlags};
use socket2::Socket;
use warren_config::{FcgiAddr, LogLevel};
use warren_handler::compress::StreamEncoder;
use warren_handler::gateway::error::GatewayError;
use warren_handler::gateway::Gateway;
use warren_handler::proxy_http::relay::{connect_timeout, Event, Failed, HttpRelay};
use warren_handler::spool::Spooled;
use warren_handler::{Body, Outcome, Site};
use warren_http::h1::{BodyFramer, ShortBody};
use warren_http::Phase;

use crate::exchange::{Chunk, Exchange, Output};
use crate::fastcgi::on_loop::FedByLoop;
use super::{EventLoop, TOKEN_H2_HTTP_UPSTREAM, TOKEN_H2_TUNNEL, TOKEN_HTTP_UPSTREAM, TOKEN_TUNNEL};

/// A relayed answer stops being read from the backend while this much
/// waits for the client.
const HIGH_WATER: u64 = 256 * 1024;

/// An exchange with an HTTP backend that the loop drives.
pub(super) struct ProxyRelay {
    pub(super) backend: Backend,
    pub(super) exchange: HttpRelay,
    /// Once the client's head is out: how the body is framed (and
    /// compressed) for it.
    framing: Option<(BodyFramer, Option<StreamEncoder>)>,
    /// When the backend has been silent too long (ProxyTimeout, or
    /// `connectiontimeout=` while connecting).
    pub(super) backend_due: Instant,
    /// The client waits for the backend's `100 Continue` until then; past
    /// it, warren's own tells it to go on.
    pub(super) continue_wait: Option<Instant>,
}

/// The loop's side of a connection to an HTTP backend, for an exchange of
/// an HTTP/1.1 client's or of an HTTP/2 stream's.
pub(super) struct Backend {
    pub(super) socket: Socket,
    /// False until a TCP connect in progress completes.
    pub(super) connected: bool,
    /// Kept from an earlier exchange: the backend may have closed it.
    pub(super) reused: bool,
    /// How much of the exchange's `request` has gone out.
    pub(super) sent: usize,
    /// Edge-triggered readiness, as last reported and not yet used up.
    readable: bool,
    pub(super) writable: bool,
    /// The backend closed its side.
    pub(super) eof: bool,
    /// The epoll said the backend hung up: after a short read, the end may
    /// still wait to be read, and no new edge will say so.
    hung_up: bool,
    /// A write failed: the backend took no more of the request (it may
    /// have answered, 413 ..., and closed before reading the whole body).
    /// Nothing more is sent; what it answered is read.
    refused: bool,
}

/// The loop's kept connections to HTTP backends.
#[derive(Default)]
pub(super) struct IdleBackends {
    /// Those of each worker ([`HttpOrigin::worker`](warren_config::proxy_http::HttpOrigin::worker),
    /// whose `max=` and `ttl=` they count under) to each backend address:
    /// an address is copied once, when first kept, not with each
    /// connection kept (a copy and a free per request).
    by_addr: Vec<((u64, FcgiAddr), Vec<IdleBackend>)>,
    /// Which batch of epoll events the loop is handling.
    batch: u64,
}

struct IdleBackend {
    since: Instant,
    socket: Socket,
    /// The token the epoll reports it under (of the client connection or
    /// HTTP/2 stream relay that used it last): it stays registered while
    /// idle (closing it removes it).
    token: u64,
    /// An event came for its token since it was kept, or it was not read
    /// dry: the backend may have closed it or sent bytes nobody asked for,
    /// so it is checked before use. Edge-triggered, whatever comes while
    /// it is idle brings an event, and the events of a batch are looked at
    /// before any is handled ([`IdleBackends::new_batch`]); a connection kept
    /// in an earlier batch and unmarked had nothing come before this batch
    /// began. For a replayable request the check (a recv per request) is
    /// then left out, as nginx leaves it out: what comes after the batch
    /// began is the race any check has between itself and the send.
    suspect: bool,
    /// The batch it was kept in: bytes that came since have no event yet.
    kept_in: u64,
}

impl IdleBackends {
    /// A kept connection of `worker` to `addr` younger than `ttl` and still open, and
    /// the token it is registered under: `token` itself if one has it.
    /// Unless `replayable`, each is checked open (else only a suspect one).
    fn take(&mut self, worker: u64, addr: &FcgiAddr, ttl: Option<std::time::Duration>, token: u64, replayable: bool) -> Option<(Socket, u64)> {
        let batch = self.batch;
        let list = &mut self.by_addr.iter_mut().find(|((w, a), _)| *w == worker && a == addr)?.1;
        if let Some(t) = ttl {
            list.retain(|c| c.since.elapsed() < t);
        }
        loop {
            let own = list.iter().rposition(|c| c.token == token);
            let c = list.swap_remove(own.or_else(|| list.len().checked_sub(1))?);
            if (replayable && !c.suspect && c.kept_in < batch) || idle_and_open(&c.socket) {
                return Some((c.socket, c.token));
            }
        }
    }

    /// Keeps `socket`, closing the oldest ones of `worker` to `addr` past `max`;
    /// `suspect` if it may hold bytes already (it is checked before use).
    fn put(&mut self, worker: u64, addr: &FcgiAddr, max: usize, socket: Socket, token: u64, suspect: bool) {
        if max == 0 {
            return;
        }
        let at = match self.by_addr.iter().position(|((w, a), _)| *w == worker && a == addr) {
            Some(at) => at,
            None => {
                self.by_addr.push(((worker, addr.clone()), Vec::new()));
                self.by_addr.len() - 1
            }
        };
        let list = &mut self.by_addr[at].1;
        while list.len() >= max {
            let oldest = list.iter().enumerate().min_by_key(|(_, c)| c.since).map(|(i, _)| i).expect("counted");
            list.swap_remove(oldest);
        }
        list.push(IdleBackend { since: Instant::now(), socket, token, suspect, kept_in: self.batch });
    }

    /// A new batch of epoll events, before any is handled: the kept
    /// connections registered under a backend token one of them names may
    /// have been closed or sent something.
    pub(super) fn new_batch(&mut self, events: &[EpollEvent]) {
        self.batch += 1;
        if self.by_addr.iter().all(|(_, list)| list.is_empty()) {
            return;
        }
        let backend_token = |t: u64| (TOKEN_HTTP_UPSTREAM..TOKEN_TUNNEL).contains(&t) || (TOKEN_H2_HTTP_UPSTREAM..TOKEN_H2_TUNNEL).contains(&t);
        for token in events.iter().map(EpollEvent::data).filter(|&t| backend_token(t)) {
            for c in self.by_addr.iter_mut().flat_map(|(_, list)| list.iter_mut()).filter(|c| c.token == token) {
                c.suspect = true;
            }
        }
    }
}

/// Neither closed by the backend nor sent on since its last answer.
fn idle_and_open(s: &Socket) -> bool {
    let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    matches!(s.peek(&mut b), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// What one pass of relaying came to.
pub(super) enum Step {
    Again,
    Wait,
    /// Failed; the client's head may have gone already.
    Failed(Failed),
    /// The client's body, relayed as it comes, is malformed, too large or
    /// too slow: its error answer (or the connection closed, if the
    /// backend's answer has begun).
    BadBody(warren_http::HttpError),
    ClientGone,
    /// The whole response, to send now.
    Whole(warren_handler::Response),
    /// The body is all relayed; the client may not have all of it yet.
    Ended,
}

impl EventLoop {
    /// Runs an HTTP backend exchange on the loop when it can; any other
    /// gateway plan (FastCGI, CGI, an HTTP exchange the loop cannot do
    /// without blocking) goes on as before.
    pub(super) fn proxy_http(&mut self, slot: usize, gw: Box<Gateway>) {
        let c = self.conns[slot].as_mut().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let body = match &c.body {
            Some(Spooled::File(..)) => None,
            Some(Spooled::Memory(b)) => Some(Some(b.as_slice())),
            Some(Spooled::None) | None => Some(None),
        };
        let Some(body) = body.filter(|_| Site::http_on_loop(&gw, head)) else {
            self.proxy(slot, gw);
            return;
        };
        let exchange = match self.site.http_relay(gw, head, &c.info, body) {
            Ok(x) => x,
            Err((gw, e)) => return self.http_failed_early(slot, &gw, &e),
        };
        c.body = None;
        self.backend_connect(slot, exchange, true);
    }

    /// Starts the exchange on a kept connection (if `kept_ok` and there is
    /// one), or on a new connection.
    pub(super) fn backend_connect(&mut self, slot: usize, exchange: HttpRelay, kept_ok: bool) {
        let backend = match self.backend_open(&exchange, TOKEN_HTTP_UPSTREAM + slot as u64, kept_ok) {
            Ok(b) => b,
            Err(e) => return self.http_failed_early(slot, &exchange.gateway, &e),
        };
        let wait = if backend.connected { exchange.gateway.timeout } else { connect_timeout(&exchange) };
        let c = self.conns[slot].as_mut().expect("conn");
        let backend_due = Instant::now() + wait;
        c.proxy_relay = Some(Box::new(ProxyRelay { backend, exchange, framing: None, backend_due, continue_wait: None }));
        c.h1.set_phase(Phase::Proxying);
        c.deadline = backend_due;
    }

    /// A connection for `exchange`, watched under `token`: a kept one (if
    /// `kept_ok`, the backend's `reuse` allowing), else a new one.
    pub(super) fn backend_open(&mut self, exchange: &HttpRelay, token: u64, kept_ok: bool) -> Result<Backend, GatewayError> {
        let kept = if kept_ok && exchange.gateway.backend.reuse { self.proxy_idle.take(exchange.origin().worker, &exchange.gateway.backend.addr, exchange.origin().ttl, token, exchange.replayable) } else { None };
        let reused = kept.is_some();
        let (socket, connected, registered) = match kept {
            Some((s, at)) => (s, true, Some(at)),
            None => match crate::fastcgi::on_loop::connect_by_address(&exchange.gateway.backend.addr) {
                Ok((s, connected)) => (s, connected, None),
                Err(e) => return Err(exchange.connect_failed(&self.site, &e)),
            },
        };
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
        let mut event = EpollEvent::new(flags, token);
        let watched = match registered {
            Some(at) if at == token => Ok(()),
            Some(_) => self.epoll.modify(socket.as_fd(), &mut event),
            None => self.epoll.add(socket.as_fd(), event),
        };
        if let Err(e) = watched {
            return Err(GatewayError { status: 503, why: format!("proxy: HTTP: cannot watch the connection to {}: {e}", exchange.gateway.backend_name()) });
        }
        Ok(Backend { socket, connected, reused, sent: 0, readable: false, writable: true, eof: false, hung_up: false, refused: false })
    }

    /// The exchange is over (or given up): its connection goes back to the
    /// idle set, under `token`, if it may serve another request, else it is closed.
    pub(super) fn backend_release(&mut self, backend: Backend, exchange: &HttpRelay, token: u64) {
        // A request not sent whole leaves the backend waiting for the rest;
        // a hang-up already reported brings no new edge once kept.
        if exchange.reusable() && !backend.eof && !backend.hung_up && backend.sent == exchange.request.len() {
            // It stays in the epoll under `token`. Should the backend close
            // it while idle, the event finds that token's relay of the
            // moment, if any, which reads once and finds nothing.
            // Unset, the cap follows the client connections the loop carries
            // (each relays at most one exchange), so that a child serving
            // more clients than a fixed cap does not reconnect for each
            // request past it, and a burst's connections go as it ends.
            let max = exchange.origin().max_idle.unwrap_or(self.open.max(self.threads));
            // Not read dry (the answer's end filled the last read): bytes
            // after it may wait there, and no edge will come for them.
            let suspect = backend.readable;
            self.proxy_idle.put(exchange.origin().worker, &exchange.gateway.backend.addr, max, backend.socket, token, suspect);
        } else {
            let _ = self.epoll.delete(backend.socket.as_fd());
        }
    }

    pub(super) fn http_upstream_ready(&mut self, slot: usize, flags: EpollFlags) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else { return };
        let Some(r) = c.proxy_relay.as_mut() else { return };
        r.backend.note(flags);
        if c.h1.phase() == Phase::Proxying {
            self.drive(slot);
        }
    }

    /// Relays as far as it can go without blocking. True when the
    /// connection has moved on to another phase and should be driven on.
    pub(super) fn relay_http(&mut self, slot: usize) -> bool {
        loop {
            match self.http_step(slot) {
                Step::Again => {}
                Step::Wait => {
                    self.relay_deadline(slot);
                    return false;
                }
                Step::BadBody(e) => return self.upload_refused(slot, e),
                Step::ClientGone => {
                    self.conns[slot].as_mut().expect("conn").proxy_relay = None;
                    self.abort(slot);
                    return false;
                }
                Step::Whole(resp) => {
                    self.upload_cut(slot);
                    self.backend_done(slot);
                    self.respond(slot, resp);
                    return true;
                }
                Step::Ended => {
                    self.upload_cut(slot);
                    self.backend_done(slot);
                    let c = self.conns[slot].as_mut().expect("conn");
                    c.h1.set_phase(Phase::Writing);
                    c.deadline = Instant::now() + self.rules.timeout;
                    return true;
                }
                Step::Failed(f) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let r = c.proxy_relay.as_mut().expect("relay");
                    if r.backend.replay(&mut r.exchange, &f, &self.site, &c.info) {
                        let r = c.proxy_relay.take().expect("relay");
                        let _ = self.epoll.delete(r.backend.socket.as_fd());
                        self.backend_connect(slot, r.exchange, false);
                        return true;
                    }
                    return self.http_failed(slot, &f.error);
                }
            }
        }
    }

    /// One pass: the client's output, the request to the backend, and what
    /// the backend has sent.
    fn http_step(&mut self, slot: usize) -> Step {
        let pulled = match self.pull_body(slot) {
            Ok(pulled) => pulled,
            Err(failed) => return failed.into(),
        };
        let c = self.conns[slot].as_mut().expect("conn");
        let r = c.proxy_relay.as_mut().expect("relaying");
        if !c.out.is_empty() {
            match c.out.flush(&c.stream) {
                Ok(_) => r.backend_due = Instant::now() + r.exchange.gateway.timeout,
                Err(_) => return Step::ClientGone,
            }
            if c.out.pending() > HIGH_WATER {
                return Step::Wait;
            }
        }
        match r.backend.io(&mut r.exchange, &self.site, &mut self.scratch_in) {
            Err(f) => return Step::Failed(f),
            Ok(Io::Blocked) => return Step::Wait,
            Ok(Io::Moved) => r.backend_due = Instant::now() + r.exchange.gateway.timeout,
            Ok(Io::Still) => {}
        }
        // Each event is handled as it comes (none are gathered: a Vec of
        // them was an allocation of over 1 KB per answer).
        let mut progress = false;
        loop {
            let head = c.req.as_ref().and_then(|x| x.head.as_ref()).expect("head");
            let event = match r.exchange.next_event(&self.site, head, &c.info) {
                Ok(None) => break,
                Ok(Some(e)) => e,
                Err(f) => return Step::Failed(f),
            };
            progress = true;
            let ex = c.req.as_mut().expect("request in flight");
            match event {
                Event::Interim(answer) => c.out.interim(&answer.to_h1()),
                Event::Continue => {
                    // The client's body is timed from the go-ahead.
                    c.out.interim(warren_http::response::CONTINUE);
                    c.h1.time_body(Instant::now());
                    r.continue_wait = None;
                }
                Event::Whole(resp) => return Step::Whole(resp),
                Event::Head(mut resp, len) => {
                    resp.body = Body::Stream { source: Box::new(FedByLoop), len };
                    c.out.encode(ex, resp, &self.site, &mut self.date, &mut self.scratch_out);
                    let mut st = c.out.streaming.take().expect("a streamed body");
                    r.framing = Some((st.framer, st.source.take_encoder()));
                }
                Event::Data(d) => {
                    let (framer, encoder) = r.framing.as_mut().expect("data comes after the head");
                    queue_piece(&mut c.out, framer, encoder, ex, d);
                }
                Event::End => {
                    let (framer, encoder) = r.framing.as_mut().expect("the end comes after the head");
                    if let Some(mut encoder) = encoder.take() {
                        let mut last = Vec::new();
                        let _ = encoder.finish(&mut last);
                        queue_piece(&mut c.out, framer, &mut None, ex, last);
                    }
                    match framer.finish() {
                        Err(ShortBody) => {
                            let why = format!("proxy: HTTP: {} sent less than its Content-Length", r.exchange.gateway.backend_name());
                            return Step::Failed(Failed { error: GatewayError { status: 502, why }, nothing_yet: false });
                        }
                        Ok(last) if !last.is_empty() => {
                            c.out.queue.push_back(Chunk::Bytes(last.to_vec()));
                            ex.bytes_sent += last.len() as u64;
                        }
                        Ok(_) => {}
                    }
                    return Step::Ended;
                }
            }
        }
        if progress || r.takes_more_body(pulled || c.readable) || r.backend.more_to_read() {
            Step::Again
        } else {
            Step::Wait
        }
    }

    /// The exchange is over: its connection goes back to the idle set if
    /// it may serve another request, else it is closed.
    fn backend_done(&mut self, slot: usize) {
        let c = self.conns[slot].as_mut().expect("conn");
        let Some(r) = c.proxy_relay.take() else { return };
        self.backend_release(r.backend, &r.exchange, TOKEN_HTTP_UPSTREAM + slot as u64);
    }

    /// The exchange failed: an error answer if the client's head has not
    /// gone yet, else the client's connection is closed (its body cut
    /// short). True when the connection should be driven on.
    fn http_failed(&mut self, slot: usize, e: &GatewayError) -> bool {
        let c = self.conns[slot].as_mut().expect("conn");
        let r = c.proxy_relay.take().expect("relay");
        if r.exchange.streaming() {
            self.site.hosts[r.exchange.gateway.host].error_log.error(Some(c.info.useragent), &e.why);
            self.abort(slot);
            return false;
        }
        self.http_failed_early(slot, &r.exchange.gateway, e);
        true
    }

    /// The error answer of an exchange whose answer has not begun.
    pub(super) fn http_failed_early(&mut self, slot: usize, gw: &Gateway, e: &GatewayError) {
        self.upload_cut(slot);
        let c = self.conns[slot].as_mut().expect("conn");
        c.proxy_relay = None;
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let page = self.site.gateway_failed(gw, head, &c.info, e);
        let outcome = self.site.follow_error_document(Outcome::Ready(page), head, &c.info);
        self.settle(slot, outcome);
    }

    /// ProxyTimeout ran out: 504, or the connection closed if the answer
    /// had begun.
    pub(super) fn http_relay_expired(&mut self, slot: usize) {
        if let Some(drive_on) = self.upload_expired(slot) {
            if drive_on {
                self.drive(slot);
            }
            return;
        }
        let c = self.conns[slot].as_ref().expect("conn");
        let e = c.proxy_relay.as_ref().expect("relay").exchange.timed_out();
        if self.http_failed(slot, &e) {
            self.drive(slot);
        }
    }
}

/// What one pass of [`Backend::io`] came to.
pub(super) enum Io {
    /// Connecting or sending: nothing to do until the socket is ready.
    Blocked,
    /// The connect completed, or bytes went or came: the backend is alive
    /// (its timeout starts again).
    Moved,
    /// Nothing new from the backend.
    Still,
}

impl Backend {
    /// Takes what the epoll reported.
    pub(super) fn note(&mut self, flags: EpollFlags) {
        let ready = super::readiness::Readiness::of(flags);
        self.readable |= ready.readable;
        self.hung_up |= ready.hung_up;
        self.writable |= ready.writable;
    }

    /// More may be read now.
    pub(super) fn more_to_read(&self) -> bool {
        self.readable && !self.eof
    }

    /// The connect's end, the request out, and one read of the answer fed
    /// to `exchange`.
    pub(super) fn io(&mut self, exchange: &mut HttpRelay, site: &Site, scratch: &mut [u8]) -> Result<Io, Failed> {
        let mut moved = false;
        if !self.connected {
            if !self.writable {
                return Ok(Io::Blocked);
            }
            match self.socket.take_error() {
                // An idle connection's event under this token may have
                // said "writable": only a peer proves the connect done.
                Ok(None) if self.socket.peer_addr().is_err() => {
                    self.writable = false;
                    return Ok(Io::Blocked);
                }
                Ok(None) => self.connected = true,
                Ok(Some(e)) | Err(e) => {
                    let error = exchange.connect_failed(site, &e);
                    return Err(Failed { error, nothing_yet: false });
                }
            }
            moved = true;
        }
        let mut blocked = false;
        let mut refusal = None;
        while !self.refused && self.sent < exchange.request.len() {
            match (&self.socket).write(&exchange.request[self.sent..]) {
                Ok(n) => {
                    self.sent += n;
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                    blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Its answer may be there already: it is read first.
                    self.refused = true;
                    self.writable = false;
                    self.readable = true;
                    refusal = Some(e);
                    break;
                }
            }
        }
        if self.sent == exchange.request.len() && !exchange.replayable {
            // What went out is never sent again: a streamed body's buffer
            // holds only what waits for the backend.
            exchange.request.clear();
            self.sent = 0;
        }
        // The answer is read even while the request waits to go: a backend
        // may answer (413 ...) before it has read the whole body.
        let read = if self.more_to_read() { self.read_once(exchange, scratch) } else { Ok(false) };
        if let Some(e) = refusal {
            let failed = exchange.send_failed(&e);
            if failed.nothing_yet {
                return Err(failed);
            }
        }
        moved |= read?;
        Ok(if moved {
            Io::Moved
        } else if blocked {
            Io::Blocked
        } else {
            Io::Still
        })
    }

    /// One read of the answer, fed to `exchange`: true if bytes came.
    fn read_once(&mut self, exchange: &mut HttpRelay, scratch: &mut [u8]) -> Result<bool, Failed> {
        match (&self.socket).read(scratch) {
            Ok(0) => {
                self.eof = true;
                exchange.closed(None)?;
            }
            Ok(n) => {
                exchange.feed(&scratch[..n]);
                if n < scratch.len() && !self.hung_up {
                    self.readable = false;
                }
                return Ok(true);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                self.eof = true;
                exchange.closed(Some(&e))?;
            }
        }
        Ok(false)
    }

    /// Whether `exchange`, failed with `f`, is to be sent again on a new
    /// connection: a kept one the backend had closed before any of the
    /// answer came, and a request that may be replayed. Then it is ready
    /// to go again.
    pub(super) fn replay(&self, exchange: &mut HttpRelay, f: &Failed, site: &Site, info: &warren_handler::ConnInfo) -> bool {
        if !(f.nothing_yet && self.reused && exchange.replayable) {
            return false;
        }
        site.hosts[exchange.gateway.host].error_log.log(LogLevel::Debug, Some(info.useragent), &format!("proxy: HTTP: kept connection to {} was closed; sending the request on a new one", exchange.gateway.backend_name()));
        exchange.restart();
        true
    }
}

/// Frames (and compresses) a piece of the relayed body and queues it for the client.
fn queue_piece(out: &mut Output, framer: &mut BodyFramer, encoder: &mut Option<StreamEncoder>, ex: &mut Exchange, mut data: Vec<u8>) {
    if !framer.sends() || data.is_empty() {
        return;
    }
    if let Some(e) = encoder.as_mut() {
        let mut encoded = Vec::with_capacity(data.len() / 2 + 64);
        // Encoding into memory fails only on a broken encoder state; the
        // client then gets what was encoded so far and a cut body.
        if e.piece(&data, &mut encoded).is_err() {
            *encoder = None;
        }
        data = encoded;
        if data.is_empty() {
            return;
        }
    }
    let (payload, framed) = framer.frame(data);
    ex.body_bytes += payload;
    ex.bytes_sent += framed.len() as u64;
    out.queue.push_back(Chunk::Bytes(framed));
}
