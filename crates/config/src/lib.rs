//! warren's configuration, in Apache's syntax and with Apache's directive names.
//!
//! Two stages:
//! - [`parse`]: text -> [`Node`]s (directives and container sections), each
//!   with its [`Origin`] (file and line). `Include`, `Define`, `<IfModule>`
//!   and `<IfDefine>` are handled here, while reading, as Apache does.
//! - `build`: nodes -> [`Settings`], validated and typed. It hands each
//!   directive to its entry in [`table`], the one list of every directive
//!   (its contexts, MPMs, arguments and function), and reports the rest.
//!   Every problem is a [`ConfigError`]; a config with any error yields no
//!   `Settings` at all.
//!
//! The files stand in layers, each importing only files below it (no
//! import circle spans two files), from the bottom:
//! 1. Reading: [`parse`]; [`modules`] (Apache's modules and how warren
//!    stands to each: provided, an MPM, inert, refused or lacking;
//!    `LoadModule` and `<IfModule>` go by it); [`expr`] (ap_expr);
//!    [`log_format`], [`error_log_format`] and [`log_target`] (formats
//!    compiled at load, so that mistakes are said with file and line).
//! 2. [`values`]: the value parsers the types need too (durations, sizes,
//!    FastCGI URLs, networks).
//! 3. Each Apache module's settings, one file per module or group of
//!    modules, as plain types: [`access_compat`], [`alias`], [`auth`],
//!    [`backend`] (FastCGI applications and `ProxyPass` routes),
//!    [`balancer`], [`cache`], [`cgi`], [`compress`], [`env_vars`],
//!    [`expires`], [`fcgid`], [`h2`], [`headers`], [`mass`], [`md`],
//!    [`mime`], [`mod_php`], [`mpm`] (the [`Mpm`] and its counts,
//!    [`MpmTuning`]), [`overrides`] (`AllowOverride`), [`pool`] (warren's
//!    `<Pool>`s, in Apache's form or php-fpm's), [`proxy_http`],
//!    [`remote_ip`], [`scripts`] (which files are scripts, never sent as
//!    text), [`tls`].
//! 4. Assembled from them: [`dir_config`] (the per-directory
//!    [`DirConfig`] layers of `<Directory>`, `<Files>`, `<Location>` and
//!    `<If>` that the handler merges for each request) and [`settings`]
//!    (the whole server, [`Settings`], the main [`HostConfig`] and its
//!    [`VirtualHost`]s, with Apache's defaults).
//! 5. What the whole configuration implies, read from `Settings`:
//!    [`listeners`] (which listeners speak TLS and HTTP/2), [`stapling`]
//!    (which certificates are stapled), [`accounts`] (whom the server and
//!    the pools run as; pools that would run as root by accident refused),
//!    [`user_pools`] (users' pools made while warren runs).
//! 6. `builder`: one reading's state, given to every directive's function.
//! 7. `directives/`: what each directive does, one file per Apache module,
//!    named as its types' file above and as its request half in the
//!    handler crate; with each module's checks once everything is read.
//! 8. [`table`]; `build` (the walk over the nodes, `<If>` sections in
//!    `if_sections`); [`htaccess`] (one `.htaccess` file, with what
//!    `AllowOverride` lets it change; the handler finds and caches the
//!    files); [`pool_file`] (a php-fpm pool file read into pools).

pub mod access_compat;
pub mod accounts;
pub mod alias;
pub mod auth;
pub mod backend;
pub mod balancer;
mod build;
mod builder;
pub mod cache;
pub mod cgi;
pub mod compress;
pub mod dir_config;
mod directives;
pub mod env_vars;
pub mod error_log_format;
pub mod expires;
pub mod expr;
pub mod fcgid;
pub mod h2;
pub mod headers;
pub mod htaccess;
mod if_sections;
pub mod listeners;
pub mod log_format;
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
pub mod pool_file;
pub mod proxy_http;
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
