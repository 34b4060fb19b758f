//! The interface between warren's server and a process manager for
//! FastCGI pools (`SetHandler pool:NAME`), so that neither knows the
//! other's crate: the handler and the MPMs use it, `fpm` implements it,
//! and the binary connects the two. Its only dependency is `config` (the
//! `<Pool>` sections a manager is made from).
//!
//! - [`PoolDispatch`]: how a request gets one of a pool's children (a
//!   [`PoolLease`], given back when dropped), or why it could not
//!   ([`PoolBusy`]); and a pool's figures for its status page.
//! - [`PoolStatus`] and [`ProcessStatus`]: those figures, in php-fpm's
//!   terms.
//! - [`ManagerLog`]: where the manager writes what it has to say (the
//!   server's error log).
//! - [`manager`]: the parent's side, [`ProcessManager`] (start, reload,
//!   maintain, reap, stop), made by a [`MakeManager`] that the binary
//!   hands to the parent; and [`ServerUser`], whom pools run as by default.

pub mod manager;

pub use manager::{MakeManager, ProcessManager, ServerUser};

use std::path::Path;
use std::time::Duration;

/// Where `SetHandler pool:NAME` requests get a child: warren's own pools
/// (the `fpm` crate), set up before the server's children start.
pub trait PoolDispatch: Send + Sync {
    /// An idle child of the pool for a request for `uri`, waiting at most
    /// `wait` for one.
    fn lease(&self, pool: &str, uri: &[u8], wait: Duration) -> Result<Box<dyn PoolLease>, PoolBusy>;
    /// An idle child now, or None (without queueing): for the event loop,
    /// which must not wait.
    fn try_lease(&self, pool: &str, uri: &[u8]) -> Option<Box<dyn PoolLease>>;
    /// Counts a request into the pool's queue without waiting there (the
    /// event loop parks it); an error when the queue is full.
    fn join_queue(&self, pool: &str) -> Result<(), PoolBusy>;
    fn leave_queue(&self, pool: &str);
    /// Sleeps until a child of the pool is given back or started, at most `timeout`.
    fn wait_for_child(&self, pool: &str, timeout: Duration);
    /// The pool's figures for its status page.
    fn status(&self, pool: &str) -> Option<PoolStatus>;
    /// The pool of `user`'s scripts, asking the manager to make it if the
    /// account is newer than the pools (it then checks the account as at
    /// start, and a request for the pool waits until it is made); None if
    /// it was refused or there is no room.
    fn ask_user_pool(&self, user: &str) -> Option<String>;
    /// Whether the pool runs, or is being made (a user's pool asked for):
    /// false once the manager refused to make it.
    fn knows(&self, pool: &str) -> bool;
    /// The memory budget and the pools sized by it (`pm.max_children
    /// auto`); None while no pool has been sized.
    fn memory(&self) -> Option<MemoryBudget>;
}

/// A pool's child, taken for one request; dropping it gives the child back.
pub trait PoolLease: Send {
    /// The child's FastCGI socket.
    fn socket(&self) -> &Path;
    /// Whether the manager killed the child for request_terminate_timeout.
    fn terminated(&self) -> bool;
}

/// Why no child could be had.
#[derive(Debug, PartialEq, Eq)]
pub enum PoolBusy {
    /// As many requests wait as the pool's listen.backlog allows.
    QueueFull,
    /// None became free within the wait.
    Timeout,
    Unknown,
}

/// A pool's figures, as the process manager reports them.
#[derive(Debug, Default)]
pub struct PoolStatus {
    pub pool: String,
    pub process_manager: String,
    /// Seconds since the epoch.
    pub start_time: u64,
    pub accepted_conn: u64,
    pub listen_queue: u32,
    pub max_listen_queue: u32,
    pub listen_queue_len: u32,
    pub idle_processes: u32,
    pub active_processes: u32,
    pub max_active_processes: u32,
    pub max_children_reached: u32,
    pub slow_requests: u32,
    pub processes: Vec<ProcessStatus>,
    /// With pm.max_children auto: the budget, and this pool's figures alone
    /// in its `pools`.
    pub memory: Option<MemoryBudget>,
}

/// The memory budget that sizes pools with `pm.max_children auto`, and the
/// figures behind their counts, in bytes.
#[derive(Clone, Debug, Default)]
pub struct MemoryBudget {
    /// Where the limit comes from: "MemoryBudget", "cgroup v2", "cgroup v1" or "machine".
    pub source: &'static str,
    pub limit: u64,
    pub headroom: u64,
    /// What the rest is given (its peak and a margin for growth), and uses
    /// now: other processes under the same limit, warren's own.
    pub others: u64,
    pub others_now: u64,
    /// The pools' memory cgroups: "v1 (a cgroup per pool)", or "none: " and why.
    pub cgroups: &'static str,
    /// The pools stop growing (the kernel reports memory pressure, or the
    /// limit is near).
    pub pressure: bool,
    /// Passes that measured the pools and applied their counts (stopped
    /// their surplus, set their limits) since start.
    pub passes: u64,
    pub pools: Vec<PoolMemory>,
}

#[derive(Clone, Debug, Default)]
pub struct PoolMemory {
    pub pool: String,
    pub max_children: u32,
    /// What one more child adds.
    pub per_child: u64,
    /// What the pool costs whatever its count (php-fpm's master, the shared opcache).
    pub fixed: u64,
    /// What the pool uses now.
    pub used: u64,
    /// The largest child's peak the count was made from, before the margin.
    pub peak_child: u64,
    /// The limit of the pool's memory cgroup (0: none).
    pub cgroup_limit: u64,
    /// A php-fpm pool's pids limit: its master, children and their threads (0: none).
    pub tasks_limit: u64,
    /// Children replaced after their request for having outgrown what a
    /// child was counted at.
    pub recycled: u32,
    /// The child peak the pool's last run learned, kept across the restart,
    /// while the count is made with it (0: not remembered).
    pub remembered_peak: u64,
}

#[derive(Debug, Default)]
pub struct ProcessStatus {
    pub pid: i32,
    /// "Idle" or "Running".
    pub state: &'static str,
    pub start_time: u64,
    pub requests: u32,
    /// Of the request running now, or else of the last one, in microseconds.
    pub request_duration_us: u64,
    pub request_uri: String,
    /// The process's resident memory now, in bytes (php-cgi does not report
    /// a request's peak as php-fpm's own children do).
    pub last_request_memory: u64,
}

/// Where a process manager writes what it has to say (a child that cannot
/// start, a child's exit, a pool at pm.max_children, what the children
/// print): the server's error log; and its pools' slow logs.
pub trait ManagerLog: Send + Sync {
    fn warn(&self, message: &str);
    fn error(&self, message: &str);
    /// What the server decided and why (a pool's size): logged whatever
    /// LogLevel says, as Apache logs its notices.
    fn notice(&self, message: &str);
    /// Appends `entry` to a pool's slow log (`slowlog`), after the time.
    fn slow_request(&self, slowlog: &Path, entry: &str);
}
