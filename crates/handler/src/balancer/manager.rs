//! `SetHandler balancer-manager`: a page of every balancer's members
//! (route, loadfactor, status, times elected, requests in progress, bytes
//! moved), and a member enabled, disabled, drained or made a hot standby
//! at run time by a POST whose query carries `b` (the balancer), `w` (the
//! member's URL), `nonce` and `w_status_D`, `w_status_N` or `w_status_H`
//! (1 or 0), the parameters of Apache's page. A change without the
//! server's nonce is refused (400), as a cross-site request forged from
//! another page cannot know it; a GET never changes anything. A POST
//! with a body and no change in its query is refused (400): its body's
//! parameters (`curl -d`, Apache's own form) are not read. The
//! section's `Require` lines decide who may see the page at all.

use super::{Balancers, MemberState};
use crate::path::html_escape;
use crate::{Body, Request, Response, Site};

/// The status switches the page offers.
const SWITCHES: [(&str, &str); 3] = [("D", "disabled"), ("N", "draining"), ("H", "hot standby")];

impl Site {
    pub(crate) fn balancer_manager(&self, req: Request, url: &[u8], query: &[u8]) -> Response {
        let params = form(query);
        let asks_change = params.iter().any(|(k, _)| k.starts_with("w_status_"));
        // A form body is never read here: said, rather than answered with
        // the page as if the change had been made.
        if req.head.method() == "POST" && !asks_change && req.head.has_body() {
            return self.error(req, 400, "balancer-manager: parameters in a POST body are not read; put them in the query string");
        }
        if asks_change {
            if req.head.method() != "POST" {
                return self.error(req, 405, "balancer-manager: a change must be a POST").header("Allow", "GET, HEAD, POST");
            }
            let nonce = params.iter().find(|(k, _)| k == "nonce").map(|(_, v)| v.as_str());
            // Compared in constant time: the nonce is the page's one secret.
            let nonce_ok = nonce.is_some_and(|n| subtle::ConstantTimeEq::ct_eq(n.as_bytes(), self.balancers.nonce.as_bytes()).into());
            if !nonce_ok {
                return self.error(req, 400, "balancer-manager: change refused: no nonce, or not this server's");
            }
            if let Err(why) = change(&self.balancers, &params) {
                return self.error(req, 400, &format!("balancer-manager: {why}"));
            }
            let what: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).filter(|kv| !kv.starts_with("nonce=")).collect();
            self.hosts[req.host].error_log.log(warren_config::LogLevel::Notice, Some(req.conn.useragent), &format!("balancer-manager: {}", what.join(" ")));
        }
        let mut r = Response::new(200, req.host);
        r.body = Body::Bytes(page(&self.balancers, &String::from_utf8_lossy(url)).into_bytes());
        r.header("Content-Type", "text/html; charset=utf-8").header("Cache-Control", "no-store")
    }
}

fn change(bals: &Balancers, params: &[(String, String)]) -> Result<(), String> {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let name = get("b").ok_or("no balancer (b=)")?;
    let b = bals.find(name).ok_or_else(|| format!("no balancer {name}"))?;
    let url = get("w").ok_or("no member (w=)")?;
    let m = bals.list[b].members.iter().position(|x| x.url == url).ok_or_else(|| format!("balancer://{name} has no member {url}"))?;
    let state = bals.state.as_ref().ok_or("no balancer state")?.member(b, m);
    for (k, v) in params.iter().filter(|(k, _)| k.starts_with("w_status_")) {
        let on = match v.as_str() {
            "1" => true,
            "0" => false,
            _ => return Err(format!("{k}={v}: takes 1 or 0")),
        };
        match &k["w_status_".len()..] {
            "D" => state.set_disabled(on),
            "N" => state.set_drain(on),
            "H" => state.set_hot_standby(on),
            other => return Err(format!("status flag {other} cannot be switched here (D, N, H)")),
        }
    }
    Ok(())
}

fn status_words(s: &MemberState, now: u64) -> String {
    let mut words = Vec::new();
    if s.disabled() {
        words.push("Dis");
    }
    if s.draining() {
        words.push("Drn");
    }
    if s.hot_standby() {
        words.push("Stby");
    }
    if s.in_error(now) {
        words.push("Err");
    }
    if s.check_failed() {
        words.push("HcFl");
    }
    if words.is_empty() || (words == ["Stby"] && s.usable(now)) {
        words.insert(0, "Ok");
    }
    format!("Init {}", words.join(" "))
}

fn page(bals: &Balancers, self_url: &str) -> String {
    let now = super::shared::now_ms();
    let mut out = String::from("<!DOCTYPE html>\n<html><head><title>Balancer Manager</title></head><body>\n<h1>Load Balancer Manager</h1>\n");
    let action = html_escape(self_url);
    for (b, bal) in bals.list.iter().enumerate() {
        let Some(state) = bals.state.as_ref() else { break };
        out += &format!(
            "<h3>LoadBalancer Status for balancer://{}</h3>\n<table><tr><th>StickySession</th><th>LB Method</th><th>Failover</th></tr><tr><td>{}</td><td>{:?}</td><td>{}</td></tr></table>\n",
            html_escape(&bal.name),
            html_escape(&if bal.sticky.is_empty() { "(None)".to_string() } else { bal.sticky.join(" | ") }),
            bal.lb_method,
            if bal.no_failover { "Off" } else { "On" }
        );
        out += "<table>\n<tr><th>Worker URL</th><th>Route</th><th>Factor</th><th>Status</th><th>Elected</th><th>Busy</th><th>Traffic</th><th>Change</th></tr>\n";
        for (m, member) in bal.members.iter().enumerate() {
            let s = state.member(b, m);
            out += &format!(
                "<tr class=\"member\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>",
                html_escape(&member.url),
                html_escape(member.route.as_deref().unwrap_or("")),
                member.load_factor,
                status_words(s, now),
                s.elected(),
                s.busy(),
                s.traffic()
            );
            let on = [s.disabled(), s.draining(), s.hot_standby()];
            for ((flag, label), is_on) in SWITCHES.iter().zip(on) {
                let query = format!("b={}&w={}&nonce={}&w_status_{flag}={}", encode(&bal.name), encode(&member.url), bals.nonce, u8::from(!is_on));
                out += &format!("<form method=\"post\" action=\"{action}?{}\"><button>{} {label}</button></form>", html_escape(&query), if is_on { "Not" } else { "Set" });
            }
            out += "</td></tr>\n";
        }
        out += "</table>\n";
    }
    out += "</body></html>\n";
    out
}

/// A query string's `name=value` pairs, `+` and `%XX` decoded.
fn form(query: &[u8]) -> Vec<(String, String)> {
    let query = query.strip_prefix(b"?").unwrap_or(query);
    query
        .split(|&c| c == b'&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = match p.iter().position(|&c| c == b'=') {
                Some(i) => (&p[..i], &p[i + 1..]),
                None => (p, &p[p.len()..]),
            };
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match s[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < s.len() => match (hex(s[i + 1]), hex(s[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// For a query value: everything but unreserved characters encoded.
fn encode(s: &str) -> String {
    s.bytes().map(|c| if c.is_ascii_alphanumeric() || b"-._~".contains(&c) { (c as char).to_string() } else { format!("%{c:02X}") }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_and_encode_back() {
        let url = "unix:/run/a b.sock|http://x/";
        let q = format!("?b=php&w={}&w_status_D=1&x", encode(url));
        assert_eq!(form(q.as_bytes()), [("b".into(), "php".into()), ("w".into(), url.into()), ("w_status_D".into(), "1".into()), ("x".into(), String::new())]);
        assert_eq!(decode(b"a+b%2"), "a b%2");
        assert_eq!(decode(b"%zz%41"), "%zzA");
    }
}
