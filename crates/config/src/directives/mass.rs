//! mod_vhost_alias's (`VirtualDocumentRoot`, `VirtualScriptAlias` and
//! their IP forms) and mod_userdir's (`UserDir`) directives, read into a
//! host's [`VhostAlias`](crate::mass::VhostAlias) and
//! [`UserDir`](crate::mass::UserDir). The request half is the handler's
//! `mass` module.

use crate::builder::Builder;
use crate::mass::{check_pattern, HostPattern, UserDir, UserPlace};
use crate::parse::Directive;
use crate::settings::HostConfig;

/// `VirtualDocumentRoot`, `VirtualDocumentRootIP`, `VirtualScriptAlias`,
/// `VirtualScriptAliasIP`: a pattern starting with `/`, or `none`.
pub(crate) fn vhost_alias(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let [pattern] = d.args.as_slice() else {
        return b.error(&d.origin, format!("{} takes one pattern (starting with /) or none", d.name));
    };
    let name = d.name.to_ascii_lowercase();
    let by_address = name.ends_with("ip");
    let slot = if name.starts_with("virtualdocumentroot") { &mut host.vhost_alias.document_root } else { &mut host.vhost_alias.script_alias };
    if pattern.eq_ignore_ascii_case("none") {
        *slot = None;
        return;
    }
    if !pattern.starts_with('/') {
        return b.error(&d.origin, format!("{}: format string must start with '/' or be 'none'", d.name));
    }
    match check_pattern(pattern) {
        Ok(()) => *slot = Some(HostPattern { pattern: pattern.clone(), by_address }),
        Err(m) => b.error(&d.origin, format!("{}: {m}", d.name)),
    }
}

/// `UserDir dir...`, `UserDir disabled [user...]`, `UserDir enabled user...`.
pub(crate) fn user_dir(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let Some(first) = d.args.first() else {
        return b.error(&d.origin, "UserDir takes directories, or disabled/enabled and user names");
    };
    let u = host.user_dir.get_or_insert_with(UserDir::default);
    u.origin.get_or_insert_with(|| d.origin.clone());
    let users = d.args[1..].to_vec();
    if users.iter().any(|n| n.is_empty() || n.contains('/') || n.starts_with('.')) {
        return b.error(&d.origin, "UserDir: a user name cannot contain / nor start with a dot");
    }
    match first.to_ascii_lowercase().as_str() {
        "disabled" if users.is_empty() => u.all_disabled = true,
        "disabled" => u.disabled.extend(users),
        "enabled" if users.is_empty() => b.error(&d.origin, "UserDir enabled takes the users to enable"),
        "enabled" => u.enabled.extend(users),
        _ => u.places = d.args.iter().map(|w| UserPlace::of(w)).collect(),
    }
}
