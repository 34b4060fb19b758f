//! mod_proxy_balancer's and mod_proxy_hcheck's directives: `<Proxy
//! balancer://name>`, `BalancerMember`, `ProxySet` and `ProxyHCExpr`, read
//! into the builder's [`Balancer`]s, and the checks once every host is
//! read. The request half is the handler's `balancer` module.

use std::time::Duration;

use crate::balancer::{split_url, Balancer, HcMethod, HealthCheck, LbMethod, Member, MemberStatus, MAX_MEMBERS};
use crate::backend::ProxyTarget;
use crate::builder::Builder;
use crate::parse::{Directive, Node, Origin, Section};
use crate::settings::HostConfig;

fn balancer_mut<'a>(b: &'a mut Builder, name: &str, origin: &Origin) -> &'a mut Balancer {
    let i = match b.balancers.iter().position(|x| x.name.eq_ignore_ascii_case(name)) {
        Some(i) => i,
        None => {
            b.balancers.push(Balancer::new(name, origin));
            b.balancers.len() - 1
        }
    };
    &mut b.balancers[i]
}

/// A `<Proxy balancer://name>` section: its BalancerMember and ProxySet
/// lines (the balancer implied). Anything else in it is an error: warren's
/// `<Proxy>` carries no access rules (put them in `<Location>`).
pub(crate) fn section(b: &mut Builder, sec: &Section) {
    let name = match sec.args.as_slice() {
        [url] => split_url(url).map(|(n, _)| n.to_string()),
        _ => None,
    };
    let Some(name) = name else {
        b.error(&sec.origin, format!("<{}> takes one balancer://name (warren is no forward proxy; other <Proxy> sections are not supported)", sec.name));
        return;
    };
    balancer_mut(b, &name, &sec.origin);
    for node in &sec.children {
        match node {
            Node::Directive(d) if d.name.eq_ignore_ascii_case("BalancerMember") || d.name.eq_ignore_ascii_case("ProxySet") => apply(b, d, &name, &d.args),
            Node::Directive(d) => b.error(&d.origin, format!("{} is not supported in <Proxy balancer://{name}> (only BalancerMember and ProxySet; access rules go in <Location>)", d.name)),
            Node::Section(s) | Node::Skipped(s) => b.error(&s.origin, format!("<{}> is not supported in <Proxy balancer://{name}>", s.name)),
        }
    }
}

/// BalancerMember or ProxySet outside a `<Proxy>` section: the balancer
/// comes first.
pub(crate) fn directive(b: &mut Builder, d: &Directive, _host: &mut HostConfig) {
    match d.args.split_first() {
        Some((url, rest)) if split_url(url).is_some() => {
            let name = split_url(url).map(|(n, _)| n.to_string()).unwrap_or_default();
            apply(b, d, &name, rest);
        }
        _ => b.error(&d.origin, format!("{} outside <Proxy balancer://...> takes balancer://name first (ProxySet on a single worker is not supported: put its keys on the ProxyPass line)", d.name)),
    }
}

fn apply(b: &mut Builder, d: &Directive, name: &str, args: &[String]) {
    let result = if d.name.eq_ignore_ascii_case("BalancerMember") {
        member(d, args).map(|m| balancer_mut(b, name, &d.origin).members.push(m))
    } else {
        let bal = balancer_mut(b, name, &d.origin);
        args.iter().try_for_each(|kv| set(bal, kv))
    };
    if let Err(m) = result {
        b.error(&d.origin, format!("{}: {m}", d.name));
    }
}

fn set(bal: &mut Balancer, kv: &str) -> Result<(), String> {
    let (k, v) = kv.split_once('=').ok_or_else(|| format!("{kv} is not key=value"))?;
    match k.to_ascii_lowercase().as_str() {
        "lbmethod" => {
            bal.lb_method = match v.to_ascii_lowercase().as_str() {
                "byrequests" => LbMethod::ByRequests,
                "bytraffic" => LbMethod::ByTraffic,
                "bybusyness" => LbMethod::ByBusyness,
                _ => return Err(format!("lbmethod={v}: takes byrequests, bytraffic or bybusyness")),
            }
        }
        "stickysession" => {
            let names: Vec<String> = v.split('|').filter(|s| !s.is_empty()).map(str::to_string).collect();
            if names.is_empty() || names.len() > 2 {
                return Err(format!("stickysession={v}: takes a name, or a cookie's name|a URL parameter's"));
            }
            bal.sticky = names;
        }
        "maxattempts" => bal.max_attempts = Some(v.parse().map_err(|_| format!("maxattempts={v}: takes a number"))?),
        "nofailover" => bal.no_failover = crate::values::on_off_value(v).ok_or_else(|| format!("nofailover={v}: takes On or Off"))?,
        _ => return Err(format!("unsupported balancer key {kv} (supported: lbmethod, stickysession, nofailover, maxattempts)")),
    }
    Ok(())
}

fn member(d: &Directive, args: &[String]) -> Result<Member, String> {
    let (url, keys) = args.split_first().ok_or("takes a member URL, then key=value options")?;
    if split_url(url).is_some() {
        return Err(format!("{url}: a balancer cannot be a member"));
    }
    let mut m = Member { url: url.clone(), target: placeholder_target(), load_factor: 1, route: None, status: MemberStatus::default(), health_check: None, retry: Duration::from_secs(60), origin: d.origin.clone() };
    let mut hc = HealthCheck { method: HcMethod::Tcp, uri: String::new(), interval: Duration::from_secs(30), passes: 1, fails: 1, expr_name: None, expr: None };
    let mut checked = false;
    let mut worker_keys = Vec::new();
    for kv in keys {
        let Some((k, v)) = kv.split_once('=') else { return Err(format!("{kv} is not key=value")) };
        match k.to_ascii_lowercase().as_str() {
            "loadfactor" => m.load_factor = v.parse().ok().filter(|n| (1..=100).contains(n)).ok_or_else(|| format!("loadfactor={v}: takes 1 to 100"))?,
            "route" => m.route = Some(v.to_string()).filter(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_graphic() && c != b';' && c != b',')),
            "status" => m.status = status(v)?,
            "hcmethod" => {
                checked = true;
                hc.method = match v.to_ascii_uppercase().as_str() {
                    "TCP" => HcMethod::Tcp,
                    "OPTIONS" => HcMethod::Options,
                    "HEAD" => HcMethod::Head,
                    "GET" => HcMethod::Get,
                    _ => return Err(format!("hcmethod={v}: takes TCP, OPTIONS, HEAD or GET (warren has no CPING, OPTIONS11, HEAD11 or GET11)")),
                }
            }
            "hcuri" => hc.uri = v.to_string(),
            "hcexpr" => hc.expr_name = Some(v.to_string()),

            "retry" => m.retry = crate::proxy_http::worker_seconds(v).ok_or_else(|| format!("retry={v}: takes a number of seconds up to {}", crate::proxy_http::MAX_WORKER_SECONDS))?,
            "hcinterval" => hc.interval = crate::proxy_http::worker_seconds(v).filter(|t| !t.is_zero()).ok_or_else(|| format!("hcinterval={v}: takes a positive number of seconds up to {}", crate::proxy_http::MAX_WORKER_SECONDS))?,
            "hcpasses" => hc.passes = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("hcpasses={v}: takes a positive number"))?,
            "hcfails" => hc.fails = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("hcfails={v}: takes a positive number"))?,
            _ => worker_keys.push(kv.clone()),
        }
    }
    if keys.iter().any(|kv| kv.to_ascii_lowercase().starts_with("route=")) && m.route.is_none() {
        return Err("route= takes a non-empty token (no spaces, ';' or ',')".to_string());
    }
    if hc.expr_name.is_some() && hc.method == HcMethod::Tcp {
        return Err("hcexpr needs hcmethod OPTIONS, HEAD or GET (a TCP check has no answer to test)".to_string());
    }
    if checked {
        if matches!(hc.method, HcMethod::Options | HcMethod::Head | HcMethod::Get) && !url.to_ascii_lowercase().contains("http://") {
            return Err(format!("hcmethod on {url}: OPTIONS, HEAD and GET check plain http:// members only (TCP checks any)"));
        }
        m.health_check = Some(hc);
    }
    // The worker keys and URL are a ProxyPass line's.
    let as_route = Directive { name: d.name.clone(), args: ["/".to_string(), url.clone()].into_iter().chain(worker_keys).collect(), origin: d.origin.clone() };
    m.target = crate::directives::values::parse_proxy_route(&as_route)?.target.ok_or("a member cannot be !")?;
    // The member's error state is the balancer's, shared by every child: a
    // child's own (mod_proxy_http's retry=) would outlast a passing check.
    if let Some(origin) = m.target.http.as_mut() {
        origin.retry = Duration::ZERO;
    }
    if matches!(m.target.backend.addr, crate::FcgiAddr::Pool(_)) {
        return Err("a pool cannot be a member".to_string());
    }
    Ok(m)
}

/// `status=+H-D`, `status=D`: the flags set (a `-` clears one).
fn status(v: &str) -> Result<MemberStatus, String> {
    let mut s = MemberStatus::default();
    let mut on = true;
    for c in v.chars() {
        let flag = match c.to_ascii_uppercase() {
            '+' => {
                on = true;
                continue;
            }
            '-' => {
                on = false;
                continue;
            }
            'D' => &mut s.disabled,
            'N' => &mut s.drain,
            'H' => &mut s.hot_standby,
            'I' => &mut s.ignore_errors,
            'S' => &mut s.stopped,
            _ => return Err(format!("status={v}: flag {c} is not one of D, N, H, I, S")),
        };
        *flag = on;
    }
    Ok(s)
}

/// The target a member holds until its URL is read.
fn placeholder_target() -> ProxyTarget {
    ProxyTarget { backend: crate::FcgiBackend { addr: crate::FcgiAddr::Tcp { host: String::new(), port: 0 }, reuse: false, timeout: None, flush_packets: false }, path: String::new(), http: None, balancer: None }
}

/// `ProxyHCExpr name {expression}`: an ap_expr a health check's answer
/// must satisfy, named by members' `hcexpr=` (`%{REQUEST_STATUS}`,
/// `resp('Field')`).
pub(crate) fn hc_expr(b: &mut Builder, d: &Directive, _host: &mut HostConfig) {
    let parsed = match d.args.split_first() {
        Some((name, rest)) if !rest.is_empty() => {
            let text = rest.join(" ");
            let inner = text.trim().strip_prefix('{').and_then(|t| t.strip_suffix('}')).ok_or_else(|| format!("ProxyHCExpr {name}: the expression goes in braces: {{%{{REQUEST_STATUS}} =~ /^[23]/}}"));
            inner.and_then(|t| crate::expr::Expr::parse(t.trim(), false).map_err(|e| format!("ProxyHCExpr {name}: {e}"))).map(|e| (name.clone(), e))
        }
        _ => Err("ProxyHCExpr takes a name and an {expression}".to_string()),
    };
    match parsed {
        Ok((name, expr)) => {
            b.hc_exprs.retain(|(n, _)| *n != name);
            b.hc_exprs.push((name, expr));
        }
        Err(m) => b.error(&d.origin, m),
    }
}

/// At the end of reading: every balancer has a member, every ProxyPass to
/// a balancer names one defined, and the members of a balancer give one
/// path for FastCGI (a request failed over keeps its SCRIPT_FILENAME).
pub(crate) fn settle(b: &mut Builder, hosts: &[&HostConfig]) {
    let mut balancers = std::mem::take(&mut b.balancers);
    for bal in &mut balancers {
        for m in &mut bal.members {
            let Some(hc) = m.health_check.as_mut() else { continue };
            let Some(name) = &hc.expr_name else { continue };
            match b.hc_exprs.iter().find(|(n, _)| n == name) {
                Some((_, e)) => hc.expr = Some(e.clone()),
                None => b.error(&m.origin, format!("BalancerMember {}: hcexpr={name}: no ProxyHCExpr {name}", m.url)),
            }
        }
    }
    for bal in &balancers {
        if bal.members.is_empty() {
            b.error(&bal.origin, format!("balancer://{} has no BalancerMember", bal.name));
        }
        if bal.members.len() > MAX_MEMBERS {
            b.error(&bal.origin, format!("balancer://{} has {} members; warren takes at most {MAX_MEMBERS}", bal.name, bal.members.len()));
        }
        let fcgi_paths: Vec<&str> = bal.members.iter().filter(|m| m.target.http.is_none()).map(|m| m.target.path.as_str()).collect();
        if fcgi_paths.windows(2).any(|w| w[0] != w[1]) {
            b.error(&bal.origin, format!("balancer://{}: its fcgi:// members give different paths (warren sends one SCRIPT_FILENAME to whichever member answers)", bal.name));
        }
    }
    // A virtual host inherits the main server's routes: each is said once.
    let mut reported = Vec::new();
    for host in hosts {
        for route in &host.proxy_routes {
            let Some(name) = route.target.as_ref().and_then(|t| t.balancer.as_deref()) else { continue };
            if reported.contains(&route.origin) {
                continue;
            }
            let Some(bal) = balancers.iter().find(|x| x.name.eq_ignore_ascii_case(name)) else {
                reported.push(route.origin.clone());
                b.error(&route.origin, format!("ProxyPass to balancer://{name}: no such balancer (define it with <Proxy balancer://{name}> and BalancerMember)"));
                continue;
            };
            // As for a ProxyPass to an https:// backend, in the host that routes to it.
            let tls = bal.members.iter().find(|m| m.target.http.as_ref().is_some_and(|o| o.tls_name.is_some()));
            if let (Some(m), false) = (tls, host.proxy_http.tls.engine == Some(true)) {
                reported.push(route.origin.clone());
                b.error(&route.origin, format!("ProxyPass to balancer://{name}: its member {} needs SSLProxyEngine On in this host", m.url));
            }
        }
    }
    b.balancers = balancers;
}
