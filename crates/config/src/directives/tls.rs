//! mod_ssl's directives (the server side; SSLProxy* are in
//! [`proxy_http`](super::proxy_http)), read into a host's
//! [`TlsDirectives`](crate::tls::TlsDirectives) and the server's
//! [`TlsGlobal`](crate::tls::TlsGlobal), and the merge and checks once
//! everything is read. The request half is the crate `warren-tls` (rustls'
//! configurations), the handler's `authz` (SSLRequireSSL) and
//! `fastcgi::params` (SSLOptions +StdEnvVars).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::{Directive, Origin};
use crate::settings::{HostConfig, Settings};
use crate::tls::{SessionCache, TlsProtocols, DEFAULT_SHM_SIZE};

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
