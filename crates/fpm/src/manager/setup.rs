//! How a pool's processes are set apart, prepared before any fork: whom
//! they run as ([`Credentials`]), the private directory of their sockets
//! (which neither the server's children nor a pool's user can alter), and
//! what a child does between fork and exec (its own session, its user,
//! no inherited descriptor).

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::{Gid, Uid};
use warren_config::accounts;
use warren_config::PoolConfig;

use super::ServerUser;

/// Who a pool's children run as, resolved before any fork: the child only
/// makes system calls with these numbers.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Credentials {
    pub(super) uid: Uid,
    pub(super) gid: Gid,
    /// Supplementary groups (what initgroups would set, which reads
    /// /etc/group and allocates: not something to do after fork).
    pub(super) groups: Vec<libc::gid_t>,
}

pub(super) fn credentials(p: &PoolConfig, server: &ServerUser) -> Result<Option<Credentials>, String> {
    let Some(a) = accounts::pool_account(p, server.user.as_deref(), server.group.as_deref())? else { return Ok(None) };
    let name = CString::new(a.name.clone()).map_err(|_| format!("bad user name {}", a.name))?;
    let groups = nix::unistd::getgrouplist(&name, a.gid).map_err(|e| format!("User {}: cannot list its groups: {e}", a.name))?;
    Ok(Some(Credentials { uid: a.uid, gid: a.gid, groups: groups.into_iter().map(Gid::as_raw).collect() }))
}

pub(super) fn owner_of(server: &ServerUser) -> Result<Option<(Uid, Gid)>, String> {
    Ok(accounts::server_account(server.user.as_deref(), server.group.as_deref())?.map(|a| (a.uid, a.gid)))
}

/// Makes the directory of the pools' sockets, under the temporary
/// directory. It belongs to warren's user (root), with the server
/// children's group allowed to pass through to the sockets (0710) but not to
/// list, add, rename or remove entries: neither they nor a pool's user can
/// put a symlink where root is about to bind or chown a socket.
pub(super) fn make_socket_dir(group: Option<Gid>) -> Result<(PathBuf, OwnedFd), String> {
    let (dir, fd) = make_private_dir("warren-pools")?;
    if let Some(g) = group {
        nix::unistd::fchown(&fd, None, Some(g)).map_err(|e| format!("cannot give {} to group {g}: {e}", dir.display()))?;
        nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(0o710)).map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))?;
    }
    Ok((dir, fd))
}

/// A new directory `PREFIX-PID-XXXXXXXX` of warren's user, mode 0700, under
/// the temporary directory, and a descriptor of it.
pub(super) fn make_private_dir(prefix: &str) -> Result<(PathBuf, OwnedFd), String> {
    let base = std::env::temp_dir();
    let st = nix::sys::stat::stat(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    // In a directory others may write to without the sticky bit, they could
    // rename ours away and put theirs in its place.
    if st.st_mode & 0o022 != 0 && st.st_mode & libc::S_ISVTX == 0 {
        return Err(format!("{} is writable by others without the sticky bit: set TMPDIR to a safe directory for the pools' sockets", base.display()));
    }
    let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let mut dir = None;
    for attempt in 0..64u32 {
        let candidate = base.join(format!("{prefix}-{}-{:08x}", std::process::id(), seed.wrapping_mul(2_654_435_761).wrapping_add(attempt)));
        // mkdir never follows a symlink nor reuses an existing entry: a
        // name someone else took is skipped, never cleared.
        match nix::unistd::mkdir(&candidate, Mode::from_bits_truncate(0o700)) {
            Ok(()) => {
                dir = Some(candidate);
                break;
            }
            Err(nix::errno::Errno::EEXIST) => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", candidate.display())),
        }
    }
    let dir = dir.ok_or_else(|| format!("cannot create a directory {prefix}-* in {}", base.display()))?;
    let fd = nix::fcntl::open(&dir, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
    Ok((dir, fd))
}

/// Binds a socket readable and writable by its owner only. The mode comes
/// from the umask at bind time, so there is no chmod afterwards (one that
/// would follow whatever the path then names). The parent that calls this
/// is single-threaded, so no other file is created under this umask.
pub(super) fn bind_private(path: &Path) -> std::io::Result<UnixListener> {
    let old = nix::sys::stat::umask(Mode::from_bits_truncate(0o177));
    let l = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    l
}

/// The highest descriptor open in this process: the last one a child forked
/// now can have inherited without close-on-exec.
pub(super) fn highest_open_fd() -> libc::c_int {
    let from_proc = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<libc::c_int>().ok())).max().unwrap_or(2));
    from_proc.unwrap_or_else(|| {
        let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).map_or(1024, |(s, _)| s);
        libc::c_int::try_from(soft.min(65536)).unwrap_or(65536) - 1
    })
}

/// What a pool's child does between fork and exec: async-signal-safe system
/// calls only, reading what was prepared before the fork, allocating nothing.
pub(super) fn detach_child(creds: Option<&Credentials>, highest_fd: libc::c_int) -> std::io::Result<()> {
    let check = |r: libc::c_int| if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
    // SAFETY: plain system calls on numbers and on a slice owned by the
    // closure; none of them allocates or takes a lock.
    unsafe {
        // A session of its own, so no controlling terminal: warren's
        // terminal can never be opened as /dev/tty and fed input (TIOCSTI)
        // by the pool's user, and the terminal's signals reach warren
        // alone, which stops the pools itself.
        check(libc::setsid())?;
        if let Some(c) = creds {
            check(libc::setgroups(c.groups.len(), c.groups.as_ptr()))?;
            check(libc::setgid(c.gid.as_raw()))?;
            check(libc::setuid(c.uid.as_raw()))?;
        }
        // If warren's parent dies without stopping the pool (kill -9),
        // the children go too. Set after setuid, which clears it.
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM))?;
        // Descriptors above standard error that warren inherited from
        // whoever started it, or opened without close-on-exec, must not
        // reach the pool's user. Marked close-on-exec rather than closed:
        // spawn reports a failed exec through a close-on-exec pipe of its own
        // that has to stay open until the exec.
        if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
            // Kernels before 5.11: each descriptor the parent had open.
            for fd in 3..=highest_fd {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}
