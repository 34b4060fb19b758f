//! Which FastCGI application answers a request, and for which script: a
//! section's handler (`SetHandler proxy:...` or `pool:NAME`) for the
//! mapped file, the leading part of a URL that is a script with PATH_INFO
//! after it, and ProxyPass routes (read in `warren_config::backend`). The
//! request itself is then made in fastcgi/.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use warren_config::{FcgiBackend, FcgiBackendType, Handler, LogLevel, ProxyPattern};

use crate::dir_config::backend_of;
use crate::gateway::script::{split_path_info, ScriptTarget};
use crate::filters::{self, RequestFilters};
use crate::request::{Request, Route};
use crate::{Outcome, Site};

impl Site {
    /// A local script (`SetHandler proxy:...`) for the application: the
    /// route's file, the last `path_info_len` bytes of its URL being its
    /// PATH_INFO. `stat` is the file's metadata when the caller has read
    /// it already (each caller asks whether the file is there first; one
    /// stat a request rather than two), None to read it here.
    pub fn script_gateway(&self, route: &Route, backend: &FcgiBackend, path_info_len: usize, stat: Option<&std::fs::Metadata>) -> Outcome {
        let Route { req, url, query, fs: script, dir } = route;
        let (req, url, query) = (*req, *url, *query);
        let log = &self.hosts[req.host].error_log;
        // A script in a user's directory runs as that user, whatever pool
        // or FastCGI server the sections (or the user's .htaccess) name.
        let user_backend;
        let backend = match self.user_pool(req.host, script) {
            Some(pool) => {
                user_backend = crate::dir_config::backend_of(&warren_config::scripts::Handler::Pool(pool.to_string()));
                &user_backend
            }
            // A user's directory whose user has no pool yet (an account
            // made after start) gets one made, or runs nothing, rather than
            // run as the server's user.
            None if matches!(self.user_dir(req.host, url), Some(Ok(crate::mass::UserMapped::File(_)))) => match self.ask_user_pool(req.host, url, script) {
                Some(pool) => {
                    user_backend = crate::dir_config::backend_of(&warren_config::scripts::Handler::Pool(pool));
                    &user_backend
                }
                // No script there: nothing was asked, nothing runs.
                None if !std::fs::metadata(script).is_ok_and(|m| m.is_file()) => {
                    log.log(LogLevel::Info, Some(req.conn.useragent), &format!("File does not exist: {}", script.display()));
                    return Outcome::Ready(self.error_page(req, 404));
                }
                None => {
                    let why = format!("UserDir: no pool runs as the user of {} (the account cannot have one, or warren's table of pools is full)", script.display());
                    return Outcome::Ready(self.error(req, 503, &why).header("Retry-After", "10"));
                }
            },
            None => backend,
        };
        if !dir.allows(req.head, req.conn) {
            return Outcome::Ready(self.denied(req, &url[..url.len() - path_info_len]));
        }
        // mod_fcgid runs nothing where `Options ExecCGI` is off (an uploads
        // directory's `Options -ExecCGI`), however the pool was named;
        // mod_php's files, run in the same pool, need no ExecCGI.
        let file_name = crate::path::file_name(script).map(crate::path::text_of).unwrap_or_default();
        let by_mod_php = || dir.layers.iter().flat_map(|l| l.scripts.iter()).any(|m| warren_config::mod_php::runs_php(m) && m.covers(&file_name));
        let fcgid = matches!(&backend.addr, warren_config::FcgiAddr::Pool(p) if self.hosts[req.host].config.fcgid_pool.as_deref() == Some(p.as_str())) && !by_mod_php();
        if fcgid && !dir.options().exec_cgi {
            let why = format!("Options ExecCGI is off in this directory: {} (mod_fcgid's pool {})", script.display(), self.hosts[req.host].config.fcgid_pool.as_deref().unwrap_or(""));
            return Outcome::Ready(self.error(req, 403, &why));
        }
        let is_file = match stat {
            Some(m) => m.is_file(),
            None => std::fs::metadata(script).is_ok_and(|m| m.is_file()),
        };
        if !is_file {
            log.log(LogLevel::Info, Some(req.conn.useragent), &format!("File does not exist: {}", script.display()));
            return Outcome::Ready(self.error_page(req, 404));
        }
        if let Some(refusal) = crate::symlinks::check_script(self, req, dir, script) {
            return Outcome::Ready(refusal);
        }
        if path_info_len > 0 && dir.accept_path_info() == Some(false) {
            log.log(LogLevel::Info, Some(req.conn.useragent), &format!("path info refused by AcceptPathInfo Off: {}", String::from_utf8_lossy(url)));
            return Outcome::Ready(self.error_page(req, 404));
        }
        let (name, path_info) = url.split_at(url.len() - path_info_len);
        let target = ScriptTarget { filename: script.as_os_str().as_bytes().to_vec(), name, path_info };
        self.gateway(req, backend, target, query, Some(dir))
    }

    /// `/dir/script.php/more/path`: the first leading part whose section
    /// hands it to an application and that is a file is the script.
    pub(crate) fn path_info_gateway(&self, req: Request, url: &[u8], query: &[u8]) -> Option<Outcome> {
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
            let Ok(fs) = self.fs_path(req, script_url) else { continue };
            // `<Location>` sections are matched against the whole URL, path
            // info included, as in Apache (`<Location /app.php/admin>`), and
            // against the script's URL too, so that neither a rule on the
            // script (`<LocationMatch \.php$>`) nor one on the path below it
            // is stepped around: both must grant.
            let whole = self.effective_for(req, &fs, url);
            let script = self.effective_for(req, &fs, script_url);
            let handler = [whole.handler(), script.handler()].into_iter().find_map(|h| match h {
                Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) => Some(h),
                _ => None,
            });
            let Some(h) = handler else { continue };
            let Ok(stat) = std::fs::metadata(&fs) else { continue };
            if !stat.is_file() {
                continue;
            }
            if !script.allows(req.head, req.conn) {
                return Some(Outcome::Ready(self.denied(req, url)));
            }
            let backend = backend_of(h);
            let route = Route { req, url, query, fs, dir: whole };
            return Some(self.script_gateway(&route, &backend, url.len() - i, Some(&stat)));
        }
        None
    }

    /// ProxyPass and ProxyPassMatch: the first route matching the URL path.
    pub(crate) fn proxy_route(&self, req: Request, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let routes = &self.hosts[req.host].config.proxy_routes;
        if routes.is_empty() {
            return None;
        }
        // The decoded path as bytes: a byte that is not UTF-8 (`%FF`) goes
        // to the backend encoded as it came, as Apache re-encodes r->uri;
        // a regular expression matches those bytes, as Apache's does.
        for route in routes {
            let mut script_path: Vec<u8> = match (&route.pattern, &route.target) {
                (ProxyPattern::Prefix(p), target) => {
                    if !(url.starts_with(p.as_bytes()) || url == p.trim_end_matches('/').as_bytes()) {
                        continue;
                    }
                    let Some(t) = target else { return None };
                    [t.path.as_bytes(), url.get(p.len()..).unwrap_or_default()].concat()
                }
                (ProxyPattern::Regex(re), target) => {
                    let Some(caps) = re.captures_bytes(url) else { continue };
                    let Some(t) = target else { return None };
                    let mut out = Vec::new();
                    warren_regex::expand_bytes(&t.path, &caps, &mut out);
                    out
                }
            };
            let target = route.target.as_ref().expect("routes without a target returned above");
            let eff = self.effective(req.host, None, url);
            let mut filters = RequestFilters::for_request(req, url, &eff);
            if !eff.allows(req.head, req.conn) {
                return Some(filters::attach(Outcome::Ready(self.denied(req, url)), filters, req.head));
            }
            // `balancer://`: a member is elected, its URL joined to the path.
            let mut elected = None;
            let member_target;
            let target = match target.balancer.as_deref() {
                None => target,
                Some(name) => match self.elect_member(req, name, &script_path, query, &mut filters) {
                    Ok((t, e)) => {
                        script_path = self.balancers.member_path(e.balancer, e.member, &e.path);
                        member_target = t;
                        elected = Some(e);
                        &member_target
                    }
                    Err(refused) => return Some(filters::attach(Outcome::Ready(*refused), filters, req.head)),
                },
            };
            if let Some(origin) = &target.http {
                // The URL path, decoded, is encoded again for the backend's request line.
                return Some(filters::attach(crate::balancer::carry(self.http_gateway(req, target, origin, &script_path, query), elected), filters, req.head));
            }
            // When the script is on this machine, PATH_INFO is split off here;
            // otherwise (FPM) php-fpm splits it from SCRIPT_FILENAME itself.
            let script = Path::new(std::ffi::OsStr::from_bytes(&script_path));
            let generic = eff.fcgi_backend_type() == FcgiBackendType::Generic;
            let split = if generic || std::fs::metadata(script).is_ok_and(|m| m.is_file()) { None } else { split_path_info(script) };
            let (filename, path_info_len) = match split {
                Some((file, rest)) if url.ends_with(&script_path[script_path.len() - rest..]) => (file.as_os_str().as_bytes().to_vec(), rest),
                _ => (script_path.clone(), 0),
            };
            let (name, path_info) = url.split_at(url.len() - path_info_len);
            let st = ScriptTarget { filename, name, path_info };
            return Some(filters::attach(crate::balancer::carry(self.gateway(req, &target.backend, st, query, None), elected), filters, req.head));
        }
        None
    }
}
