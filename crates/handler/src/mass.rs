//! Mass and per-user hosting, the request half (the directives are read in
//! `warren_config::mass`): mod_vhost_alias's roots interpolated from the
//! name the client asked for, and mod_userdir's `/~user/`.
//!
//! The name is the one thing a client chooses here, so it is checked
//! before it becomes part of a path: lower-cased, its port and trailing
//! dots taken off, and refused (400) unless it is letters, digits, `-`,
//! `_` and dots with no empty label, so neither `..` nor `/` can reach the
//! file system. Users are looked up as requests come: a new host's or a
//! new user's directory serves on the next request.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use warren_config::mass::{interpolate, HostPattern, UserPlace};

use crate::path;
use crate::request::Request;
use crate::Site;

/// A Host that cannot name a directory, and why.
#[derive(Debug)]
pub struct BadHost(pub String);

/// A request's Host as mod_vhost_alias may use it, or why not.
pub fn host_name(written: &[u8]) -> Result<String, BadHost> {
    let bare = crate::logs::strip_port(written);
    let text = String::from_utf8_lossy(bare).to_ascii_lowercase();
    let name = text.trim_end_matches('.');
    let label_ok = |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if name.is_empty() || name.len() > 255 || !name.split('.').all(label_ok) {
        return Err(BadHost(format!("Host {:?} cannot name a VirtualDocumentRoot directory (letters, digits, - _ and dots only, no empty label)", String::from_utf8_lossy(written))));
    }
    Ok(name.to_string())
}

/// Where a user's directory is, or a redirect.
pub enum UserMapped {
    File(PathBuf),
    Redirect(String),
}

impl Site {
    /// The name or address a host pattern is filled from, for `req`.
    fn pattern_source(&self, req: Request, pattern: &HostPattern) -> Result<String, BadHost> {
        if pattern.by_address {
            return Ok(req.conn.local.ip().to_string());
        }
        match req.head.host() {
            Some(h) if !h.is_empty() => host_name(h),
            // HTTP/1.0 without Host: the server's name, as Apache's ap_get_server_name.
            _ => host_name(self.hosts[req.host].name.as_bytes()),
        }
    }

    fn interpolated(&self, req: Request, pattern: &HostPattern) -> Result<PathBuf, BadHost> {
        let name = self.pattern_source(req, pattern)?;
        Ok(PathBuf::from(interpolate(&pattern.pattern, &name, self.server_port(req))))
    }

    /// The DocumentRoot of `req`: VirtualDocumentRoot's directory for its
    /// Host (what Apache sets DOCUMENT_ROOT to), else the host's.
    pub fn document_root(&self, req: Request) -> Result<Cow<'_, Path>, BadHost> {
        let config = &self.hosts[req.host].config;
        match &config.vhost_alias.document_root {
            Some(p) => self.interpolated(req, p).map(Cow::Owned),
            None => Ok(Cow::Borrowed(config.document_root.as_path())),
        }
    }

    /// [`Site::document_root`], with the host's for a Host that names none
    /// (such a request is refused as it is mapped).
    pub fn document_root_text(&self, req: Request) -> String {
        match self.document_root(req) {
            Ok(root) => crate::path::text(&root).into_owned(),
            Err(_) => crate::path::text(&self.hosts[req.host].config.document_root).into_owned(),
        }
    }

    /// Whether the Host of `req` cannot name its VirtualDocumentRoot or
    /// VirtualScriptAlias directory.
    pub(crate) fn bad_mass_host(&self, req: Request) -> Option<BadHost> {
        let va = &self.hosts[req.host].config.vhost_alias;
        [&va.document_root, &va.script_alias].into_iter().flatten().find_map(|p| self.pattern_source(req, p).err())
    }

    /// mod_vhost_alias's translation of `url`: under `/cgi-bin/` with a
    /// VirtualScriptAlias, the script directory (true: its files are
    /// programs); else under VirtualDocumentRoot.
    pub(crate) fn vhost_aliased(&self, req: Request, url: &[u8]) -> Option<Result<(PathBuf, bool), path::Climbs>> {
        let va = &self.hosts[req.host].config.vhost_alias;
        let refused = |e: BadHost| path::Climbs { written: e.0 };
        if let (Some(p), Some(rest)) = (&va.script_alias, url.strip_prefix(b"/cgi-bin/")) {
            return Some(self.interpolated(req, p).map_err(refused).and_then(|root| path::beneath(&root, rest)).map(|f| (f, true)));
        }
        let p = va.document_root.as_ref()?;
        Some(self.interpolated(req, p).map_err(refused).and_then(|root| path::beneath(&root, url)).map(|f| (f, false)))
    }

    /// mod_userdir: `/~user/rest` for a user `UserDir` serves, as the
    /// first of its places that exists (the last if none does), or its
    /// redirect. None when the URL names no user served here: it is then
    /// mapped as any other URL (a disabled user's `/~bob/` is a 404).
    pub(crate) fn user_dir(&self, host: usize, url: &[u8]) -> Option<Result<UserMapped, path::Climbs>> {
        let (place, rest) = self.user_place(host, url)?;
        Some(match place {
            UserPlace::Redirect(to) => Ok(UserMapped::Redirect(format!("{to}{}", String::from_utf8_lossy(rest)))),
            UserPlace::Path(dir) | UserPlace::InHome(dir) => path::beneath(Path::new(&dir), rest).map(UserMapped::File),
        })
    }

    /// The user's directory `/~user/rest` is served from (a path, or the
    /// redirect), with `rest`; see [`Site::user_dir`].
    fn user_place<'u>(&self, host: usize, url: &'u [u8]) -> Option<(UserPlace, &'u [u8])> {
        let ud = self.hosts[host].config.user_dir.as_ref()?;
        let after = url.strip_prefix(b"/~")?;
        let end = after.iter().position(|&b| b == b'/').unwrap_or(after.len());
        let (user, rest) = (std::str::from_utf8(&after[..end]).ok()?, &after[end..]);
        if user.is_empty() || user == "." || user == ".." || user.contains('\0') || !ud.serves(user) {
            return None;
        }
        // The home is looked up only for a place below it; a path or URL
        // place serves a name the system may not know, as Apache's does.
        let home = match ud.places.iter().any(|p| matches!(p, UserPlace::InHome(_))) {
            true => self.caches.homes.home(user)?,
            false => String::new(),
        };
        let places = ud.maps(user, &home);
        let last = places.len().checked_sub(1)?;
        places.into_iter().enumerate().find_map(|(i, place)| match &place {
            UserPlace::Redirect(_) => Some((place, rest)),
            UserPlace::Path(dir) | UserPlace::InHome(dir) => (i == last || Path::new(dir).exists()).then_some((place, rest)),
        })
    }

    /// The tree a file `url` maps to lies in, as suexec judges a CGI
    /// program's place: the user's directory for `/~user/`, the Host's
    /// directory under VirtualDocumentRoot, else the DocumentRoot (an
    /// Alias outside it is refused there, as suexec refuses programs
    /// outside its document root); for `/~user/`, the user it must belong to.
    pub(crate) fn site_tree(&self, req: Request, url: &[u8]) -> (PathBuf, crate::cgi::suexec::Tree) {
        use crate::cgi::suexec::Tree;
        // An Alias comes before mod_userdir, as in Site::fs_path.
        let user_place = self.aliased(req.host, url).is_none().then(|| self.user_place(req.host, url)).flatten();
        if let Some((UserPlace::Path(dir) | UserPlace::InHome(dir), rest)) = user_place {
            // user_place found the user between "/~" and `rest`.
            let user = String::from_utf8_lossy(&url[2..url.len() - rest.len()]).into_owned();
            return (PathBuf::from(dir), Tree::UserDir(user));
        }
        let root = match self.document_root(req) {
            Ok(root) => root.into_owned(),
            Err(_) => self.hosts[req.host].config.document_root.clone(),
        };
        (root, Tree::Site)
    }

    /// The directory VirtualScriptAlias names for `req`'s Host.
    pub(crate) fn virtual_script_root(&self, req: Request) -> Option<PathBuf> {
        let pattern = self.hosts[req.host].config.vhost_alias.script_alias.as_ref()?;
        self.interpolated(req, pattern).ok()
    }

    /// The pool a script runs in when it lies in a user's directory (see
    /// `warren_config::mass::UserDir::pools`), so that a user's PHP runs as
    /// that user whatever handler names it.
    pub(crate) fn user_pool(&self, host: usize, script: &Path) -> Option<&str> {
        let ud = self.hosts[host].config.user_dir.as_ref()?;
        ud.pools.iter().find(|p| p.dirs.iter().any(|d| script.starts_with(d))).map(|p| p.pool.as_str())
    }

    /// The pool of the user `/~user/` names, for an account newer than the
    /// pools: asked of the process manager, which checks the account as at
    /// start and makes it. Asked only for an account the system knows and
    /// a script that exists in that user's directory, so that a client's
    /// made-up names cost nothing.
    pub(crate) fn ask_user_pool(&self, host: usize, url: &[u8], script: &Path) -> Option<String> {
        let ud = self.hosts[host].config.user_dir.as_ref().filter(|ud| ud.runtime_pools)?;
        let after = url.strip_prefix(b"/~")?;
        let user = std::str::from_utf8(&after[..after.iter().position(|&b| b == b'/').unwrap_or(after.len())]).ok()?;
        if !ud.serves(user) || user.len() > warren_config::mass::USER_NAME_MAX || !std::fs::metadata(script).is_ok_and(|m| m.is_file()) {
            return None;
        }
        let home = self.caches.homes.home(user)?;
        // The script must be the user's, whatever mapped the URL to it
        // (an Alias or a rewrite could name another user's file).
        let theirs = ud.maps(user, &home).into_iter().any(|p| matches!(p, UserPlace::Path(d) if script.starts_with(&d)));
        if !theirs {
            return None;
        }
        self.pools.get()?.ask_user_pool(user)
    }
}

#[cfg(test)]
mod tests {
    use super::host_name;

    #[test]
    fn host_names_that_cannot_climb() {
        assert_eq!(host_name(b"A.Test:8080").unwrap(), "a.test");
        assert_eq!(host_name(b"a.test.").unwrap(), "a.test");
        for bad in [&b".."[..], b"a..test", b"../etc", b"a/b", b".a.test", b"a\\b", b"", b"a%2ftest", b"[::1]", b"a test", b"a\0b"] {
            assert!(host_name(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
