//! mod_expires: `Expires` and `Cache-Control: max-age` from the rule for
//! the response's type (`ExpiresByType`, exact type then `major/*`) or
//! `ExpiresDefault`. As Apache: nothing for error statuses (4xx, 5xx), nor
//! when the response already has an Expires (an application's own); a
//! modification-based rule needs the modification time of what answered
//! (a static file's Last-Modified, or the script's file, as Apache's
//! `r->finfo`), and a time already past is the request's time (max-age=0,
//! never a negative one).

use std::time::{Duration, SystemTime};

use warren_config::expires::{ExpiresBase, ExpiresRule};

use super::{ExpiresConfig, Timing};
use crate::{HeaderName, Response};

pub fn apply(resp: &mut Response, conf: &ExpiresConfig, timing: Timing) {
    if resp.status >= 400 || has(resp, "Expires") {
        return;
    }
    let Some(rule) = rule_for(conf, header(resp, "Content-Type")) else { return };
    let base = match rule.base {
        ExpiresBase::Access => timing.received,
        ExpiresBase::Modification => match modified(resp) {
            Some(t) => t,
            None => return,
        },
    };
    // An HTTP date ends with year 9999: a time past it (a huge rule, an
    // application's odd Last-Modified) is not sent rather than overflowed.
    let last_date = SystemTime::UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    let Some(expires) = base.checked_add(Duration::from_secs(rule.seconds)).filter(|t| *t <= last_date) else { return };
    let expires = expires.max(timing.received);
    let max_age = expires.duration_since(timing.received).unwrap_or_default().as_secs();
    let max_age = format!("max-age={max_age}");
    match resp.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("Cache-Control")) {
        Some((_, v)) => {
            v.push_str(", ");
            v.push_str(&max_age);
        }
        None => resp.headers.push((HeaderName::Borrowed("Cache-Control"), max_age)),
    }
    resp.headers.push((HeaderName::Borrowed("Expires"), httpdate::fmt_http_date(round_down(expires))));
}

/// The modification time of what answered: its Last-Modified (a static
/// file's), else the file it was mapped to (a script's, as Apache's
/// `r->finfo`); None for answers that have neither.
fn modified(resp: &Response) -> Option<SystemTime> {
    if let Some(t) = header(resp, "Last-Modified").and_then(|v| httpdate::parse_http_date(v).ok()) {
        return Some(t);
    }
    std::fs::metadata(resp.filename.as_deref()?).ok()?.modified().ok()
}

fn rule_for(conf: &ExpiresConfig, content_type: Option<&str>) -> Option<ExpiresRule> {
    let found = content_type.and_then(|t| {
        let t = t.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let major = t.split('/').next().map(|m| format!("{m}/*"));
        let by = |wanted: &str| conf.by_type.iter().rev().find(|(k, _)| k == wanted).map(|(_, r)| *r);
        by(&t).or_else(|| major.as_deref().and_then(by))
    });
    found.or(conf.default)
}

fn round_down(t: SystemTime) -> SystemTime {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn header<'r>(resp: &'r Response, name: &str) -> Option<&'r str> {
    resp.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

fn has(resp: &Response, name: &str) -> bool {
    header(resp, name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn conf() -> ExpiresConfig {
        let r = |s: &str| ExpiresRule::parse(s).unwrap();
        ExpiresConfig { active: true, by_type: vec![("text/css".into(), r("A3600")), ("image/*".into(), r("M60"))], default: Some(r("access plus 10 seconds")) }
    }
    fn timing() -> Timing {
        Timing { received: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000), start: Instant::now() }
    }
    fn get<'r>(r: &'r Response, n: &str) -> Option<&'r str> {
        header(r, n)
    }

    #[test]
    fn by_type_access_based() {
        let mut r = Response::new(200, 0).header("Content-Type", "text/css; charset=utf-8");
        apply(&mut r, &conf(), timing());
        assert_eq!(get(&r, "Cache-Control"), Some("max-age=3600"));
        assert_eq!(get(&r, "Expires"), Some(httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(1_003_600)).as_str()));
    }

    #[test]
    fn modification_based_needs_last_modified() {
        let mut r = Response::new(200, 0).header("Content-Type", "image/png");
        apply(&mut r, &conf(), timing());
        assert!(get(&r, "Expires").is_none() && get(&r, "Cache-Control").is_none());
        let modified = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 - 10));
        let mut r = Response::new(200, 0).header("Content-Type", "image/png").header("Last-Modified", modified);
        apply(&mut r, &conf(), timing());
        assert_eq!(get(&r, "Cache-Control"), Some("max-age=50"));
        // Already past: now.
        let old = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(5));
        let mut r = Response::new(304, 0).header("Content-Type", "image/png").header("Last-Modified", old).header("Cache-Control", "public");
        apply(&mut r, &conf(), timing());
        assert_eq!(get(&r, "Cache-Control"), Some("public, max-age=0"));
    }

    #[test]
    fn times_past_year_9999_are_not_sent() {
        let conf = ExpiresConfig { active: true, by_type: Vec::new(), default: Some(ExpiresRule::parse(&format!("A{}", u64::MAX)).unwrap()) };
        let mut r = Response::new(200, 0).header("Content-Type", "text/html");
        apply(&mut r, &conf, timing());
        assert!(get(&r, "Expires").is_none());
    }

    #[test]
    fn default_errors_and_existing_expires() {
        let mut r = Response::new(200, 0).header("Content-Type", "text/html");
        apply(&mut r, &conf(), timing());
        assert_eq!(get(&r, "Cache-Control"), Some("max-age=10"));
        let mut r = Response::new(404, 0).header("Content-Type", "text/html");
        apply(&mut r, &conf(), timing());
        assert!(get(&r, "Cache-Control").is_none());
        let mut r = Response::new(200, 0).header("Content-Type", "text/css").header("Expires", "0");
        apply(&mut r, &conf(), timing());
        assert!(get(&r, "Cache-Control").is_none());
    }
}
