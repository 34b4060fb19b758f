//! One pass of a rule list over a request, as Apache's `apply_rewrite_list`
//! and `apply_rewrite_rule`: each rule's pattern is matched against the
//! current filename (in per-directory context with the directory's prefix
//! stripped), then its conditions are checked, then the substitution is
//! expanded and split into a path and a query string. The [`State`] is
//! what a request carries between rules; the [`Request`] is how the engine
//! reads the rest of it.

use std::cell::Cell;
use std::cmp::Ordering;
use std::time::Duration;

use crate::escape;
use crate::maps::RewriteMap;
use crate::rules::{atoi, Cond, CondTest, Rule};
use crate::template::{Piece, Template};

/// What the engine reads of a request, and the environment it may change.
pub trait Request {
    /// A server variable by Apache's name, in upper case (`REQUEST_URI`,
    /// `HTTP_HOST`, `HTTPS`, `SERVER_PORT`, `THE_REQUEST`...). The engine
    /// answers `REQUEST_FILENAME`, `SCRIPT_FILENAME` and `QUERY_STRING`
    /// itself from its state.
    fn variable(&self, name: &str) -> Option<String>;
    /// [`Request::variable`] as bytes, for those that need not be UTF-8
    /// (REQUEST_URI is the decoded path: `%{REQUEST_URI}` of `/caf%E9`
    /// ends in the byte E9, as Apache's r->uri); what the rules expand.
    fn variable_bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.variable(name).map(String::into_bytes)
    }
    /// A request header, by name.
    fn header(&self, name: &str) -> Option<String>;
    /// An environment variable.
    fn env(&self, name: &str) -> Option<String>;
    /// Sets (Some) or removes (None) an environment variable, for `by`'s `[E=]`.
    fn set_env(&mut self, name: &str, value: Option<String>, by: &Rule);
    fn map(&self, name: &str) -> Option<&RewriteMap>;
    /// `-F`: whether the server would serve this file.
    fn file_lookup(&self, path: &str) -> bool;
    /// `-U`: whether the server would answer this URL path without an error.
    fn url_lookup(&self, path: &str) -> bool;
    /// Chooses one of `n` alternatives (`rnd:` maps).
    fn pick(&self, n: usize) -> usize;
    /// `path` as a full URL on this server (`[R]`: Apache's fully_qualify_uri).
    fn qualify(&self, path: &[u8]) -> Vec<u8>;
}

/// The request as the rules rewrite it. The filename, path info and query
/// are bytes, as Apache's `r->filename` and `r->args` are: a URL path
/// decodes to bytes that need not be UTF-8 (`/caf%E9`), and a rule's
/// pattern and back-references see those bytes, not a reading of them.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// Apache's `r->filename`: the URL path in server context, a filesystem
    /// path in per-directory context, or an absolute URL once rewritten to one.
    pub filename: Vec<u8>,
    /// The query string, without its `?`.
    pub query: Option<Vec<u8>>,
    /// `[T=]`, lower-cased.
    pub mime_type: Option<String>,
    /// The status a rule set (`[R=code]`, `[F]`, `[G]`).
    pub status: Option<u16>,
    /// Request headers the matching rules' conditions read: the answer varies on them.
    pub vary: Vec<String>,
    /// `[END]` was hit: no more rewriting for this request, internal
    /// redirects included.
    pub end: bool,
    /// `[DPI]` was hit in per-directory context.
    pub discard_path_info: bool,
    /// Apache's `r->path_info` in per-directory context: what of the
    /// mapped path goes on past a file (`/xmlrpc.php` + `/extra/path`).
    /// `REQUEST_FILENAME` is the file alone; a rule's pattern sees the two
    /// joined (mod_rewrite's "add path info postfix"), until `[DPI]`.
    pub path_info: Vec<u8>,
    /// The `file:line` of the last rule that changed the filename, for
    /// the log line of a result that is refused.
    pub changed_by: Option<String>,
}

/// What a pass over a rule list did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// No rule changed the filename (rules with `-` may have set variables).
    Unchanged,
    Changed { noescape: bool, passthrough: bool },
    /// Answer with this status (`[F]`, `[G]`, `[R=4xx]`, or 500 for a loop).
    Status(u16),
    /// The deadline passed before the rule at this index (of the list
    /// given) or one of its conditions was tried: the request gets a 500.
    OutOfTime { rule: usize },
}

/// What one run of a rule list may take.
#[derive(Clone, Copy, Debug)]
pub struct Bounds<'b> {
    /// The longest filename (Apache: twice LimitRequestLine): past it a
    /// loop of rules is stopped with a 500.
    pub max_len: usize,
    /// No rule nor condition is tried past it, so that slow patterns (each
    /// bounded by its regex limits) cannot add up to seconds.
    pub deadline: Option<&'b CpuDeadline>,
}

/// A budget of the calling thread's CPU time: what the rules themselves
/// spend counts, not the time the thread waits for a CPU on a loaded
/// machine (which would turn ordinary rules into 500s). A request's rules
/// run on one thread from start to end.
///
/// The clock starts at the first check, when a rule is about to be tried:
/// reading a thread's CPU time is a system call (no vDSO for this clock),
/// which a request that meets no rule (a static file on a host without
/// rewrite rules) should not pay for.
#[derive(Debug)]
pub struct CpuDeadline {
    budget: Duration,
    /// The thread's CPU time at which the budget is spent, once started.
    at: Cell<Option<Duration>>,
}

impl CpuDeadline {
    /// `budget` of this thread's CPU time from the first [`CpuDeadline::passed`].
    pub fn after(budget: Duration) -> CpuDeadline {
        CpuDeadline { budget, at: Cell::new(None) }
    }

    /// Whether the budget is spent; the first call starts its clock.
    pub fn passed(&self) -> bool {
        let now = thread_cpu_time();
        let at = self.at.get().unwrap_or_else(|| {
            self.at.set(Some(now + self.budget));
            now + self.budget
        });
        now >= at
    }
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given, nothing else.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        // Cannot happen for this clock on Linux; never stop rules for it.
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Groups of the last match, owned: the text they came from changes.
type Groups = Vec<Option<Vec<u8>>>;

struct Ctx<'r, R: Request + ?Sized> {
    req: &'r mut R,
    deadline: Option<&'r CpuDeadline>,
    rule_groups: Groups,
    cond_groups: Groups,
    vary_this: Vec<String>,
}

/// Runs `rules` over `state`, within `bounds`. `perdir` is the directory
/// (ending in `/`) in per-directory context.
pub fn apply<R: Request + ?Sized>(rules: &[&Rule], perdir: Option<&[u8]>, state: &mut State, req: &mut R, bounds: Bounds) -> Applied {
    let mut changed = Applied::Unchanged;
    let mut rounds = 1u32;
    let mut ctx = Ctx { req, deadline: bounds.deadline, rule_groups: Vec::new(), cond_groups: Vec::new(), vary_this: Vec::new() };
    'again: loop {
        let mut i = 0;
        while i < rules.len() {
            let rule = rules[i];
            match apply_rule(rule, perdir, state, &mut ctx) {
                RuleResult::OutOfTime => return Applied::OutOfTime { rule: i },
                RuleResult::NoMatch => {
                    // A chain breaks: the rules chained to this one are skipped.
                    let mut r = rule;
                    while r.flags.chain && i + 1 < rules.len() {
                        i += 1;
                        r = rules[i];
                    }
                }
                RuleResult::Unsafe => return Applied::Status(403),
                result => {
                    if state.filename.len() > bounds.max_len {
                        return Applied::Status(500);
                    }
                    if let Some(s) = rule.flags.status {
                        state.status = Some(s);
                        return Applied::Status(s);
                    }
                    if result == RuleResult::Match {
                        changed = Applied::Changed { noescape: rule.flags.noescape, passthrough: false };
                        state.changed_by = Some(rule.origin.clone());
                    }
                    if rule.flags.passthrough {
                        return Applied::Changed { noescape: rule.flags.noescape, passthrough: true };
                    }
                    if rule.flags.end {
                        state.end = true;
                        break 'again;
                    }
                    if rule.flags.last {
                        break 'again;
                    }
                    if let Some(max) = rule.flags.next_round {
                        rounds += 1;
                        if rounds >= max {
                            return Applied::Status(500);
                        }
                        continue 'again;
                    }
                    i += rule.flags.skip;
                }
            }
            i += 1;
        }
        break;
    }
    changed
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RuleResult {
    NoMatch,
    /// A `?` from an expansion would have started the query string.
    Unsafe,
    Match,
    /// Matched, with no substitution (`-`).
    NoSub,
    /// The deadline passed before its pattern or a condition was tried.
    OutOfTime,
}

impl<R: Request + ?Sized> Ctx<'_, R> {
    fn out_of_time(&self) -> bool {
        self.deadline.is_some_and(CpuDeadline::passed)
    }
}

fn apply_rule<R: Request + ?Sized>(rule: &Rule, perdir: Option<&[u8]>, state: &mut State, ctx: &mut Ctx<R>) -> RuleResult {
    let with_path_info;
    let mut uri: &[u8] = if perdir.is_some() && !state.path_info.is_empty() {
        with_path_info = [&state.filename[..], &state.path_info[..]].concat();
        &with_path_info
    } else {
        &state.filename
    };
    if let Some(dir) = perdir {
        if let Some(rest) = uri.strip_prefix(dir) {
            uri = rest;
        }
    }
    if ctx.out_of_time() {
        return RuleResult::OutOfTime;
    }
    let caps = rule.pattern.captures_bytes(uri);
    if caps.is_some() == rule.negate {
        return RuleResult::NoMatch;
    }
    ctx.rule_groups = match (&caps, rule.negate) {
        (Some(c), false) => (0..c.len()).map(|n| c.get_bytes(n).map(<[u8]>::to_vec)).collect(),
        _ => Vec::new(),
    };
    ctx.cond_groups = Vec::new();
    ctx.vary_this.clear();
    let mut vary = Vec::new();
    let mut i = 0;
    while i < rule.conds.len() {
        let c = &rule.conds[i];
        if ctx.out_of_time() {
            return RuleResult::OutOfTime;
        }
        let ok = apply_cond(c, state, ctx);
        if c.no_vary {
            ctx.vary_this.clear();
        }
        if c.or_next {
            if !ok {
                ctx.vary_this.clear();
                i += 1;
                continue;
            }
            // One of the ORed conditions holds: the rest of them are not tested.
            while i < rule.conds.len() && rule.conds[i].or_next {
                i += 1;
            }
        } else if !ok {
            return RuleResult::NoMatch;
        }
        vary.append(&mut ctx.vary_this);
        i += 1;
    }
    for v in vary {
        if !state.vary.iter().any(|x| x.eq_ignore_ascii_case(&v)) {
            state.vary.push(v);
        }
    }
    let mut qmarks = Vec::new();
    let new = rule.substitution.as_ref().map(|t| expand_marking(t, state, ctx, Some(rule), &mut qmarks));
    // A `?` that a back-reference or variable brought (a decoded %3f) must
    // not start a query string: Apache 2.4.60 refuses it (UnsafeAllow3F).
    let deciding = if rule.flags.qslast { qmarks.last() } else { qmarks.first() };
    if deciding == Some(&true) && !rule.flags.unsafe_allow_3f {
        state.status = Some(403);
        return RuleResult::Unsafe;
    }
    for e in &rule.flags.env {
        // The environment holds text: bytes that are not UTF-8 are read as such.
        let spec = String::from_utf8_lossy(&expand(e, state, ctx, None)).into_owned();
        match spec.strip_prefix('!') {
            Some(name) => ctx.req.set_env(name, None, rule),
            None => {
                let (name, value) = spec.split_once(':').unwrap_or((&spec, ""));
                ctx.req.set_env(name, Some(value.to_string()), rule);
            }
        }
    }
    let Some(mut new) = new else {
        force_type(rule, state, ctx);
        return RuleResult::NoSub;
    };
    let mut prefix_added = false;
    if !new.starts_with(b"/") && crate::absolute_uri(&new).is_none() {
        if let Some(dir) = perdir {
            new = [dir, &new].concat();
            prefix_added = true;
        } else if rule.flags.redirect.is_none() {
            // A relative substitution in server context is a path from the root.
            new.insert(0, b'/');
            prefix_added = true;
        }
    }
    state.filename = new;
    if perdir.is_some() && rule.flags.discard_path_info {
        state.discard_path_info = true;
        state.path_info.clear();
    }
    split_query(state, &rule.flags);
    if let Some(code) = rule.flags.redirect {
        if crate::absolute_uri(&state.filename).is_none() {
            state.filename = ctx.req.qualify(&state.filename);
        }
        state.status = Some(code);
        return RuleResult::Match;
    }
    if !(rule.flags.unc || prefix_added || rule.substitution_text.starts_with("//")) {
        // Leading slashes merged, unless they were literal in the substitution.
        let slashes = state.filename.iter().take_while(|&&b| b == b'/').count();
        if slashes > 1 {
            state.filename.drain(..slashes - 1);
        }
    }
    force_type(rule, state, ctx);
    RuleResult::Match
}

fn force_type<R: Request + ?Sized>(rule: &Rule, state: &mut State, ctx: &mut Ctx<R>) {
    if let Some(t) = &rule.flags.mime_type {
        let v = expand(t, state, ctx, Some(rule));
        if !v.is_empty() {
            state.mime_type = Some(String::from_utf8_lossy(&v).to_ascii_lowercase());
        }
    }
}

/// Apache's `splitout_queryargs`: a `?` in the new filename starts its
/// query string, which replaces the request's (or is put before it with
/// `[QSA]`); `[QSD]` drops the request's; a substitution ending in `?`
/// leaves none.
fn split_query(state: &mut State, flags: &crate::rules::Flags) {
    if flags.qsnone {
        state.query = None;
        return;
    }
    let skip = match crate::absolute_uri(&state.filename) {
        Some((_, false)) => {
            state.query = None;
            return;
        }
        Some((n, true)) => n,
        None => 0,
    };
    if flags.qsdiscard {
        state.query = None;
    }
    let tail = &state.filename[skip..];
    let at = if flags.qslast { tail.iter().rposition(|&b| b == b'?') } else { tail.iter().position(|&b| b == b'?') };
    let Some(at) = at else { return };
    let q = tail[at + 1..].to_vec();
    state.filename.truncate(skip + at);
    let mut args = if flags.qsappend {
        if q.is_empty() {
            state.query.take()
        } else {
            Some(match state.query.take() {
                Some(old) => [&q[..], b"&", &old[..]].concat(),
                None => [&q[..], b"&"].concat(),
            })
        }
    } else {
        Some(q)
    };
    if let Some(a) = &mut args {
        if a.is_empty() {
            args = None;
        } else if a.ends_with(b"&") {
            a.pop();
        }
    }
    state.query = args;
}

fn apply_cond<R: Request + ?Sized>(c: &Cond, state: &State, ctx: &mut Ctx<R>) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let input = expand(&c.input, state, ctx, None);
    let fs = std::path::Path::new(std::ffi::OsStr::from_bytes(&input));
    let meta = |follow: bool| if follow { std::fs::metadata(fs) } else { std::fs::symlink_metadata(fs) };
    // What the request and the maps read is text.
    let text = || String::from_utf8_lossy(&input);
    // Apache compares lengths first, then bytes (NC: strcasecmp, as C's).
    let cmp = |a: &[u8], b: &[u8]| if c.nocase { a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase()) } else { a.len().cmp(&b.len()).then_with(|| a.cmp(b)) };
    let ok = match &c.test {
        CondTest::File => meta(true).is_ok_and(|m| m.is_file()),
        CondTest::FileSize => meta(true).is_ok_and(|m| m.is_file() && m.len() > 0),
        CondTest::Directory => meta(true).is_ok_and(|m| m.is_dir()),
        CondTest::Link => meta(false).is_ok_and(|m| m.file_type().is_symlink()),
        CondTest::Executable => {
            use std::os::unix::fs::PermissionsExt;
            meta(true).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        }
        CondTest::FileLookup => !input.is_empty() && ctx.req.file_lookup(&text()),
        CondTest::UrlLookup => !input.is_empty() && ctx.req.url_lookup(&text()),
        CondTest::Expr(e) => e.holds(&Lookup { req: &*ctx.req, state }),
        CondTest::Lexical(ord, or_equal, pat) => {
            let o = cmp(&input, pat.as_bytes());
            o == *ord || (*or_equal && o == Ordering::Equal)
        }
        CondTest::Integer(ord, or_equal, n) => {
            let o = atoi(&text()).cmp(n);
            o == *ord || (*or_equal && o == Ordering::Equal)
        }
        CondTest::Regex(re) => match re.captures_bytes(&input) {
            Some(caps) => {
                if !c.negate {
                    ctx.cond_groups = (0..caps.len()).map(|n| caps.get_bytes(n).map(<[u8]>::to_vec)).collect();
                }
                true
            }
            None => false,
        },
    };
    ok != c.negate
}

/// What a `RewriteCond expr` reads: the request, and the engine's state
/// for the variables it answers itself.
struct Lookup<'a, R: ?Sized> {
    req: &'a R,
    state: &'a State,
}

impl<R: Request + ?Sized> crate::rules::ExprLookup for Lookup<'_, R> {
    fn variable(&self, name: &str) -> Option<String> {
        match name {
            "REQUEST_FILENAME" | "SCRIPT_FILENAME" => Some(String::from_utf8_lossy(&self.state.filename).into_owned()),
            "QUERY_STRING" => Some(String::from_utf8_lossy(self.state.query.as_deref().unwrap_or_default()).into_owned()),
            _ => self.req.variable(name),
        }
    }

    fn header(&self, name: &str) -> Option<String> {
        self.req.header(name)
    }

    fn env(&self, name: &str) -> Option<String> {
        self.req.env(name)
    }
}

/// A template expanded for the request; `rule` is given where `[B]`
/// applies to back-references.
fn expand<R: Request + ?Sized>(t: &Template, state: &State, ctx: &mut Ctx<R>, rule: Option<&Rule>) -> Vec<u8> {
    expand_marking(t, state, ctx, rule, &mut Vec::new())
}

/// [`expand`], noting for each `?` of the result whether an expansion
/// (true) or the template's own text (false) brought it.
fn expand_marking<R: Request + ?Sized>(t: &Template, state: &State, ctx: &mut Ctx<R>, rule: Option<&Rule>, qmarks: &mut Vec<bool>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in &t.pieces {
        let before = out.len();
        expand_piece(p, state, ctx, rule, &mut out);
        let literal = matches!(p, Piece::Literal(_));
        qmarks.extend(out[before..].iter().filter(|&&b| b == b'?').map(|_| !literal));
    }
    out
}

fn expand_piece<R: Request + ?Sized>(p: &Piece, state: &State, ctx: &mut Ctx<R>, rule: Option<&Rule>, out: &mut Vec<u8>) {
    {
        match p {
            Piece::Literal(s) => out.extend_from_slice(s.as_bytes()),
            Piece::RuleGroup(n) | Piece::CondGroup(n) => {
                let groups = if matches!(p, Piece::RuleGroup(_)) { &ctx.rule_groups } else { &ctx.cond_groups };
                let Some(Some(g)) = groups.get(*n) else { return };
                match rule.map(|r| &r.flags) {
                    Some(f) if f.escape_backrefs.is_some() => {
                        let only = f.escape_backrefs.as_ref().and_then(|o| o.as_deref());
                        out.extend_from_slice(&escape::escape_backref(g, only, f.backref_noescapes.as_deref(), f.backref_no_plus));
                    }
                    _ => out.extend_from_slice(g),
                }
            }
            Piece::Variable(name) => out.extend_from_slice(&variable(name, state, ctx)),
            Piece::Map { name, key, default } => {
                // Maps are text files: a key that is not UTF-8 is looked up as read.
                let k = String::from_utf8_lossy(&expand(key, state, ctx, rule)).into_owned();
                let found = ctx.req.map(name).and_then(|m| m.lookup(&k, |n| ctx.req.pick(n)));
                match found {
                    Some(v) => out.extend_from_slice(v.as_bytes()),
                    None => {
                        if let Some(d) = default {
                            out.extend_from_slice(&expand(d, state, ctx, rule));
                        }
                    }
                }
            }
        }
    }
}

/// Headers Apache's rewrite variables name, by variable.
const HEADER_VARS: &[(&str, &str)] = &[
    ("HTTP_ACCEPT", "Accept"),
    ("HTTP_COOKIE", "Cookie"),
    ("HTTP_FORWARDED", "Forwarded"),
    ("HTTP_HOST", "Host"),
    ("HTTP_PROXY_CONNECTION", "Proxy-Connection"),
    ("HTTP_REFERER", "Referer"),
    ("HTTP_USER_AGENT", "User-Agent"),
];

fn variable<R: Request + ?Sized>(name: &str, state: &State, ctx: &mut Ctx<R>) -> Vec<u8> {
    if let Some((kind, rest)) = name.split_once(':') {
        if rest.is_empty() {
            return Vec::new();
        }
        return match kind.to_ascii_uppercase().as_str() {
            "ENV" => ctx.req.env(rest).or_else(|| std::env::var(rest).ok()).unwrap_or_default().into_bytes(),
            "HTTP" => header(rest, ctx).into_bytes(),
            "SSL" => Vec::new(),
            // Look-ahead sub-requests: the value as the current request has it.
            "LA-U" | "LA-F" => variable(rest, state, ctx),
            _ => Vec::new(),
        };
    }
    let upper = name.to_ascii_uppercase();
    match upper.as_str() {
        "REQUEST_FILENAME" | "SCRIPT_FILENAME" => state.filename.clone(),
        "QUERY_STRING" => state.query.clone().unwrap_or_default(),
        _ => match HEADER_VARS.iter().find(|(v, _)| *v == upper) {
            Some((_, h)) => header(h, ctx).into_bytes(),
            None => ctx.req.variable_bytes(&upper).unwrap_or_default(),
        },
    }
}

fn header<R: Request + ?Sized>(name: &str, ctx: &mut Ctx<R>) -> String {
    match ctx.req.header(name) {
        Some(v) => {
            // RFC 7231 7.1.4: a response never varies on Host.
            if !name.eq_ignore_ascii_case("host") {
                ctx.vary_this.push(name.to_string());
            }
            v
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
