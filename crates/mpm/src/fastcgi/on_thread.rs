//! A FastCGI exchange driven by a thread that owns the connection while it
//! lasts: a prefork child or worker thread in its own loop, or an event
//! child's worker thread, which then gives the connection back to the event
//! loop. The request body goes to the handler as it is read (a
//! [`ClientBody`]); the
//! response head goes out, then the application's output as it comes.

use crate::client_stream::ClientStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use warren_handler::fastcgi::Gateway;
use warren_handler::proxy_http::tunnel::TunnelPeer;
use warren_handler::spool::Spooled;
use warren_handler::{ConnInfo, Site};
use warren_http::h1::Connection;
use warren_http::h1::ShortBody;
use warren_http::{ConnRules, DateCache};

use crate::client_body::ClientBody;
use crate::exchange::{panic_response, Chunk, Exchange, Output, Streaming};
use crate::fastcgi::spill::Spill;

/// Runs the exchange and writes its response. Returns whether the response
/// went out whole; `ex` then says whether the connection may go on.
#[allow(clippy::too_many_arguments)]
pub fn serve(
    site: &Site,
    stream: &ClientStream,
    info: &ConnInfo,
    conn: &mut Connection,
    ex: &mut Exchange,
    (gw, spooled): (Box<Gateway>, Option<Spooled>),
    rules: &ConnRules,
    date: &mut DateCache,
    scratch: &mut Vec<u8>,
) -> bool {
    let (resp, wire_bytes, finished) = {
        let head = ex.head.as_ref().expect("a gateway request has a head");
        let mut body = match spooled {
            Some(s) => ClientBody::already_read(stream, conn, s),
            None => ClientBody::new(stream, conn, head, ex.body_limit),
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
    let mut resp = resp;
    let tunnel = resp.tunnel.take();
    let mut out = Output::default();
    out.encode(ex, resp, site, date, scratch);
    let timeout = rules.timeout;
    if !out.write_all(stream, timeout) {
        return false;
    }
    if let Some(tunnel) = tunnel {
        // The 101 is out: the connection is the WebSocket's until it ends,
        // carried by the event loop where there is one.
        if site.settings.mpm == warren_config::Mpm::Event {
            ex.tunnel = Some(tunnel);
        } else {
            tunnel.run(&mut TunnelClient(stream), std::mem::take(conn.input_mut()));
        }
        return true;
    }
    let Some(mut st) = out.streaming.take() else { return true };
    // Read ahead of the client: the socket is written only as far as it
    // takes at once, the rest held in the spill, so the application is
    // read at its own pace and free once it has answered.
    let mut spill = (st.framer.sends() && st.source.read_ahead()).then(Spill::default);
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
    if !st.framer.sends() {
        return true;
    }
    match st.framer.finish() {
        Err(ShortBody) => {
            site.error_log.error(Some(info.useragent), "FastCGI: application sent less than its Content-Length; closing the connection");
            false
        }
        Ok(last) => {
            if !last.is_empty() {
                out.queue.push_back(Chunk::Bytes(last.to_vec()));
                ex.bytes_sent += last.len() as u64;
            }
            // What a spill still holds goes out too.
            out.write_all(stream, timeout)
        }
    }
}

/// The client's end of a WebSocket tunnel.
pub(crate) struct TunnelClient<'a>(pub(crate) &'a ClientStream);

impl std::os::fd::AsFd for TunnelClient<'_> {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl TunnelPeer for TunnelClient<'_> {
    fn read_some(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }

    fn send_some(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.send(buf, false)
    }

    fn push(&mut self) -> std::io::Result<bool> {
        self.0.flush_pending()
    }

    fn close_write(&mut self) {
        self.0.shutdown_write();
    }
}

/// Relays the application's answer after its head; false if the client or
/// the application failed.
fn relay_pieces(stream: &ClientStream, out: &mut Output, st: &mut Streaming, spill: &mut Option<Spill>, ex: &mut Exchange, timeout: Duration) -> bool {
    let mut piece = Vec::new();
    loop {
        piece.clear();
        match st.source.next_piece(&mut piece) {
            Ok(true) => {
                let (payload, framed) = st.framer.frame(std::mem::take(&mut piece));
                if framed.is_empty() {
                    continue;
                }
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

fn is_nonblocking(stream: &ClientStream) -> bool {
    nix::fcntl::fcntl(stream, nix::fcntl::FcntlArg::F_GETFL).is_ok_and(|f| nix::fcntl::OFlag::from_bits_truncate(f).contains(nix::fcntl::OFlag::O_NONBLOCK))
}
