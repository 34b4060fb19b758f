//! mod_proxy_balancer and mod_proxy_hcheck as the configuration names them:
//! `<Proxy balancer://name>` with its `BalancerMember` and `ProxySet`
//! lines (or the same lines outside, naming the balancer first), each
//! member's worker keys (those of a ProxyPass line, read by
//! `directives/values.rs`'s `parse_proxy_route`) with loadfactor, route, status
//! and the health-check keys, and the balancer's lbmethod, stickysession
//! and nofailover. Balancers are server-wide: a virtual host's ProxyPass
//! may name one defined anywhere, as Apache's inherited balancers do.
//!
//! The types; the directives reading them are in
//! `directives/balancer.rs`, the request half
//! in the handler's `balancer` module.

use std::time::Duration;

use crate::backend::ProxyTarget;
use crate::parse::Origin;

/// The most members a balancer may have (a request's tried members are a
/// 128-bit set).
pub const MAX_MEMBERS: usize = 128;

/// The scheme a balancer's name is written with.
pub const SCHEME: &str = "balancer://";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LbMethod {
    /// Weighted round robin over requests (Apache's default).
    #[default]
    ByRequests,
    /// The member that moved the fewest bytes for its loadfactor.
    ByTraffic,
    /// The member with the fewest requests in progress for its loadfactor.
    ByBusyness,
}

/// A member's `status=` flags as configured (the balancer-manager may
/// change them at run time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MemberStatus {
    /// `D`: disabled, never chosen.
    pub disabled: bool,
    /// `N`: draining: chosen only by sticky sessions that name its route.
    pub drain: bool,
    /// `H`: hot standby: chosen only when no other member is usable.
    pub hot_standby: bool,
    /// `I`: its connect errors do not put it in error state.
    pub ignore_errors: bool,
    /// `S`: stopped, as disabled.
    pub stopped: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HcMethod {
    Tcp,
    Options,
    Head,
    Get,
}

/// mod_proxy_hcheck's keys on a member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCheck {
    pub method: HcMethod,
    /// `hcuri`: appended to the member's URL for OPTIONS, HEAD and GET.
    pub uri: String,
    /// `hcinterval` (Apache's default 30 s).
    pub interval: Duration,
    /// `hcpasses`: successive passes that bring a failed member back.
    pub passes: u32,
    /// `hcfails`: successive failures that take a member out.
    pub fails: u32,
    /// `hcexpr=NAME`: the ProxyHCExpr the answer must satisfy (else a
    /// 2xx or 3xx passes).
    pub expr_name: Option<String>,
    pub expr: Option<crate::expr::Expr>,
}

#[derive(Clone, Debug)]
pub struct Member {
    /// The URL as written: the member's name in logs, BALANCER_WORKER_NAME
    /// and the balancer-manager.
    pub url: String,
    /// Where requests go: an fcgi:// or http:// backend with its path.
    pub target: ProxyTarget,
    /// `loadfactor` (1-100).
    pub load_factor: u32,
    /// `route`: the value a sticky session names it by.
    pub route: Option<String>,
    pub status: MemberStatus,
    pub health_check: Option<HealthCheck>,
    /// `retry=`: how long a member that refused a connection stays out of
    /// the elections (Apache's default 60 s; a passing health check ends it).
    pub retry: Duration,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Balancer {
    /// The name after `balancer://`.
    pub name: String,
    pub members: Vec<Member>,
    pub lb_method: LbMethod,
    /// `stickysession=COOKIE[|URLPARAM]`: the names a session's route is
    /// read from (a cookie, then a URL parameter; one name serves both).
    pub sticky: Vec<String>,
    /// `nofailover=On`: a session whose member is unusable gets 503 rather
    /// than another member.
    pub no_failover: bool,
    /// `maxattempts=N`: failovers a request may make (else one to each
    /// other member).
    pub max_attempts: Option<u32>,
    pub origin: Origin,
}

impl Balancer {
    pub(crate) fn new(name: &str, origin: &Origin) -> Balancer {
        Balancer { name: name.to_string(), members: Vec::new(), lb_method: LbMethod::default(), sticky: Vec::new(), no_failover: false, max_attempts: None, origin: origin.clone() }
    }
}

/// `balancer://name[/path]` -> (name, path).
pub fn split_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.get(..SCHEME.len()).filter(|s| s.eq_ignore_ascii_case(SCHEME)).map(|_| &url[SCHEME.len()..])?;
    let (name, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    (!name.is_empty()).then_some((name, path))
}

#[cfg(test)]
mod tests {
    use crate::test_support::load_text;

    use super::*;

    #[test]
    fn a_section_and_lines_outside_it_make_one_balancer() {
        let (loaded, _dir) = load_text(
            "balancer",
            "Listen 80\n<Proxy balancer://php>\n  BalancerMember fcgi://127.0.0.1:9001 route=a loadfactor=3\n  BalancerMember fcgi://127.0.0.1:9002 route=b status=+H\n  ProxySet lbmethod=bybusyness stickysession=SID|sid maxattempts=1\n</Proxy>\nBalancerMember balancer://php fcgi://127.0.0.1:9003 hcmethod=TCP hcinterval=2 hcfails=2\nProxyPassMatch ^/(.*\\.php)$ balancer://php/srv/www/$1\n",
            &[],
        );
        let s = loaded.settings.expect("loads");
        let bal = &s.balancers[0];
        assert_eq!(bal.name, "php");
        assert_eq!(bal.lb_method, LbMethod::ByBusyness);
        assert_eq!((bal.sticky.as_slice(), bal.max_attempts), (["SID".to_string(), "sid".to_string()].as_slice(), Some(1)));
        assert_eq!(bal.members.len(), 3);
        assert_eq!((bal.members[0].load_factor, bal.members[0].route.as_deref()), (3, Some("a")));
        assert!(bal.members[1].status.hot_standby && !bal.members[1].status.disabled);
        let hc = bal.members[2].health_check.as_ref().expect("checked");
        assert_eq!((hc.method, hc.interval, hc.fails, hc.passes), (HcMethod::Tcp, Duration::from_secs(2), 2, 1));
        let t = s.main.proxy_routes[0].target.as_ref().unwrap();
        assert!(bal.members[0].health_check.is_none());
        assert_eq!((t.balancer.as_deref(), t.path.as_str()), (Some("php"), "/srv/www/$1"));
    }

    #[test]
    fn health_check_expressions_are_named_anywhere() {
        let (loaded, _dir) = load_text(
            "balancer-hcexpr",
            "Listen 80\n<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 hcmethod=GET hcexpr=ok hcuri=/health\n</Proxy>\nProxyHCExpr ok {%{REQUEST_STATUS} =~ /^[23]/ && resp('X-Ready') =~ /^yes$/}\n",
            &[],
        );
        let s = loaded.settings.unwrap_or_else(|| panic!("{:?}", loaded.errors));
        let hc = s.balancers[0].members[0].health_check.as_ref().unwrap();
        assert_eq!(hc.expr.as_ref().map(|e| e.text.as_str()), Some("%{REQUEST_STATUS} =~ /^[23]/ && resp('X-Ready') =~ /^yes$/"));
    }

    #[test]
    fn mistakes_name_their_line() {
        for (line, says, at) in [
            ("ProxyPass /x balancer://none/", "no such balancer", 2),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 loadfactor=0\n</Proxy>", "loadfactor=0", 3),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 retry=18446744073709551\n</Proxy>", "retry=18446744073709551: takes a number of seconds up to", 3),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 hcmethod=TCP hcinterval=18446744073709551615\n</Proxy>", "hcinterval=18446744073709551615: takes a positive", 3),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 connectiontimeout=18446744073709551615\n</Proxy>", "connectiontimeout=18446744073709551615", 3),
            ("ProxyPass /t http://127.0.0.1:1/ timeout=18446744073709551615", "timeout=18446744073709551615", 2),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 status=+X\n</Proxy>", "flag X", 3),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1\nProxySet lbmethod=heartbeat\n</Proxy>", "lbmethod=heartbeat", 4),
            ("<Proxy balancer://b>\nBalancerMember fcgi://127.0.0.1:1 hcmethod=GET\n</Proxy>", "http:// members only", 3),
            ("<Proxy balancer://b>\nRequire all granted\n</Proxy>", "not supported in <Proxy", 3),
            ("<Proxy http://example.com/>\n</Proxy>", "takes one balancer://name", 2),
            ("<Proxy balancer://empty>\n</Proxy>", "has no BalancerMember", 2),
            ("ProxySet http://127.0.0.1:1 timeout=3", "balancer://name first", 2),
            ("<Proxy balancer://b>\nBalancerMember fcgi://127.0.0.1:1/a\nBalancerMember fcgi://127.0.0.1:2/b\n</Proxy>", "different paths", 2),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 hcmethod=GET hcexpr=nope\n</Proxy>", "no ProxyHCExpr nope", 3),
            ("<Proxy balancer://b>\nBalancerMember http://127.0.0.1:1 hcexpr=ok\n</Proxy>", "hcexpr needs hcmethod", 3),
            ("ProxyHCExpr ok %{REQUEST_STATUS} == 200", "goes in braces", 2),
            ("<Proxy balancer://b>\nBalancerMember https://127.0.0.1:1\n</Proxy>\nProxyPass /x balancer://b/", "needs SSLProxyEngine On", 5),
            ("ProxyHCExpr ok {%{REQUEST_STATUS} =~}", "ProxyHCExpr ok:", 2),
        ] {
            let (loaded, _dir) = load_text("balancer-errors", &format!("{line}\nListen 80\n"), &[]);
            let errors: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
            assert!(errors.iter().any(|e| e.contains(says) && e.contains(&format!(".conf:{at}:"))), "{line}: {errors:?}");
        }
    }

    #[test]
    fn urls_split_into_name_and_path() {
        assert_eq!(split_url("balancer://php/srv/$1"), Some(("php", "/srv/$1")));
        assert_eq!(split_url("BALANCER://php"), Some(("php", "")));
        assert_eq!(split_url("balancer:///x"), None);
        assert_eq!(split_url("http://php/"), None);
    }
}
