//! An HTTP/2 connection served by the one thread that accepted it (a
//! prefork child, a worker thread): its streams' answers are worked out
//! one after another on this thread, as Apache's mod_http2 does under
//! prefork, while the socket is read and written without blocking between
//! them, so flow control, PING and new requests keep going; a backend's
//! interim answers (103 Early Hints) go out while its answer is awaited,
//! as under the event MPM ([`super::session::Session::interim`]). Its RFC 8441
//! tunnels ([`ThreadTunnels`]) are polled beside the socket: their bytes
//! move while the other streams go on.

use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use warren_config::LogLevel;
use warren_handler::ConnInfo;
use warren_http::h2::Connection;
use warren_http::{BodyFraming, RequestHead};

use super::blocking_ws::ThreadTunnels;
use super::blocking_upload::LiveBody;
use super::session::{Ctx, Work, OUTPUT_AHEAD};
use super::write_output;
use crate::blocking::Driver;
use crate::client_stream::ClientStream;
use warren_handler::proxy_http::tunnel::End;
use warren_mpm::scoreboard::{State, STOP_NOW};

/// How long one wait lasts at most, so a stop is seen soon.
const STOP_CHECK: Duration = Duration::from_millis(250);
const READ_CHUNK: usize = 16 * 1024;
/// How long a graceful stop lets a connection's tunnels go on at most
/// (Timeout if shorter), as the event loop does.
const TUNNELS_STOP_WAIT: Duration = Duration::from_secs(10);

impl Driver<'_> {
    /// Serves an HTTP/2 connection to its end; `input` is what was read
    /// of it already (the preface, maybe more).
    /// `upgraded`: the codec and request of a connection upgraded from
    /// HTTP/1.1, whose 101 has been sent.
    pub fn serve_h2(&mut self, stream: &ClientStream, info: ConnInfo, mut input: Vec<u8>, upgraded: Option<(Connection, RequestHead)>) {
        let _ = stream.set_nonblocking(true);
        let mut tasks = Vec::new();
        let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
        let mut session = super::session(stream, &self.rules, info, upgraded, &mut ctx, &mut tasks);
        session.set_upload_rule(warren_handler::Site::streams_body_on_thread, true);
        let stream_timeout = super::stream_timeout(stream, &self.rules);
        let mut buf = vec![0u8; READ_CHUNK];
        let mut last_progress = Instant::now();
        let mut going_away = false;
        let mut readable = true;
        let mut tunnels = ThreadTunnels::default();
        'serve: loop {
            let now = Instant::now();
            if !input.is_empty() {
                let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                match session.feed(&mut ctx, &input, now, &mut tasks) {
                    Ok(used) => {
                        input.drain(..used);
                        // DATA, credit or a reset may be any tunnel's.
                        tunnels.wake_all();
                    }
                    Err(e) => {
                        self.site.error_log.log(LogLevel::Info, Some(info.useragent), &format!("HTTP/2: {} ({:?}); closing the connection", e.reason, e.code));
                        tunnels.end_all(&mut session, &mut ctx, || End::Closed("client"));
                        session.abort_all(&mut ctx);
                        let _ = write_output(stream, &mut session.codec);
                        break;
                    }
                }
            }
            let mut worked = false;
            // Streams started while an upload is read wait for the next round.
            for task in std::mem::take(&mut tasks) {
                if task.is_dropped() {
                    continue;
                }
                worked = true;
                self.before_wait();
                self.slot.set(State::Writing);
                let id = task.stream;
                if matches!(task.work, Work::Upload(_)) {
                    let length = match task.head.framing {
                        BodyFraming::Length(n) => Some(n),
                        _ => None,
                    };
                    let ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                    let mut body = LiveBody { session: &mut session, ctx, stream, input: &mut input, tasks: &mut tasks, id, length, timeout: stream_timeout, whole: false, client_gone: false };
                    let resp = task.run_upload(self.site, &mut body);
                    if body.client_gone {
                        break 'serve;
                    }
                    let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                    session.end_upload(id);
                    session.complete(&mut ctx, id, resp, None);
                    continue;
                }
                // A backend's interim answers (H2EarlyHints) go out as they
                // come, ahead of the answer this thread is still waiting
                // for; a full socket keeps them queued rather than blocking
                // the thread on a client that does not read.
                let resp = task.run_with_interims(self.site, &mut |answer| {
                    session.interim(id, answer);
                    let _ = write_output(stream, &mut session.codec);
                });
                let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                match resp.tunnel.is_some() {
                    true => tunnels.open(&mut session, &mut ctx, id, resp),
                    false => session.complete(&mut ctx, id, resp, None),
                }
            }
            if self.stop.load(Ordering::Relaxed) && !going_away {
                session.codec.go_away();
                going_away = true;
                tunnels.stop_by(now + self.rules.timeout.min(TUNNELS_STOP_WAIT));
            }
            if !tunnels.is_empty() {
                let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                if self.quiescing.is_some_and(|q| q.load(Ordering::Relaxed) == STOP_NOW) {
                    tunnels.end_all(&mut session, &mut ctx, || End::Stopped);
                }
                if worked {
                    // The tunnels waited while this thread worked out an
                    // answer: what came meanwhile moves before any of them
                    // is judged idle.
                    tunnels.wake_all();
                    if tunnels.pump(&mut session, &mut ctx) {
                        last_progress = Instant::now();
                    }
                }
                tunnels.expire(&mut session, &mut ctx, Instant::now());
            }
            // Frames out as far as the socket takes them.
            let flushed = loop {
                let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                // Output already full produces nothing; once it is all
                // written the session is asked again (else the thread
                // would wait for the client to send something).
                let was_full = session.codec.output().len() >= OUTPUT_AHEAD;
                let produced = session.produce(&mut ctx);
                // The connection's own limit must not cut a tunnel that
                // moves only one way (a backend pushing to a client that
                // sends nothing).
                let pumped = tunnels.pump(&mut session, &mut ctx);
                if pumped {
                    last_progress = Instant::now();
                }
                match write_output(stream, &mut session.codec) {
                    Ok(true) if produced || pumped || was_full => continue,
                    Ok(all) => break Ok(all),
                    Err(e) => break Err(e),
                }
            };
            let Ok(flushed) = flushed else { break };
            self.flush_logs_if_due();
            if session.codec.is_finished() && flushed {
                break;
            }
            if readable {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        input.extend_from_slice(&buf[..n]);
                        last_progress = Instant::now();
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => readable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            // Nothing to do until the client sends or the socket drains.
            let idle = session.is_idle() && flushed;
            let stopping = self.stop.load(Ordering::Relaxed);
            let mut limit = if idle { self.rules.keep_alive.idle_deadline(last_progress, stopping) } else { last_progress + stream_timeout.min(self.rules.timeout) };
            if let Some(tunnel_limit) = tunnels.next_deadline() {
                limit = limit.min(tunnel_limit);
            }
            let now = Instant::now();
            if now >= limit {
                if idle && !going_away {
                    // An idle connection is told it ends, as nginx and mod_http2 do.
                    session.codec.go_away();
                    going_away = true;
                    last_progress = now;
                    continue;
                }
                let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
                if !idle && session.expire_streams(&mut ctx, now, stream_timeout) > 0 {
                    continue;
                }
                if !tunnels.is_empty() {
                    // Open tunnels keep the connection: their own idle
                    // limits end them (at the loop's top), then this one applies.
                    last_progress = last_progress.max(now.min(limit));
                    continue;
                }
                if now >= last_progress + self.rules.timeout {
                    break;
                }
            }
            self.slot.set(if idle { State::KeepAlive } else { State::Writing });
            self.before_wait();
            let what = if flushed { PollFlags::POLLIN } else { PollFlags::POLLIN | PollFlags::POLLOUT };
            let wait = (limit - now).min(STOP_CHECK);
            let tunnel_waits = tunnels.waits(&session);
            let mut fds = Vec::with_capacity(1 + tunnel_waits.len());
            fds.push(PollFd::new(stream.as_fd(), what));
            fds.extend(tunnel_waits.iter().map(|&(i, flags)| PollFd::new(tunnels.backend_fd(i), flags)));
            let mut ready = Vec::new();
            let mut output_room = false;
            match poll(&mut fds, PollTimeout::try_from(wait.as_millis().max(1) as i32).unwrap_or(PollTimeout::MAX)) {
                Ok(n) if n > 0 => {
                    let got = fds[0].revents().unwrap_or(PollFlags::empty());
                    if got.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
                        readable = true;
                    }
                    if got.contains(PollFlags::POLLOUT) {
                        last_progress = Instant::now();
                        // Room in the connection's output again: the
                        // tunnels' bytes may go.
                        output_room = true;
                    }
                    ready.extend(fds[1..].iter().zip(&tunnel_waits).filter(|(fd, _)| fd.revents().is_some_and(|r| !r.is_empty())).map(|(_, &(i, _))| i));
                }
                _ => {}
            }
            drop(fds);
            if output_room {
                tunnels.wake_all();
            }
            for i in ready {
                tunnels.ready(i);
            }
        }
        let mut ctx = Ctx { site: self.site, logs: &mut self.logs, date: &mut self.date, slot: self.slot };
        tunnels.end_all(&mut session, &mut ctx, || End::Closed("client"));
        session.abort_all(&mut ctx);
        self.slot.set(State::Closing);
    }
}
