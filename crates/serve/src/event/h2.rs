//! HTTP/2 connections on the loop. A connection that opens with HTTP/2
//! (ALPN h2, or the preface in cleartext) gets a [`Session`]; the loop reads
//! its frames, answers what cannot block at once, gives the rest to the
//! worker threads ([`Job::H2`]) and writes the frames as the socket takes
//! them. An idle HTTP/2 connection costs no thread, as an idle HTTP/1.1 one.

use std::io;
use std::time::{Duration, Instant};

use warren_config::LogLevel;
use warren_http::h2::Connection;
use warren_http::RequestHead;

use super::EventLoop;
use crate::h2::session::{Ctx, Session, Task, OUTPUT_AHEAD};
use crate::h2::write_output;

/// An HTTP/2 connection's state beside its [`Session`].
pub(super) struct H2Conn {
    pub(super) session: Session,
    /// GOAWAY has been queued: stopping, or idle past KeepAliveTimeout.
    going_away: bool,
    /// The last time the client sent something or took something (or a
    /// tunnel on it moved a byte).
    pub(super) last_progress: Instant,
    /// H2StreamTimeout (else Timeout).
    stream_timeout: Duration,
}

impl EventLoop {
    /// The connection turned out to speak HTTP/2: its reads so far (in
    /// `rbuf`) become the session's first input.
    /// `upgraded`: the codec and request of a connection upgraded from
    /// HTTP/1.1, whose 101 has been sent.
    pub(super) fn start_h2(&mut self, slot: usize, upgraded: Option<(Connection, RequestHead)>) {
        let sb = self.sb.clone();
        let c = self.conns[slot].as_mut().expect("conn");
        c.stream.note_tls(&self.site, &mut c.info, sb.thread(self.slot, 0));
        let mut tasks = Vec::new();
        let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
        let mut session = crate::h2::session(&c.stream, &self.rules, c.info, upgraded, &mut ctx, &mut tasks);
        // The loop relays a body to an HTTP backend as it comes (h2_proxy).
        session.set_upload_rule(warren_handler::Site::streams_body, false);
        let stream_timeout = crate::h2::stream_timeout(&c.stream, &self.rules);
        c.h2 = Some(Box::new(H2Conn { session, going_away: false, last_progress: Instant::now(), stream_timeout }));
        let generation = c.generation;
        self.h2_dispatch(slot, generation, &mut tasks);
        if self.stopping {
            self.h2_go_away(slot);
        }
    }

    /// Advances an HTTP/2 connection as far as it goes without blocking;
    /// then the relays that stopped reading for its client read on.
    pub(super) fn drive_h2(&mut self, slot: usize) {
        self.drive_h2_session(slot);
        self.h2_relays_resume(slot);
        self.h2_proxies_resume(slot);
        self.h2_tunnels_resume(slot);
    }

    fn drive_h2_session(&mut self, slot: usize) {
        let sb = self.sb.clone();
        let loop_slot = sb.thread(self.slot, 0);
        let mut tasks: Vec<Task> = Vec::new();
        loop {
            let Some(c) = self.conns[slot].as_mut() else { return };
            let h = c.h2.as_mut().expect("an HTTP/2 connection");
            let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: loop_slot };
            if !c.h1.input().is_empty() {
                match h.session.feed(&mut ctx, c.h1.input(), Instant::now(), &mut tasks) {
                    Ok(used) => {
                        c.h1.input_mut().drain(..used);
                    }
                    Err(e) => {
                        self.site.error_log.log(LogLevel::Info, Some(c.info.useragent), &format!("HTTP/2: {} ({:?}); closing the connection", e.reason, e.code));
                        h.session.abort_all(&mut ctx);
                        let _ = write_output(&c.stream, &mut h.session.codec);
                        self.close(slot);
                        return;
                    }
                }
            }
            if !tasks.is_empty() {
                let generation = c.generation;
                self.h2_dispatch(slot, generation, &mut tasks);
            }
            let Some(c) = self.conns[slot].as_mut() else { return };
            let h = c.h2.as_mut().expect("an HTTP/2 connection");
            let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: loop_slot };
            // Frames out as far as the socket takes them.
            let flushed = loop {
                // A session whose output was already full produces nothing
                // and says so; once that output is all written it has to be
                // asked again, as no EPOLLOUT edge comes for a socket that
                // never filled up.
                let was_full = h.session.codec.output().len() >= OUTPUT_AHEAD;
                let produced = h.session.produce(&mut ctx);
                match write_output(&c.stream, &mut h.session.codec) {
                    Ok(true) if produced || was_full => continue,
                    Ok(all) => break Ok(all),
                    Err(e) => break Err(e),
                }
            };
            let Ok(flushed) = flushed else {
                self.close(slot);
                return;
            };
            if h.session.codec.is_finished() && flushed {
                self.close(slot);
                return;
            }
            // A client that does not take what it asked for (or makes us
            // answer PINGs it never reads) is not read further until it does.
            if !c.readable || h.session.codec.output().len() >= OUTPUT_AHEAD {
                break;
            }
            match c.stream.read(&mut self.scratch_in) {
                Ok(0) => {
                    self.close(slot);
                    return;
                }
                Ok(n) => {
                    if n < self.scratch_in.len() && !c.stream.has_buffered_input() {
                        c.readable = false;
                    }
                    c.h1.input_mut().extend_from_slice(&self.scratch_in[..n]);
                    h.last_progress = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.readable = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close(slot);
                    return;
                }
            }
        }
        self.h2_deadline(slot);
    }

    /// When the connection is next looked at by [`EventLoop::expire`]: an
    /// idle one after KeepAliveTimeout, a busy one after Timeout without
    /// progress (a client holding a zero window, or not reading).
    fn h2_deadline(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else { return };
        let h = c.h2.as_mut().expect("an HTTP/2 connection");
        if h.session.codec.output().is_empty() {
            c.h1.release_input();
        }
        let idle = h.session.is_idle() && h.session.codec.output().is_empty();
        c.deadline = if idle {
            self.rules.keep_alive.idle_deadline(h.last_progress, self.stopping)
        } else if h.session.has_work_out() {
            // The application's own time is ProxyTimeout's to limit; a
            // stream whose answer waits on a client that does not read
            // holds its backend only for H2StreamTimeout.
            let application = h.last_progress + self.rules.timeout.max(Duration::from_secs(3600));
            h.session.client_wait_deadline(h.stream_timeout).map_or(application, |client| client.min(application))
        } else {
            h.last_progress + h.stream_timeout.min(self.rules.timeout)
        };
    }

    /// The socket is writable again: what waited goes.
    pub(super) fn h2_writable(&mut self, slot: usize) {
        if let Some(h) = self.conns[slot].as_mut().and_then(|c| c.h2.as_mut()) {
            h.last_progress = Instant::now();
        }
        self.drive_h2(slot);
    }

    /// A deadline passed: an idle connection is told it ends (and closed
    /// once that is out), a stalled one is closed.
    pub(super) fn expire_h2(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_mut() else { return };
        let h = c.h2.as_mut().expect("an HTTP/2 connection");
        if h.session.is_idle() && !h.going_away {
            self.h2_go_away(slot);
            return;
        }
        let now = Instant::now();
        let sb = self.sb.clone();
        let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
        if h.session.expire_streams(&mut ctx, now, h.stream_timeout) > 0 || now < h.last_progress + self.rules.timeout {
            self.drive_h2(slot);
            return;
        }
        self.close(slot);
    }

    /// GOAWAY: no new streams; the open ones finish.
    pub(super) fn h2_go_away(&mut self, slot: usize) {
        let Some(h) = self.conns[slot].as_mut().and_then(|c| c.h2.as_mut()) else { return };
        if !h.going_away {
            h.going_away = true;
            h.last_progress = Instant::now();
            h.session.codec.go_away();
        }
        self.drive_h2(slot);
    }

    /// Drives the HTTP/2 connections that have something new to send.
    pub(super) fn drive_h2_ready(&mut self) {
        if self.h2_ready.is_empty() {
            return;
        }
        let mut ready = std::mem::take(&mut self.h2_ready);
        ready.sort_unstable();
        ready.dedup();
        for &slot in &ready {
            if self.conns[slot].as_ref().is_some_and(|c| c.h2.is_some()) {
                self.drive_h2(slot);
            }
        }
        // Relays read on meanwhile: those connections go next time round.
        ready.clear();
        ready.append(&mut self.h2_ready);
        self.h2_ready = ready;
    }

    /// A worker thread's answer for a stream (and the pieces of its body,
    /// if the thread goes on producing them); the connection is driven
    /// with the others that have something to send.
    pub(super) fn h2_complete(&mut self, slot: usize, stream: u32, resp: warren_handler::Response, pieces: Option<std::sync::mpsc::Receiver<crate::h2::body_plan::Piece>>) {
        if resp.tunnel.is_some() {
            return self.h2_open_tunnel(slot, stream, resp);
        }
        let sb = self.sb.clone();
        let Some(h) = self.conns[slot].as_mut().and_then(|c| c.h2.as_mut()) else { return };
        let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
        h.session.complete(&mut ctx, stream, resp, pieces);
        self.h2_ready.push(slot);
    }

    /// Logs the streams of a connection about to close as cut short.
    pub(super) fn h2_abort(&mut self, slot: usize) {
        let sb = self.sb.clone();
        let Some(h) = self.conns[slot].as_mut().and_then(|c| c.h2.as_mut()) else { return };
        let mut ctx = Ctx { site: &self.site, logs: &mut self.logs, date: &mut self.date, slot: sb.thread(self.slot, 0) };
        h.session.abort_all(&mut ctx);
    }
}
