//! Connection serving: what a server child does with its connections.
//! The processes, the scoreboard and the listening sockets are
//! `warren-mpm`'s, below this crate; the binary gives its parent
//! [`child::run`] to run in each child it forks.
//!
//! - [`child`]: a child's serving, by MPM: [`prefork`] (one connection at a
//!   time, children taking turns at the listeners), [`worker`]
//!   (ThreadsPerChild threads fed by a listener thread) or the [`event`] loop;
//!   each reopens its logs after a rotation through `log_rotation`.
//! - [`client_stream`]: a client's connection as the drivers read and write
//!   it (plain TCP, or TLS over it, `ktls` after the handshake), and
//!   [`client_stream::AcceptClient`], accepting from `warren-mpm`'s listeners.
//!   `proxy_header`: the PROXY protocol header a listener with
//!   RemoteIPProxyProtocol On reads before HTTP, for both kinds of driver.
//! - [`serve`]: the serving module, the same for every driver and protocol:
//!   a request's start, the handler's call, its outcome.
//! - [`exchange`]: one request/response on a connection: encoding a
//!   response plan, writing it, the access log line.
//! - [`blocking`]: the blocking [`blocking::Driver`]: one connection at a
//!   time served by one thread with blocking I/O, used by [`prefork`] and
//!   [`worker`]. [`client_body`] is how such a thread reads a request body.
//! - [`event`]: the event MPM's child: an [`EventLoop`] owning every
//!   connection of the child (idle keep-alive ones cost no thread), serving
//!   what cannot block on the loop and giving the rest to its
//!   [`event::thread_pool`]; `warren-mpm`'s `spread` decides which loops
//!   accept.
//! - [`h2`]: HTTP/2 connections: a connection's streams between the codec
//!   and the handler (`h2::session`), served by a blocking thread
//!   (`h2::blocking`) or by the event loop (`event::h2`).
//! - [`fastcgi`]: FastCGI exchanges, on a thread that owns the connection
//!   or on the event loop without blocking, requests parked for a pool's
//!   child, the HTTP/1.1 writer as the sink of an answer's body, and the
//!   spill that holds what a slow client has not taken yet.
//!
//! The HTTP rules come from `warren-http`: both kinds of driver move an
//! HTTP/1.1 connection's bytes through one `warren_http::h1::Connection`
//! (heads, bodies, clocks, keep-alive, pipelining, lingering) and frame
//! responses with `warren_http::h1::frame_response`; what to answer comes from
//! `warren-handler`. Besides moving bytes, this crate starts each request
//! (`serve`, `exchange`: keep-alive, the handler's call, the access log)
//! and does the I/O of FastCGI exchanges for each driver and protocol
//! (`fastcgi`, `event::fastcgi_relay`, `event::h2_relay`): it moves the
//! application's bytes into `warren_handler::fastcgi::Answer` and gives it
//! a sink (`fastcgi::sink::H1Sink`, an HTTP/2 stream's
//! `h2::body_plan::Fed`); what the answer means is decided there. The
//! loop's HTTP proxy relay (`event::proxy_relay`) and WebSocket tunnels
//! (`event::ws_tunnel`) drive `warren-handler`'s sans-IO proxy the same way.

pub mod blocking;
pub mod child;
pub mod client_body;
pub mod client_stream;
pub mod event;
pub mod exchange;
pub mod fastcgi;
pub mod h2;
mod ktls;
mod log_rotation;
pub mod prefork;
mod proxy_header;
pub mod serve;
pub mod worker;

pub use event::EventLoop;
