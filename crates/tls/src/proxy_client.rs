//! TLS to backends (mod_proxy_http's `https://`): a rustls client
//! configuration from a host's SSLProxy* settings ([`ProxyTls`]).
//!
//! Trusted roots: SSLProxyCACertificateFile and SSLProxyCACertificatePath,
//! else the system's store
//! (rustls-native-certs: on Debian /etc/ssl/certs, which the administrator
//! keeps with ca-certificates and `update-ca-certificates`, local CAs
//! included, as OpenSSL's default paths give Apache; a compiled-in list
//! such as webpki-roots would age with the binary and miss local CAs).
//!
//! Checks, as mod_ssl makes them: SSLProxyVerify require checks the chain;
//! SSLProxyCheckPeerName and SSLProxyCheckPeerExpire (both On by default)
//! check the backend's own certificate whatever SSLProxyVerify says, so a
//! `none` still refuses a certificate for another name or out of its
//! dates unless those are turned Off too. The handshake's signatures are
//! always checked: `none` never lets a peer without the certificate's key
//! through.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use warren_config::proxy_http::ProxyTls;

/// The client configuration for a host's `https://` backends, with the
/// versions SSLProxyProtocol leaves, offering ALPN http/1.1 (the proxy speaks HTTP/1.1 to backends). Err: why it
/// cannot be made (a CA file unreadable or holding no certificate, no
/// system roots).
pub fn client_config(tls: &ProxyTls) -> Result<Arc<ClientConfig>, String> {
    let verifier = ProxyVerifier::new(tls)?;
    let protocols = tls.protocols.unwrap_or_default();
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [(protocols.tls13, &rustls::version::TLS13), (protocols.tls12, &rustls::version::TLS12)].into_iter().filter_map(|(on, v)| on.then_some(v)).collect();
    let mut config = ClientConfig::builder_with_provider(verifier.provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("SSLProxyProtocol: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn roots(tls: &ProxyTls) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    if let Some(path) = &tls.ca_file {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("SSLProxyCACertificateFile {}: {e}", path.display()))?;
        if store.add_parsable_certificates(certs).0 == 0 {
            return Err(format!("SSLProxyCACertificateFile {}: no certificate in it", path.display()));
        }
    }
    if let Some(dir) = &tls.ca_path {
        let files = std::fs::read_dir(dir).map_err(|e| format!("SSLProxyCACertificatePath {}: {e}", dir.display()))?;
        // OpenSSL's hashed names are not needed: every file is read, and
        // one holding no certificate (a README, a CRL) is skipped.
        let certs = files.flatten().filter_map(|f| CertificateDer::pem_file_iter(f.path()).ok()).flat_map(|it| it.flatten());
        if store.add_parsable_certificates(certs.collect::<Vec<_>>()).0 == 0 {
            return Err(format!("SSLProxyCACertificatePath {}: no certificate in its files", dir.display()));
        }
    }
    if tls.ca_file.is_none() && tls.ca_path.is_none() {
        let found = rustls_native_certs::load_native_certs();
        if store.add_parsable_certificates(found.certs).0 == 0 {
            let why = found.errors.first().map_or_else(|| "none found".to_string(), |e| e.to_string());
            return Err(format!("no system CA certificates ({why}): set SSLProxyCACertificateFile"));
        }
    }
    Ok(store)
}

#[derive(Debug)]
struct ProxyVerifier {
    /// SSLProxyVerify require: the chain to the trusted roots.
    chain: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
    check_expire: bool,
    provider: Arc<CryptoProvider>,
}

impl ProxyVerifier {
    fn new(tls: &ProxyTls) -> Result<ProxyVerifier, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let chain = if tls.verifies() {
            let roots = Arc::new(roots(tls)?);
            Some(WebPkiServerVerifier::builder_with_provider(roots, provider.clone()).build().map_err(|e| format!("cannot verify backends: {e}"))?)
        } else {
            None
        };
        Ok(ProxyVerifier { chain, check_name: tls.checks_name(), check_expire: tls.check_peer_expire.unwrap_or(true), provider })
    }

    fn verify_chain(&self, chain: &WebPkiServerVerifier, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>], name: &ServerName<'_>, ocsp: &[u8], now: UnixTime) -> Result<(), Error> {
        let mut at = now;
        // With SSLProxyCheckPeerExpire Off, a date error is passed by
        // checking again at a time the certificate is valid; each
        // certificate of the chain can move it once.
        for _ in 0..=intermediates.len() + 1 {
            match chain.verify_server_cert(end_entity, intermediates, name, ocsp, at) {
                Ok(_) => return Ok(()),
                Err(Error::InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })) if !self.check_name => return Ok(()),
                Err(Error::InvalidCertificate(CertificateError::ExpiredContext { not_after, .. })) if !self.check_expire => at = not_after,
                Err(Error::InvalidCertificate(CertificateError::NotValidYetContext { not_before, .. })) if !self.check_expire => at = not_before,
                Err(e) => return Err(e),
            }
        }
        Err(Error::InvalidCertificate(CertificateError::Expired))
    }

    /// SSLProxyVerify none: only the certificate's name and dates.
    fn verify_alone(&self, end_entity: &CertificateDer<'_>, name: &ServerName<'_>, now: UnixTime) -> Result<(), Error> {
        if self.check_name {
            let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, name)?;
        }
        if self.check_expire {
            let (not_before, not_after) = crate::certs::validity(end_entity).ok_or(Error::InvalidCertificate(CertificateError::BadEncoding))?;
            let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
            if now < not_before {
                return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
            }
            if now > not_after {
                return Err(Error::InvalidCertificate(CertificateError::Expired));
            }
        }
        Ok(())
    }
}

impl ServerCertVerifier for ProxyVerifier {
    fn verify_server_cert(&self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>], name: &ServerName<'_>, ocsp: &[u8], now: UnixTime) -> Result<ServerCertVerified, Error> {
        match &self.chain {
            Some(chain) => self.verify_chain(chain, end_entity, intermediates, name, ocsp, now)?,
            None => self.verify_alone(end_entity, name, now)?,
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use time::{Duration, OffsetDateTime};

    struct Ca {
        cert: rcgen::Certificate,
        key: KeyPair,
        file: std::path::PathBuf,
    }

    fn ca(tag: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        let file = std::env::temp_dir().join(format!("warren-proxy-ca-{tag}-{}.pem", std::process::id()));
        std::fs::write(&file, cert.pem()).unwrap();
        Ca { cert, key, file }
    }

    /// A certificate of `ca` for `name`, valid from `from` to `to` days from now.
    fn leaf(ca: &Ca, name: &str, from: i64, to: i64) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.not_before = OffsetDateTime::now_utc() + Duration::days(from);
        params.not_after = OffsetDateTime::now_utc() + Duration::days(to);
        params.signed_by(&key, &ca.cert, &ca.key).unwrap().der().clone()
    }

    fn check(tls: &ProxyTls, cert: &CertificateDer<'_>, name: &str) -> Result<(), String> {
        let v = ProxyVerifier::new(tls).unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        v.verify_server_cert(cert, &[], &name, &[], UnixTime::now()).map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn chain_name_and_dates_as_mod_ssl() {
        let (ours, theirs) = (ca("ours"), ca("theirs"));
        let require = ProxyTls { verify: Some(true), ca_file: Some(ours.file.clone()), ..ProxyTls::default() };
        let good = leaf(&ours, "api.test", -1, 30);
        let expired = leaf(&ours, "api.test", -30, -1);
        let future = leaf(&ours, "api.test", 2, 30);
        let foreign = leaf(&theirs, "api.test", -1, 30);

        assert_eq!(check(&require, &good, "api.test"), Ok(()));
        assert!(check(&require, &good, "other.test").unwrap_err().contains("not valid for name"));
        assert!(check(&require, &expired, "api.test").unwrap_err().contains("expired"));
        assert!(check(&require, &future, "api.test").unwrap_err().contains("not valid yet"));
        assert!(check(&require, &foreign, "api.test").is_err());
        // The checks turned off pass what they cover, and only that.
        let lax_dates = ProxyTls { check_peer_expire: Some(false), ..require.clone() };
        assert_eq!(check(&lax_dates, &expired, "api.test"), Ok(()));
        assert_eq!(check(&lax_dates, &future, "api.test"), Ok(()));
        assert!(check(&lax_dates, &expired, "other.test").is_err());
        assert!(check(&lax_dates, &foreign, "api.test").is_err());
        let lax_name = ProxyTls { check_peer_name: Some(false), ..require.clone() };
        assert_eq!(check(&lax_name, &good, "other.test"), Ok(()));
        assert!(check(&lax_name, &expired, "other.test").is_err());

        // SSLProxyVerify none: any CA, but the name and the dates still count.
        let none = ProxyTls::default();
        assert_eq!(check(&none, &foreign, "api.test"), Ok(()));
        assert!(check(&none, &foreign, "other.test").is_err());
        assert!(check(&none, &expired, "api.test").is_err());
        let nothing = ProxyTls { check_peer_name: Some(false), check_peer_expire: Some(false), ..none };
        assert_eq!(check(&nothing, &expired, "other.test"), Ok(()));
        for f in [ours.file, theirs.file] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn a_ca_directory_and_the_system_roots() {
        let ours = ca("dir");
        let dir = std::env::temp_dir().join(format!("warren-proxy-ca-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README"), "not a certificate\n").unwrap();
        std::fs::copy(&ours.file, dir.join("ours.crt")).unwrap();
        let by_dir = ProxyTls { verify: Some(true), ca_path: Some(dir.clone()), ..ProxyTls::default() };
        assert_eq!(check(&by_dir, &leaf(&ours, "api.test", -1, 30), "api.test"), Ok(()));
        // The system's roots do not know the test CA.
        let system = ProxyTls { verify: Some(true), ..ProxyTls::default() };
        let v = ProxyVerifier::new(&system).expect("the system's CA store (Debian's ca-certificates)");
        let name = ServerName::try_from("api.test").unwrap();
        let e = v.verify_server_cert(&leaf(&ours, "api.test", -1, 30), &[], &name, &[], UnixTime::now()).err().unwrap();
        assert!(matches!(e, Error::InvalidCertificate(CertificateError::UnknownIssuer)), "{e}");
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_file(ours.file);
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let file = std::env::temp_dir().join(format!("warren-proxy-empty-ca-{}.pem", std::process::id()));
        std::fs::write(&file, "not a certificate\n").unwrap();
        let tls = ProxyTls { verify: Some(true), ca_file: Some(file.clone()), ..ProxyTls::default() };
        let e = client_config(&tls).err().unwrap();
        assert!(e.contains("no certificate in it"), "{e}");
        let _ = std::fs::remove_file(file);
    }
}
