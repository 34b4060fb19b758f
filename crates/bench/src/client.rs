//! The load: a few threads, each driving its share of the connections
//! through one epoll, with requests built once. A connection sends its
//! request, reads the response (Content-Length, chunked or until close),
//! records it, and starts the next: on the same connection with keep-alive,
//! else on a new one, as ab and siege do.
//!
//! An https:// target's connection runs a rustls [`ClientConnection`] over
//! the same non-blocking socket (sans-IO: `read_tls`, `process_new_packets`,
//! `write_tls`): after the TCP connect, a handshake state drives it to its
//! end, whose time and kind (full or resumed) are recorded; requests and
//! responses then go through it instead of the socket.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, HandshakeKind};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use socket2::{Domain, SockAddr, Socket, Type};
use warren_http::{BodyDecoder, BodyFraming};

use crate::stats::{ErrorClass, Stats};

/// One URL to request, its request built once.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddr,
    pub request: Vec<u8>,
    /// HEAD: responses have no body.
    pub head_only: bool,
    /// https://: the name the certificate is checked against (and SNI).
    pub tls: Option<ServerName<'static>>,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub targets: Vec<Target>,
    pub concurrency: usize,
    /// Stop after this many requests...
    pub requests: Option<u64>,
    /// ...or after this long.
    pub duration: Option<Duration>,
    pub keep_alive: bool,
    /// Per request.
    pub timeout: Duration,
    pub threads: usize,
    /// Open loop: requests are due at this many per second, and a response
    /// time counts from when its request was due, not from when a free
    /// connection sent it (so that a slow server cannot hide its queue).
    pub rate: Option<f64>,
    /// Users rising linearly from the first number to the second over the
    /// duration (connections beyond the current number wait).
    pub ramp: Option<(usize, usize, Duration)>,
    /// Requests finished so far (responses and errors), for a progress bar.
    pub progress: Arc<AtomicU64>,
    /// The TLS client configuration, shared by every connection (and so its
    /// session cache); needed when a target is https://.
    pub tls: Option<Arc<ClientConfig>>,
}

enum State {
    /// To start its next request.
    Idle,
    /// Its next request is due at this time (--rate).
    Waiting { until: Instant },
    /// Not among the users yet (--ramp).
    Paused,
    Connecting,
    /// TLS: the handshake, begun at this time (the TCP connection's establishment).
    Handshaking { since: Instant },
    Writing { pos: usize },
    Reading,
    Done,
}

struct Conn {
    socket: Option<Socket>,
    /// An https:// connection's TLS state, beside its socket.
    tls: Option<ClientConnection>,
    state: State,
    target: usize,
    buf: Vec<u8>,
    started: Instant,
    /// Once the head is parsed: status, the body's framing (None: until
    /// close), whether the server closes after, and body bytes so far.
    head: Option<(u16, Option<BodyDecoder>, bool)>,
    body_bytes: u64,
    /// What the socket is registered for, so that epoll is told only of changes.
    interest: EpollFlags,
}

struct Run<'a> {
    plan: &'a Plan,
    issued: &'a AtomicU64,
    stop: &'a AtomicBool,
    begin: Instant,
    end: Option<Instant>,
    epoll: Epoll,
    conns: Vec<Conn>,
    stats: Stats,
    next_target: usize,
    thread: usize,
    threads: usize,
}

/// Runs the plan; returns what was measured and how long it took.
pub fn run(plan: &Plan) -> (Stats, Duration) {
    let issued = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let begin = Instant::now();
    let threads = plan.threads.clamp(1, plan.concurrency.max(1));
    let mut total = Stats::default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let share = plan.concurrency / threads + usize::from(t < plan.concurrency % threads);
                let (issued, stop) = (&issued, &stop);
                scope.spawn(move || drive(plan, share, t, threads, issued, stop, begin))
            })
            .collect();
        for h in handles {
            if let Ok(s) = h.join() {
                total.merge(&s);
            }
        }
    });
    (total, begin.elapsed())
}

fn drive(plan: &Plan, connections: usize, thread: usize, threads: usize, issued: &AtomicU64, stop: &AtomicBool, begin: Instant) -> Stats {
    let Ok(epoll) = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC) else { return Stats::default() };
    let conns = (0..connections)
        .map(|_| Conn { socket: None, tls: None, state: State::Idle, target: 0, buf: Vec::new(), started: begin, head: None, body_bytes: 0, interest: EpollFlags::empty() })
        .collect();
    let mut run = Run { plan, issued, stop, begin, end: plan.duration.map(|d| begin + d), epoll, conns, stats: Stats::default(), next_target: thread, thread, threads };
    let mut events = vec![EpollEvent::empty(); 256];
    let mut scratch = vec![0u8; 64 * 1024];
    let mut reported = 0u64;
    loop {
        let now = Instant::now();
        if run.end.is_some_and(|e| now >= e) {
            run.stop.store(true, Ordering::Relaxed);
            break;
        }
        // Start what is due: idle connections, scheduled requests, new users.
        let mut wait = Duration::from_millis(20);
        for i in 0..run.conns.len() {
            match run.conns[i].state {
                State::Idle => run.start(i),
                State::Paused if run.active(i) => run.start(i),
                State::Waiting { until } if until <= now => run.launch(i),
                State::Waiting { until } => wait = wait.min(until - now),
                _ => {}
            }
        }
        if run.conns.iter().all(|c| matches!(c.state, State::Done)) {
            break;
        }
        let ms = wait.as_millis().clamp(1, 20) as u16;
        let finished = run.stats.responses() + run.stats.failed();
        run.plan.progress.fetch_add(finished - reported, Ordering::Relaxed);
        reported = finished;
        let n = run.epoll.wait(&mut events, EpollTimeout::from(ms)).unwrap_or(0);
        for ev in &events[..n] {
            run.ready(ev.data() as usize, &mut scratch);
        }
        let now = Instant::now();
        for i in 0..run.conns.len() {
            let c = &run.conns[i];
            let busy = matches!(c.state, State::Connecting | State::Handshaking { .. } | State::Writing { .. } | State::Reading);
            if busy && now.duration_since(c.started) >= run.plan.timeout {
                run.fail(i, ErrorClass::Timeout);
            }
        }
    }
    run.stats
}

/// A parsed response head: status, the body's framing (None: until
/// close), whether the connection closes after, and the head's length.
pub(crate) type Head = (u16, Option<BodyDecoder>, bool, usize);

pub(crate) fn parse_head(buf: &[u8], head_only: bool) -> Result<Option<Head>, ()> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    let used = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(()),
    };
    let status = r.code.ok_or(())?;
    let mut length = None;
    let mut chunked = false;
    let mut close = r.version == Some(0);
    for h in r.headers.iter() {
        let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(v.trim().parse::<u64>().map_err(|_| ())?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = v.contains("chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            close = v.contains("close") || (close && !v.contains("keep-alive"));
        }
    }
    let no_body = head_only || status < 200 || status == 204 || status == 304;
    let framing = if no_body {
        Some(BodyDecoder::new(BodyFraming::Length(0)))
    } else if chunked {
        Some(BodyDecoder::new(BodyFraming::Chunked))
    } else {
        length.map(|n| BodyDecoder::new(BodyFraming::Length(n)))
    };
    let close = close || framing.is_none();
    Ok(Some((status, framing, close, used)))
}

impl Run<'_> {
    fn at(&self) -> Duration {
        self.begin.elapsed()
    }

    /// Whether connection `i` is among the users now (always, without --ramp).
    fn active(&self, i: usize) -> bool {
        let Some((from, to, over)) = self.plan.ramp else { return true };
        let part = (self.begin.elapsed().as_secs_f64() / over.as_secs_f64().max(1e-9)).min(1.0);
        let users = from as f64 + (to as f64 - from as f64) * part;
        ((i * self.threads + self.thread) as f64) < users.floor()
    }

    /// Schedules the next request on connection `i`, if the run goes on.
    fn start(&mut self, i: usize) {
        let now = Instant::now();
        if self.stop.load(Ordering::Relaxed) || self.end.is_some_and(|e| now >= e) {
            return self.retire(i);
        }
        if !self.active(i) {
            self.conns[i].state = State::Paused;
            return;
        }
        let index = self.issued.fetch_add(1, Ordering::Relaxed);
        if self.plan.requests.is_some_and(|max| index >= max) {
            return self.retire(i);
        }
        let target = self.next_target % self.plan.targets.len();
        self.next_target += 1;
        let due = match self.plan.rate {
            Some(r) => self.begin + Duration::from_secs_f64(index as f64 / r),
            None => now,
        };
        let c = &mut self.conns[i];
        c.target = target;
        c.started = due;
        c.buf.clear();
        c.head = None;
        c.body_bytes = 0;
        if due > now {
            c.state = State::Waiting { until: due };
            return;
        }
        self.launch(i);
    }

    /// Sends the scheduled request: on the kept connection, or a new one.
    fn launch(&mut self, i: usize) {
        let target = self.conns[i].target;
        let c = &mut self.conns[i];
        if c.socket.is_some() {
            c.state = State::Writing { pos: 0 };
            self.write(i);
            return;
        }
        let addr = self.plan.targets[target].addr;
        let socket = match Socket::new(Domain::for_address(addr), Type::STREAM.nonblocking().cloexec(), None) {
            Ok(s) => s,
            Err(_) => return self.fail(i, ErrorClass::Connect),
        };
        let _ = socket.set_tcp_nodelay(true);
        match socket.connect(&SockAddr::from(addr)) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc_einprogress()) => {}
            Err(_) => return self.fail(i, ErrorClass::Connect),
        }
        if self.epoll.add(socket.as_fd(), EpollEvent::new(EpollFlags::EPOLLOUT, i as u64)).is_err() {
            return self.fail(i, ErrorClass::Connect);
        }
        let c = &mut self.conns[i];
        c.socket = Some(socket);
        c.state = State::Connecting;
        c.interest = EpollFlags::EPOLLOUT;
    }

    fn interest(&mut self, i: usize, flags: EpollFlags) {
        let c = &mut self.conns[i];
        if c.interest == flags {
            return;
        }
        if let Some(s) = &c.socket {
            let _ = self.epoll.modify(s.as_fd(), &mut EpollEvent::new(flags, i as u64));
            c.interest = flags;
        }
    }

    fn ready(&mut self, i: usize, scratch: &mut [u8]) {
        match self.conns[i].state {
            State::Connecting => {
                let err = self.conns[i].socket.as_ref().map(|s| s.take_error());
                match err {
                    Some(Ok(None)) => match self.plan.targets[self.conns[i].target].tls.clone() {
                        Some(name) => {
                            let Some(config) = self.plan.tls.clone() else { return self.fail(i, ErrorClass::Tls) };
                            match ClientConnection::new(config, name) {
                                Ok(tls) => {
                                    self.conns[i].tls = Some(tls);
                                    self.conns[i].state = State::Handshaking { since: Instant::now() };
                                    self.handshake(i);
                                }
                                Err(e) => self.fail_tls(i, e.to_string()),
                            }
                        }
                        None => {
                            self.conns[i].state = State::Writing { pos: 0 };
                            self.write(i);
                        }
                    },
                    _ => self.fail(i, ErrorClass::Connect),
                }
            }
            State::Handshaking { .. } => self.handshake(i),
            State::Writing { .. } => self.write(i),
            State::Reading => self.read(i, scratch),
            State::Idle | State::Waiting { .. } | State::Paused | State::Done => {}
        }
    }

    /// Drives connection `i`'s TLS handshake as far as the socket allows;
    /// once done, records it and sends the request.
    fn handshake(&mut self, i: usize) {
        let State::Handshaking { since } = self.conns[i].state else { return };
        loop {
            let c = &mut self.conns[i];
            let (Some(sock), Some(tls)) = (c.socket.as_ref(), c.tls.as_mut()) else { return };
            let mut io: &Socket = sock;
            while tls.wants_write() {
                match tls.write_tls(&mut io) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.interest(i, EpollFlags::EPOLLOUT),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return self.fail_tls(i, e.to_string()),
                }
            }
            if !tls.is_handshaking() {
                let resumed = tls.handshake_kind() == Some(HandshakeKind::Resumed);
                self.stats.handshake(since.elapsed(), resumed);
                self.conns[i].state = State::Writing { pos: 0 };
                return self.write(i);
            }
            match tls.read_tls(&mut io) {
                Ok(0) => return self.fail_tls(i, "the server closed the connection during the handshake".into()),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Send the alert that says why, if the socket takes it.
                        let _ = tls.write_tls(&mut io);
                        return self.fail_tls(i, e.to_string());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.interest(i, EpollFlags::EPOLLIN),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail_tls(i, e.to_string()),
            }
        }
    }

    /// TLS: hands the request to rustls once, then writes its records out.
    fn write_tls(&mut self, i: usize, pos: usize) {
        let c = &mut self.conns[i];
        let (Some(sock), Some(tls)) = (c.socket.as_ref(), c.tls.as_mut()) else { return };
        if pos == 0 {
            let req = &self.plan.targets[c.target].request;
            if tls.writer().write_all(req).is_err() {
                return self.fail(i, ErrorClass::Write);
            }
            c.state = State::Writing { pos: req.len() };
        }
        let mut io: &Socket = sock;
        while tls.wants_write() {
            match tls.write_tls(&mut io) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.interest(i, EpollFlags::EPOLLOUT),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(i, ErrorClass::Write),
            }
        }
        self.conns[i].state = State::Reading;
        self.interest(i, EpollFlags::EPOLLIN);
    }

    /// Reads what the connection has: plain bytes from the socket, or from
    /// TLS the plaintext of what arrived. Ok(0) is the end of the stream.
    fn receive(&mut self, i: usize, scratch: &mut [u8]) -> io::Result<usize> {
        let c = &mut self.conns[i];
        let Some(sock) = c.socket.as_ref() else { return Err(io::ErrorKind::NotConnected.into()) };
        let Some(tls) = c.tls.as_mut() else { return (&*sock).read(scratch) };
        let mut io: &Socket = sock;
        loop {
            match tls.reader().read(scratch) {
                Ok(n) => return Ok(n),
                // Closed without close_notify: the end all the same.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            match tls.read_tls(&mut io)? {
                0 => return Ok(0),
                _ => {
                    tls.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    // Whatever rustls has to answer (alerts, key updates): best effort.
                    while tls.wants_write() && tls.write_tls(&mut io).is_ok() {}
                }
            }
        }
    }

    fn write(&mut self, i: usize) {
        let State::Writing { mut pos } = self.conns[i].state else { return };
        if self.conns[i].tls.is_some() {
            return self.write_tls(i, pos);
        }
        let req = &self.plan.targets[self.conns[i].target].request;
        loop {
            let Some(sock) = self.conns[i].socket.as_ref() else { return };
            match (&*sock).write(&req[pos..]) {
                Ok(n) => {
                    pos += n;
                    if pos == req.len() {
                        self.conns[i].state = State::Reading;
                        self.interest(i, EpollFlags::EPOLLIN);
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.conns[i].state = State::Writing { pos };
                    self.interest(i, EpollFlags::EPOLLOUT);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A kept connection the server closed meanwhile: count it as a write error.
                Err(_) => return self.fail(i, ErrorClass::Write),
            }
        }
    }

    fn read(&mut self, i: usize, scratch: &mut [u8]) {
        loop {
            if self.conns[i].socket.is_none() {
                return;
            }
            let n = match self.receive(i, scratch) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A bad TLS record.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return self.fail_tls(i, e.to_string()),
                Err(_) => return self.fail(i, ErrorClass::Read),
            };
            let head_only = self.plan.targets[self.conns[i].target].head_only;
            let c = &mut self.conns[i];
            if n == 0 {
                // The end of a body that runs until close; anything else is cut short.
                return match &c.head {
                    Some((status, None, _)) => {
                        let (status, bytes, took) = (*status, c.body_bytes, c.started.elapsed());
                        let at = self.at();
                        self.stats.response(status, bytes, took, at);
                        self.close(i);
                        self.start(i);
                    }
                    _ => self.fail(i, ErrorClass::Read),
                };
            }
            let mut data = &scratch[..n];
            if c.head.is_none() {
                c.buf.extend_from_slice(data);
                match parse_head(&c.buf, head_only) {
                    Ok(None) => {
                        if c.buf.len() > 1 << 20 {
                            return self.fail(i, ErrorClass::Malformed);
                        }
                        continue;
                    }
                    Err(()) => return self.fail(i, ErrorClass::Malformed),
                    Ok(Some((status, framing, close, used))) => {
                        c.head = Some((status, framing, close));
                        let rest = std::mem::take(&mut c.buf).split_off(used);
                        c.buf = rest;
                    }
                }
                data = &[];
            }
            // The body bytes: what came with the head, or this read.
            let c = &mut self.conns[i];
            let leftover = if data.is_empty() { std::mem::take(&mut c.buf) } else { Vec::new() };
            let body: &[u8] = if data.is_empty() { &leftover } else { data };
            let Some((status, framing, close)) = c.head.as_mut() else { continue };
            match framing {
                None => c.body_bytes += body.len() as u64,
                Some(dec) => {
                    let before = dec.received;
                    if dec.feed(body, &mut |_| {}).is_err() {
                        return self.fail(i, ErrorClass::Malformed);
                    }
                    c.body_bytes += dec.received - before;
                    if dec.is_done() {
                        let (status, close, bytes, took) = (*status, *close || !self.plan.keep_alive, c.body_bytes, c.started.elapsed());
                        let at = self.at();
                        self.stats.response(status, bytes, took, at);
                        if close {
                            self.close(i);
                        }
                        self.start(i);
                        return;
                    }
                }
            }
        }
    }

    fn close(&mut self, i: usize) {
        // Dropping the socket removes it from the epoll.
        self.conns[i].socket = None;
        self.conns[i].tls = None;
        self.conns[i].state = State::Idle;
        self.conns[i].interest = EpollFlags::empty();
    }

    /// Ends connection `i`'s part in the run. Its kept connection is closed
    /// now, not when the whole run ends: a prefork child or worker thread
    /// would otherwise wait out KeepAliveTimeout on it while the requests
    /// still to come queue at the listener.
    fn retire(&mut self, i: usize) {
        self.close(i);
        self.conns[i].state = State::Done;
    }

    /// Counts the error and closes; the loop starts the connection's next
    /// request (not here: a refused port must not recurse).
    /// A TLS failure: the first one's reason is kept for the report.
    fn fail_tls(&mut self, i: usize, why: String) {
        self.stats.tls_error.get_or_insert(why);
        self.fail(i, ErrorClass::Tls);
    }

    fn fail(&mut self, i: usize, class: ErrorClass) {
        let at = self.at();
        self.stats.error(class, at);
        self.close(i);
    }
}

fn libc_einprogress() -> i32 {
    nix::errno::Errno::EINPROGRESS as i32
}
