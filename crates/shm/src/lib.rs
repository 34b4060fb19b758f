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
/// entries back itself). Holders are warren's server processes, children
/// of the parent, which is the caller or the caller's parent: a process
/// of that number with another parent took the number over once the
/// holder was reaped (`kill` alone would call it alive, and EPERM for
/// another user's), and a zombie has died.
pub fn process_gone(pid: i32) -> bool {
    use nix::errno::Errno;
    use nix::unistd::{getpid, getppid, Pid};
    if pid <= 0 || pid == getpid().as_raw() {
        return false;
    }
    match nix::sys::signal::kill(Pid::from_raw(pid), None) {
        Err(Errno::ESRCH) => return true,
        Ok(()) | Err(Errno::EPERM) => {}
        Err(_) => return false,
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => match stat_state_and_parent(&stat) {
            Some((state, parent)) => state == 'Z' || (parent != getpid().as_raw() && parent != getppid().as_raw()),
            None => false,
        },
        // Not there, or hidden (hidepid) as another user's: not a holder,
        // if /proc is there at all.
        Err(_) => std::path::Path::new("/proc/self/stat").exists(),
    }
}

/// The state letter and the parent's pid of a /proc/PID/stat line (the
/// command name between them may hold spaces and parentheses).
fn stat_state_and_parent(stat: &str) -> Option<(char, i32)> {
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}

#[cfg(test)]
mod holder_tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn stat_lines() {
        assert_eq!(stat_state_and_parent("12 (a) b) (c) S 7 12 12 0"), Some(('S', 7)));
        assert_eq!(stat_state_and_parent("12 (x) Z 1 0"), Some(('Z', 1)));
        assert_eq!(stat_state_and_parent("garbage"), None);
    }

    #[test]
    fn own_children_until_reaped_and_strangers() {
        assert!(!process_gone(0) && !process_gone(std::process::id() as i32));
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = child.id() as i32;
        assert!(!process_gone(pid), "a living child");
        child.kill().expect("kill");
        // Dead but not reaped: a zombie, gone already.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !process_gone(pid) {
            assert!(Instant::now() < deadline, "a killed child never counted as gone");
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait().expect("wait");
        assert!(process_gone(pid), "reaped");
        // A process that is neither the caller's child nor its parent's
        // (init's parent is 0): one that took a holder's number over.
        assert!(process_gone(1));
    }
}
