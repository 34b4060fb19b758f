//! The certificate of a managed domain (mod_md) that the ACME helper has
//! not obtained yet: a temporary self-signed one for its names, made in
//! memory at each start or graceful restart, as mod_md serves one, so the
//! host answers on TLS (with a warning in browsers) until the real one is
//! in the store and a graceful restart takes it.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use warren_config::tls::TlsHost;

use crate::loaded::Loaded;

/// A self-signed certificate for `names`, valid for 30 days.
pub(crate) fn temporary(names: &[String], host: &TlsHost, provider: &CryptoProvider, warnings: &mut Vec<String>) -> Result<Loaded, Vec<String>> {
    let fail = |e: &dyn std::fmt::Display| vec![format!("{}: MDomain {}: cannot make a temporary certificate: {e}", host.origin, names[0])];
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| fail(&e))?;
    let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(|e| fail(&e))?;
    params.distinguished_name.push(rcgen::DnType::CommonName, format!("temporary certificate for {}", names[0]));
    params.not_before = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    params.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(30);
    let cert = params.self_signed(&key).map_err(|e| fail(&e))?;
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let signing = provider.key_provider.load_private_key(der).map_err(|e| fail(&e))?;
    warnings.push(format!("{}: MDomain {}: no certificate from the CA yet: serving a temporary self-signed one until it is obtained", host.origin, names[0]));
    Ok(Loaded { key: Arc::new(CertifiedKey::new(vec![CertificateDer::from(cert.der().to_vec())], signing)), ecdsa: true })
}
