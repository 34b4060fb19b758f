//! TLS for warren: rustls server configurations built from mod_ssl's
//! settings ([`warren_config::tls`]). No OpenSSL: rustls with its default
//! aws-lc-rs provider.
//!
//! - [`certs`]: PEM certificates and keys, their expiry; [`stapling`]: the
//!   OCSP responses the ACME helper fetched, stapled; [`store_file`]: how
//!   root reads them from the helper's MDStoreDir; `managed`: a managed
//!   domain's temporary certificate; `loaded`: what either gives a host.
//! - [`ServerTls`]: built once by the parent (as root, before privileges
//!   drop and children fork) from the [`Settings`]; every certificate and
//!   key read and checked there, each problem an error naming its
//!   directive's line. [`ServerTls::for_listener`] gives the
//!   `rustls::ServerConfig` of each TLS listener.
//! - The listener's configuration takes its protocol versions, cipher
//!   suites ([`ciphers`]: OpenSSL cipher strings mapped onto rustls'
//!   suites) and SSLHonorCipherOrder from its default (first) TLS host, as
//!   OpenSSL does, and picks each connection's certificate by SNI among its
//!   TLS hosts ([`sni`]). Its ALPN list ([`alpn_protocols`]) offers `h2`
//!   when `Protocols` lets every TLS host on it speak HTTP/2.
//! - Session resumption across children: [`session_cache`] keeps sessions
//!   in memory shared by fork (SSLSessionCache shmcb:); [`tickets`] seals
//!   tickets under keys every child derives alike (SSLSessionTickets).
//! - [`proxy_client`]: the client side, for mod_proxy_http's `https://`
//!   backends (SSLProxy*).
//! - [`protocol_name`], [`cipher_name`], [`cipher_bits`]: mod_ssl's names,
//!   for `SSL_PROTOCOL`, `SSL_CIPHER` and logs.

pub mod certs;
mod loaded;
mod managed;
mod store_file;
pub mod acme_alpn;
pub mod ciphers;
pub mod proxy_client;
pub mod session_cache;
pub mod sni;
mod stapling;
pub mod tickets;

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::server::{NoServerSessionStorage, StoresServerSessions};
use rustls::{ProtocolVersion, ServerConfig, SupportedCipherSuite};
use warren_config::h2::H2Listener;
use warren_config::tls::{SessionCache, TlsHost};
use warren_config::{HostConfig, Settings};

pub use ciphers::{cipher_bits, cipher_name};

/// ALPN's names of HTTP/1.1 and of HTTP/2 over TLS.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";
pub const ALPN_H2: &[u8] = b"h2";

/// The ALPN protocols a listener offers, in its order of preference:
/// `http/1.1` alone, or with `h2` when its hosts allow HTTP/2
/// ([`Settings::h2_listener`]). rustls agrees the first protocol of this
/// list that the client also offers: the server's order always wins, so
/// the list's order is the preference (see `h2_first` for
/// ProtocolsHonorOrder). `http/1.1` is always there: a client offering only
/// it would otherwise be refused the handshake (no_application_protocol).
pub fn alpn_protocols(h2: &H2Listener) -> Vec<Vec<u8>> {
    match (h2.h2, h2.h2_first) {
        (false, _) => vec![ALPN_HTTP11.to_vec()],
        (true, true) => vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()],
        (true, false) => vec![ALPN_HTTP11.to_vec(), ALPN_H2.to_vec()],
    }
}

/// mod_ssl's name of a protocol version, as `SSL_PROTOCOL` gives it.
pub fn protocol_name(v: ProtocolVersion) -> &'static str {
    match v {
        ProtocolVersion::TLSv1_3 => "TLSv1.3",
        ProtocolVersion::TLSv1_2 => "TLSv1.2",
        ProtocolVersion::TLSv1_1 => "TLSv1.1",
        ProtocolVersion::TLSv1_0 => "TLSv1",
        ProtocolVersion::SSLv3 => "SSLv3",
        _ => "unknown",
    }
}

/// Certificates read, by (pair, chain file, stapling), with their key
/// and whether it is ECDSA (None: it had errors, already said).
type CertCache = Vec<((warren_config::tls::CertPair, Option<std::path::PathBuf>, bool), Option<(Arc<rustls::sign::CertifiedKey>, bool)>)>;

/// Every TLS listener's configuration, built once from the settings.
pub struct ServerTls {
    listeners: Vec<(SocketAddr, Arc<ServerConfig>)>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls").field("listeners", &self.listeners.iter().map(|(a, _)| a).collect::<Vec<_>>()).finish()
    }
}

/// Pushes `e` unless already there (hosts share certificates and lines).
fn push_new(all: &mut Vec<String>, e: String) {
    if !all.contains(&e) {
        all.push(e);
    }
}

impl ServerTls {
    /// Ok(None) when no listener is TLS. Err: every problem, each
    /// "FILE:LINE: message" naming the directive's line.
    pub fn new(settings: &Settings) -> Result<Option<ServerTls>, Vec<String>> {
        let tls_listeners: Vec<SocketAddr> = settings.listen.iter().copied().filter(|a| settings.tls_listener(*a)).collect();
        if tls_listeners.is_empty() {
            return Ok(None);
        }
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let base = rustls::crypto::aws_lc_rs::default_provider();
        // Shared by every listener, made here, before the children fork.
        let session_store: Arc<dyn StoresServerSessions> = match settings.tls.session_cache {
            SessionCache::Shm { size } => match session_cache::SharedSessionCache::new(size, settings.tls.session_cache_timeout) {
                Ok(c) => Arc::new(c),
                Err(e) => {
                    let origin = settings.tls.session_cache_origin.as_ref().map_or_else(String::new, |o| format!("{o}: "));
                    errors.push(format!("{origin}SSLSessionCache: cannot map {size} bytes of shared memory: {e}"));
                    Arc::new(NoServerSessionStorage {})
                }
            },
            SessionCache::None | SessionCache::NoneNotNull => Arc::new(NoServerSessionStorage {}),
        };
        let stateful = matches!(settings.tls.session_cache, SessionCache::Shm { .. });
        let lifetime = settings.tls.session_cache_timeout.as_secs().min(u32::MAX as u64) as u32;
        // Draw the ticket secret now, in the parent, so children share it.
        let _ = tickets::master();
        // Certificates read once each (hosts and listeners share them).
        let mut loaded: CertCache = Vec::new();
        let stapled: Vec<std::path::PathBuf> = warren_config::stapling::stapled_certificates(settings).into_iter().map(|c| c.cert).collect();
        let mut listeners = Vec::new();
        for addr in tls_listeners {
            let hosts: Vec<&HostConfig> = settings.hosts_for_listener(addr).into_iter().filter(|h| h.tls.is_some()).collect();
            let Some(default) = hosts.first().and_then(|h| h.tls.as_ref()) else {
                let origin = settings.config_origin.as_ref().map_or_else(String::new, |o| format!("{o}: "));
                push_new(&mut errors, format!("{origin}Listen {addr} speaks TLS but no host serving it has SSLEngine on and a certificate"));
                continue;
            };
            let mut sni_hosts = Vec::new();
            for h in &hosts {
                let tls = h.tls.as_ref().expect("filtered");
                let mut keys = Vec::new();
                for pair in &tls.certificates {
                    let staple = stapled.contains(&pair.cert.0).then_some(settings.md.store_dir.as_path());
                    let id = (pair.clone(), tls.chain_file.as_ref().map(|(p, _)| p.clone()), staple.is_some());
                    let found = match loaded.iter().find(|(l, _)| *l == id) {
                        Some((_, k)) => k.clone(),
                        None => {
                            let k = match certs::load(pair, tls, &settings.md.store_dir, staple, &base, &mut warnings) {
                                Ok(l) => Some((l.key, l.ecdsa)),
                                Err(es) => {
                                    for e in es {
                                        push_new(&mut errors, e);
                                    }
                                    None
                                }
                            };
                            loaded.push((id, k.clone()));
                            k
                        }
                    };
                    keys.extend(found);
                }
                if tls.certificates.is_empty() {
                    push_new(&mut errors, format!("{}: SSLEngine on: no certificate configured [Hint: SSLCertificateFile]", tls.origin));
                }
                let mut names: Vec<String> = h.server_name.iter().cloned().collect();
                names.extend(h.aliases.iter().cloned());
                sni_hosts.push(sni::SniHost::new(names, keys, tls.strict_sni));
            }
            let (provider, versions) = match provider_for(&base, default, &mut warnings) {
                Ok(p) => p,
                Err(e) => {
                    push_new(&mut errors, e);
                    continue;
                }
            };
            let provider = Arc::new(provider);
            let mut resolver = sni::Resolver::new(sni_hosts, &provider.cipher_suites);
            let manages_domains = !settings.md.domains.is_empty();
            if manages_domains {
                resolver = resolver.with_acme_challenges(settings.md.store_dir.clone(), provider.clone());
            }
            let builder = match ServerConfig::builder_with_provider(provider).with_protocol_versions(&versions) {
                Ok(b) => b,
                Err(e) => {
                    push_new(&mut errors, format!("{}: TLS configuration for {addr}: {e}", default.origin));
                    continue;
                }
            };
            let mut config = builder.with_no_client_auth().with_cert_resolver(Arc::new(resolver));
            config.alpn_protocols = alpn_protocols(&settings.h2_listener(addr));
            if manages_domains {
                // Last: only a client offering nothing else gets it.
                config.alpn_protocols.push(acme_alpn::ALPN_ACME_TLS.to_vec());
            }
            config.enable_secret_extraction = true;
            // rustls then takes the first of the provider's suites (in
            // SSLCipherSuite's order, see provider_for) that the client
            // offers, rather than the client's first that we have.
            config.ignore_client_order = default.honor_cipher_order;
            config.max_early_data_size = 0;
            config.session_storage = session_store.clone();
            if default.session_tickets {
                config.ticketer = Arc::new(tickets::Ticketer::new(lifetime));
            } else if !stateful {
                // Neither tickets nor a cache: no resumption to offer.
                config.send_tls13_tickets = 0;
            }
            listeners.push((addr, Arc::new(config)));
        }
        if errors.is_empty() {
            Ok(Some(ServerTls { listeners, warnings }))
        } else {
            Err(errors)
        }
    }

    /// Warnings to log once at start.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The rustls configuration for connections accepted on a listener
    /// bound to `addr` (None: a plain HTTP listener).
    pub fn for_listener(&self, addr: SocketAddr) -> Option<Arc<ServerConfig>> {
        self.listeners.iter().find(|(a, _)| *a == addr).map(|(_, c)| c.clone())
    }
}

/// The provider with the default host's cipher suites, and its protocol
/// versions; Err when nothing is left.
fn provider_for(base: &CryptoProvider, host: &TlsHost, warnings: &mut Vec<String>) -> Result<(CryptoProvider, Vec<&'static rustls::SupportedProtocolVersion>), String> {
    let mut suites: Vec<SupportedCipherSuite> = Vec::new();
    let mut versions = Vec::new();
    if host.protocols.tls13 {
        let list = match &host.cipher_suite_tls13 {
            Some((spec, origin)) => {
                let (list, unknown) = ciphers::select13(spec);
                if !unknown.is_empty() {
                    push_new(warnings, format!("{origin}: SSLCipherSuite TLSv1.3: unknown cipher suites {} (ignored)", unknown.join(", ")));
                }
                list
            }
            None => ciphers::default13().to_vec(),
        };
        if !list.is_empty() {
            versions.push(&rustls::version::TLS13);
        }
        suites.extend(list);
    }
    if host.protocols.tls12 {
        let list = match &host.cipher_suite {
            Some((spec, origin)) => {
                let (list, unknown) = ciphers::select12(spec);
                if !unknown.is_empty() {
                    push_new(warnings, format!("{origin}: SSLCipherSuite: unknown ciphers {} (ignored)", unknown.join(", ")));
                }
                if list.is_empty() && !versions.is_empty() {
                    push_new(warnings, format!("{origin}: SSLCipherSuite {spec}: none of its ciphers is one warren has for TLSv1.2: only TLSv1.3 is offered"));
                }
                list
            }
            None => ciphers::select12(ciphers::DEFAULT12).0,
        };
        if !list.is_empty() {
            versions.push(&rustls::version::TLS12);
        }
        suites.extend(list);
    }
    if versions.is_empty() {
        let origin = host.cipher_suite.as_ref().or(host.cipher_suite_tls13.as_ref()).map(|(_, o)| o).or(host.protocols_origin.as_ref()).unwrap_or(&host.origin);
        return Err(format!("{origin}: SSLCipherSuite and SSLProtocol leave no cipher suite warren has (rustls: AES-GCM and ChaCha20-Poly1305 with ECDHE)"));
    }
    Ok((CryptoProvider { cipher_suites: suites, ..base.clone() }, versions))
}
