//! mod_proxy_http as the configuration names it: `ProxyPass` to an
//! `http://` (or `unix:/path|http://`) backend ([`HttpOrigin`], with the
//! worker keys Apache takes on the ProxyPass line), and the host's
//! directives that shape the exchange ([`ProxyHttp`]): ProxyPassReverse and
//! its cookie forms, ProxyPreserveHost, ProxyAddHeaders, ProxyVia,
//! ProxyErrorOverride and ProxyRequests (Off only: warren is no forward
//! proxy); and mod_ssl's client side for `https://` backends
//! ([`ProxyTls`]: SSLProxyEngine, SSLProxyVerify,
//! SSLProxyCACertificateFile, SSLProxyCheckPeerName,
//! SSLProxyCheckPeerExpire).
//!
//! The types and the worker-key parser; the host directives are in
//! `directives/proxy_http.rs` and the
//! backend URLs' (`directives/values.rs`'s
//! `parse_http_url`, for ProxyPass), the request half in the handler's
//! `proxy_http` module.

use std::path::PathBuf;
use std::time::Duration;

use crate::parse::Directive;

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
    /// Unset, a child keeps as many as it had in use at once, up to the
    /// client connections it carries (Apache's default is ThreadsPerChild,
    /// the most a threaded child can use at once; an event loop relays
    /// one exchange per client connection, so a fixed cap below that makes
    /// every request past it open a new connection).
    pub max_idle: Option<usize>,
    /// `retry=N`: how long a backend that could not be reached is answered
    /// 503 without being tried (Apache's default 60 s; 0: always tried).
    pub retry: Duration,
    /// `https://`: the backend's host name, sent as SNI and checked
    /// against its certificate (the URL's, whatever ProxyPreserveHost
    /// says, as in Apache 2.4).
    pub tls_name: Option<String>,
    /// `upgrade=websocket`, or a `ws://`/`wss://` URL (mod_proxy_wstunnel):
    /// a WebSocket upgrade request is passed on and, once the backend
    /// answers 101, tunnelled.
    pub websocket: bool,
    /// Which worker this is: the ProxyPass (or BalancerMember) line that
    /// made it, by [`worker_of`] its file and line. A child's kept
    /// connections are each worker's own, with its own `max=` and `ttl=`,
    /// as Apache keeps a connection pool per worker: two routes to one
    /// address do not share them. A virtual host that inherits a route
    /// shares its worker.
    pub worker: u64,
}

/// The worker a configuration line makes (see [`HttpOrigin::worker`]).
pub fn worker_of(origin: &crate::parse::Origin) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    origin.file.hash(&mut h);
    origin.line.hash(&mut h);
    h.finish()
}

/// A host's SSLProxy* directives; None: not said here (a virtual host
/// takes the main server's, then Apache's default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProxyTls {
    /// SSLProxyEngine: required for `https://` backends.
    pub engine: Option<bool>,
    /// SSLProxyVerify: true for `require` (and `optional`), false for `none`.
    pub verify: Option<bool>,
    /// SSLProxyCACertificateFile; else the system's trusted roots.
    pub ca_file: Option<PathBuf>,
    /// SSLProxyCACertificatePath: every certificate of the directory's
    /// files, with SSLProxyCACertificateFile's.
    pub ca_path: Option<PathBuf>,
    pub check_peer_name: Option<bool>,
    /// SSLProxyCheckPeerCN: Apache's older name for the name check, which
    /// SSLProxyCheckPeerName overrides when both are said.
    pub check_peer_cn: Option<bool>,
    pub check_peer_expire: Option<bool>,
    /// SSLProxyProtocol; else TLS 1.2 and 1.3.
    pub protocols: Option<crate::tls::TlsProtocols>,
}

impl ProxyTls {
    /// SSLProxyVerify with Apache's default, `none`.
    pub fn verifies(&self) -> bool {
        self.verify.unwrap_or(false)
    }

    /// Whether the certificate must name the backend's host.
    pub fn checks_name(&self) -> bool {
        self.check_peer_name.or(self.check_peer_cn).unwrap_or(true)
    }

    fn inherit(&mut self, main: &ProxyTls) {
        self.engine = self.engine.or(main.engine);
        self.verify = self.verify.or(main.verify);
        self.ca_file = self.ca_file.take().or_else(|| main.ca_file.clone());
        self.ca_path = self.ca_path.take().or_else(|| main.ca_path.clone());
        self.check_peer_name = self.check_peer_name.or(main.check_peer_name);
        self.check_peer_expire = self.check_peer_expire.or(main.check_peer_expire);
        self.check_peer_cn = self.check_peer_cn.or(main.check_peer_cn);
        self.protocols = self.protocols.or(main.protocols);
    }
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
    /// ProxyWebsocketIdleTimeout: a tunnel with no byte either way for this
    /// long is closed (None or zero: the exchange's timeout, ProxyTimeout).
    pub websocket_idle: Option<Duration>,
    /// ProxyWebsocketMaxPerClient: how many WebSocket tunnels one client
    /// address may hold in the server (None: [`WEBSOCKETS_PER_CLIENT`]; 0: no bound).
    pub websockets_per_client: Option<usize>,
    pub tls: ProxyTls,
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
        self.websocket_idle = self.websocket_idle.or(main.websocket_idle);
        self.websockets_per_client = self.websockets_per_client.or(main.websockets_per_client);
        self.tls.inherit(&main.tls);
    }
}

impl HttpOrigin {
    pub fn new(authority: String) -> HttpOrigin {
        HttpOrigin { authority, connect_timeout: None, tcp_keepalive: false, ttl: None, max_idle: None, retry: Duration::from_secs(60), tls_name: None, websocket: false, worker: 0 }
    }

    /// A worker key of an HTTP ProxyPass line this struct holds; false if
    /// `key` is none of them.
    pub fn set_key(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let seconds = |v: &str| worker_seconds(v).ok_or_else(|| format!("{key}={v} is not a number of seconds up to {MAX_WORKER_SECONDS}"));
        match key {
            "connectiontimeout" => self.connect_timeout = Some(seconds(value)?).filter(|d| !d.is_zero()),
            "ttl" => self.ttl = Some(seconds(value)?).filter(|d| !d.is_zero()),
            "retry" => self.retry = seconds(value)?,
            "keepalive" => self.tcp_keepalive = on_off(key, value)?,
            // Apache takes any protocol name here; warren tunnels WebSocket only.
            "upgrade" if value.eq_ignore_ascii_case("websocket") => self.websocket = true,
            "upgrade" => return Err(format!("upgrade={value}: warren tunnels only upgrade=websocket")),
            "max" => self.max_idle = Some(value.parse().map_err(|_| format!("max={value} is not a number of connections"))?),
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

/// The most a worker's time (timeout=, connectiontimeout=, ttl=, retry=,
/// hcinterval=) may be: a year. More would overflow the clock's arithmetic
/// when added to now, which would panic the thread (the event loop's too).
pub const MAX_WORKER_SECONDS: u64 = 365 * 24 * 3600;

/// A worker's time in seconds, if it is a number no larger than [`MAX_WORKER_SECONDS`].
pub fn worker_seconds(v: &str) -> Option<Duration> {
    v.parse::<u64>().ok().filter(|&n| n <= MAX_WORKER_SECONDS).map(Duration::from_secs)
}

/// A line of a `<Location>` that is the host's: `ProxyPass URL [keys]`
/// and `ProxyPassReverse URL`, the section's path being theirs.
pub(crate) fn in_location(d: &Directive) -> bool {
    d.name.eq_ignore_ascii_case("ProxyPass") || d.name.eq_ignore_ascii_case("ProxyPassReverse")
}

pub(crate) fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{key} takes On or Off")),
    }
}

/// The tunnels one client address may hold in a child when
/// ProxyWebsocketMaxPerClient is not said: more than a browser's tabs
/// open, far fewer than a child's connections (MaxChildConnections).
pub const WEBSOCKETS_PER_CLIENT: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_keys() {
        let mut o = HttpOrigin::new("h".into());
        assert_eq!(o.set_key("ttl", "5"), Ok(true));
        assert_eq!(o.ttl, Some(Duration::from_secs(5)));
        assert_eq!(o.set_key("retry", "0"), Ok(true));
        assert_eq!(o.retry, Duration::ZERO);
        assert_eq!(o.set_key("max", "4"), Ok(true));
        assert_eq!(o.max_idle, Some(4));
        assert_eq!(o.set_key("keepalive", "On"), Ok(true));
        assert!(o.tcp_keepalive);
        assert!(o.set_key("max", "x").is_err());
        // Added to now on the event loop: a time that overflows it is refused.
        for key in ["retry", "connectiontimeout", "ttl"] {
            assert!(o.set_key(key, &u64::MAX.to_string()).is_err(), "{key}");
            assert!(o.set_key(key, &(MAX_WORKER_SECONDS + 1).to_string()).is_err(), "{key}");
            assert_eq!(o.set_key(key, &MAX_WORKER_SECONDS.to_string()), Ok(true), "{key}");
        }
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
        assert_eq!((t.path.as_str(), o.authority.as_str(), o.max_idle, o.retry), ("/v1/", "127.0.0.1:3000", Some(4), Duration::ZERO));
        assert_eq!((o.ttl, o.connect_timeout, o.tcp_keepalive), (Some(Duration::from_secs(5)), Some(Duration::from_secs(2)), true));
        assert_eq!((t.backend.reuse, t.backend.timeout), (true, Some(Duration::from_secs(9))));
        let sock = s.main.proxy_routes[2].target.as_ref().unwrap();
        assert_eq!((&sock.backend.addr, sock.backend.reuse), (&crate::backend::FcgiAddr::Unix("/run/app.sock".into()), false));
        // A virtual host takes the main server's settings.
        let v = &s.virtual_hosts[0].host.proxy_http;
        assert_eq!((v.preserve_host, v.add_headers, v.via, v.error_override), (Some(true), Some(false), Some(Via::Full), Some(true)));
        assert_eq!(v.reverse, vec![("/loc/".to_string(), "http://127.0.0.1:5000/".to_string()), ("/api/".to_string(), "http://127.0.0.1:3000/v1/".to_string())]);

        let bad = "Listen 8080\nProxyRequests On\nProxyPass /a https://h/\nProxyPass /b http://h/ ttl=x\nProxyPass /c http://h/ frobnicate=1\nProxyVia sometimes\nProxyPassReverse nopath http://h/\nProxyPreserveHost maybe\n<Directory />\n    ProxyPass http://h/\n</Directory>\n";
        let (l, _d) = crate::test_support::load_text("proxy-http-bad", bad, &[]);
        let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
        assert_eq!(lines, vec![3, 5, 6, 7, 8, 9, 11, 4], "{:?}", l.errors);
        assert!(l.errors[7].message.contains("needs SSLProxyEngine On"), "{:?}", l.errors[7]);
        assert!(l.errors[0].message.contains("no forward proxy"), "{:?}", l.errors[0]);
    }

    #[test]
    fn ssl_proxy_directives() {
        let text = "Listen 8080\nSSLProxyEngine On\nSSLProxyCheckPeerName Off\nProxyPass /a https://api.example:8443/\n<VirtualHost *:8080>\n    ServerName v\n    SSLProxyVerify require\n    SSLProxyCheckPeerExpire Off\n</VirtualHost>\n";
        let (l, _d) = crate::test_support::load_text("ssl-proxy", text, &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        // The main server verifies nothing (Apache's default): said once, at the ProxyPass line.
        assert_eq!(l.warnings.iter().filter(|w| w.message.contains("SSLProxyVerify none")).map(|w| w.origin.line).collect::<Vec<_>>(), vec![5], "{:?}", l.warnings);
        let s = l.settings.unwrap();
        assert_eq!(s.main.proxy_routes[0].target.as_ref().unwrap().http.as_ref().unwrap().tls_name.as_deref(), Some("api.example"));
        let v = &s.virtual_hosts[0].host.proxy_http.tls;
        assert_eq!((v.engine, v.verify, v.check_peer_name, v.check_peer_expire), (Some(true), Some(true), Some(false), Some(false)));

        let cn = "Listen 8080\nSSLProxyCheckPeerCN Off\nSSLProxyProtocol -all +TLSv1.3\n<VirtualHost *:8080>\n    ServerName v\n    SSLProxyCheckPeerName On\n</VirtualHost>\n";
        let (l, _d) = crate::test_support::load_text("ssl-proxy-cn", cn, &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.unwrap();
        // CheckPeerCN Off turns the name check off, unless CheckPeerName says otherwise.
        assert!(!s.main.proxy_http.tls.checks_name());
        assert!(s.virtual_hosts[0].host.proxy_http.tls.checks_name());
        assert_eq!(s.virtual_hosts[0].host.proxy_http.tls.protocols, Some(crate::tls::TlsProtocols { tls12: false, tls13: true }));

        let bad = "Listen 8080\nSSLProxyVerify sometimes\nSSLProxyCACertificateFile /nonexistent/ca.pem\nSSLProxyEngine maybe\n";
        let (l, _d) = crate::test_support::load_text("ssl-proxy-bad", bad, &[]);
        assert_eq!(l.errors.iter().map(|e| e.origin.line).collect::<Vec<_>>(), vec![3, 4, 5], "{:?}", l.errors);
    }
}
