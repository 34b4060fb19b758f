//! `.htaccess` files found on a request's path ([`HtaccessCache`]): each is
//! read once per version, checked by one `stat` per request (a changed
//! file takes effect on the next request, nothing is re-parsed while it
//! stays the same), and kept as the sections it adds (see
//! `warren_config::htaccess`). Only directories whose `AllowOverride` lets
//! files in are looked at, as in Apache.

use std::path::Path;
use std::sync::Arc;

use warren_config::htaccess::{self, Env, Htaccess, Overrides};
use warren_config::{ConfigError, DirConfig, Handler, HostConfig, SectionMatch, Settings};

use warren_stat_cache::{FileVersion, StatCache};

use crate::sections::directories_overlap;

/// One file read: what it gave (its sections, or the error that makes
/// every request below it a 500).
pub type Read = Arc<Result<Htaccess, ConfigError>>;

/// A file as read under the AllowOverride it was read with.
struct Entry {
    overrides: Overrides,
    read: Read,
}

/// Past this many files the cache starts over: a bound on its memory
/// whatever the number of directories clients name.
const MAX_ENTRIES: usize = 4096;
/// Larger files are refused (500) rather than read: no real one comes near.
const MAX_FILE: u64 = 1 << 20;

pub struct HtaccessCache {
    entries: StatCache<Entry>,
}

impl Default for HtaccessCache {
    fn default() -> HtaccessCache {
        HtaccessCache { entries: StatCache::of_entries(MAX_ENTRIES) }
    }
}

impl HtaccessCache {
    /// The file `dir/name` as read with `overrides`, if it exists: from the
    /// cache when unchanged since it was read.
    /// `on_read` sees a file each time it is read anew (not when it comes
    /// from the cache), to log what it holds that warren does not act on.
    pub fn get(&self, dir: &str, name: &str, overrides: &Overrides, host: &HostConfig, settings: &Settings, on_read: impl FnOnce(&Read)) -> Option<Read> {
        let path = Path::new(dir).join(name);
        // A missing file, or a path component that is not a directory.
        let meta = std::fs::metadata(&path).ok()?;
        let version = FileVersion::of(&meta);
        let same_overrides = |e: &mut Entry| (e.overrides == *overrides).then(|| e.read.clone());
        if let Some(read) = self.entries.get_with(&path, &version, same_overrides).flatten() {
            return Some(read);
        }
        let read = Arc::new(read_file(&path, &meta, Path::new(dir), overrides, host, settings));
        on_read(&read);
        self.entries.insert(path, version, Entry { overrides: overrides.clone(), read: read.clone() });
        Some(read)
    }
}

fn read_file(path: &Path, meta: &std::fs::Metadata, dir: &Path, overrides: &Overrides, host: &HostConfig, settings: &Settings) -> Result<Htaccess, ConfigError> {
    let origin = warren_config::Origin { file: Arc::new(path.to_path_buf()), line: 0 };
    let fail = |message: String| ConfigError { origin: origin.clone(), message };
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() > MAX_FILE {
        return Err(fail(format!("larger than {MAX_FILE} bytes")));
    }
    // Apache refuses an unreadable one too (403 there; 500 here, with the
    // reason in the error log): a file it cannot read may deny access.
    let text = std::fs::read(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    let env = Env { server_root: settings.server_root.clone(), mpm: settings.mpm, handlers: handlers_for(host, dir) };
    htaccess::read(path, &text, dir, overrides, &env)
}

/// The FastCGI handlers the server's configuration gives `dir` or what is
/// under it: those its `.htaccess` may choose among.
fn handlers_for(host: &HostConfig, dir: &Path) -> Vec<Handler> {
    let dir = dir.to_string_lossy();
    let applies = |m: &SectionMatch| match m {
        SectionMatch::Directory(d) => directories_overlap(d, &dir),
        _ => true,
    };
    let configs = std::iter::once(&host.dir).chain(host.sections.iter().filter(|s| applies(&s.matcher) && s.within.as_deref().is_none_or(applies)).map(|s| &s.config));
    configs.filter_map(|c: &DirConfig| c.handler.clone().flatten()).filter(|h| matches!(h, Handler::FastCgi(_) | Handler::Pool(_))).collect()
}

/// The AllowOverride in force for the directory `dir` (`<Directory>`
/// sections only can set it; the deepest wins).
pub fn overrides_for<'a>(host: &'a HostConfig, dir: &str) -> Option<&'a Overrides> {
    let mut best: Option<(usize, &Overrides)> = host.dir.allow_override.as_ref().map(|o| (0, o));
    for s in &host.sections {
        if let (SectionMatch::Directory(d), None, Some(o)) = (&s.matcher, &s.within, &s.config.allow_override) {
            let depth = d.matches('/').count();
            if crate::sections::dir_contains(d, dir) && best.is_none_or(|(b, _)| depth >= b) {
                best = Some((depth, o));
            }
        }
    }
    best.map(|(_, o)| o)
}

/// Whether any `<Directory>` of `host` lets `.htaccess` files in: if none
/// does, requests never look for them.
pub fn host_reads_files(host: &HostConfig) -> bool {
    let reads = |c: &DirConfig| c.allow_override.as_ref().is_some_and(Overrides::reads_files);
    reads(&host.dir) || host.sections.iter().any(|s| reads(&s.config))
}
