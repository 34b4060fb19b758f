//! Running a [`Gateway`] where blocking is fine: the request body spooled
//! whole, a pool's child leased for the exchange, the request sent, the
//! answer's head read and its body streamed; a local `Location:` followed,
//! and failures answered as Apache does.

use std::io::{self, Read};
use std::sync::Arc;

use warren_config::{FcgiAddr, LogLevel};
use warren_fcgi::Client;
use warren_http::{HttpError, RequestHead};

use super::backend::BackendPool;
use crate::gateway::stream::{describe, BackendStream};
use crate::gateway::error::GatewayError;
use crate::gateway::Gateway;
use crate::internal_redirect;
use super::{Answer, AtHead, Failure, PoolBusy, PoolLease, Pulled, Pumped, ResponseReader};
use crate::spool::{Spool, Spooled};
use crate::{Body, BodySource, ConnInfo, Outcome, Request, RequestBody, Response, Site};

/// Internal redirects (a local `Location:`) followed for one request.
const MAX_REDIRECTS: u8 = 10;
/// The I/O buffers of an exchange, on the stack: heap buffers this size,
/// freed by many threads, stay in malloc's per-thread arenas.
const IO_BUF: usize = 16 * 1024;

impl Site {
    /// Runs a FastCGI request: the body to the application, its answer back.
    pub fn run_gateway(&self, mut gw: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Response {
        match gw.capture.take() {
            Some(capture) => capture.answer(self, head, conn, self.run_gateway_uncached(gw, head, conn, body)),
            None => self.run_gateway_uncached(gw, head, conn, body),
        }
    }

    fn run_gateway_uncached(&self, mut gw: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Response {
        if gw.is_cgi() {
            return self.run_cgi(gw, head, conn, body);
        }
        if gw.balanced.is_some() {
            return self.run_balanced(gw, head, conn, body);
        }
        if gw.http.is_some() {
            return self.run_http(gw, head, conn, body);
        }
        let body: &mut dyn RequestBody = if !gw.takes_body() {
            // An error document is a GET: the client's body is not its to
            // read. Read and dropped, as Apache does, so the connection can
            // go on (or, if that fails, the MPM closes it).
            discard(body);
            &mut NoBody
        } else {
            body
        };
        let answer = spool(body).map_err(Failed::Client).and_then(|spooled| match self.exchange(&gw, conn, spooled) {
            Err(Failed::LostChild(e)) if self.retry_lost_child(&mut gw, head, conn, &e) => self.exchange(&gw, conn, Spooled::None),
            other => other,
        });
        let failed = match answer {
            Ok(Reply::Response(r)) => return r,
            Ok(Reply::Redirect(location)) => return self.internal_redirect(&gw, head, conn, &location),
            // The MPM closes the connection if the client's body was left half read.
            Err(Failed::Backend(f) | Failed::LostChild(f)) => self.gateway_failed(&gw, head, conn, &f),
            Err(Failed::Pool(name, why)) => self.pool_unavailable(&gw, head, conn, &name, why),
            Err(Failed::Client(e)) => {
                let mut r = self.error(Request::new(head, conn, gw.host), e.status, &e.reason);
                r.close = true;
                r
            }
        };
        self.run_outcome(self.follow_error_document(Outcome::Ready(failed), head, conn), head, conn)
    }

    /// Runs what an internal redirect led to, here where blocking is fine.
    pub(crate) fn run_outcome(&self, outcome: Outcome, head: &RequestHead, conn: &ConnInfo) -> Response {
        match outcome {
            Outcome::Ready(r) => r,
            Outcome::Blocking(work) => work(),
            Outcome::Gateway(next) => self.run_gateway(next, head, conn, &mut NoBody),
            Outcome::OffLoop => unreachable!("only Site::handle_on_loop asks for that"),
        }
    }

    fn exchange(&self, gw: &Gateway, conn: &ConnInfo, mut spooled: Spooled) -> Result<Reply, Failed> {
        // A pool's child is leased for the whole exchange, answer included.
        let mut lease = None;
        let leased_addr;
        let addr = match &gw.backend.addr {
            FcgiAddr::Pool(name) => {
                let pools = self.pools.get().ok_or(Failed::Pool(name.clone(), PoolBusy::Unknown))?;
                let l = pools.lease(name, &gw.uri, self.settings.timeout).map_err(|b| Failed::Pool(name.clone(), b))?;
                leased_addr = FcgiAddr::Unix(l.socket().to_path_buf());
                lease = Some(l);
                &leased_addr
            }
            a => a,
        };
        let content_length = (!matches!(spooled, Spooled::None)).then(|| spooled.len());
        let mut params: Vec<(&[u8], &[u8])> = gw.params.iter().map(|(n, v)| (n.as_bytes(), v.as_slice())).collect();
        let len_text = content_length.map(|n| n.to_string());
        if let Some(t) = &len_text {
            params.push((b"CONTENT_LENGTH", t.as_bytes()));
        }
        // A kept connection may have been closed by the application since
        // (a php-fpm child retired): then a fresh one is tried.
        let reuse = gw.backend.reuse;
        let no_body = matches!(spooled, Spooled::None);
        let begin = |c: &mut Client<BackendStream>| if no_body { c.begin_without_body(&params, reuse) } else { c.begin(&params, reuse) };
        let mut client = None;
        if reuse {
            if let Some(s) = self.caches.backends.take(addr) {
                let mut c = Client::new(s);
                if begin(&mut c).is_ok() {
                    client = Some(c);
                }
            }
        }
        let mut client = match client {
            Some(c) => c,
            None => {
                let s = match (&gw.backend.addr, &lease) {
                    (FcgiAddr::Pool(name), Some(l)) => BackendStream::connect_pool(l.socket(), gw.timeout).map_err(|e| match e.kind() {
                        io::ErrorKind::WouldBlock => Failed::Pool(name.clone(), PoolBusy::QueueFull),
                        _ => Failed::Backend(GatewayError::connect(&describe(addr), &e)),
                    }),
                    _ => BackendStream::connect(addr, gw.timeout).map_err(|e| {
                        crate::balancer::note_connect_failure(addr);
                        Failed::Backend(GatewayError::connect(&describe(addr), &e))
                    }),
                }?;
                let mut c = Client::new(s);
                begin(&mut c).map_err(|e| Failed::Backend(GatewayError::io("sending the request to", addr, &e)))?;
                c
            }
        };
        // The body: an application that stops reading it (it answered
        // early, or died) ends the sending; its answer is still read.
        let mut send_failed = false;
        // On the heap, and only for a body: a worker thread's stack keeps
        // every page it ever touched.
        let mut buf = match &spooled {
            Spooled::File(..) => vec![0u8; IO_BUF],
            Spooled::None | Spooled::Memory(_) => Vec::new(),
        };
        match &mut spooled {
            Spooled::None => {}
            Spooled::Memory(b) => send_failed = client.stdin(b).is_err(),
            Spooled::File(f, _) => loop {
                let n = f.read(&mut buf).map_err(|e| Failed::Client(HttpError::new(500, format!("reading the spooled request body: {e}"))))?;
                if n == 0 || client.stdin(&buf[..n]).is_err() {
                    send_failed = n != 0;
                    break;
                }
            },
        }
        if !send_failed && !no_body {
            let _ = client.end_stdin();
        }

        let mut answer = self.answer(gw, conn);
        let mut stream = client.into_stream();
        if !reuse && !send_failed && self.half_close.allowed(&gw.backend.addr) {
            stream.end_request();
        }
        let lease_ref = lease.as_deref();
        let at_head = loop {
            match answer.head(gw) {
                Ok(Some(h)) => break h,
                Ok(None) => {}
                Err(e) => return Err(Failed::Backend(e.or_killed(lease_ref))),
            }
            let (error, gone) = match answer.fill_from(&mut stream) {
                Ok(0) => (answer.closed(), true),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => (GatewayError::io("reading the response headers from", addr, &e), e.kind() == io::ErrorKind::ConnectionReset),
            };
            if gone {
                // Gone before answering: a balancer may try the next member.
                crate::balancer::note_lost_before_answer(addr);
            }
            return Err(match answer.failure(error, gone, lease_ref) {
                Failure::Lost(e) => Failed::LostChild(e),
                Failure::Failed(e) | Failure::CutShort(e) => Failed::Backend(e.or_killed(lease_ref)),
            });
        };
        let pool = (reuse && !send_failed).then(|| self.caches.backends.clone());
        let r = match at_head {
            AtHead::Redirect(location) => return Ok(Reply::Redirect(location)),
            AtHead::Whole(r) => {
                if let Some(pool) = pool {
                    pool.put(addr, stream);
                }
                drop(lease);
                r
            }
            AtHead::Partial { mut response, first, len, buffers } => {
                let source = FcgiOutput { stream: Some(stream), answer, first: Some(first), addr: addr.clone(), pool, lease, read_ahead: buffers };
                response.body = Body::Stream { source: Box::new(source), len };
                response
            }
        };
        Ok(Reply::Response(r))
    }

    /// A local `Location:` with status 200: the request is served again as
    /// a GET of that URL, as CGI says.
    pub(crate) fn internal_redirect(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, location: &str) -> Response {
        match self.redirect_outcome(gw, head, conn, location) {
            (outcome, Some(new_head)) => self.run_outcome(outcome, &new_head, conn),
            (outcome, None) => self.run_outcome(outcome, head, conn),
        }
    }

    /// What an internal redirect to `location` leads to, and the request
    /// head it was routed with (None if it could not be made).
    pub fn redirect_outcome(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, location: &str) -> (Outcome, Option<RequestHead>) {
        if gw.redirects >= MAX_REDIRECTS {
            let why = format!("more than {MAX_REDIRECTS} internal redirects from FastCGI Location headers");
            return (Outcome::Ready(self.error(Request::new(head, conn, gw.host), 500, &why)), None);
        }
        let Some(new_head) = internal_redirect::location_head(location, head) else {
            return (Outcome::Ready(self.error(Request::new(head, conn, gw.host), 500, &format!("FastCGI: bad Location for an internal redirect: {location}"))), None);
        };
        let outcome = match self.handle(&new_head, conn) {
            Outcome::Gateway(mut next) => {
                next.redirects = gw.redirects + 1;
                Outcome::Gateway(next)
            }
            other => other,
        };
        (outcome, Some(new_head))
    }

    /// The answer to an exchange that failed before its head was sent, and
    /// the error-log line.
    pub fn gateway_failed(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, e: &GatewayError) -> Response {
        let why = format!("{} (script {})", e.why, gw.script);
        let mut r = match gw.error_status {
            // The error document itself failed: the first error's built-in
            // page, never a second redirect.
            Some(first) => {
                let mut r = self.error(Request::new(head, conn, gw.host), first, &format!("{why}, while answering {first} with its ErrorDocument"));
                r.error_document = None;
                r
            }
            None => self.error(Request::new(head, conn, gw.host), e.status, &why),
        };
        r.filters = gw.filters.clone();
        r
    }

    /// Whether a request whose pool child went away before answering (`e`)
    /// is sent once more (see [`Gateway::retry_lost_child`]); the error log
    /// says so.
    pub fn retry_lost_child(&self, gw: &mut Gateway, head: &RequestHead, conn: &ConnInfo, e: &GatewayError) -> bool {
        let again = gw.retry_lost_child(head);
        if again {
            self.hosts[gw.host].error_log.log(LogLevel::Warn, Some(conn.useragent), &format!("{}; sending the request to another child", e.why));
        }
        again
    }

    /// The 503 (with Retry-After) for a request that got no child of `pool`.
    pub fn pool_unavailable(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, pool: &str, why: PoolBusy) -> Response {
        let why = match why {
            PoolBusy::QueueFull => format!("pool {pool}: every child is busy and its queue (listen.backlog) is full"),
            PoolBusy::Timeout => format!("pool {pool}: no child became free within Timeout"),
            PoolBusy::Unknown => format!("pool {pool} is not running"),
        };
        let e = GatewayError { status: 503, why };
        self.gateway_failed(gw, head, conn, &e).header("Retry-After", "5")
    }

    /// The exchange that reads the answer to `gw`.
    pub fn answer(&self, gw: &Gateway, conn: &ConnInfo) -> Answer {
        Answer::new(ResponseReader::new(describe(&gw.backend.addr), self.hosts[gw.host].error_log.clone(), conn.useragent, gw.script.clone()))
    }
}

/// What an exchange came to.
pub(crate) enum Reply {
    Response(Response),
    Redirect(String),
}

enum Failed {
    Backend(GatewayError),
    /// A pool's child went away (killed, crashed, recycled) before any of
    /// its answer came.
    LostChild(GatewayError),
    /// No child of this pool could be had.
    Pool(String, PoolBusy),
    /// The client's body could not be read: the answer is this error.
    Client(HttpError),
}

/// For an internal redirect: a GET has no body.
pub(crate) struct NoBody;

/// Reads a request body to its end, keeping none of it.
/// Reads what is left of the client's body, at most `limit` bytes: true
/// if it ended there (the connection may then serve the next request).
pub(crate) fn drained_within(body: &mut dyn RequestBody, limit: u64) -> bool {
    let mut buf = [0u8; 4096];
    let mut read = 0u64;
    while read <= limit {
        match body.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => read += n as u64,
            Err(_) => return false,
        }
    }
    false
}

/// Reads and drops what is left of the client's body, however long.
pub(crate) fn discard(body: &mut dyn RequestBody) {
    drained_within(body, u64::MAX);
}

impl RequestBody for NoBody {
    fn length(&self) -> Option<u64> {
        None
    }
    fn present(&self) -> bool {
        false
    }
    fn read(&mut self, _: &mut [u8]) -> Result<usize, HttpError> {
        Ok(0)
    }
}

/// The whole body, read before the application is given the request (see
/// `spool`), unless the MPM has read it already.
pub(crate) fn spool(body: &mut dyn RequestBody) -> Result<Spooled, HttpError> {
    if let Some(whole) = body.take_spooled() {
        return Ok(whole);
    }
    if !body.present() {
        return Ok(Spooled::None);
    }
    let mut spool = Spool::default();
    let mut buf = vec![0u8; IO_BUF];
    loop {
        let n = body.read(&mut buf)?;
        if n == 0 {
            break;
        }
        spool.push(&buf[..n]).map_err(spool_error)?;
    }
    spool.finish().map_err(spool_error)
}

pub fn spool_error(e: io::Error) -> HttpError {
    HttpError::new(500, format!("cannot spool the request body to a temporary file: {e}"))
}

/// The application's output after the headers, as a thread pulls it.
struct FcgiOutput {
    stream: Option<BackendStream>,
    answer: Answer,
    first: Option<Vec<u8>>,
    addr: FcgiAddr,
    /// Where the connection goes back when the request ends cleanly.
    pool: Option<Arc<BackendPool>>,
    /// The pool child serving it, given back when the answer ends.
    lease: Option<Box<dyn PoolLease>>,
    read_ahead: bool,
}

impl BodySource for FcgiOutput {
    fn read_ahead(&self) -> bool {
        self.read_ahead
    }

    fn next_piece(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        if let Some(first) = self.first.take() {
            if !first.is_empty() {
                out.extend_from_slice(&first);
                return Ok(true);
            }
        }
        // `out` may hold earlier pieces (the response cache reads a whole
        // answer into one buffer): only what this call adds is progress.
        let start = out.len();
        loop {
            let Some(stream) = self.stream.as_mut() else { return Ok(false) };
            let failure = match self.answer.pump(&mut Pulled { out }) {
                Pumped::Ended => {
                    let stream = self.stream.take().expect("stream");
                    if let Some(pool) = &self.pool {
                        pool.put(&self.addr, stream);
                    }
                    self.lease = None;
                    return Ok(out.len() > start);
                }
                Pumped::More if out.len() > start => return Ok(true),
                Pumped::CutShort(e) => e,
                Pumped::More => match self.answer.fill_from(stream) {
                    Ok(0) => self.answer.closed(),
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => GatewayError::io("reading the response from", &self.addr, &e),
                },
            };
            self.stream = None;
            self.answer.log_cut_short(&failure);
            return Err(io::Error::other(failure.why));
        }
    }
}
