//! HTTP/1.1 (RFC 9112) as one sans-IO connection, beside [`crate::h2`]:
//! the driver reads into the [`Connection`]'s buffer (or feeds it bytes),
//! asks it for the next head or the next piece of a body, asks it when to
//! give up waiting ([`Connection::deadline`], [`Connection::timed_out`]),
//! writes each response head with [`write_response_head`] and tells it a
//! response went out ([`Connection::after_response`]), which decides
//! keep-alive, a pipelined next head, a lingering close or a close.
//!
//! - [`connection`]: the [`Connection`] and what it reports.
//! - [`framing`]: a response head, written whole, with its framing
//!   (Content-Length, chunked, or the close for HTTP/1.0) and its
//!   Connection field.
//!
//! The blocking driver (prefork, worker) and the event loop both move bytes
//! through this, so a rule of HTTP/1.1 exists once; nothing here touches a
//! socket, so its unit tests feed bytes in any pieces.

pub mod connection;
pub mod framing;

pub use connection::{BodyState, BodyStep, Connection, Expiry, Poll};
pub use framing::{frame_response, write_response_head, BodyFramer, BodyLength, Framing, ResponseHead, ShortBody};

#[cfg(test)]
mod tests;
