//! mod_proxy_http's host directives (ProxyPassReverse and its cookie forms,
//! ProxyPreserveHost, ProxyAddHeaders, ProxyVia, ProxyErrorOverride,
//! ProxyRequests, the WebSocket limits) and mod_ssl's client side
//! (SSLProxy*), read into a host's [`ProxyHttp`], and the checks once a
//! host is read. The request half is the handler's `proxy_http` module.

use std::time::Duration;

use crate::builder::Builder;
use crate::parse::Directive;
use crate::proxy_http::{on_off, Via};
use crate::settings::HostConfig;

fn flag(b: &mut Builder, d: &Directive) -> Option<bool> {
    match d.args.as_slice() {
        [v] => match on_off(&d.name, v) {
            Ok(on) => Some(on),
            Err(m) => {
                b.error(&d.origin, m);
                None
            }
        },
        _ => {
            b.error(&d.origin, format!("{} takes one argument, On or Off", d.name));
            None
        }
    }
}

pub(crate) fn preserve_host(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.preserve_host = Some(on);
    }
}

pub(crate) fn add_headers(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.add_headers = Some(on);
    }
}

pub(crate) fn error_override(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    // Apache 2.4.56 takes a list of statuses after On; warren overrides every error.
    match d.args.first() {
        Some(v) => match on_off(&d.name, v) {
            Ok(on) => host.proxy_http.error_override = Some(on),
            Err(m) => b.error(&d.origin, m),
        },
        None => b.error(&d.origin, "ProxyErrorOverride takes On or Off"),
    }
}

/// ProxyRequests: On would make warren a forward proxy, which it is not.
pub(crate) fn requests(b: &mut Builder, d: &Directive, _host: &mut HostConfig) {
    if let Some(true) = flag(b, d) {
        b.error(&d.origin, "ProxyRequests On: warren is no forward proxy (only ProxyPass routes are proxied)");
    }
}

pub(crate) fn via(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let v = match d.args.as_slice() {
        [v] => match v.to_ascii_lowercase().as_str() {
            "off" => Via::Off,
            "on" => Via::On,
            "full" => Via::Full,
            "block" => Via::Block,
            _ => return b.error(&d.origin, format!("ProxyVia: {v} is none of On, Off, Full, Block")),
        },
        _ => return b.error(&d.origin, "ProxyVia takes one of On, Off, Full, Block"),
    };
    host.proxy_http.via = Some(v);
}

/// ProxyWebsocketMaxPerClient n (warren's own; nginx's limit_conn).
pub(crate) fn websocket_max_per_client(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match d.args.as_slice() {
        [v] => match v.parse::<usize>() {
            Ok(n) => host.proxy_http.websockets_per_client = Some(n),
            Err(_) => b.error(&d.origin, format!("ProxyWebsocketMaxPerClient: {v} is not a number of tunnels")),
        },
        _ => b.error(&d.origin, "ProxyWebsocketMaxPerClient takes one number of tunnels (0: no bound)"),
    }
}

/// ProxyWebsocketIdleTimeout seconds (mod_proxy_wstunnel).
pub(crate) fn websocket_idle_timeout(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match d.args.as_slice() {
        [v] => match v.parse::<u64>() {
            Ok(n) => host.proxy_http.websocket_idle = Some(Duration::from_secs(n)),
            Err(_) => b.error(&d.origin, format!("ProxyWebsocketIdleTimeout: {v} is not a number of seconds")),
        },
        _ => b.error(&d.origin, "ProxyWebsocketIdleTimeout takes one number of seconds"),
    }
}

pub(crate) fn ssl_proxy_engine(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.tls.engine = Some(on);
    }
}

pub(crate) fn ssl_proxy_check_peer_name(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.tls.check_peer_name = Some(on);
    }
}

pub(crate) fn ssl_proxy_check_peer_cn(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.tls.check_peer_cn = Some(on);
    }
}

/// SSLProxyProtocol, read as SSLProtocol is.
pub(crate) fn ssl_proxy_protocol(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if d.args.is_empty() {
        return b.error(&d.origin, "SSLProxyProtocol takes one or more protocols");
    }
    match crate::directives::tls::parse_protocols(&d.args) {
        Ok((p, notes)) => {
            for n in notes {
                b.warn(&d.origin, format!("SSLProxyProtocol: {n}"));
            }
            host.proxy_http.tls.protocols = Some(p);
        }
        Err(m) => b.error(&d.origin, m),
    }
}

pub(crate) fn ssl_proxy_check_peer_expire(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    if let Some(on) = flag(b, d) {
        host.proxy_http.tls.check_peer_expire = Some(on);
    }
}

/// SSLProxyVerify: `optional` is taken as `require` (a backend always
/// presents a certificate); `optional_no_ca` is refused, as it would
/// pass a certificate no one vouches for while seeming to check it.
pub(crate) fn ssl_proxy_verify(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let verify = match d.args.as_slice() {
        [v] => match v.to_ascii_lowercase().as_str() {
            "none" => false,
            "require" | "optional" => true,
            _ => return b.error(&d.origin, format!("SSLProxyVerify: {v} is none of none, optional, require")),
        },
        _ => return b.error(&d.origin, "SSLProxyVerify takes none, optional or require"),
    };
    host.proxy_http.tls.verify = Some(verify);
}

pub(crate) fn ssl_proxy_ca_file(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let [file] = d.args.as_slice() else {
        return b.error(&d.origin, "SSLProxyCACertificateFile takes one file");
    };
    let path = b.resolve(file);
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() > 0) {
        return b.error(&d.origin, format!("SSLProxyCACertificateFile: file '{}' does not exist or is empty", path.display()));
    }
    host.proxy_http.tls.ca_file = Some(path);
}

pub(crate) fn ssl_proxy_ca_path(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let [dir] = d.args.as_slice() else {
        return b.error(&d.origin, "SSLProxyCACertificatePath takes one directory");
    };
    let path = b.resolve(dir);
    if !path.is_dir() {
        return b.error(&d.origin, format!("SSLProxyCACertificatePath: '{}' is not a directory", path.display()));
    }
    host.proxy_http.tls.ca_path = Some(path);
}

/// The checks that need a host's whole configuration: an `https://`
/// backend needs SSLProxyEngine On there (Apache refuses it at the first
/// request; warren at start, naming the ProxyPass line), and SSLProxyVerify
/// none is warned about once per host.
pub(crate) fn settle(b: &mut Builder, host: &HostConfig, reported: &mut Vec<crate::parse::Origin>) {
    let mut tls_routes = host.proxy_routes.iter().filter_map(|r| Some((r, r.target.as_ref()?.http.as_ref().filter(|o| o.tls_name.is_some())?)));
    let Some(first) = tls_routes.next() else { return };
    if host.proxy_http.tls.engine != Some(true) {
        for (r, o) in std::iter::once(first).chain(tls_routes) {
            // A virtual host inherits the main server's lines: each is named once.
            if reported.contains(&r.origin) {
                continue;
            }
            reported.push(r.origin.clone());
            b.error(&r.origin, format!("ProxyPass https://{}: an https:// backend needs SSLProxyEngine On in this host", o.authority));
        }
    } else if !host.proxy_http.tls.verifies() && !reported.contains(&first.0.origin) {
        reported.push(first.0.origin.clone());
        b.warn(&first.0.origin, "https:// backend with SSLProxyVerify none (Apache's default): the backend's certificate is not verified (SSLProxyCheckPeerName and SSLProxyCheckPeerExpire still apply); set SSLProxyVerify require");
    }
}

/// ProxyPassReverse, ProxyPassReverseCookieDomain, ProxyPassReverseCookiePath.
pub(crate) fn reverse(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let [from, to, rest @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, format!("{} takes two arguments", d.name));
    };
    if rest.iter().any(|r| !r.eq_ignore_ascii_case("interpolate")) {
        return b.error(&d.origin, format!("{}: unexpected {}", d.name, rest.join(" ")));
    }
    let pair = (from.clone(), to.clone());
    match d.name.to_ascii_lowercase().as_str() {
        "proxypassreverse" => {
            if !from.starts_with('/') {
                return b.error(&d.origin, format!("ProxyPassReverse: the path {from} must start with /"));
            }
            host.proxy_http.reverse.push(pair)
        }
        "proxypassreversecookiedomain" => host.proxy_http.cookie_domains.push(pair),
        _ => host.proxy_http.cookie_paths.push(pair),
    }
}
