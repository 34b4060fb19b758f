//! A connection to an HTTP backend, plain or TLS over it: what the
//! exchange, the idle connections kept for reuse and a WebSocket tunnel
//! all read and write. Apart from the connections, which hold the
//! tunnels' slots, so that a tunnel can hold a stream without importing
//! them back.

use std::io::{self, Read, Write};
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

use crate::gateway::stream::BackendStream;

/// A backend connection: plain, or TLS over it.
pub enum HttpStream {
    Plain(BackendStream),
    Tls(Box<StreamOwned<ClientConnection, BackendStream>>),
}

impl HttpStream {
    fn socket(&self) -> &BackendStream {
        match self {
            HttpStream::Plain(s) => s,
            HttpStream::Tls(t) => &t.sock,
        }
    }

    pub fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        self.socket().set_timeouts(t)
    }

    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        self.socket().set_nonblocking(on)
    }

    /// Neither closed nor sent on: for TLS, a close_notify or anything
    /// else arriving on an idle connection also makes it unusable.
    pub(super) fn idle_and_open(&self) -> bool {
        self.socket().idle_and_open()
    }
}

impl std::os::fd::AsFd for HttpStream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.socket().fd()
    }
}

impl Read for HttpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            HttpStream::Plain(s) => s.read(buf),
            // Many backends close without a close_notify; the answer's own
            // framing (Content-Length, chunked) still tells a cut-short
            // body, so a bare close ends the stream as on plain TCP.
            HttpStream::Tls(t) => match t.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

impl Write for HttpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            HttpStream::Plain(s) => s.write(buf),
            HttpStream::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            HttpStream::Plain(s) => s.flush(),
            HttpStream::Tls(t) => t.flush(),
        }
    }
}
