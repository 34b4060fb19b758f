//! A child's connections to HTTP backends: the idle ones kept for reuse,
//! each worker's own (at most its `max=`, else as many as were in use at
//! once, none older than its `ttl=`), new ones opened
//! within `connectiontimeout=` (with the TLS handshake for an `https://`
//! backend, [`HttpStream`](super::stream::HttpStream)), and the backends that refused a connection
//! lately, answered 503 without being tried until their `retry=` time has
//! passed (Apache's worker "in error state").

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use warren_config::proxy_http::{HttpOrigin, ProxyTls};
use warren_config::FcgiAddr;

use super::stream::HttpStream;
use crate::gateway::stream::BackendStream;

#[derive(Default)]
pub struct HttpBackends {
    idle: Mutex<Vec<Idle>>,
    /// Backends that could not be reached, and until when they are not tried.
    down: Mutex<Vec<(FcgiAddr, Instant)>>,
    /// The TLS client configurations made so far, one for each host's
    /// SSLProxy* settings: made once per child, and sharing rustls'
    /// session cache, so that new connections resume sessions.
    tls_configs: Mutex<Vec<(ProxyTls, Arc<ClientConfig>)>>,
    /// The WebSocket tunnels this child's threads hold.
    pub tunnels: Arc<super::tunnel::TunnelSlots>,
    /// The uploads waiting for a backend's 100 Continue that an event
    /// child's threads hold ([`crate::Site::forwards_continue`]).
    pub continue_waits: Arc<super::tunnel::TunnelSlots>,
}

/// What a kept connection may serve: the same worker (whose max= and
/// ttl= it counts under), the same address, and for TLS the same name
/// checked under the same settings.
#[derive(Clone, PartialEq, Eq)]
struct Key {
    worker: u64,
    addr: FcgiAddr,
    tls: Option<(String, ProxyTls)>,
}

struct Idle {
    key: Key,
    since: Instant,
    stream: HttpStream,
}

/// A connection to a backend, and whether it was kept from an earlier
/// request (then the backend may have closed it meanwhile).
pub struct Connection {
    pub stream: HttpStream,
    pub reused: bool,
}

/// Why no connection could be had.
pub enum ConnectError {
    /// The backend could not be reached (it is then marked down).
    Connect(io::Error),
    /// It was reached, but TLS failed: the certificate refused, the
    /// handshake broken, or the client configuration unmakeable.
    Tls(String),
}

fn key(addr: &FcgiAddr, origin: &HttpOrigin, tls: &ProxyTls) -> Key {
    Key { worker: origin.worker, addr: addr.clone(), tls: origin.tls_name.clone().map(|n| (n, tls.clone())) }
}

impl HttpBackends {
    /// A kept connection to `addr` that is still open and younger than
    /// the ttl, else a new one.
    pub fn get(&self, addr: &FcgiAddr, origin: &HttpOrigin, tls: &ProxyTls, timeout: Duration, reuse: bool) -> Result<Connection, ConnectError> {
        if reuse {
            if let Some(stream) = self.take_idle(&key(addr, origin, tls), origin.ttl) {
                stream.set_timeouts(timeout).map_err(ConnectError::Connect)?;
                return Ok(Connection { stream, reused: true });
            }
        }
        self.connect(addr, origin, tls, timeout).map(|stream| Connection { stream, reused: false })
    }

    /// A new connection, bypassing the idle ones; for an `https://`
    /// backend, with its handshake done (so that a refused certificate is
    /// known here).
    pub fn connect(&self, addr: &FcgiAddr, origin: &HttpOrigin, tls: &ProxyTls, timeout: Duration) -> Result<HttpStream, ConnectError> {
        let stream = BackendStream::connect(addr, origin.connect_timeout.unwrap_or(timeout)).map_err(ConnectError::Connect)?;
        stream.set_timeouts(timeout).map_err(ConnectError::Connect)?;
        if origin.tcp_keepalive {
            if let BackendStream::Tcp(s) = &stream {
                nix::sys::socket::setsockopt(s, nix::sys::socket::sockopt::KeepAlive, &true).map_err(|e| ConnectError::Connect(e.into()))?;
            }
        }
        let Some(name) = &origin.tls_name else { return Ok(HttpStream::Plain(stream)) };
        let config = self.tls_config(tls).map_err(ConnectError::Tls)?;
        let server_name = ServerName::try_from(name.clone()).map_err(|e| ConnectError::Tls(format!("{name} is no TLS server name: {e}")))?;
        let conn = ClientConnection::new(config, server_name).map_err(|e| ConnectError::Tls(e.to_string()))?;
        let mut tls_stream = StreamOwned::new(conn, stream);
        while tls_stream.conn.is_handshaking() {
            tls_stream.conn.complete_io(&mut tls_stream.sock).map_err(|e| ConnectError::Tls(format!("TLS handshake with {name}: {e}")))?;
        }
        Ok(HttpStream::Tls(Box::new(tls_stream)))
    }

    fn tls_config(&self, tls: &ProxyTls) -> Result<Arc<ClientConfig>, String> {
        let mut configs = self.tls_configs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = configs.iter().find(|(t, _)| t == tls) {
            return Ok(c.clone());
        }
        let c = warren_tls::proxy_client::client_config(tls)?;
        configs.push((tls.clone(), c.clone()));
        Ok(c)
    }

    fn take_idle(&self, key: &Key, ttl: Option<Duration>) -> Option<HttpStream> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // Expired ones of this worker go (another's ttl is its own).
        idle.retain(|c| ttl.is_none_or(|t| c.key.worker != key.worker || c.since.elapsed() < t));
        while let Some(i) = idle.iter().rposition(|c| c.key == *key) {
            let c = idle.swap_remove(i);
            if c.stream.idle_and_open() {
                return Some(c.stream);
            }
        }
        None
    }

    /// Keeps a connection whose exchange ended cleanly, if there is room.
    pub fn put(&self, addr: &FcgiAddr, origin: &HttpOrigin, tls: &ProxyTls, stream: HttpStream) {
        let key = key(addr, origin, tls);
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // Unset, no cap is needed: a connection is opened only when none is
        // idle, so a child never has more than its threads used at once.
        if idle.iter().filter(|c| c.key == key).count() < origin.max_idle.unwrap_or(usize::MAX) {
            idle.push(Idle { key, since: Instant::now(), stream });
        }
    }

    /// Whether `addr` failed within its retry time: how long it has left.
    pub fn in_error(&self, addr: &FcgiAddr) -> Option<Duration> {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        // The usual case, asked for every request: no clock read.
        if down.is_empty() {
            return None;
        }
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
