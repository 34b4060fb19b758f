//! Apache's expression language (`ap_expr`, https://httpd.apache.org/docs/2.4/expr.html):
//! parsed once when the configuration or an `.htaccess` file is read
//! ([`Expr::parse`]), evaluated per request against what the handler
//! knows of it ([`Facts`]). Used by `<If>`/`<ElseIf>`/`<Else>` and
//! `Require expr`.
//!
//! What warren leaves out, refused when read so that no condition silently
//! turns out false: the sub-request tests (`-F`, `-U`, `-A`), `md5`, `sha1`,
//! `note`, list functions other than `{...}`. File-reading functions and
//! file tests are refused in `.htaccess` (Apache's "restricted"): a tenant
//! could otherwise probe or read any file the server may read; `osenv` too,
//! and there `env` reads the request's variables only.

use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine;
use warren_regex::Regex;

/// What an expression can look at, given by the handler per request.
pub trait Facts {
    /// A named variable (`%{REQUEST_URI}`, upper case); None when it has
    /// no value for this request.
    fn variable(&self, name: &str) -> Option<String>;
    fn request_header(&self, name: &str) -> Option<String>;
    fn response_header(&self, name: &str) -> Option<String>;
    /// The request's environment (SetEnv, SetEnvIf, rewrite's `[E=]`).
    fn env(&self, name: &str) -> Option<String>;
    fn remote_ip(&self) -> IpAddr;
}

/// A parsed expression, with its text for messages.
#[derive(Clone, Debug)]
pub struct Expr {
    pub text: String,
    cond: Arc<Cond>,
}

/// Two expressions are the same when written the same.
impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.text == other.text
    }
}

impl Eq for Expr {}

#[derive(Debug)]
enum Cond {
    Const(bool),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Unary(Unary, Word),
    Binary(Binary, Word, Word),
    Match { word: Word, re: Regex, negate: bool },
    In(Word, Vec<Word>),
    IpMatch(Word, IpAddr, u8),
}

#[derive(Clone, Copy, Debug)]
enum Unary {
    NonEmpty,
    Empty,
    True,
    RemoteIn,
    Dir,
    Exists,
    File,
    NonEmptyFile,
    Link,
    Executable,
}

#[derive(Clone, Copy, Debug)]
enum Binary {
    StrEq,
    StrNe,
    StrLt,
    StrLe,
    StrGt,
    StrGe,
    IntEq,
    IntNe,
    IntLt,
    IntLe,
    IntGt,
    IntGe,
    StrMatch,
    StrCMatch,
    FnMatch,
}

#[derive(Debug)]
enum Word {
    Text(String),
    Var(String),
    Backref(usize),
    Concat(Vec<Word>),
    Call(Func, Box<Word>),
}

#[derive(Clone, Copy, Debug)]
enum Func {
    Req,
    Resp,
    Env,
    ReqEnv,
    OsEnv,
    ToLower,
    ToUpper,
    Escape,
    Unescape,
    Base64,
    Unbase64,
    File,
    FileSize,
}

impl Func {
    fn named(name: &str, restricted: bool) -> Result<Func, String> {
        let f = match name.to_ascii_lowercase().as_str() {
            "req" | "http" | "req_novary" => Func::Req,
            "resp" => Func::Resp,
            "env" => Func::Env,
            "reqenv" => Func::ReqEnv,
            "osenv" => Func::OsEnv,
            "tolower" => Func::ToLower,
            "toupper" => Func::ToUpper,
            "escape" => Func::Escape,
            "unescape" => Func::Unescape,
            "base64" => Func::Base64,
            "unbase64" => Func::Unbase64,
            "file" => Func::File,
            "filesize" => Func::FileSize,
            "md5" | "sha1" | "note" | "filemod" | "ldap" => return Err(format!("function {name} is not supported by warren")),
            _ => return Err(format!("unknown function {name}")),
        };
        if restricted && matches!(f, Func::File | Func::FileSize) {
            return Err(format!("function {name} reads files: not allowed in .htaccess"));
        }
        if restricted && matches!(f, Func::OsEnv) {
            return Err(format!("function {name} reads the server's environment: not allowed in .htaccess"));
        }
        // A tenant's env() sees the request's variables only, not the
        // server's environment (its secrets could be guessed bit by bit).
        Ok(if restricted && matches!(f, Func::Env) { Func::ReqEnv } else { f })
    }
}

/// The variables Apache's expressions know (besides `HTTP_*`, any request
/// header, and `SSL_*`).
const VARIABLES: &[&str] = &[
    "REQUEST_METHOD", "REQUEST_SCHEME", "REQUEST_URI", "DOCUMENT_URI", "REQUEST_FILENAME", "SCRIPT_FILENAME", "LAST_MODIFIED", "SCRIPT_USER",
    "SCRIPT_GROUP", "PATH_INFO", "QUERY_STRING", "IS_SUBREQ", "THE_REQUEST", "REMOTE_ADDR", "REMOTE_PORT", "REMOTE_HOST", "REMOTE_USER",
    "REMOTE_IDENT", "SERVER_NAME", "SERVER_PORT", "SERVER_ADMIN", "SERVER_PROTOCOL", "DOCUMENT_ROOT", "AUTH_TYPE", "CONTENT_TYPE", "HANDLER",
    "HTTP2", "HTTPS", "IPV6", "REQUEST_STATUS", "REQUEST_LOG_ID", "CONN_LOG_ID", "CONN_REMOTE_ADDR", "CONTEXT_PREFIX", "CONTEXT_DOCUMENT_ROOT",
    "TIME_YEAR", "TIME_MON", "TIME_DAY", "TIME_HOUR", "TIME_MIN", "TIME_SEC", "TIME_WDAY", "TIME", "SERVER_SOFTWARE", "API_VERSION",
];

impl Expr {
    /// Parses `text`; `restricted` (an `.htaccess` file) refuses what reads
    /// files.
    pub fn parse(text: &str, restricted: bool) -> Result<Expr, String> {
        let mut p = Parser { s: text.as_bytes(), at: 0, restricted, depth: 0, tests: 0 };
        let cond = p.or()?;
        p.skip_space();
        if p.at < p.s.len() {
            return Err(format!("expression '{text}': unexpected '{}'", p.rest()));
        }
        Ok(Expr { text: text.to_string(), cond: Arc::new(cond) })
    }

    /// Whether it holds for the request `facts` describes.
    pub fn holds(&self, facts: &dyn Facts) -> bool {
        self.captures(facts).is_some()
    }

    /// When it holds: the captures of the last regular expression it
    /// matched (`$0`-`$9`, for SetEnvIfExpr's values).
    pub fn captures(&self, facts: &dyn Facts) -> Option<Vec<String>> {
        let mut e = Eval { facts, captures: Vec::new() };
        e.cond(&self.cond).then_some(e.captures)
    }

    /// `text` with `$0`-`$9` replaced by `captures` (empty where missing).
    pub fn expand(text: &str, captures: &[String]) -> String {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek().and_then(|d| d.to_digit(10))) {
                ('$', Some(i)) => {
                    chars.next();
                    out.push_str(captures.get(i as usize).map_or("", String::as_str));
                }
                _ => out.push(c),
            }
        }
        out
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    restricted: bool,
    /// Parentheses, `!` and function calls open: bounded, as parsing and
    /// evaluating recurse (a tenant's `((((...` must not overflow a stack).
    depth: usize,
    /// Comparisons so far, bounded for the same reason (`a && b && ...`).
    tests: usize,
}

/// Nesting and size bounds of one expression: far above what people write.
const MAX_DEPTH: usize = 32;
const MAX_TESTS: usize = 256;

impl Parser<'_> {
    fn rest(&self) -> String {
        String::from_utf8_lossy(&self.s[self.at..]).into_owned()
    }

    fn skip_space(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// Takes `token` if it comes next (after spaces).
    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        if self.s[self.at..].starts_with(token.as_bytes()) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    /// Takes the keyword or operator `word` if it comes next and is not the
    /// start of a longer name.
    fn eat_word(&mut self, word: &str) -> bool {
        self.skip_space();
        let end = self.at + word.len();
        let follows_name = self.s.get(end).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
        if self.s[self.at..].starts_with(word.as_bytes()) && !follows_name {
            self.at = end;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Cond, String> {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Cond::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Cond, String> {
        let mut left = self.not()?;
        while self.eat("&&") {
            left = Cond::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Cond, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} deep"));
        }
        let cond = self.not_inner();
        self.depth -= 1;
        cond
    }

    fn not_inner(&mut self) -> Result<Cond, String> {
        self.skip_space();
        if self.s.get(self.at) == Some(&b'!') && self.s.get(self.at + 1) != Some(&b'=') && self.s.get(self.at + 1) != Some(&b'~') {
            self.at += 1;
            return Ok(Cond::Not(Box::new(self.not()?)));
        }
        if self.eat("(") {
            let inner = self.or()?;
            if !self.eat(")") {
                return Err(format!("expected ')' at '{}'", self.rest()));
            }
            return Ok(inner);
        }
        if self.eat_word("true") {
            return Ok(Cond::Const(true));
        }
        if self.eat_word("false") {
            return Ok(Cond::Const(false));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Cond, String> {
        self.tests += 1;
        if self.tests > MAX_TESTS {
            return Err(format!("more than {MAX_TESTS} tests"));
        }
        self.skip_space();
        if self.s.get(self.at) == Some(&b'-') && self.s.get(self.at + 2).is_none_or(|c| c.is_ascii_whitespace()) {
            let op = self.s.get(self.at + 1).copied().unwrap_or(b' ');
            let unary = match op {
                b'n' => Unary::NonEmpty,
                b'z' => Unary::Empty,
                b'T' => Unary::True,
                b'R' => Unary::RemoteIn,
                b'd' => Unary::Dir,
                b'e' => Unary::Exists,
                b'f' => Unary::File,
                b's' => Unary::NonEmptyFile,
                b'L' | b'h' => Unary::Link,
                b'x' => Unary::Executable,
                b'F' | b'U' | b'A' => return Err(format!("-{} (a sub-request) is not supported by warren", op as char)),
                _ => return Err(format!("unknown operator at '{}'", self.rest())),
            };
            if self.restricted && matches!(unary, Unary::Dir | Unary::Exists | Unary::File | Unary::NonEmptyFile | Unary::Link | Unary::Executable) {
                return Err(format!("-{} tests files: not allowed in .htaccess", op as char));
            }
            self.at += 2;
            let word = self.word()?;
            if let (Unary::RemoteIn, Word::Text(net)) = (unary, &word) {
                let (ip, len) = parse_net(net)?;
                return Ok(Cond::IpMatch(Word::Var("REMOTE_ADDR".into()), ip, len));
            }
            return Ok(Cond::Unary(unary, word));
        }
        let left = self.word()?;
        self.skip_space();
        for (op, negate) in [("=~", false), ("!~", true)] {
            if self.eat(op) {
                let re = self.regex()?;
                return Ok(Cond::Match { word: left, re, negate });
            }
        }
        if self.eat_word("in") {
            if !self.eat("{") {
                return Err(format!("'in' takes a list {{ ... }} (warren has no list functions), at '{}'", self.rest()));
            }
            let mut words = vec![self.word()?];
            while self.eat(",") {
                words.push(self.word()?);
            }
            if !self.eat("}") {
                return Err(format!("expected '}}' at '{}'", self.rest()));
            }
            return Ok(Cond::In(left, words));
        }
        const OPERATORS: &[(&str, Binary)] = &[
            ("==", Binary::StrEq),
            ("!=", Binary::StrNe),
            ("<=", Binary::StrLe),
            (">=", Binary::StrGe),
            ("<", Binary::StrLt),
            (">", Binary::StrGt),
            ("=", Binary::StrEq),
            ("-eq", Binary::IntEq),
            ("-ne", Binary::IntNe),
            ("-lt", Binary::IntLt),
            ("-le", Binary::IntLe),
            ("-gt", Binary::IntGt),
            ("-ge", Binary::IntGe),
            ("-strmatch", Binary::StrMatch),
            ("-strcmatch", Binary::StrCMatch),
            ("-fnmatch", Binary::FnMatch),
        ];
        if self.eat_word("-ipmatch") {
            let right = self.word()?;
            let Word::Text(net) = right else { return Err("-ipmatch takes a literal address or network".into()) };
            let (ip, len) = parse_net(&net)?;
            return Ok(Cond::IpMatch(left, ip, len));
        }
        for (op, binary) in OPERATORS {
            let matched = if op.starts_with('-') { self.eat_word(op) } else { self.eat(op) };
            if matched {
                let right = self.word()?;
                if let (Binary::StrMatch | Binary::StrCMatch | Binary::FnMatch, Word::Text(p)) = (binary, &right) {
                    glob::Pattern::new(p).map_err(|e| format!("bad pattern '{p}': {e}"))?;
                }
                return Ok(Cond::Binary(*binary, left, right));
            }
        }
        if self.at >= self.s.len() {
            return Err("a word alone is not a condition: expected an operator after it".into());
        }
        Err(format!("expected an operator at '{}'", self.rest()))
    }

    /// A word, with `.` concatenations.
    fn word(&mut self) -> Result<Word, String> {
        let mut parts = vec![self.simple_word()?];
        while self.eat(".") {
            parts.push(self.simple_word()?);
        }
        Ok(if parts.len() == 1 { parts.pop().unwrap_or(Word::Text(String::new())) } else { Word::Concat(parts) })
    }

    fn simple_word(&mut self) -> Result<Word, String> {
        self.skip_space();
        let Some(&c) = self.s.get(self.at) else { return Err("expected a word at the end of the expression".into()) };
        match c {
            b'\'' | b'"' => {
                self.at += 1;
                self.string(c)
            }
            b'%' if self.s.get(self.at + 1) == Some(&b'{') => self.variable(),
            b'$' if self.s.get(self.at + 1).is_some_and(u8::is_ascii_digit) => {
                self.at += 2;
                Ok(Word::Backref((self.s[self.at - 1] - b'0') as usize))
            }
            b'0'..=b'9' => {
                let start = self.at;
                while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                    self.at += 1;
                }
                Ok(Word::Text(String::from_utf8_lossy(&self.s[start..self.at]).into_owned()))
            }
            c if c.is_ascii_alphabetic() => {
                let start = self.at;
                while self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    self.at += 1;
                }
                let name = String::from_utf8_lossy(&self.s[start..self.at]).into_owned();
                if !self.eat("(") {
                    return Err(format!("'{name}' is not a word: quote strings ('{name}')"));
                }
                let func = Func::named(&name, self.restricted)?;
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(format!("nested more than {MAX_DEPTH} deep"));
                }
                let arg = self.word();
                self.depth -= 1;
                let arg = arg?;
                if !self.eat(")") {
                    return Err(format!("expected ')' after the argument of {name}, at '{}'", self.rest()));
                }
                Ok(Word::Call(func, Box::new(arg)))
            }
            _ => Err(format!("expected a word at '{}'", self.rest())),
        }
    }

    /// A quoted string (the quote taken), with `%{...}` and `$N` in it.
    fn string(&mut self, quote: u8) -> Result<Word, String> {
        let mut parts = Vec::new();
        let mut text = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.at) else { return Err("unterminated string".into()) };
            match c {
                _ if c == quote => {
                    self.at += 1;
                    break;
                }
                b'\\' if self.s.get(self.at + 1).is_some() => {
                    text.push(self.s[self.at + 1]);
                    self.at += 2;
                }
                b'%' if self.s.get(self.at + 1) == Some(&b'{') => {
                    parts.push(Word::Text(String::from_utf8_lossy(&std::mem::take(&mut text)).into_owned()));
                    parts.push(self.variable()?);
                }
                b'$' if self.s.get(self.at + 1).is_some_and(u8::is_ascii_digit) => {
                    parts.push(Word::Text(String::from_utf8_lossy(&std::mem::take(&mut text)).into_owned()));
                    parts.push(Word::Backref((self.s[self.at + 1] - b'0') as usize));
                    self.at += 2;
                }
                _ => {
                    text.push(c);
                    self.at += 1;
                }
            }
        }
        parts.push(Word::Text(String::from_utf8_lossy(&text).into_owned()));
        parts.retain(|p| !matches!(p, Word::Text(t) if t.is_empty()));
        Ok(match parts.len() {
            0 => Word::Text(String::new()),
            1 => parts.pop().unwrap_or(Word::Text(String::new())),
            _ => Word::Concat(parts),
        })
    }

    /// `%{NAME}` or `%{func:arg}` (the `%` next).
    fn variable(&mut self) -> Result<Word, String> {
        self.at += 2;
        let close = self.s[self.at..].iter().position(|c| *c == b'}').ok_or("unterminated %{")?;
        let inner = String::from_utf8_lossy(&self.s[self.at..self.at + close]).into_owned();
        self.at += close + 1;
        if let Some((func, arg)) = inner.split_once(':') {
            return Ok(Word::Call(Func::named(func, self.restricted)?, Box::new(Word::Text(arg.to_string()))));
        }
        let name = inner.to_ascii_uppercase();
        if !(VARIABLES.contains(&name.as_str()) || name.starts_with("HTTP_") || name.starts_with("SSL_")) {
            return Err(format!("variable %{{{inner}}} does not exist"));
        }
        Ok(Word::Var(name))
    }

    /// `/re/[i]` or `m#re#[i]`.
    fn regex(&mut self) -> Result<Regex, String> {
        self.skip_space();
        let delim = match self.s.get(self.at) {
            Some(b'/') => b'/',
            Some(b'm') => match self.s.get(self.at + 1) {
                Some(&d) if !d.is_ascii_alphanumeric() && !d.is_ascii_whitespace() => {
                    self.at += 1;
                    d
                }
                _ => return Err(format!("expected a regular expression at '{}'", self.rest())),
            },
            _ => return Err(format!("expected a regular expression (/.../) at '{}'", self.rest())),
        };
        self.at += 1;
        let mut pattern = Vec::new();
        loop {
            match self.s.get(self.at) {
                None => return Err("unterminated regular expression".into()),
                Some(&c) if c == delim => break,
                Some(b'\\') if self.s.get(self.at + 1) == Some(&delim) => {
                    pattern.push(delim);
                    self.at += 2;
                }
                Some(&c) => {
                    pattern.push(c);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        let caseless = self.s.get(self.at) == Some(&b'i');
        if caseless {
            self.at += 1;
        }
        if self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric()) {
            return Err(format!("unknown regular expression flag '{}'", self.s[self.at] as char));
        }
        let pattern = String::from_utf8_lossy(&pattern).into_owned();
        let re = if caseless { Regex::caseless(&pattern) } else { Regex::new(&pattern) };
        re.map_err(|e| format!("bad regular expression /{pattern}/: {e}"))
    }
}

/// `addr` or `addr/len` (or `addr/mask` in dotted form).
fn parse_net(text: &str) -> Result<(IpAddr, u8), String> {
    let bad = || format!("'{text}' is not an IP address or network");
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (text, None),
    };
    let ip: IpAddr = addr.parse().map_err(|_| bad())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        Some(l) => match (l.parse::<u8>(), l.parse::<std::net::Ipv4Addr>()) {
            (Ok(n), _) if n <= max => n,
            (_, Ok(mask)) if ip.is_ipv4() && u32::from(mask).leading_ones() == u32::from(mask).count_ones() => u32::from(mask).count_ones() as u8,
            _ => return Err(bad()),
        },
    };
    Ok((ip, len))
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - len as u32).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - len as u32).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

struct Eval<'a> {
    facts: &'a dyn Facts,
    /// `$0`..`$9`: the captures of the last regular expression matched.
    captures: Vec<String>,
}

impl Eval<'_> {
    fn cond(&mut self, c: &Cond) -> bool {
        match c {
            Cond::Const(b) => *b,
            Cond::Not(c) => !self.cond(c),
            Cond::And(a, b) => self.cond(a) && self.cond(b),
            Cond::Or(a, b) => self.cond(a) || self.cond(b),
            Cond::Unary(op, w) => {
                let v = self.word(w);
                let meta = || std::fs::metadata(&v).ok();
                match op {
                    Unary::NonEmpty => !v.is_empty(),
                    Unary::Empty => v.is_empty(),
                    Unary::True => !(v.is_empty() || ["0", "off", "false", "no"].iter().any(|f| v.eq_ignore_ascii_case(f))),
                    Unary::RemoteIn => parse_net(&v).is_ok_and(|(net, len)| in_net(self.facts.remote_ip(), net, len)),
                    Unary::Dir => meta().is_some_and(|m| m.is_dir()),
                    Unary::Exists => meta().is_some(),
                    Unary::File => meta().is_some_and(|m| m.is_file()),
                    Unary::NonEmptyFile => meta().is_some_and(|m| m.is_file() && m.len() > 0),
                    Unary::Link => std::fs::symlink_metadata(&v).is_ok_and(|m| m.file_type().is_symlink()),
                    Unary::Executable => {
                        use std::os::unix::fs::PermissionsExt;
                        meta().is_some_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    }
                }
            }
            Cond::Binary(op, a, b) => {
                let (a, b) = (self.word(a), self.word(b));
                let int = |f: fn(i64, i64) -> bool| matches!((a.trim().parse::<i64>(), b.trim().parse::<i64>()), (Ok(x), Ok(y)) if f(x, y));
                let glob = |opts: glob::MatchOptions| glob::Pattern::new(&b).is_ok_and(|p| p.matches_with(&a, opts));
                match op {
                    Binary::StrEq => a == b,
                    Binary::StrNe => a != b,
                    Binary::StrLt => a < b,
                    Binary::StrLe => a <= b,
                    Binary::StrGt => a > b,
                    Binary::StrGe => a >= b,
                    Binary::IntEq => int(|x, y| x == y),
                    Binary::IntNe => int(|x, y| x != y),
                    Binary::IntLt => int(|x, y| x < y),
                    Binary::IntLe => int(|x, y| x <= y),
                    Binary::IntGt => int(|x, y| x > y),
                    Binary::IntGe => int(|x, y| x >= y),
                    Binary::StrMatch => glob(glob::MatchOptions::new()),
                    Binary::StrCMatch => glob(glob::MatchOptions { case_sensitive: false, ..glob::MatchOptions::new() }),
                    Binary::FnMatch => glob(glob::MatchOptions { require_literal_separator: true, ..glob::MatchOptions::new() }),
                }
            }
            Cond::Match { word, re, negate } => {
                let v = self.word(word);
                let matched = match re.captures(&v) {
                    Some(caps) => {
                        self.captures = (0..caps.len().min(10)).map(|i| caps.get(i).unwrap_or_default().to_string()).collect();
                        true
                    }
                    None => false,
                };
                matched != *negate
            }
            Cond::In(w, list) => {
                let v = self.word(w);
                list.iter().any(|item| self.word(item) == v)
            }
            Cond::IpMatch(w, net, len) => self.word(w).parse::<IpAddr>().is_ok_and(|ip| in_net(ip, *net, *len)),
        }
    }

    fn word(&mut self, w: &Word) -> String {
        match w {
            Word::Text(t) => t.clone(),
            Word::Var(name) => self.facts.variable(name).unwrap_or_default(),
            Word::Backref(i) => self.captures.get(*i).cloned().unwrap_or_default(),
            Word::Concat(parts) => parts.iter().map(|p| self.word(p)).collect(),
            Word::Call(f, arg) => {
                let arg = self.word(arg);
                match f {
                    Func::Req => self.facts.request_header(&arg).unwrap_or_default(),
                    Func::Resp => self.facts.response_header(&arg).unwrap_or_default(),
                    Func::Env => self.facts.env(&arg).or_else(|| std::env::var(&arg).ok()).unwrap_or_default(),
                    Func::ReqEnv => self.facts.env(&arg).unwrap_or_default(),
                    Func::OsEnv => std::env::var(&arg).unwrap_or_default(),
                    Func::ToLower => arg.to_lowercase(),
                    Func::ToUpper => arg.to_uppercase(),
                    Func::Escape => warren_rewrite::escape::escape_uri(&arg),
                    Func::Unescape => warren_rewrite::escape::unescape(&arg),
                    Func::Base64 => base64::engine::general_purpose::STANDARD.encode(arg.as_bytes()),
                    Func::Unbase64 => base64::engine::general_purpose::STANDARD
                        .decode(arg.trim_end_matches('=').as_bytes())
                        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(arg.trim_end_matches('=').as_bytes()))
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default(),
                    Func::File => std::fs::read(&arg).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default(),
                    Func::FileSize => std::fs::metadata(&arg).map_or(0, |m| if m.is_file() { m.len() } else { 0 }).to_string(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
