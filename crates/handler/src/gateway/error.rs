//! Why a backend exchange failed, and the status it earns: apart from the
//! plan so that the readers of an answer, which the plan's methods use,
//! can name it without importing the plan back.

use std::io;

use warren_config::FcgiAddr;

use super::stream::describe;

/// Why a backend exchange failed, and the status it earns.
#[derive(Clone, Debug)]
pub struct GatewayError {
    pub status: u16,
    pub why: String,
}

impl GatewayError {
    /// The application could not be reached: 503.
    pub fn connect(backend: &str, e: &io::Error) -> GatewayError {
        GatewayError { status: 503, why: format!("FastCGI: failed to make connection to backend {backend}: {e}") }
    }

    pub fn io(what: &str, addr: &FcgiAddr, e: &io::Error) -> GatewayError {
        let status = match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => 504,
            _ => 502,
        };
        let why = if status == 504 {
            format!("FastCGI: timeout {what} {} (ProxyTimeout)", describe(addr))
        } else {
            format!("FastCGI: error {what} {}: {e}", describe(addr))
        };
        GatewayError { status, why }
    }
}
