//! A WebSocket tunnel (mod_proxy_wstunnel, `upgrade=websocket`): once the
//! backend has answered an upgrade request with 101 and the MPM has sent
//! that head on, the bytes go both ways unread until either side closes or
//! nothing has moved either way for the idle timeout
//! (ProxyWebsocketIdleTimeout, else the exchange's ProxyTimeout).
//!
//! Under prefork and worker, the thread that ran the request holds the
//! tunnel for as long as it lasts ([`Tunnel::run`], as Apache's do);
//! [`TunnelSlots`] bounds how many of a child's threads tunnels may hold,
//! so that other requests still find one. Under event, the loop carries
//! the tunnel ([`Open::pump`] on each readiness), holding no thread. A
//! tunnel on an HTTP/2 stream (RFC 8441) is carried, under every MPM, by
//! what serves its connection: it takes no thread place of its own, but a
//! connection's tunnels hold its thread's ([`TunnelSlots::take_on_stream`]).
//! Both sockets are non-blocking: each side's bytes are read while the
//! other has taken what came before (at most [`HIGH_WATER`] wait), so a
//! slow reader slows its writer. A side's end (FIN, close_notify) is passed
//! on as a half-close; the tunnel is over once both ends have passed.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::stream::HttpStream;
use super::tunnel_clients::{ClientPlace, ClientTunnels};
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
    /// Ends the sending side (TLS: close_notify first); reads go on.
    fn close_write(&mut self);
    /// After a read shorter than asked: true if that read took all there
    /// was (the socket is drained and nothing was read ahead into a TLS
    /// buffer), so that an edge-triggered caller need not read again
    /// before its next event. False: read on until WouldBlock.
    fn drained_by_short_read(&self) -> bool {
        false
    }
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

    fn close_write(&mut self) {
        if let HttpStream::Tls(t) = self {
            t.conn.send_close_notify();
            let _ = t.flush();
        }
        let _ = nix::sys::socket::shutdown(self.as_fd().as_raw_fd(), nix::sys::socket::Shutdown::Write);
    }

    fn drained_by_short_read(&self) -> bool {
        // rustls reads the socket a record at a time: only plain sockets say.
        matches!(self, HttpStream::Plain(_))
    }
}

/// How many tunnels a child holds, and how many it may.
#[derive(Default)]
pub struct TunnelSlots {
    open: AtomicUsize,
    /// The HTTP/2 connections (peer, local) whose thread carries tunnels
    /// (prefork, worker), with how many: the first holds one place in
    /// `open` for them all, so that HTTP/2 connections cannot take every
    /// thread the bound leaves to other requests.
    by_connection: Mutex<HashMap<ConnectionKey, usize>>,
}

/// An HTTP/2 connection's two ends: (peer, local).
pub type ConnectionKey = (SocketAddr, SocketAddr);

/// A tunnel's place among its child's, and among its client's over the
/// server (when counted); given back when dropped.
pub struct TunnelSlot {
    child: Arc<TunnelSlots>,
    holds: Holds,
    _client: Option<ClientPlace>,
}

/// What place in `open` a tunnel holds.
enum Holds {
    /// A thread of its own (HTTP/1.1 under prefork and worker).
    Thread,
    /// None: the loop carries it (an HTTP/2 stream under event).
    Nothing,
    /// Its HTTP/2 connection's thread, shared with that connection's
    /// other tunnels.
    ConnectionThread(ConnectionKey),
}

impl Drop for TunnelSlot {
    fn drop(&mut self) {
        match self.holds {
            Holds::Thread => {
                self.child.open.fetch_sub(1, Ordering::AcqRel);
            }
            Holds::Nothing => {}
            Holds::ConnectionThread(key) => {
                let mut by_connection = self.child.by_connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(n) = by_connection.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        by_connection.remove(&key);
                        self.child.open.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            }
        }
    }
}

/// The address a client's tunnels are counted under: an IPv6 client
/// holds a whole /64 (SLAAC, privacy addresses), so its /64; an IPv4
/// address written as IPv6 (`::ffff:a.b.c.d`, a dual-stack socket) as IPv4.
fn counted_as(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
        v4 => v4,
    }
}

/// Why no tunnel may open.
#[derive(Debug, PartialEq, Eq)]
pub enum NoSlot {
    /// The child's bound (its threads, under prefork and worker).
    Child,
    /// This client address holds its bound already.
    Client,
}

impl TunnelSlots {
    /// A place for one more tunnel: refused when `bound` are open in the
    /// child, or, given the server's table, a client and its bound (0: no
    /// bound), when that many of the client's are open in the server.
    pub fn take(self: &Arc<Self>, bound: usize, per_client: Option<(&Arc<ClientTunnels>, IpAddr, usize)>) -> Result<TunnelSlot, NoSlot> {
        self.take_within(Some(bound), per_client)
    }

    /// A place for a tunnel that holds no thread of its own: an HTTP/2
    /// stream's (RFC 8441), carried by the thread or loop that serves its
    /// connection, whose streams H2MaxSessionStreams bounds. Counted
    /// against the client's bound; with `thread` (prefork, worker: the
    /// connection's key and the child's bound), the first tunnel of a
    /// connection also takes a thread place, which its last gives back:
    /// the thread is then held as long as a tunnel lasts, not a keep-alive.
    pub fn take_on_stream(self: &Arc<Self>, per_client: Option<(&Arc<ClientTunnels>, IpAddr, usize)>, thread: Option<(ConnectionKey, usize)>) -> Result<TunnelSlot, NoSlot> {
        let Some((key, bound)) = thread else { return self.take_within(None, per_client) };
        let mut by_connection = self.by_connection.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = by_connection.get(&key).copied().unwrap_or(0);
        let mut slot = self.take_within((held == 0).then_some(bound), per_client)?;
        *by_connection.entry(key).or_insert(0) += 1;
        slot.holds = Holds::ConnectionThread(key);
        Ok(slot)
    }

    fn take_within(self: &Arc<Self>, bound: Option<usize>, per_client: Option<(&Arc<ClientTunnels>, IpAddr, usize)>) -> Result<TunnelSlot, NoSlot> {
        let client = match per_client {
            Some((table, client, limit)) if limit != 0 => Some(table.take(counted_as(client), limit).map_err(|_| NoSlot::Client)?),
            _ => None,
        };
        if let Some(bound) = bound {
            self.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < bound).then_some(n + 1)).map_err(|_| NoSlot::Child)?;
        }
        Ok(TunnelSlot { child: self.clone(), holds: if bound.is_some() { Holds::Thread } else { Holds::Nothing }, _client: client })
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
    /// Empty with no capacity when nothing waits: an idle tunnel holds no buffer.
    pending: Vec<u8>,
    at: usize,
    /// The writer's side holds bytes it could not push out yet.
    held: bool,
    /// The reader's side has closed.
    ended: bool,
    /// The end was passed on: the writer's side was shut for writing.
    shut: bool,
    /// The reader's side was found drained: it is not read again until
    /// its next readiness ([`Open::readable`]), so that a message costs
    /// one read, not one more that finds nothing.
    drained: bool,
    /// The reader's last readiness said data only, no end (no EPOLLRDHUP):
    /// a short read then drains it. Else (an end may be waiting behind
    /// the bytes, and no event will come for it; or nothing is known yet)
    /// reads go on until the end or WouldBlock.
    short_read_drains: bool,
}

impl Pipe {
    fn waiting(&self) -> bool {
        self.at < self.pending.len() || self.held
    }

    fn has_room(&self) -> bool {
        !self.ended && self.pending.len() - self.at < HIGH_WATER
    }

    /// Reads from `from` until it has nothing more now, the pipe is full,
    /// or `budget` bytes were read (taken off it); true if anything came
    /// (or the end). A side left with room but drained is not read.
    fn fill(&mut self, from: &mut dyn TunnelPeer, chunk: &mut [u8], budget: &mut usize) -> io::Result<bool> {
        let mut moved = false;
        while !self.drained && self.has_room() && *budget > 0 {
            match from.read_some(chunk) {
                Ok(0) => {
                    self.ended = true;
                    moved = true;
                }
                Ok(n) => {
                    self.pending.extend_from_slice(&chunk[..n]);
                    *budget = budget.saturating_sub(n);
                    moved = true;
                    self.drained = n < chunk.len() && self.short_read_drains && from.drained_by_short_read();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(moved)
    }

    /// Writes to `to` what it takes now; true if it took anything.
    fn drain(&mut self, to: &mut dyn TunnelPeer) -> io::Result<bool> {
        let before = self.at;
        while self.at < self.pending.len() {
            match to.send_some(&self.pending[self.at..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        let moved = self.at > before;
        if self.at == self.pending.len() {
            self.pending = Vec::new();
            self.at = 0;
        }
        self.held = !to.push()?;
        // Half-close: the reader's end goes on once its last bytes are out,
        // and the other way stays open until its side ends too.
        if self.ended && !self.waiting() && !self.shut {
            self.shut = true;
            to.close_write();
        }
        Ok(moved)
    }
}

/// What one bounded pump came to.
pub struct Pass {
    /// Some byte moved either way.
    pub moved: bool,
    /// The budget ran out with more perhaps waiting: pump again later.
    pub cut: bool,
}

/// Why a tunnel ended.
pub enum End {
    /// Both sides closed; the one that closed first.
    Closed(&'static str),
    Idle,
    Failed(&'static str, io::Error),
    /// The server stopped before the tunnel ended.
    Stopped,
}

/// A tunnel under way: the backend, and the bytes between it and the
/// client. Driven by [`Open::pump`] whenever either socket may have moved:
/// by a thread waiting on both with poll(2) ([`Tunnel::run`]), or by the
/// event MPM's loop, where an idle tunnel costs no thread.
pub struct Open {
    tunnel: Tunnel,
    up: Pipe,
    down: Pipe,
    /// The side that closed first.
    first_closed: Option<&'static str>,
}

impl Tunnel {
    /// The tunnel with its first bytes each way: `from_client` is what the
    /// client sent after its request head. [`Open::start`] comes next.
    pub fn open(mut self, from_client: Vec<u8>) -> Open {
        let down = Pipe { pending: std::mem::take(&mut self.early), ..Pipe::default() };
        Open { tunnel: self, up: Pipe { pending: from_client, ..Pipe::default() }, down, first_closed: None }
    }

    /// Copies bytes both ways between the client and the backend on this
    /// thread until both close, one fails, or the tunnel is idle for its
    /// timeout. The client's socket is left non-blocking: the connection
    /// is to be closed afterwards.
    pub fn run(self, client: &mut dyn TunnelPeer, from_client: Vec<u8>) {
        let mut open = self.open(from_client);
        let end = match open.start(client.as_fd()) {
            Ok(()) => open.relay_here(client),
            Err(e) => End::Failed("setting up", e),
        };
        open.finish(end);
    }
}

impl Open {
    /// Makes both sockets non-blocking, as [`Open::pump`] needs them.
    pub fn start(&self, client: BorrowedFd<'_>) -> io::Result<()> {
        nonblocking(client)?;
        self.tunnel.backend.set_nonblocking(true)
    }

    /// The backend's socket, for the caller to wait on.
    pub fn backend_fd(&self) -> BorrowedFd<'_> {
        self.tunnel.backend.as_fd()
    }

    /// How long the tunnel may stay with no byte moving either way.
    pub fn idle(&self) -> Duration {
        self.tunnel.idle
    }

    /// Moves what can move now, both ways, with `chunk` as the read buffer,
    /// trying both sides' reads (for a caller woken level-triggered).
    /// Ok(true) if any byte moved; Err when the tunnel is over.
    pub fn pump(&mut self, client: &mut dyn TunnelPeer, chunk: &mut [u8]) -> Result<bool, End> {
        self.readable(false, true);
        self.readable(true, true);
        self.pump_within(client, chunk, usize::MAX).map(|pass| pass.moved)
    }

    /// An edge-triggered caller's event: the backend's side (else the
    /// client's) has become readable; `end`: the event also said the peer
    /// closed or failed (EPOLLRDHUP, HUP, ERR), so that side is read until
    /// a read tells the end. A side found drained by a read is read again
    /// only once told so.
    pub fn readable(&mut self, backend: bool, end: bool) {
        let pipe = if backend { &mut self.down } else { &mut self.up };
        pipe.drained = false;
        pipe.short_read_drains = !end;
    }

    /// [`Open::pump`], reading at most about `budget` bytes (a chunk more
    /// at most), and only from sides not found drained since they were
    /// last [`Open::readable`]: an edge-triggered event loop's pass, after
    /// which the loop serves its other connections before it comes back
    /// ([`Pass::cut`]).
    pub fn pump_within(&mut self, client: &mut dyn TunnelPeer, chunk: &mut [u8], mut budget: usize) -> Result<Pass, End> {
        let backend = &mut self.tunnel.backend;
        let mut moved = false;
        loop {
            if budget == 0 {
                return Ok(Pass { moved, cut: true });
            }
            // Reads are tried before waiting: rustls may hold bytes that
            // poll cannot see; and a full pipe that drained has room again
            // (its reader not found drained: it stopped for want of room).
            let mut now = self.up.fill(client, chunk, &mut budget).map_err(|e| End::Failed("reading from the client", e))?;
            now |= self.down.fill(backend, chunk, &mut budget).map_err(|e| End::Failed("reading from the backend", e))?;
            now |= self.up.drain(backend).map_err(|e| End::Failed("writing to the backend", e))?;
            now |= self.down.drain(client).map_err(|e| End::Failed("writing to the client", e))?;
            if self.up.shut && self.first_closed.is_none() {
                self.first_closed = Some("client");
            }
            if self.down.shut && self.first_closed.is_none() {
                self.first_closed = Some("backend");
            }
            if self.up.shut && self.down.shut {
                return Err(End::Closed(self.first_closed.unwrap_or("client")));
            }
            if !now {
                return Ok(Pass { moved, cut: false });
            }
            moved = true;
        }
    }

    /// What the client's socket is to be waited for, and the backend's.
    fn wants(&self) -> (PollFlags, PollFlags) {
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
        (wants(&self.up, &self.down), wants(&self.down, &self.up))
    }

    /// One side gone (hung up or failed) while it is not read from: it
    /// could not tell its end by a read, so the tunnel is over.
    pub fn gone(&self, client_gone: bool, backend_gone: bool) -> Option<End> {
        let (client_wants, backend_wants) = self.wants();
        if client_gone && !client_wants.contains(PollFlags::POLLIN) {
            return Some(End::Closed("client"));
        }
        if backend_gone && !backend_wants.contains(PollFlags::POLLIN) {
            return Some(End::Closed("backend"));
        }
        None
    }

    fn relay_here(&mut self, client: &mut dyn TunnelPeer) -> End {
        let mut chunk = vec![0u8; READ_CHUNK];
        let timeout = PollTimeout::try_from(self.tunnel.idle.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
        loop {
            if let Err(end) = self.pump(client, &mut chunk) {
                return end;
            }
            let (client_wants, backend_wants) = self.wants();
            let mut fds = [PollFd::new(client.as_fd(), client_wants), PollFd::new(self.tunnel.backend.as_fd(), backend_wants)];
            match poll(&mut fds, timeout) {
                Ok(0) => return End::Idle,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return End::Failed("waiting", e.into()),
            }
            // A side gone while its bytes wait for the other could not be
            // read from: poll would report it again at once, for ever.
            let gone = |fd: &PollFd| fd.revents().is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL));
            let (client_gone, backend_gone) = (gone(&fds[0]), gone(&fds[1]));
            if let Some(end) = self.gone(client_gone, backend_gone) {
                return end;
            }
        }
    }

    /// Logs how the tunnel ended; the backend's connection closes here.
    pub fn finish(self, end: End) {
        self.tunnel.finish(end);
    }
}

impl Tunnel {
    /// For a tunnel an HTTP/2 stream carries (RFC 8441), whose client side
    /// is the stream's DATA rather than a socket: makes the backend
    /// non-blocking, and gives what it sent after its 101, for the client.
    pub fn for_stream(&mut self) -> io::Result<Vec<u8>> {
        self.backend.set_nonblocking(true)?;
        Ok(std::mem::take(&mut self.early))
    }

    /// The backend, to read from and write to (after [`Tunnel::for_stream`]).
    pub fn backend(&mut self) -> &mut dyn TunnelPeer {
        &mut self.backend
    }

    /// The backend's socket, for the caller to wait on.
    pub fn backend_fd(&self) -> BorrowedFd<'_> {
        self.backend.as_fd()
    }

    /// How long the tunnel may stay with no byte moving either way.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Logs how the tunnel ended; the backend's connection closes here.
    pub fn finish(self, end: End) {
        let t = &self;
        let message = match end {
            End::Closed(who) => format!("proxy: WebSocket tunnel to {} closed by the {who}", t.name),
            End::Idle => format!("proxy: WebSocket tunnel to {} idle for {} s: closed (ProxyWebsocketIdleTimeout)", t.name, t.idle.as_secs()),
            End::Failed(what, e) => format!("proxy: WebSocket tunnel to {}: {what}: {e}", t.name),
            End::Stopped => format!("proxy: WebSocket tunnel to {} closed: the server is stopping", t.name),
        };
        t.log.log(LogLevel::Debug, Some(t.client_addr), &message);
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
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = Arc::new(TunnelSlots::default());
        let a = slots.take(2, None).unwrap();
        let b = slots.take(2, None).unwrap();
        assert_eq!(slots.take(2, None).err(), Some(NoSlot::Child));
        drop(a);
        assert!(slots.take(2, None).is_ok());
        drop(b);
        assert_eq!(slots.open.load(Ordering::Acquire), 0);
    }

    /// A client that always has more to send (/dev/zero) and takes all
    /// that comes (/dev/null): a flood no read ever ends with WouldBlock.
    struct Endless(std::fs::File, std::fs::File, usize);

    impl AsFd for Endless {
        fn as_fd(&self) -> BorrowedFd<'_> {
            self.0.as_fd()
        }
    }

    impl TunnelPeer for Endless {
        fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(buf)?;
            self.2 += n;
            Ok(n)
        }
        fn send_some(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.1.write(buf)
        }
        fn push(&mut self) -> io::Result<bool> {
            Ok(true)
        }
        fn close_write(&mut self) {}
    }

    /// A tunnel to `backend`, a socket of the test's.
    fn tunnel_to(backend: UnixStream) -> Tunnel {
        let slots = Arc::new(TunnelSlots::default());
        Tunnel {
            backend: HttpStream::Plain(crate::gateway::stream::BackendStream::Unix(backend)),
            early: Vec::new(),
            idle: Duration::from_secs(60),
            name: "test".into(),
            log: Arc::new(ErrorLog::open(None, None, LogLevel::Warn).unwrap()),
            client_addr: "127.0.0.1:1".parse().unwrap(),
            _slot: slots.take(1, None).unwrap(),
        }
    }

    #[test]
    fn a_pass_ends_when_its_budget_is_spent() {
        let (backend, far_end) = UnixStream::pair().unwrap();
        // The backend takes all that comes, as fast as it comes.
        let drained = std::thread::spawn(move || io::copy(&mut &far_end, &mut io::sink()));
        let tunnel = tunnel_to(backend);
        let mut client = Endless(std::fs::File::open("/dev/zero").unwrap(), std::fs::OpenOptions::new().write(true).open("/dev/null").unwrap(), 0);
        let mut open = tunnel.open(Vec::new());
        open.start(client.as_fd()).unwrap();
        let mut chunk = vec![0u8; READ_CHUNK];
        for _ in 0..4 {
            let before = client.2;
            let pass = open.pump_within(&mut client, &mut chunk, 4 * READ_CHUNK).unwrap_or_else(|_| panic!("the tunnel ended"));
            // Back to the caller, with no more read from the endless side
            // than the budget (unless the pipe was full first).
            assert!(pass.moved && pass.cut);
            assert!(client.2 - before <= 4 * READ_CHUNK, "{} bytes read in a pass", client.2 - before);
        }
        open.finish(End::Stopped);
        drained.join().unwrap().unwrap();
    }

    /// A client's socket whose reads are counted.
    struct Counted {
        sock: UnixStream,
        reads: usize,
    }

    impl AsFd for Counted {
        fn as_fd(&self) -> BorrowedFd<'_> {
            self.sock.as_fd()
        }
    }

    impl TunnelPeer for Counted {
        fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            (&self.sock).read(buf)
        }
        fn send_some(&mut self, buf: &[u8]) -> io::Result<usize> {
            (&self.sock).write(buf)
        }
        fn push(&mut self) -> io::Result<bool> {
            Ok(true)
        }
        fn close_write(&mut self) {}
        fn drained_by_short_read(&self) -> bool {
            true
        }
    }

    /// Nothing has come on `sock` (non-blocking for the look).
    fn nothing_on(sock: &UnixStream) -> bool {
        sock.set_nonblocking(true).unwrap();
        let nothing = matches!((&*sock).read(&mut [0u8; 64]), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        sock.set_nonblocking(false).unwrap();
        nothing
    }

    #[test]
    fn an_edge_triggered_pass_reads_only_the_sides_told_readable() {
        let (client_near, mut client_far) = UnixStream::pair().unwrap();
        let (backend_near, mut backend_far) = UnixStream::pair().unwrap();
        let mut client = Counted { sock: client_near, reads: 0 };
        let mut open = tunnel_to(backend_near).open(Vec::new());
        open.start(client.as_fd()).unwrap();
        let mut chunk = vec![0u8; READ_CHUNK];
        let budget = 4 * READ_CHUNK;
        // Nothing is known at first: both sides are read, and found drained.
        assert!(!open.pump_within(&mut client, &mut chunk, budget).unwrap_or_else(|_| panic!("ended")).moved);
        // A message from the client, told: one read takes it (short: the
        // socket is drained), and none follows to find nothing.
        client_far.write_all(b"message").unwrap();
        client.reads = 0;
        open.readable(false, false);
        assert!(open.pump_within(&mut client, &mut chunk, budget).unwrap_or_else(|_| panic!("ended")).moved);
        assert_eq!(client.reads, 1);
        let mut got = [0u8; 7];
        backend_far.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"message");
        // The backend's answer, not told: not read by the pass.
        backend_far.write_all(b"answer").unwrap();
        assert!(!open.pump_within(&mut client, &mut chunk, budget).unwrap_or_else(|_| panic!("ended")).moved);
        assert!(nothing_on(&client_far));
        // Told: it goes through.
        open.readable(true, false);
        assert!(open.pump_within(&mut client, &mut chunk, budget).unwrap_or_else(|_| panic!("ended")).moved);
        let mut got = [0u8; 6];
        client_far.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"answer");
        // A level-triggered caller's pump reads every side, told or not.
        client_far.write_all(b"more").unwrap();
        assert!(open.pump(&mut client, &mut chunk).unwrap_or_else(|_| panic!("ended")));
        let mut got = [0u8; 4];
        backend_far.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"more");
        // Bytes and the end together, told with the end: the short read
        // does not stop the reads, the end is passed on (no event would
        // come for it after this one).
        client_far.write_all(b"bye").unwrap();
        client_far.shutdown(std::net::Shutdown::Write).unwrap();
        open.readable(false, true);
        assert!(open.pump_within(&mut client, &mut chunk, budget).unwrap_or_else(|_| panic!("ended")).moved);
        let mut rest = Vec::new();
        read_to_its_end(&mut backend_far, &mut rest);
        assert_eq!(rest, b"bye");
        open.finish(End::Stopped);
    }

    /// Reads what `far` has until its end, which must already be there.
    fn read_to_its_end(far: &mut UnixStream, into: &mut Vec<u8>) {
        far.set_nonblocking(true).unwrap();
        let read = far.read_to_end(into);
        assert!(read.is_ok(), "the end was not passed on: {read:?} after {into:?}");
    }

    #[test]
    fn the_first_pass_reads_to_the_end() {
        // Before any event, the client sent bytes and closed: nothing will
        // say so again, so the first pass must read to the end.
        let (client_near, mut client_far) = UnixStream::pair().unwrap();
        let (backend_near, mut backend_far) = UnixStream::pair().unwrap();
        client_far.write_all(b"early").unwrap();
        client_far.shutdown(std::net::Shutdown::Write).unwrap();
        let mut client = Counted { sock: client_near, reads: 0 };
        let mut open = tunnel_to(backend_near).open(Vec::new());
        open.start(client.as_fd()).unwrap();
        let mut chunk = vec![0u8; READ_CHUNK];
        assert!(open.pump_within(&mut client, &mut chunk, 4 * READ_CHUNK).unwrap_or_else(|_| panic!("ended")).moved);
        let mut got = Vec::new();
        read_to_its_end(&mut backend_far, &mut got);
        assert_eq!(got, b"early");
        open.finish(End::Stopped);
    }

    #[test]
    fn a_stream_tunnel_holds_no_thread_place() {
        let slots = Arc::new(TunnelSlots::default());
        let table = Arc::new(ClientTunnels::new().unwrap());
        let ip = IpAddr::from([127, 0, 0, 1]);
        let streams: Vec<TunnelSlot> = (0..3).map(|_| slots.take_on_stream(Some((&table, ip, 4)), None).unwrap()).collect();
        // The child's one thread place is still free, and the client's bound counts them all.
        let thread = slots.take(1, Some((&table, ip, 4))).unwrap();
        assert_eq!(slots.take_on_stream(Some((&table, ip, 4)), None).err(), Some(NoSlot::Client));
        drop(streams);
        drop(thread);
        assert_eq!(slots.open.load(Ordering::Acquire), 0);
        assert!(slots.take_on_stream(Some((&table, ip, 4)), None).is_ok());
    }

    #[test]
    fn a_connections_stream_tunnels_hold_its_thread_place_once() {
        // Worker with 3 threads: 2 places for tunnels. HTTP/2 connections
        // carrying tunnels on their thread must not take the third.
        let slots = Arc::new(TunnelSlots::default());
        let local: SocketAddr = "127.0.0.1:443".parse().unwrap();
        let conn = |port: u16| (SocketAddr::from(([127, 0, 0, 1], port)), local);
        let first: Vec<TunnelSlot> = (0..5).map(|_| slots.take_on_stream(None, Some((conn(1000), 2))).unwrap()).collect();
        assert_eq!(slots.open.load(Ordering::Acquire), 1);
        let second = slots.take_on_stream(None, Some((conn(1001), 2))).unwrap();
        assert_eq!(slots.take_on_stream(None, Some((conn(1002), 2))).err(), Some(NoSlot::Child));
        assert_eq!(slots.take(2, None).err(), Some(NoSlot::Child));
        // More on a connection already holding its place still open.
        let more = slots.take_on_stream(None, Some((conn(1001), 2))).unwrap();
        drop(first);
        assert_eq!(slots.open.load(Ordering::Acquire), 1);
        let thread = slots.take(2, None).unwrap();
        drop((second, more, thread));
        assert_eq!(slots.open.load(Ordering::Acquire), 0);
        assert!(slots.by_connection.lock().unwrap().is_empty());
    }

    #[test]
    fn one_client_holds_at_most_its_bound() {
        let slots = Arc::new(TunnelSlots::default());
        let table = Arc::new(ClientTunnels::new().unwrap());
        let (one, other) = (IpAddr::from([192, 0, 2, 1]), IpAddr::from([192, 0, 2, 2]));
        let held: Vec<TunnelSlot> = (0..3).map(|_| slots.take(usize::MAX, Some((&table, one, 3))).unwrap()).collect();
        assert_eq!(slots.take(usize::MAX, Some((&table, one, 3))).err(), Some(NoSlot::Client));
        // Another address is not counted against it.
        let theirs = slots.take(usize::MAX, Some((&table, other, 3))).unwrap();
        drop(held);
        assert!(slots.take(usize::MAX, Some((&table, one, 3))).is_ok());
        drop(theirs);
        assert_eq!(slots.open.load(Ordering::Acquire), 0);
        // A client refused for the child's bound keeps no place of its own.
        let _only = slots.take(1, Some((&table, one, 1))).unwrap();
        assert_eq!(slots.take(1, Some((&table, other, 1))).err(), Some(NoSlot::Child));
        assert!(slots.take(usize::MAX, Some((&table, other, 1))).is_ok());
    }

    #[test]
    fn an_ipv6_client_is_its_64() {
        let slots = Arc::new(TunnelSlots::default());
        let table = Arc::new(ClientTunnels::new().unwrap());
        let take = |client: &str| slots.take(usize::MAX, Some((&table, client.parse().unwrap(), 1)));
        let _held = take("2001:db8:1:2::1").unwrap();
        assert_eq!(take("2001:db8:1:2:ffff:1:2:3").err(), Some(NoSlot::Client));
        assert!(take("2001:db8:1:3::1").is_ok());
        // A mapped IPv4 address is that IPv4 client.
        let _v4 = take("192.0.2.7").unwrap();
        assert_eq!(take("::ffff:192.0.2.7").err(), Some(NoSlot::Client));
    }
}
