//! A FastCGI exchange driven by a thread that owns the connection while it
//! lasts: a prefork child or worker thread in its own loop, or an event
//! child's worker thread, which then gives the connection back to the event
//! loop. The request body goes to the handler as it is read ([`ClientBody`]:
//! dechunked, limited, with 100 Continue when the client waits for it); the
//! response head goes out, then the application's output as it comes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use nix::poll::PollFlags;
use warren_config::Settings;
use warren_handler::fastcgi::Gateway;
use warren_handler::spool::Spooled;
use warren_handler::{ConnInfo, RequestBody, Site};
use warren_http::{BodyDecoder, BodyFraming, DateCache, HttpError, ReadClock, RequestHead};

use crate::exchange::{body_clock, panic_response, wait_for, Chunk, Exchange, Output, Streaming};
use crate::spill::Spill;

/// How much one read from the client asks for.
const READ_CHUNK: usize = 16 * 1024;

/// Reads what the connection has onto the end of `buf`, straight into its
/// spare room: a buffer on a thread's stack would stay resident for the
/// thread's life (a worker child has dozens of threads).
pub fn read_onto(stream: &TcpStream, buf: &mut Vec<u8>, chunk: usize) -> io::Result<usize> {
    let old = buf.len();
    buf.resize(old + chunk, 0);
    let got = (&*stream).read(&mut buf[old..]);
    buf.truncate(old + *got.as_ref().unwrap_or(&0));
    got
}

/// The request body, read from the connection on demand.
pub struct ClientBody<'a> {
    stream: &'a TcpStream,
    /// Bytes already received after the head (the start of the body, and
    /// possibly a pipelined next request, which is left there).
    rbuf: &'a mut Vec<u8>,
    decoder: Option<BodyDecoder>,
    length: Option<u64>,
    limit: u64,
    /// RequestReadTimeout body= and Timeout.
    settings: &'a Settings,
    /// Started at the first read.
    clock: Option<ReadClock>,
    expect_continue: bool,
    /// Bytes taken from the connection, framing included (for `%I`).
    pub wire_bytes: u64,
    /// The whole body, read already by the event loop.
    spooled: Option<Spooled>,
}

impl<'a> ClientBody<'a> {
    pub fn new(stream: &'a TcpStream, rbuf: &'a mut Vec<u8>, head: &RequestHead, limit: u64, settings: &'a Settings) -> ClientBody<'a> {
        let (decoder, length) = match head.framing {
            BodyFraming::None => (None, None),
            BodyFraming::Length(n) => (Some(BodyDecoder::new(head.framing)), Some(n)),
            BodyFraming::Chunked => (Some(BodyDecoder::new(head.framing)), None),
        };
        ClientBody { stream, rbuf, decoder, length, limit, settings, clock: None, expect_continue: head.expect_continue, wire_bytes: 0, spooled: None }
    }

    /// A body the event loop has read whole: nothing is read from the connection.
    fn already_read(stream: &'a TcpStream, rbuf: &'a mut Vec<u8>, body: Spooled, settings: &'a Settings) -> ClientBody<'a> {
        ClientBody { stream, rbuf, decoder: None, length: Some(body.len()), limit: u64::MAX, settings, clock: None, expect_continue: false, wire_bytes: 0, spooled: Some(body) }
    }

    /// Whether all of the body has been taken off the connection.
    pub fn finished(&self) -> bool {
        self.decoder.as_ref().is_none_or(BodyDecoder::is_done)
    }
}

impl RequestBody for ClientBody<'_> {
    fn length(&self) -> Option<u64> {
        self.length
    }

    fn present(&self) -> bool {
        self.decoder.is_some() || self.spooled.is_some()
    }

    fn take_spooled(&mut self) -> Option<Spooled> {
        self.spooled.take()
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, HttpError> {
        let Some(dec) = self.decoder.as_mut() else { return Ok(0) };
        // The body's clock starts when it is first read, with what came with the head.
        let clock = self.clock.get_or_insert_with(|| {
            let now = Instant::now();
            let mut clock = body_clock(self.settings, now);
            clock.received(self.rbuf.len() as u64, now);
            clock
        });
        loop {
            if dec.is_done() {
                return Ok(0);
            }
            if !self.rbuf.is_empty() {
                // Decoded bytes never outnumber the input they came from.
                let take = self.rbuf.len().min(buf.len());
                let mut n = 0;
                let used = dec.feed(&self.rbuf[..take], &mut |d| {
                    buf[n..n + d.len()].copy_from_slice(d);
                    n += d.len();
                })?;
                self.rbuf.drain(..used);
                self.wire_bytes += used as u64;
                if dec.received > self.limit {
                    return Err(HttpError::new(413, format!("request body larger than LimitRequestBody ({})", self.limit)));
                }
                if n > 0 {
                    return Ok(n);
                }
                if dec.is_done() {
                    return Ok(0);
                }
                if used > 0 && !self.rbuf.is_empty() {
                    continue;
                }
            }
            if self.expect_continue {
                self.expect_continue = false;
                let _ = (&*self.stream).write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            let left = clock.deadline().saturating_duration_since(Instant::now());
            if left.is_zero() || !wait_for(self.stream, PollFlags::POLLIN, left) {
                return Err(HttpError::new(408, clock.why()));
            }
            match read_onto(self.stream, self.rbuf, READ_CHUNK) {
                Ok(0) => return Err(HttpError::new(400, "connection closed in the middle of the request body")),
                Ok(n) => clock.received(n as u64, Instant::now()),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(HttpError::new(400, format!("error reading the request body: {e}"))),
            }
        }
    }
}

/// Runs the exchange and writes its response. Returns whether the response
/// went out whole; `ex` then says whether the connection may go on.
#[allow(clippy::too_many_arguments)]
pub fn serve(
    site: &Site,
    stream: &TcpStream,
    info: &ConnInfo,
    rbuf: &mut Vec<u8>,
    ex: &mut Exchange,
    (gw, spooled): (Box<Gateway>, Option<Spooled>),
    timeout: Duration,
    date: &mut DateCache,
    scratch: &mut Vec<u8>,
) -> bool {
    let (resp, wire_bytes, finished) = {
        let head = ex.head.as_ref().expect("a gateway request has a head");
        let mut body = match spooled {
            Some(s) => ClientBody::already_read(stream, rbuf, s, &site.settings),
            None => ClientBody::new(stream, rbuf, head, ex.body_limit, &site.settings),
        };
        let resp = catch_unwind(AssertUnwindSafe(|| site.run_gateway(gw, head, info, &mut body))).unwrap_or_else(|_| panic_response(site, head, info));
        (resp, body.wire_bytes, body.finished())
    };
    ex.bytes_received += wire_bytes;
    if !finished {
        // The rest of the body cannot be told from a next request.
        ex.keep_alive = false;
        ex.linger = true;
    }
    let mut out = Output::default();
    out.encode(ex, resp, site, date, scratch);
    if !out.write_all(stream, timeout) {
        return false;
    }
    let Some(mut st) = out.streaming.take() else { return true };
    // Read ahead of the client: the socket is written only as far as it
    // takes at once, the rest held in the spill, so the application is
    // read at its own pace and free once it has answered.
    let mut spill = (st.send && st.source.read_ahead()).then(Spill::default);
    let was_nonblocking = is_nonblocking(stream);
    if spill.is_some() && !was_nonblocking {
        let _ = stream.set_nonblocking(true);
    }
    let sent = relay_pieces(stream, &mut out, &mut st, &mut spill, ex, timeout);
    if spill.is_some() && !was_nonblocking {
        let _ = stream.set_nonblocking(false);
    }
    if !sent {
        return false;
    }
    if !st.send {
        return true;
    }
    if st.remaining.is_some_and(|left| left > 0) {
        site.error_log.error(Some(info.peer), "FastCGI: application sent less than its Content-Length; closing the connection");
        return false;
    }
    if st.chunked {
        out.queue.push_back(Chunk::Bytes(b"0\r\n\r\n".to_vec()));
        ex.bytes_sent += 5;
    }
    out.write_all(stream, timeout)
}

/// Relays the application's answer after its head; false if the client or
/// the application failed.
fn relay_pieces(stream: &TcpStream, out: &mut Output, st: &mut Streaming, spill: &mut Option<Spill>, ex: &mut Exchange, timeout: Duration) -> bool {
    let mut piece = Vec::new();
    loop {
        piece.clear();
        match st.source.next_piece(&mut piece) {
            Ok(true) => {
                if !st.send || piece.is_empty() {
                    continue;
                }
                if let Some(left) = st.remaining.as_mut() {
                    // Never more than the application announced.
                    piece.truncate((*left).min(piece.len() as u64) as usize);
                    *left -= piece.len() as u64;
                }
                let payload = piece.len() as u64;
                let framed = if st.chunked {
                    let mut f = Vec::with_capacity(piece.len() + 16);
                    warren_http::response::write_chunk(&mut f, &piece);
                    f
                } else {
                    std::mem::take(&mut piece)
                };
                ex.body_bytes += payload;
                ex.bytes_sent += framed.len() as u64;
                let written = match spill.as_mut().filter(|s| s.has_room()) {
                    Some(s) => {
                        s.queue(out, framed);
                        out.flush(stream).is_ok()
                    }
                    None => {
                        out.queue.push_back(Chunk::Bytes(framed));
                        out.write_all(stream, timeout)
                    }
                };
                if !written {
                    return false;
                }
            }
            // The application's end (its child is given back): what the
            // client has not taken yet goes out at its pace.
            Ok(false) => return true,
            // The application failed mid-body: closing tells the client the
            // body is incomplete, where an end would claim it whole.
            Err(_) => return false,
        }
    }
}

fn is_nonblocking(stream: &TcpStream) -> bool {
    nix::fcntl::fcntl(stream, nix::fcntl::FcntlArg::F_GETFL).is_ok_and(|f| nix::fcntl::OFlag::from_bits_truncate(f).contains(nix::fcntl::OFlag::O_NONBLOCK))
}
