//! Requests -> response plans. No sockets here.
//!
//! [`Site`] (router.rs) is built once from the settings: its hosts (the main
//! server and the virtual hosts), MIME table, logs and Server header. For
//! each request it picks a host, resolves the per-directory configuration
//! ([`router::Effective`]) and answers with an [`Outcome`]:
//! - [`Outcome::Ready`]: a [`Response`] computed at once, cheaply and without
//!   blocking (static files, errors, redirects). The event MPM serves these
//!   on its event loop.
//! - [`Outcome::Blocking`]: work that may block for long (directory listings
//!   now, FastCGI later), run on a worker thread.
//!
//! A [`Response`] is a plan: status, headers and a [`Body`] that may be bytes
//! or ranges of an open file, so each MPM does the I/O its own way (blocking
//! writes, or non-blocking writes and sendfile with write completion).
//!
//! Modules: `static_files` (conditionals, ranges, files), `errors` (error
//! pages and ErrorDocument), `listing` (Options Indexes), `path` (decoding
//! and normalising URL paths), `mime`, `logs` (error and access logs).

pub mod errors;
pub mod file_cache;
pub mod listing;
pub mod logs;
pub mod mime;
pub mod path;
pub mod router;
pub mod static_files;
pub mod status;

use std::fs::File;
use std::path::PathBuf;

pub use router::{ConnInfo, Site};

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
    Shared(std::sync::Arc<[u8]>),
    /// `len` bytes of `file` from `start`.
    File { file: File, start: u64, len: u64 },
    /// multipart/byteranges: literal parts and ranges of one file.
    Parts { file: File, parts: Vec<Part> },
}

impl Body {
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::Shared(b) => b.len() as u64,
            Body::File { len, .. } => *len,
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

/// A response plan.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Headers other than Date, Server, Content-Length and Connection, which
    /// the MPM writes.
    pub headers: Vec<(&'static str, String)>,
    pub body: Body,
    /// Close the connection after this response whatever keep-alive says.
    pub close: bool,
    /// Index of the host that answered, for its access logs.
    pub host: usize,
    /// The file served, for `%f`.
    pub filename: Option<PathBuf>,
}

impl Response {
    pub fn new(status: u16, host: usize) -> Response {
        Response { status, headers: Vec::new(), body: Body::Empty, close: false, host, filename: None }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// What the handler decided.
pub enum Outcome {
    Ready(Response),
    Blocking(Box<dyn FnOnce() -> Response + Send>),
}
