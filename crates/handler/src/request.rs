//! A request as the handler sees it once its host is chosen ([`Request`]),
//! and once its URL is mapped ([`Route`]): the one value passed on to
//! whatever answers it.

use std::path::PathBuf;

use warren_http::RequestHead;

use crate::conn::ConnInfo;
use crate::dir_config::Effective;
use crate::env::RequestEnv;

/// A request as the handler answers it: its head, its connection, and the
/// host chosen for it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub head: &'a RequestHead,
    pub conn: &'a ConnInfo,
    /// Index into `Site::hosts`.
    pub host: usize,
    /// Its environment variables (mod_rewrite's `[E=]`).
    pub env: &'a RequestEnv,
    /// What earlier passes of an internally redirected request left.
    pub pass: Pass<'a>,
}

/// What carries over from one pass of a request to the next (an internal
/// redirect of mod_rewrite's), and what the rules decided for the answer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pass<'a> {
    /// Internal redirects so far (Apache's LimitInternalRecursion: 10).
    pub redirects: u8,
    /// `[END]`: no more rewriting for this request.
    pub rewrite_ended: bool,
    /// `[T=type]`: the Content-Type of a file served.
    pub forced_type: Option<&'a str>,
    /// When the request's rewrite rules, all passes together, must be done
    /// (see [`crate::rewrite::RULES_TIME_BUDGET`]).
    pub rules_deadline: Option<&'a warren_rewrite::CpuDeadline>,
    /// Routed on the event loop: rules from `.htaccess` files are not run
    /// here ([`crate::Outcome::OffLoop`]).
    pub on_loop: bool,
    /// CacheQuickHandler Off: the stored answer looked up once the access
    /// checks let the client in (response_cache.rs).
    pub cache_after_access: Option<&'a crate::response_cache::lookup::AfterAccess>,
}

impl<'a> Request<'a> {
    /// A request on its first pass, with no variables set.
    pub fn new(head: &'a RequestHead, conn: &'a ConnInfo, host: usize) -> Request<'a> {
        Request { head, conn, host, env: &crate::env::EMPTY, pass: Pass::default() }
    }
}

/// A request mapped: its decoded, normalised URL path and query, the file
/// that path names under the host's DocumentRoot, and the sections that
/// apply to both, merged. A directory index or a script found on the way
/// is a resource of its own and gets a route of its own.
pub struct Route<'a> {
    pub req: Request<'a>,
    pub url: &'a [u8],
    /// With its `?`, or empty.
    pub query: &'a [u8],
    pub fs: PathBuf,
    pub dir: Effective<'a>,
}
