//! warren's own FastCGI process manager, in the manner of php-fpm and
//! mod_fcgid: pools of worker processes started from a command (php-cgi),
//! each child listening on its own unix socket that it gets as standard
//! input, as FastCGI programs expect; or, for a pool whose command is
//! php-fpm, one php-fpm master that warren configures and supervises, whose
//! children share one opcache and one socket.
//!
//! It implements the interface of `warren-pool-api` ([`table::Dispatch`] is
//! its `PoolDispatch`) and writes to the server's error log through its
//! `ManagerLog`, so it knows nothing of the handler; its table lives in a
//! `warren-shm` mapping.
//!
//! - [`table`]: the [`table::Table`] in shared memory that every warren
//!   process sees: per pool its counters, per child slot its state (idle,
//!   busy, retiring), pid and request count. A request takes an idle child
//!   with a [`table::Lease`] (an atomic compare-and-swap; no fork, no round
//!   trip to the parent) and gives it back when its answer is read; with
//!   none idle it waits in a bounded queue, then gets 503.
//! - [`manager`]: the parent's side ([`manager::Manager`]): the sockets, the
//!   children (started as the pool's User with a clean environment), their
//!   replacement when they die or reach pm.max_requests, and php-fpm's
//!   maintenance once a second (static, dynamic, ondemand).
//!   `manager::php_fpm`: a php-fpm pool's master, its configuration
//!   written from the `<Pool>` into a sealed memfd.
//!   `manager::sizing`: `pm.max_children auto`, the pools sized to the
//!   memory budget (read by the `warren-memory` crate) from their
//!   children's measured sizes.
//!   `manager::setup`: how a pool's processes are set apart (credentials,
//!   the private socket directory, what a child does before exec).
//!   `manager::user_pools`: users' pools made while warren runs.
//! - [`cgroup`]: each pool in a memory cgroup of its own below warren's,
//!   and its children first in line for the OOM killer.
//! - [`asked`]: the records of users' pools asked for by requests while
//!   warren runs (an account made after start), and made by the parent;
//!   a child asks and finds them through the table's `ask`, `pending`, `ready_shape`.
//! - [`shape`]: a pool's place in the table, as every process knows it.
//! - `output`: what the pools' children print, through a pipe per pool,
//!   logged line by line by the parent.

pub mod asked;
pub mod cgroup;
pub mod manager;
mod output;
pub mod shape;
pub mod table;

pub use manager::{Manager, ServerUser};
pub use table::Table;
