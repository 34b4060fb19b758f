//! tls-alpn-01 (RFC 8737): a client offering only the `acme-tls/1`
//! protocol is the CA validating a managed domain; it gets the challenge
//! certificate the ACME helper wrote for the name it sent as SNI
//! (`MDStoreDir/challenges/tls-alpn-01/NAME.pem`, key and certificate:
//! `warren_config::md::tls_alpn_challenge_file`),
//! and no HTTP is spoken on that connection. Any other client never sees
//! these certificates.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::ClientHello;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The ALPN protocol of tls-alpn-01.
pub const ALPN_ACME_TLS: &[u8] = b"acme-tls/1";

/// Whether the client offers `acme-tls/1` and nothing else.
pub(crate) fn is_validation(hello: &ClientHello<'_>) -> bool {
    hello.alpn().is_some_and(|mut offered| offered.next() == Some(ALPN_ACME_TLS) && offered.next().is_none())
}

/// The challenge certificate for the hello's SNI (None: the handshake fails).
pub(crate) fn challenge_key(store: &Path, provider: &CryptoProvider, hello: &ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
    let file = warren_config::md::tls_alpn_challenge_file(store, hello.server_name()?)?;
    let pem = std::fs::read(file).ok()?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem).collect::<Result<_, _>>().ok()?;
    let key = PrivateKeyDer::from_pem_slice(&pem).ok()?;
    let signing = provider.key_provider.load_private_key(key).ok()?;
    (!certs.is_empty()).then(|| Arc::new(CertifiedKey::new(certs, signing)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dns_names_reach_the_disk() {
        use std::path::PathBuf;
        use warren_config::md::tls_alpn_challenge_file as file;
        let store = Path::new("/store");
        assert_eq!(file(store, "A.test"), Some(PathBuf::from("/store/challenges/tls-alpn-01/a.test.pem")));
        for bad in ["../../domains/a.test/privkey", "a/b", "", "a..b", "a.test\0", "a\\b", ".."] {
            assert_eq!(file(store, bad), None, "{bad:?}");
        }
    }
}
