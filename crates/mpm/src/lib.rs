//! Processes, threads, sockets and connection lifecycles.
//!
//! - [`listen`]: listening sockets, bound by the parent before it forks, and
//!   a one-syscall accept.
//! - [`parent`]: the [`Parent`] process: PidFile, forking children,
//!   replacing the ones that die, stopping them on TERM/INT.
//! - [`event`]: the event MPM's child: an [`EventLoop`] owning every
//!   connection of the child (idle keep-alive ones cost no thread), serving
//!   what cannot block on the loop and giving the rest to
//! - [`pool`]: the child's worker threads.
//!
//! The HTTP rules come from `warren-http`; what to answer comes from
//! `warren-handler`. This crate only moves bytes and manages processes.

pub mod event;
pub mod exchange;
pub mod listen;
pub mod parent;
pub mod pool;

pub use event::EventLoop;
pub use listen::{bind, Listener};
pub use parent::Parent;
