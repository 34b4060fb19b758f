//! mod_proxy_http as the configuration names it: `ProxyPass` to an
//! `http://` (or `unix:/path|http://`) backend ([`HttpOrigin`], with the
//! worker keys Apache takes on the ProxyPass line), and the host's
//! directives that shape the exchange ([`ProxyHttp`]): ProxyPassReverse and
//! its cookie forms, ProxyPreserveHost, ProxyAddHeaders, ProxyVia,
//! ProxyErrorOverride and ProxyRequests (Off only: warren is no forward
//! proxy).

use std::time::Duration;

use crate::backend::FcgiAddr;
use crate::builder::Builder;
use crate::parse::Directive;
use crate::settings::HostConfig;

/// Idle connections kept to one backend by a child when `max=` is not given.
pub const DEFAULT_MAX_IDLE: usize = 32;

/// An HTTP backend of a ProxyPass line: where it is reached (the route's
/// `backend.addr`) and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpOrigin {
    /// `host[:port]` as the URL writes it: the Host sent (unless
    /// ProxyPreserveHost) and the URL ProxyPassReverse matches.
    pub authority: String,
    /// `connectiontimeout=N` (else the exchange's timeout).
    pub connect_timeout: Option<Duration>,
    /// `keepalive=on`: TCP keep-alive probes on backend connections.
    pub tcp_keepalive: bool,
    /// `ttl=N`: an idle kept connection older than this is closed, not used.
    pub ttl: Option<Duration>,
    /// `max=N`: the most idle connections a child keeps to this backend.
    pub max_idle: usize,
    /// `retry=N`: how long a backend that could not be reached is answered
    /// 503 without being tried (Apache's default 60 s; 0: always tried).
    pub retry: Duration,
}

/// `ProxyVia`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Via {
    #[default]
    Off,
    On,
    Full,
    /// Via headers are removed from requests to backends.
    Block,
}

/// A host's mod_proxy_http directives. None: not said here (a virtual host
/// takes the main server's).
#[derive(Clone, Debug, Default)]
pub struct ProxyHttp {
    /// ProxyPassReverse: (URL-path prefix, backend URL).
    pub reverse: Vec<(String, String)>,
    /// ProxyPassReverseCookieDomain: (backend's domain, public domain).
    pub cookie_domains: Vec<(String, String)>,
    /// ProxyPassReverseCookiePath: (backend's path, public path).
    pub cookie_paths: Vec<(String, String)>,
    pub preserve_host: Option<bool>,
    pub add_headers: Option<bool>,
    pub via: Option<Via>,
    pub error_override: Option<bool>,
}

impl ProxyHttp {
    /// A virtual host's settings over the main server's.
    pub fn inherit(&mut self, main: &ProxyHttp) {
        self.reverse.extend(main.reverse.iter().cloned());
        self.cookie_domains.extend(main.cookie_domains.iter().cloned());
        self.cookie_paths.extend(main.cookie_paths.iter().cloned());
        self.preserve_host = self.preserve_host.or(main.preserve_host);
        self.add_headers = self.add_headers.or(main.add_headers);
        self.via = self.via.or(main.via);
        self.error_override = self.error_override.or(main.error_override);
    }
}

/// `http://host[:port]/path` or `unix:/sock|http://name/path`: where to
/// connect, the URL's authority and its path. `https://` is refused (no TLS
/// to backends yet).
pub fn parse_http_url(url: &str) -> Result<Option<(FcgiAddr, String, String)>, String> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.contains("|https://") {
        return Err("https:// backends are not supported yet (warren has no TLS to backends): use http://".into());
    }
    let (sock, rest) = match url.strip_prefix("unix:").and_then(|r| r.split_once('|')) {
        Some((sock, rest)) => (Some(sock), rest),
        None => (None, url),
    };
    let Some(after) = rest.strip_prefix("http://").or_else(|| (rest.len() > 7 && rest[..7].eq_ignore_ascii_case("http://")).then(|| &rest[7..])) else {
        return Ok(None);
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    if authority.is_empty() || authority.contains('@') || authority.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
        return Err(format!("bad host in {url}"));
    }
    if let Some(sock) = sock {
        if !sock.starts_with('/') {
            return Err(format!("unix socket path {sock} must be absolute"));
        }
        return Ok(Some((FcgiAddr::Unix(sock.into()), authority.to_string(), path.to_string())));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.ends_with(']') => (h.trim_start_matches('[').trim_end_matches(']'), p.parse::<u16>().map_err(|_| format!("bad port in {authority}"))?),
        _ => (authority.trim_start_matches('[').trim_end_matches(']'), 80),
    };
    if host.is_empty() {
        return Err(format!("no host in {url}"));
    }
    Ok(Some((FcgiAddr::Tcp { host: host.to_string(), port }, authority.to_string(), path.to_string())))
}

impl HttpOrigin {
    pub fn new(authority: String) -> HttpOrigin {
        HttpOrigin { authority, connect_timeout: None, tcp_keepalive: false, ttl: None, max_idle: DEFAULT_MAX_IDLE, retry: Duration::from_secs(60) }
    }

    /// A worker key of an HTTP ProxyPass line this struct holds; false if
    /// `key` is none of them.
    pub fn set_key(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let seconds = |v: &str| v.parse::<u64>().map(Duration::from_secs).map_err(|_| format!("{key}={v} is not a number of seconds"));
        match key {
            "connectiontimeout" => self.connect_timeout = Some(seconds(value)?).filter(|d| !d.is_zero()),
            "ttl" => self.ttl = Some(seconds(value)?).filter(|d| !d.is_zero()),
            "retry" => self.retry = seconds(value)?,
            "keepalive" => self.tcp_keepalive = on_off(key, value)?,
            "max" => self.max_idle = value.parse().map_err(|_| format!("max={value} is not a number of connections"))?,
            // Accepted as Apache has them: warren keeps no spare connections
            // open, and its idle ones are bounded by max.
            "smax" | "min" => {
                value.parse::<usize>().map_err(|_| format!("{key}={value} is not a number of connections"))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A line of a `<Location>` that is the host's: `ProxyPass URL [keys]`
/// and `ProxyPassReverse URL`, the section's path being theirs.
pub(crate) fn in_location(d: &Directive) -> bool {
    d.name.eq_ignore_ascii_case("ProxyPass") || d.name.eq_ignore_ascii_case("ProxyPassReverse")
}

fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{key} takes On or Off")),
    }
}

fn flag(b: &mut Builder, d: &Directive) -> Option<bool> {
    match d.args.as_slice() {
        [v] => match on_off(&d.name, v) {
            Ok(on) => Some(on),
            Err(m) => {
                b.error(&d.origin, m);
                None
            }
        },
        _ => {
            b.error(&d.origin, format!("{} takes one argument, On or Off", d.name));
            None
        }
    }
}

pub(crate) fn preserve_host(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.preserve_host = Some(on);
    }
}

pub(crate) fn add_headers(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.add_headers = Some(on);
    }
}

pub(crate) fn error_override(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    // Apache 2.4.56 takes a list of statuses after On; warren overrides every error.
    match d.args.first() {
        Some(v) => match on_off(&d.name, v) {
            Ok(on) => host.proxy_http.error_override = Some(on),
            Err(m) => b.error(&d.origin, m),
        },
        None => b.error(&d.origin, "ProxyErrorOverride takes On or Off"),
    }
}

/// ProxyRequests: On would make warren a forward proxy, which it is not.
pub(crate) fn requests(b: &mut Builder, d: &Directive, _host: &mut HostConfig) {
    if let Some(true) = flag(b, d) {
        b.error(&d.origin, "ProxyRequests On: warren is no forward proxy (only ProxyPass routes are proxied)");
    }
}

pub(crate) fn via(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let v = match d.args.as_slice() {
        [v] => match v.to_ascii_lowercase().as_str() {
            "off" => Via::Off,
            "on" => Via::On,
            "full" => Via::Full,
            "block" => Via::Block,
            _ => return b.error(&d.origin, format!("ProxyVia: {v} is none of On, Off, Full, Block")),
        },
        _ => return b.error(&d.origin, "ProxyVia takes one of On, Off, Full, Block"),
    };
    host.proxy_http.via = Some(v);
}

/// ProxyPassReverse, ProxyPassReverseCookieDomain, ProxyPassReverseCookiePath.
pub(crate) fn reverse(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let [from, to, rest @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, format!("{} takes two arguments", d.name));
    };
    if rest.iter().any(|r| !r.eq_ignore_ascii_case("interpolate")) {
        return b.error(&d.origin, format!("{}: unexpected {}", d.name, rest.join(" ")));
    }
    let pair = (from.clone(), to.clone());
    match d.name.to_ascii_lowercase().as_str() {
        "proxypassreverse" => {
            if !from.starts_with('/') {
                return b.error(&d.origin, format!("ProxyPassReverse: the path {from} must start with /"));
            }
            host.proxy_http.reverse.push(pair)
        }
        "proxypassreversecookiedomain" => host.proxy_http.cookie_domains.push(pair),
        _ => host.proxy_http.cookie_paths.push(pair),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls() {
        let (addr, auth, path) = parse_http_url("http://127.0.0.1:3000/app/").unwrap().unwrap();
        assert_eq!(addr, FcgiAddr::Tcp { host: "127.0.0.1".into(), port: 3000 });
        assert_eq!((auth.as_str(), path.as_str()), ("127.0.0.1:3000", "/app/"));
        let (addr, auth, path) = parse_http_url("http://backend").unwrap().unwrap();
        assert_eq!(addr, FcgiAddr::Tcp { host: "backend".into(), port: 80 });
        assert_eq!((auth.as_str(), path.as_str()), ("backend", "/"));
        let (addr, _, _) = parse_http_url("http://[::1]:81/").unwrap().unwrap();
        assert_eq!(addr, FcgiAddr::Tcp { host: "::1".into(), port: 81 });
        let (addr, auth, path) = parse_http_url("unix:/run/app.sock|http://app/x").unwrap().unwrap();
        assert_eq!(addr, FcgiAddr::Unix("/run/app.sock".into()));
        assert_eq!((auth.as_str(), path.as_str()), ("app", "/x"));
        assert_eq!(parse_http_url("fcgi://h:1/").unwrap(), None);
        assert!(parse_http_url("http://h:port/").is_err());
        assert!(parse_http_url("http://user@h/").is_err());
        assert!(parse_http_url("unix:rel.sock|http://h/").is_err());
        assert!(parse_http_url("https://h/").is_err());
    }

    #[test]
    fn worker_keys() {
        let mut o = HttpOrigin::new("h".into());
        assert_eq!(o.set_key("ttl", "5"), Ok(true));
        assert_eq!(o.ttl, Some(Duration::from_secs(5)));
        assert_eq!(o.set_key("retry", "0"), Ok(true));
        assert_eq!(o.retry, Duration::ZERO);
        assert_eq!(o.set_key("max", "4"), Ok(true));
        assert_eq!(o.max_idle, 4);
        assert_eq!(o.set_key("keepalive", "On"), Ok(true));
        assert!(o.tcp_keepalive);
        assert!(o.set_key("max", "x").is_err());
        assert_eq!(o.set_key("frobnicate", "1"), Ok(false));
    }

    #[test]
    fn directives_and_errors() {
        let text = "Listen 8080\n<Location /loc/>\n    ProxyPass http://127.0.0.1:5000/ retry=0\n    ProxyPassReverse http://127.0.0.1:5000/\n</Location>\nProxyPass /api/ http://127.0.0.1:3000/v1/ ttl=5 max=4 retry=0 connectiontimeout=2 timeout=9 keepalive=On\nProxyPass /sock/ unix:/run/app.sock|http://app/ disablereuse=On\nProxyPassReverse /api/ http://127.0.0.1:3000/v1/\nProxyPreserveHost On\nProxyAddHeaders Off\nProxyVia Full\nProxyErrorOverride On\nProxyRequests Off\n<VirtualHost *:8080>\n    ServerName v\n</VirtualHost>\n";
        let (l, _d) = crate::test_support::load_text("proxy-http", text, &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.unwrap();
        let loc = &s.main.proxy_routes[0];
        assert!(matches!(&loc.pattern, crate::backend::ProxyPattern::Prefix(p) if p == "/loc/"));
        assert_eq!(loc.target.as_ref().unwrap().http.as_ref().unwrap().authority, "127.0.0.1:5000");
        let t = s.main.proxy_routes[1].target.as_ref().unwrap();
        let o = t.http.as_ref().unwrap();
        assert_eq!((t.path.as_str(), o.authority.as_str(), o.max_idle, o.retry), ("/v1/", "127.0.0.1:3000", 4, Duration::ZERO));
        assert_eq!((o.ttl, o.connect_timeout, o.tcp_keepalive), (Some(Duration::from_secs(5)), Some(Duration::from_secs(2)), true));
        assert_eq!((t.backend.reuse, t.backend.timeout), (true, Some(Duration::from_secs(9))));
        let sock = s.main.proxy_routes[2].target.as_ref().unwrap();
        assert_eq!((&sock.backend.addr, sock.backend.reuse), (&FcgiAddr::Unix("/run/app.sock".into()), false));
        // A virtual host takes the main server's settings.
        let v = &s.virtual_hosts[0].host.proxy_http;
        assert_eq!((v.preserve_host, v.add_headers, v.via, v.error_override), (Some(true), Some(false), Some(Via::Full), Some(true)));
        assert_eq!(v.reverse, vec![("/loc/".to_string(), "http://127.0.0.1:5000/".to_string()), ("/api/".to_string(), "http://127.0.0.1:3000/v1/".to_string())]);

        let bad = "Listen 8080\nProxyRequests On\nProxyPass /a https://h/\nProxyPass /b http://h/ ttl=x\nProxyPass /c http://h/ frobnicate=1\nProxyVia sometimes\nProxyPassReverse nopath http://h/\nProxyPreserveHost maybe\n<Directory />\n    ProxyPass http://h/\n</Directory>\n";
        let (l, _d) = crate::test_support::load_text("proxy-http-bad", bad, &[]);
        let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
        assert_eq!(lines, vec![3, 4, 5, 6, 7, 8, 9, 11], "{:?}", l.errors);
        assert!(l.errors[0].message.contains("no forward proxy"), "{:?}", l.errors[0]);
    }
}
