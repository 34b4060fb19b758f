//! How a request is served, whatever carries it: HTTP/1.1 on the event
//! loop, HTTP/1.1 on a prefork or worker thread, or a stream of an HTTP/2
//! session. Drivers and sessions move bytes and call these; a change to
//! how a request starts or ends (a limit, the keep-alive decision, what
//! the scoreboard and the access log see) is made here once.
//!
//! - [`start`]: the request's client (mod_remoteip), the keep-alive
//!   decision, its [`Exchange`], the scoreboard, LimitRequestBody, and the
//!   handler's [`Outcome`] (a panicking handler answers 500).
//! - [`route_on_thread`] and [`run_work`]: what a thread that may block
//!   does with routing the loop handed over, or with blocking work.
//! - [`end`]: the access log line and the scoreboard's counts (server-status's
//!   and the metrics').

use std::panic::{catch_unwind, AssertUnwindSafe};

use warren_handler::site::LogWriters;
use warren_handler::{ConnInfo, Outcome, Response, Site};
use warren_http::{HttpError, KeepAlivePolicy, RequestHead};

use crate::exchange::{panic_response, Exchange};
use warren_mpm::scoreboard::{State, ThreadSlot};

/// What carries the request, for the keep-alive decision.
#[derive(Clone, Copy)]
pub enum Carrier<'a> {
    /// An HTTP/1.1 connection, `served` requests in (this one counted).
    Http1 { policy: &'a KeepAlivePolicy, served: u32, stopping: bool },
    /// An HTTP/2 stream: the connection outlives the request.
    Http2,
}

/// Where the request is routed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Router {
    /// On a thread that may block: everything routes here.
    Thread,
    /// On the event loop: routing that runs a site owner's patterns comes
    /// back as [`Outcome::OffLoop`], for a thread.
    Loop,
}

/// A started request: its exchange, and what the handler made of it, or
/// the error its declared body length is (LimitRequestBody), to answer
/// with [`Exchange::body_error`].
pub struct Started {
    pub exchange: Exchange,
    pub outcome: Result<Outcome, HttpError>,
}

/// Starts a request whose head has arrived. `info` is the connection's;
/// the request's client (mod_remoteip) is noted in it.
pub fn start(site: &Site, slot: &ThreadSlot, mut head: RequestHead, info: &mut ConnInfo, carrier: Carrier, router: Router) -> Started {
    site.find_useragent(&mut head, info);
    let keep_alive = match carrier {
        Carrier::Http1 { policy, served, stopping } => policy.keep_alive(&head, served, stopping),
        Carrier::Http2 => true,
    };
    // %I: the head as it came (an HTTP/2 header block), then the body.
    let received = head.wire_len() as u64;
    let mut exchange = Exchange::new(Some(head), keep_alive, received);
    exchange.note_start(slot, site, info);
    if let Err(e) = exchange.apply_body_limit(site, info) {
        return Started { exchange, outcome: Err(e) };
    }
    if router == Router::Thread {
        // The thread is the request's until it is answered (Apache's W);
        // the loop's slot is shared by all its connections and stays as is.
        slot.set(State::Writing);
    }
    let head = exchange.head.as_ref().expect("a started exchange has its head");
    let info = &*info;
    let outcome = catch_unwind(AssertUnwindSafe(|| match router {
        Router::Thread => site.handle(head, info),
        Router::Loop => site.handle_on_loop(head, info),
    }))
    .unwrap_or_else(|_| Outcome::Ready(panic_response(site, head, info)));
    Started { exchange, outcome: Ok(outcome) }
}

/// Routing the loop handed over ([`Outcome::OffLoop`]), on a thread that
/// may block: blocking work it leads to is done here too, so what comes
/// back is an answer or a gateway.
pub fn route_on_thread(site: &Site, head: &RequestHead, info: &ConnInfo) -> Outcome {
    catch_unwind(AssertUnwindSafe(|| match site.handle(head, info) {
        Outcome::Blocking(work) => Outcome::Ready(work()),
        outcome => outcome,
    }))
    .unwrap_or_else(|_| Outcome::Ready(panic_response(site, head, info)))
}

/// Runs an answer's blocking work; a panic answers 500.
pub fn run_work(work: Box<dyn FnOnce() -> Response + Send>, site: &Site, head: &RequestHead, info: &ConnInfo) -> Response {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|_| panic_response(site, head, info))
}

/// Where a request's end is recorded.
pub struct Records<'a> {
    pub site: &'a Site,
    pub logs: &'a mut LogWriters,
    pub slot: &'a ThreadSlot,
}

/// A request is over (answered, or cut short): its access log line, and
/// its count and duration on the scoreboard.
pub fn end(records: &mut Records, exchange: &Exchange, info: &ConnInfo, served: u32, aborted: bool) {
    exchange.log(records.logs, records.site, info, served, aborted);
    let duration_us = exchange.start.elapsed().as_micros() as u64;
    records.slot.end_request(exchange.bytes_sent, duration_us);
    let bucket = records.site.metrics.get().map_or(usize::MAX, |m| m.host_bucket(exchange.host));
    records.slot.metrics.request(bucket, exchange.status, exchange.bytes_sent, duration_us);
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod plan_tests;
