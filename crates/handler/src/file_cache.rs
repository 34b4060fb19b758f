//! Per-process caches for static files.
//!
//! Small files are kept in memory: a hit costs one `stat` instead of open,
//! fstat, read and close. Large files (sent with sendfile) are kept open: a
//! hit costs one `stat` instead of open, fstat and close. Both are
//! [`StatCache`]s: every hit is checked against the file's current
//! [`FileVersion`] at its path, so a changed or replaced file is never
//! served stale. Both are bounded; when full they are emptied, and open
//! files unused for [`OPEN_IDLE`] are closed at the next lookup, so that a
//! deleted file's space is given back.

use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use warren_stat_cache::{FileVersion, StatCache};

use crate::conditional::Validators;

/// Files larger than this are not cached (they go out by sendfile).
pub const MAX_ENTRY: u64 = 32 * 1024;
/// Total bytes cached per process.
pub const MAX_TOTAL: usize = 2 * 1024 * 1024;
/// Large files kept open per process.
pub const MAX_OPEN: usize = 64;
/// An open large file not asked for in this long is closed.
pub const OPEN_IDLE: Duration = Duration::from_secs(10);

pub struct CachedFile {
    pub data: Arc<[u8]>,
    pub validators: Validators,
    /// Content-Type, Content-Encoding, Content-Language by its name.
    pub fields: crate::mime::Fields,
}

struct OpenFile {
    file: Arc<File>,
    used: Instant,
}

pub struct FileCache {
    small: StatCache<Arc<CachedFile>>,
    open: StatCache<OpenFile>,
    /// When `open` was last swept of idle files, in nanoseconds after
    /// `started` (0: never): read without a lock on every lookup.
    swept: AtomicU64,
    started: Instant,
}

impl Default for FileCache {
    fn default() -> FileCache {
        FileCache {
            small: StatCache::new(MAX_TOTAL, |f: &Arc<CachedFile>| f.data.len()),
            open: StatCache::of_entries(MAX_OPEN),
            swept: AtomicU64::new(0),
            started: Instant::now(),
        }
    }
}

impl FileCache {
    /// The cached copy of `path`, if it is still the file `meta` describes.
    pub fn get(&self, path: &Path, meta: &Metadata) -> Option<Arc<CachedFile>> {
        self.small.get(path, &FileVersion::of(meta))
    }

    /// Keeps the copy of `path` made from the file `meta` describes.
    pub fn insert(&self, path: PathBuf, meta: &Metadata, entry: Arc<CachedFile>) {
        self.small.insert(path, FileVersion::of(meta), entry);
    }

    /// The open descriptor of large file `path`, if it is still the file
    /// `meta` (a stat of the path just now) describes.
    pub fn get_open(&self, path: &Path, meta: &Metadata) -> Option<Arc<File>> {
        self.get_open_at(path, meta, Instant::now())
    }

    fn get_open_at(&self, path: &Path, meta: &Metadata, now: Instant) -> Option<Arc<File>> {
        // Nanoseconds since `started`, plus one so that 0 stays "never".
        let at = now.saturating_duration_since(self.started).as_nanos() as u64 + 1;
        let swept = self.swept.load(Ordering::Relaxed);
        if swept == 0 || at.saturating_sub(swept) >= OPEN_IDLE.as_nanos() as u64 {
            self.swept.store(at, Ordering::Relaxed);
            self.open.retain(|f| now.saturating_duration_since(f.used) < OPEN_IDLE);
        }
        self.open.get_with(path, &FileVersion::of(meta), |entry| {
            entry.used = now;
            entry.file.clone()
        })
    }

    /// Keeps large file `file`, opened at `path` and described by `meta`
    /// (its fstat), open for the next requests.
    pub fn insert_open(&self, path: PathBuf, file: Arc<File>, meta: &Metadata) {
        self.open.insert(path, FileVersion::of(meta), OpenFile { file, used: Instant::now() });
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
        cache.insert(p.clone(), &meta, Arc::new(CachedFile { data: Arc::from(&b"one"[..]), validators: Validators::of(&meta), fields: Default::default() }));
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
