//! The site: hosts chosen by address and Host header, the per-request
//! merge of `<Directory>`/`<Files>`/`<Location>` layers, and method dispatch.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use warren_config::{
    DirConfig, ErrorDocument, FcgiBackend, FcgiBackendType, Handler, HostConfig, LogItem, OptionFlags, ProxyPattern, Require,
    SectionMatch, ServerTokens, Settings, VhostAddr,
};
use warren_http::RequestHead;

use crate::fastcgi::{split_path_info, BackendPool, PoolDispatch, ScriptTarget};
use crate::file_cache::FileCache;
use crate::logs::{AccessLogFile, AccessLogWriter, ErrorLog, LogRecord};
use crate::mime::MimeTypes;
use crate::status::StatusSource;
use crate::path::{self, PathError};
use crate::{errors, static_files, Outcome, Response};

/// Apache's default LimitRequestBody (1 GiB) since 2.4.53.
pub const DEFAULT_LIMIT_REQUEST_BODY: u64 = 1 << 30;

/// The two ends of a connection.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

pub struct Host {
    pub config: HostConfig,
    /// None for the main server.
    addrs: Option<Vec<VhostAddr>>,
    /// Indexes into `Site::access_logs`.
    logs: Vec<usize>,
    pub error_log: Arc<ErrorLog>,
    pub name: String,
    /// Whether any section hands files to a FastCGI application, so that
    /// `/script.php/path/info` URLs are looked for.
    has_fastcgi: bool,
    /// The pools (`pool:NAME`) this host sends requests to: their status
    /// pages are answered here and on no other host.
    pools: Vec<String>,
}

pub struct Site {
    pub settings: Settings,
    /// `hosts[0]` is the main server; the virtual hosts follow in config order.
    pub hosts: Vec<Host>,
    pub mime: MimeTypes,
    pub server_header: String,
    pub error_log: Arc<ErrorLog>,
    access_logs: Vec<(Arc<Vec<LogItem>>, Arc<AccessLogFile>)>,
    pub file_cache: FileCache,
    /// Where server-status reads the scoreboard; set by the MPM.
    pub status: OnceLock<Arc<dyn StatusSource>>,
    /// Idle connections to FastCGI applications (`enablereuse=on`).
    pub backends: Arc<BackendPool>,
    /// warren's own pools (`SetHandler pool:NAME`); set by the parent.
    pub pools: OnceLock<Arc<dyn PoolDispatch>>,
}

pub fn server_header(tokens: ServerTokens) -> String {
    let v = env!("CARGO_PKG_VERSION");
    let mut parts = v.split('.');
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    match tokens {
        ServerTokens::Full | ServerTokens::Os => format!("warren/{v} (Unix)"),
        ServerTokens::Minimal => format!("warren/{v}"),
        ServerTokens::Minor => format!("warren/{major}.{minor}"),
        ServerTokens::Major => format!("warren/{major}"),
        ServerTokens::Prod => "warren".to_string(),
    }
}

impl Site {
    /// Opens logs and reads the MIME table: everything that can fail is done
    /// here, before any child starts.
    pub fn new(settings: Settings) -> Result<Site, String> {
        let error_log = Arc::new(ErrorLog::open(settings.error_log.as_deref(), settings.log_level).map_err(|e| e.to_string())?);
        let mime = MimeTypes::load(settings.types_config.as_deref()).map_err(|e| format!("cannot read TypesConfig: {e}"))?;
        let mut access_logs: Vec<(Arc<Vec<LogItem>>, Arc<AccessLogFile>)> = Vec::new();
        let mut error_logs: Vec<(PathBuf, Arc<ErrorLog>)> = Vec::new();
        let mut hosts = Vec::new();
        let configs = std::iter::once((settings.main.clone(), None))
            .chain(settings.virtual_hosts.iter().map(|v| (v.host.clone(), Some(v.addrs.clone()))));
        for (config, addrs) in configs {
            let mut logs = Vec::new();
            for cl in &config.custom_logs {
                let file = match access_logs.iter().find(|(_, f)| f.path == cl.path) {
                    Some((_, f)) => f.clone(),
                    None => AccessLogFile::open(&cl.path).map_err(|e| e.to_string())?,
                };
                let format = Arc::new(cl.format.clone());
                let idx = match access_logs.iter().position(|(fm, f)| **fm == *format && Arc::ptr_eq(f, &file)) {
                    Some(i) => i,
                    None => {
                        access_logs.push((format, file));
                        access_logs.len() - 1
                    }
                };
                logs.push(idx);
            }
            let host_error_log = match &config.error_log {
                Some(p) if Some(p) != settings.error_log.as_ref() => match error_logs.iter().find(|(q, _)| q == p) {
                    Some((_, l)) => l.clone(),
                    None => {
                        let l = Arc::new(ErrorLog::open(Some(p), settings.log_level).map_err(|e| e.to_string())?);
                        error_logs.push((p.clone(), l.clone()));
                        l
                    }
                },
                _ => error_log.clone(),
            };
            let name = config.server_name.clone().unwrap_or_else(|| "localhost".to_string());
            let is_fcgi = |d: &DirConfig| matches!(d.handler, Some(Some(Handler::FastCgi(_) | Handler::Pool(_))));
            let has_fastcgi = is_fcgi(&config.dir) || config.sections.iter().any(|s| is_fcgi(&s.config));
            let pools = pools_used(&config);
            hosts.push(Host { config, addrs, logs, error_log: host_error_log, name, has_fastcgi, pools });
        }
        Ok(Site {
            server_header: server_header(settings.server_tokens),
            settings,
            hosts,
            mime,
            error_log,
            access_logs,
            file_cache: FileCache::default(),
            status: OnceLock::new(),
            backends: Arc::default(),
            pools: OnceLock::new(),
        })
    }

    /// Fresh buffered writers for this thread's access logging.
    pub fn log_writers(&self) -> LogWriters {
        LogWriters {
            writers: self.access_logs.iter().map(|(fmt, f)| AccessLogWriter::new(fmt.clone(), f.clone())).collect(),
            host_logs: self.hosts.iter().map(|h| h.logs.clone()).collect(),
        }
    }

    /// Reopens every log file (SIGUSR1).
    pub fn reopen_logs(&self) {
        let _ = self.error_log.reopen();
        for h in &self.hosts {
            let _ = h.error_log.reopen();
        }
        for (_, f) in &self.access_logs {
            if let Err(e) = f.reopen() {
                self.error_log.error(None, &format!("cannot reopen access log {}: {e}", f.path.display()));
            }
        }
    }

    /// Name-based virtual hosting: among the hosts whose address matches
    /// the connection's local end, the one whose ServerName or ServerAlias is
    /// the Host, else the first of them; the main server if none matches.
    pub fn select_host(&self, host: Option<&[u8]>, local: SocketAddr) -> usize {
        if self.hosts.len() == 1 {
            return 0;
        }
        let wanted = host.map(|h| {
            let h = crate::logs::strip_port(h);
            let h = h.strip_suffix(b".").unwrap_or(h);
            String::from_utf8_lossy(h).to_ascii_lowercase()
        });
        let mut first = None;
        for (i, h) in self.hosts.iter().enumerate().skip(1) {
            let addrs = h.addrs.as_deref().unwrap_or(&[]);
            let matches_addr = addrs.iter().any(|a| {
                a.ip.is_none_or(|ip| ip == local.ip() || ip.is_unspecified()) && a.port.is_none_or(|p| p == local.port())
            });
            if !matches_addr {
                continue;
            }
            first.get_or_insert(i);
            if let Some(w) = &wanted {
                let c = &h.config;
                if c.server_name.as_deref() == Some(w.as_str()) || c.aliases.iter().any(|a| wildcard_match(a, w)) {
                    return i;
                }
            }
        }
        first.unwrap_or(0)
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
        let host = self.select_host(head.host(), conn.local);
        let url = path::lookup_url(head.path_and_query());
        let fs = self.fs_path(host, &url);
        let limit = self.effective(host, Some(&fs), &url).limit_request_body();
        if limit == 0 {
            u64::MAX
        } else {
            limit
        }
    }

    /// Where a normalised URL path lies under the host's DocumentRoot.
    pub fn fs_path(&self, host: usize, url: &[u8]) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let root = &self.hosts[host].config.document_root;
        let rel = std::ffi::OsStr::from_bytes(url.strip_prefix(b"/").unwrap_or(url));
        root.join(rel)
    }

    /// Where a request goes and what answers it; [`Site::handle`] adds
    /// the ErrorDocument of an error it ends in.
    pub(crate) fn route(&self, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        let host = self.select_host(head.host(), conn.local);
        let raw = head.path_and_query();
        if raw == b"*" {
            return Outcome::Ready(match head.method() {
                "OPTIONS" => Response::new(200, host).header("Allow", "GET, HEAD, OPTIONS"),
                _ => self.error(host, 400, head, conn, "request-target * is only for OPTIONS"),
            });
        }
        let (raw_path, query) = path::split_query(raw);
        let url = match path::normalize(raw_path) {
            Ok(u) => u,
            Err(PathError::BadRequest(why)) => {
                return Outcome::Ready(self.error(host, 400, head, conn, &format!("invalid URI in request: {why}")))
            }
            Err(PathError::NotFound(why)) => return Outcome::Ready(self.error(host, 404, head, conn, why)),
        };
        if let Some(o) = self.pool_status(host, head, conn, &url, query) {
            return o;
        }
        // ProxyPass and ProxyPassMatch take any method to the application.
        if let Some(o) = self.proxy_route(host, head, conn, &url, query) {
            return o;
        }
        let fs = self.fs_path(host, &url);
        let eff = self.effective(host, Some(&fs), &url);
        match eff.handler() {
            Some(Some(Handler::ServerStatus)) => {
                if !self.allowed(&eff, conn.peer.ip(), conn.local.ip()) {
                    return Outcome::Ready(self.denied(host, head, conn, &url));
                }
                let Some(source) = self.status.get() else {
                    return Outcome::Ready(self.error(host, 503, head, conn, "server-status: no scoreboard in this process"));
                };
                let auto = query.split(|&b| b == b'?' || b == b'&').any(|p| p == b"auto");
                let snap = source.snapshot();
                return Outcome::Ready(crate::status::respond(host, &snap, auto, self.settings.extended_status, &self.hosts[host].name, &self.server_header));
            }
            Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) => {
                return self.script_gateway(host, head, conn, &eff, &backend_of(h), fs, &url, 0, query)
            }
            _ => {}
        }
        if self.hosts[host].has_fastcgi {
            if let Some(o) = self.path_info_gateway(host, head, conn, &url, query) {
                return o;
            }
        }
        // A directory may hand its index to an application (any method):
        // static_files decides after DirectoryIndex.
        if !url.ends_with(b"/") {
            if let Some(r) = self.static_method(host, head, conn) {
                return Outcome::Ready(r);
            }
        }
        static_files::serve(self, host, head, conn, eff, &url, raw_path, query, fs)
    }

    /// A pool's `pm.status_path`, answered by warren from the pool's table
    /// on the hosts that use the pool (as php-fpm answers it only to the
    /// requests sent to it): its page lists request URIs and query strings.
    fn pool_status(&self, host: usize, head: &RequestHead, conn: &ConnInfo, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let used = &self.hosts[host].pools;
        let pool = self.settings.pools.iter().find(|p| used.contains(&p.name) && p.status_path.as_deref().is_some_and(|s| s.as_bytes() == url))?;
        let eff = self.effective(host, None, url);
        if !self.allowed(&eff, conn.peer.ip(), conn.local.ip()) {
            return Some(Outcome::Ready(self.denied(host, head, conn, url)));
        }
        let Some(st) = self.pools.get().and_then(|d| d.status(&pool.name)) else {
            return Some(Outcome::Ready(self.error(host, 503, head, conn, &format!("pool {} is not running", pool.name))));
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Some(Outcome::Ready(crate::pool_status::respond(host, &st, query, now)))
    }

    /// The answer to a method that static resources do not take, if it is one.
    pub fn static_method(&self, host: usize, head: &RequestHead, conn: &ConnInfo) -> Option<Response> {
        let method = head.method();
        match method {
            "GET" | "HEAD" => None,
            "OPTIONS" => Some(Response::new(200, host).header("Allow", "GET, HEAD, OPTIONS")),
            "POST" | "PUT" | "DELETE" | "PATCH" | "TRACE" | "CONNECT" | "PROPFIND" | "PROPPATCH" | "MKCOL" | "COPY"
            | "MOVE" | "LOCK" | "UNLOCK" => {
                let r = self.error(host, 405, head, conn, &format!("method {method} not allowed for this URL"));
                Some(r.header("Allow", "GET, HEAD, OPTIONS"))
            }
            _ => Some(self.error(host, 501, head, conn, &format!("method {method} not implemented"))),
        }
    }

    fn denied(&self, host: usize, head: &RequestHead, conn: &ConnInfo, what: &[u8]) -> Response {
        self.error(host, 403, head, conn, &format!("client denied by server configuration: {}", String::from_utf8_lossy(what)))
    }

    /// A local script (`SetHandler proxy:...`) for the application, the last
    /// `path_info_len` bytes of `url` being its PATH_INFO.
    #[allow(clippy::too_many_arguments)]
    pub fn script_gateway(
        &self,
        host: usize,
        head: &RequestHead,
        conn: &ConnInfo,
        eff: &Effective,
        backend: &FcgiBackend,
        script: PathBuf,
        url: &[u8],
        path_info_len: usize,
        query: &[u8],
    ) -> Outcome {
        if !self.allowed(eff, conn.peer.ip(), conn.local.ip()) {
            return Outcome::Ready(self.denied(host, head, conn, &url[..url.len() - path_info_len]));
        }
        match std::fs::metadata(&script) {
            Ok(m) if m.is_file() => {}
            _ => {
                self.hosts[host].error_log.log(warren_config::LogLevel::Info, Some(conn.peer), &format!("File does not exist: {}", script.display()));
                return Outcome::Ready(errors::respond(self, host, 404, Some(head), conn));
            }
        }
        if let Some(refusal) = crate::symlinks::check_script(self, host, head, conn, eff, &script) {
            return Outcome::Ready(refusal);
        }
        if path_info_len > 0 && eff.accept_path_info() == Some(false) {
            self.hosts[host].error_log.log(warren_config::LogLevel::Info, Some(conn.peer), &format!("path info refused by AcceptPathInfo Off: {}", String::from_utf8_lossy(url)));
            return Outcome::Ready(errors::respond(self, host, 404, Some(head), conn));
        }
        let (name, path_info) = url.split_at(url.len() - path_info_len);
        let target = ScriptTarget { filename: script.to_string_lossy().into_owned(), name, path_info };
        self.gateway(host, head, conn, backend, target, query)
    }

    /// `/dir/script.php/more/path`: the first leading part whose section
    /// hands it to an application and that is a file is the script.
    fn path_info_gateway(&self, host: usize, head: &RequestHead, conn: &ConnInfo, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let mut seg_start = 0;
        for (i, &b) in url.iter().enumerate().skip(1) {
            if b != b'/' {
                continue;
            }
            let segment = &url[seg_start..i];
            seg_start = i;
            if !segment.contains(&b'.') {
                continue;
            }
            let script_url = &url[..i];
            let fs = self.fs_path(host, script_url);
            // `<Location>` sections are matched against the whole URL, path
            // info included, as in Apache (`<Location /app.php/admin>`), and
            // against the script's URL too, so that neither a rule on the
            // script (`<LocationMatch \.php$>`) nor one on the path below it
            // is stepped around: both must grant.
            let whole = self.effective(host, Some(&fs), url);
            let script = self.effective(host, Some(&fs), script_url);
            let handler = [whole.handler(), script.handler()].into_iter().find_map(|h| match h {
                Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) => Some(h),
                _ => None,
            });
            let Some(h) = handler else { continue };
            if !std::fs::metadata(&fs).is_ok_and(|m| m.is_file()) {
                continue;
            }
            if !self.allowed(&script, conn.peer.ip(), conn.local.ip()) {
                return Some(Outcome::Ready(self.denied(host, head, conn, url)));
            }
            return Some(self.script_gateway(host, head, conn, &whole, &backend_of(h), fs, url, url.len() - i, query));
        }
        None
    }

    /// ProxyPass and ProxyPassMatch: the first route matching the URL path.
    fn proxy_route(&self, host: usize, head: &RequestHead, conn: &ConnInfo, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let routes = &self.hosts[host].config.proxy_routes;
        if routes.is_empty() {
            return None;
        }
        let url_text = String::from_utf8_lossy(url);
        for route in routes {
            let script_path = match (&route.pattern, &route.target) {
                (ProxyPattern::Prefix(p), target) => {
                    if !(url_text.starts_with(p.as_str()) || url_text.as_ref() == p.trim_end_matches('/')) {
                        continue;
                    }
                    let Some(t) = target else { return None };
                    format!("{}{}", t.path, url_text.get(p.len()..).unwrap_or(""))
                }
                (ProxyPattern::Regex(re), target) => {
                    let Some(caps) = re.captures(&url_text) else { continue };
                    let Some(t) = target else { return None };
                    let mut out = String::new();
                    expand_dollars(&t.path, &caps, &mut out);
                    out
                }
            };
            let target = route.target.as_ref().expect("routes without a target returned above");
            let eff = self.effective(host, None, url);
            if !self.allowed(&eff, conn.peer.ip(), conn.local.ip()) {
                return Some(Outcome::Ready(self.denied(host, head, conn, url)));
            }
            // When the script is on this machine, PATH_INFO is split off here;
            // otherwise (FPM) php-fpm splits it from SCRIPT_FILENAME itself.
            let script = Path::new(&script_path);
            let generic = eff.fcgi_backend_type() == FcgiBackendType::Generic;
            let split = if generic || std::fs::metadata(script).is_ok_and(|m| m.is_file()) { None } else { split_path_info(script) };
            let (filename, path_info_len) = match split {
                Some((file, rest)) if url.ends_with(&script_path.as_bytes()[script_path.len() - rest..]) => (file.to_string_lossy().into_owned(), rest),
                _ => (script_path.clone(), 0),
            };
            let (name, path_info) = url.split_at(url.len() - path_info_len);
            let st = ScriptTarget { filename, name, path_info };
            return Some(self.gateway(host, head, conn, &target.backend, st, query));
        }
        None
    }

    /// An error response (with ErrorDocument applied) and its error-log line.
    pub fn error(&self, host: usize, status: u16, head: &RequestHead, conn: &ConnInfo, why: &str) -> Response {
        self.hosts[host].error_log.error(Some(conn.peer), &format!("{why}: {}", String::from_utf8_lossy(head.request_line())));
        errors::respond(self, host, status, Some(head), conn)
    }

    /// An error for a request that could not be parsed (no host known yet).
    pub fn protocol_error(&self, status: u16, conn: &ConnInfo, why: &str) -> Response {
        self.error_log.error(Some(conn.peer), why);
        errors::respond(self, 0, status, None, conn)
    }

    pub fn allowed(&self, eff: &Effective, peer: IpAddr, local: IpAddr) -> bool {
        let Some(rules) = eff.require() else { return true };
        rules.iter().any(|r| match r {
            Require::All(g) => *g,
            Require::Local => peer.is_loopback() || peer == local,
            Require::Ip(nets) => nets.iter().any(|(net, len)| ip_in(peer, *net, *len)),
        })
    }
}

/// Per-thread access log writers and which of them each host uses.
pub struct LogWriters {
    writers: Vec<AccessLogWriter>,
    host_logs: Vec<Vec<usize>>,
}

impl LogWriters {
    pub fn write(&mut self, host: usize, record: &LogRecord) {
        if let Some(idx) = self.host_logs.get(host) {
            for &i in idx {
                self.writers[i].write(record);
            }
        }
    }

    pub fn flush(&mut self) {
        for w in &mut self.writers {
            w.flush();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.writers.is_empty()
    }
}

/// The DirConfig layers that apply to one request, least specific first.
pub struct Effective<'a> {
    pub layers: Vec<&'a DirConfig>,
}

impl<'a> Effective<'a> {
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

/// The names of the pools a host's handlers and ProxyPass routes use.
/// Virtual hosts inherit the main server's sections, where each site's
/// `<Directory>` names its own pool: a section counts for a host only if it
/// can apply to files under the host's DocumentRoot.
fn pools_used(config: &HostConfig) -> Vec<String> {
    let root = config.document_root.to_string_lossy();
    let applies = |m: &SectionMatch| match m {
        SectionMatch::Directory(d) => directories_overlap(d, &root),
        // Which directories a pattern names cannot be told; those above the
        // root can, and only they count (a pool used only through a
        // `<DirectoryMatch>` below the root has no status page).
        SectionMatch::DirectoryMatch(re) => ancestors(&root).any(|a| re.is_match(a)),
        _ => true,
    };
    let pool_of = |h: &Option<Option<Handler>>| match h {
        Some(Some(Handler::Pool(name))) => Some(name.clone()),
        Some(Some(Handler::FastCgi(FcgiBackend { addr: warren_config::FcgiAddr::Pool(name), .. }))) => Some(name.clone()),
        _ => None,
    };
    let sections = config.sections.iter().filter(|s| applies(&s.matcher) && s.within.as_deref().is_none_or(&applies)).map(|s| &s.config);
    let handlers = std::iter::once(&config.dir).chain(sections).filter_map(|d| pool_of(&d.handler));
    let routes = config.proxy_routes.iter().filter_map(|r| match r.target.as_ref().map(|t| &t.backend.addr) {
        Some(warren_config::FcgiAddr::Pool(name)) => Some(name.clone()),
        _ => None,
    });
    let mut names: Vec<String> = handlers.chain(routes).collect();
    names.sort();
    names.dedup();
    names
}

/// Whether `<Directory dir>` can hold files under `root`: it contains the
/// root, or lies below it.
fn directories_overlap(dir: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    let below = dir.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'));
    dir_contains(dir.trim_end_matches('/'), root) || below
}

/// The backend a FastCGI handler names.
pub fn backend_of(h: &Handler) -> FcgiBackend {
    match h {
        Handler::FastCgi(b) => b.clone(),
        Handler::Pool(name) => FcgiBackend { addr: warren_config::FcgiAddr::Pool(name.clone()), reuse: false, timeout: None, flush_packets: false },
        Handler::ServerStatus => unreachable!("not a FastCGI handler"),
    }
}

/// ProxyPassMatch's `$1`..`$9` (and `$0`) in a target path. Not regex's
/// `Captures::expand`: there `$1x` names a group "1x", here it is `$1`
/// then `x`, as in Apache.
fn expand_dollars(template: &str, caps: &regex::Captures, out: &mut String) {
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            if let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                chars.next();
                out.push_str(caps.get(d as usize).map_or("", |m| m.as_str()));
                continue;
            }
        }
        out.push(c);
    }
}

/// `<Directory /a/b>` applies to `/a/b` and everything below it.
fn dir_contains(dir: &str, path: &str) -> bool {
    if dir.contains(['*', '?', '[']) {
        return glob::Pattern::new(dir).is_ok_and(|p| ancestors(path).any(|a| p.matches(a)));
    }
    dir.is_empty() || path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.char_indices().filter(|(_, c)| *c == '/').map(move |(i, _)| if i == 0 { "/" } else { &path[..i] }).chain(std::iter::once(path))
}

/// Apache's `<Location /x>` matches `/x`, `/x/...`, and (as a plain prefix)
/// `/xyz` unless the prefix ends in a slash; we require a segment boundary,
/// which is what users expect from it.
fn location_matches(prefix: &str, url: &str) -> bool {
    let p = prefix.trim_end_matches('/');
    p.is_empty() || url == p || (url.starts_with(p) && url.as_bytes().get(p.len()) == Some(&b'/'))
}

/// Shell-style `*` and `?` matching, for ServerAlias and `<Files>`.
pub fn wildcard_match(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?', '[']) {
        return pattern == name;
    }
    glob::Pattern::new(pattern).is_ok_and(|p| p.matches(name))
}

fn ip_in(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len as u32) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V4(_)) => a.to_ipv4_mapped().is_some_and(|v4| ip_in(IpAddr::V4(v4), net, len)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_and_location_matching() {
        assert!(dir_contains("/srv/www", "/srv/www/a/b.html"));
        assert!(dir_contains("/srv/www", "/srv/www"));
        assert!(!dir_contains("/srv/www", "/srv/wwwx/a"));
        assert!(dir_contains("/srv/*/htdocs", "/srv/site/htdocs/x.html"));
        assert!(location_matches("/status", "/status"));
        assert!(location_matches("/status/", "/status/x"));
        assert!(!location_matches("/status", "/statusx"));
        assert!(directories_overlap("/srv", "/srv/a/htdocs"));
        assert!(directories_overlap("/srv/a/htdocs/", "/srv/a/htdocs"));
        assert!(directories_overlap("/srv/a/htdocs/blog", "/srv/a/htdocs"));
        assert!(directories_overlap("/srv/*/htdocs", "/srv/a/htdocs"));
        assert!(!directories_overlap("/srv/b", "/srv/a/htdocs"));
        assert!(!directories_overlap("/srv/a/htdocsx", "/srv/a/htdocs"));
        assert!(wildcard_match("*.example.org", "a.example.org"));
        assert!(!wildcard_match("*.example.org", "example.com"));
    }

    #[test]
    fn ip_networks() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(ip_in(ip("10.1.2.3"), ip("10.0.0.0"), 8));
        assert!(!ip_in(ip("11.1.2.3"), ip("10.0.0.0"), 8));
        assert!(ip_in(ip("::ffff:127.0.0.1"), ip("127.0.0.0"), 8));
        assert!(ip_in(ip("1.2.3.4"), ip("0.0.0.0"), 0));
    }
}
