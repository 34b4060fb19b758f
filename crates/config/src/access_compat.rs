//! mod_access_compat: `Order`, `Allow from`, `Deny from` and `Satisfy`,
//! the host-based access control of Apache 2.2 that Apache 2.4 still runs
//! beside `Require`. As in Apache (whose module has no merge function), the
//! most specific section holding any of these lines has them all: a
//! section's `Allow from` does not add to its parent's.
//!
//! The types; the directives reading them are in
//! `directives/access_compat.rs`, the
//! request half in the handler's `authz` module.

use std::net::IpAddr;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// `Deny,Allow` (the default): allowed unless denied and not allowed.
    #[default]
    DenyAllow,
    /// `Allow,Deny`: denied unless allowed and not denied.
    AllowDeny,
    /// `Mutual-failure`: allowed only when allowed and not denied.
    MutualFailure,
}

/// One `from` argument: `all`, or an address or network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostMatch {
    All,
    /// (network, prefix length).
    Net(IpAddr, u8),
}

/// The mod_access_compat lines of one section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessCompat {
    pub order: Order,
    pub allow: Vec<HostMatch>,
    pub deny: Vec<HostMatch>,
    /// `Satisfy Any`: either these or the `Require` rules let a client in
    /// (`Satisfy All`, the default: both must).
    pub satisfy_any: bool,
}

impl AccessCompat {
    /// Whether the Order/Allow/Deny lines let a client at `peer` in.
    pub fn allows(&self, peer: IpAddr) -> bool {
        let matches = |list: &[HostMatch]| list.iter().any(|m| m.matches(peer));
        let (allowed, denied) = (matches(&self.allow), matches(&self.deny));
        match self.order {
            Order::DenyAllow => allowed || !denied,
            Order::AllowDeny | Order::MutualFailure => allowed && !denied,
        }
    }
}

impl HostMatch {
    pub fn matches(&self, peer: IpAddr) -> bool {
        match *self {
            HostMatch::All => true,
            HostMatch::Net(net, len) => crate::values::ip_in(peer, net, len),
        }
    }

    /// `all`, `10.1.2.3`, `10.1` (a partial address), `10.1.0.0/16`,
    /// `10.1.0.0/255.255.0.0`, `2001:db8::/32`, or `localhost`. Other host
    /// names would need DNS lookups on each request: refused.
    pub(crate) fn parse(a: &str) -> Result<Vec<HostMatch>, String> {
        if a.eq_ignore_ascii_case("all") {
            return Ok(vec![HostMatch::All]);
        }
        if a.eq_ignore_ascii_case("localhost") {
            return Ok(vec![HostMatch::Net([127, 0, 0, 0].into(), 8), HostMatch::Net(std::net::Ipv6Addr::LOCALHOST.into(), 128)]);
        }
        let bad = || format!("'{a}' is not `all`, an address, a partial address or a network (host names are not looked up: write addresses)");
        let (ip, len) = match a.split_once('/') {
            Some((ip, mask)) => {
                let ip: IpAddr = ip.parse().map_err(|_| bad())?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let len = match mask.parse::<u8>() {
                    Ok(l) if l <= max => l,
                    Ok(_) => return Err(bad()),
                    Err(_) => match mask.parse::<std::net::Ipv4Addr>() {
                        Ok(m) if ip.is_ipv4() && (u32::from(m).leading_ones() + u32::from(m).trailing_zeros() == 32) => u32::from(m).leading_ones() as u8,
                        _ => return Err(bad()),
                    },
                };
                (ip, len)
            }
            None => match a.parse::<IpAddr>() {
                Ok(ip) => (ip, if ip.is_ipv4() { 32 } else { 128 }),
                Err(_) => {
                    // A partial IPv4 address: 1 to 3 whole octets, a trailing dot allowed.
                    let octets: Vec<&str> = a.trim_end_matches('.').split('.').collect();
                    let parsed: Option<Vec<u8>> = octets.iter().map(|o| o.parse::<u8>().ok()).collect();
                    match parsed {
                        Some(p) if (1..=3).contains(&p.len()) => {
                            let mut full = [0u8; 4];
                            full[..p.len()].copy_from_slice(&p);
                            (IpAddr::from(full), 8 * p.len() as u8)
                        }
                        _ => return Err(bad()),
                    }
                }
            },
        };
        Ok(vec![HostMatch::Net(ip, len)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn from_forms() {
        assert_eq!(HostMatch::parse("10.1").unwrap(), [HostMatch::Net(ip("10.1.0.0"), 16)]);
        assert_eq!(HostMatch::parse("10.1.").unwrap(), [HostMatch::Net(ip("10.1.0.0"), 16)]);
        assert_eq!(HostMatch::parse("10.1.0.0/255.255.0.0").unwrap(), [HostMatch::Net(ip("10.1.0.0"), 16)]);
        assert_eq!(HostMatch::parse("2001:db8::/32").unwrap(), [HostMatch::Net(ip("2001:db8::"), 32)]);
        for bad in ["example.com", "10.1.0.0/255.0.255.0", "10.1.0.0/33", "300.1", "", "1.2.3.4.5"] {
            assert!(HostMatch::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn orders() {
        let net = |s: &str| HostMatch::parse(s).unwrap();
        let c = |order, allow: &str, deny: &str| AccessCompat { order, allow: net(allow), deny: net(deny), satisfy_any: false };
        let (inside, outside) = (ip("10.1.2.3"), ip("192.0.2.1"));
        // Deny,Allow: Allow overrides Deny.
        let a = c(Order::DenyAllow, "10.1", "all");
        assert!(a.allows(inside) && !a.allows(outside));
        // Allow,Deny: Deny overrides Allow; neither matched is denied.
        let a = c(Order::AllowDeny, "all", "10.1");
        assert!(!a.allows(inside) && a.allows(outside));
        let a = AccessCompat { order: Order::AllowDeny, ..Default::default() };
        assert!(!a.allows(inside));
        // The default order with nothing listed lets all in.
        assert!(AccessCompat::default().allows(outside));
        let a = c(Order::MutualFailure, "10.0.0.0/8", "10.1");
        assert!(!a.allows(inside) && a.allows(ip("10.2.0.1")) && !a.allows(outside));
    }
}
