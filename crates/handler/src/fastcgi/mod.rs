//! The FastCGI proxy, as Apache's mod_proxy_fcgi and nginx's fastcgi_pass:
//! a request routed to a FastCGI application (by `SetHandler proxy:...`,
//! `ProxyPass` or `ProxyPassMatch`) becomes a [`Gateway`](crate::gateway::Gateway)
//! plan (the plan every backend protocol shares, in `gateway/`) holding the
//! backend and the CGI/1.1 variables (RFC 3875). The MPM runs the plan with
//! [`Site::run_gateway`](crate::Site::run_gateway) on a thread that may block; it streams the request
//! body to the application as the client sends it (a chunked body is spooled
//! first, so the application gets CONTENT_LENGTH) and answers with the
//! application's headers and a [`Body::Stream`](crate::Body::Stream) of its output, so `flush()`
//! in a script reaches the client at once.
//!
//! Failures are answered as Apache does: backend unreachable 503, no answer
//! within ProxyTimeout 504, a broken or oversized header block 502; an
//! application that dies mid-body makes the MPM close the connection rather
//! than end the body as if complete.
//!
//! - `params`: the CGI/1.1 variables of a request ([`Site::gateway`](crate::Site::gateway)
//!   makes the plan; where a script's path ends is `gateway::script`'s).
//! - `exchange`: running the plan on a thread that may block: leasing a
//!   pool's child, sending the request, reading the answer, following a
//!   local `Location:` and answering failures.
//! - `answer`: the one exchange every driver and protocol uses, sans-IO:
//!   an [`Answer`] is fed the application's bytes and gives the head, then
//!   moves the body into a [`ResponseSink`] (the HTTP/1.1 writer, an
//!   HTTP/2 stream, the body a thread pulls).
//! - `response`: the [`ResponseReader`] under it: the records, the CGI
//!   header block, stderr to the error log.
//! - `backend`: the idle connections to applications kept for
//!   `enablereuse=on` (a connection itself is `gateway::stream`'s).
//! - `half_close`: which applications are told the request is whole by
//!   the end of our side of the connection.

pub(crate) mod answer;
pub(crate) mod backend;
pub(crate) mod exchange;
pub(crate) mod half_close;
mod params;
mod php_settings;
pub(crate) mod response;

pub use answer::{Answer, AtHead, Failure, Pulled, Pumped, ResponseSink};
pub use backend::{one_request_per_connection, BackendPool};
pub use exchange::spool_error;
pub use half_close::HalfClose;
pub use response::{CgiHead, Piece, ResponseReader, MAX_HEADER_BLOCK};
pub use warren_pool_api::{PoolBusy, PoolDispatch, PoolLease};
