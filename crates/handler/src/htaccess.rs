//! `.htaccess` files found on a request's path ([`HtaccessCache`]): each is
//! read once per version, checked by one `stat` per request (a changed
//! file takes effect on the next request, nothing is re-parsed while it
//! stays the same), and kept as the sections it adds (see
//! `warren_config::htaccess`). Only directories whose `AllowOverride` lets
//! files in are looked at, as in Apache.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use warren_config::htaccess::{self, Env, Htaccess, Overrides};
use warren_config::{ConfigError, DirConfig, Handler, HostConfig, SectionMatch, Settings};

use warren_stat_cache::{FileVersion, StatCache};

use crate::sections::{ancestors, directories_overlap};

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

thread_local! {
    /// Set on an event loop's thread: there a file that must be read anew
    /// is not read (see [`HtaccessCache::get`]).
    static ON_EVENT_LOOP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// A file was left unread on this thread since [`take_deferred`] was
    /// last called.
    static DEFERRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a file was left unread on this (event loop) thread since the
/// last call: whatever was decided meanwhile lacked its lines.
pub fn take_deferred() -> bool {
    DEFERRED.with(|f| f.replace(false))
}

/// Says that this thread is an event loop's, which serves every connection
/// of its process: an `.htaccess` file that must be read and parsed anew
/// (a site owner may make it large, and change it before every request)
/// is left to a worker thread.
pub fn mark_event_loop_thread() {
    ON_EVENT_LOOP.with(|f| f.set(true));
}

/// An `.htaccess` file that an event loop's thread would have had to read:
/// the request is routed on a worker thread instead.
#[derive(Debug)]
pub struct Deferred;

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
    /// cache when unchanged since it was read; [`Deferred`] on an event
    /// loop's thread when it must be read anew.
    /// `on_read` sees a file each time it is read anew (not when it comes
    /// from the cache), to log what it holds that warren does not act on.
    pub fn get(&self, dir: &Path, name: &str, overrides: &Overrides, host: &HostConfig, settings: &Settings, on_read: impl FnOnce(&Read)) -> Result<Option<Read>, Deferred> {
        let path = dir.join(name);
        // A missing file, or a path component that is not a directory. The
        // file itself is not followed if it is a link (see `read_file`).
        // The version of what a link leads to (Debian's WordPress has its
        // .htaccess a link to /etc/wordpress/htaccess): an edit there counts.
        let Ok(meta) = std::fs::metadata(&path) else { return Ok(None) };
        let version = FileVersion::of(&meta);
        let same_overrides = |e: &mut Entry| (e.overrides == *overrides).then(|| e.read.clone());
        if let Some(read) = self.entries.get_with(&path, &version, same_overrides).flatten() {
            return Ok(Some(read));
        }
        if ON_EVENT_LOOP.with(|f| f.get()) {
            DEFERRED.with(|f| f.set(true));
            return Err(Deferred);
        }
        // Read and parsed without the lock: a large file changing all the
        // time must not hold up the requests of other sites, whose files
        // are in the same cache.
        let read = Arc::new(read_file(&path, dir, overrides, host, settings));
        on_read(&read);
        self.entries.insert(path, version, Entry { overrides: overrides.clone(), read: read.clone() });
        Ok(Some(read))
    }
}

/// Reads and parses one `.htaccess` file. It is opened as the server's
/// user, who may read what the directory's owner cannot, and its errors
/// quote its lines into a log the owner reads: so it must not be another
/// user's file reached through the owner's link. A symbolic link is
/// followed when root made it or to a file of the link's owner (the site's
/// owner could point one at another site's `.env`), and a file with other
/// names (a hard link) must belong to the directory's owner.
fn read_file(path: &Path, dir: &Path, overrides: &Overrides, host: &HostConfig, settings: &Settings) -> Result<Htaccess, ConfigError> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let origin = warren_config::Origin { file: Arc::new(path.to_path_buf()), line: 0 };
    let fail = |message: String| ConfigError { origin: origin.clone(), message };
    let open = |follow: bool| {
        let flags = libc::O_NONBLOCK | libc::O_NOCTTY | if follow { 0 } else { libc::O_NOFOLLOW };
        std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path)
    };
    // Apache refuses an unreadable one too (403 there; 500 here, with the
    // reason in the error log): a file it cannot read may deny access.
    let cannot = |e: std::io::Error| fail(format!("cannot read: {e}"));
    let (file, link_owner) = match open(false) {
        Ok(f) => (f, None),
        // A link: followed only to a file of the link's owner (as
        // SymLinksIfOwnerMatch), judged by what the open gave. A link the
        // owner swaps meanwhile is still theirs.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let link = std::fs::symlink_metadata(path).map_err(cannot)?;
            (open(true).map_err(cannot)?, Some(link.uid()))
        }
        Err(e) => return Err(cannot(e)),
    };
    let meta = file.metadata().map_err(cannot)?;
    // Root's own links are root's choice (Debian's WordPress package links
    // its .htaccess to /etc/wordpress/htaccess, which an admin may give
    // the site's user so that WordPress can write its permalinks there).
    if link_owner.is_some_and(|uid| uid != 0 && uid != meta.uid()) {
        return Err(fail("a symbolic link to a file of another owner, which warren does not follow for an .htaccess file".into()));
    }
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.nlink() > 1 && std::fs::metadata(dir).map_or(true, |d| d.uid() != meta.uid()) {
        return Err(fail("a file with other names (a hard link) that does not belong to the directory's owner".into()));
    }
    if meta.len() > MAX_FILE {
        return Err(fail(format!("larger than {MAX_FILE} bytes")));
    }
    let mut text = Vec::with_capacity(meta.len() as usize);
    (&file).take(MAX_FILE + 1).read_to_end(&mut text).map_err(|e| fail(format!("cannot read: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    let env = Env { server_root: settings.server_root.clone(), mpm: settings.mpm, handlers: handlers_for(host, dir), php_pool: host.php_pool.clone() };
    htaccess::read(path, &text, dir, overrides, &env)
}

/// The FastCGI handlers the server's configuration gives `dir` or what is
/// under it: those its `.htaccess` may choose among.
fn handlers_for(host: &HostConfig, dir: &Path) -> Vec<Handler> {
    let dir = dir.to_string_lossy();
    let applies = |m: &SectionMatch| match m {
        SectionMatch::Directory(d) => directories_overlap(d, &dir),
        // A pattern counts where it matches this directory or one above it
        // (what it may match below cannot be told).
        SectionMatch::DirectoryMatch(re) => ancestors(&dir).any(|a| re.is_match(a)),
        SectionMatch::Files(_) | SectionMatch::FilesMatch(_) | SectionMatch::If(_) => true,
        // URL space names no directory: a pool given by `<Location>` is
        // not one a file in this directory may choose.
        SectionMatch::Location(_) | SectionMatch::LocationMatch(_) => false,
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
