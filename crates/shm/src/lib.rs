//! Memory shared between warren's processes, with nothing else known of
//! what is kept in it (the fpm pools' table, the MPMs' scoreboard).
//!
//! - [`SharedMemory`]: an anonymous shared mapping, zeroed, made by the
//!   parent before it forks so that every child sees the same pages. Its
//!   users lay out atomics in it: zeroed memory is a valid value for each.
//! - [`futex`]: sleeping on a word of it until another process bumps it
//!   (requests waiting for a pool's child, prefork's turns at the
//!   listeners).
//! - [`process_gone`]: whether the process an entry names as its holder
//!   has died, so that its entry can be taken back.

pub mod futex;

use std::num::NonZeroUsize;
use std::ptr::NonNull;

use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};

/// An anonymous `MAP_SHARED` mapping, unmapped on drop.
pub struct SharedMemory {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory; what its users keep there is atomics,
// reached only through `base` with their own unsafe code.
unsafe impl Send for SharedMemory {}
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    /// Maps `len` zeroed bytes, shared with every child forked after. Pages
    /// never written are never made resident.
    pub fn zeroed(len: usize) -> std::io::Result<SharedMemory> {
        let len_nz = NonZeroUsize::new(len).ok_or_else(|| std::io::Error::other("empty shared memory"))?;
        // SAFETY: a fresh anonymous mapping, placed where the kernel likes.
        let ptr = unsafe { mmap_anonymous(None, len_nz, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, MapFlags::MAP_SHARED) }?;
        Ok(SharedMemory { base: ptr.cast(), len })
    }

    /// The first byte; page-aligned.
    pub fn base(&self) -> *const u8 {
        self.base.as_ptr()
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `zeroed`, unmapped once.
        unsafe {
            let _ = munmap(self.base.cast(), self.len);
        }
    }
}

/// The process `pid`, which an entry of a shared table names as its
/// holder, is no longer there (a holder killed outright never gives its
/// entries back itself).
pub fn process_gone(pid: i32) -> bool {
    pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH)
}
