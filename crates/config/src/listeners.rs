//! What each listener speaks, found from the hosts that serve it once the
//! whole configuration is read: TLS ([`Settings::tls_listener`]: a `Listen
//! ... https` line, or a host with `SSLEngine on` serving it) and HTTP/2
//! ([`Settings::h2_listener`]: see [`h2`](crate::h2) for why warren decides
//! per listener). mod_ssl's and mod_http2's settings are in
//! [`tls`](crate::tls) and [`h2`](crate::h2); the connection layer
//! (warren-serve) asks these for each listener it binds.

use std::net::SocketAddr;

use crate::h2::{H2Listener, Protocol};
use crate::parse::Origin;
use crate::settings::{HostConfig, Settings, VirtualHost};

impl Settings {
    /// The hosts that take connections on a listener bound to `addr`, in
    /// configuration order (the first is the default, as in Apache): the
    /// virtual hosts whose addresses match it, else the main server.
    pub fn hosts_for_listener(&self, addr: SocketAddr) -> Vec<&HostConfig> {
        let hosts: Vec<&HostConfig> = self.virtual_hosts.iter().filter(|vh| serves(vh, addr)).map(|vh| &vh.host).collect();
        if hosts.is_empty() {
            vec![&self.main]
        } else {
            hosts
        }
    }

    /// Whether connections to a listener bound to `addr` speak TLS: `Listen
    /// ... https` said so, or a host with `SSLEngine on` serves it.
    pub fn tls_listener(&self, addr: SocketAddr) -> bool {
        self.https_listen.contains(&addr) || self.hosts_for_listener(addr).iter().any(|h| h.tls.is_some())
    }
}

/// Whether a virtual host takes connections on a listener bound to `addr`.
pub(crate) fn serves(vh: &VirtualHost, addr: SocketAddr) -> bool {
    vh.addrs.iter().any(|a| a.ip.is_none_or(|ip| ip == addr.ip() || ip.is_unspecified() || addr.ip().is_unspecified()) && a.port.is_none_or(|p| p == addr.port()))
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
            self.virtual_hosts.iter().filter(|vh| serves(vh, addr)).map(|vh| Served { name: host_name(vh), origin: Some(vh.origin.clone()), host: &vh.host }).collect();
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
    pub(crate) fn resolve_h2(&self, addr: SocketAddr) -> (H2Listener, Vec<(Origin, String)>) {
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
