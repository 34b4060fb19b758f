//! Apache's core directives (with mpm_common's `ListenBacklog` and
//! `GracefulShutdownTimeout`, mod_reqtimeout's `RequestReadTimeout`,
//! mod_status' `ExtendedStatus` and warren's own server-wide lines): what
//! each does, as the [table](crate::table) points to it. Each checks its
//! arguments, sets its part of the settings, and reports a problem at the
//! directive's file and line. Where a directive may stand and under which
//! MPM is the table's business, not theirs. The modules' directives are in
//! the other files of [`directives`](super).

use std::time::Duration;

use crate::backend::{FcgiAddr, FcgiBackend};
use crate::builder::Builder;
use crate::dir_config::{DirConfig, ErrorDocument, Handler};
use crate::log_target::LogSink;
use crate::parse::Directive;
use crate::settings::{HostConfig, ServerTokens, Settings};
use crate::settings::{parse_log_level, parse_read_stage};
use crate::directives::values::{flush_packets_option, parse_listen, parse_options};
use crate::values::{parse_duration, parse_fcgi_url, parse_size, SECONDS_OR_MILLIS};

// Server-wide.

pub(crate) fn listen(b: &mut Builder, d: &Directive, s: &mut Settings) {
    let a = &d.args;
    match a.as_slice() {
        [addr] | [addr, _] => {
            let mut https = false;
            if let [_, proto] = a.as_slice() {
                https = proto.eq_ignore_ascii_case("https");
                if !https && !proto.eq_ignore_ascii_case("http") {
                    b.error(&d.origin, format!("Listen protocol '{proto}' is not supported (http or https)"));
                    return;
                }
            }
            match parse_listen(addr) {
                Ok(sa) => {
                    if s.listen.contains(&sa) {
                        b.error(&d.origin, format!("Listen {addr} appears twice"));
                    } else {
                        s.listen.push(sa);
                        if https {
                            b.https_listens.push((sa, d.origin.clone()));
                        }
                    }
                }
                Err(m) => b.error(&d.origin, m),
            }
        }
        _ => b.error(&d.origin, "Listen takes [address:]port and an optional protocol"),
    }
}

pub(crate) fn pid_file(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.pid_file = Some(b.resolve(&v));
        s.pid_file_origin = Some(d.origin.clone());
    }
}

pub(crate) fn user(b: &mut Builder, d: &Directive, s: &mut Settings) {
    s.user = b.one(d);
    s.user_origin = Some(d.origin.clone());
}

pub(crate) fn group(b: &mut Builder, d: &Directive, s: &mut Settings) {
    s.group = b.one(d);
    s.group_origin = Some(d.origin.clone());
}

pub(crate) fn timeout(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.timeout = Duration::from_secs(n.max(1));
    }
}

pub(crate) fn keep_alive(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(on) = b.on_off(d) {
        s.keep_alive = on;
    }
}

pub(crate) fn keep_alive_timeout(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        match parse_duration(&v, &SECONDS_OR_MILLIS) {
            Some(t) => s.keep_alive_timeout = t,
            None => b.error(&d.origin, format!("KeepAliveTimeout: '{v}' is not a number of seconds (or NNNms)")),
        }
    }
}

pub(crate) fn max_keep_alive_requests(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.max_keep_alive_requests = n.min(u32::MAX as u64) as u32;
    }
}

// Apache's smallest limits, below which no request could be read at all.
pub(crate) fn limit_request_line(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.limits.request_line = (n as usize).max(16);
    }
}

pub(crate) fn limit_request_field_size(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.limits.field_size = (n as usize).max(16);
    }
}

pub(crate) fn limit_request_head_size(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.limits.head = (n as usize).max(64);
    }
}

pub(crate) fn limit_request_fields(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.limits.fields = if n == 0 { 10_000 } else { n as usize };
    }
}

pub(crate) fn request_read_timeout(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if d.args.is_empty() {
        b.error(&d.origin, "RequestReadTimeout takes header=, body= or handshake= values");
    }
    for arg in &d.args {
        let Some((key, value)) = arg.split_once('=') else {
            b.error(&d.origin, format!("RequestReadTimeout: '{arg}' is not in the form key=value (header=, body=, handshake=)"));
            continue;
        };
        let lkey = key.to_ascii_lowercase();
        if !["header", "body", "handshake"].contains(&lkey.as_str()) {
            b.error(&d.origin, format!("RequestReadTimeout: {arg}: unknown parameter '{key}' (header, body or handshake)"));
            continue;
        }
        match parse_read_stage(value) {
            Ok(stage) => match lkey.as_str() {
                "header" => s.request_read_timeout.header = stage,
                "body" => s.request_read_timeout.body = stage,
                _ if stage.initial > 0 => b.warn(&d.origin, format!("RequestReadTimeout: {arg} is ignored: warren has no TLS, so no handshake to time")),
                _ => {}
            },
            Err(m) => b.error(&d.origin, format!("RequestReadTimeout: {arg}: {m}")),
        }
    }
}

pub(crate) fn server_tokens(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.server_tokens = match v.to_ascii_lowercase().as_str() {
            "full" => ServerTokens::Full,
            "os" => ServerTokens::Os,
            "min" | "minimal" => ServerTokens::Minimal,
            "minor" => ServerTokens::Minor,
            "major" => ServerTokens::Major,
            "prod" | "productonly" => ServerTokens::Prod,
            _ => return b.error(&d.origin, "ServerTokens must be one of Full, OS, Minimal, Minor, Major, Prod"),
        };
    }
}

pub(crate) fn server_signature(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.server_signature = match v.to_ascii_lowercase().as_str() {
            "on" | "email" => true,
            "off" => false,
            _ => return b.error(&d.origin, "ServerSignature must be On, Off or EMail"),
        };
    }
}

/// `TraceEnable Off` is done: TRACE answered 405 everywhere. On and
/// extended are Apache's echo of the request, which warren does not do.
pub(crate) fn trace_enable(b: &mut Builder, d: &Directive, s: &mut Settings) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("off") => s.trace_enable = false,
        [v] if v.eq_ignore_ascii_case("on") || v.eq_ignore_ascii_case("extended") => {
            s.trace_enable = true;
            b.warn(&d.origin, format!("TraceEnable {v}: warren does not echo TRACE requests: static resources answer 405, applications get them"));
        }
        _ => b.error(&d.origin, "TraceEnable takes On, Off or extended"),
    }
}

pub(crate) fn extended_status(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(on) = b.on_off(d) {
        s.extended_status = on;
    }
}

pub(crate) fn listen_backlog(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        if n == 0 || n > i32::MAX as u64 {
            b.error(&d.origin, "ListenBacklog must be a positive number");
        } else {
            s.listen_backlog = n as u32;
        }
    }
}

pub(crate) fn memory_budget(b: &mut Builder, d: &Directive, s: &mut Settings) {
    let Some(v) = b.one(d) else { return };
    match parse_size(&v) {
        Some(n) if n >= 16 << 20 => s.memory_budget = Some(n),
        Some(_) => b.error(&d.origin, format!("MemoryBudget {v} is less than 16M, too little for a server and a pool")),
        None => b.error(&d.origin, format!("MemoryBudget: '{v}' is not a size (bytes, or a number with K, M or G)")),
    }
}

pub(crate) fn graceful_shutdown_timeout(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.graceful_shutdown_timeout = (n > 0).then(|| Duration::from_secs(n));
    }
}

pub(crate) fn hostname_lookups(b: &mut Builder, d: &Directive, _: &mut Settings) {
    if b.on_off(d) == Some(true) {
        b.error(&d.origin, "HostnameLookups On is not supported (it slows every request); use Off");
    }
}

pub(crate) fn log_level(b: &mut Builder, d: &Directive, s: &mut Settings) {
    match d.args.as_slice() {
        [v] => match parse_log_level(v) {
            Some(l) => s.log_level = l,
            None => b.error(&d.origin, format!("LogLevel: unknown level '{v}' (emerg alert crit error warn notice info debug trace1-8)")),
        },
        _ => b.error(&d.origin, "LogLevel takes one level; per-module levels are not supported"),
    }
}

/// `BufferedLogs On|Off`.
pub(crate) fn buffered_logs(b: &mut Builder, d: &Directive, s: &mut Settings) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("on") => s.buffered_logs = true,
        [v] if v.eq_ignore_ascii_case("off") => s.buffered_logs = false,
        _ => b.error(&d.origin, "BufferedLogs takes On or Off"),
    }
}

/// `ErrorLogFormat "format"` (the once-per-connection and once-per-request
/// formats are refused).
pub(crate) fn error_log_format(b: &mut Builder, d: &Directive, s: &mut Settings) {
    match d.args.as_slice() {
        [f] => match crate::error_log_format::compile(f) {
            Ok(items) => s.error_log_format = Some(items),
            Err(m) => b.error(&d.origin, m),
        },
        [kind, _] if kind.eq_ignore_ascii_case("connection") || kind.eq_ignore_ascii_case("request") => {
            b.error(&d.origin, format!("ErrorLogFormat {kind}: once-per-{kind} formats are not supported"))
        }
        _ => b.error(&d.origin, "ErrorLogFormat takes one format"),
    }
}

/// `SyslogSocket path` (a warren extension): the socket `ErrorLog syslog` sends to.
pub(crate) fn syslog_socket(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.syslog_socket = b.resolve(&v);
    }
}

// Per host.

pub(crate) fn server_name(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match d.args.as_slice() {
        [n] => {
            let name = n.split("://").last().unwrap_or(n);
            let (name, port) = match name.rsplit_once(':') {
                Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.parse().ok()),
                _ => (name, None),
            };
            host.server_name = Some(name.to_ascii_lowercase());
            host.server_port = port;
        }
        _ => b.error(&d.origin, "ServerName takes one argument: [scheme://]name[:port]"),
    }
}

pub(crate) fn server_alias(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if d.args.is_empty() {
        b.error(&d.origin, "ServerAlias needs at least one name");
    }
    host.aliases.extend(d.args.iter().map(|s| s.to_ascii_lowercase()));
}

pub(crate) fn server_admin(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match d.args.as_slice() {
        [n] => host.server_admin = Some(n.clone()),
        _ => b.error(&d.origin, "ServerAdmin takes one argument"),
    }
}

pub(crate) fn document_root(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    b.document_root_origin = Some(d.origin.clone());
    match d.args.as_slice() {
        [p] => host.document_root = b.resolve(p),
        _ => b.error(&d.origin, "DocumentRoot takes one argument, a directory"),
    }
}

pub(crate) fn error_log(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match d.args.as_slice() {
        [p] => {
            let sink = match crate::log_target::piped_program(p).map(|r| r.map(LogSink::Pipe)).or_else(|| crate::log_target::syslog_facility(p).map(|r| r.map(LogSink::Syslog))) {
                Some(Ok(sink)) => Some(sink),
                Some(Err(m)) => return b.error(&d.origin, m),
                None => None,
            };
            host.error_log = if sink.is_some() { None } else { Some(b.resolve(p)) };
            host.error_log_sink = sink;
            host.error_log_origin = Some(d.origin.clone());
        }
        _ => b.error(&d.origin, "ErrorLog takes one argument: a file, |program or syslog[:facility]"),
    }
}

// Per directory.

/// `UseCanonicalName Off` is what warren does: the URLs it makes (the
/// DirectorySlash redirect, SERVER_NAME) use the name the client asked for.
pub(crate) fn use_canonical_name(b: &mut Builder, d: &Directive, _: &mut DirConfig) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("off") => {}
        [v] if v.eq_ignore_ascii_case("on") || v.eq_ignore_ascii_case("dns") => {
            b.warn(&d.origin, format!("UseCanonicalName {v}: not acted on: warren's own URLs always use the host name the client asked for (UseCanonicalName Off)"))
        }
        _ => b.error(&d.origin, "UseCanonicalName takes On, Off or DNS"),
    }
}

pub(crate) fn options(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match parse_options(&d.args) {
        Ok(spec) => dir.options.push(spec),
        Err(m) => return b.error(&d.origin, m),
    }
    // Turning off what warren never does is done; turning it on is said.
    for arg in &d.args {
        if arg.starts_with('-') {
            continue;
        }
        let name = arg.trim_start_matches('+');
        let why = match name.to_ascii_lowercase().as_str() {
            "includes" | "includesnoexec" => "warren has no server-side includes",
            _ => continue,
        };
        b.warn(&d.origin, format!("Options {arg}: not acted on: {why}"));
    }
}

pub(crate) fn error_document(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [code, doc] => match code.parse::<u16>() {
            Ok(c) if (400..=599).contains(&c) => {
                let doc = if doc == "default" {
                    ErrorDocument::Default
                } else if doc.starts_with('/') {
                    ErrorDocument::Local(doc.clone())
                } else if doc.contains("://") {
                    ErrorDocument::Redirect(doc.clone())
                } else {
                    ErrorDocument::Text(doc.clone())
                };
                dir.error_documents.push((c, doc));
            }
            _ => b.error(&d.origin, format!("ErrorDocument: {code} is not an error status (400-599)")),
        },
        _ => b.error(&d.origin, "ErrorDocument takes a status code and a document: a local URL, a full URL or \"text\""),
    }
}

pub(crate) fn add_default_charset(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("off") => dir.add_default_charset = Some(None),
        [v] if v.eq_ignore_ascii_case("on") => dir.add_default_charset = Some(Some("iso-8859-1".into())),
        [v] => dir.add_default_charset = Some(Some(v.clone())),
        _ => b.error(&d.origin, "AddDefaultCharset takes On, Off or a charset"),
    }
}

pub(crate) fn limit_request_body(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [v] => match v.parse::<u64>() {
            Ok(n) => dir.limit_request_body = Some(n),
            Err(_) => b.error(&d.origin, format!("LimitRequestBody: '{v}' is not a number of bytes")),
        },
        _ => b.error(&d.origin, "LimitRequestBody takes one argument, a number of bytes (0 = unlimited)"),
    }
}

pub(crate) fn set_handler(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if b.in_htaccess {
        if let Some(refused) = crate::scripts::refused_in_htaccess(d) {
            dir.handler = Some(Some(refused));
            return;
        }
    }
    match d.args.as_slice() {
        [h] if h.eq_ignore_ascii_case("none") || h.eq_ignore_ascii_case("default-handler") => dir.handler = Some(None),
        [h] if h.eq_ignore_ascii_case("server-status") => dir.handler = Some(Some(Handler::ServerStatus)),
        [h] if h.eq_ignore_ascii_case("metrics") => dir.handler = Some(Some(Handler::Metrics)),
        [h] if h.eq_ignore_ascii_case("balancer-manager") => dir.handler = Some(Some(Handler::BalancerManager)),
        [h] if h.eq_ignore_ascii_case("md-status") => dir.handler = Some(Some(Handler::MdStatus)),
        [h] if h.eq_ignore_ascii_case("type-map") => dir.handler = Some(Some(Handler::TypeMap)),
        [h, opts @ ..] if h.starts_with("pool:") && h.len() > 5 => match flush_packets_option(opts) {
            Ok(flush) => {
                b.pool_refs.push((h[5..].to_string(), d.origin.clone()));
                let name = h[5..].to_string();
                dir.handler = Some(Some(match flush {
                    false => Handler::Pool(name),
                    true => Handler::FastCgi(FcgiBackend { addr: FcgiAddr::Pool(name), reuse: false, timeout: None, flush_packets: true }),
                }));
            }
            Err(m) => b.error(&d.origin, format!("SetHandler {h}: {m}")),
        },
        [h, opts @ ..] if h.starts_with("proxy:") => match (parse_fcgi_url(&h["proxy:".len()..]), flush_packets_option(opts)) {
            (Ok((addr, _)), Ok(flush_packets)) => dir.handler = Some(Some(Handler::FastCgi(FcgiBackend { addr, reuse: false, timeout: None, flush_packets }))),
            (Err(m), _) | (_, Err(m)) => b.error(&d.origin, format!("SetHandler {h}: {m}")),
        },
        // A handler warren lacks (php-script, cgi-script...): the files
        // here are scripts; a FastCGI handler given them elsewhere stays.
        [h] => match crate::scripts::data_handler(h) {
            Some(why) => b.warn(&d.origin, format!("SetHandler {h}: not acted on: {why}; the files here are served as they are")),
            None => b.mark_script(d, &mut dir.scripts),
        },
        _ => b.error(&d.origin, "SetHandler takes one handler name"),
    }
}

pub(crate) fn accept_path_info(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("on") => dir.accept_path_info = Some(Some(true)),
        [v] if v.eq_ignore_ascii_case("off") => dir.accept_path_info = Some(Some(false)),
        [v] if v.eq_ignore_ascii_case("default") => dir.accept_path_info = Some(None),
        _ => b.error(&d.origin, "AcceptPathInfo takes On, Off or Default"),
    }
}

/// `AllowOverride`: what `.htaccess` files in the directory may change.
pub(crate) fn allow_override(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let mut o = dir.allow_override.take().unwrap_or_default();
    match crate::overrides::parse_allow_override(&d.args, &mut o) {
        Ok(()) => dir.allow_override = Some(o),
        Err(m) => b.error(&d.origin, m),
    }
}

/// `AllowOverrideList`: directives `.htaccess` files may hold one by one,
/// each one that `known` (the table) has.
pub(crate) fn allow_override_list(b: &mut Builder, d: &Directive, dir: &mut DirConfig, known: fn(&str) -> bool) {
    let mut o = dir.allow_override.take().unwrap_or_default();
    match crate::overrides::parse_allow_override_list(&d.args, &mut o, known) {
        Ok(()) => dir.allow_override = Some(o),
        Err(m) => b.error(&d.origin, m),
    }
}

/// `AccessFileName`: the names of the per-directory files.
pub(crate) fn access_file_name(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if d.args.is_empty() || d.args.iter().any(|n| n.is_empty() || n.contains('/')) {
        b.error(&d.origin, "AccessFileName takes one or more file names (without /)");
        return;
    }
    host.access_file_names = Some(d.args.clone());
}
