//! The parent's side of the pools: their sockets, their children, and
//! php-fpm's maintenance (`fpm_process_ctl.c`): once a second per pool,
//! static keeps pm.max_children running; dynamic stops one idle child above
//! pm.max_spare_servers and starts children below pm.min_spare_servers at a
//! rate that doubles each pass up to pm.max_spawn_rate; ondemand starts a
//! child when a request finds none idle and stops those idle longer than
//! pm.process_idle_timeout. Never more than pm.max_children, with php-fpm's
//! warning once per episode when that stops it.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, Signal};
use nix::unistd::{Gid, Pid, Uid};
use warren_config::{LogLevel, PmStyle, PoolConfig};
use warren_handler::fastcgi::PoolDispatch;
use warren_handler::logs::ErrorLog;

use crate::table::{Dispatch, PoolShape, Table, BUSY, EMPTY, IDLE, MAX_POOLS, MAX_SLOTS, RETIRING};

/// Who a pool's children run as.
#[derive(Clone)]
struct Credentials {
    uid: Uid,
    gid: Gid,
    name: CString,
}

struct PoolRun {
    config: PoolConfig,
    /// One listening socket per child slot; it outlives the slot's
    /// processes, so requests queued on it survive a replacement.
    listeners: Vec<UnixListener>,
    /// Running children: pid -> slot.
    children: HashMap<i32, usize>,
    spawn_rate: u32,
    /// "server reached pm.max_children" has been logged for this episode.
    reached_logged: bool,
    credentials: Option<Credentials>,
}

pub struct Manager {
    /// The current generation's view of the shared table.
    table: Arc<Table>,
    /// The current pools, in the order of `table.pools`.
    pools: Vec<PoolRun>,
    /// Pools a graceful restart replaced: kept while the previous
    /// generation of server children may still lease their children.
    retired: Vec<(PoolRun, PoolShape)>,
    slot_used: Vec<bool>,
    counters_used: Vec<bool>,
    dir: PathBuf,
    owner: Option<(Uid, Gid)>,
    wake_read: OwnedFd,
    _wake_write: OwnedFd,
    log: Arc<ErrorLog>,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn credentials(user: Option<&str>, group: Option<&str>) -> Result<Option<Credentials>, String> {
    use nix::unistd::{Group, User};
    let Some(user) = user else { return Ok(None) };
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    let u = User::from_name(user).ok().flatten().ok_or_else(|| format!("User {user}: no such user"))?;
    let gid = match group {
        Some(g) => Group::from_name(g).ok().flatten().ok_or_else(|| format!("Group {g}: no such group"))?.gid,
        None => u.gid,
    };
    let name = CString::new(user).map_err(|_| format!("bad user name {user}"))?;
    Ok(Some(Credentials { uid: u.uid, gid, name }))
}

fn pm_name(pm: PmStyle) -> &'static str {
    match pm {
        PmStyle::Static => "static",
        PmStyle::Dynamic => "dynamic",
        PmStyle::Ondemand => "ondemand",
    }
}

impl Manager {
    /// Makes the pools' sockets (in a private directory that the server's
    /// children, running as `owner`, may enter) and the shared table.
    pub fn new(pools: &[PoolConfig], owner: Option<(Uid, Gid)>, log: Arc<ErrorLog>) -> Result<Manager, String> {
        let dir = std::env::temp_dir().join(format!("warren-pools-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        if let Some((u, g)) = owner {
            let _ = nix::unistd::chown(&dir, Some(u), Some(g));
        }
        let (wake_read, wake_write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK).map_err(|e| format!("pipe: {e}"))?;
        let table = Table::new(Some(wake_write.as_raw_fd())).map_err(|e| format!("cannot map the pools' table: {e}"))?;
        let mut m = Manager {
            table: Arc::new(table),
            pools: Vec::new(),
            retired: Vec::new(),
            slot_used: vec![false; MAX_SLOTS],
            counters_used: vec![false; MAX_POOLS],
            dir,
            owner,
            wake_read,
            _wake_write: wake_write,
            log,
        };
        let mut shapes = Vec::new();
        for p in pools {
            let (run, shape) = m.create_pool(p)?;
            m.pools.push(run);
            shapes.push(shape);
        }
        m.table = Arc::new(m.table.view(shapes));
        Ok(m)
    }

    /// Places a pool in the table: its counters, its slots and their sockets.
    fn create_pool(&mut self, p: &PoolConfig) -> Result<(PoolRun, PoolShape), String> {
        let creds = credentials(p.user.as_deref(), p.group.as_deref()).map_err(|m| format!("<Pool {}>: {m}", p.name))?;
        let n = p.max_children as usize;
        let counters = self.counters_used.iter().position(|u| !u).ok_or_else(|| format!("<Pool {}>: more than {MAX_POOLS} pools", p.name))?;
        let first_slot = (0..=MAX_SLOTS.saturating_sub(n))
            .find(|&f| self.slot_used[f..f + n].iter().all(|u| !u))
            .ok_or_else(|| format!("<Pool {}>: more than {MAX_SLOTS} children in all pools", p.name))?;
        let mut listeners = Vec::new();
        let mut sockets = Vec::new();
        for slot in first_slot..first_slot + n {
            let path = self.dir.join(format!("{}.{slot}.sock", p.name));
            let _ = std::fs::remove_file(&path);
            let l = UnixListener::bind(&path).map_err(|e| format!("<Pool {}>: cannot bind {}: {e}", p.name, path.display()))?;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
            if let Some((u, g)) = self.owner {
                let _ = nix::unistd::chown(&path, Some(u), Some(g));
            }
            listeners.push(l);
            sockets.push(path);
        }
        self.counters_used[counters] = true;
        self.slot_used[first_slot..first_slot + n].iter_mut().for_each(|u| *u = true);
        let c = self.table.counters_at(counters);
        for f in [&c.waiting, &c.max_waiting, &c.max_active, &c.max_children_reached, &c.slow_requests, &c.wanted] {
            f.store(0, Ordering::Relaxed);
        }
        c.accepted.store(0, Ordering::Relaxed);
        c.started.store(now_secs(), Ordering::Relaxed);
        let shape = PoolShape { name: p.name.clone(), pm: pm_name(p.pm), max_children: n, max_requests: p.max_requests, backlog: p.listen_backlog, sockets, counters, first_slot };
        let run = PoolRun { config: p.clone(), listeners, children: HashMap::new(), spawn_rate: 1, reached_logged: false, credentials: creds };
        Ok((run, shape))
    }

    /// A graceful restart: pools whose settings did not change keep their
    /// children; new and changed pools start theirs now, before the new
    /// server children take requests; replaced pools stay until the previous
    /// generation is gone ([`Manager::previous_generation_gone`]).
    pub fn reload(&mut self, configs: &[PoolConfig]) -> Result<(), String> {
        let mut created: Vec<(PoolRun, PoolShape)> = Vec::new();
        for c in configs {
            if self.pools.iter().any(|r| r.config.same_processes(c)) {
                continue;
            }
            match self.create_pool(c) {
                Ok(x) => created.push(x),
                Err(e) => {
                    for (_, shape) in created {
                        self.free(&shape);
                    }
                    return Err(e);
                }
            }
        }
        let mut old: Vec<Option<(PoolRun, PoolShape)>> = std::mem::take(&mut self.pools).into_iter().zip(self.table.pools.iter().cloned()).map(Some).collect();
        let mut created = created.into_iter();
        let (mut runs, mut shapes, mut fresh) = (Vec::new(), Vec::new(), Vec::new());
        for c in configs {
            let kept = old.iter_mut().find(|o| o.as_ref().is_some_and(|(r, _)| r.config.same_processes(c))).and_then(Option::take);
            let (run, shape) = match kept {
                Some(x) => x,
                None => {
                    fresh.push(runs.len());
                    created.next().expect("created above")
                }
            };
            runs.push(run);
            shapes.push(shape);
        }
        self.retired.extend(old.into_iter().flatten());
        self.pools = runs;
        self.table = Arc::new(self.table.view(shapes));
        for i in fresh {
            self.start_pool(i);
        }
        Ok(())
    }

    /// The previous generation of server children has exited: the pools
    /// it alone used are stopped.
    pub fn previous_generation_gone(&mut self) {
        for (run, _) in &self.retired {
            for &pid in run.children.keys() {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
        self.collect_retired();
    }

    fn collect_retired(&mut self) {
        let done: Vec<usize> = (0..self.retired.len()).filter(|&i| self.retired[i].0.children.is_empty()).collect();
        for i in done.into_iter().rev() {
            let (run, shape) = self.retired.remove(i);
            drop(run);
            self.free(&shape);
        }
    }

    fn free(&mut self, shape: &PoolShape) {
        for (k, path) in shape.sockets.iter().enumerate() {
            let _ = std::fs::remove_file(path);
            let s = self.table.slot_at(shape.first_slot + k);
            s.state.store(EMPTY, Ordering::Relaxed);
            s.pid.store(0, Ordering::Relaxed);
            self.slot_used[shape.first_slot + k] = false;
        }
        self.counters_used[shape.counters] = false;
    }

    pub fn table(&self) -> Arc<Table> {
        self.table.clone()
    }

    /// Leases for the server's children.
    pub fn dispatch(&self) -> Arc<dyn PoolDispatch> {
        Arc::new(Dispatch(self.table.clone()))
    }

    /// Readable when a request wants the manager's attention.
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake_read.as_fd()
    }

    /// A line for the start-up log.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .pools
            .iter()
            .map(|p| format!("{} ({:?}, {} max, {})", p.config.name, p.config.pm, p.config.max_children, p.config.command.join(" ")).to_lowercase())
            .collect();
        parts.join(", ")
    }

    /// Starts each pool's first children.
    pub fn start(&mut self) {
        for i in 0..self.pools.len() {
            self.start_pool(i);
        }
    }

    fn start_pool(&mut self, i: usize) {
        let c = &self.pools[i].config;
        let n = match c.pm {
            PmStyle::Static => c.max_children,
            PmStyle::Dynamic => c.start_servers,
            PmStyle::Ondemand => 0,
        };
        for _ in 0..n {
            self.spawn(i);
        }
    }

    fn free_slot(&self, pool: usize) -> Option<usize> {
        (0..self.pools[pool].config.max_children as usize).find(|&s| self.table.slot(pool, s).pid.load(Ordering::Relaxed) == 0)
    }

    fn spawn(&mut self, pool: usize) -> bool {
        let Some(slot) = self.free_slot(pool) else { return false };
        let run = &self.pools[pool];
        let c = &run.config;
        let stdin: OwnedFd = match run.listeners[slot].try_clone() {
            Ok(l) => l.into(),
            Err(e) => {
                self.log.error(None, &format!("pool {}: cannot pass its socket to a child: {e}", c.name));
                return false;
            }
        };
        let mut cmd = Command::new(&c.command[0]);
        cmd.args(&c.command[1..]).env_clear().env("PATH", "/usr/local/bin:/usr/bin:/bin");
        // The pool replaces children itself (pm.max_requests): php-cgi must not
        // exit on its own after its default 500, nor fork children of its own.
        cmd.env("PHP_FCGI_MAX_REQUESTS", "0").env("PHP_FCGI_CHILDREN", "0");
        for (k, v) in &c.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::from(stdin)).stdout(Stdio::null()).stderr(Stdio::null());
        let creds = run.credentials.clone();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(cr) = &creds {
                    nix::unistd::setgid(cr.gid)?;
                    nix::unistd::initgroups(&cr.name, cr.gid)?;
                    nix::unistd::setuid(cr.uid)?;
                }
                // If warren's parent dies without stopping the pool (kill -9),
                // the children go too. Set after setuid, which clears it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(child) => {
                let pid = child.id() as i32;
                let s = self.table.slot(pool, slot);
                s.requests.store(0, Ordering::Relaxed);
                s.started.store(now_secs(), Ordering::Relaxed);
                s.since_ms.store(self.table.now_ms(), Ordering::Relaxed);
                s.pid.store(pid, Ordering::Relaxed);
                s.state.store(IDLE, Ordering::Release);
                self.table.child_freed(pool, 1);
                self.pools[pool].children.insert(pid, slot);
                true
            }
            Err(e) => {
                self.log.error(None, &format!("pool {}: cannot start {}: {e}", c.name, c.command[0]));
                false
            }
        }
    }

    /// A child process ended. False if it was not one of the pools'.
    pub fn reaped(&mut self, pid: Pid, how: &str) -> bool {
        let raw = pid.as_raw();
        if let Some(r) = self.retired.iter().position(|(p, _)| p.children.contains_key(&raw)) {
            let (run, shape) = &mut self.retired[r];
            if let Some(slot) = run.children.remove(&raw) {
                let s = self.table.slot_at(shape.first_slot + slot);
                s.state.store(EMPTY, Ordering::Release);
                s.pid.store(0, Ordering::Relaxed);
            }
            self.collect_retired();
            return true;
        }
        let Some(pool) = self.pools.iter().position(|p| p.children.contains_key(&raw)) else { return false };
        let slot = self.pools[pool].children.remove(&raw).expect("child");
        let s = self.table.slot(pool, slot);
        let was = s.state.swap(EMPTY, Ordering::AcqRel);
        s.pid.store(0, Ordering::Relaxed);
        let c = &self.pools[pool].config;
        if was != RETIRING {
            self.log.log(LogLevel::Warn, None, &format!("[pool {}] child {raw} exited on {how}", c.name));
        }
        // Replace what the pool needs at once; maintenance does the rest.
        let running = self.pools[pool].children.len() as u32;
        let needed = match c.pm {
            PmStyle::Static => running < c.max_children,
            PmStyle::Dynamic => running < c.min_spare_servers.max(1) || was == RETIRING && running < c.start_servers,
            PmStyle::Ondemand => self.table.counters(pool).waiting.load(Ordering::Relaxed) > 0,
        };
        if needed {
            self.spawn(pool);
        }
        true
    }

    /// A request woke the manager: retire children that are due, start
    /// children for waiting requests (ondemand, and dynamic below its spares).
    pub fn wake(&mut self) {
        let mut buf = [0u8; 256];
        while nix::unistd::read(&self.wake_read, &mut buf).is_ok_and(|n| n > 0) {}
        self.retire_due();
        for i in 0..self.pools.len() {
            if self.table.counters(i).wanted.swap(0, Ordering::AcqRel) == 0 {
                continue;
            }
            let (idle, _, running) = self.table.census(i);
            if idle > 0 {
                continue;
            }
            let spawned = self.pools[i].config.pm != PmStyle::Static && self.spawn(i);
            if !spawned && running >= self.pools[i].config.max_children as usize {
                self.note_max_children(i);
            }
        }
    }

    /// Stops children that served pm.max_requests (they are never handed out again).
    fn retire_due(&self) {
        for (i, pool) in self.pools.iter().enumerate() {
            for (&pid, &slot) in &pool.children {
                if self.table.slot(i, slot).state.load(Ordering::Acquire) == RETIRING {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
                }
            }
        }
    }

    fn note_max_children(&mut self, pool: usize) {
        let run = &mut self.pools[pool];
        if !run.reached_logged {
            run.reached_logged = true;
            self.table.counters(pool).max_children_reached.fetch_add(1, Ordering::Relaxed);
            let c = &run.config;
            self.log.log(LogLevel::Warn, None, &format!("[pool {}] server reached pm.max_children setting ({}), consider raising it", c.name, c.max_children));
        }
    }

    /// The once-a-second pass.
    pub fn maintain(&mut self) {
        self.retire_due();
        let now = self.table.now_ms();
        for i in 0..self.pools.len() {
            let c = self.pools[i].config.clone();
            // request_terminate_timeout: the child is killed; its request gets 504.
            if let Some(limit) = c.request_terminate_timeout {
                for (&pid, &slot) in &self.pools[i].children {
                    let s = self.table.slot(i, slot);
                    if s.state.load(Ordering::Acquire) == BUSY && now.saturating_sub(s.since_ms.load(Ordering::Relaxed)) > limit.as_millis() as u64 {
                        s.terminated.store(1, Ordering::Release);
                        self.log.log(LogLevel::Warn, None, &format!("[pool {}] child {pid}, request running longer than request_terminate_timeout ({}s), terminating", c.name, limit.as_secs()));
                        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                    }
                }
            }
            let (idle, busy, running) = self.table.census(i);
            let waiting = self.table.counters(i).waiting.load(Ordering::Relaxed);
            if waiting == 0 && busy < running {
                // The episode of a full pool is over: nobody waits, a child is free.
                self.pools[i].reached_logged = false;
            }
            match c.pm {
                PmStyle::Static => {
                    for _ in running..c.max_children as usize {
                        self.spawn(i);
                    }
                    if waiting > 0 && idle == 0 {
                        self.note_max_children(i);
                    }
                }
                PmStyle::Dynamic => {
                    if idle > c.max_spare_servers as usize {
                        self.stop_one_idle(i, Duration::ZERO);
                        self.pools[i].spawn_rate = 1;
                    } else if idle < c.min_spare_servers as usize || waiting > 0 {
                        if running >= c.max_children as usize {
                            self.note_max_children(i);
                            self.pools[i].spawn_rate = 1;
                            continue;
                        }
                        let want = (c.min_spare_servers as usize).saturating_sub(idle).max(usize::from(waiting > 0));
                        let n = want.min(self.pools[i].spawn_rate as usize).min(c.max_children as usize - running);
                        for _ in 0..n {
                            self.spawn(i);
                        }
                        let rate = &mut self.pools[i].spawn_rate;
                        *rate = (*rate * 2).min(c.max_spawn_rate);
                    } else {
                        self.pools[i].spawn_rate = 1;
                    }
                }
                PmStyle::Ondemand => {
                    self.stop_one_idle(i, c.process_idle_timeout);
                    if waiting > 0 && idle == 0 && !self.spawn(i) {
                        self.note_max_children(i);
                    }
                }
            }
        }
    }

    /// Stops the child idle longest, if it has been idle at least `min_idle`.
    fn stop_one_idle(&mut self, pool: usize, min_idle: Duration) {
        let now = self.table.now_ms();
        let oldest = self.pools[pool]
            .children
            .iter()
            .filter(|(_, &s)| self.table.slot(pool, s).state.load(Ordering::Acquire) == IDLE)
            .map(|(&pid, &s)| (now.saturating_sub(self.table.slot(pool, s).since_ms.load(Ordering::Relaxed)), pid, s))
            .max();
        if let Some((idle_ms, pid, slot)) = oldest {
            if idle_ms >= min_idle.as_millis() as u64 && self.table.slot(pool, slot).state.compare_exchange(IDLE, RETIRING, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
    }

    /// Stops every child: TERM, then KILL after `wait`.
    pub fn stop(&mut self, wait: Duration) {
        let all: Vec<i32> = self.pools.iter().chain(self.retired.iter().map(|(r, _)| r)).flat_map(|p| p.children.keys().copied()).collect();
        for &pid in &all {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = std::time::Instant::now() + wait;
        let mut left: Vec<i32> = all;
        while !left.is_empty() && std::time::Instant::now() < deadline {
            left.retain(|&pid| !matches!(nix::sys::wait::waitpid(Pid::from_raw(pid), Some(nix::sys::wait::WaitPidFlag::WNOHANG)), Ok(nix::sys::wait::WaitStatus::Exited(..) | nix::sys::wait::WaitStatus::Signaled(..)) | Err(_)));
            std::thread::sleep(Duration::from_millis(20));
        }
        for &pid in &left {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
        }
        for p in &mut self.pools {
            p.children.clear();
        }
        self.retired.clear();
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
