//! Memory the budget sets aside before anything is sized: the response
//! cache's `socache` entries are files on the tmpfs /dev/shm, which the
//! memory cgroup charges as shared memory and which no process maps (so no
//! process's size shows them). They may grow to their bound at any time,
//! so the pools and `MaxRequestWorkers auto` are sized as if they had: the
//! budget's limit is the bound less, and what is charged now leaves out
//! what the entries hold now (it is in the bound).
//!
//! Set where the configuration becomes a site (in the parent, at start and
//! at each restart), read where the budget is read ([`crate::Budget::read`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A directory of entries on a tmpfs and the bound it is kept within.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub dir: PathBuf,
    pub bound: u64,
}

static RESERVED: Mutex<Option<Reservation>> = Mutex::new(None);

/// Sets (or, None, clears) what the budget sets aside in this process.
pub fn reserve(r: Option<Reservation>) {
    *RESERVED.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = r;
}

/// What the budget sets aside now.
pub fn reserved() -> Option<Reservation> {
    RESERVED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// The bytes the files under `dir` (and its directories, one level down)
/// take on their filesystem.
pub fn held_in(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut total = 0;
    for e in entries.flatten() {
        let Ok(m) = e.metadata() else { continue };
        total += m.blocks() * 512;
        if m.is_dir() {
            if let Ok(files) = std::fs::read_dir(e.path()) {
                total += files.flatten().filter_map(|f| f.metadata().ok()).map(|m| m.blocks() * 512).sum::<u64>();
            }
        }
    }
    total
}

/// `reading` with the reservation taken out of its limit, and what its
/// entries hold now out of its charge (the bound counts them).
pub(crate) fn apply(mut reading: crate::Reading) -> crate::Reading {
    let Some(r) = reserved() else { return reading };
    reading.limit = reading.limit.saturating_sub(r.bound);
    reading.charged = reading.charged.map(less_held);
    reading
}

/// `charged` less what the reservation's entries hold now.
pub(crate) fn less_held(charged: u64) -> u64 {
    reserved().map_or(charged, |r| charged.saturating_sub(held_in(&r.dir)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_comes_off_the_limit_and_what_is_held_off_the_charge() {
        let dir = std::env::temp_dir().join(format!("warren-reserved-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("ab")).unwrap();
        std::fs::write(dir.join("ab/entry"), vec![1u8; 10_000]).unwrap();
        let held = held_in(&dir);
        assert!(held >= 10_000, "{held}");
        let reading = crate::Reading { limit: 100 << 20, charged: Some(50 << 20), pressure: false, short: None };
        reserve(Some(Reservation { dir: dir.clone(), bound: 8 << 20 }));
        let reserved = apply(reading.clone());
        reserve(None);
        assert_eq!(reserved.limit, 92 << 20);
        assert_eq!(reserved.charged, Some((50 << 20) - held));
        assert_eq!(apply(reading.clone()), reading);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
