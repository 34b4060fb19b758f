//! FastCGI applications as the configuration names them: where one listens
//! ([`FcgiAddr`]), how warren talks to it ([`FcgiBackend`]), and the
//! `ProxyPass` routes that send URLs to one ([`ProxyRoute`]).

use std::path::PathBuf;
use std::time::Duration;

use warren_regex::Regex;

use crate::parse::Origin;

/// Where a FastCGI application listens.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FcgiAddr {
    Unix(PathBuf),
    Tcp { host: String, port: u16 },
    /// One of warren's own `<Pool>`s: a child is leased for each request.
    Pool(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FcgiBackend {
    pub addr: FcgiAddr,
    /// `enablereuse=on`: keep connections open between requests
    /// (FCGI_KEEP_CONN). Off by default as in Apache: a php-fpm child stays
    /// tied to a kept connection, so more kept connections than children
    /// would starve the pool.
    pub reuse: bool,
    /// `timeout=N` on the ProxyPass line; else ProxyTimeout.
    pub timeout: Option<Duration>,
    /// `flushpackets=on` (or `auto`): the answer goes to the client as the
    /// application writes it, at the client's pace. Off by default: the
    /// answer is read at the application's pace, whatever does not fit the
    /// client's socket held in memory and then a temporary file, so that a
    /// slow client never holds the application.
    pub flush_packets: bool,
}

/// `ProxyFCGIBackendType`: FPM (php-fpm splits PATH_INFO off a
/// SCRIPT_FILENAME it cannot find) or GENERIC (the script path is sent
/// exactly as mapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcgiBackendType {
    Fpm,
    Generic,
}

/// A `ProxyPass` or `ProxyPassMatch` line.
#[derive(Clone, Debug)]
pub struct ProxyRoute {
    pub pattern: ProxyPattern,
    /// None for `ProxyPass /path !` (not proxied).
    pub target: Option<ProxyTarget>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub enum ProxyPattern {
    Prefix(String),
    Regex(Regex),
}

#[derive(Clone, Debug)]
pub struct ProxyTarget {
    pub backend: FcgiBackend,
    /// The path part of the `fcgi://` URL: the script's path on the backend,
    /// with `$1`..`$9` for ProxyPassMatch's groups. For an HTTP backend,
    /// the URL path the request goes to.
    pub path: String,
    /// Some for an `http://` backend (mod_proxy_http): `backend.addr` is
    /// where it is reached, `backend.reuse` whether connections are kept.
    pub http: Option<Box<crate::proxy_http::HttpOrigin>>,
    /// `balancer://name/path`: the balancer whose member answers (see
    /// [`crate::balancer`]); then `backend` is unused and `path` is joined
    /// to the chosen member's.
    pub balancer: Option<String>,
}
