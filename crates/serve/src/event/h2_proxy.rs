//! HTTP proxying (mod_proxy_http) for HTTP/2 streams on the loop, as
//! [`proxy_relay`](super::proxy_relay) does for HTTP/1.1 clients and
//! [`h2_relay`](super::h2_relay) for FastCGI: the stream's request goes to
//! the backend on a non-blocking connection (a kept one of the loop's
//! [`IdleBackends`](super::proxy_relay::IdleBackends), shared with the
//! HTTP/1.1 path, or a new one), and the handler's sans-IO [`HttpRelay`]
//! turns what comes back into the stream's answer: interim answers (103
//! Early Hints) as HEADERS frames ahead of the final one (RFC 9113 8.1), a
//! small answer whole, a larger one fed to the stream as it is read.
//! The stream's flow-control window is the backpressure: the backend is
//! read no further while 256 KB wait for the client
//! ([`Fed::full`](crate::h2::body_plan::Fed)), so a slow client holds a
//! backend connection, never a thread. A stream the client resets closes
//! its backend connection (the answer may still be coming on it).
//! What the loop cannot do without blocking (TLS, a backend named by host
//! name, a balancer, a body in a file, an RFC 8441 tunnel) goes to a
//! worker thread as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use nix::sys::epoll::EpollFlags;
use warren_handler::fastcgi::ResponseSink;
use warren_handler::gateway::error::GatewayError;
use warren_handler::proxy_http::relay::{connect_timeout, Event, Failed, HttpRelay};
use warren_handler::spool::Spooled;
use warren_handler::{Body, ConnInfo, Outcome, Site};
use warren_http::RequestHead;

use super::proxy_relay::{Backend, Io};
use super::{EventLoop, TOKEN_H2_HTTP_UPSTREAM};
use crate::fastcgi::on_loop::FedByLoop;
use super::proxy_upload::UPLOAD_HIGH;
use crate::h2::session::{Ctx, Pulled, Task, Work};

/// A stream's exchange with an HTTP backend that the loop drives.
pub(super) struct H2Proxy {
    slot: usize,
    generation: u64,
    stream: u32,
    backend: Backend,
    exchange: HttpRelay,
    head: RequestHead,
    info: ConnInfo,
    /// Set when the stream ends without waiting for the answer.
    dropped: Arc<AtomicBool>,
    /// ProxyTimeout without a word from the backend.
    deadline: Instant,
    /// The answer's head has gone to the stream; its body is fed to it.
    feeding: bool,
}

/// How a relay ends.
enum End {
    /// The exchange is over or given up: its connection kept if it may be.
    Done,
    /// Failed: an error answer if the stream's has not begun, else the
    /// stream is reset.
    Failed(GatewayError),
}

impl EventLoop {
    /// Takes `task` on the loop if it is an HTTP backend exchange the loop
    /// can run; otherwise gives it back.
    pub(super) fn h2_proxy(&mut self, slot: usize, generation: u64, task: Task) -> Option<Task> {
        let on_loop = match &task.work {
            Work::Gateway(gw, body) => !matches!(body, Some(Spooled::File(..))) && !task.head.is_h2_websocket() && Site::http_on_loop(gw, &task.head),
            // Site::streams_body, the loop's upload rule, asked http_on_loop.
            Work::Upload(_) => true,
            _ => false,
        };
        if !on_loop {
            return Some(task);
        }
        let Task { stream, work, head, info, dropped, .. } = task;
        let made = match work {
            Work::Gateway(gw, body) => {
                let memory = match &body {
                    Some(Spooled::Memory(b)) => Some(&b[..]),
                    _ => None,
                };
                self.site.http_relay(gw, &head, &info, memory)
            }
            Work::Upload(gw) => self.site.http_relay_streamed(gw, &head, &info).map(|mut x| {
                // An HTTP/2 client sends its body within its window
                // without waiting for a 100: none is awaited.
                x.continue_anyway();
                x
            }),
            _ => unreachable!("checked above"),
        };
        let exchange = match made {
            Ok(x) => x,
            Err((gw, e)) => {
                let page = self.site.gateway_failed(&gw, &head, &info, &e);
                let outcome = self.site.follow_error_document(Outcome::Ready(page), &head, &info);
                self.h2_settle(slot, generation, stream, outcome);
                return None;
            }
        };
        let idx = self.h2_proxies.iter().position(Option::is_none).unwrap_or_else(|| {
            self.h2_proxies.push(None);
            self.h2_proxies.len() - 1
        });
        let backend = match self.backend_open(&exchange, TOKEN_H2_HTTP_UPSTREAM + idx as u64, true) {
            Ok(b) => b,
            Err(e) => {
                let page = self.site.gateway_failed(&exchange.gateway, &head, &info, &e);
                let outcome = self.site.follow_error_document(Outcome::Ready(page), &head, &info);
                self.h2_settle(slot, generation, stream, outcome);
                return None;
            }
        };
        let deadline = Instant::now() + connect_timeout(&exchange);
        self.h2_proxies[idx] = Some(H2Proxy { slot, generation, stream, backend, exchange, head, info, dropped, deadline, feeding: false });
        self.h2_proxy_count += 1;
        self.h2_proxy_drive(idx);
        None
    }

    /// The backend's socket is ready.
    pub(super) fn h2_proxy_ready(&mut self, idx: usize, flags: EpollFlags) {
        let Some(r) = self.h2_proxies.get_mut(idx).and_then(Option::as_mut) else { return };
        r.backend.note(flags);
        self.h2_proxy_drive(idx);
    }

    /// Relays as far as it goes without blocking.
    fn h2_proxy_drive(&mut self, idx: usize) {
        loop {
            let mut pulled = false;
            let Some(r) = self.h2_proxies[idx].as_mut() else { return };
            let Some(h) = self.conns.get_mut(r.slot).and_then(Option::as_mut).filter(|c| c.generation == r.generation).and_then(|c| c.h2.as_mut()) else {
                return self.h2_proxy_end(idx, End::Done);
            };
            if r.feeding {
                match h.session.fed(r.stream) {
                    // Reset by the client (or a HEAD's answer, which has no body).
                    None => return self.h2_proxy_end(idx, End::Done),
                    Some(fed) if fed.full() => return,
                    Some(_) => {}
                }
            } else if r.dropped.load(Ordering::Relaxed) {
                return self.h2_proxy_end(idx, End::Done);
            }
            if r.exchange.body_open() {
                let room = UPLOAD_HIGH.saturating_sub(r.exchange.request.len() - r.backend.sent);
                let exchange = &mut r.exchange;
                match h.session.take_upload(r.stream, room, &mut |d| exchange.push_body(d)) {
                    Pulled::More(0) => {}
                    Pulled::More(_) => pulled = true,
                    Pulled::End(_) => {
                        exchange.end_body();
                        pulled = true;
                    }
                    Pulled::Gone => return self.h2_proxy_end(idx, End::Done),
                }
                if pulled {
                    // Its credit goes back to the client.
                    self.h2_ready.push(r.slot);
                }
            }
            match r.backend.io(&mut r.exchange, &self.site, &mut self.scratch_in) {
                Ok(Io::Blocked) => return,
                Ok(Io::Moved) => {
                    r.deadline = Instant::now() + r.exchange.gateway.timeout;
                    // What went out of the body makes room for more of it.
                    pulled |= r.exchange.body_open();
                }
                Ok(Io::Still) => {}
                Err(f) => return self.h2_proxy_failed(idx, f),
            }
            let mut progress = false;
            loop {
                let event = match r.exchange.next_event(&self.site, &r.head, &r.info) {
                    Ok(None) => break,
                    Ok(Some(e)) => e,
                    Err(f) => return self.h2_proxy_failed(idx, f),
                };
                progress = true;
                self.h2_ready.push(r.slot);
                let sb = self.sb.clone();
                let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
                match event {
                    Event::Interim(answer) => h.session.interim(r.stream, &answer),
                    // A stream's body is read whole before its exchange: no Expect goes.
                    Event::Continue => {}
                    Event::Whole(resp) => {
                        let (slot, generation, stream) = (r.slot, r.generation, r.stream);
                        self.h2_proxy_end(idx, End::Done);
                        return self.h2_settle(slot, generation, stream, Outcome::Ready(resp));
                    }
                    Event::Head(mut resp, len) => {
                        resp.body = Body::Stream { source: Box::new(FedByLoop), len };
                        h.session.respond_fed(&mut ctx, r.stream, resp);
                        r.feeding = true;
                    }
                    Event::Data(d) => match h.session.fed(r.stream) {
                        Some(fed) => fed.data(d),
                        None => return self.h2_proxy_end(idx, End::Done),
                    },
                    Event::End => {
                        if let Some(Err(why)) = h.session.fed(r.stream).map(ResponseSink::end) {
                            self.site.hosts[r.exchange.gateway.host].error_log.error(Some(r.info.useragent), &format!("proxy: HTTP: answer of {}: {why}", r.exchange.gateway.backend_name()));
                        }
                        return self.h2_proxy_end(idx, End::Done);
                    }
                }
            }
            if !progress && !pulled && !r.backend.more_to_read() {
                return;
            }
        }
    }

    /// A failure: sent again on a new connection if it may be, else ended.
    fn h2_proxy_failed(&mut self, idx: usize, f: Failed) {
        let r = self.h2_proxies[idx].as_mut().expect("relay");
        if !r.backend.replay(&mut r.exchange, &f, &self.site, &r.info) {
            return self.h2_proxy_end(idx, End::Failed(f.error));
        }
        let _ = self.epoll.delete(std::os::fd::AsFd::as_fd(&r.backend.socket));
        let r = self.h2_proxies[idx].take().expect("relay");
        match self.backend_open(&r.exchange, TOKEN_H2_HTTP_UPSTREAM + idx as u64, false) {
            Ok(backend) => {
                let deadline = Instant::now() + connect_timeout(&r.exchange);
                self.h2_proxies[idx] = Some(H2Proxy { backend, deadline, ..r });
                self.h2_proxy_drive(idx);
            }
            Err(e) => {
                self.h2_proxy_count -= 1;
                let page = self.site.gateway_failed(&r.exchange.gateway, &r.head, &r.info, &e);
                let outcome = self.site.follow_error_document(Outcome::Ready(page), &r.head, &r.info);
                self.h2_settle(r.slot, r.generation, r.stream, outcome);
            }
        }
    }

    /// Ends a relay: its connection kept or closed; a failure answered
    /// (the answer not begun) or the stream reset (begun).
    fn h2_proxy_end(&mut self, idx: usize, end: End) {
        let Some(H2Proxy { slot, generation, stream, backend, exchange, head, info, feeding, .. }) = self.h2_proxies[idx].take() else { return };
        self.h2_proxy_count -= 1;
        if exchange.body_open() {
            // Answered (or failed) before the whole body came: the rest is
            // not the backend's; the held part is credited back.
            if let Some(h) = self.conns[slot].as_mut().filter(|c| c.generation == generation).and_then(|c| c.h2.as_mut()) {
                h.session.end_upload(stream);
                self.h2_ready.push(slot);
            }
        }
        self.backend_release(backend, &exchange, TOKEN_H2_HTTP_UPSTREAM + idx as u64);
        let End::Failed(e) = end else { return };
        if !feeding {
            let page = self.site.gateway_failed(&exchange.gateway, &head, &info, &e);
            let outcome = self.site.follow_error_document(Outcome::Ready(page), &head, &info);
            return self.h2_settle(slot, generation, stream, outcome);
        }
        self.site.hosts[exchange.gateway.host].error_log.error(Some(info.useragent), &e.why);
        if let Some(fed) = self.conns[slot].as_mut().filter(|c| c.generation == generation).and_then(|c| c.h2.as_mut()).and_then(|h| h.session.fed(stream)) {
            fed.cut_short();
        }
        self.h2_ready.push(slot);
    }

    /// The stream gets `outcome` (or the work that follows from it).
    pub(super) fn h2_settle(&mut self, slot: usize, generation: u64, stream: u32, outcome: Outcome) {
        let sb = self.sb.clone();
        let Some(h) = self.conns[slot].as_mut().filter(|c| c.generation == generation).and_then(|c| c.h2.as_mut()) else { return };
        let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
        let mut tasks = Vec::new();
        // The exchange is over: a body it did not take (it failed before
        // it began) is not awaited any more.
        h.session.end_upload(stream);
        h.session.settle_work(&mut ctx, stream, outcome, &mut tasks);
        self.h2_dispatch(slot, generation, &mut tasks);
        self.h2_ready.push(slot);
    }

    /// After the connection has sent (or taken a reset): relays that stopped
    /// for its client read on, and those of streams it reset end.
    pub(super) fn h2_proxies_resume(&mut self, slot: usize) {
        if self.h2_proxy_count == 0 {
            return;
        }
        for idx in 0..self.h2_proxies.len() {
            if self.h2_proxies[idx].as_ref().is_some_and(|r| r.slot == slot && (r.dropped.load(Ordering::Relaxed) || r.exchange.body_open() || (r.feeding && r.backend.more_to_read()))) {
                self.h2_proxy_drive(idx);
            }
        }
    }

    /// The relays of a connection that closes end with it.
    pub(super) fn h2_proxies_close(&mut self, slot: usize) {
        for idx in 0..self.h2_proxies.len() {
            if self.h2_proxies[idx].as_ref().is_some_and(|r| r.slot == slot) {
                self.h2_proxy_end(idx, End::Done);
            }
        }
    }

    /// Relays past ProxyTimeout: 504 before the answer, the stream reset
    /// after it began (unless it is the client that holds it up: that is
    /// H2StreamTimeout's).
    pub(super) fn expire_h2_proxies(&mut self, now: Instant) {
        for idx in 0..self.h2_proxies.len() {
            let Some(r) = self.h2_proxies[idx].as_mut() else { continue };
            let Some(h) = self.conns.get_mut(r.slot).and_then(Option::as_mut).filter(|c| c.generation == r.generation).and_then(|c| c.h2.as_mut()) else {
                self.h2_proxy_end(idx, End::Done);
                continue;
            };
            if r.deadline > now {
                continue;
            }
            // A client that holds up its answer or its body is H2StreamTimeout's.
            let waits_on_body = r.exchange.body_open() && r.backend.connected && r.exchange.request.len() == r.backend.sent;
            if waits_on_body || (r.feeding && h.session.fed(r.stream).is_some_and(|fed| fed.full())) {
                r.deadline = now + r.exchange.gateway.timeout;
                continue;
            }
            let e = r.exchange.timed_out();
            self.h2_proxy_end(idx, End::Failed(e));
        }
    }
}
