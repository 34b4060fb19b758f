//! warren's configuration, in Apache's syntax and with Apache's directive names.
//!
//! Two stages:
//! - [`parse`]: text -> [`Node`]s (directives and container sections), each
//!   with its [`Origin`] (file and line). `Include`, `Define`, `<IfModule>`
//!   and `<IfDefine>` are handled here, while reading, as Apache does.
//! - `build`: nodes -> [`Settings`], validated and typed. It hands each
//!   directive to its entry in [`table`], the one list of every directive
//!   (its contexts, MPMs, arguments and function), and reports the rest.
//!
//! The functions the table points to are in [`apply`]; the value parsers
//! they share (addresses, `Options`, `Require`, FastCGI URLs, durations) in
//! [`values`]. What they fill in:
//! - [`settings`]: the whole server ([`Settings`]), the main [`HostConfig`]
//!   and its [`VirtualHost`]s, with Apache's defaults;
//! - [`dir_config`]: the per-directory [`DirConfig`] layers of
//!   `<Directory>`, `<Files>` and `<Location>` that the handler merges for
//!   each request;
//! - [`backend`]: FastCGI applications and `ProxyPass` routes;
//! - [`mpm`]: the [`Mpm`], its counts ([`MpmTuning`]) and Apache's
//!   corrections of impossible ones.
//!
//! [`pool`] reads `<Pool name>` sections (warren's own FastCGI worker pools,
//! with php-fpm's directive names, in Apache's form or php-fpm's
//! `key = value`); [`pool_file`] reads a php-fpm pool file (`PoolFile`) into
//! such pools.
//!
//! [`modules`] lists Apache's modules and how warren stands to each:
//! provided, an MPM, accepted and inert, accepted with its directives
//! refused, or lacking; `LoadModule` and `<IfModule>` go by it.
//!
//! [`alias`] reads mod_alias's Alias, AliasMatch, Redirect and
//! RedirectMatch into a host's [`alias::UrlAlias`]es.
//!
//! [`rewrite`] reads mod_rewrite's directives into compiled rule sets.
//!
//! [`remote_ip`] holds mod_remoteip's settings (RemoteIPHeader, the
//! proxies believed, the PROXY protocol) and the functions reading them.
//!
//! [`headers`] reads mod_headers' `Header` and `RequestHeader` rules,
//! [`expires`] mod_expires' times and [`env_vars`] mod_env's and
//! mod_setenvif's directives (the request environment).
//!
//! [`scripts`] says which files a configuration names as scripts (never
//! to be sent as text) and which handlers `.htaccess` may not set.
//!
//! [`htaccess`] reads one `.htaccess` file, with what `AllowOverride` lets
//! it change; the handler finds and caches the files.
//!
//! [`cgi`] reads mod_cgi's directives (ScriptLog, CGIPassAuth, CGIVar);
//! [`mass`] mod_vhost_alias's and mod_userdir's (and makes the users'
//! pools); [`mime`] mod_mime's and mod_negotiation's; [`mod_php`] maps
//! mod_php's handler and `php_*` lines onto a pool of the host's;
//! [`fcgid`] maps mpm-itk's, suexec's and mod_fcgid's lines onto pools.
//!
//! [`compress`] reads mod_deflate's, mod_brotli's and mod_filter's
//! directives (which responses are compressed, and how).
//!
//! [`accounts`] says whom the server's and the pools' children run as, and
//! refuses pools that would run as root by accident.
//!
//! [`tls`] holds mod_ssl's settings ([`tls::TlsHost`] per host,
//! [`tls::TlsGlobal`] server-wide) and which listeners speak TLS
//! ([`Settings::tls_listener`]); the crate `warren-tls` builds rustls'
//! configurations from them.
//!
//! [`h2`] holds HTTP/2's settings: core's `Protocols` and mod_http2's
//! directives per host ([`h2::Protocols`], [`h2::H2Settings`]), and what
//! each listener offers ([`Settings::h2_listener`], an [`h2::H2Listener`]):
//! h2 by ALPN over TLS, h2c by prior knowledge or Upgrade in cleartext.
//!
//! [`log_format`] compiles `LogFormat` strings so that mistakes in them are
//! reported with file and line too. Every problem is a [`ConfigError`]; a
//! config with any error yields no `Settings` at all.

pub mod access_compat;
pub mod accounts;
pub mod alias;
pub mod auth;
pub mod cache;
pub mod cgi;
mod directives;
pub mod backend;
pub mod balancer;
mod build;
mod builder;
pub mod compress;
pub mod dir_config;
pub mod env_vars;
pub mod error_log_format;
pub mod expires;
pub mod expr;
pub mod fcgid;
pub mod h2;
pub mod headers;
pub mod htaccess;
pub mod if_sections;
pub mod log_format;
pub mod listeners;
pub mod log_target;
pub mod mass;
pub mod md;
pub mod mime;
pub mod mod_php;
pub mod modules;
pub mod mpm;
pub mod overrides;
pub mod parse;
pub mod pool;
pub mod proxy_http;
pub mod pool_file;
pub mod remote_ip;
pub mod scripts;
pub mod settings;
pub mod stapling;
pub mod table;
pub mod tls;
pub mod user_pools;
pub mod values;

pub use backend::{FcgiAddr, FcgiBackend, FcgiBackendType, ProxyPattern, ProxyRoute, ProxyTarget};
pub use build::{load_file, load_text, LoadOptions, Loaded};
pub use dir_config::{Combine, DirConfig, DirSection, ErrorDocument, Handler, OptionFlags, OptionsSpec, Require, SectionMatch};
pub use log_format::{DurationUnit, LogItem};
pub use mpm::{Mpm, MpmTuning};
pub use parse::{ConfigError, Directive, Node, Origin, Section};
pub use pool::{PmStyle, PoolConfig};
pub use settings::{CustomLog, HostConfig, Limits, LogLevel, ReadStage, RequestReadTimeout, ServerTokens, Settings, VhostAddr, VirtualHost};
pub use settings::parse_read_stage;
pub use values::parse_fcgi_url;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod test_support;
