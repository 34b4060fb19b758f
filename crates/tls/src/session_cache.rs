//! `SSLSessionCache shmcb:`: rustls' stateful session store in memory
//! shared by every child, made by the parent before it forks.
//!
//! The memory is an array of fixed-size slots; a session goes to the slot
//! its id hashes to (a newer one takes the place of an older), with the
//! time it expires (SSLSessionCacheTimeout after it was stored). Each slot
//! has a lock word, taken by compare-and-swap and never waited on long: a
//! slot busy for more than a few hundred spins is treated as empty, so
//! that a child killed while holding it costs that slot only.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use warren_shm::SharedMemory;

const SLOT: usize = 512;
const KEY_MAX: usize = 64;
/// lock (4), key length (2), value length (2), expiry (8), key, value.
const HEADER: usize = 16;
const VALUE_MAX: usize = SLOT - HEADER - KEY_MAX;

/// The shared store (see the module's doc).
pub struct SharedSessionCache {
    mem: SharedMemory,
    slots: usize,
    timeout: Duration,
}

impl std::fmt::Debug for SharedSessionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedSessionCache({} slots, {:?})", self.slots, self.timeout)
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// FNV-1a: the same in every process, which the slot index must be.
fn hash(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3))
}

struct Locked<'a> {
    lock: &'a AtomicU32,
    base: *mut u8,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.lock.store(0, Ordering::Release);
    }
}

impl Locked<'_> {
    fn key(&self) -> &[u8] {
        // SAFETY: the slot is ours while locked; lengths are bounded on write
        // and clamped on read.
        unsafe {
            let len = (std::ptr::read(self.base.add(4) as *const u16) as usize).min(KEY_MAX);
            std::slice::from_raw_parts(self.base.add(HEADER), len)
        }
    }
    fn value(&self) -> Vec<u8> {
        // SAFETY: as in `key`.
        unsafe {
            let len = (std::ptr::read(self.base.add(6) as *const u16) as usize).min(VALUE_MAX);
            std::slice::from_raw_parts(self.base.add(HEADER + KEY_MAX), len).to_vec()
        }
    }
    fn expires(&self) -> u64 {
        // SAFETY: as in `key`; the field is 8-aligned (slots are 512-aligned).
        unsafe { std::ptr::read(self.base.add(8) as *const u64) }
    }
    fn write(&mut self, key: &[u8], value: &[u8], expires: u64) {
        // SAFETY: the slot is ours while locked; the caller bounded the lengths.
        unsafe {
            std::ptr::write(self.base.add(4) as *mut u16, key.len() as u16);
            std::ptr::write(self.base.add(6) as *mut u16, value.len() as u16);
            std::ptr::write(self.base.add(8) as *mut u64, expires);
            std::ptr::copy_nonoverlapping(key.as_ptr(), self.base.add(HEADER), key.len());
            std::ptr::copy_nonoverlapping(value.as_ptr(), self.base.add(HEADER + KEY_MAX), value.len());
        }
    }
    fn clear(&mut self) {
        // SAFETY: as in `write`.
        unsafe {
            std::ptr::write(self.base.add(4) as *mut u16, 0);
            std::ptr::write(self.base.add(8) as *mut u64, 0);
        }
    }
}

impl SharedSessionCache {
    /// A cache of about `size` bytes (as shmcb's size), entries lasting
    /// `timeout`. Call it in the parent, before forking.
    pub fn new(size: usize, timeout: Duration) -> std::io::Result<SharedSessionCache> {
        let slots = (size / SLOT).max(16);
        Ok(SharedSessionCache { mem: SharedMemory::zeroed(slots * SLOT)?, slots, timeout })
    }

    fn lock(&self, key: &[u8]) -> Option<Locked<'_>> {
        let index = (hash(key) % self.slots as u64) as usize;
        // SAFETY: within the mapping; the lock word is 4-aligned, and the
        // mapping lives as long as `self`.
        let base = unsafe { self.mem.base().add(index * SLOT) as *mut u8 };
        let lock = unsafe { &*(base as *const AtomicU32) };
        for spin in 0..400 {
            if lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return Some(Locked { lock, base });
            }
            if spin > 100 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        None
    }

    fn find(&self, key: &[u8], remove: bool) -> Option<Vec<u8>> {
        let mut slot = self.lock(key)?;
        if slot.key() != key || slot.expires() <= now() {
            return None;
        }
        let value = slot.value();
        if remove {
            slot.clear();
        }
        Some(value)
    }
}

impl rustls::server::StoresServerSessions for SharedSessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        if key.is_empty() || key.len() > KEY_MAX || value.len() > VALUE_MAX {
            return false;
        }
        let Some(mut slot) = self.lock(&key) else { return false };
        slot.write(&key, &value, now() + self.timeout.as_secs());
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.find(key, false)
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.find(key, true)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::server::StoresServerSessions;

    #[test]
    fn stores_gets_takes_and_bounds() {
        let c = SharedSessionCache::new(64 * 1024, Duration::from_secs(300)).unwrap();
        assert!(c.put(b"id-1".to_vec(), b"secret".to_vec()));
        assert_eq!(c.get(b"id-1").as_deref(), Some(&b"secret"[..]));
        assert_eq!(c.take(b"id-1").as_deref(), Some(&b"secret"[..]));
        assert_eq!(c.get(b"id-1"), None);
        assert!(!c.put(vec![1; KEY_MAX + 1], b"x".to_vec()));
        assert!(!c.put(b"k".to_vec(), vec![1; VALUE_MAX + 1]));
        assert_eq!(c.get(b"other"), None);
    }

    #[test]
    fn entries_expire() {
        let c = SharedSessionCache::new(64 * 1024, Duration::from_secs(0)).unwrap();
        assert!(c.put(b"id".to_vec(), b"v".to_vec()));
        assert_eq!(c.get(b"id"), None);
    }

    /// A session stored by one child is found by another process.
    #[test]
    fn shared_across_fork() {
        use nix::sys::wait::{waitpid, WaitStatus};
        use nix::unistd::{fork, ForkResult};
        let c = SharedSessionCache::new(64 * 1024, Duration::from_secs(300)).unwrap();
        assert!(c.put(b"from-parent".to_vec(), b"p".to_vec()));
        // SAFETY: the child only touches the mapping and exits.
        match unsafe { fork() }.unwrap() {
            ForkResult::Child => {
                let ok = c.put(b"from-child".to_vec(), b"c".to_vec()) && c.get(b"from-parent").as_deref() == Some(&b"p"[..]);
                unsafe { libc_exit(if ok { 0 } else { 1 }) }
            }
            ForkResult::Parent { child } => {
                assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
                assert_eq!(c.get(b"from-child").as_deref(), Some(&b"c"[..]));
            }
        }
    }

    unsafe fn libc_exit(code: i32) -> ! {
        extern "C" {
            fn _exit(code: i32) -> !;
        }
        _exit(code)
    }
}
