//! The event MPM's child: one event loop thread (epoll, edge-triggered) that
//! owns every connection of the child, plus ThreadsPerChild worker threads.
//!
//! Idle keep-alive connections cost no thread: they sit in the loop's slab
//! in `Phase::KeepAlive`. Requests whose answer cannot block (static files,
//! errors, redirects) are answered on the loop; the handler's blocking work
//! goes to the worker pool and comes back as a response to write. Writes are
//! non-blocking with write completion: a response the socket cannot take at
//! once waits in the connection until EPOLLOUT.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use warren_config::LogLevel;
use warren_handler::router::LogWriters;
use warren_config::FcgiAddr;
use warren_handler::fastcgi::{Gateway, GatewayError, Piece, PoolBusy};
use warren_handler::spool::{Spool, Spooled};
use warren_handler::{Body, ConnInfo, Outcome, Response, Site};
use warren_http::conn::received_body_within;
use warren_http::response::CONTINUE;
use warren_http::{parse_head_from, BodyDecoder, BodyFraming, ConnRules, DateCache, HeadScan, HttpError, KeepAlivePolicy, Next, Phase, ReadClock, RequestHead, LINGER};

use crate::exchange::{conn_rules, panic_response, Chunk, Exchange, Output};
use crate::fastcgi::on_loop::{BodyFraming as RelayFraming, FedByLoop, HalfClose, NotHere, Upstream};
use crate::listen::{self, Listener};
use crate::fastcgi::pool_wait::{Parked, PoolWaits};
use crate::scoreboard::{Scoreboard, State};
use crate::fastcgi::spill::Spill;
use crate::spread;
use thread_pool::{FastCgiJob, Job, JobResult, ThreadPool};

pub mod thread_pool;

const READ_CHUNK: usize = 16 * 1024;
/// How often deadlines are checked and access logs flushed.
const TICK: Duration = Duration::from_millis(250);
/// Accepts per wake-up at most. The listener is level-triggered, so what
/// is left wakes us (or another child) again.
const ACCEPT_BATCH: usize = 16;

const TOKEN_WAKE: u64 = u64::MAX;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;
const TOKEN_POOL_WAKE: u64 = u64::MAX - 2;
const TOKEN_LISTENER: u64 = 1 << 62;
/// Added to a connection's slot: the token of its FastCGI application socket.
const TOKEN_UPSTREAM: u64 = 1 << 61;
/// A relayed answer sent at the client's pace (`flushpackets=on`, or a
/// spill file that is full) stops being read from the application while
/// this much waits for the client.
const RELAY_HIGH_WATER: u64 = 256 * 1024;

/// Set by the signal handler: stop gracefully.
pub struct StopFlag(pub Arc<AtomicBool>);

struct Conn {
    stream: TcpStream,
    info: ConnInfo,
    generation: u64,
    phase: Phase,
    waiting_worker: bool,
    readable: bool,
    /// Unparsed input (usually empty between requests: reads go to the loop's scratch).
    rbuf: Vec<u8>,
    /// How far the head at the start of `rbuf` has been checked.
    scan: HeadScan,
    out: Output,
    deadline: Instant,
    /// RequestReadTimeout (and Timeout) of the head or body being read.
    clock: ReadClock,
    served: u32,
    req: Option<Exchange>,
    /// The handler's answer, decided at the head, waiting for the body to
    /// be read (and discarded).
    pending: Option<Outcome>,
    /// A FastCGI exchange relayed on the loop (`Phase::Proxying`).
    upstream: Option<Box<Upstream>>,
    /// A pool request parked until one of the pool's children is free.
    parked: Option<Box<Gateway>>,
    /// A FastCGI request's body as it arrives, and once it is whole: the
    /// application is given the request only then.
    spool: Option<Spool>,
    body: Option<Spooled>,
}

pub struct EventLoop {
    site: Arc<Site>,
    epoll: Epoll,
    listeners: Vec<Listener>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    next_generation: u64,
    pool: ThreadPool,
    logs: LogWriters,
    date: DateCache,
    rules: ConnRules,
    /// Shared buffer that reads land in and responses are built in, so idle
    /// connections hold no buffers.
    scratch_in: Vec<u8>,
    scratch_out: Vec<u8>,
    accepted: u64,
    max_connections: u64,
    /// MaxChildConnections: past it the loop stops accepting.
    max_open: usize,
    stopping: bool,
    stop: Arc<AtomicBool>,
    reopen: Arc<AtomicBool>,
    signal_fd: Option<std::os::fd::OwnedFd>,
    open: usize,
    /// Requests waiting for a child of one of warren's own pools.
    pool_waits: PoolWaits,
    /// The scoreboard, and this child's process slot in it.
    sb: Arc<Scoreboard>,
    slot: usize,
    /// The listening sockets are in the epoll set.
    listening: bool,
    /// ThreadsPerChild: the worker threads' scoreboard slots follow the loop's.
    threads: usize,
    /// Which FastCGI applications have our side shut once a request is out.
    half_close: HalfClose,
}

impl EventLoop {
    pub fn new(
        site: Arc<Site>,
        listeners: Vec<Listener>,
        sb: Arc<Scoreboard>,
        slot: usize,
        stop: Arc<AtomicBool>,
        reopen: Arc<AtomicBool>,
        signal_fd: Option<std::os::fd::OwnedFd>,
    ) -> io::Result<EventLoop> {
        let s = &site.settings;
        let pool = ThreadPool::start(s.tuning.threads_per_child, site.clone(), sb.clone(), slot)?;
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        epoll.add(pool.wake.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_WAKE))?;
        let pool_waits = PoolWaits::new()?;
        epoll.add(pool_waits.wake.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_POOL_WAKE))?;
        if let Some(fd) = &signal_fd {
            epoll.add(fd, EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_SIGNAL))?;
        }
        let mut event_loop = EventLoop {
            pool_waits,
            logs: site.log_writers(),
            rules: conn_rules(s),
            max_connections: u64::from(s.tuning.max_connections_per_child),
            max_open: match s.tuning.max_child_connections {
                0 => usize::MAX,
                n => n as usize,
            },
            site: site.clone(),
            epoll,
            listeners,
            conns: Vec::new(),
            free: Vec::new(),
            next_generation: 0,
            pool,
            date: DateCache::default(),
            scratch_in: vec![0; READ_CHUNK],
            scratch_out: Vec::with_capacity(crate::exchange::INLINE_BODY as usize + 4096),
            accepted: 0,
            stopping: false,
            stop,
            reopen,
            signal_fd,
            open: 0,
            sb,
            slot,
            listening: false,
            threads: s.tuning.threads_per_child as usize,
            half_close: HalfClose::default(),
        };
        event_loop.update_listening();
        Ok(event_loop)
    }

    /// Publishes whether a worker thread is idle, and takes up or gives up
    /// the listening sockets as `spread` decides.
    fn update_listening(&mut self) {
        // A thread still starting counts as idle: it will be in a moment.
        let idle_thread = (1..=self.threads).any(|t| matches!(self.sb.thread(self.slot, t).state(), State::Ready | State::Starting));
        self.sb.process(self.slot).full.store(u8::from(!idle_thread && self.threads > 0), Ordering::Relaxed);
        let capped = self.open >= self.max_open;
        if capped != (self.sb.process(self.slot).capped.load(Ordering::Relaxed) != 0) {
            self.sb.process(self.slot).capped.store(u8::from(capped), Ordering::Relaxed);
            if capped {
                let why = format!("child holds MaxChildConnections ({}) connections; new ones wait in the listen queue for another child, or for some of these to close", self.max_open);
                self.site.error_log.log(LogLevel::Warn, None, &why);
            }
        }
        let want = !self.stopping && !capped && spread::accepts(&self.sb, self.slot);
        if want == self.listening {
            return;
        }
        for (i, l) in self.listeners.iter().enumerate() {
            let result = if want {
                // EPOLLEXCLUSIVE: one idle child wakes per connection, not all.
                self.epoll.add(&l.socket, EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLEXCLUSIVE, TOKEN_LISTENER + i as u64))
            } else {
                self.epoll.delete(&l.socket)
            };
            if let Err(e) = result {
                self.site.error_log.log(LogLevel::Crit, None, &format!("cannot {} listening socket {}: {e}", if want { "watch" } else { "unwatch" }, l.addr));
            }
        }
        self.listening = want;
        self.sb.process(self.slot).accepting.store(u8::from(want), Ordering::Relaxed);
    }

    /// Runs until stopped (and its connections are finished) or retired by
    /// MaxConnectionsPerChild.
    pub fn run(&mut self) {
        let mut events = vec![EpollEvent::empty(); 256];
        let mut last_tick = Instant::now();
        let mut stop_deadline: Option<Instant> = None;
        loop {
            if self.stop.load(Ordering::Relaxed) && !self.stopping {
                self.begin_stop();
            }
            if self.stopping {
                let deadline = *stop_deadline.get_or_insert_with(|| Instant::now() + self.rules.timeout.min(Duration::from_secs(10)));
                if self.open == 0 || Instant::now() >= deadline {
                    break;
                }
            }
            let n = match self.epoll.wait(&mut events, EpollTimeout::from(TICK.as_millis() as u16)) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => 0,
                Err(e) => {
                    self.site.error_log.log(LogLevel::Crit, None, &format!("epoll_wait failed: {e}"));
                    break;
                }
            };
            // The loop is a worker too: busy while it handles this batch.
            let sb = self.sb.clone();
            let loop_slot = sb.thread(self.slot, 0);
            loop_slot.set(if n > 0 { State::Writing } else { State::Ready });
            for ev in &events[..n] {
                let token = ev.data();
                let flags = ev.events();
                match token {
                    TOKEN_WAKE => self.finish_work(),
                    TOKEN_POOL_WAKE => {
                        self.pool_waits.reset_wake();
                        self.retry_parked(Instant::now());
                    }
                    TOKEN_SIGNAL => {
                        if let Some(fd) = &self.signal_fd {
                            let _ = nix::unistd::read(fd, &mut [0u8; 64]);
                        }
                        if self.reopen.swap(false, Ordering::Relaxed) {
                            self.logs.flush();
                            self.site.reopen_logs();
                        }
                    }
                    t if t >= TOKEN_LISTENER => self.accept((t - TOKEN_LISTENER) as usize),
                    t if t >= TOKEN_UPSTREAM => self.upstream_ready((t - TOKEN_UPSTREAM) as usize, flags),
                    t => self.ready(t as usize, flags),
                }
            }
            loop_slot.set(State::Ready);
            let now = Instant::now();
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                self.expire(now);
                self.retry_parked(now);
                self.logs.flush();
                self.update_listening();
            }
        }
        self.logs.flush();
    }

    fn begin_stop(&mut self) {
        self.stopping = true;
        // The next child in line takes over at its next tick.
        self.sb.process(self.slot).quiescing.store(1, Ordering::Relaxed);
        self.update_listening();
        // A kept-alive connection may have a request on its way: each one
        // gets its next request answered (with Connection: close), and is
        // closed only once it has been idle for a while.
        let keep_alive = self.rules.keep_alive;
        for c in self.conns.iter_mut().flatten() {
            if c.phase == Phase::KeepAlive {
                let idle_since = c.deadline.checked_sub(keep_alive.timeout).unwrap_or(c.deadline);
                c.deadline = keep_alive.idle_deadline(idle_since, true);
            }
        }
    }

    /// Takes up to ACCEPT_BATCH connections off the queue first, then
    /// starts on them: a burst of clients empties the listen queue before it
    /// can overflow (an overflow costs the client a retransmission).
    fn accept(&mut self, which: usize) {
        let mut fresh = [0usize; ACCEPT_BATCH];
        let mut n = 0;
        while n < ACCEPT_BATCH && !self.stopping && self.open < self.max_open {
            let (stream, peer) = match listen::accept(&self.listeners[which].socket) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE) => {
                    self.site.error_log.error(None, &format!("accept: {e}; raise the open files limit"));
                    break;
                }
                // The parent shut the socket down: it is stopping.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                Err(_) => continue,
            };
            let laddr = self.listeners[which].addr;
            let local = if laddr.ip().is_unspecified() { stream.local_addr().unwrap_or(laddr) } else { laddr };
            let slot = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            self.next_generation += 1;
            // A new connection's head is timed from now.
            let clock = self.rules.head_clock(Instant::now(), 0);
            let conn = Conn {
                stream,
                info: ConnInfo { peer, local },
                generation: self.next_generation,
                phase: Phase::ReadingHead,
                waiting_worker: false,
                // With TCP_DEFER_ACCEPT the first bytes are usually there already.
                readable: true,
                rbuf: Vec::new(),
                scan: HeadScan::default(),
                out: Output::default(),
                deadline: clock.deadline(),
                clock,
                served: 0,
                req: None,
                pending: None,
                upstream: None,
                parked: None,
                spool: None,
                body: None,
            };
            let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
            if self.epoll.add(&conn.stream, EpollEvent::new(flags, slot as u64)).is_err() {
                self.free.push(slot);
                continue;
            }
            self.conns[slot] = Some(conn);
            self.open += 1;
            self.accepted += 1;
            fresh[n] = slot;
            n += 1;
            if self.max_connections > 0 && self.accepted >= self.max_connections {
                self.site.error_log.log(LogLevel::Info, None, "MaxConnectionsPerChild reached, child retiring");
                self.begin_stop();
            }
        }
        for &slot in &fresh[..n] {
            self.drive(slot);
        }
        if self.open >= self.max_open {
            // Out of the epoll set at once: the listener is level-triggered.
            self.update_listening();
        }
    }

    fn ready(&mut self, slot: usize, flags: EpollFlags) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else { return };
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
            c.readable = true;
        }
        if c.waiting_worker {
            return;
        }
        self.drive(slot);
    }

    /// Advances one connection as far as it can go without blocking.
    fn drive(&mut self, slot: usize) {
        loop {
            let Some(c) = self.conns[slot].as_mut() else { return };
            if c.waiting_worker {
                return;
            }
            match c.phase {
                Phase::Writing => match c.out.flush(&c.stream) {
                    Ok(true) => {
                        if !self.finish_response(slot) {
                            return;
                        }
                    }
                    Ok(false) => return,
                    Err(_) => {
                        self.abort(slot);
                        return;
                    }
                },
                Phase::Proxying => {
                    if !self.relay(slot) {
                        return;
                    }
                }
                Phase::Lingering => {
                    match drain(c) {
                        Ok(true) | Err(_) => self.close(slot),
                        Ok(false) => {}
                    }
                    return;
                }
                Phase::KeepAlive | Phase::ReadingHead => {
                    if !c.rbuf.is_empty() {
                        match parse_head_from(&mut c.scan, &c.rbuf, &self.rules.limits) {
                            Ok(Some((head, used))) => {
                                c.rbuf.drain(..used);
                                c.scan = HeadScan::default();
                                self.start_request(slot, head);
                                continue;
                            }
                            Ok(None) => {}
                            Err(e) => {
                                self.protocol_error(slot, e);
                                continue;
                            }
                        }
                    }
                    match self.read_more(slot) {
                        ReadResult::Data => continue,
                        ReadResult::Blocked => return,
                        ReadResult::Closed => {
                            self.close(slot);
                            return;
                        }
                    }
                }
                Phase::ReadingBody => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let req = c.req.as_mut().expect("request in flight");
                    let dec = req.decoder.as_mut().expect("decoder");
                    let limit = req.body_limit;
                    // A FastCGI request's body is kept; any other is dropped.
                    let mut spool_failed = None;
                    let fed = dec.feed(&c.rbuf, &mut |d| {
                        if let Some(s) = c.spool.as_mut().filter(|_| spool_failed.is_none()) {
                            spool_failed = s.push(d).err();
                        }
                    });
                    match fed {
                        Ok(used) => {
                            c.rbuf.drain(..used);
                            req.bytes_received += used as u64;
                        }
                        Err(e) => {
                            self.body_error(slot, e);
                            continue;
                        }
                    }
                    if let Some(e) = spool_failed {
                        self.body_error(slot, warren_handler::fastcgi::spool_error(e));
                        continue;
                    }
                    let dec = req.decoder.as_ref().expect("decoder");
                    if let Err(e) = received_body_within(dec.received, limit) {
                        self.body_error(slot, e);
                        continue;
                    }
                    if dec.is_done() {
                        req.decoder = None;
                        self.dispatch(slot);
                        continue;
                    }
                    match self.read_more(slot) {
                        ReadResult::Data => continue,
                        ReadResult::Blocked => return,
                        ReadResult::Closed => {
                            self.abort(slot);
                            return;
                        }
                    }
                }
            }
        }
    }

    fn read_more(&mut self, slot: usize) -> ReadResult {
        let c = self.conns[slot].as_mut().expect("conn");
        if !c.readable {
            return ReadResult::Blocked;
        }
        match c.stream.read(&mut self.scratch_in) {
            Ok(0) => ReadResult::Closed,
            Ok(n) => {
                // A short read drained the socket; the next edge will tell us of more.
                if n < self.scratch_in.len() {
                    c.readable = false;
                }
                let now = Instant::now();
                if c.rbuf.is_empty() && c.phase == Phase::KeepAlive {
                    // A kept-alive connection's next head is timed from its first byte.
                    c.phase = Phase::ReadingHead;
                    c.clock = self.rules.head_clock(now, 0);
                }
                if matches!(c.phase, Phase::ReadingHead | Phase::ReadingBody) {
                    c.clock.received(n as u64, now);
                    c.deadline = c.clock.deadline();
                }
                c.rbuf.extend_from_slice(&self.scratch_in[..n]);
                ReadResult::Data
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                ReadResult::Blocked
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => ReadResult::Data,
            Err(_) => ReadResult::Closed,
        }
    }

    /// A request head has arrived: route it at once. A FastCGI request
    /// without a body goes to its application now; with one, once the loop
    /// has read the body whole (a slow client holds no thread and no pool
    /// child). Any other answer waits for the body to be read and dropped.
    fn start_request(&mut self, slot: usize, head: RequestHead) {
        let c = self.conns[slot].as_mut().expect("conn");
        c.served += 1;
        let keep_alive = self.rules.keep_alive.keep_alive(&head, c.served, self.stopping);
        let framing = head.framing;
        let received = head.wire_len() as u64;
        let mut req = Exchange::new(Some(head), keep_alive, received);
        if let Err(e) = req.apply_body_limit(&self.site, &c.info) {
            c.req = Some(req);
            self.body_error(slot, e);
            return;
        }
        req.note_start(self.sb.thread(self.slot, 0), &self.site, &c.info);
        let site = &self.site;
        let info = c.info;
        let head_ref = req.head.as_ref().expect("head");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| site.handle(head_ref, &info)))
            .unwrap_or_else(|_| Outcome::Ready(panic_response(site, head_ref, &info)));
        c.req = Some(req);
        if framing == BodyFraming::None {
            self.settle(slot, outcome);
            return;
        }
        let c = self.conns[slot].as_mut().expect("conn");
        if matches!(&outcome, Outcome::Gateway(gw) if gw.takes_body()) {
            c.spool = Some(Spool::default());
        }
        c.pending = Some(outcome);
        let req = c.req.as_mut().expect("req");
        if req.head.as_ref().expect("head").expect_continue {
            // The body will be read and discarded; say so before the client sends it.
            let _ = c.stream.write(CONTINUE);
        }
        req.decoder = Some(BodyDecoder::new(framing));
        c.phase = Phase::ReadingBody;
        // The body is timed from now, with what came with the head.
        c.clock = self.rules.body_clock(Instant::now(), c.rbuf.len());
        c.deadline = c.clock.deadline();
    }

    /// Lends the connection to a worker thread for a FastCGI exchange.
    fn lend(&mut self, slot: usize, gateway: Box<Gateway>) {
        let c = self.conns[slot].as_mut().expect("conn");
        let stream = match c.stream.try_clone() {
            Ok(s) => s,
            Err(e) => {
                self.site.error_log.error(Some(c.info.peer), &format!("cannot hand the connection to a worker thread: {e}"));
                self.abort(slot);
                return;
            }
        };
        let exchange = c.req.take().expect("request in flight");
        let job = FastCgiJob { stream, info: c.info, rbuf: std::mem::take(&mut c.rbuf), exchange, gateway, body: c.body.take() };
        c.waiting_worker = true;
        c.deadline = Instant::now() + Duration::from_secs(3600);
        self.pool.submit(slot, c.generation, Job::FastCgi(Box::new(job)));
    }

    /// The body is in (or there was none): answer as the handler decided.
    fn dispatch(&mut self, slot: usize) {
        let c = self.conns[slot].as_mut().expect("conn");
        let Some(outcome) = c.pending.take() else { return };
        if let Some(spool) = c.spool.take() {
            match spool.finish() {
                Ok(body) => c.body = Some(body),
                Err(e) => {
                    self.body_error(slot, warren_handler::fastcgi::spool_error(e));
                    return;
                }
            }
        }
        self.settle(slot, outcome);
    }

    fn settle(&mut self, slot: usize, outcome: Outcome) {
        let c = self.conns[slot].as_mut().expect("conn");
        match outcome {
            Outcome::Ready(resp) => self.respond(slot, resp),
            Outcome::Blocking(work) => {
                c.waiting_worker = true;
                c.deadline = Instant::now() + Duration::from_secs(3600);
                self.pool.submit(slot, c.generation, Job::Respond(work));
            }
            Outcome::Gateway(gw) => self.proxy(slot, gw),
        }
    }

    /// Starts relaying a FastCGI exchange on the loop, or hands it to a
    /// worker thread when the loop cannot do it without blocking.
    fn proxy(&mut self, slot: usize, gw: Box<Gateway>) {
        let c = self.conns[slot].as_mut().expect("conn");
        if matches!(c.body, Some(Spooled::File(..))) {
            // Sending a file may block: a worker thread's job.
            self.lend(slot, gw);
            return;
        }
        let reader = self.site.response_reader(&gw, &c.info);
        match Upstream::start(gw, memory_body(&c.body), reader, self.site.pools.get(), &self.half_close) {
            Ok(up) => {
                c.body = None;
                self.attach(slot, up);
            }
            Err((gw, NotHere::UseThread)) => match (&gw.backend.addr, self.site.pools.get()) {
                // A pool with no idle child: the request waits on the loop.
                (FcgiAddr::Pool(name), Some(d)) => match d.join_queue(name) {
                    Ok(()) => {
                        let name = name.clone();
                        let d = d.clone();
                        c.parked = Some(gw);
                        c.waiting_worker = true;
                        let p = Parked { slot, generation: c.generation, pool: name, deadline: Instant::now() + self.rules.timeout };
                        self.pool_waits.park(p, &d);
                    }
                    Err(busy) => {
                        let FcgiAddr::Pool(name) = &gw.backend.addr else { unreachable!() };
                        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                        let resp = self.site.pool_unavailable(&gw, head, &c.info, name, busy);
                        self.answer_error(slot, resp);
                    }
                },
                _ => self.lend(slot, gw),
            },
            Err((gw, NotHere::Failed(e))) => self.gateway_error(slot, &gw, &GatewayError::connect(&gw.backend_name(), &e)),
        }
    }

    /// Starts relaying on the loop: the application's socket joins the epoll.
    fn attach(&mut self, slot: usize, up: Upstream) {
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
        let added = self.epoll.add(up.fd(), EpollEvent::new(flags, TOKEN_UPSTREAM + slot as u64));
        let timeout = up.gateway.timeout;
        let c = self.conns[slot].as_mut().expect("conn");
        c.upstream = Some(Box::new(up));
        match added {
            Ok(()) => {
                c.phase = Phase::Proxying;
                c.deadline = Instant::now() + timeout;
            }
            Err(e) => {
                let why = format!("FastCGI: cannot watch the connection to {}: {e}", c.upstream.as_ref().expect("upstream").gateway.backend_name());
                self.fail_upstream(slot, &GatewayError { status: 503, why });
            }
        }
    }

    /// Answers with the error of an exchange that could not start.
    fn gateway_error(&mut self, slot: usize, gw: &Gateway, e: &GatewayError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let resp = self.site.gateway_failed(gw, head, &c.info, e);
        self.answer_error(slot, resp);
    }

    /// An error page for the request in flight: its local ErrorDocument,
    /// if it has one, is an internal redirect, possibly to a script.
    fn answer_error(&mut self, slot: usize, page: Response) {
        let c = self.conns[slot].as_ref().expect("conn");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        let outcome = self.site.follow_error_document(Outcome::Ready(page), head, &c.info);
        self.settle(slot, outcome);
    }

    /// A relayed exchange ended (and gave back its pool child, if it had
    /// one): a request parked on this loop may take the child at once.
    fn child_given_back(&mut self) {
        if !self.pool_waits.parked.is_empty() {
            self.retry_parked(Instant::now());
        }
    }

    /// Leases children for parked requests, first come first served; those
    /// past Timeout get 503.
    fn retry_parked(&mut self, now: Instant) {
        let Some(d) = self.site.pools.get().cloned() else { return };
        let mut busy_pools: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.pool_waits.parked.len() {
            let p = &self.pool_waits.parked[i];
            let (slot, generation, pool) = (p.slot, p.generation, p.pool.clone());
            let alive = matches!(&self.conns.get(slot), Some(Some(c)) if c.generation == generation && c.parked.is_some());
            if !alive {
                self.pool_waits.unpark(i, &d);
                continue;
            }
            if busy_pools.contains(&pool) && p.deadline > now {
                i += 1;
                continue;
            }
            let c = self.conns[slot].as_mut().expect("conn");
            let gw = c.parked.take().expect("parked");
            let timed_out = p.deadline <= now;
            let reader = self.site.response_reader(&gw, &c.info);
            let started = if timed_out { Err((gw, NotHere::UseThread)) } else { Upstream::start(gw, memory_body(&c.body), reader, Some(&d), &self.half_close) };
            if let Err((gw, NotHere::UseThread)) = started {
                if !timed_out {
                    // Still none free: the rest of this pool's queue waits too.
                    c.parked = Some(gw);
                    busy_pools.push(pool);
                    i += 1;
                    continue;
                }
                self.pool_waits.unpark(i, &d);
                self.conns[slot].as_mut().expect("conn").waiting_worker = false;
                let c = self.conns[slot].as_ref().expect("conn");
                let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                let resp = self.site.pool_unavailable(&gw, head, &c.info, &pool, PoolBusy::Timeout);
                self.answer_error(slot, resp);
                self.drive(slot);
                continue;
            }
            self.pool_waits.unpark(i, &d);
            let c = self.conns[slot].as_mut().expect("conn");
            c.waiting_worker = false;
            // Events that came while parked were set aside.
            c.readable = true;
            match started {
                Ok(up) => {
                    c.body = None;
                    self.attach(slot, up);
                }
                Err((gw, NotHere::Failed(e))) => self.gateway_error(slot, &gw, &GatewayError::connect(&gw.backend_name(), &e)),
                Err((_, NotHere::UseThread)) => unreachable!("handled above"),
            }
            self.drive(slot);
        }
    }

    fn upstream_ready(&mut self, slot: usize, flags: EpollFlags) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else { return };
        let Some(up) = c.upstream.as_mut() else { return };
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
            up.readable = true;
        }
        if flags.intersects(EpollFlags::EPOLLOUT | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR) {
            up.writable = true;
        }
        if c.phase == Phase::Proxying {
            self.drive(slot);
        }
    }

    /// Relays as far as it can go without blocking. True when the
    /// connection has moved on to another phase and should be driven on.
    fn relay(&mut self, slot: usize) -> bool {
        loop {
            match self.relay_step(slot) {
                Relay::Again => {}
                Relay::Wait => return false,
                Relay::Failed(e) => {
                    self.fail_upstream(slot, &e);
                    return true;
                }
                Relay::Lost(e) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let up = c.upstream.as_mut().expect("upstream");
                    let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                    if up.lost_child_may_be_replaced() && up.gateway.retry_lost_child(head) {
                        self.site.error_log.log(LogLevel::Warn, Some(c.info.peer), &format!("{}; sending the request to another child", e.why));
                        // Dropping the exchange gives the lost child's place back.
                        let gw = c.upstream.take().expect("upstream").gateway;
                        self.child_given_back();
                        self.proxy(slot, gw);
                    } else {
                        self.fail_upstream(slot, &e);
                    }
                    return true;
                }
                Relay::CutShort(e) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    if let Some(up) = c.upstream.take() {
                        up.reader.log_cut_short(&e);
                    }
                    self.abort(slot);
                    return false;
                }
                Relay::ClientGone => {
                    self.conns[slot].as_mut().expect("conn").upstream = None;
                    self.abort(slot);
                    return false;
                }
                Relay::Redirect(location) => {
                    let c = self.conns[slot].as_mut().expect("conn");
                    let up = c.upstream.take().expect("upstream");
                    let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                    let (outcome, _) = self.site.redirect_outcome(&up.gateway, head, &c.info, &location);
                    self.settle(slot, outcome);
                    return true;
                }
                Relay::Whole(resp) => {
                    self.conns[slot].as_mut().expect("conn").upstream = None;
                    self.respond(slot, resp);
                    self.child_given_back();
                    return true;
                }
                Relay::Ended => {
                    // The application is free now; the client takes the
                    // rest at its own pace.
                    let c = self.conns[slot].as_mut().expect("conn");
                    c.upstream = None;
                    c.phase = Phase::Writing;
                    c.deadline = Instant::now() + self.rules.timeout;
                    self.child_given_back();
                    return true;
                }
            }
        }
    }

    /// One pass: the client's output, the request to the application, and
    /// what the application has sent.
    fn relay_step(&mut self, slot: usize) -> Relay {
        let c = self.conns[slot].as_mut().expect("conn");
        let Conn { stream, out, upstream, req, deadline, .. } = c;
        let up = upstream.as_mut().expect("proxying");
        if !out.is_empty() {
            match out.flush(stream) {
                Ok(_) => *deadline = Instant::now() + up.gateway.timeout,
                Err(_) => return Relay::ClientGone,
            }
        }
        let read_ahead = up.body.as_ref().and_then(|f| f.spill.as_ref()).is_some_and(Spill::has_room);
        if !read_ahead && out.pending() > RELAY_HIGH_WATER {
            return Relay::Wait;
        }
        match up.check_connected() {
            Ok(true) => {}
            Ok(false) => return Relay::Wait,
            Err(e) => return Relay::Failed(GatewayError::connect(&up.gateway.backend_name(), &e)),
        }
        match up.send_request() {
            Ok(true) => {}
            Ok(false) => return Relay::Wait,
            Err(e) => return Relay::Failed(GatewayError::io("sending the request to", &up.gateway.backend.addr, &e)),
        }
        if !up.readable {
            return Relay::Wait;
        }
        let head_sent = up.body.is_some();
        match up.receive(&mut self.scratch_in) {
            Ok(0) => {
                let e = GatewayError { status: 502, why: format!("FastCGI: {} closed the connection before the end of its answer", up.gateway.backend_name()) };
                return if head_sent { Relay::CutShort(e) } else if up.reader.nothing_yet() { Relay::Lost(e) } else { Relay::Failed(e) };
            }
            Ok(_) => *deadline = Instant::now() + up.gateway.timeout,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Relay::Again,
            Err(e) => {
                let reset = e.kind() == io::ErrorKind::ConnectionReset;
                let e = GatewayError::io("reading the response from", &up.gateway.backend.addr, &e);
                return if head_sent { Relay::CutShort(e) } else if reset && up.reader.nothing_yet() { Relay::Lost(e) } else { Relay::Failed(e) };
            }
        }
        let ex = req.as_mut().expect("request in flight");
        loop {
            match up.reader.next_piece() {
                Ok(None) => break,
                Ok(Some(Piece::Head(mut h))) => {
                    if let Some(location) = h.redirect.take() {
                        return Relay::Redirect(location);
                    }
                    let mut resp = up.gateway.response(&mut h);
                    let mut body = std::mem::take(&mut h.first_body);
                    // All of it may be here already: then it goes with a
                    // Content-Length, in one write with the head.
                    loop {
                        match up.reader.next_piece() {
                            Ok(Some(Piece::Data(d))) => body.extend_from_slice(&d),
                            Ok(Some(Piece::End)) => {
                                if let Some(n) = h.content_length {
                                    body.truncate(n.min(body.len() as u64) as usize);
                                }
                                resp.body = Body::Bytes(body);
                                return Relay::Whole(resp);
                            }
                            Ok(Some(Piece::Head(_))) | Ok(None) => break,
                            Err(e) => return Relay::Failed(e),
                        }
                    }
                    resp.body = Body::Stream { source: Box::new(FedByLoop), len: h.content_length };
                    out.encode(ex, resp, &self.site, &mut self.date, &mut self.scratch_out);
                    let st = out.streaming.take().expect("a streamed body");
                    let spill = up.gateway.buffers(&h).then(Spill::default);
                    up.body = Some(RelayFraming { chunked: st.chunked, remaining: st.remaining, send: st.send, spill });
                    queue_piece(out, up.body.as_mut().expect("framing"), ex, body);
                }
                Ok(Some(Piece::Data(d))) => match up.body.as_mut() {
                    Some(f) => queue_piece(out, f, ex, d),
                    None => unreachable!("data comes after the head"),
                },
                Ok(Some(Piece::End)) => {
                    let f = up.body.as_ref().expect("the end comes after the head");
                    if f.remaining.is_some_and(|left| left > 0) && f.send {
                        let e = GatewayError { status: 502, why: format!("FastCGI: {} sent less than its Content-Length", up.gateway.backend_name()) };
                        return Relay::CutShort(e);
                    }
                    if f.chunked && f.send {
                        out.queue.push_back(Chunk::Bytes(b"0\r\n\r\n".to_vec()));
                        ex.bytes_sent += 5;
                    }
                    return Relay::Ended;
                }
                Err(e) => return if up.body.is_some() { Relay::CutShort(e) } else { Relay::Failed(e) },
            }
        }
        Relay::Again
    }

    /// An exchange that failed before its head was sent: the error answer.
    fn fail_upstream(&mut self, slot: usize, e: &GatewayError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let up = c.upstream.take().expect("upstream");
        let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
        // A pool child killed for request_terminate_timeout: 504, as php-fpm.
        let killed;
        let e = if up.terminated() {
            killed = GatewayError { status: 504, why: format!("{} (killed by request_terminate_timeout)", e.why) };
            &killed
        } else {
            e
        };
        let resp = self.site.gateway_failed(&up.gateway, head, &c.info, e);
        self.answer_error(slot, resp);
    }

    fn finish_work(&mut self) {
        self.pool.reset_wake();
        while let Ok(done) = self.pool.done.try_recv() {
            let alive = matches!(&self.conns.get(done.slot), Some(Some(c)) if c.generation == done.generation);
            if !alive {
                continue;
            }
            let c = self.conns[done.slot].as_mut().expect("conn");
            c.waiting_worker = false;
            match done.outcome {
                JobResult::Response(r) => {
                    let resp = match r {
                        Some(r) => r,
                        None => {
                            let head = c.req.as_ref().and_then(|r| r.head.as_ref()).expect("head");
                            panic_response(&self.site, head, &c.info)
                        }
                    };
                    self.respond(done.slot, resp);
                }
                JobResult::FastCgi { rbuf, exchange, sent } => {
                    c.rbuf = rbuf;
                    c.scan = HeadScan::default();
                    c.req = Some(*exchange);
                    // The worker may have taken the input that an edge announced.
                    c.readable = true;
                    if !sent {
                        self.abort(done.slot);
                        continue;
                    }
                    if !self.finish_response(done.slot) {
                        continue;
                    }
                }
            }
            self.drive(done.slot);
        }
    }

    /// A request that could not be parsed: answer and close.
    fn protocol_error(&mut self, slot: usize, e: HttpError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let (ex, resp) = Exchange::for_protocol_error(&c.rbuf, &e, &self.site, &c.info);
        c.served += 1;
        c.req = Some(ex);
        c.rbuf.clear();
        c.scan = HeadScan::default();
        self.respond(slot, resp);
    }

    /// A bad or oversized body: answer and close (what is left of the body
    /// cannot be told from a next request).
    fn body_error(&mut self, slot: usize, e: HttpError) {
        let c = self.conns[slot].as_mut().expect("conn");
        let resp = c.req.as_mut().expect("req").body_error(&e, &self.site, &c.info);
        c.rbuf.clear();
        c.scan = HeadScan::default();
        c.pending = None;
        c.spool = None;
        self.respond(slot, resp);
    }

    /// Encodes a response into the connection's output and starts writing.
    fn respond(&mut self, slot: usize, resp: Response) {
        let c = self.conns[slot].as_mut().expect("conn");
        let ex = c.req.as_mut().expect("request in flight");
        c.out.encode(ex, resp, &self.site, &mut self.date, &mut self.scratch_out);
        c.phase = Phase::Writing;
        c.deadline = Instant::now() + self.rules.timeout;
    }

    /// The response is out: log it, then keep the connection or close it.
    /// Returns true if the connection should be driven further.
    fn finish_response(&mut self, slot: usize) -> bool {
        let c = self.conns[slot].as_mut().expect("conn");
        let Some(req) = c.req.take() else { return true };
        c.body = None;
        req.log(&mut self.logs, &self.site, &c.info, c.served, false);
        // The loop's requests are counted on the child's first worker slot.
        self.sb.thread(self.slot, 0).end_request(req.bytes_sent, req.start.elapsed().as_micros() as u64);
        match Next::after_response(true, req.keep_alive, req.linger) {
            Next::KeepAlive => {
                c.phase = Phase::KeepAlive;
                c.deadline = self.rules.keep_alive.idle_deadline(Instant::now(), self.stopping);
                if c.rbuf.is_empty() {
                    c.rbuf = Vec::new();
                } else {
                    // A pipelined next request has begun: its head is timed from now.
                    c.phase = Phase::ReadingHead;
                    c.clock = self.rules.head_clock(Instant::now(), c.rbuf.len());
                    c.deadline = c.clock.deadline();
                }
                c.out.release();
                true
            }
            Next::Linger => {
                linger(c);
                true
            }
            Next::Close => {
                self.close(slot);
                false
            }
        }
    }

    /// Closes a connection whose request could not be completed.
    fn abort(&mut self, slot: usize) {
        if let Some(c) = self.conns[slot].as_mut() {
            if let Some(req) = c.req.take() {
                req.log(&mut self.logs, &self.site, &c.info, c.served, true);
            }
        }
        self.close(slot);
    }

    fn close(&mut self, slot: usize) {
        // Closing the socket (dropping the stream) also removes it from epoll.
        if self.conns[slot].take().is_some() {
            self.free.push(slot);
            self.open -= 1;
        }
    }

    /// Enforces RequestReadTimeout, Timeout, KeepAliveTimeout and the
    /// lingering-close limit.
    fn expire(&mut self, now: Instant) {
        for slot in 0..self.conns.len() {
            let Some(c) = self.conns[slot].as_mut() else { continue };
            if c.deadline > now || c.waiting_worker {
                continue;
            }
            match c.phase {
                // Logged once, by the error answer, with the limit that ran out.
                Phase::ReadingHead if !c.rbuf.is_empty() => {
                    let e = c.clock.timeout_error();
                    self.protocol_error(slot, e);
                    self.drive(slot);
                }
                Phase::ReadingBody => {
                    let e = c.clock.timeout_error();
                    self.body_error(slot, e);
                    self.drive(slot);
                }
                Phase::KeepAlive if KeepAlivePolicy::idle_end(self.stopping) == Next::Linger => {
                    linger(c);
                    self.drive(slot);
                }
                Phase::Writing => self.abort(slot),
                Phase::Proxying => {
                    let up = c.upstream.as_ref().expect("proxying");
                    let e = GatewayError { status: 504, why: format!("FastCGI: timeout waiting for {} (ProxyTimeout)", up.gateway.backend_name()) };
                    if up.body.is_some() {
                        up.reader.log_cut_short(&e);
                        c.upstream = None;
                        self.abort(slot);
                    } else {
                        self.fail_upstream(slot, &e);
                        self.drive(slot);
                    }
                }
                _ => self.close(slot),
            }
        }
    }
}

/// What one pass of relaying came to.
enum Relay {
    /// Progress was made: go round again.
    Again,
    /// Nothing more until an event.
    Wait,
    /// Failed before the head was sent: answer with this error.
    Failed(GatewayError),
    /// The application went away before any of its answer came.
    Lost(GatewayError),
    /// Failed after the head was sent: close without ending the body.
    CutShort(GatewayError),
    ClientGone,
    Redirect(String),
    /// The whole answer arrived before anything was sent.
    Whole(Response),
    /// The application has ended its answer; the client may not have all
    /// of it yet.
    Ended,
}

/// A body the loop has read whole and kept in memory, for the request it
/// sends itself; None without a body.
fn memory_body(body: &Option<Spooled>) -> Option<&[u8]> {
    match body {
        Some(Spooled::Memory(b)) => Some(b),
        Some(Spooled::None | Spooled::File(..)) | None => None,
    }
}

/// Frames a piece of a relayed body and queues it for the client.
fn queue_piece(out: &mut Output, f: &mut RelayFraming, ex: &mut Exchange, mut data: Vec<u8>) {
    if !f.send || data.is_empty() {
        return;
    }
    if let Some(left) = f.remaining.as_mut() {
        data.truncate((*left).min(data.len() as u64) as usize);
        *left -= data.len() as u64;
    }
    ex.body_bytes += data.len() as u64;
    let framed = if f.chunked {
        let mut framed = Vec::with_capacity(data.len() + 16);
        warren_http::response::write_chunk(&mut framed, &data);
        framed
    } else {
        data
    };
    ex.bytes_sent += framed.len() as u64;
    match f.spill.as_mut() {
        Some(spill) => spill.queue(out, framed),
        None => out.queue.push_back(Chunk::Bytes(framed)),
    }
}

enum ReadResult {
    Data,
    Blocked,
    Closed,
}

/// Half-closes the connection and drains what the client still sends
/// (bounded by LINGER), so that it reads our last answer, not a reset.
fn linger(c: &mut Conn) {
    let _ = c.stream.shutdown(Shutdown::Write);
    c.phase = Phase::Lingering;
    c.deadline = Instant::now() + LINGER;
    c.readable = true;
}

/// Reads and discards input of a half-closed connection. Ok(true): the
/// client has closed its side.
fn drain(c: &mut Conn) -> io::Result<bool> {
    let mut buf = [0u8; 4096];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                return Ok(false);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}
