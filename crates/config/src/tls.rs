//! mod_ssl's configuration: what `SSL*` directives set, with Apache's
//! semantics, and the checks that need only the configuration.
//!
//! - [`TlsDirectives`]: the lines one host (main server or `<VirtualHost>`)
//!   wrote, unmerged, in [`HostConfig::ssl`](crate::HostConfig::ssl);
//! - [`TlsHost`]: a host's TLS settings once merged with the main server's,
//!   in [`HostConfig::tls`](crate::HostConfig::tls): `Some` exactly when `SSLEngine on` holds there
//!   (a main server's `SSLEngine on` holds in every virtual host, as in
//!   Apache);
//! - [`TlsGlobal`]: the server-wide directives (session cache, stapling
//!   cache), in [`Settings::tls`](crate::Settings::tls).
//!
//! The directives are in `directives/tls.rs`, where
//! certificates and keys are only found to exist; `warren-tls` reads them,
//! and builds rustls' configurations from these settings. Which listeners
//! speak TLS is [`listeners`](crate::listeners).

use std::path::PathBuf;
use std::time::Duration;

use crate::parse::Origin;

/// The protocol versions `SSLProtocol` leaves, of those rustls has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlsProtocols {
    pub tls12: bool,
    pub tls13: bool,
}

impl Default for TlsProtocols {
    /// Apache's `all -SSLv3`: of what rustls has, both.
    fn default() -> Self {
        TlsProtocols { tls12: true, tls13: true }
    }
}

/// `SSLSessionCache`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionCache {
    /// `none`: no session cache shared by the children (the default, as
    /// in Apache); TLS 1.3 clients still resume with tickets if
    /// SSLSessionTickets is on.
    None,
    /// `nonenotnull`: no cache, but session IDs are sent (rustls: as `none`).
    NoneNotNull,
    /// `shmcb:path(size)`: a cache in shared memory of `size` bytes (the
    /// path is not used: warren's memory is anonymous, shared by fork).
    Shm { size: usize },
}

/// Apache's default size of a `shmcb:` cache.
pub const DEFAULT_SHM_SIZE: usize = 512_000;

/// Server-wide mod_ssl settings.
#[derive(Clone, Debug)]
pub struct TlsGlobal {
    pub session_cache: SessionCache,
    pub session_cache_origin: Option<Origin>,
    /// `SSLSessionCacheTimeout` (300 s).
    pub session_cache_timeout: Duration,
    /// `SSLStaplingCache`: accepted; OCSP responses are kept in memory.
    pub stapling_cache: Option<String>,
}

impl Default for TlsGlobal {
    fn default() -> Self {
        TlsGlobal { session_cache: SessionCache::None, session_cache_origin: None, session_cache_timeout: Duration::from_secs(300), stapling_cache: None }
    }
}

/// One certificate of a host, with its key.
#[derive(Clone, Debug, PartialEq)]
pub struct CertPair {
    pub cert: (PathBuf, Origin),
    /// None: the key is in the certificate's file (as Apache).
    pub key: Option<(PathBuf, Origin)>,
}

/// SSLHonorCipherOrder when no line sets it: On, unlike Apache (Off).
/// Every suite warren has is ECDHE with AEAD, and its default order puts
/// AES-256-GCM and ChaCha20 before AES-128-GCM (warren-tls's `ciphers`),
/// so the server's order is a sound one to impose; with Off the suite is
/// whatever the client lists first, which scanners report as a HIGH
/// finding for a default install (testssl.sh: "NOT a cipher order
/// configured"). `SSLHonorCipherOrder off` still gives the client's
/// order, e.g. for clients without AES hardware that list ChaCha20 first.
pub const DEFAULT_HONOR_CIPHER_ORDER: bool = true;

/// A host's TLS settings, merged with the main server's.
#[derive(Clone, Debug)]
pub struct TlsHost {
    /// The `SSLEngine on` line in force (maybe the main server's).
    pub origin: Origin,
    /// One per `SSLCertificateFile` (an RSA and an ECDSA one, say), paired
    /// in order with `SSLCertificateKeyFile`.
    pub certificates: Vec<CertPair>,
    pub chain_file: Option<(PathBuf, Origin)>,
    pub protocols: TlsProtocols,
    pub protocols_origin: Option<Origin>,
    /// `SSLCipherSuite` for TLS 1.2 (an OpenSSL cipher string, as written).
    pub cipher_suite: Option<(String, Origin)>,
    /// `SSLCipherSuite TLSv1.3 ...`.
    pub cipher_suite_tls13: Option<(String, Origin)>,
    /// `SSLHonorCipherOrder`: On unless said Off, where Apache's default
    /// is Off (see [`DEFAULT_HONOR_CIPHER_ORDER`]).
    pub honor_cipher_order: bool,
    pub use_stapling: bool,
    pub strict_sni: bool,
    /// `SSLSessionTickets` (Apache: on). Per host, as in Apache (certbot
    /// writes it inside the `<VirtualHost>`); a listener's connections use
    /// its default host's.
    pub session_tickets: bool,
    /// `SSLOptions +StdEnvVars` at the host's level; sections may set it
    /// too ([`DirConfig::ssl_std_env_vars`](crate::DirConfig::ssl_std_env_vars)).
    pub std_env_vars: bool,
    /// The managed domain's names when its certificate is mod_md's (a
    /// self-signed one is served until the store has it).
    pub managed: Option<Vec<String>>,
}

/// The `SSL*` lines one host wrote, before merging with the main server's.
#[derive(Clone, Debug, Default)]
pub struct TlsDirectives {
    pub engine: Option<(bool, Origin)>,
    pub cert_files: Vec<(PathBuf, Origin)>,
    pub key_files: Vec<(PathBuf, Origin)>,
    pub chain_file: Option<(PathBuf, Origin)>,
    pub protocols: Option<(TlsProtocols, Origin)>,
    pub cipher_suite: Option<(String, Origin)>,
    pub cipher_suite_tls13: Option<(String, Origin)>,
    pub honor_cipher_order: Option<bool>,
    pub use_stapling: Option<bool>,
    pub strict_sni: Option<bool>,
    pub session_tickets: Option<bool>,
    /// The names of the managed domain (mod_md) whose store files
    /// [`crate::md`] gave this host.
    pub managed: Option<Vec<String>>,
}

impl TlsDirectives {
    /// `self` (a virtual host's) over `base` (the main server's), as
    /// mod_ssl merges: each value the host leaves unset is the main
    /// server's; certificates are the host's if it names any.
    pub(crate) fn over(&self, base: &TlsDirectives) -> TlsDirectives {
        let (cert_files, key_files) =
            if self.cert_files.is_empty() { (base.cert_files.clone(), base.key_files.clone()) } else { (self.cert_files.clone(), self.key_files.clone()) };
        TlsDirectives {
            engine: self.engine.clone().or_else(|| base.engine.clone()),
            cert_files,
            key_files,
            chain_file: self.chain_file.clone().or_else(|| base.chain_file.clone()),
            protocols: self.protocols.clone().or_else(|| base.protocols.clone()),
            cipher_suite: self.cipher_suite.clone().or_else(|| base.cipher_suite.clone()),
            cipher_suite_tls13: self.cipher_suite_tls13.clone().or_else(|| base.cipher_suite_tls13.clone()),
            honor_cipher_order: self.honor_cipher_order.or(base.honor_cipher_order),
            use_stapling: self.use_stapling.or(base.use_stapling),
            strict_sni: self.strict_sni.or(base.strict_sni),
            session_tickets: self.session_tickets.or(base.session_tickets),
            managed: self.managed.clone(),
        }
    }

    /// The host's [`TlsHost`] if `SSLEngine on` holds, else None; errors
    /// for a TLS host without a certificate, or with more keys than
    /// certificates.
    pub(crate) fn settle(&self, errors: &mut Vec<(Origin, String)>, std_env_vars: bool) -> Option<TlsHost> {
        let (true, origin) = self.engine.clone()? else { return None };
        if self.cert_files.is_empty() {
            errors.push((origin.clone(), "SSLEngine on: this server should be SSL-aware but has no certificate configured [Hint: SSLCertificateFile]".into()));
        }
        if let Some((_, o)) = self.key_files.get(self.cert_files.len()) {
            errors.push((o.clone(), "SSLCertificateKeyFile without its SSLCertificateFile (each key pairs, in order, with a certificate)".into()));
        }
        let certificates = self
            .cert_files
            .iter()
            .enumerate()
            .map(|(i, cert)| CertPair { cert: cert.clone(), key: self.key_files.get(i).cloned() })
            .collect();
        Some(TlsHost {
            origin,
            certificates,
            chain_file: self.chain_file.clone(),
            protocols: self.protocols.as_ref().map(|(p, _)| *p).unwrap_or_default(),
            protocols_origin: self.protocols.as_ref().map(|(_, o)| o.clone()),
            cipher_suite: self.cipher_suite.clone(),
            cipher_suite_tls13: self.cipher_suite_tls13.clone(),
            honor_cipher_order: self.honor_cipher_order.unwrap_or(DEFAULT_HONOR_CIPHER_ORDER),
            use_stapling: self.use_stapling.unwrap_or(false),
            strict_sni: self.strict_sni.unwrap_or(false),
            session_tickets: self.session_tickets.unwrap_or(true),
            std_env_vars,
            managed: self.managed.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::directives::tls::{parse_protocols, parse_session_cache};
    use crate::settings::Settings;
    use super::*;
    use crate::test_support::{load_text, Dir};
    use crate::Loaded;

    fn load(name: &str, text: &str) -> (Loaded, Dir) {
        load_text(&format!("tlscfg-{name}"), text, &["a.pem", "a.key", "b.pem", "b.key", "chain.pem"])
    }

    fn errors(l: &Loaded) -> Vec<String> {
        l.errors.iter().map(|e| format!("{}: {}", e.origin.line, e.message)).collect()
    }

    const DEBIAN_GLOBAL: &str = "SSLRandomSeed startup builtin\nSSLRandomSeed connect file:/dev/urandom 512\nSSLPassPhraseDialog exec:/usr/share/apache2/ask-for-passphrase\nSSLSessionCache shmcb:/run/apache2/ssl_scache(512000)\nSSLSessionCacheTimeout 300\nSSLCipherSuite HIGH:!aNULL\nSSLProtocol all -SSLv3\nSSLSessionTickets off\n";

    #[test]
    fn debian_and_certbot_lines_are_taken() {
        let text = format!(
            "{DEBIAN_GLOBAL}Listen 80\nListen 443\n<VirtualHost *:80>\n</VirtualHost>\n<VirtualHost *:443>\nServerName example.org\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\nSSLProtocol all -SSLv2 -SSLv3 -TLSv1 -TLSv1.1\nSSLCipherSuite ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256\nSSLHonorCipherOrder off\nSSLSessionTickets off\nSSLOptions +StrictRequire\nSSLUseStapling on\nSSLCompression off\n<FilesMatch \"\\.php$\">\nSSLOptions +StdEnvVars\n</FilesMatch>\n</VirtualHost>\nSSLStaplingCache shmcb:/var/run/apache2/stapling_cache(128000)\n"
        );
        let (l, _d) = load("debian", &text);
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let s = l.settings.unwrap();
        assert_eq!(s.tls.session_cache, SessionCache::Shm { size: 512_000 });
        assert_eq!(s.tls.session_cache_timeout, Duration::from_secs(300));
        assert!(s.main.tls.is_none());
        assert!(s.virtual_hosts[0].host.tls.is_none());
        let t = s.virtual_hosts[1].host.tls.as_ref().unwrap();
        assert_eq!(t.origin.line, 16);
        assert_eq!(t.certificates.len(), 1);
        assert!(t.certificates[0].cert.0.ends_with("a.pem") && t.certificates[0].key.as_ref().unwrap().0.ends_with("a.key"));
        assert_eq!(t.protocols, TlsProtocols { tls12: true, tls13: true });
        assert!(!t.session_tickets && t.use_stapling && !t.honor_cipher_order);
        assert!(t.cipher_suite.as_ref().unwrap().0.starts_with("ECDHE-ECDSA"));
        assert!(s.tls_listener("0.0.0.0:443".parse().unwrap()));
        assert!(!s.tls_listener("0.0.0.0:80".parse().unwrap()));
        assert!(s.virtual_hosts[1].host.sections[0].config.ssl_std_env_vars == Some(true));
        // Inert ones said once each.
        let w: Vec<String> = l.warnings.iter().map(ToString::to_string).collect();
        assert!(w.iter().any(|w| w.contains("SSLRandomSeed (here and on 1 more line)")), "{w:?}");
    }

    #[test]
    fn vhosts_inherit_the_main_servers_values() {
        let (l, _d) = load(
            "inherit",
            "Listen 443\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\nSSLProtocol TLSv1.3\nSSLStrictSNIVHostCheck on\n<VirtualHost *:443>\nServerName a\n</VirtualHost>\n<VirtualHost *:443>\nServerName b\nSSLCertificateFile b.pem\nSSLCertificateFile a.pem\nSSLCertificateKeyFile b.key\nSSLCertificateChainFile chain.pem\n</VirtualHost>\n",
        );
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let s = l.settings.unwrap();
        let a = s.virtual_hosts[0].host.tls.as_ref().unwrap();
        assert_eq!(a.origin.line, 3);
        assert_eq!(a.protocols, TlsProtocols { tls12: false, tls13: true });
        assert!(a.strict_sni && a.session_tickets);
        assert!(a.certificates[0].cert.0.ends_with("a.pem"));
        let b = s.virtual_hosts[1].host.tls.as_ref().unwrap();
        assert_eq!(b.certificates.len(), 2);
        assert!(b.certificates[0].cert.0.ends_with("b.pem") && b.certificates[0].key.as_ref().unwrap().0.ends_with("b.key"));
        assert!(b.certificates[1].cert.0.ends_with("a.pem") && b.certificates[1].key.is_none());
        assert!(b.chain_file.is_some());
        assert!(s.tls_listener("0.0.0.0:443".parse().unwrap()));
    }

    /// SSLHonorCipherOrder is On without a line (unlike Apache); Off in the
    /// main server reaches the virtual hosts that do not set it; a host's
    /// own line wins.
    #[test]
    fn honor_cipher_order_defaults_on() {
        let host = |s: &Settings, i: usize| s.virtual_hosts[i].host.tls.as_ref().unwrap().honor_cipher_order;
        let vhosts = "<VirtualHost *:443>\nServerName a\nSSLEngine on\nSSLCertificateFile a.pem\n</VirtualHost>\n<VirtualHost *:443>\nServerName b\nSSLEngine on\nSSLCertificateFile b.pem\nSSLHonorCipherOrder on\n</VirtualHost>\n";
        let (l, _d) = load("honor-default", &format!("Listen 443\n{vhosts}"));
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let s = l.settings.unwrap();
        assert!(host(&s, 0) && host(&s, 1));
        let (l, _d) = load("honor-off", &format!("Listen 443\nSSLHonorCipherOrder off\n{vhosts}"));
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let s = l.settings.unwrap();
        assert!(!host(&s, 0) && host(&s, 1));
        let (l, _d) = load("honor-vhost-off", "Listen 443\n<VirtualHost *:443>\nSSLEngine on\nSSLCertificateFile a.pem\nSSLHonorCipherOrder Off\n</VirtualHost>\n");
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        assert!(!host(&l.settings.unwrap(), 0));
    }

    #[test]
    fn errors_name_their_lines() {
        let (l, _d) = load(
            "errors",
            "Listen 443\nListen 8443 https\nListen 80 gopher\n<VirtualHost *:443>\nSSLEngine on\nSSLProtocol TLSv1 TLSv1.1\nSSLCertificateFile nothere.pem\nSSLSessionTickets maybe\nSSLCompression on\nSSLCipherSuite QUIC HIGH\n</VirtualHost>\nSSLSessionCache memcache:localhost\nSSLProtocol -SSLv2 +SSLv2\nSSLOptions +Frobnicate\nSSLSessionCacheTimeout 0\n",
        );
        let e = errors(&l);
        let expect = [
            "3: Listen 0.0.0.0:8443 https: no host serving it has SSLEngine on",
            "4: Listen protocol 'gopher' is not supported",
            "6: SSLEngine on: this server should be SSL-aware but has no certificate configured",
            "7: SSLProtocol TLSv1 TLSv1.1 leaves no protocol warren offers",
            "8: SSLCertificateFile: file '",
            "9: SSLSessionTickets must be On or Off",
            "10: SSLCompression On is not supported",
            "11: SSLCipherSuite: protocol 'QUIC' is not SSL or TLSv1.3",
            "13: SSLSessionCache: 'memcache:' caches are not supported",
            "14: SSLProtocol: SSLv2 is no longer supported",
            "15: SSLOptions: unknown option 'Frobnicate'",
            "16: SSLSessionCacheTimeout must be from 1",
        ];
        for x in expect {
            assert!(e.iter().any(|e| e.starts_with(x)), "no error {x:?} in {e:#?}");
        }
        assert_eq!(e.len(), expect.len(), "{e:#?}");
    }

    #[test]
    fn protocols_as_apache_reads_them() {
        let p = |s: &str| parse_protocols(&s.split(' ').map(String::from).collect::<Vec<_>>());
        assert_eq!(p("all -SSLv3").unwrap().0, TlsProtocols { tls12: true, tls13: true });
        assert!(p("all -SSLv3").unwrap().1.is_empty());
        assert_eq!(p("-all +TLSv1.2").unwrap().0, TlsProtocols { tls12: true, tls13: false });
        assert_eq!(p("all -TLSv1.3").unwrap().0, TlsProtocols { tls12: true, tls13: false });
        let (v, notes) = p("TLSv1 TLSv1.1 +TLSv1.2").unwrap();
        assert_eq!(v, TlsProtocols { tls12: true, tls13: false });
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(p("all -TLSv1.2 -TLSv1.3").is_err());
        assert!(p("TLSv2").is_err());
    }

    #[test]
    fn session_caches() {
        assert_eq!(parse_session_cache("none").unwrap().0, SessionCache::None);
        assert_eq!(parse_session_cache("nonenotnull").unwrap().0, SessionCache::NoneNotNull);
        assert_eq!(parse_session_cache("shmcb:/x/y(1024000)").unwrap().0, SessionCache::Shm { size: 1_024_000 });
        assert_eq!(parse_session_cache("shmcb:/x/y").unwrap().0, SessionCache::Shm { size: DEFAULT_SHM_SIZE });
        let (c, note) = parse_session_cache("dbm:/var/run/scache").unwrap();
        assert_eq!(c, SessionCache::Shm { size: DEFAULT_SHM_SIZE });
        assert!(note.is_some());
        assert!(parse_session_cache("shmcb:/x(12)").is_err());
    }

    #[test]
    fn require_ssl_and_options_in_sections() {
        let (l, _d) = load(
            "reqssl",
            "Listen 80\n<Directory /srv>\nSSLRequireSSL\nSSLOptions +StdEnvVars +StrictRequire\n</Directory>\n<Directory /srv/b>\nSSLOptions StrictRequire\n</Directory>\n",
        );
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let s = l.settings.unwrap();
        assert_eq!(s.main.sections[0].config.ssl_require_ssl, Some(true));
        assert_eq!(s.main.sections[0].config.ssl_std_env_vars, Some(true));
        assert_eq!(s.main.sections[1].config.ssl_std_env_vars, Some(false));
    }
}
