//! mod_auth_basic, mod_authn_core and mod_authn_file's directives, read
//! into the section's [`AuthSettings`](crate::auth::AuthSettings). The
//! request half is the handler's `auth` module.

use std::path::Path;

use crate::auth::{parse_groups, parse_users, Lines};
use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

/// A password or group file named in the server's configuration is read
/// once as it is loaded, so that a bad line is said with its file and line
/// at start (the server reads it again when it changes). A file not there
/// yet is said too. One named in an `.htaccess` file is not: that file's
/// reading is cached by its own version, so an error here would outlive
/// the password file's repair; requests under it get the 500 instead.
fn check_file(b: &mut Builder, d: &Directive, path: &Path, parse: fn(&str) -> Result<Lines, String>) {
    if b.in_htaccess {
        return;
    }
    match std::fs::read_to_string(path) {
        Ok(text) => {
            if let Err(e) = parse(&text) {
                b.error(&d.origin, format!("{} {}:{e}", d.name, path.display()));
            }
        }
        Err(e) => b.warn(&d.origin, format!("{} {}: {e} (every request needing it is answered 500 until it can be read)", d.name, path.display())),
    }
}

fn one_arg<'d>(b: &mut Builder, d: &'d Directive) -> Option<&'d str> {
    match d.args.as_slice() {
        [a] => Some(a),
        _ => {
            b.error(&d.origin, format!("{} takes one argument", d.name));
            None
        }
    }
}

pub(crate) fn auth_type(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match one_arg(b, d).map(str::to_ascii_lowercase).as_deref() {
        Some("basic") => dir.auth.basic = Some(true),
        Some("none") => dir.auth.basic = Some(false),
        Some(other) => b.error(&d.origin, format!("AuthType {other}: warren does Basic (and None); Digest and Form are not supported")),
        None => {}
    }
}

pub(crate) fn auth_name(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match one_arg(b, d) {
        // The realm goes into a quoted header parameter: no quote or control byte may end it early.
        Some(name) if name.bytes().any(|c| c == b'"' || c == b'\\' || c.is_ascii_control()) => {
            b.error(&d.origin, "AuthName may not hold a double quote, a backslash or a control character")
        }
        Some(name) => dir.auth.name = Some(name.to_owned()),
        None => {}
    }
}

pub(crate) fn auth_user_file(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(p) = one_arg(b, d) {
        let path = b.resolve(p);
        check_file(b, d, &path, parse_users);
        dir.auth.user_file = Some(path);
    }
}

pub(crate) fn auth_group_file(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(p) = one_arg(b, d) {
        let path = b.resolve(p);
        check_file(b, d, &path, parse_groups);
        dir.auth.group_file = Some(path);
    }
}

/// `AuthBasicProvider`: only `file` (the default) exists in warren.
pub(crate) fn auth_basic_provider(b: &mut Builder, d: &Directive, _dir: &mut DirConfig) {
    if d.args.is_empty() || d.args.iter().any(|p| p != "file") {
        b.error(&d.origin, format!("AuthBasicProvider {}: warren has the `file` provider only (AuthUserFile)", d.args.join(" ")));
    }
}
