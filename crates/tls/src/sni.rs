//! Choosing a connection's certificate: the TLS host of the listener whose
//! ServerName or ServerAlias matches the client's SNI (aliases with `*`
//! and `?` wildcards, as Apache matches them), else the listener's default
//! (first) host, unless that one has `SSLStrictSNIVHostCheck on` and the
//! client sent no SNI: then none, and the handshake fails. Within a host,
//! an ECDSA certificate is preferred when the client can verify it.

use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

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
}

impl Resolver {
    pub fn new(hosts: Vec<SniHost>) -> Resolver {
        Resolver { hosts }
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
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let host = &self.hosts[self.host_for(hello.server_name())?];
        let schemes = hello.signature_schemes();
        host.keys.iter().find(|k| k.key.choose_scheme(schemes).is_some()).or(host.keys.first()).cloned()
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
