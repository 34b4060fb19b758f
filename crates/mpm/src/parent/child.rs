//! A server child's start, forked from the [`Parent`]: it leaves warren's
//! terminal and process group, becomes `User`, dies with its parent, reserves
//! descriptors for the threads to come, and runs its MPM's loop until
//! told to stop. The loop is not this crate's: the binary gives the parent
//! a [`ServeChild`] (warren-serve's drivers), handed a [`ChildStart`].

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::unistd::Pid;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGWINCH};
use warren_config::{LogLevel, Mpm};
use warren_handler::Site;

use super::Parent;
use crate::listen::Listener;
use crate::scoreboard::Scoreboard;

/// What a server child serves with, once it runs as `User`.
pub struct ChildStart {
    pub site: Arc<Site>,
    /// The child's own handles on the listening sockets.
    pub listeners: Vec<Listener>,
    pub scoreboard: Arc<Scoreboard>,
    /// The child's slot in the scoreboard.
    pub slot: usize,
    /// Set by TERM or INT: finish what is being served and return.
    pub stop: Arc<AtomicBool>,
    /// Set by USR1: reopen the logs.
    pub reopen: Arc<AtomicBool>,
    /// Readable (non-blocking) when TERM, INT or USR1 arrives, for a
    /// child that sleeps in a poll rather than in a timed wait.
    pub signals: OwnedFd,
}

/// Runs a server child's MPM until it is told to stop (or has served its
/// MaxConnectionsPerChild): given to [`Parent::new`] by the binary.
pub type ServeChild = fn(ChildStart) -> std::io::Result<()>;

/// Descriptor slots a child's table has from the start: a thousand idle
/// connections on one event loop fit.
const DESCRIPTORS_RESERVED: i32 = 4096;

/// Grows the process's descriptor table to `n` slots (at most the soft
/// RLIMIT_NOFILE) while it has one thread. The kernel grows a table shared
/// by threads only after an RCU grace period, milliseconds during which
/// the accept that needed the room waits: the first connection past 1024
/// took 5-15 ms where the others take 0.5.
fn reserve_descriptors(n: i32) {
    use nix::sys::resource::{getrlimit, Resource};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
    let top = i32::try_from(soft).unwrap_or(i32::MAX).min(n) - 1;
    if top <= 2 {
        return;
    }
    if let Ok(fd) = nix::fcntl::fcntl(std::io::stderr(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(top)) {
        // SAFETY: fcntl just made this descriptor, and nothing else has it.
        drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    }
}

impl Parent {
    pub(super) fn child_main(&self, slot: usize, parent: Pid) -> i32 {
        if let Err(e) = self.detach_child() {
            self.log(LogLevel::Emerg, &format!("child cannot leave warren's terminal: {e}"));
            return 1;
        }
        if let Err(e) = warren_handler::piped_log::blind_reading_ends_in_child() {
            self.log(LogLevel::Emerg, &format!("child cannot close the piped logs' reading ends: {e}"));
            return 1;
        }
        if let Err(e) = drop_privileges(self.site.settings.user.as_deref(), self.site.settings.group.as_deref()) {
            self.log(LogLevel::Emerg, &e);
            return 1;
        }
        // A parent killed outright takes its children with it (Apache's pipe
        // of death), or they would go on holding the port. Set after the
        // change of user, which clears it; a parent already gone is seen
        // by the parent pid changing.
        let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
        if nix::unistd::getppid() != parent {
            return 0;
        }
        // A prefork child never has a second thread: its table grows at no
        // cost when it needs to, and 4096 slots would be 32 KB of kernel
        // memory in each of perhaps hundreds of children.
        if self.site.settings.mpm != Mpm::Prefork {
            reserve_descriptors(DESCRIPTORS_RESERVED);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let reopen = Arc::new(AtomicBool::new(false));
        let Ok((read, write)) = UnixStream::pair() else { return 1 };
        let _ = read.set_nonblocking(true);
        let _ = write.set_nonblocking(true);
        for sig in [SIGTERM, SIGINT] {
            if signal_hook::flag::register(sig, stop.clone()).is_err() {
                return 1;
            }
        }
        let _ = signal_hook::flag::register(SIGUSR1, reopen.clone());
        for sig in [SIGTERM, SIGINT, SIGUSR1] {
            let Ok(w) = write.try_clone() else { return 1 };
            if signal_hook::low_level::pipe::register(sig, w).is_err() {
                return 1;
            }
        }
        // The parent handles these; a child must not die of them.
        for sig in [SIGHUP, SIGWINCH] {
            let _ = signal_hook::flag::register(sig, Arc::new(AtomicBool::new(false)));
        }
        // A TERM that came before the handlers above went to the parent's,
        // inherited with the fork, and was lost: the parent marks a child
        // stopping before it signals it, so the mark is looked at now.
        if self.sb.process(slot).quiescing.load(Ordering::Acquire) != 0 {
            stop.store(true, Ordering::Relaxed);
        }
        // A USR1 lost the same way: the logs were reopened since the fork.
        if self.sb.logs_reopened() != self.logs_reopened {
            reopen.store(true, Ordering::Relaxed);
            let _ = std::io::Write::write(&mut &write, &[0]);
        }
        let listeners: Vec<Listener> = self
            .listeners
            .iter()
            .filter_map(|l| l.try_clone().ok())
            .collect();
        let start = ChildStart { site: self.site.clone(), listeners, scoreboard: self.sb.clone(), slot, stop, reopen, signals: read.into() };
        match (self.serve_child)(start) {
            Ok(()) => 0,
            Err(e) => {
                self.log(LogLevel::Emerg, &format!("child cannot run: {e}"));
                1
            }
        }
    }

    /// A server child leaves warren's terminal, process group and standard
    /// streams: the terminal warren may have been started from is the root
    /// shell's, and a child (running as User) that held it could read from
    /// it or push input into it (TIOCSTI). It gives up the terminal
    /// (TIOCNOTTY) and leads a process group of its own (the terminal's
    /// Ctrl-C and hang-up reach warren alone) but stays in warren's
    /// session, as nginx's workers do: with the kernel's autogroups, a
    /// session is one scheduling group, and a child in a session of its own
    /// (setsid) was a group apart from everything it wakes and is woken by
    /// (clients, backends, php-fpm on the same machine), which on a busy
    /// machine held its wake-ups back by milliseconds (bench/ws_echo.sh:
    /// docs/benchmarks.md, WebSocket). Standard input and output become
    /// /dev/null; standard error the error log file, else the relay to
    /// warren's terminal, else it stays (a pipe or file is no terminal, and
    /// test harnesses and service managers read children's log lines there).
    fn detach_child(&self) -> Result<(), String> {
        // Where the terminal cannot be given up alone (no /dev/tty to name
        // it by, say), a session of its own still leaves it.
        if give_up_terminal().is_ok() {
            nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0)).map_err(|e| format!("setpgid: {e}"))?;
        } else {
            nix::unistd::setsid().map_err(|e| format!("setsid: {e}"))?;
        }
        let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
        let stderr: Option<OwnedFd> = match self.site.error_log.file() {
            Some(f) => Some(f.into()),
            None => self.relay.as_ref().map(|r| r.write.try_clone()).transpose().map_err(|e| format!("the log relay: {e}"))?,
        };
        let onto = |from: &dyn AsFd, fd: i32| -> Result<(), String> {
            // SAFETY: dup2 onto a standard stream, which this process owns.
            if unsafe { libc::dup2(from.as_fd().as_raw_fd(), fd) } < 0 {
                return Err(format!("dup2 onto {fd}: {}", std::io::Error::last_os_error()));
            }
            Ok(())
        };
        onto(&null, 0)?;
        onto(&null, 1)?;
        if let Some(e) = &stderr {
            onto(e, 2)?;
        }
        Ok(())
    }

}

/// Drops the controlling terminal, if the process has one: TIOCNOTTY on
/// /dev/tty, which names it (ENXIO: there is none). In a process that does
/// not lead its session this clears its own terminal only; warren's and its
/// shell's stay.
fn give_up_terminal() -> Result<(), String> {
    let tty = match std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") {
        Ok(tty) => tty,
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) || e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("/dev/tty: {e}")),
    };
    // SAFETY: TIOCNOTTY takes no argument; the descriptor is open.
    if unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCNOTTY) } < 0 {
        return Err(format!("TIOCNOTTY: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Started as root with User set, children run as User and Group (else
/// the user's group); otherwise nobody changes user.
fn drop_privileges(user: Option<&str>, group: Option<&str>) -> Result<(), String> {
    use nix::unistd::{initgroups, setgid, setuid};
    let Some(a) = warren_config::accounts::server_account(user, group)? else { return Ok(()) };
    setgid(a.gid).map_err(|e| format!("setgid({}) failed: {e}", a.gid))?;
    let cname = std::ffi::CString::new(a.name.clone()).map_err(|_| "bad user name".to_string())?;
    initgroups(&cname, a.gid).map_err(|e| format!("initgroups failed: {e}"))?;
    setuid(a.uid).map_err(|e| format!("setuid({}) failed: {e}", a.uid))?;
    Ok(())
}
