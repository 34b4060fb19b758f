//! mod_auth_basic, mod_authn_core and mod_authn_file's directives: who a
//! request must prove to be, and where the passwords are. Each is per
//! directory (and in `.htaccess` under AuthConfig); the handler's `auth`
//! module checks credentials against them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

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

/// A password or group file's lines: name -> hash, or group -> members.
pub type Lines = HashMap<String, Vec<String>>;

/// htpasswd lines: `user:hash`; blank lines and `#` comments skipped.
pub fn parse_users(text: &str) -> Result<Lines, String> {
    let mut users = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(':') {
            Some((user, hash)) if !user.is_empty() && !hash.is_empty() => {
                users.insert(user.to_owned(), vec![hash.to_owned()]);
            }
            _ => return Err(format!("{}: not a `user:hash` line", n + 1)),
        }
    }
    Ok(users)
}

/// Group file lines: `group: user user...`.
pub fn parse_groups(text: &str) -> Result<Lines, String> {
    let mut groups = Lines::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(':') {
            Some((group, members)) if !group.trim().is_empty() => {
                groups.entry(group.trim().to_owned()).or_default().extend(members.split_whitespace().map(str::to_owned))
            }
            _ => return Err(format!("{}: not a `group: user...` line", n + 1)),
        }
    }
    Ok(groups)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{load_text, Dir};

    #[test]
    fn bad_lines_are_errors() {
        assert!(parse_users("a:$apr1$x$y\n\n# c\nb:{SHA}z\n").is_ok());
        assert_eq!(parse_users("a:x\nnocolon\n").unwrap_err(), "2: not a `user:hash` line");
        assert_eq!(parse_groups("admins: a b\nstaff:c\n").unwrap()["admins"], ["a", "b"]);
    }

    #[test]
    fn a_bad_password_file_is_an_error_at_start() {
        let files = Dir(std::env::temp_dir().join(format!("warren-cfg-htpasswd-{}", std::process::id())));
        std::fs::create_dir_all(&files.0).unwrap();
        std::fs::write(files.0.join("users"), "a:{SHA}x\nbroken\n").unwrap();
        let f = files.0.display();
        let text = format!("Listen 80\n<Directory /srv>\nAuthType Basic\nAuthUserFile {f}/users\nAuthGroupFile {f}/missing\nRequire valid-user\n</Directory>\n");
        let (l, _d) = load_text("authfile", &text, &[]);
        let errors: Vec<String> = l.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains(":5: AuthUserFile ") && errors[0].ends_with(":2: not a `user:hash` line"), "{errors:?}");
        assert!(l.warnings.iter().any(|w| w.to_string().contains(":6: AuthGroupFile ")), "{:?}", l.warnings);
    }
}
