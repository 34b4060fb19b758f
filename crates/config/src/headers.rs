//! mod_headers' `Header` and `RequestHeader` lines, read into
//! [`HeaderRule`]s: the action, the header, its value (a [`ValueFormat`]
//! with Apache's `%t`, `%D`, `%{VAR}e` specifiers), an `edit` pattern and
//! replacement, and the [`Condition`] (`env=[!]VAR` or `expr=`, Apache's
//! expression language, see [`crate::expr`]) under which the rule acts. The
//! handler applies the rules; see its `filters`.

use warren_regex::Regex;

use crate::parse::Origin;

/// What a rule does to its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderAction {
    /// Replaces every instance.
    Set,
    /// Joins the value to the existing one with ", " (or sets it).
    Append,
    /// As Append, unless the value is already one of the header's items.
    Merge,
    /// Another instance, even if one exists.
    Add,
    Unset,
    /// Request headers whose names match are sent back (`Header` only).
    Echo,
    /// A regex replacement in the value: the first match, or all (`edit*`).
    Edit { all: bool },
    /// Set only when the header is not there.
    SetIfEmpty,
}

/// One piece of a header value as written: text, or a specifier filled in
/// per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatPiece {
    Text(String),
    /// `%t`: `t=` and the time the request was received, in microseconds.
    RequestTime,
    /// `%D`: `D=` and the microseconds from the request's arrival to now.
    Duration,
    /// `%{VAR}e`: the request environment variable (empty if unset).
    Env(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueFormat(pub Vec<FormatPiece>);

impl ValueFormat {
    /// Reads `%%`, `%t`, `%D` and `%{VAR}e`; the other specifiers Apache has
    /// (`%l`, `%i`, `%b`, `%{VAR}s`: SSL and MPM state) are refused.
    pub fn parse(text: &str) -> Result<ValueFormat, String> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('%') {
            lit.push_str(&rest[..at]);
            let spec = &rest[at + 1..];
            let (piece, used) = match spec.chars().next() {
                Some('%') => {
                    lit.push('%');
                    rest = &spec[1..];
                    continue;
                }
                Some('t') => (FormatPiece::RequestTime, 1),
                Some('D') => (FormatPiece::Duration, 1),
                Some('{') => {
                    let close = spec.find('}').ok_or_else(|| format!("unclosed %{{ in header value '{text}'"))?;
                    let name = &spec[1..close];
                    match spec[close + 1..].chars().next() {
                        Some('e') if !name.is_empty() => (FormatPiece::Env(name.to_string()), close + 2),
                        Some(c) => return Err(format!("header value format %{{{name}}}{c} is not supported (only %{{VAR}}e, %t, %D and %%)")),
                        None => return Err(format!("header value '{text}' ends in the middle of %{{{name}}}")),
                    }
                }
                Some(c) => return Err(format!("header value format %{c} is not supported (only %t, %D, %{{VAR}}e and %%)")),
                None => return Err(format!("header value '{text}' ends with a lone %")),
            };
            if !lit.is_empty() {
                pieces.push(FormatPiece::Text(std::mem::take(&mut lit)));
            }
            pieces.push(piece);
            rest = &spec[used..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            pieces.push(FormatPiece::Text(lit));
        }
        Ok(ValueFormat(pieces))
    }

    /// The value when it has no specifiers.
    pub fn literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [] => Some(""),
            [FormatPiece::Text(t)] => Some(t),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Condition {
    /// `env=VAR` (set) or `env=!VAR` (not set).
    Env { name: String, negate: bool },
    Expr(crate::expr::Expr),
}

#[derive(Clone, Debug)]
pub struct HeaderRule {
    /// `Header always` (else the `onsuccess` table).
    pub always: bool,
    pub action: HeaderAction,
    pub name: String,
    /// For set, append, merge, add, setifempty.
    pub value: ValueFormat,
    /// `edit`: the pattern in the value; `echo`: the pattern of names.
    pub pattern: Option<Regex>,
    /// `edit`: the replacement, with `$1`..`$9`.
    pub replacement: String,
    pub condition: Option<Condition>,
    pub origin: Origin,
}

/// Response headers the MPM writes itself, after the filters: a `Header`
/// rule cannot change them (as in Apache, where the core sets them last),
/// and `echo` never copies them.
pub const SERVER_WRITTEN: [&str; 5] = ["Date", "Server", "Content-Length", "Transfer-Encoding", "Connection"];

/// Whether a `Header` rule names a header the server writes itself.
pub fn names_server_written(rule: &HeaderRule) -> bool {
    rule.action != HeaderAction::Echo && SERVER_WRITTEN.iter().any(|n| n.eq_ignore_ascii_case(&rule.name))
}

/// Reads the arguments of a `Header` (`request` false) or `RequestHeader`
/// line.
pub fn parse_rule(args: &[String], request: bool, restricted: bool, origin: &Origin) -> Result<HeaderRule, String> {
    let directive = if request { "RequestHeader" } else { "Header" };
    let mut args = args;
    let mut always = false;
    if !request {
        match args.first().map(|a| a.to_ascii_lowercase()).as_deref() {
            Some("always") => {
                always = true;
                args = &args[1..];
            }
            Some("onsuccess") => args = &args[1..],
            _ => {}
        }
    }
    let usage = || {
        format!("{directive} takes [{}]set|append|merge|add|unset|{}edit|edit*|setifempty header [value] [replacement] [env=[!]VAR|expr=...]", if request { "" } else { "always|onsuccess " }, if request { "" } else { "echo|" })
    };
    let (action_word, rest) = args.split_first().ok_or_else(usage)?;
    let action = match action_word.to_ascii_lowercase().as_str() {
        "set" => HeaderAction::Set,
        "append" => HeaderAction::Append,
        "merge" => HeaderAction::Merge,
        "add" => HeaderAction::Add,
        "unset" => HeaderAction::Unset,
        "echo" if !request => HeaderAction::Echo,
        "edit" => HeaderAction::Edit { all: false },
        "edit*" => HeaderAction::Edit { all: true },
        "setifempty" => HeaderAction::SetIfEmpty,
        "note" => return Err(format!("{directive} note is not supported (warren has no request notes)")),
        other => return Err(format!("{directive}: unknown action '{other}'; {}", usage())),
    };
    let (name, rest) = rest.split_first().ok_or_else(usage)?;
    let takes = match action {
        HeaderAction::Unset | HeaderAction::Echo => 0,
        HeaderAction::Edit { .. } => 2,
        _ => 1,
    };
    if rest.len() < takes {
        return Err(format!("{directive} {action_word} {name}: missing {}", if takes == 2 { "pattern and replacement" } else { "value" }));
    }
    let (values, extra) = rest.split_at(takes);
    let condition = match extra {
        [] => None,
        [c] => Some(parse_condition(c, directive, restricted)?),
        _ => return Err(format!("{directive} {action_word} {name}: too many arguments ({})", usage())),
    };
    // `Header set X-Content-Type-Options: "nosniff"`, as Debian's
    // security.conf writes it: the colon is not part of the name.
    let name = name.strip_suffix(':').unwrap_or(name);
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if action != HeaderAction::Echo && (name.is_empty() || !name.chars().all(token)) {
        return Err(format!("{directive} {action_word}: '{name}' is not a header name"));
    }
    let mut rule = HeaderRule { always, action, name: name.to_string(), value: ValueFormat::default(), pattern: None, replacement: String::new(), condition, origin: origin.clone() };
    match action {
        HeaderAction::Echo => {
            rule.pattern = Some(Regex::caseless(name).map_err(|e| format!("Header echo: bad pattern '{name}': {e}"))?.at(origin));
        }
        HeaderAction::Edit { .. } => {
            rule.pattern = Some(Regex::new(&values[0]).map_err(|e| format!("{directive} {action_word}: bad pattern '{}': {e}", values[0]))?.at(origin));
            rule.replacement = values[1].clone();
        }
        HeaderAction::Unset => {}
        _ => rule.value = ValueFormat::parse(&values[0]).map_err(|e| format!("{directive}: {e}"))?,
    }
    Ok(rule)
}

fn parse_condition(c: &str, directive: &str, restricted: bool) -> Result<Condition, String> {
    if let Some(var) = c.strip_prefix("env=") {
        let (negate, name) = match var.strip_prefix('!') {
            Some(n) => (true, n),
            None => (false, var),
        };
        if name.is_empty() {
            return Err(format!("{directive}: env= needs a variable name"));
        }
        return Ok(Condition::Env { name: name.to_string(), negate });
    }
    if let Some(text) = c.strip_prefix("expr=") {
        return crate::expr::Expr::parse(text, restricted).map(Condition::Expr).map_err(|e| format!("{directive}: expr={text}: {e}"));
    }
    if c.eq_ignore_ascii_case("early") {
        return Err(format!("{directive} ... early is not supported: warren applies header rules once, before the handler (RequestHeader) or after it (Header)"));
    }
    Err(format!("{directive}: unexpected argument '{c}' (a condition is env=[!]VAR or expr=...)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn origin() -> Origin {
        Origin { file: Arc::new("t.conf".into()), line: 1 }
    }
    fn rule(args: &[&str]) -> Result<HeaderRule, String> {
        parse_rule(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), false, false, &origin())
    }

    #[test]
    fn actions_tables_and_conditions() {
        let r = rule(&["always", "set", "Strict-Transport-Security", "max-age=31536000"]).unwrap();
        assert!(r.always);
        assert_eq!(r.action, HeaderAction::Set);
        assert_eq!(r.value.literal(), Some("max-age=31536000"));
        let r = rule(&["unset", "X-Powered-By"]).unwrap();
        assert!(!r.always && r.action == HeaderAction::Unset);
        let r = rule(&["edit*", "Set-Cookie", "^(.*)$", "$1; Secure", "env=HTTPS"]).unwrap();
        assert_eq!(r.action, HeaderAction::Edit { all: true });
        assert_eq!(r.replacement, "$1; Secure");
        assert!(matches!(r.condition, Some(Condition::Env { ref name, negate: false }) if name == "HTTPS"));
        let r = rule(&["set", "X", "y", "env=!nope"]).unwrap();
        assert!(matches!(r.condition, Some(Condition::Env { negate: true, .. })));
        assert_eq!(rule(&["set", "X-Content-Type-Options:", "nosniff"]).unwrap().name, "X-Content-Type-Options");
    }

    #[test]
    fn mistakes_are_refused() {
        assert!(rule(&["set", "X"]).unwrap_err().contains("missing value"));
        assert!(rule(&["set", "X Y", "z"]).unwrap_err().contains("is not a header name"));
        assert!(rule(&["set", "X:Y", "z"]).unwrap_err().contains("is not a header name"));
        assert!(rule(&["frob", "X", "y"]).unwrap_err().contains("unknown action 'frob'"));
        assert!(rule(&["set", "X", "y", "z"]).unwrap_err().contains("unexpected argument 'z'"));
        assert!(rule(&["set", "X", "y", "early"]).unwrap_err().contains("early is not supported"));
        assert!(rule(&["set", "X", "%{SSL_PROTOCOL}s"]).unwrap_err().contains("not supported"));
        assert!(rule(&["edit", "X", "(", "y"]).unwrap_err().contains("bad pattern"));
        assert!(rule(&["set", "X", "y", "expr=%{REQUEST_URI} =~ /a/ && md5('x') == ''"]).unwrap_err().contains("md5 is not supported"));
        assert!(matches!(rule(&["set", "X", "y", "expr=%{REQUEST_URI} =~ /a/ && -n %{HTTP_HOST}"]).unwrap().condition, Some(Condition::Expr(_))));
        assert!(rule(&["set", "X", "y", "expr=%{NO_SUCH_VAR} == 'a'"]).unwrap_err().contains("NO_SUCH_VAR"));
        let request = parse_rule(&["echo".into(), "X".into()], true, false, &origin());
        assert!(request.unwrap_err().contains("unknown action 'echo'"));
    }

    #[test]
    fn value_formats() {
        let f = ValueFormat::parse("a=%{FOO}e %t %D 100%%").unwrap();
        assert_eq!(
            f.0,
            vec![
                FormatPiece::Text("a=".into()),
                FormatPiece::Env("FOO".into()),
                FormatPiece::Text(" ".into()),
                FormatPiece::RequestTime,
                FormatPiece::Text(" ".into()),
                FormatPiece::Duration,
                FormatPiece::Text(" 100%".into()),
            ]
        );
        assert!(ValueFormat::parse("50%").is_err());
    }
}
