//! HTTP/2's configuration: core's `Protocols` and `ProtocolsHonorOrder`,
//! and mod_http2's `H2*` directives, with Apache's defaults (HTTP/2 is off
//! until `Protocols` names h2 or h2c).
//!
//! - [`H2Directives`]: the lines one host (main server or `<VirtualHost>`)
//!   wrote, unmerged, in [`HostConfig::http2`];
//! - [`Protocols`] and [`H2Settings`]: a host's values once merged with the
//!   main server's, in [`HostConfig::protocols`] and [`HostConfig::h2`];
//! - [`H2Listener`]: what one listener offers ([`Settings::h2_listener`]).
//!
//! Apache decides per virtual host, after SNI (TLS) or on the connection's
//! default host (cleartext). warren decides per listener: a listener's
//! rustls configuration, and so its ALPN list, is chosen before the
//! client's SNI is read, and a cleartext connection names no host before
//! its first request. So a listener offers h2 (or h2c) only when every host
//! it serves allows it; when they disagree, that is said at configuration
//! time, naming the hosts and the outcome. Its HTTP/2 settings (streams,
//! window...) are its default (first) host's, as its TLS ciphers are.

use std::net::SocketAddr;
use std::time::Duration;

use crate::builder::Builder;
use crate::dir_config::{DirConfig, DirSection};
use crate::parse::{Directive, Origin};
use crate::settings::{HostConfig, Settings, VirtualHost};
use crate::values::{parse_duration, DurationSyntax};

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

    fn parse(v: &str) -> Option<Protocol> {
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
    fn h2_first(&self) -> bool {
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
    fn limits(&self) -> (u32, u32, u32, Option<Duration>, bool) {
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
/// are in [`DirConfig::h2_upgrade`] and [`DirConfig::h2_stream_timeout`].)
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
    fn over(&self, base: &H2Directives) -> H2Directives {
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
    fn settle(&self, dir: &DirConfig) -> (Protocols, H2Settings) {
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

/// A host serving a listener, named for warnings.
struct Served<'a> {
    name: String,
    /// Its `<VirtualHost>` line (None: the main server).
    origin: Option<Origin>,
    host: &'a HostConfig,
}

fn host_name(vh: &VirtualHost) -> String {
    match &vh.host.server_name {
        Some(n) => n.clone(),
        None => format!("<VirtualHost> at {}", vh.origin),
    }
}

/// A form of HTTP/2 a listener may offer.
#[derive(Clone, Copy)]
enum Form {
    H2,
    H2cDirect,
    H2cUpgrade,
}

impl Form {
    fn describe(self) -> &'static str {
        match self {
            Form::H2 => "h2 (HTTP/2 over TLS, by ALPN)",
            Form::H2cDirect => "h2c by prior knowledge (H2Direct)",
            Form::H2cUpgrade => "h2c by Upgrade (H2Upgrade)",
        }
    }

    /// Whether host `h` allows it on a listener (TLS or not).
    fn wanted(self, h: &HostConfig, tls: bool) -> bool {
        match self {
            Form::H2 => tls && h.protocols.allows(Protocol::H2),
            Form::H2cDirect => !tls && h.protocols.allows(Protocol::H2c) && h.h2.direct.unwrap_or(true),
            Form::H2cUpgrade => !tls && h.protocols.allows(Protocol::H2c) && h.h2.upgrade.unwrap_or(true),
        }
    }
}

/// The hosts of a listener that allow some forms of HTTP/2 and those that
/// do not, with the line asking for it (an allowing host's Protocols).
struct Split<'a> {
    forms: Vec<&'static str>,
    yes: Vec<&'a str>,
    no: Vec<&'a str>,
    origin: Option<Origin>,
}

/// `a`, `a and b`, `a, b and c`.
fn names(list: &[&str]) -> String {
    match list {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl Settings {
    /// What the listener bound to `addr` offers of HTTP/2: h2 by ALPN on a
    /// TLS listener, h2c by prior knowledge or Upgrade on a cleartext one,
    /// each only when every host it serves allows it; and the settings
    /// of its connections, its default host's.
    pub fn h2_listener(&self, addr: SocketAddr) -> H2Listener {
        self.resolve_h2(addr).0
    }

    /// The hosts that decide a listener's HTTP/2: those it serves, and of
    /// a TLS listener those with TLS (the others are never its SNI host).
    fn deciding_hosts(&self, addr: SocketAddr, tls: bool) -> Vec<Served<'_>> {
        let mut hosts: Vec<Served> =
            self.virtual_hosts.iter().filter(|vh| crate::tls::serves(vh, addr)).map(|vh| Served { name: host_name(vh), origin: Some(vh.origin.clone()), host: &vh.host }).collect();
        if hosts.is_empty() {
            hosts.push(Served { name: "the main server".into(), origin: None, host: &self.main });
        }
        if tls && hosts.iter().any(|h| h.host.tls.is_some()) {
            hosts.retain(|h| h.host.tls.is_some());
        }
        hosts
    }

    /// [`Settings::h2_listener`], with what is to be said about it: hosts
    /// that disagree, lines that cannot act on this listener.
    fn resolve_h2(&self, addr: SocketAddr) -> (H2Listener, Vec<(Origin, String)>) {
        let tls = self.tls_listener(addr);
        let hosts = self.deciding_hosts(addr, tls);
        let mut notes = Vec::new();
        // Forms the same hosts disagree on are said together.
        let mut splits: Vec<Split> = Vec::new();
        let mut on = [false; 3];
        for (i, form) in [Form::H2, Form::H2cDirect, Form::H2cUpgrade].into_iter().enumerate() {
            let (yes, no): (Vec<&Served>, Vec<&Served>) = hosts.iter().partition(|h| form.wanted(h.host, tls));
            on[i] = no.is_empty();
            if yes.is_empty() || no.is_empty() {
                continue;
            }
            let yes_names: Vec<&str> = yes.iter().map(|h| h.name.as_str()).collect();
            let no_names: Vec<&str> = no.iter().map(|h| h.name.as_str()).collect();
            match splits.iter_mut().find(|s| s.yes == yes_names && s.no == no_names) {
                Some(s) => s.forms.push(form.describe()),
                None => splits.push(Split { forms: vec![form.describe()], yes: yes_names, no: no_names, origin: yes[0].host.protocols.origin.clone() }),
            }
        }
        for Split { forms, yes, no, origin } in splits {
            let Some(origin) = origin.or_else(|| self.config_origin.clone()) else { continue };
            notes.push((
                origin,
                format!(
                    "{} {} off on listener {addr}: {} allow{} it, {} do{} not; warren offers HTTP/2 per listener, not per host as Apache, so only when every host it serves allows it (give them the same Protocols and H2Direct/H2Upgrade)",
                    names(&forms),
                    if forms.len() == 1 { "is" } else { "are" },
                    names(&yes),
                    if yes.len() == 1 { "s" } else { "" },
                    names(&no),
                    if no.len() == 1 { "es" } else { "" },
                ),
            ));
        }
        // Lines asking for what HTTP/2 over TLS does not have.
        if tls {
            for h in &hosts {
                if let Some((true, o)) = &h.host.http2.direct {
                    notes.push((o.clone(), format!("H2Direct on: not acted on for {} on TLS listener {addr}: over TLS warren speaks HTTP/2 only when ALPN agreed h2", h.name)));
                }
                if let Some((true, o)) = &h.host.dir.h2_upgrade {
                    notes.push((o.clone(), format!("H2Upgrade on: not acted on for {} on TLS listener {addr}: RFC 9113 has no Upgrade to HTTP/2 over TLS (ALPN agrees h2)", h.name)));
                }
            }
        }
        let default = hosts.first().map(|h| h.host).unwrap_or(&self.main);
        let h2c_only = on[1] && hosts.iter().all(|h| !h.host.protocols.allows(Protocol::Http11));
        let listener = H2Listener { tls, h2: on[0], h2_first: default.protocols.h2_first(), h2c_direct: on[1], h2c_upgrade: on[2], h2c_only, settings: default.h2.clone() };
        // The settings are the default host's: others that differ are said.
        if listener.any() {
            for h in hosts.iter().skip(1).filter(|h| h.host.h2.limits() != listener.settings.limits()) {
                let origin = h.origin.clone().or_else(|| self.config_origin.clone());
                if let Some(origin) = origin {
                    notes.push((
                        origin,
                        format!(
                            "the HTTP/2 settings of {} (H2MaxSessionStreams, H2WindowSize, H2MaxDataFrameLen, H2StreamTimeout, H2WebSockets) differ from those of {}, the default host of listener {addr}: its connections have the default host's",
                            h.name, hosts[0].name
                        ),
                    ));
                }
            }
        }
        (listener, notes)
    }
}

/// Settles every host's [`Protocols`] and [`H2Settings`] (the virtual
/// hosts' merged with the main server's) and says what each listener
/// cannot do as written: called by the builder once everything is read,
/// after TLS is settled (which listeners speak TLS). `http2_loaded`: a
/// `LoadModule http2_module` was read.
pub(crate) fn settle(b: &mut Builder, s: &mut Settings, http2_loaded: bool) {
    (s.main.protocols, s.main.h2) = s.main.http2.settle(&s.main.dir);
    for vh in &mut s.virtual_hosts {
        let merged = vh.host.http2.over(&s.main.http2);
        (vh.host.protocols, vh.host.h2) = merged.settle(&vh.host.dir);
    }
    // Lines about a host's own Protocols, said once per line.
    let mut notes: Vec<(Origin, String)> = Vec::new();
    for p in std::iter::once(&s.main).chain(s.virtual_hosts.iter().map(|vh| &vh.host)) {
        let Some(origin) = &p.protocols.origin else { continue };
        let http2 = p.protocols.allows(Protocol::H2) || p.protocols.allows(Protocol::H2c);
        if http2 && !http2_loaded {
            notes.push((origin.clone(), "Protocols: HTTP/2 is offered although no LoadModule http2_module is read: warren has it built in (Apache would not offer it without mod_http2)".into()));
        }
        if !p.protocols.allows(Protocol::Http11) {
            notes.push((origin.clone(), "Protocols without http/1.1: warren still answers HTTP/1.1 to clients that do not speak HTTP/2 (ALPN offers http/1.1 too)".into()));
        }
    }
    let sections = s.main.sections.iter().chain(s.virtual_hosts.iter().flat_map(|vh| vh.host.sections.iter()));
    notes.extend(in_sections(sections));
    let mut listeners = s.listen.clone();
    listeners.dedup();
    for addr in listeners {
        notes.extend(s.resolve_h2(addr).1);
    }
    for (i, (origin, message)) in notes.iter().enumerate() {
        if !notes[..i].iter().any(|(o, m)| o == origin && m == message) {
            b.warn(origin, message.clone());
        }
    }
}

/// What is said of `H2Upgrade` and `H2StreamTimeout` in sections (and
/// `.htaccess` files): warren decides both per listener, before any request
/// is mapped to a section.
pub(crate) fn in_sections<'a>(sections: impl Iterator<Item = &'a DirSection>) -> Vec<(Origin, String)> {
    let mut notes = Vec::new();
    for sec in sections {
        if let Some((_, o)) = &sec.config.h2_upgrade {
            notes.push((o.clone(), "H2Upgrade in a section: not acted on: warren decides Upgrade to h2c per listener, in the server config or <VirtualHost>".into()));
        }
        if let Some((_, o)) = &sec.config.h2_stream_timeout {
            notes.push((o.clone(), "H2StreamTimeout in a section: not acted on: warren times streams per connection, as set in the server config or <VirtualHost>".into()));
        }
    }
    notes
}

// The directives' functions.

/// `Protocols protocol...` (core): h2, h2c, http/1.1, in order of preference.
pub(crate) fn protocols(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if d.args.is_empty() {
        b.error(&d.origin, "Protocols takes one or more protocols (h2, h2c, http/1.1)");
        return;
    }
    let mut list = Vec::new();
    for a in &d.args {
        match Protocol::parse(a) {
            Some(p) if !list.contains(&p) => list.push(p),
            // Named twice: the first place decides the order.
            Some(_) => {}
            None => {
                b.error(&d.origin, format!("Protocols: unknown protocol '{a}' (warren speaks h2, h2c and http/1.1)"));
                return;
            }
        }
    }
    h.http2.protocols = Some((list, d.origin.clone()));
}

pub(crate) fn protocols_honor_order(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.http2.honor_order = b.on_off(d).or(h.http2.honor_order);
}

/// A whole number from `min` to `max`, else an error naming the range.
fn number(b: &mut Builder, d: &Directive, min: u32, max: u32) -> Option<u32> {
    let n = b.whole_number(d)?;
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Some(n),
        _ => {
            b.error(&d.origin, format!("{} must be from {min} to {max}", d.name));
            None
        }
    }
}

/// `H2MaxSessionStreams n`, and warren's `H2MaxConcurrentStreams n` (the
/// name nginx's `http2_max_concurrent_streams` users look for).
pub(crate) fn max_session_streams(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(n) = number(b, d, 1, MAX_WINDOW) {
        h.http2.max_session_streams = Some(n);
    }
}

pub(crate) fn window_size(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    // 0 is refused: no request body could ever be sent.
    if let Some(n) = number(b, d, 1, MAX_WINDOW) {
        h.http2.window_size = Some(n);
    }
}

pub(crate) fn max_data_frame_len(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(n) = number(b, d, 0, MAX_FRAME) {
        h.http2.max_data_frame_len = Some(n);
    }
}

pub(crate) fn early_hints(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(on) = b.on_off(d) {
        h.http2.early_hints = Some(on);
    }
}

pub(crate) fn websockets(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(on) = b.on_off(d) {
        h.http2.websockets = Some(on);
    }
}

pub(crate) fn direct(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(on) = b.on_off(d) {
        h.http2.direct = Some((on, d.origin.clone()));
    }
}

pub(crate) fn upgrade(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(on) = b.on_off(d) {
        dir.h2_upgrade = Some((on, d.origin.clone()));
    }
}

/// Apache's time intervals (`ap_timeout_parameter_parse`): seconds, or
/// with ms, s, mi or h.
const TIME_INTERVAL: DurationSyntax = DurationSyntax {
    units: &[("ms", Duration::from_millis(1)), ("s", Duration::from_secs(1)), ("mi", Duration::from_secs(60)), ("h", Duration::from_secs(3600))],
    fractions: false,
    plus: false,
};

pub(crate) fn stream_timeout(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let Some(v) = b.one(d) else { return };
    match parse_duration(&v, &TIME_INTERVAL) {
        Some(t) => dir.h2_stream_timeout = Some((t, d.origin.clone())),
        None => b.error(&d.origin, format!("H2StreamTimeout: '{v}' is not a time interval (seconds, or with ms, s, mi, h)")),
    }
}

/// `H2Push on|off`: off is what warren does; on is said.
pub(crate) fn push(b: &mut Builder, d: &Directive, _: &mut DirConfig) {
    if b.on_off(d) == Some(true) {
        b.warn(&d.origin, "H2Push on: not acted on: warren does no HTTP/2 server push (browsers have dropped it; 103 Early Hints or Link preload headers do its work)");
    }
}

#[cfg(test)]
mod tests {
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
