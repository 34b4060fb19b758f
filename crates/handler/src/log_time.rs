//! Dates as the logs write them, in UTC: the access log's `%t`, the error
//! log's line prefix, syslog's timestamp and RewriteLog's. Apart from the
//! logs themselves so that each log format can use them without the error
//! and access logs, which use those formats, being imported back.

use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
pub(crate) const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// (year, month 1-12, day 1-31) of a count of days since 1970-01-01
/// (H. Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

pub(crate) struct Civil {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) weekday: usize,
    pub(crate) hour: u64,
    pub(crate) min: u64,
    pub(crate) sec: u64,
    pub(crate) micros: u32,
}

pub(crate) fn civil(t: SystemTime) -> Civil {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let (year, month, day) = civil_from_days(days);
    let rem = secs % 86_400;
    Civil { year, month, day, weekday: (days % 7) as usize, hour: rem / 3600, min: rem / 60 % 60, sec: rem % 60, micros: d.subsec_micros() }
}

/// `22/Nov/2026:08:58:27 +0000` (warren logs in UTC).
pub fn clf_time(t: SystemTime) -> String {
    let c = civil(t);
    format!("{:02}/{}/{}:{:02}:{:02}:{:02} +0000", c.day, MONTHS[c.month as usize - 1], c.year, c.hour, c.min, c.sec)
}

/// `Sun Nov 22 08:58:27.123456 2026`, as Apache's error log.
pub fn error_log_time(t: SystemTime) -> String {
    let c = civil(t);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02}.{:06} {}",
        DAYS[c.weekday],
        MONTHS[c.month as usize - 1],
        c.day,
        c.hour,
        c.min,
        c.sec,
        c.micros,
        c.year
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_337_907) + Duration::from_micros(42);
        assert_eq!(clf_time(t), "22/Nov/2026:08:58:27 +0000");
        assert_eq!(error_log_time(t), "Sun Nov 22 08:58:27.000042 2026");
        assert_eq!(clf_time(UNIX_EPOCH + Duration::from_secs(951_782_400)), "29/Feb/2000:00:00:00 +0000");
    }
}
