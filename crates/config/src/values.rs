//! Value parsers: one directive argument (or a few) -> a typed value, or a
//! message saying what is wrong with it. They know nothing of where the
//! directive stands; the caller adds file and line.
//!
//! These are the parsers the types need too (durations, sizes, FastCGI
//! URLs, networks), so they import no type of the crate but
//! [`backend`](crate::backend)'s; those only directives use (`Options`,
//! `Require`, ProxyPass routes, `Listen`) are in
//! `directives/values.rs`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::backend::FcgiAddr;

/// How a time value may be written: a whole number (or, with `fractions`,
/// a decimal one), after a `+` where `plus` allows one, and then one of
/// `units`, or no unit for seconds. Each
/// syntax is the one its directives' origin uses, so that a configuration
/// brought from Apache, php-fpm or an ab/siege command line reads as there.
pub struct DurationSyntax {
    pub units: &'static [(&'static str, Duration)],
    pub fractions: bool,
    pub plus: bool,
}

/// Apache's `KeepAliveTimeout`: seconds, or `NNNms` (its number parsing
/// takes a `+`).
pub const SECONDS_OR_MILLIS: DurationSyntax = DurationSyntax { units: &[("ms", Duration::from_millis(1))], fractions: false, plus: true };

/// php-fpm's time values: seconds, or with s, m, h or d.
pub const PHP_FPM_TIME: DurationSyntax = DurationSyntax {
    units: &[("s", Duration::from_secs(1)), ("m", Duration::from_secs(60)), ("h", Duration::from_secs(3600)), ("d", Duration::from_secs(86400))],
    fractions: false,
    plus: false,
};

/// A time value written in `syntax`; None if it is not one (or too long to
/// hold).
pub fn parse_duration(v: &str, syntax: &DurationSyntax) -> Option<Duration> {
    let sign = usize::from(syntax.plus && v.starts_with('+'));
    let is_number = |c: char| c.is_ascii_digit() || (syntax.fractions && c == '.');
    let end = v[sign..].find(|c: char| !is_number(c)).map_or(v.len(), |i| sign + i);
    let (number, unit) = v.split_at(end);
    let unit = match unit {
        "" => Duration::from_secs(1),
        suffix => syntax.units.iter().find(|(name, _)| *name == suffix)?.1,
    };
    if syntax.fractions {
        let n: f64 = number.parse().ok()?;
        Duration::try_from_secs_f64(n * unit.as_secs_f64()).ok()
    } else {
        let nanos = u128::from(number.parse::<u64>().ok()?) * unit.as_nanos();
        let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
        Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
    }
}

/// A size as php.ini and php-fpm write one: bytes, or a whole number with
/// K, M or G (powers of 1024, either case); None if it is not one or
/// overflows.
pub fn parse_size(v: &str) -> Option<u64> {
    let (number, shift) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 10),
        (i, 'm' | 'M') => (&v[..i], 20),
        (i, 'g' | 'G') => (&v[..i], 30),
        _ => (v, 0),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// `unix:/path|fcgi://name/rest` or `fcgi://host:port/rest`: the backend and
/// the path part (`/rest`, possibly empty).
pub fn parse_fcgi_url(url: &str) -> Result<(FcgiAddr, String), String> {
    if let Some(rest) = url.strip_prefix("unix:") {
        let (sock, fcgi) = rest.split_once('|').ok_or("a unix socket needs `|fcgi://localhost` after its path")?;
        let after = fcgi.strip_prefix("fcgi://").ok_or("only fcgi:// backends are supported")?;
        if !sock.starts_with('/') {
            return Err(format!("unix socket path {sock} must be absolute"));
        }
        let path = after.find('/').map_or("", |i| &after[i..]);
        return Ok((FcgiAddr::Unix(PathBuf::from(sock)), path.to_string()));
    }
    let after = url.strip_prefix("fcgi://").ok_or("only fcgi:// and unix:...|fcgi:// backends are supported")?;
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.trim_start_matches('[').trim_end_matches(']'), p.parse::<u16>().map_err(|_| format!("bad port in {authority}"))?)
        }
        _ => (authority, 8000),
    };
    if host.is_empty() {
        return Err(format!("no host in fcgi://{after}"));
    }
    Ok((FcgiAddr::Tcp { host: host.to_string(), port }, path.to_string()))
}

/// `On` or `Off`, either case.
pub(crate) fn on_off_value(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// Whether `ip` is in the network `net`/`len` (an IPv4-mapped IPv6 address as its IPv4 one).
pub fn ip_in(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len as u32) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V4(_)) => a.to_ipv4_mapped().is_some_and(|v4| ip_in(IpAddr::V4(v4), net, len)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128M"), Some(128 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("512k"), Some(512 << 10));
        assert_eq!(parse_size("1000"), Some(1000));
        for bad in ["", "M", "1.5G", "-1M", "12T", "99999999999999999999G", " 1M"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_in_each_syntax() {
        let secs = Duration::from_secs;
        assert_eq!(parse_duration("10", &PHP_FPM_TIME), Some(secs(10)));
        assert_eq!(parse_duration("10s", &PHP_FPM_TIME), Some(secs(10)));
        assert_eq!(parse_duration("2m", &PHP_FPM_TIME), Some(secs(120)));
        assert_eq!(parse_duration("1h", &PHP_FPM_TIME), Some(secs(3600)));
        assert_eq!(parse_duration("1d", &PHP_FPM_TIME), Some(secs(86400)));
        assert_eq!(parse_duration("ten", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("5x", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("+5", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("1.5m", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("18446744073709551615d", &PHP_FPM_TIME), None);
        assert_eq!(parse_duration("250ms", &SECONDS_OR_MILLIS), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("+5", &SECONDS_OR_MILLIS), Some(secs(5)));
        assert_eq!(parse_duration("5s", &SECONDS_OR_MILLIS), None);
        assert_eq!(parse_duration("ms", &SECONDS_OR_MILLIS), None);
        const DECIMAL: DurationSyntax = DurationSyntax { units: &[("m", Duration::from_secs(60))], fractions: true, plus: false };
        let decimal = DECIMAL;
        assert_eq!(parse_duration("1.5m", &decimal), Some(secs(90)));
        assert_eq!(parse_duration(".", &decimal), None);
        assert_eq!(parse_duration(&"9".repeat(400), &decimal), None);
    }
}
