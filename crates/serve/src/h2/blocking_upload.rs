//! A stream's request body read as the thread serving its HTTP/2
//! connection (prefork, worker) relays it to an HTTP backend: the thread's
//! proxy reads [`LiveBody`] as it writes the backend, and each read that
//! finds nothing held for the stream reads the connection, feeding the
//! session (other streams' requests wait as tasks, their DATA in their own
//! windows; PINGs and credit are answered). A piece is credited back to
//! the client only once the proxy has taken it
//! ([`Session::take_upload`]), so a backend that reads slowly holds the
//! thread in its write, as Apache's mod_http2 under prefork, and the
//! client's window shuts. A client that stops sending gets the stream
//! reset after H2StreamTimeout.

use std::io;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use warren_handler::proxy_http::response::Interim;
use warren_handler::RequestBody;
use warren_http::HttpError;

use super::session::{Ctx, Pulled, Session, Task};
use super::write_output;
use crate::client_stream::ClientStream;

/// The longest one wait on the client lasts.
const WAIT_STEP: Duration = Duration::from_millis(250);

/// One stream's body, read off its connection as the proxy asks for it.
pub struct LiveBody<'a, 'c> {
    pub session: &'a mut Session,
    pub ctx: Ctx<'c>,
    pub stream: &'a ClientStream,
    /// What was read of the connection and not yet taken by the session.
    pub input: &'a mut Vec<u8>,
    /// Work for other streams that comes meanwhile, for later.
    pub tasks: &'a mut Vec<Task>,
    pub id: u32,
    pub length: Option<u64>,
    /// H2StreamTimeout.
    pub timeout: Duration,
    /// Its end has been handed over: reads give 0.
    pub whole: bool,
    /// The connection failed or closed while the body was read: the
    /// driver ends it (the streams still waiting are not run).
    pub client_gone: bool,
}

impl LiveBody<'_, '_> {
    /// Feeds what was read, answers what the session queued, and writes
    /// it as far as the socket takes it now.
    fn feed(&mut self) -> Result<(), HttpError> {
        let used = self.session.feed(&mut self.ctx, self.input, Instant::now(), self.tasks).map_err(|e| gone(&format!("HTTP/2: {}", e.reason)))?;
        self.input.drain(..used);
        self.flush();
        Ok(())
    }

    fn flush(&mut self) {
        self.session.produce(&mut self.ctx);
        let _ = write_output(self.stream, &mut self.session.codec);
    }

    /// Reads the connection once, waiting for it at most [`WAIT_STEP`].
    fn read_connection(&mut self) -> Result<(), HttpError> {
        let mut buf = [0u8; 16 * 1024];
        match self.stream.read(&mut buf) {
            Ok(0) => Err(gone("the client closed the connection")),
            Ok(n) => {
                self.input.extend_from_slice(&buf[..n]);
                self.feed()
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let mut what = PollFlags::POLLIN;
                if !self.session.codec.output().is_empty() {
                    what |= PollFlags::POLLOUT;
                }
                let mut fds = [PollFd::new(self.stream.as_fd(), what)];
                let _ = poll(&mut fds, PollTimeout::try_from(WAIT_STEP.as_millis() as i32).unwrap_or(PollTimeout::MAX));
                self.flush();
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(gone(&e.to_string())),
        }
    }
}

fn gone(why: &str) -> HttpError {
    HttpError::new(400, format!("HTTP/2 request body: {why}"))
}

impl RequestBody for LiveBody<'_, '_> {
    fn length(&self) -> Option<u64> {
        self.length
    }

    fn present(&self) -> bool {
        true
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        if self.whole {
            return Ok(0);
        }
        loop {
            let mut got = 0;
            let pulled = self.session.take_upload(self.id, buf.len(), &mut |d| {
                buf[..d.len()].copy_from_slice(d);
                got = d.len();
            });
            match pulled {
                Pulled::More(0) => {}
                Pulled::More(_) | Pulled::End(_) => {
                    self.whole = matches!(pulled, Pulled::End(_));
                    // The credit goes to the client now.
                    self.flush();
                    return Ok(got);
                }
                // Reset (by the client, or past H2StreamTimeout), or refused
                // (LimitRequestBody: its 413 is the stream's answer already).
                Pulled::Gone => return Err(gone("the stream ended before its body")),
            }
            if let Err(e) = self.read_connection() {
                self.client_gone = true;
                return Err(e);
            }
            self.session.expire_streams(&mut self.ctx, Instant::now(), self.timeout);
        }
    }

    fn interim(&mut self, answer: &Interim) {
        self.session.interim(self.id, answer);
        let _ = write_output(self.stream, &mut self.session.codec);
    }
}
