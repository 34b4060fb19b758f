//! An HTTP backend exchange without I/O, for the event loop: the bytes to
//! send the backend (the head of [`Site::backend_head`] and a body the loop
//! has read whole, or the client's body framed piece by piece as the loop
//! reads it: [`Site::http_relay_streamed`]), then the backend's bytes fed in as they come and taken
//! out as [`Event`]s: interim answers to pass on (103 Early Hints ...),
//! the client's response (whole when it is small, else
//! its head and then the pieces of its decoded body), the end, and whether
//! the connection may serve another request. The loop owns the sockets,
//! the timers and the client's side; the thread path ([`super`]) shares
//! the head building and the answer's rewriting.

use std::time::Duration;

use warren_config::proxy_http::HttpOrigin;
use warren_config::FcgiAddr;
use warren_http::{BodyFraming, RequestHead};

use super::request::BodyWriter;
use super::response::{self, BodyReader, Framing, Parsed};
use super::{Answered, READ_WHOLE};
use crate::gateway::error::GatewayError;
use crate::gateway::Gateway;
use crate::{Body, ConnInfo, Response, Site};

/// One exchange with an HTTP backend, driven by the loop.
pub struct HttpRelay {
    pub gateway: Box<Gateway>,
    /// The request, head and body, as one write; for a streamed body, what
    /// is still to be sent of it (the loop drops what went out).
    pub request: Vec<u8>,
    /// A streamed body the client is still sending, framed for the backend so.
    body_to_come: Option<BodyWriter>,
    /// The backend got `Expect: 100-continue`: the client is to send its
    /// body once the backend's 100 comes (or its silence says go on).
    awaiting_continue: bool,
    /// It may be sent again on a new connection when a kept one turns out
    /// closed before any of the answer came.
    pub replayable: bool,
    is_head: bool,
    /// The answer's bytes until its head is whole.
    got: Vec<u8>,
    /// Interim answers so far.
    interims: usize,
    state: State,
}

enum State {
    Head,
    /// A small body read whole before the response starts (so that one
    /// cut short still gets the client a 502).
    Whole { response: Response, body: Vec<u8>, reader: BodyReader, keep: bool },
    Streaming { reader: BodyReader, keep: bool },
    Done { reusable: bool },
}

/// What the backend's bytes came to.
pub enum Event {
    /// An interim answer (103 Early Hints ...) for an HTTP/1.1 or HTTP/2
    /// client: sent ahead of the final one.
    Interim(response::Interim),
    /// The whole response: send it; the exchange is over.
    Whole(Response),
    /// The response's head (its body to be relayed as [`Event::Data`]
    /// comes), and the body's length when known.
    Head(Response, Option<u64>),
    Data(Vec<u8>),
    /// The body is complete.
    End,
    /// The backend's `100 Continue` to a request that asked for it: for
    /// the client, which then sends its body.
    Continue,
}

/// How the exchange failed.
pub struct Failed {
    pub error: GatewayError,
    /// Nothing of the answer had come (a kept connection the backend
    /// closed meanwhile: a replayable request may be sent again).
    pub nothing_yet: bool,
}

impl Site {
    /// Whether the event loop can run this HTTP backend exchange itself: a
    /// plain `http://` or unix backend named by address (no resolver), and
    /// no WebSocket upgrade. Others (TLS, tunnels) run on a worker thread.
    pub fn http_on_loop(gw: &Gateway, head: &RequestHead) -> bool {
        let Some(plan) = gw.http.as_ref() else { return false };
        // A balancer's choice and the response cache's capture are made on
        // a thread (see Gateway::needs_thread).
        if gw.balanced.is_some() || gw.capture.is_some() {
            return false;
        }
        let by_address = match &gw.backend.addr {
            FcgiAddr::Unix(_) => true,
            FcgiAddr::Tcp { host, .. } => host.parse::<std::net::IpAddr>().is_ok(),
            FcgiAddr::Pool(_) => false,
        };
        by_address && plan.origin.tls_name.is_none() && !(plan.origin.websocket && super::request::asks_websocket(head))
    }

    /// Whether the event loop hands an upload to a thread with its body
    /// unread: the client waits for 100 Continue before sending a body
    /// this HTTP backend takes, the loop cannot relay the exchange itself
    /// ([`Site::streams_body`] is asked first), and the thread sends the backend `Expect:
    /// 100-continue` with the head and reads the client's body only once
    /// the backend's 100 came (or its silence). A client that then sends
    /// slowly holds that thread, so at most half a child's threads wait so
    /// (a slot taken here, given back with the plan); beyond, the loop
    /// reads the body and answers Expect itself, as before.
    pub fn forwards_continue(&self, gw: &mut Gateway, head: &RequestHead) -> bool {
        // A balancer's member is chosen on a thread that reads the body whole first.
        let wanted = gw.takes_body() && gw.balanced.is_none() && head.expect_continue && head.framing != BodyFraming::None;
        let Some(plan) = gw.http.as_mut().filter(|p| wanted && !(p.origin.websocket && super::request::asks_websocket(head))) else { return false };
        let bound = (self.settings.tuning.threads_per_child as usize / 2).max(1);
        // Counted for the child only: no bound per client address here.
        match self.caches.http_backends.continue_waits.take(bound, None) {
            Ok(slot) => {
                plan.continue_slot = Some(std::sync::Arc::new(slot));
                true
            }
            Err(_) => false,
        }
    }

    /// Starts an exchange for the loop, its body (if any) read whole.
    pub fn http_relay(&self, gateway: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: Option<&[u8]>) -> Result<HttpRelay, (Box<Gateway>, GatewayError)> {
        if let Some(left) = self.caches.http_backends.in_error(&gateway.backend.addr) {
            let why = format!("proxy: HTTP: backend {} is in error state for {} s more (retry=)", gateway.backend_name(), left.as_secs() + 1);
            return Err((gateway, GatewayError { status: 503, why }));
        }
        let body = body.filter(|b| gateway.takes_body() && !b.is_empty());
        let framing = body.map_or(BodyFraming::None, |b| BodyFraming::Length(b.len() as u64));
        let mut request = self.backend_head(&gateway, head, conn, framing, false, false);
        request.extend_from_slice(body.unwrap_or_default());
        let replayable = super::replayable(head.method(), framing);
        Ok(HttpRelay { gateway, request, replayable, body_to_come: None, awaiting_continue: false, is_head: head.method() == "HEAD", got: Vec::new(), interims: 0, state: State::Head })
    }

    /// Whether the loop relays this exchange's body to the backend as the
    /// client sends it ([`Site::http_relay_streamed`]) rather than reading
    /// it whole first. As Apache's mod_proxy_http, a body is streamed
    /// unless `proxy-sendcl` is set (and neither `proxy-sendchunked` nor
    /// `proxy-sendchunks`, which win over it): then it is read whole and
    /// sent with its Content-Length (Apache spools only a chunked body so,
    /// its length being known otherwise; warren spools any, so that the
    /// switch is also nginx's `proxy_request_buffering on`, a backend
    /// never waiting on a slow client).
    pub fn streams_body(gw: &Gateway, head: &RequestHead) -> bool {
        gw.takes_body() && head.framing != BodyFraming::None && !gw.buffers_request_body() && Site::http_on_loop(gw, head)
    }

    /// The same for a thread that reads an HTTP/2 stream's body as it
    /// sends it (any HTTP backend, over TLS or named by host name too),
    /// except through a balancer (its member is chosen, and may be tried
    /// again, with the body whole) or into the response cache.
    pub fn streams_body_on_thread(gw: &Gateway, head: &RequestHead) -> bool {
        gw.http.is_some() && gw.takes_body() && head.framing != BodyFraming::None && !gw.buffers_request_body() && gw.balanced.is_none() && gw.capture.is_none()
    }

    /// Starts an exchange for the loop whose body is still to come, framed
    /// as the client's (`Content-Length` kept, chunked otherwise): its
    /// pieces are given with [`HttpRelay::push_body`] as they are read. A
    /// client that waits for `100 Continue` has it go end to end: the
    /// backend gets `Expect: 100-continue`, and its 100 comes as
    /// [`Event::Continue`].
    pub fn http_relay_streamed(&self, gateway: Box<Gateway>, head: &RequestHead, conn: &ConnInfo) -> Result<HttpRelay, (Box<Gateway>, GatewayError)> {
        let framing = match head.framing {
            BodyFraming::Length(n) => BodyFraming::Length(n),
            _ => BodyFraming::Chunked,
        };
        let mut relay = self.http_relay(gateway, head, conn, None)?;
        relay.request = self.backend_head(&relay.gateway, head, conn, framing, false, head.expect_continue);
        relay.awaiting_continue = head.expect_continue;
        relay.replayable = false;
        relay.body_to_come = Some(BodyWriter { chunked: framing == BodyFraming::Chunked });
        Ok(relay)
    }
}

impl Gateway {
    /// `SetEnv proxy-sendcl` (and neither `proxy-sendchunked` nor
    /// `proxy-sendchunks`): the request's body is read whole before it
    /// goes, with its Content-Length.
    pub fn buffers_request_body(&self) -> bool {
        let env = self.filters.as_ref().map(|f| &f.env);
        env.is_some_and(|e| e.get("proxy-sendcl").is_some() && e.get("proxy-sendchunked").is_none() && e.get("proxy-sendchunks").is_none())
    }
}

impl HttpRelay {
    pub fn origin(&self) -> &HttpOrigin {
        &self.gateway.http.as_ref().expect("an HTTP plan").origin
    }

    /// The exchange is over and its connection may take another request
    /// (not if the answer came before the whole body went: the backend may
    /// still wait for the rest).
    pub fn reusable(&self) -> bool {
        matches!(self.state, State::Done { reusable: true }) && self.body_to_come.is_none()
    }

    /// Whether the client waits for the backend's `100 Continue`.
    pub fn awaits_continue(&self) -> bool {
        self.awaiting_continue
    }

    /// The backend has said nothing for [`super::CONTINUE_WAIT`]: the
    /// client is told to go on (by the caller's own 100), as curl does.
    pub fn continue_anyway(&mut self) {
        self.awaiting_continue = false;
    }

    /// Whether the client's body is still being relayed.
    pub fn body_open(&self) -> bool {
        self.body_to_come.is_some()
    }

    /// A piece of the client's body, queued for the backend in its framing.
    pub fn push_body(&mut self, data: &[u8]) {
        if let Some(w) = &self.body_to_come {
            // Writing into a Vec does not fail.
            let _ = w.write(&mut self.request, data);
        }
    }

    /// The client's body is whole: its end is queued (the last chunk).
    pub fn end_body(&mut self) {
        if let Some(w) = self.body_to_come.take() {
            let _ = w.finish(&mut self.request);
        }
    }

    /// Whether the client's response has begun (then a failure can only
    /// cut it short).
    pub fn streaming(&self) -> bool {
        matches!(self.state, State::Streaming { .. } | State::Done { .. })
    }

    /// Takes bytes read from the backend.
    pub fn feed(&mut self, bytes: &[u8]) {
        match &mut self.state {
            State::Head => self.got.extend_from_slice(bytes),
            State::Whole { reader, .. } | State::Streaming { reader, .. } => reader.feed(bytes),
            // Bytes after a complete answer: the connection is not kept.
            State::Done { reusable } => *reusable = false,
        }
    }

    /// The next event the bytes fed so far make, None until more come.
    pub fn next_event(&mut self, site: &Site, head: &RequestHead, conn: &ConnInfo) -> Result<Option<Event>, Failed> {
        match &mut self.state {
            State::Head => self.parse_head(site, head, conn),
            State::Whole { body, reader, .. } => {
                reader.decode(body).map_err(|why| body_failed(&self.gateway, &why))?;
                if !reader.done() {
                    return Ok(None);
                }
                let State::Whole { mut response, body, reader, keep } = std::mem::replace(&mut self.state, State::Head) else { unreachable!() };
                self.state = State::Done { reusable: keep && reader.clean_end() };
                response.body = Body::Bytes(body);
                Ok(Some(Event::Whole(response)))
            }
            State::Streaming { reader, keep } => {
                let mut out = Vec::new();
                reader.decode(&mut out).map_err(|why| body_failed(&self.gateway, &why))?;
                if !out.is_empty() {
                    return Ok(Some(Event::Data(out)));
                }
                if !reader.done() {
                    return Ok(None);
                }
                self.state = State::Done { reusable: *keep && reader.clean_end() };
                Ok(Some(Event::End))
            }
            State::Done { .. } => Ok(None),
        }
    }

    /// The backend closed the connection (or reset it): the end of a body
    /// that runs until then, a failure otherwise.
    pub fn closed(&mut self, why: Option<&std::io::Error>) -> Result<(), Failed> {
        let name = self.gateway.backend_name();
        match &mut self.state {
            State::Head => {
                let nothing_yet = self.got.is_empty() && self.interims == 0;
                let what = why.map_or_else(|| "connection closed before the response head".to_string(), ToString::to_string);
                Err(Failed { error: GatewayError { status: 502, why: format!("proxy: HTTP: error reading the status line from {name}: {what}") }, nothing_yet })
            }
            State::Whole { reader, .. } | State::Streaming { reader, .. } => match (why, reader.input_closed()) {
                (None, Ok(())) => Ok(()),
                (Some(e), _) => Err(body_failed(&self.gateway, &e.to_string())),
                (None, Err(what)) => Err(body_failed(&self.gateway, &what)),
            },
            State::Done { reusable } => {
                *reusable = false;
                Ok(())
            }
        }
    }

    /// ProxyTimeout ran out waiting for the backend.
    pub fn timed_out(&self) -> GatewayError {
        let name = self.gateway.backend_name();
        let why = match self.state {
            State::Head if self.body_to_come.is_some() => format!("proxy: HTTP: timeout sending the request body to {name} (ProxyTimeout)"),
            State::Head => format!("proxy: HTTP: timeout reading the status line from {name} (ProxyTimeout)"),
            _ => format!("proxy: HTTP: error reading the response body from {name}: timed out (ProxyTimeout)"),
        };
        GatewayError { status: 504, why }
    }

    /// The backend could not be reached: it is not tried again for its
    /// `retry=` time. A unix socket whose listen queue is full (EAGAIN:
    /// the loop does not wait in connect as a thread does) is busy, not
    /// down: this request's 503 only, or any client filling the queue for
    /// a moment would make the backend unused for `retry=`.
    pub fn connect_failed(&self, site: &Site, e: &std::io::Error) -> GatewayError {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            return GatewayError { status: 503, why: format!("proxy: HTTP: {} is busy: its listen queue is full ({e})", self.gateway.backend_name()) };
        }
        site.caches.http_backends.mark_down(&self.gateway.backend.addr, self.origin().retry);
        GatewayError { status: 503, why: format!("proxy: HTTP: attempt to connect to {} failed: {e}", self.gateway.backend_name()) }
    }

    /// Sending the request failed: for the caller to retry or answer.
    pub fn send_failed(&self, e: &std::io::Error) -> Failed {
        let why = format!("proxy: HTTP: error sending the request to {}: {e}", self.gateway.backend_name());
        Failed { error: GatewayError { status: 502, why }, nothing_yet: self.got.is_empty() && self.interims == 0 && matches!(self.state, State::Head) }
    }

    /// Ready to send the request again on a new connection.
    pub fn restart(&mut self) {
        self.got.clear();
        self.interims = 0;
        self.state = State::Head;
    }

    fn parse_head(&mut self, site: &Site, head: &RequestHead, conn: &ConnInfo) -> Result<Option<Event>, Failed> {
        let parsed = response::parse(&self.got, self.is_head, false).and_then(|p| match p {
            Parsed::Interim(..) if self.interims >= response::MAX_INTERIM => Err(format!("more than {} interim (1xx) answers", response::MAX_INTERIM)),
            p => Ok(p),
        });
        let (answer, used) = match parsed {
            Ok(Parsed::Partial) => return Ok(None),
            Ok(Parsed::Final(h, used)) => (h, used),
            Ok(Parsed::Interim(interim, used)) => {
                self.got.drain(..used);
                self.interims += 1;
                if interim.status == 100 && std::mem::take(&mut self.awaiting_continue) {
                    return Ok(Some(Event::Continue));
                }
                // Else the loop answered Expect itself (or nobody asked):
                // a 100 is not passed on; nor any 1xx to some clients
                // (Site::passes_interims).
                if interim.status == 100 || !site.passes_interims(self.gateway.host, head) {
                    return self.parse_head(site, head, conn);
                }
                return Ok(Some(Event::Interim(interim)));
            }
            Err(why) => {
                let why = format!("proxy: HTTP: error reading the status line from {}: {why}", self.gateway.backend_name());
                return Err(Failed { error: GatewayError { status: 502, why }, nothing_yet: false });
            }
        };
        // The body's first bytes stay in the buffer they came in (no copy
        // into a new one).
        self.got.drain(..used);
        let mut reader = BodyReader::new(answer.framing, std::mem::take(&mut self.got));
        let keep = answer.keep_alive && self.gateway.backend.reuse;
        let mut response = match site.answer_head(&self.gateway, head, conn, answer.status, answer.fields) {
            Answered::Proxied(r) => r,
            Answered::Overridden(page) => {
                // The backend's body is not read: its connection is not kept.
                self.state = State::Done { reusable: false };
                return Ok(Some(Event::Whole(page)));
            }
        };
        match answer.framing {
            Framing::Empty => {
                super::keep_head_length(&mut response, self.is_head);
                self.state = State::Done { reusable: keep && reader.clean_end() };
                Ok(Some(Event::Whole(response)))
            }
            Framing::Length(n) if n <= READ_WHOLE => {
                let mut body = Vec::with_capacity(n as usize);
                reader.decode(&mut body).map_err(|why| body_failed(&self.gateway, &why))?;
                self.state = State::Whole { response, body, reader, keep };
                self.next_event(site, head, conn)
            }
            framing => {
                self.state = State::Streaming { reader, keep };
                Ok(Some(Event::Head(response, if let Framing::Length(n) = framing { Some(n) } else { None })))
            }
        }
    }
}

fn body_failed(gw: &Gateway, why: &str) -> Failed {
    let status = if why.contains("timed out") { 504 } else { 502 };
    Failed { error: GatewayError { status, why: format!("proxy: HTTP: error reading the response body from {}: {why}", gw.backend_name()) }, nothing_yet: false }
}

/// The timeout for a new connection: `connectiontimeout=`, else the exchange's.
pub fn connect_timeout(relay: &HttpRelay) -> Duration {
    relay.origin().connect_timeout.unwrap_or(relay.gateway.timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_decode_fed_in_pieces() {
        let mut r = BodyReader::new(Framing::Chunked, Vec::new());
        let mut out = Vec::new();
        for piece in [&b"5\r\nhel"[..], b"lo\r\n", b"0\r", b"\n\r\n"] {
            r.feed(piece);
            r.decode(&mut out).unwrap();
        }
        assert_eq!(out, b"hello");
        assert!(r.clean_end());
        let mut until_close = BodyReader::new(Framing::UntilClose, b"ab".to_vec());
        let mut out = Vec::new();
        until_close.decode(&mut out).unwrap();
        assert!(!until_close.done());
        until_close.input_closed().unwrap();
        assert!(until_close.done() && !until_close.clean_end());
        let mut short = BodyReader::new(Framing::Length(4), b"ab".to_vec());
        short.decode(&mut Vec::new()).unwrap();
        assert!(short.input_closed().is_err());
    }

    #[test]
    fn a_streamed_body_is_framed_as_announced() {
        let framed = |chunked: bool| {
            let mut r = HttpRelay { gateway: Box::new(Gateway::to_backend(0, warren_config::FcgiBackend { addr: FcgiAddr::Unix("/x".into()), reuse: true, timeout: None, flush_packets: false }, Duration::from_secs(1), String::new())), request: b"HEAD\r\n\r\n".to_vec(), replayable: false, body_to_come: Some(BodyWriter { chunked }), awaiting_continue: false, is_head: false, got: Vec::new(), interims: 0, state: State::Done { reusable: true } };
            r.push_body(b"hello");
            r.push_body(b"");
            assert!(r.body_open() && !r.reusable(), "an answer before the body's end: the backend may still wait for it");
            r.end_body();
            assert!(!r.body_open() && r.reusable());
            String::from_utf8(r.request).unwrap()
        };
        assert_eq!(framed(true), "HEAD\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
        assert_eq!(framed(false), "HEAD\r\n\r\nhello");
    }
}
