//! Requests -> response plans. The handler never touches a client's
//! socket: the MPM reads requests and writes the plans; the handler's own
//! sockets are those to FastCGI applications (fastcgi/), to HTTP backends
//! (proxy_http/) and to the CGI spawner (cgi/), driven by the MPM's
//! threads.
//!
//! [`Site`] (site.rs) is the configuration built once from the settings:
//! its hosts (the main server and the virtual hosts), MIME table, logs and
//! Server header; beside it, what each process learns while serving
//! ([`caches::Caches`]: files, compressed copies, `.htaccess` files,
//! connections to applications) and the hooks the MPM sets.
//!
//! Every request goes through one pipeline, in pipeline.rs: host ->
//! rewrite -> map -> access -> handler. Its host chosen, it is a
//! [`Request`]; its URL mapped to a file and the per-directory
//! configuration merged, a [`Route`] (with its [`dir_config::Effective`]);
//! that one value goes to whatever answers, and the answer is an
//! [`Outcome`]:
//! - [`Outcome::Ready`]: a [`Response`] computed at once, cheaply and without
//!   blocking (static files, errors, redirects). The event MPM serves these
//!   on its event loop.
//! - [`Outcome::Blocking`]: work that may block for long (directory listings
//!   now), run on a worker thread.
//! - [`Outcome::OffLoop`]: asked of a request routed on the event loop
//!   ([`Site::handle_on_loop`]) when its routing would run an `.htaccess`
//!   file's regular expressions: the MPM routes it again on a thread.
//! - [`Outcome::Gateway`]: a [`gateway::Gateway`] plan: a FastCGI request (`fastcgi`), to php-fpm or the
//!   like or to one of warren's own pools (through `warren-pool-api`'s
//!   `PoolDispatch`, which the `fpm` crate implements): run on
//!   a thread that owns the connection for its duration, reading the request
//!   body through [`RequestBody`] (whole, into a [`spool::Spool`], before the
//!   application is given the request) and answering with a [`Body::Stream`]
//!   that the MPM sends as the application writes it; or, without a body or
//!   with one the event loop has read whole, relayed by the event loop.
//!   Every driver and protocol reads the answer through one sans-IO
//!   exchange, [`fastcgi::Answer`]: fed the application's bytes, it gives the
//!   head, then moves the body into a [`fastcgi::ResponseSink`] (the MPM's
//!   HTTP/1.1 writer, an HTTP/2 stream, or the body a thread pulls).
//!
//! A [`Response`] is a plan: status, headers and a [`Body`] that may be bytes
//! or ranges of an open file, so each MPM does the I/O its own way (blocking
//! writes, or non-blocking writes and sendfile with write completion).
//!
//! Modules, each importing only those below it. An Apache module's request
//! half has the name of its configuration half in `warren_config`:
//! `alias` (mod_alias), `compress/` (mod_deflate, mod_brotli), `dir_config`
//! (the merged per-directory configuration), `env_vars` (mod_env,
//! mod_setenvif), `filters/expires` and `filters/headers` (mod_expires,
//! mod_headers), `htaccess` (`.htaccess` files found and cached per
//! version, never read anew on an event loop's thread), `remote_ip`
//! (mod_remoteip), `rewrite` (mod_rewrite, with its rules' CPU-time
//! budget), `scripts` (no script sent as text), `cgi/` (mod_cgi: the
//! spawner process, suexec's checks, running a program), `mass`
//! (mod_vhost_alias and mod_userdir), `mime` (a file's type, encoding,
//! language and charset from every extension), `negotiation` and
//! `multiviews` (mod_negotiation: choosing a variant, type maps and
//! MultiViews), `fastcgi/php_settings` (mod_php's php_value lines as
//! PHP_VALUE).
//! - the pipeline's stages: `pipeline` (the order), `dir_walk` (sections
//!   and `.htaccess` files that apply), `gateways` (which FastCGI
//!   application answers: handlers, PATH_INFO, ProxyPass), `static_files`
//!   (files, DirectoryIndex, trailing-slash redirects), `listing` (Options
//!   Indexes), `status` (server-status), `metrics` (SetHandler metrics), `pool_status` (warren's own
//!   pools' status pages), `errors` (error pages, ErrorDocument, redirect
//!   pages), `internal_redirect` (the head of a request served again for a
//!   local ErrorDocument or a FastCGI local `Location:`), `symlinks`
//!   (FollowSymLinks and SymLinksIfOwnerMatch: every link on the way
//!   checked), `gateway/` (the plan FastCGI, CGI and HTTP proxying share:
//!   [`gateway::Gateway`], why an exchange failed, the script and its
//!   PATH_INFO), `fastcgi/` (the exchange with applications: `params`,
//!   `exchange`, `response`, `backend`, `half_close`), `filters/` (the
//!   response filter stage every answer passes before the MPM writes it),
//!   `compress` ([`compress::finish`], called as the response leaves for
//!   the MPM);
//! - what they share: `site`, `caches`, `request` ([`Request`],
//!   [`Route`]), `conn` ([`ConnInfo`]), `env` (the request's variables),
//!   `sections` (how sections match paths), `path` (decoding and
//!   normalising URL paths, and mapping them beneath a root),
//!   `conditional` (validators, conditional requests, ranges),
//!   `file_cache` (stat-validated caches of small files' bytes and large
//!   files' descriptors), `logs` (error and access logs), `log_time` (their
//!   dates), `root_files`
//!   (files root opens by a configured path), `spool` (request bodies held
//!   whole before the application gets them).

mod accounts;
mod acme_challenge;
mod md_status;
mod require_https;
pub mod alias;
pub mod auth;
pub mod balancer;
mod authz;
pub mod caches;
pub mod cgi;
pub mod compress;
pub mod conditional;
pub mod conn;
pub mod dir_config;
pub mod dir_walk;
pub mod env;
pub mod env_vars;
mod error_line;
pub mod errors;
pub mod expr_facts;
pub mod fastcgi;
pub mod filters;
pub mod gateway;
pub mod gateways;
pub mod file_cache;
pub mod htaccess;
pub mod internal_redirect;
pub mod listing;
pub mod log_time;
pub mod logs;
pub mod mass;
pub mod mime;
pub mod multiviews;
pub mod negotiation;
pub mod path;
pub mod piped_log;
pub mod pipeline;
pub mod spool;
pub mod pool_status;
pub mod proxy_http;
pub mod remote_ip;
pub mod request;
pub mod response_cache;
mod response_cache_coding;
mod rewrite;
pub mod root_files;
mod sections;
pub mod scripts;
pub mod site;
pub mod static_files;
pub mod status;
pub mod metrics;
pub mod symlinks;
pub mod syslog;

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

pub use conn::{ConnInfo, TlsInfo};
pub use request::{Request, Route};
pub use site::Site;

/// Part of a multipart/byteranges body.
#[derive(Debug)]
pub enum Part {
    Bytes(Vec<u8>),
    FileRange { start: u64, len: u64 },
}

#[derive(Debug)]
pub enum Body {
    Empty,
    Bytes(Vec<u8>),
    /// Bytes shared with the file cache.
    Shared(Arc<[u8]>),
    /// `len` bytes of `file` from `start` (the file may be shared with the
    /// cache of open large files).
    File { file: Arc<File>, start: u64, len: u64 },
    /// multipart/byteranges: literal parts and ranges of one file.
    Parts { file: Arc<File>, parts: Vec<Part> },
    /// Produced while it is sent (a FastCGI application's output). `len` is
    /// known when the application gave a Content-Length; otherwise the MPM
    /// sends it chunked (or until close, to HTTP/1.0 clients).
    Stream { source: Box<dyn BodySource>, len: Option<u64> },
}

/// A body that arrives while it is sent; read on a worker thread, so it
/// may block.
pub trait BodySource: Send {
    /// Appends the next piece to `out`. Ok(false) at the end; an error means
    /// the body is incomplete and the connection must not be reused.
    fn next_piece(&mut self, out: &mut Vec<u8>) -> std::io::Result<bool>;
    /// Whether the body may be read ahead of the client (held by the MPM
    /// meanwhile), rather than at the client's pace.
    fn read_ahead(&self) -> bool {
        false
    }
    /// The encoder of a body compressed as it is sent, for an MPM that
    /// feeds the pieces itself rather than reading them from the source
    /// (the event loop's FastCGI relay).
    fn take_encoder(&mut self) -> Option<compress::StreamEncoder> {
        None
    }
}

impl std::fmt::Debug for dyn BodySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodySource")
    }
}

/// The request body, as a gateway handler reads it from the client through
/// the MPM (which decodes chunking, enforces LimitRequestBody and Timeout,
/// and sends 100 Continue when the client waits for it).
pub trait RequestBody {
    /// Content-Length, or None for a chunked body (or none at all, see `present`).
    fn length(&self) -> Option<u64>;
    /// Whether the request has a body at all.
    fn present(&self) -> bool;
    /// Decoded body bytes; Ok(0) at its end. The error is the answer to give.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, warren_http::HttpError>;
    /// The whole body, when the MPM has already read it (the event loop
    /// does, so that a slow client costs no thread).
    fn take_spooled(&mut self) -> Option<spool::Spooled> {
        None
    }
    /// Sends a backend's interim answer (103 Early Hints ...) to the
    /// client before the final one, where the MPM can (an HTTP/1.1
    /// connection a thread owns); elsewhere it is dropped.
    fn interim(&mut self, _answer: &proxy_http::response::Interim) {}
}

impl Body {
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::Shared(b) => b.len() as u64,
            Body::File { len, .. } => *len,
            Body::Stream { len, .. } => len.unwrap_or(0),
            Body::Parts { parts, .. } => parts
                .iter()
                .map(|p| match p {
                    Part::Bytes(b) => b.len() as u64,
                    Part::FileRange { len, .. } => *len,
                })
                .sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A response header's name: ours are static, a FastCGI application's are not.
pub type HeaderName = std::borrow::Cow<'static, str>;

/// A response plan.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Headers other than Date, Server, Content-Length and Connection, which
    /// the MPM writes.
    pub headers: Vec<(HeaderName, String)>,
    pub body: Body,
    /// Close the connection after this response whatever keep-alive says.
    pub close: bool,
    /// Index of the host that answered, for its access logs.
    pub host: usize,
    /// The file served, for `%f`.
    pub filename: Option<PathBuf>,
    /// A local ErrorDocument that should answer instead of this built-in
    /// error page: an internal redirect that [`Site::handle`] follows.
    pub error_document: Option<String>,
    /// What the response filter stage ([`filters::apply`]) needs of the
    /// request: None where no directive asks for a filter.
    pub filters: Option<Box<filters::RequestFilters>>,
    /// What compression may do to it ([`compress::finish`]).
    pub compress: Option<Box<compress::Offer>>,
    /// A 101 to a WebSocket upgrade: the backend to tunnel the connection
    /// to once this head is sent ([`proxy_http::tunnel`]).
    pub tunnel: Option<Box<proxy_http::tunnel::Tunnel>>,
    /// The rules of a place the request was routed through (a rewrite's,
    /// an internal redirect's target) do not let just anyone have it: the
    /// response cache, whose hits skip those rules, does not store it.
    pub restricted: bool,
}

impl Response {
    pub fn new(status: u16, host: usize) -> Response {
        Response { status, headers: Vec::new(), body: Body::Empty, close: false, host, filename: None, error_document: None, filters: None, compress: None, tunnel: None, restricted: false }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.add(name, value);
        self
    }

    pub fn add(&mut self, name: &'static str, value: impl Into<String>) {
        self.headers.push((HeaderName::Borrowed(name), value.into()));
    }

    /// Says the answer varies on the request header `name`: added to the
    /// Vary field unless it (or `*`) is there already.
    pub fn vary_on(&mut self, name: &str) {
        match self.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("vary")) {
            Some((_, v)) if v.split(',').any(|t| t.trim().eq_ignore_ascii_case(name) || t.trim() == "*") => {}
            Some((_, v)) => {
                v.push_str(", ");
                v.push_str(name);
            }
            None => self.add("Vary", name),
        }
    }
}

/// What the handler decided.
pub enum Outcome {
    Ready(Response),
    Blocking(Box<dyn FnOnce() -> Response + Send>),
    /// A gateway plan (FastCGI, CGI, HTTP backend): the MPM runs it on a thread that may block
    /// ([`Site::run_gateway`]), giving it the request body as it arrives.
    Gateway(Box<gateway::Gateway>),
    /// Only from [`Site::handle_on_loop`]: the request runs rules a site
    /// owner wrote (an `.htaccess` file's), which may be slow; route it
    /// again with [`Site::handle`] on a thread of its own, where a slow
    /// rule holds only this request.
    OffLoop,
}

impl Outcome {
    /// This outcome, marked as an answer not everyone may have (see
    /// [`Response::restricted`]).
    pub(crate) fn restricted(self) -> Outcome {
        match self {
            Outcome::Ready(mut r) => {
                r.restricted = true;
                Outcome::Ready(r)
            }
            Outcome::Blocking(work) => Outcome::Blocking(Box::new(move || Response { restricted: true, ..work() })),
            Outcome::Gateway(mut gw) => {
                gw.restricted = true;
                Outcome::Gateway(gw)
            }
            Outcome::OffLoop => Outcome::OffLoop,
        }
    }
}
