//! Routing: where a request goes and what answers it. The host is chosen
//! and the URL mapped once ([`Route`]); then, in Apache's order, a pool's
//! status page, ProxyPass routes, the section's handler (server-status, a
//! FastCGI application), a script with PATH_INFO, and static files.

use std::path::{Path, PathBuf};

use warren_config::{FcgiBackend, FcgiBackendType, Handler, LogLevel, ProxyPattern};
use warren_http::RequestHead;

use crate::fastcgi::{split_path_info, ScriptTarget};
use crate::path::{self, PathError};
use crate::env::RequestEnv;
use crate::filters::{self, RequestFilters};
use crate::rewrite::{with_vary, DirRewrite, UrlRewrite, MAX_INTERNAL_REDIRECTS, RULES_TIME_BUDGET};
use crate::route::{Effective, Layer, Pass, Request, Route};
use crate::site::ConnInfo;
use crate::{static_files, Outcome, Response, Site};

impl Site {
    /// Where a request goes and what answers it; [`Site::handle`] adds
    /// the ErrorDocument of an error it ends in.
    /// `on_loop`: see [`Site::handle_on_loop`].
    pub(crate) fn route(&self, head: &RequestHead, conn: &ConnInfo, on_loop: bool) -> Outcome {
        let req = self.request(head, conn);
        let req = Request { pass: Pass { rules_deadline: Some(warren_rewrite::CpuDeadline::after(RULES_TIME_BUDGET)), on_loop, ..req.pass }, ..req };
        let host = req.host;
        let raw = head.path_and_query();
        // A TLS connection is for the host its SNI named (its certificate):
        // a request for another host on it is misdirected, as in Apache.
        if let Some(sni) = conn.tls.and_then(|t| t.sni_host) {
            if sni != host {
                let why = format!("hostname {} provided via HTTP is different from the one provided via SNI ({})", String::from_utf8_lossy(head.host().unwrap_or_default()), self.hosts[sni].name);
                return Outcome::Ready(self.error(req, 421, &why));
            }
        }
        if raw == b"*" {
            let r = match head.method() {
                "OPTIONS" => Response::new(200, host).header("Allow", "GET, HEAD, OPTIONS"),
                _ => self.error(req, 400, "request-target * is only for OPTIONS"),
            };
            return self.host_filtered(req, b"*", Outcome::Ready(r));
        }
        // TraceEnable Off: before anything, so that no application or
        // ProxyPass backend gets a TRACE either, as in Apache.
        if !self.settings.trace_enable && head.method() == "TRACE" {
            return Outcome::Ready(self.error(req, 405, "TRACE denied by server configuration (TraceEnable Off)").header("Allow", "GET, HEAD, OPTIONS"));
        }
        let (raw_path, query) = path::split_query(raw);
        let url = match path::normalize(raw_path) {
            Ok(u) => u,
            Err(PathError::BadRequest(why)) => {
                let r = self.error(req, 400, &format!("invalid URI in request: {why}"));
                return self.host_filtered(req, raw_path, Outcome::Ready(r));
            }
            Err(PathError::NotFound(why)) => return self.host_filtered(req, raw_path, Outcome::Ready(self.error(req, 404, why))),
        };
        if let Some(o) = self.pool_status(req, &url, query) {
            return o;
        }
        self.route_pass(req, &url, query)
    }

    /// One pass of a request: its first, or one an internal redirect of
    /// mod_rewrite's starts. The server's rewrite rules come first, before
    /// anything else maps the URL, as in Apache.
    fn route_pass(&self, req: Request, url: &[u8], query: &[u8]) -> Outcome {
        // The host's SetEnvIf lines run before its rewrite rules read %{ENV:...},
        // as Apache runs them when the request is read.
        let own = &self.hosts[req.host].config.dir;
        let early_env;
        let req = if own.set_env_if.is_empty() || own.rewrite.as_ref().is_none_or(|r| !r.enabled()) {
            req
        } else {
            early_env = RequestEnv::set_env_if(req, url, &Effective { layers: vec![Layer::Site(own)], htaccess_error: None, htaccess_deferred: false });
            Request { env: &early_env, ..req }
        };
        let r = match self.rewrite_url(req, url, query) {
            UrlRewrite::Declined => return self.route_url(req, url, query, None, true),
            // A redirect or status of the server's rules gets the host's headers (`Header always`).
            UrlRewrite::Answer(r) => return self.host_filtered(req, url, Outcome::Ready(r)),
            UrlRewrite::Continue(r) => r,
        };
        let pass = Pass { rewrite_ended: r.ended, forced_type: r.forced_type.as_deref(), ..req.pass };
        let req = Request { env: &r.env, pass, ..req };
        with_vary(self.route_url(req, r.url.as_deref().unwrap_or(url), &r.query, r.fs, true), &r.vary, req)
    }

    /// The routing of `url` (the request's, or its FallbackResource's, the
    /// request's own head kept: REQUEST_URI stays what the client asked for,
    /// as with Apache's mod_dir).
    /// `fs` is the file a rewrite rule mapped the URL to, if one did.
    fn route_url(&self, req: Request, url: &[u8], query: &[u8], fs: Option<PathBuf>, may_fall_back: bool) -> Outcome {
        let host = req.host;
        let rewritten_to_file = fs.is_some();
        let fs = match fs {
            Some(fs) => fs,
            None => {
                // ProxyPass and ProxyPassMatch take any method to the application.
                if let Some(o) = self.proxy_route(req, url, query) {
                    return o;
                }
                // mod_alias: redirects before the aliases (fs_path), whatever their order.
                if let Some(r) = self.url_redirect(req, &self.hosts[host].config.dir.redirects, url, query) {
                    return self.host_filtered(req, url, Outcome::Ready(r));
                }
                match self.fs_path(host, url) {
                    Ok(fs) => fs,
                    Err(climbs) => return self.host_filtered(req, url, Outcome::Ready(self.climbs(req, "AliasMatch", &climbs))),
                }
            }
        };
        let dir = self.effective(host, Some(&fs), url);
        self.route_mapped(req, url, query, fs, dir, may_fall_back, rewritten_to_file)
    }

    /// `outcome` with the filters of `dir` for `req`, taken once the
    /// directories' rewrite rules have set the request's environment.
    fn filtered(&self, req: Request, url: &[u8], dir: &Effective, outcome: Outcome) -> Outcome {
        filters::attach(outcome, RequestFilters::for_request(req, url, dir), req.head)
    }

    /// An answer given before the URL is mapped: the filters of the host's
    /// own configuration.
    fn host_filtered(&self, req: Request, url: &[u8], outcome: Outcome) -> Outcome {
        filters::attach(outcome, self.host_filters(req, url), req.head)
    }

    /// The filters of the host's own configuration (server or virtual host,
    /// no section), for answers given before or without mapping the URL
    /// `url`: a bad request line, a request body that could not be read.
    pub fn host_filters(&self, req: Request, url: &[u8]) -> Option<Box<RequestFilters>> {
        let own = &self.hosts[req.host].config.dir;
        if !own.has_filters() {
            return None;
        }
        RequestFilters::for_request(req, url, &Effective { layers: vec![Layer::Site(own)], htaccess_error: None, htaccess_deferred: false })
    }

    /// The rest of [`Site::route_url`], once the URL is mapped to `fs` and
    /// the sections that apply are merged (`dir`).
    #[allow(clippy::too_many_arguments)]
    fn route_mapped<'a>(&'a self, req: Request<'a>, url: &'a [u8], query: &'a [u8], fs: PathBuf, dir: Effective<'a>, may_fall_back: bool, rewritten_to_file: bool) -> Outcome {
        let conn = req.conn;
        if let Some(e) = dir.htaccess_error() {
            let r = self.error(req, 500, &e.to_string());
            return self.filtered(req, url, &dir, Outcome::Ready(r));
        }
        if req.pass.on_loop && (dir.htaccess_deferred || dir.runs_htaccess_patterns()) {
            return Outcome::OffLoop;
        }
        // The MPM applied LimitRequestBody before routing; on an event loop
        // an `.htaccess` file read anew was not in it (see `htaccess`).
        if let warren_http::BodyFraming::Length(n) = req.head.framing {
            let limit = dir.limit_request_body();
            if limit != 0 && n > limit {
                let why = format!("Requested content-length of {n} is larger than the configured limit of {limit}");
                return self.filtered(req, url, &dir, Outcome::Ready(self.error(req, 413, &why)));
            }
        }
        // The rules of the directories on the way, once access is granted
        // (Apache's fixups come after the access checks). Vary goes on
        // after the filters, which it joins (a FastCGI answer's included).
        match self.rewrite_dir(req, url, query, &fs, &dir) {
            DirRewrite::Declined => {}
            DirRewrite::Answer(r) => {
                let r = if dir.allows(conn) { r } else { self.denied(req, url) };
                return self.filtered(req, url, &dir, Outcome::Ready(r));
            }
            _ if !dir.allows(conn) => return self.filtered(req, url, &dir, Outcome::Ready(self.denied(req, url))),
            // A directory named without its slash is redirected to it first (mod_dir's fixup wins).
            DirRewrite::Redirect { .. } if !url.ends_with(b"/") && dir.directory_slash() && fs.is_dir() => {}
            // The new pass takes the filters of where it goes.
            DirRewrite::Redirect { url: to, query: q, env, ended, vary } => return with_vary(self.internal_rewrite(req, url, query, &to, &q, env, ended), &vary, req),
            DirRewrite::Continue(r) => {
                let forced_type = r.forced_type.as_deref().or(req.pass.forced_type);
                let pass = Pass { rewrite_ended: r.ended, forced_type, ..req.pass };
                let req = Request { env: &r.env, pass, ..req };
                let filters = RequestFilters::for_request(req, url, &dir);
                let outcome = filters::attach(self.route_file(req, url, &r.query, fs, dir, may_fall_back, rewritten_to_file), filters, req.head);
                return with_vary(outcome, &r.vary, req);
            }
        }
        let filters = RequestFilters::for_request(req, url, &dir);
        filters::attach(self.route_file(req, url, query, fs, dir, may_fall_back, rewritten_to_file), filters, req.head)
    }

    /// The rest of [`Site::route_mapped`], once the rewrite rules of the
    /// directories are done: who answers for the file.
    #[allow(clippy::too_many_arguments)]
    fn route_file<'a>(&'a self, req: Request<'a>, url: &'a [u8], query: &'a [u8], fs: PathBuf, dir: Effective<'a>, may_fall_back: bool, rewritten_to_file: bool) -> Outcome {
        let (host, conn) = (req.host, req.conn);
        // A section's or .htaccess file's redirects, the most specific first.
        if dir.layers.len() > 1 {
            if let Some(r) = dir.layers[1..].iter().rev().find_map(|l| self.url_redirect(req, &l.redirects, url, query)) {
                // After the access rules, as Apache's fixups come after them.
                return Outcome::Ready(if dir.allows(conn) { r } else { self.denied(req, url) });
            }
        }
        let route = Route { req, url, query, fs, dir };
        if let Some(refused) = crate::scripts::refuse_handler(self, req, &route.dir) {
            return Outcome::Ready(refused);
        }
        match route.dir.handler() {
            Some(Some(Handler::ServerStatus)) => {
                if !route.dir.allows(conn) {
                    return Outcome::Ready(self.denied(req, url));
                }
                let Some(source) = self.status.get() else {
                    return Outcome::Ready(self.error(req, 503, "server-status: no scoreboard in this process"));
                };
                let auto = query.split(|&b| b == b'?' || b == b'&').any(|p| p == b"auto");
                let snap = source.snapshot();
                let memory = self.pools.get().and_then(|d| d.memory());
                return Outcome::Ready(crate::status::respond(host, &snap, memory.as_ref(), auto, self.settings.extended_status, &self.hosts[host].name, &self.server_header));
            }
            Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) => {
                return self.script_gateway(&route, &backend_of(h), 0)
            }
            _ => {}
        }
        if self.hosts[host].has_fastcgi && !rewritten_to_file {
            if let Some(o) = self.path_info_gateway(req, url, query) {
                return o;
            }
        }
        // warren runs no CGI: what is under a ScriptAlias and no FastCGI
        // handler took is refused, never sent as text nor listed.
        if self.script_aliased(host, url) {
            return Outcome::Ready(self.error(req, 403, &format!("ScriptAlias: no FastCGI handler (SetHandler) for {}; warren runs no CGI programs", route.fs.display())));
        }
        // FallbackResource: no such file (nor a script with PATH_INFO, found
        // above) is answered by the fallback, once.
        if may_fall_back {
            if let Some(fallback) = route.dir.fallback_resource() {
                if std::fs::symlink_metadata(&route.fs).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                    // A URL, relative to the request's directory unless it starts with `/`.
                    let Some(to) = path::resolve_reference(url, fallback.as_bytes()) else {
                        let climbs = path::Climbs { written: fallback.to_string() };
                        return Outcome::Ready(self.climbs(req, "FallbackResource", &climbs));
                    };
                    return self.route_url(req, &to, query, None, false);
                }
            }
        }
        // A directory may hand its index to an application (any method):
        // static_files decides after DirectoryIndex.
        if !url.ends_with(b"/") {
            if let Some(r) = self.static_method(req) {
                return Outcome::Ready(r);
            }
        }
        static_files::serve(self, route)
    }

    /// Redirect and RedirectMatch: the first of `redirects` that matches
    /// `url` answers. The server's and a virtual host's are tried as the URL
    /// is translated, before any access rule; a section's or an
    /// `.htaccess` file's once the request is mapped, as mod_alias does.
    fn url_redirect(&self, req: Request, redirects: &[warren_config::alias::UrlAlias], url: &[u8], query: &[u8]) -> Option<Response> {
        use warren_config::alias::{AliasTarget, UrlMatch};
        if redirects.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(url);
        let (status, dest) = redirects.iter().find_map(|a| {
            let AliasTarget::Redirect(status, to) = &a.target else { return None };
            let dest = match &a.url {
                // The rest of the path goes on the target, escaped again.
                UrlMatch::Prefix(_) => {
                    let rest = a.url.rest(&text)?;
                    to.as_ref().map(|t| format!("{t}{}", path::encode(rest.as_bytes())))
                }
                UrlMatch::Regex(re) => {
                    let caps = re.captures(&text)?;
                    to.as_ref().map(|t| {
                        let mut out = String::new();
                        warren_regex::expand(t, &caps, &mut out);
                        out
                    })
                }
            };
            Some((*status, dest))
        })?;
        let Some(mut location) = dest else {
            // 410 Gone, or another status without a URL: configured, so not logged as an error.
            return Some(self.error_page(req, status));
        };
        if location.starts_with('/') {
            // A path on this server: made absolute with the name the client used.
            location = format!("{}://{}{location}", req.conn.scheme(), self.client_authority(req));
        }
        // The request's query string goes along unless the target has one.
        if !query.is_empty() && !location.contains('?') {
            location.push_str(&String::from_utf8_lossy(query));
        }
        Some(self.redirect_to(req, status, location))
    }

    /// A per-directory rule's new URL, served as a new pass of the request
    /// (Apache's internal redirect): routed from the start, the environment
    /// renamed REDIRECT_*, REQUEST_URI still the client's.
    #[allow(clippy::too_many_arguments)]
    fn internal_rewrite(&self, req: Request, url: &[u8], query: &[u8], to: &[u8], to_query: &[u8], env: RequestEnv, ended: bool) -> Outcome {
        if req.pass.redirects >= MAX_INTERNAL_REDIRECTS {
            let why = format!("Request exceeded the limit of {MAX_INTERNAL_REDIRECTS} internal redirects due to probable configuration error (mod_rewrite: last URL {})", String::from_utf8_lossy(to));
            return Outcome::Ready(self.error(req, 500, &why));
        }
        let from = String::from_utf8_lossy(url);
        let env = env.redirected(200, &from, query.strip_prefix(b"?").map(|q| String::from_utf8_lossy(q)).as_deref());
        // The new path is read as a URL again, as Apache's internal redirect parses it.
        let to = match path::normalize(to) {
            Ok(u) => u,
            Err(PathError::BadRequest(why)) => return Outcome::Ready(self.error(req, 400, &format!("invalid URI after rewriting: {why}"))),
            Err(PathError::NotFound(why)) => return Outcome::Ready(self.error(req, 404, why)),
        };
        let pass = Pass { redirects: req.pass.redirects + 1, rewrite_ended: ended, forced_type: None, ..req.pass };
        self.route_pass(Request { env: &env, pass, ..req }, &to, to_query)
    }

    /// A pool's `pm.status_path`, answered by warren from the pool's table
    /// (or by a php-fpm pool itself) on the hosts that use the pool (as
    /// php-fpm answers it only to the requests sent to it): its page lists
    /// request URIs and query strings.
    fn pool_status(&self, req: Request, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let host = req.host;
        let used = &self.hosts[host].pools;
        let pool = self.settings.pools.iter().find(|p| used.contains(&p.name) && p.status_path.as_deref().is_some_and(|s| s.as_bytes() == url))?;
        let eff = self.effective(host, None, url);
        let filters = RequestFilters::for_request(req, url, &eff);
        Some(filters::attach(self.pool_status_page(req, pool, &eff, url, query), filters, req.head))
    }

    fn pool_status_page(&self, req: Request, pool: &warren_config::PoolConfig, eff: &Effective, url: &[u8], query: &[u8]) -> Outcome {
        let host = req.host;
        if !eff.allows(req.conn) {
            return Outcome::Ready(self.denied(req, url));
        }
        if pool.runs_php_fpm() {
            // php-fpm answers it itself, its children and their requests included.
            let target = ScriptTarget { filename: String::from_utf8_lossy(url).into_owned(), name: url, path_info: b"" };
            return self.gateway(req, &backend_of(&Handler::Pool(pool.name.clone())), target, query, None);
        }
        let Some(st) = self.pools.get().and_then(|d| d.status(&pool.name)) else {
            return Outcome::Ready(self.error(req, 503, &format!("pool {} is not running", pool.name)));
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Outcome::Ready(crate::pool_status::respond(host, &st, query, now))
    }

    /// The answer to a method that static resources do not take, if it is one.
    pub fn static_method(&self, req: Request) -> Option<Response> {
        let method = req.head.method();
        match method {
            "GET" | "HEAD" => None,
            "OPTIONS" => Some(Response::new(200, req.host).header("Allow", "GET, HEAD, OPTIONS")),
            "POST" | "PUT" | "DELETE" | "PATCH" | "TRACE" | "CONNECT" | "PROPFIND" | "PROPPATCH" | "MKCOL" | "COPY"
            | "MOVE" | "LOCK" | "UNLOCK" => {
                let r = self.error(req, 405, &format!("method {method} not allowed for this URL"));
                Some(r.header("Allow", "GET, HEAD, OPTIONS"))
            }
            _ => Some(self.error(req, 501, &format!("method {method} not implemented"))),
        }
    }

    /// The 403 for a path that a directive or rule (`by`) would take above
    /// the directory it is mapped under, with Apache's AH00127 words.
    pub(crate) fn climbs(&self, req: Request, by: &str, climbs: &path::Climbs) -> Response {
        self.error(req, 403, &format!("Cannot map the request to a file: {climbs} ({by})"))
    }

    fn denied(&self, req: Request, what: &[u8]) -> Response {
        self.error(req, 403, &format!("client denied by server configuration: {}", String::from_utf8_lossy(what)))
    }

    /// A local script (`SetHandler proxy:...`) for the application: the
    /// route's file, the last `path_info_len` bytes of its URL being its
    /// PATH_INFO.
    pub fn script_gateway(&self, route: &Route, backend: &FcgiBackend, path_info_len: usize) -> Outcome {
        let Route { req, url, query, fs: script, dir } = route;
        let (req, url, query) = (*req, *url, *query);
        let log = &self.hosts[req.host].error_log;
        if !dir.allows(req.conn) {
            return Outcome::Ready(self.denied(req, &url[..url.len() - path_info_len]));
        }
        match std::fs::metadata(script) {
            Ok(m) if m.is_file() => {}
            _ => {
                log.log(LogLevel::Info, Some(req.conn.useragent), &format!("File does not exist: {}", script.display()));
                return Outcome::Ready(self.error_page(req, 404));
            }
        }
        if let Some(refusal) = crate::symlinks::check_script(self, req, dir, script) {
            return Outcome::Ready(refusal);
        }
        if path_info_len > 0 && dir.accept_path_info() == Some(false) {
            log.log(LogLevel::Info, Some(req.conn.useragent), &format!("path info refused by AcceptPathInfo Off: {}", String::from_utf8_lossy(url)));
            return Outcome::Ready(self.error_page(req, 404));
        }
        let (name, path_info) = url.split_at(url.len() - path_info_len);
        let target = ScriptTarget { filename: script.to_string_lossy().into_owned(), name, path_info };
        self.gateway(req, backend, target, query, Some(dir))
    }

    /// `/dir/script.php/more/path`: the first leading part whose section
    /// hands it to an application and that is a file is the script.
    fn path_info_gateway(&self, req: Request, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let host = req.host;
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
            // An alias that climbs is refused when the whole URL is mapped.
            let Ok(fs) = self.fs_path(host, script_url) else { continue };
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
            if !script.allows(req.conn) {
                return Some(Outcome::Ready(self.denied(req, url)));
            }
            let backend = backend_of(h);
            let route = Route { req, url, query, fs, dir: whole };
            return Some(self.script_gateway(&route, &backend, url.len() - i));
        }
        None
    }

    /// ProxyPass and ProxyPassMatch: the first route matching the URL path.
    fn proxy_route(&self, req: Request, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let routes = &self.hosts[req.host].config.proxy_routes;
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
                    warren_regex::expand(&t.path, &caps, &mut out);
                    out
                }
            };
            let target = route.target.as_ref().expect("routes without a target returned above");
            let eff = self.effective(req.host, None, url);
            let filters = RequestFilters::for_request(req, url, &eff);
            if !eff.allows(req.conn) {
                return Some(filters::attach(Outcome::Ready(self.denied(req, url)), filters, req.head));
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
            return Some(filters::attach(self.gateway(req, &target.backend, st, query, None), filters, req.head));
        }
        None
    }
}

/// The backend a FastCGI handler names.
pub fn backend_of(h: &Handler) -> FcgiBackend {
    match h {
        Handler::FastCgi(b) => b.clone(),
        Handler::Pool(name) => FcgiBackend { addr: warren_config::FcgiAddr::Pool(name.clone()), reuse: false, timeout: None, flush_packets: false },
        Handler::ServerStatus | Handler::Refused { .. } => unreachable!("not a FastCGI handler"),
    }
}

