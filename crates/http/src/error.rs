//! [`HttpError`]: a request refused, with the status RFC 9112 or RFC 9113
//! prescribes and the reason the error log gives.

/// A request the server must refuse, with the status to answer and the
/// reason to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    pub reason: String,
}

impl HttpError {
    pub fn new(status: u16, reason: impl Into<String>) -> HttpError {
        HttpError { status, reason: reason.into() }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.reason, self.status)
    }
}
