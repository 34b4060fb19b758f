//! mod_proxy_balancer's request half: which member of a `balancer://`
//! answers a request, with what every child knows of the members kept in
//! memory shared by all of them ([`SharedState`], mapped by the parent
//! when it builds the [`Site`], before any child is forked).
//!
//! - [`Balancers::elect`]: a sticky session's route first (a cookie, then
//!   a URL parameter, as Apache reads them), else the lbmethod among the
//!   usable members: byrequests (Apache's weighted round robin), bytraffic
//!   (fewest bytes for the loadfactor) or bybusyness (fewest requests in
//!   progress for the loadfactor); hot standbys only when no other member
//!   is usable.
//! - `run` (run.rs): the exchange with the elected member, and failover to
//!   the next one when it cannot be connected to.
//! - `hcheck` (hcheck.rs): mod_proxy_hcheck, run by one child at a time.
//! - `manager` (manager.rs): `SetHandler balancer-manager`.
//!
//! The shared state lives as long as the configuration: a graceful restart
//! maps anew, so run-time changes made with the balancer-manager are lost
//! then (Apache keeps them only with BalancerPersist).

mod hcheck;
mod manager;
mod run;
mod shared;

use std::sync::OnceLock;

use warren_config::balancer::{Balancer, LbMethod, Member};
use warren_config::ProxyTarget;

pub(crate) use run::{carry, note_connect_failure, note_lost_before_answer};
pub use shared::{MemberState, SharedState};

/// The balancers of the configuration with their shared state.
pub struct Balancers {
    pub list: Vec<Balancer>,
    pub state: Option<std::sync::Arc<SharedState>>,
    /// The balancer-manager's nonce (one for the server, made at start and
    /// so the same in every child): a change must carry it.
    pub nonce: String,
    /// This child's health-check thread, started with its first balanced
    /// request.
    checker: OnceLock<()>,
}

/// What a request's election chose, carried by its gateway for failover
/// and accounting.
#[derive(Clone, Debug)]
pub struct Elected {
    pub balancer: usize,
    pub member: usize,
    /// Members tried so far, as bits.
    pub tried: u128,
    /// The path below the balancer URL (decoded: bytes that need not be
    /// UTF-8), joined to each member's.
    pub path: Vec<u8>,
    pub query: Vec<u8>,
    /// The request named a session's route.
    pub sticky: bool,
}

/// The route a request's sticky session names, and the name it came by.
#[derive(Debug, PartialEq, Eq)]
pub struct Session<'a> {
    pub sticky: &'a str,
    pub route: &'a str,
}

/// Why no member could be elected.
#[derive(Debug, PartialEq, Eq)]
pub enum NoMember {
    /// Every member is disabled, in error or failing its checks.
    NoneUsable,
    /// `nofailover=On` and the session's member is not usable.
    SessionLost,
}

impl Balancers {
    /// The shared state is mapped here, in the parent: every child forked
    /// after sees the same members.
    pub fn new(list: Vec<Balancer>) -> std::io::Result<Balancers> {
        let counts: Vec<usize> = list.iter().map(|b| b.members.len()).collect();
        let state = if list.is_empty() { None } else { Some(std::sync::Arc::new(SharedState::new(&counts)?)) };
        if let Some(state) = &state {
            for (b, bal) in list.iter().enumerate() {
                for (m, member) in bal.members.iter().enumerate() {
                    state.member(b, m).configure(&member.status);
                }
            }
        }
        Ok(Balancers { list, state, nonce: nonce(), checker: OnceLock::new() })
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        self.list.iter().position(|b| b.name.eq_ignore_ascii_case(name))
    }

    /// The member for a request to balancer `b`, none of `tried`; `session`
    /// the route its sticky session names, if any.
    pub fn elect(&self, b: usize, session: Option<&Session>, tried: u128) -> Result<usize, NoMember> {
        let state = self.state.as_ref().ok_or(NoMember::NoneUsable)?;
        let bal = &self.list[b];
        let now = shared::now_ms();
        let usable = |m: usize| tried & (1 << m) == 0 && state.member(b, m).usable(now);
        if let Some(s) = session {
            if let Some(m) = bal.members.iter().position(|x| x.route.as_deref() == Some(s.route)) {
                // A draining member still takes the sessions it has.
                if usable(m) {
                    return Ok(m);
                }
                if bal.no_failover {
                    return Err(NoMember::SessionLost);
                }
            }
        }
        let live = |m: &usize| usable(*m) && !state.member(b, *m).draining();
        let mut candidates: Vec<usize> = (0..bal.members.len()).filter(live).filter(|&m| !state.member(b, m).hot_standby()).collect();
        if candidates.is_empty() {
            candidates = (0..bal.members.len()).filter(live).collect();
        }
        if candidates.is_empty() {
            return Err(NoMember::NoneUsable);
        }
        let factor = |m: usize| i64::from(bal.members[m].load_factor);
        let chosen = match bal.lb_method {
            LbMethod::ByRequests => state.by_requests(b, &candidates, factor),
            // The least per unit of loadfactor; the fewest elected breaks ties.
            LbMethod::ByBusyness => least(&candidates, |m| (i64::from(state.member(b, m).busy()) * 1000 / factor(m), state.member(b, m).elected() as i64 * 1000 / factor(m))),
            LbMethod::ByTraffic => least(&candidates, |m| (state.member(b, m).traffic() as i64 / factor(m), state.member(b, m).elected() as i64 * 1000 / factor(m))),
        };
        Ok(chosen)
    }

    /// The sticky session a request names: the first of the balancer's
    /// stickysession names found as a cookie, then as a URL parameter
    /// (`?name=value`, or `;name=value` in the path, as Java servers write
    /// it). The route is what follows the value's first `.` (Apache's
    /// `sessionid.route`), or the whole value when it has none.
    pub fn session<'a>(&'a self, b: usize, cookie: Option<&'a [u8]>, path_and_query: &'a [u8]) -> Option<Session<'a>> {
        let names = &self.list[b].sticky;
        let route_of = |v: &'a [u8]| {
            let v = std::str::from_utf8(v).ok()?;
            let route = v.split_once('.').map_or(v, |(_, r)| r);
            (!route.is_empty()).then_some(route)
        };
        for name in names {
            let found = cookie.and_then(|c| pairs(c, true).find(|(n, _)| *n == name.as_bytes()).map(|(_, v)| v));
            if let Some(route) = found.and_then(route_of) {
                return Some(Session { sticky: name, route });
            }
        }
        for name in names {
            let found = pairs(path_and_query, false).find(|(n, _)| *n == name.as_bytes()).map(|(_, v)| v);
            if let Some(route) = found.and_then(route_of) {
                return Some(Session { sticky: name, route });
            }
        }
        None
    }

    /// The member's target for a request to `path` below the balancer
    /// URL: its URL's path joined to it.
    pub fn target(&self, b: usize, m: usize, path: &[u8]) -> ProxyTarget {
        let mut t = self.list[b].members[m].target.clone();
        t.path = String::from_utf8_lossy(&self.member_path(b, m, path)).into_owned();
        t
    }

    /// The member's path with `path` below it, as bytes: what goes to the
    /// backend, a decoded URL path's bytes as they came (`%E9` stays E9).
    pub fn member_path(&self, b: usize, m: usize, path: &[u8]) -> Vec<u8> {
        [self.list[b].members[m].target.path.trim_end_matches('/').as_bytes(), path].concat()
    }

    pub fn member(&self, b: usize, m: usize) -> &Member {
        &self.list[b].members[m]
    }
}

/// The candidate with the least key (the first of equals).
fn least(candidates: &[usize], key: impl Fn(usize) -> (i64, i64)) -> usize {
    candidates.iter().copied().min_by_key(|&m| key(m)).unwrap_or(candidates[0])
}

/// `name=value` pairs of a Cookie field, or of a URL's path parameters
/// and query (what precedes the first `;` or `?` is the path).
fn pairs(text: &[u8], cookie: bool) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut pieces = text.split(move |&c| c == b';' || (!cookie && (c == b'&' || c == b'?')));
    if !cookie {
        pieces.next();
    }
    pieces.filter_map(|p| {
        let p = p.trim_ascii();
        let eq = p.iter().position(|&c| c == b'=')?;
        Some((&p[..eq], &p[eq + 1..]))
    })
}

/// 16 random bytes, as hex.
fn nonce() -> String {
    crate::proxy_http::request::unpredictable_16().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balancers(conf: &str) -> Balancers {
        let dir = std::env::temp_dir().join(format!("warren-bal-{}-{}", std::process::id(), conf.len()));
        std::fs::create_dir_all(dir.join("htdocs")).unwrap();
        std::fs::write(dir.join("w.conf"), format!("Listen 80\nDocumentRoot htdocs\n{conf}")).unwrap();
        let loaded = warren_config::load_file(&dir.join("w.conf"), &Default::default());
        let _ = std::fs::remove_dir_all(&dir);
        Balancers::new(loaded.settings.unwrap_or_else(|| panic!("{:?}", loaded.errors)).balancers).unwrap()
    }

    #[test]
    fn byrequests_follows_the_loadfactors() {
        let b = balancers("<Proxy balancer://x>\nBalancerMember http://127.0.0.1:1 loadfactor=1\nBalancerMember http://127.0.0.1:2 loadfactor=3\n</Proxy>\n");
        let picks: Vec<usize> = (0..8).map(|_| b.elect(0, None, 0).unwrap()).collect();
        assert_eq!(picks.iter().filter(|&&m| m == 1).count(), 6, "{picks:?}");
        // Spread, not bunched: never three of the light member's turns in a row for the heavy one.
        assert_eq!(picks, [1, 0, 1, 1, 1, 0, 1, 1]);
    }

    #[test]
    fn standbys_drained_and_disabled_members() {
        let b = balancers("<Proxy balancer://x>\nBalancerMember http://127.0.0.1:1 route=a status=+D\nBalancerMember http://127.0.0.1:2 route=b status=+N\nBalancerMember http://127.0.0.1:3 route=c status=+H\n</Proxy>\n");
        // Only the standby is left for new sessions.
        assert_eq!(b.elect(0, None, 0), Ok(2));
        // A drained member keeps its sessions; a disabled one does not.
        assert_eq!(b.elect(0, Some(&Session { sticky: "s", route: "b" }), 0), Ok(1));
        assert_eq!(b.elect(0, Some(&Session { sticky: "s", route: "a" }), 0), Ok(2));
        assert_eq!(b.elect(0, Some(&Session { sticky: "s", route: "zz" }), 0), Ok(2));
        assert_eq!(b.elect(0, None, 1 << 2), Err(NoMember::NoneUsable));
    }

    #[test]
    fn sessions_are_read_from_cookies_then_urls() {
        let b = balancers("<Proxy balancer://x>\nBalancerMember http://127.0.0.1:1 route=a\nProxySet stickysession=JSESSIONID|jsessionid\n</Proxy>\n");
        let s = b.session(0, Some(b"x=1; JSESSIONID=abc.a; y=2"), b"/p?jsessionid=q.b").unwrap();
        assert_eq!((s.sticky, s.route), ("JSESSIONID", "a"));
        let s = b.session(0, Some(b"x=1"), b"/p;jsessionid=q.b?z=1").unwrap();
        assert_eq!((s.sticky, s.route), ("jsessionid", "b"));
        let s = b.session(0, None, b"/p?a=1&jsessionid=b").unwrap();
        assert_eq!(s.route, "b");
        assert_eq!(b.session(0, Some(b"JSESSIONID=abc."), b"/p"), None);
        assert_eq!(b.session(0, None, b"/jsessionid=x.a"), None);
    }
}
