//! Choosing a connection's certificate: the TLS host of the listener whose
//! ServerName or ServerAlias matches the client's SNI (aliases with `*`
//! and `?` wildcards, as Apache matches them), else the listener's default
//! (first) host, unless that one has `SSLStrictSNIVHostCheck on` and the
//! client sent no SNI: then none, and the handshake fails. Within a host,
//! an ECDSA certificate is preferred when the client can verify it and,
//! should the handshake be TLS 1.2, also use it: see [`Resolver::resolve`].

use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::SupportedCipherSuite;

/// One TLS host of a listener.
#[derive(Debug)]
pub struct SniHost {
    /// ServerName, then the ServerAliases, lower case.
    names: Vec<String>,
    /// ECDSA first.
    keys: Vec<Arc<CertifiedKey>>,
    strict: bool,
}

impl SniHost {
    /// `keys`: (certificate, is ECDSA), in configuration order.
    pub fn new(names: Vec<String>, keys: Vec<(Arc<CertifiedKey>, bool)>, strict: bool) -> SniHost {
        let (ecdsa, other): (Vec<_>, Vec<_>) = keys.into_iter().partition(|(_, e)| *e);
        SniHost {
            names: names.into_iter().map(|n| n.to_ascii_lowercase()).collect(),
            keys: ecdsa.into_iter().chain(other).map(|(k, _)| k).collect(),
            strict,
        }
    }

    fn serves(&self, sni: &str) -> bool {
        self.names.iter().any(|n| wildcard_match(n.as_bytes(), sni.as_bytes()))
    }
}

/// `*` (any run of characters) and `?` (one), case already folded.
pub fn wildcard_match(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == b'*')
}

/// A listener's certificate resolver.
#[derive(Debug)]
pub struct Resolver {
    hosts: Vec<SniHost>,
    /// The listener's TLS 1.2 suites (none if it offers only TLS 1.3).
    tls12: Vec<SupportedCipherSuite>,
    /// MDStoreDir, with the provider to load its
    /// tls-alpn-01 keys, when the server manages domains (mod_md).
    acme: Option<(std::path::PathBuf, Arc<rustls::crypto::CryptoProvider>)>,
}

impl Resolver {
    /// `suites`: the listener's cipher suites (its provider's).
    pub fn new(hosts: Vec<SniHost>, suites: &[SupportedCipherSuite]) -> Resolver {
        Resolver { hosts, tls12: suites.iter().copied().filter(|s| s.tls13().is_none()).collect(), acme: None }
    }

    /// Answers tls-alpn-01 validations from the store at `store` (see [`crate::acme_alpn`]).
    pub fn with_acme_challenges(self, store: std::path::PathBuf, provider: Arc<rustls::crypto::CryptoProvider>) -> Resolver {
        Resolver { acme: Some((store, provider)), ..self }
    }

    /// The host whose certificate a client naming `sni` gets (None: no
    /// certificate, the handshake fails).
    pub fn host_for(&self, sni: Option<&str>) -> Option<usize> {
        let default = self.hosts.first()?;
        match sni.map(str::to_ascii_lowercase) {
            Some(name) => Some(self.hosts.iter().position(|h| h.serves(&name)).unwrap_or(0)),
            None if default.strict => None,
            None => Some(0),
        }
    }
}

impl ResolvesServerCert for Resolver {
    /// The host's first key (ECDSA first) the client can take: one it can
    /// verify a signature of, and, if the client offers TLS 1.2 suites we
    /// have, one that at least one of those suites authenticates with.
    ///
    /// rustls asks before it has chosen the suite, and does not say the
    /// version here; it narrows the signature schemes to the suites both
    /// sides have, but counts TLS 1.3 suites too, which take any key. A
    /// client negotiating TLS 1.2 that also lists TLS 1.3 suites (testssl's
    /// own hellos do) and only ECDHE-RSA suites for 1.2 would then get the
    /// ECDSA certificate and fail the handshake for want of a suite. So
    /// when the TLS 1.2 suites in common do not fit a key, that key is
    /// passed over: if the handshake turns out to be TLS 1.3, the key
    /// taken instead (RSA) serves just as well.
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some((store, provider)) = &self.acme {
            if crate::acme_alpn::is_validation(&hello) {
                return crate::acme_alpn::challenge_key(store, provider, &hello);
            }
        }
        let host = &self.hosts[self.host_for(hello.server_name())?];
        let schemes = hello.signature_schemes();
        let offered = hello.cipher_suites();
        let common12: Vec<&SupportedCipherSuite> = self.tls12.iter().filter(|s| offered.contains(&s.suite())).collect();
        let verifiable = |k: &&Arc<CertifiedKey>| k.key.choose_scheme(schemes).is_some();
        let fits_tls12 = |k: &&Arc<CertifiedKey>| common12.is_empty() || common12.iter().any(|s| s.usable_for_signature_algorithm(k.key.algorithm()));
        host.keys
            .iter()
            .find(|k| verifiable(k) && fits_tls12(k))
            .or_else(|| host.keys.iter().find(verifiable))
            .or(host.keys.first())
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::wildcard_match as m;

    #[test]
    fn wildcards() {
        assert!(m(b"*.example.org", b"www.example.org"));
        assert!(m(b"*.example.org", b"a.b.example.org"));
        assert!(!m(b"*.example.org", b"example.org"));
        assert!(m(b"www?.example.org", b"www1.example.org"));
        assert!(!m(b"www?.example.org", b"www.example.org"));
        assert!(m(b"example.org", b"example.org"));
        assert!(!m(b"example.org", b"example.org.evil"));
        assert!(m(b"*", b"anything"));
    }
}
