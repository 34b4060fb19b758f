//! Processes, threads, sockets and connection lifecycles.
//!
//! - [`listen`]: listening sockets, bound by the parent before it forks, and
//!   a one-syscall accept.
//! - [`parent`]: the [`Parent`] process, the same for every MPM: PidFile,
//!   forking children, Apache's spare maintenance, signals, graceful restart.
//! - [`scoreboard`]: shared memory with one slot per worker, written by the
//!   children, read by the parent's maintenance and by server-status.
//! - [`exchange`]: one request/response on a connection: encoding a
//!   response plan, writing it, the access log line. Shared by all MPMs.
//! - [`event`]: the event MPM's child: an [`EventLoop`] owning every
//!   connection of the child (idle keep-alive ones cost no thread), serving
//!   what cannot block on the loop and giving the rest to [`pool`], its
//!   worker threads. [`spread`] decides which event children accept, so
//!   that one loop is filled before another is woken.
//! - [`blocking`]: one connection served by one thread with blocking I/O,
//!   used by [`prefork`] (one per child) and [`worker`] (ThreadsPerChild
//!   threads fed by a listener thread).
//! - FastCGI: [`gateway`] runs an exchange on a thread that owns the
//!   connection (prefork, worker, and event for requests with a body);
//!   [`upstream`] relays one on the event loop without blocking; and
//!   [`pool_wait`] parks event-loop requests waiting for a child of one of
//!   warren's own pools; both read the application's answer at its own
//!   pace, holding what a slow client has not taken yet in a [`spill`].
//!
//! The HTTP rules come from `warren-http`; what to answer comes from
//! `warren-handler`. This crate only moves bytes and manages processes.

pub mod blocking;
pub mod event;
pub mod exchange;
pub mod gateway;
pub mod listen;
pub mod parent;
pub mod pool;
pub mod pool_wait;
pub mod prefork;
pub mod scoreboard;
pub mod spill;
pub mod spread;
pub mod upstream;
pub mod worker;

pub use event::EventLoop;
pub use listen::{bind, Listener};
pub use parent::Parent;
