//! One reading of a configuration: the state every directive's function
//! is given ([`Builder`]), and what those functions use of it (their
//! errors and warnings, the ServerRoot paths resolve against, the helpers
//! for common argument shapes). Walking the nodes and handing each
//! directive to its entry in the table is build.rs's part.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::log_format::{self, LogItem};
use crate::mpm::Mpm;
use crate::parse::{ConfigError, Directive, Origin, Reader};
use crate::scripts::{mark_of, ScriptMark};

/// One reading of a configuration: what the directives' functions need
/// besides the value they set, and every problem found.
pub struct Builder {
    pub(crate) server_root: PathBuf,
    pub(crate) mpm: Mpm,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) warnings: Vec<ConfigError>,
    pub(crate) log_formats: HashMap<String, Vec<LogItem>>,
    pub(crate) default_format: Vec<LogItem>,
    pub(crate) config_file: PathBuf,
    /// `SetHandler pool:NAME` lines, checked once every pool is known.
    pub(crate) pool_refs: Vec<(String, Origin)>,
    /// The MPM counts set, by canonical name, for the corrections' warnings.
    pub(crate) tuning_set: Vec<(&'static str, Origin)>,
    /// The last DocumentRoot of the host being read: a host that sets one
    /// must name an existing directory.
    pub(crate) document_root_origin: Option<Origin>,
    /// Directives accepted and not acted on, by name: the reason, the
    /// first line and how many lines, said once each (Debian's mime.conf
    /// alone has 81 AddLanguage lines).
    pub(crate) inert: Vec<(&'static str, &'static str, Origin, usize)>,
    /// `Listen ... https` lines: each needs a host with SSLEngine on.
    pub(crate) https_listens: Vec<(std::net::SocketAddr, Origin)>,
    /// A `LoadModule http2_module` was read (HTTP/2 offered without it is
    /// said: Apache would not offer it).
    pub(crate) http2_loaded: bool,
    /// Reading an `.htaccess` file: a tenant's lines, not the admin's
    /// (server-wide handlers and variables warren sets are refused there).
    pub(crate) in_htaccess: bool,
    /// Reading a skipped `<IfModule>` block: only script marks are taken.
    pub(crate) marks_only: bool,
    /// What each script mark says (see [`Loaded::scripts`]).
    pub(crate) script_notices: Vec<ConfigError>,
    /// The mpm-itk, suexec and mod_fcgid lines of the host being read.
    pub(crate) per_user: crate::fcgid::PerUser,
    /// How those lines were mapped (see [`Loaded::mapped`]).
    pub(crate) mapped: Vec<ConfigError>,
    /// The conditions of the `<If>`/`<ElseIf>` sections just read in the
    /// section being read: what an `<ElseIf>` or `<Else>` there follows.
    pub(crate) if_chain: Option<Vec<crate::expr::Expr>>,
    /// The section around the one being read, for an `<If>` in the latter
    /// (`<Directory>` around `<Files>` around `<If>`): it must apply too.
    pub(crate) around: Option<crate::dir_config::SectionMatch>,
    /// `ProxyPass` and `ProxyPassReverse` lines of a `<Location>` just
    /// read, with the section's path put first: routes of the host around it.
    pub(crate) location_proxy: Vec<crate::parse::Directive>,
    /// `<Proxy balancer://...>` sections and BalancerMember lines so far.
    pub(crate) balancers: Vec<crate::balancer::Balancer>,
    /// ProxyHCExpr lines, by name.
    pub(crate) hc_exprs: Vec<(String, crate::expr::Expr)>,
}

fn err(errors: &mut Vec<ConfigError>, origin: &Origin, message: impl Into<String>) {
    errors.push(ConfigError { origin: origin.clone(), message: message.into() });
}

impl Builder {
    pub(crate) fn new(reader: &Reader, mpm: Mpm, config_file: &Path) -> Builder {
        let mut log_formats = HashMap::new();
        for (name, fmt) in log_format::PREDEFINED {
            log_formats.insert(name.to_string(), log_format::compile(fmt).expect("built-in log format"));
        }
        Builder {
            server_root: reader.server_root.clone(),
            mpm,
            errors: Vec::new(),
            warnings: Vec::new(),
            log_formats,
            default_format: log_format::compile(log_format::COMMON).expect("built-in log format"),
            config_file: config_file.to_path_buf(),
            pool_refs: Vec::new(),
            tuning_set: Vec::new(),
            document_root_origin: None,
            inert: Vec::new(),
            https_listens: Vec::new(),
            http2_loaded: reader.loaded_modules.contains(&"http2"),
            in_htaccess: false,
            if_chain: None,
            around: None,
            marks_only: false,
            script_notices: Vec::new(),
            per_user: crate::fcgid::PerUser::default(),
            mapped: Vec::new(),
            location_proxy: Vec::new(),
            balancers: Vec::new(),
            hc_exprs: Vec::new(),
        }
    }

    /// Whether this reads an `.htaccess` file.
    pub(crate) fn in_htaccess(&self) -> bool {
        self.in_htaccess
    }

    /// The script notices so far, taken.
    pub(crate) fn take_script_notices(&mut self) -> Vec<ConfigError> {
        std::mem::take(&mut self.script_notices)
    }

    /// The warnings so far, taken.
    pub(crate) fn take_warnings(&mut self) -> Vec<ConfigError> {
        std::mem::take(&mut self.warnings)
    }

    /// The first error reported so far, if any.
    pub(crate) fn first_error(&self) -> Option<ConfigError> {
        self.errors.first().cloned()
    }

    pub(crate) fn error(&mut self, origin: &Origin, message: impl Into<String>) {
        err(&mut self.errors, origin, message);
    }

    pub(crate) fn warn(&mut self, origin: &Origin, message: impl Into<String>) {
        err(&mut self.warnings, origin, message);
    }

    pub(crate) fn resolve(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.server_root.join(p)
        }
    }

    /// The warnings for the directives accepted and not acted on so far,
    /// one per directive, moved to `warnings`.
    pub(crate) fn say_inert(&mut self) {
        for (name, why, origin, count) in std::mem::take(&mut self.inert) {
            let lines = match count {
                1 => String::new(),
                n => format!(" (here and on {} more line{})", n - 1, if n == 2 { "" } else { "s" }),
            };
            self.warn(&origin, format!("{name}{lines}: accepted, not acted on: {why}"));
        }
    }

    /// The one argument of `d`, else an error.
    pub(crate) fn one(&mut self, d: &Directive) -> Option<String> {
        match d.args.as_slice() {
            [v] => Some(v.clone()),
            _ => {
                self.error(&d.origin, format!("{} takes one argument", d.name));
                None
            }
        }
    }

    pub(crate) fn whole_number(&mut self, d: &Directive) -> Option<u64> {
        let v = self.one(d)?;
        match v.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.error(&d.origin, format!("{}: '{v}' is not a non-negative whole number", d.name));
                None
            }
        }
    }

    pub(crate) fn on_off(&mut self, d: &Directive) -> Option<bool> {
        let v = self.one(d)?;
        match v.to_ascii_lowercase().as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => {
                self.error(&d.origin, format!("{} must be On or Off", d.name));
                None
            }
        }
    }

    /// Records the script mark `d` makes, if it makes one, in `marks` (a
    /// directory's), and its notice for `-t` and the start.
    pub(crate) fn mark_script(&mut self, d: &Directive, marks: &mut Vec<ScriptMark>) {
        if let Some(mark) = mark_of(d, self.marks_only) {
            // CGI programs run: nothing to warn of.
            if mark.cgi {
                marks.push(mark);
                return;
            }
            self.script_notices.push(ConfigError { origin: mark.origin.clone(), message: mark.notice() });
            marks.push(mark);
        }
    }
}
