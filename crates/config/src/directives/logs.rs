//! mod_log_config's directives (`CustomLog`, `TransferLog`, `LogFormat`),
//! read into a host's [`CustomLog`](crate::CustomLog)s with formats
//! compiled by [`log_format`](crate::log_format). The request half is the
//! handler's `logs` and `piped_log` modules.

use crate::builder::Builder;
use crate::log_format;
use crate::parse::Directive;
use crate::settings::{CustomLog, HostConfig};

/// `CustomLog` and `TransferLog` (the latter in the default format).
pub(crate) fn custom_log(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let (path, fmt, cond) = match (d.name.eq_ignore_ascii_case("transferlog"), d.args.as_slice()) {
        (true, [p]) => (p, None, None),
        (false, [p, f]) => (p, Some(f), None),
        (false, [p, f, cond]) => (p, Some(f), Some(cond)),
        _ => return b.error(&d.origin, format!("{} takes a file, a format or nickname, and an optional env=[!]VAR", d.name)),
    };
    let env_condition = match cond.map(|c| c.strip_prefix("env=")) {
        None => None,
        Some(Some(var)) => match var.strip_prefix('!') {
            Some(n) if !n.is_empty() => Some((n.to_string(), true)),
            None if !var.is_empty() => Some((var.to_string(), false)),
            _ => return b.error(&d.origin, "CustomLog env= needs a variable name"),
        },
        Some(None) => return b.error(&d.origin, format!("CustomLog condition '{}' is not supported (only env=[!]VAR)", cond.unwrap_or(&String::new()))),
    };
    let pipe = match crate::log_target::piped_program(path) {
        Some(Ok(p)) => Some(p),
        Some(Err(m)) => return b.error(&d.origin, format!("{}: {m}", d.name)),
        None => None,
    };
    let format = match fmt {
        None => b.default_format.clone(),
        Some(f) if f.contains('%') => match log_format::compile(f) {
            Ok(items) => items,
            Err(m) => return b.error(&d.origin, m),
        },
        Some(nick) => match b.log_formats.get(nick) {
            Some(items) => items.clone(),
            None => return b.error(&d.origin, format!("unknown log format nickname '{nick}' (define it with LogFormat \"...\" {nick})")),
        },
    };
    let directive = if d.name.eq_ignore_ascii_case("transferlog") { "TransferLog" } else { "CustomLog" };
    let path = if pipe.is_some() { std::path::PathBuf::from(path) } else { b.resolve(path) };
    host.custom_logs.push(CustomLog { path, pipe, format, env_condition, directive, origin: Some(d.origin.clone()) });
}

/// Nothing here: LogFormat nicknames are global and may be used before
/// they are defined, so the builder collects them all before the main pass.
pub(crate) fn log_format(_: &mut Builder, _: &Directive, _: &mut HostConfig) {}
