//! Bounds on one match, so that a pattern a site owner wrote (in an
//! `.htaccess`) cannot spend seconds of a thread on one request: PCRE2's
//! match limit (backtracking steps: the JIT honours only this one) and
//! depth limit (nested backtracking, for the interpreter), low enough that
//! a catastrophic pattern (`^(a|a?)+$`) gives up in about a millisecond and
//! high enough that the rules of WordPress, Drupal or Nextcloud never meet
//! them on a URL-sized subject.
//!
//! The `pcre2` crate does not expose PCRE2's match context, so the limits
//! go in front of the pattern as PCRE2's own start-of-pattern settings
//! (`(*LIMIT_MATCH=n)`), which can only lower the library's defaults. A
//! pattern that sets a limit itself would replace ours (the last setting
//! wins), so one is refused.
//!
//! A match that hits a limit is no match (as in Apache), and is told once
//! per pattern to the reporter the server installs ([`set_reporter`]); a
//! site owner can make new patterns at will (an `.htaccess` rewritten before
//! each request), so the reports are metered too: a burst, then a few a
//! minute, and a line saying how many were left out.

use std::sync::{Mutex, RwLock};
use std::time::Instant;

/// Backtracking steps for a JIT-compiled pattern: about a millisecond.
pub const JIT_MATCH_LIMIT: u32 = 1_000_000;
/// The interpreter takes about ten times as long per step.
pub const INTERPRETED_MATCH_LIMIT: u32 = 100_000;
/// Nested backtracking frames for the interpreter (about 1.5 MB of heap):
/// a repeated group over a few thousand characters. The JIT is bounded by
/// its own stack (PCRE2's default 32 KB, about as deep) instead.
pub const DEPTH_LIMIT: u32 = 10_000;

/// The start-of-pattern settings that bound a pattern, for the JIT or the interpreter.
pub(crate) fn prefix(jit: bool) -> String {
    let matches = if jit { JIT_MATCH_LIMIT } else { INTERPRETED_MATCH_LIMIT };
    format!("(*LIMIT_MATCH={matches})(*LIMIT_DEPTH={DEPTH_LIMIT})")
}

/// The limit `pattern` sets itself in its start-of-pattern items
/// (`(*LIMIT_MATCH=...)`, `(*LIMIT_DEPTH=...)`, `(*LIMIT_RECURSION=...)`,
/// `(*LIMIT_HEAP=...)`), if it sets one.
pub(crate) fn own_limit(pattern: &str) -> Option<&str> {
    let mut rest = pattern;
    while let Some(item) = rest.strip_prefix("(*") {
        let end = item.find(')')?;
        let name = &item[..end];
        if name.starts_with("LIMIT_") {
            return Some(name);
        }
        rest = &item[end + 1..];
    }
    None
}

type Reporter = Box<dyn Fn(&str) + Send + Sync>;

static REPORTER: RwLock<Option<Reporter>> = RwLock::new(None);

/// Where a pattern that hits its limit is told (once per pattern): the
/// server's error log. Replaces the one installed before (a new
/// configuration's log at a graceful restart).
pub fn set_reporter(report: impl Fn(&str) + Send + Sync + 'static) {
    *REPORTER.write().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(report));
}

/// Reports told at once before the meter holds them back: a rule set
/// written to be slow (a hundred conditions) is told whole.
const REPORT_BURST: f64 = 200.0;
/// Then this many a second (twelve a minute).
const REPORTS_PER_SEC: f64 = 0.2;

struct Meter {
    tokens: f64,
    at: Option<Instant>,
    held_back: u64,
}

static METER: Mutex<Meter> = Mutex::new(Meter { tokens: REPORT_BURST, at: None, held_back: 0 });

impl Meter {
    /// Whether a report may go now, and how many were held back before it.
    fn take(&mut self, now: Instant) -> Option<u64> {
        if let Some(at) = self.at {
            self.tokens = (self.tokens + now.duration_since(at).as_secs_f64() * REPORTS_PER_SEC).min(REPORT_BURST);
        }
        self.at = Some(now);
        if self.tokens < 1.0 {
            self.held_back += 1;
            return None;
        }
        self.tokens -= 1.0;
        Some(std::mem::take(&mut self.held_back))
    }
}

pub(crate) fn report(message: &str) {
    let Some(held_back) = METER.lock().unwrap_or_else(|p| p.into_inner()).take(Instant::now()) else { return };
    if let Some(report) = &*REPORTER.read().unwrap_or_else(|p| p.into_inner()) {
        if held_back > 0 {
            report(&format!("{held_back} more regular expressions gave up and were not reported (at most {REPORT_BURST} at once, then {} a minute)", REPORTS_PER_SEC * 60.0));
        }
        report(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_setting_its_own_limit_is_found_among_its_leading_items() {
        assert_eq!(own_limit("(*LIMIT_MATCH=99999999)^(a|a?)+$"), Some("LIMIT_MATCH=99999999"));
        assert_eq!(own_limit("(*UTF)(*LIMIT_DEPTH=9)x"), Some("LIMIT_DEPTH=9"));
        assert_eq!(own_limit("(*CR)(*LIMIT_HEAP=1)"), Some("LIMIT_HEAP=1"));
        assert_eq!(own_limit("^(a|a?)+$"), None);
        // Not at the start: not a setting (PCRE2 refuses it as an unknown verb).
        assert_eq!(own_limit("a(*LIMIT_MATCH=1)"), None);
    }

    #[test]
    fn reports_are_metered() {
        let mut m = Meter { tokens: REPORT_BURST, at: None, held_back: 0 };
        let t0 = Instant::now();
        for _ in 0..REPORT_BURST as usize {
            assert_eq!(m.take(t0), Some(0));
        }
        assert_eq!(m.take(t0), None);
        assert_eq!(m.take(t0), None);
        // Five seconds give one more, which says how many were held back.
        assert_eq!(m.take(t0 + std::time::Duration::from_secs(5)), Some(2));
        assert_eq!(m.take(t0 + std::time::Duration::from_secs(5)), None);
    }
}
