//! A child's connections to HTTP backends: the idle ones kept for reuse
//! (at most `max=` per backend, none older than `ttl=`), new ones opened
//! within `connectiontimeout=`, and the backends that refused a connection
//! lately, answered 503 without being tried until their `retry=` time has
//! passed (Apache's worker "in error state").

use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use warren_config::proxy_http::HttpOrigin;
use warren_config::FcgiAddr;

use crate::fastcgi::BackendStream;

#[derive(Default)]
pub struct HttpBackends {
    idle: Mutex<Vec<Idle>>,
    /// Backends that could not be reached, and until when they are not tried.
    down: Mutex<Vec<(FcgiAddr, Instant)>>,
}

struct Idle {
    addr: FcgiAddr,
    since: Instant,
    stream: BackendStream,
}

/// A connection to a backend, and whether it was kept from an earlier
/// request (then the backend may have closed it meanwhile).
pub struct Connection {
    pub stream: BackendStream,
    pub reused: bool,
}

impl HttpBackends {
    /// A kept connection to `addr` that is still open and younger than
    /// the ttl, else a new one.
    pub fn get(&self, addr: &FcgiAddr, origin: &HttpOrigin, timeout: Duration, reuse: bool) -> io::Result<Connection> {
        if reuse {
            if let Some(stream) = self.take_idle(addr, origin.ttl) {
                stream.set_timeouts(timeout)?;
                return Ok(Connection { stream, reused: true });
            }
        }
        self.connect(addr, origin, timeout).map(|stream| Connection { stream, reused: false })
    }

    /// A new connection, bypassing the idle ones.
    pub fn connect(&self, addr: &FcgiAddr, origin: &HttpOrigin, timeout: Duration) -> io::Result<BackendStream> {
        let stream = BackendStream::connect(addr, origin.connect_timeout.unwrap_or(timeout))?;
        stream.set_timeouts(timeout)?;
        if origin.tcp_keepalive {
            if let BackendStream::Tcp(s) = &stream {
                nix::sys::socket::setsockopt(s, nix::sys::socket::sockopt::KeepAlive, &true)?;
            }
        }
        Ok(stream)
    }

    fn take_idle(&self, addr: &FcgiAddr, ttl: Option<Duration>) -> Option<BackendStream> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // Expired ones go whatever backend they are to.
        idle.retain(|c| ttl.is_none_or(|t| c.addr != *addr || c.since.elapsed() < t));
        while let Some(i) = idle.iter().rposition(|c| c.addr == *addr) {
            let c = idle.swap_remove(i);
            if c.stream.idle_and_open() {
                return Some(c.stream);
            }
        }
        None
    }

    /// Keeps a connection whose exchange ended cleanly, if there is room.
    pub fn put(&self, addr: &FcgiAddr, max: usize, stream: BackendStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.iter().filter(|c| c.addr == *addr).count() < max {
            idle.push(Idle { addr: addr.clone(), since: Instant::now(), stream });
        }
    }

    /// Whether `addr` failed within its retry time: how long it has left.
    pub fn in_error(&self, addr: &FcgiAddr) -> Option<Duration> {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        down.retain(|(_, until)| *until > now);
        down.iter().find(|(a, _)| a == addr).map(|(_, until)| *until - now)
    }

    /// `addr` could not be reached: not tried again for `retry`.
    pub fn mark_down(&self, addr: &FcgiAddr, retry: Duration) {
        if retry.is_zero() {
            return;
        }
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.retain(|(a, _)| a != addr);
        down.push((addr.clone(), Instant::now() + retry));
    }
}
