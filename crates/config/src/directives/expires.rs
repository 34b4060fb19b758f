//! mod_expires' directives (`ExpiresActive`, `ExpiresByType`,
//! `ExpiresDefault`), read into a section's
//! [`ExpiresRule`](crate::expires::ExpiresRule)s. The request half is the
//! handler's `filters::expires`.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

pub(crate) fn expires_active(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(on) = b.on_off(d) {
        dir.expires_active = Some(on);
    }
}

pub(crate) fn expires_by_type(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [t, when] if t.contains('/') => match crate::expires::ExpiresRule::parse(when) {
            Ok(rule) => dir.expires_by_type.push((t.to_ascii_lowercase(), rule)),
            Err(e) => b.error(&d.origin, format!("ExpiresByType {t}: {e}")),
        },
        _ => b.error(&d.origin, "ExpiresByType takes a MIME type (type/subtype or type/*) and a time (\"access plus 1 month\", A3600, M3600)"),
    }
}

pub(crate) fn expires_default(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [when] => match crate::expires::ExpiresRule::parse(when) {
            Ok(rule) => dir.expires_default = Some(rule),
            Err(e) => b.error(&d.origin, format!("ExpiresDefault: {e}")),
        },
        _ => b.error(&d.origin, "ExpiresDefault takes one time, quoted if it has spaces (\"access plus 1 month\", A3600, M3600)"),
    }
}
