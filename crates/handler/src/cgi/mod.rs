//! CGI programs, as Apache's mod_cgi and mod_cgid run them (RFC 3875): a
//! file under a `ScriptAlias`, or one that `AddHandler cgi-script` or
//! `SetHandler cgi-script` names where `Options ExecCGI` is on, is
//! started for each request, by warren's [`spawner`] process, as the user
//! [`suexec`] decides. It gets the CGI variables FastCGI applications get
//! (built once, in `fastcgi::params`) but `Authorization` (unless
//! `CGIPassAuth On`), only those suexec lets through and its PATH (the
//! spawner filters them: [`suexec::safe_env`]), the request body on its standard input, and its
//! answer is read as CGI: `Status:`, a local `Location:` served as an
//! internal redirect, a `nph-` program's own status line. Its standard
//! error goes to the error log line by line. A program that does not
//! answer within Timeout is killed with its process group and answered
//! 504. A CGI file is never sent as text: one where ExecCGI is off is 403.
//!
//! The plan is a FastCGI [`Gateway`] carrying a [`Program`]: the MPMs run
//! it where blocking is fine, as they run FastCGI requests.
//!
//! - `program`: what a gateway plan carries for a CGI program.
//! - `spawner`: the process that starts programs, and how workers ask it.
//! - `suexec`: who a program runs as, and what may not run.
//! - `run`: one program's exchange, and the ScriptLog.

pub mod program;
pub mod spawner;
pub mod suexec;
mod run;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use warren_config::{FcgiAddr, FcgiBackend, LogLevel};

use crate::gateway::script::{split_path_info, ScriptTarget};
use crate::gateway::Gateway;
use crate::request::Route;
use program::Program;
use crate::{Outcome, Site};

impl Site {
    /// The CGI program `route` names, if it names one: the file, or the
    /// leading part of the path that is one (the rest its PATH_INFO).
    pub(crate) fn cgi_route(&self, route: &Route) -> Option<Outcome> {
        let Route { req, url, query, fs, dir } = route;
        let host = req.host;
        let aliased = self.script_aliased(*req, url);
        let is_cgi = |file: &Path| {
            let name = file.file_name().map(|n| String::from_utf8_lossy(n.as_bytes()).into_owned()).unwrap_or_default();
            dir.layers.iter().flat_map(|l| l.scripts.iter()).rfind(|m| m.covers(&name)).is_some_and(|m| m.cgi)
        };
        // Nothing to look up where nothing is CGI: the common case costs no stat.
        if !aliased && !dir.layers.iter().any(|l| l.scripts.iter().any(|m| m.cgi)) {
            return None;
        }
        let (script, path_info_len) = match std::fs::metadata(fs) {
            Ok(_) => (fs.clone(), 0),
            Err(_) => match split_path_info(fs) {
                Some((file, rest)) if rest <= url.len() => (file, rest),
                _ => (fs.clone(), 0),
            },
        };
        if !aliased && !is_cgi(&script) {
            return None;
        }
        let log = &self.hosts[host].error_log;
        let script_url = &url[..url.len() - path_info_len];
        if !dir.allows(req.head, req.conn) {
            return Some(Outcome::Ready(self.denied(*req, script_url)));
        }
        match std::fs::metadata(&script) {
            Ok(m) if m.is_file() => {}
            // A directory under a ScriptAlias is not listed.
            Ok(m) if m.is_dir() && aliased => return Some(Outcome::Ready(self.error(*req, 403, &format!("attempt to invoke directory as script: {}", script.display())))),
            Ok(_) => return None,
            Err(_) => {
                log.log(LogLevel::Info, Some(req.conn.useragent), &format!("script not found or unable to stat: {}", script.display()));
                return Some(Outcome::Ready(self.error_page(*req, 404)));
            }
        }
        if !aliased && !dir.options().exec_cgi {
            return Some(Outcome::Ready(self.error(*req, 403, &format!("Options ExecCGI is off in this directory: {}", script.display()))));
        }
        if let Some(refusal) = crate::symlinks::check_script(self, *req, dir, &script) {
            return Some(Outcome::Ready(refusal));
        }
        if path_info_len > 0 && dir.accept_path_info() == Some(false) {
            log.log(LogLevel::Info, Some(req.conn.useragent), &format!("path info refused by AcceptPathInfo Off: {}", String::from_utf8_lossy(url)));
            return Some(Outcome::Ready(self.error_page(*req, 404)));
        }
        let (root, tree) = match aliased {
            true => (self.script_alias_root(host, url).or_else(|| self.virtual_script_root(*req)).unwrap_or_else(|| script.parent().map(Path::to_path_buf).unwrap_or_default()), suexec::Tree::ScriptAlias),
            false => self.site_tree(*req, url),
        };
        let nph = script.file_name().is_some_and(|n| n.as_bytes().starts_with(b"nph-"));
        let filename = script.as_os_str().as_bytes().to_vec();
        // For log lines: the backend names the program.
        let backend = FcgiBackend { addr: FcgiAddr::Unix(script.clone()), reuse: false, timeout: None, flush_packets: nph };
        let target = ScriptTarget { filename, name: script_url, path_info: &url[script_url.len()..] };
        let outcome = self.gateway(*req, &backend, target, query, Some(dir));
        let Outcome::Gateway(mut gw) = outcome else { return Some(outcome) };
        let current_uri = dir.layers.iter().rev().find_map(|l| l.cgi_current_uri).unwrap_or(false);
        let pass_auth = dir.layers.iter().rev().find_map(|l| l.cgi_pass_auth).unwrap_or(false);
        gw.become_cgi(Program { path: script.as_os_str().as_bytes().to_vec(), root, tree, nph, user_group: self.suexec_user(host) }, pass_auth, current_uri.then(|| [url, *query].concat()));
        Some(Outcome::Gateway(gw))
    }

    /// The directory a ScriptAlias or ScriptAliasMatch matching `url` names.
    fn script_alias_root(&self, host: usize, url: &[u8]) -> Option<PathBuf> {
        use warren_config::alias::{AliasTarget, UrlMatch};
        self.hosts[host].config.url_aliases.iter().filter(|a| a.script).find_map(|a| {
            let AliasTarget::Path(target) = &a.target else { return None };
            match &a.url {
                UrlMatch::Prefix(_) => a.url.rest(url).map(|_| PathBuf::from(target)),
                UrlMatch::Regex(re) => {
                    re.captures_bytes(url)?;
                    let fixed = &target[..target.find('$').unwrap_or(target.len())];
                    Some(PathBuf::from(&fixed[..fixed.rfind('/').map_or(0, |i| i + 1)]))
                }
            }
        })
    }

    /// The host's `SuexecUserGroup` (or `AssignUserID`), which its pool runs as.
    fn suexec_user(&self, host: usize) -> Option<(String, String)> {
        let pool = self.hosts[host].config.fcgid_pool.as_deref()?;
        let p = self.settings.pools.iter().find(|p| p.name == pool)?;
        Some((p.user.clone()?, p.group.clone().or_else(|| p.user.clone())?))
    }
}

impl Gateway {
    /// Makes this plan run a CGI program: the variables mod_cgi gives
    /// and FastCGI's do not, and those it leaves out.
    fn become_cgi(&mut self, program: Program, pass_auth: bool, current_uri: Option<Vec<u8>>) {
        self.params.retain(|(n, v)| {
            let auth = n == "HTTP_AUTHORIZATION" || n == "HTTP_PROXY_AUTHORIZATION";
            // php-cgi's REDIRECT_STATUS=200 is not mod_cgi's.
            (!auth || pass_auth) && !(n == "REDIRECT_STATUS" && v == b"200")
        });
        if let Some(uri) = current_uri {
            self.set_param("REQUEST_URI", uri);
        }
        self.program = Some(Box::new(program));
    }

    /// Whether this plan runs a CGI program (on a thread: never on the
    /// event loop).
    pub fn is_cgi(&self) -> bool {
        self.program.is_some()
    }
}
