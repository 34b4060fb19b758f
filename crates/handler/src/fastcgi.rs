//! The FastCGI proxy, as Apache's mod_proxy_fcgi and nginx's fastcgi_pass:
//! a request routed to a FastCGI application (by `SetHandler proxy:...`,
//! `ProxyPass` or `ProxyPassMatch`) becomes a [`Gateway`] plan holding the
//! backend and the CGI/1.1 variables (RFC 3875). The MPM runs the plan with
//! [`Site::run_gateway`] on a thread that may block; it streams the request
//! body to the application as the client sends it (a chunked body is spooled
//! first, so the application gets CONTENT_LENGTH) and answers with the
//! application's headers and a [`Body::Stream`] of its output, so `flush()`
//! in a script reaches the client at once.
//!
//! Failures are answered as Apache does: backend unreachable 503, no answer
//! within ProxyTimeout 504, a broken or oversized header block 502; an
//! application that dies mid-body makes the MPM close the connection rather
//! than end the body as if complete.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use warren_config::{FcgiAddr, FcgiBackend, LogLevel};
use warren_fcgi::record::{self, RecordType};
use warren_fcgi::{Client, ProtocolStatus, RecordReader};
use warren_http::{HttpError, RequestHead};

use crate::logs::{strip_port, ErrorLog};
pub use warren_pool_api::{PoolBusy, PoolDispatch, PoolLease};
use crate::spool::{Spool, Spooled};
use crate::{internal_redirect, path, Body, BodySource, ConnInfo, HeaderName, Outcome, RequestBody, Response, Site};

/// A response header block larger than this is refused with 502.
pub const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// Internal redirects (a local `Location:`) followed for one request.
const MAX_REDIRECTS: u8 = 10;
/// The I/O buffers of an exchange, on the stack: heap buffers this size,
/// freed by many threads, stay in malloc's per-thread arenas.
const IO_BUF: usize = 16 * 1024;
/// Idle kept-alive backend connections kept per site (`enablereuse=on`).
const MAX_IDLE_BACKENDS: usize = 64;

/// A request to run on a FastCGI application.
pub struct Gateway {
    pub host: usize,
    pub backend: FcgiBackend,
    pub timeout: Duration,
    /// The CGI variables but CONTENT_LENGTH, known once the body is.
    params: Vec<(HeaderName, Vec<u8>)>,
    /// The script, for log lines.
    script: String,
    /// Internal redirects already followed to get here.
    redirects: u8,
    /// REQUEST_URI, for a pool's status page.
    uri: Vec<u8>,
    /// Set when this request is a local ErrorDocument answering an error:
    /// the status of that error.
    error_status: Option<u16>,
    /// Already sent again after a pool's child went away without answering.
    retried: bool,
}

/// Where a request maps: the script and the rest of the path after it.
pub struct ScriptTarget<'a> {
    /// SCRIPT_FILENAME: the file (or the backend's path) to run.
    pub filename: String,
    /// SCRIPT_NAME: the URL path of the script.
    pub name: &'a [u8],
    /// PATH_INFO: what follows the script in the URL path (may be empty).
    pub path_info: &'a [u8],
}

/// Whether the application at `addr` said it takes one request per
/// connection (FCGI_MPXS_CONNS 0, as PHP does); None when it could not be
/// asked or gave no answer.
pub fn one_request_per_connection(addr: &FcgiAddr, timeout: Duration) -> Option<bool> {
    let mut s = BackendStream::connect(addr, timeout).ok()?;
    warren_fcgi::client::multiplexes(&mut s).ok().flatten().map(|many| !many)
}

/// A connection to a FastCGI application.
pub enum BackendStream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl BackendStream {
    fn connect(addr: &FcgiAddr, timeout: Duration) -> io::Result<BackendStream> {
        let s = match addr {
            FcgiAddr::Unix(p) => BackendStream::Unix(UnixStream::connect(p)?),
            FcgiAddr::Pool(name) => return Err(io::Error::other(format!("pool {name} is reached through a lease"))),
            FcgiAddr::Tcp { host, port } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} resolves to no address"));
                let mut found = None;
                for a in std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port))? {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                BackendStream::Tcp(found.ok_or(last)?)
            }
        };
        s.set_timeouts(timeout)?;
        Ok(s)
    }

    fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        match self {
            BackendStream::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            BackendStream::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }

    /// An idle kept connection is usable if the application has neither
    /// closed it nor sent anything on it.
    fn idle_and_open(&self) -> bool {
        let fd = match self {
            BackendStream::Unix(s) => s.as_raw_fd(),
            BackendStream::Tcp(s) => s.as_raw_fd(),
        };
        let mut b = [0u8; 1];
        // SAFETY: a valid one-byte buffer and an open socket.
        let n = unsafe { libc::recv(fd, b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
    }
}

impl Read for BackendStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            BackendStream::Unix(s) => s.read(buf),
            BackendStream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for BackendStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            BackendStream::Unix(s) => s.write(buf),
            BackendStream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Kept-alive connections to backends, for `enablereuse=on`.
#[derive(Default)]
pub struct BackendPool {
    idle: Mutex<Vec<(FcgiAddr, BackendStream)>>,
}

impl BackendPool {
    fn take(&self, addr: &FcgiAddr) -> Option<BackendStream> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(i) = idle.iter().rposition(|(a, _)| a == addr) {
            let (_, s) = idle.swap_remove(i);
            if s.idle_and_open() {
                return Some(s);
            }
        }
        None
    }

    fn put(&self, addr: &FcgiAddr, s: BackendStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_BACKENDS {
            idle.push((addr.clone(), s));
        }
    }
}

fn describe(addr: &FcgiAddr) -> String {
    match addr {
        FcgiAddr::Unix(p) => format!("unix:{}", p.display()),
        FcgiAddr::Tcp { host, port } => format!("{host}:{port}"),
        FcgiAddr::Pool(name) => format!("pool {name}"),
    }
}

/// Why a backend exchange failed, and the status it earns.
#[derive(Debug)]
pub struct GatewayError {
    pub status: u16,
    pub why: String,
}

impl GatewayError {
    /// The application could not be reached: 503.
    pub fn connect(backend: &str, e: &io::Error) -> GatewayError {
        GatewayError { status: 503, why: format!("FastCGI: failed to make connection to backend {backend}: {e}") }
    }

    pub fn io(what: &str, addr: &FcgiAddr, e: &io::Error) -> GatewayError {
        let status = match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => 504,
            _ => 502,
        };
        let why = if status == 504 {
            format!("FastCGI: timeout {what} {} (ProxyTimeout)", describe(addr))
        } else {
            format!("FastCGI: error {what} {}: {e}", describe(addr))
        };
        GatewayError { status, why }
    }
}


impl Site {
    /// The plan for running `target` on `backend`.
    #[allow(clippy::too_many_arguments)]
    pub fn gateway(
        &self,
        host: usize,
        head: &RequestHead,
        conn: &ConnInfo,
        backend: &FcgiBackend,
        target: ScriptTarget,
        query: &[u8],
    ) -> Outcome {
        let h = &self.hosts[host];
        let timeout = backend.timeout.or(h.config.proxy_timeout).unwrap_or(self.settings.timeout);
        let params = self.cgi_params(host, head, conn, &target, query);
        let uri = head.path_and_query().to_vec();
        Outcome::Gateway(Box::new(Gateway { host, backend: backend.clone(), timeout, params, script: target.filename, redirects: 0, uri, error_status: None, retried: false }))
    }

    /// The CGI/1.1 variables of RFC 3875 and those PHP expects.
    fn cgi_params(&self, host: usize, head: &RequestHead, conn: &ConnInfo, target: &ScriptTarget, query: &[u8]) -> Vec<(HeaderName, Vec<u8>)> {
        let h = &self.hosts[host];
        let root = h.config.document_root.to_string_lossy().into_owned();
        let server_name = match head.host() {
            Some(v) if !v.is_empty() => strip_port(v).to_vec(),
            _ => h.name.clone().into_bytes(),
        };
        let mut p: Vec<(HeaderName, Vec<u8>)> = Vec::with_capacity(32);
        let set = |p: &mut Vec<(HeaderName, Vec<u8>)>, n: &'static str, v: Vec<u8>| p.push((HeaderName::Borrowed(n), v));
        set(&mut p, "GATEWAY_INTERFACE", b"CGI/1.1".to_vec());
        set(&mut p, "SERVER_SOFTWARE", self.server_header.clone().into_bytes());
        set(&mut p, "SERVER_NAME", server_name);
        set(&mut p, "SERVER_ADDR", conn.local.ip().to_string().into_bytes());
        set(&mut p, "SERVER_PORT", conn.local.port().to_string().into_bytes());
        set(&mut p, "SERVER_PROTOCOL", head.version.as_str().as_bytes().to_vec());
        set(&mut p, "REMOTE_ADDR", conn.peer.ip().to_string().into_bytes());
        set(&mut p, "REMOTE_PORT", conn.peer.port().to_string().into_bytes());
        set(&mut p, "REQUEST_METHOD", head.method().as_bytes().to_vec());
        set(&mut p, "REQUEST_URI", head.path_and_query().to_vec());
        set(&mut p, "REQUEST_SCHEME", b"http".to_vec());
        set(&mut p, "QUERY_STRING", query.strip_prefix(b"?").unwrap_or(query).to_vec());
        set(&mut p, "SCRIPT_NAME", target.name.to_vec());
        set(&mut p, "SCRIPT_FILENAME", target.filename.clone().into_bytes());
        if !target.path_info.is_empty() {
            set(&mut p, "PATH_INFO", target.path_info.to_vec());
            let mut translated = root.clone().into_bytes();
            translated.extend_from_slice(target.path_info);
            set(&mut p, "PATH_TRANSLATED", translated);
        }
        set(&mut p, "DOCUMENT_ROOT", root.clone().into_bytes());
        set(&mut p, "CONTEXT_DOCUMENT_ROOT", root.into_bytes());
        set(&mut p, "CONTEXT_PREFIX", Vec::new());
        if let Some(admin) = &h.config.server_admin {
            set(&mut p, "SERVER_ADMIN", admin.clone().into_bytes());
        }
        // php-cgi built with force-cgi-redirect refuses to run without it.
        set(&mut p, "REDIRECT_STATUS", b"200".to_vec());
        if let Some(t) = head.header("content-type") {
            set(&mut p, "CONTENT_TYPE", t.to_vec());
        }
        // Every other header as HTTP_*: repeated ones joined, as one field.
        // Proxy is left out (httpoxy, CVE-2016-5385); names with `_` too, so
        // that `X_Forwarded_For` cannot pose as `X-Forwarded-For`.
        let mut http: Vec<(String, Vec<u8>)> = Vec::new();
        for (name, value) in head.headers() {
            if name.eq_ignore_ascii_case(b"content-type") || name.eq_ignore_ascii_case(b"content-length") || name.eq_ignore_ascii_case(b"proxy") {
                continue;
            }
            if !name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-') {
                continue;
            }
            let mut var = String::with_capacity(5 + name.len());
            var.push_str("HTTP_");
            var.extend(name.iter().map(|&b| if b == b'-' { '_' } else { b.to_ascii_uppercase() as char }));
            match http.iter_mut().find(|(n, _)| *n == var) {
                Some((_, v)) => {
                    v.extend_from_slice(if var == "HTTP_COOKIE" { b"; " } else { b", " });
                    v.extend_from_slice(value);
                }
                None => http.push((var, value.to_vec())),
            }
        }
        p.extend(http.into_iter().map(|(n, v)| (HeaderName::Owned(n), v)));
        p
    }

    /// Runs a FastCGI request: the body to the application, its answer back.
    pub fn run_gateway(&self, mut gw: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Response {
        let body: &mut dyn RequestBody = if !gw.takes_body() {
            // An error document is a GET: the client's body is not its to
            // read. Read and dropped, as Apache does, so the connection can
            // go on (or, if that fails, the MPM closes it).
            discard(body);
            &mut NoBody
        } else {
            body
        };
        let answer = spool(body).map_err(Failed::Client).and_then(|spooled| match self.exchange(&gw, conn, spooled) {
            Err(Failed::LostChild(e)) if gw.retry_lost_child(head) => {
                self.hosts[gw.host].error_log.log(LogLevel::Warn, Some(conn.peer), &format!("{}; sending the request to another child", e.why));
                self.exchange(&gw, conn, Spooled::None)
            }
            other => other,
        });
        let failed = match answer {
            Ok(Answer::Response(r)) => return r,
            Ok(Answer::Redirect(location)) => return self.internal_redirect(&gw, head, conn, &location),
            // The MPM closes the connection if the client's body was left half read.
            Err(Failed::Backend(f) | Failed::LostChild(f)) => self.gateway_failed(&gw, head, conn, &f),
            Err(Failed::Pool(name, why)) => self.pool_unavailable(&gw, head, conn, &name, why),
            Err(Failed::Client(e)) => {
                let mut r = self.error(gw.host, e.status, head, conn, &e.reason);
                r.close = true;
                r
            }
        };
        self.run_outcome(self.follow_error_document(Outcome::Ready(failed), head, conn), head, conn)
    }

    /// Runs what an internal redirect led to, here where blocking is fine.
    fn run_outcome(&self, outcome: Outcome, head: &RequestHead, conn: &ConnInfo) -> Response {
        match outcome {
            Outcome::Ready(r) => r,
            Outcome::Blocking(work) => work(),
            Outcome::Gateway(next) => self.run_gateway(next, head, conn, &mut NoBody),
        }
    }

    fn exchange(&self, gw: &Gateway, conn: &ConnInfo, mut spooled: Spooled) -> Result<Answer, Failed> {
        // A pool's child is leased for the whole exchange, answer included.
        let mut lease = None;
        let leased_addr;
        let addr = match &gw.backend.addr {
            FcgiAddr::Pool(name) => {
                let pools = self.pools.get().ok_or(Failed::Pool(name.clone(), PoolBusy::Unknown))?;
                let l = pools.lease(name, &gw.uri, self.settings.timeout).map_err(|b| Failed::Pool(name.clone(), b))?;
                leased_addr = FcgiAddr::Unix(l.socket().to_path_buf());
                lease = Some(l);
                &leased_addr
            }
            a => a,
        };
        let content_length = (!matches!(spooled, Spooled::None)).then(|| spooled.len());
        let mut params: Vec<(&[u8], &[u8])> = gw.params.iter().map(|(n, v)| (n.as_bytes(), v.as_slice())).collect();
        let len_text = content_length.map(|n| n.to_string());
        if let Some(t) = &len_text {
            params.push((b"CONTENT_LENGTH", t.as_bytes()));
        }
        // A kept connection may have been closed by the application since
        // (a php-fpm child retired): then a fresh one is tried.
        let reuse = gw.backend.reuse;
        let no_body = matches!(spooled, Spooled::None);
        let begin = |c: &mut Client<BackendStream>| if no_body { c.begin_without_body(&params, reuse) } else { c.begin(&params, reuse) };
        let mut client = None;
        if reuse {
            if let Some(s) = self.backends.take(addr) {
                let mut c = Client::new(s);
                if begin(&mut c).is_ok() {
                    client = Some(c);
                }
            }
        }
        let mut client = match client {
            Some(c) => c,
            None => {
                let s = BackendStream::connect(addr, gw.timeout).map_err(|e| {
                    Failed::Backend(GatewayError::connect(&describe(addr), &e))
                })?;
                let mut c = Client::new(s);
                begin(&mut c).map_err(|e| Failed::Backend(GatewayError::io("sending the request to", addr, &e)))?;
                c
            }
        };
        // The body: an application that stops reading it (it answered
        // early, or died) ends the sending; its answer is still read.
        let mut send_failed = false;
        // On the heap, and only for a body: a worker thread's stack keeps
        // every page it ever touched.
        let mut buf = match &spooled {
            Spooled::File(..) => vec![0u8; IO_BUF],
            Spooled::None | Spooled::Memory(_) => Vec::new(),
        };
        match &mut spooled {
            Spooled::None => {}
            Spooled::Memory(b) => send_failed = client.stdin(b).is_err(),
            Spooled::File(f, _) => loop {
                let n = f.read(&mut buf).map_err(|e| Failed::Client(HttpError::new(500, format!("reading the spooled request body: {e}"))))?;
                if n == 0 || client.stdin(&buf[..n]).is_err() {
                    send_failed = n != 0;
                    break;
                }
            },
        }
        if !send_failed && !no_body {
            let _ = client.end_stdin();
        }

        let mut reader = self.response_reader(gw, conn);
        let mut stream = client.into_stream();
        // A pool child killed for request_terminate_timeout: 504, as php-fpm.
        let fail = |e: GatewayError| match &lease {
            Some(l) if l.terminated() => Failed::Backend(GatewayError { status: 504, why: format!("{} (killed by request_terminate_timeout)", e.why) }),
            _ => Failed::Backend(e),
        };
        // One that went away before answering may be tried again.
        let lost = |e: GatewayError| match &lease {
            Some(l) if !l.terminated() => Failed::LostChild(e),
            _ => fail(e),
        };
        let head = loop {
            match reader.next_piece().map_err(fail)? {
                Some(Piece::Head(h)) => break h,
                Some(_) => unreachable!("the head comes first"),
                None => match reader.fill_from(&mut stream) {
                    Ok(0) => {
                        let e = io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before the response headers");
                        return Err(lost(GatewayError::io("reading the response headers from", addr, &e)));
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err(lost(GatewayError::io("reading the response headers from", addr, &e))),
                    Err(e) => return Err(fail(GatewayError::io("reading the response headers from", addr, &e))),
                },
            }
        };
        let mut head = head;
        if let Some(location) = head.redirect.take() {
            return Ok(Answer::Redirect(location));
        }
        let mut r = gw.response(&mut head);
        // What has already arrived may be the whole answer: then it goes
        // with a Content-Length, in one write with the head.
        let read_ahead = gw.buffers(&head);
        let mut body = head.first_body;
        let mut complete = false;
        while let Some(piece) = reader.next_piece().map_err(Failed::Backend)? {
            match piece {
                Piece::Data(d) => body.extend_from_slice(&d),
                Piece::End => {
                    complete = true;
                    break;
                }
                Piece::Head(_) => unreachable!("one head"),
            }
        }
        let pool = (reuse && !send_failed).then(|| self.backends.clone());
        if complete {
            if let Some(pool) = pool {
                pool.put(addr, stream);
            }
            drop(lease);
            if let Some(n) = head.content_length {
                body.truncate(n.min(body.len() as u64) as usize);
            }
            r.body = Body::Bytes(body);
        } else {
            let source = FcgiOutput { stream: Some(stream), reader, first: Some(body), addr: addr.clone(), pool, lease, read_ahead };
            r.body = Body::Stream { source: Box::new(source), len: head.content_length };
        }
        Ok(Answer::Response(r))
    }

    /// A local `Location:` with status 200: the request is served again as
    /// a GET of that URL, as CGI says.
    fn internal_redirect(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, location: &str) -> Response {
        match self.redirect_outcome(gw, head, conn, location) {
            (outcome, Some(new_head)) => self.run_outcome(outcome, &new_head, conn),
            (outcome, None) => self.run_outcome(outcome, head, conn),
        }
    }

    /// What an internal redirect to `location` leads to, and the request
    /// head it was routed with (None if it could not be made).
    pub fn redirect_outcome(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, location: &str) -> (Outcome, Option<RequestHead>) {
        if gw.redirects >= MAX_REDIRECTS {
            let why = format!("more than {MAX_REDIRECTS} internal redirects from FastCGI Location headers");
            return (Outcome::Ready(self.error(gw.host, 500, head, conn, &why)), None);
        }
        let Some(new_head) = internal_redirect::location_head(location, head) else {
            return (Outcome::Ready(self.error(gw.host, 500, head, conn, &format!("FastCGI: bad Location for an internal redirect: {location}"))), None);
        };
        let outcome = match self.handle(&new_head, conn) {
            Outcome::Gateway(mut next) => {
                next.redirects = gw.redirects + 1;
                Outcome::Gateway(next)
            }
            other => other,
        };
        (outcome, Some(new_head))
    }

    /// The answer to an exchange that failed before its head was sent, and
    /// the error-log line.
    pub fn gateway_failed(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, e: &GatewayError) -> Response {
        let why = format!("{} (script {})", e.why, gw.script);
        match gw.error_status {
            // The error document itself failed: the first error's built-in
            // page, never a second redirect.
            Some(first) => {
                let mut r = self.error(gw.host, first, head, conn, &format!("{why}, while answering {first} with its ErrorDocument"));
                r.error_document = None;
                r
            }
            None => self.error(gw.host, e.status, head, conn, &why),
        }
    }

    /// The 503 (with Retry-After) for a request that got no child of `pool`.
    pub fn pool_unavailable(&self, gw: &Gateway, head: &RequestHead, conn: &ConnInfo, pool: &str, why: PoolBusy) -> Response {
        let why = match why {
            PoolBusy::QueueFull => format!("pool {pool}: every child is busy and its queue (listen.backlog) is full"),
            PoolBusy::Timeout => format!("pool {pool}: no child became free within Timeout"),
            PoolBusy::Unknown => format!("pool {pool} is not running"),
        };
        let e = GatewayError { status: 503, why };
        self.gateway_failed(gw, head, conn, &e).header("Retry-After", "5")
    }

    /// A reader for the answer to `gw`.
    pub fn response_reader(&self, gw: &Gateway, conn: &ConnInfo) -> ResponseReader {
        ResponseReader::new(describe(&gw.backend.addr), self.hosts[gw.host].error_log.clone(), conn.peer, gw.script.clone())
    }
}

impl Gateway {
    /// Whether the request may be sent once more, to another of its pool's
    /// children, after the child it went to was lost before answering:
    /// once, and only a GET or HEAD without a body, which may be repeated
    /// (RFC 9110 9.2.2), as nginx's fastcgi_next_upstream does.
    pub fn retry_lost_child(&mut self, head: &RequestHead) -> bool {
        let ok = !self.retried && matches!(self.backend.addr, FcgiAddr::Pool(_)) && matches!(head.method(), "GET" | "HEAD") && head.framing == warren_http::BodyFraming::None;
        self.retried |= ok;
        ok
    }

    /// Whether the application is to get the client's request body: an
    /// error document (a GET standing in for the request) does not.
    pub fn takes_body(&self) -> bool {
        self.error_status.is_none()
    }

    /// The whole request, body included, as one write; the connection is
    /// not kept.
    pub fn whole_request(&self, body: Option<&[u8]>) -> Vec<u8> {
        let body = body.filter(|_| self.takes_body());
        let mut params: Vec<(&[u8], &[u8])> = self.params.iter().map(|(n, v)| (n.as_bytes(), v.as_slice())).collect();
        let length = body.map(|b| b.len().to_string());
        if let Some(n) = &length {
            params.push((b"CONTENT_LENGTH", n.as_bytes()));
        }
        let mut out = Vec::with_capacity(1024 + body.map_or(0, <[u8]>::len));
        warren_fcgi::client::encode_begin(&mut out, 1, &params, false, body.is_none());
        if let Some(b) = body {
            if !b.is_empty() {
                warren_fcgi::record::write_stream(&mut out, warren_fcgi::record::RecordType::Stdin, 1, b);
            }
            warren_fcgi::record::write_record(&mut out, warren_fcgi::record::RecordType::Stdin, 1, &[]);
        }
        out
    }

    /// Makes this request the answer to an error of `original`, as
    /// Apache's ErrorDocument: the script sees the original REQUEST_URI and
    /// the REDIRECT_ variables, gets no request body, and its answer keeps
    /// the error's status unless it gives a `Status:` of its own.
    pub fn answer_error(&mut self, status: u16, original: &RequestHead) {
        let uri = original.path_and_query().to_vec();
        let query = path::split_query(&uri).1;
        let query = query.strip_prefix(b"?").unwrap_or(query).to_vec();
        self.set_param("REDIRECT_STATUS", status.to_string().into_bytes());
        self.set_param("REDIRECT_URL", internal_redirect::redirect_url(original));
        if !query.is_empty() {
            self.set_param("REDIRECT_QUERY_STRING", query);
        }
        self.set_param("REDIRECT_REQUEST_METHOD", original.method().as_bytes().to_vec());
        self.set_param("REQUEST_URI", uri.clone());
        self.uri = uri;
        self.error_status = Some(status);
    }

    fn set_param(&mut self, name: &'static str, value: Vec<u8>) {
        match self.params.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.params.push((HeaderName::Borrowed(name), value)),
        }
    }

    /// The response for an application's head (its body to be added).
    pub fn response(&self, head: &mut CgiHead) -> Response {
        let status = match self.error_status {
            Some(error) if !head.explicit_status => error,
            _ => head.status,
        };
        let mut r = Response::new(status, self.host);
        r.headers = std::mem::take(&mut head.headers);
        r.filename = Some(PathBuf::from(&self.script));
        r
    }

    /// Whether the answer is read at the application's pace, what the
    /// client has not taken yet held by warren (the default), or relayed
    /// at the client's pace (`flushpackets=on`, `X-Accel-Buffering: no`):
    /// a stream of events, a long poll, a progress page.
    pub fn buffers(&self, head: &CgiHead) -> bool {
        !self.backend.flush_packets && !head.unbuffered
    }

    /// REQUEST_URI, as a pool's status page shows it.
    pub fn uri(&self) -> &[u8] {
        &self.uri
    }

    /// The backend's address, as it appears in log lines.
    pub fn backend_name(&self) -> String {
        describe(&self.backend.addr)
    }
}

enum Answer {
    Response(Response),
    Redirect(String),
}

enum Failed {
    Backend(GatewayError),
    /// A pool's child went away (killed, crashed, recycled) before any of
    /// its answer came.
    LostChild(GatewayError),
    /// No child of this pool could be had.
    Pool(String, PoolBusy),
    /// The client's body could not be read: the answer is this error.
    Client(HttpError),
}

/// For an internal redirect: a GET has no body.
struct NoBody;

/// Reads a request body to its end, keeping none of it.
fn discard(body: &mut dyn RequestBody) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = body.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

impl RequestBody for NoBody {
    fn length(&self) -> Option<u64> {
        None
    }
    fn present(&self) -> bool {
        false
    }
    fn read(&mut self, _: &mut [u8]) -> Result<usize, HttpError> {
        Ok(0)
    }
}

/// The whole body, read before the application is given the request (see
/// `spool`), unless the MPM has read it already.
fn spool(body: &mut dyn RequestBody) -> Result<Spooled, HttpError> {
    if let Some(whole) = body.take_spooled() {
        return Ok(whole);
    }
    if !body.present() {
        return Ok(Spooled::None);
    }
    let mut spool = Spool::default();
    let mut buf = vec![0u8; IO_BUF];
    loop {
        let n = body.read(&mut buf)?;
        if n == 0 {
            break;
        }
        spool.push(&buf[..n]).map_err(spool_error)?;
    }
    spool.finish().map_err(spool_error)
}

pub fn spool_error(e: io::Error) -> HttpError {
    HttpError::new(500, format!("cannot spool the request body to a temporary file: {e}"))
}

fn log_stderr(log: &ErrorLog, peer: std::net::SocketAddr, script: &str, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        log.log(LogLevel::Error, Some(peer), &format!("FastCGI: stderr from {script}: {line}"));
    }
}

/// How far a header block that arrives in records has been searched for
/// its end, so that each byte is looked at once: searched again from its
/// start for every record, a 60 KB block sent a byte a record cost 0.7 s.
#[derive(Default)]
struct BlockScan {
    /// Where the first line not yet ended starts.
    line: usize,
    /// How much of that line has been searched for its end.
    searched: usize,
}

/// Where the header block ends: (its length without the blank line, where
/// the body starts). Lines may end in CRLF or LF, as CGI allows. `scan`
/// resumes the search on the same block grown at its end.
fn header_end(b: &[u8], scan: &mut BlockScan) -> Option<(usize, usize)> {
    loop {
        let from = scan.line + scan.searched;
        let Some(nl) = b[from..].iter().position(|&c| c == b'\n').map(|i| from + i) else {
            scan.searched = b.len() - scan.line;
            return None;
        };
        let line = &b[scan.line..nl];
        if line.is_empty() || line == b"\r" {
            return Some((scan.line, nl + 1));
        }
        scan.line = nl + 1;
        scan.searched = 0;
    }
}

struct CgiHeaders {
    status: u16,
    /// Whether the application gave a Status header.
    explicit_status: bool,
    headers: Vec<(HeaderName, String)>,
    content_length: Option<u64>,
    location: Option<String>,
    /// `X-Accel-Buffering: no`, as nginx reads it: send as written.
    unbuffered: bool,
}

impl CgiHeaders {
    fn local_redirect(&self) -> Option<String> {
        match &self.location {
            Some(l) if l.starts_with('/') && !l.starts_with("//") && self.status == 200 => Some(l.clone()),
            _ => None,
        }
    }
}

/// The application's response headers (RFC 3875 section 6.3).
fn parse_cgi_headers(block: &[u8]) -> Result<CgiHeaders, String> {
    let mut h = CgiHeaders { status: 200, explicit_status: false, headers: Vec::new(), content_length: None, location: None, unbuffered: false };
    for raw in block.split(|&b| b == b'\n') {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            continue;
        }
        let colon = line.iter().position(|&b| b == b':').ok_or_else(|| format!("no colon in {:?}", String::from_utf8_lossy(&line[..line.len().min(80)])))?;
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) {
            return Err(format!("bad header name {:?}", String::from_utf8_lossy(&name[..name.len().min(80)])));
        }
        let value = trim(&line[colon + 1..]);
        if value.iter().any(|&b| b == 0 || b == b'\r') {
            return Err("control character in a header value".into());
        }
        let name = std::str::from_utf8(name).map_err(|_| "bad header name")?;
        let value = String::from_utf8_lossy(value).into_owned();
        match name.to_ascii_lowercase().as_str() {
            "status" => {
                // An interim (1xx) status is not an answer: sent as one, the
                // application's real answer would go to the client's next request.
                let code = value.split_whitespace().next().and_then(|c| c.parse::<u16>().ok()).filter(|c| (200..=599).contains(c));
                h.status = code.ok_or_else(|| format!("bad Status (not a final status 200-599): {value}"))?;
                h.explicit_status = true;
            }
            "content-length" => {
                h.content_length = Some(value.parse::<u64>().map_err(|_| format!("bad Content-Length: {value}"))?);
            }
            // Hop-by-hop fields are the server's to decide.
            "connection" | "keep-alive" | "transfer-encoding" | "te" | "trailer" | "upgrade" | "proxy-connection" => {}
            // Meant for the server, not the client.
            "x-accel-buffering" => h.unbuffered = value.eq_ignore_ascii_case("no"),
            "location" => {
                h.location = Some(value.clone());
                h.headers.push((HeaderName::Owned(name.to_string()), value));
            }
            _ => h.headers.push((HeaderName::Owned(name.to_string()), value)),
        }
    }
    if h.location.is_some() && !h.explicit_status && h.local_redirect().is_none() {
        h.status = 302;
    }
    Ok(h)
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &b[start..end]
}

/// The application's output after the headers, as it arrives.
struct FcgiOutput {
    stream: Option<BackendStream>,
    reader: ResponseReader,
    first: Option<Vec<u8>>,
    addr: FcgiAddr,
    /// Where the connection goes back when the request ends cleanly.
    pool: Option<Arc<BackendPool>>,
    /// The pool child serving it, given back when the answer ends.
    lease: Option<Box<dyn PoolLease>>,
    read_ahead: bool,
}

impl BodySource for FcgiOutput {
    fn read_ahead(&self) -> bool {
        self.read_ahead
    }

    fn next_piece(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        if let Some(first) = self.first.take() {
            if !first.is_empty() {
                out.extend_from_slice(&first);
                return Ok(true);
            }
        }
        loop {
            let Some(stream) = self.stream.as_mut() else { return Ok(false) };
            let failure = match self.reader.next_piece() {
                Ok(Some(Piece::Data(d))) => {
                    out.extend_from_slice(&d);
                    return Ok(true);
                }
                Ok(Some(Piece::End)) => {
                    let stream = self.stream.take().expect("stream");
                    if let Some(pool) = &self.pool {
                        pool.put(&self.addr, stream);
                    }
                    self.lease = None;
                    return Ok(false);
                }
                Ok(Some(Piece::Head(_))) => unreachable!("one head"),
                Err(e) => e,
                Ok(None) => match self.reader.fill_from(stream) {
                    Ok(0) => GatewayError { status: 502, why: format!("FastCGI: {} closed the connection mid-response", describe(&self.addr)) },
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => GatewayError::io("reading the response from", &self.addr, &e),
                },
            };
            self.stream = None;
            self.reader.log_cut_short(&failure);
            return Err(io::Error::other(failure.why));
        }
    }
}

/// A piece of an application's answer.
pub enum Piece {
    Head(CgiHead),
    Data(Vec<u8>),
    End,
}

/// The application's response head.
pub struct CgiHead {
    pub status: u16,
    /// Whether the application gave a `Status:` (an error document's
    /// answer keeps the error's status otherwise).
    pub explicit_status: bool,
    pub headers: Vec<(HeaderName, String)>,
    pub content_length: Option<u64>,
    /// A local Location with status 200: serve that URL instead (CGI's
    /// internal redirect).
    pub redirect: Option<String>,
    /// Body bytes that came with the head.
    pub first_body: Vec<u8>,
    /// The application asked for its answer to go out as it writes it.
    pub unbuffered: bool,
}

/// Reads an application's answer from the bytes it sends, without I/O:
/// the blocking gateway and the event loop both feed it. FCGI_STDERR goes
/// to the error log as it comes, with the script's name.
pub struct ResponseReader {
    records: RecordReader,
    /// The header block while it is being collected; None once parsed.
    block: Option<Vec<u8>>,
    block_scan: BlockScan,
    backend: String,
    log: Arc<ErrorLog>,
    peer: std::net::SocketAddr,
    script: String,
}

impl ResponseReader {
    pub fn new(backend: String, log: Arc<ErrorLog>, peer: std::net::SocketAddr, script: String) -> ResponseReader {
        ResponseReader { records: RecordReader::default(), block: Some(Vec::new()), block_scan: BlockScan::default(), backend, log, peer, script }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.records.push(bytes);
    }

    /// Reads once from the application onto what is not yet parsed.
    pub fn fill_from<R: Read>(&mut self, stream: &mut R) -> io::Result<usize> {
        self.records.fill_from(stream)
    }

    /// Whether the head has been read.
    pub fn head_done(&self) -> bool {
        self.block.is_none()
    }

    /// Whether none of the answer's head has come yet.
    pub fn nothing_yet(&self) -> bool {
        self.block.as_ref().is_some_and(Vec::is_empty)
    }

    /// The next piece among what has arrived; None when more is needed.
    pub fn next_piece(&mut self) -> Result<Option<Piece>, GatewayError> {
        loop {
            let rec = match self.records.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(None),
                Err(e) => return Err(GatewayError { status: 502, why: format!("FastCGI: bad record from {}: {e:?}", self.backend) }),
            };
            match rec.kind {
                RecordType::Stdout if rec.content.is_empty() => {}
                RecordType::Stdout => {
                    let Some(block) = self.block.as_mut() else { return Ok(Some(Piece::Data(rec.content))) };
                    block.extend_from_slice(&rec.content);
                    if let Some((header_len, body_start)) = header_end(block, &mut self.block_scan) {
                        if header_len > MAX_HEADER_BLOCK {
                            return Err(self.too_large());
                        }
                        let mut block = self.block.take().expect("block");
                        let first_body = block.split_off(body_start);
                        let h = parse_cgi_headers(&block[..header_len])
                            .map_err(|why| GatewayError { status: 502, why: format!("FastCGI: malformed response header from {}: {why}", self.backend) })?;
                        let redirect = h.local_redirect();
                        return Ok(Some(Piece::Head(CgiHead { status: h.status, explicit_status: h.explicit_status, headers: h.headers, content_length: h.content_length, redirect, first_body, unbuffered: h.unbuffered })));
                    }
                    if block.len() > MAX_HEADER_BLOCK {
                        return Err(self.too_large());
                    }
                }
                RecordType::Stderr => log_stderr(&self.log, self.peer, &self.script, &rec.content),
                RecordType::EndRequest if self.block.is_some() => {
                    let status = record::parse_end_request(&rec.content).map(|(_, s)| s).unwrap_or(ProtocolStatus::RequestComplete);
                    let (code, why) = match status {
                        ProtocolStatus::RequestComplete => (502, "ended its response before the end of the headers".to_string()),
                        ProtocolStatus::Overloaded => (503, "is overloaded".to_string()),
                        s => (502, format!("refused the request ({s:?})")),
                    };
                    return Err(GatewayError { status: code, why: format!("FastCGI: backend {} {why}", self.backend) });
                }
                RecordType::EndRequest => return Ok(Some(Piece::End)),
                _ => {}
            }
        }
    }

    fn too_large(&self) -> GatewayError {
        GatewayError { status: 502, why: format!("FastCGI: response header block from {} larger than {MAX_HEADER_BLOCK} bytes", self.backend) }
    }

    /// Logs an answer that broke off after its head was sent.
    pub fn log_cut_short(&self, e: &GatewayError) {
        self.log.error(Some(self.peer), &format!("{} (script {}); response cut short", e.why, self.script));
    }
}

/// The script of a request whose URL path goes on past a file
/// (`/index.php/a/b`): the longest leading part that is a regular file.
pub fn split_path_info(fs: &Path) -> Option<(PathBuf, usize)> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = fs.as_os_str().as_bytes();
    let mut cut = bytes.len();
    while let Some(slash) = bytes[..cut].iter().rposition(|&b| b == b'/') {
        if slash == 0 {
            return None;
        }
        let candidate = Path::new(std::ffi::OsStr::from_bytes(&bytes[..slash]));
        match std::fs::metadata(candidate) {
            Ok(m) if m.is_file() => return Some((candidate.to_path_buf(), bytes.len() - slash)),
            Ok(_) => return None,
            Err(_) => cut = slash,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_block_end_with_crlf_or_lf() {
        let at_once = |b: &[u8]| header_end(b, &mut BlockScan::default());
        assert_eq!(at_once(b"A: b\r\n\r\nbody"), Some((6, 8)));
        assert_eq!(at_once(b"A: b\n\nbody"), Some((5, 6)));
        assert_eq!(at_once(b"A: b\r\nC: d\r\n"), None);
        assert_eq!(at_once(b"\r\nbody"), Some((0, 2)));
    }

    #[test]
    fn header_block_searched_once_as_it_grows() {
        // Fed a byte at a time, the search finds the end found at once, and
        // resumes where it stopped instead of going back to the start.
        for block in [&b"A: b\r\nC: d\r\n\r\nbody"[..], b"A: b\nC: d\n\nbody", b"\nbody", b"A: b\r\r\n\r\n"] {
            let mut scan = BlockScan::default();
            let mut found = None;
            for end in 1..=block.len() {
                let before = scan.line + scan.searched;
                found = header_end(&block[..end], &mut scan);
                if found.is_some() {
                    break;
                }
                assert!(before <= end && scan.line + scan.searched == end);
            }
            assert_eq!(found, header_end(block, &mut BlockScan::default()), "{block:?}");
        }
    }

    #[test]
    fn cgi_headers() {
        let h = parse_cgi_headers(b"Status: 404 Not Found\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n").unwrap();
        assert_eq!(h.status, 404);
        assert_eq!(h.headers.iter().filter(|(n, _)| n == "Set-Cookie").count(), 2);
        let h = parse_cgi_headers(b"Location: /other.php?x=1\n").unwrap();
        assert_eq!(h.local_redirect().as_deref(), Some("/other.php?x=1"));
        let h = parse_cgi_headers(b"Location: http://example.org/\n").unwrap();
        assert_eq!((h.status, h.local_redirect()), (302, None));
        let h = parse_cgi_headers(b"Status: 200\nLocation: /x\n").unwrap();
        assert_eq!(h.local_redirect().as_deref(), Some("/x"));
        let h = parse_cgi_headers(b"Status: 301\nLocation: /x\n").unwrap();
        assert_eq!((h.status, h.local_redirect()), (301, None));
        let h = parse_cgi_headers(b"Content-Length: 5\nConnection: close\nTransfer-Encoding: chunked\n").unwrap();
        assert_eq!(h.content_length, Some(5));
        assert!(h.headers.is_empty());
        assert!(parse_cgi_headers(b"no colon here\n").is_err());
        assert!(parse_cgi_headers(b"Bad Name: x\n").is_err());
        assert!(parse_cgi_headers(b"Status: abc\n").is_err());
        for interim_or_unknown in ["100", "101 Switching Protocols", "103", "199", "600", "999"] {
            assert!(parse_cgi_headers(format!("Status: {interim_or_unknown}\n").as_bytes()).is_err(), "{interim_or_unknown}");
        }
        assert_eq!(parse_cgi_headers(b"Status: 599\n").unwrap().status, 599);
    }
}
