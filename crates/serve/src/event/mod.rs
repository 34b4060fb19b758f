//! The event MPM's child: one event loop thread (epoll, edge-triggered) that
//! owns every connection of the child, plus ThreadsPerChild worker threads.
//!
//! Idle keep-alive connections cost no thread: they sit in the loop's slab
//! in `Phase::KeepAlive`. Requests whose answer cannot block (static files,
//! errors, redirects) are answered on the loop; the handler's blocking work
//! goes to the thread pool and comes back as a response to write. Writes are
//! non-blocking with write completion: a response the socket cannot take at
//! once waits in the connection until EPOLLOUT.
//!
//! This file holds the [`EventLoop`] and its run loop (epoll wake-ups,
//! ticks, graceful stop); the loop's work is split by concern:
//! - [`accept`]: taking up and giving up the listeners, accepting.
//! - [`connection`]: the HTTP state machine of one connection.
//! - [`fastcgi_relay`]: FastCGI exchanges on the loop, parked requests,
//!   and connections lent to a worker thread.
//! - [`h2`]: HTTP/2 connections, their streams' work on the thread pool.
//! - [`h2_relay`]: HTTP/2 streams' FastCGI exchanges on the loop.
//! - [`ws_tunnel`]: WebSocket tunnels, carried by the loop once their 101
//!   is out.
//! - [`h2_ws`]: WebSocket tunnels over HTTP/2 streams (RFC 8441).
//! - [`proxy_relay`]: HTTP backend exchanges (mod_proxy_http) on the loop.
//! - [`proxy_upload`]: their request bodies relayed as the client sends them.
//! - [`h2_proxy`]: HTTP/2 streams' HTTP backend exchanges on the loop.
//! - [`readiness`]: what epoll said of a backend's socket, for the relays.
//! - [`completions`]: work the thread pool has finished, and deadlines.
//! - [`thread_pool`]: the worker threads.

use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use warren_config::LogLevel;
use warren_handler::site::LogWriters;
use warren_handler::Site;
use warren_http::{ConnRules, DateCache};

use crate::exchange::conn_rules;
use crate::fastcgi::pool_wait::PoolWaits;
use warren_mpm::listen::Listener;
use warren_mpm::scoreboard::{Scoreboard, State};
use connection::Conn;
use thread_pool::ThreadPool;

mod accept;
mod completions;
mod connection;
mod fastcgi_relay;
mod h2;
mod h2_proxy;
mod h2_relay;
mod h2_ws;
mod proxy_relay;
mod proxy_upload;
mod readiness;
pub mod thread_pool;
mod ws_tunnel;

#[cfg(test)]
mod loop_tests;

/// How much one read from a client asks for: the size of the loop's
/// shared read buffer.
const READ_CHUNK: usize = 16 * 1024;
/// How often deadlines are checked and access logs flushed.
const TICK: Duration = Duration::from_millis(250);

const TOKEN_WAKE: u64 = u64::MAX;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;
const TOKEN_POOL_WAKE: u64 = u64::MAX - 2;
const TOKEN_LISTENER: u64 = 1 << 62;
/// Added to a connection's slot: the token of its FastCGI application socket.
const TOKEN_UPSTREAM: u64 = 1 << 61;
/// Added to an index in `h2_relays`: the token of an HTTP/2 stream's
/// FastCGI application socket.
const TOKEN_H2_UPSTREAM: u64 = 1 << 60;
/// Added to a connection's slot: the token of its WebSocket tunnel's backend.
const TOKEN_TUNNEL: u64 = 1 << 59;
/// Added to a connection's slot: the token of its HTTP backend's socket.
const TOKEN_HTTP_UPSTREAM: u64 = 1 << 58;
/// Added to an index in `h2_tunnels`: the token of an HTTP/2 stream's
/// WebSocket backend.
const TOKEN_H2_TUNNEL: u64 = 1 << 57;
/// Added to an index in `h2_proxies`: the token of an HTTP/2 stream's
/// HTTP backend socket.
const TOKEN_H2_HTTP_UPSTREAM: u64 = 1 << 56;

/// Set by the signal handler: stop gracefully.
pub struct StopFlag(pub Arc<AtomicBool>);

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
    /// HTTP/2 streams' FastCGI exchanges on the loop.
    h2_relays: Vec<Option<h2_relay::H2Relay>>,
    /// How many of them feed a stream's body as it comes.
    h2_feeding: usize,
    /// HTTP/2 connections with something new to send: driven once the
    /// batch of events is handled, so answers that came together go in one
    /// write (and one TLS record) rather than one each.
    h2_ready: Vec<usize>,
    /// How many connections are WebSocket tunnels ([`ws_tunnel`]).
    tunnels: usize,
    /// HTTP/2 streams' WebSocket tunnels ([`h2_ws`]).
    h2_tunnels: Vec<Option<h2_ws::H2Tunnel>>,
    /// Kept connections to HTTP backends.
    proxy_idle: proxy_relay::IdleBackends,
    /// HTTP/2 streams' HTTP backend exchanges on the loop, and how many.
    h2_proxies: Vec<Option<h2_proxy::H2Proxy>>,
    h2_proxy_count: usize,
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
            h2_relays: Vec::new(),
            h2_feeding: 0,
            h2_ready: Vec::new(),
            tunnels: 0,
            h2_tunnels: Vec::new(),
            proxy_idle: Default::default(),
            h2_proxies: Vec::new(),
            h2_proxy_count: 0,
        };
        event_loop.update_listening();
        Ok(event_loop)
    }

    /// Runs until stopped (and its connections are finished) or retired by
    /// MaxConnectionsPerChild.
    pub fn run(&mut self) {
        warren_handler::htaccess::mark_event_loop_thread();
        let mut events = vec![EpollEvent::empty(); 256];
        let mut last_tick = Instant::now();
        let mut stop_deadline: Option<Instant> = None;
        loop {
            if self.stop.load(Ordering::Relaxed) && !self.stopping {
                self.begin_stop();
            }
            if self.stopping {
                let deadline = *stop_deadline.get_or_insert_with(|| Instant::now() + self.rules.timeout.min(warren_mpm::CHILD_STOP_DEADLINE));
                self.end_tunnels_if_stopped_now();
                // Tunnels outlast the deadline of a graceful stop: each ends by itself.
                if self.open == 0 || (Instant::now() >= deadline && self.stop_all_but_tunnels()) {
                    break;
                }
            }
            // Output still to drive does not wait for an event.
            let wait = if self.h2_ready.is_empty() { TICK.as_millis() as u16 } else { 0 };
            let n = match self.epoll.wait(&mut events, EpollTimeout::from(wait)) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => 0,
                Err(e) => {
                    self.site.error_log.log(LogLevel::Crit, None, &format!("epoll_wait failed: {e}"));
                    break;
                }
            };
            self.proxy_idle.new_batch(&events[..n]);
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
                            crate::log_rotation::reopen_logs(&self.site);
                        }
                    }
                    t if t >= TOKEN_LISTENER => self.accept((t - TOKEN_LISTENER) as usize),
                    t if t >= TOKEN_UPSTREAM => self.upstream_ready((t - TOKEN_UPSTREAM) as usize, flags),
                    t if t >= TOKEN_H2_UPSTREAM => self.h2_relay_ready((t - TOKEN_H2_UPSTREAM) as usize, flags),
                    t if t >= TOKEN_TUNNEL => self.tunnel_ready((t - TOKEN_TUNNEL) as usize, flags, true),
                    t if t >= TOKEN_HTTP_UPSTREAM => self.http_upstream_ready((t - TOKEN_HTTP_UPSTREAM) as usize, flags),
                    t if t >= TOKEN_H2_TUNNEL => self.h2_tunnel_ready((t - TOKEN_H2_TUNNEL) as usize, flags),
                    t if t >= TOKEN_H2_HTTP_UPSTREAM => self.h2_proxy_ready((t - TOKEN_H2_HTTP_UPSTREAM) as usize, flags),
                    t => self.ready(t as usize, flags),
                }
            }
            self.drive_h2_ready();
            loop_slot.set(State::Ready);
            let now = Instant::now();
            if now.duration_since(last_tick) >= TICK {
                last_tick = now;
                self.expire(now);
                self.expire_h2_relays(now);
                self.expire_h2_proxies(now);
                self.expire_h2_tunnels(now);
                self.drive_h2_ready();
                self.retry_parked(now);
                self.logs.flush();
                self.update_listening();
            }
        }
        self.logs.flush();
    }

    pub(super) fn begin_stop(&mut self) {
        self.stopping = true;
        // The next child in line takes over at its next tick.
        self.sb.process(self.slot).quiescing.fetch_max(1, Ordering::Relaxed);
        self.update_listening();
        // A kept-alive connection may have a request on its way: each one
        // gets its next request answered (with Connection: close), and is
        // closed only once it has been idle for a while.
        // An HTTP/2 connection is told with GOAWAY; its open streams finish.
        for slot in 0..self.conns.len() {
            if self.conns[slot].as_ref().is_some_and(|c| c.h2.is_some()) {
                self.h2_go_away(slot);
            }
        }
        for c in self.conns.iter_mut().flatten() {
            if c.h1.is_idle() && c.h2.is_none() && c.tunnel.is_none() {
                c.deadline = c.h1.deadline(true);
            }
        }
    }
}
