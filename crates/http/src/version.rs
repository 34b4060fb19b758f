//! [`Version`]: the HTTP version a request came in.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
    /// A request that came on an HTTP/2 stream ([`crate::h2`]).
    Http2,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http2 => "HTTP/2.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}
