//! A WebSocket tunnel (mod_proxy_wstunnel, `upgrade=websocket`): once the
//! backend has answered an upgrade request with 101 and the MPM has sent
//! that head on, the bytes go both ways unread until either side closes or
//! nothing has moved either way for the idle timeout
//! (ProxyWebsocketIdleTimeout, else the exchange's ProxyTimeout).
//!
//! This first version holds the thread that ran the request for as long as
//! the tunnel lasts, on every MPM; [`TunnelSlots`] bounds how many of a
//! child's threads tunnels may hold, so that other requests still find one.
//! Both sockets are made non-blocking and waited on together with poll(2):
//! each side's bytes are read while the other has taken what came before
//! (at most [`HIGH_WATER`] wait), so a slow reader slows its writer.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::connections::HttpStream;
use crate::logs::ErrorLog;
use warren_config::LogLevel;

/// Bytes read from one side that may wait for the other to take them.
const HIGH_WATER: usize = 256 * 1024;
const READ_CHUNK: usize = 16 * 1024;

/// One end of a tunnel as the tunnel needs it: a socket that may be TLS,
/// whose own buffer (rustls') must be pushed out as well.
pub trait TunnelPeer: AsFd {
    /// Reads what has come; WouldBlock when nothing has.
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Takes bytes to send; WouldBlock when it can take none now.
    fn send_some(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// Pushes out what it holds of bytes taken; true when nothing is left.
    fn push(&mut self) -> io::Result<bool>;
}

impl TunnelPeer for HttpStream {
    fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read(buf)
    }

    fn send_some(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write(buf)
    }

    fn push(&mut self) -> io::Result<bool> {
        match self.flush() {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// How many tunnels a child's threads hold, and how many they may.
#[derive(Default)]
pub struct TunnelSlots {
    open: AtomicUsize,
}

/// A tunnel's place among its child's; given back when dropped.
pub struct TunnelSlot(Arc<TunnelSlots>);

impl Drop for TunnelSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl TunnelSlots {
    /// A place for one more tunnel, None when `bound` are open.
    pub fn take(self: &Arc<Self>, bound: usize) -> Option<TunnelSlot> {
        self.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < bound).then_some(n + 1)).ok().map(|_| TunnelSlot(self.clone()))
    }
}

/// A backend that has switched protocols, waiting for the MPM to hand it
/// the client's connection.
pub struct Tunnel {
    pub(super) backend: HttpStream,
    /// What the backend sent after its 101 head, for the client.
    pub(super) early: Vec<u8>,
    pub(super) idle: Duration,
    pub(super) name: String,
    pub(super) log: Arc<ErrorLog>,
    pub(super) client_addr: SocketAddr,
    pub(super) _slot: TunnelSlot,
}

impl std::fmt::Debug for Tunnel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tunnel to {}", self.name)
    }
}

/// Bytes on their way from one side to the other.
#[derive(Default)]
struct Pipe {
    pending: Vec<u8>,
    at: usize,
    /// The writer's side holds bytes it could not push out yet.
    held: bool,
    /// The reader's side has closed.
    ended: bool,
}

impl Pipe {
    fn waiting(&self) -> bool {
        self.at < self.pending.len() || self.held
    }

    fn has_room(&self) -> bool {
        !self.ended && self.pending.len() - self.at < HIGH_WATER
    }

    /// Reads from `from` until it has nothing more now, or the pipe is full.
    fn fill(&mut self, from: &mut dyn TunnelPeer, chunk: &mut [u8]) -> io::Result<()> {
        while self.has_room() {
            match from.read_some(chunk) {
                Ok(0) => self.ended = true,
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes to `to` what it takes now.
    fn drain(&mut self, to: &mut dyn TunnelPeer) -> io::Result<()> {
        while self.at < self.pending.len() {
            match to.send_some(&self.pending[self.at..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if self.at == self.pending.len() {
            self.pending.clear();
            self.at = 0;
        }
        self.held = !to.push()?;
        Ok(())
    }
}

/// Why a tunnel ended.
enum End {
    Closed(&'static str),
    Idle,
    Failed(&'static str, io::Error),
}

impl Tunnel {
    /// Copies bytes both ways between the client and the backend until one
    /// closes, one fails, or the tunnel is idle for its timeout; `from_client`
    /// is what the client sent after its request head. The client's socket
    /// is left non-blocking: the connection is to be closed afterwards.
    pub fn run(mut self, client: &mut dyn TunnelPeer, from_client: Vec<u8>) {
        let mut up = Pipe { pending: from_client, ..Pipe::default() };
        let mut down = Pipe { pending: std::mem::take(&mut self.early), ..Pipe::default() };
        let end = match nonblocking(client.as_fd()).and_then(|_| self.backend.set_nonblocking(true)) {
            Ok(()) => self.relay(client, &mut up, &mut down),
            Err(e) => End::Failed("setting up", e),
        };
        let message = match end {
            End::Closed(who) => format!("proxy: WebSocket tunnel to {} closed by the {who}", self.name),
            End::Idle => format!("proxy: WebSocket tunnel to {} idle for {} s: closed (ProxyWebsocketIdleTimeout)", self.name, self.idle.as_secs()),
            End::Failed(what, e) => format!("proxy: WebSocket tunnel to {}: {what}: {e}", self.name),
        };
        self.log.log(LogLevel::Debug, Some(self.client_addr), &message);
    }

    fn relay(&mut self, client: &mut dyn TunnelPeer, up: &mut Pipe, down: &mut Pipe) -> End {
        let mut chunk = vec![0u8; READ_CHUNK];
        let timeout = PollTimeout::try_from(self.idle.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
        let backend = &mut self.backend;
        loop {
            // Reads are tried before waiting: rustls may hold bytes that
            // poll cannot see.
            if let Err(e) = up.fill(client, &mut chunk) {
                return End::Failed("reading from the client", e);
            }
            if let Err(e) = down.fill(backend, &mut chunk) {
                return End::Failed("reading from the backend", e);
            }
            if let Err(e) = up.drain(backend) {
                return End::Failed("writing to the backend", e);
            }
            if let Err(e) = down.drain(client) {
                return End::Failed("writing to the client", e);
            }
            // A side that closed ends the tunnel once its last bytes are out.
            if up.ended && !up.waiting() {
                return End::Closed("client");
            }
            if down.ended && !down.waiting() {
                return End::Closed("backend");
            }
            let wants = |reads: &Pipe, writes: &Pipe| {
                let mut f = PollFlags::empty();
                if reads.has_room() {
                    f |= PollFlags::POLLIN;
                }
                if writes.waiting() {
                    f |= PollFlags::POLLOUT;
                }
                f
            };
            let client_wants = wants(up, down);
            let backend_wants = wants(down, up);
            let mut fds = [PollFd::new(client.as_fd(), client_wants), PollFd::new(backend.as_fd(), backend_wants)];
            match poll(&mut fds, timeout) {
                Ok(0) => return End::Idle,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return End::Failed("waiting", e.into()),
            }
            // A side gone while its bytes wait for the other could not be
            // read from: poll would report it again at once, for ever.
            let gone = |fd: &PollFd| fd.revents().is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL));
            if gone(&fds[0]) && !client_wants.contains(PollFlags::POLLIN) {
                return End::Closed("client");
            }
            if gone(&fds[1]) && !backend_wants.contains(PollFlags::POLLIN) {
                return End::Closed("backend");
            }
        }
    }
}

fn nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = Arc::new(TunnelSlots::default());
        let a = slots.take(2).unwrap();
        let b = slots.take(2).unwrap();
        assert!(slots.take(2).is_none());
        drop(a);
        assert!(slots.take(2).is_some());
        drop(b);
        assert_eq!(slots.open.load(Ordering::Acquire), 0);
    }
}
