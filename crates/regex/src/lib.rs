//! Regular expressions with Apache httpd's semantics. Apache compiles every
//! pattern (`<FilesMatch>`, `AliasMatch`, `RewriteRule`...) with PCRE, and
//! configurations rely on what only PCRE has: Drupal's and Nextcloud's rules
//! use look-ahead such as `(?!well-known)`. So [`Regex`] wraps PCRE2 (JIT
//! where the machine has it), [`Captures`] holds one match's groups, and
//! [`expand`] fills a template's `$N` from them as mod_alias and mod_rewrite do.

use std::fmt;

/// A compiled pattern. Cloning recompiles (PCRE2 keeps per-thread match
/// data), which only happens while a configuration is built.
pub struct Regex {
    re: pcre2::bytes::Regex,
    caseless: bool,
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

    fn build(pattern: &str, caseless: bool) -> Result<Regex, Error> {
        let re = pcre2::bytes::RegexBuilder::new()
            .caseless(caseless)
            .jit_if_available(true)
            .build(pattern)
            .map_err(|e| Error(e.to_string()))?;
        Ok(Regex { re, caseless })
    }

    pub fn as_str(&self) -> &str {
        self.re.as_str()
    }

    /// Whether the pattern matches somewhere in `text`. A match PCRE2 gives
    /// up on (its backtracking limit) counts as no match, as in Apache.
    pub fn is_match(&self, text: &str) -> bool {
        self.re.is_match(text.as_bytes()).unwrap_or(false)
    }

    /// The groups of the first match in `text`, if it matches.
    pub fn captures<'t>(&self, text: &'t str) -> Option<Captures<'t>> {
        let caps = self.re.captures(text.as_bytes()).ok()??;
        let spans = (0..caps.len()).map(|i| caps.get(i).map(|m| (m.start(), m.end()))).collect();
        Some(Captures { text, spans })
    }
}

impl Regex {
    /// The groups of the first match at or after byte `start` of `text`,
    /// `^` and look-behind still seeing what comes before `start` (to
    /// replace every match of a pattern in one text).
    pub fn captures_at<'t>(&self, text: &'t str, start: usize) -> Option<Captures<'t>> {
        let mut locs = self.re.capture_locations();
        self.re.captures_read_at(&mut locs, text.as_bytes(), start).ok()??;
        let spans = (0..locs.len()).map(|i| locs.get(i)).collect();
        Some(Captures { text, spans })
    }
}

impl Clone for Regex {
    fn clone(&self) -> Regex {
        Regex::build(self.as_str(), self.caseless).expect("a pattern that compiled once compiles again")
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
    text: &'t str,
    spans: Vec<Option<(usize, usize)>>,
}

impl<'t> Captures<'t> {
    /// Group `i`'s text; None when the group did not take part or does not exist.
    pub fn get(&self, i: usize) -> Option<&'t str> {
        let (start, end) = (*self.spans.get(i)?)?;
        // PCRE2 runs without UTF mode, so a group may end inside a character.
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
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            if let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                chars.next();
                out.push_str(caps.get(d as usize).unwrap_or(""));
                continue;
            }
        }
        out.push(c);
    }
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
    fn a_bad_pattern_is_an_error_with_pcre_words() {
        let e = Regex::new("(unclosed").unwrap_err();
        assert!(e.to_string().contains("missing closing parenthesis"), "{e}");
    }

    #[test]
    fn clones_match_alike() {
        let re = Regex::caseless("^ab").unwrap();
        assert!(re.clone().is_match("ABc"));
    }
}
