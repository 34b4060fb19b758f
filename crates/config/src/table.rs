//! The directive table, as Apache's `command_rec` tables: every directive
//! warren knows is declared here once, with the contexts it may stand in,
//! the MPMs that have it, its arguments and the function that applies it.
//! The builder's dispatch and its errors for a directive that is unknown, of
//! another MPM or out of place, `warren -L`, and the configuration
//! reference in docs/configuration.md (checked against it by a test) all
//! read this table.
//!
//! Which directives `.htaccess` files may hold, by override class, is in
//! [`htaccess`](crate::htaccess).

use crate::directives::core;
use crate::directives::{alias, authz, autoindex, env_vars, expires, headers, logs, mod_dir, proxy};
use crate::directives::cache;
use crate::directives::compress;
use crate::directives::fcgid;
use crate::directives::mass;
use crate::directives::md;
use crate::directives::h2;
use crate::directives::mime;
use crate::mime::ExtAttr;
use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::mpm::{Mpm, MpmTuning};
use crate::parse::Directive;
use crate::directives::proxy_http;
use crate::directives::remote_ip;
use crate::directives::tls;
use crate::settings::{HostConfig, Settings};

/// Where one directive stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Context {
    Server,
    VirtualHost,
    Directory,
    Files,
    Location,
}

impl Context {
    pub fn describe(self) -> &'static str {
        match self {
            Context::Server => "the server config",
            Context::VirtualHost => "<VirtualHost>",
            Context::Directory => "<Directory>",
            Context::Files => "<Files>",
            Context::Location => "<Location>",
        }
    }
}

/// Where a directive may stand: a set of [`Context`]s, `<Directory>`,
/// `<Files>` and `<Location>` (and their regex forms) counting as one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Contexts(u8);

impl Contexts {
    pub const SERVER: Contexts = Contexts(1);
    pub const VIRTUAL_HOST: Contexts = Contexts(2);
    pub const SECTIONS: Contexts = Contexts(4);
    /// The main server and virtual hosts.
    pub const HOST: Contexts = Contexts(1 | 2);
    pub const ANYWHERE: Contexts = Contexts(1 | 2 | 4);

    pub fn allows(self, here: Context) -> bool {
        let bit = match here {
            Context::Server => Contexts::SERVER,
            Context::VirtualHost => Contexts::VIRTUAL_HOST,
            Context::Directory | Context::Files | Context::Location => Contexts::SECTIONS,
        };
        self.0 & bit.0 != 0
    }

    pub fn describe(self) -> &'static str {
        match self {
            Contexts::SERVER => "the server config",
            Contexts::VIRTUAL_HOST => "<VirtualHost>",
            Contexts::HOST => "the server config and <VirtualHost>",
            Contexts::ANYWHERE => "the server config, <VirtualHost> and <Directory>, <Files>, <Location>",
            _ => "<Directory>, <Files>, <Location>",
        }
    }
}

/// What a directive's function sets, by the level it applies to.
#[derive(Clone, Copy)]
pub enum Apply {
    /// Acted on by the [`Reader`](crate::parse::Reader) as it reads the file
    /// (`Include`, `Define`, `LoadModule`, ...), wherever it stands; the
    /// builder never sees it.
    WhileReading,
    /// Server-wide settings.
    Server(fn(&mut Builder, &Directive, &mut Settings)),
    /// One of the MPM's counts, a whole number: the field it sets.
    Count(fn(&mut MpmTuning) -> &mut u32),
    /// The main server's or a virtual host's settings.
    Host(fn(&mut Builder, &Directive, &mut HostConfig)),
    /// Per-directory settings, at any level.
    Dir(fn(&mut Builder, &Directive, &mut DirConfig)),
    /// Accepted and not acted on, for the reason given: Apache's lines
    /// that change nothing that matters to warren's users (icons in
    /// listings, language priorities for negotiation warren does not do).
    /// Each is said as a warning, once per directive with its count.
    Inert(&'static str),
}

/// One directive, as Apache's `command_rec`.
#[derive(Clone, Copy)]
pub struct DirectiveSpec {
    pub name: &'static str,
    /// For an alias (`MaxClients`): the directive it is another name of.
    pub alias_of: Option<&'static str>,
    pub contexts: Contexts,
    /// The MPMs that have it; under another it is unknown, as in Apache.
    pub mpms: &'static [Mpm],
    /// Its arguments, as `warren -L` shows them.
    pub syntax: &'static str,
    pub apply: Apply,
}

impl DirectiveSpec {
    /// The name warnings about it use: an alias's directive.
    pub fn canonical_name(&self) -> &'static str {
        self.alias_of.unwrap_or(self.name)
    }
}

const ALL: &[Mpm] = &[Mpm::Event, Mpm::Worker, Mpm::Prefork];
const THREADED: &[Mpm] = &[Mpm::Event, Mpm::Worker];
const PREFORK: &[Mpm] = &[Mpm::Prefork];
const EVENT: &[Mpm] = &[Mpm::Event];

const fn spec(name: &'static str, contexts: Contexts, syntax: &'static str, apply: Apply) -> DirectiveSpec {
    DirectiveSpec { name, alias_of: None, contexts, mpms: ALL, syntax, apply }
}
const fn reading(name: &'static str, syntax: &'static str) -> DirectiveSpec {
    spec(name, Contexts::ANYWHERE, syntax, Apply::WhileReading)
}
const fn server(name: &'static str, syntax: &'static str, apply: fn(&mut Builder, &Directive, &mut Settings)) -> DirectiveSpec {
    spec(name, Contexts::SERVER, syntax, Apply::Server(apply))
}
const fn count(name: &'static str, mpms: &'static [Mpm], field: fn(&mut MpmTuning) -> &mut u32) -> DirectiveSpec {
    DirectiveSpec { mpms, ..spec(name, Contexts::SERVER, "n", Apply::Count(field)) }
}
const fn alias(name: &'static str, of: DirectiveSpec) -> DirectiveSpec {
    DirectiveSpec { name, alias_of: Some(of.name), ..of }
}
const fn host(name: &'static str, syntax: &'static str, apply: fn(&mut Builder, &Directive, &mut HostConfig)) -> DirectiveSpec {
    spec(name, Contexts::HOST, syntax, Apply::Host(apply))
}
const fn dir(name: &'static str, syntax: &'static str, apply: fn(&mut Builder, &Directive, &mut DirConfig)) -> DirectiveSpec {
    spec(name, Contexts::ANYWHERE, syntax, Apply::Dir(apply))
}

const fn inert(name: &'static str, contexts: Contexts, syntax: &'static str, why: &'static str) -> DirectiveSpec {
    spec(name, contexts, syntax, Apply::Inert(why))
}

const NEGOTIATION: &str = "warren makes no negotiated answer uncacheable for HTTP/1.0 clients: caches go by its Vary";
const LISTING_LOOK: &str = "warren's directory listings have one plain look, without icons, descriptions, header or readme files";

const OPENSSL_ONLY: &str = "warren's TLS is rustls, which draws its own randomness and has no OpenSSL to configure";
const NO_PASSPHRASE: &str = "warren reads only unencrypted private keys (an encrypted one is an error at start): there is no pass phrase to ask for";
const STAPLING_TUNING: &str = "accepted, not acted on: the ACME helper fetches responses (10 s timeout, refreshed halfway to nextUpdate, retried with backoff) and only a current, checked response is stapled (docs/acme.md)";

const NO_PUSH: &str = "warren does no HTTP/2 server push (browsers have dropped it)";
const NO_H2_WORKERS: &str = "warren answers HTTP/2 streams on the MPM's own threads: there is no separate pool of HTTP/2 workers to size";
const NO_EARLY_HINTS: &str = "warren makes no 103 Early Hints of its own (a proxied backend's are passed on: H2EarlyHints for HTTP/2 clients)";
const RUSTLS_RECORDS: &str = "warren's TLS records are rustls' (up to 16 KB each from the start): there is no warm-up nor cool-down of record sizes";

const H2_MAX_SESSION_STREAMS: DirectiveSpec = host("H2MaxSessionStreams", "n", h2::max_session_streams);

const MAX_REQUEST_WORKERS: DirectiveSpec = count("MaxRequestWorkers", ALL, |t| &mut t.max_request_workers);
const MAX_CONNECTIONS_PER_CHILD: DirectiveSpec = count("MaxConnectionsPerChild", ALL, |t| &mut t.max_connections_per_child);

/// The compression settings of a directory, for directives/compress.rs.
fn output_filters(dir: &mut DirConfig) -> &mut crate::compress::OutputFilters {
    dir.output_filters.get_or_insert_with(Default::default)
}

pub static DIRECTIVES: &[DirectiveSpec] = &[
    // Read as the file is read (parse.rs).
    reading("Include", "file|directory|wildcard"),
    reading("IncludeOptional", "file|directory|wildcard"),
    reading("Define", "NAME [value]"),
    reading("UnDefine", "NAME"),
    reading("ServerRoot", "directory"),
    reading("LoadModule", "module file"),
    // Server-wide.
    server("Listen", "[addr:]port [http|https]", core::listen),
    server("PidFile", "file", core::pid_file),
    server("User", "name|#uid", core::user),
    server("Group", "name|#gid", core::group),
    server("Timeout", "seconds", core::timeout),
    server("KeepAlive", "On|Off", core::keep_alive),
    server("KeepAliveTimeout", "seconds|NNNms", core::keep_alive_timeout),
    server("MaxKeepAliveRequests", "n", core::max_keep_alive_requests),
    server("LimitRequestLine", "bytes", core::limit_request_line),
    server("LimitRequestFieldSize", "bytes", core::limit_request_field_size),
    server("LimitRequestFields", "n", core::limit_request_fields),
    server("LimitRequestHeadSize", "bytes", core::limit_request_head_size),
    server("RequestReadTimeout", "[header=t[-max][,MinRate=r]] [body=t[-max][,MinRate=r]]", core::request_read_timeout),
    server("ServerTokens", "Full|OS|Minimal|Minor|Major|Prod", core::server_tokens),
    server("ServerSignature", "On|Off|EMail", core::server_signature),
    server("HostnameLookups", "Off", core::hostname_lookups),
    server("TraceEnable", "On|Off|extended", core::trace_enable),
    server("LogLevel", "level", core::log_level),
    server("BufferedLogs", "On|Off", core::buffered_logs),
    server("SyslogSocket", "path", core::syslog_socket),
    server("ErrorLogFormat", "\"format\"", core::error_log_format),
    server("TypesConfig", "file", mime::types_config),
    server("ExtendedStatus", "On|Off", core::extended_status),
    server("GracefulShutdownTimeout", "seconds", core::graceful_shutdown_timeout),
    server("ListenBacklog", "n", core::listen_backlog),
    server("MemoryBudget", "bytes[K|M|G]", core::memory_budget),
    // The MPM's counts.
    count("StartServers", ALL, |t| &mut t.start_servers),
    count("ServerLimit", ALL, |t| &mut t.server_limit),
    MAX_REQUEST_WORKERS,
    alias("MaxClients", MAX_REQUEST_WORKERS),
    MAX_CONNECTIONS_PER_CHILD,
    alias("MaxRequestsPerChild", MAX_CONNECTIONS_PER_CHILD),
    count("ThreadsPerChild", THREADED, |t| &mut t.threads_per_child),
    count("ThreadLimit", THREADED, |t| &mut t.thread_limit),
    count("MinSpareThreads", THREADED, |t| &mut t.min_spare_threads),
    count("MaxSpareThreads", THREADED, |t| &mut t.max_spare_threads),
    count("MinSpareServers", PREFORK, |t| &mut t.min_spare_servers),
    count("MaxSpareServers", PREFORK, |t| &mut t.max_spare_servers),
    count("MaxChildConnections", EVENT, |t| &mut t.max_child_connections),
    // Per host.
    host("ServerName", "[scheme://]name[:port]", core::server_name),
    spec("ServerAlias", Contexts::VIRTUAL_HOST, "names...", Apply::Host(core::server_alias)),
    host("ServerAdmin", "address", core::server_admin),
    host("DocumentRoot", "directory", core::document_root),
    host("AccessFileName", "filename...", core::access_file_name),
    host("ErrorLog", "file|\"|program\"|syslog[:facility]", core::error_log),
    host("LogFormat", "\"format\" [nickname]", logs::log_format),
    host("CustomLog", "file|\"|program\" format|nickname", logs::custom_log),
    host("TransferLog", "file", logs::custom_log),
    host("ProxyPass", "/path backend-URL|! [key=value...]", proxy::proxy_pass),
    host("ProxyPassMatch", "regex backend-URL|! [key=value...]", proxy::proxy_pass),
    host("ProxyTimeout", "seconds", proxy::proxy_timeout),
    host("BalancerMember", "[balancer://name] member-URL [key=value...]", crate::directives::balancer::directive),
    host("ProxySet", "balancer://name key=value...", crate::directives::balancer::directive),
    host("ProxyHCExpr", "name {expression}", crate::directives::balancer::hc_expr),
    host("ProxyPassReverse", "/path backend-URL", proxy_http::reverse),
    host("ProxyPassReverseCookieDomain", "backend-domain public-domain", proxy_http::reverse),
    host("ProxyPassReverseCookiePath", "backend-path public-path", proxy_http::reverse),
    host("ProxyPreserveHost", "On|Off", proxy_http::preserve_host),
    host("ProxyAddHeaders", "On|Off", proxy_http::add_headers),
    host("ProxyVia", "On|Off|Full|Block", proxy_http::via),
    host("ProxyErrorOverride", "On|Off", proxy_http::error_override),
    host("ProxyRequests", "Off", proxy_http::requests),
    host("ProxyWebsocketIdleTimeout", "seconds", proxy_http::websocket_idle_timeout),
    host("ProxyWebsocketMaxPerClient", "n", proxy_http::websocket_max_per_client),
    host("SSLProxyEngine", "On|Off", proxy_http::ssl_proxy_engine),
    host("SSLProxyVerify", "none|optional|require", proxy_http::ssl_proxy_verify),
    host("SSLProxyCACertificateFile", "file", proxy_http::ssl_proxy_ca_file),
    host("SSLProxyCACertificatePath", "directory", proxy_http::ssl_proxy_ca_path),
    host("SSLProxyCheckPeerName", "On|Off", proxy_http::ssl_proxy_check_peer_name),
    host("SSLProxyCheckPeerExpire", "On|Off", proxy_http::ssl_proxy_check_peer_expire),
    host("SSLProxyCheckPeerCN", "On|Off", proxy_http::ssl_proxy_check_peer_cn),
    host("SSLProxyProtocol", "[+|-]protocol...", proxy_http::ssl_proxy_protocol),
    host("Alias", "/url-path file|directory", alias::url_alias),
    host("AliasMatch", "regex file|directory", alias::url_alias),
    host("ScriptAlias", "/url-path file|directory", alias::url_alias),
    host("ScriptAliasMatch", "regex file|directory", alias::url_alias),
    // mod_vhost_alias and mod_userdir (mass.rs).
    host("VirtualDocumentRoot", "pattern|none", mass::vhost_alias),
    host("VirtualDocumentRootIP", "pattern|none", mass::vhost_alias),
    host("VirtualScriptAlias", "pattern|none", mass::vhost_alias),
    host("VirtualScriptAliasIP", "pattern|none", mass::vhost_alias),
    host("UserDir", "directory-or-URL...|disabled [user...]|enabled user...", mass::user_dir),
    host("RemoteIPHeader", "header-field", |b, d, host| remote_ip::header(b, d, &mut host.remote_ip)),
    host("RemoteIPInternalProxy", "addr|net...", |b, d, host| remote_ip::internal_proxy(b, d, &mut host.remote_ip)),
    host("RemoteIPTrustedProxy", "addr|net...", |b, d, host| remote_ip::trusted_proxy(b, d, &mut host.remote_ip)),
    host("RemoteIPInternalProxyList", "file", |b, d, host| remote_ip::internal_proxy_list(b, d, &mut host.remote_ip)),
    host("RemoteIPTrustedProxyList", "file", |b, d, host| remote_ip::trusted_proxy_list(b, d, &mut host.remote_ip)),
    host("RemoteIPProxiesHeader", "header-field", |b, d, host| remote_ip::proxies_header(b, d, &mut host.remote_ip)),
    host("RemoteIPProxyProtocol", "On|Off", |b, d, host| remote_ip::proxy_protocol(b, d, &mut host.remote_ip)),
    host("RemoteIPProxyProtocolExceptions", "addr|net...", |b, d, host| remote_ip::proxy_protocol_exceptions(b, d, &mut host.remote_ip)),
    // mod_ssl.
    server("SSLSessionCache", "none|nonenotnull|shmcb:path[(size)]|dbm:path", tls::session_cache),
    server("SSLSessionCacheTimeout", "seconds", tls::session_cache_timeout),
    server("SSLStaplingCache", "shmcb:path[(size)]", tls::stapling_cache),
    host("SSLEngine", "On|Off", tls::engine),
    host("SSLCertificateFile", "file", tls::certificate_file),
    host("SSLCertificateKeyFile", "file", tls::certificate_key_file),
    host("SSLCertificateChainFile", "file", tls::certificate_chain_file),
    host("SSLProtocol", "[+|-]protocol...", tls::protocol),
    host("SSLCipherSuite", "[SSL|TLSv1.3] cipher-spec", tls::cipher_suite),
    host("SSLHonorCipherOrder", "On|Off", tls::honor_cipher_order),
    host("SSLUseStapling", "On|Off", tls::use_stapling),
    host("SSLStrictSNIVHostCheck", "On|Off", tls::strict_sni),
    host("SSLSessionTickets", "On|Off", tls::session_tickets),
    host("SSLCompression", "Off", tls::compression),
    dir("SSLOptions", "[+|-]option...", tls::options),
    // mod_md (also inside <MDomainSet>, see md.rs).
    server("MDomain", "name... [auto|manual]", md::domain),
    server("MDMember", "name...", |b, d, _| b.error(&d.origin, "MDMember stands only inside <MDomainSet>")),
    server("MDStoreDir", "directory", md::store_dir),
    server("MDHelperUser", "user|root", md::helper_user),
    server("MDCertificateAuthority", "URL|letsencrypt|letsencrypt-test", |b, d, s| md::ca(b, d, &mut s.md.options)),
    server("MDCACertificateFile", "file", |b, d, s| md::ca_certificate_file(b, d, &mut s.md.options)),
    server("MDContactEmail", "address", |b, d, s| md::contact(b, d, &mut s.md.options)),
    server("MDCertificateAgreement", "accepted", |b, d, s| md::agreement(b, d, &mut s.md.options)),
    server("MDPrivateKeys", "type [bits]...", |b, d, s| md::private_keys(b, d, &mut s.md.options)),
    server("MDRenewWindow", "n%|duration", |b, d, s| md::renew_window(b, d, &mut s.md.options)),
    server("MDRetryDelay", "duration", |b, d, s| md::retry_delay(b, d, &mut s.md.options)),
    server("MDChallengeDns01", "command", |b, d, s| md::challenge_dns01(b, d, &mut s.md.options)),
    server("MDRequireHttps", "off|temporary|permanent", |b, d, s| md::require_https(b, d, &mut s.md.options)),
    server("MDStapling", "on|off", |b, d, s| md::stapling(b, d, &mut s.md.options)),
    server("MDMustStaple", "on|off", |b, d, s| md::must_staple(b, d, &mut s.md.options)),
    server("MDCAChallenges", "type...", |b, d, s| md::ca_challenges(b, d, &mut s.md.options)),
    dir("SSLRequireSSL", "", tls::require_ssl),
    // Accepted, not acted on (see Apply::Inert).
    inert("SSLRandomSeed", Contexts::SERVER, "startup|connect builtin|file:path|exec:path [bytes]", OPENSSL_ONLY),
    inert("SSLPassPhraseDialog", Contexts::SERVER, "builtin|exec:path||path", NO_PASSPHRASE),
    inert("SSLStaplingResponderTimeout", Contexts::HOST, "seconds", STAPLING_TUNING),
    inert("SSLStaplingReturnResponderErrors", Contexts::HOST, "On|Off", STAPLING_TUNING),
    inert("SSLStaplingStandardCacheTimeout", Contexts::HOST, "seconds", STAPLING_TUNING),
    inert("SSLStaplingErrorCacheTimeout", Contexts::HOST, "seconds", STAPLING_TUNING),
    inert("SSLStaplingFakeTryLater", Contexts::HOST, "On|Off", STAPLING_TUNING),
    inert("SSLStaplingResponseMaxAge", Contexts::HOST, "seconds", STAPLING_TUNING),
    inert("SSLStaplingResponseTimeSkew", Contexts::HOST, "seconds", STAPLING_TUNING),
    inert("SSLInsecureRenegotiation", Contexts::HOST, "On|Off", "rustls never renegotiates"),
    inert("SSLOpenSSLConfCmd", Contexts::HOST, "command value", OPENSSL_ONLY),
    // mod_cache, mod_cache_disk, mod_cache_socache (cache.rs).
    host("CacheEnable", "disk|socache [/url-path]", cache::enable),
    host("CacheDisable", "/url-path", cache::disable),
    host("CacheQuickHandler", "On|Off", cache::quick_handler),
    host("CacheDefaultExpire", "seconds", cache::default_expire),
    host("CacheMaxExpire", "seconds", cache::max_expire),
    host("CacheMinExpire", "seconds", cache::min_expire),
    host("CacheLastModifiedFactor", "float", cache::last_modified_factor),
    host("CacheIgnoreNoLastMod", "On|Off", cache::ignore_no_last_mod),
    host("CacheIgnoreCacheControl", "On|Off", cache::ignore_cache_control),
    host("CacheIgnoreHeaders", "None|header...", cache::ignore_headers),
    host("CacheIgnoreQueryString", "On|Off", cache::ignore_query_string),
    host("CacheIgnoreURLSessionIdentifiers", "None|identifier...", cache::ignore_url_session_identifiers),
    host("CacheStoreNoStore", "On|Off", cache::store_no_store),
    host("CacheStorePrivate", "On|Off", cache::store_private),
    host("CacheLock", "On|Off", cache::lock),
    host("CacheLockMaxAge", "seconds", cache::lock_max_age),
    host("CacheStaleOnError", "On|Off", cache::stale_on_error),
    host("CacheHeader", "On|Off", cache::header),
    host("CacheDetailHeader", "On|Off", cache::detail_header),
    host("CacheKeyBaseURL", "URL", cache::key_base_url),
    host("CacheSocacheMaxSize", "bytes", cache::socache_max_size),
    host("CacheMaxFileSize", "bytes", cache::max_file_size),
    host("CacheRoot", "directory", cache::root),
    // HTTP/2: core's Protocols, and mod_http2.
    host("Protocols", "protocol...", h2::protocols),
    host("ProtocolsHonorOrder", "On|Off", h2::protocols_honor_order),
    H2_MAX_SESSION_STREAMS,
    // warren's: nginx's http2_max_concurrent_streams, under mod_http2's prefix.
    alias("H2MaxConcurrentStreams", H2_MAX_SESSION_STREAMS),
    host("H2WindowSize", "bytes", h2::window_size),
    host("H2MaxDataFrameLen", "n", h2::max_data_frame_len),
    host("H2WebSockets", "On|Off", h2::websockets),
    host("H2Direct", "On|Off", h2::direct),
    dir("H2Upgrade", "On|Off", h2::upgrade),
    dir("H2StreamTimeout", "time-interval[s]", h2::stream_timeout),
    dir("H2Push", "On|Off", h2::push),
    inert("H2PushPriority", Contexts::HOST, "mime-type [after|before|interleaved] [weight]", NO_PUSH),
    inert("H2PushDiarySize", Contexts::HOST, "n", NO_PUSH),
    inert("H2PushResource", Contexts::ANYWHERE, "[add] path [critical]", NO_PUSH),
    inert("H2MinWorkers", Contexts::SERVER, "n", NO_H2_WORKERS),
    inert("H2MaxWorkers", Contexts::SERVER, "n", NO_H2_WORKERS),
    inert("H2MaxWorkerIdleSeconds", Contexts::SERVER, "n", NO_H2_WORKERS),
    inert("H2StreamMaxMemSize", Contexts::HOST, "bytes", "warren buffers no stream's answer beyond what the client's flow-control window lets it send: a stream waits for the window, not a memory limit"),
    inert("H2ModernTLSOnly", Contexts::HOST, "On|Off", "warren's TLS (rustls) has only TLS 1.2 and 1.3 with ECDHE and AEAD suites, none on RFC 9113's block list: HTTP/2 over TLS is always modern"),
    inert("H2SerializeHeaders", Contexts::HOST, "On|Off", "warren hands HTTP/2 requests to its handlers as parsed, never serialized to HTTP/1.1 (Apache 2.4 dropped the directive too)"),
    inert("H2CopyFiles", Contexts::ANYWHERE, "On|Off", "warren has no modules handing it files with lifetimes of their own: nothing to copy"),
    host("H2EarlyHints", "On|Off", h2::early_hints),
    inert("H2EarlyHint", Contexts::ANYWHERE, "name value", NO_EARLY_HINTS),
    inert("H2Padding", Contexts::HOST, "numbits", "warren adds no padding to HTTP/2 frames"),
    inert("H2TLSWarmUpSize", Contexts::HOST, "bytes", RUSTLS_RECORDS),
    inert("H2TLSCoolDownSecs", Contexts::HOST, "seconds", RUSTLS_RECORDS),
    inert("H2OutputBuffering", Contexts::HOST, "On|Off", "warren has no switch for buffering HTTP/2 output: answers go out as flow control allows"),
    inert("H2ProxyRequests", Contexts::HOST, "On|Off", "warren is no forward proxy"),
    inert("H2AltSvc", Contexts::HOST, "specification", "warren sends no Alt-Svc header (mod_http2 dropped the directive)"),
    inert("H2AltSvcMaxAge", Contexts::HOST, "seconds", "warren sends no Alt-Svc header (mod_http2 dropped the directive)"),
    inert("H2SessionExtraFiles", Contexts::HOST, "n", "obsolete in mod_http2 too: warren keeps no extra files open per HTTP/2 connection"),
    inert("H2MaxHeaderBlockLen", Contexts::HOST, "n", "warren sets no separate limit on the size of its own response headers"),
    // Accepted, not acted on (see Apply::Inert).
    dir("AddCharset", "charset extension...", |b, d, dir| mime::add(b, d, dir, ExtAttr::Charset)),
    dir("RemoveCharset", "extension...", |b, d, dir| mime::remove(b, d, dir, ExtAttr::Charset)),
    dir("AddLanguage", "language extension...", |b, d, dir| mime::add(b, d, dir, ExtAttr::Language)),
    dir("RemoveLanguage", "extension...", |b, d, dir| mime::remove(b, d, dir, ExtAttr::Language)),
    dir("DefaultLanguage", "language", mime::default_language),
    dir("AddEncoding", "encoding extension...", |b, d, dir| mime::add(b, d, dir, ExtAttr::Encoding)),
    dir("RemoveEncoding", "extension...", |b, d, dir| mime::remove(b, d, dir, ExtAttr::Encoding)),
    dir("RemoveType", "extension...", mime::remove_type),
    dir("RemoveHandler", "extension...", |b, d, dir| mime::remove(b, d, dir, ExtAttr::TypeMap)),
    dir("ForceType", "type|None", mime::force_type),
    inert("DefaultType", Contexts::ANYWHERE, "none|type", "Apache 2.4 does nothing with it either; a file of no known type goes without Content-Type"),
    dir("LanguagePriority", "language...", mime::language_priority),
    dir("ForceLanguagePriority", "None|Prefer|Fallback...", mime::force_language_priority),
    dir("MultiviewsMatch", "Any|NegotiatedOnly|Handlers|Filters...", mime::multiviews_match),
    inert("CacheNegotiatedDocs", Contexts::HOST, "On|Off", NEGOTIATION),
    inert("IndexOptions", Contexts::ANYWHERE, "[+|-]option...", LISTING_LOOK),
    inert("IndexOrderDefault", Contexts::ANYWHERE, "Ascending|Descending Name|Date|Size|Description", "warren's listings are sorted by name"),
    inert("IndexStyleSheet", Contexts::ANYWHERE, "url-path", LISTING_LOOK),
    inert("IndexHeadInsert", Contexts::ANYWHERE, "\"markup\"", LISTING_LOOK),
    inert("HeaderName", Contexts::ANYWHERE, "file", LISTING_LOOK),
    inert("ReadmeName", Contexts::ANYWHERE, "file", LISTING_LOOK),
    inert("AddIcon", Contexts::ANYWHERE, "icon name...", LISTING_LOOK),
    inert("AddIconByType", Contexts::ANYWHERE, "icon MIME-type...", LISTING_LOOK),
    inert("AddIconByEncoding", Contexts::ANYWHERE, "icon encoding...", LISTING_LOOK),
    inert("DefaultIcon", Contexts::ANYWHERE, "url-path", LISTING_LOOK),
    inert("AddAlt", Contexts::ANYWHERE, "text file...", LISTING_LOOK),
    inert("AddAltByType", Contexts::ANYWHERE, "text MIME-type...", LISTING_LOOK),
    inert("AddAltByEncoding", Contexts::ANYWHERE, "text encoding...", LISTING_LOOK),
    inert("AddDescription", Contexts::ANYWHERE, "text file...", LISTING_LOOK),
    inert("ProxyStatus", Contexts::HOST, "Off|On|Full", "warren's server-status has no section for proxied backends (each <Pool> has its own status page)"),
    inert("Mutex", Contexts::SERVER, "mechanism [mutex-name...]", "warren's processes take turns through a futex in shared memory: no lock files, no mechanism to choose"),
    inert("DefaultRuntimeDir", Contexts::SERVER, "directory", "warren keeps no runtime files but the PidFile (and sockets its pools name)"),
    inert("EnableSendfile", Contexts::ANYWHERE, "On|Off", "warren always sends files from disk with sendfile (small ones from a cache in memory): there is no switch"),
    inert("EnableMMAP", Contexts::ANYWHERE, "On|Off", "warren never maps files into memory to send them"),
    inert("FileETag", Contexts::ANYWHERE, "INode|MTime|Size|All|None...", "warren's ETags are always made of the file's size and modification time (Apache's FileETag MTime Size)"),
    // Per directory.
    dir("Options", "[+|-]option...", core::options),
    dir("Require", "all granted|all denied|ip net...|local|valid-user|user name...|group name...", authz::require),
    dir("AuthType", "Basic|None", crate::directives::auth::auth_type),
    dir("AuthName", "realm", crate::directives::auth::auth_name),
    dir("AuthUserFile", "file", crate::directives::auth::auth_user_file),
    dir("AuthGroupFile", "file", crate::directives::auth::auth_group_file),
    dir("AuthBasicProvider", "file", crate::directives::auth::auth_basic_provider),
    dir("Order", "Deny,Allow|Allow,Deny|Mutual-failure", crate::directives::access_compat::order),
    dir("Allow", "from all|address|partial-address|network...", crate::directives::access_compat::allow),
    dir("Deny", "from all|address|partial-address|network...", crate::directives::access_compat::deny),
    dir("Satisfy", "Any|All", crate::directives::access_compat::satisfy),
    dir("DirectoryIndex", "file...|disabled", mod_dir::directory_index),
    dir("ErrorDocument", "code /local/url|URL|\"text\"|default", core::error_document),
    dir("AddType", "type extension...", mime::add_type),
    dir("AddDefaultCharset", "On|Off|charset", core::add_default_charset),
    dir("LimitRequestBody", "bytes", core::limit_request_body),
    dir("AllowOverride", "None|All|AuthConfig|FileInfo|Indexes|Limit|Options[=opt,...]...", core::allow_override),
    dir("AllowOverrideList", "None|directive...", |b, d, dir| core::allow_override_list(b, d, dir, |n| find(n).is_some())),
    dir("SetHandler", "handler [flushpackets=on|off]", core::set_handler),
    dir("ProxyFCGIBackendType", "FPM|GENERIC", proxy::proxy_fcgi_backend_type),
    dir("AcceptPathInfo", "On|Off|Default", core::accept_path_info),
    dir("DirectorySlash", "On|Off|NotFound", mod_dir::directory_slash),
    dir("FallbackResource", "/local-url|disabled", mod_dir::fallback_resource),
    dir("AddHandler", "handler extension...", mime::add_handler),
    // mod_cgi and mod_cgid (see cgi.rs; the programs run in the handler's cgi module).
    server("ScriptLog", "file-path", crate::directives::cgi::script_log),
    server("ScriptLogLength", "bytes", crate::directives::cgi::script_log_length),
    server("ScriptLogBuffer", "bytes", crate::directives::cgi::script_log_buffer),
    dir("CGIPassAuth", "On|Off", crate::directives::cgi::cgi_pass_auth),
    dir("CGIVar", "REQUEST_URI original-uri|current-uri", crate::directives::cgi::cgi_var),
    inert("ScriptSock", Contexts::SERVER, "file-path", "warren's CGI spawner is reached through a socket pair made at start, not a named socket"),
    // mpm-itk, suexec and mod_fcgid: mapped onto a pool per host (see fcgid.rs).
    spec("AssignUserID", Contexts::HOST, "user group", Apply::Dir(fcgid::assign_user)),
    spec("SuexecUserGroup", Contexts::HOST, "user group", Apply::Dir(fcgid::assign_user)),
    spec("MaxClientsVHost", Contexts::HOST, "number", Apply::Dir(fcgid::limit)),
    dir("FcgidWrapper", "command [.suffix] [virtual]", fcgid::wrapper),
    spec("FcgidMaxProcesses", Contexts::HOST, "number", Apply::Dir(fcgid::limit)),
    spec("FcgidMaxProcessesPerClass", Contexts::HOST, "number", Apply::Dir(fcgid::limit)),
    spec("FcgidMinProcessesPerClass", Contexts::HOST, "number", Apply::Dir(fcgid::limit)),
    spec("FcgidMaxRequestsPerProcess", Contexts::HOST, "number", Apply::Dir(fcgid::limit)),
    spec("FcgidIdleTimeout", Contexts::HOST, "seconds", Apply::Dir(fcgid::limit)),
    spec("FcgidBusyTimeout", Contexts::HOST, "seconds", Apply::Dir(fcgid::limit)),
    spec("FcgidMaxRequestLen", Contexts::HOST, "bytes", Apply::Dir(fcgid::limit)),
    spec("FcgidInitialEnv", Contexts::HOST, "name [value]", Apply::Dir(fcgid::initial_env)),
    inert("FcgidProcessLifeTime", Contexts::HOST, "seconds", "a pool's children are replaced after pm.max_requests requests (FcgidMaxRequestsPerProcess), not after a time"),
    inert("FcgidIOTimeout", Contexts::HOST, "seconds", "a request's time is bounded by FcgidBusyTimeout (the pool's request_terminate_timeout)"),
    inert("FcgidIdleScanInterval", Contexts::HOST, "seconds", "the pool looks for idle children itself"),
    inert("FcgidBusyScanInterval", Contexts::HOST, "seconds", "the pool looks for busy children itself"),
    inert("FcgidErrorScanInterval", Contexts::HOST, "seconds", "the pool replaces children that fail itself"),
    inert("FcgidZombieScanInterval", Contexts::HOST, "seconds", "the pool reaps its children itself"),
    inert("FcgidSpawnScoreUpLimit", Contexts::HOST, "number", "the pool's own pm.max_spawn_rate paces its starts"),
    inert("FcgidIPCDir", Contexts::HOST, "path", "warren makes each pool's socket itself"),
    inert("FcgidProcessTableFile", Contexts::HOST, "path", "warren keeps its pools' table itself"),
    inert("FcgidConnectTimeout", Contexts::HOST, "seconds", "warren's pools are on local sockets"),
    inert("FcgidOutputBufferSize", Contexts::HOST, "bytes", "warren streams the pool's answer"),
    inert("FcgidPassHeader", Contexts::ANYWHERE, "header", "warren passes every request header as HTTP_*"),
    // mod_php: run in a pool of the host's (see mod_php.rs).
    dir("php_value", "name value", crate::directives::mod_php::setting),
    dir("php_flag", "name on|off", crate::directives::mod_php::setting),
    dir("php_admin_value", "name value", crate::directives::mod_php::setting),
    dir("php_admin_flag", "name on|off", crate::directives::mod_php::setting),
    dir("IndexIgnore", "wildcard...", autoindex::index_ignore),
    dir("IndexIgnoreReset", "On|Off", autoindex::index_ignore_reset),
    spec("UseCanonicalName", Contexts::ANYWHERE, "On|Off|DNS", Apply::Dir(core::use_canonical_name)),
    dir("Redirect", "[status] /url-path [URL]", alias::redirect),
    dir("RedirectMatch", "[status] regex [URL]", alias::redirect),
    dir("RedirectPermanent", "/url-path URL", alias::redirect),
    dir("RedirectTemp", "/url-path URL", alias::redirect),
    dir("RewriteEngine", "On|Off", crate::directives::rewrite::directive),
    dir("RewriteOptions", "Inherit|InheritBefore|InheritDown|InheritDownBefore|IgnoreInherit|MergeBase|AllowNoSlash...", crate::directives::rewrite::directive),
    dir("RewriteBase", "/url-path", crate::directives::rewrite::directive),
    dir("RewriteCond", "TestString CondPattern [flags]", crate::directives::rewrite::directive),
    dir("RewriteRule", "Pattern Substitution [flags]", crate::directives::rewrite::directive),
    host("RewriteMap", "name txt:file|rnd:file|int:function", crate::directives::rewrite::map),
    dir("Header", "[always|onsuccess] set|append|merge|add|unset|echo|edit|edit*|setifempty header [value] [replacement] [env=[!]VAR|expr=...]", headers::header),
    dir("RequestHeader", "set|append|merge|add|unset|edit|edit*|setifempty header [value] [replacement] [env=[!]VAR|expr=...]", headers::request_header),
    dir("ExpiresActive", "On|Off", expires::expires_active),
    dir("ExpiresByType", "type/subtype \"base [plus] n unit...\"|A<s>|M<s>", expires::expires_by_type),
    dir("ExpiresDefault", "\"base [plus] n unit...\"|A<s>|M<s>", expires::expires_default),
    dir("SetEnv", "VAR [value]", env_vars::set_env),
    dir("UnsetEnv", "VAR...", env_vars::unset_env),
    dir("SetEnvIf", "attribute regex [!]VAR[=value]...", env_vars::set_env_if),
    dir("SetEnvIfNoCase", "attribute regex [!]VAR[=value]...", env_vars::set_env_if),
    dir("SetEnvIfExpr", "\"expr\" [!]VAR[=value]...", env_vars::set_env_if),
    dir("BrowserMatch", "regex [!]VAR[=value]...", env_vars::set_env_if),
    dir("BrowserMatchNoCase", "regex [!]VAR[=value]...", env_vars::set_env_if),
    dir("AddOutputFilterByType", "DEFLATE|BROTLI_COMPRESS[;...] media-type...", |b, d, dir| compress::add_output_filter_by_type(b, d, output_filters(dir))),
    dir("SetOutputFilter", "DEFLATE|BROTLI_COMPRESS[;...]", |b, d, dir| compress::set_output_filter(b, d, output_filters(dir))),
    dir("AddOutputFilter", "DEFLATE|BROTLI_COMPRESS[;...] extension...", |b, d, dir| compress::add_output_filter(b, d, output_filters(dir))),
    dir("RemoveOutputFilter", "extension...", |b, d, dir| compress::remove_output_filter(b, d, output_filters(dir))),
    dir("PrecompressedFiles", "On|Off", |b, d, dir| compress::precompressed_files(b, d, output_filters(dir))),
    spec("DeflateCompressionLevel", Contexts::HOST, "1-9", Apply::Dir(|b, d, dir| compress::deflate_compression_level(b, d, output_filters(dir)))),
    spec("BrotliCompressionQuality", Contexts::HOST, "0-11", Apply::Dir(|b, d, dir| compress::brotli_compression_quality(b, d, output_filters(dir)))),
    spec("BrotliWindowSize", Contexts::HOST, "10-24", Apply::Dir(|b, d, dir| compress::brotli_window_size(b, d, output_filters(dir)))),
    spec("DeflateAlterETag", Contexts::HOST, "AddSuffix|NoChange|Remove", Apply::Dir(|b, d, dir| compress::deflate_alter_etag(b, d, output_filters(dir)))),
    spec("BrotliAlterETag", Contexts::HOST, "AddSuffix|NoChange|Remove", Apply::Dir(|b, d, dir| compress::brotli_alter_etag(b, d, output_filters(dir)))),
];

/// The directive called `name` (case does not matter, as in Apache).
pub fn find(name: &str) -> Option<&'static DirectiveSpec> {
    DIRECTIVES.iter().find(|spec| spec.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_directive_is_declared_once() {
        for (i, spec) in DIRECTIVES.iter().enumerate() {
            assert!(DIRECTIVES[..i].iter().all(|earlier| !earlier.name.eq_ignore_ascii_case(spec.name)), "{} is declared twice", spec.name);
            if let Some(of) = spec.alias_of {
                assert!(find(of).is_some_and(|target| target.alias_of.is_none()), "{} is an alias of {of}, which is not a directive", spec.name);
            }
        }
    }

    /// Each directive of docs/configuration.md's "Configuration reference",
    /// by the heading of the table it is documented in, as the contexts that
    /// heading names.
    fn documented_directives() -> Vec<(String, Documented)> {
        let doc = include_str!("../../../docs/configuration.md");
        let start = doc.find("\n## Configuration reference").expect("docs/configuration.md has a configuration reference");
        let section = &doc[start + 1..];
        let section = &section[..section[1..].find("\n## ").map_or(section.len(), |end| end + 1)];
        let mut contexts = None;
        let mut documented = Vec::new();
        for line in section.lines() {
            if let Some(heading) = line.strip_prefix("### ") {
                contexts = Some(match heading.split(" (").next() {
                    Some("Structure") => Documented::In(Contexts::ANYWHERE),
                    Some("Server-wide") => Documented::In(Contexts::SERVER),
                    Some("Per host") => Documented::In(Contexts::HOST),
                    Some("Per directory") => Documented::In(Contexts::ANYWHERE),
                    Some("Accepted, not acted on") => Documented::Inert,
                    other => panic!("docs/configuration.md: a table under {other:?}, which names no contexts this test knows"),
                });
            }
            let Some(first_cell) = line.strip_prefix("| ").and_then(|row| row.split(" | ").next()) else { continue };
            // `Name args`, possibly several in a cell; sections (`<...>`) and
            // `${VAR}` are not directives.
            for code in first_cell.split('`').skip(1).step_by(2) {
                let name = code.split_whitespace().next().unwrap_or_default();
                if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                    documented.push((name.to_string(), contexts.expect("docs/configuration.md: a table before any heading")));
                }
            }
        }
        documented
    }

    /// Where docs/configuration.md documents a directive: under a heading naming its
    /// contexts, or among those accepted and not acted on.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Documented {
        In(Contexts),
        Inert,
    }

    #[test]
    fn the_configuration_reference_documents_exactly_the_table() {
        let documented = documented_directives();
        for spec in DIRECTIVES {
            let found: Vec<Documented> = documented.iter().filter(|(name, _)| name == spec.name).map(|(_, c)| *c).collect();
            assert!(!found.is_empty(), "docs/configuration.md's reference does not document {}", spec.name);
            let expected = match spec.apply {
                Apply::Inert(_) => Documented::Inert,
                _ => Documented::In(spec.contexts),
            };
            // ServerAlias, only for virtual hosts, is documented beside
            // ServerName, its notes saying so.
            assert!(found.iter().all(|c| *c == expected || (spec.name == "ServerAlias" && *c == Documented::In(Contexts::HOST))),
                "docs/configuration.md documents {} under a heading for other contexts than the table's ({})", spec.name, spec.contexts.describe());
        }
        for (name, _) in &documented {
            assert!(DIRECTIVES.iter().any(|spec| spec.name == name), "docs/configuration.md documents {name}, which is not in the directive table (or not spelled as there)");
        }
    }

    /// The reader acts on exactly the directives the table says it does:
    /// the others reach the builder as nodes.
    #[test]
    fn the_reader_takes_exactly_the_while_reading_directives() {
        for spec in DIRECTIVES {
            let mut reader = crate::parse::Reader::new(std::env::temp_dir());
            let nodes = reader.read_text(&format!("{} a b\n", spec.name), std::sync::Arc::new("t.conf".into()));
            assert_eq!(nodes.is_empty(), matches!(spec.apply, Apply::WhileReading), "{}", spec.name);
        }
    }

    /// The builder can apply each function only where its level exists:
    /// server-wide functions and counts at server level only, host ones not
    /// inside sections.
    #[test]
    fn each_function_can_apply_wherever_its_directive_may_stand() {
        for spec in DIRECTIVES {
            let most = match spec.apply {
                Apply::Server(_) | Apply::Count(_) => Contexts::SERVER,
                Apply::Host(_) => Contexts::HOST,
                Apply::Dir(_) | Apply::WhileReading | Apply::Inert(_) => Contexts::ANYWHERE,
            };
            assert_eq!(spec.contexts.0 & !most.0, 0, "{} may stand where its function cannot apply", spec.name);
        }
    }
}
