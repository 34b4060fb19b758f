//! mod_auth_basic, mod_authn_core and mod_authn_file's settings: who a
//! request must prove to be, and where the passwords are. Each is per
//! directory (and in `.htaccess` under AuthConfig); the directives reading
//! them are in `directives/auth.rs`, and the
//! handler's `auth` module checks credentials against them.

use std::collections::HashMap;
use std::path::PathBuf;

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
