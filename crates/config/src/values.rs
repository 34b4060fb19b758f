//! Value parsers: one directive argument (or a few) -> a typed value, or a
//! message saying what is wrong with it. They know nothing of where the
//! directive stands; the caller adds file and line.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use warren_regex::Regex;

use crate::backend::{FcgiAddr, FcgiBackend, ProxyPattern, ProxyRoute, ProxyTarget};
use crate::dir_config::{Combine, OptionFlags, OptionsSpec, Require};
use crate::parse::{Node, Origin, Section};
use crate::parse::Directive;

/// How a time value may be written: a whole number (or, with `fractions`,
/// a decimal one), after a `+` where `plus` allows one, and then one of
/// `units`, or no unit for seconds. Each
/// syntax is the one its directives' origin uses, so that a configuration
/// brought from Apache, php-fpm or an ab/siege command line reads as there.
pub struct DurationSyntax {
    pub units: &'static [(&'static str, Duration)],
    pub fractions: bool,
    pub plus: bool,
}

/// Apache's `KeepAliveTimeout`: seconds, or `NNNms` (its number parsing
/// takes a `+`).
pub const SECONDS_OR_MILLIS: DurationSyntax = DurationSyntax { units: &[("ms", Duration::from_millis(1))], fractions: false, plus: true };

/// php-fpm's time values: seconds, or with s, m, h or d.
pub const PHP_FPM_TIME: DurationSyntax = DurationSyntax {
    units: &[("s", Duration::from_secs(1)), ("m", Duration::from_secs(60)), ("h", Duration::from_secs(3600)), ("d", Duration::from_secs(86400))],
    fractions: false,
    plus: false,
};

/// A time value written in `syntax`; None if it is not one (or too long to
/// hold).
pub fn parse_duration(v: &str, syntax: &DurationSyntax) -> Option<Duration> {
    let sign = usize::from(syntax.plus && v.starts_with('+'));
    let is_number = |c: char| c.is_ascii_digit() || (syntax.fractions && c == '.');
    let end = v[sign..].find(|c: char| !is_number(c)).map_or(v.len(), |i| sign + i);
    let (number, unit) = v.split_at(end);
    let unit = match unit {
        "" => Duration::from_secs(1),
        suffix => syntax.units.iter().find(|(name, _)| *name == suffix)?.1,
    };
    if syntax.fractions {
        let n: f64 = number.parse().ok()?;
        Duration::try_from_secs_f64(n * unit.as_secs_f64()).ok()
    } else {
        let nanos = u128::from(number.parse::<u64>().ok()?) * unit.as_nanos();
        let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
        Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
    }
}

/// A size as php.ini and php-fpm write one: bytes, or a whole number with
/// K, M or G (powers of 1024, either case); None if it is not one or
/// overflows.
pub fn parse_size(v: &str) -> Option<u64> {
    let (number, shift) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 10),
        (i, 'm' | 'M') => (&v[..i], 20),
        (i, 'g' | 'G') => (&v[..i], 30),
        _ => (v, 0),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// `unix:/path|fcgi://name/rest` or `fcgi://host:port/rest`: the backend and
/// the path part (`/rest`, possibly empty).
pub fn parse_fcgi_url(url: &str) -> Result<(FcgiAddr, String), String> {
    if let Some(rest) = url.strip_prefix("unix:") {
        let (sock, fcgi) = rest.split_once('|').ok_or("a unix socket needs `|fcgi://localhost` after its path")?;
        let after = fcgi.strip_prefix("fcgi://").ok_or("only fcgi:// backends are supported")?;
        if !sock.starts_with('/') {
            return Err(format!("unix socket path {sock} must be absolute"));
        }
        let path = after.find('/').map_or("", |i| &after[i..]);
        return Ok((FcgiAddr::Unix(PathBuf::from(sock)), path.to_string()));
    }
    let after = url.strip_prefix("fcgi://").ok_or("only fcgi:// and unix:...|fcgi:// backends are supported")?;
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.trim_start_matches('[').trim_end_matches(']'), p.parse::<u16>().map_err(|_| format!("bad port in {authority}"))?)
        }
        _ => (authority, 8000),
    };
    if host.is_empty() {
        return Err(format!("no host in fcgi://{after}"));
    }
    Ok((FcgiAddr::Tcp { host: host.to_string(), port }, path.to_string()))
}

pub(crate) fn parse_proxy_route(d: &Directive) -> Result<ProxyRoute, String> {
    let regex = d.name.eq_ignore_ascii_case("ProxyPassMatch");
    let (pattern, target, keys) = match d.args.as_slice() {
        [p, t, keys @ ..] => (p, t, keys),
        _ => return Err(format!("{} takes a {} and a backend URL (or !), then key=value options", d.name, if regex { "regular expression" } else { "URL path" })),
    };
    let pattern = if regex {
        ProxyPattern::Regex(Regex::new(pattern).map_err(|e| format!("{}: bad regular expression: {e}", d.name))?.at(&d.origin))
    } else {
        if !pattern.starts_with('/') {
            return Err(format!("ProxyPass: the path {pattern} must start with /"));
        }
        ProxyPattern::Prefix(pattern.clone())
    };
    if target == "!" {
        return Ok(ProxyRoute { pattern, target: None, origin: d.origin.clone() });
    }
    if let Some((name, path)) = crate::balancer::split_url(target) {
        if let Some(kv) = keys.first() {
            return Err(format!("{} {target}: {kv}: a balancer's keys go on ProxySet or its members' lines", d.name));
        }
        let unused = FcgiBackend { addr: FcgiAddr::Tcp { host: String::new(), port: 0 }, reuse: false, timeout: None, flush_packets: false };
        return Ok(ProxyRoute { pattern, target: Some(ProxyTarget { backend: unused, path: path.to_string(), http: None, balancer: Some(name.to_string()) }), origin: d.origin.clone() });
    }
    let http = crate::proxy_http::parse_http_url(target).map_err(|m| format!("{} {target}: {m}", d.name))?;
    let (addr, path, mut http) = match http {
        Some(url) => (url.addr, url.path, Some(Box::new(crate::proxy_http::HttpOrigin { tls_name: url.tls_name, websocket: url.websocket, ..crate::proxy_http::HttpOrigin::new(url.authority) }))),
        None => {
            let (addr, path) = parse_fcgi_url(target).map_err(|m| format!("{} {target}: {m}", d.name))?;
            (addr, path, None)
        }
    };
    // mod_proxy_http keeps backend connections by default; mod_proxy_fcgi does not.
    let mut backend = FcgiBackend { addr, reuse: http.is_some(), timeout: None, flush_packets: false };
    for kv in keys {
        if let (Some(origin), Some((k, v))) = (http.as_mut(), kv.split_once('=')) {
            if origin.set_key(&k.to_ascii_lowercase(), v).map_err(|m| format!("{}: {m}", d.name))? {
                continue;
            }
        }
        match kv.split_once('=').map(|(k, v)| (k.to_ascii_lowercase(), v)) {
            Some((k, v)) if k == "enablereuse" || k == "disablereuse" => {
                let on = match v.to_ascii_lowercase().as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("{}: {k} takes on or off", d.name)),
                };
                backend.reuse = if k == "enablereuse" { on } else { !on };
            }
            Some((k, v)) if k == "timeout" => match crate::proxy_http::worker_seconds(v) {
                Some(t) if !t.is_zero() => backend.timeout = Some(t),
                _ => return Err(format!("{}: timeout={v} is not a positive number of seconds up to {}", d.name, crate::proxy_http::MAX_WORKER_SECONDS)),
            },
            Some((k, v)) if k == "flushpackets" => backend.flush_packets = flush_packets_value(v).map_err(|m| format!("{}: {m}", d.name))?,
            _ if http.is_some() => return Err(format!("{}: unsupported option {kv} (supported: enablereuse, disablereuse, timeout, connectiontimeout, keepalive, ttl, max, smax, min, retry, flushpackets, upgrade)", d.name)),
            _ => return Err(format!("{}: unsupported option {kv} (supported: enablereuse, disablereuse, timeout, flushpackets)", d.name)),
        }
    }
    Ok(ProxyRoute { pattern, target: Some(ProxyTarget { backend, path, http, balancer: None }), origin: d.origin.clone() })
}

/// `On` or `Off`, either case.
pub(crate) fn on_off_value(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// `flushpackets=on|auto|off`, as mod_proxy's key.
fn flush_packets_value(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "auto" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("flushpackets={v}: takes on, auto or off")),
    }
}

/// What may follow a FastCGI handler on a SetHandler line: `flushpackets=`
/// (warren's; Apache sets it with ProxyPass or ProxySet).
pub(crate) fn flush_packets_option(opts: &[String]) -> Result<bool, String> {
    match opts {
        [] => Ok(false),
        [kv] => match kv.split_once('=') {
            Some((k, v)) if k.eq_ignore_ascii_case("flushpackets") => flush_packets_value(v),
            _ => Err(format!("unsupported option {kv} (supported: flushpackets)")),
        },
        _ => Err("takes one handler name and at most flushpackets=on|off".to_string()),
    }
}

pub(crate) fn parse_listen(addr: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(sa);
    }
    match addr.to_socket_addrs() {
        Ok(mut it) => it.next().ok_or_else(|| format!("Listen: {addr} resolves to no address")),
        Err(_) => Err(format!("Listen: '{addr}' is not [address:]port")),
    }
}

pub(crate) fn parse_options(args: &[String]) -> Result<OptionsSpec, String> {
    let mut add = OptionFlags::NONE;
    let mut remove = OptionFlags::NONE;
    let mut set = OptionFlags::NONE;
    let (mut relative, mut absolute) = (false, false);
    for arg in args {
        let (sign, name) = match arg.as_bytes().first() {
            Some(b'+') => (Some(true), &arg[1..]),
            Some(b'-') => (Some(false), &arg[1..]),
            _ => (None, arg.as_str()),
        };
        let flags = match name.to_ascii_lowercase().as_str() {
            "indexes" => OptionFlags { indexes: true, ..OptionFlags::NONE },
            "followsymlinks" => OptionFlags { follow_symlinks: true, ..OptionFlags::NONE },
            "symlinksifownermatch" => OptionFlags { symlinks_if_owner_match: true, ..OptionFlags::NONE },
            // Apache's All leaves out SymLinksIfOwnerMatch (and MultiViews).
            "all" => OptionFlags { indexes: true, follow_symlinks: true, symlinks_if_owner_match: false, exec_cgi: true, multiviews: false },
            "none" => OptionFlags::NONE,
            // Accepted, and said by `apply::options` when turned on.
            "execcgi" => OptionFlags { exec_cgi: true, ..OptionFlags::NONE },
            "multiviews" => OptionFlags { multiviews: true, ..OptionFlags::NONE },
            "includes" | "includesnoexec" => OptionFlags::NONE,
            _ => return Err(format!("Illegal option {name}")),
        };
        match sign {
            Some(true) => {
                relative = true;
                add = add.or(flags);
            }
            Some(false) => {
                relative = true;
                remove = remove.or(flags);
            }
            None => {
                absolute = true;
                set = set.or(flags);
            }
        }
    }
    if relative && absolute {
        return Err("Either all Options must start with + or -, or no Option may".into());
    }
    Ok(if relative { OptionsSpec::Edit { add, remove } } else { OptionsSpec::Set(set) })
}

/// Whether `ip` is in the network `net`/`len` (an IPv4-mapped IPv6 address as its IPv4 one).
pub fn ip_in(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len as u32) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V4(_)) => a.to_ipv4_mapped().is_some_and(|v4| ip_in(IpAddr::V4(v4), net, len)),
        _ => false,
    }
}

pub(crate) fn parse_require(args: &[String]) -> Result<Require, String> {
    match args.first().map(|s| s.to_ascii_lowercase()).as_deref() {
        Some("all") => match args.get(1).map(|s| s.to_ascii_lowercase()).as_deref() {
            Some("granted") if args.len() == 2 => Ok(Require::All(true)),
            Some("denied") if args.len() == 2 => Ok(Require::All(false)),
            _ => Err("Require all takes `granted` or `denied`".into()),
        },
        Some("local") if args.len() == 1 => Ok(Require::Local),
        Some("method") if args.len() > 1 => Ok(Require::Method(args[1..].to_vec())),
        Some("valid-user") if args.len() == 1 => Ok(Require::ValidUser),
        Some("user") if args.len() > 1 => Ok(Require::User(args[1..].to_vec())),
        Some("group") if args.len() > 1 => Ok(Require::Group(args[1..].to_vec())),
        Some("ip") if args.len() > 1 => {
            let mut nets = Vec::new();
            for a in &args[1..] {
                let (ip, len) = match a.split_once('/') {
                    Some((ip, len)) => (ip, Some(len)),
                    None => (a.as_str(), None),
                };
                let ip: IpAddr = ip.parse().map_err(|_| format!("Require ip: '{a}' is not an address or network"))?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let len = match len {
                    None => max,
                    Some(l) => l.parse::<u8>().ok().filter(|l| *l <= max).ok_or_else(|| format!("Require ip: bad prefix length in '{a}'"))?,
                };
                nets.push((ip, len));
            }
            Ok(Require::Ip(nets))
        }
        _ => Err(format!("Require {}: supported forms are `all granted`, `all denied`, `ip ADDR[/LEN]...`, `local`, `method NAME...`, `valid-user`, `user NAME...` and `group NAME...`", args.join(" "))),
    }
}

/// Which `<Require...>` block a section's name is, if it is one.
pub(crate) fn require_block_kind(name: &str) -> Option<Combine> {
    match name.to_ascii_lowercase().as_str() {
        "requireall" => Some(Combine::All),
        "requireany" => Some(Combine::Any),
        "requirenone" => Some(Combine::None),
        _ => None,
    }
}

/// A `<RequireAll>`, `<RequireAny>` or `<RequireNone>` section: only
/// `Require` lines and such blocks may be in it. `restricted`: read from an
/// `.htaccess` file (an expression may not read files there).
pub(crate) fn parse_require_block(sec: &Section, restricted: bool) -> Result<Require, (Origin, String)> {
    let Some(kind) = require_block_kind(&sec.name) else { return Err((sec.origin.clone(), format!("<{}> is not a Require block", sec.name))) };
    if !sec.args.is_empty() {
        return Err((sec.origin.clone(), format!("<{}> takes no argument", sec.name)));
    }
    let mut rules = Vec::new();
    for node in &sec.children {
        match node {
            Node::Directive(d) if d.name.eq_ignore_ascii_case("Require") => {
                let rule = match d.args.as_slice() {
                    [kind, words @ ..] if kind.eq_ignore_ascii_case("expr") => crate::expr::Expr::parse(&words.join(" "), restricted).map(Require::Expr).map_err(|m| format!("Require expr: {m}")),
                    args => parse_require(args),
                };
                rules.push(rule.map_err(|m| (d.origin.clone(), m))?)
            }
            Node::Directive(d) => return Err((d.origin.clone(), format!("{} is not allowed in <{}>: only Require lines and Require blocks", d.name, sec.name))),
            Node::Section(inner) => rules.push(parse_require_block(inner, restricted)?),
            // An <IfModule> of a module warren lacks: not acted on, as elsewhere.
            Node::Skipped(_) => {}
        }
    }
    if rules.is_empty() {
        return Err((sec.origin.clone(), format!("<{}> holds no Require line", sec.name)));
    }
    Ok(Require::Block(kind, rules))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128M"), Some(128 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("512k"), Some(512 << 10));
        assert_eq!(parse_size("1000"), Some(1000));
        for bad in ["", "M", "1.5G", "-1M", "12T", "99999999999999999999G", " 1M"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_in_each_syntax() {
        let secs = Duration::from_secs;
        assert_eq!(parse_duration("10", &PHP_FPM_TIME), Some(secs(10)));
        assert_eq!(parse_duration("10s", &PHP_FPM_TIME), Some(secs(10)));
        assert_eq!(parse_duration("2m", &PHP_FPM_TIME), Some(secs(120)));
        assert_eq!(parse_duration("1h", &PHP_FPM_TIME), Some(secs(3600)));
        assert_eq!(parse_duration("1d", &PHP_FPM_TIME), Some(secs(86400)));
        assert_eq!(parse_duration("ten", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("5x", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("+5", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("1.5m", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("18446744073709551615d", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("250ms", &SECONDS_OR_MILLIS), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("+5", &SECONDS_OR_MILLIS), Some(secs(5)));
        assert_eq!(parse_duration("5s", &SECONDS_OR_MILLIS), None);
        assert_eq!(parse_duration("ms", &SECONDS_OR_MILLIS), None);
        const DECIMAL: DurationSyntax = DurationSyntax { units: &[("m", Duration::from_secs(60))], fractions: true, plus: false };
        let decimal = DECIMAL;
        assert_eq!(parse_duration("1.5m", &decimal), Some(secs(90)));
        assert_eq!(parse_duration(".", &decimal), None);
        assert_eq!(parse_duration(&"9".repeat(400), &decimal), None);
    }
}
