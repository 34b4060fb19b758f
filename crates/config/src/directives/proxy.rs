//! mod_proxy's and mod_proxy_fcgi's directives that say where requests go
//! (`ProxyPass`, `ProxyTimeout`, `ProxyFCGIBackendType`), read into a
//! host's [`ProxyRoute`](crate::ProxyRoute)s by
//! [`parse_proxy_route`](super::values::parse_proxy_route). mod_proxy_http's
//! own are in [`proxy_http`](super::proxy_http), balancers in
//! [`balancer`](super::balancer). The request half is the handler's
//! `gateways` (which route), `fastcgi` and `proxy_http` modules.

use std::time::Duration;

use crate::backend::FcgiBackendType;
use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;
use crate::settings::HostConfig;
use crate::directives::values::parse_proxy_route;

pub(crate) fn proxy_pass(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match parse_proxy_route(d) {
        Ok(route) => host.proxy_routes.push(route),
        Err(m) => b.error(&d.origin, m),
    }
}

pub(crate) fn proxy_timeout(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match d.args.as_slice() {
        [v] => match v.parse::<u64>() {
            Ok(n) if n > 0 => host.proxy_timeout = Some(Duration::from_secs(n)),
            _ => b.error(&d.origin, format!("ProxyTimeout: '{v}' is not a positive number of seconds")),
        },
        _ => b.error(&d.origin, "ProxyTimeout takes one argument, seconds"),
    }
}

pub(crate) fn proxy_fcgi_backend_type(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [t] if t.eq_ignore_ascii_case("fpm") => dir.fcgi_backend_type = Some(FcgiBackendType::Fpm),
        [t] if t.eq_ignore_ascii_case("generic") => dir.fcgi_backend_type = Some(FcgiBackendType::Generic),
        _ => b.error(&d.origin, "ProxyFCGIBackendType takes FPM or GENERIC"),
    }
}
