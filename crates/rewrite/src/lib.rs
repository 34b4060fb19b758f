//! mod_rewrite's rule engine, with Apache's semantics and without I/O of
//! requests: the handler gives it a request through [`Request`] and acts on
//! what it answers.
//!
//! - [`rules`]: one context's directives (RewriteEngine, RewriteOptions,
//!   RewriteBase, RewriteCond, RewriteRule, RewriteMap) compiled once into a
//!   [`RuleSet`]: its [`Rule`]s, each with its [`Cond`]itions and
//!   [`Flags`]; and how per-directory rule sets layer ([`PerDir`]).
//! - [`template`]: a TestString or Substitution compiled into pieces
//!   (`$N`, `%N`, `%{VAR}`, `${map:key|default}`), expanded per request.
//! - [`maps`]: RewriteMap's `txt:` (re-read when the file changes), `rnd:`
//!   and `int:` maps.
//! - [`engine`]: one pass of a rule list over a request's [`State`] (its
//!   current filename or URL and query), as Apache's `apply_rewrite_list`:
//!   the answer is an [`Applied`].
//! - [`escape`]: the escaping of back-references (`[B]`) and of redirect
//!   URLs, and the unescaping of `int:unescape`.
//!
//! The handler's `rewrite.rs` runs it in Apache's two contexts (server and
//! per-directory). `tests/apache/` holds the cases checked against Apache
//! itself (`generate.sh` runs Debian's Apache on them).

pub mod engine;
pub mod escape;
pub mod maps;
pub mod rules;
pub mod template;

pub use engine::{apply, Applied, Bounds, CpuDeadline, Request, State};
pub use maps::RewriteMap;
pub use rules::{Cond, Flags, PerDir, Rule, RuleSet};

/// How many times a rule with `[N]` may start the list again (Apache's
/// REWRITE_MAX_ROUNDS) unless `[N=n]` says otherwise.
pub const MAX_ROUNDS: u32 = 10000;

/// The schemes after which a substitution is a URL, not a path, with the
/// length of `scheme://` and whether a query string makes sense for it.
pub fn absolute_uri(s: impl AsRef<[u8]>) -> Option<(usize, bool)> {
    let s = s.as_ref();
    const SCHEMES: &[(&str, bool)] = &[
        ("ajp://", true),
        ("balancer://", true),
        ("ftp://", false),
        ("fcgi://", true),
        ("gopher://", false),
        ("http://", true),
        ("https://", true),
        ("h2://", true),
        ("h2c://", true),
        ("ldap://", false),
        ("mailto:", true),
        ("news:", false),
        ("nntp://", false),
        ("scgi://", true),
        ("uwsgi://", true),
        ("ws://", true),
        ("wss://", true),
        ("unix:", true),
    ];
    if s.starts_with(b"/") || s.len() <= 5 {
        return None;
    }
    SCHEMES.iter().find(|(scheme, _)| s.len() > scheme.len() && s[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())).map(|(scheme, qs)| (scheme.len(), *qs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_uris_by_scheme() {
        assert_eq!(absolute_uri("http://x/"), Some((7, true)));
        assert_eq!(absolute_uri("HTTPS://x"), Some((8, true)));
        assert_eq!(absolute_uri("mailto:a@b"), Some((7, true)));
        assert_eq!(absolute_uri("/http://x"), None);
        assert_eq!(absolute_uri("foo://bar"), None);
        assert_eq!(absolute_uri("http://"), None);
    }
}
