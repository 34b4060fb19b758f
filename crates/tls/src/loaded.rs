//! [`Loaded`]: a host's certificate as the server offers it, read from
//! its files (`certs`) or made for a managed domain still waiting for its
//! own (`managed`).

use std::sync::Arc;

use rustls::sign::CertifiedKey;

/// One loaded certificate of a host.
pub(crate) struct Loaded {
    pub key: Arc<CertifiedKey>,
    pub ecdsa: bool,
}
