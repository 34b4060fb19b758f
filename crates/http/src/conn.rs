//! Connection-level rules shared by every MPM: whether a connection may stay
//! open after a response, and the phases a connection goes through.

use crate::request::RequestHead;

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

/// Server-side keep-alive settings: KeepAlive, MaxKeepAliveRequests.
#[derive(Clone, Copy, Debug)]
pub struct KeepAlivePolicy {
    pub enabled: bool,
    /// 0 means unlimited, as in Apache.
    pub max_requests: u32,
}

impl KeepAlivePolicy {
    /// Whether the connection stays open after the response to `head`, the
    /// `served`-th request on it (1-based).
    pub fn keep_alive(&self, head: &RequestHead, served: u32) -> bool {
        self.enabled && head.keep_alive && (self.max_requests == 0 || served < self.max_requests)
    }
}
