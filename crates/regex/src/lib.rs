//! Regular expressions with Apache httpd's semantics. Apache compiles every
//! pattern (`<FilesMatch>`, `AliasMatch`, `RewriteRule`...) with PCRE, and
//! configurations rely on what only PCRE has: Drupal's and Nextcloud's rules
//! use look-ahead such as `(?!well-known)`. So [`Regex`] wraps PCRE2 (JIT
//! where the machine has it), [`Captures`] holds one match's groups, and
//! [`expand`] fills a template's `$N` from them as mod_alias and mod_rewrite do.
//!
//! Patterns get Apache's default options (`AP_REG_DEFAULT`): `.` matches
//! a line feed, and `$` matches only at the very end ([`dollar`]).
//!
//! Every pattern is bounded ([`limits`]): a match that would backtrack for
//! long gives up, counts as no match, and is reported once per pattern with
//! the file and line that wrote it ([`Regex::at`]).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

mod dollar;
pub mod limits;

pub use limits::set_reporter;

/// A compiled pattern. Cloning recompiles (PCRE2 keeps per-thread match
/// data), which only happens while a configuration is built.
pub struct Regex {
    re: pcre2::bytes::Regex,
    /// As written: without the limits put in front of it.
    pattern: String,
    caseless: bool,
    /// `file:line` of the directive that wrote it, for the log.
    origin: Option<String>,
    /// A match of it has hit a limit and that has been reported.
    reported: AtomicBool,
}

/// Why a pattern does not compile, in PCRE2's words with its offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl Regex {
    /// A case-sensitive pattern, as Apache compiles them by default.
    pub fn new(pattern: &str) -> Result<Regex, Error> {
        Self::build(pattern, false)
    }

    /// A pattern matched without regard to case (mod_rewrite's `[NC]`).
    pub fn caseless(pattern: &str) -> Result<Regex, Error> {
        Self::build(pattern, true)
    }

    /// The same pattern, known to come from `origin` (`file:line`): the
    /// report of a match that hits a limit names it.
    pub fn at(mut self, origin: impl fmt::Display) -> Regex {
        self.origin = Some(origin.to_string());
        self
    }

    fn build(pattern: &str, caseless: bool) -> Result<Regex, Error> {
        if let Some(setting) = limits::own_limit(pattern) {
            return Err(Error(format!("(*{setting}) is not allowed: warren bounds every match itself")));
        }
        let (end_only, added) = dollar::end_only(pattern);
        // Apache's default options (AP_REG_DEFAULT): `.` matches a line
        // feed too, and `$` only at the very end (see `dollar`).
        let compile = |jit: bool| {
            let bounded = format!("{}{end_only}", limits::prefix(jit));
            pcre2::bytes::RegexBuilder::new().caseless(caseless).dotall(true).jit(jit).build(&bounded).map_err(|e| (e, bounded.len() - end_only.len()))
        };
        // A pattern the JIT cannot take is interpreted, with the interpreter's limit.
        let compiled = match compile(pcre2::is_jit_available()) {
            Err((e, _)) if matches!(e.kind(), pcre2::ErrorKind::JIT) => compile(false),
            other => other,
        };
        let re = compiled.map_err(|(e, prefix)| Error(unshifted(&e, |at| dollar::offset_as_written(at.saturating_sub(prefix), &added))))?;
        Ok(Regex { re, pattern: pattern.to_string(), caseless, origin: None, reported: AtomicBool::new(false) })
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the pattern matches somewhere in `text`. A match PCRE2 gives
    /// up on (a limit) counts as no match, as in Apache.
    pub fn is_match(&self, text: &str) -> bool {
        self.is_match_bytes(text.as_bytes())
    }

    /// [`Regex::is_match`] for a text that need not be UTF-8.
    pub fn is_match_bytes(&self, text: &[u8]) -> bool {
        self.re.is_match(text).unwrap_or_else(|e| {
            self.gave_up(&e);
            false
        })
    }

    /// The groups of the first match in `text`, if it matches.
    pub fn captures<'t>(&self, text: &'t str) -> Option<Captures<'t>> {
        self.captures_bytes(text.as_bytes())
    }

    /// The groups of the first match in `text`, which need not be UTF-8:
    /// Apache matches a URL path as the bytes it decodes to (`/caf%E9` is
    /// `/caf` and the byte E9), and so does PCRE2 without UTF mode.
    pub fn captures_bytes<'t>(&self, text: &'t [u8]) -> Option<Captures<'t>> {
        let caps = self.re.captures(text).unwrap_or_else(|e| {
            self.gave_up(&e);
            None
        })?;
        let spans = (0..caps.len()).map(|i| caps.get(i).map(|m| (m.start(), m.end()))).collect();
        Some(Captures { text, spans })
    }

    /// The groups of the first match at or after byte `start` of `text`,
    /// `^` and look-behind still seeing what comes before `start` (to
    /// replace every match of a pattern in one text).
    pub fn captures_at<'t>(&self, text: &'t str, start: usize) -> Option<Captures<'t>> {
        let mut locs = self.re.capture_locations();
        self.re.captures_read_at(&mut locs, text.as_bytes(), start).unwrap_or_else(|e| {
            self.gave_up(&e);
            None
        })?;
        let spans = (0..locs.len()).map(|i| locs.get(i)).collect();
        Some(Captures { text: text.as_bytes(), spans })
    }

    /// A match that PCRE2 gave up on (its match or depth limit, the JIT's
    /// stack): no match, reported the first time.
    fn gave_up(&self, e: &pcre2::Error) {
        if !self.reported.swap(true, Ordering::Relaxed) {
            let at = self.origin.as_deref().map(|o| format!(" ({o})")).unwrap_or_default();
            limits::report(&format!("regular expression '{}'{at} gave up: {e}; it counts as not matching (reported once per pattern)", self.pattern));
        }
    }
}

/// PCRE2's message with the offset counted in the pattern as written.
fn unshifted(e: &pcre2::Error, as_written: impl Fn(usize) -> usize) -> String {
    let text = e.to_string();
    match e.offset() {
        Some(at) => text.replacen(&format!("at offset {at}"), &format!("at offset {}", as_written(at)), 1),
        None => text,
    }
}

impl Clone for Regex {
    fn clone(&self) -> Regex {
        let mut re = Regex::build(self.as_str(), self.caseless).expect("a pattern that compiled once compiles again");
        re.origin.clone_from(&self.origin);
        re.reported = AtomicBool::new(self.reported.load(Ordering::Relaxed));
        re
    }
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Regex({:?}{})", self.as_str(), if self.caseless { ", caseless" } else { "" })
    }
}

/// The groups of one match: group 0 is the whole match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captures<'t> {
    text: &'t [u8],
    spans: Vec<Option<(usize, usize)>>,
}

impl<'t> Captures<'t> {
    /// Group `i`'s text; None when the group did not take part or does not exist.
    pub fn get(&self, i: usize) -> Option<&'t str> {
        // PCRE2 runs without UTF mode, so a group may end inside a character.
        std::str::from_utf8(self.get_bytes(i)?).ok()
    }

    /// Group `i`'s bytes, whether or not they are UTF-8.
    pub fn get_bytes(&self, i: usize) -> Option<&'t [u8]> {
        let (start, end) = (*self.spans.get(i)?)?;
        self.text.get(start..end)
    }

    /// Where group `i` lies in the text, in bytes.
    pub fn span(&self, i: usize) -> Option<(usize, usize)> {
        *self.spans.get(i)?
    }

    /// How many groups, group 0 included.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// `template` with each `$0`..`$9` replaced by that group of `caps` (empty
/// when the group did not match). One digit only: `$1x` is group 1 then
/// `x`, and `$10` is group 1 then `0`, as in Apache.
pub fn expand(template: &str, caps: &Captures, out: &mut String) {
    for part in template_parts(template) {
        match part {
            TemplatePart::Text(t) => out.push_str(t),
            TemplatePart::Group(g) => out.push_str(caps.get(g).unwrap_or("")),
        }
    }
}

/// [`expand`] for a text that need not be UTF-8: each group's bytes as
/// they are, as Apache's `ap_pregsub` copies them.
pub fn expand_bytes(template: &str, caps: &Captures, out: &mut Vec<u8>) {
    for part in template_parts(template) {
        match part {
            TemplatePart::Text(t) => out.extend_from_slice(t.as_bytes()),
            TemplatePart::Group(g) => out.extend_from_slice(caps.get_bytes(g).unwrap_or_default()),
        }
    }
}

/// A piece of a substitution template: text as written, or `$N`.
enum TemplatePart<'a> {
    Text(&'a str),
    Group(usize),
}

/// `template` cut at each `$N` (one digit, see [`expand`]).
fn template_parts(template: &str) -> impl Iterator<Item = TemplatePart<'_>> {
    let b = template.as_bytes();
    let group_at = move |i: usize| b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= b.len() {
            return None;
        }
        if group_at(i) {
            i += 2;
            return Some(TemplatePart::Group(usize::from(b[i - 1] - b'0')));
        }
        // A `$` and an ASCII digit are one byte each: the cuts are at characters' edges.
        let start = i;
        i += 1;
        while i < b.len() && !group_at(i) {
            i += 1;
        }
        Some(TemplatePart::Text(&template[start..i]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_ahead_as_drupal_and_nextcloud_use_it() {
        // Drupal's rule against hidden files, per-directory (no leading slash).
        let re = Regex::new(r"/\.|^\.(?!well-known/)").unwrap();
        assert!(re.is_match(".git/config"));
        assert!(re.is_match("sites/.env"));
        assert!(!re.is_match(".well-known/acme-challenge/x"));
    }

    #[test]
    fn case_is_significant_unless_asked() {
        assert!(!Regex::new(r"\.PHP$").unwrap().is_match("a.php"));
        assert!(Regex::caseless(r"\.PHP$").unwrap().is_match("a.php"));
        assert!(Regex::new(r"(?i)\.PHP$").unwrap().is_match("a.php"));
    }

    #[test]
    fn groups_that_did_not_take_part_are_none() {
        let re = Regex::new(r"^/(a)?(b)$").unwrap();
        let caps = re.captures("/b").unwrap();
        assert_eq!((caps.get(0), caps.get(1), caps.get(2), caps.len()), (Some("/b"), None, Some("b"), 3));
        assert!(re.captures("/c").is_none());
    }

    #[test]
    fn expansion_takes_one_digit() {
        let re = Regex::new(r"^/(\w+)/(\w+)$").unwrap();
        let caps = re.captures("/x/y").unwrap();
        let mut out = String::new();
        expand("/$2/$1x/$10/$9/$", &caps, &mut out);
        assert_eq!(out, "/y/xx/x0//$");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_matched_and_expanded_as_bytes() {
        let re = Regex::new(r"^/(caf.)/(.)(.)$").unwrap();
        let caps = re.captures_bytes(b"/caf\xe9/\xc3\xa9").unwrap();
        assert_eq!((caps.get_bytes(1), caps.get_bytes(2), caps.get_bytes(3)), (Some(&b"caf\xe9"[..]), Some(&b"\xc3"[..]), Some(&b"\xa9"[..])));
        // As text, a group that is not UTF-8 is none.
        assert_eq!((caps.get(1), caps.get(2)), (None, None));
        let mut out = Vec::new();
        expand_bytes("/x/$1$2$3/$9$", &caps, &mut out);
        assert_eq!(out, b"/x/caf\xe9\xc3\xa9/$");
        assert!(Regex::new(r"^caf\xE9$").unwrap().captures_bytes(b"caf\xe9").is_some());
        assert!(Regex::new(r"^/caf.$").unwrap().is_match_bytes(b"/caf\xe9"));
        assert!(!Regex::new(r"^/caf.$").unwrap().is_match_bytes("/caf\u{e9}".as_bytes()), "two bytes are not one");
    }

    #[test]
    fn a_bad_pattern_is_an_error_with_pcre_words() {
        let e = Regex::new("(unclosed").unwrap_err();
        assert!(e.to_string().contains("missing closing parenthesis"), "{e}");
    }

    /// What the reporter was told, for tests: installed once for the
    /// whole test binary, each test looking for its own origin.
    fn reports() -> &'static std::sync::Mutex<Vec<String>> {
        static REPORTS: std::sync::OnceLock<&'static std::sync::Mutex<Vec<String>>> = std::sync::OnceLock::new();
        REPORTS.get_or_init(|| {
            let reports: &'static std::sync::Mutex<Vec<String>> = Box::leak(Box::default());
            set_reporter(move |m| reports.lock().unwrap().push(m.to_string()));
            reports
        })
    }

    fn reported(origin: &str) -> Vec<String> {
        reports().lock().unwrap().iter().filter(|m| m.contains(origin)).cloned().collect()
    }

    #[test]
    fn a_catastrophic_match_gives_up_counts_as_no_match_and_is_reported_once() {
        reports();
        // The second branch would match anything: only giving up on the
        // first one (exponential on a run of a's that ends in b) fails it.
        let re = Regex::new(r"^(?:(a|a?)+$|.*)").unwrap().at("/srv/a/.htaccess:7");
        let subject = format!("{}b", "a".repeat(40));
        assert!(!re.is_match(&subject));
        assert!(re.captures(&subject).is_none());
        assert!(re.captures_at(&subject, 0).is_none());
        assert!(re.is_match("b"), "a subject that needs no backtracking still matches");
        let lines = reported("/srv/a/.htaccess:7");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("(a|a?)+$") && lines[0].contains("limit"), "{}", lines[0]);
    }

    #[test]
    fn deep_nesting_gives_up_too() {
        reports();
        // A frame per repetition: past the interpreter's depth limit, or the JIT's stack.
        let re = Regex::new(r"^(x|/)*$").unwrap().at("deep.conf:1");
        assert!(!re.is_match(&"x".repeat(200_000)));
        assert_eq!(reported("deep.conf:1").len(), 1);
    }

    #[test]
    fn rules_of_common_applications_stay_within_the_limits_on_long_urls() {
        let url = format!("/{}", "segment/".repeat(500));
        for (pattern, subject, matches) in [
            (r"^index\.php$", "index.php", true),
            (r"^(.*)$", url.as_str(), true),
            (r"^(.+?)/?$", url.as_str(), true),
            (r"\.(?:css|js|png|jpe?g|gif|svg|woff2?)$", url.as_str(), false),
            (r"^/(?:build|tests|config|lib|3rdparty|templates)/.*", url.as_str(), false),
            (r"(?:^|/)\.(?!well-known/)", url.as_str(), false),
        ] {
            let re = Regex::new(pattern).unwrap().at("common.conf:1");
            assert_eq!(re.is_match(subject), matches, "{pattern}");
        }
        assert!(reported("common.conf:1").is_empty());
    }

    #[test]
    fn a_pattern_may_not_raise_its_own_limits() {
        let e = Regex::new("(*LIMIT_MATCH=4000000000)^(a|a?)+$").unwrap_err();
        assert!(e.to_string().contains("LIMIT_MATCH"), "{e}");
        assert!(Regex::new("(*UCP)(*LIMIT_DEPTH=99999999)x").is_err());
    }

    #[test]
    fn compile_errors_count_offsets_in_the_pattern_as_written() {
        let e = Regex::new("ab)").unwrap_err();
        assert!(e.to_string().contains("at offset 2"), "{e}");
        assert_eq!(Regex::new("^x$").unwrap().as_str(), "^x$");
    }

    #[test]
    fn apache_default_options() {
        // DOLLAR_ENDONLY: not before a final line feed.
        let php = Regex::new(r"\.php$").unwrap();
        assert!(php.is_match("x.php") && !php.is_match("x.php\n"));
        // DOTALL: `.` takes a line feed.
        assert!(Regex::new("^/a.b$").unwrap().is_match("/a\nb"));
        // Multi-line mode keeps its anchors.
        assert!(Regex::new("(?m)^x$").unwrap().is_match("x\ny"));
        // An offset past an anchor made `\z` counts in the pattern as written.
        let e = Regex::new("a$b$)").unwrap_err();
        assert!(e.to_string().contains("at offset 4"), "{e}");
    }

    /// Matches and compile errors as PCRE2 gives them with DOLLAR_ENDONLY
    /// and DOTALL (checked with PHP's `preg_match` and its `sD` modifiers).
    #[test]
    fn end_anchors_follow_multi_line_scope() {
        for (pattern, subject, want) in [
            (r"(?:(?m)a$)|b$", "b\n", false),
            (r"(?:(?m)a$)|b$", "a\nx", true),
            (r"[(?m)]$", "m\n", false),
            (r"(?m)a$(?-m)$", "a\n", false),
            (r"(?x)a$ # (?m)", "a\n", false),
            (r"\c$", "d", true),
            (r"(*pla:a$)a", "a\n", false),
            (r"(?m)(a)$", "a\n", true),
        ] {
            assert_eq!(Regex::new(pattern).unwrap().is_match(subject), want, "{pattern} {subject:?}");
        }
        for (pattern, offset) in [(r"a\", 2), (r"\c", 2), (r"(?x m)a$", 3)] {
            let e = Regex::new(pattern).unwrap_err();
            assert!(e.to_string().contains(&format!("at offset {offset}")), "{pattern}: {e}");
        }
        assert!(Regex::new("a$?").is_err());
    }

    #[test]
    fn clones_match_alike() {
        let re = Regex::caseless("^ab").unwrap();
        assert!(re.clone().is_match("ABc"));
    }
}
