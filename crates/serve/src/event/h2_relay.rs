//! FastCGI for HTTP/2 streams on the loop. A stream's exchange with an
//! application that can be reached without blocking (as an HTTP/1.1
//! request's, see [`fastcgi_relay`](super::fastcgi_relay)) is relayed here:
//! an answer whole by its head (the usual PHP page) is given to the stream
//! at once; one still coming is fed to the stream as it is read
//! ([`Fed`](crate::h2::body_plan::Fed)), read no faster than the client
//! takes it. Everything else (a pool with no idle child, a body in a file,
//! `enablereuse`) goes to a worker thread from the start.
//! Handing every exchange to a thread cost the loop a wake-up of a thread
//! and one back per request, and their memory freed across threads: the
//! loop was the bottleneck of PHP over h2 at 34k requests a second on 2
//! cores.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use nix::sys::epoll::{EpollEvent, EpollFlags};
use warren_handler::fastcgi::{AtHead, Failure, Pumped, ResponseSink};
use warren_handler::gateway::error::GatewayError;
use warren_handler::filters::Timing;
use warren_handler::spool::Spooled;
use warren_handler::{Body, ConnInfo, Outcome};
use warren_http::RequestHead;

use super::thread_pool::Job;
use super::{EventLoop, TOKEN_H2_UPSTREAM};
use crate::fastcgi::on_loop::{FedByLoop, ReadFailed, Upstream};
use crate::h2::session::{Ctx, Session, Task, Work};

/// A stream's FastCGI exchange the loop drives.
pub(super) struct H2Relay {
    slot: usize,
    generation: u64,
    stream: u32,
    up: Upstream,
    head: RequestHead,
    info: ConnInfo,
    timing: Timing,
    dropped: Arc<AtomicBool>,
    /// The request body, kept for another child if this one is lost.
    body: Option<Spooled>,
    /// ProxyTimeout without a word from the application.
    deadline: Instant,
    /// The head has gone to the stream; the body is fed to it as it comes.
    feeding: bool,
}

/// What one pass of a relay came to.
enum Step {
    Again,
    Wait,
    /// The answer, whole.
    Whole(warren_handler::Response),
    /// A local `Location:`: the request is served again for it.
    Redirect(String),
    /// Failed before any answer: answered as Apache does.
    Failed(GatewayError),
    /// The pool's child went away before answering: another may take it.
    Lost(GatewayError),
    /// The head is here, the rest of the body is still coming.
    Streaming { resp: warren_handler::Response, first: Vec<u8>, len: Option<u64> },
}

/// What one pass of feeding a stream came to.
enum Feed {
    Again,
    Wait,
    /// The answer ended whole.
    Ended,
    /// The application failed mid-answer: the stream is reset.
    CutShort(GatewayError),
    /// The stream takes no more (reset by the client, or a HEAD).
    Unwanted,
}

impl EventLoop {
    /// Runs streams' work: FastCGI on the loop where it can be, the rest
    /// on the thread pool.
    pub(super) fn h2_dispatch(&mut self, slot: usize, generation: u64, tasks: &mut Vec<Task>) {
        for task in tasks.drain(..) {
            if task.is_dropped() {
                continue;
            }
            let Some(task) = self.h2_proxy(slot, generation, task) else { continue };
            let Task { stream, work, head, info, timing, dropped } = task;
            let (gw, body) = match work {
                Work::Gateway(gw, body) if !matches!(body, Some(Spooled::File(..))) => (gw, body),
                work => {
                    self.pool.submit(slot, generation, Job::H2(Box::new(Task { stream, work, head, info, timing, dropped })));
                    continue;
                }
            };
            let answer = self.site.answer(&gw, &info);
            let memory = match &body {
                Some(Spooled::Memory(b)) => Some(&b[..]),
                _ => None,
            };
            let up = match Upstream::start(gw, memory, answer, self.site.pools.get(), &self.site.half_close) {
                Ok(up) => up,
                // Waiting for a pool's child, or failing to reach the
                // application, is a thread's to do and answer.
                Err((gw, _)) => {
                    self.pool.submit(slot, generation, Job::H2(Box::new(Task { stream, work: Work::Gateway(gw, body), head, info, timing, dropped })));
                    continue;
                }
            };
            let deadline = Instant::now() + up.gateway.timeout;
            let relay = H2Relay { slot, generation, stream, up, head, info, timing, dropped, body, deadline, feeding: false };
            let idx = self.h2_relays.iter().position(Option::is_none).unwrap_or_else(|| {
                self.h2_relays.push(None);
                self.h2_relays.len() - 1
            });
            let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
            if let Err(e) = self.epoll.add(relay.up.fd(), EpollEvent::new(flags, TOKEN_H2_UPSTREAM + idx as u64)) {
                let why = format!("FastCGI: cannot watch the connection to {}: {e}", relay.up.gateway.backend_name());
                self.h2_relays[idx] = Some(relay);
                self.h2_relay_end(idx, Step::Failed(GatewayError { status: 503, why }));
                continue;
            }
            self.h2_relays[idx] = Some(relay);
            self.h2_relay_drive(idx);
        }
    }

    /// The application's socket is ready.
    pub(super) fn h2_relay_ready(&mut self, idx: usize, flags: EpollFlags) {
        let Some(r) = self.h2_relays.get_mut(idx).and_then(Option::as_mut) else { return };
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
            r.up.readable = true;
        }
        r.up.hung_up |= flags.intersects(EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR);
        if flags.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
            r.up.writable = true;
        }
        self.h2_relay_drive(idx);
    }

    fn h2_relay_drive(&mut self, idx: usize) {
        loop {
            let Some(r) = self.h2_relays[idx].as_mut() else { return };
            let Some(h) = self.conns.get_mut(r.slot).and_then(Option::as_mut).filter(|c| c.generation == r.generation).and_then(|c| c.h2.as_mut()) else {
                self.h2_relay_remove(idx);
                return;
            };
            if r.feeding {
                match feed_step(r, &mut h.session, &mut self.scratch_in) {
                    Feed::Again => {
                        self.h2_ready.push(r.slot);
                    }
                    Feed::Wait => return,
                    Feed::Ended | Feed::Unwanted => {
                        self.h2_ready.push(r.slot);
                        self.h2_relay_remove(idx);
                        return;
                    }
                    Feed::CutShort(e) => {
                        r.up.answer.log_cut_short(&e);
                        self.h2_ready.push(r.slot);
                        self.h2_relay_remove(idx);
                        return;
                    }
                }
                continue;
            }
            match relay_step(r, &mut self.scratch_in) {
                Step::Again => {}
                Step::Wait => return,
                Step::Streaming { mut resp, first, len } => {
                    resp.body = Body::Stream { source: Box::new(FedByLoop), len };
                    let sb = self.sb.clone();
                    let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
                    h.session.respond_fed(&mut ctx, r.stream, resp);
                    if let Some(fed) = h.session.fed(r.stream) {
                        fed.data(first);
                    }
                    r.feeding = true;
                    self.h2_feeding += 1;
                    self.h2_ready.push(r.slot);
                }
                end => {
                    self.h2_relay_end(idx, end);
                    return;
                }
            }
        }
    }

    /// Drops a relay (its pool child given back, its socket closed).
    fn h2_relay_remove(&mut self, idx: usize) {
        if let Some(r) = self.h2_relays[idx].take() {
            if r.feeding {
                self.h2_feeding -= 1;
            }
            drop(r);
            self.child_given_back();
        }
    }

    /// Relays feeding streams of this connection read on, if they had
    /// stopped for the client (run after the connection has sent).
    pub(super) fn h2_relays_resume(&mut self, slot: usize) {
        if self.h2_feeding == 0 {
            return;
        }
        for idx in 0..self.h2_relays.len() {
            if self.h2_relays[idx].as_ref().is_some_and(|r| r.slot == slot && r.feeding && r.up.readable) {
                self.h2_relay_drive(idx);
            }
        }
    }

    /// The relays of a connection that closes end with it.
    pub(super) fn h2_relays_close(&mut self, slot: usize) {
        for idx in 0..self.h2_relays.len() {
            if self.h2_relays[idx].as_ref().is_some_and(|r| r.slot == slot) {
                self.h2_relay_remove(idx);
            }
        }
    }

    /// A relay is over: its stream gets the answer (or the work that
    /// follows from it), and is sent once the loop's batch of events is.
    fn h2_relay_end(&mut self, idx: usize, end: Step) {
        let H2Relay { slot, generation, stream, up, head, info, timing, dropped, body, .. } = self.h2_relays[idx].take().expect("relay");
        let outcome = match end {
            Step::Whole(resp) => {
                drop(up);
                Outcome::Ready(resp)
            }
            Step::Redirect(location) => {
                let outcome = self.site.redirect_outcome(&up.gateway, &head, &info, &location).0;
                drop(up);
                outcome
            }
            Step::Lost(e) => {
                let mut gw = up.into_gateway();
                if self.site.retry_lost_child(&mut gw, &head, &info, &e) {
                    self.pool.submit(slot, generation, Job::H2(Box::new(Task { stream, work: Work::Gateway(gw, body), head, info, timing, dropped })));
                    self.child_given_back();
                    return;
                }
                self.site.follow_error_document(Outcome::Ready(self.site.gateway_failed(&gw, &head, &info, &e)), &head, &info)
            }
            Step::Failed(e) => {
                let e = e.or_killed(up.lease());
                let page = self.site.gateway_failed(&up.gateway, &head, &info, &e);
                drop(up);
                self.site.follow_error_document(Outcome::Ready(page), &head, &info)
            }
            Step::Again | Step::Wait | Step::Streaming { .. } => unreachable!("not an end"),
        };
        drop(body);
        self.child_given_back();
        self.h2_settle(slot, generation, stream, outcome);
    }

    /// Relays past ProxyTimeout get 504 (or, feeding a stream, reset it);
    /// those of closed connections end.
    pub(super) fn expire_h2_relays(&mut self, now: Instant) {
        for idx in 0..self.h2_relays.len() {
            let Some(r) = self.h2_relays[idx].as_mut() else { continue };
            let conn = self.conns.get_mut(r.slot).and_then(Option::as_mut).filter(|c| c.generation == r.generation).and_then(|c| c.h2.as_mut());
            let Some(h) = conn else {
                self.h2_relay_remove(idx);
                continue;
            };
            if r.deadline > now {
                continue;
            }
            let why = format!("FastCGI: timeout waiting for {} (ProxyTimeout)", r.up.gateway.backend_name());
            if !r.feeding {
                self.h2_relay_end(idx, Step::Failed(GatewayError { status: 504, why }));
                continue;
            }
            match h.session.fed(r.stream) {
                // Waiting for the client, not the application: H2StreamTimeout's.
                Some(fed) if fed.full() => r.deadline = now + r.up.gateway.timeout,
                fed => {
                    if let Some(fed) = fed {
                        fed.cut_short();
                    }
                    r.up.answer.log_cut_short(&GatewayError { status: 504, why });
                    self.h2_ready.push(r.slot);
                    self.h2_relay_remove(idx);
                }
            }
        }
    }
}

/// One pass: the request out, what the application has sent in.
fn relay_step(r: &mut H2Relay, scratch: &mut [u8]) -> Step {
    let up = &mut r.up;
    match up.send() {
        Ok(true) => {}
        Ok(false) => return Step::Wait,
        Err(e) => return Step::Failed(e),
    }
    if !up.readable {
        return Step::Wait;
    }
    match up.receive(scratch) {
        Ok(true) => r.deadline = Instant::now() + up.gateway.timeout,
        Ok(false) => {}
        Err(ReadFailed { error, gone }) => {
            return match up.failure(error, gone) {
                Failure::Lost(e) => Step::Lost(e),
                Failure::Failed(e) | Failure::CutShort(e) => Step::Failed(e),
            };
        }
    }
    match up.answer.head(&up.gateway) {
        Ok(None) if up.readable => Step::Again,
        Ok(None) => Step::Wait,
        Ok(Some(AtHead::Redirect(location))) => Step::Redirect(location),
        Ok(Some(AtHead::Whole(resp))) => Step::Whole(resp),
        Ok(Some(AtHead::Partial { response, first, len, .. })) => Step::Streaming { resp: response, first, len },
        Err(e) => Step::Failed(e),
    }
}

/// One pass of feeding a stream what the application sends.
fn feed_step(r: &mut H2Relay, session: &mut Session, scratch: &mut [u8]) -> Feed {
    let Some(fed) = session.fed(r.stream) else { return Feed::Unwanted };
    if fed.full() || !r.up.readable {
        return Feed::Wait;
    }
    let up = &mut r.up;
    match up.receive(scratch) {
        Ok(true) => r.deadline = Instant::now() + up.gateway.timeout,
        Ok(false) if !up.readable => return Feed::Wait,
        Ok(false) => return Feed::Again,
        Err(ReadFailed { error, .. }) => {
            fed.cut_short();
            return Feed::CutShort(error);
        }
    }
    match up.answer.pump(fed) {
        Pumped::More => Feed::Again,
        Pumped::Ended => Feed::Ended,
        Pumped::CutShort(e) => Feed::CutShort(e),
    }
}
