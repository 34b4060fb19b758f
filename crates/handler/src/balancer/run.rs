//! A balanced request from election to answer: the member elected when the
//! request is routed (its URL joined to the path, the BALANCER_* variables
//! set), then on a thread the exchange, sent to the next member when the
//! elected one cannot be connected to. The request's body is read once,
//! before the first attempt, so that every attempt sends all of it. A
//! member that refused a connection is out of every child's elections for
//! its `retry=` (60 s), or until its health check passes. An idempotent
//! request whose member went away before answering is sent on too.

use std::cell::Cell;
use std::io::{Seek, SeekFrom};
use std::sync::Arc;

use warren_config::{FcgiAddr, LogLevel, ProxyTarget};
use warren_http::RequestHead;

use super::{Elected, NoMember, SharedState};
use crate::gateway::Gateway;
use crate::filters::RequestFilters;
use crate::spool::Spooled;
use crate::{Body, BodySource, ConnInfo, Outcome, Request, RequestBody, Response, Site};

/// The failures a balanced request is sent on to another member for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// The member could not be connected to (or is in this child's error
    /// state): nothing of the request reached it.
    Connect,
    /// The connection closed or was reset before any of the answer came
    /// (a member killed mid-request): sent again only if the method is
    /// idempotent (RFC 9110 9.2.2), as nginx's proxy_next_upstream does.
    LostBeforeAnswer,
}

thread_local! {
    /// Said by the exchanges, which run on this thread, with the backend
    /// they failed to reach; read after each attempt. Only the first is
    /// kept, and only one naming the member counts: an attempt may run
    /// other exchanges after the member's (an ErrorDocument or an internal
    /// redirect to another backend), whose failures are not the member's.
    static FAILED: Cell<Option<(Failure, FcgiAddr)>> = const { Cell::new(None) };
}

fn note(failure: Failure, backend: &FcgiAddr) {
    FAILED.with(|f| {
        let first = f.take();
        f.set(first.or_else(|| Some((failure, backend.clone()))));
    });
}

/// Said by an exchange that could not connect to its backend.
pub(crate) fn note_connect_failure(backend: &FcgiAddr) {
    note(Failure::Connect, backend);
}

/// Said by an exchange whose backend went away before answering.
pub(crate) fn note_lost_before_answer(backend: &FcgiAddr) {
    note(Failure::LostBeforeAnswer, backend);
}

/// What this thread's exchanges had said before a balanced request began
/// (it may run inside another's attempt, as its ErrorDocument): put back
/// when it ends.
struct OuterFailure(Option<(Failure, FcgiAddr)>);

impl Drop for OuterFailure {
    fn drop(&mut self) {
        FAILED.set(self.0.take());
    }
}

impl Site {
    /// The elected member's target for a request routed to `balancer://name`
    /// with `path` below it, the BALANCER_* variables in `filters`; or the
    /// 503 when no member is usable.
    pub(crate) fn elect_member(&self, req: Request, name: &str, path: &[u8], query: &[u8], filters: &mut Option<Box<RequestFilters>>) -> Result<(ProxyTarget, Elected), Box<Response>> {
        let bals = &self.balancers;
        let Some(b) = bals.find(name) else { return Err(Box::new(self.error(req, 500, &format!("proxy: balancer://{name} is not defined")))) };
        bals.start_checks(&self.error_log);
        let session = bals.session(b, req.head.header("cookie"), req.head.path_and_query());
        let m = match bals.elect(b, session.as_ref(), 0) {
            Ok(m) => m,
            Err(why) => {
                let why = match why {
                    NoMember::NoneUsable => format!("proxy: balancer://{name}: all workers are in error state"),
                    NoMember::SessionLost => format!("proxy: balancer://{name}: the session's worker (route {}) is unusable and nofailover is On", session.as_ref().map_or("", |s| s.route)),
                };
                return Err(Box::new(self.error(req, 503, &why)));
            }
        };
        let f = filters.get_or_insert_with(|| Box::new(RequestFilters::new(req.conn.useragent.ip(), req.conn.tls.is_some())));
        f.env.set("BALANCER_NAME", format!("balancer://{}", bals.list[b].name));
        if let Some(s) = &session {
            f.env.set("BALANCER_SESSION_STICKY", s.sticky);
            f.env.set("BALANCER_SESSION_ROUTE", s.route);
        }
        let member = bals.member(b, m);
        set_worker_env(&mut f.env, &member.url, member.route.as_deref());
        // A member with a route other than the one the session named: the
        // application may set the session's cookie anew (Apache's recipe
        // `Header add Set-Cookie ... env=BALANCER_ROUTE_CHANGED`).
        if member.route.as_deref().is_some_and(|r| session.as_ref().is_none_or(|s| s.route != r)) {
            f.env.set("BALANCER_ROUTE_CHANGED", "1");
        }
        let sticky = session.is_some();
        Ok((bals.target(b, m, path), Elected { balancer: b, member: m, tried: 0, path: path.to_vec(), query: query.to_vec(), sticky }))
    }

    /// Runs a balanced gateway: the elected member, then the next ones
    /// while a member cannot be connected to.
    pub(crate) fn run_balanced(&self, mut gw: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Response {
        let mut elected = *gw.balanced.take().expect("a balanced gateway");
        let Some(state) = self.balancers.state.clone() else { return self.error(Request::new(head, conn, gw.host), 500, "proxy: no balancer state") };
        let spooled = match crate::fastcgi::exchange::spool(body) {
            Ok(s) => s,
            Err(e) => {
                let mut r = self.error(Request::new(head, conn, gw.host), e.status, &e.reason);
                r.close = true;
                return r;
            }
        };
        let b = elected.balancer;
        let bal = &self.balancers.list[b];
        let log = &self.hosts[gw.host].error_log;
        let _outer = OuterFailure(FAILED.take());
        loop {
            let m = elected.member;
            elected.tried |= 1 << m;
            let cell = state.member(b, m);
            cell.began();
            let mut replay = match Replay::of(&spooled, body) {
                Ok(r) => r,
                Err(e) => {
                    cell.ended();
                    return self.error(Request::new(head, conn, gw.host), 500, &format!("proxy: re-reading the spooled request body: {e}"));
                }
            };
            FAILED.set(None);
            let r = self.run_gateway(Box::new(gw.again()), head, conn, &mut replay);
            let idempotent = matches!(head.method(), "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE");
            let failure = FAILED.take().filter(|(_, backend)| *backend == gw.backend.addr).map(|(f, _)| f);
            match failure {
                Some(Failure::Connect) => {}
                Some(Failure::LostBeforeAnswer) if idempotent => {}
                _ => {
                    cell.moved(spooled.len());
                    return counted(r, state, b, m);
                }
            }
            cell.ended();
            let member = &bal.members[m];
            let retry = member.retry.as_millis() as u64;
            if failure == Some(Failure::Connect) && cell.failed(retry) {
                log.error(Some(conn.useragent), &format!("proxy: balancer://{}: worker {} in error state for {} s (retry=)", bal.name, member.url, retry / 1000));
            }
            let failovers = elected.tried.count_ones() - 1;
            if (elected.sticky && bal.no_failover) || bal.max_attempts.is_some_and(|n| failovers >= n) {
                return r;
            }
            let Ok(next) = self.balancers.elect(b, None, elected.tried) else { return r };
            let what = if failure == Some(Failure::Connect) { "refused the connection" } else { "went away before answering" };
            log.log(LogLevel::Info, Some(conn.useragent), &format!("proxy: balancer://{}: {} {what}; trying {}", bal.name, member.url, bal.members[next].url));
            elected.member = next;
            self.retarget(&mut gw, &elected);
        }
    }

    /// Points a gateway at its elected member (after a failover).
    fn retarget(&self, gw: &mut Gateway, e: &Elected) {
        let t = self.balancers.target(e.balancer, e.member, &e.path);
        let member = self.balancers.member(e.balancer, e.member);
        gw.backend = t.backend;
        if let (Some(plan), Some(origin)) = (gw.http.as_mut(), t.http) {
            plan.target = crate::proxy_http::request::encode_path(&self.balancers.member_path(e.balancer, e.member, &e.path)).into_bytes();
            plan.target.extend_from_slice(&e.query);
            plan.origin = *origin;
        }
        gw.script = member.url.clone();
        if let Some(f) = gw.filters.as_mut() {
            set_worker_env(&mut f.env, &member.url, member.route.as_deref());
        }
        gw.set_param("BALANCER_WORKER_NAME", member.url.as_bytes().to_vec());
        gw.set_param("BALANCER_WORKER_ROUTE", member.route.as_deref().unwrap_or("").as_bytes().to_vec());
    }
}

fn set_worker_env(env: &mut crate::env::RequestEnv, url: &str, route: Option<&str>) {
    env.set("BALANCER_WORKER_NAME", url);
    match route {
        Some(r) => env.set("BALANCER_WORKER_ROUTE", r),
        None => env.unset("BALANCER_WORKER_ROUTE"),
    }
}

/// A gateway routed to a balancer carries its election (and so runs on a
/// thread, where it may fail over).
pub(crate) fn carry(outcome: Outcome, elected: Option<Elected>) -> Outcome {
    match (outcome, elected) {
        (Outcome::Gateway(mut gw), Some(e)) => {
            gw.balanced = Some(Box::new(e));
            Outcome::Gateway(gw)
        }
        (other, _) => other,
    }
}

/// The answer with the member's accounting: bytes moved, and the request
/// in progress until its body is sent.
fn counted(mut r: Response, state: Arc<SharedState>, b: usize, m: usize) -> Response {
    let busy = Busy { state, b, m };
    match std::mem::replace(&mut r.body, Body::Empty) {
        Body::Stream { source, len } => r.body = Body::Stream { source: Box::new(Counted { inner: source, busy }), len },
        other => {
            busy.state.member(b, m).moved(other.len());
            r.body = other;
        }
    }
    r
}

/// A request in progress on a member, ended when dropped.
struct Busy {
    state: Arc<SharedState>,
    b: usize,
    m: usize,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.state.member(self.b, self.m).ended();
    }
}

/// A streamed answer, its bytes counted for bytraffic as they pass.
struct Counted {
    inner: Box<dyn BodySource>,
    busy: Busy,
}

impl BodySource for Counted {
    fn next_piece(&mut self, out: &mut Vec<u8>) -> std::io::Result<bool> {
        let before = out.len();
        let more = self.inner.next_piece(out)?;
        self.busy.state.member(self.busy.b, self.busy.m).moved(out.len().saturating_sub(before) as u64);
        Ok(more)
    }

    fn read_ahead(&self) -> bool {
        self.inner.read_ahead()
    }

    fn take_encoder(&mut self) -> Option<crate::compress::StreamEncoder> {
        self.inner.take_encoder()
    }
}

/// The request's body, read once, given whole to each attempt.
struct Replay<'a> {
    whole: Option<Spooled>,
    len: u64,
    /// The client's body, read already: interim answers (103 Early Hints)
    /// go to the client through it, whichever member sends them.
    client: &'a mut dyn RequestBody,
}

impl<'a> Replay<'a> {
    fn of(spooled: &Spooled, client: &'a mut dyn RequestBody) -> std::io::Result<Replay<'a>> {
        let copy = match spooled {
            Spooled::None => Spooled::None,
            Spooled::Memory(b) => Spooled::Memory(b.clone()),
            Spooled::File(f, len) => {
                let mut f = f.try_clone()?;
                f.seek(SeekFrom::Start(0))?;
                Spooled::File(f, *len)
            }
        };
        Ok(Replay { len: copy.len(), whole: Some(copy), client })
    }
}

impl RequestBody for Replay<'_> {
    fn length(&self) -> Option<u64> {
        Some(self.len)
    }

    fn present(&self) -> bool {
        self.len > 0
    }

    fn read(&mut self, _: &mut [u8]) -> Result<usize, warren_http::HttpError> {
        Ok(0)
    }

    fn take_spooled(&mut self) -> Option<Spooled> {
        self.whole.take()
    }

    fn interim(&mut self, answer: &crate::proxy_http::response::Interim) {
        self.client.interim(answer);
    }
}
