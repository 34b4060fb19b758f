//! `<Pool name>`: a pool of FastCGI worker processes that warren starts and
//! manages itself, configured with php-fpm's directive names (and php-fpm's
//! defaults for what is left out) inside Apache's syntax.

use std::path::PathBuf;
use std::time::Duration;

use crate::parse::{ConfigError, Node, Origin, Section};
use crate::values::{parse_duration, PHP_FPM_TIME};

/// The most children a pool with `pm.max_children auto` may be given,
/// whatever the budget: past this, two cores gain nothing from more.
pub const AUTO_CEILING: u32 = 64;

/// php-fpm's `pm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmStyle {
    Static,
    Dynamic,
    Ondemand,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    pub name: String,
    /// The program and its arguments; it must accept FastCGI connections on
    /// its standard input (a listening socket), as php-cgi does.
    pub command: Vec<String>,
    pub user: Option<String>,
    pub group: Option<String>,
    pub pm: PmStyle,
    /// The most children; with `auto`, the ceiling under which warren sizes
    /// the pool to its memory budget.
    pub max_children: u32,
    /// `pm.max_children auto`: the count follows the memory budget.
    pub max_children_auto: bool,
    pub start_servers: u32,
    pub min_spare_servers: u32,
    pub max_spare_servers: u32,
    pub max_spawn_rate: u32,
    pub process_idle_timeout: Duration,
    /// Requests a child serves before it is replaced (0: no limit).
    pub max_requests: u32,
    pub request_terminate_timeout: Option<Duration>,
    /// A request running this long is noted in `slowlog` (and the error log).
    pub request_slowlog_timeout: Option<Duration>,
    pub slowlog: Option<PathBuf>,
    /// How many requests may wait for a child.
    pub listen_backlog: u32,
    pub env: Vec<(String, String)>,
    /// PHP settings: `php_value[name]` and `php_flag[name]`, then their
    /// `php_admin_` forms, which php-fpm locks (php-cgi gets both as `-d`).
    pub php_ini: Vec<(String, String)>,
    pub php_admin_ini: Vec<(String, String)>,
    /// php-fpm's settings that only a php-fpm pool has (access.log, chdir,
    /// security.limit_extensions...), written into its configuration as they are.
    pub php_fpm_settings: Vec<(String, String)>,
    /// What the children print goes to the error log (else nowhere).
    pub catch_output: bool,
    pub status_path: Option<String>,
    pub origin: Origin,
}

impl PoolConfig {
    /// A pool with php-fpm's defaults running `command`.
    pub fn new(name: &str, command: Vec<String>, origin: Origin) -> PoolConfig {
        let mut p = PoolConfig::defaults(name, origin);
        p.command = command;
        p.start_servers = p.min_spare_servers + (p.max_spare_servers - p.min_spare_servers) / 2;
        p
    }

    fn defaults(name: &str, origin: Origin) -> PoolConfig {
        PoolConfig {
            name: name.to_string(),
            command: vec!["php-cgi".to_string()],
            user: None,
            group: None,
            pm: PmStyle::Dynamic,
            max_children: 5,
            max_children_auto: false,
            start_servers: 0,
            min_spare_servers: 1,
            max_spare_servers: 3,
            max_spawn_rate: 32,
            process_idle_timeout: Duration::from_secs(10),
            max_requests: 0,
            request_terminate_timeout: None,
            request_slowlog_timeout: None,
            slowlog: None,
            listen_backlog: 511,
            env: Vec::new(),
            php_ini: Vec::new(),
            php_admin_ini: Vec::new(),
            php_fpm_settings: Vec::new(),
            catch_output: true,
            status_path: None,
            origin,
        }
    }

    /// Whether the pool is a php-fpm master of its own (`Command php-fpm8.2`),
    /// which forks its children after PHP's start-up so that they share one
    /// opcache, rather than children warren starts one by one.
    pub fn runs_php_fpm(&self) -> bool {
        self.command.first().and_then(|c| std::path::Path::new(c).file_name()).is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))
    }

    /// What is the same for a graceful restart to keep the pool's children.
    pub fn same_processes(&self, other: &PoolConfig) -> bool {
        let strip = |p: &PoolConfig| PoolConfig { origin: other.origin.clone(), ..p.clone() };
        strip(self) == strip(other)
    }
}

/// php-fpm's form of a line, `pm = dynamic` (also `pm=dynamic`, and an INI
/// comment after `;`), as the reader splits it into a name and words: the
/// name, and the values without the `=` and the comment. A line in
/// Apache's form (`pm dynamic`) comes back as it is.
fn fpm_form(name: &str, args: &[String]) -> (String, Vec<String>) {
    let mut args = args.to_vec();
    let key = match name.split_once('=') {
        Some((key, value)) => {
            if !value.is_empty() {
                args.insert(0, value.to_string());
            }
            key
        }
        None if args.first().is_some_and(|a| a.starts_with('=')) => {
            args[0].remove(0);
            if args[0].is_empty() {
                args.remove(0);
            }
            name
        }
        None => return (name.to_string(), args),
    };
    if let Some(comment) = args.iter().position(|a| a.starts_with(';')) {
        args.truncate(comment);
    }
    (key.to_string(), args)
}

/// Why a php-fpm pool setting that warren knows has no effect in its
/// pools, or None for a setting it does not know.
enum NotApplied {
    /// In no pool: warren makes the pool's socket.
    Ever(&'static str),
    /// In a pool of php-cgi; a php-fpm pool gets it as it is.
    ToPhpCgi(&'static str),
}

fn not_applied(lname: &str) -> Option<NotApplied> {
    use NotApplied::*;
    Some(match lname {
        "listen" | "listen.owner" | "listen.group" | "listen.mode" | "listen.acl_users" | "listen.acl_groups" | "listen.allowed_clients" | "listen.setfib" => {
            Ever("a pool of warren's takes requests from warren alone (SetHandler pool:NAME), on a socket of its own that only the server's user may use; this address is not made")
        }
        "access.log" | "access.format" | "access.suppress_path" => ToPhpCgi("the pool's requests are logged in warren's CustomLog"),
        "request_slowlog_trace_depth" => ToPhpCgi("the slow log has no backtrace: php-cgi cannot be traced as php-fpm traces its own children"),
        "chdir" => ToPhpCgi("the children start in the directory warren was started in"),
        "clear_env" => ToPhpCgi("warren always clears the children's environment but for env[NAME]"),
        "security.limit_extensions" => ToPhpCgi("only what SetHandler pool:NAME maps reaches the pool"),
        "decorate_workers_output" => ToPhpCgi("warren prefixes the children's lines with the pool's name"),
        "pm.status_listen" => Ever("the status page is pm.status_path, reached through warren and its access rules; php-fpm binds no address of its own"),
        "ping.path" | "ping.response" => ToPhpCgi("the status page is pm.status_path, served by warren"),
        "rlimit_files" | "rlimit_core" | "process.priority" | "process.dumpable" | "apparmor" | "prefix" => ToPhpCgi("warren does not set it for the children"),
        _ => return None,
    })
}

/// `php_value[name]` and its kin: which of them, and the setting's name
/// (as written in lower case).
fn php_setting(lname: &str) -> Option<(&'static str, &str)> {
    ["php_value", "php_flag", "php_admin_value", "php_admin_flag"]
        .into_iter()
        .find_map(|kind| lname.strip_prefix(kind).and_then(|r| r.strip_prefix('[')).and_then(|r| r.strip_suffix(']')).map(|s| (kind, s)))
}

/// php-fpm as Debian installs it (`/usr/sbin/php-fpm8.2`) or on PATH:
/// `php-fpm{version}` if there is one, else any.
pub fn find_php_fpm(version: Option<&str>) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain([PathBuf::from("/usr/sbin")]);
    let mut found: Vec<PathBuf> = dirs
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("php-fpm")) && p.is_file())
        .collect();
    // The newest first, when no version is asked for.
    found.sort();
    found.reverse();
    let wanted = version.map(|v| format!("php-fpm{v}"));
    found.iter().find(|p| wanted.as_deref().is_some_and(|w| p.file_name().is_some_and(|n| n == w))).or(found.first()).cloned()
}

/// Whether `command` runs PHP (php-cgi, or another build of it), which
/// takes settings as `-d name=value`.
pub fn runs_php(command: &[String]) -> bool {
    command.first().and_then(|c| std::path::Path::new(c).file_name()).is_some_and(|n| n.to_string_lossy().starts_with("php"))
}

/// Reads one `<Pool name>` section.
/// Unknown directives are errors in a `<Pool>` of warren's config
/// (`strict`), warnings in a php-fpm pool file.
pub fn parse_pool(sec: &Section, strict: bool, errors: &mut Vec<ConfigError>, warnings: &mut Vec<ConfigError>) -> Option<PoolConfig> {
    let err = |errors: &mut Vec<ConfigError>, origin: &Origin, m: String| errors.push(ConfigError { origin: origin.clone(), message: m });
    let name = match sec.args.as_slice() {
        [n] if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) => n.clone(),
        _ => {
            err(errors, &sec.origin, "<Pool> takes one name (letters, digits, - _ .)".into());
            return None;
        }
    };
    let mut p = PoolConfig::defaults(&name, sec.origin.clone());
    let mut start_set = false;
    let mut catch_set = false;
    let before = errors.len();
    let warned_before = warnings.len();
    // Said once the program is known: php-fpm does lock them.
    let mut admin_warnings = Vec::new();
    // Settings php-fpm has and php-cgi pools do not: passed on to a php-fpm
    // pool, else each a warning.
    let mut php_fpm_only = Vec::new();
    for node in &sec.children {
        let d = match node {
            Node::Directive(d) => d,
            Node::Section(s) => {
                err(errors, &s.origin, format!("<{}> is not allowed in <Pool>", s.name));
                continue;
            }
            // An <IfModule> of a module warren lacks: nothing of a pool's.
            Node::Skipped(_) => continue,
        };
        let (key, args) = fpm_form(&d.name, &d.args);
        if key.starts_with(';') {
            // A comment line of a php-fpm pool file.
            continue;
        }
        let lname = key.to_ascii_lowercase();
        let one = |errors: &mut Vec<ConfigError>| -> Option<&String> {
            match args.as_slice() {
                [v] => Some(v),
                _ => {
                    err(errors, &d.origin, format!("{key} takes one value"));
                    None
                }
            }
        };
        let count = |errors: &mut Vec<ConfigError>| -> Option<u32> {
            let v = one(errors)?;
            v.parse::<u32>().ok().or_else(|| {
                err(errors, &d.origin, format!("{key}: '{v}' is not a whole number"));
                None
            })
        };
        let time = |errors: &mut Vec<ConfigError>| -> Option<Duration> {
            let v = one(errors)?;
            parse_duration(v, &PHP_FPM_TIME).or_else(|| {
                err(errors, &d.origin, format!("{key}: '{v}' is not a time (seconds, or with s, m, h or d)"));
                None
            })
        };
        if let Some(var) = lname.strip_prefix("env[").and_then(|r| r.strip_suffix(']')) {
            let var = &key[4..4 + var.len()];
            match (var.is_empty(), args.as_slice()) {
                (false, [v]) => p.env.push((var.to_string(), v.clone())),
                _ => err(errors, &d.origin, "env[NAME] takes one value".into()),
            }
            continue;
        }
        if let Some((kind, setting)) = php_setting(&lname) {
            let setting = &key[key.len() - setting.len() - 1..key.len() - 1];
            match args.as_slice() {
                [v] if !setting.is_empty() && setting.chars().all(|c| c.is_ascii_alphanumeric() || "_.".contains(c)) => {
                    // A flag is stored as php-fpm stores it: "1" or "0".
                    let v = match (kind.ends_with("_flag"), v.to_ascii_lowercase().as_str()) {
                        (false, _) => v.clone(),
                        (true, "1" | "on" | "yes" | "true") => "1".to_string(),
                        (true, "0" | "off" | "no" | "false" | "") => "0".to_string(),
                        (true, _) => {
                            err(errors, &d.origin, format!("{kind}[{setting}]: '{v}' is not a boolean (on, off, yes, no, true, false, 1, 0)"));
                            continue;
                        }
                    };
                    if kind.starts_with("php_admin_") {
                        let w = format!("{kind}[{setting}]: php-cgi cannot lock a setting as php-fpm does; it is set as php_value is, and a script may still change it with ini_set where PHP allows");
                        admin_warnings.push(ConfigError { origin: d.origin.clone(), message: w });
                        p.php_admin_ini.push((setting.to_string(), v));
                    } else {
                        p.php_ini.push((setting.to_string(), v));
                    }
                }
                _ => err(errors, &d.origin, format!("{kind}[NAME] takes a PHP setting's name (letters, digits, _ .) and one value")),
            }
            continue;
        }
        match lname.as_str() {
            "command" => {
                if args.is_empty() {
                    err(errors, &d.origin, "Command needs a program".into());
                } else if args[0] == "php-fpm" {
                    // Debian names it by version (php-fpm8.2): the one installed.
                    match find_php_fpm(None) {
                        Some(fpm) => p.command = [fpm.to_string_lossy().into_owned()].into_iter().chain(args[1..].iter().cloned()).collect(),
                        None => err(errors, &d.origin, "Command php-fpm: php-fpm is not installed (Debian: apt-get install php-fpm), not on PATH nor in /usr/sbin".into()),
                    }
                } else {
                    p.command = args.clone();
                }
            }
            "user" => p.user = one(errors).cloned(),
            "group" => p.group = one(errors).cloned(),
            "pm" => match one(errors).map(|v| v.to_ascii_lowercase()) {
                Some(v) if v == "static" => p.pm = PmStyle::Static,
                Some(v) if v == "dynamic" => p.pm = PmStyle::Dynamic,
                Some(v) if v == "ondemand" => p.pm = PmStyle::Ondemand,
                Some(v) => err(errors, &d.origin, format!("pm: '{v}' is not static, dynamic or ondemand")),
                None => {}
            },
            "pm.max_children" if args.len() == 1 && args[0].eq_ignore_ascii_case("auto") => {
                p.max_children = AUTO_CEILING;
                p.max_children_auto = true;
            }
            "pm.max_children" => {
                p.max_children = count(errors).unwrap_or(p.max_children);
                p.max_children_auto = false;
            }
            "pm.start_servers" => {
                if let Some(n) = count(errors) {
                    p.start_servers = n;
                    start_set = true;
                }
            }
            "pm.min_spare_servers" => p.min_spare_servers = count(errors).unwrap_or(p.min_spare_servers),
            "pm.max_spare_servers" => p.max_spare_servers = count(errors).unwrap_or(p.max_spare_servers),
            "pm.max_spawn_rate" => p.max_spawn_rate = count(errors).unwrap_or(p.max_spawn_rate),
            "pm.max_requests" => p.max_requests = count(errors).unwrap_or(p.max_requests),
            "pm.process_idle_timeout" => p.process_idle_timeout = time(errors).unwrap_or(p.process_idle_timeout),
            "request_terminate_timeout" => {
                if let Some(t) = time(errors) {
                    p.request_terminate_timeout = (!t.is_zero()).then_some(t);
                }
            }
            "request_slowlog_timeout" => {
                if let Some(t) = time(errors) {
                    p.request_slowlog_timeout = (!t.is_zero()).then_some(t);
                }
            }
            "slowlog" => p.slowlog = one(errors).map(PathBuf::from),
            "listen.backlog" => p.listen_backlog = count(errors).unwrap_or(p.listen_backlog),
            "pm.status_path" => match one(errors) {
                Some(v) if v.starts_with('/') => p.status_path = Some(v.clone()),
                Some(v) => err(errors, &d.origin, format!("pm.status_path {v} must start with /")),
                None => {}
            },
            "catch_workers_output" => match one(errors).map(|v| v.to_ascii_lowercase()).inspect(|_| catch_set = true) {
                Some(v) if ["yes", "on", "true", "1"].contains(&v.as_str()) => p.catch_output = true,
                Some(v) if ["no", "off", "false", "0", ""].contains(&v.as_str()) => p.catch_output = false,
                Some(v) => err(errors, &d.origin, format!("catch_workers_output: '{v}' is not yes or no")),
                None => {}
            },
            "chroot" => err(errors, &d.origin, "chroot: warren's pools cannot chroot their children; refusing rather than running them outside the chroot".to_string()),
            _ => match not_applied(&lname) {
                Some(why) => php_fpm_only.push((key.to_string(), args.join(" "), d.origin.clone(), why)),
                None if strict => err(errors, &d.origin, format!("unknown or unsupported directive '{key}' in <Pool>")),
                None => warnings.push(ConfigError { origin: d.origin.clone(), message: format!("{key}: not a setting warren's pools know; ignored") }),
            },
        }
    }
    for (key, value, origin, why) in php_fpm_only {
        match why {
            NotApplied::ToPhpCgi(_) if p.runs_php_fpm() => p.php_fpm_settings.push((key, value)),
            NotApplied::ToPhpCgi(why) | NotApplied::Ever(why) => warnings.push(ConfigError { origin, message: format!("{key} is not applied: {why}") }),
        }
    }
    // php-fpm's own default for its masters: with catch_workers_output
    // each child writes to its master's pipe at the end of every request
    // (fpm_stdio_flush_child), a wake-up of the master per request that
    // cost a hello.php a third more CPU.
    if p.runs_php_fpm() && !catch_set {
        p.catch_output = false;
    }
    if !p.runs_php_fpm() {
        warnings.extend(admin_warnings);
    } else if p.env.iter().chain(&p.php_ini).chain(&p.php_admin_ini).chain(&p.php_fpm_settings).any(|(_, v)| v.contains('"')) {
        err(errors, &sec.origin, format!("<Pool {name}>: a value with a double quote cannot be written into php-fpm's configuration"));
    }
    let php_settings = !p.php_ini.is_empty() || !p.php_admin_ini.is_empty();
    if php_settings && !runs_php(&p.command) {
        err(errors, &sec.origin, format!("<Pool {name}>: php_value and php_flag need a PHP program (php-cgi), not {}", p.command[0]));
    }
    if p.request_slowlog_timeout.is_some() && p.slowlog.is_none() {
        err(errors, &sec.origin, format!("[pool {name}] 'slowlog' must be specified for use with 'request_slowlog_timeout'"));
    }
    // Some are said once the section is read: all in the file's order.
    warnings[warned_before..].sort_by_key(|w| w.origin.line);
    // php-fpm's checks, with its words where it has them.
    let o = &sec.origin;
    if p.max_children < 1 {
        err(errors, o, format!("[pool {name}] pm.max_children must be a positive value"));
    }
    if p.max_spawn_rate < 1 {
        err(errors, o, format!("[pool {name}] pm.max_spawn_rate must be a positive value"));
    }
    if p.pm == PmStyle::Dynamic {
        if p.min_spare_servers < 1 {
            err(errors, o, format!("[pool {name}] pm.min_spare_servers({}) must be a positive value", p.min_spare_servers));
        }
        if p.max_spare_servers < 1 || p.max_spare_servers > p.max_children {
            err(errors, o, format!("[pool {name}] pm.max_spare_servers({}) must be a positive value and not greater than pm.max_children({})", p.max_spare_servers, p.max_children));
        }
        if p.min_spare_servers > p.max_spare_servers {
            err(errors, o, format!("[pool {name}] pm.min_spare_servers({}) must not be greater than pm.max_spare_servers({})", p.min_spare_servers, p.max_spare_servers));
        }
        if !start_set {
            p.start_servers = p.min_spare_servers + (p.max_spare_servers.saturating_sub(p.min_spare_servers)) / 2;
        } else if p.start_servers < p.min_spare_servers || p.start_servers > p.max_spare_servers {
            err(errors, o, format!("[pool {name}] pm.start_servers({}) must not be less than pm.min_spare_servers({}) and not greater than pm.max_spare_servers({})", p.start_servers, p.min_spare_servers, p.max_spare_servers));
        }
    }
    (errors.len() == before).then_some(p)
}
