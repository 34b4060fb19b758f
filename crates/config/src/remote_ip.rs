//! mod_remoteip's settings for one host ([`RemoteIp`]): the header that
//! names the client behind proxies, which proxies are believed (internal
//! ones may name private addresses, trusted ones may not), and the PROXY
//! protocol, and the address parser ([`parse_net`]). The directives are in
//! `directives/remote_ip.rs`; the handler
//! walks the header and the connection layer reads PROXY headers.

use std::net::{IpAddr, Ipv4Addr};

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
