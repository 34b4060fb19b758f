//! mod_dir's directives (`DirectoryIndex`, `DirectorySlash`,
//! `FallbackResource`), read into a section's
//! [`DirConfig`](crate::DirConfig). The request half is the handler's
//! `pipeline` (the trailing slash, the fallback) and `static_files` (index
//! files).

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

pub(crate) fn directory_index(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let a = &d.args;
    if a.is_empty() {
        b.error(&d.origin, "DirectoryIndex needs at least one file name (or `disabled`)");
    } else if a.len() == 1 && a[0].eq_ignore_ascii_case("disabled") {
        dir.directory_index = Some(Vec::new());
    } else {
        dir.directory_index = Some(a.clone());
    }
}

pub(crate) fn fallback_resource(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("disabled") => dir.fallback_resource = Some(None),
        [v] if v.starts_with('/') && !v.contains(['?', '#']) => dir.fallback_resource = Some(Some(v.clone())),
        _ => b.error(&d.origin, "FallbackResource takes a local URL path (/index.php) or disabled"),
    }
}

pub(crate) fn directory_slash(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("on") => dir.directory_slash = Some(true),
        [v] if v.eq_ignore_ascii_case("off") || v.eq_ignore_ascii_case("notfound") => dir.directory_slash = Some(false),
        _ => b.error(&d.origin, "DirectorySlash takes On, Off or NotFound"),
    }
}
