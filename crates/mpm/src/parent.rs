//! The parent process: it binds the listeners, writes the PidFile, forks
//! StartServers children (each an event loop with its worker threads),
//! replaces children that die, and on TERM/INT stops them and waits a
//! bounded time for their in-flight requests.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::SigId;
use warren_config::LogLevel;
use warren_handler::Site;

use crate::event::EventLoop;
use crate::listen::Listener;

/// How long TERM waits for children before killing them.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// A child that dies sooner than this after its start counts as failing to
/// start; such slots are restarted at most once a second.
const QUICK_DEATH: Duration = Duration::from_secs(1);

/// Signals arrive as flags; a self-pipe wakes the parent's poll.
struct Signals {
    read: UnixStream,
    ids: Vec<SigId>,
    flags: Vec<(i32, Arc<AtomicBool>)>,
}

fn install_signals(sigs: &[i32]) -> std::io::Result<Signals> {
    let (read, write) = UnixStream::pair()?;
    read.set_nonblocking(true)?;
    write.set_nonblocking(true)?;
    let mut ids = Vec::new();
    let mut flags = Vec::new();
    for &s in sigs {
        let flag = Arc::new(AtomicBool::new(false));
        ids.push(signal_hook::flag::register(s, flag.clone())?);
        ids.push(signal_hook::low_level::pipe::register(s, write.try_clone()?)?);
        flags.push((s, flag));
    }
    Ok(Signals { read, ids, flags })
}

/// Which signals arrived since the last call.
fn pending(sig: &Signals) -> Vec<i32> {
    let mut buf = [0u8; 64];
    while let Ok(n) = nix::unistd::read(sig.read.as_fd(), &mut buf) {
        if n == 0 {
            break;
        }
    }
    sig.flags.iter().filter(|(_, f)| f.swap(false, Ordering::SeqCst)).map(|(s, _)| *s).collect()
}

pub struct Parent {
    site: Arc<Site>,
    listeners: Vec<Listener>,
    pid_file: Option<PathBuf>,
}

struct Child {
    slot: u32,
    started: Instant,
}

impl Parent {
    pub fn new(site: Arc<Site>, listeners: Vec<Listener>) -> Parent {
        let pid_file = site.settings.pid_file.clone();
        Parent { site, listeners, pid_file }
    }

    /// Runs until TERM or INT; returns the process exit code.
    pub fn run(self) -> i32 {
        raise_open_files_limit();
        if let Some(p) = &self.pid_file {
            if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
                self.site.error_log.log(LogLevel::Emerg, None, &format!("cannot write PidFile {}: {e}", p.display()));
                return 1;
            }
        }
        // The signal pipe carries each signal's number as one byte.
        let signals = match install_signals(&[SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGUSR1]) {
            Ok(s) => s,
            Err(e) => {
                self.site.error_log.log(LogLevel::Emerg, None, &format!("cannot install signal handlers: {e}"));
                return 1;
            }
        };
        let t = &self.site.settings.tuning;
        let children_wanted = t.start_servers.min(t.server_limit).max(1);
        let addrs: Vec<String> = self.listeners.iter().map(|l| l.addr.to_string()).collect();
        self.site.error_log.log(
            LogLevel::Notice,
            None,
            &format!(
                "{} configured -- resuming normal operations (mpm {}, {} children x {} threads, listening on {})",
                self.site.server_header,
                self.site.settings.mpm.name(),
                children_wanted,
                t.threads_per_child,
                addrs.join(", ")
            ),
        );
        let mut children: HashMap<Pid, Child> = HashMap::new();
        let mut last_quick_death: HashMap<u32, Instant> = HashMap::new();
        for slot in 0..children_wanted {
            self.spawn(slot, &signals, &mut children);
        }
        let mut stopping = false;
        loop {
            let mut fds = [PollFd::new(signals.read.as_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, PollTimeout::from(1000u16));
            for sig in pending(&signals) {
                match sig {
                    SIGTERM | SIGINT => stopping = true,
                    SIGHUP | SIGUSR1 => self.site.error_log.log(
                        LogLevel::Warn,
                        None,
                        "SIGHUP/SIGUSR1 received: graceful restart and log reopening are not implemented yet; ignoring",
                    ),
                    _ => {}
                }
            }
            if stopping {
                break;
            }
            // Reap children and replace the ones that died.
            let mut dead = Vec::new();
            loop {
                match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::Exited(pid, code)) => dead.push((pid, format!("exit status {code}"), code == 0)),
                    Ok(WaitStatus::Signaled(pid, sig, _)) => dead.push((pid, format!("signal {sig:?}"), false)),
                    Ok(WaitStatus::StillAlive) | Err(_) => break,
                    Ok(_) => continue,
                }
            }
            for (pid, how, clean) in dead {
                let Some(child) = children.remove(&pid) else { continue };
                if !clean {
                    self.site.error_log.log(LogLevel::Notice, None, &format!("child pid {pid} exit {how}, replacing it"));
                }
                if child.started.elapsed() < QUICK_DEATH && !clean {
                    last_quick_death.insert(child.slot, Instant::now());
                }
            }
            let alive: Vec<u32> = children.values().map(|c| c.slot).collect();
            for slot in 0..children_wanted {
                if alive.contains(&slot) {
                    continue;
                }
                if last_quick_death.get(&slot).is_some_and(|t| t.elapsed() < QUICK_DEATH) {
                    continue;
                }
                self.spawn(slot, &signals, &mut children);
            }
        }
        self.stop_children(&mut children);
        if let Some(p) = &self.pid_file {
            let _ = std::fs::remove_file(p);
        }
        self.site.error_log.log(LogLevel::Notice, None, "caught SIGTERM, shutting down");
        0
    }

    fn spawn(&self, slot: u32, signals: &Signals, children: &mut HashMap<Pid, Child>) {
        // SAFETY: the parent is single-threaded, so the child may do anything.
        match unsafe { fork() } {
            Ok(ForkResult::Parent { child }) => {
                children.insert(child, Child { slot, started: Instant::now() });
            }
            Ok(ForkResult::Child) => {
                for id in &signals.ids {
                    signal_hook::low_level::unregister(*id);
                }
                let code = self.child_main();
                std::process::exit(code);
            }
            Err(e) => self.site.error_log.log(LogLevel::Error, None, &format!("fork failed: {e}")),
        }
    }

    fn child_main(&self) -> i32 {
        if let Err(e) = drop_privileges(self.site.settings.user.as_deref(), self.site.settings.group.as_deref()) {
            self.site.error_log.log(LogLevel::Emerg, None, &e);
            return 1;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (read, write) = match UnixStream::pair() {
            Ok(p) => p,
            Err(_) => return 1,
        };
        let _ = read.set_nonblocking(true);
        let _ = write.set_nonblocking(true);
        for sig in [SIGTERM, SIGINT] {
            if signal_hook::flag::register(sig, stop.clone()).is_err() {
                return 1;
            }
        }
        for sig in [SIGTERM, SIGINT] {
            let Ok(w) = write.try_clone() else { return 1 };
            if signal_hook::low_level::pipe::register(sig, w).is_err() {
                return 1;
            }
        }
        // The parent handles these; a child must not die of them.
        for sig in [SIGHUP, SIGUSR1] {
            let _ = signal_hook::flag::register(sig, Arc::new(AtomicBool::new(false)));
        }
        let listeners = self
            .listeners
            .iter()
            .filter_map(|l| l.socket.try_clone().ok().map(|socket| Listener { socket, addr: l.addr }))
            .collect();
        let signal_fd: OwnedFd = read.into();
        let mut event_loop = match EventLoop::new(self.site.clone(), listeners, stop, Some(signal_fd)) {
            Ok(l) => l,
            Err(e) => {
                self.site.error_log.log(LogLevel::Emerg, None, &format!("child cannot start: {e}"));
                return 1;
            }
        };
        event_loop.run();
        0
    }

    fn stop_children(&self, children: &mut HashMap<Pid, Child>) {
        for pid in children.keys() {
            let _ = kill(*pid, Signal::SIGTERM);
        }
        let deadline = Instant::now() + STOP_WAIT;
        while !children.is_empty() && Instant::now() < deadline {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, _)) | Ok(WaitStatus::Signaled(pid, _, _)) => {
                    children.remove(&pid);
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break,
            }
        }
        for pid in children.keys() {
            self.site.error_log.log(LogLevel::Warn, None, &format!("child {pid} still running after {STOP_WAIT:?}, killing it"));
            let _ = kill(*pid, Signal::SIGKILL);
            let _ = waitpid(*pid, None);
        }
    }
}

/// Started as root with User/Group set, children run as that user.
fn drop_privileges(user: Option<&str>, group: Option<&str>) -> Result<(), String> {
    use nix::unistd::{getuid, initgroups, setgid, setuid, Group, User};
    if !getuid().is_root() || user.is_none() {
        return Ok(());
    }
    let user = user.unwrap_or_default();
    let lookup_user = |u: &str| -> Result<User, String> {
        let found = match u.strip_prefix('#') {
            Some(n) => User::from_uid(n.parse::<u32>().map_err(|_| format!("bad User {u}"))?.into()),
            None => User::from_name(u),
        };
        found.ok().flatten().ok_or_else(|| format!("User {u}: no such user"))
    };
    let u = lookup_user(user)?;
    let gid = match group {
        Some(g) => match g.strip_prefix('#') {
            Some(n) => n.parse::<u32>().map_err(|_| format!("bad Group {g}"))?.into(),
            None => Group::from_name(g).ok().flatten().ok_or_else(|| format!("Group {g}: no such group"))?.gid,
        },
        None => u.gid,
    };
    setgid(gid).map_err(|e| format!("setgid({gid}) failed: {e}"))?;
    let cname = std::ffi::CString::new(u.name.clone()).map_err(|_| "bad user name".to_string())?;
    initgroups(&cname, gid).map_err(|e| format!("initgroups failed: {e}"))?;
    setuid(u.uid).map_err(|e| format!("setuid({}) failed: {e}", u.uid))?;
    Ok(())
}

/// Thousands of idle keep-alive connections need as many descriptors.
fn raise_open_files_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}
