//! FastCGI on the event loop: an exchange relayed without blocking (an
//! [`Upstream`] whose socket joins the epoll set), a request parked until
//! a pool's child is free, or the connection lent to a worker thread when
//! the loop cannot do it without blocking.

use std::time::{Duration, Instant};

use nix::sys::epoll::{EpollEvent, EpollFlags};
use warren_config::FcgiAddr;
use warren_handler::fastcgi::{AtHead, Failure, PoolBusy, Pumped, ResponseSink};
use warren_handler::gateway::error::GatewayError;
use warren_handler::gateway::Gateway;
use warren_handler::spool::Spooled;
use warren_handler::{Body, Outcome, Response};
use warren_http::h1::Connection;
use warren_http::Phase;

use crate::fastcgi::on_loop::{FedByLoop, NotHere, ReadFailed, Upstream};
use crate::fastcgi::pool_wait::Parked;
use crate::fastcgi::sink::{BodyFraming, H1Sink};
use crate::fastcgi::spill::Spill;
use super::thread_pool::{FastCgiJob, Job};
use super::connection::Conn;
use super::readiness::Readiness;
use super::{EventLoop, TOKEN_UPSTREAM};

impl EventLoop {
    /// Starts relaying a FastCGI exchange on the loop, or hands it to a
    /// worker thread when the loop cannot do it without blocking.
    pub(super) fn proxy(&mut self, slot: usize, gw: Box<Gateway>) {
        let c = self.conns[slot].as_mut().expect("conn");
        if matches!(c.body, Some(Spooled::File(..))) {
            // Sending a file may block: a worker thread's job.
            self.lend(slot, gw);
            return;
        }
        let answer = self.site.answer(&gw, &c.info);
        match Upstream::start(gw, memory_body(&c.body), answer, self.site.pools.get(), &self.site.half_close) {
            Ok(up) => {
                c.body = None;
                self.attach(slot, up);
            }
            Err((gw, NotHere::UseThread)) => match (&gw.backend.addr, self.site.pools.get()) {
                // A pool with no idle child: the request waits on the loop.
                (FcgiAddr::Pool(name), Some(d)) => match d.join_queue(name) {
                    Ok(()) => {
                        let name = name.clone();
                        let d = d.clone();
                        c.parked = Some(gw);
                        c.on_hold = true;
                        let p = Parked { slot, generation: c.generation, pool: name, deadline: Instant::now() + self.rules.timeout };
                        self.pool_waits.park(p, &d);
                    }
                    Err(busy) => {
                        let FcgiAddr::Pool(name) = &gw.backend.addr else { unreachable!() };
                        self.pool_unavailable(slot, &gw, name, busy);
                    }
                },
                _ => self.lend(slot, gw),
            },
            Err((gw, NotHere::Failed(e))) => self.gateway_error(slot, &gw, &GatewayError::connect(&gw.backend_name(), &e)),
            Err((gw, NotHere::Busy)) => {
                let FcgiAddr::Pool(name) = &gw.backend.addr else { unreachable!("only a pool's lease is busy") };
                self.pool_unavailable(slot, &gw, name, PoolBusy::QueueFull);
            }
        }
    }

    /// Lends the connection to a worker thread for a FastCGI exchange.
    fn lend(&mut self, slot: usize, gateway: Box<Gateway>) {
        let c = self.conns[slot].as_mut().expect("conn");
        let stream = match c.stream.try_clone() {
            Ok(s) => s,
            Err(e) => {
                self.site.error_log.error(Some(c.info.useragent), &format!("cannot hand the connection to a worker thread: {e}"));
                self.abort(slot);
                return;
            }
        };
        let exchange = c.req.take().expect("request in flight");
        let job = FastCgiJob { stream, info: c.info, h1: Box::new(std::mem::replace(&mut c.h1, Connection::new(self.rules, Instant::now()))), exchange, gateway, body: c.body.take() };
        c.on_hold = true;
        c.deadline = Instant::now() + Duration::from_secs(3600);
        self.pool.submit(slot, c.generation, Job::FastCgi(Box::new(job)));
    }

    /// Starts relaying on the loop: the application's socket joins the epoll.
    fn attach(&mut self, slot: usize, up: Upstream) {
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
        let added = self.epoll.add(up.fd(), EpollEvent::new(flags, TOKEN_UPSTREAM + slot as u64));
        let timeout = up.gateway.timeout;
        let c = self.conns[slot].as_mut().expect("conn");
        c.upstream = Some(Box::new(up));
        match added {
            Ok(()) => {
                c.h1.set_phase(Phase::Proxying);
                c.deadline = Instant::now() + timeout;
            }
            Err(e) => {
                let why = format!("FastCGI: cannot watch the connection to {}: {e}", c.upstream.as_ref().expect("upstream").gateway.backend_name());
                self.fail_upstream(slot, &GatewayError { status: 503, why });
            }
        }
    }

    pub(super) fn upstream_ready(&mut self, slot: usize, flags: EpollFlags) {
        self.on_upstream_event(slot, flags, |c, ready| {
            let Some(up) = c.upstream.as_mut() else { return false };
            up.readable |= ready.readable;
            up.writable |= ready.writable;
            up.hung_up |= ready.hung_up;
            true
        });
    }

    /// A backend's socket (FastCGI or HTTP) had an event: `note` marks it
    /// on the connection's relay (false: the connection has none now), and
    /// a relay under way is driven on.
    pub(super) fn on_upstream_event(&mut self, slot: usize, flags: EpollFlags, note: impl FnOnce(&mut Conn, Readiness) -> bool) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else { return };
        if note(c, Readiness::of(flags)) && c.h1.phase() == Phase::Proxying {
            self.drive(slot);
        }
    }

    /// Relays as far as it can go without blocking. True when the
    /// connection has moved on to another phase and should be driven on.
    pub(super) fn relay(&mut self, slot: usize) -> bool {
        loop {
            match self.relay_step(slot) {
                Relay::Again => {}
                Relay::Wait => return false,
                Relay::Failed(e) => {
                    self.fail_upstream(slot, &e);
                    return true;
                }
                Relay::Lost(e) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let up = c.upstream.as_mut().expect("upstream");
                    let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                    if self.site.retry_lost_child(&mut up.gateway, head, &c.info, &e) {
                        // Dropping the exchange gives the lost child's place back.
                        let gw = c.upstream.take().expect("upstream").gateway;
                        self.child_given_back();
                        self.proxy(slot, gw);
                    } else {
                        self.fail_upstream(slot, &e);
                    }
                    return true;
                }
                Relay::CutShort(e) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    if let Some(up) = c.upstream.take() {
                        up.answer.log_cut_short(&e);
                    }
                    self.abort(slot);
                    return false;
                }
                Relay::ClientGone => {
                    self.conns[slot].as_mut().expect("conn").upstream = None;
                    self.abort(slot);
                    return false;
                }
                Relay::Redirect(location) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let up = c.upstream.take().expect("upstream");
                    let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                    let (outcome, _) = self.site.redirect_outcome(&up.gateway, head, &c.info, &location);
                    self.settle(slot, outcome);
                    return true;
                }
                Relay::Whole(resp) => {
                    self.conns[slot].as_mut().expect("conn").upstream = None;
                    self.respond(slot, resp);
                    self.child_given_back();
                    return true;
                }
                Relay::Ended => {
                    // The application is free now; the client takes the
                    // rest at its own pace.
                    let c = self.conns[slot].as_mut().expect("conn");
                    c.upstream = None;
                    c.h1.set_phase(Phase::Writing);
                    c.deadline = Instant::now() + self.rules.timeout;
                    self.child_given_back();
                    return true;
                }
            }
        }
    }

    /// One pass: the client's output, the request to the application, and
    /// what the application has sent.
    fn relay_step(&mut self, slot: usize) -> Relay {
        let c = self.conns[slot].as_mut().expect("conn");
        let Conn { stream, out, upstream, req, deadline, .. } = c;
        let up = upstream.as_mut().expect("proxying");
        if !out.is_empty() {
            match out.flush(stream) {
                Ok(_) => *deadline = Instant::now() + up.gateway.timeout,
                Err(_) => return Relay::ClientGone,
            }
        }
        if up.body.as_ref().is_some_and(|f| f.full(out)) {
            return Relay::Wait;
        }
        match up.send() {
            Ok(true) => {}
            Ok(false) => return Relay::Wait,
            Err(e) => return Relay::Failed(e),
        }
        if !up.readable {
            return Relay::Wait;
        }
        match up.receive(&mut self.scratch_in) {
            Ok(true) => *deadline = Instant::now() + up.gateway.timeout,
            Ok(false) => {}
            Err(ReadFailed { error, gone }) => {
                return match up.failure(error, gone) {
                    Failure::Failed(e) => Relay::Failed(e),
                    Failure::Lost(e) => Relay::Lost(e),
                    Failure::CutShort(e) => Relay::CutShort(e),
                };
            }
        }
        let ex = req.as_mut().expect("request in flight");
        if up.body.is_none() {
            match up.answer.head(&up.gateway) {
                Ok(None) => return Relay::Again,
                Ok(Some(AtHead::Redirect(location))) => return Relay::Redirect(location),
                Ok(Some(AtHead::Whole(resp))) => return Relay::Whole(resp),
                Ok(Some(AtHead::Partial { mut response, first, len, buffers })) => {
                    response.body = Body::Stream { source: Box::new(FedByLoop), len };
                    out.encode(ex, response, &self.site, &mut self.date, &mut self.scratch_out);
                    let mut st = out.streaming.take().expect("a streamed body");
                    let spill = buffers.then(Spill::default);
                    let encoder = st.source.take_encoder();
                    let framing = up.body.insert(BodyFraming { framer: st.framer, spill, encoder });
                    H1Sink { out, framing, ex }.data(first);
                }
                Err(e) => return Relay::Failed(e),
            }
        }
        let framing = up.body.as_mut().expect("the head is out");
        match up.answer.pump(&mut H1Sink { out, framing, ex }) {
            Pumped::More => Relay::Again,
            Pumped::Ended => Relay::Ended,
            Pumped::CutShort(e) => Relay::CutShort(e),
        }
    }

    /// An exchange that failed before its head was sent: the error answer.
    pub(super) fn fail_upstream(&mut self, slot: usize, e: &GatewayError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let up = c.upstream.take().expect("upstream");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let e = e.clone().or_killed(up.lease());
        let resp = self.site.gateway_failed(&up.gateway, head, &c.info, &e);
        self.answer_error(slot, resp);
    }

    /// Answers with the error of an exchange that could not start.
    fn gateway_error(&mut self, slot: usize, gw: &Gateway, e: &GatewayError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let resp = self.site.gateway_failed(gw, head, &c.info, e);
        self.answer_error(slot, resp);
    }

    /// The 503 of a request that got no child of `pool` (see
    /// `Site::pool_unavailable`).
    fn pool_unavailable(&mut self, slot: usize, gw: &Gateway, pool: &str, busy: PoolBusy) {
        let c = self.conns[slot].as_ref().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let resp = self.site.pool_unavailable(gw, head, &c.info, pool, busy);
        self.answer_error(slot, resp);
    }

    /// An error page for the request in flight: its local ErrorDocument,
    /// if it has one, is an internal redirect, possibly to a script.
    fn answer_error(&mut self, slot: usize, page: Response) {
        let c = self.conns[slot].as_ref().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let outcome = self.site.follow_error_document(Outcome::Ready(page), head, &c.info);
        self.settle(slot, outcome);
    }

    /// A relayed exchange ended (and gave back its pool child, if it had
    /// one): a request parked on this loop may take the child at once.
    pub(super) fn child_given_back(&mut self) {
        if !self.pool_waits.parked.is_empty() {
            self.retry_parked(Instant::now());
        }
    }

    /// Leases children for parked requests, first come first served; those
    /// past Timeout get 503.
    pub(super) fn retry_parked(&mut self, now: Instant) {
        let Some(d) = self.site.pools.get().cloned() else { return };
        let mut busy_pools: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.pool_waits.parked.len() {
            let p = &self.pool_waits.parked[i];
            let (slot, generation, pool) = (p.slot, p.generation, p.pool.clone());
            let alive = matches!(&self.conns.get(slot), Some(Some(c)) if c.generation == generation && c.parked.is_some());
            if !alive {
                self.pool_waits.unpark(i, &d);
                continue;
            }
            if busy_pools.contains(&pool) && p.deadline > now {
                i += 1;
                continue;
            }
            let c = self.conns[slot].as_mut().expect("conn");
            let gw = c.parked.take().expect("parked");
            let timed_out = p.deadline <= now;
            // A user's pool the manager refused to make: no child will come.
            let gone = !d.knows(&pool);
            let answer = self.site.answer(&gw, &c.info);
            let started = if timed_out || gone { Err((gw, NotHere::UseThread)) } else { Upstream::start(gw, memory_body(&c.body), answer, Some(&d), &self.site.half_close) };
            if let Err((gw, NotHere::UseThread)) = started {
                if !timed_out && !gone {
                    // Still none free: the rest of this pool's queue waits too.
                    c.parked = Some(gw);
                    busy_pools.push(pool);
                    i += 1;
                    continue;
                }
                self.pool_waits.unpark(i, &d);
                self.conns[slot].as_mut().expect("conn").on_hold = false;
                self.pool_unavailable(slot, &gw, &pool, if gone { PoolBusy::Unknown } else { PoolBusy::Timeout });
                self.drive(slot);
                continue;
            }
            self.pool_waits.unpark(i, &d);
            let c = self.conns[slot].as_mut().expect("conn");
            c.on_hold = false;
            // Events that came while parked were set aside.
            c.readable = true;
            match started {
                Ok(up) => {
                    c.body = None;
                    self.attach(slot, up);
                }
                Err((gw, NotHere::Failed(e))) => self.gateway_error(slot, &gw, &GatewayError::connect(&gw.backend_name(), &e)),
                Err((gw, NotHere::Busy)) => self.pool_unavailable(slot, &gw, &pool, PoolBusy::QueueFull),
                Err((_, NotHere::UseThread)) => unreachable!("handled above"),
            }
            self.drive(slot);
        }
    }
}

/// What one pass of relaying came to.
enum Relay {
    /// Progress was made: go round again.
    Again,
    /// Nothing more until an event.
    Wait,
    /// Failed before the head was sent: answer with this error.
    Failed(GatewayError),
    /// The application went away before any of its answer came.
    Lost(GatewayError),
    /// Failed after the head was sent: close without ending the body.
    CutShort(GatewayError),
    ClientGone,
    Redirect(String),
    /// The whole answer arrived before anything was sent.
    Whole(Response),
    /// The application has ended its answer; the client may not have all
    /// of it yet.
    Ended,
}

/// A body the loop has read whole and kept in memory, for the request it
/// sends itself; None without a body.
fn memory_body(body: &Option<Spooled>) -> Option<&[u8]> {
    match body {
        Some(Spooled::Memory(b)) => Some(b),
        Some(Spooled::None | Spooled::File(..)) | None => None,
    }
}
