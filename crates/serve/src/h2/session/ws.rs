//! WebSockets over HTTP/2 (RFC 8441), a stream's side. The codec gives an
//! extended CONNECT for `websocket` as the HTTP/1.1 upgrade request it
//! stands for; it is routed and proxied like one, and the backend's 101
//! (its Sec-WebSocket-Accept checked by the proxy) becomes the stream's
//! 200. From then on the stream's DATA is the tunnel's, both ways:
//! - client to backend: DATA waits in [`WsStream`] until the backend has
//!   taken it, and only then is credited back to the client, so a backend
//!   that reads slowly closes the client's window;
//! - backend to client: read only as far as the stream's send window (and
//!   the connection's output) has room, so a client that reads slowly
//!   leaves the backend's bytes in its socket;
//! - the client's END_STREAM is the backend's half-close (shutdown for
//!   writing), the backend's end is END_STREAM; a failure either side is
//!   RST_STREAM (CONNECT_ERROR toward the client, RFC 9113 §8.5), and a
//!   client's RST_STREAM closes the backend.
//!
//! What the socket side needs (waiting on the backend, its idle limit) is
//! the driver's: the event loop's `h2_ws`, or the thread's
//! `h2::blocking_ws` under prefork and worker; the protocol is here alone.

use std::io;

use warren_handler::proxy_http::tunnel::{End, Tunnel, TunnelPeer};
use warren_handler::Response;
use warren_http::h2::ErrorCode;

use super::{Ctx, Session, State, Stream, OUTPUT_AHEAD, TURN};

/// The client's side of an RFC 8441 stream.
#[derive(Default)]
pub struct WsStream {
    /// DATA the backend has not taken yet (at most the stream's window).
    to_backend: Vec<u8>,
    /// The client sent END_STREAM.
    client_ended: bool,
    /// That end was passed on to the backend.
    backend_shut: bool,
    /// The backend's side holds bytes taken that it could not push out
    /// yet (its TLS records): it is to be waited on for writing.
    backend_held: bool,
}

/// What is known of a tunnel backend's socket for reading. The event loop
/// is told by edge-triggered events, and reads only after one, until a
/// read finds the socket drained (a short read of a plain socket, unless
/// the event said the backend closed: its end is read too), so that a
/// message costs no read that finds nothing, and a pass made for the
/// client's side (DATA, credit) reads no backend that did not move. A
/// thread polling the socket reads until WouldBlock ([`BackendReadiness::unknown`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendReadiness {
    /// Something may be there to read.
    pub readable: bool,
    /// The backend closed or failed: read until the end shows.
    pub ended: bool,
}

impl BackendReadiness {
    /// Nothing told: read until WouldBlock.
    pub fn unknown() -> BackendReadiness {
        BackendReadiness { readable: true, ended: true }
    }

    /// An event came for the backend's socket.
    pub fn told(&mut self, readable: bool, ended: bool) {
        self.readable |= readable || ended;
        self.ended |= ended;
    }

    /// Reads the backend into `buf` if it may have something: Ok(None)
    /// when it has not (it is then not read before the next event).
    fn read(&mut self, backend: &mut dyn TunnelPeer, buf: &mut [u8]) -> io::Result<Option<usize>> {
        if !self.readable {
            return Ok(None);
        }
        match backend.read_some(buf) {
            Ok(n) => {
                if n > 0 && n < buf.len() && !self.ended && backend.drained_by_short_read() {
                    self.readable = false;
                }
                Ok(Some(n))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.readable = false;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// A stream's response when it is not the tunnel's: a backend (or any
/// other handler) that answered the WebSocket request with a success but
/// did not switch protocols is no WebSocket endpoint, and the client must
/// not take its answer for an open tunnel: 502, as mod_http2 answers
/// (h2_ws.c); errors and redirects go as they are.
pub(super) fn not_a_tunnel(ctx: &mut Ctx, s: &Stream, resp: Response) -> Response {
    if s.ws.is_none() || !(resp.status == 101 || (200..300).contains(&resp.status)) {
        return resp;
    }
    let path = s.ex.head.as_ref().map(|h| String::from_utf8_lossy(h.path_and_query()).into_owned()).unwrap_or_default();
    ctx.site.protocol_error(502, &s.info, &format!("HTTP/2 WebSocket: {path} answered {} without a WebSocket tunnel (no WebSocket backend there)", resp.status))
}

impl Session {
    /// DATA for an RFC 8441 stream: kept for the backend, not credited
    /// back yet. False if `id` is not such a stream.
    pub(super) fn tunnel_data(&mut self, id: u32, data: &[u8], end: bool) -> bool {
        let Some(s) = self.stream_mut(id) else { return false };
        let Some(ws) = s.ws.as_mut() else { return false };
        ws.to_backend.extend_from_slice(data);
        ws.client_ended |= end;
        s.moved = std::time::Instant::now();
        true
    }

    /// Whether the driver carries a tunnel for this connection (its
    /// stream may be gone already: a client's RST_STREAM).
    pub fn has_tunnels(&self) -> bool {
        self.tunnels > 0
    }

    /// A stream's work came back with the backend's 101 (`resp.tunnel`):
    /// the stream gets its 200, and the driver carries the tunnel, with
    /// what the backend sent after its 101 (for the client). None when it
    /// cannot open (the stream was reset meanwhile, it is no RFC 8441
    /// stream, the backend's socket failed): the stream is reset and
    /// logged, the tunnel's end logged.
    pub fn accept_tunnel(&mut self, ctx: &mut Ctx, id: u32, mut resp: Response) -> Option<(Tunnel, Vec<u8>)> {
        let mut tunnel = *resp.tunnel.take()?;
        let early = match tunnel.for_stream() {
            Ok(early) => early,
            Err(e) => {
                let end = End::Failed("setting up", e);
                self.end_tunnel(ctx, id, &end, false);
                tunnel.finish(end);
                return None;
            }
        };
        if !self.open_tunnel(ctx, id, resp) {
            // The client reset the stream meanwhile, or it is no RFC 8441
            // stream: an HTTP/1.1 WebSocket handshake brought up by
            // `Upgrade: h2c, websocket` as stream 1, which HTTP/2 cannot
            // answer with a 101. Reset, not left waiting with its connection.
            let end = End::Failed("opening", io::Error::other("the stream is not an RFC 8441 extended CONNECT"));
            self.end_tunnel(ctx, id, &end, false);
            tunnel.finish(end);
            return None;
        }
        Some((tunnel, early))
    }

    /// What the tunnel of stream `id` waits for on its backend's socket:
    /// (readable, writable). Readable only while its bytes could go on to
    /// the client (the stream's window and the connection's output have
    /// room), so that a thread polling it does not wake for bytes it must
    /// leave there.
    pub fn tunnel_wants(&self, id: u32) -> (bool, bool) {
        let Some(s) = self.streams.iter().find(|s| s.id == id && matches!(s.state, State::Tunnel)) else { return (false, false) };
        let ws = s.ws.as_ref().expect("a tunnel stream is a WebSocket stream");
        let read = self.codec.send_window(id) > 0 && self.codec.output().len() < OUTPUT_AHEAD;
        (read, !ws.to_backend.is_empty() || ws.backend_held)
    }

    /// The backend switched protocols for stream `id`: its 200 goes (the
    /// fields of the 101 that only HTTP/1.1 has left out), and the stream
    /// becomes a tunnel. False if the stream is gone or is no WebSocket
    /// stream: the caller drops the backend.
    pub fn open_tunnel(&mut self, ctx: &mut Ctx, id: u32, resp: Response) -> bool {
        let Some(s) = self.streams.iter_mut().find(|s| s.id == id) else { return false };
        if s.ws.is_none() || !matches!(s.state, State::Working) {
            return false;
        }
        let date = ctx.date.now().to_owned();
        let mut fields: Vec<(&str, &str)> = vec![("date", &date), ("server", &ctx.site.server_header)];
        // Connection and Upgrade are dropped by the codec (hop-by-hop).
        fields.extend(resp.headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("sec-websocket-accept")).map(|(n, v)| (&**n, v.as_str())));
        self.codec.send_headers(id, 200, &fields, false);
        let head_size: u64 = fields.iter().map(|(n, v)| (n.len() + v.len() + 4) as u64).sum::<u64>() + 13;
        drop(fields);
        s.ex.bytes_sent = head_size;
        s.ex.record(200, resp.host, resp.filename, resp.headers, resp.filters);
        s.state = State::Tunnel;
        self.tunnels += 1;
        true
    }

    /// Moves what can move now between stream `id` and its backend, with
    /// `early` (what the backend sent with its 101) going first and
    /// `chunk` as the read buffer; the backend is read as `ready` says.
    /// Ok(true) if a byte moved; Err when the
    /// tunnel is over (the caller then calls [`Session::end_tunnel`]).
    pub fn pump_tunnel(&mut self, id: u32, backend: &mut dyn TunnelPeer, ready: &mut BackendReadiness, early: &mut Vec<u8>, chunk: &mut [u8]) -> Result<bool, End> {
        let Some(i) = self.streams.iter().position(|s| s.id == id && matches!(s.state, State::Tunnel)) else {
            return Err(End::Closed("client (RST_STREAM)"));
        };
        let mut moved = false;
        let s = &mut self.streams[i];
        let ws = s.ws.as_mut().expect("a tunnel stream is a WebSocket stream");
        // A CONNECT whose HEADERS ended the stream brings no DATA to say so.
        ws.client_ended |= !self.codec.receiving(id);
        let mut written = 0;
        while written < ws.to_backend.len() {
            match backend.send_some(&ws.to_backend[written..]) {
                Ok(0) => return Err(End::Failed("writing to the backend", io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(End::Failed("writing to the backend", e)),
            }
        }
        let held = !backend.push().map_err(|e| End::Failed("writing to the backend", e))?;
        ws.backend_held = held;
        if written > 0 {
            ws.to_backend.drain(..written);
            if ws.to_backend.is_empty() {
                ws.to_backend = Vec::new();
            }
            s.ex.bytes_received += written as u64;
            moved = true;
        }
        if ws.to_backend.is_empty() && !held && ws.client_ended && !ws.backend_shut {
            ws.backend_shut = true;
            backend.close_write();
            moved = true;
        }
        let client_ended = ws.backend_shut;
        if written > 0 {
            // Credit only for what the backend took: its pace is the client's.
            self.codec.consumed(id, written);
        }
        let mut sent = 0u64;
        let result = loop {
            let room = self.codec.send_window(id).min(TURN).min(chunk.len());
            if room == 0 || self.codec.output().len() >= OUTPUT_AHEAD {
                break Ok(());
            }
            if !early.is_empty() {
                let n = self.codec.send_data(id, &early[..room.min(early.len())], false);
                early.drain(..n);
                sent += n as u64;
                continue;
            }
            match ready.read(backend, &mut chunk[..room]) {
                Ok(None) => break Ok(()),
                Ok(Some(0)) => {
                    self.codec.send_data(id, &[], true);
                    break Err(End::Closed(if client_ended { "client" } else { "backend" }));
                }
                Ok(Some(n)) => sent += self.codec.send_data(id, &chunk[..n], false) as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(End::Failed("reading from the backend", e)),
            }
        };
        let s = &mut self.streams[i];
        if sent > 0 {
            s.ex.body_bytes += sent;
            s.ex.bytes_sent += sent;
            moved = true;
        }
        if moved {
            s.moved = std::time::Instant::now();
        }
        result.map(|_| moved)
    }

    /// The tunnel of stream `id` is over: the stream is reset unless it
    /// ended cleanly (CONNECT_ERROR for a backend that failed, CANCEL when
    /// idle or stopping), and logged.
    /// `opened`: the tunnel had been opened ([`Session::open_tunnel`]).
    pub fn end_tunnel(&mut self, ctx: &mut Ctx, id: u32, end: &End, opened: bool) {
        if opened {
            self.tunnels = self.tunnels.saturating_sub(1);
        }
        let code = match end {
            End::Closed(_) => None,
            End::Failed(..) => Some(ErrorCode::Connect),
            End::Idle | End::Stopped => Some(ErrorCode::Cancel),
        };
        if let Some(code) = code {
            self.codec.reset(id, code);
        }
        if self.stream_mut(id).is_some() {
            self.finish_stream(ctx, id, code.is_some());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::{AsFd, BorrowedFd};
    use std::os::unix::net::UnixStream;

    use super::*;

    /// A backend's socket whose reads are counted.
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

    /// Reads as a pass does: until the readiness says nothing more is there.
    fn pass(ready: &mut BackendReadiness, backend: &mut Counted) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while let Some(n) = ready.read(backend, &mut buf).unwrap() {
            if n == 0 {
                got.extend_from_slice(b"<end>");
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    }

    #[test]
    fn a_backend_is_read_after_its_event_until_a_short_read() {
        let (near, mut far) = UnixStream::pair().unwrap();
        near.set_nonblocking(true).unwrap();
        let mut backend = Counted { sock: near, reads: 0 };
        // Opened: read until drained (here, at once: WouldBlock).
        let mut ready = BackendReadiness { readable: true, ended: false };
        assert_eq!(pass(&mut ready, &mut backend), b"");
        // A message not told of: a pass for the client's side reads nothing.
        far.write_all(b"message").unwrap();
        backend.reads = 0;
        assert_eq!(pass(&mut ready, &mut backend), b"");
        assert_eq!(backend.reads, 0);
        // Told: one read takes it, and no second one finds nothing.
        ready.told(true, false);
        assert_eq!(pass(&mut ready, &mut backend), b"message");
        assert_eq!(backend.reads, 1);
        // More than a read takes: read on until a short one.
        far.write_all(&[b'x'; 100]).unwrap();
        ready.told(true, false);
        backend.reads = 0;
        assert_eq!(pass(&mut ready, &mut backend).len(), 100);
        assert_eq!(backend.reads, 2);
        // Data and the end in one event: the end behind the data is read too.
        far.write_all(b"last").unwrap();
        drop(far);
        ready.told(true, true);
        assert_eq!(pass(&mut ready, &mut backend), b"last<end>");
    }

    #[test]
    fn unknown_readiness_reads_until_wouldblock() {
        let (near, mut far) = UnixStream::pair().unwrap();
        near.set_nonblocking(true).unwrap();
        let mut backend = Counted { sock: near, reads: 0 };
        far.write_all(b"message").unwrap();
        let mut ready = BackendReadiness::unknown();
        assert_eq!(pass(&mut ready, &mut backend), b"message");
        assert_eq!(backend.reads, 2, "a thread polling the socket reads until WouldBlock");
    }
}
