//! The directory walk: which sections and `.htaccess` files apply to a
//! file and URL, in Apache's order (`ap_directory_walk`, then
//! `ap_file_walk` and `ap_location_walk`), gathered into one
//! [`Effective`].

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use warren_config::{DirConfig, DirSection, SectionMatch};

use crate::dir_config::{Conditional, Effective, Layer};
use crate::htaccess;
use crate::sections::{ancestors, ancestors_bytes, dir_contains, location_matches, wildcard_match};
use crate::site::Site;

impl Site {
    /// [`Site::effective`] for a request mapped to `fs`, with its `<If>`
    /// sections and `Require expr` rules settled.
    pub fn effective_for<'a>(&'a self, req: crate::request::Request<'a>, fs: &Path, url_path: &[u8]) -> Effective<'a> {
        let mut eff = self.effective(req.host, Some(fs), url_path);
        // A tenant's expressions are not run on an event loop's thread:
        // the request is routed again on a worker thread (see `access`).
        if req.pass.on_loop && eff.runs_htaccess_patterns() {
            return eff;
        }
        eff.apply_ifs(&crate::expr_facts::RouteFacts { site: Some(self), req, url: url_path, fs: Some(fs), env: req.env });
        eff
    }

    /// The configuration layers that apply to a file and URL, least specific
    /// first: Apache's directory walk (each directory's `<Directory>`
    /// sections, shortest path first, then its `.htaccess` file where
    /// AllowOverride lets one in), then `<DirectoryMatch>`, `<Files>`
    /// (the server's, then those of the `.htaccess` files) and `<Location>`.
    pub fn effective<'a>(&'a self, host: usize, fs_path: Option<&Path>, url_path: &[u8]) -> Effective<'a> {
        let h = &self.hosts[host];
        let mut eff = Effective::of_host(&h.config.dir);
        if h.config.sections.is_empty() {
            return eff;
        }
        let fs = fs_path.map(crate::path::text);
        let url = crate::path::text_of(url_path);
        let file_name = fs.as_deref().map(|p| p.rsplit('/').next().unwrap_or(""));
        // FilesMatch matches the name's bytes, as Apache's (a name in
        // Latin-1 is not read as U+FFFD first: `.` is its one byte).
        let name_bytes = fs_path.map(|p| p.as_os_str().as_bytes().rsplit(|&c| c == b'/').next().unwrap_or_default());
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
                // Each directory's own bytes too, to open its file by: its
                // name need not be UTF-8 (a `/` is itself in both readings).
                let fs_bytes = fs_path.map_or(Path::new(""), |p| p).as_os_str().as_bytes();
                for (dir, dir_bytes) in ancestors(fs).zip(ancestors_bytes(fs_bytes)) {
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
                        let at = Path::new(std::ffi::OsStr::from_bytes(dir_bytes));
                        let read = match self.caches.htaccess.get(at, name, o, &h.config, &self.settings, say) {
                            Ok(Some(read)) => read,
                            Ok(None) => continue,
                            Err(htaccess::Deferred) => {
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
                (SectionMatch::FilesMatch(re), Some(_)) => name_bytes.is_some_and(|n| re.is_match_bytes(n)),
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
        let location_hit = |m: &SectionMatch| match m {
            SectionMatch::Location(prefix) => location_matches(prefix, &url),
            // The path's bytes, as Apache matches r->uri (`.` is one byte).
            SectionMatch::LocationMatch(re) => re.is_match_bytes(url_path),
            _ => false,
        };
        for s in &h.config.sections {
            if location_hit(&s.matcher) {
                eff.layers.push(Layer::Site(&s.config));
            }
        }
        // An <If> stands where it was written: in the server or a host, or
        // in a section that must apply too.
        let around_hits = |m: &SectionMatch| match (m, file_name) {
            (SectionMatch::Directory(_) | SectionMatch::DirectoryMatch(_), _) => dir_matches(m),
            (SectionMatch::Files(pat), Some(name)) => wildcard_match(pat, name),
            (SectionMatch::FilesMatch(re), Some(_)) => name_bytes.is_some_and(|n| re.is_match_bytes(n)),
            _ => location_hit(m),
        };
        for s in &h.config.sections {
            if matches!(&s.matcher, SectionMatch::If(t) if t.around.as_deref().is_none_or(around_hits)) && s.within.as_deref().is_none_or(around_hits) {
                eff.conditional.push(Conditional::Site(s));
            }
        }
        for read in &files_from_htaccess {
            let Ok(file) = &**read else { continue };
            for (i, s) in file.sections.iter().enumerate().skip(1) {
                // Those of an .htaccess file are within its directory, on the way.
                let on_the_way = |m: &SectionMatch| matches!(m, SectionMatch::Directory(_)) || around_hits(m);
                if matches!(&s.matcher, SectionMatch::If(t) if t.around.as_deref().is_none_or(on_the_way)) && s.within.as_deref().is_none_or(on_the_way) {
                    eff.conditional.push(Conditional::File(read.clone(), i));
                }
            }
        }
        eff
    }
}
