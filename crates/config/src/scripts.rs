//! Which files a configuration names as scripts, so that none is ever sent
//! as its text.
//!
//! Apache serves a `.php` file as it is when the module its `AddHandler`
//! names is not loaded: the source, passwords and all. warren keeps each
//! line that makes a file a script, a [`ScriptMark`] with its origin: an
//! `AddHandler` or `SetHandler` of a handler warren does not have
//! (`php-script`, `fcgid-script`, `cgi-script`, `application/x-httpd-php`,
//! ...), an `AddType` of one of the `application/x-httpd-*` types that
//! modules run by type; inside an `<IfModule>` of a module warren lacks
//! too (the parser keeps those blocks as
//! [`Node::Skipped`](crate::Node::Skipped) for this alone), where any
//! handler named and mod_fcgid's `FcgidWrapper` with a suffix mark. A file a mark
//! covers is run by the FastCGI handler the configuration gives it, if any;
//! otherwise the handler answers 500 naming the mark's line, never the file.
//!
//! The server-wide handlers ([`SERVER_WIDE`]) show every host's requests:
//! an `.htaccess` file naming one gets [`Handler::Refused`], a 500 where it
//! applies (Apache would run them).

use crate::backend::FcgiBackend;
use crate::parse::{Directive, Origin};

/// One line that makes files scripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptMark {
    /// The extensions it names, lower case without the dot; None: every
    /// file its section covers (`SetHandler`).
    pub extensions: Option<Vec<String>>,
    pub origin: Origin,
    /// The line as written (`AddHandler fcgid-script .php`), for the log.
    pub directive: String,
    /// Its handler is mod_cgi's `cgi-script`, which warren runs (where
    /// `Options ExecCGI` is on): the file is a CGI program, not refused.
    pub cgi: bool,
}

impl ScriptMark {
    /// Whether it makes `file_name` a script: any of the name's extensions
    /// counts, as Apache's mod_mime reads `x.php.jpg` (the PHP handler runs it).
    pub fn covers(&self, file_name: &str) -> bool {
        let Some(exts) = &self.extensions else { return true };
        file_name.split('.').skip(1).any(|part| exts.iter().any(|e| e.eq_ignore_ascii_case(part)))
    }

    /// What `-t` and the start say of it: an error-level notice, not a
    /// fatal error (Apache loads such a configuration).
    pub fn notice(&self) -> String {
        let files = match &self.extensions {
            Some(exts) => format!("files ending in {}", exts.iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(" ")),
            None => "the files here".to_string(),
        };
        format!("{}: {files} are scripts warren cannot run by this line: where no FastCGI handler (SetHandler pool:NAME or proxy:...) takes them, they are answered 500, never sent as text", self.directive)
    }
}

/// The handlers that report on the whole server (every host's clients and
/// requests): not for an `.htaccess` file to set.
pub const SERVER_WIDE: &[&str] = &["server-status", "metrics", "md-status", "server-info", "balancer-manager", "ldap-status"];

/// Whether `mime_type` (parameters allowed) is one that a module runs the
/// file of, as mod_php runs `application/x-httpd-php` and mod_cgi
/// `application/x-httpd-cgi`.
pub fn is_script_type(mime_type: &str) -> bool {
    const PREFIX: &str = "application/x-httpd-";
    // Asked of every static file's type: the prefix first, which most
    // types fail at once; then the essence (before any parameter) must go
    // on past it.
    let t = mime_type.trim_start();
    t.get(..PREFIX.len()).is_some_and(|p| p.eq_ignore_ascii_case(PREFIX)) && !t[PREFIX.len()..].split(';').next().unwrap_or("").trim().is_empty()
}

/// Apache's handlers that read data files rather than run programs, and
/// why warren has none: their files are served as they are (Debian's
/// mime.conf's `AddHandler type-map var` is acted on: see [`crate::mime`]), said as a warning.
pub fn data_handler(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "send-as-is" => "warren sends no .asis files as responses",
        "imap-file" => "warren has no server-side image maps",
        _ => return None,
    })
}

/// mod_cgi's handler, which warren has (see the handler's `cgi` module).
pub const CGI_HANDLER: &str = "cgi-script";

/// Whether `SetHandler name` leaves files to the static file handler.
fn is_default(name: &str) -> bool {
    name.eq_ignore_ascii_case("none") || name.eq_ignore_ascii_case("default-handler")
}

/// Whether warren has the handler `name` (so that `SetHandler` of it does
/// not mark).
pub fn warren_has(name: &str) -> bool {
    is_default(name) || name.eq_ignore_ascii_case("server-status") || name.eq_ignore_ascii_case("metrics") || name.eq_ignore_ascii_case("balancer-manager") || name.eq_ignore_ascii_case("md-status") || name.eq_ignore_ascii_case("type-map") || name.starts_with("proxy:") || name.starts_with("pool:")
}

/// The mark `d` makes, if it names scripts. `skipped`: `d` stands in an
/// `<IfModule>` warren skipped, where any handler or wrapper named marks
/// (its module would have run the files) and nothing else is acted on.
pub fn mark_of(d: &Directive, skipped: bool) -> Option<ScriptMark> {
    let name = d.name.to_ascii_lowercase();
    let by_extensions = |exts: &[String]| {
        let exts: Vec<String> = exts.iter().map(|e| e.trim_start_matches('.').to_ascii_lowercase()).filter(|e| !e.is_empty()).collect();
        (!exts.is_empty()).then_some(Some(exts))
    };
    let extensions = match (name.as_str(), d.args.as_slice()) {
        ("addhandler" | "sethandler", [h, ..]) if data_handler(h).is_some() => return None,
        ("addhandler", [h, exts @ ..]) if !is_default(h) && (skipped || !warren_has(h)) => by_extensions(exts)?,
        ("addtype", [t, exts @ ..]) if is_script_type(t) => by_extensions(exts)?,
        ("forcetype", [t]) if is_script_type(t) => None,
        ("sethandler", [h, ..]) if !is_default(h) && (skipped || !warren_has(h)) => None,
        // mod_fcgid's wrapper for a suffix runs those files.
        ("fcgidwrapper", [_, suffix, ..]) if suffix.starts_with('.') => by_extensions(std::slice::from_ref(suffix))?,
        _ => return None,
    };
    let directive = std::iter::once(d.name.as_str()).chain(d.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
    let cgi = !skipped && matches!(name.as_str(), "addhandler" | "sethandler") && d.args.first().is_some_and(|h| h.eq_ignore_ascii_case(CGI_HANDLER));
    Some(ScriptMark { extensions, origin: d.origin.clone(), directive, cgi })
}

/// What `SetHandler` can name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handler {
    ServerStatus,
    /// `SetHandler metrics`: the server's figures for Prometheus.
    Metrics,
    /// `SetHandler balancer-manager`: the balancers' members, switched at run time.
    BalancerManager,
    /// `SetHandler md-status`: mod_md's JSON of the managed domains.
    MdStatus,
    /// `proxy:unix:/path|fcgi://localhost` or `proxy:fcgi://host:port`:
    /// the file the request maps to is the script, run by this backend.
    FastCgi(FcgiBackend),
    /// `pool:NAME`: the script runs in one of warren's own pools.
    Pool(String),
    /// `SetHandler type-map`: the files are type maps (mod_negotiation).
    TypeMap,
    /// A server-wide handler (`server-status`...) an `.htaccess` file set,
    /// at its line: answered 500 (see [`SERVER_WIDE`]).
    Refused { name: String, origin: Origin },
}

/// `SetHandler name` in an `.htaccess` file: the handler it sets if it is a
/// server-wide one, refused where it applies.
pub fn refused_in_htaccess(d: &Directive) -> Option<Handler> {
    let name = d.args.first()?;
    SERVER_WIDE.iter().any(|s| s.eq_ignore_ascii_case(name)).then(|| Handler::Refused { name: name.clone(), origin: d.origin.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn directive(line: &str) -> Directive {
        let mut words = line.split_whitespace().map(str::to_string);
        let name = words.next().unwrap();
        Directive { name, args: words.collect(), origin: Origin { file: Arc::new(PathBuf::from("/etc/warren.conf")), line: 7 } }
    }

    #[test]
    fn handlers_warren_lacks_mark_their_extensions() {
        let m = mark_of(&directive("AddHandler fcgid-script .php .phtml"), false).unwrap();
        assert_eq!(m.extensions, Some(vec!["php".to_string(), "phtml".to_string()]));
        assert!(m.covers("x.php") && m.covers("X.PHP") && m.covers("x.php.jpg") && !m.covers("php") && !m.covers("x.phps"));
        assert!(m.notice().starts_with("AddHandler fcgid-script .php .phtml: files ending in .php .phtml are scripts"), "{}", m.notice());
        assert!(mark_of(&directive("AddHandler cgi-script cgi"), false).unwrap().covers("a.cgi"));
        // mod_cgi's are run; in a skipped <IfModule> nothing is.
        assert!(mark_of(&directive("AddHandler CGI-Script .cgi"), false).unwrap().cgi && mark_of(&directive("SetHandler cgi-script"), false).unwrap().cgi);
        assert!(!mark_of(&directive("AddHandler cgi-script .cgi"), true).unwrap().cgi && !mark_of(&directive("AddHandler fcgid-script .cgi"), false).unwrap().cgi);
        assert!(mark_of(&directive("AddHandler default-handler .php"), false).is_none());
        // Data files, not programs.
        assert!(mark_of(&directive("AddHandler type-map var"), false).is_none());
        assert!(mark_of(&directive("ForceType application/x-httpd-php"), false).unwrap().covers("x.html"));
        assert!(mark_of(&directive("SetHandler send-as-is"), true).is_none());
        assert!(mark_of(&directive("AddHandler php-script"), false).is_none());
    }

    #[test]
    fn types_run_by_modules_mark() {
        assert!(mark_of(&directive("AddType application/x-httpd-php .php"), false).is_some());
        assert!(mark_of(&directive("AddType application/x-httpd-php-source .phps"), false).is_some());
        assert!(mark_of(&directive("AddType text/html .php"), false).is_none());
        assert!(is_script_type("Application/X-HTTPD-PHP; charset=utf-8"));
        assert!(!is_script_type("application/x-httpd-") && !is_script_type("text/x-php"));
        assert!(is_script_type("  application/x-httpd-php  ") && is_script_type("application/x-httpd-cgi;x=1"));
        assert!(!is_script_type("application/x-httpd- ; x=1") && !is_script_type("application/x-httpd-;php") && !is_script_type(""));
        // A multi-byte character across the prefix's length is no panic.
        assert!(!is_script_type("applicatión/x-httpd-php") && !is_script_type("text/html"));
    }

    #[test]
    fn set_handler_marks_every_file_unless_warren_has_it() {
        assert_eq!(mark_of(&directive("SetHandler php-script"), false).unwrap().extensions, None);
        assert!(mark_of(&directive("SetHandler application/x-httpd-php"), false).is_some());
        for h in ["None", "default-handler", "server-status", "pool:www", "proxy:fcgi://127.0.0.1:9000"] {
            assert!(mark_of(&directive(&format!("SetHandler {h}")), false).is_none(), "{h}");
        }
        // In a skipped <IfModule>, what the module would have run marks.
        assert!(mark_of(&directive("SetHandler proxy:fcgi://127.0.0.1:9000"), true).is_some());
        assert!(mark_of(&directive("SetHandler None"), true).is_none());
    }

    #[test]
    fn fcgid_wrapper_marks_its_suffix() {
        assert!(mark_of(&directive("FcgidWrapper /usr/bin/php-cgi .php"), true).unwrap().covers("i.php"));
        assert!(mark_of(&directive("FcgidWrapper /usr/bin/php-cgi"), true).is_none());
    }

    #[test]
    fn server_wide_handlers_are_refused_in_htaccess() {
        assert!(matches!(refused_in_htaccess(&directive("SetHandler Server-Status")), Some(Handler::Refused { .. })));
        assert!(refused_in_htaccess(&directive("SetHandler balancer-manager")).is_some());
        assert!(refused_in_htaccess(&directive("SetHandler pool:www")).is_none());
    }
}
