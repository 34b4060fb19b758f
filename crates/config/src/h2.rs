//! HTTP/2's configuration: core's `Protocols` and `ProtocolsHonorOrder`,
//! and mod_http2's `H2*` directives, with Apache's defaults (HTTP/2 is off
//! until `Protocols` names h2 or h2c).
//!
//! - [`H2Directives`]: the lines one host (main server or `<VirtualHost>`)
//!   wrote, unmerged, in [`HostConfig::http2`](crate::HostConfig::http2);
//! - [`Protocols`] and [`H2Settings`]: a host's values once merged with the
//!   main server's, in [`HostConfig::protocols`](crate::HostConfig::protocols) and [`HostConfig::h2`](crate::HostConfig::h2);
//! - [`H2Listener`]: what one listener offers ([`Settings::h2_listener`](crate::Settings::h2_listener)).
//!
//! Apache decides per virtual host, after SNI (TLS) or on the connection's
//! default host (cleartext). warren decides per listener: a listener's
//! rustls configuration, and so its ALPN list, is chosen before the
//! client's SNI is read, and a cleartext connection names no host before
//! its first request. So a listener offers h2 (or h2c) only when every host
//! it serves allows it; when they disagree, that is said at configuration
//! time, naming the hosts and the outcome. Its HTTP/2 settings (streams,
//! window...) are its default (first) host's, as its TLS ciphers are.
//!
//! The types are here; the directives and the merge in
//! `directives/h2.rs`; each listener's offer in
//! [`listeners`](crate::listeners).

use std::time::Duration;

use crate::dir_config::DirConfig;
use crate::parse::Origin;

/// One protocol `Protocols` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/2 over TLS, agreed by ALPN.
    H2,
    /// HTTP/2 over cleartext TCP: prior knowledge or `Upgrade: h2c`.
    H2c,
    Http11,
}

impl Protocol {
    /// The name Apache's `Protocols` (and ALPN) gives it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
            Protocol::Http11 => "http/1.1",
        }
    }

    pub(crate) fn parse(v: &str) -> Option<Protocol> {
        [Protocol::H2, Protocol::H2c, Protocol::Http11].into_iter().find(|p| p.name().eq_ignore_ascii_case(v))
    }
}

/// A host's `Protocols` and `ProtocolsHonorOrder`, merged.
#[derive(Clone, Debug, PartialEq)]
pub struct Protocols {
    /// In the order written: the order of preference.
    pub list: Vec<Protocol>,
    /// The `Protocols` line in force (maybe the main server's); None for
    /// the default.
    pub origin: Option<Origin>,
    /// `ProtocolsHonorOrder` (on): the server's order wins over the client's.
    pub honor_order: bool,
}

impl Default for Protocols {
    /// Apache's: `Protocols http/1.1`, `ProtocolsHonorOrder on`.
    fn default() -> Self {
        Protocols { list: vec![Protocol::Http11], origin: None, honor_order: true }
    }
}

impl Protocols {
    pub fn allows(&self, p: Protocol) -> bool {
        self.list.contains(&p)
    }

    /// Whether h2 goes before http/1.1 in what TLS offers: the list's order
    /// when it is honoured; else h2, as clients ask for it first.
    pub(crate) fn h2_first(&self) -> bool {
        if !self.honor_order {
            return true;
        }
        let at = |p| self.list.iter().position(|q| *q == p);
        match (at(Protocol::H2), at(Protocol::Http11)) {
            (Some(h2), Some(h1)) => h2 < h1,
            _ => true,
        }
    }
}

/// mod_http2's defaults.
pub const DEFAULT_MAX_SESSION_STREAMS: u32 = 100;
pub const DEFAULT_WINDOW_SIZE: u32 = 65535;
/// 2^31-1: RFC 9113's largest flow-control window, and the most streams a
/// connection could ever open (stream identifiers have 31 bits).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// RFC 9113's largest frame payload: 2^24-1.
pub const MAX_FRAME: u32 = (1 << 24) - 1;

/// A host's HTTP/2 settings, merged with the main server's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H2Settings {
    /// `H2MaxSessionStreams` (alias `H2MaxConcurrentStreams`):
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_session_streams: u32,
    /// `H2WindowSize`: SETTINGS_INITIAL_WINDOW_SIZE, what a client may
    /// send of a request body before the server returns credit.
    pub window_size: u32,
    /// `H2MaxDataFrameLen`: the most response bytes in one DATA frame (0:
    /// as large as the client's SETTINGS_MAX_FRAME_SIZE allows).
    pub max_data_frame_len: u32,
    /// `H2Direct` (None: not written, which means on where Protocols has
    /// h2c, as in Apache).
    pub direct: Option<bool>,
    /// `H2Upgrade` at the host's level: None means on for h2c, never over
    /// TLS (RFC 9113 §3.2 has no Upgrade to h2 over TLS).
    pub upgrade: Option<bool>,
    /// `H2StreamTimeout`: how long a stream may wait to send or receive
    /// (None: the server's Timeout).
    pub stream_timeout: Option<Duration>,
    /// `H2WebSockets`: RFC 8441's extended CONNECT is announced
    /// (SETTINGS_ENABLE_CONNECT_PROTOCOL) and taken, under every MPM (the
    /// event loop and the threads of prefork and worker carry such
    /// tunnels). Off by default, as in Apache.
    pub websockets: bool,
    /// `H2EarlyHints`: a backend's interim answers (103 Early Hints) are
    /// passed on to HTTP/2 clients. Off by default, as in Apache (some
    /// clients mishandle interim answers); the request's host decides.
    pub early_hints: bool,
}

impl H2Settings {
    /// What a connection's streams are held to (the values a listener's
    /// hosts should agree on).
    pub(crate) fn limits(&self) -> (u32, u32, u32, Option<Duration>, bool) {
        (self.max_session_streams, self.window_size, self.max_data_frame_len, self.stream_timeout, self.websockets)
    }
}

impl Default for H2Settings {
    fn default() -> Self {
        H2Settings { max_session_streams: DEFAULT_MAX_SESSION_STREAMS, window_size: DEFAULT_WINDOW_SIZE, max_data_frame_len: 0, direct: None, upgrade: None, stream_timeout: None, websockets: false, early_hints: false }
    }
}

/// The HTTP/2 lines one host wrote, before merging with the main server's.
/// (`H2Upgrade` and `H2StreamTimeout`, which Apache takes in sections too,
/// are in [`DirConfig::h2_upgrade`](crate::DirConfig::h2_upgrade) and [`DirConfig::h2_stream_timeout`](crate::DirConfig::h2_stream_timeout).)
#[derive(Clone, Debug, Default)]
pub struct H2Directives {
    pub protocols: Option<(Vec<Protocol>, Origin)>,
    pub honor_order: Option<bool>,
    pub max_session_streams: Option<u32>,
    pub window_size: Option<u32>,
    pub max_data_frame_len: Option<u32>,
    pub direct: Option<(bool, Origin)>,
    pub websockets: Option<bool>,
    pub early_hints: Option<bool>,
}

impl H2Directives {
    /// `self` (a virtual host's) over `base` (the main server's): each
    /// value the host leaves unset is the main server's, as Apache merges.
    pub(crate) fn over(&self, base: &H2Directives) -> H2Directives {
        H2Directives {
            protocols: self.protocols.clone().or_else(|| base.protocols.clone()),
            honor_order: self.honor_order.or(base.honor_order),
            max_session_streams: self.max_session_streams.or(base.max_session_streams),
            window_size: self.window_size.or(base.window_size),
            max_data_frame_len: self.max_data_frame_len.or(base.max_data_frame_len),
            direct: self.direct.clone().or_else(|| base.direct.clone()),
            websockets: self.websockets.or(base.websockets),
            early_hints: self.early_hints.or(base.early_hints),
        }
    }

    /// The merged values, with Apache's defaults for what nobody wrote;
    /// `dir` is the host's own (merged) per-directory level.
    pub(crate) fn settle(&self, dir: &DirConfig) -> (Protocols, H2Settings) {
        let defaults = H2Settings::default();
        let protocols = Protocols {
            list: self.protocols.as_ref().map_or_else(|| Protocols::default().list, |(l, _)| l.clone()),
            origin: self.protocols.as_ref().map(|(_, o)| o.clone()),
            honor_order: self.honor_order.unwrap_or(true),
        };
        let h2 = H2Settings {
            max_session_streams: self.max_session_streams.unwrap_or(defaults.max_session_streams),
            window_size: self.window_size.unwrap_or(defaults.window_size),
            max_data_frame_len: self.max_data_frame_len.unwrap_or(defaults.max_data_frame_len),
            direct: self.direct.as_ref().map(|(on, _)| *on),
            upgrade: dir.h2_upgrade.as_ref().map(|(on, _)| *on),
            stream_timeout: dir.h2_stream_timeout.as_ref().map(|(t, _)| *t),
            websockets: self.websockets.unwrap_or(defaults.websockets),
            early_hints: self.early_hints.unwrap_or(defaults.early_hints),
        };
        (protocols, h2)
    }
}

/// What one listener offers of HTTP/2: see the module's documentation for
/// how its hosts decide it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct H2Listener {
    /// It speaks TLS.
    pub tls: bool,
    /// TLS: ALPN offers `h2` (besides `http/1.1`).
    pub h2: bool,
    /// TLS: `h2` goes before `http/1.1` in the ALPN list (rustls picks the
    /// first of the server's list that the client offers).
    pub h2_first: bool,
    /// Cleartext: a connection opening with HTTP/2's preface speaks
    /// HTTP/2 at once (prior knowledge, `H2Direct`).
    pub h2c_direct: bool,
    /// Cleartext: a request with `Upgrade: h2c` (and no body) is answered
    /// 101 and continued in HTTP/2 (`H2Upgrade`).
    pub h2c_upgrade: bool,
    /// Cleartext, and every host's `Protocols` names h2c without
    /// http/1.1: the listener speaks only HTTP/2 (prior knowledge), so a
    /// connection that does not open with HTTP/2's preface is refused as
    /// HTTP/2 refuses it (GOAWAY PROTOCOL_ERROR), not answered 400.
    pub h2c_only: bool,
    /// The HTTP/2 settings of its connections: its default host's.
    pub settings: H2Settings,
}

impl H2Listener {
    /// Whether any form of HTTP/2 is on.
    pub fn any(&self) -> bool {
        self.h2 || self.h2c_direct || self.h2c_upgrade
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use super::*;
    use crate::test_support::{load_text, Dir};
    use crate::Loaded;

    /// The configuration `text` after a DocumentRoot line (so line N of
    /// `text` is line N + 1), with a certificate pair a.pem/a.key.
    fn load(name: &str, text: &str) -> (Loaded, Dir) {
        load_text(&format!("h2cfg-{name}"), text, &["a.pem", "a.key"])
    }

    fn lines(list: &[crate::ConfigError]) -> Vec<String> {
        list.iter().map(|e| format!("{}: {}", e.origin.line, e.message)).collect()
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    const LOADED: &str = "LoadModule http2_module modules/mod_http2.so\n";

    #[test]
    fn http2_is_off_by_default() {
        let (l, _d) = load("default", "Listen 80\nListen 443\n<VirtualHost *:443>\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\n</VirtualHost>\n");
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        assert!(l.warnings.is_empty(), "{:?}", lines(&l.warnings));
        let s = l.settings.unwrap();
        assert_eq!(s.main.protocols, Protocols::default());
        assert_eq!(s.main.protocols.list, vec![Protocol::Http11]);
        assert!(s.main.protocols.honor_order);
        assert_eq!(s.main.h2, H2Settings::default());
        assert_eq!((s.main.h2.max_session_streams, s.main.h2.window_size), (100, 65535));
        for a in ["0.0.0.0:80", "0.0.0.0:443"] {
            let l = s.h2_listener(addr(a));
            assert!(!l.any(), "{a}: {l:?}");
        }
        assert!(s.h2_listener(addr("0.0.0.0:443")).tls);
    }

    #[test]
    fn debian_http2_conf_turns_on_every_form() {
        let (l, _d) = load(
            "debian",
            &format!("{LOADED}Protocols h2 h2c http/1.1\nListen 80\nListen 443\n<VirtualHost *:80>\n</VirtualHost>\n<VirtualHost *:443>\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\n</VirtualHost>\n"),
        );
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        assert!(l.warnings.is_empty(), "{:?}", lines(&l.warnings));
        let s = l.settings.unwrap();
        assert_eq!(s.virtual_hosts[1].host.protocols.list, vec![Protocol::H2, Protocol::H2c, Protocol::Http11]);
        assert_eq!(s.virtual_hosts[1].host.protocols.origin.as_ref().unwrap().line, 3);
        let tls = s.h2_listener(addr("0.0.0.0:443"));
        assert!(tls.tls && tls.h2 && tls.h2_first && !tls.h2c_direct && !tls.h2c_upgrade, "{tls:?}");
        let plain = s.h2_listener(addr("0.0.0.0:80"));
        assert!(!plain.tls && !plain.h2 && plain.h2c_direct && plain.h2c_upgrade, "{plain:?}");
    }

    #[test]
    fn values_and_their_inheritance() {
        let (l, _d) = load(
            "values",
            &format!(
                "{LOADED}Protocols http/1.1 h2c\nProtocolsHonorOrder off\nH2MaxSessionStreams 50\nH2WindowSize 1048576\nH2Direct off\nH2StreamTimeout 30\nH2WebSockets on\nListen 80\nListen 8080\n<VirtualHost *:80>\nServerName a\nH2MaxConcurrentStreams 200\nH2Upgrade off\nH2MaxDataFrameLen 8192\n</VirtualHost>\n<VirtualHost *:8080>\nServerName b\nProtocols H2C HTTP/1.1\nProtocolsHonorOrder on\nH2WebSockets off\nH2StreamTimeout 1500ms\nH2EarlyHints on\n</VirtualHost>\n"
            ),
        );
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        assert!(l.warnings.is_empty(), "{:?}", lines(&l.warnings));
        let s = l.settings.unwrap();
        let a = &s.virtual_hosts[0].host;
        assert_eq!(a.protocols.list, vec![Protocol::Http11, Protocol::H2c]);
        assert!(!a.protocols.honor_order);
        assert_eq!(a.h2, H2Settings { max_session_streams: 200, window_size: 1 << 20, max_data_frame_len: 8192, direct: Some(false), upgrade: Some(false), stream_timeout: Some(Duration::from_secs(30)), websockets: true, early_hints: false });
        let b = &s.virtual_hosts[1].host;
        assert_eq!(b.protocols.list, vec![Protocol::H2c, Protocol::Http11]);
        assert!(b.protocols.honor_order);
        assert_eq!(b.h2.max_session_streams, 50);
        assert_eq!(b.h2.stream_timeout, Some(Duration::from_millis(1500)));
        assert!(!b.h2.websockets, "its own H2WebSockets off");
        assert!(b.h2.early_hints && !a.h2.early_hints, "H2EarlyHints is the host's own, off unless said");
        assert!(!H2Settings::default().websockets, "off unless configured, as in Apache");
        // Acted on under every MPM: nothing to warn of.
        let (l, _d) = load("ws-prefork", "LoadModule mpm_prefork_module modules/mod_mpm_prefork.so\nListen 80\nProtocols h2c http/1.1\nH2WebSockets on\n");
        assert!(!lines(&l.warnings).iter().any(|w| w.contains("H2WebSockets")), "{:?}", lines(&l.warnings));
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        assert!(l.settings.unwrap().main.h2.websockets);
        // a: neither form of h2c (H2Direct off from the main server, its own H2Upgrade off).
        assert!(!s.h2_listener(addr("0.0.0.0:80")).any());
        let l8080 = s.h2_listener(addr("0.0.0.0:8080"));
        assert!(!l8080.h2c_direct && l8080.h2c_upgrade, "{l8080:?}");
        assert_eq!(l8080.settings, b.h2);
    }

    #[test]
    fn errors_name_file_line_and_directive() {
        let (l, _d) = load(
            "errors",
            "Listen 80\nProtocols h2 spdy/3 http/1.1\nProtocols\nH2MaxSessionStreams 0\nH2MaxSessionStreams 2147483648\nH2WindowSize 0\nH2WindowSize 2147483648\nH2MaxDataFrameLen 16777216\nH2Direct maybe\nH2StreamTimeout soon\nProtocolsHonorOrder sometimes\n<Directory /srv>\nProtocols h2\n</Directory>\n",
        );
        let e = lines(&l.errors);
        let expect = [
            "3: Protocols: unknown protocol 'spdy/3'",
            "4: Protocols takes one or more protocols",
            "5: H2MaxSessionStreams must be from 1 to 2147483647",
            "6: H2MaxSessionStreams must be from 1 to 2147483647",
            "7: H2WindowSize must be from 1 to 2147483647",
            "8: H2WindowSize must be from 1 to 2147483647",
            "9: H2MaxDataFrameLen must be from 0 to 16777215",
            "10: H2Direct must be On or Off",
            "11: H2StreamTimeout: 'soon' is not a time interval",
            "12: ProtocolsHonorOrder must be On or Off",
            "14: Protocols is not allowed in <Directory>",
        ];
        for x in expect {
            assert!(e.iter().any(|e| e.starts_with(x)), "no error {x:?} in {e:#?}");
        }
        assert_eq!(e.len(), expect.len(), "{e:#?}");
        // The error's own text names the file too.
        assert!(l.errors[0].to_string().contains("warren.conf:3: Protocols"), "{}", l.errors[0]);
    }

    #[test]
    fn a_listener_offers_what_all_its_hosts_allow() {
        let text = format!(
            "{LOADED}Listen 443\nListen 80\n<VirtualHost *:443>\nServerName a\nProtocols h2 http/1.1\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\n</VirtualHost>\n<VirtualHost *:443>\nServerName b\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\n</VirtualHost>\n<VirtualHost *:80>\nServerName c\nProtocols h2c http/1.1\n</VirtualHost>\n<VirtualHost *:80>\nServerName d\nProtocols h2c http/1.1\nH2Direct off\n</VirtualHost>\n"
        );
        let (l, _d) = load("disagree", &text);
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        let s = l.settings.unwrap();
        let tls = s.h2_listener(addr("0.0.0.0:443"));
        assert!(tls.tls && !tls.h2, "{tls:?}");
        let plain = s.h2_listener(addr("0.0.0.0:80"));
        assert!(!plain.h2c_direct && plain.h2c_upgrade, "{plain:?}");
        let w = lines(&l.warnings);
        assert!(
            w.iter().any(|w| w.starts_with("7: h2 (HTTP/2 over TLS, by ALPN) is off on listener 0.0.0.0:443: a allows it, b does not")),
            "{w:#?}"
        );
        assert!(w.iter().any(|w| w.starts_with("20: h2c by prior knowledge (H2Direct) is off on listener 0.0.0.0:80: c allows it, d does not")), "{w:#?}");
        assert_eq!(w.len(), 2, "{w:#?}");
    }

    #[test]
    fn a_cleartext_listener_whose_hosts_all_leave_out_http1_speaks_only_h2c() {
        let text = format!(
            "{LOADED}Listen 80\nListen 81\nListen 82\n<VirtualHost *:80>\nProtocols h2c\n</VirtualHost>\n<VirtualHost *:81>\nProtocols h2c\n</VirtualHost>\n<VirtualHost *:81>\nProtocols h2c http/1.1\n</VirtualHost>\n<VirtualHost *:82>\nProtocols h2c\nH2Direct off\n</VirtualHost>\n"
        );
        let (l, _d) = load("h2c-only", &text);
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        let s = l.settings.unwrap();
        assert!(s.h2_listener(addr("0.0.0.0:80")).h2c_only);
        assert!(!s.h2_listener(addr("0.0.0.0:81")).h2c_only, "a host speaks http/1.1 there");
        assert!(!s.h2_listener(addr("0.0.0.0:82")).h2c_only, "without prior knowledge no HTTP/2 could start");
    }

    #[test]
    fn disagreements_of_one_split_are_said_once() {
        let (l, _d) = load("split", &format!("{LOADED}Listen 80\n<VirtualHost *:80>\nServerName a\nProtocols h2c http/1.1\n</VirtualHost>\n<VirtualHost *:80>\n</VirtualHost>\n"));
        let s = l.settings.unwrap();
        assert!(!s.h2_listener(addr("0.0.0.0:80")).any());
        let w = lines(&l.warnings);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(w[0].starts_with("6: h2c by prior knowledge (H2Direct) and h2c by Upgrade (H2Upgrade) are off on listener 0.0.0.0:80: a allows it, <VirtualHost> at "), "{w:#?}");
    }

    #[test]
    fn what_is_said_about_lines_not_acted_on() {
        let (l, _d) = load(
            "said",
            "Listen 443\nProtocols h2\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\nH2Direct on\nH2Upgrade on\nH2Push on\nH2Push off\n<Directory /srv>\nH2Upgrade off\nH2StreamTimeout 5\nH2Push on\nH2CopyFiles on\n</Directory>\nH2MinWorkers 4\nH2ModernTLSOnly off\n",
        );
        assert!(l.errors.is_empty(), "{:?}", lines(&l.errors));
        let w = lines(&l.warnings);
        let expect = [
            "3: Protocols: HTTP/2 is offered although no LoadModule http2_module is read",
            "3: Protocols without http/1.1: warren still answers HTTP/1.1",
            "7: H2Direct on: not acted on for the main server on TLS listener 0.0.0.0:443",
            "8: H2Upgrade on: not acted on for the main server on TLS listener 0.0.0.0:443",
            "9: H2Push on: not acted on: warren does no HTTP/2 server push",
            "12: H2Upgrade in a section: not acted on",
            "13: H2StreamTimeout in a section: not acted on",
            "14: H2Push on: not acted on",
            "15: H2CopyFiles: accepted, not acted on",
            "17: H2MinWorkers: accepted, not acted on",
            "18: H2ModernTLSOnly: accepted, not acted on",
        ];
        for x in expect {
            assert!(w.iter().any(|w| w.starts_with(x)), "no warning {x:?} in {w:#?}");
        }
        assert_eq!(w.len(), expect.len(), "{w:#?}");
        let s = l.settings.unwrap();
        let tls = s.h2_listener(addr("0.0.0.0:443"));
        assert!(tls.h2 && tls.h2_first && !tls.h2c_direct && !tls.h2c_upgrade, "{tls:?}");
    }

    #[test]
    fn honour_order_decides_what_alpn_puts_first() {
        let p = |list: Vec<Protocol>, honor_order| Protocols { list, origin: None, honor_order }.h2_first();
        assert!(p(vec![Protocol::H2, Protocol::Http11], true));
        assert!(!p(vec![Protocol::Http11, Protocol::H2], true));
        // The client's order: clients ask for h2 first.
        assert!(p(vec![Protocol::Http11, Protocol::H2], false));
        assert!(p(vec![Protocol::H2], true));
    }

    #[test]
    fn the_default_hosts_settings_hold_for_the_listener() {
        let (l, _d) = load(
            "settings",
            &format!("{LOADED}Listen 80\nProtocols h2c http/1.1\n<VirtualHost *:80>\nServerName a\nH2WindowSize 1000000\n</VirtualHost>\n<VirtualHost *:80>\nServerName b\nH2MaxSessionStreams 10\n</VirtualHost>\n"),
        );
        let s = l.settings.unwrap();
        let plain = s.h2_listener(addr("0.0.0.0:80"));
        assert!(plain.h2c_direct && plain.h2c_upgrade);
        assert_eq!((plain.settings.window_size, plain.settings.max_session_streams), (1_000_000, 100));
        let w = lines(&l.warnings);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(w[0].starts_with("9: the HTTP/2 settings of b ") && w[0].contains("differ from those of a, the default host of listener 0.0.0.0:80"), "{w:#?}");
    }

    #[test]
    fn if_module_http2_waits_for_load_module() {
        let (l, _d) = load("ifmodule", "Listen 80\n<IfModule http2_module>\nProtocols h2c http/1.1\n</IfModule>\n");
        let s = l.settings.unwrap();
        assert!(!s.h2_listener(addr("0.0.0.0:80")).any());
        let (l, _d) = load("ifmodule2", &format!("{LOADED}Listen 80\n<IfModule http2_module>\nProtocols h2c http/1.1\n</IfModule>\n"));
        assert!(l.warnings.is_empty(), "{:?}", lines(&l.warnings));
        let s = l.settings.unwrap();
        assert!(s.h2_listener(addr("0.0.0.0:80")).h2c_direct);
    }
}
