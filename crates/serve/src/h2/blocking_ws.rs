//! WebSockets over HTTP/2 (RFC 8441) on a thread (prefork, worker): the
//! tunnels of the one HTTP/2 connection the thread serves. The protocol is
//! the session's ([`Session::accept_tunnel`], [`Session::pump_tunnel`],
//! [`Session::end_tunnel`], as on the event loop); here is only the I/O a
//! thread does for it: the driver ([`super::blocking`]) polls the client's
//! socket and these tunnels' backend sockets together, so that a tunnel
//! holds no thread beyond the connection's own and the connection's other
//! streams go on beside it.
//!
//! A tunnel is pumped when its backend's socket was reported ready, when
//! the client's connection moved (DATA, WINDOW_UPDATE or RST_STREAM may
//! concern any tunnel), and again while the connection's output was full
//! (its bytes wait for room there). Its idle limit is
//! ProxyWebsocketIdleTimeout (else the route's timeout); a graceful stop
//! ends it at the stop's deadline, a stop at once (SIGTERM) now.

use std::os::fd::BorrowedFd;
use std::time::Instant;

use nix::poll::PollFlags;
use warren_handler::proxy_http::tunnel::{End, Tunnel};
use warren_handler::Response;

use super::session::{BackendReadiness, Ctx, Session, OUTPUT_AHEAD};

const READ_CHUNK: usize = 16 * 1024;

/// The tunnels of the connection a thread serves.
#[derive(Default)]
pub struct ThreadTunnels {
    open: Vec<ThreadTunnel>,
    /// The read buffer, kept only while a tunnel is open.
    chunk: Vec<u8>,
    /// When the tunnels still open are ended by a graceful stop.
    stop_deadline: Option<Instant>,
}

struct ThreadTunnel {
    stream: u32,
    tunnel: Tunnel,
    /// What the backend sent with its 101, not yet on the stream.
    early: Vec<u8>,
    /// When it is idle past its limit, unless a byte moves before.
    deadline: Instant,
    /// To be pumped: its backend's socket was ready, the client's
    /// connection moved, or it just opened.
    due: bool,
}

impl ThreadTunnels {
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// A stream's work came back with the backend's 101: the stream gets
    /// its 200 and this thread carries the tunnel.
    pub fn open(&mut self, session: &mut Session, ctx: &mut Ctx, stream: u32, resp: Response) {
        let Some((tunnel, early)) = session.accept_tunnel(ctx, stream, resp) else { return };
        let deadline = Instant::now() + tunnel.idle();
        if self.chunk.is_empty() {
            self.chunk = vec![0u8; READ_CHUNK];
        }
        self.open.push(ThreadTunnel { stream, tunnel, early, deadline, due: true });
    }

    /// The client's connection moved: every tunnel may move with it.
    pub fn wake_all(&mut self) {
        for t in &mut self.open {
            t.due = true;
        }
    }

    /// Moves what can move now on the tunnels that are due; those that
    /// are over are ended on the session. True if a byte moved.
    pub fn pump(&mut self, session: &mut Session, ctx: &mut Ctx) -> bool {
        let mut moved = false;
        let mut i = 0;
        while i < self.open.len() {
            let t = &mut self.open[i];
            if !t.due {
                i += 1;
                continue;
            }
            match session.pump_tunnel(t.stream, t.tunnel.backend(), &mut BackendReadiness::unknown(), &mut t.early, &mut self.chunk) {
                Ok(now_moved) => {
                    if now_moved {
                        t.deadline = Instant::now() + t.tunnel.idle();
                        moved = true;
                    }
                    // Stopped by the connection's full output: its turn
                    // comes again once that is written. Otherwise the
                    // backend's socket or the client's credit wakes it.
                    t.due = session.codec.output().len() >= OUTPUT_AHEAD;
                    i += 1;
                }
                Err(end) => {
                    self.end(i, session, ctx, end);
                    moved = true;
                }
            }
        }
        moved
    }

    /// The backend sockets to wait on and for what: (index, events).
    /// A tunnel that waits for nothing of its backend (its stream's window
    /// is closed) is left out: a socket the peer closed would be reported
    /// hung up at every wait, and its end is read once the window opens.
    pub fn waits(&self, session: &Session) -> Vec<(usize, PollFlags)> {
        let mut waits = Vec::with_capacity(self.open.len());
        for (i, t) in self.open.iter().enumerate() {
            let (read, write) = session.tunnel_wants(t.stream);
            let mut flags = PollFlags::empty();
            flags.set(PollFlags::POLLIN, read);
            flags.set(PollFlags::POLLOUT, write);
            if !flags.is_empty() {
                waits.push((i, flags));
            }
        }
        waits
    }

    /// The socket of tunnel `i`'s backend, to wait on.
    pub fn backend_fd(&self, i: usize) -> BorrowedFd<'_> {
        self.open[i].tunnel.backend_fd()
    }

    /// Tunnel `i`'s backend was reported ready.
    pub fn ready(&mut self, i: usize) {
        self.open[i].due = true;
    }

    /// The next time a tunnel is to be ended if nothing moves.
    pub fn next_deadline(&self) -> Option<Instant> {
        let idle = self.open.iter().map(|t| t.deadline).min()?;
        Some(self.stop_deadline.map_or(idle, |stop| stop.min(idle)))
    }

    /// A graceful stop: the tunnels still open at `deadline` are ended.
    pub fn stop_by(&mut self, deadline: Instant) {
        self.stop_deadline.get_or_insert(deadline);
    }

    /// Ends the tunnels idle past their limit, and all of them once the
    /// stop's deadline has passed.
    pub fn expire(&mut self, session: &mut Session, ctx: &mut Ctx, now: Instant) {
        if self.stop_deadline.is_some_and(|d| d <= now) {
            return self.end_all(session, ctx, || End::Stopped);
        }
        let mut i = 0;
        while i < self.open.len() {
            if self.open[i].deadline <= now {
                self.end(i, session, ctx, End::Idle);
            } else {
                i += 1;
            }
        }
    }

    /// Ends every tunnel (the connection closes, or the server stops now).
    pub fn end_all(&mut self, session: &mut Session, ctx: &mut Ctx, why: impl Fn() -> End) {
        while !self.open.is_empty() {
            self.end(self.open.len() - 1, session, ctx, why());
        }
    }

    /// Tunnel `i` is over: its stream ended or reset and logged, its end
    /// logged, the backend's connection closed.
    fn end(&mut self, i: usize, session: &mut Session, ctx: &mut Ctx, end: End) {
        let t = self.open.swap_remove(i);
        session.end_tunnel(ctx, t.stream, &end, true);
        t.tunnel.finish(end);
        if self.open.is_empty() {
            self.chunk = Vec::new();
        }
    }
}
