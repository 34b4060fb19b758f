//! mod_php's directives (`php_value`, `php_flag`, `php_admin_value`,
//! `php_admin_flag`), read into a section's
//! [`PhpSetting`](crate::mod_php::PhpSetting)s, and the mapping of a host's
//! mod_php lines onto a pool of its own once it is read ([`route_host`]);
//! see [`mod_php`](crate::mod_php) for the whole story. The request half is
//! the handler's `fastcgi::php_settings` (what reaches PHP per request).

use crate::builder::Builder;
use crate::dir_config::{DirConfig, DirSection, SectionMatch};
use crate::mod_php::{runs_php, settled, PhpPool, PhpSetting};
use crate::parse::{ConfigError, Directive, Origin};
use crate::pool::{PmStyle, PoolConfig};
use crate::scripts::{Handler, ScriptMark};
use crate::settings::HostConfig;

/// The settings an `.htaccess` file's php_value may not change: PHP 8.2's
/// PHP_INI_SYSTEM ones (`ini_get_all()`'s access 4, with Debian's bundled
/// extensions), which mod_php refuses there and php-fpm's `PHP_VALUE`
/// would set all the same; `extension` and `zend_extension`, which
/// php-fpm loads from `PHP_VALUE`; and `open_basedir`, which mod_php lets
/// `.htaccess` only narrow.
const SYSTEM_ONLY: &[&str] = &[
    // The CGI and FPM SAPIs' own, which the CLI does not list.
    "cgi.check_shebang_line", "cgi.discard_path", "cgi.fix_pathinfo", "cgi.force_redirect", "cgi.nph", "cgi.redirect_status_env", "cgi.rfc2616_headers",
    "fastcgi.error_header", "fastcgi.impersonate", "fastcgi.logging", "fpm.config",
    "allow_url_fopen", "allow_url_include", "browscap", "curl.cainfo", "disable_classes", "disable_functions", "doc_root", "enable_dl", "expose_php",
    "extension", "extension_dir", "ffi.enable", "ffi.preload", "file_uploads", "hard_timeout", "mysqli.allow_local_infile",
    "mysqli.allow_persistent", "mysqli.local_infile_directory", "mysqli.max_links", "mysqli.max_persistent", "mysqli.rollback_on_cached_plink",
    "mysqlnd.collect_memory_statistics", "mysqlnd.debug", "mysqlnd.trace_alloc", "opcache.blacklist_filename", "opcache.enable_cli",
    "opcache.enable_file_override", "opcache.error_log", "opcache.file_cache", "opcache.file_cache_consistency_checks", "opcache.file_cache_only",
    "opcache.force_restart_timeout", "opcache.huge_code_pages", "opcache.interned_strings_buffer", "opcache.jit_buffer_size", "opcache.jit_hot_func",
    "opcache.jit_hot_loop", "opcache.jit_hot_return", "opcache.jit_max_exit_counters", "opcache.jit_max_root_traces", "opcache.jit_max_side_traces",
    "opcache.lockfile_path", "opcache.log_verbosity_level", "opcache.max_accelerated_files", "opcache.max_file_size",
    "opcache.max_wasted_percentage", "opcache.memory_consumption", "opcache.opt_debug_level", "opcache.optimization_level",
    "opcache.preferred_memory_model", "opcache.preload", "opcache.preload_user", "opcache.protect_memory", "opcache.record_warnings",
    "opcache.restrict_api", "opcache.save_comments", "opcache.use_cwd", "opcache.validate_permission", "opcache.validate_root", "open_basedir",
    "pdo_mysql.default_socket", "phar.cache_list", "realpath_cache_size", "realpath_cache_ttl", "sendmail_path", "sys_temp_dir", "syslog.facility",
    "syslog.ident", "upload_tmp_dir", "user_dir", "user_ini.cache_ttl", "user_ini.filename", "xmlrpc_errors", "zend.signal_check", "zend_extension",
];

/// `php_value NAME VALUE` and its kin. An `.htaccess` file may hold
/// php_value and php_flag (AllowOverride Options); php_admin_* there are
/// refused before this is reached, as Apache refuses them.
pub(crate) fn setting(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let kind = d.name.to_ascii_lowercase();
    let [name, value] = d.args.as_slice() else {
        return b.error(&d.origin, format!("{} takes a PHP setting's name and one value", d.name));
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_.".contains(c)) {
        return b.error(&d.origin, format!("{}: '{name}' is not a PHP setting's name (letters, digits, _ .)", d.name));
    }
    // PHP reads the values as INI lines, `name="value"`: a quote, a line
    // break or `${` would let a value set other settings than its own.
    if value.contains(['"', '\n', '\r', '\0']) || value.contains("${") {
        return b.error(&d.origin, format!("{}: the value of {name} may not hold a double quote, a line break or ${{", d.name));
    }
    let value = if kind.ends_with("_flag") {
        match value.to_ascii_lowercase().as_str() {
            "1" | "on" | "yes" | "true" => "1".to_string(),
            "0" | "off" | "no" | "false" | "" => "0".to_string(),
            _ => return b.error(&d.origin, format!("{}: '{value}' is not a boolean (on, off)", d.name)),
        }
    } else {
        value.clone()
    };
    if b.in_htaccess && SYSTEM_ONLY.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        return b.warn(&d.origin, format!("{}: {name} is not applied: only the server's configuration may set it (php.ini or php_admin_value), as with mod_php", d.name));
    }
    dir.php.push(PhpSetting { name: name.clone(), value, admin: kind.starts_with("php_admin_"), origin: d.origin.clone() });
}

/// The sections that send the files of `host`'s mod_php lines to its pool,
/// to put before its own: a `SetHandler` line's section again (with the
/// pool's handler), an `AddHandler` or `AddType` line's extensions as a
/// `<FilesMatch>`. Lines inside `<Location>` are left as they are.
fn sections_for(host: &HostConfig, pool: &str) -> Vec<DirSection> {
    let handler = || DirConfig { handler: Some(Some(Handler::Pool(pool.to_string()))), ..DirConfig::default() };
    let by_extensions = |mark: &ScriptMark, within: Option<Box<SectionMatch>>| {
        let re = crate::directives::fcgid::files_ending_in(mark.extensions.as_ref()?)?;
        Some(DirSection { matcher: SectionMatch::FilesMatch(re), within, config: handler(), origin: mark.origin.clone() })
    };
    let mut added = Vec::new();
    for mark in host.dir.scripts.iter().filter(|m| runs_php(m)) {
        added.extend(by_extensions(mark, None));
    }
    for s in &host.sections {
        let in_location = matches!(s.matcher, SectionMatch::Location(_) | SectionMatch::LocationMatch(_) | SectionMatch::If(_));
        for mark in s.config.scripts.iter().filter(|m| runs_php(m) && !in_location) {
            let section = match &mark.extensions {
                None => Some(DirSection { matcher: s.matcher.clone(), within: s.within.clone(), config: handler(), origin: mark.origin.clone() }),
                Some(_) if matches!(s.matcher, SectionMatch::Directory(_) | SectionMatch::DirectoryMatch(_)) && s.within.is_none() => by_extensions(mark, Some(Box::new(s.matcher.clone()))),
                Some(_) => None,
            };
            added.extend(section);
        }
    }
    added
}

/// The pool a host without one of its own gets for its PHP: php-fpm when
/// installed (it reads settings per request), else php-cgi; children
/// started as requests come, as few as mod_php's idle Apache children.
fn default_pool(name: &str, origin: Origin) -> PoolConfig {
    let command = match crate::pool::find_php_fpm(None) {
        Some(fpm) => vec![fpm.to_string_lossy().into_owned()],
        None => vec!["php-cgi".to_string()],
    };
    let mut p = PoolConfig::new(name, command, origin);
    if p.runs_php_fpm() {
        // Only the files mod_php's lines name reach the pool, whatever
        // their extensions (.phtml, .php7...): php-fpm is not to refuse them.
        p.php_fpm_settings.push(("security.limit_extensions".to_string(), String::new()));
    }
    p.pm = PmStyle::Ondemand;
    p.start_servers = 0;
    p
}

/// Whether the main server answers any request: some `Listen` address no
/// virtual host takes (the hosts' own rule, as the handler selects them).
pub fn main_serves(s: &crate::settings::Settings) -> bool {
    s.listen.iter().any(|l| !s.virtual_hosts.iter().any(|vh| vh.addrs.iter().any(|a| a.takes(*l))))
}

/// What routing one host's PHP said, for `-t` and the start.
pub struct Routed {
    pub notices: Vec<ConfigError>,
    pub warnings: Vec<ConfigError>,
}

/// Gives `host` its PHP pool if mod_php's lines name files to run: the
/// pool `own` (mpm-itk's, suexec's) or one of `pools` made for it, named
/// `name`. Returns the lines said.
pub fn route_host(host: &mut HostConfig, own: Option<&str>, name: &str, origin: &Origin, pools: &mut Vec<PoolConfig>, script_notices: &mut Vec<ConfigError>) -> Routed {
    let mut routed = Routed { notices: Vec::new(), warnings: Vec::new() };
    let Some(first) = sections_for(host, "").into_iter().next() else {
        for s in host.dir.php.iter().chain(host.sections.iter().flat_map(|s| &s.config.php)) {
            routed.warnings.push(ConfigError { origin: s.origin.clone(), message: format!("{} is not applied: this host runs PHP in no pool of its own (mod_php's SetHandler, AddHandler or AddType application/x-httpd-php gives it one); a shared pool would carry it into other sites' requests", s.name) });
        }
        return routed;
    };
    // The main server has no line of its own: its first mod_php line.
    let origin = if origin.line == 0 { &first.origin } else { origin };
    // The host's own settings, which a php-cgi pool takes as `-d`.
    let (values, admin) = settled(host.dir.php.iter());
    let as_arguments = |pool: &mut PoolConfig| {
        if !pool.runs_php_fpm() && crate::pool::runs_php(&pool.command) {
            let args: Vec<String> = values.iter().chain(&admin).flat_map(|(n, v)| ["-d".to_string(), format!("{n}={v}")]).collect();
            if !pool.command.ends_with(&args) {
                pool.command.extend(args);
            }
        }
    };
    let pool_name = match own {
        Some(own) => {
            if let Some(pool) = pools.iter_mut().find(|p| p.name == own) {
                as_arguments(pool);
            }
            own.to_string()
        }
        None => {
            let mut pool = default_pool(name, origin.clone());
            as_arguments(&mut pool);
            // The :80 and :443 hosts of one site share its pool.
            match pools.iter().find(|p| p.name == pool.name) {
                Some(same) if same.same_processes(&pool) => {}
                Some(_) => {
                    pool.name = format!("{name}-{}", origin.line);
                    pools.push(pool.clone());
                }
                None => pools.push(pool.clone()),
            }
            let how = if pool.runs_php_fpm() { "php-fpm, settings per request" } else { "php-cgi (no php-fpm installed): php_value lines of sections and .htaccess files are not applied" };
            routed.notices.push(ConfigError { origin: origin.clone(), message: format!("mod_php lines mapped to warren's pool {}: `{}`, {how}, pm ondemand, pm.max_children {}", pool.name, pool.command.join(" "), pool.max_children) });
            pool.name
        }
    };
    let per_request = pools.iter().find(|p| p.name == pool_name).is_some_and(PoolConfig::runs_php_fpm);
    if !per_request {
        for s in host.sections.iter().flat_map(|s| &s.config.php) {
            routed.warnings.push(ConfigError { origin: s.origin.clone(), message: format!("{} is not applied: the pool {pool_name} runs php-cgi, which reads no settings per request (php-fpm does)", s.name) });
        }
    }
    let sections = sections_for(host, &pool_name);
    for s in &sections {
        script_notices.retain(|e| e.origin != s.origin);
        routed.notices.push(ConfigError { origin: s.origin.clone(), message: format!("mod_php's files here run in warren's pool {pool_name}") });
    }
    host.sections.splice(0..0, sections);
    host.php_pool = Some(PhpPool { name: pool_name, per_request });
    routed
}
