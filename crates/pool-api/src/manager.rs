//! The process manager as the server's parent sees it: the pools' sockets
//! and children, run from the parent's loop. The binary makes it (with
//! [`MakeManager`]) and hands it to the parent, so that the parent knows no
//! process manager's crate; the requests reach the pools through the
//! [`PoolDispatch`] it gives.

use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::time::Duration;

use warren_config::mass::RuntimeUsers;
use warren_config::PoolConfig;

use crate::{ManagerLog, PoolDispatch};

/// Makes a process manager for `pools` (the `<Pool>` sections): their
/// sockets and the shared table, no children yet. The sockets are the
/// server children's (`server`'s account, when warren is root); each
/// pool's children run as its `User`, else as `server`. `memory_budget`:
/// MemoryBudget, for pools with pm.max_children auto, whose learned peaks
/// are kept beside `pid_file`.
pub type MakeManager = fn(pools: &[PoolConfig], server: ServerUser, memory_budget: Option<u64>, pid_file: Option<&std::path::Path>, log: Arc<dyn ManagerLog>) -> Result<Box<dyn ProcessManager>, String>;

/// The server's `User` and `Group` as configured: a pool without `User`
/// runs as them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerUser {
    pub user: Option<String>,
    pub group: Option<String>,
}

/// The parent's side of a process manager. Every call comes from the
/// parent's single thread.
pub trait ProcessManager {
    /// Starts the pools' children (pm.start_servers, and php-fpm masters).
    fn start(&mut self);
    /// A graceful restart: pools whose settings did not change keep their
    /// children; new and changed pools start theirs now, before the new
    /// server children take requests; replaced pools stay until the
    /// previous generation is gone ([`ProcessManager::previous_generation_gone`]).
    /// An error leaves the running pools as they were.
    fn reload(&mut self, pools: &[PoolConfig], server: ServerUser, memory_budget: Option<u64>) -> Result<(), String>;
    /// The users whose pools are made while warren runs (UserDir), if any
    /// host makes them.
    fn set_user_pools(&mut self, users: Option<RuntimeUsers>);
    /// Where the manager logs from now on (after a reload or a reopen).
    fn set_log(&mut self, log: Arc<dyn ManagerLog>);
    /// How requests get the current pools' children.
    fn dispatch(&self) -> Arc<dyn PoolDispatch>;
    /// Readable when a request wants the manager (no idle child):
    /// the parent polls it and then calls [`ProcessManager::wake`].
    fn wake_fd(&self) -> BorrowedFd<'_>;
    /// A request woke the manager: retire children that are due, start
    /// children for waiting requests.
    fn wake(&mut self);
    /// The once-a-second pass (spare children, pm.max_children auto).
    fn maintain(&mut self);
    /// The pipes the pools' children print to, for the parent to poll.
    fn output_fds(&self) -> Vec<BorrowedFd<'_>>;
    /// Logs what the pools' children printed, so that none waits on a full
    /// pipe.
    fn drain_output(&mut self);
    /// In a server child just forked: closes the pipes' ends that only the
    /// parent reads.
    fn close_output_in_child(&mut self);
    /// Process `pid` ended (`how`: "exit status N", "signal S"). False if
    /// it was not one of the pools'.
    fn reaped(&mut self, pid: i32, how: &str) -> bool;
    /// The last server child of an earlier configuration is gone: the pools
    /// it replaced (and their users) may go.
    fn previous_generation_gone(&mut self);
    /// The pools in a few words, for the start notice.
    fn describe(&self) -> String;
    /// Stops every child: TERM, then KILL after `wait`.
    fn stop(&mut self, wait: Duration);
}
