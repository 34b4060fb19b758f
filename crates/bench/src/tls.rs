//! The TLS client side of `https://` targets: one rustls [`ClientConfig`]
//! (its default aws-lc-rs provider) shared by every connection of a run, so
//! that its session cache resumes sessions across connections unless
//! `--no-resume` is given. ALPN offers http/1.1.
//!
//! `--insecure` accepts any certificate, as curl -k does, but still checks
//! the handshake's signatures with the provider's algorithms (a server that
//! cannot sign with its certificate's key fails as it would for a browser).
//! `--tls-auth rsa|ecdsa` offers only that family's signature schemes, so
//! that a server holding both an ECDSA and an RSA certificate picks that one.
//! The key exchange is X25519 (then P-256, P-384), as OpenSSL 3.0 offers.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionStore, Resumption, Tls12ClientSessionValue, Tls13ClientSessionValue, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, NamedGroup, RootCertStore, SignatureScheme};

/// Which certificate the client asks for, by the signature schemes it offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Auth {
    #[default]
    Any,
    Rsa,
    Ecdsa,
}

impl Auth {
    pub fn parse(v: &str) -> Result<Auth, String> {
        match v.to_ascii_lowercase().as_str() {
            "any" => Ok(Auth::Any),
            "rsa" => Ok(Auth::Rsa),
            "ecdsa" => Ok(Auth::Ecdsa),
            _ => Err(format!("'{v}' is not rsa, ecdsa or any")),
        }
    }

    fn admits(self, s: SignatureScheme) -> bool {
        use SignatureScheme as S;
        match self {
            Auth::Any => true,
            Auth::Rsa => matches!(s, S::RSA_PKCS1_SHA256 | S::RSA_PKCS1_SHA384 | S::RSA_PKCS1_SHA512 | S::RSA_PSS_SHA256 | S::RSA_PSS_SHA384 | S::RSA_PSS_SHA512),
            Auth::Ecdsa => matches!(s, S::ECDSA_NISTP256_SHA256 | S::ECDSA_NISTP384_SHA384 | S::ECDSA_NISTP521_SHA512),
        }
    }
}

/// What the command line says about TLS.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Accept any certificate (curl -k).
    pub insecure: bool,
    /// Trust the certificates of this PEM file (default: the system's bundle).
    pub cacert: Option<PathBuf>,
    /// Full handshakes every time: no session cache, no tickets.
    pub no_resume: bool,
    pub auth: Auth,
}

/// The system's CA bundle, when no --cacert is given (Debian's path).
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Checks handshake signatures with the provider's algorithms, offers only
/// the schemes of `auth`, and checks the certificate with `webpki` (or not
/// at all: --insecure).
#[derive(Debug)]
pub struct Verifier {
    webpki: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
    schemes: Vec<SignatureScheme>,
}

impl Verifier {
    /// Accepts any certificate, as curl -k.
    pub fn insecure(provider: &CryptoProvider, auth: Auth) -> Verifier {
        Verifier::new(None, provider, auth)
    }

    fn new(webpki: Option<Arc<WebPkiServerVerifier>>, provider: &CryptoProvider, auth: Auth) -> Verifier {
        let algorithms = provider.signature_verification_algorithms;
        let schemes = algorithms.supported_schemes().into_iter().filter(|s| auth.admits(*s)).collect();
        Verifier { webpki, algorithms, schemes }
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(&self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>], server_name: &ServerName<'_>, ocsp: &[u8], now: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        match &self.webpki {
            Some(v) => v.verify_server_cert(end_entity, intermediates, server_name, ocsp, now),
            None => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.clone()
    }
}

/// The session cache of a run. rustls' own keeps 8 TLS 1.3 tickets a
/// server, which suits one browser; a load tester opening 50 connections in
/// one epoll round would find it empty and make full handshakes it was not
/// asked for. This one keeps up to [`SessionCache::TICKETS`] a server (each
/// ticket still used once).
#[derive(Debug, Default)]
pub struct SessionCache {
    servers: Mutex<HashMap<ServerName<'static>, Sessions>>,
}

#[derive(Debug, Default)]
struct Sessions {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

impl SessionCache {
    pub const TICKETS: usize = 4096;

    fn with<T>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut Sessions) -> T) -> T {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        f(servers.entry(name.to_owned()).or_default())
    }
}

impl ClientSessionStore for SessionCache {
    fn set_kx_hint(&self, name: ServerName<'static>, group: NamedGroup) {
        self.with(&name, |s| s.kx_hint = Some(group));
    }
    fn kx_hint(&self, name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(name, |s| s.kx_hint)
    }
    fn set_tls12_session(&self, name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(&name, |s| s.tls12 = Some(value));
    }
    fn tls12_session(&self, name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(name, |s| s.tls12.clone())
    }
    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.with(name, |s| s.tls12 = None);
    }
    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.with(&name, |s| {
            if s.tls13.len() == SessionCache::TICKETS {
                s.tls13.pop_front();
            }
            s.tls13.push_back(value);
        });
    }
    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.with(name, |s| s.tls13.pop_back())
    }
}

/// The client configuration of a run.
pub fn client_config(o: &TlsOptions) -> Result<Arc<ClientConfig>, String> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    // The key exchanges OpenSSL 3.0 offers first (curl, wrk, browsers before
    // the post-quantum hybrids): rustls would lead with X25519MLKEM768, whose
    // key share costs both ends more, and only servers that take it (warren,
    // not nginx with OpenSSL 3.0) would pay for it.
    use rustls::crypto::aws_lc_rs::kx_group;
    provider.kx_groups = vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1];
    let provider = Arc::new(provider);
    let webpki = if o.insecure {
        None
    } else {
        let path = o.cacert.clone().unwrap_or_else(|| PathBuf::from(SYSTEM_BUNDLE));
        let mut roots = RootCertStore::empty();
        let certs = CertificateDer::pem_file_iter(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for c in certs {
            let c = c.map_err(|e| format!("{}: {e}", path.display()))?;
            roots.add(c).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        if roots.is_empty() {
            return Err(format!("{}: no certificate", path.display()));
        }
        Some(WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().map_err(|e| e.to_string())?)
    };
    let verifier = Verifier::new(webpki, &provider, o.auth);
    if verifier.schemes.is_empty() {
        return Err("no signature scheme left to offer".into());
    }
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = if o.no_resume { Resumption::disabled() } else { Resumption::store(Arc::new(SessionCache::default())) };
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insecure_verifier_offers_what_it_checks() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let any = Verifier::insecure(&provider, Auth::Any);
        assert!(any.supported_verify_schemes().contains(&SignatureScheme::ECDSA_NISTP256_SHA256));
        assert!(any.supported_verify_schemes().contains(&SignatureScheme::RSA_PSS_SHA256));
        let rsa = Verifier::insecure(&provider, Auth::Rsa).supported_verify_schemes();
        assert!(!rsa.is_empty() && rsa.iter().all(|s| format!("{s:?}").starts_with("RSA")), "{rsa:?}");
        let ecdsa = Verifier::insecure(&provider, Auth::Ecdsa).supported_verify_schemes();
        assert!(!ecdsa.is_empty() && ecdsa.iter().all(|s| format!("{s:?}").starts_with("ECDSA")), "{ecdsa:?}");
        // Any certificate is accepted (the handshake's signatures are
        // checked in crates/warren/tests/bench_tls.rs, with a real server).
        let junk = CertificateDer::from(vec![1u8, 2, 3]);
        let name = ServerName::try_from("localhost").unwrap();
        assert!(any.verify_server_cert(&junk, &[], &name, &[], UnixTime::now()).is_ok());
        assert_eq!(Auth::parse("RSA"), Ok(Auth::Rsa));
        assert!(Auth::parse("dsa").is_err());
    }

    #[test]
    fn configs() {
        let c = client_config(&TlsOptions { insecure: true, ..TlsOptions::default() }).unwrap();
        assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(client_config(&TlsOptions { cacert: Some("/nonexistent.pem".into()), ..TlsOptions::default() }).is_err());
    }
}
