//! mod_headers: `Header` rules on a response, `RequestHeader` rules on the
//! request headers an application is given, in configuration order.
//!
//! Apache keeps two tables of response headers: `headers_out`, sent only
//! with a successful answer, and `err_headers_out` (`always`), sent with
//! any. Here a rule without `always` acts on 2xx answers and on a 304,
//! not on the server's own error pages and redirects; on an application's
//! answer it acts whatever the status (so `Header unset X-Powered-By`
//! works on a PHP error page too, where Apache would need `always`).

use warren_config::headers::{HeaderAction, HeaderRule, SERVER_WRITTEN};
use warren_http::RequestHead;

use super::expr::Facts;
use super::{RequestFilters, Timing};
use crate::{HeaderName, Response};

pub fn apply_response(resp: &mut Response, f: &RequestFilters, head: Option<&RequestHead>, timing: Timing) {
    let onsuccess = (200..300).contains(&resp.status) || resp.status == 304 || f.from_application;
    for rule in &f.headers {
        if !rule.always && !onsuccess {
            continue;
        }
        let facts = Facts { head, remote: f.remote, https: f.https, env: &f.env, response: Some((resp.status, &resp.headers)), timing };
        if !facts.holds(&rule.condition) {
            continue;
        }
        let value = facts.format(&rule.value);
        let echo: Vec<(String, String)> = match (rule.action, head) {
            (HeaderAction::Echo, Some(h)) => h
                .headers()
                .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned()))
                .filter(|(n, _)| rule.pattern.as_ref().is_some_and(|re| re.is_match(n)))
                .filter(|(n, _)| !SERVER_WRITTEN.iter().any(|w| w.eq_ignore_ascii_case(n)))
                .collect(),
            _ => Vec::new(),
        };
        act(&mut resp.headers, rule, value, echo);
    }
}

/// The request's headers for the application, `RequestHeader` rules
/// applied; None when no rule is in force (the head is used as it is).
/// The rules work on text; a client's value that is not UTF-8 (obs-text)
/// and that no rule changed is given back as the client's bytes, as
/// Apache passes it.
pub fn request_headers(f: &RequestFilters, head: &RequestHead, timing: Timing) -> Option<Vec<(HeaderName, Vec<u8>)>> {
    if f.request_headers.is_empty() {
        return None;
    }
    let mut list: Vec<(HeaderName, String)> =
        head.headers().map(|(n, v)| (HeaderName::Owned(String::from_utf8_lossy(n).into_owned()), String::from_utf8_lossy(v).into_owned())).collect();
    for rule in &f.request_headers {
        let facts = Facts { head: Some(head), remote: f.remote, https: f.https, env: &f.env, response: None, timing };
        if facts.holds(&rule.condition) {
            let value = facts.format(&rule.value);
            act(&mut list, rule, value, Vec::new());
        }
    }
    let not_text: Vec<(&[u8], &[u8])> = head.headers().filter(|(_, v)| std::str::from_utf8(v).is_err()).collect();
    let as_sent = |n: &HeaderName, v: &str| not_text.iter().find(|(on, ov)| n.as_bytes().eq_ignore_ascii_case(on) && String::from_utf8_lossy(ov) == v).map(|(_, ov)| ov.to_vec());
    Some(
        list.into_iter()
            .map(|(n, v)| {
                let v = as_sent(&n, &v).unwrap_or_else(|| v.into_bytes());
                (n, v)
            })
            .collect(),
    )
}

/// One rule on a list of headers.
fn act(list: &mut Vec<(HeaderName, String)>, rule: &HeaderRule, value: String, echo: Vec<(String, String)>) {
    let name = rule.name.as_str();
    let is = |n: &HeaderName| n.eq_ignore_ascii_case(name);
    let owned = || HeaderName::Owned(name.to_string());
    match rule.action {
        HeaderAction::Set => {
            list.retain(|(n, _)| !is(n));
            list.push((owned(), value));
        }
        HeaderAction::Append | HeaderAction::Merge => match list.iter_mut().find(|(n, _)| is(n)) {
            Some((_, v)) => {
                if rule.action == HeaderAction::Merge && has_item(v, &value) {
                    return;
                }
                v.push_str(", ");
                v.push_str(&value);
            }
            None => list.push((owned(), value)),
        },
        HeaderAction::Add => list.push((owned(), value)),
        HeaderAction::SetIfEmpty => {
            if !list.iter().any(|(n, _)| is(n)) {
                list.push((owned(), value));
            }
        }
        HeaderAction::Unset => list.retain(|(n, _)| !is(n)),
        HeaderAction::Echo => list.extend(echo.into_iter().map(|(n, v)| (HeaderName::Owned(n), v))),
        HeaderAction::Edit { all } => {
            let Some(re) = &rule.pattern else { return };
            for (_, v) in list.iter_mut().filter(|(n, _)| is(n)) {
                *v = edit(v, re, &rule.replacement, all);
            }
        }
    }
}

/// Whether the comma-separated `header` already has `item` (quoted
/// strings kept whole), for `merge`.
fn has_item(header: &str, item: &str) -> bool {
    let mut items = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in header.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&header[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&header[start..]);
    items.iter().any(|i| i.trim() == item.trim())
}

/// `value` with the first match of `re` (or each, `edit*`) replaced.
fn edit(value: &str, re: &warren_regex::Regex, replacement: &str, all: bool) -> String {
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(caps) = re.captures_at(value, at) {
        let Some((start, end)) = caps.span(0) else { break };
        out.push_str(value.get(copied..start).unwrap_or_default());
        warren_regex::expand(replacement, &caps, &mut out);
        copied = end;
        if !all {
            break;
        }
        // After an empty match, the next search starts one character on.
        at = if end > start { end } else { end + value.get(end..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8) };
        if at > value.len() {
            break;
        }
    }
    out.push_str(value.get(copied..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use warren_config::headers::parse_rule;
    use warren_config::Origin;

    fn rule(args: &[&str]) -> HeaderRule {
        let origin = Origin { file: Arc::new("t.conf".into()), line: 1 };
        parse_rule(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), false, false, &origin).unwrap()
    }
    fn run(list: &mut Vec<(HeaderName, String)>, args: &[&str]) {
        let r = rule(args);
        let value = r.value.literal().unwrap_or_default().to_string();
        act(list, &r, value, Vec::new());
    }
    fn list(pairs: &[(&'static str, &str)]) -> Vec<(HeaderName, String)> {
        pairs.iter().map(|(n, v)| (HeaderName::Borrowed(n), v.to_string())).collect()
    }

    #[test]
    fn actions() {
        let mut l = list(&[("Vary", "Accept"), ("x-a", "1"), ("X-A", "2")]);
        run(&mut l, &["set", "X-A", "3"]);
        assert_eq!(l, list(&[("Vary", "Accept"), ("X-A", "3")]));
        run(&mut l, &["merge", "Vary", "Accept"]);
        run(&mut l, &["merge", "Vary", "Cookie"]);
        run(&mut l, &["append", "Vary", "Accept"]);
        assert_eq!(l[0].1, "Accept, Cookie, Accept");
        run(&mut l, &["add", "X-A", "4"]);
        run(&mut l, &["setifempty", "X-A", "5"]);
        run(&mut l, &["setifempty", "X-B", "6"]);
        assert_eq!(l[1..], list(&[("X-A", "3"), ("X-A", "4"), ("X-B", "6")])[..]);
        run(&mut l, &["unset", "x-a"]);
        assert_eq!(l, list(&[("Vary", "Accept, Cookie, Accept"), ("X-B", "6")]));
    }

    #[test]
    fn edits() {
        let re = warren_regex::Regex::new("a(.)").unwrap();
        assert_eq!(edit("xabacad", &re, "<$1>", false), "x<b>acad");
        assert_eq!(edit("xabacad", &re, "<$1>", true), "x<b><c><d>");
        let empty = warren_regex::Regex::new("^").unwrap();
        assert_eq!(edit("vw", &empty, "p-", true), "p-vw");
        let anchored = warren_regex::Regex::new("^a").unwrap();
        assert_eq!(edit("aaa", &anchored, "b", true), "baa");
        let between = warren_regex::Regex::new("x*").unwrap();
        assert_eq!(edit("ab", &between, "-", true), "-a-b-");
        let mut l = list(&[("Set-Cookie", "a=1; path=/"), ("Set-Cookie", "b=2")]);
        run(&mut l, &["edit", "Set-Cookie", "^(.*)$", "$1; HttpOnly"]);
        assert_eq!(l, list(&[("Set-Cookie", "a=1; path=/; HttpOnly"), ("Set-Cookie", "b=2; HttpOnly")]));
    }

    #[test]
    fn merge_keeps_quoted_items_whole() {
        assert!(has_item("a, \"b, c\"", "\"b, c\""));
        assert!(!has_item("a, \"b, c\"", "c\""));
    }
}
