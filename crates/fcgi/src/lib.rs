//! FastCGI 1.0, shared by the FastCGI proxy, the process manager and tests.
//!
//! - [`record`]: the wire format: [`record::Header`], [`record::RecordType`]
//!   (every type of the specification), BEGIN_REQUEST/END_REQUEST bodies,
//!   name-value pairs with 1- and 4-byte lengths, padding, and a
//!   [`record::RecordReader`] that splits a byte stream into records.
//! - [`client`]: [`Client`], one request at a time over a stream: CGI
//!   variables and body out, [`Event`]s (stdout, stderr, end) back; requests
//!   may share a connection with FCGI_KEEP_CONN; and
//!   [`client::multiplexes`], FCGI_GET_VALUES for FCGI_MPXS_CONNS.

pub mod client;
pub mod record;

pub use client::{Client, Event};
pub use record::{ProtocolStatus, RecordReader, RecordType};
