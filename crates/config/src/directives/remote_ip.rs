//! mod_remoteip's directives, read into a host's
//! [`RemoteIp`](crate::remote_ip::RemoteIp). The request half is the
//! handler's `remote_ip` module (and the PROXY protocol's reading in
//! `warren_http::proxy_protocol`).

use crate::builder::Builder;
use crate::parse::Directive;
use crate::remote_ip::{parse_net, ProxyNet, RemoteIp};

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
