//! A small in-memory cache of small static files, per process.
//!
//! A hit costs one `stat` instead of open, fstat, read and close; every hit
//! is checked against the file's current identity (device, inode, size,
//! mtime and ctime to the nanosecond), so a changed file is never served
//! stale. Bounded in entry size and in total bytes: when full it is emptied.

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::static_files::Validators;

/// Files larger than this are not cached (they go out by sendfile).
pub const MAX_ENTRY: u64 = 32 * 1024;
/// Total bytes cached per process.
pub const MAX_TOTAL: usize = 2 * 1024 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileIdentity {
    pub fn of(m: &Metadata) -> FileIdentity {
        FileIdentity { dev: m.dev(), ino: m.ino(), size: m.len(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) }
    }
}

pub struct CachedFile {
    pub identity: FileIdentity,
    pub data: Arc<[u8]>,
    pub validators: Validators,
    pub content_type: Option<String>,
}

#[derive(Default)]
pub struct FileCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<PathBuf, Arc<CachedFile>>,
    bytes: usize,
    /// Paths last seen as regular files too large to cache: they are opened
    /// at once (open + fstat, no path stat first), as nginx does.
    large: HashSet<PathBuf>,
}

/// How many large-file paths are remembered before the set is emptied.
const MAX_LARGE: usize = 4096;

impl FileCache {
    /// The cached copy of `path`, if it is still the file `meta` describes.
    pub fn get(&self, path: &Path, meta: &Metadata) -> Option<Arc<CachedFile>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let entry = inner.map.get(path)?;
        (entry.identity == FileIdentity::of(meta)).then(|| entry.clone())
    }

    /// Whether `path` was a large regular file when last served.
    pub fn is_large(&self, path: &Path) -> bool {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).large.contains(path)
    }

    pub fn mark_large(&self, path: &Path, large: bool) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !large {
            inner.large.remove(path);
            return;
        }
        if !inner.large.contains(path) {
            if inner.large.len() >= MAX_LARGE {
                inner.large.clear();
            }
            inner.large.insert(path.to_path_buf());
        }
    }

    pub fn insert(&self, path: PathBuf, entry: Arc<CachedFile>) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.bytes + entry.data.len() > MAX_TOTAL {
            inner.map.clear();
            inner.bytes = 0;
        }
        inner.bytes += entry.data.len();
        if let Some(old) = inner.map.insert(path, entry) {
            inner.bytes -= old.data.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_a_miss() {
        let p = std::env::temp_dir().join(format!("warren-cache-{}", std::process::id()));
        std::fs::write(&p, "one").unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        let cache = FileCache::default();
        cache.insert(
            p.clone(),
            Arc::new(CachedFile { identity: FileIdentity::of(&meta), data: Arc::from(&b"one"[..]), validators: Validators::of(&meta), content_type: None }),
        );
        assert!(cache.get(&p, &meta).is_some());
        std::fs::write(&p, "two!").unwrap();
        let meta2 = std::fs::metadata(&p).unwrap();
        assert!(cache.get(&p, &meta2).is_none());
        std::fs::remove_file(p).unwrap();
    }
}
