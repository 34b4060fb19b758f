//! One request/response exchange on a connection, shared by every MPM:
//! what is known of the request ([`Exchange`]), the encoding of a response
//! plan into bytes and file ranges ([`Output`]), writing them (non-blocking
//! or blocking, the same code), and the access log line.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use crate::client_stream::ClientStream;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use warren_config::{ReadStage, Settings};
use warren_handler::logs::LogRecord;
use warren_handler::site::LogWriters;
use warren_handler::{Body, BodySource, ConnInfo, Part, Request, Response, Site};
use warren_http::h1::{write_response_head, BodyFramer, BodyLength, ResponseHead};
use warren_http::conn::declared_body_within;
use warren_http::{BodyFraming, ConnRules, DateCache, HeadLimits, HttpError, KeepAlivePolicy, ReadTimeout, RequestHead};

use warren_mpm::scoreboard::ThreadSlot;

/// Bodies up to this size are copied after the head, so that head and body
/// leave in one write; larger ones go by sendfile.
pub const INLINE_BODY: u64 = 32 * 1024;

/// The connection rules of the settings: LimitRequestLine,
/// LimitRequestFieldSize, LimitRequestFields, LimitRequestHeadSize,
/// KeepAlive, MaxKeepAliveRequests, KeepAliveTimeout, Timeout and
/// RequestReadTimeout.
pub fn conn_rules(s: &Settings) -> ConnRules {
    let read_timeout = |stage: ReadStage| ReadTimeout { initial: stage.initial, max: stage.max, min_rate: stage.min_rate };
    ConnRules {
        limits: HeadLimits { request_line: s.limits.request_line, field_size: s.limits.field_size, fields: s.limits.fields, head: s.limits.head },
        keep_alive: KeepAlivePolicy { enabled: s.keep_alive, max_requests: s.max_keep_alive_requests, timeout: s.keep_alive_timeout },
        timeout: s.timeout,
        head_timeout: read_timeout(s.request_read_timeout.header),
        body_timeout: read_timeout(s.request_read_timeout.body),
    }
}

/// The 500 for a handler that panicked, and its error-log line.
pub fn panic_response(site: &Site, head: &RequestHead, info: &ConnInfo) -> Response {
    site.error_log.error(Some(info.useragent), "handler panicked; answering 500");
    site.error_page_now(site.error_page(Request::new(head, info, 0), 500), head, info)
}

/// Waits until the socket is ready for `what`, at most `wait`. A signal
/// (graceful stop, log reopening) does not cut the wait short.
pub fn wait_for(stream: &ClientStream, what: PollFlags, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    if what.contains(PollFlags::POLLIN) && stream.has_buffered_input() {
        return true;
    }
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut fds = [PollFd::new(stream.as_fd(), what)];
        match poll(&mut fds, PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)) {
            Ok(n) => return n > 0,
            Err(nix::errno::Errno::EINTR) if Instant::now() < until => continue,
            Err(_) => return false,
        }
    }
}

/// Reads what the connection has onto the end of `buf`, straight into its
/// spare room: a buffer on a thread's stack would stay resident for the
/// thread's life (a worker child has dozens of threads).
pub fn read_onto(stream: &ClientStream, buf: &mut Vec<u8>, chunk: usize) -> io::Result<usize> {
    let old = buf.len();
    buf.resize(old + chunk, 0);
    let got = stream.read(&mut buf[old..]);
    buf.truncate(old + *got.as_ref().unwrap_or(&0));
    got
}

/// A response body produced while it is sent, and how it is framed.
pub struct Streaming {
    pub source: Box<dyn BodySource>,
    pub framer: BodyFramer,
}

/// What remains to be sent after the write buffer.
pub enum Chunk {
    Bytes(Vec<u8>),
    File { file: Arc<File>, offset: u64, len: u64 },
    /// The body could not be completed (the file shrank): close, do not
    /// let the client take a short body for a whole one.
    Broken,
}

/// The request being served on a connection, and what its response was.
pub struct Exchange {
    pub head: Option<RequestHead>,
    pub started: SystemTime,
    pub start: Instant,
    pub keep_alive: bool,
    pub status: u16,
    pub body_bytes: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub host: usize,
    pub filename: Option<PathBuf>,
    pub headers: Vec<(warren_handler::HeaderName, String)>,
    /// The request environment, for `%{VAR}e` and `CustomLog ... env=`.
    pub env: Option<warren_handler::env::RequestEnv>,
    /// LimitRequestBody for this request (u64::MAX: unlimited).
    pub body_limit: u64,
    /// Close after the response, draining input first (it may hold unread body).
    pub linger: bool,
    /// For requests that never parsed: the start of what was received.
    pub raw_line: Vec<u8>,
    /// A WebSocket tunnel whose 101 went out, for the event loop to carry
    /// (a worker thread hands it back rather than holding it).
    pub tunnel: Option<Box<warren_handler::proxy_http::tunnel::Tunnel>>,
}

impl Exchange {
    pub fn new(head: Option<RequestHead>, keep_alive: bool, bytes_received: u64) -> Exchange {
        Exchange {
            head,
            started: SystemTime::now(),
            start: Instant::now(),
            keep_alive,
            status: 0,
            body_bytes: 0,
            bytes_sent: 0,
            bytes_received,
            host: 0,
            filename: None,
            headers: Vec::new(),
            env: None,
            body_limit: u64::MAX,
            linger: false,
            raw_line: Vec::new(),
            tunnel: None,
        }
    }

    /// For input that did not parse: the exchange (answered, then closed)
    /// and its error response, logged with the start of what was received.
    pub fn for_protocol_error(input: &[u8], e: &HttpError, site: &Site, info: &ConnInfo) -> (Exchange, Response) {
        let line_end = input.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(input.len()).min(512);
        let mut ex = Exchange::new(None, false, input.len() as u64);
        ex.linger = true;
        ex.raw_line = input[..line_end].to_vec();
        let why = format!("{}: {}", e.reason, String::from_utf8_lossy(&ex.raw_line));
        let resp = site.protocol_error(e.status, info, &why);
        (ex, resp)
    }

    /// The error response for a request whose body could not be read (bad
    /// framing, too large, too slow). What is left of the body cannot be told
    /// from a next request, so the connection closes after it, draining first.
    pub fn body_error(&mut self, e: &HttpError, site: &Site, info: &ConnInfo) -> Response {
        self.keep_alive = false;
        self.linger = true;
        let head = self.head.as_ref().expect("a body belongs to a parsed request");
        let req = site.request(head, info);
        let mut r = site.error_page_now(site.error(req, e.status, &e.reason), head, info);
        if r.filters.is_none() {
            r.filters = site.host_filters(req, head.path_and_query());
        }
        r
    }

    /// Sets LimitRequestBody for the request's body, if it has one, and
    /// checks a declared length against it before anything is read.
    pub fn apply_body_limit(&mut self, site: &Site, info: &ConnInfo) -> Result<(), HttpError> {
        let head = self.head.as_ref().expect("a body belongs to a parsed request");
        if head.framing == BodyFraming::None {
            return Ok(());
        }
        self.body_limit = site.body_limit(head, info);
        declared_body_within(head.framing, self.body_limit)
    }

    /// The stages every answer passes last, whoever made it and whatever
    /// protocol carries it: the response filters (mod_expires,
    /// mod_headers), then compression, as mod_deflate's filter comes after
    /// mod_headers.
    pub fn last_filters(&self, resp: Response, site: &Site) -> Response {
        last_filters(resp, self.head.as_ref(), warren_handler::filters::Timing { received: self.started, start: self.start }, site)
    }

    /// Keeps what the access log needs of the response.
    pub fn record(&mut self, status: u16, host: usize, filename: Option<PathBuf>, headers: Vec<(warren_handler::HeaderName, String)>, filters: Option<Box<warren_handler::filters::RequestFilters>>) {
        self.status = status;
        self.host = host;
        self.filename = filename;
        self.headers = headers;
        self.env = filters.map(|f| f.env).filter(|e| !e.is_empty());
    }

    /// Shows the request in the thread's scoreboard slot (ExtendedStatus On).
    pub fn note_start(&self, slot: &ThreadSlot, site: &Site, info: &ConnInfo) {
        if let (true, Some(head)) = (site.settings.extended_status, self.head.as_ref()) {
            let vhost = &site.hosts[site.select_host(head.host(), info.local)].name;
            slot.begin_request(&info.useragent.ip().to_string(), vhost, head.request_line());
        }
    }

    pub fn log(&self, logs: &mut LogWriters, site: &Site, info: &ConnInfo, served: u32, aborted: bool) {
        if logs.is_empty() || self.status == 0 {
            return;
        }
        let host = self.host.min(site.hosts.len() - 1);
        let record = LogRecord {
            peer: info.peer,
            useragent: info.useragent,
            local: info.local,
            head: self.head.as_ref(),
            raw_line: &self.raw_line,
            status: self.status,
            body_bytes: self.body_bytes,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            started: self.started,
            duration: self.start.elapsed(),
            server_name: &site.hosts[host].name,
            keepalive_count: served.saturating_sub(1),
            kept_alive: self.keep_alive && !aborted,
            aborted,
            filename: self.filename.as_deref(),
            response_headers: &self.headers,
            env: self.env.as_ref(),
            tls: info.tls,
            sni_name: info.tls.and_then(|t| t.sni_host).map(|h| site.hosts[h].name.as_str()),
        };
        logs.write(self.host, &record);
    }
}

/// [`Exchange::last_filters`] for a request whose exchange is elsewhere
/// (an HTTP/2 stream's answer finished on a worker thread).
pub fn last_filters(mut resp: Response, head: Option<&RequestHead>, timing: warren_handler::filters::Timing, site: &Site) -> Response {
    if resp.filters.is_some() {
        warren_handler::filters::apply(&mut resp, head, timing);
    }
    warren_handler::compress::finish(site, head, resp)
}

/// Bytes and file ranges waiting to be written.
#[derive(Default)]
pub struct Output {
    pub wbuf: Vec<u8>,
    pub wpos: usize,
    pub queue: VecDeque<Chunk>,
    /// A streamed body, sent after the rest by whoever can block for it.
    pub streaming: Option<Streaming>,
}

impl Output {
    pub fn is_empty(&self) -> bool {
        self.wpos >= self.wbuf.len() && self.queue.is_empty()
    }

    /// Bytes waiting in memory (not in files) to be written.
    pub fn pending_in_memory(&self) -> u64 {
        let queued: u64 = self.queue.iter().map(|c| if let Chunk::Bytes(b) = c { b.len() as u64 } else { 0 }).sum();
        (self.wbuf.len() - self.wpos.min(self.wbuf.len())) as u64 + queued
    }

    /// Bytes waiting to be written.
    pub fn pending(&self) -> u64 {
        let queued: u64 = self
            .queue
            .iter()
            .map(|c| match c {
                Chunk::Bytes(b) => b.len() as u64,
                Chunk::File { len, .. } => *len,
                Chunk::Broken => 0,
            })
            .sum();
        (self.wbuf.len() - self.wpos.min(self.wbuf.len())) as u64 + queued
    }

    /// Encodes `resp` for the exchange into `scratch` and takes it over.
    /// Date, Server, Content-Length and Connection are written here.
    pub fn encode(&mut self, ex: &mut Exchange, resp: Response, site: &Site, date: &mut DateCache, scratch: &mut Vec<u8>) {
        let resp = ex.last_filters(resp, site);
        if resp.close {
            ex.keep_alive = false;
        }
        let out = scratch;
        out.clear();
        let len = resp.body.len();
        let body = match &resp.body {
            Body::Stream { len: None, .. } => BodyLength::Unknown,
            _ => BodyLength::Known(len),
        };
        let head = ResponseHead { status: resp.status, date: date.now(), server: &site.server_header, body };
        let fields = resp.headers.iter().map(|(name, value)| (name.as_ref(), value.as_str()));
        let framing = write_response_head(out, &head, fields, ex.head.as_ref(), ex.keep_alive);
        ex.keep_alive = framing.keep_alive;
        let head_len = out.len() as u64;
        let mut sent_body = 0;
        if let Body::Stream { source, len } = resp.body {
            // Counted in bytes_sent as it goes out.
            self.streaming = Some(Streaming { source, framer: BodyFramer::new(framing, len) });
        } else if framing.with_body {
            sent_body = len;
            match resp.body {
                Body::Empty => {}
                Body::Bytes(b) => out.extend_from_slice(&b),
                Body::Shared(b) => out.extend_from_slice(&b),
                Body::File { file, start, len } if len <= INLINE_BODY => {
                    let at = out.len();
                    out.resize(at + len as usize, 0);
                    if file.read_exact_at(&mut out[at..], start).is_err() {
                        out.truncate(at);
                        self.queue.push_back(Chunk::Broken);
                    }
                }
                Body::File { file, start, len } => self.queue.push_back(Chunk::File { file, offset: start, len }),
                Body::Parts { file, parts } => {
                    for p in parts {
                        self.queue.push_back(match p {
                            Part::Bytes(b) => Chunk::Bytes(b),
                            Part::FileRange { start, len } => Chunk::File { file: file.clone(), offset: start, len },
                        });
                    }
                }
                Body::Stream { .. } => unreachable!("taken above"),
            }
        }
        ex.body_bytes = sent_body;
        ex.bytes_sent = head_len + sent_body;
        ex.record(resp.status, resp.host, resp.filename, resp.headers, resp.filters);
        // What has not gone yet (an interim answer) stays ahead of the head.
        self.wbuf.drain(..self.wpos.min(self.wbuf.len()));
        self.wbuf.extend_from_slice(out);
        self.wpos = 0;
    }

    /// An interim (1xx) answer, to go out ahead of the response's head.
    pub fn interim(&mut self, bytes: &[u8]) {
        self.wbuf.drain(..self.wpos.min(self.wbuf.len()));
        self.wpos = 0;
        self.wbuf.extend_from_slice(bytes);
    }

    /// Writes what is pending. Ok(true): all sent; Ok(false): the socket is
    /// full (non-blocking) or its send timeout passed (blocking).
    pub fn flush(&mut self, stream: &ClientStream) -> io::Result<bool> {
        loop {
            if self.wpos < self.wbuf.len() {
                // With more to follow, MSG_MORE lets the head share a packet
                // with the file. No TCP_CORK around them (nginx's
                // tcp_nopush): its two setsockopt calls and the tail held
                // until the uncork cost more CPU per 100 KB response than
                // they saved, with wrk and with `warren bench` alike
                // (docs/benchmarks.md, 2026-11-28).
                let more = !self.queue.is_empty();
                match stream.send(&self.wbuf[self.wpos..], more) {
                    Ok(n) => self.wpos += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            match self.queue.front_mut() {
                None => {
                    // Over TLS, records may still wait to leave.
                    if !stream.flush_pending()? {
                        return Ok(false);
                    }
                    self.wbuf.clear();
                    self.wpos = 0;
                    return Ok(true);
                }
                Some(Chunk::Broken) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file changed while being sent")),
                Some(Chunk::Bytes(b)) => {
                    self.wbuf = std::mem::take(b);
                    self.wpos = 0;
                    self.queue.pop_front();
                }
                Some(Chunk::File { file, offset, len }) => {
                    if *len == 0 {
                        self.queue.pop_front();
                        continue;
                    }
                    let count = (*len).min(1 << 20) as usize;
                    match stream.send_file(file, offset, count) {
                        Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank while being sent")),
                        Ok(n) => *len -= n as u64,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }

    /// Writes all that is pending, waiting for room at most `timeout` each
    /// time; false if the client stalled or went away. For a thread that
    /// may block; the socket may be blocking or not.
    pub fn write_all(&mut self, stream: &ClientStream, timeout: Duration) -> bool {
        self.write_all_within(stream, || timeout)
    }

    /// Writes all that is pending, waiting for room each time as long as
    /// `room_within` says (zero: no more); false if the client stalled or
    /// went away.
    pub fn write_all_within(&mut self, stream: &ClientStream, room_within: impl Fn() -> Duration) -> bool {
        loop {
            match self.flush(stream) {
                Ok(true) => return true,
                Ok(false) => {
                    let wait = room_within();
                    if wait.is_zero() || !wait_for(stream, PollFlags::POLLOUT, wait) {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// Releases buffers between requests (idle connections hold none).
    pub fn release(&mut self) {
        self.wbuf = Vec::new();
        self.wpos = 0;
        self.queue.clear();
        self.streaming = None;
    }
}
