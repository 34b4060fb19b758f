//! The entries of one directory (CacheRoot for `disk`, a directory on the
//! tmpfs /dev/shm for `socache`), shared by every process and thread
//! because they are files. A key's file is `root/ab/cdef...`, named by
//! the SHA-1 of the key; it holds the entry (whose own key is compared at
//! every read) or, for an answer with Vary, a vary record: the selecting
//! field names and a generation, from which each variant's key is made
//! with the request's values of those fields. Writes go to a temporary
//! file renamed into place, so a reader sees a whole file or none.
//! Invalidating a key removes its file (its variants become unreachable
//! with the record's generation, and are evicted in time).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sha1::{Digest, Sha1};
use warren_stat_cache::{FileVersion, StatCache};

use crate::entry::{fnv1a, Entry};

const VARY_MAGIC: &[u8] = b"WARRENVARY1\n";

/// The bytes of decoded entries each process keeps (a hit's body is then
/// shared, not read and copied).
const DECODED_BYTES: usize = 4 << 20;

/// The store's counts, as server-status and the metrics show them.
pub const COUNTER_NAMES: [&str; 5] = ["hits", "misses", "stores", "evictions", "bytes_stored"];

/// The counts of every process using a store: five words (and the bytes
/// held, a sixth) in the file
/// `.counters` of its directory, mapped shared by each process, so that
/// all add to the same words and the counts outlive restarts. Where the
/// file cannot be mapped, the counts are this process's own.
#[derive(Debug)]
pub struct Counters {
    words: *const AtomicU64,
    /// Stands in for the file when it cannot be mapped.
    _own: Box<[AtomicU64; 6]>,
}

// The mapping is never unmapped (the store lives as long as the process)
// and is only used through atomics.
unsafe impl Send for Counters {}
unsafe impl Sync for Counters {}

impl Counters {
    fn open(path: &Path) -> Counters {
        let own = Box::new([const { AtomicU64::new(0) }; 6]);
        // Never through a link: the process may be root (`warren cache purge`).
        let mapped = fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path).and_then(|f| {
            // Its page allocated now: a page of a sparse file on a full
            // tmpfs would fail at the first write through the mapping, as a
            // SIGBUS that kills the process.
            // SAFETY: fallocate on a descriptor this function owns.
            let err = unsafe { libc::posix_fallocate(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 4096) };
            if err != 0 {
                return Err(io::Error::from_raw_os_error(err));
            }
            // SAFETY: a shared mapping of a 4096-byte file; the file may
            // be closed once mapped, and the mapping is kept to the end.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, std::os::fd::AsRawFd::as_raw_fd(&f), 0) };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            Ok(p as *const AtomicU64)
        });
        let words = mapped.unwrap_or(own.as_ptr());
        Counters { words, _own: own }
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: `words` points to at least six aligned words (a page, or `own`).
        unsafe { &*self.words.add(i) }
    }

    pub fn hit(&self) {
        self.word(0).fetch_add(1, Relaxed);
    }
    pub fn miss(&self) {
        self.word(1).fetch_add(1, Relaxed);
    }
    fn stored(&self, bytes: u64) {
        self.word(2).fetch_add(1, Relaxed);
        self.word(4).fetch_add(bytes, Relaxed);
    }
    fn evicted(&self) {
        self.word(3).fetch_add(1, Relaxed);
    }

    /// What the directory holds, as every process's writes added to it
    /// since the last sweep measured it (removals are not taken off: it
    /// errs high, which only sweeps sooner).
    fn held(&self) -> &AtomicU64 {
        self.word(5)
    }

    /// Hits, misses, stores, evictions and bytes stored, by [`COUNTER_NAMES`].
    pub fn read(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.word(i).load(Relaxed))
    }
}

/// A directory of entries.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    /// The largest body stored (CacheMaxFileSize, CacheSocacheMaxSize).
    pub max_entry: u64,
    /// The bound on all the files together, in the pages they take (what
    /// a tmpfs charges to the memory cgroup).
    max_total: u64,
    /// Entries this process read, kept decoded while their file is
    /// unchanged: a hit costs a stat rather than a read and a check.
    decoded: StatCache<Arc<Entry>>,
    pub counters: Counters,
}

/// The outcome of asking for a key's lock (CacheLock).
pub enum LockState {
    /// This request goes to the backend; the lock goes with the guard.
    Acquired(LockGuard),
    /// Another request is fetching the key.
    Held,
}

/// Removes its lock file when dropped.
#[derive(Debug)]
pub struct LockGuard(PathBuf);

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn hex_name(key: &str) -> String {
    // Once per lookup (every hit): one string, not one per byte.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut name = String::with_capacity(40);
    for b in Sha1::digest(key.as_bytes()) {
        name.push(char::from(HEX[usize::from(b >> 4)]));
        name.push(char::from(HEX[usize::from(b & 15)]));
    }
    name
}

/// `len` bytes in the 4 KiB pages a file of them takes.
fn in_pages(len: u64) -> u64 {
    len.div_ceil(4096) * 4096
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Store {
    /// The store under `root`, made if missing. An error (unwritable,
    /// not a directory) is for the caller to warn about and serve uncached.
    /// A directory another user may write (a tenant's, made in /dev/shm
    /// before the server started, or left world-writable) is refused:
    /// entries planted there would be served to every host's clients.
    pub fn open(root: &Path, max_entry: u64, max_total: u64) -> io::Result<Store> {
        private_dirs(&root.join("locks"))?;
        only_ours(root)?;
        // Writable? Checked once here rather than failing at every store.
        let probe = root.join(format!(".probe.{}", std::process::id()));
        // One a dead process of the same pid left (or a link) goes first.
        let _ = fs::remove_file(&probe);
        fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&probe)?;
        let _ = fs::remove_file(&probe);
        Ok(Store { root: root.to_path_buf(), max_entry, max_total, decoded: StatCache::new(DECODED_BYTES, |e| e.body.len() + 512), counters: Counters::open(&root.join(".counters")) })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, key: &str) -> PathBuf {
        let h = hex_name(key);
        self.root.join(&h[..2]).join(&h[2..])
    }

    /// The entry stored for `key`, the variant `field` (a request field's
    /// value by lower-case name) selects. A corrupt file is removed.
    pub fn lookup(&self, key: &str, field: &dyn Fn(&str) -> Option<String>) -> Option<Entry> {
        let path = self.path_of(key);
        let bytes = fs::read(&path).ok()?;
        if let Some((record_key, generation, names)) = parse_vary(&bytes) {
            if record_key != key {
                return None;
            }
            return self.read_entry(&variant_key(key, &generation, &names, field));
        }
        self.checked(&path, key, &bytes)
    }

    fn read_entry(&self, key: &str) -> Option<Entry> {
        let path = self.path_of(key);
        let bytes = fs::read(&path).ok()?;
        self.checked(&path, key, &bytes)
    }

    /// [`Store::lookup`] through this process's decoded entries.
    pub fn lookup_shared(&self, key: &str, field: &dyn Fn(&str) -> Option<String>) -> Option<Arc<Entry>> {
        let path = self.path_of(key);
        let meta = fs::metadata(&path).ok()?;
        let version = FileVersion::of(&meta);
        if let Some(e) = self.decoded.get(&path, &version) {
            if e.key == key {
                return Some(e);
            }
        }
        // A vary record, or an entry not decoded yet.
        let e = Arc::new(self.lookup(key, field)?);
        if e.key == key {
            self.decoded.insert(path, version, e.clone());
        }
        Some(e)
    }

    fn checked(&self, path: &Path, key: &str, bytes: &[u8]) -> Option<Entry> {
        match Entry::decode(bytes) {
            Some(e) if e.key == key => Some(e),
            // Another key with the same name (never seen with SHA-1): not ours.
            Some(_) => None,
            None => {
                let _ = fs::remove_file(path);
                None
            }
        }
    }

    /// Stores `entry` under `key` (its `key` field is set here), as the
    /// variant of `vary` (lower-case field names) that `field` selects.
    pub fn store(&self, key: &str, vary: &[String], field: &dyn Fn(&str) -> Option<String>, mut entry: Entry) -> io::Result<()> {
        if entry.body.len() as u64 > self.max_entry {
            return Err(io::Error::other("larger than the cache's largest entry"));
        }
        if vary.is_empty() {
            entry.key = key.to_string();
            self.write(&self.path_of(key), &entry.encode())?;
        } else {
            let base = self.path_of(key);
            let existing = fs::read(&base).ok();
            let generation = match existing.as_deref().and_then(parse_vary) {
                Some((k, g, names)) if k == key && names == vary => g,
                _ => {
                    let g = format!("{:x}", fnv1a(format!("{}{:?}{}", std::process::id(), std::thread::current().id(), SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos())).as_bytes()));
                    let mut record = VARY_MAGIC.to_vec();
                    record.extend_from_slice(format!("{key}\n{g}\n{}", vary.join(",")).as_bytes());
                    self.write(&base, &record)?;
                    g
                }
            };
            entry.key = variant_key(key, &generation, vary, field);
            self.write(&self.path_of(&entry.key), &entry.encode())?;
        }
        Ok(())
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let dir = path.parent().unwrap_or(&self.root);
        private_dirs(dir)?;
        // Room is made before the write, from the figure every process
        // adds to, so that the directory stays within its bound however
        // many processes write (short of an eighth of it written at once).
        let charge = in_pages(bytes.len() as u64);
        if self.counters.held().fetch_add(charge, Relaxed) + charge > self.max_total / 8 * 7 {
            self.make_room(charge);
        }
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let tmp = self.root.join(format!(".tmp.{}.{}", std::process::id(), SEQ.fetch_add(1, Relaxed)));
        // The server's user's only: an entry may be a variant chosen by a
        // Cookie, which other local users (tenants' PHP) must not read.
        let written = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).and_then(|mut f| f.write_all(bytes)).and_then(|()| fs::rename(&tmp, path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written?;
        self.counters.stored(bytes.len() as u64);
        Ok(())
    }

    /// Removes `key`'s entry (and so its variants): RFC 9111 4.4's
    /// invalidation, and PURGE of one URL.
    pub fn invalidate(&self, key: &str) -> bool {
        fs::remove_file(self.path_of(key)).is_ok()
    }

    /// Removes every entry whose key starts with `prefix`; their number.
    pub fn purge_prefix(&self, prefix: &str) -> usize {
        let mut removed = 0;
        for (path, _, _) in self.files() {
            let Ok(bytes) = fs::read(&path) else { continue };
            let key = match parse_vary(&bytes) {
                Some((k, _, _)) => Some(k),
                None => Entry::decode(&bytes).map(|e| e.key),
            };
            if key.is_some_and(|k| k.starts_with(prefix)) && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Every entry file: its path, the bytes it takes and its time of writing.
    fn files(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let mut out = Vec::new();
        let Ok(dirs) = fs::read_dir(&self.root) else { return out };
        for d in dirs.flatten() {
            let name = d.file_name();
            if name.len() != 2 || !d.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(files) = fs::read_dir(d.path()) else { continue };
            for f in files.flatten() {
                if let Ok(m) = f.metadata() {
                    out.push((f.path(), m.blocks() * 512, m.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
                }
            }
        }
        out
    }

    /// Keeps the directory within its bound: past seven eighths of it,
    /// the least recently written files go first, down to three quarters.
    pub fn sweep(&self) {
        self.make_room(0);
    }

    /// [`Store::sweep`] with `incoming` bytes about to be written; what
    /// the directory holds is then measured anew for every process.
    fn make_room(&self, incoming: u64) {
        let mut files = self.files();
        let mut total: u64 = files.iter().map(|f| f.1).sum::<u64>() + incoming;
        if total > self.max_total / 8 * 7 {
            files.sort_by_key(|f| f.2);
            for (path, len, _) in files {
                if total <= self.max_total / 4 * 3 {
                    break;
                }
                if fs::remove_file(&path).is_ok() {
                    total -= len;
                    self.counters.evicted();
                }
            }
        }
        self.counters.held().store(total, Relaxed);
    }

    /// Asks for `key`'s lock: a lock file made exclusively, taken over
    /// once older than `max_age` (its holder died or hung).
    pub fn lock(&self, key: &str, max_age: Duration) -> LockState {
        let path = self.root.join("locks").join(hex_name(key));
        for _ in 0..2 {
            match fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => return LockState::Acquired(LockGuard(path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let old = fs::metadata(&path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > max_age);
                    if !old {
                        return LockState::Held;
                    }
                    let _ = fs::remove_file(&path);
                }
                // No lock to be had (unwritable): the request goes on unlocked.
                Err(_) => return LockState::Acquired(LockGuard(PathBuf::new())),
            }
        }
        LockState::Held
    }

    /// Whether `key`'s lock is still held (and not yet older than `max_age`).
    pub fn locked(&self, key: &str, max_age: Duration) -> bool {
        let path = self.root.join("locks").join(hex_name(key));
        fs::metadata(&path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age <= max_age)
    }

    /// Seconds since the epoch, as entries count time.
    pub fn now() -> u64 {
        now_secs()
    }
}

/// `dir` and its missing parents made, the server's user's only.
fn private_dirs(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Err when another user than this process's may write in `root`: it is
/// someone else's, or anyone's. Root may use the server user's directory
/// (`warren cache purge` run by the admin).
fn only_ours(root: &Path) -> io::Result<()> {
    let meta = fs::metadata(root)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.mode() & 0o002 != 0 {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "any user may write in it (mode o+w), and so plant answers"));
    }
    if meta.uid() != euid && euid != 0 {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("it belongs to uid {}, not to this server's user (uid {euid}), who alone may write answers there", meta.uid())));
    }
    Ok(())
}

fn parse_vary(bytes: &[u8]) -> Option<(String, String, Vec<String>)> {
    let rest = std::str::from_utf8(bytes.strip_prefix(VARY_MAGIC)?).ok()?;
    let mut lines = rest.splitn(3, '\n');
    let key = lines.next()?.to_string();
    let generation = lines.next()?.to_string();
    let names = lines.next()?.split(',').map(str::to_string).collect();
    Some((key, generation, names))
}

/// A variant's key: the URL's key, the record's generation and each
/// selecting field's value (absent and empty told apart).
fn variant_key(key: &str, generation: &str, names: &[String], field: &dyn Fn(&str) -> Option<String>) -> String {
    let mut k = format!("{key}\u{0}{generation}");
    for n in names {
        match field(n) {
            Some(v) => k.push_str(&format!("\u{0}{n}={}", v.trim())),
            None => k.push_str(&format!("\u{0}{n}")),
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(body: &str) -> Entry {
        Entry { key: String::new(), status: 200, headers: vec![], body: Arc::from(body.as_bytes()), stored_at: 1, fresh_until: 2 }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("warren-cache-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn entries_and_variants_are_found_by_key_and_selecting_fields() {
        let dir = scratch("vary");
        let s = Store::open(&dir, 1000, 1 << 20).unwrap();
        let none = |_: &str| None;
        s.store("k1", &[], &none, entry("one")).unwrap();
        assert_eq!(&*s.lookup("k1", &none).unwrap().body, b"one");
        assert!(s.lookup("k2", &none).is_none());
        let lang = |v: &'static str| move |n: &str| (n == "accept-language").then(|| v.to_string());
        let vary = vec!["accept-language".to_string()];
        s.store("k3", &vary, &lang("fr"), entry("bonjour")).unwrap();
        s.store("k3", &vary, &lang("de"), entry("hallo")).unwrap();
        assert_eq!(&*s.lookup("k3", &lang("fr")).unwrap().body, b"bonjour");
        assert_eq!(&*s.lookup("k3", &lang("de")).unwrap().body, b"hallo");
        assert!(s.lookup("k3", &lang("en")).is_none());
        assert!(s.invalidate("k3"));
        assert!(s.lookup("k3", &lang("fr")).is_none());
        assert!(s.store("big", &[], &none, entry(&"x".repeat(1001))).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_file_is_discarded_and_prefixes_purge() {
        let dir = scratch("corrupt");
        let s = Store::open(&dir, 1000, 1 << 20).unwrap();
        let none = |_: &str| None;
        s.store("http://a/x", &[], &none, entry("x")).unwrap();
        s.store("http://a/y", &[], &none, entry("y")).unwrap();
        s.store("http://b/x", &[], &none, entry("z")).unwrap();
        let path = s.path_of("http://a/x");
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 9;
        bytes[last] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        assert!(s.lookup("http://a/x", &none).is_none());
        assert!(!path.exists());
        assert_eq!(s.purge_prefix("http://a/"), 1);
        assert!(s.lookup("http://b/x", &none).is_some());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_directory_stays_within_its_bound() {
        let dir = scratch("bound");
        let s = Store::open(&dir, 10_000, 200_000).unwrap();
        let none = |_: &str| None;
        // Six openings (six processes) writing in turn: the bound holds
        // after every write, not only after a sweep.
        let others: Vec<Store> = (0..5).map(|_| Store::open(&dir, 10_000, 200_000).unwrap()).collect();
        for i in 0..120 {
            let writer = if i % 6 == 0 { &s } else { &others[i % 6 - 1] };
            writer.store(&format!("k{i}"), &[], &none, entry(&"x".repeat(5000))).unwrap();
            let total: u64 = s.files().iter().map(|f| f.1).sum();
            assert!(total <= 200_000, "after {i}: {total}");
        }
        assert!(s.counters.read()[3] > 0);
        // Another opening of the directory (another process) sees the same counts.
        assert_eq!(Store::open(&dir, 1, 1).unwrap().counters.read(), s.counters.read());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn planted_links_are_not_followed_and_entries_are_the_servers_only() {
        use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
        let dir = scratch("planted");
        fs::create_dir(&dir).unwrap();
        // A file the server's user may write (another site's), which a
        // tenant's links in the cache directory point at.
        let victim = std::env::temp_dir().join(format!("warren-cache-test-victim-{}", std::process::id()));
        fs::write(&victim, b"precious").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o666)).unwrap();
        symlink(&victim, dir.join(".counters")).unwrap();
        symlink(&victim, dir.join(format!(".probe.{}", std::process::id()))).unwrap();
        let s = Store::open(&dir, 1000, 1 << 20).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        let none = |_: &str| None;
        s.store("k", &[], &none, entry("secret")).unwrap();
        let file = fs::metadata(s.path_of("k")).unwrap();
        let shard = fs::metadata(s.path_of("k").parent().unwrap()).unwrap();
        assert_eq!(file.mode() & 0o077, 0, "{:o}", file.mode());
        assert_eq!(shard.mode() & 0o077, 0, "{:o}", shard.mode());
        // A directory anyone may write is anyone's to plant entries in.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(Store::open(&dir, 1000, 1 << 20).is_err());
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_file(&victim).unwrap();
    }

    #[test]
    fn names_are_the_keys_sha1_in_hex() {
        assert_eq!(hex_name("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    #[test]
    fn one_lock_per_key() {
        let dir = scratch("lock");
        let s = Store::open(&dir, 1000, 1 << 20).unwrap();
        let first = s.lock("k", Duration::from_secs(5));
        assert!(matches!(first, LockState::Acquired(_)));
        assert!(matches!(s.lock("k", Duration::from_secs(5)), LockState::Held));
        assert!(s.locked("k", Duration::from_secs(5)));
        drop(first);
        assert!(matches!(s.lock("k", Duration::from_secs(5)), LockState::Acquired(_)));
        fs::remove_dir_all(&dir).unwrap();
    }
}
