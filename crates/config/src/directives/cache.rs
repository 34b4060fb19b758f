//! mod_cache's directives (with mod_cache_disk's and mod_cache_socache's),
//! read into a host's [`CacheDirectives`](crate::cache::CacheDirectives),
//! and the check once every host is read. The request half is the
//! handler's `response_cache` module.

use std::path::PathBuf;
use std::time::Duration;

use crate::builder::Builder;
use crate::cache::{CacheEnable, CacheKind};
use crate::parse::{Directive, Origin};
use crate::settings::HostConfig;

/// `CacheEnable disk|socache [/url-path]`.
pub fn enable(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    let (kind, prefix) = match d.args.as_slice() {
        [k] => (k.as_str(), "/"),
        [k, p] => (k.as_str(), p.as_str()),
        _ => return b.error(&d.origin, "CacheEnable takes a cache type and a URL path: CacheEnable disk /"),
    };
    let kind = match kind.to_ascii_lowercase().as_str() {
        "disk" => CacheKind::Disk,
        "socache" => CacheKind::Socache,
        "mem" | "fd" => return b.error(&d.origin, format!("CacheEnable {kind}: Apache 2.2's cache types are gone; use disk or socache")),
        _ => return b.error(&d.origin, format!("CacheEnable {kind}: unknown cache type (disk or socache)")),
    };
    if !prefix.starts_with('/') {
        return b.error(&d.origin, format!("CacheEnable {prefix}: warren caches only its own URLs, named by a path starting with / (no forward proxying)"));
    }
    h.cache.enable_origin.get_or_insert_with(|| d.origin.clone());
    h.cache.enable.push(CacheEnable { kind, prefix: prefix.to_string() });
}

/// `CacheDisable /url-path`.
pub fn disable(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    match b.one(d) {
        Some(p) if p.starts_with('/') => h.cache.disable.push(p),
        Some(p) => b.error(&d.origin, format!("CacheDisable {p}: a URL path starting with / is expected")),
        None => {}
    }
}

fn seconds(b: &mut Builder, d: &Directive) -> Option<Duration> {
    b.whole_number(d).map(Duration::from_secs)
}

fn bytes(b: &mut Builder, d: &Directive) -> Option<u64> {
    b.whole_number(d)
}

pub fn quick_handler(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.quick_handler = b.on_off(d).or(h.cache.quick_handler);
}

pub fn default_expire(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.default_expire = seconds(b, d).or(h.cache.default_expire);
}

pub fn max_expire(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.max_expire = seconds(b, d).or(h.cache.max_expire);
}

pub fn min_expire(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.min_expire = seconds(b, d).or(h.cache.min_expire);
}

pub fn last_modified_factor(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    let Some(v) = b.one(d) else { return };
    match v.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => h.cache.last_modified_factor = Some(f),
        _ => b.error(&d.origin, format!("CacheLastModifiedFactor: '{v}' is not a non-negative number")),
    }
}

pub fn ignore_no_last_mod(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.ignore_no_last_mod = b.on_off(d).or(h.cache.ignore_no_last_mod);
}

pub fn ignore_cache_control(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.ignore_cache_control = b.on_off(d).or(h.cache.ignore_cache_control);
}

pub fn ignore_query_string(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.ignore_query_string = b.on_off(d).or(h.cache.ignore_query_string);
}

pub fn store_no_store(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.store_no_store = b.on_off(d).or(h.cache.store_no_store);
}

pub fn store_private(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.store_private = b.on_off(d).or(h.cache.store_private);
}

pub fn lock(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.lock = b.on_off(d).or(h.cache.lock);
}

pub fn lock_max_age(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.lock_max_age = seconds(b, d).or(h.cache.lock_max_age);
}

pub fn stale_on_error(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.stale_on_error = b.on_off(d).or(h.cache.stale_on_error);
}

pub fn header(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.header = b.on_off(d).or(h.cache.header);
}

pub fn detail_header(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.detail_header = b.on_off(d).or(h.cache.detail_header);
}

pub fn socache_max_size(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.socache_max_size = bytes(b, d).or(h.cache.socache_max_size);
}

pub fn max_file_size(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.cache.max_file_size = bytes(b, d).or(h.cache.max_file_size);
}

/// `CacheIgnoreHeaders None|header...`.
pub fn ignore_headers(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if d.args.is_empty() {
        return b.error(&d.origin, "CacheIgnoreHeaders takes None or header names");
    }
    let list = h.cache.ignore_headers.get_or_insert_with(Vec::new);
    for a in &d.args {
        if a.eq_ignore_ascii_case("none") {
            list.clear();
        } else {
            list.push(a.to_ascii_lowercase());
        }
    }
}

/// `CacheIgnoreURLSessionIdentifiers None|identifier...`.
pub fn ignore_url_session_identifiers(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if d.args.is_empty() {
        return b.error(&d.origin, "CacheIgnoreURLSessionIdentifiers takes None or identifiers");
    }
    let list = h.cache.ignore_url_session_identifiers.get_or_insert_with(Vec::new);
    for a in &d.args {
        if a.eq_ignore_ascii_case("none") {
            list.clear();
        } else {
            list.push(a.clone());
        }
    }
}

/// `CacheKeyBaseURL http://host[:port]`: the scheme and authority put
/// before every key in place of the request's own host.
pub fn key_base_url(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    let Some(v) = b.one(d) else { return };
    if !(v.starts_with("http://") || v.starts_with("https://")) {
        return b.error(&d.origin, format!("CacheKeyBaseURL {v}: an absolute http:// or https:// URL is expected"));
    }
    h.cache.key_base_url = Some(v.trim_end_matches('/').to_string());
}

/// `CacheRoot directory` (mod_cache_disk).
pub fn root(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(v) = b.one(d) {
        h.cache.root = Some(b.resolve(&v));
    }
}

/// Once every host's lines are merged: a host caching on disk needs a
/// CacheRoot, as Apache's mod_cache_disk refuses to start without one.
pub fn settle(b: &mut Builder, h: &HostConfig) {
    let c = &h.cache;
    if c.enable.iter().any(|e| e.kind == CacheKind::Disk) && c.root.is_none() {
        let origin = c.enable_origin.clone().unwrap_or_else(|| Origin { file: std::sync::Arc::new(PathBuf::new()), line: 0 });
        b.error(&origin, "CacheEnable disk: no CacheRoot is set (CacheRoot /var/cache/apache2/mod_cache_disk)");
    }
}
