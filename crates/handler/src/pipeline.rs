//! Routing: the named pipeline every request goes through, in Apache's
//! order (its `ap_process_request_internal`). Start reading here.
//!
//! 1. **host** (`route`): the virtual host the Host field and the
//!    local address choose ([`Site::request`]); a request over TLS for
//!    another host than SNI named is 421; `*` and TRACE are answered; the
//!    URL is decoded and normalised (400, 404: path.rs); a pool's status
//!    page is answered (pool_status.rs).
//! 2. **rewrite** (`rewrite_pass`): the host's SetEnvIf, then its
//!    mod_rewrite rules in server context (rewrite.rs), which may answer,
//!    or give a new URL or a file.
//! 3. **map** (`map_url`): ProxyPass takes the URL to an application
//!    (gateways.rs); Redirect answers, Alias or the DocumentRoot name the
//!    file beneath its root (alias.rs, path.rs); the directory walk
//!    (dir_walk.rs) merges the sections and `.htaccess` files that apply
//!    into one [`Effective`] (dir_config.rs).
//! 4. **access** (`access`): an `.htaccess` file in error is a 500;
//!    `Require` and SSLRequireSSL; then the directories' rewrite rules
//!    (Apache's fixups), whose internal redirect is a new pass from 2; the
//!    response filters of the request (filters/) are taken here.
//! 5. **handler** (`run_handler`): a section's Redirect; a handler refused
//!    where it was set (scripts.rs); server-status (status.rs); metrics (metrics.rs); a FastCGI
//!    handler or a script with PATH_INFO (gateways.rs, then fastcgi/); a
//!    ScriptAlias with no handler (403); FallbackResource (a new map, 3);
//!    methods static resources do not take (errors.rs); static files,
//!    DirectoryIndex and listings (static_files.rs).
//!
//! What the pipeline ends with is an [`Outcome`]; [`Site::handle`] then
//! follows the local ErrorDocument of an error page, as an internal
//! redirect through the whole pipeline again (internal_redirect.rs makes
//! its request head).

use std::path::PathBuf;

use warren_config::Handler;
use warren_http::RequestHead;

use crate::conn::ConnInfo;
use crate::dir_config::{backend_of, Access, Effective};
use crate::env::RequestEnv;
use crate::filters::{self, RequestFilters};
use crate::multiviews::Negotiated;
use crate::internal_redirect::{as_error, request_head, BODY_HEADERS, CONDITION_HEADERS};
use crate::path::{self, PathError};
use crate::request::{Pass, Request, Route};
use crate::rewrite::{with_vary, DirRewrite, UrlRewrite, MAX_INTERNAL_REDIRECTS, RULES_TIME_BUDGET};
use crate::{static_files, Outcome, Response, Site};

impl Site {
    /// Answers one request whose body (if any) has not been read yet: the
    /// route, then the local ErrorDocument of an error it ended in.
    pub fn handle(&self, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        let outcome = self.through_cache(head, conn, false);
        self.follow_error_document_from(outcome, head, conn, false)
    }

    /// [`Site::handle`] for an event loop, which serves every connection
    /// of its process: [`Outcome::OffLoop`] when the request (or its
    /// ErrorDocument) would run an `.htaccess` file's regular expressions
    /// or read one anew, for the loop to call [`Site::handle`] on a thread
    /// instead.
    pub fn handle_on_loop(&self, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        crate::htaccess::take_deferred();
        let outcome = self.through_cache(head, conn, true);
        let outcome = self.follow_error_document_from(outcome, head, conn, true);
        // Some decision on the way was made without an `.htaccess` file the
        // loop may not read: none of it stands.
        if crate::htaccess::take_deferred() {
            return Outcome::OffLoop;
        }
        outcome
    }

    /// The request, with its host chosen (see [`Site::select_host`]).
    pub fn request<'a>(&self, head: &'a RequestHead, conn: &'a ConnInfo) -> Request<'a> {
        Request::new(head, conn, self.select_host(head.host(), conn.local))
    }

    /// Stage 1, host: where a request goes and what answers it;
    /// [`Site::handle`] adds the ErrorDocument of an error it ends in.
    /// `on_loop`: see [`Site::handle_on_loop`].
    pub(crate) fn route(&self, head: &RequestHead, conn: &ConnInfo, on_loop: bool) -> Outcome {
        self.route_with(head, conn, on_loop, None)
    }

    /// [`Site::route`], a stored answer looked up after the access checks
    /// when `cache_after_access` (CacheQuickHandler Off).
    pub(crate) fn route_with(&self, head: &RequestHead, conn: &ConnInfo, on_loop: bool, cache_after_access: Option<&crate::response_cache::lookup::AfterAccess>) -> Outcome {
        let rules_deadline = warren_rewrite::CpuDeadline::after(RULES_TIME_BUDGET);
        let req = self.request(head, conn);
        let req = Request { pass: Pass { rules_deadline: Some(&rules_deadline), on_loop, cache_after_access, ..req.pass }, ..req };
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
                // Apache answers `OPTIONS *` without an Allow field.
                "OPTIONS" => Response::new(200, host),
                _ => self.error(req, 400, "request-target * is only for OPTIONS"),
            };
            return self.host_filtered(req, b"*", Outcome::Ready(r));
        }
        // TraceEnable Off: before anything, so that no application or
        // ProxyPass backend gets a TRACE either, as in Apache.
        if !self.settings.trace_enable && head.method() == "TRACE" {
            return Outcome::Ready(self.error(req, 405, "TRACE denied by server configuration (TraceEnable Off)").header("Allow", "GET, HEAD, OPTIONS"));
        }
        // A fragment is the client's own: one sent in the target is a 400, as Apache's.
        if raw.contains(&b'#') {
            let r = self.error_before_mapping(req, 400, "invalid URI in request: a fragment (#) in the request target");
            return self.host_filtered(req, raw, Outcome::Ready(r));
        }
        let (raw_path, query) = path::split_query(raw);
        let url = match path::normalize(raw_path) {
            Ok(u) => u,
            Err(PathError::BadRequest(why)) => {
                let r = self.error_before_mapping(req, 400, &format!("invalid URI in request: {why}"));
                return self.host_filtered(req, raw_path, Outcome::Ready(r));
            }
            Err(PathError::NotFound(why)) => return self.host_filtered(req, raw_path, Outcome::Ready(self.error_before_mapping(req, 404, why))),
        };
        if let Some(o) = self.pool_status(req, &url, query) {
            return o;
        }
        // mod_md's http-01 answers come before any rule of the host's.
        if let Some(o) = self.acme_challenge(req, &url) {
            return self.host_filtered(req, &url, o);
        }
        if let Some(o) = self.require_https(req, conn, raw) {
            return self.host_filtered(req, &url, o);
        }
        self.rewrite_pass(req, &url, query)
    }

    /// Stage 2, rewrite: one pass of a request, its first or one an internal redirect of
    /// mod_rewrite's starts. The server's rewrite rules come first, before
    /// anything else maps the URL, as in Apache.
    fn rewrite_pass(&self, req: Request, url: &[u8], query: &[u8]) -> Outcome {
        // The host's SetEnvIf lines run before its rewrite rules read %{ENV:...},
        // as Apache runs them when the request is read.
        let own = &self.hosts[req.host].config.dir;
        let early_env;
        let req = if own.set_env_if.is_empty() || own.rewrite.as_ref().is_none_or(|r| !r.enabled()) {
            req
        } else {
            early_env = RequestEnv::set_env_if(req, url, &Effective::of_host(own));
            Request { env: &early_env, ..req }
        };
        let r = match self.rewrite_url(req, url, query) {
            UrlRewrite::Declined => return self.map_url(req, url, query, None, true),
            // A redirect or status of the server's rules gets the host's headers (`Header always`).
            UrlRewrite::Answer(r) => return self.host_filtered(req, url, Outcome::Ready(r)),
            UrlRewrite::Continue(r) => r,
        };
        let pass = Pass { rewrite_ended: r.ended, forced_type: r.forced_type.as_deref(), ..req.pass };
        let req = Request { env: &r.env, pass, ..req };
        with_vary(self.map_url(req, r.url.as_deref().unwrap_or(url), &r.query, r.fs, true), &r.vary, req)
    }

    /// Stage 3, map: the routing of `url` (the request's, or its FallbackResource's, the
    /// request's own head kept: REQUEST_URI stays what the client asked for,
    /// as with Apache's mod_dir).
    /// `fs` is the file a rewrite rule mapped the URL to, if one did.
    pub(crate) fn map_url(&self, req: Request, url: &[u8], query: &[u8], fs: Option<PathBuf>, may_fall_back: bool) -> Outcome {
        let host = req.host;
        let rewritten_to_file = fs.is_some();
        let fs = match fs {
            Some(fs) => fs,
            None => {
                // ProxyPass and ProxyPassMatch take any method to the application.
                if let Some(o) = self.proxy_route(req, url, query) {
                    return if self.kept_from_cache(req, url, None, false) { o.restricted() } else { o };
                }
                // mod_alias: redirects before the aliases (fs_path), whatever their order.
                if let Some(r) = self.url_redirect(req, &self.hosts[host].config.dir.redirects, url, query) {
                    return self.host_filtered(req, url, Outcome::Ready(r));
                }
                if let Some(bad) = self.bad_mass_host(req) {
                    return Outcome::Ready(self.error(req, 400, &bad.0));
                }
                if let Some(Ok(crate::mass::UserMapped::Redirect(to))) = self.user_dir(host, url) {
                    let to = format!("{to}{}", String::from_utf8_lossy(query));
                    return self.host_filtered(req, url, Outcome::Ready(Response::new(302, host).header("Location", to)));
                }
                match self.fs_path(req, url) {
                    Ok(fs) => fs,
                    Err(climbs) => return self.host_filtered(req, url, Outcome::Ready(self.climbs(req, "AliasMatch", &climbs))),
                }
            }
        };
        let dir = self.effective_for(req, &fs, url);
        let kept_from_cache = self.kept_from_cache(req, url, Some(&fs), rewritten_to_file);
        let outcome = self.access(req, url, query, fs, dir, may_fall_back, rewritten_to_file);
        if kept_from_cache {
            return outcome.restricted();
        }
        outcome
    }

    /// Stage 4, access: once the URL is mapped to `fs` and the sections
    /// that apply are merged (`dir`), whether the client may have it, and
    /// the directories' rewrite rules.
    #[allow(clippy::too_many_arguments)]
    fn access<'a>(&'a self, req: Request<'a>, url: &'a [u8], query: &'a [u8], fs: PathBuf, dir: Effective<'a>, may_fall_back: bool, rewritten_to_file: bool) -> Outcome {
        let conn = req.conn;
        if let Some(e) = dir.htaccess_error() {
            let r = self.error(req, 500, &e.to_string());
            return self.filtered(req, url, &dir, Outcome::Ready(r));
        }
        if req.pass.on_loop && (dir.htaccess_deferred || dir.runs_htaccess_patterns()) {
            return Outcome::OffLoop;
        }
        // Authentication before the directories' rewrite rules (Apache's
        // check_user_id and auth_checker hooks come before fixups).
        match dir.access(req.head, conn, !req.pass.on_loop) {
            Access::MustHash => return Outcome::OffLoop,
            Access::Unauthorized(realm) => return self.filtered(req, url, &dir, Outcome::Ready(self.unauthorized(req, url, &realm))),
            Access::Error(why) => return self.filtered(req, url, &dir, Outcome::Ready(self.error(req, 500, &why))),
            Access::Granted | Access::Denied => {}
        }
        // The MPM applied LimitRequestBody before routing; on an event loop
        // an `.htaccess` file read anew was not in it (see `htaccess`).
        if let Err(e) = warren_http::conn::declared_body_within(req.head.framing, dir.limit_request_body()) {
            return self.filtered(req, url, &dir, Outcome::Ready(self.error(req, e.status, &e.reason)));
        }
        // MultiViews before the directories' rules, as Apache's type
        // checker comes before its fixups (multiviews.rs).
        match self.multiviews(req, url, query, &fs, &dir) {
            Some(Negotiated::Chosen(o)) => return o,
            Some(Negotiated::Answer(r)) => return self.filtered(req, url, &dir, Outcome::Ready(r)),
            None => {}
        }
        // The rules of the directories on the way, once access is granted
        // (Apache's fixups come after the access checks). Vary goes on
        // after the filters, which it joins (a FastCGI answer's included).
        match self.rewrite_dir(req, url, query, &fs, &dir) {
            DirRewrite::Declined => {}
            DirRewrite::Answer(r) => {
                let r = if dir.allows(req.head, conn) { r } else { self.denied(req, url) };
                return self.filtered(req, url, &dir, Outcome::Ready(r));
            }
            _ if !dir.allows(req.head, conn) => return self.filtered(req, url, &dir, Outcome::Ready(self.denied(req, url))),
            // A directory named without its slash is redirected to it first (mod_dir's fixup wins).
            DirRewrite::Redirect { .. } if !url.ends_with(b"/") && dir.directory_slash() && fs.is_dir() => {}
            // The new pass takes the filters of where it goes.
            DirRewrite::Redirect { url: to, query: q, env, ended, vary } => return with_vary(self.internal_rewrite(req, url, &to, &q, env, ended), &vary, req),
            DirRewrite::Continue(r) => {
                let forced_type = r.forced_type.as_deref().or(req.pass.forced_type);
                let pass = Pass { rewrite_ended: r.ended, forced_type, ..req.pass };
                let req = Request { env: &r.env, pass, ..req };
                if let Some(hit) = self.hit_after_access(req, url, &fs, &dir) {
                    return hit;
                }
                let filters = RequestFilters::for_request(req, url, &dir);
                let outcome = filters::attach(self.run_handler(req, url, &r.query, fs, dir, may_fall_back, rewritten_to_file), filters, req.head);
                return with_vary(outcome, &r.vary, req);
            }
        }
        if let Some(hit) = self.hit_after_access(req, url, &fs, &dir) {
            return hit;
        }
        let filters = RequestFilters::for_request(req, url, &dir);
        filters::attach(self.run_handler(req, url, query, fs, dir, may_fall_back, rewritten_to_file), filters, req.head)
    }

    /// Stage 5, handler: once the rewrite rules of the directories are
    /// done, who answers for the file.
    #[allow(clippy::too_many_arguments)]
    fn run_handler<'a>(&'a self, req: Request<'a>, url: &'a [u8], query: &'a [u8], fs: PathBuf, dir: Effective<'a>, may_fall_back: bool, rewritten_to_file: bool) -> Outcome {
        let (host, conn) = (req.host, req.conn);
        // A section's or .htaccess file's redirects, the most specific first.
        if dir.layers.len() > 1 {
            if let Some(r) = dir.layers[1..].iter().rev().find_map(|l| self.url_redirect(req, &l.redirects, url, query)) {
                // After the access rules, as Apache's fixups come after them.
                return Outcome::Ready(if dir.allows(req.head, conn) { r } else { self.denied(req, url) });
            }
        }
        let route = Route { req, url, query, fs, dir };
        if let Some(refused) = crate::scripts::refuse_handler(self, req, &route.dir) {
            return Outcome::Ready(refused);
        }
        match route.dir.handler() {
            Some(Some(Handler::ServerStatus)) => {
                if !route.dir.allows(req.head, conn) {
                    return Outcome::Ready(self.denied(req, url));
                }
                let Some(source) = self.status.get() else {
                    return Outcome::Ready(self.error(req, 503, "server-status: no scoreboard in this process"));
                };
                let auto = query.split(|&b| b == b'?' || b == b'&').any(|p| p == b"auto");
                let snap = source.snapshot();
                let memory = self.pools.get().and_then(|d| d.memory());
                let mut page = crate::status::respond(host, &snap, memory.as_ref(), auto, self.settings.extended_status, &self.hosts[host].name, &self.server_header);
                self.add_md_lines(&mut page, auto);
                let counts = if auto { crate::response_cache::CountsPage::StatusAuto } else { crate::response_cache::CountsPage::StatusHtml };
                return Outcome::Ready(self.with_cache_counts(page, counts));
            }
            Some(Some(Handler::MdStatus)) => {
                if !route.dir.allows(req.head, conn) {
                    return Outcome::Ready(self.denied(req, url));
                }
                return Outcome::Ready(self.md_status(req));
            }
            Some(Some(Handler::BalancerManager)) => {
                if !route.dir.allows(req.head, conn) {
                    return Outcome::Ready(self.denied(req, url));
                }
                return Outcome::Ready(self.balancer_manager(req, url, query));
            }
            Some(Some(Handler::Metrics)) => {
                if !route.dir.allows(req.head, conn) {
                    return Outcome::Ready(self.denied(req, url));
                }
                return Outcome::Ready(self.with_cache_counts(self.metrics_page(req), crate::response_cache::CountsPage::Metrics));
            }
            Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) => {
                // `/index.php/blog/feed.php`: the handler was found for the
                // whole path's name, but Apache's directory walk stops at
                // the file, index.php, which runs with the rest as PATH_INFO.
                let stat = if rewritten_to_file { None } else { std::fs::metadata(&route.fs).ok() };
                if !rewritten_to_file && stat.is_none() {
                    if let Some(o) = self.path_info_gateway(req, url, query) {
                        return o;
                    }
                }
                return self.script_gateway(&route, &backend_of(h), 0, stat.as_ref());
            }
            _ => {}
        }
        if let Some(o) = self.type_map(&route) {
            return o;
        }
        // A CGI program (ScriptAlias, or cgi-script where ExecCGI is on).
        if let Some(o) = self.cgi_route(&route) {
            return o;
        }
        if self.hosts[host].has_fastcgi && !rewritten_to_file {
            if let Some(o) = self.path_info_gateway(req, url, query) {
                return o;
            }
        }
        // What is under a ScriptAlias and no handler took (neither a file
        // nor a directory) is refused, never sent as text nor listed.
        if self.script_aliased(req, url) {
            return Outcome::Ready(self.error(req, 403, &format!("ScriptAlias: {} is not a program", route.fs.display())));
        }
        // FallbackResource: no such file (nor a script with PATH_INFO, found
        // above) is answered by the fallback, once.
        // So is a directory without an index (mod_dir runs the front
        // controller, not a listing), and only once the request passed
        // the access checks (a `<FilesMatch>` deny of the missing name is 403).
        if may_fall_back {
            if let Some(fallback) = route.dir.fallback_resource() {
                let missing = match std::fs::symlink_metadata(&route.fs) {
                    Err(e) => e.kind() == std::io::ErrorKind::NotFound,
                    Ok(m) => m.is_dir() && url.ends_with(b"/") && static_files::lacks_index(&route.dir, &route.fs),
                };
                if missing {
                    if !route.dir.allows(req.head, conn) {
                        return Outcome::Ready(self.denied(req, url));
                    }
                    // A URL, relative to the request's directory unless it starts with `/`.
                    let Some(to) = path::resolve_reference(url, fallback.as_bytes()) else {
                        let climbs = path::Climbs { written: fallback.to_string() };
                        return Outcome::Ready(self.climbs(req, "FallbackResource", &climbs));
                    };
                    return self.map_url(req, &to, query, None, false);
                }
            }
        }
        // A directory may hand its index to an application (any method):
        // static_files decides after DirectoryIndex, and redirects a
        // directory named without its slash first, whatever the method (mod_dir).
        if !url.ends_with(b"/") && !matches!(req.head.method(), "GET" | "HEAD" | "POST") && !route.fs.is_dir() {
            if let Some(r) = self.static_method(req) {
                return Outcome::Ready(static_files::typed_options(self, r, &route.dir, &route.fs, false));
            }
        }
        static_files::serve(self, route)
    }

    /// A per-directory rule's new URL, served as a new pass of the request
    /// (Apache's internal redirect): routed from the start, the environment
    /// renamed REDIRECT_*, REQUEST_URI still the client's.
    fn internal_rewrite(&self, req: Request, url: &[u8], to: &[u8], to_query: &[u8], env: RequestEnv, ended: bool) -> Outcome {
        if req.pass.redirects >= MAX_INTERNAL_REDIRECTS {
            let why = format!("Request exceeded the limit of {MAX_INTERNAL_REDIRECTS} internal redirects due to probable configuration error (mod_rewrite: last URL {})", String::from_utf8_lossy(to));
            return Outcome::Ready(self.error(req, 500, &why));
        }
        // REDIRECT_QUERY_STRING is the query the rules left (Apache's
        // r->args once mod_rewrite set it), the client's when they set none.
        let env = env.redirected(200, url, to_query.strip_prefix(b"?").map(|q| String::from_utf8_lossy(q)).as_deref());
        // The new path is read as a URL again, as Apache's internal redirect parses it.
        let to = match path::normalize(to) {
            Ok(u) => u,
            Err(PathError::BadRequest(why)) => return Outcome::Ready(self.error(req, 400, &format!("invalid URI after rewriting: {why}"))),
            Err(PathError::NotFound(why)) => return Outcome::Ready(self.error(req, 404, why)),
        };
        let pass = Pass { redirects: req.pass.redirects + 1, rewrite_ended: ended, forced_type: None, ..req.pass };
        self.rewrite_pass(Request { env: &env, pass, ..req }, &to, to_query)
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
        RequestFilters::for_request(req, url, &Effective::of_host(own))
    }

    /// An error page whose status has a local ErrorDocument becomes an
    /// internal redirect to it: a GET (HEAD stays HEAD) routed like any
    /// request, whose answer keeps the error's status (a script's own
    /// `Status:` aside). If the document cannot answer (missing, denied,
    /// failing) the built-in page of the first error stays, as Apache's
    /// "Additionally, ... while trying to use an ErrorDocument". Anything
    /// else passes through.
    pub fn follow_error_document(&self, outcome: Outcome, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        self.follow_error_document_from(outcome, head, conn, false)
    }

    fn follow_error_document_from(&self, outcome: Outcome, head: &RequestHead, conn: &ConnInfo, on_loop: bool) -> Outcome {
        let Outcome::Ready(mut page) = outcome else { return outcome };
        let Some(local) = page.error_document.take() else { return Outcome::Ready(page) };
        let status = page.status;
        let method = if head.method() == "HEAD" { "HEAD" } else { "GET" };
        let drop: Vec<&str> = BODY_HEADERS.iter().chain(CONDITION_HEADERS.iter()).copied().collect();
        let Some(doc_head) = request_head(method, &local, head, &drop) else {
            self.document_failed(&page, conn, &local, "is not a valid URL");
            return Outcome::Ready(page);
        };
        match self.route(&doc_head, conn, on_loop) {
            Outcome::Ready(r) if (200..300).contains(&r.status) => Outcome::Ready(as_error(r, status)),
            Outcome::Ready(r) => {
                self.document_failed(&page, conn, &local, &format!("answered {}", r.status));
                Outcome::Ready(crate::errors::with_recursive_error(page))
            }
            Outcome::Blocking(work) => Outcome::Blocking(Box::new(move || {
                let r = work();
                if (200..300).contains(&r.status) {
                    as_error(r, status)
                } else {
                    crate::errors::with_recursive_error(page)
                }
            })),
            Outcome::Gateway(mut gw) => {
                gw.answer_error(status, head);
                Outcome::Gateway(gw)
            }
            // The whole request goes off the loop, its first answer to be made again there.
            Outcome::OffLoop => Outcome::OffLoop,
        }
    }

    fn document_failed(&self, page: &Response, conn: &ConnInfo, local: &str, why: &str) {
        let msg = format!("ErrorDocument {} {local} {why}; answering with the built-in page", page.status);
        self.hosts[page.host].error_log.error(Some(conn.useragent), &msg);
    }

    /// For an answer given where nothing may block or run a script (a
    /// request body that could not be read, a handler that panicked): the
    /// ErrorDocument when it is a static answer, else the built-in page.
    pub fn error_page_now(&self, page: Response, head: &RequestHead, conn: &ConnInfo) -> Response {
        let Some(local) = page.error_document.clone() else { return page };
        let (host, status) = (page.host, page.status);
        match self.follow_error_document(Outcome::Ready(page), head, conn) {
            Outcome::Ready(r) => r,
            _ => {
                let why = format!("ErrorDocument {status} {local} needs a handler, which cannot answer this error; answering with the built-in page");
                self.hosts[host].error_log.error(Some(conn.useragent), &why);
                let mut r = self.error_page(Request::new(head, conn, host), status);
                r.error_document = None;
                r
            }
        }
    }

    /// LimitRequestBody for a request, known before its body is read.
    pub fn body_limit(&self, head: &RequestHead, conn: &ConnInfo) -> u64 {
        let req = self.request(head, conn);
        let host = req.host;
        let url = path::lookup_url(head.path_and_query());
        let fs = self.lookup_fs_path(req, &url);
        self.effective(host, Some(&fs), &url).limit_request_body()
    }
}
