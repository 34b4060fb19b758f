//! mod_alias, the request half (the directives are read in
//! `warren_config::alias`): Alias, AliasMatch and their Script forms map a
//! URL to a file beneath the directory they name; Redirect and
//! RedirectMatch answer with a redirect.

use std::path::{Path, PathBuf};

use crate::path;
use crate::request::Request;
use crate::{Response, Site};

impl Site {
    /// Where a normalised URL path lies: under the target of the Alias
    /// that matches it, else under the host's DocumentRoot. An error when an
    /// AliasMatch target, filled from the URL, climbs above the directory it
    /// names (its part before the first `$`).
    pub fn fs_path(&self, req: Request, url: &[u8]) -> Result<PathBuf, path::Climbs> {
        let host = req.host;
        if let Some(mapped) = self.aliased(host, url) {
            return mapped.map(|(p, _)| p);
        }
        // Then mod_userdir, then mod_vhost_alias, as Apache orders their hooks.
        match self.user_dir(host, url) {
            Some(Ok(crate::mass::UserMapped::File(p))) => return Ok(p),
            Some(Err(climbs)) => return Err(climbs),
            // Answered before the URL is mapped (Site::map_url).
            Some(Ok(crate::mass::UserMapped::Redirect(to))) => return Err(path::Climbs { written: to }),
            None => {}
        }
        if let Some(mapped) = self.vhost_aliased(req, url) {
            return mapped.map(|(p, _)| p);
        }
        path::beneath(&self.hosts[host].config.document_root, url)
    }

    /// [`Site::fs_path`] for a lookup that must give an answer (the sections
    /// of a request that has none of its own): the DocumentRoot for a path
    /// that climbs.
    pub fn lookup_fs_path(&self, req: Request, url: &[u8]) -> PathBuf {
        self.fs_path(req, url).unwrap_or_else(|_| self.hosts[req.host].config.document_root.clone())
    }

    /// Whether `url` is under a ScriptAlias (or VirtualScriptAlias): its
    /// files are programs.
    pub fn script_aliased(&self, req: Request, url: &[u8]) -> bool {
        let host = req.host;
        if self.hosts[host].has_script_alias {
            if let Some(m) = self.aliased(host, url) {
                return m.is_ok_and(|(_, script)| script);
            }
        }
        self.hosts[host].config.vhost_alias.script_alias.is_some() && self.user_dir(host, url).is_none() && self.vhost_aliased(req, url).is_some_and(|m| m.is_ok_and(|(_, script)| script))
    }

    /// Where Alias or AliasMatch (or their Script forms, saying so) puts
    /// `url` (the first that matches), beneath the directory the alias
    /// names.
    pub(crate) fn aliased(&self, host: usize, url: &[u8]) -> Option<Result<(PathBuf, bool), path::Climbs>> {
        use warren_config::alias::{AliasTarget, UrlMatch};
        let aliases = &self.hosts[host].config.url_aliases;
        if aliases.is_empty() {
            return None;
        }
        aliases.iter().find_map(|a| {
            let AliasTarget::Path(target) = &a.target else { return None };
            let mapped = match &a.url {
                // The rest of a normalised URL has no dot segment to climb with.
                UrlMatch::Prefix(_) => path::beneath(Path::new(target), a.url.rest(url)?),
                UrlMatch::Regex(re) => {
                    // The URL path's bytes, as Apache matches r->uri: a file
                    // named in Latin-1 (`caf%E9`) is found by its name.
                    let mut out = Vec::new();
                    warren_regex::expand_bytes(target, &re.captures_bytes(url)?, &mut out);
                    // The root is what the target names before the URL fills it in.
                    let fixed = &target[..target.find('$').unwrap_or(target.len())];
                    let root = &fixed[..fixed.rfind('/').map_or(0, |i| i + 1)];
                    match out.strip_prefix(root.as_bytes()) {
                        Some(rest) if !root.is_empty() => path::beneath(Path::new(root), rest),
                        _ => Err(path::Climbs { written: String::from_utf8_lossy(&out).into_owned() }),
                    }
                }
            };
            Some(mapped.map(|p| (p, a.script)))
        })
    }

    /// Redirect and RedirectMatch: the first of `redirects` that matches
    /// `url` answers. The server's and a virtual host's are tried as the URL
    /// is translated, before any access rule; a section's or an
    /// `.htaccess` file's once the request is mapped, as mod_alias does.
    pub(crate) fn url_redirect(&self, req: Request, redirects: &[warren_config::alias::UrlAlias], url: &[u8], query: &[u8]) -> Option<Response> {
        use warren_config::alias::{AliasTarget, UrlMatch};
        if redirects.is_empty() {
            return None;
        }
        let (status, dest) = redirects.iter().find_map(|a| {
            let AliasTarget::Redirect(status, to) = &a.target else { return None };
            let dest = match &a.url {
                // The rest of the path goes on the target, escaped again
                // as mod_alias does (ap_os_escape_path: `%e9`, lower case).
                UrlMatch::Prefix(_) => {
                    let rest = a.url.rest(url)?;
                    to.as_ref().map(|t| format!("{t}{}", warren_rewrite::escape::escape_uri(rest)))
                }
                UrlMatch::Regex(re) => {
                    let caps = re.captures_bytes(url)?;
                    to.as_ref().map(|t| {
                        let mut out = Vec::new();
                        warren_regex::expand_bytes(t, &caps, &mut out);
                        escape_redirect(&out)
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
}

/// mod_alias's escaping of a RedirectMatch result: what comes before its
/// query or fragment as `ap_escape_uri` escapes it (the back-references
/// are decoded bytes: `%E9` came in, `%e9` goes out, a space is `%20`),
/// the query and fragment as they are.
fn escape_redirect(to: &[u8]) -> String {
    let end = to.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(to.len());
    format!("{}{}", warren_rewrite::escape::escape_uri(&to[..end]), String::from_utf8_lossy(&to[end..]))
}

#[cfg(test)]
mod tests {
    use super::escape_redirect;

    #[test]
    fn a_redirect_match_result_is_escaped_before_its_query() {
        assert_eq!(escape_redirect(b"/s/caf\xe9"), "/s/caf%e9");
        assert_eq!(escape_redirect(b"/s/caf\xc3\xa9/a b"), "/s/caf%c3%a9/a%20b");
        assert_eq!(escape_redirect(b"http://h:8/s/a\xffb?q=%E9&x=y#f"), "http://h:8/s/a%ffb?q=%E9&x=y#f");
        assert_eq!(escape_redirect(b"/x#frag ment"), "/x#frag ment");
    }
}
