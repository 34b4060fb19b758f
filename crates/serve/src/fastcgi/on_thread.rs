//! A FastCGI exchange driven by a thread that owns the connection while it
//! lasts: a prefork child or worker thread in its own loop, or an event
//! child's worker thread, which then gives the connection back to the event
//! loop. The request body goes to the handler as it is read (a
//! [`ClientBody`]); the
//! response head goes out, then the application's output as it comes.

use crate::client_stream::ClientStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use warren_handler::fastcgi::ResponseSink;
use warren_handler::gateway::Gateway;
use warren_handler::proxy_http::tunnel::TunnelPeer;
use warren_handler::spool::Spooled;
use warren_handler::{BodySource, ConnInfo, Site};
use warren_http::h1::Connection;
use warren_http::{ConnRules, DateCache};

use crate::client_body::ClientBody;
use crate::exchange::{panic_response, Exchange, Output, Streaming};
use crate::fastcgi::sink::{BodyFraming, H1Sink};
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
    let Some(Streaming { mut source, framer }) = out.streaming.take() else { return true };
    // Read ahead of the client: the socket is written only as far as it
    // takes at once, the rest held in the spill, so the application is
    // read at its own pace and free once it has answered. The source
    // compresses, if the answer is compressed.
    let spill = (framer.sends() && source.read_ahead()).then(Spill::default);
    let mut framing = BodyFraming { framer, spill, encoder: None };
    let was_nonblocking = is_nonblocking(stream);
    let read_ahead = framing.spill.is_some();
    if read_ahead && !was_nonblocking {
        let _ = stream.set_nonblocking(true);
    }
    let sent = relay_pieces(stream, &mut out, source.as_mut(), &mut framing, ex, timeout);
    if read_ahead && !was_nonblocking {
        let _ = stream.set_nonblocking(false);
    }
    if !sent {
        return false;
    }
    if !framing.framer.sends() {
        return true;
    }
    match (H1Sink { out: &mut out, framing: &mut framing, ex }).end() {
        Err(why) => {
            site.error_log.error(Some(info.useragent), &format!("FastCGI: {why}; closing the connection"));
            false
        }
        // What a spill still holds goes out too.
        Ok(()) => out.write_all(stream, timeout),
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

    fn drained_by_short_read(&self) -> bool {
        // The client's reads fill what they are given as far as the socket
        // allows, over TLS too, unless plaintext is left over.
        !self.0.has_buffered_input()
    }
}

/// Relays the application's answer after its head through the HTTP/1.1
/// writer; false if the client or the application failed.
fn relay_pieces(stream: &ClientStream, out: &mut Output, source: &mut dyn BodySource, framing: &mut BodyFraming, ex: &mut Exchange, timeout: Duration) -> bool {
    let mut piece = Vec::new();
    loop {
        piece.clear();
        match source.next_piece(&mut piece) {
            Ok(true) => {
                if !framing.framer.sends() || piece.is_empty() {
                    continue;
                }
                let read_ahead = framing.spill.as_ref().is_some_and(Spill::has_room);
                H1Sink { out, framing, ex }.data(std::mem::take(&mut piece));
                let written = if read_ahead { out.flush(stream).is_ok() } else { out.write_all(stream, timeout) };
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
