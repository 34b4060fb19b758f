//! The parent's side of the pools: their sockets, their children, and
//! php-fpm's maintenance (`fpm_process_ctl.c`): once a second per pool,
//! static keeps pm.max_children running; dynamic stops one idle child above
//! pm.max_spare_servers and starts children below pm.min_spare_servers at a
//! rate that doubles each pass up to pm.max_spawn_rate; ondemand starts a
//! child when a request finds none idle and stops those idle longer than
//! pm.process_idle_timeout. Never more than pm.max_children, with php-fpm's
//! warning once per episode when that stops it.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::AtFlags;
use nix::sys::signal::{kill, Signal};
use nix::unistd::{Gid, Pid, Uid, UnlinkatFlags};
use warren_config::{PmStyle, PoolConfig};
use warren_pool_api::{PoolDispatch, ManagerLog};
pub use warren_pool_api::ServerUser;

use crate::output::Output;
mod php_fpm;
mod process_manager;
mod php_ini;
mod remembered;
mod sizing;
mod tasks;
mod setup;
mod user_pools;

use setup::{bind_private, credentials, detach_child, highest_open_fd, make_private_dir, make_socket_dir, owner_of, Credentials};
use php_fpm::{end_session_of, MASTER_BACKOFF_MAX, MASTER_YOUTH};
use sizing::{AutoSize, Sizing};
use crate::shape::{PhpFpmShape, PoolShape};
use crate::table::{Dispatch, Table, BUSY, IDLE, MAX_POOLS, MAX_SLOTS, RETIRING};

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
    /// What the pool's children print; None in a server child.
    output: Option<Output>,
    /// The request each child was last noted slow for (request_slowlog_timeout): pid -> its start.
    slow_noted: HashMap<i32, u64>,
    /// A php-fpm master's restarts: when the last one started, and how long
    /// to wait before the next (doubling while it dies young).
    master_started: Option<std::time::Instant>,
    master_backoff: Duration,
    master_next: Option<std::time::Instant>,
    /// pm.max_children auto: the count the memory budget allows.
    auto: Option<AutoSize>,
    /// A php-cgi pool's PHP settings, in a file of its own.
    ini: Option<php_ini::PoolIni>,
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
    /// The sockets' directory, and a descriptor of it through which they
    /// are made and handed over without a path lookup that could be
    /// redirected.
    dir: PathBuf,
    dir_fd: OwnedFd,
    /// The server children's account (when warren is root): the sockets
    /// are theirs to connect to.
    owner: Option<(Uid, Gid)>,
    wake_read: OwnedFd,
    _wake_write: OwnedFd,
    log: Arc<dyn ManagerLog>,
    /// The memory budget, when a pool has pm.max_children auto.
    sizing: Option<Sizing>,
    /// The directory of the php-cgi pools' ini directories (see
    /// [`php_ini`]), made for the first pool with PHP settings.
    ini_parent: Option<PathBuf>,
    /// The number of the next pool's ini directory.
    ini_serial: u32,
    /// The pools' memory cgroups, made with the budget.
    cgroups: Option<crate::cgroup::PoolCgroups>,
    /// The server's User and Group, whom pools without a User run as.
    server: ServerUser,
    /// Users' pools made as requests ask (UserDir), if any host makes them.
    user_pools: Option<user_pools::UserPools>,
    /// The auto pools' learned peaks kept across restarts (beside the
    /// PidFile): the file, what it holds, and what is to be written to it.
    peaks_file: Option<PathBuf>,
    peaks: remembered::Peaks,
    peaks_saved: Option<std::time::Instant>,
    peaks_failed: bool,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn pm_name(pm: PmStyle) -> &'static str {
    match pm {
        PmStyle::Static => "static",
        PmStyle::Dynamic => "dynamic",
        PmStyle::Ondemand => "ondemand",
    }
}

impl Manager {
    /// Makes the pools' sockets and the shared table. The sockets are the
    /// server children's (`server`'s account, when warren is root); each
    /// pool's children run as its `User`, else as `server`. `memory_budget`:
    /// MemoryBudget, for pools with pm.max_children auto.
    /// `pid_file`: the auto pools' learned peaks are kept beside it.
    pub fn new(pools: &[PoolConfig], server: ServerUser, memory_budget: Option<u64>, pid_file: Option<&Path>, log: Arc<dyn ManagerLog>) -> Result<Manager, String> {
        let owner = owner_of(&server)?;
        let (dir, dir_fd) = make_socket_dir(owner.map(|(_, g)| g))?;
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
            dir_fd,
            owner,
            wake_read,
            _wake_write: wake_write,
            log,
            sizing: None,
            ini_parent: None,
            ini_serial: 0,
            cgroups: None,
            server: server.clone(),
            user_pools: None,
            peaks_file: pid_file.map(remembered::peaks_path),
            peaks: remembered::Peaks::default(),
            peaks_saved: None,
            peaks_failed: false,
        };
        if pools.iter().any(|p| p.max_children_auto) {
            m.load_peaks();
        }
        let mut shapes = Vec::new();
        for p in pools {
            let creds = credentials(p, &server).map_err(|e| format!("<Pool {}>: {e}", p.name))?;
            let (run, shape) = m.create_pool(p, creds)?;
            m.pools.push(run);
            shapes.push(shape);
        }
        m.table = Arc::new(m.table.view(shapes));
        m.set_memory_budget(memory_budget);
        Ok(m)
    }

    /// A pool's socket at `path` (in the sockets' directory), the server's
    /// user's, mode 0600; a php-fpm pool's with its listen.backlog.
    fn make_socket(&self, p: &PoolConfig, path: &Path) -> Result<UnixListener, String> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Left over from a pool that used this slot before; unlink
        // removes a symlink itself, never its target.
        let _ = nix::unistd::unlinkat(&self.dir_fd, name.as_str(), UnlinkatFlags::NoRemoveDir);
        let l = bind_private(path).map_err(|e| format!("<Pool {}>: cannot bind {}: {e}", p.name, path.display()))?;
        if let Some((u, g)) = self.owner {
            nix::unistd::fchownat(&self.dir_fd, name.as_str(), Some(u), Some(g), AtFlags::AT_SYMLINK_NOFOLLOW)
                .map_err(|e| format!("<Pool {}>: cannot give {} to the server's user: {e}", p.name, path.display()))?;
        }
        if p.runs_php_fpm() {
            // Requests wait for a child in this queue: listen.backlog long.
            let backlog = libc::c_int::try_from(p.listen_backlog).unwrap_or(libc::c_int::MAX);
            // SAFETY: listen on a socket this function owns.
            if unsafe { libc::listen(l.as_raw_fd(), backlog) } != 0 {
                return Err(format!("<Pool {}>: listen on {}: {}", p.name, path.display(), std::io::Error::last_os_error()));
            }
        }
        Ok(l)
    }

    /// Places a pool in the table: its counters, its slots and their sockets.
    fn create_pool(&mut self, p: &PoolConfig, creds: Option<Credentials>) -> Result<(PoolRun, PoolShape), String> {
        // A php-fpm pool has one socket, which its master's children share.
        let n = if p.runs_php_fpm() { 1 } else { p.max_children as usize };
        let ini = self.pool_ini(p, creds.as_ref()).map_err(|e| format!("<Pool {}>: its PHP settings: {e}", p.name))?;
        let counters = self.counters_used.iter().position(|u| !u).ok_or_else(|| format!("<Pool {}>: more than {MAX_POOLS} pools", p.name))?;
        let first_slot = (0..=MAX_SLOTS.saturating_sub(n))
            .find(|&f| self.slot_used[f..f + n].iter().all(|u| !u))
            .ok_or_else(|| format!("<Pool {}>: more than {MAX_SLOTS} children in all pools", p.name))?;
        let mut listeners = Vec::new();
        let mut sockets = Vec::new();
        for slot in first_slot..first_slot + n {
            let path = self.dir.join(format!("{}.{slot}.sock", p.name));
            listeners.push(self.make_socket(p, &path)?);
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
        let php_fpm = p.runs_php_fpm().then_some(PhpFpmShape { terminate_after: p.request_terminate_timeout, capped: p.max_children_auto });
        let shape = PoolShape { name: p.name.clone(), pm: pm_name(p.pm), max_children: n, max_requests: p.max_requests, backlog: p.listen_backlog, sockets, counters, first_slot, php_fpm };
        let output = Output::new().map_err(|e| format!("<Pool {}>: cannot make a pipe for its output: {e}", p.name))?;
        let auto = p.max_children_auto.then(|| AutoSize::new(self.remembered_peak(p)));
        c.auto_children.store(0, Ordering::Relaxed);
        c.recycled.store(0, Ordering::Relaxed);
        c.cgroup_limit.store(0, Ordering::Relaxed);
        c.tasks_limit.store(0, Ordering::Relaxed);
        self.table.clear_places(counters);
        let run = PoolRun { config: p.clone(), listeners, children: HashMap::new(), spawn_rate: 1, reached_logged: false, credentials: creds, output: Some(output), slow_noted: HashMap::new(), master_started: None, master_backoff: Duration::ZERO, master_next: None, auto, ini };
        Ok((run, shape))
    }

    /// The ini file of a php-cgi pool's PHP settings, if it has any (a
    /// php-fpm pool has them in its configuration).
    fn pool_ini(&mut self, p: &PoolConfig, creds: Option<&Credentials>) -> Result<Option<php_ini::PoolIni>, String> {
        if p.runs_php_fpm() || (p.php_ini.is_empty() && p.php_admin_ini.is_empty()) {
            return Ok(None);
        }
        let parent = match &self.ini_parent {
            Some(d) => d.clone(),
            None => {
                let (dir, fd) = make_private_dir("warren-pool-ini")?;
                php_ini::parent_mode(fd.as_fd()).map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))?;
                self.ini_parent = Some(dir.clone());
                dir
            }
        };
        self.ini_serial += 1;
        let dir = php_ini::pool_dir(&parent, self.ini_serial);
        php_ini::PoolIni::write(dir, p.php_ini.iter().chain(&p.php_admin_ini), creds.map(|c| c.gid)).map(Some)
    }

    /// A graceful restart: pools whose settings did not change keep their
    /// children; new and changed pools start theirs now, before the new
    /// server children take requests; replaced pools stay until the previous
    /// generation is gone ([`Manager::previous_generation_gone`]).
    pub fn reload(&mut self, configs: &[PoolConfig], server: ServerUser, memory_budget: Option<u64>) -> Result<(), String> {
        if owner_of(&server)? != self.owner {
            return Err("changing the server's User or Group while pools run needs a full stop and start (the pools' sockets are its user's)".into());
        }
        let mut creds = Vec::new();
        for c in configs {
            creds.push(credentials(c, &server).map_err(|e| format!("<Pool {}>: {e}", c.name))?);
        }
        // A pool is kept only if its children would be the same processes
        // as the same user (the server's User may have changed under it).
        let same = |r: &PoolRun, c: &PoolConfig, cr: &Option<Credentials>| r.config.same_processes(c) && r.credentials == *cr;
        let mut created: Vec<(PoolRun, PoolShape)> = Vec::new();
        for (c, cr) in configs.iter().zip(&creds) {
            if self.pools.iter().any(|r| same(r, c, cr)) {
                continue;
            }
            match self.create_pool(c, cr.clone()) {
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
        for (c, cr) in configs.iter().zip(&creds) {
            let kept = old.iter_mut().find(|o| o.as_ref().is_some_and(|(r, _)| same(r, c, cr))).and_then(Option::take);
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
        self.server = server;
        self.forget_answered_asks();
        self.set_memory_budget(memory_budget);
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
            let (mut run, shape) = self.retired.remove(i);
            // Its last words, before its pipe closes.
            if let Some(o) = run.output.as_mut() {
                o.log_lines(&run.config.name, &*self.log);
                o.log_stale(&run.config.name, &*self.log, Duration::ZERO);
            }
            drop(run);
            self.free(&shape);
        }
    }

    fn free(&mut self, shape: &PoolShape) {
        for (k, path) in shape.sockets.iter().enumerate() {
            let _ = std::fs::remove_file(path);
            Table::empty_slot(self.table.slot_at(shape.first_slot + k));
            self.slot_used[shape.first_slot + k] = false;
        }
        self.counters_used[shape.counters] = false;
    }

    pub fn table(&self) -> Arc<Table> {
        self.table.clone()
    }

    /// Leases for the server's children.
    pub fn dispatch(&self) -> Arc<dyn PoolDispatch> {
        Arc::new(Dispatch::new(self.table.clone(), self.dir.clone()))
    }

    /// Readable when a request wants the manager's attention.
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake_read.as_fd()
    }

    /// The current pools and those a graceful restart retired.
    fn runs(&self) -> impl Iterator<Item = &PoolRun> {
        self.pools.iter().chain(self.retired.iter().map(|(r, _)| r))
    }

    fn runs_mut(&mut self) -> impl Iterator<Item = &mut PoolRun> {
        self.pools.iter_mut().chain(self.retired.iter_mut().map(|(r, _)| r))
    }

    /// The error log of a new configuration (a graceful restart), where the
    /// pools' messages and their children's output go from now on.
    pub fn set_log(&mut self, log: Arc<dyn ManagerLog>) {
        self.log = log;
    }

    /// Readable when a pool's children printed something: for the parent's
    /// poll, with [`Manager::drain_output`].
    pub fn output_fds(&self) -> Vec<BorrowedFd<'_>> {
        self.runs().filter_map(|r| r.output.as_ref()).map(|o| o.read.as_fd()).collect()
    }

    /// Logs what the pools' children printed, whole lines; never blocks.
    pub fn drain_output(&mut self) {
        let log = self.log.clone();
        for run in self.runs_mut() {
            if let Some(o) = run.output.as_mut() {
                o.log_lines(&run.config.name, &*log);
            }
        }
    }

    /// Logs the starts of lines that waited `wait` for their end.
    fn flush_output(&mut self, wait: Duration) {
        let log = self.log.clone();
        for run in self.runs_mut() {
            if let Some(o) = run.output.as_mut() {
                o.log_stale(&run.config.name, &*log, wait);
            }
        }
    }

    /// In a server child just forked: closes the pools' output pipes, which
    /// are the parent's alone (a server child could otherwise read the
    /// pools' output, or write lines in their name).
    pub fn close_output_in_child(&mut self) {
        for run in self.runs_mut() {
            run.output = None;
        }
    }

    /// A line for the start-up log.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .pools
            .iter()
            .map(|p| {
                let max = if p.config.max_children_auto { "auto".to_string() } else { p.config.max_children.to_string() };
                format!("{} ({:?}, {max} max, {})", p.config.name, p.config.pm, p.config.command.join(" ")).to_lowercase()
            })
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
        if self.pools[i].config.runs_php_fpm() {
            self.spawn_php_fpm(i, false);
            return;
        }
        let c = &self.pools[i].config;
        let n = match c.pm {
            PmStyle::Static => self.limit(i),
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
        if !self.may_grow(pool) {
            return false;
        }
        let Some(slot) = self.free_slot(pool) else { return false };
        let run = &self.pools[pool];
        let c = &run.config;
        let stdin: OwnedFd = match run.listeners[slot].try_clone() {
            Ok(l) => l.into(),
            Err(e) => {
                self.log.error(&format!("pool {}: cannot pass its socket to a child: {e}", c.name));
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
        // php_value and php_flag: in the pool's ini file, never on the
        // command line that `ps` shows everyone.
        if let Some(ini) = &run.ini {
            let inherited = c.env.iter().rev().find(|(k, _)| k == "PHP_INI_SCAN_DIR").map(|(_, v)| v.as_str());
            cmd.env("PHP_INI_SCAN_DIR", ini.scan_dir(inherited));
        }
        // Standard input is the pool's socket (FastCGI's convention); what
        // the program prints goes into the pool's pipe, which the parent
        // copies to the error log: never a descriptor of the log file itself
        // (the pool's user could truncate it or write anything into it), nor
        // the terminal or pipe warren was started on.
        // catch_workers_output = no: nowhere, as php-fpm does.
        let pipe = run.output.as_ref().filter(|_| c.catch_output).map(|o| o.write.try_clone());
        let (stdout, stderr) = match pipe {
            Some(Ok(w)) => match w.try_clone() {
                Ok(w2) => (Stdio::from(w), Stdio::from(w2)),
                Err(_) => (Stdio::null(), Stdio::null()),
            },
            _ => (Stdio::null(), Stdio::null()),
        };
        cmd.stdin(Stdio::from(stdin)).stdout(stdout).stderr(stderr);
        let creds = run.credentials.clone();
        let highest_fd = highest_open_fd();
        let cgroup = self.cgroup_joins(pool);
        // SAFETY: join_in_child and detach_child make only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || {
                crate::cgroup::join_in_child(cgroup, crate::cgroup::OOM_SCORE_ADJ);
                detach_child(creds.as_ref(), highest_fd)
            });
        }
        match cmd.spawn() {
            Ok(child) => {
                let pid = child.id() as i32;
                let s = self.table.slot(pool, slot);
                s.requests.store(0, Ordering::Relaxed);
                s.retire.store(0, Ordering::Relaxed);
                s.started.store(now_secs(), Ordering::Relaxed);
                s.since_ms.store(self.table.now_ms(), Ordering::Relaxed);
                s.pid.store(pid, Ordering::Relaxed);
                s.state.store(IDLE, Ordering::Release);
                self.table.child_freed(pool, 1);
                self.pools[pool].children.insert(pid, slot);
                true
            }
            Err(e) => {
                self.log.error(&format!("pool {}: cannot start {}: {e}", c.name, c.command[0]));
                false
            }
        }
    }

    /// A child process ended. False if it was not one of the pools'.
    pub fn reaped(&mut self, pid: Pid, how: &str) -> bool {
        let raw = pid.as_raw();
        if self.runs().any(|r| r.config.runs_php_fpm() && r.children.contains_key(&raw)) {
            end_session_of(raw);
        }
        if let Some(r) = self.retired.iter().position(|(p, _)| p.children.contains_key(&raw)) {
            let (run, shape) = &mut self.retired[r];
            if let Some(slot) = run.children.remove(&raw) {
                Table::empty_slot(self.table.slot_at(shape.first_slot + slot));
            }
            self.collect_retired();
            return true;
        }
        let Some(pool) = self.pools.iter().position(|p| p.children.contains_key(&raw)) else { return false };
        let slot = self.pools[pool].children.remove(&raw).expect("child");
        if self.pools[pool].config.runs_php_fpm() {
            // Started again by the once-a-second pass; one that dies young
            // (a configuration php-fpm refuses) waits longer each time.
            self.table.slot(pool, 0).pid.store(0, Ordering::Relaxed);
            let run = &mut self.pools[pool];
            let young = run.master_started.is_some_and(|t| t.elapsed() < MASTER_YOUTH);
            run.master_backoff = if young { (run.master_backoff * 2).clamp(Duration::from_secs(1), MASTER_BACKOFF_MAX) } else { Duration::ZERO };
            run.master_next = Some(std::time::Instant::now() + run.master_backoff);
            self.log.warn(&format!("[pool {}] php-fpm master {raw} exited on {how}; starting it again in {} s", run.config.name, run.master_backoff.as_secs()));
            return true;
        }
        let was = Table::empty_slot(self.table.slot(pool, slot));
        let c = &self.pools[pool].config;
        // A retiring child was told to stop (SIGTERM); killed outright, the
        // kernel's OOM killer, say, it is worth a line all the same.
        if was != RETIRING || how.ends_with("SIGKILL") {
            self.log.warn(&format!("[pool {}] child {raw} exited on {how}", c.name));
        }
        // Replace what the pool needs at once; maintenance does the rest.
        let running = self.pools[pool].children.len() as u32;
        let needed = match c.pm {
            PmStyle::Static => running < self.limit(pool),
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
        self.answer_asked_pools();
        self.retire_due();
        for i in 0..self.pools.len() {
            // php-fpm starts its own children.
            if self.table.counters(i).wanted.swap(0, Ordering::AcqRel) == 0 || self.pools[i].config.runs_php_fpm() {
                continue;
            }
            let (idle, _, running) = self.table.census(i);
            if idle > 0 {
                continue;
            }
            let spawned = self.pools[i].config.pm != PmStyle::Static && self.spawn(i);
            if !spawned && running >= self.limit(i) as usize {
                self.note_max_children(i);
            }
        }
    }

    /// Stops children that served pm.max_requests (they are never handed out again).
    fn retire_due(&self) {
        // php-fpm retires its own children.
        for (i, pool) in self.pools.iter().enumerate().filter(|(_, p)| !p.config.runs_php_fpm()) {
            for (&pid, &slot) in &pool.children {
                if self.table.slot(i, slot).state.load(Ordering::Acquire) == RETIRING {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
                }
            }
        }
    }

    fn note_max_children(&mut self, pool: usize) {
        let max = self.limit(pool);
        let run = &mut self.pools[pool];
        if !run.reached_logged {
            run.reached_logged = true;
            self.table.counters(pool).max_children_reached.fetch_add(1, Ordering::Relaxed);
            let name = &run.config.name;
            let more = if run.auto.is_some() { "the memory budget allows no more" } else { "consider raising it" };
            self.log.warn(&format!("[pool {name}] server reached pm.max_children setting ({max}), {more}"));
        }
    }

    /// The once-a-second pass.
    pub fn maintain(&mut self) {
        self.answer_asked_pools();
        self.retire_due();
        self.table.reclaim_places();
        self.size_pools(false);
        // A line without its end for a second is logged as it is.
        self.flush_output(Duration::from_secs(1));
        let now = self.table.now_ms();
        for i in 0..self.pools.len() {
            let c = self.pools[i].config.clone();
            if c.runs_php_fpm() {
                // php-fpm manages its own children.
                let run = &self.pools[i];
                let master = run.children.values().any(|&s| s == 0);
                if !master && run.master_next.is_none_or(|t| std::time::Instant::now() >= t) {
                    // A fresh socket when one died: see spawn_php_fpm.
                    self.spawn_php_fpm(i, run.master_started.is_some());
                }
                continue;
            }
            self.stop_orphaned(i);
            // request_terminate_timeout: the child is killed; its request gets 504.
            if let Some(limit) = c.request_terminate_timeout {
                for (&pid, &slot) in &self.pools[i].children {
                    let s = self.table.slot(i, slot);
                    if s.state.load(Ordering::Acquire) == BUSY && now.saturating_sub(s.since_ms.load(Ordering::Relaxed)) > limit.as_millis() as u64 {
                        s.terminated.store(1, Ordering::Release);
                        self.log.warn(&format!("[pool {}] child {pid}, request running longer than request_terminate_timeout ({}s), terminating", c.name, limit.as_secs()));
                        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                    }
                }
            }
            if let (Some(limit), Some(slowlog)) = (c.request_slowlog_timeout, &c.slowlog) {
                self.note_slow(i, limit, slowlog, now);
            }
            let (idle, busy, running) = self.table.census(i);
            let waiting = self.table.counters(i).waiting.load(Ordering::Relaxed);
            let max_children = self.limit(i) as usize;
            if running > max_children {
                self.retire_surplus(i, running - max_children);
                continue;
            }
            if waiting == 0 && busy < running {
                // The episode of a full pool is over: nobody waits, a child is free.
                self.pools[i].reached_logged = false;
            }
            match c.pm {
                PmStyle::Static => {
                    for _ in running..max_children {
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
                        if running >= max_children {
                            self.note_max_children(i);
                            self.pools[i].spawn_rate = 1;
                            continue;
                        }
                        let want = (c.min_spare_servers as usize).saturating_sub(idle).max(usize::from(waiting > 0));
                        let n = want.min(self.pools[i].spawn_rate as usize).min(max_children - running);
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

    /// Children busy for a server process that is gone (killed mid-request)
    /// are killed in turn: nobody reads their answer, and left busy they
    /// would shrink the pool until request_terminate_timeout, or for good
    /// without one. Their replacement is the pool's usual one.
    fn stop_orphaned(&self, pool: usize) {
        for (&pid, &slot) in &self.pools[pool].children {
            if let Some(holder) = self.table.orphaned(pool, slot) {
                self.log.warn(&format!("[pool {}] child {pid}: server process {holder} that sent its request is gone, killing the child", self.pools[pool].config.name));
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }

    /// request_slowlog_timeout: a request running past it is counted (the
    /// status page's slow requests), logged as php-fpm logs it, and noted in
    /// the pool's slow log, once per request.
    fn note_slow(&mut self, pool: usize, limit: Duration, slowlog: &Path, now: u64) {
        let run = &mut self.pools[pool];
        for (&pid, &slot) in &run.children {
            let s = self.table.slot(pool, slot);
            let began = s.since_ms.load(Ordering::Relaxed);
            let running = now.saturating_sub(began);
            if s.state.load(Ordering::Acquire) != BUSY || running <= limit.as_millis() as u64 || run.slow_noted.get(&pid) == Some(&began) {
                continue;
            }
            run.slow_noted.insert(pid, began);
            self.table.counters(pool).slow_requests.fetch_add(1, Ordering::Relaxed);
            let (name, uri, secs) = (&run.config.name, s.uri(), running as f64 / 1000.0);
            self.log.warn(&format!("[pool {name}] child {pid}, request {uri} executing too slow ({secs:.3} sec), logging"));
            self.log.slow_request(slowlog, &format!("[pool {name}] pid {pid}\nrequest_uri = {uri}\nrunning for {secs:.3} sec (no backtrace: php-cgi cannot be traced as php-fpm traces its own children)"));
        }
        run.slow_noted.retain(|pid, _| run.children.contains_key(pid));
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
        self.save_peaks_at_stop();
        let all: Vec<i32> = self.runs().flat_map(|p| p.children.keys().copied()).collect();
        for &pid in &all {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = std::time::Instant::now() + wait;
        let mut left: Vec<i32> = all;
        while !left.is_empty() && std::time::Instant::now() < deadline {
            // What they print as they stop is logged, and a child blocked
            // on a full pipe can go on to its end.
            self.drain_output();
            left.retain(|&pid| !matches!(nix::sys::wait::waitpid(Pid::from_raw(pid), Some(nix::sys::wait::WaitPidFlag::WNOHANG)), Ok(nix::sys::wait::WaitStatus::Exited(..) | nix::sys::wait::WaitStatus::Signaled(..)) | Err(_)));
            std::thread::sleep(Duration::from_millis(20));
        }
        for &pid in &left {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
        }
        for (run, &pid) in self.runs().flat_map(|r| r.children.keys().map(move |p| (r, p))) {
            if run.config.runs_php_fpm() {
                end_session_of(pid);
            }
        }
        self.drain_output();
        self.flush_output(Duration::ZERO);
        for p in &mut self.pools {
            p.children.clear();
        }
        self.retired.clear();
        // Their processes gone, the pools' cgroups can be removed.
        self.cgroups = None;
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        // Each pool's directory in it goes with its pool.
        self.pools.clear();
        self.retired.clear();
        if let Some(d) = &self.ini_parent {
            let _ = std::fs::remove_dir(d);
        }
    }
}
