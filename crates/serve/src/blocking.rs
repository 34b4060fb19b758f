//! One connection served start to finish by one thread with blocking I/O:
//! what a prefork child and a worker thread do. The HTTP/1.1 rules are the
//! same [`warren_http::h1::Connection`] the event loop drives, and requests
//! start and end in [`crate::serve`] for both; the difference is only that
//! the thread waits in `read` until the connection's deadline (and so is
//! tied up by an idle keep-alive client, as in Apache: that is what prefork
//! and worker users compare).

use std::io;
use crate::client_stream::{is_plain_http, ClientStream, PLAIN_HTTP_REASON};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::PollFlags;
use warren_handler::site::LogWriters;
use warren_handler::{ConnInfo, Outcome, RequestBody, Response, Site};
use warren_http::h1::{Connection, Expiry, Poll};
use warren_http::{BodyFraming, ConnRules, DateCache, HttpError, Next, RequestHead, LINGER};

use crate::exchange::{conn_rules, read_onto, wait_for, Exchange, Output};
use crate::serve::{self, Carrier, Records, Router, Started};
use crate::client_body::ClientBody;
use crate::fastcgi::on_thread;
use crate::proxy_header::{self, Got};
use warren_mpm::scoreboard::{AcceptTurn, State, ThreadSlot};

/// How much one read of a request head asks for: most heads fit.
const HEAD_CHUNK: usize = 4096;
/// A thread waiting in keep-alive checks this often whether to stop.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// What a thread needs to serve connections, built once per thread.
pub struct Driver<'a> {
    pub site: &'a Site,
    pub rules: ConnRules,
    /// Set on graceful stop: finish the request at hand, keep nothing alive.
    pub stop: &'a AtomicBool,
    /// The child's `quiescing` on the scoreboard: [`STOP_NOW`] when the
    /// server stops at once, and what would outlast a graceful stop (the
    /// WebSocket tunnels of an HTTP/2 connection) is closed now.
    ///
    /// [`STOP_NOW`]: warren_mpm::scoreboard::STOP_NOW
    pub quiescing: Option<&'a std::sync::atomic::AtomicU8>,
    pub slot: &'a ThreadSlot,
    pub logs: LogWriters,
    pub(crate) date: DateCache,
    scratch: Vec<u8>,
    last_flush: Instant,
    /// The socket's receive timeout as last set, to skip setsockopt calls
    /// that would not change it.
    read_timeout: Option<Duration>,
    /// Whether the socket is still non-blocking. A connection starts so:
    /// its first request is usually there already (TCP_DEFER_ACCEPT), and
    /// one that carries a single request then costs no setsockopt at all.
    /// It turns blocking, with timeouts, at its first keep-alive wait.
    nonblocking: bool,
    /// A prefork child's turn at the listeners, given back before any wait.
    pub turn: Option<AcceptTurn<'a>>,
}

enum Head {
    Request(RequestHead),
    /// Nothing more will come (EOF, keep-alive timeout): close quietly.
    Done,
    /// Stopping, and the connection has been idle for a while: close it,
    /// draining what may still arrive.
    Drained,
    /// A malformed or too slow request: answer it, then close.
    Error(HttpError),
    /// The client speaks HTTP/2 (by ALPN, or its preface in cleartext).
    H2,
}

impl<'a> Driver<'a> {
    pub fn new(site: &'a Site, stop: &'a AtomicBool, slot: &'a ThreadSlot) -> Driver<'a> {
        Driver {
            site,
            rules: conn_rules(&site.settings),
            stop,
            quiescing: None,
            slot,
            logs: site.log_writers(),
            date: DateCache::default(),
            scratch: Vec::new(),
            last_flush: Instant::now(),
            read_timeout: None,
            nonblocking: true,
            turn: None,
        }
    }

    /// Called before the thread may wait (on the client, a backend or a
    /// full socket): other children take new connections meanwhile.
    pub(crate) fn before_wait(&mut self) {
        if let Some(turn) = &mut self.turn {
            turn.give_back();
        }
    }

    /// Reads what is there onto `buf`, waiting at most `wait`. `TimedOut` if nothing came.
    fn read_within(&mut self, stream: &ClientStream, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        if !self.nonblocking {
            self.before_wait();
            self.set_read_timeout(stream, wait);
            return read_onto(stream, buf, HEAD_CHUNK).map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock => io::Error::from(io::ErrorKind::TimedOut),
                _ => e,
            });
        }
        match read_onto(stream, buf, HEAD_CHUNK) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.before_wait();
                if !wait_for(stream, PollFlags::POLLIN, wait) {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                read_onto(stream, buf, HEAD_CHUNK)
            }
            other => other,
        }
    }

    /// Turns the socket blocking, with Timeout on writes, for a kept-alive connection.
    fn make_blocking(&mut self, stream: &ClientStream) {
        if self.nonblocking {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_write_timeout(Some(self.rules.timeout));
            self.nonblocking = false;
        }
    }

    /// Sets the receive timeout, rounded to 10 ms, if it changes.
    fn set_read_timeout(&mut self, stream: &ClientStream, wait: Duration) {
        let wait = Duration::from_millis((wait.as_millis() as u64).div_ceil(10).max(1) * 10);
        if self.read_timeout != Some(wait) {
            let _ = stream.set_read_timeout(Some(wait));
            self.read_timeout = Some(wait);
        }
    }

    /// Flushes access logs if a while has passed since the last flush.
    pub fn flush_logs_if_due(&mut self) {
        if self.last_flush.elapsed() >= Duration::from_millis(250) {
            self.logs.flush();
            self.last_flush = Instant::now();
        }
    }

    /// Serves every request of one connection.
    /// `stream` must be non-blocking, as accepted.
    pub fn serve(&mut self, stream: ClientStream, mut info: ConnInfo) {
        self.read_timeout = None;
        self.nonblocking = true;
        let mut early: Vec<u8> = Vec::new();
        if self.site.expects_proxy_header(info.local, info.peer) {
            self.slot.set(State::Reading);
            if !self.read_proxy_header(&stream, &mut early, &mut info) {
                self.slot.set(State::Closing);
                return;
            }
        }
        // The first head is timed from here, with what came after a PROXY header.
        let now = Instant::now();
        let mut conn = Connection::new(self.rules, now).over_tls(stream.is_tls());
        if !early.is_empty() {
            let n = early.len();
            *conn.input_mut() = early;
            conn.received(n, now);
        }
        loop {
            self.slot.set(if conn.served() == 0 { State::Reading } else { State::KeepAlive });
            // Until a request names its client, the peer is the client.
            info.useragent = info.peer;
            let head = match self.read_head(&stream, &mut conn) {
                Head::Request(h) => h,
                Head::Done => return,
                Head::Drained => {
                    self.slot.set(State::Closing);
                    self.before_wait();
                    linger_close(&stream);
                    return;
                }
                Head::Error(e) => {
                    let (mut ex, resp) = Exchange::for_protocol_error(conn.input(), &e, self.site, &info);
                    conn.refuse();
                    self.finish(&stream, &info, &mut conn, &mut ex, resp);
                    return;
                }
                Head::H2 => {
                    stream.note_tls(self.site, &mut info, self.slot);
                    self.serve_h2(&stream, info, std::mem::take(conn.input_mut()), None);
                    return;
                }
            };
            if let Some(codec) = crate::h2::upgrade(&self.rules, &stream, &head, conn.input()) {
                let mut out = Output::default();
                out.wbuf.extend_from_slice(crate::h2::SWITCHING);
                if out.write_all(&stream, self.rules.timeout) {
                    self.serve_h2(&stream, info, std::mem::take(conn.input_mut()), Some((codec, head)));
                }
                return;
            }
            stream.note_tls(self.site, &mut info, self.slot);
            let carrier = Carrier::Http1 { policy: &self.rules.keep_alive, served: conn.served(), stopping: self.stop.load(Ordering::Relaxed) };
            let Started { exchange: mut ex, outcome } = serve::start(self.site, self.slot, head, &mut info, carrier, Router::Thread);
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(e) => {
                    let resp = ex.body_error(&e, self.site, &info);
                    self.finish(&stream, &info, &mut conn, &mut ex, resp);
                    return;
                }
            };
            let resp = match outcome {
                Outcome::Gateway(gw) => {
                    self.before_wait();
                    let sent = on_thread::serve(self.site, &stream, &info, &mut conn, &mut ex, (gw, None), &self.rules, &mut self.date, &mut self.scratch);
                    if !self.after_response(&stream, &info, &mut conn, &mut ex, sent) {
                        return;
                    }
                    continue;
                }
                Outcome::Ready(r) => r,
                Outcome::Blocking(work) => {
                    self.before_wait();
                    serve::run_work(work, self.site, ex.head.as_ref().expect("head"), &info)
                }
                // This thread is the request's own: it routes everything.
                Outcome::OffLoop => unreachable!("only the loop's routing asks for that"),
            };
            // Static answers do not read the body: it is discarded.
            if let Err(e) = self.discard_body(&stream, &mut conn, &mut ex) {
                let resp = ex.body_error(&e, self.site, &info);
                self.finish(&stream, &info, &mut conn, &mut ex, resp);
                return;
            }
            if !self.finish(&stream, &info, &mut conn, &mut ex, resp) {
                return;
            }
        }
    }

    /// Writes the response, logs it, and says whether the connection goes on.
    fn finish(&mut self, stream: &ClientStream, info: &ConnInfo, conn: &mut Connection, ex: &mut Exchange, resp: Response) -> bool {
        self.slot.set(State::Writing);
        let mut out = Output::default();
        out.encode(ex, resp, self.site, &mut self.date, &mut self.scratch);
        let sent = match out.flush(stream) {
            Ok(true) => true,
            Ok(false) => {
                self.before_wait();
                out.write_all(stream, self.rules.timeout)
            }
            Err(_) => false,
        };
        self.after_response(stream, info, conn, ex, sent)
    }

    /// Logs the response and says whether the connection goes on; if not,
    /// closes it (lingering when unread input may remain).
    fn after_response(&mut self, stream: &ClientStream, info: &ConnInfo, conn: &mut Connection, ex: &mut Exchange, sent: bool) -> bool {
        self.slot.set(State::Logging);
        serve::end(&mut Records { site: self.site, logs: &mut self.logs, slot: self.slot }, ex, info, conn.served(), !sent);
        self.flush_logs_if_due();
        let next = conn.after_response(sent, ex.keep_alive, ex.linger, Instant::now());
        if next == Next::KeepAlive {
            return true;
        }
        self.slot.set(State::Closing);
        if next == Next::Linger {
            self.before_wait();
            linger_close(stream);
        }
        false
    }

    /// Reads and applies the PROXY protocol header that must open the
    /// connection, within the time a request head has; false: close.
    fn read_proxy_header(&mut self, stream: &ClientStream, rbuf: &mut Vec<u8>, info: &mut ConnInfo) -> bool {
        let mut clock = self.rules.head_clock(Instant::now(), 0);
        loop {
            match proxy_header::take(self.site, rbuf, info) {
                Got::Done => return true,
                Got::Bad => return false,
                Got::More => {}
            }
            let now = Instant::now();
            let until = clock.deadline();
            if now >= until {
                proxy_header::timed_out(self.site, rbuf, info);
                return false;
            }
            match self.read_within(stream, rbuf, until - now) {
                Ok(0) => return false,
                Ok(n) => clock.received(n as u64, Instant::now()),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {}
                Err(_) => return false,
            }
        }
    }

    /// Waits for the next request head, as far as the connection's rules allow.
    fn read_head(&mut self, stream: &ClientStream, conn: &mut Connection) -> Head {
        loop {
            let protocol = if conn.served() == 0 { crate::h2::detect(stream, conn.input()) } else { Some(false) };
            if protocol == Some(true) {
                return Head::H2;
            }
            if protocol.is_some() {
                match conn.poll_head() {
                    Poll::Head(h) => return Head::Request(h),
                    Poll::Error(e) => return Head::Error(e),
                    Poll::NeedMore => {}
                }
            }
            let now = Instant::now();
            // Waiting between requests (or for a new connection's first byte).
            let waiting = conn.input().is_empty();
            let stopping = self.stop.load(Ordering::Relaxed);
            let until = conn.deadline(stopping);
            if now >= until {
                return match conn.timed_out(stopping) {
                    Expiry::Head(e) | Expiry::Body(e) => Head::Error(e),
                    Expiry::Linger => Head::Drained,
                    Expiry::Close => Head::Done,
                };
            }
            let mut wait = until - now;
            if waiting {
                // Look at the stop flag now and then.
                wait = wait.min(STOP_CHECK);
            }
            if conn.served() > 0 && waiting {
                self.make_blocking(stream);
            }
            match self.read_within(stream, conn.input_mut(), wait) {
                Ok(0) => return Head::Done,
                Ok(n) => {
                    if conn.received(n, Instant::now()) {
                        self.slot.set(State::Reading);
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {}
                Err(e) if is_plain_http(&e) => return Head::Error(HttpError::new(400, PLAIN_HTTP_REASON)),
                Err(_) => return Head::Done,
            }
        }
    }

    /// Reads and discards the request body, enforcing LimitRequestBody.
    fn discard_body(&mut self, stream: &ClientStream, conn: &mut Connection, ex: &mut Exchange) -> Result<(), HttpError> {
        let head = ex.head.as_ref().expect("head");
        if head.framing == BodyFraming::None {
            return Ok(());
        }
        self.before_wait();
        let mut body = ClientBody::new(stream, conn, head, ex.body_limit);
        let mut sink = vec![0u8; 16 * 1024];
        let result = loop {
            match body.read(&mut sink) {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        ex.bytes_received += body.wire_bytes;
        result
    }
}

/// Half-closes and drains what the client still sends (bounded), so that it
/// reads our response rather than a reset.
fn linger_close(stream: &ClientStream) {
    stream.shutdown_write();
    let until = Instant::now() + LINGER;
    let mut buf = [0u8; 4096];
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        if !wait_for(stream, PollFlags::POLLIN, left) {
            return;
        }
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(_) => return,
        }
    }
}
