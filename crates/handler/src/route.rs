//! A request routed once: the host chosen for it ([`Request`]), then its
//! URL mapped to a file and the per-directory configuration merged for
//! both ([`Route`], [`Effective`]), passed on as one value to whatever
//! answers it.

use std::path::{Path, PathBuf};

use warren_config::{ConfigError, DirConfig, DirSection, ErrorDocument, FcgiBackendType, Handler, OptionFlags, Require, SectionMatch};
use warren_http::RequestHead;

use crate::htaccess;
use crate::path;
use crate::env::RequestEnv;
use crate::sections::{ancestors, dir_contains, ip_in, location_matches, wildcard_match};
use crate::site::{ConnInfo, Site};

/// Apache's default LimitRequestBody (1 GiB) since 2.4.53.
pub const DEFAULT_LIMIT_REQUEST_BODY: u64 = 1 << 30;

/// A request as the handler answers it: its head, its connection, and the
/// host chosen for it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub head: &'a RequestHead,
    pub conn: &'a ConnInfo,
    /// Index into [`Site::hosts`].
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
    pub rules_deadline: Option<warren_rewrite::CpuDeadline>,
    /// Routed on the event loop: rules from `.htaccess` files are not run
    /// here ([`crate::Outcome::OffLoop`]).
    pub on_loop: bool,
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

impl Site {
    /// The request, with its host chosen (see [`Site::select_host`]).
    pub fn request<'a>(&self, head: &'a RequestHead, conn: &'a ConnInfo) -> Request<'a> {
        Request::new(head, conn, self.select_host(head.host(), conn.local))
    }

    /// The configuration layers that apply to a file and URL, least specific
    /// first: Apache's directory walk (each directory's `<Directory>`
    /// sections, shortest path first, then its `.htaccess` file where
    /// AllowOverride lets one in), then `<DirectoryMatch>`, `<Files>`
    /// (the server's, then those of the `.htaccess` files) and `<Location>`.
    pub fn effective<'a>(&'a self, host: usize, fs_path: Option<&Path>, url_path: &[u8]) -> Effective<'a> {
        let h = &self.hosts[host];
        let mut eff = Effective { layers: vec![Layer::Site(&h.config.dir)], htaccess_error: None, htaccess_deferred: false };
        if h.config.sections.is_empty() {
            return eff;
        }
        let fs = fs_path.map(|p| p.to_string_lossy().into_owned());
        let url = String::from_utf8_lossy(url_path);
        let file_name = fs.as_deref().map(|p| p.rsplit('/').next().unwrap_or(""));
        let dir_matches = |m: &SectionMatch| -> bool {
            let Some(fs) = fs.as_deref() else { return false };
            match m {
                SectionMatch::Directory(d) => dir_contains(d, fs),
                SectionMatch::DirectoryMatch(re) => ancestors(fs).any(|a| re.is_match(a)),
                _ => false,
            }
        };
        let mut dirs: Vec<(usize, &DirConfig)> = Vec::new();
        for s in &h.config.sections {
            if let SectionMatch::Directory(d) = &s.matcher {
                if s.within.is_none() && dir_matches(&s.matcher) {
                    dirs.push((d.matches('/').count(), &s.config));
                }
            }
        }
        dirs.sort_by_key(|(depth, _)| *depth);
        let mut files_from_htaccess: Vec<htaccess::Read> = Vec::new();
        match (fs.as_deref(), h.reads_htaccess) {
            (Some(fs), true) => {
                let names = &h.access_file_names;
                let mut overrides = h.config.dir.allow_override.as_ref();
                let mut pending = dirs.into_iter().peekable();
                for dir in ancestors(fs) {
                    let depth = if dir == "/" { 0 } else { dir.matches('/').count() };
                    while let Some((_, c)) = pending.next_if(|(d, _)| *d <= depth) {
                        overrides = c.allow_override.as_ref().or(overrides);
                        eff.layers.push(Layer::Site(c));
                    }
                    let Some(o) = overrides.filter(|o| o.reads_files()) else { continue };
                    for name in names {
                        let say = |read: &crate::htaccess::Read| {
                            for note in read.as_ref().as_ref().map_or(&[][..], |f| &f.notes[..]) {
                                h.error_log.log(warren_config::LogLevel::Warn, None, &note.to_string());
                            }
                        };
                        let read = match self.htaccess.get(dir, name, o, &h.config, &self.settings, say) {
                            Ok(Some(read)) => read,
                            Ok(None) => continue,
                            Err(crate::htaccess::Deferred) => {
                                eff.htaccess_deferred = true;
                                break;
                            }
                        };
                        match &*read {
                            Ok(file) => {
                                eff.layers.push(Layer::File(read.clone(), 0));
                                if file.sections.len() > 1 {
                                    files_from_htaccess.push(read.clone());
                                }
                            }
                            Err(_) => {
                                eff.htaccess_error = Some(read.clone());
                                break;
                            }
                        }
                    }
                    if eff.htaccess_error.is_some() || eff.htaccess_deferred {
                        break;
                    }
                }
                eff.layers.extend(pending.map(|(_, c)| Layer::Site(c)));
            }
            _ => eff.layers.extend(dirs.into_iter().map(|(_, c)| Layer::Site(c))),
        }
        for s in &h.config.sections {
            if matches!(s.matcher, SectionMatch::DirectoryMatch(_)) && s.within.is_none() && dir_matches(&s.matcher) {
                eff.layers.push(Layer::Site(&s.config));
            }
        }
        let file_hit = |s: &DirSection| {
            let hit = match (&s.matcher, file_name) {
                (SectionMatch::Files(pat), Some(name)) => wildcard_match(pat, name),
                (SectionMatch::FilesMatch(re), Some(name)) => re.is_match(name),
                _ => false,
            };
            hit && s.within.as_deref().is_none_or(&dir_matches)
        };
        for s in &h.config.sections {
            if file_hit(s) {
                eff.layers.push(Layer::Site(&s.config));
            }
        }
        for read in &files_from_htaccess {
            let Ok(file) = &**read else { continue };
            for (i, s) in file.sections.iter().enumerate().skip(1) {
                if file_hit(s) {
                    eff.layers.push(Layer::File(read.clone(), i));
                }
            }
        }
        for s in &h.config.sections {
            let hit = match &s.matcher {
                SectionMatch::Location(prefix) => location_matches(prefix, &url),
                SectionMatch::LocationMatch(re) => re.is_match(&url),
                _ => false,
            };
            if hit {
                eff.layers.push(Layer::Site(&s.config));
            }
        }
        eff
    }

    /// LimitRequestBody for a request, known before its body is read.
    pub fn body_limit(&self, head: &RequestHead, conn: &ConnInfo) -> u64 {
        let host = self.request(head, conn).host;
        let url = path::lookup_url(head.path_and_query());
        let fs = self.lookup_fs_path(host, &url);
        let limit = self.effective(host, Some(&fs), &url).limit_request_body();
        if limit == 0 {
            u64::MAX
        } else {
            limit
        }
    }
}

/// One layer of per-directory configuration: a section of the server's
/// configuration, or one of an `.htaccess` file's (by index).
pub enum Layer<'a> {
    Site(&'a DirConfig),
    File(htaccess::Read, usize),
}

impl std::ops::Deref for Layer<'_> {
    type Target = DirConfig;
    fn deref(&self) -> &DirConfig {
        match self {
            Layer::Site(c) => c,
            Layer::File(read, i) => match &**read {
                Ok(file) => &file.sections[*i].config,
                Err(_) => unreachable!("only files read without error are layers"),
            },
        }
    }
}

/// The DirConfig layers that apply to one request, least specific first.
pub struct Effective<'a> {
    pub layers: Vec<Layer<'a>>,
    /// An `.htaccess` file on the way that has an error: the request is
    /// answered 500, as in Apache.
    pub htaccess_error: Option<htaccess::Read>,
    /// An `.htaccess` file on the way was not read, on an event loop's
    /// thread: the layers stop short of it, and the request is routed on a
    /// worker thread ([`crate::Outcome::OffLoop`]).
    pub htaccess_deferred: bool,
}

impl Effective<'_> {
    /// The error of the `.htaccess` file on the way that has one.
    pub fn htaccess_error(&self) -> Option<&ConfigError> {
        self.htaccess_error.as_deref().and_then(|r| r.as_ref().err())
    }

    /// Whether the `Require` rules in force let the client in, and
    /// SSLRequireSSL, over TLS only.
    pub fn allows(&self, conn: &ConnInfo) -> bool {
        if conn.tls.is_none() && self.last(|l| l.ssl_require_ssl.as_ref()) == Some(&true) {
            return false;
        }
        let (peer, local) = (conn.useragent.ip(), conn.local.ip());
        let Some(rules) = self.require() else { return true };
        rules.iter().any(|r| match r {
            Require::All(g) => *g,
            Require::Local => peer.is_loopback() || peer == local,
            Require::Ip(nets) => nets.iter().any(|(net, len)| ip_in(peer, *net, *len)),
        })
    }

    pub fn options(&self) -> OptionFlags {
        let mut f = OptionFlags::DEFAULT;
        for l in &self.layers {
            for spec in &l.options {
                f = spec.apply(f);
            }
        }
        f
    }

    /// Whether an `.htaccess` file on the way has regular expressions that
    /// routing runs (rewrite rules, SetEnvIf, RedirectMatch): a site owner's
    /// patterns, which may be slow to match.
    pub fn runs_htaccess_patterns(&self) -> bool {
        use warren_config::alias::UrlMatch;
        self.layers.iter().any(|l| {
            matches!(l, Layer::File(..))
                && (l.rewrite.as_ref().is_some_and(|r| !r.rules.is_empty()) || !l.set_env_if.is_empty() || l.redirects.iter().any(|r| matches!(r.url, UrlMatch::Regex(_))))
        })
    }

    fn last<'s, T: ?Sized>(&'s self, get: impl Fn(&'s DirConfig) -> Option<&'s T>) -> Option<&'s T> {
        self.layers.iter().rev().find_map(|l| get(l))
    }

    pub fn require(&self) -> Option<&[Require]> {
        self.last(|l| l.require.as_deref())
    }

    /// IndexIgnore's patterns in force: each level's added to those above
    /// it, unless IndexIgnoreReset On drops those.
    pub fn index_ignore(&self) -> Vec<String> {
        let mut patterns = Vec::new();
        for l in &self.layers {
            if l.index_ignore_reset == Some(true) {
                patterns.clear();
            }
            patterns.extend(l.index_ignore.iter().cloned());
        }
        patterns
    }

    pub fn directory_index(&self) -> &[String] {
        self.last(|l| l.directory_index.as_deref()).unwrap_or(&[])
    }

    pub fn error_document(&self, status: u16) -> Option<&ErrorDocument> {
        self.layers.iter().rev().find_map(|l| l.error_documents.iter().rev().find(|(c, _)| *c == status).map(|(_, d)| d))
    }

    pub fn add_types(&self) -> impl Iterator<Item = &(String, String)> {
        self.layers.iter().rev().flat_map(|l| l.add_types.iter().rev())
    }

    pub fn default_charset(&self) -> Option<&str> {
        self.last(|l| l.add_default_charset.as_ref()).and_then(|c| c.as_deref())
    }

    /// SetHandler in force: None if never set, Some(None) if reset.
    pub fn handler(&self) -> Option<Option<&Handler>> {
        self.layers.iter().rev().find_map(|l| l.handler.as_ref()).map(|h| h.as_ref())
    }

    /// FallbackResource in force.
    pub fn fallback_resource(&self) -> Option<&str> {
        self.layers.iter().rev().find_map(|l| l.fallback_resource.as_ref()).and_then(|f| f.as_deref())
    }

    /// DirectorySlash (On unless set).
    pub fn directory_slash(&self) -> bool {
        self.layers.iter().rev().find_map(|l| l.directory_slash).unwrap_or(true)
    }

    /// AcceptPathInfo: None for Default.
    pub fn accept_path_info(&self) -> Option<bool> {
        self.layers.iter().rev().find_map(|l| l.accept_path_info).flatten()
    }

    pub fn fcgi_backend_type(&self) -> FcgiBackendType {
        self.layers.iter().rev().find_map(|l| l.fcgi_backend_type).unwrap_or(FcgiBackendType::Fpm)
    }

    pub fn limit_request_body(&self) -> u64 {
        self.layers.iter().rev().find_map(|l| l.limit_request_body).unwrap_or(DEFAULT_LIMIT_REQUEST_BODY)
    }
}
