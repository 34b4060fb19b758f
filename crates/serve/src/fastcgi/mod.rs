//! FastCGI as the MPMs drive it (what to send and how to read the answer
//! comes from `warren-handler`'s FastCGI code; this is the connection side).
//!
//! - [`on_thread`]: an exchange on a thread that owns the client connection
//!   while it lasts (prefork, worker, and an event child's thread pool).
//! - [`on_loop`]: an exchange the event loop drives without blocking (an
//!   [`on_loop::Upstream`]), for requests without a body or with a small one
//!   the loop has read whole.
//! - [`pool_wait`]: event-loop requests parked until a child of one of
//!   warren's own pools is free.
//! - [`sink`]: the HTTP/1.1 writer as the sink of an answer's body.
//! - [`spill`]: what a slow client has not taken yet of an answer read at
//!   the application's pace.

pub mod on_loop;
pub mod on_thread;
pub mod pool_wait;
pub mod sink;
pub mod spill;
