//! Users' pools asked for while warren runs: an account made after start
//! whose first script comes before any reload. The table keeps
//! [`RUNTIME_POOLS`] records for them in its shared memory. A server child
//! only asks ([`ask`]: the user's name, nothing else), then waits a bounded
//! time; the parent checks the account as at start, makes the pool in the
//! table's free room and writes where it lies ([`AskedPool`] READY), or
//! refuses it for a while (REFUSED). A child then finds the pool's place
//! with [`ready_shape`].

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::table::{PoolShape, Table};

/// Records for pools made at run time (warren_config's RUNTIME_POOLS: the
/// room kept free at start).
pub const RUNTIME_POOLS: usize = warren_config::mass::RUNTIME_POOLS;
const USER_WORDS: usize = warren_config::mass::USER_NAME_MAX / 8;

/// A record's states.
pub const FREE: u32 = 0;
/// A child is writing the name.
pub const CLAIMED: u32 = 1;
/// Waiting for the parent.
pub const ASKED: u32 = 2;
pub const READY: u32 = 3;
/// The account may not have a pool; asked again after [`REFUSED_FOR_MS`].
pub const REFUSED: u32 = 4;
pub const REFUSED_FOR_MS: u64 = 10_000;

/// One user's pool, asked for or made. All zero is a free record.
#[repr(C)]
#[derive(Default)]
pub struct AskedPool {
    pub state: AtomicU32,
    /// Bumped whenever the record is freed, so that a reader can tell it
    /// read a record reused meanwhile.
    pub serial: AtomicU32,
    user_len: AtomicU32,
    pub counters: AtomicU32,
    user: [AtomicU64; USER_WORDS],
    pub first_slot: AtomicU32,
    pub max_children: AtomicU32,
    pub max_requests: AtomicU32,
    pub backlog: AtomicU32,
    /// When it was asked for, or refused (ms of the table's clock).
    pub since_ms: AtomicU64,
}

impl AskedPool {
    fn set_user(&self, user: &[u8]) {
        for (i, word) in self.user.iter().enumerate() {
            let mut b = [0u8; 8];
            let from = (i * 8).min(user.len());
            let to = (i * 8 + 8).min(user.len());
            b[..to - from].copy_from_slice(&user[from..to]);
            word.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.user_len.store(user.len() as u32, Ordering::Relaxed);
    }

    pub fn user(&self) -> String {
        let mut b: Vec<u8> = self.user.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect();
        b.truncate((self.user_len.load(Ordering::Relaxed) as usize).min(b.len()));
        String::from_utf8_lossy(&b).into_owned()
    }

    /// Frees the record for another user.
    pub fn free(&self) {
        self.serial.fetch_add(1, Ordering::AcqRel);
        self.state.store(FREE, Ordering::Release);
        warren_shm::futex::futex_wake(&self.state, i32::MAX);
    }
}

/// The record of `user`'s pool, asked for or made, and its state.
pub fn find<'a>(table: &'a Table, user: &str) -> Option<(&'a AskedPool, u32)> {
    (0..RUNTIME_POOLS).map(|i| table.asked_at(i)).find_map(|a| {
        let state = a.state.load(Ordering::Acquire);
        (matches!(state, ASKED | READY | REFUSED) && a.user() == user).then_some((a, state))
    })
}

/// Asks the parent for `user`'s pool: true if it is made or being made,
/// false if it was refused or no record is free.
pub fn ask(table: &Table, user: &str) -> bool {
    if user.is_empty() || user.len() > USER_WORDS * 8 {
        return false;
    }
    if let Some((_, state)) = find(table, user) {
        return state != REFUSED;
    }
    for i in 0..RUNTIME_POOLS {
        let a = table.asked_at(i);
        if a.state.compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            a.set_user(user.as_bytes());
            a.since_ms.store(table.now_ms(), Ordering::Relaxed);
            a.state.store(ASKED, Ordering::Release);
            table.poke_parent();
            return true;
        }
    }
    false
}

/// The record of the user's pool named `pool`, if it was asked for and
/// the parent has not answered.
pub fn pending<'a>(table: &'a Table, pool: &str) -> Option<&'a AskedPool> {
    (0..RUNTIME_POOLS)
        .map(|i| table.asked_at(i))
        .find(|a| a.state.load(Ordering::Acquire) == ASKED && warren_config::mass::user_pool_name(&a.user()) == pool)
}

/// Where the pool named `pool` made at run time lies in the table, its
/// sockets being in `socket_dir`.
pub fn ready_shape(table: &Table, pool: &str, socket_dir: &Path) -> Option<PoolShape> {
    (0..RUNTIME_POOLS).map(|i| table.asked_at(i)).find_map(|a| {
        let serial = a.serial.load(Ordering::Acquire);
        if a.state.load(Ordering::Acquire) != READY || warren_config::mass::user_pool_name(&a.user()) != pool {
            return None;
        }
        let (first_slot, n) = (a.first_slot.load(Ordering::Relaxed) as usize, a.max_children.load(Ordering::Relaxed) as usize);
        let shape = PoolShape {
            name: pool.to_string(),
            pm: "ondemand",
            max_children: n,
            max_requests: a.max_requests.load(Ordering::Relaxed),
            backlog: a.backlog.load(Ordering::Relaxed),
            sockets: (first_slot..first_slot + n).map(|slot| socket_dir.join(format!("{pool}.{slot}.sock"))).collect(),
            counters: a.counters.load(Ordering::Relaxed) as usize,
            first_slot,
            php_fpm: None,
        };
        // Freed and reused while it was read: not this pool's place.
        let unchanged = a.serial.load(Ordering::Acquire) == serial && a.state.load(Ordering::Acquire) == READY;
        let in_bounds = shape.counters < crate::table::MAX_POOLS && first_slot + n <= crate::table::MAX_SLOTS;
        (unchanged && in_bounds).then_some(shape)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked_records(t: &Table) -> usize {
        (0..RUNTIME_POOLS).filter(|&i| t.asked_at(i).state.load(Ordering::Relaxed) != FREE).count()
    }

    #[test]
    fn a_user_is_asked_for_once_and_the_records_are_bounded() {
        let t = Table::new(None).unwrap();
        assert!(ask(&t, "alice"));
        assert!(ask(&t, "alice"));
        assert_eq!(asked_records(&t), 1);
        assert_eq!(pending(&t, "userdir-alice").map(|a| a.user()), Some("alice".to_string()));
        assert!(!ask(&t, ""));
        assert!(!ask(&t, &"x".repeat(33)));
        for n in 1..RUNTIME_POOLS {
            assert!(ask(&t, &format!("user{n}")));
        }
        assert!(!ask(&t, "one-too-many"), "no record is free");
        assert_eq!(asked_records(&t), RUNTIME_POOLS);
    }

    #[test]
    fn a_refused_user_is_not_asked_for_again_until_freed() {
        let t = Table::new(None).unwrap();
        assert!(ask(&t, "mallory"));
        let (a, _) = find(&t, "mallory").unwrap();
        a.state.store(REFUSED, Ordering::Release);
        assert!(!ask(&t, "mallory"));
        assert!(pending(&t, "userdir-mallory").is_none());
        assert!(ready_shape(&t, "userdir-mallory", Path::new("/s")).is_none());
        a.free();
        assert!(ask(&t, "mallory"));
    }

    #[test]
    fn a_ready_pool_is_found_where_the_parent_placed_it() {
        let t = Table::new(None).unwrap();
        assert!(ask(&t, "bob"));
        let (a, _) = find(&t, "bob").unwrap();
        assert!(ready_shape(&t, "userdir-bob", Path::new("/s")).is_none(), "not made yet");
        a.counters.store(7, Ordering::Relaxed);
        a.first_slot.store(40, Ordering::Relaxed);
        a.max_children.store(2, Ordering::Relaxed);
        a.state.store(READY, Ordering::Release);
        let shape = ready_shape(&t, "userdir-bob", Path::new("/s")).unwrap();
        assert_eq!((shape.counters, shape.first_slot, shape.max_children), (7, 40, 2));
        assert_eq!(shape.sockets, vec![Path::new("/s/userdir-bob.40.sock"), Path::new("/s/userdir-bob.41.sock")]);
        assert!(ready_shape(&t, "userdir-alice", Path::new("/s")).is_none());
        // A place outside the table is never believed.
        a.first_slot.store(crate::table::MAX_SLOTS as u32, Ordering::Relaxed);
        assert!(ready_shape(&t, "userdir-bob", Path::new("/s")).is_none());
    }
}
