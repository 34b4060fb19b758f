//! mod_ssl's configuration: what `SSL*` directives set, with Apache's
//! semantics, and the checks that need only the configuration.
//!
//! - [`TlsDirectives`]: the lines one host (main server or `<VirtualHost>`)
//!   wrote, unmerged, in [`HostConfig::ssl`];
//! - [`TlsHost`]: a host's TLS settings once merged with the main server's,
//!   in [`HostConfig::tls`]: `Some` exactly when `SSLEngine on` holds there
//!   (a main server's `SSLEngine on` holds in every virtual host, as in
//!   Apache);
//! - [`TlsGlobal`]: the server-wide directives (session cache, stapling
//!   cache), in [`Settings::tls`].
//!
//! Certificates and keys are only found to exist here; `warren-tls` reads
//! them, and builds rustls' configurations from these settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::{Directive, Origin};
use crate::settings::{HostConfig, Settings, VirtualHost};

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
    /// too ([`DirConfig::ssl_std_env_vars`]).
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
    fn over(&self, base: &TlsDirectives) -> TlsDirectives {
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
    fn settle(&self, errors: &mut Vec<(Origin, String)>, std_env_vars: bool) -> Option<TlsHost> {
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

/// Settles every host's [`TlsHost`] (the virtual hosts' merged with the
/// main server's) and checks the TLS listeners: called by the builder
/// once everything is read. `https` are the `Listen ... https` lines.
pub(crate) fn settle(b: &mut Builder, s: &mut Settings, https: &[(SocketAddr, Origin)]) {
    let mut errors = Vec::new();
    s.main.tls = s.main.ssl.settle(&mut errors, s.main.dir.ssl_std_env_vars.unwrap_or(false));
    for vh in &mut s.virtual_hosts {
        let merged = vh.host.ssl.over(&s.main.ssl);
        vh.host.tls = merged.settle(&mut errors, vh.host.dir.ssl_std_env_vars.unwrap_or(false));
    }
    // Hosts inheriting the main server's lines have its errors: said once.
    for (i, (origin, message)) in errors.iter().enumerate() {
        if !errors[..i].iter().any(|(o, m)| o == origin && m == message) {
            b.error(origin, message.clone());
        }
    }
    for (addr, origin) in https {
        if !s.hosts_for_listener(*addr).iter().any(|h| h.tls.is_some()) {
            b.error(origin, format!("Listen {addr} https: no host serving it has SSLEngine on: the server should be SSL-aware but has no certificate configured"));
        }
    }
    s.https_listen = https.iter().map(|(a, _)| *a).collect();
}

impl Settings {
    /// The hosts that take connections on a listener bound to `addr`, in
    /// configuration order (the first is the default, as in Apache): the
    /// virtual hosts whose addresses match it, else the main server.
    pub fn hosts_for_listener(&self, addr: SocketAddr) -> Vec<&HostConfig> {
        let hosts: Vec<&HostConfig> = self.virtual_hosts.iter().filter(|vh| serves(vh, addr)).map(|vh| &vh.host).collect();
        if hosts.is_empty() {
            vec![&self.main]
        } else {
            hosts
        }
    }

    /// Whether connections to a listener bound to `addr` speak TLS: `Listen
    /// ... https` said so, or a host with `SSLEngine on` serves it.
    pub fn tls_listener(&self, addr: SocketAddr) -> bool {
        self.https_listen.contains(&addr) || self.hosts_for_listener(addr).iter().any(|h| h.tls.is_some())
    }
}

/// Whether a virtual host takes connections on a listener bound to `addr`.
pub(crate) fn serves(vh: &VirtualHost, addr: SocketAddr) -> bool {
    vh.addrs.iter().any(|a| a.ip.is_none_or(|ip| ip == addr.ip() || ip.is_unspecified() || addr.ip().is_unspecified()) && a.port.is_none_or(|p| p == addr.port()))
}

// The directives' functions.

fn path(b: &mut Builder, d: &Directive) -> Option<(PathBuf, Origin)> {
    let v = b.one(d)?;
    let p = b.resolve(&v);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_file() && m.len() > 0 => Some((p, d.origin.clone())),
        _ => {
            b.error(&d.origin, format!("{}: file '{}' does not exist or is empty", d.name, p.display()));
            None
        }
    }
}

pub(crate) fn engine(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    let Some(v) = b.one(d) else { return };
    match v.to_ascii_lowercase().as_str() {
        "on" => h.ssl.engine = Some((true, d.origin.clone())),
        "off" => h.ssl.engine = Some((false, d.origin.clone())),
        "optional" | "addr" => b.error(&d.origin, format!("SSLEngine {v} is not supported (use On or Off)")),
        _ => b.error(&d.origin, "SSLEngine must be On or Off"),
    }
}

pub(crate) fn certificate_file(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(p) = path(b, d) {
        h.ssl.cert_files.push(p);
    }
}

pub(crate) fn certificate_key_file(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(p) = path(b, d) {
        h.ssl.key_files.push(p);
    }
}

pub(crate) fn certificate_chain_file(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(p) = path(b, d) {
        h.ssl.chain_file = Some(p);
    }
}

/// `SSLProtocol [+|-]protocol...`: `all`, `TLSv1.2`, `TLSv1.3`; `SSLv3`,
/// `TLSv1`, `TLSv1.1` are accepted and never offered (rustls has none of
/// them; turning them on is said); `SSLv2` only with `-`, as Apache 2.4.
pub(crate) fn parse_protocols(args: &[String]) -> Result<(TlsProtocols, Vec<String>), String> {
    let mut p = TlsProtocols { tls12: false, tls13: false };
    let mut notes = Vec::new();
    for a in args {
        let (action, name) = match a.as_bytes().first() {
            Some(b'+') => (Some(true), &a[1..]),
            Some(b'-') => (Some(false), &a[1..]),
            _ => (None, a.as_str()),
        };
        let (tls12, tls13) = match name.to_ascii_lowercase().as_str() {
            "all" => (true, true),
            "tlsv1.2" => (true, false),
            "tlsv1.3" => (false, true),
            "sslv3" | "tlsv1" | "tlsv1.1" => {
                if action != Some(false) {
                    notes.push(format!("{name} is not offered: warren's TLS has only TLSv1.2 and TLSv1.3"));
                }
                (false, false)
            }
            "sslv2" if action == Some(false) => (false, false),
            "sslv2" => return Err("SSLProtocol: SSLv2 is no longer supported".into()),
            _ => return Err(format!("SSLProtocol: illegal protocol '{name}' (all, TLSv1.2, TLSv1.3, with + or -)")),
        };
        match action {
            None => {
                p = TlsProtocols { tls12, tls13 };
            }
            Some(true) => {
                p.tls12 |= tls12;
                p.tls13 |= tls13;
            }
            Some(false) => {
                p.tls12 &= !tls12;
                p.tls13 &= !tls13;
            }
        }
    }
    if !p.tls12 && !p.tls13 {
        return Err(format!("SSLProtocol {} leaves no protocol warren offers (TLSv1.2, TLSv1.3)", args.join(" ")));
    }
    Ok((p, notes))
}

pub(crate) fn protocol(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if d.args.is_empty() {
        b.error(&d.origin, "SSLProtocol takes one or more protocols");
        return;
    }
    match parse_protocols(&d.args) {
        Ok((p, notes)) => {
            for n in notes {
                b.warn(&d.origin, format!("SSLProtocol: {n}"));
            }
            h.ssl.protocols = Some((p, d.origin.clone()));
        }
        Err(m) => b.error(&d.origin, m),
    }
}

/// `SSLCipherSuite [SSL|TLSv1.3] cipher-spec`.
pub(crate) fn cipher_suite(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    match d.args.as_slice() {
        [spec] => h.ssl.cipher_suite = Some((spec.clone(), d.origin.clone())),
        [proto, spec] if proto.eq_ignore_ascii_case("SSL") => h.ssl.cipher_suite = Some((spec.clone(), d.origin.clone())),
        [proto, spec] if proto.eq_ignore_ascii_case("TLSv1.3") => h.ssl.cipher_suite_tls13 = Some((spec.clone(), d.origin.clone())),
        [proto, _] => b.error(&d.origin, format!("SSLCipherSuite: protocol '{proto}' is not SSL or TLSv1.3")),
        _ => b.error(&d.origin, "SSLCipherSuite takes [SSL|TLSv1.3] and a cipher string"),
    }
}

pub(crate) fn honor_cipher_order(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.ssl.honor_cipher_order = b.on_off(d).or(h.ssl.honor_cipher_order);
}

pub(crate) fn use_stapling(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.ssl.use_stapling = b.on_off(d).or(h.ssl.use_stapling);
}

pub(crate) fn strict_sni(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.ssl.strict_sni = b.on_off(d).or(h.ssl.strict_sni);
}

pub(crate) fn session_tickets(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.ssl.session_tickets = b.on_off(d).or(h.ssl.session_tickets);
}

/// `SSLCompression Off` (the default) is all rustls does.
pub(crate) fn compression(b: &mut Builder, d: &Directive, _: &mut HostConfig) {
    if b.on_off(d) == Some(true) {
        b.error(&d.origin, "SSLCompression On is not supported (TLS compression is insecure: CRIME); use Off");
    }
}

/// `SSLSessionCache none|nonenotnull|shmcb:path[(size)]|dbm:path`.
pub(crate) fn parse_session_cache(v: &str) -> Result<(SessionCache, Option<String>), String> {
    let lower = v.to_ascii_lowercase();
    if lower == "none" {
        return Ok((SessionCache::None, None));
    }
    if lower == "nonenotnull" {
        return Ok((SessionCache::NoneNotNull, None));
    }
    let Some((kind, arg)) = v.split_once(':') else {
        return Err(format!("SSLSessionCache: '{v}' is not none, nonenotnull, shmcb:path(size) or dbm:path"));
    };
    match kind.to_ascii_lowercase().as_str() {
        "shmcb" | "shm" => {
            let size = match arg.rfind('(') {
                Some(open) if arg.ends_with(')') => match arg[open + 1..arg.len() - 1].parse::<usize>() {
                    Ok(n) if (8192..=1 << 30).contains(&n) => n,
                    _ => return Err(format!("SSLSessionCache: bad size in '{v}' (bytes, from 8192 to 1073741824)")),
                },
                _ => DEFAULT_SHM_SIZE,
            };
            Ok((SessionCache::Shm { size }, None))
        }
        "dbm" => Ok((
            SessionCache::Shm { size: DEFAULT_SHM_SIZE },
            Some(format!("SSLSessionCache {v}: taken as shmcb of {DEFAULT_SHM_SIZE} bytes (warren keeps the cache in shared memory, not a DBM file)")),
        )),
        other => Err(format!("SSLSessionCache: '{other}:' caches are not supported (none, nonenotnull, shmcb:, dbm:)")),
    }
}

pub(crate) fn session_cache(b: &mut Builder, d: &Directive, s: &mut Settings) {
    let Some(v) = b.one(d) else { return };
    match parse_session_cache(&v) {
        Ok((cache, note)) => {
            if let Some(n) = note {
                b.warn(&d.origin, n);
            }
            s.tls.session_cache = cache;
            s.tls.session_cache_origin = Some(d.origin.clone());
        }
        Err(m) => b.error(&d.origin, m),
    }
}

pub(crate) fn session_cache_timeout(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        if n == 0 || n > 7 * 24 * 3600 {
            b.error(&d.origin, "SSLSessionCacheTimeout must be from 1 to 604800 seconds");
        } else {
            s.tls.session_cache_timeout = Duration::from_secs(n);
        }
    }
}

pub(crate) fn stapling_cache(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.tls.stapling_cache = Some(v);
    }
}

/// `SSLOptions [+|-]option...`: StdEnvVars is acted on; the others
/// (ExportCertData, FakeBasicAuth, StrictRequire, OptRenegotiate,
/// LegacyDNStringFormat) are accepted and change nothing, warren having no
/// client certificates nor SSLRequire.
pub(crate) fn options(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if d.args.is_empty() {
        b.error(&d.origin, "SSLOptions takes one or more options");
        return;
    }
    // A bare option list replaces what is inherited, as Options does.
    let bare = d.args.iter().any(|a| !a.starts_with(['+', '-']));
    let mut std_env_vars = if bare { Some(false) } else { dir.ssl_std_env_vars };
    for a in &d.args {
        let (sign, name) = match a.as_bytes().first() {
            Some(b'+') => (Some(true), &a[1..]),
            Some(b'-') => (Some(false), &a[1..]),
            _ => (None, a.as_str()),
        };
        let known = ["StdEnvVars", "ExportCertData", "FakeBasicAuth", "StrictRequire", "OptRenegotiate", "LegacyDNStringFormat", "CompatEnvVars"];
        if !known.iter().any(|k| k.eq_ignore_ascii_case(name)) {
            b.error(&d.origin, format!("SSLOptions: unknown option '{name}'"));
            return;
        }
        if name.eq_ignore_ascii_case("StdEnvVars") {
            std_env_vars = Some(sign != Some(false));
        }
    }
    dir.ssl_std_env_vars = std_env_vars;
}

/// `SSLRequireSSL`: requests not over TLS are forbidden (403).
pub(crate) fn require_ssl(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if !d.args.is_empty() {
        b.error(&d.origin, "SSLRequireSSL takes no argument");
        return;
    }
    dir.ssl_require_ssl = Some(true);
}

#[cfg(test)]
mod tests {
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
