//! mod_mime's and mod_negotiation's directives, read into a section's
//! [`MimeSettings`](crate::mime::MimeSettings). The request half is the
//! handler's `mime` and `negotiation` modules.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::mime::{ExtAttr, ForcePriority, MultiviewsMatch};
use crate::parse::Directive;
use crate::settings::Settings;

fn extension(e: &str) -> String {
    e.trim_start_matches('.').to_ascii_lowercase()
}

/// `AddEncoding`, `AddCharset`, `AddLanguage`: a value, then extensions.
pub(crate) fn add(b: &mut Builder, d: &Directive, dir: &mut DirConfig, attr: ExtAttr) {
    let [value, exts @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, format!("{} takes a value and one or more extensions", d.name));
    };
    if exts.is_empty() {
        return b.error(&d.origin, format!("{} takes a value and one or more extensions", d.name));
    }
    // Apache keeps these values in lower case (`AddCharset UTF-8` sends utf-8).
    let value = value.to_ascii_lowercase();
    for e in exts {
        dir.mime.by_ext.push((attr, extension(e), value.clone()));
    }
}

/// `RemoveEncoding`, `RemoveCharset`, `RemoveLanguage`, `RemoveHandler`:
/// what the parents said of these extensions is forgotten here.
pub(crate) fn remove(b: &mut Builder, d: &Directive, dir: &mut DirConfig, attr: ExtAttr) {
    if d.args.is_empty() {
        return b.error(&d.origin, format!("{} takes one or more extensions", d.name));
    }
    for e in &d.args {
        dir.mime.by_ext.push((attr, extension(e), String::new()));
    }
}

/// `RemoveType`: the extension gives no type here, neither AddType's nor
/// TypesConfig's (Apache's empty type).
pub(crate) fn remove_type(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if d.args.is_empty() {
        return b.error(&d.origin, "RemoveType takes one or more extensions");
    }
    for e in &d.args {
        dir.add_types.push((extension(e), String::new()));
    }
}

pub(crate) fn force_type(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [t] if t.eq_ignore_ascii_case("none") => dir.mime.force_type = Some(None),
        [t] if t.contains('/') => {
            dir.mime.force_type = Some(Some(t.clone()));
            b.mark_script(d, &mut dir.scripts);
        }
        _ => b.error(&d.origin, "ForceType takes one MIME type (type/subtype) or None"),
    }
}

pub(crate) fn default_language(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [lang] => dir.mime.default_language = Some(lang.clone()),
        _ => b.error(&d.origin, "DefaultLanguage takes one language tag"),
    }
}

pub(crate) fn language_priority(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if d.args.is_empty() {
        return b.error(&d.origin, "LanguagePriority takes one or more language tags");
    }
    dir.mime.language_priority = Some(d.args.iter().map(|l| l.to_ascii_lowercase()).collect());
}

pub(crate) fn force_language_priority(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let mut force = ForcePriority::default();
    for a in &d.args {
        match a.to_ascii_lowercase().as_str() {
            "none" if d.args.len() == 1 => {}
            "prefer" => force.prefer = true,
            "fallback" => force.fallback = true,
            _ => return b.error(&d.origin, format!("ForceLanguagePriority: '{a}': takes None, or Prefer and/or Fallback")),
        }
    }
    if d.args.is_empty() {
        return b.error(&d.origin, "ForceLanguagePriority takes None, or Prefer and/or Fallback");
    }
    dir.mime.force_language_priority = Some(force);
}

pub(crate) fn multiviews_match(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let mut m = MultiviewsMatch::default();
    for a in &d.args {
        match a.to_ascii_lowercase().as_str() {
            "any" if d.args.len() == 1 => m.any = true,
            "negotiatedonly" if d.args.len() == 1 => {}
            "handlers" => m.handlers = true,
            // warren's filters are not set by extension: nothing to count.
            "filters" => {}
            _ => return b.error(&d.origin, format!("MultiviewsMatch: '{a}': takes Any, NegotiatedOnly, or Handlers and/or Filters")),
        }
    }
    if d.args.is_empty() {
        return b.error(&d.origin, "MultiviewsMatch takes Any, NegotiatedOnly, or Handlers and/or Filters");
    }
    dir.mime.multiviews_match = Some(m);
}

/// `AddHandler`: warren maps no handler by extension. A FastCGI handler
/// named here is an error pointing to SetHandler; a handler of data files
/// (type maps) is said and not acted on; any other is one warren lacks, so
/// its files are scripts it cannot run (see [`crate::scripts`]).
pub(crate) fn add_handler(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let [handler, extensions @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, "AddHandler takes a handler name and one or more extensions");
    };
    if extensions.is_empty() {
        return b.error(&d.origin, "AddHandler takes a handler name and one or more extensions");
    }
    let lower = handler.to_ascii_lowercase();
    if lower.starts_with("proxy:") || lower.starts_with("pool:") || lower == "server-status" || lower == "metrics" || lower == "balancer-manager" || lower == "md-status" {
        let pattern = extensions.iter().map(|e| e.trim_start_matches('.')).collect::<Vec<_>>().join("|");
        return b.error(&d.origin, format!("AddHandler {handler}: warren sets handlers with SetHandler only: write <FilesMatch \"\\.({pattern})$\"> SetHandler {handler} </FilesMatch>"));
    }
    if lower == "type-map" {
        for e in extensions {
            dir.mime.by_ext.push((crate::mime::ExtAttr::TypeMap, e.trim_start_matches('.').to_ascii_lowercase(), lower.clone()));
        }
        return;
    }
    if let Some(why) = crate::scripts::data_handler(handler) {
        let list = extensions.iter().map(|e| format!(".{}", e.trim_start_matches('.'))).collect::<Vec<_>>().join(" ");
        return b.warn(&d.origin, format!("AddHandler {handler}: not acted on: {why}; files ending in {list} are served as they are"));
    }
    b.mark_script(d, &mut dir.scripts);
}

pub(crate) fn add_type(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let a = &d.args;
    if a.len() < 2 || !a[0].contains('/') {
        b.error(&d.origin, "AddType takes a MIME type and one or more extensions");
    } else {
        // Apache keeps the type in lower case, parameters and all.
        let mime_type = a[0].to_ascii_lowercase();
        for ext in &a[1..] {
            dir.add_types.push((ext.trim_start_matches('.').to_ascii_lowercase(), mime_type.clone()));
        }
        b.mark_script(d, &mut dir.scripts);
    }
}

pub(crate) fn types_config(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        let p = b.resolve(&v);
        if !p.is_file() {
            b.error(&d.origin, format!("TypesConfig: cannot read {}", p.display()));
        }
        s.types_config = Some(p);
    }
}
