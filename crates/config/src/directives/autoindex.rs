//! mod_autoindex's directives that warren acts on (`IndexIgnore`,
//! `IndexIgnoreReset`; the look of listings is accepted and inert, see the
//! table), read into a section's [`DirConfig`](crate::DirConfig). The
//! request half is the handler's `listing` module.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

/// `IndexIgnore`: patterns add up, level after level, as in mod_autoindex.
pub(crate) fn index_ignore(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if d.args.is_empty() {
        return b.error(&d.origin, "IndexIgnore takes one or more wildcards (.??* *~ README*)");
    }
    for p in &d.args {
        if let Err(e) = glob::Pattern::new(p) {
            return b.error(&d.origin, format!("IndexIgnore: bad wildcard {p}: {e}"));
        }
    }
    dir.index_ignore.extend(d.args.iter().cloned());
}

pub(crate) fn index_ignore_reset(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(on) = b.on_off(d) {
        dir.index_ignore_reset = Some(on);
    }
}
