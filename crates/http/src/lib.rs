//! HTTP/1.1 without I/O: the protocol core every MPM shares.
//!
//! - [`request`]: bytes -> [`RequestHead`] (request line, header fields, and
//!   the framing and connection facts derived from them), or an
//!   [`HttpError`] carrying the status RFC 9112 prescribes.
//! - [`head_scan`]: [`HeadScan`], where a head's lines are found, its
//!   request line checked and its [`HeadLimits`] applied as it arrives,
//!   each byte once; `parse_head_from` resumes it and tokenises the fields
//!   once the head is complete.
//! - [`error`]: [`HttpError`]; [`version`]: [`Version`]: the two every
//!   layer below shares.
//! - [`body`]: [`BodyDecoder`] for Content-Length and chunked bodies, fed
//!   incrementally.
//! - [`response`]: status lines and header fields written into a buffer, and
//!   the once-a-second [`DateCache`].
//! - [`conn`]: the rules of a connection: its [`Phase`]s, the
//!   [`ConnRules`] it is read under (head limits, Timeout,
//!   RequestReadTimeout, the [`KeepAlivePolicy`] with KeepAliveTimeout),
//!   LimitRequestBody's 413, and what [`Next`] after a response: keep-alive,
//!   a lingering close ([`LINGER`]) or a close.
//! - [`read_timeout`]: RequestReadTimeout's rule ([`ReadTimeout`]: an
//!   initial timeout raised by MinRate, up to a maximum) and the
//!   [`ReadClock`] that applies it, with Timeout, to a head or a body.
//!
//! - [`h1`]: HTTP/1.1 as one sans-IO [`h1::Connection`] built on the above:
//!   input in, heads and body pieces out, response framing, deadlines and
//!   what follows a response. Every MPM driver moves bytes through it.
//!
//! - [`h2`]: HTTP/2 (RFC 9113) and HPACK, a codec of its own beside
//!   HTTP/1.1 whose requests are the same [`RequestHead`]s.
//!
//! - [`proxy_protocol`]: the PROXY protocol header (v1 and v2) a proxy
//!   may send before HTTP, with the client's address.
//!
//! Nothing here touches a socket, so a blocking MPM and the event loop drive
//! the same code, and apply the same rules.

pub mod body;
pub mod conn;
pub mod error;
pub mod h1;
pub mod h2;
pub mod head_scan;
pub mod proxy_protocol;
pub mod read_timeout;
pub mod request;
pub mod response;
pub mod version;

pub use body::BodyDecoder;
pub use conn::{ConnRules, KeepAlivePolicy, Next, Phase, DRAIN_IDLE, LINGER};
pub use error::HttpError;
pub use head_scan::{HeadLimits, HeadScan};
pub use read_timeout::{ReadClock, ReadTimeout, Stage as ReadStage};
pub use request::{parse_head, parse_head_from, BodyFraming, RequestHead};
pub use response::DateCache;
pub use version::Version;
