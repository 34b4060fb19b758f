//! The rules of a connection, shared by every MPM and free of I/O: the
//! [`Phase`]s it goes through, what a head and a body may take (limits,
//! [`ReadClock`]s), whether it stays open after a response
//! ([`KeepAlivePolicy`], [`Next`]), and how long a closing one lingers.
//! [`crate::h1::Connection`] applies them to a connection; the blocking
//! driver and the event loop only wait as it says: in `read` or poll, or
//! until a deadline on the loop.
//!
//! A head too large is refused (431) by [`crate::head_scan`] as it arrives;
//! the rest is here: 413 for a body over LimitRequestBody, 408 when
//! RequestReadTimeout or Timeout runs out, the keep-alive decision and the
//! lingering close.

use std::time::{Duration, Instant};

use crate::read_timeout::{ReadClock, ReadTimeout, Stage};
use crate::error::HttpError;
use crate::head_scan::HeadLimits;
use crate::request::{BodyFraming, RequestHead};

/// How long a half-closed connection is drained before it is closed.
pub const LINGER: Duration = Duration::from_secs(2);
/// A stopping server closes a kept-alive connection once it has been idle
/// this long: a request the client sent before it saw our close would have
/// arrived by then. Sooner, the close could cross a request on the wire.
pub const DRAIN_IDLE: Duration = Duration::from_secs(1);

/// The phase of one connection, in the order an MPM drives it. Blocking MPMs
/// walk it with blocking calls; the event MPM parks a connection in
/// `KeepAlive` without a thread, and resumes `Writing` when the socket drains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the first byte of a request on a kept-alive connection.
    KeepAlive,
    /// Reading a request head.
    ReadingHead,
    /// Reading (or discarding) a request body.
    ReadingBody,
    /// Sending a response.
    Writing,
    /// Waiting on a FastCGI application and relaying its answer (the
    /// event MPM does this on its loop for requests without a body).
    Proxying,
    /// Half-closed after an error: draining what the client still sends so
    /// that it sees our response rather than a reset.
    Lingering,
}

/// Server-side keep-alive settings: KeepAlive, MaxKeepAliveRequests,
/// KeepAliveTimeout.
#[derive(Clone, Copy, Debug)]
pub struct KeepAlivePolicy {
    pub enabled: bool,
    /// 0 means unlimited, as in Apache.
    pub max_requests: u32,
    /// How long a kept-alive connection waits for the next request's first byte.
    pub timeout: Duration,
}

impl KeepAlivePolicy {
    /// Whether the connection stays open after the response to `head`, the
    /// `served`-th request on it (1-based). A stopping server keeps none.
    pub fn keep_alive(&self, head: &RequestHead, served: u32, stopping: bool) -> bool {
        !stopping && self.enabled && head.keep_alive && (self.max_requests == 0 || served < self.max_requests)
    }

    /// When a wait for the next request that began at `since` gives up.
    pub fn idle_deadline(&self, since: Instant, stopping: bool) -> Instant {
        since + if stopping { self.timeout.min(DRAIN_IDLE) } else { self.timeout }
    }

    /// How a connection whose wait for the next request gave up is closed:
    /// while stopping, a request may be on its way, so what arrives is
    /// drained rather than answered with a reset.
    pub fn idle_end(stopping: bool) -> Next {
        if stopping {
            Next::Linger
        } else {
            Next::Close
        }
    }
}

/// What becomes of a connection after a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait for the next request.
    KeepAlive,
    /// Half-close and drain for [`LINGER`]: unread input (a body not read,
    /// a request that failed) would otherwise turn our close into a reset
    /// that can destroy the response before the client reads it.
    Linger,
    Close,
}

impl Next {
    /// After a response that was `written` whole (or not), on an exchange
    /// that said `keep_alive` and whose input may not all have been read
    /// (`unread_input`). A response that said keep-alive is followed by a
    /// wait for the next request even when stopping: the client may have
    /// sent it.
    pub fn after_response(written: bool, keep_alive: bool, unread_input: bool) -> Next {
        match (written, keep_alive, unread_input) {
            (false, ..) => Next::Close,
            (true, true, _) => Next::KeepAlive,
            (true, false, true) => Next::Linger,
            (true, false, false) => Next::Close,
        }
    }
}

/// LimitRequestBody against a declared Content-Length, before anything of
/// the body is read (`limit`: u64::MAX for none).
pub fn declared_body_within(framing: BodyFraming, limit: u64) -> Result<(), HttpError> {
    match framing {
        BodyFraming::Length(n) if n > limit => Err(HttpError::new(413, format!("request body of {n} bytes larger than LimitRequestBody ({limit})"))),
        _ => Ok(()),
    }
}

/// LimitRequestBody against what a body has decoded to so far (a chunked
/// body declares no length).
pub fn received_body_within(received: u64, limit: u64) -> Result<(), HttpError> {
    if received > limit {
        return Err(HttpError::new(413, format!("request body larger than LimitRequestBody ({limit})")));
    }
    Ok(())
}

/// The rules a connection is read under: the head's limits, keep-alive and
/// the timeouts (Timeout, RequestReadTimeout). Built once from the settings
/// by each MPM thread or loop.
#[derive(Clone, Copy, Debug)]
pub struct ConnRules {
    pub limits: HeadLimits,
    pub keep_alive: KeepAlivePolicy,
    /// Timeout: the longest wait for the client to send or to take what is written.
    pub timeout: Duration,
    /// RequestReadTimeout header=.
    pub head_timeout: ReadTimeout,
    /// RequestReadTimeout body=.
    pub body_timeout: ReadTimeout,
}

impl ConnRules {
    /// The clock of a request head started at `now`, `received` bytes of
    /// which have come already (a pipelined one).
    pub fn head_clock(&self, now: Instant, received: usize) -> ReadClock {
        self.clock(Stage::Header, self.head_timeout, now, received)
    }

    /// The clock of a request body started at `now`, `received` bytes of
    /// which came with the head.
    pub fn body_clock(&self, now: Instant, received: usize) -> ReadClock {
        self.clock(Stage::Body, self.body_timeout, now, received)
    }

    fn clock(&self, stage: Stage, rule: ReadTimeout, now: Instant, received: usize) -> ReadClock {
        let mut clock = ReadClock::start(stage, rule, self.timeout, now);
        clock.received(received as u64, now);
        clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_head;

    const LIMITS: HeadLimits = HeadLimits { request_line: 100, field_size: 100, fields: 10, head: 1000 };

    fn head(text: &str) -> RequestHead {
        parse_head(text.as_bytes(), &LIMITS).expect("valid").expect("complete").0
    }

    fn policy(max_requests: u32, timeout: u64) -> KeepAlivePolicy {
        KeepAlivePolicy { enabled: true, max_requests, timeout: Duration::from_secs(timeout) }
    }

    #[test]
    fn keep_alive_follows_the_client_the_count_and_the_stop() {
        let h11 = head("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let close = head("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        let h10 = head("GET / HTTP/1.0\r\n\r\n");
        let p = policy(3, 5);
        assert!(p.keep_alive(&h11, 1, false));
        assert!(p.keep_alive(&h11, 2, false));
        assert!(!p.keep_alive(&h11, 3, false), "MaxKeepAliveRequests reached");
        assert!(!p.keep_alive(&close, 1, false));
        assert!(!p.keep_alive(&h10, 1, false), "HTTP/1.0 without keep-alive");
        assert!(!p.keep_alive(&h11, 1, true), "stopping");
        assert!(policy(0, 5).keep_alive(&h11, 1_000_000, false), "0: unlimited");
        assert!(!KeepAlivePolicy { enabled: false, ..p }.keep_alive(&h11, 1, false));
    }

    #[test]
    fn an_idle_wait_is_cut_short_when_stopping_and_then_lingers() {
        let t0 = Instant::now();
        assert_eq!(policy(0, 5).idle_deadline(t0, false), t0 + Duration::from_secs(5));
        assert_eq!(policy(0, 5).idle_deadline(t0, true), t0 + DRAIN_IDLE);
        let short = KeepAlivePolicy { timeout: Duration::from_millis(300), ..policy(0, 0) };
        assert_eq!(short.idle_deadline(t0, true), t0 + Duration::from_millis(300), "never longer than KeepAliveTimeout");
        assert_eq!(KeepAlivePolicy::idle_end(false), Next::Close);
        assert_eq!(KeepAlivePolicy::idle_end(true), Next::Linger);
    }

    #[test]
    fn after_a_response() {
        assert_eq!(Next::after_response(true, true, false), Next::KeepAlive);
        assert_eq!(Next::after_response(true, true, true), Next::KeepAlive);
        assert_eq!(Next::after_response(true, false, true), Next::Linger);
        assert_eq!(Next::after_response(true, false, false), Next::Close);
        assert_eq!(Next::after_response(false, true, true), Next::Close, "a client that did not take the response is not waited for");
    }

    #[test]
    fn body_limits() {
        assert!(declared_body_within(BodyFraming::Length(10), 10).is_ok());
        let e = declared_body_within(BodyFraming::Length(11), 10).unwrap_err();
        assert_eq!((e.status, e.reason.as_str()), (413, "request body of 11 bytes larger than LimitRequestBody (10)"));
        assert!(declared_body_within(BodyFraming::Chunked, 0).is_ok(), "a chunked body is checked as it comes");
        assert!(declared_body_within(BodyFraming::Length(u64::MAX), u64::MAX).is_ok());
        assert!(received_body_within(10, 10).is_ok());
        let e = received_body_within(11, 10).unwrap_err();
        assert_eq!((e.status, e.reason.as_str()), (413, "request body larger than LimitRequestBody (10)"));
    }

    #[test]
    fn clocks_count_what_came_before_they_started() {
        let t0 = Instant::now();
        let rules = ConnRules {
            limits: LIMITS,
            keep_alive: policy(0, 5),
            timeout: Duration::from_secs(60),
            head_timeout: ReadTimeout { initial: 10, max: 20, min_rate: 100 },
            body_timeout: ReadTimeout::OFF,
        };
        let head = rules.head_clock(t0, 500);
        assert_eq!(head.bytes(), 500);
        assert_eq!(head.deadline(), t0 + Duration::from_secs(15));
        let e = head.timeout_error();
        assert_eq!((e.status, e.reason.as_str()), (408, "request header read timeout (RequestReadTimeout header=10-20,MinRate=100)"));
        let body = rules.body_clock(t0, 0);
        assert_eq!(body.deadline(), t0 + Duration::from_secs(60), "an off stage: Timeout alone");
        assert_eq!(body.timeout_error().reason, "request body read timeout (Timeout 60)");
    }
}
