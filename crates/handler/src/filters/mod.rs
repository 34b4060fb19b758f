//! The response filter stage: every response plan passes through
//! [`apply`] once, just before the MPM encodes it (`Output::encode` in the
//! mpm crate, the one place every answer is written: static files, error
//! pages, redirects, server-status, FastCGI answers on a thread or relayed
//! by the event loop). Like Apache's output filters of type CONTENT_SET, in
//! Apache's order: `expires` (mod_expires), then `headers` (mod_headers:
//! `Header`). A compression filter (mod_deflate) goes after them, at the
//! end of [`apply`], as Apache runs it after both.
//!
//! What a filter needs of the request travels on the response as one
//! [`RequestFilters`], made when the request is routed from the merged
//! per-directory layers (`dir_config::Effective`) that applied: the merged rules,
//! the request environment ([`RequestEnv`]), the client's address, and
//! whether the answer came from an application. A request whose layers have
//! no such directive gets none, and the stage costs one branch.
//!
//! `RequestHeader` rules act earlier, on what the application is told
//! (see `fastcgi`); they share `headers`' code.
//!
//! Adding a filter (compression, say): a module here with a function
//! called at its place in [`apply`]; its per-directory settings as
//! `DirConfig` fields counted by `DirConfig::has_filters` and merged into
//! [`RequestFilters`] by [`RequestFilters::for_request`]. It sees the
//! response's status, headers and [`Body`](crate::Body) (bytes, a file
//! range, or a stream, which it may wrap), the request head
//! (Accept-Encoding) and the environment (`no-gzip`). A FastCGI answer the
//! event loop relays is encoded with a `Body::Stream` whose pieces the loop
//! queues itself (`serve/src/event/fastcgi_relay.rs`): a filter that changes
//! a streamed body must be applied there too.

pub mod expires;
pub mod expr;
pub mod headers;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use warren_config::expires::ExpiresRule;
use warren_config::headers::HeaderRule;
use warren_http::RequestHead;

use crate::env::RequestEnv;
use crate::dir_config::Effective;
use crate::request::Request;
use crate::{Outcome, Response};

/// mod_expires' settings in force for a request.
#[derive(Clone, Debug, Default)]
pub struct ExpiresConfig {
    pub active: bool,
    /// Later entries win.
    pub by_type: Vec<(String, ExpiresRule)>,
    pub default: Option<ExpiresRule>,
}

/// What the filters (and the application's parameters) need of one
/// request.
#[derive(Clone, Debug)]
pub struct RequestFilters {
    /// `Header` rules in force, least specific layer first.
    pub headers: Vec<Arc<HeaderRule>>,
    /// `RequestHeader` rules in force.
    pub request_headers: Vec<Arc<HeaderRule>>,
    pub expires: Option<ExpiresConfig>,
    pub env: RequestEnv,
    pub remote: IpAddr,
    /// Whether the request came over TLS (`%{REQUEST_SCHEME}`).
    pub https: bool,
    /// The answer is a FastCGI application's: its headers are in both of
    /// Apache's tables, so `Header` (onsuccess) rules act whatever its status.
    pub from_application: bool,
    /// Request headers mod_rewrite's conditions read: the answer varies on them.
    pub vary: Vec<String>,
}

impl RequestFilters {
    /// No rules and an empty environment: for a stage that adds to the
    /// environment of a request no directive gave one (mod_rewrite's `E=`).
    pub fn new(remote: IpAddr, https: bool) -> RequestFilters {
        RequestFilters { headers: Vec::new(), request_headers: Vec::new(), expires: None, env: RequestEnv::default(), remote, https, from_application: false, vary: Vec::new() }
    }

    /// For a request routed to `url` with the layers `dir`; None when no
    /// layer has a Header, RequestHeader, Expires*, SetEnv* or
    /// BrowserMatch* directive.
    pub fn for_request(req: Request, url: &[u8], dir: &Effective) -> Option<Box<RequestFilters>> {
        if !dir.layers.iter().any(|l| l.has_filters()) {
            return None;
        }
        let mut f = RequestFilters { env: RequestEnv::for_request(req, url, dir), ..RequestFilters::new(req.conn.useragent.ip(), req.conn.tls.is_some()) };
        let mut expires = ExpiresConfig::default();
        let mut any_expires = false;
        for l in &dir.layers {
            f.headers.extend(l.headers.iter().cloned());
            f.request_headers.extend(l.request_headers.iter().cloned());
            if let Some(a) = l.expires_active {
                expires.active = a;
                any_expires = true;
            }
            expires.by_type.extend(l.expires_by_type.iter().cloned());
            if l.expires_default.is_some() {
                expires.default = l.expires_default;
            }
        }
        if any_expires && expires.active {
            f.expires = Some(expires);
        }
        Some(Box::new(f))
    }
}

/// When the request arrived, for `%t`, `%D` and access-based expiry.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub received: SystemTime,
    pub start: Instant,
}

/// The filter stage: `resp` as it will be sent. `head` is the request's
/// (None for input that did not parse). The filters' data stays on the
/// response for whatever comes after (the access log).
pub fn apply(resp: &mut Response, head: Option<&RequestHead>, timing: Timing) {
    let Some(f) = resp.filters.take() else { return };
    // Apache's special variable: no keep-alive after this response.
    if f.env.get("nokeepalive").is_some() {
        resp.close = true;
    }
    for name in &f.vary {
        resp.vary_on(name);
    }
    if let Some(e) = &f.expires {
        expires::apply(resp, e, timing);
    }
    if !f.headers.is_empty() {
        headers::apply_response(resp, &f, head, timing);
    }
    resp.filters = Some(f);
}

/// [`apply`] now rather than as the answer leaves, for the response
/// cache, which keeps the answer as it is sent (mod_expires' lifetimes
/// decide what it stores): only what the access log reads is left.
pub fn apply_now(resp: &mut Response, head: &RequestHead) {
    apply(resp, Some(head), Timing { received: SystemTime::now(), start: Instant::now() });
    if let Some(f) = resp.filters.as_mut() {
        f.vary.clear();
        f.expires = None;
        f.headers.clear();
    }
}

/// Gives an answer the filters of the request it answers, unless a
/// narrower routing (a FallbackResource, an internal redirect) already gave
/// it its own.
pub fn attach(outcome: Outcome, f: Option<Box<RequestFilters>>, head: &RequestHead) -> Outcome {
    let Some(f) = f else { return outcome };
    match outcome {
        Outcome::Ready(mut r) => {
            r.filters.get_or_insert(f);
            Outcome::Ready(r)
        }
        Outcome::Blocking(work) => Outcome::Blocking(Box::new(move || {
            let mut r = work();
            r.filters.get_or_insert(f);
            r
        })),
        Outcome::Gateway(mut gw) => {
            if !gw.has_filters() {
                gw.set_filters(f, head);
            }
            Outcome::Gateway(gw)
        }
        Outcome::OffLoop => Outcome::OffLoop,
    }
}
