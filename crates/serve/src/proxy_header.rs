//! The PROXY protocol header at the start of a connection on a listener
//! with RemoteIPProxyProtocol On, applied the same way by the blocking
//! driver and the event loop: the header's source becomes the
//! connection's peer; anything else closes the connection unanswered, as
//! Apache does, so that a client reaching the listener directly cannot
//! claim an address, nor have its bytes taken for a request.

use warren_config::LogLevel;
use warren_handler::{ConnInfo, Site};
use warren_http::proxy_protocol::{self, ProxyHeader};

pub enum Got {
    /// Read and applied; what follows it in the buffer is HTTP.
    Done,
    /// More bytes are needed.
    More,
    /// Not a PROXY header (logged): close.
    Bad,
}

/// Applies the PROXY header at the start of `rbuf`, if it is all there.
pub fn take(site: &Site, rbuf: &mut Vec<u8>, info: &mut ConnInfo) -> Got {
    match proxy_protocol::parse(rbuf) {
        Ok(Some((header, used))) => {
            rbuf.drain(..used);
            if let ProxyHeader::Source(source) = header {
                info.peer = source;
                info.useragent = source;
            }
            Got::Done
        }
        Ok(None) => Got::More,
        Err(e) => {
            site.error_log.error(Some(info.peer), &format!("RemoteIPProxyProtocol: {e}; closing the connection"));
            Got::Bad
        }
    }
}

/// Logs a connection that ran out of time within its PROXY header (one
/// that sent nothing at all closes quietly, as for a request).
pub fn timed_out(site: &Site, rbuf: &[u8], info: &ConnInfo) {
    if !rbuf.is_empty() {
        site.error_log.log(LogLevel::Error, Some(info.peer), "RemoteIPProxyProtocol: timed out reading the PROXY header; closing the connection");
    }
}
