//! Per-process caches for static files.
//!
//! Small files are kept in memory: a hit costs one `stat` instead of open,
//! fstat, read and close. Large files (sent with sendfile) are kept open: a
//! hit costs one `stat` instead of open, fstat and close. Every hit is
//! checked against the file's current identity at its path (device, inode,
//! size, mtime and ctime to the nanosecond), so a changed or replaced file
//! is never served stale. Both are bounded; when full they are emptied, and
//! open files unused for [`OPEN_IDLE`] are closed at the next lookup, so
//! that a deleted file's space is given back.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::conditional::Validators;

/// Files larger than this are not cached (they go out by sendfile).
pub const MAX_ENTRY: u64 = 32 * 1024;
/// Total bytes cached per process.
pub const MAX_TOTAL: usize = 2 * 1024 * 1024;
/// Large files kept open per process.
pub const MAX_OPEN: usize = 64;
/// An open large file not asked for in this long is closed.
pub const OPEN_IDLE: Duration = Duration::from_secs(10);

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

struct OpenFile {
    identity: FileIdentity,
    file: Arc<File>,
    used: Instant,
}

#[derive(Default)]
pub struct FileCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<PathBuf, Arc<CachedFile>>,
    bytes: usize,
    open: HashMap<PathBuf, OpenFile>,
    swept: Option<Instant>,
}

impl FileCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached copy of `path`, if it is still the file `meta` describes.
    pub fn get(&self, path: &Path, meta: &Metadata) -> Option<Arc<CachedFile>> {
        let inner = self.lock();
        let entry = inner.map.get(path)?;
        (entry.identity == FileIdentity::of(meta)).then(|| entry.clone())
    }

    pub fn insert(&self, path: PathBuf, entry: Arc<CachedFile>) {
        let mut inner = self.lock();
        if inner.bytes + entry.data.len() > MAX_TOTAL {
            inner.map.clear();
            inner.bytes = 0;
        }
        inner.bytes += entry.data.len();
        if let Some(old) = inner.map.insert(path, entry) {
            inner.bytes -= old.data.len();
        }
    }

    /// The open descriptor of large file `path`, if it is still the file
    /// `meta` (a stat of the path just now) describes.
    pub fn get_open(&self, path: &Path, meta: &Metadata) -> Option<Arc<File>> {
        self.get_open_at(path, meta, Instant::now())
    }

    fn get_open_at(&self, path: &Path, meta: &Metadata, now: Instant) -> Option<Arc<File>> {
        let mut inner = self.lock();
        if inner.swept.is_none_or(|t| now.duration_since(t) >= OPEN_IDLE) {
            inner.open.retain(|_, f| now.duration_since(f.used) < OPEN_IDLE);
            inner.swept = Some(now);
        }
        let entry = inner.open.get_mut(path)?;
        if entry.identity != FileIdentity::of(meta) {
            inner.open.remove(path);
            return None;
        }
        entry.used = now;
        Some(entry.file.clone())
    }

    /// Keeps large file `file`, opened at `path` and described by `meta`
    /// (its fstat), open for the next requests.
    pub fn insert_open(&self, path: PathBuf, file: Arc<File>, meta: &Metadata) {
        let mut inner = self.lock();
        if inner.open.len() >= MAX_OPEN && !inner.open.contains_key(&path) {
            inner.open.clear();
        }
        inner.open.insert(path, OpenFile { identity: FileIdentity::of(meta), file, used: Instant::now() });
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

    #[test]
    fn large_files_stay_open_while_unchanged_and_used() {
        let dir = std::env::temp_dir().join(format!("warren-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("big");
        std::fs::write(&p, vec![1u8; 40_000]).unwrap();
        let cache = FileCache::default();
        let meta = std::fs::metadata(&p).unwrap();
        assert!(cache.get_open(&p, &meta).is_none());
        let file = Arc::new(File::open(&p).unwrap());
        cache.insert_open(p.clone(), file.clone(), &file.metadata().unwrap());
        let hit = cache.get_open(&p, &meta).expect("unchanged: a hit");
        assert!(Arc::ptr_eq(&hit, &file));
        // Replaced under the same name with a file of the same size: a miss, and forgotten.
        let other = dir.join("other");
        std::fs::write(&other, vec![2u8; 40_000]).unwrap();
        std::fs::rename(&other, &p).unwrap();
        let meta2 = std::fs::metadata(&p).unwrap();
        assert!(cache.get_open(&p, &meta2).is_none());
        assert!(cache.get_open(&p, &meta).is_none(), "the stale entry was dropped");
        // Not asked for in OPEN_IDLE: closed at the next lookup of any file.
        let file2 = Arc::new(File::open(&p).unwrap());
        cache.insert_open(p.clone(), file2.clone(), &meta2);
        assert!(cache.get_open_at(&p, &meta2, Instant::now() + OPEN_IDLE / 2).is_some());
        let later = Instant::now() + OPEN_IDLE * 2;
        assert!(cache.get_open_at(&other, &meta2, later).is_none());
        assert_eq!(Arc::strong_count(&file2), 1, "the cache let go of the descriptor");
        // Bounded: the entry past MAX_OPEN empties the set.
        for i in 0..=MAX_OPEN {
            cache.insert_open(dir.join(format!("f{i}")), file2.clone(), &meta2);
        }
        assert_eq!(Arc::strong_count(&file2), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
