//! `warren bench`: a load tester in the manner of ab and siege.
//!
//! - [`client`]: the load itself ([`client::Plan`] -> [`client::run`]): a
//!   few threads, each driving many non-blocking connections through one
//!   epoll with requests built once, so that the tool is not what limits.
//! - [`stats`]: what was measured ([`stats::Stats`]: an HDR histogram of
//!   response times, outcomes by class, bytes, a per-second series) and its
//!   report ([`stats::Summary`]: siege's fields, ab's percentiles, JSON).
//! - [`tls`]: https:// targets' rustls client configuration (`--insecure`,
//!   `--cacert`, `--no-resume`, `--tls-auth`).
//! - [`memory`]: the server's memory, sampled each second (`--server-pid`,
//!   `--server-cgroup`).
//! - [`build_plan`] turns URLs (or a siege URL file) and options into
//!   targets with their requests.
//!
//! `warren bench --suite FILE` compares servers:
//! - [`suite`]: the suite file -> [`suite::Suite`] (server set-ups and
//!   scenarios);
//! - [`servers`]: starts and stops warren, nginx and Apache (and the
//!   php-fpm pool they share) with equivalent configurations;
//! - [`runner`]: each scenario against each server -> [`runner::Results`];
//! - [`report`]: report.md, report.html, SVG charts and raw JSON;
//! - [`probe`]: single blocking requests (readiness checks, a page's
//!   images, the idle-connections scenario).

pub mod client;
pub mod memory;
pub mod probe;
pub mod report;
pub mod runner;
pub mod servers;
pub mod stats;
pub mod suite;
pub mod tls;

use std::net::ToSocketAddrs;
use std::time::Duration;

use warren_config::values::DurationSyntax;

pub use client::{Plan, Target};
pub use stats::{Stats, Summary};

/// What the command line asks for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub urls: Vec<String>,
    /// From a siege URL file.
    pub url_lines: Vec<UrlLine>,
    pub method: Option<String>,
    pub headers: Vec<String>,
    pub body: Option<Vec<u8>>,
    pub keep_alive: bool,
}

/// ab's and siege's durations: ab takes plain seconds, siege a unit.
const AB_SIEGE_TIME: DurationSyntax = DurationSyntax {
    units: &[
        ("s", Duration::from_secs(1)),
        ("S", Duration::from_secs(1)),
        ("m", Duration::from_secs(60)),
        ("M", Duration::from_secs(60)),
        ("h", Duration::from_secs(3600)),
        ("H", Duration::from_secs(3600)),
    ],
    fractions: true,
    plus: false,
};

/// `30`, `30s`, `1.5m`, `1h`.
pub fn parse_duration(v: &str) -> Result<Duration, String> {
    warren_config::values::parse_duration(v, &AB_SIEGE_TIME).ok_or_else(|| format!("'{v}' is not a duration (30, 30s, 1m, 1h)"))
}

/// A URL and, for POST, its body.
pub type UrlLine = (String, Option<Vec<u8>>);

/// A siege URL file: one URL a line, optionally followed by `POST` and a
/// body; blank lines and `#` comments skipped.
pub fn parse_url_file(text: &str) -> Result<Vec<UrlLine>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, char::is_whitespace);
        let url = parts.next().unwrap_or_default().to_string();
        match (parts.next(), parts.next()) {
            (None, _) => out.push((url, None)),
            (Some(m), body) if m.eq_ignore_ascii_case("POST") => out.push((url, Some(body.unwrap_or("").trim().as_bytes().to_vec()))),
            (Some(m), _) => return Err(format!("line {}: expected URL [POST body], found '{m}'", n + 1)),
        }
    }
    if out.is_empty() {
        return Err("the URL file has no URL".into());
    }
    Ok(out)
}

/// `--ramp 1-150:60`: users from 1 to 150 over 60 s (the duration as in -t).
pub fn parse_ramp(v: &str) -> Result<(usize, usize, Duration), String> {
    let bad = || format!("'{v}' is not FROM-TO:DURATION (e.g. 1-150:60)");
    let (users, over) = v.split_once(':').ok_or_else(bad)?;
    let (from, to) = users.split_once('-').ok_or_else(bad)?;
    let (from, to) = (from.trim().parse::<usize>().map_err(|_| bad())?, to.trim().parse::<usize>().map_err(|_| bad())?);
    let over = parse_duration(over.trim())?;
    if to == 0 || from > to || over.is_zero() {
        return Err(bad());
    }
    Ok((from, to, over))
}

/// The targets of a run: each URL resolved and its request built once.
pub fn build_plan(o: &Options) -> Result<Vec<Target>, String> {
    let mut specs: Vec<UrlLine> = o.urls.iter().map(|u| (u.clone(), o.body.clone())).collect();
    specs.extend(o.url_lines.iter().cloned());
    if specs.is_empty() {
        return Err("give at least one URL".into());
    }
    let mut targets = Vec::new();
    for (raw, body) in &specs {
        let method = o.method.clone().unwrap_or_else(|| if body.is_some() { "POST".into() } else { "GET".into() });
        let url = url::Url::parse(raw).map_err(|e| format!("{raw}: {e}"))?;
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err(format!("{raw}: only http:// and https:// URLs are supported")),
        };
        let host = url.host_str().ok_or_else(|| format!("{raw}: no host"))?;
        let tls = match (https, url.host()) {
            (false, _) => None,
            (true, Some(url::Host::Ipv4(ip))) => Some(rustls::pki_types::ServerName::IpAddress(std::net::IpAddr::V4(ip).into())),
            (true, Some(url::Host::Ipv6(ip))) => Some(rustls::pki_types::ServerName::IpAddress(std::net::IpAddr::V6(ip).into())),
            (true, _) => Some(rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("{raw}: {e}"))?),
        };
        let port = url.port_or_known_default().unwrap_or(80);
        // A bracketed IPv6 literal resolves without its brackets.
        let addr = (host.trim_start_matches('[').trim_end_matches(']'), port).to_socket_addrs().map_err(|e| format!("{raw}: cannot resolve {host}: {e}"))?.next().ok_or_else(|| format!("{raw}: {host} has no address"))?;
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: warren-bench\r\nAccept: */*\r\n");
        for h in &o.headers {
            if !h.contains(':') {
                return Err(format!("header '{h}' is not Name: value"));
            }
            req.push_str(h.trim_end());
            req.push_str("\r\n");
        }
        if !o.keep_alive {
            req.push_str("Connection: close\r\n");
        }
        if let Some(b) = body {
            req.push_str(&format!("Content-Length: {}\r\n", b.len()));
            if !o.headers.iter().any(|h| h.to_ascii_lowercase().starts_with("content-type:")) {
                req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
            }
        }
        req.push_str("\r\n");
        let mut request = req.into_bytes();
        if let Some(b) = body {
            request.extend_from_slice(b);
        }
        targets.push(Target { addr, request, head_only: method.eq_ignore_ascii_case("HEAD"), tls });
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_requests() {
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_ramp("1-150:60").unwrap(), (1, 150, Duration::from_secs(60)));
        assert_eq!(parse_ramp("5-10:1m").unwrap(), (5, 10, Duration::from_secs(60)));
        for bad in ["150-1:60", "1-150", "x-2:3", "1-0:5"] {
            assert!(parse_ramp(bad).is_err(), "{bad}");
        }
        let o = Options { urls: vec!["http://127.0.0.1:8080/a?b=1".into()], headers: vec!["X-A: 1".into()], body: Some(b"xy".to_vec()), ..Options::default() };
        let t = build_plan(&o).unwrap();
        let req = String::from_utf8(t[0].request.clone()).unwrap();
        assert_eq!(req, "POST /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: warren-bench\r\nAccept: */*\r\nX-A: 1\r\nConnection: close\r\nContent-Length: 2\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nxy");
        let lines = parse_url_file("# siege\nhttp://h/a\n\nhttp://h/b POST x=1&y=2\n").unwrap();
        assert_eq!(lines, vec![("http://h/a".to_string(), None), ("http://h/b".to_string(), Some(b"x=1&y=2".to_vec()))]);
        assert!(parse_url_file("http://h/a GET\n").is_err());
        assert!(build_plan(&Options { urls: vec!["ftp://x/".into()], ..Options::default() }).is_err());
        assert!(t[0].tls.is_none());
        let t = build_plan(&Options { urls: vec!["https://127.0.0.1:8443/".into(), "https://localhost/x".into()], keep_alive: true, ..Options::default() }).unwrap();
        assert_eq!(t[0].tls, Some(rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap()));
        assert_eq!(t[1].tls, Some(rustls::pki_types::ServerName::try_from("localhost").unwrap()));
        assert_eq!(t[1].addr.port(), 443);
        assert!(String::from_utf8_lossy(&t[1].request).starts_with("GET /x HTTP/1.1\r\nHost: localhost\r\n"));
        assert!(build_plan(&Options { urls: vec!["not a url".into()], ..Options::default() }).is_err());
    }
}
