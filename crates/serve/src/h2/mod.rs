//! HTTP/2 connections in every MPM. The protocol is `warren_http::h2`'s
//! codec; here is what a server does with it:
//! - [`session`]: a connection's streams: requests to the handler, the
//!   answers back as frames within the flow-control windows, the access log.
//! - [`body_plan`]: a response body given out a piece at a time.
//! - [`blocking`]: a connection served by one thread (prefork, worker),
//!   its streams one after another, as Apache's mod_http2 does there;
//!   [`blocking_ws`]: its RFC 8441 tunnels, polled beside its socket;
//!   [`blocking_upload`]: a body relayed to an HTTP backend as it comes.
//!
//! The event loop's driver is `crate::event::h2`: an idle HTTP/2
//! connection costs no thread, and blocking work (FastCGI, listings) runs
//! on the loop's worker threads.

pub mod blocking;
pub mod blocking_upload;
pub mod blocking_ws;
pub mod body_plan;
pub mod session;

use std::io;

use warren_config::h2::H2Settings;
use warren_http::h2::{Connection, H2Limits};
use warren_http::{ConnRules, RequestHead, Version};

use crate::client_stream::ClientStream;

/// The codec's limits from the configuration: mod_http2's directives (the
/// listener's, its default host's), and the request limits every request
/// has.
pub fn limits(h2: &H2Settings, rules: &ConnRules) -> H2Limits {
    H2Limits {
        max_concurrent_streams: h2.max_session_streams,
        initial_window: h2.window_size,
        // Enough for a whole window of each of a few streams at once.
        connection_window: h2.window_size.saturating_mul(4).clamp(65_535, 1 << 24),
        max_frame_size: 16_384,
        header_table_size: 4096,
        head: rules.limits,
        // RFC 8441: every driver carries the tunnels (the event loop, a
        // thread with `blocking_ws`).
        extended_connect: h2.websockets,
    }
}

/// The HTTP/2 settings of a connection's listener.
pub fn settings(stream: &ClientStream) -> H2Settings {
    stream.h2().map(|p| p.settings.clone()).unwrap_or_default()
}

/// The session of a connection that opens in HTTP/2 (`upgraded`: the
/// codec and request of one upgraded from HTTP/1.1, whose 101 has been
/// sent), with the work its first request needs.
pub fn session(stream: &ClientStream, rules: &ConnRules, info: warren_handler::ConnInfo, upgraded: Option<(Connection, RequestHead)>, ctx: &mut session::Ctx, tasks: &mut Vec<session::Task>) -> session::Session {
    let h2 = settings(stream);
    match upgraded {
        Some((codec, head)) => {
            let mut s = session::Session::new(codec, info, h2.max_data_frame_len);
            s.start_upgraded(ctx, head, tasks);
            s
        }
        None => session::Session::new(Connection::new(limits(&h2, rules)), info, h2.max_data_frame_len),
    }
}

/// How long a stream may wait on its client (H2StreamTimeout, else Timeout).
pub fn stream_timeout(stream: &ClientStream, rules: &ConnRules) -> std::time::Duration {
    stream.h2().and_then(|p| p.settings.stream_timeout).unwrap_or(rules.timeout)
}

/// Writes what the codec has queued, as far as the socket takes it now.
/// Ok(true): all of it is out (over TLS, its records too).
pub fn write_output(stream: &ClientStream, codec: &mut Connection) -> io::Result<bool> {
    loop {
        let out = codec.output();
        if out.is_empty() {
            return stream.flush_pending();
        }
        match stream.send(out, false) {
            Ok(n) => codec.written(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether a new connection speaks HTTP/2 (Some(true)), HTTP/1.x
/// (Some(false)), or cannot tell yet (None), from its ALPN over TLS (RFC
/// 9113 §3.2: no prior knowledge there) or its first bytes in cleartext.
pub fn detect(stream: &ClientStream, input: &[u8]) -> Option<bool> {
    if stream.is_tls() {
        if stream.alpn_h2() {
            return Some(true);
        }
        // Plaintext has arrived, so the handshake is done, without h2.
        return if input.is_empty() { None } else { Some(false) };
    }
    match stream.h2() {
        // Whatever comes is HTTP/2's to judge: a wrong preface is its
        // protocol error (GOAWAY), not a bad HTTP/1.1 request.
        Some(p) if p.h2c_only => Some(true),
        Some(p) if p.h2c_direct => warren_http::h2::starts_with_preface(input),
        _ => Some(false),
    }
}

/// What a server that takes up `Upgrade: h2c` answers first.
pub const SWITCHING: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// The codec for a request that asks to go on in HTTP/2 (`Upgrade: h2c`
/// with its HTTP2-Settings, RFC 7540 §3.2), when the server takes it up:
/// cleartext only, h2c on, and no body or pipelined request to carry over
/// (mod_http2 also upgrades only requests without a body). The request is
/// then stream 1.
pub fn upgrade(rules: &ConnRules, stream: &ClientStream, head: &RequestHead, pipelined: &[u8]) -> Option<Connection> {
    let plan = stream.h2().filter(|p| p.h2c_upgrade && !p.tls)?;
    if stream.is_tls() || head.version != Version::Http11 || head.has_body() || !pipelined.is_empty() {
        return None;
    }
    let has_token = |field: &str, token: &str| head.header(field).is_some_and(|v| v.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes())));
    if !has_token("upgrade", "h2c") || !has_token("connection", "upgrade") || !has_token("connection", "http2-settings") {
        return None;
    }
    let settings = head.header("http2-settings")?;
    Connection::upgraded(limits(&plan.settings, rules), settings).ok()
}
