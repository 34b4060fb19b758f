//! Compressed copies of static files, per process, so that a file version
//! is compressed once per coding and level, not once per request. Keyed by
//! path and coding; an entry holds the [`FileIdentity`] (device, inode,
//! size, mtime, ctime) and level it was made from, and a lookup with
//! another is a miss. Bounded as the file cache is: when full it is
//! emptied.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::negotiate::Coding;
use super::Levels;
use crate::file_cache::FileIdentity;

/// Compressed bytes held per process.
pub const MAX_TOTAL: usize = 4 * 1024 * 1024;
/// Files larger than this are compressed whole on the fly only when their
/// copy can be kept: bigger ones go out as they are (or precompressed).
pub const MAX_SOURCE: u64 = 1024 * 1024;

struct Entry {
    identity: FileIdentity,
    levels: Levels,
    data: Arc<[u8]>,
}

fn slot(c: Coding) -> usize {
    match c {
        Coding::Gzip => 0,
        Coding::Brotli => 1,
    }
}

#[derive(Default)]
pub struct CompressedCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By path, then by coding ([`slot`]).
    map: HashMap<PathBuf, [Option<Entry>; 2]>,
    bytes: usize,
}

impl CompressedCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The copy of `path` in `coding`, if it was made from the file
    /// `identity` describes, at these levels.
    pub fn get(&self, path: &Path, coding: Coding, identity: &FileIdentity, levels: Levels) -> Option<Arc<[u8]>> {
        let inner = self.lock();
        let e = inner.map.get(path)?[slot(coding)].as_ref()?;
        (e.identity == *identity && e.levels.for_coding(coding) == levels.for_coding(coding)).then(|| e.data.clone())
    }

    pub fn insert(&self, path: PathBuf, coding: Coding, identity: FileIdentity, levels: Levels, data: Arc<[u8]>) {
        if data.len() > MAX_TOTAL / 4 {
            return;
        }
        let mut inner = self.lock();
        if inner.bytes + data.len() > MAX_TOTAL {
            inner.map.clear();
            inner.bytes = 0;
        }
        inner.bytes += data.len();
        let slots = inner.map.entry(path).or_default();
        let old = slots[slot(coding)].replace(Entry { identity, levels, data });
        if let Some(old) = old {
            inner.bytes -= old.data.len();
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warren_config::compress::AlterETag;

    const LEVELS: Levels = Levels { gzip: 6, brotli_quality: 5, brotli_window: 18, gzip_etag: AlterETag::AddSuffix, brotli_etag: AlterETag::AddSuffix };

    #[test]
    fn entries_are_of_one_file_version_and_level() {
        let dir = std::env::temp_dir().join(format!("warren-zcache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.css");
        std::fs::write(&p, "one").unwrap();
        let v1 = FileIdentity::of(&std::fs::metadata(&p).unwrap());
        let cache = CompressedCache::default();
        cache.insert(p.clone(), Coding::Gzip, v1, LEVELS, Arc::from(&b"gz1"[..]));
        assert_eq!(cache.get(&p, Coding::Gzip, &v1, LEVELS).as_deref(), Some(&b"gz1"[..]));
        assert!(cache.get(&p, Coding::Brotli, &v1, LEVELS).is_none());
        assert!(cache.get(&p, Coding::Gzip, &v1, Levels { gzip: 9, ..LEVELS }).is_none());
        // Another brotli quality does not matter to the gzip copy.
        assert!(cache.get(&p, Coding::Gzip, &v1, Levels { brotli_quality: 11, ..LEVELS }).is_some());
        std::fs::write(&p, "two!").unwrap();
        let v2 = FileIdentity::of(&std::fs::metadata(&p).unwrap());
        assert!(cache.get(&p, Coding::Gzip, &v2, LEVELS).is_none(), "a changed file is a miss");
        cache.insert(p.clone(), Coding::Gzip, v2, LEVELS, Arc::from(&b"gz22"[..]));
        assert_eq!(cache.bytes(), 4, "the replaced copy is no longer counted");
        // Bounded: filling past MAX_TOTAL empties it first.
        let big: Arc<[u8]> = Arc::from(vec![0u8; MAX_TOTAL / 4]);
        for i in 0..5 {
            cache.insert(dir.join(format!("f{i}")), Coding::Gzip, v2, LEVELS, big.clone());
        }
        assert!(cache.bytes() <= MAX_TOTAL);
        assert!(cache.get(&p, Coding::Gzip, &v2, LEVELS).is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
