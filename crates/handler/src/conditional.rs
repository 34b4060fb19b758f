//! What a client may ask of a file it has a version of: the validators
//! (ETag, Last-Modified), the conditional requests of RFC 9110 13, and
//! ranges (RFC 9110 14).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use warren_http::RequestHead;

/// More ranges than this in one request are answered with the whole file,
/// as Apache's MaxRanges default does.
pub const MAX_RANGES: usize = 200;

/// The validators of a file.
pub struct Validators {
    pub etag: String,
    pub modified: SystemTime,
    pub last_modified: String,
}

impl Validators {
    pub fn of(meta: &Metadata) -> Validators {
        let modified = UNIX_EPOCH + Duration::new(meta.mtime().max(0) as u64, meta.mtime_nsec().clamp(0, 999_999_999) as u32);
        let usec = meta.mtime().max(0) as u64 * 1_000_000 + meta.mtime_nsec().max(0) as u64 / 1000;
        Validators {
            // Apache's FileETag MTime Size form.
            etag: format!("\"{:x}-{:x}\"", meta.len(), usec),
            modified,
            last_modified: httpdate::fmt_http_date(modified),
        }
    }

    fn modified_secs(&self) -> u64 {
        self.modified.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }
}

/// Entity-tag comparison (RFC 9110 8.8.3.2) against a field value that is
/// `*` or a list of tags.
fn etag_matches(field: &[u8], ours: &str, weak_ok: bool) -> bool {
    let field = String::from_utf8_lossy(field);
    if field.trim() == "*" {
        return true;
    }
    field.split(',').map(str::trim).any(|tag| {
        let (weak, opaque) = match tag.strip_prefix("W/") {
            Some(t) => (true, t),
            None => (false, tag),
        };
        (weak_ok || !weak) && opaque == ours
    })
}

/// If-None-Match also names a compressed representation by the tag it was
/// sent with (`"tag-gzip"`, `"tag-br"`, see `compress`): the same file
/// version, so the client's copy is current. The compression stage gives
/// the 304 the tag of the representation the client would get now.
fn etag_or_encoded_matches(field: &[u8], ours: &str) -> bool {
    if etag_matches(field, ours, true) {
        return true;
    }
    let Some(stem) = ours.strip_suffix('"') else { return false };
    let field = String::from_utf8_lossy(field);
    field.split(',').map(str::trim).any(|tag| {
        let opaque = tag.strip_prefix("W/").unwrap_or(tag);
        opaque.strip_prefix(stem).is_some_and(|rest| rest == "-gzip\"" || rest == "-br\"")
    })
}

fn http_date_secs(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?;
    httpdate::parse_http_date(s.trim()).ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// The outcome of RFC 9110 13.2.2's evaluation order.
#[derive(Debug, PartialEq, Eq)]
pub enum Precondition {
    Proceed,
    NotModified,
    Failed,
}

pub fn evaluate_preconditions(head: &RequestHead, v: &Validators) -> Precondition {
    let get_or_head = matches!(head.method(), "GET" | "HEAD");
    if let Some(im) = head.header("if-match") {
        if !etag_matches(im, &v.etag, false) {
            return Precondition::Failed;
        }
    } else if let Some(date) = head.header("if-unmodified-since").and_then(http_date_secs) {
        if v.modified_secs() > date {
            return Precondition::Failed;
        }
    }
    if let Some(inm) = head.header("if-none-match") {
        if etag_or_encoded_matches(inm, &v.etag) {
            return if get_or_head { Precondition::NotModified } else { Precondition::Failed };
        }
    } else if get_or_head {
        if let Some(date) = head.header("if-modified-since").and_then(http_date_secs) {
            if v.modified_secs() <= date {
                return Precondition::NotModified;
            }
        }
    }
    Precondition::Proceed
}

#[derive(Debug, PartialEq, Eq)]
pub enum Ranges {
    /// No (usable) Range: send the whole representation.
    Whole,
    /// Inclusive (first, last) byte positions.
    Some(Vec<(u64, u64)>),
    Unsatisfiable,
}

/// Parses `bytes=` range sets against a representation of `size` bytes.
/// Syntax errors mean the field is ignored (RFC 9110 14.2).
pub fn parse_ranges(field: &[u8], size: u64) -> Ranges {
    let Ok(s) = std::str::from_utf8(field) else { return Ranges::Whole };
    let Some((unit, set)) = s.trim().split_once('=') else { return Ranges::Whole };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return Ranges::Whole;
    }
    let mut out = Vec::new();
    let mut specs = 0;
    for spec in set.split(',') {
        let spec = spec.trim();
        if spec.is_empty() {
            continue;
        }
        specs += 1;
        let Some((a, b)) = spec.split_once('-') else { return Ranges::Whole };
        let (a, b) = (a.trim(), b.trim());
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        if a.is_empty() {
            if !digits(b) {
                return Ranges::Whole;
            }
            let n: u64 = b.parse().unwrap_or(u64::MAX);
            if n > 0 && size > 0 {
                out.push((size.saturating_sub(n), size - 1));
            }
        } else {
            if !digits(a) || !(b.is_empty() || digits(b)) {
                return Ranges::Whole;
            }
            let first: u64 = match a.parse() {
                Ok(f) => f,
                Err(_) => continue,
            };
            let last: u64 = if b.is_empty() { u64::MAX } else { b.parse().unwrap_or(u64::MAX) };
            if last < first {
                return Ranges::Whole;
            }
            if first < size {
                out.push((first, last.min(size - 1)));
            }
        }
    }
    if specs == 0 || specs > MAX_RANGES {
        return Ranges::Whole;
    }
    if out.is_empty() {
        return Ranges::Unsatisfiable;
    }
    // Overlapping ranges are coalesced (RFC 9110 14.3 allows it; it defeats
    // requests that ask for the same bytes many times).
    let mut sorted = out.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[1].0 <= w[0].1.saturating_add(1)) {
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (f, l) in sorted {
            match merged.last_mut() {
                Some(m) if f <= m.1.saturating_add(1) => m.1 = m.1.max(l),
                _ => merged.push((f, l)),
            }
        }
        out = merged;
    }
    Ranges::Some(out)
}

pub(crate) fn if_range_allows(field: &[u8], v: &Validators) -> bool {
    let t = field.trim_ascii();
    if t.starts_with(b"\"") || t.starts_with(b"W/") {
        // Weak tags never match here (strong comparison).
        return t == v.etag.as_bytes();
    }
    http_date_secs(t) == Some(v.modified_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_ranges(b"bytes=0-9", 100), Ranges::Some(vec![(0, 9)]));
        assert_eq!(parse_ranges(b"bytes=90-", 100), Ranges::Some(vec![(90, 99)]));
        assert_eq!(parse_ranges(b"bytes=-10", 100), Ranges::Some(vec![(90, 99)]));
        assert_eq!(parse_ranges(b"bytes=-1000", 100), Ranges::Some(vec![(0, 99)]));
        assert_eq!(parse_ranges(b"bytes=50-1000", 100), Ranges::Some(vec![(50, 99)]));
        assert_eq!(parse_ranges(b"bytes=0-1, 10-19", 100), Ranges::Some(vec![(0, 1), (10, 19)]));
        assert_eq!(parse_ranges(b"bytes=0-10,5-20", 100), Ranges::Some(vec![(0, 20)]));
        assert_eq!(parse_ranges(b"bytes=100-", 100), Ranges::Unsatisfiable);
        assert_eq!(parse_ranges(b"bytes=-0", 100), Ranges::Unsatisfiable);
        assert_eq!(parse_ranges(b"bytes=5-1", 100), Ranges::Whole);
        assert_eq!(parse_ranges(b"items=0-1", 100), Ranges::Whole);
        assert_eq!(parse_ranges(b"bytes=a-b", 100), Ranges::Whole);
        let many = format!("bytes={}", (0..201).map(|i| format!("{i}-{i}")).collect::<Vec<_>>().join(","));
        assert_eq!(parse_ranges(many.as_bytes(), 1000), Ranges::Whole);
    }

    #[test]
    fn etags() {
        assert!(etag_matches(b"\"a\", \"b\"", "\"b\"", false));
        assert!(etag_matches(b"W/\"b\"", "\"b\"", true));
        assert!(!etag_matches(b"W/\"b\"", "\"b\"", false));
        assert!(etag_matches(b"*", "\"x\"", false));
        assert!(!etag_matches(b"\"c\"", "\"b\"", true));
        assert!(etag_or_encoded_matches(b"\"a\", \"b-gzip\"", "\"b\""));
        assert!(etag_or_encoded_matches(b"W/\"b-br\"", "\"b\""));
        assert!(!etag_or_encoded_matches(b"\"b-zip\"", "\"b\""));
        assert!(!etag_or_encoded_matches(b"\"bb-gzip\"", "\"b\""));
    }
}
