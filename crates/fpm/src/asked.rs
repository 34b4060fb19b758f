//! Users' pools asked for while warren runs: an account made after start
//! whose first script comes before any reload. The table keeps
//! [`RUNTIME_POOLS`] records for them in its shared memory. A server child
//! only asks ([`crate::table::ask`]: the user's name, nothing else), then waits a bounded
//! time; the parent checks the account as at start, makes the pool in the
//! table's free room and writes where it lies ([`AskedPool`] READY), or
//! refuses it for a while (REFUSED). A child then finds the pool's place
//! with [`crate::table::ready_shape`].

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Records for pools made at run time (warren_config's RUNTIME_POOLS: the
/// room kept free at start).
pub const RUNTIME_POOLS: usize = warren_config::mass::RUNTIME_POOLS;
pub(crate) const USER_WORDS: usize = warren_config::mass::USER_NAME_MAX / 8;

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
    pub(crate) fn set_user(&self, user: &[u8]) {
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
