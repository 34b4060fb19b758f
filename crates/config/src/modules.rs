//! Apache's modules, as warren stands to each: the one list that
//! `LoadModule` and `<IfModule>` consult and that "Coming from Apache" in
//! docs/configuration.md documents (a test keeps the two alike).
//!
//! warren has no loadable modules: everything it does is built in. A
//! configuration brought from Apache still loads modules and tests for them,
//! so each module is one of:
//! - [`Support::Provides`]: warren does what it does, with its directives;
//! - [`Support::Mpm`]: one of the three MPMs, chosen by `LoadModule`;
//! - [`Support::Inert`]: loading it is accepted, but warren does not do
//!   what it does: its directives are accepted and do nothing, each said;
//! - [`Support::Refuses`]: loading it is accepted, so that Debian's default
//!   set of modules loads, but the directives it lists are errors: ignoring
//!   `AuthBasicFake` or `<AuthnProviderAlias>` would open what they close;
//! - [`Support::Lacks`], or not listed at all: `LoadModule` is an error and
//!   `<IfModule>` is false.
//!
//! `<IfModule>` is true exactly for the modules `LoadModule` accepts, and
//! for the MPM in force; for the modules of [`LOADED_ONLY`], only once a
//! `LoadModule` has loaded them.

/// The modules whose `<IfModule>` is true only after `LoadModule` loaded
/// them, as in Apache: Debian's ports.conf says `Listen 443` inside
/// `<IfModule ssl_module>`, which must not open a port until `a2enmod ssl`.
/// Their directives are taken without it all the same. mod_http2 likewise:
/// `<IfModule http2_module>` around `Protocols h2` must not turn HTTP/2 on
/// where Apache, without the module, would not. mod_cgi and mod_cgid too:
/// Debian's serve-cgi-bin.conf opens /cgi-bin/ only after `a2enmod cgid`.
/// mod_php too: an `.htaccess` file's `<IfModule mod_php.c>` around
/// `php_value` must not apply where PHP runs in a shared php-fpm.
/// mod_md too: `<IfModule md_module>` around MDomain must not order
/// certificates before `a2enmod md`.
pub const LOADED_ONLY: &[&str] = &["ssl", "http2", "cgi", "cgid", "php", "php7", "php5", "md"];

/// mod_php's names. Its `<IfModule>` blocks, when it is not loaded, are
/// kept as skipped ones: the handler lines in them still keep the files
/// from being sent as text.
pub const MOD_PHP: &[&str] = &["php", "php7", "php5"];

/// What warren does for mod_php's lines (see mod_php.rs).
const MOD_PHP_DOES: &str = "PHP runs in a pool of warren's per host, not inside the server: SetHandler, AddHandler and AddType application/x-httpd-php send the files there; php_value, php_flag, php_admin_value, php_admin_flag reach PHP per request where the pool runs php-fpm; `<IfModule mod_php.c>` is true once LoadModule loads it";

/// How warren stands to one module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// What of it warren has (for docs/configuration.md).
    Provides(&'static str),
    Mpm,
    /// Why warren does nothing for it.
    Inert(&'static str),
    /// Why its directives are refused, and what to write instead.
    Refuses(&'static str),
    /// Why warren does not have it.
    Lacks(&'static str),
}

/// One Apache module, by its short name (`rewrite` for `rewrite_module`,
/// `mod_rewrite.c`).
#[derive(Clone, Copy, Debug)]
pub struct Module {
    pub name: &'static str,
    pub support: Support,
    /// Its directives that warren refuses with a hint (for `Refuses`).
    pub refused: &'static [&'static str],
}

impl Module {
    /// Whether `LoadModule` accepts it and `<IfModule>` is true for it
    /// (for an MPM: when it is the one in force).
    pub fn loads(&self) -> bool {
        !matches!(self.support, Support::Lacks(_))
    }

    /// The identifier `LoadModule` names it by.
    pub fn identifier(&self) -> String {
        format!("{}_module", self.name)
    }

    /// What `LoadModule` of it says, when it says anything: warren loads
    /// nothing, and when it does not do what the module does either, the
    /// line is not acted on.
    pub fn load_warning(&self) -> Option<String> {
        match self.support {
            Support::Inert(why) => Some(format!("LoadModule {}: accepted, but warren does not act on it: {why}", self.identifier())),
            Support::Refuses(why) => Some(format!("LoadModule {}: accepted, but warren refuses directives of it: {why}", self.identifier())),
            _ => None,
        }
    }
}

const fn provides(name: &'static str, what: &'static str) -> Module {
    Module { name, support: Support::Provides(what), refused: &[] }
}
const fn mpm(name: &'static str) -> Module {
    Module { name, support: Support::Mpm, refused: &[] }
}
// No module is merely accepted today (mod_negotiation was the last); kept
// for the next one, so that it is said as such rather than refused.
#[allow(dead_code)]
const fn inert(name: &'static str, why: &'static str) -> Module {
    Module { name, support: Support::Inert(why), refused: &[] }
}
const fn refuses(name: &'static str, why: &'static str, refused: &'static [&'static str]) -> Module {
    Module { name, support: Support::Refuses(why), refused }
}
const fn lacks(name: &'static str, why: &'static str) -> Module {
    Module { name, support: Support::Lacks(why), refused: &[] }
}

const NO_AUTH: &str = "warren does AuthType Basic with AuthName and AuthUserFile (AuthBasicProvider file), not this module's other directives: each is an error rather than ignored, which would leave open what it protects";

pub static MODULES: &[Module] = &[
    provides("core", "the core directives"),
    provides("so", "LoadModule, for the modules listed here"),
    provides("unixd", "User, Group"),
    provides("http", "HTTP/1.1"),
    provides("mime", "TypesConfig, AddType, AddEncoding, AddCharset, AddLanguage, DefaultLanguage, ForceType, their Remove* forms and RemoveHandler, typing a file by every extension of its name; AddHandler (type-map; a handler warren lacks marks its files as scripts, never sent as text), MultiviewsMatch"),
    provides("dir", "DirectoryIndex, DirectorySlash, FallbackResource"),
    provides("autoindex", "directory listings (Options Indexes), IndexIgnore, IndexIgnoreReset; its cosmetic directives accepted, not acted on"),
    provides("log_config", "LogFormat, CustomLog, TransferLog"),
    provides("authz_core", "Require all, Require (several lines: any grants)"),
    provides("authz_host", "Require ip, Require local"),
    provides("access_compat", "Order, Allow from, Deny from (addresses and networks; host names and env= are errors), Satisfy"),
    provides("status", "SetHandler server-status, ExtendedStatus"),
    provides("proxy", "ProxyPass, ProxyPassMatch, ProxyTimeout to FastCGI and HTTP backends"),
    provides("proxy_fcgi", "fcgi:// and unix: backends, SetHandler proxy:..., ProxyFCGIBackendType"),
    provides("proxy_http", "http:// and unix:|http:// backends, ProxyPassReverse and its cookie forms, ProxyPreserveHost, ProxyAddHeaders, ProxyVia, ProxyErrorOverride (see docs/proxy.md)"),
    provides("proxy_wstunnel", "ws:// and wss:// backends and upgrade=websocket: WebSocket tunnels, ProxyWebsocketIdleTimeout (see docs/proxy.md)"),
    provides("proxy_balancer", "<Proxy balancer://>, BalancerMember, ProxySet: byrequests, bytraffic and bybusyness, sticky sessions, failover, the balancer-manager (see docs/proxy.md)"),
    provides("lbmethod_byrequests", "lbmethod=byrequests"),
    provides("lbmethod_bytraffic", "lbmethod=bytraffic"),
    provides("lbmethod_bybusyness", "lbmethod=bybusyness"),
    provides("proxy_hcheck", "hcmethod TCP, OPTIONS, HEAD and GET, hcuri, hcinterval, hcpasses, hcfails, hcexpr and ProxyHCExpr on BalancerMember (see docs/proxy.md)"),
    provides("reqtimeout", "RequestReadTimeout"),
    provides("alias", "Alias, AliasMatch, ScriptAlias, ScriptAliasMatch, Redirect, RedirectMatch"),
    provides("rewrite", "RewriteEngine, RewriteCond, RewriteRule, RewriteBase, RewriteOptions, RewriteMap (txt, rnd, int)"),
    provides("headers", "Header, RequestHeader"),
    provides("expires", "ExpiresActive, ExpiresByType, ExpiresDefault"),
    provides("env", "SetEnv, UnsetEnv"),
    provides("setenvif", "SetEnvIf, SetEnvIfNoCase, BrowserMatch"),
    provides("deflate", "gzip compression (the DEFLATE filter)"),
    provides("brotli", "brotli compression (the BROTLI_COMPRESS filter)"),
    provides("filter", "AddOutputFilterByType"),
    provides("remoteip", "RemoteIPHeader, RemoteIPTrustedProxy, RemoteIPInternalProxy"),
    provides("fcgid", "AddHandler fcgid-script, FcgidWrapper and mod_fcgid's limits, mapped onto a pool of warren's per host (see docs/pools.md)"),
    provides("userdir", "UserDir: /~user/ from each user's directory, its PHP in a pool as that user (see docs/mass-hosting.md)"),
    provides("vhost_alias", "VirtualDocumentRoot, VirtualScriptAlias and their IP forms (see docs/mass-hosting.md)"),
    provides("suexec", "SuexecUserGroup: the host's pool runs as that user"),
    provides("mpm_itk", "AssignUserID and MaxClientsVHost: the host's pool runs as that user (no fork per request); warren's own MPM serves"),
    mpm("mpm_event"),
    mpm("mpm_worker"),
    mpm("mpm_prefork"),
    provides("negotiation", "Options MultiViews, type maps (AddHandler type-map), LanguagePriority, ForceLanguagePriority; CacheNegotiatedDocs accepted, not acted on"),
    provides("ssl", "TLS (rustls): SSLEngine, SSLProxyEngine and SSLProxy* for https:// backends, SSLCertificateFile, SSLCertificateKeyFile, SSLCertificateChainFile, SSLProtocol, SSLCipherSuite, SSLHonorCipherOrder, SSLSessionCache, SSLSessionTickets, SSLUseStapling, SSLStrictSNIVHostCheck, SSLOptions, SSLRequireSSL; `<IfModule ssl_module>` is true once LoadModule loads it"),
    provides("md", "ACME certificates: MDomain, <MDomainSet>, MDCertificateAuthority, MDCACertificateFile, MDContactEmail, MDCertificateAgreement, MDPrivateKeys, MDRenewWindow, MDRetryDelay, MDStoreDir, MDHelperUser (warren's own), MDChallengeDns01, MDCAChallenges (http-01, tls-alpn-01, dns-01), MDRequireHttps, MDMustStaple, SetHandler md-status (see docs/acme.md); `<IfModule md_module>` is true once LoadModule loads it"),
    provides("http2", "HTTP/2 configuration: Protocols h2 (ALPN over TLS) and h2c, H2Direct, H2Upgrade, H2MaxSessionStreams, H2WindowSize, H2MaxDataFrameLen, H2StreamTimeout; server push and its directives accepted, not acted on; `<IfModule http2_module>` is true once LoadModule loads it"),
    provides("socache_shmcb", "the shared session cache of SSLSessionCache shmcb:"),
    refuses("auth_basic", NO_AUTH, &["AuthBasicAuthoritative", "AuthBasicFake", "AuthBasicUseDigestAlgorithm"]),
    refuses("authn_core", NO_AUTH, &["AuthnProviderAlias"]),
    provides("authn_file", "AuthUserFile (htpasswd's bcrypt, apr1 MD5, {SHA} and crypt lines)"),
    provides("authz_user", "Require valid-user, Require user"),
    provides("authz_groupfile", "AuthGroupFile, Require group"),
    provides("cgi", "ScriptAlias, AddHandler/SetHandler cgi-script, ScriptLog, CGIPassAuth, CGIVar: programs started by warren's spawner process, as mod_cgid does"),
    provides("cgid", "ScriptAlias, AddHandler/SetHandler cgi-script, ScriptLog, CGIPassAuth, CGIVar: programs started by warren's spawner process"),
    provides("php", MOD_PHP_DOES),
    provides("php7", MOD_PHP_DOES),
    provides("php5", MOD_PHP_DOES),
    provides("cache", "CacheEnable, CacheDisable and mod_cache's directives: a response cache shared by every child (see docs/cache.md)"),
    provides("cache_disk", "CacheEnable disk, CacheRoot, CacheMaxFileSize"),
    provides("cache_socache", "CacheEnable socache (entries on the shared-memory tmpfs /dev/shm), CacheSocacheMaxSize"),
    lacks("include", "warren has no server-side includes"),
];

/// `rewrite_module`, `mod_rewrite.c` and `rewrite` -> `rewrite`; the MPMs'
/// file names `event.c`, `prefork.c`, `worker.c` -> `mpm_event`...
pub fn short_name(written: &str) -> String {
    if let Some(stem) = written.strip_suffix(".c") {
        return match stem {
            "event" | "prefork" | "worker" => format!("mpm_{stem}"),
            _ => stem.strip_prefix("mod_").unwrap_or(stem).to_string(),
        };
    }
    written.strip_suffix("_module").unwrap_or(written).to_string()
}

/// The module `written` names, as `LoadModule` or `<IfModule>` write it.
pub fn find(written: &str) -> Option<&'static Module> {
    let name = short_name(written);
    MODULES.iter().find(|m| m.name == name)
}

/// Why `written` does not load: its reason, or that warren lacks it.
pub fn why_not(written: &str) -> String {
    match find(written).map(|m| m.support) {
        Some(Support::Lacks(why)) => format!("{}_module is not built into warren: {why}", short_name(written)),
        _ => format!("{}_module is not built into warren", short_name(written)),
    }
}

/// The module that has the directive `name`, if warren refuses it for that.
pub fn refusing(name: &str) -> Option<&'static Module> {
    MODULES.iter().find(|m| m.refused.iter().any(|d| d.eq_ignore_ascii_case(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_apache_writes_them() {
        assert_eq!(find("rewrite_module").map(|m| m.name), Some("rewrite"));
        assert_eq!(find("mod_rewrite.c").map(|m| m.name), Some("rewrite"));
        assert_eq!(find("prefork.c").map(|m| m.name), Some("mpm_prefork"));
        assert_eq!(find("mpm_worker_module").map(|m| m.name), Some("mpm_worker"));
        assert!(find("mod_nonesuch.c").is_none());
        assert!(find("ssl_module").unwrap().loads());
        assert!(why_not("mod_gnutls.c").contains("not built into warren"), "{}", why_not("mod_gnutls.c"));
        assert_eq!(refusing("authbasicfake").map(|m| m.name), Some("auth_basic"));
    }

    #[test]
    fn each_module_is_listed_once() {
        for (i, m) in MODULES.iter().enumerate() {
            assert!(MODULES[..i].iter().all(|e| e.name != m.name), "{} is listed twice", m.name);
            assert!(m.refused.is_empty() || matches!(m.support, Support::Refuses(_)), "{} refuses directives but is not Refuses", m.name);
        }
    }

    fn kind(support: Support) -> &'static str {
        match support {
            Support::Provides(_) => "provided",
            Support::Mpm => "MPM",
            Support::Inert(_) => "accepted, not acted on",
            Support::Refuses(_) => "accepted, directives refused",
            Support::Lacks(_) => "not available",
        }
    }

    /// "Coming from Apache" in docs/configuration.md lists exactly these
    /// modules, each as what it is here.
    #[test]
    fn the_docs_list_exactly_the_modules() {
        let doc = include_str!("../../../docs/configuration.md");
        let start = doc.find("\n## Coming from Apache").expect("docs/configuration.md has a Coming from Apache section");
        let section = &doc[start + 1..];
        let section = &section[..section[1..].find("\n## ").map_or(section.len(), |end| end + 1)];
        let mut listed = Vec::new();
        for row in section.lines().filter_map(|l| l.strip_prefix("| `mod_")) {
            let cells: Vec<&str> = row.split(" | ").collect();
            listed.push((cells[0].trim_end_matches('`').to_string(), cells.get(1).copied().unwrap_or_default().to_string()));
        }
        for m in MODULES {
            let found: Vec<&String> = listed.iter().filter(|(name, _)| name == m.name).map(|(_, k)| k).collect();
            assert_eq!(found, vec![kind(m.support)], "docs/configuration.md's Coming from Apache lists mod_{} as {found:?}", m.name);
        }
        for (name, _) in &listed {
            assert!(find(name).is_some(), "docs/configuration.md lists mod_{name}, which modules.rs does not");
        }
    }

    /// A refused directive must not also be one warren has: the table would
    /// take it and the hint would never be given.
    #[test]
    fn refused_directives_are_not_in_the_table() {
        for m in MODULES {
            for d in m.refused {
                assert!(crate::table::find(d).is_none(), "{d} is refused by {} and in the directive table", m.name);
            }
        }
    }
}
