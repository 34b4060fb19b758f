//! mod_cache's configuration (with mod_cache_disk's and mod_cache_socache's
//! lines): [`CacheDirectives`] is what one host (main server or
//! `<VirtualHost>`) wrote, each unset value taken from the main server's
//! ([`CacheDirectives::inherit`]); the defaults are Apache's, given by the
//! accessors. The cache itself is the `warren-cache` crate; the handler
//! looks answers up and stores them (handler/src/response_cache.rs).
//!
//! `CacheEnable` stands in the server config and `<VirtualHost>` with a URL
//! prefix, as Apache's `CacheEnable disk /path`; inside `<Location>` it is
//! refused (the table's contexts) so that no prefix is silently widened.
//!
//! The directives filling these in are in
//! `directives/cache.rs`.

use std::path::PathBuf;
use std::time::Duration;

use crate::parse::Origin;

/// Where a `CacheEnable` line keeps its answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheKind {
    /// mod_cache_disk: files under CacheRoot.
    Disk,
    /// mod_cache_socache: shared memory (files on the tmpfs /dev/shm),
    /// entries no larger than CacheSocacheMaxSize.
    Socache,
}

/// One `CacheEnable` line.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheEnable {
    pub kind: CacheKind,
    /// The URL-path prefix (`/` for the whole host).
    pub prefix: String,
}

/// A host's mod_cache lines, unset values None (see the accessors for
/// Apache's defaults).
#[derive(Clone, Debug, Default)]
pub struct CacheDirectives {
    pub enable: Vec<CacheEnable>,
    pub disable: Vec<String>,
    pub default_expire: Option<Duration>,
    pub max_expire: Option<Duration>,
    pub min_expire: Option<Duration>,
    pub last_modified_factor: Option<f64>,
    pub ignore_no_last_mod: Option<bool>,
    pub ignore_cache_control: Option<bool>,
    /// CacheIgnoreHeaders: names (lower case) never stored; `None` clears.
    pub ignore_headers: Option<Vec<String>>,
    pub ignore_query_string: Option<bool>,
    pub ignore_url_session_identifiers: Option<Vec<String>>,
    pub store_no_store: Option<bool>,
    pub store_private: Option<bool>,
    pub lock: Option<bool>,
    pub lock_max_age: Option<Duration>,
    pub stale_on_error: Option<bool>,
    pub header: Option<bool>,
    pub detail_header: Option<bool>,
    pub key_base_url: Option<String>,
    pub socache_max_size: Option<u64>,
    pub max_file_size: Option<u64>,
    pub root: Option<PathBuf>,
    /// CacheQuickHandler: On (None, the default) looks stored answers up
    /// before the URL is mapped; Off after its access checks.
    pub quick_handler: Option<bool>,
    /// Where the host's first `CacheEnable disk` was written, for the
    /// error when CacheRoot is missing.
    pub enable_origin: Option<Origin>,
}

macro_rules! inherit {
    ($own:expr, $main:expr, $($field:ident),*) => {
        $( if $own.$field.is_none() { $own.$field.clone_from(&$main.$field); } )*
    };
}

impl CacheDirectives {
    /// A virtual host takes the main server's lines it did not write; its
    /// own CacheEnable and CacheDisable prefixes come first.
    pub fn inherit(&mut self, main: &CacheDirectives) {
        self.enable.extend(main.enable.iter().cloned());
        self.disable.extend(main.disable.iter().cloned());
        inherit!(self, main, default_expire, max_expire, min_expire, last_modified_factor, ignore_no_last_mod, ignore_cache_control, ignore_headers, ignore_query_string, ignore_url_session_identifiers, store_no_store, store_private, lock, lock_max_age, stale_on_error, header, detail_header, key_base_url, socache_max_size, max_file_size, root, quick_handler, enable_origin);
    }

    /// The kind of store caching `url`: the longest CacheEnable prefix
    /// matching it, unless a CacheDisable prefix matches.
    pub fn enabled_for(&self, url: &[u8]) -> Option<CacheKind> {
        if self.disable.iter().any(|p| prefix_matches(p, url)) {
            return None;
        }
        self.enable.iter().filter(|e| prefix_matches(&e.prefix, url)).max_by_key(|e| e.prefix.len()).map(|e| e.kind)
    }

    /// Whether `url` is under a CacheEnable prefix and a CacheDisable one:
    /// the cache was told to leave it alone (RFC 9211's `fwd=bypass`).
    pub fn disabled_for(&self, url: &[u8]) -> bool {
        self.disable.iter().any(|p| prefix_matches(p, url)) && self.enable.iter().any(|e| prefix_matches(&e.prefix, url))
    }

    pub fn default_expire(&self) -> Duration {
        self.default_expire.unwrap_or(Duration::from_secs(3600))
    }
    pub fn max_expire(&self) -> Duration {
        self.max_expire.unwrap_or(Duration::from_secs(86400))
    }
    pub fn min_expire(&self) -> Duration {
        self.min_expire.unwrap_or(Duration::ZERO)
    }
    pub fn last_modified_factor(&self) -> f64 {
        self.last_modified_factor.unwrap_or(0.1)
    }
    /// Apache's default CacheIgnoreHeaders is None; warren never stores
    /// hop-by-hop fields nor Set-Cookie's value on its own (see the cache crate).
    pub fn ignore_headers(&self) -> &[String] {
        self.ignore_headers.as_deref().unwrap_or(&[])
    }
    /// CacheQuickHandler (Apache's default: On).
    pub fn quick_handler(&self) -> bool {
        self.quick_handler.unwrap_or(true)
    }
    pub fn lock(&self) -> bool {
        self.lock.unwrap_or(false)
    }
    pub fn lock_max_age(&self) -> Duration {
        self.lock_max_age.unwrap_or(Duration::from_secs(5))
    }
    pub fn stale_on_error(&self) -> bool {
        self.stale_on_error.unwrap_or(true)
    }
    pub fn socache_max_size(&self) -> u64 {
        self.socache_max_size.unwrap_or(102_400)
    }
    pub fn max_file_size(&self) -> u64 {
        self.max_file_size.unwrap_or(1_000_000)
    }
}

/// Whether the URL-path prefix `prefix` covers `url`: whole segments only,
/// so `/a` covers `/a` and `/a/b` but not `/ab`.
fn prefix_matches(prefix: &str, url: &[u8]) -> bool {
    let p = prefix.trim_end_matches('/').as_bytes();
    url.starts_with(p) && (url.len() == p.len() || url[p.len()] == b'/' || p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_cover_whole_segments() {
        assert!(prefix_matches("/", b"/x"));
        assert!(prefix_matches("/a", b"/a"));
        assert!(prefix_matches("/a/", b"/a/b"));
        assert!(!prefix_matches("/a", b"/ab"));
    }

    #[test]
    fn disable_wins_and_the_longest_enable_chooses_the_kind() {
        let c = CacheDirectives {
            enable: vec![CacheEnable { kind: CacheKind::Disk, prefix: "/".into() }, CacheEnable { kind: CacheKind::Socache, prefix: "/small".into() }],
            disable: vec!["/admin".into()],
            ..Default::default()
        };
        assert_eq!(c.enabled_for(b"/x"), Some(CacheKind::Disk));
        assert_eq!(c.enabled_for(b"/small/y"), Some(CacheKind::Socache));
        assert_eq!(c.enabled_for(b"/admin/z"), None);
    }
}
