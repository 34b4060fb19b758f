//! mod_alias: `Alias`, `AliasMatch`, `Redirect` (and its `Permanent`,
//! `Temp` and `Match` forms), as [`UrlAlias`]es of a host, in config order.
//! What a request matches is decided in the handler; here they are read
//! and checked as Apache checks them.

use std::path::PathBuf;

use warren_regex::Regex;

use crate::parse::Directive;

/// Where the URL part of an alias or redirect matches.
#[derive(Clone, Debug)]
pub enum UrlMatch {
    /// A URL path prefix, matched whole segment by segment (`/icons` matches
    /// `/icons` and `/icons/a.png`, not `/iconsets`).
    Prefix(String),
    /// A regular expression on the URL path; `$1`... in the target.
    Regex(Regex),
}

#[derive(Clone, Debug)]
pub enum AliasTarget {
    /// Alias, AliasMatch: a file or directory (a template with `$N` for AliasMatch).
    Path(String),
    /// Redirect, RedirectMatch: the status, and the URL (None for a status
    /// other than 3xx, which has none).
    Redirect(u16, Option<String>),
}

#[derive(Clone, Debug)]
pub struct UrlAlias {
    pub url: UrlMatch,
    pub target: AliasTarget,
    /// ScriptAlias, ScriptAliasMatch: every file there is a program, run by
    /// the FastCGI handler in force and never sent as it is.
    pub script: bool,
}

impl UrlMatch {
    /// For a prefix: the rest of `path` after it, None if it does not match.
    /// For a regex: None (use the captures).
    pub fn rest<'a>(&self, path: &'a [u8]) -> Option<&'a [u8]> {
        let UrlMatch::Prefix(p) = self else { return None };
        let rest = path.strip_prefix(p.as_bytes())?;
        // Whole segments only: the prefix ends with '/', or the path goes on with one.
        (p.ends_with('/') || rest.is_empty() || rest.starts_with(b"/")).then_some(rest)
    }
}

/// Apache's status words for Redirect.
fn status_of(word: &str) -> Option<u16> {
    match word.to_ascii_lowercase().as_str() {
        "permanent" => Some(301),
        "temp" => Some(302),
        "seeother" => Some(303),
        "gone" => Some(410),
        n => n.parse().ok().filter(|s| (300..=599).contains(s)),
    }
}

/// A target URL a redirect can send a client to: absolute (`scheme://`) or
/// a path on this server, as Apache accepts them.
fn valid_redirect_url(u: &str) -> bool {
    u.starts_with('/') || u.split_once("://").is_some_and(|(scheme, rest)| !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) && !rest.is_empty())
}

/// Reads one mod_alias directive; `resolve` makes a relative path absolute
/// (from ServerRoot).
pub fn parse(d: &Directive, resolve: impl Fn(&str) -> PathBuf) -> Result<UrlAlias, String> {
    let name = d.name.to_ascii_lowercase();
    let regex = |p: &str| Regex::new(p).map(|r| UrlMatch::Regex(r.at(&d.origin))).map_err(|e| format!("{}: bad regular expression {p}: {e}", d.name));
    match name.as_str() {
        "alias" | "aliasmatch" | "scriptalias" | "scriptaliasmatch" => {
            let [url, path] = d.args.as_slice() else { return Err(format!("{} takes a URL path and a file or directory", d.name)) };
            let url = if name.ends_with("match") { regex(url)? } else { UrlMatch::Prefix(url.clone()) };
            let target = if path.contains('$') { path.clone() } else { resolve(path).to_string_lossy().into_owned() };
            Ok(UrlAlias { url, target: AliasTarget::Path(target), script: name.starts_with("script") })
        }
        _ => {
            // Redirect [status] URL-path [URL], and the fixed-status forms.
            let fixed = match name.as_str() {
                "redirectpermanent" => Some(301),
                "redirecttemp" => Some(302),
                _ => None,
            };
            let mut args = d.args.as_slice();
            let status = match (fixed, args.first()) {
                (Some(s), _) => s,
                // As Apache: a status word, or a word beginning with a digit.
                (None, Some(w)) if args.len() > 1 && (w.starts_with(|c: char| c.is_ascii_digit()) || ["permanent", "temp", "seeother", "gone"].contains(&w.to_ascii_lowercase().as_str())) => {
                    args = &args[1..];
                    status_of(w).ok_or_else(|| format!("{}: '{w}' is not a status (permanent, temp, seeother, gone, or a number from 300 to 599)", d.name))?
                }
                _ => 302,
            };
            let (from, to) = match args {
                [from] => (from, None),
                [from, to] => (from, Some(to.clone())),
                _ => return Err(format!("{} takes [status] URL-path [URL]", d.name)),
            };
            match (&to, (300..400).contains(&status)) {
                (None, true) => return Err(format!("{}: a {status} redirect needs a URL to send the client to", d.name)),
                (Some(t), false) => return Err(format!("{}: a {status} answer has no URL; remove {t}", d.name)),
                (Some(t), true) if !valid_redirect_url(t) && !t.contains('$') => return Err(format!("{}: {t} is not a URL (an absolute URL or a path beginning with /)", d.name)),
                _ => {}
            }
            let url = if name == "redirectmatch" { regex(from)? } else { UrlMatch::Prefix(from.clone()) };
            Ok(UrlAlias { url, target: AliasTarget::Redirect(status, to), script: false })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::Origin;

    fn directive(line: &str) -> Directive {
        let mut words = line.split_whitespace().map(String::from);
        let name = words.next().unwrap();
        Directive { name, args: words.collect(), origin: Origin { file: std::sync::Arc::new("t".into()), line: 1 } }
    }

    fn one(line: &str) -> Result<UrlAlias, String> {
        parse(&directive(line), |p| PathBuf::from("/srv").join(p))
    }

    #[test]
    fn redirects_take_apache_statuses() {
        let r = |l: &str| match one(l).unwrap().target {
            AliasTarget::Redirect(s, u) => (s, u),
            t => panic!("{t:?}"),
        };
        assert_eq!(r("Redirect /old http://example.com/new"), (302, Some("http://example.com/new".into())));
        assert_eq!(r("Redirect permanent /old /new"), (301, Some("/new".into())));
        assert_eq!(r("Redirect seeother /old /new"), (303, Some("/new".into())));
        assert_eq!(r("Redirect gone /old"), (410, None));
        assert_eq!(r("Redirect 307 /old /new"), (307, Some("/new".into())));
        assert_eq!(r("RedirectPermanent /old /new"), (301, Some("/new".into())));
        assert_eq!(r("RedirectTemp /old /new"), (302, Some("/new".into())));
        assert_eq!(r("RedirectMatch ^/a(.*) /b$1"), (302, Some("/b$1".into())));
        assert_eq!(r("RedirectMatch 410 ^/gone"), (410, None));
        for bad in ["Redirect /old", "Redirect gone /old /new", "Redirect sometimes /a /b", "Redirect /a b c d", "Redirect /a nowhere", "RedirectMatch ^(( /x", "Alias /only"] {
            assert!(one(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefixes_match_whole_segments() {
        let a = one("Alias /icons /usr/share/icons").unwrap();
        assert!(matches!(&a.target, AliasTarget::Path(p) if p == "/usr/share/icons"));
        assert_eq!(a.url.rest(b"/icons"), Some(&b""[..]));
        assert_eq!(a.url.rest(b"/icons/a.png"), Some(&b"/a.png"[..]));
        assert_eq!(a.url.rest(b"/icons/caf\xe9"), Some(&b"/caf\xe9"[..]));
        assert_eq!(a.url.rest(b"/iconsets/a.png"), None);
        let slash = one("Alias /icons/ rel/icons/").unwrap();
        assert!(matches!(&slash.target, AliasTarget::Path(p) if p == "/srv/rel/icons/"));
        assert_eq!(slash.url.rest(b"/icons/a.png"), Some(&b"a.png"[..]));
        assert_eq!(slash.url.rest(b"/icons"), None, "Apache: a trailing slash in the alias needs one in the URL");
        assert!(!a.script);
        let s = one("ScriptAlias /cgi-bin/ /usr/lib/cgi-bin/").unwrap();
        assert!(s.script && matches!(&s.target, AliasTarget::Path(p) if p == "/usr/lib/cgi-bin/"));
        assert!(one("ScriptAliasMatch ^/fcgi/(.*) /srv/fcgi/$1").unwrap().script);
    }
}
