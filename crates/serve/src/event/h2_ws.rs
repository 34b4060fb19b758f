//! WebSockets over HTTP/2 (RFC 8441) on the loop. A worker thread sends an
//! extended CONNECT's upgrade request to the backend and brings its 101
//! back (as for HTTP/1.1, [`ws_tunnel`](super::ws_tunnel)); the stream's
//! 200 goes, and the backend's socket joins the epoll set under
//! [`TOKEN_H2_TUNNEL`] + an index in `h2_tunnels`. Its bytes are moved by
//! [`Session::pump_tunnel`](crate::h2::session::Session::pump_tunnel)
//! whenever the backend is ready or the client's connection has moved
//! (DATA, WINDOW_UPDATE, RST_STREAM), the backend read only after an event
//! for it until a read finds it drained ([`BackendReadiness`], as the
//! HTTP/1.1 tunnel reads): flow control on the stream is the
//! backpressure both ways, the connection's other streams go on as usual,
//! and an idle tunnel holds no thread and no buffer.
//!
//! Its idle limit (ProxyWebsocketIdleTimeout, else the route's timeout) is
//! checked by the loop's tick; a connection that closes ends its tunnels.

use std::time::Instant;

use nix::sys::epoll::{EpollEvent, EpollFlags};
use warren_handler::proxy_http::tunnel::{End, Tunnel};
use warren_handler::Response;

use super::{EventLoop, TOKEN_H2_TUNNEL};
use crate::h2::session::{BackendReadiness, Ctx};

/// A stream's tunnel to its backend.
pub(super) struct H2Tunnel {
    slot: usize,
    generation: u64,
    stream: u32,
    tunnel: Tunnel,
    /// What the backend sent with its 101, not yet on the stream.
    early: Vec<u8>,
    /// When it is idle past its limit, unless a byte moves before.
    deadline: Instant,
    /// What the epoll told of the backend's socket.
    ready: BackendReadiness,
}

impl EventLoop {
    /// A stream's worker came back with the backend's 101: the stream gets
    /// its 200 and the loop carries the tunnel.
    pub(super) fn h2_open_tunnel(&mut self, slot: usize, stream: u32, resp: Response) {
        let sb = self.sb.clone();
        let Some(c) = self.conns[slot].as_mut() else { return };
        let generation = c.generation;
        let Some(h) = c.h2.as_mut() else { return };
        let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
        let Some((mut tunnel, early)) = h.session.accept_tunnel(&mut ctx, stream, resp) else {
            self.h2_ready.push(slot);
            return;
        };
        let idx = self.h2_tunnels.iter().position(Option::is_none).unwrap_or_else(|| {
            self.h2_tunnels.push(None);
            self.h2_tunnels.len() - 1
        });
        let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
        if let Err(e) = self.epoll.add(tunnel.backend(), EpollEvent::new(flags, TOKEN_H2_TUNNEL + idx as u64)) {
            let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
            let end = End::Failed("setting up", e.into());
            if let Some(h) = self.conns[slot].as_mut().and_then(|c| c.h2.as_mut()) {
                h.session.end_tunnel(&mut ctx, stream, &end, true);
            }
            tunnel.finish(end);
            self.h2_ready.push(slot);
            return;
        }
        let deadline = Instant::now() + tunnel.idle();
        // What came before it joined the epoll is read until drained.
        let ready = BackendReadiness { readable: true, ended: false };
        self.h2_tunnels[idx] = Some(H2Tunnel { slot, generation, stream, tunnel, early, deadline, ready });
        self.h2_tunnel_drive(idx);
        self.h2_ready.push(slot);
    }

    /// The backend's socket is ready (or gone: a read tells).
    pub(super) fn h2_tunnel_ready(&mut self, idx: usize, flags: EpollFlags) {
        let Some(t) = self.h2_tunnels.get_mut(idx).and_then(Option::as_mut) else { return };
        let end = EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR;
        t.ready.told(flags.contains(EpollFlags::EPOLLIN), flags.intersects(end));
        self.h2_tunnel_drive(idx);
    }

    fn h2_tunnel_drive(&mut self, idx: usize) {
        let Some(t) = self.h2_tunnels.get_mut(idx).and_then(Option::as_mut) else { return };
        let Some(h) = self.conns.get_mut(t.slot).and_then(Option::as_mut).filter(|c| c.generation == t.generation).and_then(|c| c.h2.as_mut()) else {
            self.h2_tunnel_end(idx, End::Closed("client"));
            return;
        };
        match h.session.pump_tunnel(t.stream, t.tunnel.backend(), &mut t.ready, &mut t.early, &mut self.scratch_in) {
            Ok(false) => {}
            Ok(true) => {
                let now = Instant::now();
                t.deadline = now + t.tunnel.idle();
                // The connection's own limit must not cut a tunnel that moves
                // only one way (a backend pushing to a client that sends nothing).
                h.last_progress = now;
                self.h2_ready.push(t.slot);
            }
            Err(end) => self.h2_tunnel_end(idx, end),
        }
    }

    /// The tunnels of a connection move on after it has (its client sent
    /// DATA or credit, or reset a stream).
    pub(super) fn h2_tunnels_resume(&mut self, slot: usize) {
        // A connection's own streams tell, before the loop's list is walked.
        if !self.conns.get(slot).and_then(Option::as_ref).and_then(|c| c.h2.as_ref()).is_some_and(|h| h.session.has_tunnels()) {
            return;
        }
        for idx in 0..self.h2_tunnels.len() {
            if self.h2_tunnels[idx].as_ref().is_some_and(|t| t.slot == slot) {
                self.h2_tunnel_drive(idx);
            }
        }
    }

    /// The tunnels of a connection that closes end with it.
    pub(super) fn h2_tunnels_close(&mut self, slot: usize) {
        for idx in 0..self.h2_tunnels.len() {
            if self.h2_tunnels[idx].as_ref().is_some_and(|t| t.slot == slot) {
                self.h2_tunnel_end(idx, End::Closed("client"));
            }
        }
    }

    /// Tunnels idle past their limit are reset; on a stop that is not
    /// graceful, every one is.
    pub(super) fn expire_h2_tunnels(&mut self, now: Instant) {
        let stop_now = self.sb.process(self.slot).quiescing.load(std::sync::atomic::Ordering::Relaxed) == warren_mpm::scoreboard::STOP_NOW;
        for idx in 0..self.h2_tunnels.len() {
            match &self.h2_tunnels[idx] {
                Some(_) if stop_now => self.h2_tunnel_end(idx, End::Stopped),
                Some(t) if t.deadline <= now => self.h2_tunnel_end(idx, End::Idle),
                _ => {}
            }
        }
    }

    /// A tunnel is over: its stream ended or reset and logged, its end
    /// logged, the backend's socket closed (which takes it out of epoll).
    fn h2_tunnel_end(&mut self, idx: usize, end: End) {
        let Some(t) = self.h2_tunnels[idx].take() else { return };
        let sb = self.sb.clone();
        if let Some(h) = self.conns.get_mut(t.slot).and_then(Option::as_mut).filter(|c| c.generation == t.generation).and_then(|c| c.h2.as_mut()) {
            let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
            h.session.end_tunnel(&mut ctx, t.stream, &end, true);
            self.h2_ready.push(t.slot);
        }
        t.tunnel.finish(end);
    }
}
