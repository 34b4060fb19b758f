//! warren's configuration, in Apache's syntax and with Apache's directive names.
//!
//! Two stages, each in its own module:
//! - [`parse`]: text -> [`Node`]s (directives and container sections), each
//!   with its [`Origin`] (file and line). `Include`, `Define`, `<IfModule>`
//!   and `<IfDefine>` are handled here, while reading, as Apache does.
//! - [`settings`]: nodes -> [`Settings`], validated and typed: the server-wide
//!   values, the main [`HostConfig`], its [`VirtualHost`]s, and the per-directory
//!   [`DirConfig`] layers that the handler merges for each request.
//!
//! [`pool`] reads `<Pool name>` sections (warren's own FastCGI worker pools,
//! with php-fpm's directive names).
//!
//! [`accounts`] says whom the server's and the pools' children run as, and
//! refuses pools that would run as root by accident.
//!
//! [`log_format`] compiles `LogFormat` strings so that mistakes in them are
//! reported with file and line too. Every problem is a [`ConfigError`]; a
//! config with any error yields no `Settings` at all.

pub mod accounts;
pub mod log_format;
pub mod parse;
pub mod pool;
pub mod settings;

pub use log_format::{DurationUnit, LogItem};
pub use parse::{ConfigError, Directive, Node, Origin, Section};
pub use pool::{PmStyle, PoolConfig};
pub use settings::{
    load_file, load_text, parse_fcgi_url, parse_read_stage, CustomLog, DirConfig, DirSection, ErrorDocument, FcgiAddr, FcgiBackend, FcgiBackendType,
    Handler, HostConfig, Limits, LoadOptions, Loaded, LogLevel, Mpm, MpmTuning, OptionFlags, OptionsSpec, ProxyPattern,
    ProxyRoute, ProxyTarget, ReadStage, RequestReadTimeout, Require, SectionMatch, ServerTokens, Settings, VhostAddr, VirtualHost,
};

#[cfg(test)]
mod tests;
