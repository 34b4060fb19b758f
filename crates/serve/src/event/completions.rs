//! What comes back to the loop: work finished by its thread pool, and
//! deadlines that have passed (RequestReadTimeout, Timeout,
//! KeepAliveTimeout, ProxyTimeout, the lingering close).

use std::time::Instant;

use warren_handler::gateway::error::GatewayError;
use warren_http::h1::Expiry;
use warren_http::Phase;

use crate::exchange::panic_response;
use super::thread_pool::JobResult;
use super::connection::linger;
use super::EventLoop;

impl EventLoop {
    pub(super) fn finish_work(&mut self) {
        self.pool.reset_wake();
        while let Ok(done) = self.pool.done.try_recv() {
            let alive = matches!(&self.conns.get(done.slot), Some(Some(c)) if c.generation == done.generation);
            if !alive {
                continue;
            }
            let c = self.conns[done.slot].as_mut().expect("conn");
            match done.outcome {
                JobResult::H2 { stream, response, pieces } => {
                    self.h2_complete(done.slot, stream, response, pieces);
                    continue;
                }
                JobResult::H2Wake => {
                    self.h2_ready.push(done.slot);
                    continue;
                }
                JobResult::H2Interim { stream, answer } => {
                    if let Some(h) = c.h2.as_mut() {
                        h.session.interim(stream, &answer);
                        self.h2_ready.push(done.slot);
                    }
                    continue;
                }
                _ => {}
            }
            c.on_hold = false;
            match done.outcome {
                JobResult::H2 { .. } | JobResult::H2Wake | JobResult::H2Interim { .. } => unreachable!("handled above"),
                JobResult::Response(r) => {
                    let resp = match r {
                        Some(r) => r,
                        None => {
                            let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                            panic_response(&self.site, head, &c.info)
                        }
                    };
                    self.respond(done.slot, resp);
                }
                JobResult::Routed(outcome) => {
                    self.routed(done.slot, outcome);
                }
                JobResult::FastCgi { h1, exchange, sent } => {
                    c.h1 = *h1;
                    c.req = Some(*exchange);
                    // The worker may have taken the input that an edge announced.
                    c.readable = true;
                    if !sent {
                        self.abort(done.slot);
                        continue;
                    }
                    if self.start_tunnel(done.slot) {
                        continue;
                    }
                    if !self.finish_response(done.slot) {
                        continue;
                    }
                }
            }
            self.drive(done.slot);
        }
    }

    /// Enforces RequestReadTimeout, Timeout, KeepAliveTimeout and the
    /// lingering-close limit.
    pub(super) fn expire(&mut self, now: Instant) {
        for slot in 0..self.conns.len() {
            let Some(c) = self.conns[slot].as_mut() else { continue };
            if c.deadline > now || c.on_hold {
                continue;
            }
            if c.h2.is_some() {
                self.expire_h2(slot);
                continue;
            }
            if c.tunnel.is_some() {
                self.end_tunnel(slot, warren_handler::proxy_http::tunnel::End::Idle);
                continue;
            }
            match c.h1.phase() {
                Phase::ReadingHead if c.proxy_header => {
                    crate::proxy_header::timed_out(&self.site, c.h1.input(), &c.info);
                    self.close(slot);
                }
                Phase::Writing => self.abort(slot),
                Phase::Proxying if c.proxy_relay.is_some() => self.http_relay_expired(slot),
                Phase::Proxying => {
                    let up = c.upstream.as_ref().expect("proxying");
                    let e = GatewayError { status: 504, why: format!("FastCGI: timeout waiting for {} (ProxyTimeout)", up.gateway.backend_name()) };
                    if up.body.is_some() {
                        up.answer.log_cut_short(&e);
                        c.upstream = None;
                        self.abort(slot);
                    } else {
                        self.fail_upstream(slot, &e);
                        self.drive(slot);
                    }
                }
                // Reading or idle: HTTP/1.1's rules say what the wait comes to.
                _ => match c.h1.timed_out(self.stopping) {
                    // Logged once, by the error answer, with the limit that ran out.
                    Expiry::Head(e) => {
                        self.protocol_error(slot, e);
                        self.drive(slot);
                    }
                    Expiry::Body(e) => {
                        self.body_error(slot, e);
                        self.drive(slot);
                    }
                    Expiry::Linger => {
                        linger(c);
                        self.drive(slot);
                    }
                    Expiry::Close => self.close(slot),
                },
            }
        }
    }
}
