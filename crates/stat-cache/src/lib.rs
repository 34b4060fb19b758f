//! What a server keeps in memory about files that may change under it.
//!
//! [`FileVersion`] is a file's version as `stat` tells it: device, inode,
//! size, and mtime and ctime to the nanosecond. A file rewritten in place
//! changes its size or times; one replaced by a rename changes its inode;
//! so two stats that give the same version saw the same contents.
//!
//! [`StatCache`] holds one value per path, made from the file at one
//! version: a lookup names the version a `stat` just gave, and an entry
//! made from another version is a miss (and is dropped). It is bounded by
//! a total weight (bytes, or entries) and emptied when full, which costs
//! nothing on a hit and bounds memory whatever paths clients name.
//!
//! warren's caches are all of this kind: small files' bytes and large
//! files' descriptors, compressed copies of static files, `.htaccess`
//! files as read, and RewriteMap text files.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// A file's version as `stat` (or `fstat`) tells it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FileVersion {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileVersion {
    pub fn of(m: &Metadata) -> FileVersion {
        FileVersion { dev: m.dev(), ino: m.ino(), size: m.size(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) }
    }
}

/// Values made from files, one per path, each valid for one version of
/// its file; at most `capacity` in total weight.
pub struct StatCache<V> {
    inner: Mutex<Entries<V>>,
    capacity: usize,
    weigh: fn(&V) -> usize,
}

struct Entries<V> {
    /// Keyed by the path's bytes as written, not by `Path`, whose hash and
    /// comparison go component by component (a static request's lookup
    /// spent about 900 instructions hashing its path so): a path spelt two
    /// ways (`a//b`, `a/b`) is two entries, each checked against the file.
    map: HashMap<OsString, (FileVersion, V)>,
    weight: usize,
}

impl<V> StatCache<V> {
    /// A cache of at most `capacity` in the weight `weigh` gives each value.
    pub fn new(capacity: usize, weigh: fn(&V) -> usize) -> StatCache<V> {
        StatCache { inner: Mutex::new(Entries { map: HashMap::new(), weight: 0 }), capacity, weigh }
    }

    /// A cache of at most `capacity` entries.
    pub fn of_entries(capacity: usize) -> StatCache<V> {
        StatCache::new(capacity, |_| 1)
    }

    fn lock(&self) -> MutexGuard<'_, Entries<V>> {
        // A thread that panicked while holding the lock left whole entries:
        // the map is changed only by single insertions and removals.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `seen` makes of the value for `path`, if it was made from the
    /// file at `version`. An entry of another version is dropped.
    pub fn get_with<R>(&self, path: &Path, version: &FileVersion, seen: impl FnOnce(&mut V) -> R) -> Option<R> {
        let mut entries = self.lock();
        let (made_from, value) = entries.map.get_mut(path.as_os_str())?;
        if made_from == version {
            return Some(seen(value));
        }
        entries.remove(path.as_os_str(), self.weigh);
        None
    }

    /// The value for `path`, if it was made from the file at `version`.
    pub fn get(&self, path: &Path, version: &FileVersion) -> Option<V>
    where
        V: Clone,
    {
        self.get_with(path, version, |v| v.clone())
    }

    /// Keeps `value`, made from `path` at `version`, in place of what the
    /// cache held for `path`; emptying the cache first if it would go over
    /// its capacity.
    pub fn insert(&self, path: PathBuf, version: FileVersion, value: V) {
        let mut entries = self.lock();
        entries.remove(path.as_os_str(), self.weigh);
        entries.add(path.into_os_string(), version, value, self.capacity, self.weigh);
    }

    /// Changes the value for `path` at `version` by `change`: the one the
    /// cache holds, or a fresh default one if it holds none of that version.
    pub fn update(&self, path: &Path, version: FileVersion, change: impl FnOnce(&mut V))
    where
        V: Default,
    {
        let mut entries = self.lock();
        let mut value = match entries.remove(path.as_os_str(), self.weigh) {
            Some((made_from, v)) if made_from == version => v,
            _ => V::default(),
        };
        change(&mut value);
        entries.add(path.as_os_str().to_os_string(), version, value, self.capacity, self.weigh);
    }

    /// Drops the entries `keep` says no to.
    pub fn retain(&self, mut keep: impl FnMut(&V) -> bool) {
        let mut entries = self.lock();
        let weigh = self.weigh;
        let mut dropped = 0;
        entries.map.retain(|_, (_, v)| {
            let kept = keep(v);
            if !kept {
                dropped += weigh(v);
            }
            kept
        });
        entries.weight -= dropped;
    }

    /// The total weight held.
    pub fn weight(&self) -> usize {
        self.lock().weight
    }
}

impl<V> Entries<V> {
    fn remove(&mut self, path: &OsStr, weigh: fn(&V) -> usize) -> Option<(FileVersion, V)> {
        let old = self.map.remove(path)?;
        self.weight -= weigh(&old.1);
        Some(old)
    }

    fn add(&mut self, path: OsString, version: FileVersion, value: V, capacity: usize, weigh: fn(&V) -> usize) {
        let weight = weigh(&value);
        if self.weight + weight > capacity {
            self.map.clear();
            self.weight = 0;
        }
        self.weight += weight;
        self.map.insert(path, (version, value));
    }
}

impl<V> std::fmt::Debug for StatCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.lock();
        f.debug_struct("StatCache").field("entries", &entries.map.len()).field("weight", &entries.weight).field("capacity", &self.capacity).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("warren-stat-cache-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn version(p: &Path) -> FileVersion {
        FileVersion::of(&std::fs::metadata(p).unwrap())
    }

    #[test]
    fn a_file_rewritten_or_replaced_is_another_version() {
        let dir = scratch("version");
        let p = dir.join("f");
        std::fs::write(&p, "one").unwrap();
        let v1 = version(&p);
        assert_eq!(v1, version(&p), "two stats of an unchanged file agree");
        std::fs::write(&p, "two!").unwrap();
        assert_ne!(v1, version(&p), "rewritten in place");
        let v2 = version(&p);
        let other = dir.join("g");
        std::fs::write(&other, "two!").unwrap();
        std::fs::rename(&other, &p).unwrap();
        assert_ne!(v2, version(&p), "replaced by another file of the same size");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_entry_of_another_version_is_a_miss_and_is_dropped() {
        let dir = scratch("miss");
        let p = dir.join("f");
        std::fs::write(&p, "one").unwrap();
        let v1 = version(&p);
        let cache: StatCache<Arc<str>> = StatCache::new(100, |v| v.len());
        cache.insert(p.clone(), v1, Arc::from("made from one"));
        assert_eq!(cache.get(&p, &v1).as_deref(), Some("made from one"));
        assert_eq!(cache.weight(), 13);
        std::fs::write(&p, "two!").unwrap();
        let v2 = version(&p);
        assert!(cache.get(&p, &v2).is_none());
        assert_eq!(cache.weight(), 0, "the stale entry is gone");
        assert!(cache.get(&p, &v1).is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bounded_by_weight_emptied_when_full() {
        let dir = scratch("bound");
        let p = dir.join("f");
        std::fs::write(&p, "x").unwrap();
        let v = version(&p);
        let cache: StatCache<Vec<u8>> = StatCache::new(10, |v| v.len());
        cache.insert(dir.join("a"), v, vec![0; 4]);
        cache.insert(dir.join("a"), v, vec![0; 6]);
        assert_eq!(cache.weight(), 6, "a replaced value no longer counts");
        cache.insert(dir.join("b"), v, vec![0; 4]);
        assert_eq!(cache.weight(), 10);
        cache.insert(dir.join("c"), v, vec![0; 1]);
        assert_eq!(cache.weight(), 1, "over capacity: emptied, then the new entry");
        assert!(cache.get(&dir.join("a"), &v).is_none());
        let counted: StatCache<u8> = StatCache::of_entries(2);
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            counted.insert(dir.join(name), v, i as u8);
        }
        assert_eq!(counted.weight(), 1);
        assert_eq!(counted.get(&dir.join("c"), &v), Some(2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_path_is_looked_up_as_written() {
        let dir = scratch("spelling");
        let p = dir.join("f");
        std::fs::write(&p, "x").unwrap();
        let v = version(&p);
        let cache: StatCache<u8> = StatCache::of_entries(10);
        cache.insert(p.clone(), v, 1);
        let other_spelling = PathBuf::from(format!("{}//f", dir.display()));
        assert_eq!(cache.get(&p, &v), Some(1));
        assert_eq!(cache.get(&other_spelling, &v), None, "another spelling is another entry");
        cache.insert(other_spelling.clone(), v, 2);
        assert_eq!((cache.get(&p, &v), cache.get(&other_spelling, &v), cache.weight()), (Some(1), Some(2), 2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn update_keeps_a_value_of_the_same_version_and_starts_over_on_another() {
        let dir = scratch("update");
        let p = dir.join("f");
        std::fs::write(&p, "one").unwrap();
        let v1 = version(&p);
        let cache: StatCache<Vec<&str>> = StatCache::new(100, |v| v.len());
        cache.update(&p, v1, |v| v.push("gzip"));
        cache.update(&p, v1, |v| v.push("br"));
        assert_eq!(cache.get(&p, &v1), Some(vec!["gzip", "br"]));
        std::fs::write(&p, "two!").unwrap();
        let v2 = version(&p);
        cache.update(&p, v2, |v| v.push("br"));
        assert_eq!(cache.get(&p, &v2), Some(vec!["br"]));
        assert_eq!(cache.weight(), 1);
        cache.retain(|v| v.is_empty());
        assert_eq!(cache.weight(), 0);
        assert!(cache.get(&p, &v2).is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn get_with_changes_the_value_in_place() {
        let dir = scratch("with");
        let p = dir.join("f");
        std::fs::write(&p, "one").unwrap();
        let v = version(&p);
        let cache: StatCache<u32> = StatCache::of_entries(4);
        cache.insert(p.clone(), v, 1);
        assert_eq!(cache.get_with(&p, &v, |n| { *n += 1; *n }), Some(2));
        assert_eq!(cache.get(&p, &v), Some(2));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
