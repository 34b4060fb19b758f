//! Waiting on a word of memory shared between processes (the fpm table's
//! pools, the MPMs' scoreboard): a futex that is not a private one.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `word` still holds `seen`, at most `timeout`. The word is
/// in memory shared between processes, so the futex is not a private one.
pub fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: a valid aligned u32 and timespec; FUTEX_WAIT only reads them.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, seen, &ts as *const libc::timespec, std::ptr::null::<u32>(), 0);
    }
}

pub fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: a valid aligned u32; FUTEX_WAKE does not touch memory.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, n, std::ptr::null::<libc::timespec>(), std::ptr::null::<u32>(), 0);
    }
}
