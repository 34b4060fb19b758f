//! Mass and per-user hosting: mod_vhost_alias's `VirtualDocumentRoot`,
//! `VirtualScriptAlias` and their IP forms (the root a host's files are
//! under, interpolated from the name the client asked for or the address
//! it reached), and mod_userdir's `UserDir` (`/~user/` under each user's
//! home, or a redirect).
//!
//! Nothing here knows a request: the handler gives [`interpolate`] a name
//! it has validated (see `warren_handler::mass`), and [`UserDir::maps`]
//! a user name; the accounts are looked up as requests come, so a new
//! host's or user's directory serves without a reload.
//!
//! The directives are in `directives/mass.rs`;
//! which hosts' users get pools while warren runs is read from the whole
//! configuration by [`RuntimeUsers::of`] ([`user_pools`](crate::user_pools)).

use crate::parse::Origin;

/// One pattern of mod_vhost_alias, and what it is interpolated from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPattern {
    pub pattern: String,
    /// The IP form: the local address the client reached, not its Host.
    pub by_address: bool,
}

/// A host's mod_vhost_alias lines (a virtual host starts from the main
/// server's, as Apache merges its server config).
#[derive(Clone, Debug, Default)]
pub struct VhostAlias {
    pub document_root: Option<HostPattern>,
    pub script_alias: Option<HostPattern>,
}

/// Apache's check of a pattern (mod_vhost_alias's `vhost_alias_set`):
/// `%%`, `%p`, and `%[-]N[+][.[-]M[+]]` with one digit each.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    let b = pattern.as_bytes();
    let mut i = 0;
    let digit = |i: &mut usize| -> Result<(), String> {
        if b.get(*i) == Some(&b'-') {
            *i += 1;
        }
        match b.get(*i) {
            Some(c) if c.is_ascii_digit() => *i += 1,
            _ => return Err(format!("syntax error in format string '{pattern}' at byte {}: % takes %%, %p or %[-]N[+][.[-]M[+]]", *i)),
        }
        if b.get(*i) == Some(&b'+') {
            *i += 1;
        }
        Ok(())
    };
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c != b'%' {
            continue;
        }
        if matches!(b.get(i), Some(b'p' | b'%')) {
            i += 1;
            continue;
        }
        digit(&mut i)?;
        if b.get(i) == Some(&b'.') {
            i += 1;
            digit(&mut i)?;
        }
    }
    Ok(())
}

/// `pattern` filled in from `name` (a host name or an address, already
/// validated and lower-cased) and `port`, as mod_vhost_alias's
/// `vhost_alias_interpolate` does: parts counted from 1 at the left (`%N`),
/// from the right (`%-N`), `+` for that part and all after (before), and
/// `.M` for a letter of it; a part or letter past the end is `_`. Returns
/// the root (no trailing `/`), to which the request's path is added.
pub fn interpolate(pattern: &str, name: &str, port: u16) -> String {
    // Apache keeps at most 19 parts; the last holds the rest of the name.
    const MAX_DOTS: usize = 19;
    let name = name.as_bytes();
    // Boundaries: the dot before each part (-1 for the first), and the end.
    let mut dots: Vec<isize> = vec![-1];
    for (i, &c) in name.iter().enumerate() {
        if c == b'.' && dots.len() < MAX_DOTS {
            dots.push(i as isize);
        }
    }
    let ndots = dots.len();
    dots.push(name.len() as isize);
    let p = pattern.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(pattern.len() + name.len());
    let mut i = 0;
    while i < p.len() {
        if p[i] != b'%' {
            out.push(p[i]);
            i += 1;
            continue;
        }
        i += 1;
        match p.get(i) {
            Some(b'%') => {
                out.push(b'%');
                i += 1;
                continue;
            }
            Some(b'p') => {
                out.extend_from_slice(port.to_string().as_bytes());
                i += 1;
                continue;
            }
            _ => {}
        }
        let (n, n_dash, n_plus) = spec_at(p, &mut i);
        let (m, m_dash, m_plus) = if p.get(i) == Some(&b'.') {
            i += 1;
            spec_at(p, &mut i)
        } else {
            (0, false, false)
        };
        let underscore: &[u8] = b"_";
        let (mut start, mut end) = ((dots[0] + 1) as usize, dots[ndots] as usize);
        let mut part: Option<&[u8]> = None;
        if n != 0 {
            if n > ndots {
                part = Some(underscore);
            } else if !n_dash {
                start = (dots[n - 1] + 1) as usize;
                if !n_plus {
                    end = dots[n] as usize;
                }
            } else {
                if !n_plus {
                    start = (dots[ndots - n] + 1) as usize;
                }
                end = dots[ndots - n + 1] as usize;
            }
        }
        let part = part.unwrap_or(&name[start..end.max(start)]);
        let part: &[u8] = if m == 0 {
            part
        } else if m > part.len() {
            underscore
        } else if !m_dash {
            if m_plus { &part[m - 1..] } else { &part[m - 1..m] }
        } else if m_plus {
            &part[..part.len() - m + 1]
        } else {
            &part[part.len() - m..part.len() - m + 1]
        };
        out.extend(part.iter().map(u8::to_ascii_lowercase));
    }
    let mut root = String::from_utf8_lossy(&out).into_owned();
    while root.len() > 1 && root.ends_with('/') {
        root.pop();
    }
    root
}

/// One `[-]N[+]` of a pattern at `*i` (checked by [`check_pattern`]):
/// the number, its dash, its plus.
fn spec_at(p: &[u8], i: &mut usize) -> (usize, bool, bool) {
    let dash = p.get(*i) == Some(&b'-');
    *i += dash as usize;
    let n = p.get(*i).map_or(0, |c| c.wrapping_sub(b'0') as usize).min(9);
    *i += 1;
    let plus = p.get(*i) == Some(&b'+');
    *i += plus as usize;
    (n, dash, plus)
}

/// Where a user's directory is, by `UserDir`'s forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserPlace {
    /// `public_html`: below the user's home directory.
    InHome(String),
    /// `/home/*/www` (the `*` is the user) or `/srv/web` (`/srv/web/USER`).
    Path(String),
    /// `http://example.org/users/` (or with `*`): a redirect there.
    Redirect(String),
}

impl UserPlace {
    pub(crate) fn of(word: &str) -> UserPlace {
        if word.contains("://") {
            UserPlace::Redirect(word.to_string())
        } else if word.starts_with('/') {
            UserPlace::Path(word.to_string())
        } else {
            UserPlace::InHome(word.to_string())
        }
    }
}

/// A host's `UserDir` lines, merged as mod_userdir merges them: the
/// places, and who is enabled or disabled.
#[derive(Clone, Debug, Default)]
pub struct UserDir {
    /// Tried in order; the first that exists serves (Apache's
    /// `UserDir public_html /srv/web`).
    pub places: Vec<UserPlace>,
    /// `UserDir disabled` with no names: only `enabled` users.
    pub all_disabled: bool,
    pub enabled: Vec<String>,
    pub disabled: Vec<String>,
    pub origin: Option<Origin>,
    /// The pools its users' scripts run in, made at start (see [`pools_for`]).
    pub pools: Vec<UserPool>,
    /// Users without a pool of start get one when their first script is
    /// asked for (see [`RuntimeUsers`]); false where the users' scripts are
    /// refused (a pool runs as the server's user).
    pub runtime_pools: bool,
}

/// One user's pool, and the directories whose scripts go to it.
#[derive(Clone, Debug)]
pub struct UserPool {
    pub user: String,
    pub pool: String,
    pub dirs: Vec<std::path::PathBuf>,
}

impl UserDir {
    /// Whether `user`'s directory may be served. root never is, whatever
    /// the lines say (Apache's default since 2.4, Debian's `UserDir
    /// disabled root`), as no pool may run as root.
    pub fn serves(&self, user: &str) -> bool {
        if self.places.is_empty() || user == "root" || self.disabled.iter().any(|u| u == user) {
            return false;
        }
        !self.all_disabled || self.enabled.iter().any(|u| u == user)
    }

    /// The places `user`'s directory may be, given the user's home.
    pub fn maps(&self, user: &str, home: &str) -> Vec<UserPlace> {
        self.places
            .iter()
            .map(|p| match p {
                UserPlace::InHome(dir) => UserPlace::Path(format!("{}/{dir}", home.trim_end_matches('/'))),
                UserPlace::Path(dir) if dir.contains('*') => UserPlace::Path(dir.replacen('*', user, 1)),
                UserPlace::Path(dir) => UserPlace::Path(format!("{}/{user}", dir.trim_end_matches('/'))),
                UserPlace::Redirect(url) if url.contains('*') => UserPlace::Redirect(url.replacen('*', user, 1)),
                UserPlace::Redirect(url) => UserPlace::Redirect(format!("{url}{user}")),
            })
            .collect()
    }
}

/// The first uid of users' accounts (login.defs' UID_MIN): below it are
/// the system's, which get no pool unless `UserDir enabled` names them.
pub const UID_MIN: u32 = 1000;
/// Each user's pool: started by its first request, stopped when idle.
const USER_CHILDREN: u32 = 4;
/// The pools warren's shared table has room for (warren_fpm's MAX_POOLS).
pub const TABLE_POOLS: usize = 256;
/// Of those, the room kept for users' pools made while warren runs
/// (warren_fpm's RUNTIME_POOLS): accounts made after start.
pub const RUNTIME_POOLS: usize = 32;
/// The longest user name a pool can be asked for (Linux's useradd allows 32).
pub const USER_NAME_MAX: usize = 32;
const USER_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// The accounts of /etc/passwd: name, uid, gid, home.
fn accounts() -> Vec<(String, u32, u32, String)> {
    let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((f.first()?.to_string(), f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?, f.get(5)?.to_string()))
        })
        .collect()
}

/// A pool per user `ud` serves (never root): php-cgi as the user and
/// their group, ondemand, so that it costs nothing until the user's first
/// script and its children stop when idle. The accounts are those of
/// start: an account made later serves its files at once, and gets its
/// pool when its first script asks (see [`RuntimeUsers`]), never running as
/// another user. Returns the pools to add and notices.
pub fn pools_for(ud: &mut UserDir, origin: &Origin, existing: &[crate::pool::PoolConfig], room: usize) -> (Vec<crate::pool::PoolConfig>, Vec<String>) {
    let mut made = Vec::new();
    let mut said = Vec::new();
    for (user, uid, gid, home) in accounts() {
        let named = ud.enabled.contains(&user);
        if uid == 0 || !ud.serves(&user) || (uid < UID_MIN && !named) || uid == 65534 && !named {
            continue;
        }
        let dirs: Vec<std::path::PathBuf> = ud.maps(&user, &home).into_iter().filter_map(|p| match p {
            UserPlace::Path(d) => Some(d.into()),
            _ => None,
        }).collect();
        if dirs.is_empty() {
            continue;
        }
        let pool = user_pool_name(&user);
        if !existing.iter().chain(&made).any(|p: &crate::pool::PoolConfig| p.name == pool) {
            if made.len() >= room {
                said.push(format!("UserDir: no room for more pools (warren's table holds {}): {user}'s scripts are refused", TABLE_POOLS));
                continue;
            }
            made.push(user_pool_config(&user, gid, origin));
        }
        ud.pools.push(UserPool { user, pool, dirs });
    }
    if !ud.pools.is_empty() {
        let users: Vec<&str> = ud.pools.iter().map(|p| p.user.as_str()).collect();
        said.push(format!("UserDir: the scripts in the directories of {} user(s) ({}) run in a pool as each user (userdir-USER: php-cgi, pm ondemand, pm.max_children {USER_CHILDREN}, stopped after {}s idle)", users.len(), users.join(", "), USER_IDLE.as_secs()));
    }
    (made, said)
}

/// The pool of a user's scripts: `userdir-USER`, each byte of the name
/// that is not a letter, digit, `.` or `-` written `_XX` (hex), `_`
/// included: one name per account, so that `carol_` and `carol$` never
/// share a pool.
pub fn user_pool_name(user: &str) -> String {
    let mut name = String::from("userdir-");
    for b in user.bytes() {
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
            name.push(char::from(b));
        } else {
            name.push_str(&format!("_{b:02x}"));
        }
    }
    name
}

/// A user's pool: php-cgi as the user and their primary group, ondemand.
fn user_pool_config(user: &str, gid: u32, origin: &Origin) -> crate::pool::PoolConfig {
    let mut p = crate::pool::PoolConfig::new(&user_pool_name(user), vec!["php-cgi".to_string()], origin.clone());
    p.user = Some(user.to_string());
    p.group = Some(nix::unistd::Group::from_gid(gid.into()).ok().flatten().map_or_else(|| gid.to_string(), |g| g.name));
    p.pm = crate::pool::PmStyle::Ondemand;
    p.start_servers = 0;
    p.max_children = USER_CHILDREN;
    p.process_idle_timeout = USER_IDLE;
    p
}

/// What the parent needs to make a user's pool while it runs, for an
/// account made after start: the hosts' `UserDir` lines whose users' scripts
/// run as them. A request can only ask; the checks are made here again,
/// in the parent, as at start.
#[derive(Clone, Debug, Default)]
pub struct RuntimeUsers {
    pub(crate) hosts: Vec<(UserDir, Origin)>,
    /// The server children's uid: no user's pool may run as it (its
    /// code could then use every pool's socket, see
    /// [`crate::accounts::check_pools_apart`]).
    pub(crate) server_uid: Option<u32>,
}

impl RuntimeUsers {
    /// The pool for `user`'s scripts, if the account may have one: a name
    /// a host's UserDir serves, an account of the system (never root;
    /// from uid 1000, or named by `UserDir enabled`), and a directory of
    /// the user's that exists and is theirs. Else why not.
    pub fn pool_for(&self, user: &str) -> Result<crate::pool::PoolConfig, String> {
        if user.is_empty() || user.len() > USER_NAME_MAX || user.starts_with('.') || user.contains(['/', '\\', '\0', ':']) {
            return Err("not a user name".into());
        }
        let account = nix::unistd::User::from_name(user).ok().flatten().ok_or("no such account")?;
        let (uid, gid) = (account.uid.as_raw(), account.gid.as_raw());
        let home = account.dir.to_string_lossy().into_owned();
        let mut why = "no UserDir serves it";
        for (ud, origin) in &self.hosts {
            let named = ud.enabled.iter().any(|u| u == user);
            if !ud.serves(user) {
                continue;
            }
            if self.server_uid == Some(uid) {
                why = "the server's own user";
                continue;
            }
            if uid == 0 || (uid < UID_MIN || uid == 65534) && !named {
                why = "a system account (below uid 1000, and not named by UserDir enabled)";
                continue;
            }
            let owned = ud.maps(user, &home).into_iter().any(|p| match p {
                UserPlace::Path(d) => std::fs::metadata(&d).is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == uid),
                _ => false,
            });
            if !owned {
                why = "no directory of the user's (one that exists and is theirs)";
                continue;
            }
            return Ok(user_pool_config(user, gid, origin));
        }
        Err(why.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pools at run time are refused to made-up and malformed names, root,
    /// system accounts, the server's own user, and users without a
    /// directory of their own.
    #[test]
    fn runtime_pools_only_for_users_with_their_own_directory() {
        let origin = Origin { file: std::sync::Arc::new("test.conf".into()), line: 1 };
        let ud = UserDir { places: vec![UserPlace::of("/tmp")], runtime_pools: true, ..UserDir::default() };
        let users = RuntimeUsers { hosts: vec![(ud, origin)], server_uid: None };
        for bad in ["", "../etc", "a/b", ".hidden", "a\0b", "warren-no-such-account-xyz", &"a".repeat(33)] {
            assert!(users.pool_for(bad).is_err(), "{bad:?}");
        }
        assert!(users.pool_for("root").is_err());
        // daemon's /tmp/daemon is not there, nor is daemon a user's account.
        assert_eq!(users.pool_for("daemon").err().as_deref(), Some("a system account (below uid 1000, and not named by UserDir enabled)"));
        let nobody = nix::unistd::User::from_name("nobody").unwrap().expect("the nobody account");
        let serving_nobody = RuntimeUsers { server_uid: Some(nobody.uid.as_raw()), ..users.clone() };
        assert_eq!(serving_nobody.pool_for("nobody").err().as_deref(), Some("the server's own user"));
    }

    #[test]
    fn user_pool_names_are_one_per_account() {
        assert_eq!(user_pool_name("alice"), "userdir-alice");
        assert_eq!(user_pool_name("carol_"), "userdir-carol_5f");
        assert_eq!(user_pool_name("carol$"), "userdir-carol_24");
        assert_ne!(user_pool_name("a_5f"), user_pool_name("a__5f"));
    }

    /// The examples of Apache's mod_vhost_alias documentation.
    #[test]
    fn interpolates_as_apache() {
        let name = "www.domain.example.com";
        assert_eq!(interpolate("/usr/local/apache/vhosts/%0", name, 80), "/usr/local/apache/vhosts/www.domain.example.com");
        assert_eq!(interpolate("/v/%1", name, 80), "/v/www");
        assert_eq!(interpolate("/v/%2", name, 80), "/v/domain");
        assert_eq!(interpolate("/v/%3", name, 80), "/v/example");
        assert_eq!(interpolate("/v/%-1", name, 80), "/v/com");
        assert_eq!(interpolate("/v/%-2", name, 80), "/v/example");
        assert_eq!(interpolate("/v/%-2+", name, 80), "/v/www.domain.example");
        assert_eq!(interpolate("/v/%2+", name, 80), "/v/domain.example.com");
        assert_eq!(interpolate("/v/%2.1/%2.2/%2.3+", name, 80), "/v/d/o/main");
        assert_eq!(interpolate("/v/%2.-1/%2.-2+", name, 80), "/v/n/domai");
        assert_eq!(interpolate("/v/%5/%1.9", name, 80), "/v/_/_");
        assert_eq!(interpolate("/v/%%/%p/", name, 8080), "/v/%/8080");
        assert_eq!(interpolate("/v/%3+/%2.1/%2.2/%2.3/%2.4+", "www.example.com", 80), "/v/com/e/x/a/mple");
        assert_eq!(interpolate("/ip/%1/%4", "10.0.0.1", 80), "/ip/10/1");
        // Upper case in the name is lower-cased, the pattern's is kept.
        assert_eq!(interpolate("/Sites/%0/", "A.TEST", 80), "/Sites/a.test");
    }

    #[test]
    fn checks_patterns_as_apache() {
        for good in ["/a/%0", "/a/%-2+/%1.1", "/%%/%p", "/x/%2.-1+"] {
            assert!(check_pattern(good).is_ok(), "{good}");
        }
        for bad in ["/a/%x", "/a/%", "/a/%1.", "/a/%-"] {
            assert!(check_pattern(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn userdir_forms_and_who() {
        let mut u = UserDir { places: vec![UserPlace::of("public_html"), UserPlace::of("/home/*/www"), UserPlace::of("/srv/web"), UserPlace::of("http://example.org/users/")], ..UserDir::default() };
        assert_eq!(
            u.maps("alice", "/home/alice"),
            [
                UserPlace::Path("/home/alice/public_html".into()),
                UserPlace::Path("/home/alice/www".into()),
                UserPlace::Path("/srv/web/alice".into()),
                UserPlace::Redirect("http://example.org/users/alice".into()),
            ]
        );
        assert!(u.serves("alice") && !u.serves("root"));
        u.all_disabled = true;
        u.enabled.push("bob".into());
        assert!(!u.serves("alice") && u.serves("bob"));
        u.disabled.push("bob".into());
        assert!(!u.serves("bob"));
    }
}
