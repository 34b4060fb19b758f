//! WebSocket tunnels carried by the event loop (mod_proxy_wstunnel,
//! `upgrade=websocket`). A worker thread sends the request on and the
//! backend's 101 back, then hands the tunnel over
//! ([`crate::exchange::Exchange::tunnel`]): from then on the client's
//! socket stays in its slot and the backend's joins the epoll set under
//! [`TOKEN_TUNNEL`] + slot, and each readiness of either moves what it can
//! ([`Open::pump`](warren_handler::proxy_http::tunnel::Open::pump)), so an idle tunnel costs a slot and two sockets, no
//! thread and no buffer.
//!
//! The idle limit (ProxyWebsocketIdleTimeout, else the route's timeout) is
//! the connection's deadline, pushed on each time a byte moves and checked
//! by the loop's tick. On a graceful stop or restart a tunnel is left to
//! end by itself (both sides closing, or its idle limit), as an Apache
//! child keeps serving its tunnels after a graceful restart; the child
//! exits once its last tunnel has ended, and GracefulShutdownTimeout, when
//! set, bounds the wait as the parent enforces it for any child. A stop
//! that is not graceful (SIGTERM) closes the tunnels at once.

use std::os::fd::AsFd;
use std::time::Instant;

use nix::sys::epoll::{EpollEvent, EpollFlags};
use warren_handler::proxy_http::tunnel::End;

use super::{EventLoop, TOKEN_TUNNEL};

/// Bytes a tunnel may read (both ways together) in one pass of the loop:
/// a flooding tunnel then waits its turn behind the other connections'
/// events, as a relay's pass ends when the client's buffer is full. 256 KB
/// is one pipe's high water: a pass still fills a waiting pipe at once.
const PASS_BUDGET: usize = 256 * 1024;
use crate::fastcgi::on_thread::TunnelClient;
use crate::serve::{self, Records};

impl EventLoop {
    /// The request's 101 is out: if it opened a tunnel, the loop carries it
    /// from here. False if there was none (the connection goes on as HTTP).
    pub(super) fn start_tunnel(&mut self, slot: usize) -> bool {
        let c = self.conns[slot].as_mut().expect("conn");
        let Some(tunnel) = c.req.as_mut().and_then(|r| r.tunnel.take()) else { return false };
        // Frames the client sent right behind its request head.
        let from_client = std::mem::take(c.h1.input_mut());
        let open = tunnel.open(from_client);
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
        let started = open.start(c.stream.as_fd()).and_then(|_| Ok(self.epoll.add(open.backend_fd(), EpollEvent::new(flags, TOKEN_TUNNEL + slot as u64))?));
        match started {
            Ok(()) => {
                c.deadline = Instant::now() + open.idle();
                c.tunnel = Some(Box::new(open));
                self.tunnels += 1;
                self.pump_tunnel(slot, false, false);
            }
            Err(e) => {
                open.finish(End::Failed("setting up", e));
                self.close_tunnel_conn(slot);
            }
        }
        true
    }

    /// An event on either socket of the tunnel in `slot`.
    pub(super) fn tunnel_ready(&mut self, slot: usize, flags: EpollFlags, backend: bool) {
        let Some(open) = self.conns.get_mut(slot).and_then(Option::as_mut).and_then(|c| c.tunnel.as_mut()) else { return };
        // Edge-triggered, as the pump reads: a side is read once its event
        // says so, until a read finds it drained (no read that finds
        // nothing per message, and none of the side that did not move).
        let end = EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR;
        if flags.intersects(EpollFlags::EPOLLIN | end) {
            open.readable(backend, flags.intersects(end));
        }
        let gone = flags.intersects(EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR);
        self.pump_tunnel(slot, gone && !backend, gone && backend);
    }

    fn pump_tunnel(&mut self, slot: usize, client_gone: bool, backend_gone: bool) {
        let c = self.conns[slot].as_mut().expect("conn");
        let open = c.tunnel.as_mut().expect("tunnel");
        let end = match open.pump_within(&mut TunnelClient(&c.stream), &mut self.scratch_in, PASS_BUDGET) {
            Ok(pass) => {
                if pass.moved {
                    c.deadline = Instant::now() + open.idle();
                }
                if pass.cut {
                    // Edge-triggered: what is left would raise no new event.
                    // Re-arming both sockets queues one behind the events
                    // already waiting, so the loop serves those first.
                    let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
                    let rearmed = self.epoll.modify(open.backend_fd(), &mut EpollEvent::new(flags, TOKEN_TUNNEL + slot as u64)).and_then(|_| self.epoll.modify(c.stream.as_fd(), &mut EpollEvent::new(flags, slot as u64)));
                    rearmed.err().map(|e| End::Failed("re-arming", e.into()))
                } else {
                    open.gone(client_gone, backend_gone)
                }
            }
            Err(end) => Some(end),
        };
        if let Some(end) = end {
            self.end_tunnel(slot, end);
        }
    }

    /// The tunnel is over: its end logged, its request logged, the
    /// connection closed.
    pub(super) fn end_tunnel(&mut self, slot: usize, end: End) {
        let c = self.conns[slot].as_mut().expect("conn");
        if let Some(open) = c.tunnel.take() {
            // Dropping the backend's socket takes it out of the epoll set.
            open.finish(end);
            self.tunnels -= 1;
        }
        self.close_tunnel_conn(slot);
    }

    fn close_tunnel_conn(&mut self, slot: usize) {
        let c = self.conns[slot].as_mut().expect("conn");
        if let Some(req) = c.req.take() {
            serve::end(&mut Records { site: &self.site, logs: &mut self.logs, slot: self.sb.thread(self.slot, 0) }, &req, &c.info, c.h1.served(), false);
        }
        self.close(slot);
    }

    /// The stop's deadline has passed: every connection but the tunnels is
    /// closed. True when no tunnel is left either (the child may exit).
    pub(super) fn stop_all_but_tunnels(&mut self) -> bool {
        for slot in 0..self.conns.len() {
            if self.conns[slot].as_ref().is_some_and(|c| c.tunnel.is_none()) {
                self.close(slot);
            }
        }
        self.tunnels == 0
    }

    /// The server stops at once (SIGTERM to the parent), not gracefully:
    /// the tunnels, which would outlast any deadline, are closed now; other
    /// requests still get the stop's deadline to finish.
    pub(super) fn end_tunnels_if_stopped_now(&mut self) {
        let now = self.sb.process(self.slot).quiescing.load(std::sync::atomic::Ordering::Relaxed) == warren_mpm::scoreboard::STOP_NOW;
        if self.tunnels == 0 || !now {
            return;
        }
        for slot in 0..self.conns.len() {
            if self.conns[slot].as_ref().is_some_and(|c| c.tunnel.is_some()) {
                self.end_tunnel(slot, End::Stopped);
            }
        }
    }
}
