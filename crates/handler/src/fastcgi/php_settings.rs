//! mod_php's `php_value` lines for one request (see
//! [`warren_config::mod_php`]): FastCGI's `PHP_VALUE` and
//! `PHP_ADMIN_VALUE` as php-fpm reads them, sent only to the host's own
//! PHP pool; and `engine Off`, where warren answers 403 rather than send
//! the script's source as Apache's default handler would.

use warren_config::mod_php::{ini_lines, settled, PhpSetting};
use warren_config::{FcgiAddr, FcgiBackend, LogLevel};

use crate::dir_config::{Effective, Layer};
use crate::request::Request;
use crate::{HeaderName, Site};

/// What the settings in force make of a request to a FastCGI backend.
pub enum PhpParams {
    /// These params to add (none where nothing applies).
    Send(Vec<(HeaderName, Vec<u8>)>),
    /// `php_flag engine off` (or its admin form) is in force: why, for a 403.
    EngineOff(String),
}

impl Site {
    /// The PHP settings of `eff` for a request to `backend`.
    pub(crate) fn php_params(&self, req: Request, backend: &FcgiBackend, eff: &Effective) -> PhpParams {
        let h = &self.hosts[req.host];
        let lines = || eff.layers.iter().flat_map(|l| l.php.iter());
        if lines().next().is_none() {
            return PhpParams::Send(Vec::new());
        }
        let own = h.config.php_pool.as_ref().filter(|p| matches!(&backend.addr, FcgiAddr::Pool(name) if *name == p.name));
        let Some(pool) = own else {
            // The configuration's lines were said at start; an .htaccess
            // file's are said here.
            let from_file = eff.layers.iter().filter(|l| matches!(l, Layer::File(..))).find_map(|l| l.php.first());
            if let Some(line) = from_file {
                let why = format!("{}: {} is not applied: this request goes to a FastCGI application that is not the host's own PHP pool, where it would stay for other sites' requests", line.origin, line.name);
                h.error_log.log(LogLevel::Warn, Some(req.conn.useragent), &why);
            }
            return PhpParams::Send(Vec::new());
        };
        let (values, admin) = settled(lines());
        let engine_off = |list: &[(&str, &str)]| list.iter().any(|(n, v)| n.eq_ignore_ascii_case("engine") && *v == "0");
        if engine_off(&admin) || engine_off(&values) {
            let at = lines().rfind(|s: &&PhpSetting| s.name.eq_ignore_ascii_case("engine")).map(|s| s.origin.to_string()).unwrap_or_default();
            return PhpParams::EngineOff(format!("{at}: PHP's engine is off here: warren runs no PHP here and sends no PHP source"));
        }
        if !pool.per_request {
            return PhpParams::Send(Vec::new());
        }
        let mut params = Vec::new();
        if !values.is_empty() {
            params.push((HeaderName::Borrowed("PHP_VALUE"), ini_lines(&values)));
        }
        if !admin.is_empty() {
            params.push((HeaderName::Borrowed("PHP_ADMIN_VALUE"), ini_lines(&admin)));
        }
        PhpParams::Send(params)
    }
}
