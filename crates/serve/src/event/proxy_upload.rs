//! A request body relayed to an HTTP backend as the client sends it, on
//! the event loop (mod_proxy_http's streamed body, Apache's default; see
//! [`warren_handler::Site::streams_body`] for `proxy-sendcl`, which reads
//! it whole first). The backend's connection is opened at the head; each
//! pass of the relay ([`super::proxy_relay`]) takes what the client has
//! sent, decoded by the connection's HTTP/1.1 rules (LimitRequestBody,
//! chunk framing), and queues it framed for the backend, but only while
//! less than [`UPLOAD_HIGH`] waits for the backend: a backend that reads
//! slowly leaves the client's bytes in its socket, and TCP holds the
//! client back. A client that sends slowly costs a buffer, no thread.
//!
//! A client that waits for `100 Continue` has it go end to end, as on a
//! thread (Apache's Proxy100Continue): the backend gets `Expect:
//! 100-continue`, the client's body is read once the backend's 100 came
//! (passed on), or after [`CONTINUE_WAIT`] of silence (warren's own 100); a
//! final answer first spares the client the upload.
//!
//! Two clocks run: the client's (RequestReadTimeout's body limit and
//! Timeout) while the relay waits for its bytes, the backend's
//! (ProxyTimeout) while bytes wait for the backend or the answer is due.
//! The client's running out answers 408 (or closes the connection if the
//! answer has begun); either way the backend's connection is closed, never
//! kept with half a body. An answer that ends before the body does ends
//! the upload too: the client's connection lingers and closes.

use std::os::fd::AsFd;
use std::time::Instant;

use warren_handler::gateway::Gateway;
use warren_handler::proxy_http::CONTINUE_WAIT;
use warren_http::h1::{BodyState, Expiry};
use warren_http::response::CONTINUE;
use warren_http::{BodyFraming, HttpError};

use super::connection::{Conn, ReadResult};
use super::proxy_relay::{ProxyRelay, Step};
use super::EventLoop;

/// At most this much of a client's body waits in the loop for its backend.
pub(super) const UPLOAD_HIGH: usize = 64 * 1024;

/// Why the client's body stopped coming.
pub(super) enum BodyFailed {
    /// Malformed or over LimitRequestBody: its error answer.
    Bad(HttpError),
    ClientGone,
}

impl From<BodyFailed> for Step {
    fn from(f: BodyFailed) -> Step {
        match f {
            BodyFailed::Bad(e) => Step::BadBody(e),
            BodyFailed::ClientGone => Step::ClientGone,
        }
    }
}

impl ProxyRelay {
    /// Bytes of the request queued and not yet taken by the backend.
    fn unsent(&self) -> usize {
        self.exchange.request.len() - self.backend.sent
    }

    /// Whether another pass should take more of the client's body: the
    /// backend took what was queued and the client may have sent more
    /// (`client_may_have_more`: bytes were just taken, or its socket has
    /// not been read dry; no edge will come for what waits there already).
    pub(super) fn takes_more_body(&self, client_may_have_more: bool) -> bool {
        client_may_have_more && self.exchange.body_open() && !self.exchange.awaits_continue() && self.unsent() < UPLOAD_HIGH && self.backend.connected && self.backend.writable
    }

    /// Whether the relay waits for the client's body (its clock runs),
    /// and whether it waits for the backend (ProxyTimeout runs).
    fn waits(&self) -> (bool, bool) {
        let body_open = self.exchange.body_open();
        let on_client = body_open && !self.exchange.awaits_continue() && self.unsent() < UPLOAD_HIGH;
        let on_backend = !body_open || self.unsent() > 0 || !self.backend.connected;
        (on_client, on_backend)
    }
}

impl EventLoop {
    /// Starts the exchange of a request whose body goes to the backend as
    /// it arrives: the body's clock starts, and the backend's connection is
    /// made (a client waiting for `100 Continue` waits for the backend's).
    pub(super) fn proxy_upload(&mut self, slot: usize, gw: Box<Gateway>, framing: BodyFraming) {
        let c = self.conns[slot].as_mut().expect("conn");
        let req = c.req.as_ref().expect("request in flight");
        let head = req.head.as_ref().expect("head");
        let expect = head.expect_continue;
        c.h1.start_body(framing, req.body_limit, false);
        c.h1.time_body(Instant::now());
        let exchange = match self.site.http_relay_streamed(gw, head, &c.info) {
            Ok(x) => x,
            Err((gw, e)) => return self.http_failed_early(slot, &gw, &e),
        };
        let wait = CONTINUE_WAIT.min(exchange.gateway.timeout);
        self.backend_connect(slot, exchange, true);
        if let Some(r) = self.conns[slot].as_mut().and_then(|c| c.proxy_relay.as_mut()).filter(|_| expect) {
            r.continue_wait = Some(Instant::now() + wait);
        }
    }

    /// The backend said nothing for [`CONTINUE_WAIT`] to a client waiting
    /// for `100 Continue`: warren's own goes, and the body is read (as
    /// curl does when a server ignores Expect). True if so.
    fn continue_anyway(&mut self, slot: usize) -> bool {
        let c = self.conns[slot].as_mut().expect("conn");
        let r = c.proxy_relay.as_mut().expect("relaying");
        if !r.exchange.awaits_continue() || r.continue_wait.is_none_or(|at| at > Instant::now()) {
            return false;
        }
        r.exchange.continue_anyway();
        r.continue_wait = None;
        c.out.interim(CONTINUE);
        c.h1.time_body(Instant::now());
        true
    }

    /// Takes what the client has sent of its body, as far as there is room
    /// for it: Ok(true) when some was taken, or the room ran out (what the
    /// client sent may wait in the connection's input, read already: no
    /// edge will come for it once the backend has taken what is queued).
    pub(super) fn pull_body(&mut self, slot: usize) -> Result<bool, BodyFailed> {
        let mut pulled = false;
        loop {
            let Conn { h1, proxy_relay, req, .. } = self.conns[slot].as_mut().expect("conn");
            let r = proxy_relay.as_mut().expect("relaying");
            let room = UPLOAD_HIGH.saturating_sub(r.unsent());
            if !r.exchange.body_open() || r.exchange.awaits_continue() {
                return Ok(pulled);
            }
            if room == 0 {
                return Ok(true);
            }
            let step = h1.poll_body(room, &mut |d| r.exchange.push_body(d));
            req.as_mut().expect("request in flight").bytes_received += step.used as u64;
            pulled |= step.used > 0;
            match step.state {
                BodyState::Error(e) => return Err(BodyFailed::Bad(e)),
                BodyState::Done => {
                    r.exchange.end_body();
                    return Ok(true);
                }
                BodyState::More if step.used > 0 => continue,
                BodyState::More => {}
            }
            match self.read_more(slot) {
                ReadResult::Data => {}
                ReadResult::Blocked => return Ok(pulled),
                ReadResult::Closed | ReadResult::PlainHttp => return Err(BodyFailed::ClientGone),
            }
        }
    }

    /// The connection's deadline: the earlier of the clocks that run.
    pub(super) fn relay_deadline(&mut self, slot: usize) {
        let c = self.conns[slot].as_mut().expect("conn");
        let r = c.proxy_relay.as_ref().expect("relaying");
        let due = match r.waits() {
            (true, true) => r.backend_due.min(c.h1.deadline(self.stopping)),
            (true, false) => c.h1.deadline(self.stopping),
            (false, _) => r.backend_due,
        };
        c.deadline = r.continue_wait.map_or(due, |at| at.min(due));
    }

    /// The deadline passed with the client's body awaited and its clock
    /// out: the client's error (408), if it is the client's. True when
    /// the connection should be driven on; None: the backend's timeout.
    pub(super) fn upload_expired(&mut self, slot: usize) -> Option<bool> {
        if self.continue_anyway(slot) {
            return Some(true);
        }
        let c = self.conns[slot].as_ref().expect("conn");
        let (on_client, _) = c.proxy_relay.as_ref().expect("relaying").waits();
        if !on_client || c.h1.deadline(self.stopping) > Instant::now() {
            return None;
        }
        let Expiry::Body(e) = c.h1.timed_out(self.stopping) else { return None };
        Some(self.upload_refused(slot, e))
    }

    /// The client's body failed (bad framing 400, LimitRequestBody 413,
    /// too slow 408): the backend's connection is closed (it got part of
    /// a body), and the client gets the error, or its connection is closed
    /// if the answer has begun. True when the connection should be driven on.
    pub(super) fn upload_refused(&mut self, slot: usize, e: HttpError) -> bool {
        let c = self.conns[slot].as_mut().expect("conn");
        let r = c.proxy_relay.take().expect("relaying");
        let _ = self.epoll.delete(r.backend.socket.as_fd());
        if r.exchange.streaming() {
            self.site.hosts[r.exchange.gateway.host].error_log.error(Some(c.info.useragent), &e.reason);
            self.abort(slot);
            return false;
        }
        self.body_error(slot, e);
        true
    }

    /// The exchange ends before the client's body did (the answer came
    /// first, or failed): the rest is not read as a request; the
    /// connection lingers after the answer and closes.
    pub(super) fn upload_cut(&mut self, slot: usize) {
        let c = self.conns[slot].as_mut().expect("conn");
        if c.h1.body_done() {
            return;
        }
        c.h1.discard_input();
        if let Some(ex) = c.req.as_mut() {
            ex.keep_alive = false;
            ex.linger = true;
        }
    }
}
