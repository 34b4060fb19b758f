//! The HTTP reverse proxy, as Apache's mod_proxy_http: a request routed by
//! `ProxyPass /path http://backend/...` becomes a [`Gateway`] plan carrying
//! an [`HttpPlan`]; the MPMs run it where blocking is fine (a worker
//! thread, also under the event MPM and for HTTP/2 streams), as they run
//! CGI programs. The exchange: a kept connection to the backend or a new
//! one ([`connections`]; TLS for an `https://` backend, the client
//! configuration made by `warren_tls::proxy_client` from the host's
//! SSLProxy* lines), the request head ([`request`]) and the client's
//! body streamed as it comes (chunked when its length is not known), the
//! answer's head read ([`response`]), its fields rewritten, and its body
//! streamed back to the client as the backend sends it. A connection
//! whose answer ended cleanly goes back to the idle ones.
//!
//! A kept connection the backend closed meanwhile fails at once: a request
//! with no body and an idempotent method is then sent again on a new
//! connection. Failures get Apache's answers, with one error-log line
//! naming the backend: refused 503 (and the backend is not tried again for
//! `retry=`), its TLS refused (certificate, name, dates, handshake) 502
//! (not marked down: it is up), no answer within the timeout 504, a reset, a malformed head
//! or a body cut short 502. A body cut short once the answer has begun
//! makes the MPM close the client's connection.
//!
//! Beside it: [`plan`], what a gateway plan carries for an HTTP backend; [`relay`], the same exchange sans-IO for the event loop;
//! [`stream`], a connection to a backend (plain or TLS) every part reads;
//! [`tunnel`], a WebSocket upgrade's tunnel and the places a child gives
//! tunnels; [`tunnel_clients`], the server-wide count of each client's
//! tunnels in shared memory (ProxyWebsocketMaxPerClient).

pub mod connections;
pub mod plan;
pub mod relay;
pub mod request;
pub mod response;
pub mod stream;
pub mod tunnel;
pub mod tunnel_clients;

use std::io::{self, Read, Write};
use warren_config::proxy_http::{HttpOrigin, ProxyTls};
use warren_config::{FcgiAddr, LogLevel, ProxyTarget};
use warren_http::{BodyFraming, RequestHead};

use crate::fastcgi::exchange::discard;
use crate::gateway::error::GatewayError;
use crate::gateway::Gateway;
use crate::{Body, BodySource, ConnInfo, Outcome, Request, RequestBody, Response, Site};

use connections::ConnectError;
use plan::HttpPlan;
use connections::HttpBackends;
use request::{BodyWriter, Forwarding};
use response::{BodyReader, Framing, Parsed};

/// Bodies announced at most this long are read whole before the answer
/// starts, so that one cut short still gets the client a 502.
const READ_WHOLE: u64 = 64 * 1024;
const IO_BUF: usize = 16 * 1024;
/// After a failed exchange, at most this much of the client's body is read
/// to keep its connection; a longer one closes it.
const LEFT_TO_DRAIN: u64 = 64 * 1024;

impl Site {
    /// The plan for `route`'s HTTP backend, `path` being the backend's URL
    /// path for this request (decoded; encoded here).
    pub(crate) fn http_gateway(&self, req: Request, route: &ProxyTarget, origin: &HttpOrigin, path: &[u8], query: &[u8]) -> Outcome {
        let h = &self.hosts[req.host];
        let timeout = route.backend.timeout.or(h.config.proxy_timeout).unwrap_or(self.settings.timeout);
        // Joined by hand: format! costs more than the rest of the routing.
        let mut target = request::encode_path(path).into_bytes();
        target.extend_from_slice(query);
        let scheme = if origin.tls_name.is_some() { "https://" } else { "http://" };
        // The backend's URL as the logs name it (a query's bytes that are
        // not UTF-8 are shown replaced there, and only there).
        let shown = String::from_utf8_lossy(&target);
        let mut name = String::with_capacity(scheme.len() + origin.authority.len() + shown.len());
        for part in [scheme, &origin.authority, &shown] {
            name.push_str(part);
        }
        let plan = HttpPlan { origin: origin.clone(), target, continue_slot: None };
        Outcome::Gateway(Box::new(Gateway::for_http(req.host, route.backend.clone(), timeout, name, req.head.path_and_query().to_vec(), plan)))
    }

    /// Runs a request on its HTTP backend.
    pub(crate) fn run_http(&self, gw: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Response {
        let body: &mut dyn RequestBody = if gw.takes_body() {
            body
        } else {
            discard(body);
            &mut crate::fastcgi::exchange::NoBody
        };
        match self.http_exchange(&gw, head, conn, body) {
            Ok(r) => r,
            Err(e) => {
                let mut failed = self.gateway_failed(&gw, head, conn, &e);
                // The client's body may be left half read: what is left of
                // a small one is read, so that the connection goes on.
                failed.close |= body.present() && !crate::fastcgi::exchange::drained_within(body, LEFT_TO_DRAIN);
                self.run_outcome(self.follow_error_document(Outcome::Ready(failed), head, conn), head, conn)
            }
        }
    }

    fn http_exchange(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Result<Response, GatewayError> {
        let plan = gw.http.as_ref().expect("an HTTP plan");
        let addr = &gw.backend.addr;
        let name = match plan.origin.tls_name {
            Some(_) => format!("https://{}", gw.backend_name()),
            None => gw.backend_name(),
        };
        let backends = &self.caches.http_backends;
        if let Some(left) = backends.in_error(addr) {
            crate::balancer::note_connect_failure(addr);
            return Err(GatewayError { status: 503, why: format!("proxy: HTTP: backend {name} is in error state for {} s more (retry=)", left.as_secs() + 1) });
        }
        let host = &self.hosts[gw.host];
        let rules = &host.config.proxy_http;
        let spooled = match body.take_spooled() {
            // proxy-sendcl: the body is read whole, then sent with its length.
            None if body.present() && gw.buffers_request_body() => Some(spool_whole(body, &name)?),
            spooled => spooled,
        };
        let framing = match (&spooled, body.present(), body.length()) {
            (Some(s), _, _) if !matches!(s, crate::spool::Spooled::None) => BodyFraming::Length(s.len()),
            (Some(_), _, _) | (None, false, _) => BodyFraming::None,
            (None, true, Some(n)) => BodyFraming::Length(n),
            (None, true, None) => BodyFraming::Chunked,
        };
        // Upgrade is hop-by-hop: it goes on only where the route allows it.
        let websocket = plan.origin.websocket && request::asks_websocket(head);
        let slot = match websocket {
            true => Some(self.tunnel_slot(backends, rules, conn, &name, head.is_h2_websocket())?),
            false => None,
        };
        // The client waits for 100 Continue and has sent nothing of its
        // body: the backend's 100 (or its silence) lets it send, and a
        // final answer first spares it the upload (RFC 9110 10.1.1).
        let expect_continue = head.expect_continue && spooled.is_none() && framing != BodyFraming::None && !websocket;
        let mut request_head = self.backend_head(gw, head, conn, framing, websocket, expect_continue);
        let h2_accept = (websocket && head.is_h2_websocket()).then(|| request::add_websocket_key(&mut request_head));
        let is_head = head.method() == "HEAD";
        let h1_client = self.passes_interims(gw.host, head);

        let replayable = replayable(head.method(), framing);
        let connect_failed = |e: ConnectError| match e {
            ConnectError::Connect(e) => {
                crate::balancer::note_connect_failure(addr);
                backends.mark_down(addr, plan.origin.retry);
                GatewayError { status: 503, why: format!("proxy: HTTP: attempt to connect to {name} failed: {e}") }
            }
            // The backend is up: it is not marked down, and the next request tries again.
            ConnectError::Tls(why) => GatewayError { status: 502, why: format!("proxy: HTTPS: TLS to {name} failed: {why}") },
        };
        // A tunnel's connection is its own from the start: never a kept one.
        let mut conn_to = backends.get(addr, &plan.origin, &rules.tls, gw.timeout, gw.backend.reuse && !websocket).map_err(connect_failed)?;
        let mut buf = vec![0u8; IO_BUF];
        let mut got = Vec::new();
        let mut interims = Interims { count: 0, h1_client };
        // The body was not sent: the backend may still wait for it, so its
        // connection serves no other request.
        let mut withheld = false;
        let (answer, got) = loop {
            let sent = if expect_continue {
                match conn_to.stream.write_all(&request_head) {
                    Err(_) => Err(Sending::Backend),
                    Ok(()) => match await_continue(&mut conn_to.stream, &mut buf, &mut got, gw.timeout, &mut interims, body) {
                        // Its body goes; the MPM's 100 Continue as it is read passes the backend's on.
                        Ok(true) => self.send_request(&mut conn_to.stream, &[], framing, false, body),
                        // A final answer came first: the body is not sent.
                        Ok(false) => {
                            withheld = true;
                            Ok(())
                        }
                        Err(e) => return Err(head_failed(e, &name)),
                    },
                }
            } else {
                self.send_request(&mut conn_to.stream, &request_head, framing, spooled.is_some(), body)
            };
            let sent = match (sent, spooled.as_ref()) {
                (Ok(()), Some(s)) => send_spooled(&mut conn_to.stream, s).map_err(|_| Sending::Backend),
                (other, _) => other,
            };
            if let Err(Sending::Client(e)) = sent {
                return Err(GatewayError { status: e.status, why: format!("proxy: reading the request body for {name}: {}", e.reason) });
            }
            // An answer may have come even though the backend stopped reading the body.
            match read_head(&mut conn_to.stream, &mut buf, std::mem::take(&mut got), is_head, websocket, &mut interims, body) {
                Ok(x) => break x,
                Err(HeadError::ClosedEarly(_)) if conn_to.reused && replayable => {
                    self.hosts[gw.host].error_log.log(LogLevel::Debug, Some(conn.useragent), &format!("proxy: HTTP: kept connection to {name} was closed; sending the request on a new one"));
                    conn_to = connections::Connection { stream: backends.connect(addr, &plan.origin, &rules.tls, gw.timeout).map_err(connect_failed)?, reused: false };
                }
                Err(e) => {
                    if matches!(e, HeadError::ClosedEarly(_)) {
                        crate::balancer::note_lost_before_answer(addr);
                    }
                    return Err(head_failed(e, &name));
                }
            }
        };
        let (answer, used) = answer;
        if let (101, Some(slot)) = (answer.status, slot) {
            // The HTTP/2 client cannot check the handshake (RFC 8441): we
            // do, as mod_http2 does (502 for a 101 that is not an answer
            // to our key).
            if let Some(accept) = h2_accept {
                let got = answer.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-accept")).map(|(_, v)| v.trim());
                if got != Some(accept.as_str()) {
                    return Err(GatewayError { status: 502, why: format!("proxy: WebSocket: {name} answered 101 without the Sec-WebSocket-Accept of our key ({})", got.unwrap_or("none")) });
                }
            }
            let mut r = gw.proxied_response(101);
            r.headers = answer.fields;
            r.headers.push((crate::HeaderName::Owned("Upgrade".into()), "websocket".into()));
            r.close = true;
            let idle = rules.websocket_idle.filter(|d| !d.is_zero()).unwrap_or(gw.timeout);
            r.tunnel = Some(Box::new(tunnel::Tunnel { backend: conn_to.stream, early: got[used..].to_vec(), idle, name, log: host.error_log.clone(), client_addr: conn.useragent, _slot: slot }));
            return Ok(r);
        }
        let mut reader = BodyReader::new(answer.framing, got[used..].to_vec());
        let keep = answer.keep_alive && gw.backend.reuse && !websocket && !withheld;
        let mut r = match self.answer_head(gw, head, conn, answer.status, answer.fields) {
            Answered::Proxied(r) => r,
            Answered::Overridden(page) => return Ok(page),
        };
        let finish = |reader: &BodyReader, stream: BackendConn| {
            if keep && reader.clean_end() {
                backends.put(addr, &plan.origin, &rules.tls, stream);
            }
        };
        match answer.framing {
            Framing::Empty => {
                keep_head_length(&mut r, is_head);
                finish(&reader, conn_to.stream);
                Ok(r)
            }
            Framing::Length(n) if n <= READ_WHOLE => {
                let mut whole = Vec::with_capacity(n as usize);
                loop {
                    match reader.next(&mut conn_to.stream, &mut whole, &mut buf) {
                        Ok(true) => {}
                        Ok(false) => break,
                        Err(why) => return Err(GatewayError { status: if why.contains("timed out") { 504 } else { 502 }, why: format!("proxy: HTTP: error reading the response body from {name}: {why}") }),
                    }
                }
                finish(&reader, conn_to.stream);
                r.body = Body::Bytes(whole);
                Ok(r)
            }
            framing => {
                let len = match framing {
                    Framing::Length(n) => Some(n),
                    _ => None,
                };
                let pool = keep.then(|| self.caches.http_backends.clone());
                let source = HttpOutput { stream: Some(conn_to.stream), reader, buf, addr: addr.clone(), origin: plan.origin.clone(), tls: rules.tls.clone(), pool, name, log: host.error_log.clone(), client: conn.useragent, read_ahead: !gw.backend.flush_packets };
                r.body = Body::Stream { source: Box::new(source), len };
                Ok(r)
            }
        }
    }

    /// The request head the backend gets for `head` (its body framed as
    /// `framing`), on a thread or on the event loop.
    pub(crate) fn backend_head(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, framing: BodyFraming, websocket: bool, expect_continue: bool) -> Vec<u8> {
        let plan = gw.http.as_ref().expect("an HTTP plan");
        let host = &self.hosts[gw.host];
        let rules = &host.config.proxy_http;
        let client_host = head.host().map(String::from_utf8_lossy).unwrap_or_default();
        let backend_host = if rules.preserve_host.unwrap_or(false) && !client_host.is_empty() { &client_host } else { plan.origin.authority.as_str() };
        let forwarded = rules.add_headers.unwrap_or(true).then(|| (conn.useragent.ip().to_canonical().to_string(), &*client_host, host.name.as_str()));
        let via = rules.via.unwrap_or_default();
        let via_by = self.via_by(gw.host, conn, via);
        let forwarding = Forwarding { target: &plan.target, host: backend_host, forwarded, via, via_by, framing, close: !gw.backend.reuse, expect_continue, websocket };
        match gw.filters.as_ref().and_then(|f| crate::filters::headers::request_headers(f, head, crate::filters::Timing { received: std::time::SystemTime::now(), start: std::time::Instant::now() })) {
            // After RequestHeader rules.
            Some(rewritten) => request::head(head.method(), &rewritten, &forwarding),
            None => request::head(head.method(), &request::client_fields(head), &forwarding),
        }
    }

    /// Via's received-by for this host (its name and the port the client
    /// came to), when ProxyVia adds an entry; else nothing (no allocation).
    fn via_by(&self, host: usize, conn: &ConnInfo, via: warren_config::proxy_http::Via) -> String {
        match via {
            warren_config::proxy_http::Via::On | warren_config::proxy_http::Via::Full => format!("{}:{}", self.hosts[host].name, conn.local.port()),
            _ => String::new(),
        }
    }

    /// The client's response to a backend's final head (its body to be
    /// added): ProxyPassReverse and its cookie forms applied, Via added; or
    /// this server's error page when ProxyErrorOverride replaces the
    /// backend's.
    pub(crate) fn answer_head(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, status: u16, fields: Vec<(crate::HeaderName, String)>) -> Answered {
        let host = &self.hosts[gw.host];
        let rules = &host.config.proxy_http;
        if rules.error_override.unwrap_or(false) && status >= 400 {
            return Answered::Overridden(self.error_page(Request::new(head, conn, gw.host), status));
        }
        let mut r = gw.proxied_response(status);
        r.headers.reserve(fields.len() + 1);
        // Made only for an answer that has a URL field to rewrite.
        let mut public_base = None;
        for (n, v) in fields {
            let v = if !rules.reverse.is_empty() && (n.eq_ignore_ascii_case("location") || n.eq_ignore_ascii_case("content-location") || n.eq_ignore_ascii_case("uri")) {
                let base = public_base.get_or_insert_with(|| format!("{}://{}", if conn.tls.is_some() { "https" } else { "http" }, self.client_authority(Request::new(head, conn, gw.host))));
                response::reverse_url(&v, rules, base, head.path_and_query()).unwrap_or(v)
            } else if n.eq_ignore_ascii_case("set-cookie") && !(rules.cookie_domains.is_empty() && rules.cookie_paths.is_empty()) {
                response::reverse_cookie(&v, rules)
            } else {
                v
            };
            r.headers.push((n, v));
        }
        let via = rules.via.unwrap_or_default();
        if let Some(ours) = request::via_value(via, &self.via_by(gw.host, conn, via), "1.1") {
            match r.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("via")) {
                Some((_, v)) => *v = format!("{v}, {ours}"),
                None => r.headers.push((crate::HeaderName::Owned("Via".into()), ours)),
            }
        }
        Answered::Proxied(r)
    }

    /// How many WebSocket tunnels a child's threads may hold: all but one
    /// of a worker child's (one is left for other requests); a prefork
    /// child is its one tunnel, the parent starting others up to
    /// MaxRequestWorkers. An event child's loop carries its tunnels, which
    /// hold no thread: only MaxChildConnections bounds them.
    /// A place for one more tunnel from the client of `conn`, or why not.
    /// An HTTP/2 stream's tunnel (`on_stream`, RFC 8441) holds no thread
    /// of its own (the thread or loop serving its connection carries it):
    /// under event only the per-client bound applies to it; under prefork
    /// and worker a connection's tunnels together hold its thread's place.
    fn tunnel_slot(&self, backends: &connections::HttpBackends, rules: &warren_config::proxy_http::ProxyHttp, conn: &ConnInfo, name: &str, on_stream: bool) -> Result<tunnel::TunnelSlot, GatewayError> {
        let per_client = rules.websockets_per_client.unwrap_or(warren_config::proxy_http::WEBSOCKETS_PER_CLIENT);
        let client = Some((&self.tunnel_clients, conn.useragent.ip(), per_client));
        let slot = match on_stream {
            true => {
                // Under prefork and worker the connection's thread carries its tunnels and is held while they last.
                let thread = (self.settings.mpm != warren_config::Mpm::Event).then(|| ((conn.peer, conn.local), self.tunnel_bound()));
                backends.tunnels.take_on_stream(client, thread)
            }
            false => backends.tunnels.take(self.tunnel_bound(), client),
        };
        slot.map_err(|why| match why {
            tunnel::NoSlot::Child => GatewayError { status: 503, why: format!("proxy: WebSocket: every thread this child may give to tunnels holds one; upgrade to {name} refused") },
            tunnel::NoSlot::Client => GatewayError { status: 503, why: format!("proxy: WebSocket: this client holds {per_client} tunnels (ProxyWebsocketMaxPerClient; an IPv6 client counts as its /64); upgrade to {name} refused") },
        })
    }

    fn tunnel_bound(&self) -> usize {
        match self.settings.mpm {
            warren_config::Mpm::Prefork => 1,
            warren_config::Mpm::Event => usize::MAX,
            _ => (self.settings.tuning.threads_per_child as usize).saturating_sub(1).max(1),
        }
    }

    /// The head, then the client's body as it comes (when the MPM has not
    /// spooled it).
    fn send_request(&self, to: &mut BackendConn, head: &[u8], framing: BodyFraming, spooled: bool, body: &mut dyn RequestBody) -> Result<(), Sending> {
        if !head.is_empty() {
            to.write_all(head).map_err(|_| Sending::Backend)?;
        }
        if spooled || framing == BodyFraming::None {
            return Ok(());
        }
        let writer = BodyWriter { chunked: framing == BodyFraming::Chunked };
        let mut chunk = vec![0u8; IO_BUF];
        let mut backend_gone = None;
        loop {
            let n = body.read(&mut chunk).map_err(Sending::Client)?;
            if n == 0 {
                break;
            }
            // A backend that stopped reading (it answered early) gets no
            // more; the client's body is still read to its end, so that the
            // connection can go on.
            if backend_gone.is_none() {
                if let Err(e) = writer.write(to, &chunk[..n]) {
                    backend_gone = Some(e);
                }
            }
        }
        match backend_gone {
            Some(_) => Err(Sending::Backend),
            None => writer.finish(to).map_err(|_| Sending::Backend),
        }
    }
}

type BackendConn = stream::HttpStream;

/// Whether a request may be sent twice: nothing of it is lost if a kept
/// connection turns out closed (RFC 9110 9.2.2).
pub(crate) fn replayable(method: &str, framing: BodyFraming) -> bool {
    framing == BodyFraming::None && matches!(method, "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE")
}

/// What a backend's final head comes to for the client.
pub enum Answered {
    /// The backend's answer, its body to follow.
    Proxied(Response),
    /// ProxyErrorOverride: this server's page instead (the backend's body
    /// is not wanted).
    Overridden(Response),
}

/// Why sending the request stopped.
enum Sending {
    /// The backend stopped taking it (its answer is read all the same).
    Backend,
    Client(warren_http::HttpError),
}

/// The client's body read whole (memory, or a file past the spool's bound).
fn spool_whole(body: &mut dyn RequestBody, name: &str) -> Result<crate::spool::Spooled, GatewayError> {
    let mut spool = crate::spool::Spool::default();
    let mut chunk = vec![0u8; IO_BUF];
    let failed = |e: io::Error| GatewayError { status: 500, why: format!("proxy: cannot keep the request body for {name}: {e}") };
    loop {
        let n = body.read(&mut chunk).map_err(|e| GatewayError { status: e.status, why: format!("proxy: reading the request body for {name}: {}", e.reason) })?;
        if n == 0 {
            return spool.finish().map_err(failed);
        }
        spool.push(&chunk[..n]).map_err(failed)?;
    }
}

fn send_spooled(to: &mut BackendConn, spooled: &crate::spool::Spooled) -> io::Result<()> {
    match spooled {
        crate::spool::Spooled::None => Ok(()),
        crate::spool::Spooled::Memory(b) => to.write_all(b),
        crate::spool::Spooled::File(f, _) => {
            let mut f = f.try_clone()?;
            io::copy(&mut f, to).map(|_| ())
        }
    }
}

enum HeadError {
    /// Closed or reset before any of the answer came.
    ClosedEarly(String),
    Timeout,
    Malformed(String),
}

impl Site {
    /// Whether a backend's interim answers (but 100 Continue) go on to
    /// this request's client: never to an HTTP/1.0 one (RFC 9110 15.2), to
    /// HTTP/2 streams if their host says `H2EarlyHints On` (as Apache), and
    /// there only where the driver can send them ahead (the event MPM).
    pub(crate) fn passes_interims(&self, host: usize, head: &RequestHead) -> bool {
        match head.version {
            warren_http::Version::Http10 => false,
            warren_http::Version::Http11 => true,
            warren_http::Version::Http2 => self.hosts[host].config.h2.early_hints,
        }
    }
}

/// The interim answers of one exchange.
struct Interims {
    count: usize,
    h1_client: bool,
}

impl Interims {
    /// Passes one on to the client: not 100 Continue, which the MPM sends
    /// as it reads the body, and nothing to an HTTP/1.0 client (RFC 9110
    /// 15.2). Too many make the answer a broken one.
    fn pass_on(&mut self, i: response::Interim, body: &mut dyn RequestBody) -> Result<(), HeadError> {
        self.count += 1;
        if self.count > response::MAX_INTERIM {
            return Err(HeadError::Malformed(format!("more than {} interim (1xx) answers", response::MAX_INTERIM)));
        }
        if i.status != 100 && self.h1_client {
            body.interim(&i);
        }
        Ok(())
    }
}

/// Reads until the final head is whole (`got`: what was read already),
/// interim answers passed on: the head and where it ends in the
/// bytes read.
fn read_head(from: &mut BackendConn, buf: &mut [u8], mut got: Vec<u8>, is_head: bool, upgrade: bool, interims: &mut Interims, body: &mut dyn RequestBody) -> Result<((response::Head, usize), Vec<u8>), HeadError> {
    let mut read_any = !got.is_empty();
    loop {
        match response::parse(&got, is_head, upgrade) {
            Ok(Parsed::Final(h, used)) => return Ok(((h, used), got)),
            Ok(Parsed::Interim(i, used)) => {
                got.drain(..used);
                interims.pass_on(i, body)?;
                continue;
            }
            Ok(Parsed::Partial) => {}
            Err(why) => return Err(HeadError::Malformed(why)),
        }
        let n = match from.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Err(HeadError::Timeout),
            Err(e) if !read_any => return Err(HeadError::ClosedEarly(e.to_string())),
            Err(e) => return Err(HeadError::Malformed(e.to_string())),
        };
        if n == 0 {
            let why = "connection closed before the response head".to_string();
            return Err(if read_any { HeadError::Malformed(why) } else { HeadError::ClosedEarly(why) });
        }
        read_any = true;
        got.extend_from_slice(&buf[..n]);
    }
}

/// How long a backend asked `Expect: 100-continue` has to answer before
/// the body is sent all the same (RFC 9110 10.1.1 lets a client stop
/// waiting; curl waits as long): a backend that ignores Expect then gets
/// its body a second late, not never.
pub const CONTINUE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// After a head sent with `Expect: 100-continue`: whether to send the
/// body (the backend's 100 came, or nothing within [`CONTINUE_WAIT`]), or
/// not (its final answer came first; its bytes are left in `got`). Other
/// interim answers are passed on meanwhile.
fn await_continue(from: &mut BackendConn, buf: &mut [u8], got: &mut Vec<u8>, timeout: std::time::Duration, interims: &mut Interims, body: &mut dyn RequestBody) -> Result<bool, HeadError> {
    let waited = from.set_timeouts(CONTINUE_WAIT.min(timeout)).map_err(|e| HeadError::ClosedEarly(e.to_string()));
    let send_body = waited.and_then(|()| loop {
        match response::parse(got, false, false) {
            Ok(Parsed::Interim(i, used)) => {
                got.drain(..used);
                if i.status == 100 {
                    break Ok(true);
                }
                interims.pass_on(i, body)?;
                continue;
            }
            Ok(Parsed::Final(..)) => break Ok(false),
            Ok(Parsed::Partial) => {}
            Err(why) => break Err(HeadError::Malformed(why)),
        }
        match from.read(buf) {
            Ok(0) => break Err(HeadError::ClosedEarly("connection closed before the response head".into())),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => break Ok(true),
            Err(e) => break Err(HeadError::ClosedEarly(e.to_string())),
        }
    })?;
    from.set_timeouts(timeout).map_err(|e| HeadError::ClosedEarly(e.to_string()))?;
    Ok(send_body)
}

/// The client's answer when the backend's head did not come whole.
fn head_failed(e: HeadError, name: &str) -> GatewayError {
    match e {
        HeadError::Timeout => GatewayError { status: 504, why: format!("proxy: HTTP: timeout reading the status line from {name} (ProxyTimeout)") },
        HeadError::ClosedEarly(why) | HeadError::Malformed(why) => GatewayError { status: 502, why: format!("proxy: HTTP: error reading the status line from {name}: {why}") },
    }
}

/// A bodiless answer: to HEAD, it keeps the length the backend gave.
pub(crate) fn keep_head_length(r: &mut Response, is_head: bool) {
    let len = r.headers.iter().position(|(n, _)| n.eq_ignore_ascii_case("content-length")).map(|i| r.headers.remove(i).1);
    if let Some(n) = len.and_then(|l| l.parse::<u64>().ok()).filter(|&n| n > 0 && is_head) {
        r.body = Body::Stream { source: Box::new(NoMore), len: Some(n) };
    }
}

/// A HEAD answer's body: none, whatever length it announces.
struct NoMore;

impl BodySource for NoMore {
    fn next_piece(&mut self, _: &mut Vec<u8>) -> io::Result<bool> {
        Ok(false)
    }
}

/// The backend's body after the head, as it arrives.
struct HttpOutput {
    stream: Option<BackendConn>,
    reader: BodyReader,
    buf: Vec<u8>,
    addr: FcgiAddr,
    origin: HttpOrigin,
    tls: ProxyTls,
    /// Where the connection goes back when the body ends cleanly.
    pool: Option<std::sync::Arc<HttpBackends>>,
    name: String,
    log: std::sync::Arc<crate::logs::ErrorLog>,
    client: std::net::SocketAddr,
    /// Read at the backend's pace, what the client has not taken held by
    /// the MPM (the default), or at the client's (`flushpackets=on`).
    read_ahead: bool,
}

impl BodySource for HttpOutput {
    fn read_ahead(&self) -> bool {
        self.read_ahead
    }

    fn next_piece(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let Some(stream) = self.stream.as_mut() else { return Ok(false) };
        match self.reader.next(stream, out, &mut self.buf) {
            Ok(true) => Ok(true),
            Ok(false) => {
                let stream = self.stream.take().expect("stream");
                if let (Some(pool), true) = (&self.pool, self.reader.clean_end()) {
                    pool.put(&self.addr, &self.origin, &self.tls, stream);
                }
                Ok(false)
            }
            Err(why) => {
                self.stream = None;
                let line = format!("proxy: HTTP: error reading the response body from {}: {why}", self.name);
                self.log.error(Some(self.client), &line);
                Err(io::Error::other(line))
            }
        }
    }
}
