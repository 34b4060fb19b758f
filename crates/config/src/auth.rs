//! mod_auth_basic, mod_authn_core and mod_authn_file's directives: who a
//! request must prove to be, and where the passwords are. Each is per
//! directory (and in `.htaccess` under AuthConfig); the handler's `auth`
//! module checks credentials against them.

use std::path::PathBuf;

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

/// The authentication settings of one section; `None`: inherited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthSettings {
    /// `AuthType Basic` (true) or `AuthType None` (false).
    pub basic: Option<bool>,
    /// `AuthName`: the realm the client is told.
    pub name: Option<String>,
    /// `AuthUserFile`, resolved against ServerRoot.
    pub user_file: Option<PathBuf>,
    /// `AuthGroupFile`, resolved against ServerRoot.
    pub group_file: Option<PathBuf>,
}

impl AuthSettings {
    pub fn merge(&mut self, over: &AuthSettings) {
        if over.basic.is_some() {
            self.basic = over.basic;
        }
        if over.name.is_some() {
            self.name.clone_from(&over.name);
        }
        for (mine, theirs) in [(&mut self.user_file, &over.user_file), (&mut self.group_file, &over.group_file)] {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
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
        dir.auth.user_file = Some(b.resolve(p));
    }
}

pub(crate) fn auth_group_file(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(p) = one_arg(b, d) {
        dir.auth.group_file = Some(b.resolve(p));
    }
}

/// `AuthBasicProvider`: only `file` (the default) exists in warren.
pub(crate) fn auth_basic_provider(b: &mut Builder, d: &Directive, _dir: &mut DirConfig) {
    if d.args.is_empty() || d.args.iter().any(|p| p != "file") {
        b.error(&d.origin, format!("AuthBasicProvider {}: warren has the `file` provider only (AuthUserFile)", d.args.join(" ")));
    }
}
