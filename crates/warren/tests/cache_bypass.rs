//! The response cache and the request's environment, under each MPM with
//! Debian's php-fpm: a request the cache is told to leave alone (the
//! `no-cache` variable of a logged-in cookie, Authorization, CacheDisable)
//! says so in `Cache-Status: ...; fwd=bypass` (RFC 9211: every answer that
//! passed the cache), whether a static file or PHP answers it; and a hit
//! is not compressed for a client whose environment says `no-gzip`, as
//! mod_deflate would not compress the answer itself.

mod cache_site;
mod common;

use cache_site::*;
use common::*;

fn bypass(r: &Resp) -> bool {
    cache_status(r).starts_with("warren; fwd=bypass")
}

fn bypassed_requests_say_so(mpm: &str) {
    let (_fpm, s) = start(mpm, "SetEnvIf Cookie \"wordpress_logged_in\" no-cache\nCacheDisable /c.php/expires\nCacheDetailHeader On\n");
    let logged_in = "Cookie: wordpress_logged_in_abc=admin\r\n";
    // PHP's answer (relayed from php-fpm) and a static file's.
    for path in ["/c.php/maxage", "/a.txt"] {
        let r = s.get_with(path, logged_in);
        assert_eq!(r.status, 200, "{path}");
        assert!(bypass(&r), "{path}: {}", cache_status(&r));
        assert!(cache_status(&r).contains("no-cache variable"), "{path}: {}", cache_status(&r));
        assert_eq!(r.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("cache-status")).count(), 1, "{path}");
        // As Apache's mod_cache says it (CacheHeader and CacheDetailHeader On).
        assert_eq!(r.header("x-cache"), Some("MISS from localhost"), "{path}");
        assert_eq!(r.header("x-cache-detail"), Some("\"environment variable 'no-cache' is set\" from localhost"), "{path}");
    }
    let with_auth = s.get_with("/c.php/maxage", "Authorization: Basic dTpw\r\n");
    assert!(bypass(&with_auth) && cache_status(&with_auth).contains("Authorization"), "{}", cache_status(&with_auth));
    assert_eq!(with_auth.header("x-cache"), None);
    // CacheDisable: not stored, and said.
    for _ in 0..2 {
        let r = s.get("/c.php/expires");
        assert!(bypass(&r) && cache_status(&r).contains("CacheDisable"), "{}", cache_status(&r));
    }
    assert_eq!(runs(&s, "expires"), 2);
    // The anonymous visitor's requests went through the cache as before.
    let miss = s.get("/c.php/maxage");
    assert!(cache_status(&miss).contains("fwd=uri-miss; stored"), "{}", cache_status(&miss));
    let hit = s.get("/c.php/maxage");
    assert!(cache_status(&hit).starts_with("warren; hit"), "{}", cache_status(&hit));
}

/// The first request (a miss) stores the answer; then for `headers`
/// (its User-Agent) a hit says whether it is gzip-encoded, and so does the
/// same answer made by PHP for that client (`/c.php/etag` is stored,
/// `CacheDisable`d `/u/c.php/etag` is not: each run of it is compressed or
/// not by mod_deflate itself).
fn coding_of_hit_and_of_php(s: &Server, headers: &str) -> (Option<String>, Option<String>) {
    let hit = s.get_with("/c.php/etag", headers);
    assert!(cache_status(&hit).starts_with("warren; hit"), "{}", cache_status(&hit));
    let uncached = s.get_with("/u/c.php/etag", headers);
    assert!(bypass(&uncached), "{}", cache_status(&uncached));
    (hit.header("content-encoding").map(str::to_string), uncached.header("content-encoding").map(str::to_string))
}

fn hits_are_not_compressed_for_no_gzip(mpm: &str, extra: &str) {
    let conf = format!("AddOutputFilterByType DEFLATE text/html\nCacheDisable /u/\n{extra}");
    let (_fpm, s) = start_with(mpm, &conf, &[("htdocs/u/c.php", &CASES_PHP.replace("__DIR__ . \"/../", "__DIR__ . \"/../../"))]);
    let gzip = "Accept-Encoding: gzip\r\n";
    let stored = s.get_with("/c.php/etag", &format!("{gzip}User-Agent: Mozilla/5.0\r\n"));
    assert!(cache_status(&stored).contains("stored"), "{}", cache_status(&stored));
    let modern = coding_of_hit_and_of_php(&s, &format!("{gzip}User-Agent: Mozilla/5.0\r\n"));
    assert_eq!(modern, (Some("gzip".into()), Some("gzip".into())));
    let old = coding_of_hit_and_of_php(&s, &format!("{gzip}User-Agent: OldBrowser/1.0\r\n"));
    assert_eq!(old, (None, None), "a hit for a no-gzip client is sent as mod_deflate would send it");
    let hit = s.get_with("/c.php/etag", &format!("{gzip}User-Agent: OldBrowser/1.0\r\n"));
    assert!(hit.text().contains("compressible compressible"), "{}", hit.text());
    assert_eq!(runs(&s, "etag"), 3);
}

/// Debian's `BrowserMatch ... no-gzip` lines stand in the server config,
/// which runs before the quick handler's lookup.
fn a_hosts_browser_match_no_gzip_is_honoured_by_hits(mpm: &str) {
    hits_are_not_compressed_for_no_gzip(mpm, "BrowserMatch ^OldBrowser no-gzip\n");
}

/// Under CacheQuickHandler Off the hit comes after the place's own lines:
/// a `<Location>`'s SetEnvIf counts too.
fn a_places_no_gzip_is_honoured_by_hits_after_access(mpm: &str) {
    hits_are_not_compressed_for_no_gzip(mpm, "CacheQuickHandler Off\n<Location />\n    SetEnvIf User-Agent ^OldBrowser no-gzip\n</Location>\n");
}

each_mpm!(bypassed_requests_say_so, a_hosts_browser_match_no_gzip_is_honoured_by_hits, a_places_no_gzip_is_honoured_by_hits_after_access);
