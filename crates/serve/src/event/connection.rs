//! The HTTP connection on the loop: a [`Conn`] is driven through its
//! [`Phase`]s (head, body, response, keep-alive, lingering close) as far as
//! it can go without blocking. The HTTP/1.1 rules are its
//! [`warren_http::h1::Connection`]'s; this moves the bytes and the answers.

use std::io::{self, Write};
use crate::client_stream::ClientStream;
use std::time::{Duration, Instant};

use nix::sys::epoll::EpollFlags;
use warren_handler::gateway::Gateway;
use warren_handler::spool::{Spool, Spooled};
use warren_handler::{ConnInfo, Outcome, Response, Site};
use warren_http::h1::{BodyState, Connection, Poll};
use warren_http::response::CONTINUE;
use warren_http::{BodyFraming, HttpError, Next, Phase, RequestHead, LINGER};

use crate::client_stream::{is_plain_http, PLAIN_HTTP_REASON};
use crate::exchange::{Exchange, Output};
use crate::serve::{self, Carrier, Records, Router, Started};
use crate::fastcgi::on_loop::Upstream;
use crate::proxy_header::{self, Got};
use super::thread_pool::Job;
use super::EventLoop;

pub(super) struct Conn {
    pub(super) stream: ClientStream,
    pub(super) info: ConnInfo,
    pub(super) generation: u64,
    /// HTTP/1.1's state: input, head, body, clocks, the phase, what follows a response.
    pub(super) h1: Connection,
    /// Not the loop's to drive for now: its work is on a worker thread, or
    /// it waits for a pool's child (events meanwhile are set aside).
    pub(super) on_hold: bool,
    pub(super) readable: bool,
    pub(super) out: Output,
    /// When the loop next looks at the connection: the input's deadline
    /// while reading, Timeout while writing, the backend's while proxying.
    pub(super) deadline: Instant,
    pub(super) req: Option<Exchange>,
    /// The handler's answer, decided at the head, waiting for the body to
    /// be read (and discarded).
    pub(super) pending: Option<Outcome>,
    /// A FastCGI exchange relayed on the loop (`Phase::Proxying`).
    pub(super) upstream: Option<Box<Upstream>>,
    /// An HTTP backend exchange relayed on the loop (`Phase::Proxying`).
    pub(super) proxy_relay: Option<Box<super::proxy_relay::ProxyRelay>>,
    /// A pool request parked until one of the pool's children is free.
    pub(super) parked: Option<Box<Gateway>>,
    /// A FastCGI request's body as it arrives, and once it is whole: the
    /// application is given the request only then.
    pub(super) spool: Option<Spool>,
    pub(super) body: Option<Spooled>,
    /// A PROXY protocol header must come first (RemoteIPProxyProtocol),
    /// and has not yet.
    pub(super) proxy_header: bool,
    /// The connection speaks HTTP/2: its streams, driven by `super::h2`.
    pub(super) h2: Option<Box<super::h2::H2Conn>>,
    /// The connection is a WebSocket tunnel carried by the loop.
    pub(super) tunnel: Option<Box<warren_handler::proxy_http::tunnel::Open>>,
}

impl EventLoop {
    pub(super) fn ready(&mut self, slot: usize, flags: EpollFlags) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else { return };
        if c.tunnel.is_some() {
            self.tunnel_ready(slot, flags, false);
            return;
        }
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
            c.readable = true;
        }
        if c.on_hold {
            return;
        }
        if c.h2.is_some() {
            if flags.contains(EpollFlags::EPOLLOUT) {
                self.h2_writable(slot);
            } else {
                self.drive_h2(slot);
            }
            return;
        }
        if flags.contains(EpollFlags::EPOLLOUT) && c.stream.is_tls() && c.h1.phase() != Phase::Writing {
            // Handshake records a full socket held back.
            if c.stream.flush_pending().is_err() {
                self.close(slot);
                return;
            }
        }
        self.drive(slot);
    }

    /// Advances one connection as far as it can go without blocking.
    pub(super) fn drive(&mut self, slot: usize) {
        loop {
            let Some(c) = self.conns[slot].as_mut() else { return };
            if c.on_hold {
                return;
            }
            if c.h2.is_some() {
                self.drive_h2(slot);
                return;
            }
            match c.h1.phase() {
                Phase::Writing => match c.out.flush(&c.stream) {
                    Ok(true) => {
                        if !self.finish_response(slot) {
                            return;
                        }
                    }
                    Ok(false) => return,
                    Err(_) => {
                        self.abort(slot);
                        return;
                    }
                },
                Phase::Proxying => {
                    let relayed = if c.proxy_relay.is_some() { self.relay_http(slot) } else { self.relay(slot) };
                    if !relayed {
                        return;
                    }
                }
                Phase::Lingering => {
                    match drain(c) {
                        Ok(true) | Err(_) => self.close(slot),
                        Ok(false) => {}
                    }
                    return;
                }
                Phase::KeepAlive | Phase::ReadingHead => {
                    if c.proxy_header {
                        match proxy_header::take(&self.site, c.h1.input_mut(), &mut c.info) {
                            Got::Done => {
                                c.proxy_header = false;
                                continue;
                            }
                            Got::More => {}
                            Got::Bad => {
                                self.close(slot);
                                return;
                            }
                        }
                    } else if let Some(is_h2) = self.protocol(slot) {
                        if is_h2 {
                            self.start_h2(slot, None);
                            continue;
                        }
                        let c = self.conns[slot].as_mut().expect("conn");
                        match c.h1.poll_head() {
                            Poll::Head(head) => {
                                self.start_request(slot, head);
                                continue;
                            }
                            Poll::Error(e) => {
                                self.protocol_error(slot, e);
                                continue;
                            }
                            Poll::NeedMore => {}
                        }
                    }
                    match self.read_more(slot) {
                        ReadResult::Data => continue,
                        ReadResult::Blocked => return,
                        ReadResult::Closed => {
                            self.close(slot);
                            return;
                        }
                        ReadResult::PlainHttp => {
                            self.protocol_error(slot, HttpError::new(400, PLAIN_HTTP_REASON));
                            continue;
                        }
                    }
                }
                Phase::ReadingBody => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let req = c.req.as_mut().expect("request in flight");
                    // A FastCGI request's body is kept; any other is dropped.
                    let mut spool_failed = None;
                    let step = c.h1.poll_body(usize::MAX, &mut |d| {
                        if let Some(s) = c.spool.as_mut().filter(|_| spool_failed.is_none()) {
                            spool_failed = s.push(d).err();
                        }
                    });
                    req.bytes_received += step.used as u64;
                    if let Some(e) = spool_failed {
                        self.body_error(slot, warren_handler::fastcgi::spool_error(e));
                        continue;
                    }
                    match step.state {
                        BodyState::Error(e) => {
                            self.body_error(slot, e);
                            continue;
                        }
                        BodyState::Done => {
                            self.dispatch(slot);
                            continue;
                        }
                        BodyState::More => {}
                    }
                    match self.read_more(slot) {
                        ReadResult::Data => continue,
                        ReadResult::Blocked => return,
                        ReadResult::Closed | ReadResult::PlainHttp => {
                            self.abort(slot);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Whether the connection speaks HTTP/2, before its first request is
    /// parsed; None: not known until more is read.
    fn protocol(&self, slot: usize) -> Option<bool> {
        let c = self.conns[slot].as_ref().expect("conn");
        if c.h1.served() > 0 {
            return Some(false);
        }
        crate::h2::detect(&c.stream, c.h1.input())
    }

    pub(super) fn read_more(&mut self, slot: usize) -> ReadResult {
        let c = self.conns[slot].as_mut().expect("conn");
        if !c.readable {
            return ReadResult::Blocked;
        }
        match c.stream.read(&mut self.scratch_in) {
            Ok(0) => ReadResult::Closed,
            Ok(n) => {
                // A short read drained the socket; the next edge will tell us of more.
                if n < self.scratch_in.len() && !c.stream.has_buffered_input() {
                    c.readable = false;
                }
                c.h1.feed(&self.scratch_in[..n], Instant::now());
                if matches!(c.h1.phase(), Phase::ReadingHead | Phase::ReadingBody) {
                    c.deadline = c.h1.deadline(self.stopping);
                }
                ReadResult::Data
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                ReadResult::Blocked
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => ReadResult::Data,
            Err(e) if is_plain_http(&e) => ReadResult::PlainHttp,
            Err(_) => ReadResult::Closed,
        }
    }

    /// A request head has arrived: route it at once. A FastCGI request
    /// without a body goes to its application now; with one, once the loop
    /// has read the body whole (a slow client holds no thread and no pool
    /// child). Any other answer waits for the body to be read and dropped.
    fn start_request(&mut self, slot: usize, head: RequestHead) {
        let c = self.conns[slot].as_mut().expect("conn");
        if let Some(codec) = crate::h2::upgrade(&self.rules, &c.stream, &head, c.h1.input()) {
            // Nothing else is queued: the last response went out before this
            // request was read, so 101 goes whole or the client is gone.
            if !matches!(c.stream.send(crate::h2::SWITCHING, false), Ok(n) if n == crate::h2::SWITCHING.len()) {
                self.close(slot);
                return;
            }
            self.start_h2(slot, Some((codec, head)));
            return;
        }
        c.stream.note_tls(&self.site, &mut c.info, self.sb.thread(self.slot, 0));
        let carrier = Carrier::Http1 { policy: &self.rules.keep_alive, served: c.h1.served(), stopping: self.stopping };
        // The loop's requests are counted on the child's first worker slot.
        let Started { exchange: req, outcome } = serve::start(&self.site, self.sb.thread(self.slot, 0), head, &mut c.info, carrier, Router::Loop);
        c.req = Some(req);
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                self.body_error(slot, e);
                return;
            }
        };
        if let Outcome::OffLoop = outcome {
            // A site owner's patterns: routed on a thread, where a slow one
            // holds this request only ([`super::completions`] goes on from `routed`).
            let head = c.req.as_ref().and_then(|r| r.head.clone()).expect("head");
            c.on_hold = true;
            c.deadline = Instant::now() + Duration::from_secs(3600);
            self.pool.submit(slot, c.generation, Job::Route(Box::new((head, c.info))));
            return;
        }
        self.routed(slot, outcome);
    }

    /// The request's route is known: answer it now, or read its body first.
    pub(super) fn routed(&mut self, slot: usize, outcome: Outcome) {
        let c = self.conns[slot].as_mut().expect("conn");
        let framing = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head").framing;
        if framing == BodyFraming::None {
            self.settle(slot, outcome);
            return;
        }
        let c = self.conns[slot].as_mut().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let outcome = match outcome {
            Outcome::Gateway(mut gw) => {
                // The backend's 100 Continue is what lets the client send:
                // a thread sends the head and reads the body after it.
                // Relayed on the loop, 100 Continue included.
                if Site::streams_body(&gw, head) {
                    return self.proxy_upload(slot, gw, framing);
                }
                if self.site.forwards_continue(&mut gw, head) {
                    return self.proxy(slot, gw);
                }
                Outcome::Gateway(gw)
            }
            outcome => outcome,
        };
        self.routed_body(slot, outcome, framing)
    }

    /// The body is read on the loop before the request is answered.
    fn routed_body(&mut self, slot: usize, outcome: Outcome, framing: BodyFraming) {
        let c = self.conns[slot].as_mut().expect("conn");
        if matches!(&outcome, Outcome::Gateway(gw) if gw.takes_body()) {
            c.spool = Some(Spool::default());
        }
        c.pending = Some(outcome);
        let req = c.req.as_ref().expect("req");
        c.h1.start_body(framing, req.body_limit, req.head.as_ref().expect("head").expect_continue);
        if c.h1.continue_due() {
            let _ = (&c.stream).write(CONTINUE);
        }
        c.h1.time_body(Instant::now());
        c.deadline = c.h1.deadline(self.stopping);
    }

    /// The body is in (or there was none): answer as the handler decided.
    fn dispatch(&mut self, slot: usize) {
        let c = self.conns[slot].as_mut().expect("conn");
        let Some(outcome) = c.pending.take() else { return };
        if let Some(spool) = c.spool.take() {
            match spool.finish() {
                Ok(body) => c.body = Some(body),
                Err(e) => {
                    self.body_error(slot, warren_handler::fastcgi::spool_error(e));
                    return;
                }
            }
        }
        self.settle(slot, outcome);
    }

    pub(super) fn settle(&mut self, slot: usize, outcome: Outcome) {
        let c = self.conns[slot].as_mut().expect("conn");
        match outcome {
            Outcome::Ready(resp) => self.respond(slot, resp),
            Outcome::Blocking(work) => {
                c.on_hold = true;
                c.deadline = Instant::now() + Duration::from_secs(3600);
                self.pool.submit(slot, c.generation, Job::Respond(work));
            }
            Outcome::Gateway(gw) => self.proxy_http(slot, gw),
            // Threads route with Site::handle, which never asks for that.
            Outcome::OffLoop => unreachable!("routed off the loop already"),
        }
    }

    /// Encodes a response into the connection's output and starts writing.
    pub(super) fn respond(&mut self, slot: usize, resp: Response) {
        let c = self.conns[slot].as_mut().expect("conn");
        let ex = c.req.as_mut().expect("request in flight");
        c.out.encode(ex, resp, &self.site, &mut self.date, &mut self.scratch_out);
        c.h1.set_phase(Phase::Writing);
        c.deadline = Instant::now() + self.rules.timeout;
    }

    /// The response is out: log it, then keep the connection or close it.
    /// Returns true if the connection should be driven further.
    pub(super) fn finish_response(&mut self, slot: usize) -> bool {
        let c = self.conns[slot].as_mut().expect("conn");
        let Some(req) = c.req.take() else { return true };
        c.body = None;
        serve::end(&mut Records { site: &self.site, logs: &mut self.logs, slot: self.sb.thread(self.slot, 0) }, &req, &c.info, c.h1.served(), false);
        // Until the next request names its client, the peer is the client.
        c.info.useragent = c.info.peer;
        match c.h1.after_response(true, req.keep_alive, req.linger, Instant::now()) {
            Next::KeepAlive => {
                c.deadline = c.h1.deadline(self.stopping);
                c.h1.release_input();
                c.out.release();
                true
            }
            Next::Linger => {
                linger(c);
                true
            }
            Next::Close => {
                self.close(slot);
                false
            }
        }
    }

    /// A request that could not be parsed: answer and close.
    pub(super) fn protocol_error(&mut self, slot: usize, e: HttpError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let (ex, resp) = Exchange::for_protocol_error(c.h1.input(), &e, &self.site, &c.info);
        c.h1.refuse();
        c.req = Some(ex);
        self.respond(slot, resp);
    }

    /// A bad or oversized body: answer and close (what is left of the body
    /// cannot be told from a next request).
    pub(super) fn body_error(&mut self, slot: usize, e: HttpError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let resp = c.req.as_mut().expect("req").body_error(&e, &self.site, &c.info);
        c.h1.discard_input();
        c.pending = None;
        c.spool = None;
        self.respond(slot, resp);
    }

    /// Closes a connection whose request could not be completed.
    pub(super) fn abort(&mut self, slot: usize) {
        if let Some(c) = self.conns[slot].as_mut() {
            if let Some(req) = c.req.take() {
                serve::end(&mut Records { site: &self.site, logs: &mut self.logs, slot: self.sb.thread(self.slot, 0) }, &req, &c.info, c.h1.served(), true);
            }
        }
        self.close(slot);
    }

    pub(super) fn close(&mut self, slot: usize) {
        if self.conns[slot].as_ref().is_some_and(|c| c.h2.is_some()) {
            self.h2_abort(slot);
            self.h2_relays_close(slot);
            self.h2_proxies_close(slot);
            self.h2_tunnels_close(slot);
        }
        // Closing the socket (dropping the stream) also removes it from epoll.
        if self.conns[slot].take().is_some() {
            self.free.push(slot);
            self.open -= 1;
        }
    }
}

pub(super) enum ReadResult {
    Data,
    Blocked,
    Closed,
    /// HTTP on a TLS port: answered 400 in plain HTTP.
    PlainHttp,
}

/// Half-closes the connection and drains what the client still sends
/// (bounded by LINGER), so that it reads our last answer, not a reset.
pub(super) fn linger(c: &mut Conn) {
    c.stream.shutdown_write();
    c.h1.linger();
    c.deadline = Instant::now() + LINGER;
    c.readable = true;
}

/// Reads and discards input of a half-closed connection. Ok(true): the
/// client has closed its side.
fn drain(c: &mut Conn) -> io::Result<bool> {
    let mut buf = [0u8; 4096];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                return Ok(false);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}
