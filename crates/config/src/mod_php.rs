//! mod_php's configuration, run by warren's pools: `SetHandler`,
//! `AddHandler` and `AddType application/x-httpd-php`, and `php_value`,
//! `php_flag`, `php_admin_value`, `php_admin_flag`.
//!
//! mod_php runs PHP inside each Apache child; warren runs it in a pool of
//! the host's own: the pool mpm-itk's or suexec's lines gave the host
//! (see [`crate::fcgid`]), else one started for the host alone, with
//! php-fpm when it is installed (else php-cgi). The files mod_php's lines
//! name go there through sections placed before the configuration's own
//! (as fcgid.rs does), so that a `SetHandler proxy:` or `pool:` the
//! configuration gives them still wins.
//!
//! The settings reach PHP per request as php-fpm reads them, FastCGI's
//! `PHP_VALUE` and `PHP_ADMIN_VALUE`. php-fpm applies them to the worker
//! process and keeps them for its later requests: a pool shared between
//! sites would carry one site's settings into another's requests, so only
//! the host's own pool is sent them. php-cgi reads neither: with a php-cgi
//! pool the host's own settings are given to the pool's command as `-d`,
//! and those of sections (said at start) and `.htaccess` files (said when
//! the file is read) are not applied. An admin setting wins over every `php_value` of the same name,
//! wherever it stands, as in mod_php; php-fpm then locks it against
//! `ini_set`.
//!
//! Here are the settings' types and how they combine ([`settled`],
//! [`ini_lines`]), which the handler uses per request; the directives and
//! the mapping onto pools are in
//! `directives/mod_php.rs`.

use crate::parse::Origin;
use crate::scripts::ScriptMark;

/// One `php_value`, `php_flag`, `php_admin_value` or `php_admin_flag` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhpSetting {
    pub name: String,
    /// As PHP reads it; a flag as "1" or "0".
    pub value: String,
    /// `php_admin_*`: not overridden by a later `php_value`, locked.
    pub admin: bool,
    pub origin: Origin,
}

/// mod_php's handler: the files it runs.
pub(crate) const PHP_TYPE: &str = "application/x-httpd-php";

/// The host's PHP pool, and whether it reads settings per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhpPool {
    pub name: String,
    /// The pool is php-fpm, which reads `PHP_VALUE` and `PHP_ADMIN_VALUE`.
    pub per_request: bool,
}

/// Settings by name: (name, value).
pub type IniLines<'a> = Vec<(&'a str, &'a str)>;

/// The settings in force where `layers` apply (least specific first):
/// (php_value lines, php_admin lines), each name once, its last value.
/// An admin value of a name wins over every php_value of it.
pub fn settled<'a>(layers: impl Iterator<Item = &'a PhpSetting>) -> (IniLines<'a>, IniLines<'a>) {
    let mut values: Vec<(&str, &str)> = Vec::new();
    let mut admin: Vec<(&str, &str)> = Vec::new();
    for s in layers {
        let list = if s.admin { &mut admin } else { &mut values };
        match list.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&s.name)) {
            Some(slot) => slot.1 = &s.value,
            None => list.push((&s.name, &s.value)),
        }
    }
    values.retain(|(n, _)| !admin.iter().any(|(a, _)| a.eq_ignore_ascii_case(n)));
    (values, admin)
}

/// `name="value"` lines, as php-fpm reads PHP_VALUE.
pub fn ini_lines(settings: &[(&str, &str)]) -> Vec<u8> {
    settings.iter().map(|(n, v)| format!("{n}=\"{v}\"")).collect::<Vec<_>>().join("\n").into_bytes()
}

/// Whether `mark` is one of mod_php's lines that run files (not the
/// `-source` type, which shows them).
pub fn runs_php(mark: &ScriptMark) -> bool {
    let mut words = mark.directive.split_whitespace();
    let directive = words.next().unwrap_or("").to_ascii_lowercase();
    let handler = words.next().unwrap_or("").trim_matches('"');
    matches!(directive.as_str(), "sethandler" | "addhandler" | "addtype") && handler.eq_ignore_ascii_case(PHP_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn line(name: &str, value: &str, admin: bool, n: usize) -> PhpSetting {
        PhpSetting { name: name.into(), value: value.into(), admin, origin: Origin { file: Arc::new(PathBuf::from("/etc/x.conf")), line: n } }
    }

    #[test]
    fn admin_values_win_over_every_php_value() {
        let lines = [line("memory_limit", "64M", false, 1), line("Memory_Limit", "32M", true, 2), line("memory_limit", "512M", false, 3), line("html_errors", "0", false, 4), line("html_errors", "1", false, 5)];
        let (values, admin) = settled(lines.iter());
        assert_eq!(values, [("html_errors", "1")]);
        assert_eq!(admin, [("Memory_Limit", "32M")]);
        assert_eq!(ini_lines(&[("a", "1"), ("b.c", "x y")]), b"a=\"1\"\nb.c=\"x y\"");
    }
}
