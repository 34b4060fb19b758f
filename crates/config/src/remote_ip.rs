//! mod_remoteip's settings for one host ([`RemoteIp`]): the header that
//! names the client behind proxies, which proxies are believed (internal
//! ones may name private addresses, trusted ones may not), and the PROXY
//! protocol. The directives' functions are here too, with the address
//! parser they share ([`parse_net`]); the handler walks the header and the
//! MPM reads PROXY headers.

use std::net::{IpAddr, Ipv4Addr};

use crate::builder::Builder;
use crate::parse::Directive;

/// A network given to RemoteIPInternalProxy or RemoteIPTrustedProxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyNet {
    pub net: IpAddr,
    pub len: u8,
    /// RemoteIPInternalProxy: may present private (intranet) addresses.
    pub internal: bool,
}

/// mod_remoteip for one host. Each field a virtual host leaves unset is
/// the main server's, as Apache merges them.
#[derive(Clone, Debug, Default)]
pub struct RemoteIp {
    /// RemoteIPHeader (None: the module does nothing for requests).
    pub header: Option<String>,
    /// RemoteIPProxiesHeader: where the trusted proxies walked are listed.
    pub proxies_header: Option<String>,
    /// RemoteIPInternalProxy and RemoteIPTrustedProxy (and their List
    /// forms), in config order. None: no list, so any peer's header is
    /// believed (as trusted, never internal), as in Apache.
    pub proxies: Option<Vec<ProxyNet>>,
    /// RemoteIPProxyProtocol.
    pub proxy_protocol: Option<bool>,
    /// RemoteIPProxyProtocolExceptions: peers that send no PROXY header.
    pub proxy_protocol_exceptions: Option<Vec<(IpAddr, u8)>>,
}

impl RemoteIp {
    /// A virtual host's settings, what it leaves unset taken from `main`.
    pub fn inherit(&mut self, main: &RemoteIp) {
        if self.header.is_none() {
            self.header.clone_from(&main.header);
        }
        if self.proxies_header.is_none() {
            self.proxies_header.clone_from(&main.proxies_header);
        }
        if self.proxies.is_none() {
            self.proxies.clone_from(&main.proxies);
        }
        if self.proxy_protocol.is_none() {
            self.proxy_protocol = main.proxy_protocol;
        }
        if self.proxy_protocol_exceptions.is_none() {
            self.proxy_protocol_exceptions.clone_from(&main.proxy_protocol_exceptions);
        }
    }
}

/// An address or network as Apache's `apr_ipsubnet_create` takes it:
/// `ip`, `ip/bits`, `a.b.c.d/mask.mask.mask.mask`, or the leading bytes of
/// an IPv4 network (`10`, `172.16`, `192.168.1`). Host names are refused:
/// warren resolves no names.
pub fn parse_net(s: &str) -> Result<(IpAddr, u8), String> {
    let bad = || format!("'{s}' is not an IP address or network (host names are not resolved)");
    let (ip_text, mask) = match s.split_once('/') {
        Some((ip, m)) => (ip, Some(m)),
        None => (s, None),
    };
    let (ip, max) = match ip_text.parse::<IpAddr>() {
        Ok(ip @ IpAddr::V4(_)) => (ip, 32u8),
        Ok(ip @ IpAddr::V6(_)) => (ip, 128u8),
        Err(_) if mask.is_none() => {
            // Leading bytes of an IPv4 network: `10.1` is 10.1.0.0/16.
            let parts: Vec<&str> = ip_text.split('.').collect();
            if parts.is_empty() || parts.len() > 3 {
                return Err(bad());
            }
            let mut bytes = [0u8; 4];
            for (i, p) in parts.iter().enumerate() {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                bytes[i] = p.parse().map_err(|_| bad())?;
            }
            return Ok((IpAddr::V4(Ipv4Addr::from(bytes)), 8 * parts.len() as u8));
        }
        Err(_) => return Err(bad()),
    };
    let len = match mask {
        None => max,
        Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => m.parse::<u8>().ok().filter(|l| *l <= max).ok_or_else(bad)?,
        Some(m) => match (ip, m.parse::<Ipv4Addr>()) {
            (IpAddr::V4(_), Ok(mask)) => {
                let bits = u32::from(mask);
                // A netmask is ones then zeros.
                if bits.leading_ones() + bits.trailing_zeros() != 32 {
                    return Err(bad());
                }
                bits.leading_ones() as u8
            }
            _ => return Err(bad()),
        },
    };
    Ok((ip, len))
}

pub(crate) fn header(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    if let Some(name) = one_name(b, d) {
        settings.header = Some(name);
    }
}

pub(crate) fn proxies_header(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    if let Some(name) = one_name(b, d) {
        settings.proxies_header = Some(name);
    }
}

/// A header field's name: one token.
fn one_name(b: &mut Builder, d: &Directive) -> Option<String> {
    let name = b.one(d)?;
    let token = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c);
    if name.is_empty() || !name.bytes().all(token) {
        b.error(&d.origin, format!("{}: '{name}' is not a header field name", d.name));
        return None;
    }
    // The request's framing, connection and host were read from these
    // before the header is walked: rewriting one would contradict them.
    if ["Host", "Content-Length", "Transfer-Encoding", "Connection", "Expect"].iter().any(|h| h.eq_ignore_ascii_case(&name)) {
        b.error(&d.origin, format!("{}: {name} cannot be rewritten", d.name));
        return None;
    }
    Some(name)
}

/// One address or network as written, and for a list file's, the file
/// and line it is on.
struct Entry {
    text: String,
    at: Option<(String, usize)>,
}

fn from_args(d: &Directive) -> Vec<Entry> {
    d.args.iter().map(|a| Entry { text: a.clone(), at: None }).collect()
}

pub(crate) fn internal_proxy(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    add_proxies(b, d, settings, true, from_args(d));
}

pub(crate) fn trusted_proxy(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    add_proxies(b, d, settings, false, from_args(d));
}

pub(crate) fn internal_proxy_list(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    if let Some(entries) = read_list(b, d) {
        add_proxies(b, d, settings, true, entries);
    }
}

pub(crate) fn trusted_proxy_list(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    if let Some(entries) = read_list(b, d) {
        add_proxies(b, d, settings, false, entries);
    }
}

/// The addresses of a proxy list file, each with the line it is on:
/// whitespace-separated, `#` starting a comment, as Apache reads them.
fn read_list(b: &mut Builder, d: &Directive) -> Option<Vec<Entry>> {
    let file = b.one(d)?;
    let path = b.resolve(&file);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            b.error(&d.origin, format!("{}: cannot read {}: {e}", d.name, path.display()));
            return None;
        }
    };
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for word in line.split_whitespace() {
            entries.push(Entry { text: word.to_string(), at: Some((path.display().to_string(), i + 1)) });
        }
    }
    Some(entries)
}

fn add_proxies(b: &mut Builder, d: &Directive, settings: &mut RemoteIp, internal: bool, entries: Vec<Entry>) {
    // An empty list would leave no list at all, which trusts every peer.
    if entries.is_empty() {
        b.error(&d.origin, format!("{} names no address or network", d.name));
        return;
    }
    let list = settings.proxies.get_or_insert_with(Vec::new);
    for Entry { text, at } in entries {
        match parse_net(&text) {
            Ok((net, len)) => list.push(ProxyNet { net, len, internal }),
            Err(m) => match at {
                Some((file, line)) => b.error(&d.origin, format!("{}: {m}, at line {line} of {file}", d.name)),
                None => b.error(&d.origin, format!("{}: {m}", d.name)),
            },
        }
    }
}

pub(crate) fn proxy_protocol(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    if let Some(on) = b.on_off(d) {
        settings.proxy_protocol = Some(on);
    }
}

pub(crate) fn proxy_protocol_exceptions(b: &mut Builder, d: &Directive, settings: &mut RemoteIp) {
    if d.args.is_empty() {
        b.error(&d.origin, "RemoteIPProxyProtocolExceptions takes one or more addresses or networks");
        return;
    }
    let list = settings.proxy_protocol_exceptions.get_or_insert_with(Vec::new);
    for a in &d.args {
        match parse_net(a) {
            Ok(net) => list.push(net),
            Err(m) => b.error(&d.origin, format!("RemoteIPProxyProtocolExceptions: {m}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_in_apaches_forms() {
        let v4 = |s: &str| IpAddr::V4(s.parse().unwrap());
        assert_eq!(parse_net("10.0.0.1"), Ok((v4("10.0.0.1"), 32)));
        assert_eq!(parse_net("10.0.0.0/8"), Ok((v4("10.0.0.0"), 8)));
        assert_eq!(parse_net("172.16.0.0/255.240.0.0"), Ok((v4("172.16.0.0"), 12)));
        assert_eq!(parse_net("192.168"), Ok((v4("192.168.0.0"), 16)));
        assert_eq!(parse_net("10"), Ok((v4("10.0.0.0"), 8)));
        assert_eq!(parse_net("2001:db8::/32"), Ok(("2001:db8::".parse().unwrap(), 32)));
        for bad in ["proxy.example.com", "10.0.0.0/33", "10.0.0.0/255.0.255.0", "::1/129", "10..1", "", "10.0.0.0/", "1.2.3.4.5", "300"] {
            assert!(parse_net(bad).is_err(), "{bad}");
        }
    }
}
