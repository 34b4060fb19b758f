//! A script is never sent as text. Called where a static file's response
//! is made, so that every way to a file (its URL, a DirectoryIndex
//! candidate, a FallbackResource, an ErrorDocument, an alias or a rewrite
//! target, HTTP/2 alike) passes here; a FastCGI handler given the file has
//! taken it before. What the configuration names as a script (see
//! [`warren_config::scripts`]), a type that a module runs
//! (`application/x-httpd-php` from TypesConfig or `[T=]`), and a
//! server-wide handler an `.htaccess` file set are answered 500, with the
//! line that decided it in the error log.

use std::path::Path;

use warren_config::scripts::is_script_type;
use warren_config::Handler;

use crate::dir_config::Effective;
use crate::request::Request;
use crate::site::Site;
use crate::Response;

/// The 500 for a file that must not be sent as it is, if `fs` is one.
pub fn refuse_static(site: &Site, req: Request, eff: &Effective, fs: &Path) -> Option<Response> {
    if let Some(r) = refuse_handler(site, req, eff) {
        return Some(r);
    }
    let name = crate::path::file_name(fs).unwrap_or_default();
    // The name as text only where some line marks scripts.
    let mut marks = eff.layers.iter().flat_map(|l| l.scripts.iter()).peekable();
    if marks.peek().is_some() {
        let text = String::from_utf8_lossy(name);
        if let Some(mark) = marks.find(|m| m.covers(&text)) {
            let why = format!("{}: {} makes {} a script, and no FastCGI handler runs it here: not sent as text", mark.origin, mark.directive, fs.display());
            return Some(site.error(req, 500, &why));
        }
    }
    let (ctype, by) = match req.pass.forced_type {
        Some(t) => (Some(t), "a rewrite rule's [T=]"),
        None => (site.mime.media_type(name, eff), "its type"),
    };
    let ctype = ctype.filter(|t| is_script_type(t))?;
    let why = format!("{} is {ctype} by {by}, a type only a module runs, and no FastCGI handler runs it here: not sent as text", fs.display());
    Some(site.error(req, 500, &why))
}

/// The 500 for a server-wide handler an `.htaccess` file set, if it is the
/// one in force: wherever it applies, file or not.
pub fn refuse_handler(site: &Site, req: Request, eff: &Effective) -> Option<Response> {
    let Some(Some(Handler::Refused { name, origin })) = eff.handler() else { return None };
    let why = format!("{origin}: SetHandler {name}: a server-wide handler cannot be set in .htaccess (it would show every host's requests)");
    Some(site.error(req, 500, &why))
}
