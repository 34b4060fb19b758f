//! Processes, threads, sockets and connection lifecycles.
//!
//! - [`listen`]: listening sockets, bound by the parent before it forks, and
//!   a one-syscall accept.
//! - [`parent`]: the [`Parent`] process, the same for every MPM: PidFile,
//!   forking children, Apache's spare maintenance, signals, graceful restart;
//!   `log_relay` carries the children's log lines to its terminal;
//!   `worker_budget` sizes the children to the memory budget
//!   (`MaxRequestWorkers auto`, read by `warren-memory`). The pools' process
//!   manager is a `pool-api` `ProcessManager` the binary hands it (fpm's):
//!   this crate does not depend on `fpm`.
//! - [`scoreboard`]: shared memory with one slot per serving thread, written by the
//!   children, read by the parent's maintenance and by server-status;
//!   [`metrics_board`]: its counters for `SetHandler metrics`.
//! - [`exchange`]: one request/response on a connection: encoding a
//!   response plan, writing it, the access log line. Shared by all MPMs.
//! - [`event`]: the event MPM's child: an [`EventLoop`] owning every
//!   connection of the child (idle keep-alive ones cost no thread), serving
//!   what cannot block on the loop and giving the rest to its
//!   [`event::thread_pool`]. [`spread`] decides which event children accept,
//!   so that one loop is filled before another is woken.
//! - [`blocking`]: the blocking [`blocking::Driver`]: one connection at a
//!   time served by one thread with blocking I/O, used by [`prefork`] (one
//!   per child) and [`worker`] (ThreadsPerChild threads fed by a listener
//!   thread). [`client_body`] is how such a thread reads a request body.
//! - [`h2`]: HTTP/2 connections: a connection's streams between the codec
//!   and the handler (`h2::session`), served by a blocking thread
//!   (`h2::blocking`) or by the event loop (`event::h2`).
//! - [`fastcgi`]: FastCGI exchanges, on a thread that owns the connection
//!   or on the event loop without blocking, requests parked for a pool's
//!   child, the HTTP/1.1 writer as the sink of an answer's body, and the
//!   spill that holds what a slow client has not taken yet.
//!
//! - [`systemd`]: what systemd passes a service (the notification socket,
//!   the watchdog, socket activation's listening sockets); the parent's
//!   notifications are `parent::readiness`.
//! - `proxy_header`: the PROXY protocol header a listener with
//!   RemoteIPProxyProtocol On reads before HTTP, for both kinds of driver.
//!
//! The HTTP rules come from `warren-http`: both kinds of driver move an
//! HTTP/1.1 connection's bytes through one `warren_http::h1::Connection`
//! (heads, bodies, clocks, keep-alive, pipelining, lingering) and frame
//! responses with `warren_http::h1::frame_response`; what to answer comes from
//! `warren-handler`. Besides moving bytes and managing processes, this
//! crate starts each request (`exchange`: keep-alive, the handler's call,
//! the access log) and does the I/O of FastCGI exchanges for each driver
//! and protocol (`fastcgi`, `event::fastcgi_relay`, `event::h2_relay`):
//! it moves the application's bytes into `warren_handler::fastcgi::Answer`
//! and gives it a sink (`fastcgi::sink::H1Sink`, an HTTP/2 stream's
//! `h2::body_plan::Fed`); what the answer means is decided there.

pub mod blocking;
pub mod client_stream;
mod ktls;
mod proxy_header;
pub mod client_body;
pub mod event;
pub mod exchange;
pub mod fastcgi;
pub mod h2;
pub mod listen;
pub mod metrics_board;
mod log_relay;
pub mod parent;
pub mod prefork;
pub mod scoreboard;
pub mod serve;
pub mod spread;
pub mod systemd;
mod worker_budget;
pub mod worker;

pub use event::EventLoop;
pub use listen::{bind, Listener};
pub use parent::Parent;
