//! mod_alias's directives (`Alias`, `AliasMatch`, `ScriptAlias`,
//! `Redirect`, `RedirectMatch` and their forms), read by
//! [`alias::parse`](crate::alias::parse) into a host's
//! [`UrlAlias`](crate::alias::UrlAlias)es or a section's redirect. The
//! request half is the handler's `alias` module.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;
use crate::settings::HostConfig;

/// Alias, AliasMatch.
pub(crate) fn url_alias(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    match crate::alias::parse(d, |p| b.resolve(p)) {
        Ok(a) => host.url_aliases.push(a),
        Err(m) => b.error(&d.origin, m),
    }
}

/// Redirect, RedirectMatch, RedirectPermanent, RedirectTemp: the main
/// server's and a virtual host's are tried as the URL is translated, a
/// section's or `.htaccess` file's once the request is mapped to it.
pub(crate) fn redirect(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match crate::alias::parse(d, |p| b.resolve(p)) {
        Ok(a) => dir.redirects.push(a),
        Err(m) => b.error(&d.origin, m),
    }
}
