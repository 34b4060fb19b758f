//! The value parsers only directives use: `Listen` addresses, `Options`
//! and `Require` lines (and `<RequireAll>`-style blocks), ProxyPass routes
//! with their `http://`, `ws://` and `unix:...|http://` backend URLs, and
//! FastCGI flush options. Like [`values`](crate::values), they turn an
//! argument into a typed value or a message; the caller adds file and
//! line. The parsers the types themselves need (durations, sizes, FastCGI
//! URLs, networks) stay in `values`, below the types.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use warren_regex::Regex;

use crate::backend::{FcgiAddr, FcgiBackend, ProxyPattern, ProxyRoute, ProxyTarget};
use crate::dir_config::{Combine, OptionFlags, OptionsSpec, Require};
use crate::parse::{Directive, Node, Origin, Section};
use crate::values::parse_fcgi_url;

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
    let http = parse_http_url(target).map_err(|m| format!("{} {target}: {m}", d.name))?;
    let (addr, path, mut http) = match http {
        Some(url) => (url.addr, url.path, Some(Box::new(crate::proxy_http::HttpOrigin { tls_name: url.tls_name, websocket: url.websocket, worker: crate::proxy_http::worker_of(&d.origin), ..crate::proxy_http::HttpOrigin::new(url.authority) }))),
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
            // Accepted, and said by `directives::core::options` when turned on.
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

/// An HTTP backend's URL taken apart: where to connect, the URL's
/// authority, its path, and for `https://` the host name TLS checks.
#[derive(Debug, PartialEq, Eq)]
pub struct HttpUrl {
    pub addr: FcgiAddr,
    pub authority: String,
    pub path: String,
    pub tls_name: Option<String>,
    /// `ws://` or `wss://` (mod_proxy_wstunnel's schemes).
    pub websocket: bool,
}

/// `http[s]://host[:port]/path`, `ws[s]://...` or `unix:/sock|http[s]://name/path`;
/// None for another scheme.
pub fn parse_http_url(url: &str) -> Result<Option<HttpUrl>, String> {
    let (sock, rest) = match url.strip_prefix("unix:").and_then(|r| r.split_once('|')) {
        Some((sock, rest)) => (Some(sock), rest),
        None => (None, url),
    };
    let scheme = |s: &str| rest.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s));
    let websocket = scheme("ws://") || scheme("wss://");
    let (after, tls, default_port) = if scheme("http://") {
        (&rest[7..], false, 80)
    } else if scheme("https://") {
        (&rest[8..], true, 443)
    } else if scheme("ws://") {
        (&rest[5..], false, 80)
    } else if scheme("wss://") {
        (&rest[6..], true, 443)
    } else {
        return Ok(None);
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    if authority.is_empty() || authority.contains('@') || authority.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
        return Err(format!("bad host in {url}"));
    }
    if let Some(sock) = sock.filter(|s| !s.starts_with('/')) {
        return Err(format!("unix socket path {sock} must be absolute"));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.ends_with(']') => (h.trim_start_matches('[').trim_end_matches(']'), p.parse::<u16>().map_err(|_| format!("bad port in {authority}"))?),
        _ => (authority.trim_start_matches('[').trim_end_matches(']'), default_port),
    };
    if host.is_empty() {
        return Err(format!("no host in {url}"));
    }
    let tls_name = tls.then(|| host.to_string());
    let addr = match sock {
        Some(sock) => FcgiAddr::Unix(sock.into()),
        None => FcgiAddr::Tcp { host: host.to_string(), port },
    };
    Ok(Some(HttpUrl { addr, authority: authority.to_string(), path: path.to_string(), tls_name, websocket }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy_http::HttpOrigin;
    use std::time::Duration;

    #[test]
    fn http_urls() {
        let parts = |url: &str| parse_http_url(url).unwrap().map(|u| (u.addr, u.authority, u.path, u.tls_name)).unwrap();
        let tcp = |host: &str, port| FcgiAddr::Tcp { host: host.into(), port };
        assert_eq!(parts("http://127.0.0.1:3000/app/"), (tcp("127.0.0.1", 3000), "127.0.0.1:3000".into(), "/app/".into(), None));
        assert_eq!(parts("http://backend"), (tcp("backend", 80), "backend".into(), "/".into(), None));
        assert_eq!(parts("http://[::1]:81/").0, tcp("::1", 81));
        assert_eq!(parts("unix:/run/app.sock|http://app/x"), (FcgiAddr::Unix("/run/app.sock".into()), "app".into(), "/x".into(), None));
        assert_eq!(parts("HTTPS://api.example:8443/v1"), (tcp("api.example", 8443), "api.example:8443".into(), "/v1".into(), Some("api.example".into())));
        assert_eq!(parts("https://api.example"), (tcp("api.example", 443), "api.example".into(), "/".into(), Some("api.example".into())));
        assert_eq!(parts("unix:/run/s.sock|https://app/").3, Some("app".into()));
        assert_eq!(parse_http_url("fcgi://h:1/").unwrap(), None);
        assert!(parse_http_url("http://h:port/").is_err());
        assert!(parse_http_url("http://user@h/").is_err());
        assert!(parse_http_url("unix:rel.sock|http://h/").is_err());
        assert!(parse_http_url("https://h:x/").is_err());
    }

    #[test]
    fn websocket_routes() {
        let url = |u: &str| parse_http_url(u).unwrap().unwrap();
        let ws = url("ws://127.0.0.1:9000/chat");
        assert_eq!((ws.addr, ws.path.as_str(), ws.tls_name, ws.websocket), (FcgiAddr::Tcp { host: "127.0.0.1".into(), port: 9000 }, "/chat", None, true));
        let wss = url("WSS://chat.example/");
        assert_eq!((wss.addr, wss.tls_name.as_deref(), wss.websocket), (FcgiAddr::Tcp { host: "chat.example".into(), port: 443 }, Some("chat.example"), true));
        assert!(!url("http://h/").websocket);
        let mut o = HttpOrigin::new("h".into());
        assert_eq!(o.set_key("upgrade", "WebSocket"), Ok(true));
        assert!(o.websocket);
        assert!(o.set_key("upgrade", "h2c").unwrap_err().contains("only upgrade=websocket"));

        let text = "Listen 8080\nProxyPass /ws/ ws://127.0.0.1:9000/\nProxyPass /app/ http://127.0.0.1:9001/ upgrade=websocket\nLoadModule proxy_wstunnel_module modules/mod_proxy_wstunnel.so\n<IfModule proxy_wstunnel_module>\n    ProxyWebsocketIdleTimeout 30\n</IfModule>\n<VirtualHost *:8080>\n    ServerName v\n</VirtualHost>\n";
        let (l, _d) = crate::test_support::load_text("proxy-ws", text, &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.unwrap();
        assert!(s.main.proxy_routes.iter().all(|r| r.target.as_ref().unwrap().http.as_ref().unwrap().websocket));
        assert_eq!(s.virtual_hosts[0].host.proxy_http.websocket_idle, Some(Duration::from_secs(30)));
        assert_eq!(s.virtual_hosts[0].host.proxy_http.websockets_per_client, None);
        let bad = "Listen 8080\nProxyWebsocketIdleTimeout soon\nProxyPass /a http://h/ upgrade=h2c\n";
        let (l, _d) = crate::test_support::load_text("proxy-ws-bad", bad, &[]);
        assert_eq!(l.errors.iter().map(|e| e.origin.line).collect::<Vec<_>>(), vec![3, 4], "{:?}", l.errors);
    }
}
