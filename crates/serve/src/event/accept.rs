//! Taking connections: the listening sockets join or leave the loop's
//! epoll set as `spread` and MaxChildConnections decide, and each wake-up
//! takes a batch of connections off the queue.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use nix::sys::epoll::{EpollEvent, EpollFlags};
use warren_config::LogLevel;
use warren_handler::ConnInfo;
use warren_http::h1::Connection;

use crate::exchange::Output;
use crate::client_stream::AcceptClient;
use warren_mpm::scoreboard::State;
use warren_mpm::spread;
use super::connection::Conn;
use super::{EventLoop, TOKEN_LISTENER};

/// Accepts per wake-up at most. The listener is level-triggered, so what
/// is left wakes us (or another child) again.
const ACCEPT_BATCH: usize = 16;

impl EventLoop {
    /// Publishes whether a worker thread is idle, and takes up or gives up
    /// the listening sockets as `spread` decides.
    pub(super) fn update_listening(&mut self) {
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

    /// Takes up to ACCEPT_BATCH connections off the queue first, then
    /// starts on them: a burst of clients empties the listen queue before it
    /// can overflow (an overflow costs the client a retransmission).
    pub(super) fn accept(&mut self, which: usize) {
        let mut fresh = [0usize; ACCEPT_BATCH];
        let mut n = 0;
        while n < ACCEPT_BATCH && !self.stopping && self.open < self.max_open {
            let (stream, peer, local) = match self.listeners[which].accept() {
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
            let slot = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            self.next_generation += 1;
            // A new connection's head is timed from now.
            let h1 = Connection::new(self.rules, Instant::now()).over_tls(stream.is_tls());
            let proxy_header = self.site.expects_proxy_header(local, peer);
            let conn = Conn {
                stream,
                info: ConnInfo::new(peer, local),
                generation: self.next_generation,
                on_hold: false,
                // With TCP_DEFER_ACCEPT the first bytes are usually there already.
                readable: true,
                out: Output::default(),
                deadline: h1.deadline(false),
                h1,
                req: None,
                pending: None,
                upstream: None,
                parked: None,
                proxy_relay: None,
                spool: None,
                body: None,
                proxy_header,
                h2: None,
                tunnel: None,
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
}
