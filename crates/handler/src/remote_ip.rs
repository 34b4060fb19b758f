//! mod_remoteip: who the client is when the connection comes from a proxy.
//!
//! [`Site::find_useragent`] runs once per request, before it is routed: it
//! walks the host's RemoteIPHeader from right to left while the address at
//! hand is a proxy the host believes ([`walk`]), sets the request's
//! [`ConnInfo::useragent`] to where the walk stopped, and rewrites the
//! header (and RemoteIPProxiesHeader) as Apache does. Whether a connection
//! must begin with a PROXY protocol header ([`Site::expects_proxy_header`])
//! is decided here too; the MPM reads it.

use std::net::{IpAddr, SocketAddr};

use warren_config::remote_ip::ProxyNet;
use warren_config::LogLevel;
use warren_http::RequestHead;

use crate::sections::ip_in;
use crate::conn::ConnInfo;
use crate::site::Site;

/// Where a walk of the header ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Walked {
    /// The client's address.
    pub useragent: IpAddr,
    /// What was not walked, left in the header (None: the header goes).
    pub rest: Option<Vec<u8>>,
    /// The trusted (not internal) proxies walked, in the order met.
    pub proxies: Vec<IpAddr>,
    /// Why the walk stopped early, for the error log's debug level.
    pub stopped: Option<String>,
}

/// Walks `value` (the header's comma-separated list) from its right end,
/// starting from the connection's peer: each address is believed while the
/// one before it (at first the peer) is in `proxies` (any is, without a
/// list), and is private only if every proxy so far was internal. None if
/// not even the last address was taken.
pub fn walk(value: &[u8], peer: IpAddr, proxies: Option<&[ProxyNet]>) -> Option<Walked> {
    let mut rest: Option<&[u8]> = Some(value);
    let mut current = canonical(peer);
    // Once a trusted proxy has spoken, what it says can no longer make a
    // later hop internal: an external proxy cannot present an internal one.
    let mut internal: Option<bool> = None;
    let mut walked = Vec::new();
    let mut stopped = None;
    let mut taken = false;
    while let Some(r) = rest {
        let hop_internal = match proxies {
            None => false,
            Some(list) => match list.iter().find(|p| ip_in(current, p.net, p.len)) {
                Some(p) => internal.unwrap_or(true) && p.internal,
                None => break,
            },
        };
        let (left, item) = match r.iter().rposition(|&b| b == b',') {
            Some(i) => (Some(&r[..i]), &r[i + 1..]),
            None => (None, r),
        };
        let item = item.trim_ascii();
        let Some(addr) = std::str::from_utf8(item).ok().and_then(|s| s.parse::<IpAddr>().ok()).map(canonical) else {
            stopped = Some(format!("'{}' cannot be parsed as a client IP", String::from_utf8_lossy(item)));
            break;
        };
        if !hop_internal && private(addr) {
            stopped = Some(format!("'{addr}' appears to be a private IP or nonsensical"));
            break;
        }
        internal = Some(hop_internal);
        if !hop_internal {
            walked.push(current);
        }
        current = addr;
        rest = left;
        taken = true;
    }
    taken.then(|| Walked { useragent: current, rest: rest.map(<[u8]>::to_vec), proxies: walked, stopped })
}

/// IPv4 written as IPv6 (`::ffff:a.b.c.d`) is the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// What only an internal proxy may name: RFC 1918 and the like for IPv4
/// (10/8, 127/8, 169.254/16, 172.16/12, 192.168/16), and for IPv6 anything
/// outside global unicast (2000::/3), as Apache has it.
fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            o[0] == 10 || o[0] == 127 || (o[0] == 169 && o[1] == 254) || (o[0] == 172 && o[1] & 0xf0 == 16) || (o[0] == 192 && o[1] == 168)
        }
        IpAddr::V6(v6) => v6.octets()[0] & 0xe0 != 0x20,
    }
}

impl Site {
    /// Sets `conn.useragent` for the request `head` (the peer, unless the
    /// host's RemoteIPHeader names a client behind believed proxies) and
    /// rewrites the header as Apache does: what was not walked stays in it,
    /// and the trusted proxies walked go to RemoteIPProxiesHeader.
    pub fn find_useragent(&self, head: &mut RequestHead, conn: &mut ConnInfo) {
        conn.useragent = conn.peer;
        if !self.uses_remote_ip {
            return;
        }
        let host = self.select_host(head.host(), conn.local);
        let config = &self.hosts[host].config.remote_ip;
        let Some(name) = config.header.as_deref() else { return };
        // Repeated fields are one list, as Apache joins them.
        let mut value: Vec<u8> = Vec::new();
        for (n, v) in head.headers() {
            if n.eq_ignore_ascii_case(name.as_bytes()) {
                if !value.is_empty() {
                    value.extend_from_slice(b", ");
                }
                value.extend_from_slice(v);
            }
        }
        if value.is_empty() {
            return;
        }
        let Some(walked) = walk(&value, conn.peer.ip(), config.proxies.as_deref()) else { return };
        if let Some(why) = &walked.stopped {
            self.hosts[host].error_log.log(LogLevel::Debug, Some(conn.peer), &format!("RemoteIP: header {name}: {why}"));
        }
        conn.useragent = SocketAddr::new(walked.useragent, conn.peer.port());
        head.set_header(name, walked.rest.as_deref());
        if let (Some(proxies_header), false) = (config.proxies_header.as_deref(), walked.proxies.is_empty()) {
            let list: Vec<String> = walked.proxies.iter().map(IpAddr::to_string).collect();
            head.set_header(proxies_header, Some(list.join(", ").as_bytes()));
        }
    }

    /// Whether a connection to `local` from `peer` must begin with a PROXY
    /// protocol header: RemoteIPProxyProtocol On in the main server, or in
    /// a virtual host for this address, and the peer not among the
    /// RemoteIPProxyProtocolExceptions.
    pub fn expects_proxy_header(&self, local: SocketAddr, peer: SocketAddr) -> bool {
        if !self.uses_proxy_protocol {
            return false;
        }
        let mut on = false;
        let mut excepted = false;
        for (i, h) in self.hosts.iter().enumerate() {
            if i > 0 && !h.serves_address(local) {
                continue;
            }
            let r = &h.config.remote_ip;
            if r.proxy_protocol == Some(true) {
                on = true;
                let except = r.proxy_protocol_exceptions.as_deref().unwrap_or(&[]);
                excepted |= except.iter().any(|(net, len)| ip_in(canonical(peer.ip()), *net, *len));
            }
        }
        on && !excepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn net(s: &str, internal: bool) -> ProxyNet {
        let (net, len) = warren_config::remote_ip::parse_net(s).unwrap();
        ProxyNet { net, len, internal }
    }

    #[test]
    fn without_a_list_every_peer_is_believed_but_not_for_private_addresses() {
        let w = walk(b"203.0.113.9, 198.51.100.2", ip("127.0.0.1"), None).unwrap();
        assert_eq!(w.useragent, ip("203.0.113.9"));
        assert_eq!(w.rest, None);
        assert_eq!(w.proxies, vec![ip("127.0.0.1"), ip("198.51.100.2")]);
        let w = walk(b"10.1.1.1, 198.51.100.2", ip("127.0.0.1"), None).unwrap();
        assert_eq!(w.useragent, ip("198.51.100.2"));
        assert_eq!(w.rest.as_deref(), Some(&b"10.1.1.1"[..]));
        assert!(w.stopped.is_some());
        assert_eq!(walk(b"192.168.0.5", ip("127.0.0.1"), None), None);
    }

    #[test]
    fn only_listed_proxies_are_believed() {
        let list = [net("127.0.0.1", false)];
        assert_eq!(walk(b"203.0.113.9", ip("198.51.100.1"), Some(&list)), None);
        // The header's own proxy, not listed, ends the walk.
        let w = walk(b"203.0.113.9, 198.51.100.2", ip("127.0.0.1"), Some(&list)).unwrap();
        assert_eq!(w.useragent, ip("198.51.100.2"));
        assert_eq!(w.rest.as_deref(), Some(&b"203.0.113.9"[..]));
        assert_eq!(w.proxies, vec![ip("127.0.0.1")]);
    }

    #[test]
    fn internal_proxies_may_name_private_addresses_and_are_not_listed() {
        let list = [net("127.0.0.0/8", true), net("10.0.0.0/8", true), net("198.51.100.0/24", false)];
        let w = walk(b"203.0.113.9, 198.51.100.2, 10.0.0.3", ip("127.0.0.1"), Some(&list)).unwrap();
        assert_eq!(w.useragent, ip("203.0.113.9"));
        assert_eq!(w.rest, None);
        assert_eq!(w.proxies, vec![ip("198.51.100.2")]);
        // Behind a trusted proxy, an address of the internal list counts
        // as trusted: it may not hand over a private address.
        let list = [net("127.0.0.0/8", true), net("198.51.100.0/24", false), net("203.0.113.0/24", true)];
        let w = walk(b"10.9.9.9, 203.0.113.5, 198.51.100.2", ip("127.0.0.1"), Some(&list)).unwrap();
        assert_eq!(w.useragent, ip("203.0.113.5"));
        assert_eq!(w.rest.as_deref(), Some(&b"10.9.9.9"[..]));
        assert_eq!(w.proxies, vec![ip("198.51.100.2")]);
        // A chain of internal proxies may hand over one private address after another.
        let list = [net("127.0.0.0/8", true), net("10.0.0.0/8", true)];
        let w = walk(b"192.168.1.1, 10.0.0.4", ip("127.0.0.1"), Some(&list)).unwrap();
        assert_eq!((w.useragent, w.rest, w.proxies), (ip("192.168.1.1"), None, vec![]));
    }

    #[test]
    fn a_trusted_proxy_cannot_name_a_private_address() {
        let list = [net("127.0.0.1", false)];
        for private in ["10.0.0.1", "172.16.5.4", "172.31.0.1", "192.168.0.1", "127.0.0.2", "169.254.1.1", "::1", "fe80::1", "fd00::1", "::ffff:10.0.0.1"] {
            assert_eq!(walk(private.as_bytes(), ip("127.0.0.1"), Some(&list)), None, "{private}");
        }
        for public in ["172.32.0.1", "8.8.8.8", "2001:db8::1", "::ffff:8.8.8.8"] {
            assert!(walk(public.as_bytes(), ip("127.0.0.1"), Some(&list)).is_some(), "{public}");
        }
        assert_eq!(walk(b"::ffff:8.8.8.8", ip("::ffff:127.0.0.1"), Some(&list)).unwrap().useragent, ip("8.8.8.8"));
    }

    #[test]
    fn what_is_not_an_address_ends_the_walk_and_stays() {
        for (value, useragent, rest) in [
            (&b"unknown, 8.8.8.8"[..], "8.8.8.8", Some(&b"unknown"[..])),
            (b"8.8.4.4,, 8.8.8.8", "8.8.8.8", Some(b"8.8.4.4,")),
            (b"8.8.4.4 , 8.8.8.8 ", "8.8.4.4", None),
            (b"8.8.8.8:1234, 1.1.1.1", "1.1.1.1", Some(b"8.8.8.8:1234")),
            (b"\xff, 1.1.1.1", "1.1.1.1", Some(b"\xff")),
        ] {
            let w = walk(value, ip("127.0.0.1"), None).unwrap();
            assert_eq!((w.useragent, w.rest.as_deref()), (ip(useragent), rest), "{:?}", String::from_utf8_lossy(value));
        }
        for nothing in [&b""[..], b" ", b",", b"proxy.example.com", b"[2001:db8::1]"] {
            assert_eq!(walk(nothing, ip("127.0.0.1"), None), None);
        }
    }
}
