//! The helper process: forked by the parent at start (while warren has
//! one thread) or at the graceful restart that brings the first MDomain,
//! it executes the warren binary again in a hidden mode (`warren
//! acme-helper`), so that it holds nothing of the parent's memory (the
//! other hosts' private keys) but the [`Brief`] it is handed on a pipe. It
//! runs the ACME client for every `auto` MDomain and never serves a
//! client. It dies with the parent (PR_SET_PDEATHSIG).
//!
//! Its loop: each domain whose certificate is missing or in its renewal
//! window is ordered; a new certificate is installed in the store and the
//! parent gets SIGHUP (a graceful restart: new children take the new
//! certificate, old ones finish their requests). A failure is logged with
//! its reason and retried after MDRetryDelay, doubled on each failure up
//! to a day; the certificate in use stays in use meanwhile.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::{fork, getppid, ForkResult, Pid};
use serde::{Deserialize, Serialize};
use warren_config::md::ManagedDomain;
use warren_config::{LogLevel, Settings};

use crate::{order, privilege, schedule, stapling, status, store};

/// How the helper writes to the server's error log.
pub type Log = Box<dyn Fn(LogLevel, &str)>;

/// The longest the helper sleeps between looks at its domains.
const MAX_SLEEP: Duration = Duration::from_secs(3600);

struct Domain {
    config: ManagedDomain,
    due: i64,
    failures: u32,
    last_error: Option<String>,
    /// Certificates issued in a row already inside their renewal window
    /// (a CA's lifetime shorter than MDRenewWindow asks): each makes the
    /// next renewal wait longer, as failures do, instead of a loop.
    born_due: u32,
}

/// Reads the configuration again (the parent's own reader): what the
/// helper does on SIGHUP, which the parent sends it at each graceful
/// restart, so that domains added or changed are managed without a stop.
pub type Reload = Box<dyn Fn() -> Option<Settings>>;

/// What the parent hands the helper it starts, on a pipe: everything the
/// helper knows of the server. The helper is a fresh process (the warren
/// binary executed again, `warren acme-helper`), not a copy of the parent,
/// so nothing else of the parent's memory (the other hosts' private keys,
/// read before a graceful restart forks it) is in the process that talks
/// to the Internet.
#[derive(Serialize, Deserialize)]
pub struct Brief {
    /// The server's (parent's) pid: the helper ends when it is gone.
    server: i32,
    store_dir: PathBuf,
    /// The children's Group, for the status files.
    group: Option<u32>,
    account: Result<privilege::HelperAccount, privilege::KeptIdentity>,
    domains: Vec<ManagedDomain>,
    staples: Vec<warren_config::stapling::StapledCertificate>,
    /// Where the helper logs.
    pub log: LogPlace,
    /// How it reads the configuration again (at each graceful restart).
    pub reread: Option<Reread>,
}

/// The server's error log, as the helper opens it for itself.
#[derive(Clone, Serialize, Deserialize)]
pub struct LogPlace {
    /// None: standard error (a piped or syslog ErrorLog is the parent's).
    pub file: Option<PathBuf>,
    pub origin: Option<warren_config::Origin>,
    pub level: LogLevel,
}

/// The configuration file and the command line's options, to read it
/// again as the parent does.
#[derive(Clone, Serialize, Deserialize)]
pub struct Reread {
    pub file: PathBuf,
    pub options: warren_config::LoadOptions,
    /// `-R`.
    pub allow_root: bool,
}

/// The hidden command line of the helper mode: `warren acme-helper
/// --brief-fd N`.
pub const HELPER_COMMAND: &str = "acme-helper";

/// The largest brief read (a few hundred bytes a domain).
const MAX_BRIEF: u64 = 16 << 20;

/// Starts the helper if the configuration manages any domain automatically
/// or staples OCSP: forks, and the child executes the warren binary again
/// in its helper mode, handing it its [`Brief`] on a pipe.
pub fn start(settings: &Settings, log: LogPlace, reread: Option<Reread>) -> Result<Option<Pid>, String> {
    let domains: Vec<ManagedDomain> = settings.md.domains.iter().filter(|d| d.auto).cloned().collect();
    let staples = warren_config::stapling::stapled_certificates(settings);
    if domains.is_empty() && staples.is_empty() {
        return Ok(None);
    }
    let store_dir = settings.md.store_dir.clone();
    // The children's group may read the status files (not the keys).
    let group = settings.group.as_deref().and_then(|g| nix::unistd::Group::from_name(g).ok().flatten()).map(|g| g.gid.as_raw());
    let account = privilege::helper_account(settings);
    store::prepare(&store_dir, account.as_ref().ok().map(|a| (a.uid(), a.gid()))).map_err(|e| format!("MDStoreDir {}: {e}", store_dir.display()))?;
    let server = nix::unistd::getpid();
    let brief = Brief { server: server.as_raw(), store_dir, group, account, domains, staples, log, reread };
    let message = serde_json::to_vec(&brief).map_err(|e| format!("ACME helper: cannot write its brief: {e}"))?;
    // Made before the fork: the child only makes system calls.
    let program = c"/proc/self/exe";
    let argv0 = std::env::args_os().next().and_then(|a| std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str())).ok()).unwrap_or_else(|| c"warren".into());
    let command = std::ffi::CString::new(HELPER_COMMAND).expect("no NUL in a constant");
    // SAFETY: called while the process has one thread; the child makes
    // system calls only, then executes the binary again or exits.
    match unsafe { fork() }.map_err(|e| format!("cannot fork the ACME helper: {e}"))? {
        ForkResult::Parent { child } => Ok(Some(child)),
        ForkResult::Child => exec_helper(server, &message, program, [&argv0, &command]),
    }
}

/// The forked child: the brief written into a pipe whose read end is the
/// only descriptor above 2 kept across exec, SIGHUP (the parent's
/// graceful restart, which would kill a process without its handler yet)
/// blocked until the helper has its handler, and the binary executed
/// again. On failure it says why on standard error and exits.
fn exec_helper(server: Pid, message: &[u8], program: &std::ffi::CStr, [argv0, command]: [&std::ffi::CStr; 2]) -> ! {
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    if getppid() != server {
        // SAFETY: exit without running the parent's atexit handlers.
        unsafe { libc::_exit(0) };
    }
    // Nothing of the parent's (listening sockets, sockets systemd passed,
    // the CGI spawner's end, its log files) crosses the exec.
    // SAFETY: close_range with constant arguments; fcntl on numbers that
    // are open descriptors or fail with EBADF.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_uint) != 0 {
            // Before Linux 5.11: each descriptor marked by itself.
            for fd in 3..libc::sysconf(libc::_SC_OPEN_MAX).clamp(3, 1 << 20) as libc::c_int {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
    let fail = |what: &str, e: nix::Error| -> ! {
        eprintln!("warren: ACME helper: {what}: {e}; no certificate will be obtained");
        // SAFETY: as above.
        unsafe { libc::_exit(1) }
    };
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::empty()).unwrap_or_else(|e| fail("no pipe for its brief", e));
    // The whole brief must fit in the pipe: no one reads it before exec.
    if message.len() > 65536 {
        // SAFETY: fcntl on a descriptor of ours.
        unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&write_end), libc::F_SETPIPE_SZ, message.len() as libc::c_int) };
    }
    let _ = nix::fcntl::fcntl(&write_end, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK));
    let mut written = 0;
    while written < message.len() {
        match nix::unistd::write(&write_end, &message[written..]) {
            Ok(n) => written += n,
            Err(nix::Error::EINTR) => {}
            Err(e) => fail("cannot write its brief", e),
        }
    }
    drop(write_end);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&read_end);
    let mut fd_text = [0u8; 12];
    let fd_arg = decimal(fd, &mut fd_text);
    let mut blocked = nix::sys::signal::SigSet::empty();
    blocked.add(Signal::SIGHUP);
    let _ = nix::sys::signal::sigprocmask(nix::sys::signal::SigmaskHow::SIG_SETMASK, Some(&blocked), None);
    let argv: [*const libc::c_char; 5] = [argv0.as_ptr(), command.as_ptr(), c"--brief-fd".as_ptr(), fd_arg.as_ptr(), std::ptr::null()];
    // SAFETY: a NUL-terminated program and argument list that live until
    // the call; the environment is the parent's.
    unsafe { libc::execv(program.as_ptr(), argv.as_ptr()) };
    fail("cannot execute /proc/self/exe", nix::Error::last())
}

/// `n` in decimal, NUL-terminated, in `buf` (no allocation after fork).
fn decimal(n: i32, buf: &mut [u8; 12]) -> &std::ffi::CStr {
    let mut digits = [0u8; 11];
    let (mut len, mut n) = (0, n.unsigned_abs());
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[i] = digits[len - 1 - i];
    }
    buf[len] = 0;
    std::ffi::CStr::from_bytes_with_nul(&buf[..=len]).expect("one NUL, at the end")
}

impl Brief {
    /// Reads the brief from the descriptor the forked child left open.
    pub fn read(fd: std::os::fd::RawFd) -> Result<Brief, String> {
        use std::io::Read;
        // SAFETY: the descriptor named on our command line, ours alone.
        let pipe = std::fs::File::from(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        let mut message = Vec::new();
        pipe.take(MAX_BRIEF).read_to_end(&mut message).map_err(|e| format!("reading its brief from descriptor {fd}: {e}"))?;
        serde_json::from_slice(&message).map_err(|e| format!("its brief: {e}"))
    }
}

/// The helper mode's body (`warren acme-helper`, executed by the child
/// [`start`] forked): the loop never returns.
pub fn serve(brief: Brief, log: Log, reload: Option<Reload>) -> ! {
    let server = Pid::from_raw(brief.server);
    // The parent-death signal survives exec; set again in case.
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    if getppid() != server {
        std::process::exit(0);
    }
    // What the parent ignored is still ignored after exec: SIGTERM (its
    // parent-death signal) must end it, and SIGCHLD be seen by waitpid.
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGQUIT, Signal::SIGUSR1, Signal::SIGUSR2, Signal::SIGCHLD, Signal::SIGWINCH] {
        // SAFETY: the default disposition, in a one-thread process.
        let _ = unsafe { nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl) };
    }
    // Registered before the driver is forked, which inherits it; SIGHUP
    // was blocked across the exec until now.
    let hup = Arc::new(AtomicBool::new(false));
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone()) {
        log(LogLevel::Warn, &format!("ACME helper: no SIGHUP handler ({e}): configuration changes need a restart"));
    }
    let _ = nix::sys::signal::sigprocmask(nix::sys::signal::SigmaskHow::SIG_SETMASK, Some(&nix::sys::signal::SigSet::empty()), None);
    let Brief { store_dir, group, account, domains, staples, .. } = brief;
    let helper = Helper { store_dir, group: group.map(nix::unistd::Gid::from_raw), parent: server, notify: Notify::Signal(server), reload, hup };
    match account {
        Ok(account) => relay_and_drive(account, helper, domains, staples, &log),
        Err(kept) => {
            log(kept.level, &format!("ACME helper: {}", kept.why));
            run(domains, staples, helper, &log)
        }
    }
}

/// The forked helper's two halves: this process stays root and relays
/// (see [`relay`]); its child drops to `account` and runs the ACME client,
/// telling the relay of a changed store by a byte on a pipe.
fn relay_and_drive(account: privilege::HelperAccount, helper: Helper, domains: Vec<ManagedDomain>, staples: Vec<warren_config::stapling::StapledCertificate>, log: &Log) -> ! {
    let (read_end, write_end) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => {
            log(LogLevel::Error, &format!("ACME helper: no pipe to its driver ({e}); no certificate will be obtained"));
            std::process::exit(1);
        }
    };
    let relay_pid = nix::unistd::getpid();
    // SAFETY: the relay has one thread (it made no runtime).
    match unsafe { fork() } {
        Err(e) => {
            log(LogLevel::Error, &format!("ACME helper: cannot fork its driver ({e}); no certificate will be obtained"));
            std::process::exit(1);
        }
        Ok(ForkResult::Child) => {
            // SAFETY: prctl with constant arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
            drop(read_end);
            if getppid() != relay_pid {
                std::process::exit(0);
            }
            if let Err(e) = privilege::drop_to(&account) {
                log(LogLevel::Error, &format!("ACME helper: cannot drop to uid {} ({e}); no certificate will be obtained", account.uid()));
                std::process::exit(1);
            }
            // The kernel clears the parent-death signal when the ids
            // change: set again, or the client outlives a stopped server.
            // SAFETY: prctl with constant arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
            if getppid() != relay_pid {
                std::process::exit(0);
            }
            run(domains, staples, Helper { parent: relay_pid, notify: Notify::Pipe(write_end), ..helper }, log)
        }
        Ok(ForkResult::Parent { child }) => {
            drop(write_end);
            log(LogLevel::Notice, &format!("ACME helper (pid {relay_pid}), root, relays for the ACME client (pid {child}), which runs as uid {}, gid {}", account.uid(), account.gid()));
            relay(helper.parent, child, read_end, &helper.hup, log)
        }
    }
}

/// The fewest seconds between two graceful restarts the driver asks for:
/// a certificate changes a few times a year, so a driver asking more
/// often was taken over (or is broken) and must not keep the server
/// restarting; what it asks meanwhile is merged into one later restart.
const RESTART_INTERVAL: Duration = Duration::from_secs(10);

/// The root half: the server's SIGHUP (a graceful restart: read the
/// configuration again) passed to the driver, and the bytes the driver
/// writes (a changed store) passed to the server as SIGHUP, at most one
/// per [`RESTART_INTERVAL`]. It reads nothing else and exits when either
/// side is gone.
fn relay(server: Pid, driver: Pid, changes: std::os::fd::OwnedFd, hup: &AtomicBool, log: &Log) -> ! {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut last_restart: Option<std::time::Instant> = None;
    // Requests read since the last restart asked of the server.
    let mut merged: usize = 0;
    loop {
        let mut fds = [PollFd::new(std::os::fd::AsFd::as_fd(&changes), PollFlags::POLLIN)];
        let ready = poll(&mut fds, PollTimeout::from(HUP_POLL.as_millis() as u16)).unwrap_or(0);
        if hup.swap(false, Ordering::SeqCst) {
            let _ = kill(driver, Signal::SIGHUP);
        }
        if ready > 0 {
            let mut buf = [0u8; 64];
            match nix::unistd::read(&changes, &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = nix::sys::wait::waitpid(driver, None);
                    std::process::exit(0);
                }
                Ok(n) => merged += n,
            }
        }
        if merged > 0 && last_restart.is_none_or(|at| at.elapsed() >= RESTART_INTERVAL) {
            let level = if merged > 1 { LogLevel::Warn } else { LogLevel::Notice };
            log(level, &format!("ACME helper: the ACME client (pid {driver}) asked for {merged} graceful restart(s) (at most one each {} s): one asked of the server", RESTART_INTERVAL.as_secs()));
            let _ = kill(server, Signal::SIGHUP);
            last_restart = Some(std::time::Instant::now());
            merged = 0;
        }
        if getppid() != server {
            let _ = kill(driver, Signal::SIGTERM);
            std::process::exit(0);
        }
    }
}

/// How the ACME client asks the server for a graceful restart.
enum Notify {
    /// Same user as the server: a signal.
    Signal(Pid),
    /// Unprivileged: a byte to the root relay.
    Pipe(std::os::fd::OwnedFd),
}

impl Notify {
    /// False when no one hears it any more (the server is gone).
    fn graceful(&self) -> bool {
        match self {
            Notify::Signal(server) => kill(*server, Signal::SIGHUP).is_ok(),
            Notify::Pipe(fd) => nix::unistd::write(fd, b"!").is_ok(),
        }
    }
}

/// What the helper's loop keeps besides its domains.
struct Helper {
    store_dir: PathBuf,
    group: Option<nix::unistd::Gid>,
    /// The process whose death ends the helper (the server, or the relay).
    parent: Pid,
    notify: Notify,
    reload: Option<Reload>,
    hup: Arc<AtomicBool>,
}

fn run(domains: Vec<ManagedDomain>, staples: Vec<warren_config::stapling::StapledCertificate>, helper: Helper, log: &Log) -> ! {
    let Helper { store_dir, group, parent, .. } = &helper;
    let (store_dir, group, parent) = (store_dir.clone(), *group, *parent);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            log(LogLevel::Error, &format!("ACME helper: cannot make its runtime: {e}; no certificate will be obtained"));
            std::process::exit(1);
        }
    };
    let mut domains: Vec<Domain> = domains
        .into_iter()
        .map(|config| {
            let due = due_of(&config, &store_dir);
            Domain { config, due, failures: 0, last_error: None, born_due: 0 }
        })
        .collect();
    let mut staples: Vec<stapling::Staple> = staples.into_iter().map(stapling::Staple::new).collect();
    log(LogLevel::Notice, &format!("ACME helper (pid {}) managing {}; OCSP stapling for {} certificate(s)", std::process::id(), domains.iter().map(|d| d.config.names[0].as_str()).collect::<Vec<_>>().join(", "), staples.len()));
    publish(&domains, &store_dir, group, log);
    loop {
        let mut renewed = Vec::new();
        // OCSP first: a certificate found revoked is renewed in this pass.
        let stapled = stapling::run_due(&mut staples, &store_dir, &runtime, log);
        for d in domains.iter_mut().filter(|d| stapled.revoked.contains(&d.config.names[0])) {
            d.due = schedule::now();
        }
        for d in domains.iter_mut().filter(|d| d.due <= schedule::now()) {
            let name = d.config.names[0].clone();
            let step = |level: LogLevel, m: &str| log(level, &format!("MDomain {name}: {m}"));
            // One order per key type, installed together.
            let result = d
                .config
                .private_keys
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    let issued = runtime.block_on(order::obtain(&d.config, *spec, &store_dir, &step))?;
                    let (cert_name, key_name) = warren_config::md::pair_names(i, *spec);
                    Ok(store::Pair { cert_name, key_name, chain_pem: issued.chain_pem, key_pem: issued.key_pem })
                })
                .collect::<Result<Vec<_>, String>>()
                .and_then(|pairs| store::install_certificates(&store_dir, &name, &pairs).map_err(|e| format!("storing the certificate in {}: {e}", store_dir.display())));
            let cert = store::store_files(&store_dir, &name).0;
            match result {
                Ok(()) => {
                    d.failures = 0;
                    d.last_error = None;
                    d.due = due_of(&d.config, &store_dir);
                    let until = schedule::validity(&cert).map_or(0, |(_, until)| until);
                    log(LogLevel::Notice, &format!("MDomain {name}: certificate obtained from {}, valid until {}; renewal due {}", d.config.ca_url, status::http_date(until), status::http_date(d.due)));
                    if d.due <= schedule::now() {
                        d.born_due += 1;
                        let wait = schedule::backoff(d.config.retry_delay, d.born_due).as_secs().max(1);
                        d.due = schedule::now() + wait as i64;
                        log(LogLevel::Warn, &format!("MDomain {name}: the certificate was issued already inside its renewal window (MDRenewWindow asks more than the CA's lifetime leaves; {} in a row): next renewal in {wait} s, not at once", d.born_due));
                    } else {
                        d.born_due = 0;
                    }
                    renewed.push(name);
                }
                Err(why) => {
                    d.failures += 1;
                    let wait = schedule::backoff(d.config.retry_delay, d.failures);
                    d.due = schedule::now() + wait.as_secs().max(1) as i64;
                    let kept = if cert.exists() { "the certificate in use is kept" } else { "a temporary self-signed certificate is served meanwhile" };
                    log(LogLevel::Error, &format!("MDomain {name}: renewal failed ({} in a row): {why}; {kept}; next try in {} s", d.failures, wait.as_secs().max(1)));
                    d.last_error = Some(why);
                }
            }
        }
        publish(&domains, &store_dir, group, log);
        if !renewed.is_empty() || stapled.changed {
            let what = if renewed.is_empty() { "MDStapling: OCSP responses changed in the store".to_string() } else { format!("MDomain {}: new certificate in the store", renewed.join(", ")) };
            log(LogLevel::Notice, &format!("{what}: graceful restart"));
            if !helper.notify.graceful() {
                std::process::exit(0);
            }
        }
        if getppid() != parent {
            std::process::exit(0);
        }
        let next = domains.iter().map(|d| d.due).min().unwrap_or(i64::MAX).min(stapling::next_due(&staples));
        let wake = std::time::Instant::now() + Duration::from_secs((next - schedule::now()).clamp(1, MAX_SLEEP.as_secs() as i64) as u64);
        while std::time::Instant::now() < wake && !helper.hup.load(Ordering::SeqCst) {
            std::thread::sleep(HUP_POLL);
        }
        if helper.hup.swap(false, Ordering::SeqCst) {
            if let Some(settings) = helper.reload.as_ref().and_then(|r| r()) {
                domains = reconfigured(domains, &settings, &store_dir);
                staples = stapling::reconfigured(staples, warren_config::stapling::stapled_certificates(&settings));
                log(LogLevel::Notice, &format!("ACME helper: configuration read again, managing {}", domains.iter().map(|d| d.config.names[0].as_str()).collect::<Vec<_>>().join(", ")));
                publish(&domains, &store_dir, group, log);
            }
        }
    }
}

/// How often the sleeping helper looks for a SIGHUP.
const HUP_POLL: Duration = Duration::from_millis(100);

/// The domains of a configuration read again: a domain kept (same names)
/// keeps, while failing or backing off, its state and next try; a new or
/// changed one is due as its certificates say.
fn reconfigured(old: Vec<Domain>, settings: &Settings, store_dir: &std::path::Path) -> Vec<Domain> {
    settings
        .md
        .domains
        .iter()
        .filter(|d| d.auto)
        .map(|config| {
            // Kept while failing or backing off a certificate born due
            // (the graceful restart that took it in re-reads the
            // configuration: it must not make the domain due at once).
            let before = old.iter().find(|o| o.config.names == config.names && (o.failures > 0 || o.born_due > 0));
            let due = due_of(config, store_dir);
            match before {
                Some(o) => Domain { config: config.clone(), due: o.due, failures: o.failures, last_error: o.last_error.clone(), born_due: o.born_due },
                None => Domain { config: config.clone(), due, failures: 0, last_error: None, born_due: 0 },
            }
        })
        .collect()
}

/// When a domain is next due: the soonest of its certificates (one per
/// MDPrivateKeys type; a missing one is due now).
fn due_of(config: &ManagedDomain, store_dir: &std::path::Path) -> i64 {
    let dir = store_dir.join("domains").join(&config.names[0]);
    config.private_keys.iter().enumerate().map(|(i, spec)| schedule::renewal_due(&dir.join(warren_config::md::pair_names(i, *spec).0), config.renew_window)).min().unwrap_or(0)
}

fn publish(domains: &[Domain], store_dir: &std::path::Path, group: Option<nix::unistd::Gid>, log: &Log) {
    let states: Vec<status::DomainState> = domains
        .iter()
        .map(|d| status::DomainState {
            config: &d.config,
            validity: schedule::validity(&store::store_files(store_dir, &d.config.names[0]).0),
            due: d.due,
            failures: d.failures,
            last_error: d.last_error.as_deref(),
        })
        .collect();
    if let Err(e) = status::publish(store_dir, &states, group) {
        log(LogLevel::Warn, &format!("ACME helper: cannot write md-status in {}: {e}", store_dir.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_numbers_are_written_without_allocating() {
        let mut buf = [0u8; 12];
        for n in [0, 3, 9, 10, 255, 1_048_575, i32::MAX] {
            assert_eq!(decimal(n, &mut buf).to_str().unwrap(), n.to_string());
        }
    }

    /// What the helper is handed is what the parent had: the domains'
    /// settings (every field) and the account, through the pipe's JSON.
    #[test]
    fn the_brief_carries_the_settings_whole() {
        let mut domain = crate::test_support::domain(&["http-01"], Some("/hook"));
        domain.private_keys = vec![warren_config::md::KeySpec::Rsa(3072), warren_config::md::KeySpec::P256];
        domain.renew_window = warren_config::md::RenewWindow::Before(Duration::from_secs(86400 * 7));
        let brief = Brief {
            server: 42,
            store_dir: "/var/lib/warren/md".into(),
            group: Some(65534),
            account: Err(privilege::KeptIdentity { level: LogLevel::Warn, why: "no account".into() }),
            domains: vec![domain.clone()],
            staples: vec![],
            log: LogPlace { file: Some("/var/log/warren/error.log".into()), origin: Some(domain.origin.clone()), level: LogLevel::Info },
            reread: Some(Reread { file: "/etc/warren/warren.conf".into(), options: warren_config::LoadOptions { defines: vec!["X".into()], mpm_override: Some(warren_config::Mpm::Worker) }, allow_root: false }),
        };
        let (read_end, write_end) = nix::unistd::pipe().unwrap();
        nix::unistd::write(&write_end, &serde_json::to_vec(&brief).unwrap()).unwrap();
        drop(write_end);
        let got = Brief::read(std::os::fd::IntoRawFd::into_raw_fd(read_end)).unwrap();
        assert_eq!(format!("{:?}", got.domains), format!("{:?}", vec![domain]));
        assert_eq!((got.server, got.group, got.store_dir), (42, Some(65534), PathBuf::from("/var/lib/warren/md")));
        assert!(matches!(got.account, Err(k) if k.why == "no account" && k.level == LogLevel::Warn));
        let reread = got.reread.unwrap();
        assert_eq!((reread.options.defines, reread.options.mpm_override), (vec!["X".to_string()], Some(warren_config::Mpm::Worker)));
    }
}
