//! mod_rewrite for one request, at Apache's two moments:
//! - [`Site::rewrite_url`]: the server's (or virtual host's) rules, before
//!   anything else maps the URL (Apache's translate_name hook, run first):
//!   they may redirect, answer a status, or map the URL to another URL path
//!   or a file (then neither Alias nor ProxyPass applies, as in Apache;
//!   `[PT]` hands the new URL on to them);
//! - [`Site::rewrite_dir`]: the rules of the `<Directory>` sections and
//!   `.htaccess` files on the file's path (Apache's fixup hook), matched
//!   against the path with the directory's prefix stripped; a new path
//!   becomes an internal redirect to its URL (RewriteBase, else the
//!   DocumentRoot stripped), routed again from the start, its environment
//!   renamed `REDIRECT_*`, at most 10 times.
//!
//! [`Vars`] is the request as the rule engine reads it: server variables
//! by Apache's names, headers, the environment, the host's maps.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use warren_config::LogLevel;
use warren_rewrite::{absolute_uri, apply, Applied, Bounds, PerDir, Rule, State};

use crate::env::RequestEnv;
use crate::dir_config::Effective;
use crate::request::Request;
use crate::{path, Response, Site};

/// What the server-context rules made of a URL.
pub(crate) enum UrlRewrite {
    /// The engine is off: nothing changed.
    Declined,
    Answer(Response),
    /// Go on with this (perhaps unchanged) request.
    Continue(Rewritten),
}

/// What the per-directory rules made of a mapped request.
pub(crate) enum DirRewrite {
    Declined,
    Answer(Response),
    /// The file stays; variables may have been set.
    Continue(Rewritten),
    /// Serve this URL instead (an internal redirect), with the query given.
    Redirect { url: Vec<u8>, query: Vec<u8>, env: RequestEnv, ended: bool, vary: Vec<String> },
}

pub(crate) struct Rewritten {
    /// A new URL path (decoded), when the rules changed it.
    pub url: Option<Vec<u8>>,
    /// The query string, with its `?` (or empty).
    pub query: Vec<u8>,
    /// The file the URL maps to, when the rules named one.
    pub fs: Option<PathBuf>,
    pub env: RequestEnv,
    pub ended: bool,
    pub forced_type: Option<String>,
    /// Request headers the rules' conditions read: the answer varies on them.
    pub vary: Vec<String>,
}

/// `outcome` with the rules' Vary merged into any it has (Apache keeps it
/// across internal redirects too).
pub(crate) fn with_vary(outcome: crate::Outcome, vary: &[String], req: Request) -> crate::Outcome {
    use crate::Outcome;
    if vary.is_empty() {
        return outcome;
    }
    let add = |mut r: Response, vary: &[String]| {
        for v in vary {
            r.vary_on(v);
        }
        r
    };
    match outcome {
        Outcome::Ready(r) => Outcome::Ready(add(r, vary)),
        Outcome::Blocking(work) => {
            let vary = vary.to_vec();
            Outcome::Blocking(Box::new(move || add(work(), &vary)))
        }
        Outcome::Gateway(mut gw) => {
            gw.vary_on(vary, req.conn, req.head);
            Outcome::Gateway(gw)
        }
        Outcome::OffLoop => Outcome::OffLoop,
    }
}

/// Apache's LimitInternalRecursion default.
pub(crate) const MAX_INTERNAL_REDIRECTS: u8 = 10;

/// How much CPU time one request's rewrite rules may take, all passes together:
/// real rule sets take microseconds, and each pattern gives up after about
/// a millisecond, so only a rule set written to be slow (a hundred
/// catastrophic patterns in an `.htaccess`) runs out of it, and then holds
/// its thread no longer than this. Apache has no such bound.
pub(crate) const RULES_TIME_BUDGET: Duration = Duration::from_millis(100);

impl Site {
    pub(crate) fn rewrite_url(&self, req: Request, url: &[u8], query: &[u8]) -> UrlRewrite {
        let h = &self.hosts[req.host];
        let Some(set) = h.config.dir.rewrite.as_ref().filter(|s| s.enabled()) else { return UrlRewrite::Declined };
        if req.pass.rewrite_ended {
            return UrlRewrite::Declined;
        }
        // The variables are text; the rules match the path's bytes.
        let uri = String::from_utf8_lossy(url).into_owned();
        let mut vars = Vars { site: self, req, url, uri: &uri, env: req.env.clone(), fs: None };
        let script_url = vars.env.get("REDIRECT_SCRIPT_URL").unwrap_or(&uri).to_string();
        vars.env.set("SCRIPT_URI", format!("{}{script_url}", self.own_url(req)));
        vars.env.set("SCRIPT_URL", script_url);
        let mut state = State { filename: url.to_vec(), query: query_arg(query), ..State::default() };
        let rules: Vec<&Rule> = set.rules.iter().map(|r| &**r).collect();
        let applied = apply(&rules, None, &mut state, &mut vars, self.rule_bounds(req));
        let env = vars.env;
        let unchanged = |env: RequestEnv, state: &State| Rewritten { url: None, query: query.to_vec(), fs: None, env, ended: state.end, forced_type: state.mime_type.clone(), vary: state.vary.clone() };
        let noescape = match applied {
            Applied::Unchanged => return UrlRewrite::Continue(unchanged(env, &state)),
            Applied::Status(s) => return UrlRewrite::Answer(self.rewrite_status(req, s, &uri)),
            Applied::OutOfTime { rule } => return UrlRewrite::Answer(self.out_of_time(req, rules[rule])),
            Applied::Changed { passthrough: true, .. } => {
                // Its query goes on as made, to a ProxyPass backend's request
                // line too: a back-reference's CR LF must not end that line.
                if let Some(r) = self.bad_query(req, &state, query) {
                    return UrlRewrite::Answer(r);
                }
                // `[PT]`: a URL again, read as the client's is (dot segments
                // removed, never above `/`).
                let Some(url) = path::resolve_reference(b"/", &state.filename) else {
                    let climbs = path::Climbs { written: text(&state.filename) };
                    return UrlRewrite::Answer(self.climbs(req, &rule_named(&state), &climbs));
                };
                let q = with_mark(state.query.as_deref());
                return UrlRewrite::Continue(Rewritten { url: Some(url), query: q, fs: None, env, ended: state.end, forced_type: state.mime_type, vary: state.vary });
            }
            Applied::Changed { noescape, .. } => noescape,
        };
        if let Some(r) = self.bad_query(req, &state, query) {
            return UrlRewrite::Answer(r);
        }
        let reduced = self.settle_url(req, &mut state);
        if absolute_uri(&state.filename).is_some() {
            return UrlRewrite::Answer(self.rewrite_redirect(req, &state, noescape, query));
        }
        if !state.filename.starts_with(b"/") {
            return UrlRewrite::Answer(self.error(req, 400, &format!("RewriteRule: the substitution {} is neither a path nor a URL", text(&state.filename))));
        }
        // Apache's prefix_stat: a result whose first segment exists from the
        // filesystem's root is a file; anything else is a URL path under the
        // DocumentRoot.
        let first = state.filename[1..].split(|&b| b == b'/').next().unwrap_or_default();
        let is_file = !reduced && !first.is_empty() && Path::new("/").join(OsStr::from_bytes(first)).symlink_metadata().is_ok();
        // A URL path stays beneath the DocumentRoot (Apache's AH00127); a
        // file path the rule names may be anywhere the admin wrote, but a
        // `..` in it can only have come from the request.
        let mapped = if is_file {
            if state.filename.split(|&b| b == b'/').any(|s| s == b"..") {
                Err(path::Climbs { written: text(&state.filename) })
            } else {
                path::beneath(Path::new("/"), &state.filename)
            }
        } else {
            // With VirtualDocumentRoot, the root the request's Host names.
            let root = self.document_root(req).map_err(|bad| path::Climbs { written: bad.0 });
            root.and_then(|root| path::beneath(&root, &state.filename))
        };
        let fs = match mapped {
            Ok(fs) => fs,
            Err(climbs) => return UrlRewrite::Answer(self.climbs(req, &rule_named(&state), &climbs)),
        };
        let q = with_mark(state.query.as_deref());
        UrlRewrite::Continue(Rewritten { url: None, query: q, fs: Some(fs), env, ended: state.end, forced_type: state.mime_type, vary: state.vary })
    }

    pub(crate) fn rewrite_dir(&self, req: Request, url: &[u8], query: &[u8], fs: &Path, dir: &Effective) -> DirRewrite {
        // Most requests of most sites meet no rule: nothing more to do.
        if !dir.layers.iter().skip(1).any(|l| l.rewrite.is_some()) {
            return DirRewrite::Declined;
        }
        let fs_bytes = fs.as_os_str().as_bytes();
        let fs_text = fs.to_string_lossy();
        let mut pd = PerDir::default();
        for layer in dir.layers.iter().skip(1) {
            if let Some(set) = &layer.rewrite {
                if let Some(d) = &set.directory {
                    pd.layer(set, &matched_directory(d, fs_bytes));
                }
            }
        }
        let Some(directory) = pd.directory.as_deref().map(|d| directory_bytes(d, fs_bytes)) else { return DirRewrite::Declined };
        if !pd.engine || pd.rules.is_empty() || req.pass.rewrite_ended {
            return DirRewrite::Declined;
        }
        // The directory itself named without its slash: mod_dir redirects first.
        if !pd.options.allow_no_slash && fs_bytes == &directory[..directory.len() - 1] {
            return DirRewrite::Declined;
        }
        let opts = dir.options();
        if !(opts.follow_symlinks || opts.symlinks_if_owner_match) {
            let why = format!("Options FollowSymLinks and SymLinksIfOwnerMatch are both off, so the RewriteRule directive is also forbidden due to its similar ability to circumvent directory restrictions : {fs_text}");
            return DirRewrite::Answer(self.error(req, 403, &why));
        }
        let uri = String::from_utf8_lossy(url).into_owned();
        // The directories' SetEnvIf lines have run by now (Apache's header_parser).
        let env = if dir.layers.iter().any(|l| !l.set_env_if.is_empty()) { RequestEnv::set_env_if(req, url, dir) } else { req.env.clone() };
        let mut vars = Vars { site: self, req, url, uri: &uri, env, fs: Some(fs) };
        // Apache's directory walk has split the path at a file before the
        // rules run: REQUEST_FILENAME (and `-f`) is `/xmlrpc.php` of
        // `/xmlrpc.php/extra/path`, the rest its PATH_INFO.
        let (file, path_info) = match crate::gateway::script::split_path_info(fs) {
            Some((_, rest)) => fs_bytes.split_at(fs_bytes.len() - rest),
            _ => (fs_bytes, &b""[..]),
        };
        let mut state = State { filename: file.to_vec(), path_info: path_info.to_vec(), query: query_arg(query), ..State::default() };
        let applied = apply(&pd.rules, Some(&directory[..]), &mut state, &mut vars, self.rule_bounds(req));
        let env = vars.env;
        let noescape = match applied {
            Applied::Unchanged => {
                return DirRewrite::Continue(Rewritten { url: None, query: query.to_vec(), fs: None, env, ended: state.end, forced_type: state.mime_type, vary: state.vary });
            }
            Applied::Status(s) => return DirRewrite::Answer(self.rewrite_status(req, s, &uri)),
            Applied::OutOfTime { rule } => return DirRewrite::Answer(self.out_of_time(req, pd.rules[rule])),
            Applied::Changed { noescape, .. } => noescape,
        };
        if let Some(r) = self.bad_query(req, &state, query) {
            return DirRewrite::Answer(r);
        }
        self.settle_url(req, &mut state);
        if let Some((skip, _)) = absolute_uri(&state.filename) {
            // A redirect to a path under the directory: RewriteBase says
            // what URL the directory has (without it the path shows, as in Apache).
            if let Some(base) = pd.base {
                let rest_at = state.filename[skip..].iter().position(|&b| b == b'/').map(|i| skip + i + 1);
                if let Some(at) = rest_at.filter(|&at| at < state.filename.len()) {
                    let rest = state.filename[at..].to_vec();
                    let replaced = subst_prefix_path(&rest, directory.strip_prefix(b"/").unwrap_or(&directory), base.trim_start_matches('/'));
                    if replaced != rest {
                        state.filename.truncate(at);
                        state.filename.extend_from_slice(&replaced);
                    }
                }
            }
            return DirRewrite::Answer(self.rewrite_redirect(req, &state, noescape, query));
        }
        if !state.filename.starts_with(b"/") {
            return DirRewrite::Answer(self.error(req, 400, &format!("RewriteRule: the substitution {} is neither a path nor a URL", text(&state.filename))));
        }
        if state.filename == file {
            return DirRewrite::Continue(Rewritten { url: None, query: with_mark(state.query.as_deref()), fs: None, env, ended: state.end, forced_type: state.mime_type, vary: state.vary });
        }
        let root = self.document_root_text(req);
        let root = root.trim_end_matches('/');
        let new_url = match pd.base {
            Some(base) => subst_prefix_path(&state.filename, &directory, base),
            None => match state.filename.strip_prefix(root.as_bytes()) {
                Some(rest) if rest.starts_with(b"/") => rest.to_vec(),
                _ => state.filename.clone(),
            },
        };
        // The new URL is mapped again from the DocumentRoot: it may not climb above it.
        if path::resolve_reference(b"/", &new_url).is_none() {
            let climbs = path::Climbs { written: text(&state.filename) };
            return DirRewrite::Answer(self.climbs(req, &rule_named(&state), &climbs));
        }
        DirRewrite::Redirect { url: new_url, query: with_mark(state.query.as_deref()), env, ended: state.end, vary: state.vary }
    }

    /// A rewritten filename is bounded by twice LimitRequestLine, as in
    /// Apache; the rules' time by the request's budget.
    fn rule_bounds<'r>(&self, req: Request<'r>) -> Bounds<'r> {
        Bounds { max_len: 2 * self.settings.limits.request_line.max(1), deadline: req.pass.rules_deadline }
    }

    /// The rules ran out of the request's time budget before `next`: 500.
    fn out_of_time(&self, req: Request, next: &Rule) -> Response {
        let why = format!("RewriteRule: the rewrite rules took longer than the request's budget of {} ms of CPU time; stopped before the rule at {}", RULES_TIME_BUDGET.as_millis(), next.origin);
        self.error(req, 500, &why)
    }

    /// `[F]`, `[G]`, `[R=4xx]`, or a loop stopped (500).
    fn rewrite_status(&self, req: Request, status: u16, uri: &str) -> Response {
        match status {
            500 => self.error(req, 500, &format!("RewriteRule: a rule loops or makes a path too long (URI {uri})")),
            403 => self.error(req, 403, &format!("RewriteRule: access to {uri} forbidden by a rule")),
            s => self.error_page(req, s),
        }
    }

    /// A rewritten query string with control characters or spaces is
    /// refused (Apache 2.4.58), unless it goes out escaped in a redirect.
    fn bad_query(&self, req: Request, state: &State, original: &[u8]) -> Option<Response> {
        let q = state.query.as_deref()?;
        let will_escape = absolute_uri(&state.filename).is_some() && original.strip_prefix(b"?") != Some(q);
        if !will_escape && q.iter().any(|&b| b <= b' ' || b == 0x7f) {
            return Some(self.error(req, 403, "RewriteRule: rewritten query string contains control characters or spaces"));
        }
        None
    }

    /// A full URL to this server without `[R]` becomes a path again
    /// (Apache's reduce_uri; `[R]`'s own URL was made full by the engine,
    /// through [`Vars::qualify`], and stays so). Whether it was reduced.
    fn settle_url(&self, req: Request, state: &mut State) -> bool {
        if state.status.is_some_and(|s| (300..400).contains(&s)) {
            return false;
        }
        let own = if req.conn.tls.is_some() { "https://" } else { "http://" };
        let Some(rest) = strip_scheme(&state.filename, own) else { return false };
        let (authority, path) = match rest.iter().position(|&b| b == b'/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, &b"/"[..]),
        };
        // A host name is text: one that is not names no host of this server.
        let Ok(authority) = std::str::from_utf8(authority) else { return false };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().ok()),
            None => (authority, Some(req.conn.default_port())),
        };
        // Apache's ap_matches_request_vhost: the host's port (ServerName's) or the connection's.
        if port.is_some_and(|p| p == self.server_port(req) || p == req.conn.local.port()) && self.names_this_host(req, host) {
            state.filename = path.to_vec();
            return true;
        }
        false
    }

    fn names_this_host(&self, req: Request, name: &str) -> bool {
        let h = &self.hosts[req.host];
        name.eq_ignore_ascii_case(&h.name)
            || h.config.aliases.iter().any(|a| crate::sections::wildcard_match(&a.to_ascii_lowercase(), &name.to_ascii_lowercase()))
            || req.head.host().is_some_and(|v| crate::logs::strip_port(v).eq_ignore_ascii_case(name.as_bytes()))
    }

    /// `http://name[:port]` of this request's host, as a redirect names it.
    fn own_url(&self, req: Request) -> String {
        let port = self.server_port(req);
        let name = self.server_name_for_url(req);
        let scheme = req.conn.scheme();
        if port == req.conn.default_port() {
            format!("{scheme}://{name}")
        } else {
            format!("{scheme}://{name}:{port}")
        }
    }

    /// Apache's ap_get_server_port with UseCanonicalName Off: the port the
    /// client named in Host, else ServerName's, else the connection's.
    pub(crate) fn server_port(&self, req: Request) -> u16 {
        let named = req.head.host().and_then(|h| {
            let h = String::from_utf8_lossy(h);
            let (_, port) = h.rsplit_once(':').filter(|(host, _)| !host.ends_with(']') || h.starts_with('['))?;
            port.parse().ok()
        });
        named.or(self.hosts[req.host].config.server_port).unwrap_or(req.conn.local.port())
    }

    /// The name the client used (UseCanonicalName Off), else ServerName.
    fn server_name_for_url(&self, req: Request) -> String {
        match req.head.host() {
            // Host names are case-insensitive: Apache lower-cases the one it keeps.
            Some(v) if !v.is_empty() => String::from_utf8_lossy(crate::logs::strip_port(v)).to_ascii_lowercase(),
            _ => self.hosts[req.host].name.clone(),
        }
    }

    /// The external redirect a rule asked for, its URL escaped unless `[NE]`.
    fn rewrite_redirect(&self, req: Request, state: &State, noescape: bool, original_query: &[u8]) -> Response {
        // A field value is text here: with `[NE]`, bytes that are not UTF-8
        // are sent as read (Apache sends them raw).
        let mut location = if noescape { text(&state.filename) } else { escape_absolute_uri(&state.filename) };
        if let Some(q) = &state.query {
            location.push('?');
            let unchanged = original_query.strip_prefix(b"?") == Some(&q[..]);
            location.push_str(&if noescape || unchanged { text(q) } else { warren_rewrite::escape::escape_uri(q) });
        }
        let status = state.status.filter(|s| (300..400).contains(s)).unwrap_or(302);
        self.redirect_to(req, status, location)
    }
}

/// The rule that made the filename, as a refusal names it.
fn rule_named(state: &State) -> String {
    format!("RewriteRule at {}", state.changed_by.as_deref().unwrap_or("?"))
}

/// The query as the engine holds it: without its `?`; none when absent.
fn query_arg(query: &[u8]) -> Option<Vec<u8>> {
    query.strip_prefix(b"?").map(<[u8]>::to_vec)
}

/// The query the rules left, with its `?`: the bytes the engine made of
/// the client's query and the back-references, as Apache passes them on.
fn with_mark(query: Option<&[u8]>) -> Vec<u8> {
    let Some(q) = query else { return Vec::new() };
    [&b"?"[..], q].concat()
}

/// Bytes as a log line or a field value shows them.
fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn strip_scheme<'a>(s: &'a [u8], scheme: &str) -> Option<&'a [u8]> {
    (s.len() >= scheme.len() && s[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())).then(|| &s[scheme.len()..])
}

/// The directory a `<Directory>` pattern matched on the way to `fs`: the
/// pattern itself, or for a wildcard pattern as many leading components
/// of `fs`.
fn matched_directory(pattern: &str, fs: &[u8]) -> String {
    if !pattern.contains(['*', '?', '[']) {
        return pattern.to_string();
    }
    let n = pattern.trim_end_matches('/').matches('/').count();
    let mut end = fs.len();
    let mut seen = 0;
    for (i, &b) in fs.iter().enumerate() {
        if b == b'/' {
            seen += 1;
            if seen == n + 1 {
                end = i;
                break;
            }
        }
    }
    text(&fs[..end])
}

/// The bytes of `directory` (ending in `/`), a directory on the way to
/// the file `fs`: the prefix of `fs` it names. Its text (a section's or
/// an `.htaccess` file's directory, read from the path) has U+FFFD for each
/// byte that is not UTF-8, which would not be a prefix of the path's bytes.
fn directory_bytes(directory: &str, fs: &[u8]) -> Vec<u8> {
    let want = directory.strip_suffix('/').unwrap_or(directory);
    let ends = fs.iter().enumerate().filter(|&(_, &b)| b == b'/').map(|(i, _)| i).chain(std::iter::once(fs.len()));
    for end in ends {
        if String::from_utf8_lossy(&fs[..end]) == want {
            return [&fs[..end], b"/"].concat();
        }
    }
    directory.as_bytes().to_vec()
}

/// Apache's `subst_prefix_path`: `input` with the directory `prefix`
/// replaced by `subst` (a slash kept between them); unchanged when it does
/// not start with the prefix.
fn subst_prefix_path(input: &[u8], prefix: &[u8], subst: &str) -> Vec<u8> {
    let p = prefix.strip_suffix(b"/").unwrap_or(prefix);
    match input.strip_prefix(p) {
        Some(rest) if rest.starts_with(b"/") => {
            let mut out = subst.as_bytes().to_vec();
            if !out.is_empty() && !out.ends_with(b"/") {
                out.push(b'/');
            }
            out.extend_from_slice(&rest[1..]);
            out
        }
        _ => input.to_vec(),
    }
}

/// Apache's `escape_absolute_uri`: the part after the authority escaped.
fn escape_absolute_uri(uri: &[u8]) -> String {
    let Some((skip, _)) = absolute_uri(uri) else { return warren_rewrite::escape::escape_uri(uri) };
    let mut at = skip;
    if uri[..skip].ends_with(b"/") {
        match uri[skip..].iter().position(|&b| b == b'/') {
            Some(i) => at = skip + i + 1,
            None => return text(uri),
        }
        if at >= uri.len() {
            return text(uri);
        }
    }
    format!("{}{}", text(&uri[..at]), warren_rewrite::escape::escape_uri(&uri[at..]))
}

/// The request as mod_rewrite's engine reads it.
struct Vars<'s, 'a> {
    site: &'s Site,
    req: Request<'a>,
    /// REQUEST_URI: this pass's URL path, decoded, as bytes and as text.
    url: &'s [u8],
    uri: &'s str,
    env: RequestEnv,
    /// The mapped file, in per-directory context: PATH_INFO is what of it
    /// goes on past a file.
    fs: Option<&'s Path>,
}

impl warren_rewrite::Request for Vars<'_, '_> {
    fn variable(&self, name: &str) -> Option<String> {
        let Request { head, conn, host, .. } = self.req;
        let h = &self.site.hosts[host];
        let time = || crate::log_time::civil(std::time::SystemTime::now());
        Some(match name {
            "REQUEST_URI" => self.uri.to_string(),
            "REQUEST_METHOD" => head.method().to_string(),
            "THE_REQUEST" => format!("{} {} {}", head.method(), String::from_utf8_lossy(head.path_and_query()), head.version.as_str()),
            "REQUEST_SCHEME" => conn.scheme().into(),
            "HTTPS" => if conn.tls.is_some() { "on" } else { "off" }.into(),
            "SERVER_PROTOCOL" => head.version.as_str().into(),
            "SERVER_NAME" => self.site.server_name_for_url(self.req),
            "SERVER_PORT" => self.site.server_port(self.req).to_string(),
            "SERVER_ADDR" => conn.local.ip().to_string(),
            "SERVER_ADMIN" => h.config.server_admin.clone()?,
            "SERVER_SOFTWARE" => self.site.server_header.clone(),
            "REMOTE_ADDR" | "REMOTE_HOST" => conn.useragent.ip().to_string(),
            "CONN_REMOTE_ADDR" => conn.peer.ip().to_string(),
            "REMOTE_PORT" => conn.peer.port().to_string(),
            "DOCUMENT_ROOT" | "CONTEXT_DOCUMENT_ROOT" => self.site.document_root_text(self.req),
            "PATH_INFO" => {
                let (_, rest) = crate::gateway::script::split_path_info(self.fs?)?;
                let fs = self.fs?.to_string_lossy();
                fs[fs.len() - rest..].to_string()
            }
            "CONTEXT_PREFIX" | "REMOTE_USER" | "REMOTE_IDENT" | "AUTH_TYPE" => return None,
            "IS_SUBREQ" => "false".into(),
            "API_VERSION" => "20120211:0".into(),
            "IPV6" => if matches!(conn.useragent.ip(), std::net::IpAddr::V6(a) if a.to_ipv4_mapped().is_none()) { "on" } else { "off" }.into(),
            "TIME" => {
                let c = time();
                format!("{:04}{:02}{:02}{:02}{:02}{:02}", c.year, c.month, c.day, c.hour, c.min, c.sec)
            }
            "TIME_YEAR" => format!("{:04}", time().year),
            "TIME_MON" => format!("{:02}", time().month),
            "TIME_DAY" => format!("{:02}", time().day),
            "TIME_HOUR" => format!("{:02}", time().hour),
            "TIME_MIN" => format!("{:02}", time().min),
            "TIME_SEC" => format!("{:02}", time().sec),
            // civil's weekday counts from Thursday (1970-01-01); Apache's from Sunday.
            "TIME_WDAY" => ((time().weekday + 4) % 7).to_string(),
            _ => return None,
        })
    }

    /// What the rules expand: the path (and the request line, the path
    /// info) as the bytes they are, which need not be UTF-8.
    fn variable_bytes(&self, name: &str) -> Option<Vec<u8>> {
        match name {
            "REQUEST_URI" => Some(self.url.to_vec()),
            "THE_REQUEST" => {
                let head = self.req.head;
                Some([head.method().as_bytes(), b" ", head.path_and_query(), b" ", head.version.as_str().as_bytes()].concat())
            }
            "PATH_INFO" => {
                let (_, rest) = crate::gateway::script::split_path_info(self.fs?)?;
                let fs = self.fs?.as_os_str().as_bytes();
                Some(fs[fs.len() - rest..].to_vec())
            }
            _ => self.variable(name).map(String::into_bytes),
        }
    }

    fn header(&self, name: &str) -> Option<String> {
        let mut values = self.req.head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        let first = values.next()?;
        // Repeated fields read as one, joined as Apache's headers table does.
        Some(values.fold(first, |acc, v| format!("{acc}, {v}")))
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).map(str::to_string)
    }

    fn set_env(&mut self, name: &str, value: Option<String>, by: &warren_rewrite::Rule) {
        // A name the configuration wrote is refused when it is read; this
        // is one made from the request (`[E=%1:...]`).
        if let Some(why) = warren_config::env_vars::refusal(&format!("RewriteRule [E={name}]"), name, true) {
            if by.first_refusal() {
                let log = &self.site.hosts[self.req.host].error_log;
                log.log(LogLevel::Warn, Some(self.req.conn.useragent), &format!("{}: {why}", by.origin));
            }
            return;
        }
        match value {
            Some(v) => self.env.set(name, v),
            None => self.env.unset(name),
        }
    }

    fn map(&self, name: &str) -> Option<&warren_rewrite::RewriteMap> {
        let map = self.site.hosts[self.req.host].config.dir.rewrite.as_ref().and_then(|s| s.maps.get(name));
        if map.is_none() {
            let log = &self.site.hosts[self.req.host].error_log;
            log.log(LogLevel::Error, Some(self.req.conn.useragent), &format!("mod_rewrite: no RewriteMap named {name} on this host: lookup failed"));
        }
        map.map(|m| &**m)
    }

    fn file_lookup(&self, p: &str) -> bool {
        let fs = Path::new(p);
        std::fs::metadata(fs).is_ok_and(|m| m.is_file()) && self.site.effective_for(self.req, fs, b"").allows(self.req.head, self.req.conn)
    }

    /// As Apache's sub-request: the URL maps and access is granted (the
    /// file need not exist: no handler runs).
    fn url_lookup(&self, url: &str) -> bool {
        let Ok(url) = path::normalize(url.split('?').next().unwrap_or("").as_bytes()) else { return false };
        let Ok(fs) = self.site.fs_path(self.req, &url) else { return false };
        self.site.effective_for(self.req, &fs, &url).allows(self.req.head, self.req.conn)
    }

    fn qualify(&self, path: &[u8]) -> Vec<u8> {
        let sep: &[u8] = if path.starts_with(b"/") { b"" } else { b"/" };
        [self.site.own_url(self.req).as_bytes(), sep, path].concat()
    }

    fn pick(&self, n: usize) -> usize {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(n);
        (h.finish() % n.max(1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_escaping_as_apache() {
        assert_eq!(subst_prefix_path(b"/srv/www/app/x", b"/srv/www/app/", "/app"), b"/app/x");
        assert_eq!(subst_prefix_path(b"/srv/www/app/x", b"/srv/www/app/", "/"), b"/x");
        assert_eq!(subst_prefix_path(b"/other/x", b"/srv/www/app/", "/app"), b"/other/x");
        assert_eq!(subst_prefix_path(b"/srv/www/app/caf\xe9", b"/srv/www/app/", "/app"), b"/app/caf\xe9");
        assert_eq!(directory_bytes("/srv/d\u{fffd}/", b"/srv/d\xe9/x"), b"/srv/d\xe9/");
        assert_eq!(directory_bytes("/srv/d\u{fffd}/", b"/srv/d\xe9"), b"/srv/d\xe9/");
        assert_eq!(directory_bytes("/", b"/x"), b"/");
        assert_eq!(directory_bytes("/srv/a/", b"/srv/a/b"), b"/srv/a/");
        assert_eq!(directory_bytes("/elsewhere/", b"/srv/a/b"), b"/elsewhere/");
        assert_eq!(escape_absolute_uri(b"http://h/a b?c"), "http://h/a%20b%3fc");
        assert_eq!(escape_absolute_uri(b"http://h/caf\xe9/a\xffb"), "http://h/caf%e9/a%ffb");
        assert_eq!(escape_absolute_uri(b"http://h"), "http://h");
        assert_eq!(matched_directory("/srv/*/htdocs", b"/srv/site1/htdocs/a/b"), "/srv/site1/htdocs");
        assert_eq!(matched_directory("/srv/site", b"/srv/site/a"), "/srv/site");
    }

    #[test]
    fn the_query_goes_on_as_bytes() {
        assert_eq!(with_mark(Some(b"a=\xff&b=%FF")), b"?a=\xff&b=%FF");
        assert_eq!(with_mark(Some(b"")), b"?");
        assert_eq!(with_mark(None), b"");
    }
}
