//! A request routed once: the host chosen for it ([`Request`]), then its
//! URL mapped to a file and the per-directory configuration merged for
//! both ([`Route`], [`Effective`]), passed on as one value to whatever
//! answers it.

use std::path::{Path, PathBuf};

use warren_config::{DirConfig, ErrorDocument, FcgiBackendType, Handler, OptionFlags, Require, SectionMatch};
use warren_http::RequestHead;

use crate::path;
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
        Request { head, conn, host: self.select_host(head.host(), conn.local) }
    }

    /// The configuration layers that apply to a file and URL, least specific
    /// first.
    pub fn effective<'a>(&'a self, host: usize, fs_path: Option<&Path>, url_path: &[u8]) -> Effective<'a> {
        let h = &self.hosts[host];
        let mut layers: Vec<&DirConfig> = vec![&h.config.dir];
        if h.config.sections.is_empty() {
            return Effective { layers };
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
        // Directory sections, shortest path first; then the regex forms.
        let mut dirs: Vec<(usize, &DirConfig)> = Vec::new();
        for s in &h.config.sections {
            if let SectionMatch::Directory(d) = &s.matcher {
                if s.within.is_none() && dir_matches(&s.matcher) {
                    dirs.push((d.matches('/').count(), &s.config));
                }
            }
        }
        dirs.sort_by_key(|(depth, _)| *depth);
        layers.extend(dirs.into_iter().map(|(_, c)| c));
        for s in &h.config.sections {
            if matches!(s.matcher, SectionMatch::DirectoryMatch(_)) && s.within.is_none() && dir_matches(&s.matcher) {
                layers.push(&s.config);
            }
        }
        for s in &h.config.sections {
            let hit = match (&s.matcher, file_name) {
                (SectionMatch::Files(pat), Some(name)) => wildcard_match(pat, name),
                (SectionMatch::FilesMatch(re), Some(name)) => re.is_match(name),
                _ => false,
            };
            if hit && s.within.as_deref().is_none_or(&dir_matches) {
                layers.push(&s.config);
            }
        }
        for s in &h.config.sections {
            let hit = match &s.matcher {
                SectionMatch::Location(prefix) => location_matches(prefix, &url),
                SectionMatch::LocationMatch(re) => re.is_match(&url),
                _ => false,
            };
            if hit {
                layers.push(&s.config);
            }
        }
        Effective { layers }
    }

    /// LimitRequestBody for a request, known before its body is read.
    pub fn body_limit(&self, head: &RequestHead, conn: &ConnInfo) -> u64 {
        let host = self.request(head, conn).host;
        let url = path::lookup_url(head.path_and_query());
        let fs = self.fs_path(host, &url);
        let limit = self.effective(host, Some(&fs), &url).limit_request_body();
        if limit == 0 {
            u64::MAX
        } else {
            limit
        }
    }
}

/// The DirConfig layers that apply to one request, least specific first.
pub struct Effective<'a> {
    pub layers: Vec<&'a DirConfig>,
}

impl<'a> Effective<'a> {
    /// Whether the `Require` rules in force let the client in.
    pub fn allows(&self, conn: &ConnInfo) -> bool {
        let (peer, local) = (conn.peer.ip(), conn.local.ip());
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

    fn last<T: ?Sized>(&self, get: impl Fn(&'a DirConfig) -> Option<&'a T>) -> Option<&'a T> {
        self.layers.iter().rev().find_map(|l| get(l))
    }

    pub fn require(&self) -> Option<&'a [Require]> {
        self.last(|l| l.require.as_deref())
    }

    pub fn directory_index(&self) -> &'a [String] {
        self.last(|l| l.directory_index.as_deref()).unwrap_or(&[])
    }

    pub fn error_document(&self, status: u16) -> Option<&'a ErrorDocument> {
        self.layers.iter().rev().find_map(|l| l.error_documents.iter().rev().find(|(c, _)| *c == status).map(|(_, d)| d))
    }

    pub fn add_types(&self) -> impl Iterator<Item = &'a (String, String)> + '_ {
        self.layers.iter().rev().flat_map(|l| l.add_types.iter().rev())
    }

    pub fn default_charset(&self) -> Option<&'a str> {
        self.last(|l| l.add_default_charset.as_ref()).and_then(|c| c.as_deref())
    }

    /// SetHandler in force: None if never set, Some(None) if reset.
    pub fn handler(&self) -> Option<Option<&'a Handler>> {
        self.layers.iter().rev().find_map(|l| l.handler.as_ref()).map(|h| h.as_ref())
    }

    /// FallbackResource in force.
    pub fn fallback_resource(&self) -> Option<&'a str> {
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
