//! The process model: processes, the scoreboard and listening sockets. No
//! HTTP here: what a server child does with its connections is
//! `warren-serve`'s, which sits above this crate; the binary hands the
//! [`Parent`] that crate's child loop as a [`parent::ServeChild`].
//!
//! - [`listen`]: listening sockets, bound by the parent before it forks, and
//!   a one-syscall accept.
//! - [`parent`]: the [`Parent`] process, the same for every MPM: PidFile,
//!   forking children (a child's start: session, `User`, signals, then the
//!   injected loop), Apache's spare maintenance, signals, graceful restart;
//!   `log_relay` carries the children's log lines to its terminal;
//!   `worker_budget` sizes the children to the memory budget
//!   (`MaxRequestWorkers auto`, read by `warren-memory`). The pools' process
//!   manager is a `pool-api` `ProcessManager` the binary hands it (fpm's):
//!   this crate does not depend on `fpm`.
//! - [`scoreboard`]: shared memory with one slot per serving thread, written by the
//!   children, read by the parent's maintenance and by server-status
//!   (prefork's accept turns live here too);
//!   [`metrics_board`]: its counters for `SetHandler metrics`, summed for a
//!   scrape by [`metrics_scrape`]; `board_text`: text in its atomic words.
//! - [`spread`]: which event children accept, so that one loop is filled
//!   before another is woken (decided by the parent, obeyed by the loops).
//! - [`systemd`]: what systemd passes a service (the notification socket,
//!   the watchdog, socket activation's listening sockets); the parent's
//!   notifications are `parent::readiness`.
//!
//! It still reads the handler's `Site` (settings, logs, server-status and
//! metrics sources) but never calls it to serve a request.

mod board_text;
pub mod listen;
pub mod metrics_board;
pub mod metrics_scrape;
mod log_relay;
pub mod parent;
pub mod scoreboard;
pub mod spread;
pub mod systemd;
mod worker_budget;

pub use listen::{bind, Listener};
pub use parent::Parent;

/// How long a server child told to stop (SIGTERM, not gracefully) lets
/// what it serves go on before it closes the rest and exits (at most: the
/// request Timeout when shorter). The parent waits longer than this before
/// it kills a child ([`parent`]'s stop wait is derived from it), so that a
/// child that keeps to its deadline is never killed for being a little late.
pub const CHILD_STOP_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
