//! RFC 9111's rules for a shared cache, with mod_cache's switches: what an
//! answer must be to be stored ([`Rules::storable`]), how long it stays
//! fresh, and which of its fields are kept ([`Rules::kept_headers`]).

use std::time::{Duration, SystemTime};

/// The admin's settings that change the rules (mod_cache's directives).
#[derive(Clone, Debug)]
pub struct Rules {
    pub default_expire: Duration,
    pub max_expire: Duration,
    pub min_expire: Duration,
    pub last_modified_factor: f64,
    pub ignore_no_last_mod: bool,
    pub store_no_store: bool,
    pub store_private: bool,
    /// Lower-case names of fields never stored (CacheIgnoreHeaders).
    pub ignore_headers: Vec<String>,
}

/// How long a storable answer is fresh, from when it is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Freshness {
    pub lifetime: Duration,
}

/// Statuses a cache may store (RFC 9110 15.1's heuristically cacheable
/// ones); Apache's mod_cache stores the same set.
const STORABLE_STATUS: &[u16] = &[200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501];

/// Fields that describe one connection (RFC 9110 7.6.1) or one request's
/// passage, never stored.
const NEVER_STORED: &[&str] = &["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authenticate", "content-length", "date", "age", "cache-status", "x-cache", "x-cache-detail"];

/// One Cache-Control directive: `name` or `name=value`.
fn directives(value: &str) -> impl Iterator<Item = (String, Option<&str>)> {
    value.split(',').map(str::trim).filter(|d| !d.is_empty()).map(|d| match d.split_once('=') {
        Some((n, v)) => (n.trim().to_ascii_lowercase(), Some(v.trim().trim_matches('"'))),
        None => (d.to_ascii_lowercase(), None),
    })
}

/// The answer's Cache-Control, read whole. Err: contradictory or
/// malformed, as RFC 9111 4.2.1 lets a cache treat as not storable.
#[derive(Default, Debug)]
struct CacheControl {
    max_age: Option<u64>,
    s_maxage: Option<u64>,
    no_store: bool,
    private: bool,
    no_cache: bool,
    public: bool,
    must_revalidate: bool,
}

fn seconds(v: Option<&str>) -> Result<u64, &'static str> {
    v.and_then(|v| v.parse::<u64>().ok()).ok_or("a malformed Cache-Control max-age or s-maxage")
}

fn cache_control(headers: &[(String, String)]) -> Result<CacheControl, &'static str> {
    let mut cc = CacheControl::default();
    for (_, value) in headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("cache-control")) {
        for (name, v) in directives(value) {
            match name.as_str() {
                "max-age" => {
                    let s = seconds(v)?;
                    if cc.max_age.is_some_and(|m| m != s) {
                        return Err("two different Cache-Control max-age values");
                    }
                    cc.max_age = Some(s);
                }
                "s-maxage" => cc.s_maxage = Some(seconds(v)?),
                "no-store" => cc.no_store = true,
                // `private="Set-Cookie"` names fields; warren does not
                // store such an answer at all rather than strip fields.
                "private" => cc.private = true,
                "no-cache" => cc.no_cache = true,
                "public" => cc.public = true,
                "must-revalidate" | "proxy-revalidate" => cc.must_revalidate = true,
                _ => {}
            }
        }
    }
    Ok(cc)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Rules {
    /// Whether an answer of `status` with `headers` to a GET for a URL
    /// (with a query string: `has_query`) may be stored, and for how long
    /// it is fresh. `authorized`: the request carried Authorization.
    /// Err says why not, for Cache-Status's detail.
    pub fn storable(&self, status: u16, headers: &[(String, String)], has_query: bool, authorized: bool, now: SystemTime) -> Result<Freshness, &'static str> {
        if !STORABLE_STATUS.contains(&status) {
            return Err("status not cacheable");
        }
        let cc = cache_control(headers)?;
        if cc.no_store && !self.store_no_store {
            return Err("Cache-Control: no-store");
        }
        if cc.private && !self.store_private {
            return Err("Cache-Control: private");
        }
        // RFC 9111 3.5: an answer to an authorized request only with public, s-maxage or must-revalidate.
        if authorized && !(cc.public || cc.s_maxage.is_some() || cc.must_revalidate) {
            return Err("the request carried Authorization");
        }
        if header(headers, "set-cookie").is_some() && !self.ignore_headers.iter().any(|h| h == "set-cookie") {
            return Err("Set-Cookie (CacheIgnoreHeaders Set-Cookie would store the answer without it)");
        }
        // In any of the Vary fields: a second one counts as much as the first.
        if vary_names(headers).iter().any(|f| f == "*") {
            return Err("Vary: *");
        }
        let explicit = if cc.no_cache {
            Some(0)
        } else if let Some(s) = cc.s_maxage.or(cc.max_age) {
            Some(s)
        } else if let Some(expires) = header(headers, "expires") {
            // An invalid Expires means already expired (RFC 9111 5.3).
            let date = header(headers, "date").and_then(|d| httpdate::parse_http_date(d).ok()).unwrap_or(now);
            Some(httpdate::parse_http_date(expires).map_or(0, |e| unix(e).saturating_sub(unix(date))))
        } else {
            None
        };
        let has_validator = header(headers, "etag").is_some() || header(headers, "last-modified").is_some();
        let lifetime = match explicit {
            Some(s) => Duration::from_secs(s).min(self.max_expire),
            None => {
                // Heuristics only where allowed: not for a query string
                // (RFC 9111 4.2.2's caution, Apache's rule).
                if has_query {
                    return Err("a query string and no explicit lifetime");
                }
                let last_modified = header(headers, "last-modified").and_then(|v| httpdate::parse_http_date(v).ok());
                let guessed = match last_modified {
                    Some(lm) => {
                        let since = unix(now).saturating_sub(unix(lm));
                        Duration::from_secs((since as f64 * self.last_modified_factor) as u64)
                    }
                    None if self.ignore_no_last_mod => self.default_expire,
                    None if has_validator => self.default_expire,
                    None => return Err("no Last-Modified, ETag nor explicit lifetime (CacheIgnoreNoLastMod On stores it)"),
                };
                guessed.clamp(self.min_expire, self.max_expire.max(self.min_expire))
            }
        };
        // A stale answer is worth storing only if it can be revalidated.
        if lifetime.is_zero() && !has_validator {
            return Err("already stale and no validator to revalidate it");
        }
        Ok(Freshness { lifetime })
    }

    /// The fields of an answer to store: all but those of one connection
    /// and those the admin ignores.
    pub fn kept_headers(&self, headers: &[(String, String)]) -> Vec<(String, String)> {
        headers
            .iter()
            .filter(|(n, _)| {
                let n = n.to_ascii_lowercase();
                !NEVER_STORED.contains(&n.as_str()) && !self.ignore_headers.contains(&n)
            })
            .cloned()
            .collect()
    }
}

/// Whether the request asks not to be answered from a cache
/// (`Cache-Control: no-cache` or `max-age=0`, `Pragma: no-cache`), which
/// CacheIgnoreCacheControl overrides.
pub fn request_refuses_stored(cache_control: Option<&str>, pragma: Option<&str>) -> bool {
    cache_control.is_some_and(|v| directives(v).any(|(n, v)| n == "no-cache" || n == "no-store" || (n == "max-age" && v == Some("0")))) || pragma.is_some_and(|p| p.to_ascii_lowercase().contains("no-cache"))
}

/// The field names of a Vary value, lower case.
pub fn vary_names(headers: &[(String, String)]) -> Vec<String> {
    let mut names: Vec<String> = headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("vary")).flat_map(|(_, v)| v.split(',')).map(|f| f.trim().to_ascii_lowercase()).filter(|f| !f.is_empty()).collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules { default_expire: Duration::from_secs(3600), max_expire: Duration::from_secs(86400), min_expire: Duration::ZERO, last_modified_factor: 0.1, ignore_no_last_mod: false, store_no_store: false, store_private: false, ignore_headers: Vec::new() }
    }

    fn h(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    fn verdict(r: &Rules, status: u16, fields: &[(&str, &str)]) -> Result<u64, &'static str> {
        r.storable(status, &h(fields), false, false, SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)).map(|f| f.lifetime.as_secs())
    }

    #[test]
    fn explicit_lifetimes_win_in_rfc_order_within_max_expire() {
        let r = rules();
        assert_eq!(verdict(&r, 200, &[("Cache-Control", "max-age=60")]), Ok(60));
        assert_eq!(verdict(&r, 200, &[("Cache-Control", "max-age=60, s-maxage=30")]), Ok(30));
        assert_eq!(verdict(&r, 200, &[("Cache-Control", "max-age=999999")]), Ok(86400));
        assert_eq!(verdict(&r, 200, &[("Date", "Mon, 12 Jan 1970 13:46:40 GMT"), ("Expires", "Mon, 12 Jan 1970 13:48:20 GMT")]), Ok(100));
    }

    #[test]
    fn what_is_not_stored() {
        let r = rules();
        assert!(verdict(&r, 200, &[("Cache-Control", "no-store, max-age=60")]).is_err());
        assert!(verdict(&r, 200, &[("Cache-Control", "private, max-age=60")]).is_err());
        assert!(verdict(&r, 200, &[("Cache-Control", "max-age=60"), ("Set-Cookie", "a=b")]).is_err());
        assert!(verdict(&r, 500, &[("Cache-Control", "max-age=60")]).is_err());
        assert!(verdict(&r, 200, &[("Cache-Control", "max-age=abc")]).is_err());
        assert!(verdict(&r, 200, &[("Cache-Control", "max-age=5, max-age=7")]).is_err());
        assert!(verdict(&r, 200, &[]).is_err(), "no validator nor lifetime");
        assert!(verdict(&r, 200, &[("Cache-Control", "max-age=60"), ("Vary", "*")]).is_err());
        let authorized = r.storable(200, &h(&[("Cache-Control", "max-age=60")]), false, true, SystemTime::now());
        assert!(authorized.is_err());
        assert!(r.storable(200, &h(&[("Cache-Control", "public, max-age=60")]), false, true, SystemTime::now()).is_ok());
    }

    #[test]
    fn the_admin_may_store_more() {
        let r = Rules { store_no_store: true, store_private: true, ignore_headers: vec!["set-cookie".into()], ..rules() };
        assert_eq!(verdict(&r, 200, &[("Cache-Control", "no-store, private, max-age=60"), ("Set-Cookie", "a=b")]), Ok(60));
        assert_eq!(r.kept_headers(&h(&[("Set-Cookie", "a=b"), ("X-A", "1"), ("Connection", "close")])), h(&[("X-A", "1")]));
        let r = Rules { ignore_no_last_mod: true, ..rules() };
        assert_eq!(verdict(&r, 200, &[]), Ok(3600));
    }

    #[test]
    fn heuristic_freshness_from_last_modified_not_for_queries() {
        let r = rules();
        // 1,000,000 s since the epoch, Last-Modified at 0: a tenth of it.
        assert_eq!(verdict(&r, 200, &[("Last-Modified", "Thu, 01 Jan 1970 00:00:00 GMT")]), Ok(86400));
        assert_eq!(verdict(&r, 200, &[("Last-Modified", "Mon, 12 Jan 1970 13:30:00 GMT")]), Ok(100));
        assert!(r.storable(200, &h(&[("Last-Modified", "Thu, 01 Jan 1970 00:00:00 GMT")]), true, false, SystemTime::now()).is_err());
    }

    #[test]
    fn requests_that_refuse_stored_answers() {
        assert!(request_refuses_stored(Some("no-cache"), None));
        assert!(request_refuses_stored(Some("max-age=0"), None));
        assert!(request_refuses_stored(None, Some("no-cache")));
        assert!(!request_refuses_stored(Some("max-age=60"), None));
    }
}
