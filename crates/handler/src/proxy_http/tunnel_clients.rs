//! ProxyWebsocketMaxPerClient over the whole server: one table in memory
//! shared by every child (mapped by the parent before it forks), an entry
//! per open tunnel naming its client and the process holding it. Counted
//! per child, a client got the bound once per child (a prefork child holds
//! one tunnel, so the bound did nothing there).
//!
//! No lock: a process claims a free entry, writes its client's key, and
//! only then counts the entries with that key (all sequentially
//! consistent), so of two opening at once at least one sees the other and
//! the bound is never passed. An entry is freed when its tunnel ends, and
//! an entry whose process is gone (a child killed with tunnels open) is
//! freed by the next process that finds it in its way: when its client is
//! at the bound, or when no entry is free. When the table is full (no
//! entry free after freeing dead processes' ones), a tunnel is counted in
//! its own child only, against the same bound: the bound then holds per
//! child instead of server-wide, and clients filling the table (an IPv6
//! client with many /64s) neither escape the bound nor keep others out.

use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use warren_shm::SharedMemory;

/// Entries in the table: tunnels counted at once, server-wide.
const ENTRIES: usize = 8192;

/// Before the entries: how far into them any was ever claimed (claims take
/// the first free one), so that a count reads the entries in use, not all.
#[repr(C, align(16))]
struct Header {
    used: AtomicUsize,
}

/// One open tunnel. All zero is a free entry.
#[repr(C)]
struct Entry {
    /// The client's key ([`key_of`]); 0 while being claimed or freed.
    key: AtomicU64,
    /// The process holding the tunnel; 0: free.
    pid: AtomicI32,
    _pad: u32,
}

/// The server's open tunnels by client.
pub struct ClientTunnels {
    memory: SharedMemory,
    /// Entries in the table (ENTRIES but in tests).
    capacity: usize,
    /// This process's tunnels counted while the table was full, by key.
    overflow: Mutex<HashMap<u64, usize>>,
}

/// The client holds as many tunnels as it may.
#[derive(Debug)]
pub struct AtBound;

/// A tunnel's place in the count; given back when dropped.
pub struct ClientPlace {
    table: Arc<ClientTunnels>,
    at: Counted,
}

/// Where a tunnel is counted.
enum Counted {
    /// An entry of the shared table.
    Shared(usize),
    /// The table was full: its child's overflow count, under this key.
    InChild(u64),
}

impl Drop for ClientPlace {
    fn drop(&mut self) {
        match self.at {
            Counted::Shared(at) => self.table.free(at),
            Counted::InChild(key) => {
                let mut overflow = self.table.overflow.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(n) = overflow.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        overflow.remove(&key);
                    }
                }
            }
        }
    }
}

/// A client address (already as counted: IPv6 by /64) as a nonzero key:
/// `DefaultHasher::new` is the same in every process of one binary.
fn key_of(client: IpAddr) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    client.hash(&mut h);
    h.finish() | 1
}

impl ClientTunnels {
    pub fn new() -> std::io::Result<ClientTunnels> {
        Self::with_capacity(ENTRIES)
    }

    fn with_capacity(capacity: usize) -> std::io::Result<ClientTunnels> {
        let memory = SharedMemory::zeroed(std::mem::size_of::<Header>() + capacity * std::mem::size_of::<Entry>())?;
        Ok(ClientTunnels { memory, capacity, overflow: Mutex::default() })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with the header (page-aligned), zeroed at first.
        unsafe { &*(self.memory.base() as *const Header) }
    }

    fn entries(&self) -> &[Entry] {
        // SAFETY: `capacity` entries follow the header (whose size keeps them
        // aligned), zeroed (free) at first; every field is an atomic,
        // shared by the processes forked after.
        unsafe { std::slice::from_raw_parts(self.memory.base().add(std::mem::size_of::<Header>()) as *const Entry, self.capacity) }
    }

    /// The entries ever claimed: a claim is counted here before its key
    /// is written, so a count that could see the key reads its entry.
    fn in_use(&self) -> &[Entry] {
        &self.entries()[..self.header().used.load(SeqCst).min(self.capacity)]
    }

    /// Records one more tunnel of `client`: Err when `limit` of its
    /// tunnels are open already (in the server; in this child when the
    /// table is full).
    pub fn take(self: &Arc<Self>, client: IpAddr, limit: usize) -> Result<ClientPlace, AtBound> {
        let key = key_of(client);
        let Some(at) = self.claim().or_else(|| {
            self.free_dead(|_| true);
            self.claim()
        }) else {
            return self.take_in_child(key, limit);
        };
        self.entries()[at].key.store(key, SeqCst);
        let place = ClientPlace { table: self.clone(), at: Counted::Shared(at) };
        if self.count(key) > limit {
            self.free_dead(|e| e.key.load(SeqCst) == key);
            if self.count(key) > limit {
                return Err(AtBound);
            }
        }
        Ok(place)
    }

    /// The table is full: the client's tunnels in this child, those in
    /// the table and those counted here, against the same bound.
    fn take_in_child(self: &Arc<Self>, key: u64, limit: usize) -> Result<ClientPlace, AtBound> {
        let me = std::process::id() as i32;
        let in_table = self.in_use().iter().filter(|e| e.key.load(SeqCst) == key && e.pid.load(SeqCst) == me).count();
        let mut overflow = self.overflow.lock().unwrap_or_else(PoisonError::into_inner);
        let here = overflow.entry(key).or_insert(0);
        if in_table + *here >= limit {
            return Err(AtBound);
        }
        *here += 1;
        Ok(ClientPlace { table: self.clone(), at: Counted::InChild(key) })
    }

    /// A free entry, now this process's.
    fn claim(&self) -> Option<usize> {
        let me = std::process::id() as i32;
        let at = self.entries().iter().position(|e| e.pid.load(SeqCst) == 0 && e.pid.compare_exchange(0, me, SeqCst, SeqCst).is_ok())?;
        self.header().used.fetch_max(at + 1, SeqCst);
        Some(at)
    }

    fn count(&self, key: u64) -> usize {
        self.in_use().iter().filter(|e| e.key.load(SeqCst) == key).count()
    }

    /// The key first: an entry is free for a claim only once its key no
    /// longer counts.
    fn free(&self, at: usize) {
        let e = &self.entries()[at];
        e.key.store(0, SeqCst);
        e.pid.store(0, SeqCst);
    }

    /// Frees the entries `chosen` picks whose process is gone.
    fn free_dead(&self, chosen: impl Fn(&Entry) -> bool) {
        let mut alive: Vec<i32> = Vec::new();
        for e in self.in_use() {
            let pid = e.pid.load(SeqCst);
            if pid == 0 || alive.contains(&pid) || !chosen(e) {
                continue;
            }
            if !warren_shm::process_gone(pid) {
                alive.push(pid);
                continue;
            }
            let key = e.key.load(SeqCst);
            if key != 0 && e.key.compare_exchange(key, 0, SeqCst, SeqCst).is_ok() {
                let _ = e.pid.compare_exchange(pid, 0, SeqCst, SeqCst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_its_limit_over_every_process() {
        let t = Arc::new(ClientTunnels::new().unwrap());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        // Taken in another process (a child), which goes on living.
        let (to_parent, from_child) = std::os::unix::net::UnixStream::pair().unwrap();
        // SAFETY: the child takes a place in the shared table, says so and waits.
        let child = match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let held = t.take(a, 2);
                let ok = held.is_ok();
                let _ = std::io::Write::write_all(&mut &to_parent, &[u8::from(ok)]);
                let _ = std::io::Read::read(&mut &to_parent, &mut [0u8; 1]);
                std::mem::forget(held);
                // SAFETY: _exit, as a killed process: nothing runs.
                unsafe { libc::_exit(0) };
            }
            nix::unistd::ForkResult::Parent { child } => child,
        };
        let mut said = [0u8; 1];
        std::io::Read::read_exact(&mut &from_child, &mut said).unwrap();
        assert_eq!(said, [1]);
        let mine = t.take(a, 2).expect("the second of two");
        assert!(t.take(a, 2).is_err(), "a third, the first held by another process");
        let other = t.take(b, 2).expect("another client is counted apart");
        drop(mine);
        let again = t.take(a, 2).expect("a place given back when its tunnel ends");
        assert!(t.take(a, 2).is_err());
        // The other process dies with its tunnel open: its entry is freed.
        std::io::Write::write_all(&mut &from_child, &[0]).unwrap();
        nix::sys::wait::waitpid(child, None).unwrap();
        let after = t.take(a, 2).expect("the place of a process gone is given back");
        drop((again, after, other));
        assert!(t.entries().iter().all(|e| e.pid.load(SeqCst) == 0 && e.key.load(SeqCst) == 0));
    }

    #[test]
    fn a_full_table_still_bounds_each_client_in_its_child() {
        let t = Arc::new(ClientTunnels::with_capacity(4).unwrap());
        let filler: IpAddr = "2001:db8:0:1::".parse().unwrap();
        let held: Vec<_> = (0..4).map(|_| t.take(filler, 5).unwrap()).collect();
        assert!(t.entries().iter().all(|e| e.pid.load(SeqCst) != 0), "the table is full");
        // The filler's fifth goes to the child's count, its sixth is refused.
        let fifth = t.take(filler, 5).expect("the fifth of five, counted in the child");
        assert!(t.take(filler, 5).is_err(), "past the bound with the table full");
        // A fresh client is not kept out by a full table, and is bounded.
        let fresh: IpAddr = "192.0.2.9".parse().unwrap();
        let two: Vec<_> = (0..2).map(|_| t.take(fresh, 2).expect("a fresh client, table full")).collect();
        assert!(t.take(fresh, 2).is_err(), "a fresh client's bound holds with the table full");
        drop(two);
        assert!(t.take(fresh, 2).is_ok(), "given back when its tunnels end");
        drop(fifth);
        assert!(t.overflow.lock().unwrap().is_empty());
        drop(held);
        let counted = t.take(fresh, 2).unwrap();
        assert!(matches!(counted.at, Counted::Shared(_)), "back in the shared table once it has room");
    }
}
