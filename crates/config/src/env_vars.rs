//! The request environment's directives: mod_env's `SetEnv` and
//! `UnsetEnv` ([`EnvAction`]) and mod_setenvif's `SetEnvIf`,
//! `SetEnvIfNoCase`, `BrowserMatch` and `BrowserMatchNoCase`
//! ([`SetEnvIf`]): the attribute tested, the pattern, and the variables set
//! or unset when it matches. The handler fills the request's environment
//! from them. None of them may set or unset a variable the server gives
//! an application itself ([`is_server_variable`]).

use warren_regex::Regex;

/// `SetEnv VAR [value]` or `UnsetEnv VAR...`, applied in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvAction {
    Set(String, String),
    Unset(String),
}

/// What a `SetEnvIf` line tests.
#[derive(Clone, Debug)]
pub enum Attribute {
    /// `Remote_Host`: warren does no lookups (HostnameLookups Off), so this
    /// is the address, as in Apache without lookups.
    RemoteHost,
    RemoteAddr,
    ServerAddr,
    RequestMethod,
    RequestProtocol,
    RequestUri,
    /// A request header by name; if the request has none, the environment
    /// variable of that name (one set by an earlier line), as in Apache.
    Header(String),
    /// `SetEnvIfExpr`: the expression decides (the rule's pattern is
    /// empty); `$0`-`$9` in values are its last match's captures.
    Expr(crate::expr::Expr),
    /// A pattern of header names: the first header whose name matches.
    HeaderPattern(Regex),
}

/// One variable a matching `SetEnvIf` sets (`VAR`, `VAR=value` with `$1`..)
/// or unsets (`!VAR`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvSet {
    Set(String, String),
    Unset(String),
}

#[derive(Clone, Debug)]
pub struct SetEnvIf {
    pub attribute: Attribute,
    pub pattern: Regex,
    pub sets: Vec<EnvSet>,
}

impl SetEnvIf {
    /// `SetEnvIf[NoCase] attribute regex var...`, or with `browser` the
    /// `BrowserMatch[NoCase] regex var...` form (the User-Agent header).
    pub fn parse(args: &[String], nocase: bool, browser: bool) -> Result<SetEnvIf, String> {
        let (attribute, rest) = if browser {
            (Attribute::Header("User-Agent".into()), args)
        } else {
            let (a, rest) = args.split_first().ok_or("SetEnvIf takes an attribute, a regex and variables to set")?;
            (parse_attribute(a)?, rest)
        };
        let (pattern, vars) = rest.split_first().ok_or("a regex and at least one variable are needed")?;
        if vars.is_empty() {
            return Err(format!("no variable to set after the regex '{pattern}'"));
        }
        let pattern = if nocase { Regex::caseless(pattern) } else { Regex::new(pattern) }.map_err(|e| format!("bad regex '{pattern}': {e}"))?;
        Ok(SetEnvIf { attribute, pattern, sets: parse_sets(vars)? })
    }

    /// `SetEnvIfExpr "expr" var...`; `restricted` in `.htaccess`.
    pub fn parse_expr(args: &[String], restricted: bool) -> Result<SetEnvIf, String> {
        let (text, vars) = args.split_first().ok_or("SetEnvIfExpr takes an expression and variables to set")?;
        if vars.is_empty() {
            return Err(format!("no variable to set after the expression '{text}'"));
        }
        let expr = crate::expr::Expr::parse(text, restricted)?;
        let pattern = Regex::new("").map_err(|e| e.to_string())?;
        Ok(SetEnvIf { attribute: Attribute::Expr(expr), pattern, sets: parse_sets(vars)? })
    }
}

/// `[!]VAR[=value]...`
fn parse_sets(vars: &[String]) -> Result<Vec<EnvSet>, String> {
    vars.iter()
        .map(|v| {
            if let Some(name) = v.strip_prefix('!') {
                return if name.is_empty() { Err("'!' without a variable name".to_string()) } else { Ok(EnvSet::Unset(name.to_string())) };
            }
            match v.split_once('=') {
                Some(("", _)) => Err(format!("'{v}': no variable name")),
                Some((n, val)) => Ok(EnvSet::Set(n.to_string(), val.to_string())),
                None => Ok(EnvSet::Set(v.clone(), "1".to_string())),
            }
        })
        .collect()
}

fn parse_attribute(a: &str) -> Result<Attribute, String> {
    Ok(match a.to_ascii_lowercase().as_str() {
        "remote_host" => Attribute::RemoteHost,
        "remote_addr" => Attribute::RemoteAddr,
        "server_addr" => Attribute::ServerAddr,
        "request_method" => Attribute::RequestMethod,
        "request_protocol" => Attribute::RequestProtocol,
        "request_uri" => Attribute::RequestUri,
        "remote_user" => return Err("SetEnvIf Remote_User is not supported (warren does no authentication)".into()),
        _ if a.chars().any(|c| "^$.*+?[](){}|\\".contains(c)) => {
            Attribute::HeaderPattern(Regex::caseless(a).map_err(|e| format!("bad attribute regex '{a}': {e}"))?)
        }
        _ => Attribute::Header(a.to_string()),
    })
}

/// Variables whose value the server gives an application from the
/// request, the connection and the mapping: the CGI/1.1 set (RFC 3875
/// §4.1) and what Apache adds to it. A request's environment (SetEnv,
/// SetEnvIf, `[E=]`) never sets or replaces them: a tenant's `.htaccess`
/// could otherwise make the pool run another script (SCRIPT_FILENAME), or
/// lie to the application about the client (REMOTE_ADDR, HTTPS).
/// REDIRECT_* are the server's after an internal redirect.
pub fn is_server_variable(name: &str) -> bool {
    const NAMES: [&str; 14] = [
        "GATEWAY_INTERFACE",
        "REQUEST_METHOD",
        "REQUEST_URI",
        "REQUEST_SCHEME",
        "QUERY_STRING",
        "AUTH_TYPE",
        "CONTENT_TYPE",
        "CONTENT_LENGTH",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "SCRIPT_NAME",
        "SCRIPT_FILENAME",
        "DOCUMENT_ROOT",
        "HTTPS",
    ];
    const PREFIXES: [&str; 5] = ["SERVER_", "REMOTE_", "SSL_", "REDIRECT_", "CONTEXT_"];
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
        || PREFIXES.iter().any(|p| name.get(..p.len()).is_some_and(|start| start.eq_ignore_ascii_case(p)))
}

/// PHP_VALUE and PHP_ADMIN_VALUE: php-fpm takes each as php.ini lines
/// for the script it runs, over its pool's own settings, php_admin_value
/// (open_basedir...) included. The server's configuration may set them,
/// as with Apache's mod_proxy_fcgi; a tenant may not (see [`refusal`]).
pub fn is_php_setting(name: &str) -> bool {
    ["PHP_VALUE", "PHP_ADMIN_VALUE"].iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// Why `directive` may not set or unset `name` (None: it may).
/// `from_tenant`: the line is in an `.htaccess` file, or the name was made
/// from the request.
pub fn refusal(directive: &str, name: &str, from_tenant: bool) -> Option<String> {
    if is_server_variable(name) {
        Some(format!("{directive}: {name} is a variable warren gives the application itself; a configuration cannot set, replace or unset it, so this has no effect"))
    } else if from_tenant && is_php_setting(name) {
        Some(format!("{directive}: {name} would change the PHP settings of the pool (php-fpm reads it as php.ini lines), which only the server's configuration may do; this has no effect"))
    } else {
        None
    }
}

/// `SetEnv VAR [value]`.
pub fn parse_set_env(args: &[String]) -> Result<EnvAction, String> {
    match args {
        [name] => Ok(EnvAction::Set(name.clone(), String::new())),
        [name, value] => Ok(EnvAction::Set(name.clone(), value.clone())),
        _ => Err("SetEnv takes a variable name and an optional value".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn attributes_and_variables() {
        let s = SetEnvIf::parse(&args(&["Request_URI", r"\.png$", "image", "!text", "kind=$0"]), false, false).unwrap();
        assert!(matches!(s.attribute, Attribute::RequestUri));
        assert_eq!(s.sets, vec![EnvSet::Set("image".into(), "1".into()), EnvSet::Unset("text".into()), EnvSet::Set("kind".into(), "$0".into())]);
        let s = SetEnvIf::parse(&args(&["X-Forwarded-Proto", "https", "HTTPS=on"]), false, false).unwrap();
        assert!(matches!(s.attribute, Attribute::Header(ref h) if h == "X-Forwarded-Proto"));
        let s = SetEnvIf::parse(&args(&["^X-.*", "a", "x"]), false, false).unwrap();
        assert!(matches!(s.attribute, Attribute::HeaderPattern(_)));
        let s = SetEnvIf::parse(&args(&["MSIE", "nokeepalive"]), true, true).unwrap();
        assert!(matches!(s.attribute, Attribute::Header(ref h) if h == "User-Agent"));
        assert!(s.pattern.is_match("msie 6"));
    }

    #[test]
    fn server_variables() {
        for n in ["SCRIPT_FILENAME", "script_filename", "DOCUMENT_ROOT", "REMOTE_ADDR", "Remote_User", "SERVER_NAME", "SSL_CIPHER", "REDIRECT_STATUS", "HTTPS", "PATH_INFO", "CONTEXT_PREFIX", "CONTENT_TYPE"] {
            assert!(is_server_variable(n), "{n}");
        }
        for n in ["HTTPSX", "HTTP_HOST", "HTTP_AUTHORIZATION", "SCRIPT_URL", "no-gzip", "nokeepalive", "REMOTE", "REDIRECT", "", "é", "PHP_VALUE"] {
            assert!(!is_server_variable(n), "{n}");
        }
        assert!(refusal("SetEnv", "php_admin_value", true).is_some_and(|m| m.contains("PHP settings")));
        assert_eq!(refusal("SetEnv", "PHP_ADMIN_VALUE", false), None);
        assert_eq!(refusal("SetEnv", "APP", true), None);
        assert!(refusal("SetEnv", "HTTPS", false).is_some());
    }

    #[test]
    fn mistakes() {
        assert!(SetEnvIf::parse(&args(&["Request_URI", "x"]), false, false).is_err());
        assert!(SetEnvIf::parse(&args(&["Request_URI", "(", "v"]), false, false).unwrap_err().contains("bad regex"));
        assert!(SetEnvIf::parse(&args(&["Remote_User", "x", "v"]), false, false).is_err());
        assert!(SetEnvIf::parse(&args(&["Request_URI", "x", "=v"]), false, false).is_err());
        assert!(parse_set_env(&args(&["A", "b", "c"])).is_err());
        assert_eq!(parse_set_env(&args(&["A"])).unwrap(), EnvAction::Set("A".into(), String::new()));
    }
}
