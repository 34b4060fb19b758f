//! Compressed copies of static files, per process, so that a file version
//! is compressed once per coding and level, not once per request. A
//! [`StatCache`] by path: an entry holds the copies made from one
//! [`FileVersion`] of the file, one per coding with the level it was made
//! at, and a lookup with another version or level is a miss. Bounded as the
//! file cache is: when full it is emptied.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warren_config::compress::AlterETag;
use warren_stat_cache::{FileVersion, StatCache};

use super::negotiate::Coding;

/// Compressed bytes held per process.
pub const MAX_TOTAL: usize = 4 * 1024 * 1024;
/// Files larger than this are compressed whole on the fly only when their
/// copy can be kept: bigger ones go out as they are (or precompressed).
pub const MAX_SOURCE: u64 = 1024 * 1024;

/// The encoders' settings in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Levels {
    /// DeflateCompressionLevel.
    pub gzip: u32,
    /// BrotliCompressionQuality.
    pub brotli_quality: u32,
    /// BrotliWindowSize.
    pub brotli_window: u32,
    /// DeflateAlterETag.
    pub gzip_etag: AlterETag,
    /// BrotliAlterETag.
    pub brotli_etag: AlterETag,
}

impl Levels {
    /// What the copy in `coding` depends on.
    pub fn for_coding(self, c: Coding) -> (u32, u32) {
        match c {
            Coding::Gzip => (self.gzip, 0),
            Coding::Brotli => (self.brotli_quality, self.brotli_window),
        }
    }
}

/// A file version's copies, by coding ([`slot`]), each with its levels.
type Copies = [Option<(Levels, Arc<[u8]>)>; 2];

fn slot(c: Coding) -> usize {
    match c {
        Coding::Gzip => 0,
        Coding::Brotli => 1,
    }
}

pub struct CompressedCache {
    copies: StatCache<Copies>,
}

impl Default for CompressedCache {
    fn default() -> CompressedCache {
        let bytes = |copies: &Copies| copies.iter().flatten().map(|(_, data)| data.len()).sum();
        CompressedCache { copies: StatCache::new(MAX_TOTAL, bytes) }
    }
}

impl CompressedCache {
    /// The copy of `path` in `coding`, if it was made from the file
    /// at `version`, at these levels.
    pub fn get(&self, path: &Path, coding: Coding, version: &FileVersion, levels: Levels) -> Option<Arc<[u8]>> {
        let made = |copies: &mut Copies| match &copies[slot(coding)] {
            Some((at, data)) if at.for_coding(coding) == levels.for_coding(coding) => Some(data.clone()),
            _ => None,
        };
        self.copies.get_with(path, version, made).flatten()
    }

    pub fn insert(&self, path: PathBuf, coding: Coding, version: FileVersion, levels: Levels, data: Arc<[u8]>) {
        if data.len() > MAX_TOTAL / 4 {
            return;
        }
        self.copies.update(&path, version, |copies| copies[slot(coding)] = Some((levels, data)));
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.copies.weight()
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
        let v1 = FileVersion::of(&std::fs::metadata(&p).unwrap());
        let cache = CompressedCache::default();
        cache.insert(p.clone(), Coding::Gzip, v1, LEVELS, Arc::from(&b"gz1"[..]));
        assert_eq!(cache.get(&p, Coding::Gzip, &v1, LEVELS).as_deref(), Some(&b"gz1"[..]));
        assert!(cache.get(&p, Coding::Brotli, &v1, LEVELS).is_none());
        assert!(cache.get(&p, Coding::Gzip, &v1, Levels { gzip: 9, ..LEVELS }).is_none());
        // Another brotli quality does not matter to the gzip copy.
        assert!(cache.get(&p, Coding::Gzip, &v1, Levels { brotli_quality: 11, ..LEVELS }).is_some());
        std::fs::write(&p, "two!").unwrap();
        let v2 = FileVersion::of(&std::fs::metadata(&p).unwrap());
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
