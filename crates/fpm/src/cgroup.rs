//! Each pool's processes in a memory cgroup of their own, a child of
//! warren's, so that when memory runs short the kernel reclaims, throttles
//! and, at worst, kills in the pool first: PHP children, which warren
//! replaces, rather than the database or warren beside them.
//!
//! cgroup v2: `<warren's cgroup>/warren-pools/<pool>`, with memory.high
//! (the kernel reclaims and throttles above it) and memory.max (above it,
//! the OOM killer chooses inside the pool). v2 puts processes in leaves
//! only: warren's cgroup must hold nothing but warren, which moves itself
//! to `<warren's cgroup>/warren` to enable the memory controller below.
//! cgroup v1: `<warren's memory cgroup>/warren-pools-<pid>/<pool>` with
//! memory.limit_in_bytes, and memory.soft_limit_in_bytes where the
//! kernel reclaims first when the machine is short.
//!
//! Every pool's child also raises its own oom_score_adj (to
//! [`OOM_SCORE_ADJ`]) before it drops root and runs PHP: were the kernel
//! to kill under warren's limit, it kills a PHP child.
//!
//! Where the cgroups cannot be made (no permission, no memory controller
//! delegated, other processes in warren's v2 cgroup), the pools run in
//! warren's cgroup, which [`Unavailable`] says at start and in
//! server-status.
//!
//! A pool's cgroup also bounds its tasks (the pids controller: the pool's
//! own cgroup in v2, `<warren's pids cgroup>/warren-pools-<pid>/<pool>`
//! in v1), so that a php-fpm master run at its ceiling cannot be made to
//! fork children past warren's count by scripts that go on running after
//! their answer (see `manager::sizing`'s `bound_tasks`). Where the pids
//! controller cannot be used, [`PoolCgroups::tasks_unbounded`] says why.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// What PHP children add to their OOM score (of -1000..1000): a PHP child
/// is chosen before any process without it, whatever their sizes.
pub const OOM_SCORE_ADJ: &str = "900";
/// A php-fpm master's: still before anything but PHP, after its children
/// (killing the master stops the whole pool until it is started again;
/// killing a child costs a request, and the master replaces it). Its
/// children inherit it at fork; warren raises each to [`OOM_SCORE_ADJ`].
pub const MASTER_OOM_SCORE_ADJ: &str = "800";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Why the pools share warren's cgroup; its code is stored in the shared
/// table for the status pages ([`Unavailable::code`], [`describe_code`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// warren is in no memory cgroup it can see (no controller mounted).
    NoController,
    /// Making the directory was refused (not root, not delegated).
    Refused(String),
    /// v2: warren's cgroup has processes other than warren's.
    NotALeafOfOurOwn(String),
}

impl Unavailable {
    pub fn code(&self) -> u32 {
        match self {
            Unavailable::NoController => 3,
            Unavailable::Refused(_) => 4,
            Unavailable::NotALeafOfOurOwn(_) => 5,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Unavailable::NoController => "no memory cgroup controller is mounted".to_string(),
            Unavailable::Refused(e) | Unavailable::NotALeafOfOurOwn(e) => e.clone(),
        }
    }
}

/// The status pages' words for a code kept in the shared table: 1 and 2
/// the versions, 3.. an [`Unavailable`].
pub fn describe_code(code: u32) -> &'static str {
    match code {
        1 => "v1 (a cgroup per pool)",
        2 => "v2 (a cgroup per pool)",
        3 => "none: no memory controller",
        4 => "none: not allowed to create cgroups",
        5 => "none: warren's v2 cgroup holds other processes",
        _ => "",
    }
}

/// The pools' cgroups, made under warren's own.
pub struct PoolCgroups {
    pub version: Version,
    /// The directory holding the pools' cgroups (removed when dropped).
    base: PathBuf,
    /// Where the pools' pids limits live, or why they have none.
    tasks: Result<TasksBase, String>,
    pools: HashMap<String, PoolCgroup>,
}

/// Where a pool's pids limit is.
enum TasksBase {
    /// v2: in the pool's own cgroup, the pids controller enabled beside memory.
    PoolCgroup,
    /// v1: a directory of the pids hierarchy (removed when dropped), a pool's below it.
    Hierarchy(PathBuf),
}

/// One pool's pids limit.
struct TaskLimit {
    /// Holds pids.max.
    dir: PathBuf,
    /// v1: its cgroup.procs, which a child joins as it joins the memory one.
    procs: Option<OwnedFd>,
    /// The limit last written, to write only changes.
    max: Option<u64>,
    /// Writing it failed; said once until it works again.
    refused: bool,
}

/// The descriptors a new child of a pool joins its cgroups through.
#[derive(Clone, Copy, Debug, Default)]
pub struct Joins {
    pub memory: Option<RawFd>,
    /// v1's pids hierarchy (v2's is the memory cgroup).
    pub tasks: Option<RawFd>,
}

/// One pool's cgroup.
pub struct PoolCgroup {
    pub dir: PathBuf,
    /// Its cgroup.procs, open for writing: a child forked for the pool
    /// writes "0" to it before it runs PHP, so that all it allocates is
    /// charged to the pool.
    procs: OwnedFd,
    /// The limit last written (hard), to write only changes.
    limit: Option<u64>,
    /// Writing the limit failed; said once until it works again.
    refused: bool,
    tasks: Option<TaskLimit>,
}

impl PoolCgroups {
    /// Makes the directory for the pools' cgroups under warren's memory cgroup.
    pub fn make() -> Result<PoolCgroups, Unavailable> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|_| Unavailable::NoController)?;
        let v2_root = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"].into_iter().map(Path::new).find(|r| controllers(r).iter().any(|c| c == "memory"));
        let v2_path = own.lines().find_map(|l| l.strip_prefix("0::")).map(|p| p.trim_start_matches('/').to_string());
        if let (Some(root), Some(rel)) = (v2_root, v2_path) {
            return PoolCgroups::make_v2(&root.join(rel));
        }
        let base = v1_pools_dir(&own, "memory").ok_or(Unavailable::NoController)?;
        make_dir(&base).map_err(Unavailable::Refused)?;
        let tasks = v1_pools_dir(&own, "pids").ok_or_else(|| "no pids cgroup controller is mounted".to_string()).and_then(|dir| make_dir(&dir).map(|()| TasksBase::Hierarchy(dir)));
        Ok(PoolCgroups { version: Version::V1, base, tasks, pools: HashMap::new() })
    }

    /// v2: warren's cgroup must be left with children only, warren in one
    /// of them, before the memory controller can be enabled for them.
    fn make_v2(own: &Path) -> Result<PoolCgroups, Unavailable> {
        let me = std::process::id().to_string();
        let members = std::fs::read_to_string(own.join("cgroup.procs")).unwrap_or_default();
        if let Some(other) = members.lines().find(|p| *p != me) {
            return Err(Unavailable::NotALeafOfOurOwn(format!("{} holds process {other} beside warren: cgroup v2 puts processes in leaves only, so pools cannot have cgroups below it", own.display())));
        }
        let server = own.join("warren");
        make_dir(&server).map_err(Unavailable::Refused)?;
        if let Err(e) = std::fs::write(server.join("cgroup.procs"), "0") {
            let _ = std::fs::remove_dir(&server);
            return Err(Unavailable::Refused(format!("cannot move warren to {}: {e}", server.display())));
        }
        let base = own.join("warren-pools");
        let enabled = std::fs::write(own.join("cgroup.subtree_control"), "+memory")
            .map_err(|e| format!("cannot enable the memory controller below {}: {e}", own.display()))
            .and_then(|()| make_dir(&base))
            .and_then(|()| std::fs::write(base.join("cgroup.subtree_control"), "+memory").map_err(|e| format!("cannot enable the memory controller below {}: {e}", base.display())));
        if let Err(e) = enabled {
            let _ = std::fs::write(own.join("cgroup.procs"), "0");
            let _ = std::fs::remove_dir(&server);
            let _ = std::fs::remove_dir(&base);
            return Err(Unavailable::Refused(e));
        }
        let tasks = enable_v2_pids(own, &base).map(|()| TasksBase::PoolCgroup);
        Ok(PoolCgroups { version: Version::V2, base, tasks, pools: HashMap::new() })
    }

    /// Why the pools' tasks are not bounded, if they are not.
    pub fn tasks_unbounded(&self) -> Option<&str> {
        self.tasks.as_ref().err().map(String::as_str)
    }

    pub fn code(&self) -> u32 {
        match self.version {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Pool `name`'s cgroup, made when first asked for. The name is the
    /// config's, a word ([A-Za-z0-9_.-]), so it is a directory's name.
    pub fn pool(&mut self, name: &str) -> Result<&mut PoolCgroup, String> {
        if !self.pools.contains_key(name) {
            if name.is_empty() || name.starts_with('.') || name.contains('/') {
                return Err(format!("no cgroup for a pool named {name:?}"));
            }
            let dir = self.base.join(name);
            make_dir(&dir)?;
            let procs = open_procs(&dir)?;
            let tasks = match &self.tasks {
                Ok(TasksBase::PoolCgroup) => Some(TaskLimit { dir: dir.clone(), procs: None, max: None, refused: false }),
                Ok(TasksBase::Hierarchy(base)) => {
                    let tasks_dir = base.join(name);
                    make_dir(&tasks_dir)?;
                    Some(TaskLimit { procs: Some(open_procs(&tasks_dir)?), dir: tasks_dir, max: None, refused: false })
                }
                Err(_) => None,
            };
            self.pools.insert(name.to_string(), PoolCgroup { dir, procs, limit: None, refused: false, tasks });
        }
        Ok(self.pools.get_mut(name).expect("made above"))
    }

    /// Whether pool `name` has a cgroup of its own.
    pub fn has(&self, name: &str) -> bool {
        self.pools.contains_key(name)
    }

    /// What pool `name`'s cgroup is charged ([`PoolCgroup::charged`]), if it has one.
    pub fn charged_of(&self, name: &str) -> Option<u64> {
        self.pools.get(name).map(|p| p.charged(self.version))
    }

    /// The descriptors a new child of pool `name` joins its cgroups through.
    pub fn joins(&self, name: &str) -> Joins {
        self.pools.get(name).map_or_else(Joins::default, |p| Joins { memory: Some(p.procs.as_raw_fd()), tasks: p.tasks.as_ref().and_then(|t| t.procs.as_ref()).map(AsRawFd::as_raw_fd) })
    }
}

impl PoolCgroup {
    /// Limits the pool to `soft` (reclaimed and throttled above it) and
    /// `hard` (the OOM killer chooses inside the pool above it). Written
    /// only when the hard limit moved by a megabyte or more; an error
    /// (the kernel could not reclaim down to a lower limit) is returned
    /// once, until a write works again.
    pub fn set_limits(&mut self, version: Version, soft: u64, hard: u64) -> Result<(), String> {
        if self.limit.is_some_and(|l| l.abs_diff(hard) < (1 << 20)) {
            return Ok(());
        }
        let files: [(&str, u64); 2] = match version {
            // high first when lowering, so that max is never below it.
            Version::V2 => [("memory.high", soft), ("memory.max", hard)],
            Version::V1 => [("memory.soft_limit_in_bytes", soft), ("memory.limit_in_bytes", hard)],
        };
        let mut result = Ok(());
        for (file, value) in files {
            if let Err(e) = std::fs::write(self.dir.join(file), value.to_string()) {
                result = Err(format!("cannot set {}/{file} to {value}: {e}", self.dir.display()));
            }
        }
        if result.is_ok() {
            self.limit = Some(hard);
        }
        said_once(&mut self.refused, result)
    }

    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Limits the pool's tasks (processes and threads) to `max`: a fork
    /// or a new thread past it fails (EAGAIN). Lowering it below what runs
    /// stops nothing. Written only when it changed (nothing to do for a
    /// pool without a pids limit); an error is returned once, until a
    /// write works again.
    pub fn set_tasks_max(&mut self, max: u64) -> Result<(), String> {
        let Some(t) = self.tasks.as_mut().filter(|t| t.max != Some(max)) else { return Ok(()) };
        let result = std::fs::write(t.dir.join("pids.max"), max.to_string()).map_err(|e| format!("cannot set {}/pids.max to {max}: {e}", t.dir.display()));
        if result.is_ok() {
            t.max = Some(max);
        }
        said_once(&mut t.refused, result)
    }

    /// The pool's tasks limit, as last written.
    pub fn tasks_max(&self) -> Option<u64> {
        self.tasks.as_ref().and_then(|t| t.max)
    }

    /// What the pool's processes are charged and cannot drop (`warren_memory::charged_in`).
    pub fn charged(&self, version: Version) -> u64 {
        warren_memory::charged_in(&self.dir, version == Version::V2)
    }

    /// Processes the kernel killed for the pool's own limit.
    pub fn oom_kills(&self, version: Version) -> u64 {
        let file = match version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        text.lines().find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok()).unwrap_or(0)
    }
}

impl Drop for PoolCgroups {
    /// Removes the pools' cgroups, their processes gone (the manager
    /// stops them first): a few tries, for the kernel to finish with the
    /// last ones.
    fn drop(&mut self) {
        let v1_tasks = match &self.tasks {
            Ok(TasksBase::Hierarchy(base)) => Some(base.clone()),
            _ => None,
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (_, p) in self.pools.drain() {
            dirs.extend(p.tasks.filter(|t| t.procs.is_some()).map(|t| t.dir));
            dirs.push(p.dir);
        }
        dirs.extend(v1_tasks.into_iter().chain([self.base.clone()]));
        for dir in dirs {
            for _ in 0..50 {
                match std::fs::remove_dir(&dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        }
        if self.version == Version::V2 {
            // warren back where it was; its leaf goes.
            if let Some(own) = self.base.parent() {
                let _ = std::fs::write(own.join("cgroup.procs"), "0");
                let _ = std::fs::remove_dir(own.join("warren"));
            }
        }
    }
}

/// v2: the pids controller enabled below warren's cgroup `own` and the
/// pools' `base`, beside memory.
fn enable_v2_pids(own: &Path, base: &Path) -> Result<(), String> {
    if !controllers(own).iter().any(|c| c == "pids") {
        return Err(format!("the pids controller is not delegated to {}", own.display()));
    }
    for dir in [own, base] {
        std::fs::write(dir.join("cgroup.subtree_control"), "+pids").map_err(|e| format!("cannot enable the pids controller below {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// v1: the pools' directory (not made yet) in `controller`'s hierarchy,
/// below warren's own cgroup there as `own` (/proc/self/cgroup) names it;
/// None when that hierarchy is not mounted.
fn v1_pools_dir(own: &str, controller: &str) -> Option<PathBuf> {
    let rel = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == controller).then(|| path.trim_start_matches('/').to_string())
    })?;
    let root = Path::new("/sys/fs/cgroup").join(controller);
    root.join("cgroup.procs").exists().then(|| root.join(rel).join(format!("warren-pools-{}", std::process::id())))
}

fn open_procs(dir: &Path) -> Result<OwnedFd, String> {
    nix::fcntl::open(&dir.join("cgroup.procs"), OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty()).map_err(|e| format!("cannot open {}/cgroup.procs: {e}", dir.display()))
}

/// A write's `result`, an error passed on only the first time in a row
/// (`refused` remembers it), so that a limit the kernel keeps refusing is
/// logged once, not at every pass.
fn said_once(refused: &mut bool, result: Result<(), String>) -> Result<(), String> {
    let first = !*refused;
    *refused = result.is_err();
    match result {
        Err(e) if first => Err(e),
        _ => Ok(()),
    }
}

fn controllers(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default().split_whitespace().map(str::to_string).collect()
}

fn make_dir(dir: &Path) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("cannot create the cgroup {}: {e}", dir.display())),
    }
}

/// What a pool's child does between fork and exec, before it drops root:
/// raises its OOM score and joins its pool's cgroups through `joins`.
/// Async-signal-safe: open, write and close of what was prepared before
/// the fork. Neither is a reason not to serve: a child that cannot join
/// stays in warren's cgroup (the parent said at start why there are none).
pub fn join_in_child(joins: Joins, oom_score_adj: &'static str) {
    // SAFETY: plain system calls on a static path and on a descriptor the
    // parent keeps open; nothing allocates.
    unsafe {
        let fd = libc::open(c"/proc/self/oom_score_adj".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, oom_score_adj.as_ptr().cast(), oom_score_adj.len());
            libc::close(fd);
        }
        for fd in [joins.memory, joins.tasks].into_iter().flatten() {
            libc::write(fd, b"0".as_ptr().cast(), 1);
        }
    }
}

/// Raises process `pid` (a php-fpm master's child, forked with its
/// master's score) to [`OOM_SCORE_ADJ`], if it is not there yet.
pub fn raise_oom_score(pid: i32) {
    let path = format!("/proc/{pid}/oom_score_adj");
    if std::fs::read_to_string(&path).is_ok_and(|v| v.trim() != OOM_SCORE_ADJ) {
        // A child that has just exited: nothing to raise.
        let _ = std::fs::write(&path, OOM_SCORE_ADJ);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_said_once_in_a_row() {
        let mut refused = false;
        assert!(said_once(&mut refused, Err("no".into())).is_err());
        assert!(said_once(&mut refused, Err("no".into())).is_ok(), "said already");
        assert!(said_once(&mut refused, Ok(())).is_ok());
        assert!(said_once(&mut refused, Err("no".into())).is_err(), "refused again after working");
    }

    #[test]
    fn codes_have_words() {
        for u in [Unavailable::NoController, Unavailable::Refused("x".into()), Unavailable::NotALeafOfOurOwn("y".into())] {
            assert!(describe_code(u.code()).starts_with("none: "), "{u:?}");
        }
        assert!(describe_code(1).starts_with("v1") && describe_code(2).starts_with("v2") && describe_code(0).is_empty());
    }
}
