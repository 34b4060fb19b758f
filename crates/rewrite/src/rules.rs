//! One context's rewrite directives compiled into a [`RuleSet`] (the
//! server's, a virtual host's, a `<Directory>`'s or an `.htaccess` file's),
//! and how the rule sets of the directory sections on a request's path
//! layer into the one that runs ([`PerDir`]), as Apache merges them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use warren_regex::Regex;

use crate::maps::RewriteMap;
use crate::template::Template;

/// A RewriteCond's `[NC,OR,NV]`.
fn cond_flags(flags: Option<&String>) -> Result<(bool, bool, bool), String> {
    let (mut nocase, mut or_next, mut no_vary) = (false, false, false);
    if let Some(f) = flags {
        for flag in flag_list(f)? {
            match flag.0.to_ascii_lowercase().as_str() {
                "nc" | "nocase" => nocase = true,
                "or" | "ornext" => or_next = true,
                "nv" | "novary" => no_vary = true,
                _ => return Err(format!("RewriteCond: unknown flag '{}'", flag.0)),
            }
        }
    }
    Ok((nocase, or_next, no_vary))
}

/// How a condition's pattern tests its TestString.
#[derive(Clone, Debug)]
pub enum CondTest {
    Regex(Regex),
    /// `<`, `<=`, `>`, `>=`, `=`: compared as strings.
    Lexical(std::cmp::Ordering, bool, String),
    /// `-lt`, `-le`, `-gt`, `-ge`, `-eq` (`-ne` is `-eq` negated).
    Integer(std::cmp::Ordering, bool, i64),
    /// `-f`: a regular file.
    File,
    /// `-s`: a regular file that is not empty.
    FileSize,
    /// `-d`: a directory.
    Directory,
    /// `-l`, `-L`, `-h`: a symbolic link.
    Link,
    /// `-x`: executable by someone.
    Executable,
    /// `-F`: a file the server would serve (exists and access is granted).
    FileLookup,
    /// `-U`: a URL the server would answer without an error.
    UrlLookup,
    /// `RewriteCond expr "..."`: Apache's expression language, compiled by
    /// the configuration (warren_config's `expr`), which depends on this crate.
    Expr(Arc<dyn CondExpr>),
}

/// An expression a `RewriteCond expr` line holds, read by [`ExprLookup`].
pub trait CondExpr: std::fmt::Debug + Send + Sync {
    fn holds(&self, request: &dyn ExprLookup) -> bool;
}

/// What a `RewriteCond expr` sees of the request being rewritten.
pub trait ExprLookup {
    /// A server variable by Apache's name, as `%{NAME}` in a TestString.
    fn variable(&self, name: &str) -> Option<String>;
    fn header(&self, name: &str) -> Option<String>;
    fn env(&self, name: &str) -> Option<String>;
}

#[derive(Clone, Debug)]
pub struct Cond {
    pub input: Template,
    pub test: CondTest,
    pub negate: bool,
    pub nocase: bool,
    /// `[OR]`: this or the next.
    pub or_next: bool,
    /// `[NV]`: a header it reads is not added to Vary.
    pub no_vary: bool,
    /// The line as written, for logs.
    pub text: String,
}

/// A RewriteRule's flags.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub last: bool,
    pub end: bool,
    pub chain: bool,
    pub nocase: bool,
    /// `[R]` (status), or a status for `[F]`, `[G]`, `[R=4xx]`.
    pub redirect: Option<u16>,
    pub status: Option<u16>,
    pub qsappend: bool,
    pub qsdiscard: bool,
    pub qslast: bool,
    /// The substitution ends in `?`: no query string at all.
    pub qsnone: bool,
    pub noescape: bool,
    pub passthrough: bool,
    pub skip: usize,
    pub next_round: Option<u32>,
    pub env: Vec<Template>,
    pub mime_type: Option<Template>,
    /// `[B]`, with its list of characters to escape (all but alphanumerics when none).
    pub escape_backrefs: Option<Option<String>>,
    /// `[BNE=...]`: characters `[B]` leaves alone.
    pub backref_noescapes: Option<String>,
    /// `[BNP]`: a space escaped as %20, not `+`.
    pub backref_no_plus: bool,
    pub discard_path_info: bool,
    pub nosubreq: bool,
    /// `[UNC]`: leading slashes kept.
    pub unc: bool,
    /// `[UnsafeAllow3F]`: a `?` from a back-reference may start the query.
    pub unsafe_allow_3f: bool,
}

#[derive(Debug)]
pub struct Rule {
    pub pattern: Regex,
    pub negate: bool,
    /// None for `-` (no substitution).
    pub substitution: Option<Template>,
    /// The substitution as written (Apache looks at its first two bytes).
    pub substitution_text: String,
    pub conds: Vec<Cond>,
    pub flags: Flags,
    /// `file:line`, for logs.
    pub origin: String,
    /// Whether an `[E=]` of this rule has been refused (it named a variable
    /// the server sets itself): said once, not at every request.
    refusal_said: AtomicBool,
}

impl Rule {
    /// True the first time it is asked: whether a refusal is still to be said.
    pub fn first_refusal(&self) -> bool {
        !self.refusal_said.swap(true, Ordering::Relaxed)
    }
}

/// RewriteOptions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub inherit: bool,
    pub inherit_before: bool,
    pub inherit_down: bool,
    pub inherit_down_before: bool,
    pub ignore_inherit: bool,
    pub merge_base: bool,
    /// AllowNoSlash: a directory named without its slash still runs the rules.
    pub allow_no_slash: bool,
}

/// One context's rewrite configuration, compiled once.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    pub engine: Option<bool>,
    pub options: Option<Options>,
    pub base: Option<String>,
    pub rules: Vec<Arc<Rule>>,
    /// RewriteMap, in server and virtual host contexts only.
    pub maps: HashMap<String, Arc<RewriteMap>>,
    /// The directory of a `<Directory>` section or `.htaccess` file whose
    /// rules these are (the prefix stripped from filenames); None for the
    /// server's and virtual hosts' rules.
    pub directory: Option<String>,
    /// Conditions read and not yet followed by their RewriteRule.
    pending: Vec<Cond>,
    /// Where the pending conditions start, for the error about them.
    pending_origin: Option<String>,
}

impl RuleSet {
    pub fn is_empty(&self) -> bool {
        self.engine.is_none() && self.options.is_none() && self.base.is_none() && self.rules.is_empty() && self.maps.is_empty() && self.pending.is_empty()
    }

    pub fn enabled(&self) -> bool {
        self.engine == Some(true)
    }

    /// Conditions not followed by a rule: Apache drops them silently; warren
    /// says so (the origin of the first).
    pub fn dangling_conditions(&self) -> Option<&str> {
        self.pending_origin.as_deref()
    }

    /// `RewriteEngine On|Off`.
    pub fn set_engine(&mut self, args: &[String]) -> Result<(), String> {
        match args {
            [v] if v.eq_ignore_ascii_case("on") => self.engine = Some(true),
            [v] if v.eq_ignore_ascii_case("off") => self.engine = Some(false),
            _ => return Err("RewriteEngine takes On or Off".into()),
        }
        Ok(())
    }

    /// `RewriteBase /url-path`.
    pub fn set_base(&mut self, args: &[String]) -> Result<(), String> {
        match args {
            [b] if b.starts_with('/') => self.base = Some(b.clone()),
            [_] => return Err("RewriteBase: argument is not a valid URL-path".into()),
            _ => return Err("RewriteBase takes one argument, a URL-path".into()),
        }
        Ok(())
    }

    /// `RewriteOptions option...`.
    pub fn set_options(&mut self, args: &[String]) -> Result<(), String> {
        if args.is_empty() {
            return Err("RewriteOptions takes one or more options".into());
        }
        let mut o = self.options.unwrap_or_default();
        for a in args {
            match a.to_ascii_lowercase().as_str() {
                "inherit" => o.inherit = true,
                "inheritbefore" => o.inherit_before = true,
                "inheritdown" => o.inherit_down = true,
                "inheritdownbefore" => o.inherit_down_before = true,
                "ignoreinherit" => o.ignore_inherit = true,
                "mergebase" => o.merge_base = true,
                "allownoslash" => o.allow_no_slash = true,
                // What these change does not exist in warren: the rules run
                // on every URL path anyway, and contexts are Apache's.
                "allowanyuri" | "ignorecontextinfo" | "legacyprefixdocroot" | "longurloptimization" | "unsafeprefixstat" => {}
                other if other.starts_with("maxredirects=") => {
                    return Err("RewriteOptions MaxRedirects is no longer supported (Apache 2.4 removed it; LimitInternalRecursion applies)".into())
                }
                _ => return Err(format!("RewriteOptions: unknown option '{a}'")),
            }
        }
        self.options = Some(o);
        Ok(())
    }

    /// `RewriteMap name type:source`.
    pub fn add_map(&mut self, args: &[String], resolve: impl Fn(&str) -> std::path::PathBuf) -> Result<(), String> {
        let [name, source, ..] = args else { return Err("RewriteMap takes a name and a type:source".into()) };
        if args.len() > 3 {
            return Err("RewriteMap takes a name, a type:source and at most one option".into());
        }
        let map = RewriteMap::parse(source, resolve)?;
        self.maps.insert(name.clone(), Arc::new(map));
        Ok(())
    }

    /// `RewriteCond expr "expression" [flags]`, the expression compiled.
    pub fn add_expr_cond(&mut self, args: &[String], origin: &str, expr: Arc<dyn CondExpr>) -> Result<(), String> {
        let (_, or_next, no_vary) = cond_flags(args.get(2))?;
        if args.len() > 3 {
            return Err("RewriteCond expr takes an expression and optional [flags]".into());
        }
        self.push_cond(Cond { input: Template::parse(""), test: CondTest::Expr(expr), negate: false, nocase: false, or_next, no_vary, text: args.join(" ") }, origin);
        Ok(())
    }

    fn push_cond(&mut self, cond: Cond, origin: &str) {
        if self.pending.is_empty() {
            self.pending_origin = Some(origin.to_string());
        }
        self.pending.push(cond);
    }

    /// `RewriteCond TestString CondPattern [flags]`.
    pub fn add_cond(&mut self, args: &[String], origin: &str) -> Result<(), String> {
        let (input, pattern, flags) = match args {
            [i, p] => (i, p, None),
            [i, p, f] => (i, p, Some(f)),
            _ => return Err("RewriteCond takes a TestString, a CondPattern and optional [flags]".into()),
        };
        let (mut nocase, or_next, no_vary) = cond_flags(flags)?;
        if input.eq_ignore_ascii_case("expr") {
            return Err("RewriteCond expr (ap_expr) is not supported by warren: use a TestString and CondPattern".into());
        }
        let (negate, pat) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern.as_str()),
        };
        let int = |op: &str| -> Option<(std::cmp::Ordering, bool)> {
            use std::cmp::Ordering::*;
            Some(match op {
                "-lt" => (Less, false),
                "-le" => (Less, true),
                "-gt" => (Greater, false),
                "-ge" => (Greater, true),
                "-eq" => (Equal, true),
                _ => return None,
            })
        };
        let mut negate = negate;
        let test = match pat {
            "-f" => CondTest::File,
            "-s" => CondTest::FileSize,
            "-d" => CondTest::Directory,
            "-l" | "-L" | "-h" => CondTest::Link,
            "-x" => CondTest::Executable,
            "-F" => CondTest::FileLookup,
            "-U" => CondTest::UrlLookup,
            p if p.len() > 3 && p.starts_with('-') && (int(&p[..3]).is_some() || &p[..3] == "-ne") => {
                let (ord, eq) = if &p[..3] == "-ne" {
                    negate = !negate;
                    (std::cmp::Ordering::Equal, true)
                } else {
                    int(&p[..3]).unwrap_or((std::cmp::Ordering::Equal, true))
                };
                CondTest::Integer(ord, eq, atoi(&p[3..]))
            }
            p if p.len() > 1 && (p.starts_with('<') || p.starts_with('>')) => {
                let ord = if p.starts_with('<') { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater };
                match p[1..].strip_prefix('=') {
                    Some(rest) => CondTest::Lexical(ord, true, rest.to_string()),
                    None => CondTest::Lexical(ord, false, p[1..].to_string()),
                }
            }
            p if p.len() > 1 && p.starts_with('=') => {
                let rest = &p[1..];
                CondTest::Lexical(std::cmp::Ordering::Equal, true, if rest == "\"\"" { String::new() } else { rest.to_string() })
            }
            p => {
                let re = if nocase { Regex::caseless(p) } else { Regex::new(p) };
                CondTest::Regex(re.map_err(|e| format!("RewriteCond: cannot compile regular expression '{p}': {e}"))?.at(origin))
            }
        };
        // Apache ignores NC on file and integer tests (with a warning); it
        // changes nothing there, so it is not an error.
        if matches!(test, CondTest::Integer(..) | CondTest::File | CondTest::FileSize | CondTest::Directory | CondTest::Link | CondTest::Executable | CondTest::FileLookup | CondTest::UrlLookup) {
            nocase = false;
        }
        self.push_cond(Cond { input: Template::parse(input), test, negate, nocase, or_next, no_vary, text: args.join(" ") }, origin);
        Ok(())
    }

    /// `RewriteRule Pattern Substitution [flags]`: takes the conditions
    /// read since the last rule.
    pub fn add_rule(&mut self, args: &[String], origin: &str) -> Result<(), String> {
        let (pattern, subst, flag_text) = match args {
            [p, s] => (p, s, None),
            [p, s, f] => (p, s, Some(f)),
            _ => return Err("RewriteRule takes a Pattern, a Substitution and optional [flags]".into()),
        };
        let mut flags = Flags::default();
        if let Some(f) = flag_text {
            for (key, value) in flag_list(f)? {
                rule_flag(&mut flags, &key, value)?;
            }
        }
        let (negate, pat) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern.as_str()),
        };
        let re = if flags.nocase { Regex::caseless(pat) } else { Regex::new(pat) };
        let re = re.map_err(|e| format!("RewriteRule: cannot compile regular expression '{pat}': {e}"))?.at(origin);
        let mut subst = subst.as_str();
        if subst.ends_with('?') {
            if flags.qsappend {
                flags.qslast = true;
            } else {
                // The trailing `?` has said "no query"; it is not part of the path.
                flags.qsnone = true;
                subst = &subst[..subst.len() - 1];
            }
        } else if flags.qsdiscard && !subst.contains('?') {
            flags.qsnone = true;
        }
        let substitution = if subst == "-" { None } else { Some(Template::parse(subst)) };
        let conds = std::mem::take(&mut self.pending);
        self.pending_origin = None;
        self.rules.push(Arc::new(Rule { pattern: re, negate, substitution, substitution_text: subst.to_string(), conds, flags, origin: origin.to_string(), refusal_said: AtomicBool::new(false) }));
        Ok(())
    }
}

/// `[A,B=c,...]` into (key, value) pairs.
fn flag_list(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let inner = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).ok_or_else(|| format!("bad flag delimiters in '{text}': flags are written [A,B=c]"))?;
    Ok(inner
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| match f.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (f.to_string(), None),
        })
        .collect())
}

fn rule_flag(f: &mut Flags, key: &str, value: Option<String>) -> Result<(), String> {
    let lower = key.to_ascii_lowercase();
    let value_or_empty = || value.clone().unwrap_or_default();
    match lower.as_str() {
        "b" | "backrefescaping" => f.escape_backrefs = Some(value.clone().filter(|v| !v.is_empty())),
        "bne" => match value.as_deref() {
            Some(v) if !v.is_empty() => f.backref_noescapes = Some(v.to_string()),
            _ => return Err("RewriteRule: flag 'BNE' wants a list of characters (i.e. [BNE=...])".into()),
        },
        "bnp" | "backrefnoplus" => f.backref_no_plus = true,
        "bctls" => f.escape_backrefs = Some(Some((0u8..=0x20).chain(std::iter::once(0x7f)).map(char::from).collect())),
        "c" | "chain" => f.chain = true,
        "co" | "cookie" => return Err("RewriteRule: flag 'CO' (cookies) is not supported by warren".into()),
        "dpi" | "discardpath" | "d" => f.discard_path_info = true,
        "e" | "env" => f.env.push(Template::parse(&value_or_empty())),
        "end" => f.end = true,
        "f" | "forbidden" => f.status = Some(403),
        "g" | "gone" => f.status = Some(410),
        // A handler chosen per request would let an .htaccess file run a file
        // through a FastCGI application its server config does not give it.
        "h" | "handler" => return Err("RewriteRule: flag 'H' is not supported by warren: give the files a handler with SetHandler in <Files> or <FilesMatch>".into()),
        "l" | "last" => f.last = true,
        "ne" | "noescape" => f.noescape = true,
        "n" | "next" => {
            let n = match value.as_deref() {
                Some(v) if !v.is_empty() => v.parse().map_err(|_| format!("RewriteRule: [N={v}] is not a number"))?,
                _ => crate::MAX_ROUNDS,
            };
            f.next_round = Some(n);
        }
        "ns" | "nosubreq" => f.nosubreq = true,
        "nc" | "nocase" => f.nocase = true,
        "p" | "proxy" => return Err("RewriteRule: flag 'P' (proxy) is not supported by warren: use ProxyPass to a FastCGI backend".into()),
        "pt" | "passthrough" => f.passthrough = true,
        "qsa" | "qsappend" => f.qsappend = true,
        "qsd" | "qsdiscard" => f.qsdiscard = true,
        "qsl" | "qslast" => f.qslast = true,
        "r" | "redirect" => {
            let status = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                None | Some("") => 302,
                Some("permanent") => 301,
                Some("temp") => 302,
                Some("seeother") => 303,
                Some(n) if n.starts_with(|c: char| c.is_ascii_digit()) => {
                    let s: u16 = n.parse().ok().filter(|s| (100..=599).contains(s) && known_status(*s)).ok_or_else(|| format!("RewriteRule: invalid HTTP response code '{n}' for flag 'R'"))?;
                    if !(300..400).contains(&s) {
                        f.status = Some(s);
                    }
                    s
                }
                Some(other) => return Err(format!("RewriteRule: invalid HTTP response code '{other}' for flag 'R'")),
            };
            f.redirect = Some(status);
        }
        "s" | "skip" => f.skip = value.as_deref().map_or(0, |v| atoi(v).max(0) as usize),
        "t" | "type" => f.mime_type = Some(Template::parse(&value_or_empty())),
        "unc" => f.unc = true,
        "unsafeallow3f" => f.unsafe_allow_3f = true,
        // warren never stats a substitution's first segment on its own (Apache 2.4.60's prefix_stat check).
        "unsafeprefixstat" => {}
        _ => return Err(format!("RewriteRule: unknown flag '{key}'")),
    }
    Ok(())
}

/// The statuses Apache knows (ap_index_of_response): others are refused for `[R=]`.
fn known_status(s: u16) -> bool {
    matches!(s, 100..=103 | 200..=208 | 226 | 300..=308 | 400..=418 | 421..=424 | 426 | 428 | 429 | 431 | 451 | 500..=508 | 510 | 511)
}

/// C's atoi: leading blanks, a sign, digits; anything else ends it.
pub fn atoi(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add((b - b'0') as i64);
    }
    if neg {
        -n
    } else {
        n
    }
}

/// The rule set that runs for a request in per-directory context: the
/// directory sections and `.htaccess` files on its path, layered as
/// Apache's `config_perdir_merge` does. Each layer that holds rewrite
/// directives replaces the rules of those before it, unless its
/// RewriteOptions say to inherit them.
#[derive(Clone, Debug, Default)]
pub struct PerDir<'a> {
    pub engine: bool,
    pub options: Options,
    pub base: Option<&'a str>,
    /// The directory (ending in `/`) of the last layer with rewrite directives.
    pub directory: Option<String>,
    pub rules: Vec<&'a Rule>,
}

impl<'a> PerDir<'a> {
    /// Puts `set`, the directives of the section for `directory`, over what is there.
    pub fn layer(&mut self, set: &'a RuleSet, directory: &str) {
        // Only a section's own directives count, not its place: see `RuleSet::directory`.
        if let Some(e) = set.engine {
            self.engine = e;
        }
        let base_options = self.options;
        if let Some(o) = set.options {
            self.options = o;
        }
        let o = self.options;
        if o.merge_base {
            if set.base.is_some() {
                self.base = set.base.as_deref();
            }
        } else {
            self.base = set.base.as_deref();
        }
        let mut dir = directory.to_string();
        if !dir.ends_with('/') {
            dir.push('/');
        }
        self.directory = Some(dir);
        let own = set.rules.iter().map(|r| &**r);
        let inherited = std::mem::take(&mut self.rules);
        self.rules = if o.inherit || (base_options.inherit_down && !o.ignore_inherit) {
            own.chain(inherited).collect()
        } else if o.inherit_before || (base_options.inherit_down_before && !o.ignore_inherit) {
            inherited.into_iter().chain(own).collect()
        } else {
            own.collect()
        };
    }
}

/// A virtual host's server-context rule set with the main server's, as
/// Apache's `config_server_merge` does: the engine's state and options are
/// inherited, the rules and maps only with RewriteOptions Inherit (or
/// InheritBefore, or the main server's InheritDown).
pub fn merge_server(main: &RuleSet, vhost: &RuleSet) -> RuleSet {
    let mut out = vhost.clone();
    out.engine = vhost.engine.or(main.engine);
    out.options = vhost.options.or(main.options);
    let o = out.options.unwrap_or_default();
    let mo = main.options.unwrap_or_default();
    let after = o.inherit || (mo.inherit_down && !o.ignore_inherit);
    let before = !after && (o.inherit_before || (mo.inherit_down_before && !o.ignore_inherit));
    if after || before {
        for (k, v) in &main.maps {
            out.maps.entry(k.clone()).or_insert_with(|| v.clone());
        }
        out.rules = if after { vhost.rules.iter().chain(&main.rules).cloned().collect() } else { main.rules.iter().chain(&vhost.rules).cloned().collect() };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn rules_take_the_conditions_before_them() {
        let mut s = RuleSet::default();
        s.add_cond(&args("%{REQUEST_FILENAME} !-f"), "t:1").unwrap();
        s.add_cond(&args("%{HTTP_HOST} ^www\\. [NC,OR]"), "t:2").unwrap();
        assert_eq!(s.dangling_conditions(), Some("t:1"));
        s.add_rule(&args("^(.*)$ /index.php?q=$1 [L,QSA]"), "t:3").unwrap();
        assert!(s.dangling_conditions().is_none());
        let r = &s.rules[0];
        assert_eq!(r.conds.len(), 2);
        assert!(r.conds[0].negate && matches!(r.conds[0].test, CondTest::File));
        assert!(r.conds[1].nocase && r.conds[1].or_next);
        assert!(r.flags.last && r.flags.qsappend);
    }

    #[test]
    fn flags_and_their_errors() {
        let mut s = RuleSet::default();
        s.add_rule(&args("^a - [R=404]"), "t:1").unwrap();
        assert_eq!((s.rules[0].flags.redirect, s.rules[0].flags.status), (Some(404), Some(404)));
        s.add_rule(&args("^a /b [R=permanent,E=X:1,E=!Y,T=text/plain,S=2]"), "t:2").unwrap();
        let f = &s.rules[1].flags;
        assert_eq!((f.redirect, f.status, f.env.len(), f.skip), (Some(301), None, 2, 2));
        s.add_rule(&args("^a /b?"), "t:3").unwrap();
        assert!(s.rules[2].flags.qsnone);
        assert!(s.add_rule(&args("^a /b [Q]"), "t:4").unwrap_err().contains("unknown flag 'Q'"));
        assert!(s.add_rule(&args("^a /b [R=999]"), "t:4").unwrap_err().contains("invalid HTTP response code"));
        assert!(s.add_rule(&args("^(a /b"), "t:4").unwrap_err().contains("cannot compile"));
        assert!(s.add_rule(&args("^a /b L"), "t:4").unwrap_err().contains("flag delimiters"));
        assert!(s.add_rule(&args("^a http://x/ [P]"), "t:4").unwrap_err().contains("not supported"));
    }

    #[test]
    fn condition_patterns() {
        let mut s = RuleSet::default();
        for c in ["a -ne5", "a >=b", "a =\"\"", "a <b", "a -U"] {
            s.add_cond(&args(c), "t").unwrap();
        }
        let p = &s.pending;
        assert!(matches!(p[0].test, CondTest::Integer(std::cmp::Ordering::Equal, true, 5)) && p[0].negate);
        assert!(matches!(&p[1].test, CondTest::Lexical(std::cmp::Ordering::Greater, true, b) if b == "b"));
        assert!(matches!(&p[2].test, CondTest::Lexical(std::cmp::Ordering::Equal, true, b) if b.is_empty()));
        assert!(matches!(&p[3].test, CondTest::Lexical(std::cmp::Ordering::Less, false, b) if b == "b"));
        assert!(matches!(p[4].test, CondTest::UrlLookup));
        assert!(s.add_cond(&args("expr \"%{X}==1\""), "t").is_err());
    }

    #[test]
    fn per_directory_layers_replace_unless_inherited() {
        let mut parent = RuleSet::default();
        parent.set_engine(&args("On")).unwrap();
        parent.add_rule(&args("^p /p"), "p:1").unwrap();
        let mut child = RuleSet::default();
        child.add_rule(&args("^c /c"), "c:1").unwrap();
        let mut eff = PerDir::default();
        eff.layer(&parent, "/srv");
        eff.layer(&child, "/srv/sub");
        assert!(eff.engine);
        assert_eq!(eff.rules.len(), 1);
        assert_eq!(eff.directory.as_deref(), Some("/srv/sub/"));
        child.set_options(&args("Inherit")).unwrap();
        let mut eff = PerDir::default();
        eff.layer(&parent, "/srv");
        eff.layer(&child, "/srv/sub");
        assert_eq!(eff.rules.iter().map(|r| r.origin.as_str()).collect::<Vec<_>>(), ["c:1", "p:1"]);
    }

    #[test]
    fn virtual_hosts_inherit_rules_only_when_asked() {
        let mut main = RuleSet::default();
        main.set_engine(&args("On")).unwrap();
        main.add_rule(&args("^/m /m"), "m:1").unwrap();
        let mut vh = RuleSet::default();
        vh.add_rule(&args("^/v /v"), "v:1").unwrap();
        let m = merge_server(&main, &vh);
        assert!(m.enabled());
        assert_eq!(m.rules.len(), 1);
        vh.set_options(&args("InheritBefore")).unwrap();
        let m = merge_server(&main, &vh);
        assert_eq!(m.rules.iter().map(|r| r.origin.as_str()).collect::<Vec<_>>(), ["m:1", "v:1"]);
    }
}
