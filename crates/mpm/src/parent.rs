//! The parent process, the same for every MPM. It binds the listeners,
//! writes the PidFile, maps the scoreboard, forks children (prefork: one
//! worker each; worker and event: ThreadsPerChild each), and once a second
//! does Apache's idle-server maintenance: above the max spare it stops one
//! child gracefully, below the min spare it starts children at a rate that
//! doubles each second up to 32, never past MaxRequestWorkers. A prefork
//! parent instead looks every 50 ms and forks at once what MinSpareServers
//! and the connections waiting with no child idle call for, and starts a
//! graceful restart's generation as large as the old one (see
//! `spawn_for_demand`). A child that dies without being asked to is
//! replaced at once. warren's own pools run beside the children, through
//! the `pool-api` [`ProcessManager`] made by the [`MakeManager`] it is given.
//!
//! Signals, as apachectl: TERM/INT stop (in-flight requests finish, bounded),
//! WINCH graceful stop (GracefulShutdownTimeout), HUP graceful restart
//! (re-read the config; keep the old one if it has errors), USR1 reopen logs
//! (children that run as `User` are replaced by ones with the reopened files).
//! What a child does once forked is in `child`; what systemd is told
//! (Type=notify) is in `readiness`; the graceful restart in `restart`.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGWINCH};
use signal_hook::SigId;
use warren_config::{LogLevel, Mpm, Origin, Settings};
use crate::log_relay::Relay;
use warren_handler::root_files;
use crate::metrics_scrape::ScoreboardMetrics;
use warren_handler::status::{ChildStatus, StatusSnapshot, StatusSource, WorkerStatus};
use warren_handler::Site;
use warren_pool_api::{MakeManager, ProcessManager, ServerUser};

use crate::listen::{self, Listener};
use crate::scoreboard::{Scoreboard, State};
use crate::spread::{self, LoadSampler};
use crate::systemd::{activation, Systemd};
use crate::worker_budget::WorkerBudget;

mod child;
pub use child::{ChildStart, ServeChild};
mod readiness;
mod restart;

/// How long TERM waits for children before killing them: a child's own
/// deadline and then some, for a child that began its stop late (a loaded
/// machine may run it seconds after the signal) and for its exit itself.
const STOP_WAIT: Duration = crate::CHILD_STOP_DEADLINE.saturating_add(Duration::from_secs(5));
/// How long piped-log programs are given to take the last lines, at stop.
const PIPED_LOG_STOP_WAIT: Duration = Duration::from_secs(3);
/// A child that dies sooner than this after its start counts as failing to
/// start; such slots are restarted at most once a second.
const QUICK_DEATH: Duration = Duration::from_secs(1);
/// Apache's MAX_SPAWN_RATE.
const MAX_SPAWN_RATE: u32 = 32;
/// How often the prefork parent looks for connections waiting without an
/// idle child to take them (see `spawn_for_demand`). Each prefork child
/// holds one connection, kept-alive ones too, so clients that arrive
/// together (a benchmark's, a load balancer's, the ones a graceful restart
/// sends back) outnumber the spare children at once; Apache's ramp, a
/// round a second that doubles, left them queued for seconds.
const DEMAND_CHECK: Duration = Duration::from_millis(50);

/// Re-reads the configuration for a graceful restart: the settings and the
/// corrections made to them, or every error; each as `FILE:LINE: message`.
pub type Reload = Box<dyn Fn() -> Result<(Settings, Vec<String>), Vec<String>>>;

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

/// The scoreboard as server-status sees it.
struct ScoreboardStatus {
    sb: Arc<Scoreboard>,
    mpm: &'static str,
}

impl StatusSource for ScoreboardStatus {
    fn snapshot(&self) -> StatusSnapshot {
        let sb = &self.sb;
        let mut snap = StatusSnapshot { mpm: self.mpm, restart_time_ms: sb.restart_time_ms(), generation: sb.generation(), ..Default::default() };
        for p in 0..sb.server_limit {
            let ps = sb.process(p);
            let pid = ps.pid.load(Ordering::Relaxed);
            if pid != 0 {
                let stopping = ps.quiescing.load(Ordering::Relaxed) != 0;
                snap.processes.push(ChildStatus {
                    slot: p,
                    pid,
                    stopping,
                    accepting: ps.accepting.load(Ordering::Relaxed) != 0 && !stopping,
                });
            }
            for t in 0..sb.thread_limit {
                let w = sb.thread(p, t);
                snap.workers.push(WorkerStatus {
                    process_slot: p,
                    thread: t,
                    pid,
                    state: w.state().letter(),
                    accesses: w.accesses.load(Ordering::Relaxed),
                    bytes: w.bytes.load(Ordering::Relaxed),
                    last_used_ms: w.last_used_ms.load(Ordering::Relaxed),
                    last_duration_us: w.last_duration_us.load(Ordering::Relaxed),
                    client: w.client(),
                    vhost: w.vhost(),
                    request: w.request(),
                });
            }
        }
        snap
    }
}

/// Gives a configuration's site the scoreboard, for server-status and
/// `SetHandler metrics`; its hosts get their metrics buckets (in the
/// parent, before the children of this configuration fork).
fn attach_scoreboard(site: &Site, sb: &Arc<Scoreboard>) {
    let mpm = site.settings.mpm.name();
    let _ = site.status.set(Arc::new(ScoreboardStatus { sb: sb.clone(), mpm }));
    let names: Vec<&str> = site.hosts.iter().map(|h| h.name.as_str()).collect();
    let buckets = sb.vhost_names().assign(&names);
    let _ = site.metrics.set(Arc::new(ScoreboardMetrics { sb: sb.clone(), mpm, buckets }));
}

struct Child {
    slot: usize,
    started: Instant,
    generation: u32,
    /// The parent asked it to finish (spare maintenance, restart, stop).
    asked_to_stop: bool,
}

pub struct Parent {
    site: Arc<Site>,
    listeners: Vec<Listener>,
    sb: Arc<Scoreboard>,
    reload: Option<Reload>,
    /// The PidFile written, and its descriptor: at stop it is removed only
    /// if it is still that file.
    pid_file: Option<(PathBuf, std::fs::File)>,
    children: HashMap<Pid, Child>,
    generation: u32,
    /// Times the children were told to reopen their logs: a child's copy
    /// is the count when it was forked (see `Scoreboard::logs_reopened`).
    logs_reopened: u32,
    spawn_rate: u32,
    cap_logged: bool,
    quick_deaths: HashMap<usize, Instant>,
    /// warren's own FastCGI pools (`<Pool>`), if any.
    pools: Option<Box<dyn ProcessManager>>,
    /// Makes the process manager, at start or when a graceful restart
    /// brings the first `<Pool>`: given by the binary (`fpm`'s).
    make_manager: MakeManager,
    /// Runs each server child's MPM: given by the binary (warren-serve's).
    serve_child: ServeChild,
    /// `MaxRequestWorkers auto`: the children the memory budget holds.
    worker_budget: Option<WorkerBudget>,
    /// The event loops' load, for how many of them accept.
    load: LoadSampler,
    /// When warren's standard error is a terminal: a pipe the children
    /// write their error log lines to, which the parent copies to it, so
    /// that no child holds the terminal (see `detach_child`).
    relay: Option<Relay>,
    /// What systemd is told, and when.
    readiness: readiness::Readiness,
    /// The sockets systemd passed (socket activation), kept for as long
    /// as warren runs: a graceful restart whose Listen lines drop one and
    /// a later one that names it again find it here.
    activated: Vec<Listener>,
}

impl Parent {
    /// `make_manager` makes the process manager of the `<Pool>` sections
    /// (now, if there are any, or at the graceful restart that adds one);
    /// `serve_child` is what each forked child runs.
    pub fn new(site: Arc<Site>, listeners: Vec<Listener>, reload: Option<Reload>, make_manager: MakeManager, serve_child: ServeChild) -> std::io::Result<Parent> {
        let t = &site.settings.tuning;
        // Event children also give their event loop a slot (slot 0).
        let thread_limit = match site.settings.mpm {
            Mpm::Prefork => 1,
            Mpm::Worker => t.thread_limit as usize,
            Mpm::Event => t.thread_limit as usize + 1,
        };
        let sb = Arc::new(Scoreboard::new(t.server_limit as usize, thread_limit)?);
        if site.settings.mpm == Mpm::Event {
            // One loop to start with; `spread` adds more when it runs hot.
            sb.set_listeners_wanted(1);
        }
        if site.settings.mpm == Mpm::Prefork {
            // As many children at the listeners as there are cores, so that
            // children serving without a wait can use them all.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            sb.set_accept_turns(cores as u32);
        }
        attach_scoreboard(&site, &sb);
        let pools = if site.settings.pools.is_empty() {
            None
        } else {
            let mut m = make_manager(&site.settings.pools, server_user(&site.settings), site.settings.memory_budget, site.settings.pid_file.as_deref(), site.error_log.clone()).map_err(std::io::Error::other)?;
            m.set_user_pools(warren_config::mass::RuntimeUsers::of(&site.settings));
            let _ = site.pools.set(m.dispatch());
            Some(m)
        };
        let worker_budget = worker_budget(&site.settings);
        let readiness = readiness::Readiness::new(Systemd::default(), &site.error_log);
        Ok(Parent {
            site,
            listeners,
            sb,
            reload,
            pid_file: None,
            children: HashMap::new(),
            logs_reopened: 0,
            generation: 0,
            spawn_rate: 1,
            cap_logged: false,
            quick_deaths: HashMap::new(),
            pools,
            make_manager,
            serve_child,
            worker_budget,
            load: LoadSampler::default(),
            relay: Relay::new(),
            readiness,
            activated: Vec::new(),
        })
    }

    /// What systemd set up: the notification socket and watchdog. (The
    /// sockets it passed are among the listeners already.)
    pub fn with_systemd(mut self, systemd: Systemd) -> Parent {
        self.activated = self.listeners.iter().filter(|l| l.activated).filter_map(|l| l.try_clone().ok()).collect();
        self.readiness = readiness::Readiness::new(systemd, &self.site.error_log);
        self
    }

    fn log(&self, level: LogLevel, msg: &str) {
        self.site.error_log.log(level, None, msg);
    }

    fn threads_per_child(&self) -> u32 {
        if self.site.settings.mpm == Mpm::Prefork {
            1
        } else {
            self.site.settings.tuning.threads_per_child
        }
    }

    /// Runs until stopped; returns the process exit code.
    pub fn run(mut self) -> i32 {
        raise_open_files_limit();
        if let Some(p) = &self.site.settings.pid_file {
            match write_pid_file(p, self.site.settings.pid_file_origin.as_ref()) {
                Ok(f) => self.pid_file = Some((p.clone(), f)),
                Err(e) => {
                    self.log(LogLevel::Emerg, &e);
                    return 1;
                }
            }
        }
        let signals = match install_signals(&[SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGUSR1, SIGWINCH]) {
            Ok(s) => s,
            Err(e) => {
                self.log(LogLevel::Emerg, &format!("cannot install signal handlers: {e}"));
                return 1;
            }
        };
        self.log_start();
        if let Some(m) = self.pools.as_mut() {
            m.start();
        }
        for _ in 0..self.site.settings.tuning.start_servers {
            self.spawn(&signals);
        }
        let mut last_maintenance = Instant::now();
        let mut last_demand_check = Instant::now();
        let prefork = self.site.settings.mpm == Mpm::Prefork;
        let round = if prefork { DEMAND_CHECK } else { Duration::from_secs(1) };
        let graceful_stop = loop {
            let tick = self.readiness.wait_at_most(round);
            let woken = {
                let mut fds = vec![PollFd::new(signals.read.as_fd(), PollFlags::POLLIN)];
                if let Some(r) = self.relay.as_ref().and_then(|r| r.read.as_ref()) {
                    fds.push(PollFd::new(r.as_fd(), PollFlags::POLLIN));
                }
                let wake_at = fds.len();
                if let Some(m) = &self.pools {
                    fds.push(PollFd::new(m.wake_fd(), PollFlags::POLLIN));
                    // What the pools' children print, through their pipes.
                    fds.extend(m.output_fds().into_iter().map(|fd| PollFd::new(fd, PollFlags::POLLIN)));
                }
                let _ = poll(&mut fds, PollTimeout::try_from(tick).unwrap_or(PollTimeout::MAX));
                fds.get(wake_at).and_then(|f| f.revents()).is_some_and(|r| r.contains(PollFlags::POLLIN))
            };
            if let Some(r) = &self.relay {
                r.copy();
            }
            if let Some(m) = self.pools.as_mut() {
                m.drain_output();
            }
            if woken {
                if let Some(m) = self.pools.as_mut() {
                    m.wake();
                }
            }
            let mut stop = None;
            for sig in pending(&signals) {
                match sig {
                    SIGTERM | SIGINT => stop = Some(false),
                    SIGWINCH => stop = Some(true),
                    SIGHUP => {
                        self.readiness.reloading(&self.site.error_log);
                        self.graceful_restart(&signals);
                    }
                    SIGUSR1 => self.reopen_logs(&signals),
                    _ => {}
                }
            }
            if let Some(graceful) = stop {
                break graceful;
            }
            self.reap(&signals);
            self.readiness.tick(&self.sb, &self.site.error_log);
            if prefork && last_demand_check.elapsed() >= DEMAND_CHECK {
                last_demand_check = Instant::now();
                if !self.failing_to_start() {
                    self.spawn_for_demand(&signals);
                }
            }
            if last_maintenance.elapsed() >= Duration::from_secs(1) {
                last_maintenance = Instant::now();
                self.maintain(&signals);
                if let Some(m) = self.pools.as_mut() {
                    m.maintain();
                }
                warren_handler::piped_log::restart_due(&self.site.error_log);
            }
        };
        self.readiness.stopping(&self.site.error_log);
        let wait = if graceful_stop { self.site.settings.graceful_shutdown_timeout } else { Some(STOP_WAIT) };
        self.log(LogLevel::Notice, if graceful_stop { "caught SIGWINCH, shutting down gracefully" } else { "caught SIGTERM, shutting down" });
        self.stop_children(&signals, wait);
        if let Some(m) = self.pools.as_mut() {
            m.stop(Duration::from_secs(3));
        }
        warren_handler::piped_log::stop_all(PIPED_LOG_STOP_WAIT);
        if let Some(r) = &self.relay {
            r.copy();
        }
        if let Some((p, f)) = &self.pid_file {
            root_files::remove_if_same(p, f);
        }
        0
    }

    fn log_start(&self) {
        let t = &self.site.settings.tuning;
        let addrs: Vec<String> = self.listeners.iter().map(|l| l.addr.to_string()).collect();
        let pools = self.pools.as_ref().map(|m| format!(", FastCGI pools: {}", m.describe())).unwrap_or_default();
        self.log(
            LogLevel::Notice,
            &format!(
                "{} configured -- resuming normal operations (mpm {}, {} children x {} threads, listening on {}{pools})",
                self.site.server_header,
                self.site.settings.mpm.name(),
                t.start_servers,
                self.threads_per_child(),
                addrs.join(", ")
            ),
        );
    }

    fn free_slot(&self) -> Option<usize> {
        let used: Vec<usize> = self.children.values().map(|c| c.slot).collect();
        (0..self.sb.server_limit).find(|s| !used.contains(s) && self.quick_deaths.get(s).is_none_or(|t| t.elapsed() >= QUICK_DEATH))
    }

    /// Children of the current generation that were not asked to stop.
    fn active(&self) -> usize {
        self.children.values().filter(|c| c.generation == self.generation && !c.asked_to_stop).count()
    }

    fn max_children(&self) -> usize {
        let t = &self.site.settings.tuning;
        let configured = ((t.max_request_workers / self.threads_per_child().max(1)) as usize).clamp(1, self.sb.server_limit);
        self.worker_budget.as_ref().and_then(|w| w.cap).map_or(configured, |cap| cap.min(configured))
    }

    fn spawn(&mut self, signals: &Signals) -> bool {
        let Some(slot) = self.free_slot() else { return false };
        // Claimed before the fork, so the child's own "ready" cannot be overwritten.
        let slots = self.threads_per_child() as usize + usize::from(self.site.settings.mpm == Mpm::Event);
        self.sb.claim(slot, -1, slots);
        let parent = nix::unistd::getpid();
        // SAFETY: the parent is single-threaded, so the child may do anything.
        match unsafe { fork() } {
            Ok(ForkResult::Parent { child }) => {
                self.sb.process(slot).pid.store(child.as_raw(), Ordering::Relaxed);
                self.children.insert(child, Child { slot, started: Instant::now(), generation: self.generation, asked_to_stop: false });
                true
            }
            Ok(ForkResult::Child) => {
                for id in &signals.ids {
                    signal_hook::low_level::unregister(*id);
                }
                if let Some(r) = self.relay.as_mut() {
                    r.read = None;
                }
                if let Some(m) = self.pools.as_mut() {
                    m.close_output_in_child();
                }
                let code = self.child_main(slot, parent);
                std::process::exit(code);
            }
            Err(e) => {
                self.sb.release(slot);
                self.log(LogLevel::Error, &format!("fork failed: {e}"));
                false
            }
        }
    }

    fn ask_to_stop(&mut self, pid: Pid) {
        if let Some(c) = self.children.get_mut(&pid) {
            c.asked_to_stop = true;
            // Before the signal: a child still starting looks here (child.rs).
            self.sb.process(c.slot).quiescing.store(1, Ordering::Release);
            let _ = kill(pid, Signal::SIGTERM);
            if self.sb.accept_turns() > 0 {
                self.sb.wake_turn_waiters();
            }
        }
    }

    fn reap(&mut self, signals: &Signals) {
        loop {
            let (pid, how, clean) = match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => (pid, format!("exit status {code}"), code == 0),
                Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, format!("signal {sig:?}"), false),
                Ok(WaitStatus::StillAlive) | Err(_) => return,
                Ok(_) => continue,
            };
            if self.pools.as_mut().is_some_and(|m| m.reaped(pid.as_raw(), &how)) {
                continue;
            }
            if warren_handler::piped_log::reaped(pid, &how, &self.site.error_log) {
                continue;
            }
            let Some(child) = self.children.remove(&pid) else { continue };
            self.sb.release(child.slot);
            if child.generation != self.generation && !self.children.values().any(|c| c.generation != self.generation) {
                // The last child of an earlier configuration is gone: so are its pools' users.
                if let Some(m) = self.pools.as_mut() {
                    m.previous_generation_gone();
                }
            }
            if child.asked_to_stop || child.generation != self.generation {
                continue;
            }
            // Died on its own (a crash, or retired by MaxConnectionsPerChild): replace it.
            if !clean {
                self.log(LogLevel::Notice, &format!("child pid {pid} exit {how}, replacing it"));
                if child.started.elapsed() < QUICK_DEATH {
                    self.quick_deaths.insert(child.slot, Instant::now());
                }
            }
            self.spawn(signals);
        }
    }

    /// How many event children accept: see `spread`.
    fn spread_listeners(&mut self) {
        let now = Instant::now();
        let order = spread::accepting_order(&self.sb);
        let current = self.sb.listeners_wanted() as usize;
        let mut busy = Vec::new();
        for (i, &(_, pid)) in order.iter().enumerate() {
            // Every loop is sampled, so one that starts accepting has a baseline.
            let b = self.load.loop_busy(pid, now);
            if i < current {
                busy.extend(b);
            }
        }
        let pids: Vec<i32> = self.children.keys().map(|p| p.as_raw()).collect();
        self.load.retain(&pids);
        let idle_cores = self.load.idle_cores();
        let next = spread::next_listener_count(current, &busy, idle_cores, order.len());
        if next != current {
            self.log(LogLevel::Debug, &format!("event loops accepting: {next} (busiest {:.0} %, {idle_cores:.1} idle cores)", busy.iter().copied().fold(0.0, f64::max) * 100.0));
            self.sb.set_listeners_wanted(next as u32);
        }
    }

    /// Apache's perform_idle_server_maintenance.
    fn maintain(&mut self, signals: &Signals) {
        if self.site.settings.mpm == Mpm::Event {
            self.spread_listeners();
        }
        let t = self.site.settings.tuning.clone();
        let (min_spare, max_spare) = if self.site.settings.mpm == Mpm::Prefork {
            (t.min_spare_servers as usize, t.max_spare_servers as usize)
        } else {
            (t.min_spare_threads as usize, t.max_spare_threads as usize)
        };
        if let Some(w) = self.worker_budget.as_mut() {
            let current: Vec<i32> = self.children.iter().filter(|(_, c)| c.generation == self.generation && !c.asked_to_stop).map(|(p, _)| p.as_raw()).collect();
            let tpc = if self.site.settings.mpm == Mpm::Prefork { 1 } else { t.threads_per_child };
            if let Some(notice) = w.size(&current, self.sb.server_limit, tpc) {
                self.site.error_log.notice(&notice);
                self.cap_logged = false;
            }
        }
        let idle = self.sb.idle_workers();
        let active = self.active();
        // Above the cap (the memory budget shrank): one child a second goes.
        let over = active > self.max_children();
        if idle > max_spare && active > 1 || over {
            // One child a second: an idle one for prefork, the newest otherwise.
            let victim = self
                .children
                .iter()
                .filter(|(_, c)| c.generation == self.generation && !c.asked_to_stop)
                .filter(|(_, c)| self.site.settings.mpm != Mpm::Prefork || self.sb.thread(c.slot, 0).state() == State::Ready)
                .max_by_key(|(_, c)| c.started)
                .map(|(p, _)| *p);
            if let Some(pid) = victim {
                self.ask_to_stop(pid);
            }
            self.spawn_rate = 1;
        } else if self.site.settings.mpm == Mpm::Prefork {
            // Children failing to start are tried again here, once a second.
            self.spawn_for_demand(signals);
        } else if idle < min_spare || active < 1 {
            let cap = self.max_children();
            if active >= cap {
                if !self.cap_logged {
                    self.log(LogLevel::Error, "server reached MaxRequestWorkers setting, consider raising the MaxRequestWorkers setting");
                    self.cap_logged = true;
                }
                self.spawn_rate = 1;
                return;
            }
            let n = (self.spawn_rate as usize).min(cap - active);
            for _ in 0..n {
                if !self.spawn(signals) {
                    break;
                }
            }
            if self.spawn_rate < MAX_SPAWN_RATE {
                self.spawn_rate *= 2;
            }
        } else {
            self.spawn_rate = 1;
        }
    }

    /// prefork: forks at once the children that the connections waiting in
    /// the listeners' queues and MinSpareServers call for, counting those
    /// idle or still starting; at most MAX_SPAWN_RATE a round, never past
    /// MaxRequestWorkers.
    fn spawn_for_demand(&mut self, signals: &Signals) {
        // Connections wait for a child only while none is idle. With one
        // idle they wait for the CPU (clients that each send one request,
        // faster than the machine answers), which more children would not
        // give them: counting those forked a child per client.
        let waiting: usize = if self.sb.idle_workers() == 0 { self.listeners.iter().map(Listener::queued).sum() } else { 0 };
        let min_spare = self.site.settings.tuning.min_spare_servers as usize;
        let wanted = (min_spare + waiting).saturating_sub(self.sb.spare_workers());
        let active = self.active();
        if wanted == 0 && active >= 1 {
            return;
        }
        let cap = self.max_children();
        if active >= cap {
            if !self.cap_logged {
                self.log(LogLevel::Error, "server reached MaxRequestWorkers setting, consider raising the MaxRequestWorkers setting");
                self.cap_logged = true;
            }
            return;
        }
        for _ in 0..wanted.max(1).min(cap - active).min(MAX_SPAWN_RATE as usize) {
            if !self.spawn(signals) {
                break;
            }
        }
    }

    /// A child died within QUICK_DEATH of its start in the last second:
    /// new ones would likely die too, so they are tried once a second.
    fn failing_to_start(&self) -> bool {
        self.quick_deaths.values().any(|t| t.elapsed() < QUICK_DEATH)
    }

    fn stop_children(&mut self, signals: &Signals, wait: Option<Duration>) {
        let pids: Vec<Pid> = self.children.keys().copied().collect();
        for pid in pids {
            self.ask_to_stop(pid);
        }
        if wait == Some(STOP_WAIT) {
            for c in self.children.values() {
                self.sb.process(c.slot).quiescing.store(crate::scoreboard::STOP_NOW, Ordering::Relaxed);
            }
        }
        // Stop listening at once, for every process sharing the sockets: a
        // new client (or a load balancer's health check) is refused and goes
        // elsewhere, rather than waiting in a queue that no child takes from
        // until the children have finished. Stopping children no longer
        // accept (an accept on a socket shut down fails, and they give up).
        // Not a socket systemd passed: systemd holds it across the stop, and
        // its clients are to wait in its queue for the next warren
        // (`systemctl restart`, an upgrade), not be refused.
        for l in self.listeners.iter().filter(|l| !l.activated) {
            let _ = socket2::SockRef::from(&l.socket).shutdown(std::net::Shutdown::Read);
        }
        // Every child was asked to stop, so reaping replaces none of them.
        let deadline = wait.map(|w| Instant::now() + w);
        while !self.children.is_empty() && deadline.is_none_or(|d| Instant::now() < d) {
            if let Some(r) = &self.relay {
                r.copy();
            }
            // The pools' children go on until the server children are gone:
            // what they print is logged, so none waits on a full pipe.
            if let Some(m) = self.pools.as_mut() {
                m.drain_output();
            }
            self.reap(signals);
            std::thread::sleep(Duration::from_millis(20));
        }
        for pid in self.children.keys() {
            self.log(LogLevel::Warn, &format!("child {pid} still running, killing it"));
            let _ = kill(*pid, Signal::SIGKILL);
            let _ = waitpid(*pid, None);
        }
    }
}

/// Writes this process's id to the PidFile, as root may (see
/// [`root_files`]).
fn write_pid_file(path: &Path, origin: Option<&Origin>) -> Result<std::fs::File, String> {
    use std::io::Write;
    let mut f = root_files::open_truncate(path, 0o644).map_err(|e| root_files::describe("PidFile", origin, path, &e))?;
    f.write_all(format!("{}\n", std::process::id()).as_bytes()).map_err(|e| format!("PidFile {}: {e}", path.display()))?;
    Ok(f)
}

/// The server's User and Group, which pools without their own run as.
fn server_user(settings: &Settings) -> ServerUser {
    ServerUser { user: settings.user.clone(), group: settings.group.clone() }
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

/// The sizing of `MaxRequestWorkers auto`, if the settings ask for it.
fn worker_budget(settings: &Settings) -> Option<WorkerBudget> {
    settings.tuning.max_request_workers_auto.then(|| WorkerBudget::new(settings.memory_budget))
}
