//! Who warren's children run as. Only a parent started as root changes
//! user: the server's children become `User`/`Group`, and each `<Pool>`'s
//! children become the pool's `User`/`Group`, or the server's when the pool
//! sets no `User`. Server children or a pool whose children would stay root
//! are a configuration error unless warren is started with `-R` (Apache
//! refuses to run its children as root; php-fpm needs `-R` for a root
//! pool): code serving the network as root by an oversight would own the
//! machine. So is a pool running as the server's user beside pools that run
//! as others: the pools' sockets are the server user's, so that pool's PHP
//! could use every pool's socket and run code as its user.

use std::path::PathBuf;
use std::sync::Arc;

use nix::unistd::{Gid, Group, Uid, User};

use crate::parse::{ConfigError, Origin};
use crate::pool::PoolConfig;
use crate::settings::Settings;

/// An account to switch to: its ids, and its name for the supplementary
/// groups (initgroups).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub uid: Uid,
    pub gid: Gid,
    pub name: String,
}

/// Whether this process can (and so will) change user.
pub fn running_as_root() -> bool {
    Uid::effective().is_root()
}

/// `User`: a name or `#uid`, as Apache's. Its account, with its primary group.
pub fn lookup_user(spec: &str) -> Result<Account, String> {
    let found = match spec.strip_prefix('#') {
        Some(n) => User::from_uid(Uid::from_raw(n.parse::<u32>().map_err(|_| format!("User {spec}: not a user name or #uid"))?)),
        None => User::from_name(spec),
    };
    match found {
        Ok(Some(u)) => Ok(Account { uid: u.uid, gid: u.gid, name: u.name }),
        Ok(None) => Err(format!("User {spec}: no such user")),
        Err(e) => Err(format!("User {spec}: cannot look it up: {e}")),
    }
}

/// `Group`: a name or `#gid`.
pub fn lookup_group(spec: &str) -> Result<Gid, String> {
    match spec.strip_prefix('#') {
        Some(n) => n.parse::<u32>().map(Gid::from_raw).map_err(|_| format!("Group {spec}: not a group name or #gid")),
        None => match Group::from_name(spec) {
            Ok(Some(g)) => Ok(g.gid),
            Ok(None) => Err(format!("Group {spec}: no such group")),
            Err(e) => Err(format!("Group {spec}: cannot look it up: {e}")),
        },
    }
}

/// `User` with `Group` (else the user's own group).
fn account(user: &str, group: Option<&str>) -> Result<Account, String> {
    let mut a = lookup_user(user)?;
    if let Some(g) = group {
        a.gid = lookup_group(g)?;
    }
    Ok(a)
}

/// The account of the server's children: None when warren is not root (it
/// cannot change user, so `User` is ignored, as in Apache) or sets no `User`.
pub fn server_account(user: Option<&str>, group: Option<&str>) -> Result<Option<Account>, String> {
    match user {
        Some(u) if running_as_root() => account(u, group).map(Some),
        _ => Ok(None),
    }
}

/// The account of a pool's children: the pool's `User` (with its `Group`,
/// else that user's group); without one, the server's `User` and `Group`
/// (with the pool's `Group` if it sets one). None when warren is not root,
/// or when neither the pool nor the server sets `User`: the children then
/// keep warren's own user.
pub fn pool_account(pool: &PoolConfig, server_user: Option<&str>, server_group: Option<&str>) -> Result<Option<Account>, String> {
    if !running_as_root() {
        return Ok(None);
    }
    match (&pool.user, server_user) {
        (Some(u), _) => account(u, pool.group.as_deref()).map(Some),
        (None, Some(u)) => account(u, pool.group.as_deref().or(server_group)).map(Some).map_err(|e| format!("{e} (the server's User, which the pool inherits)")),
        (None, None) => Ok(None),
    }
}

const FIX: &str = "set User (and Group) to an unprivileged account in the <Pool> or at server level, \
                   or start warren with -R (--allow-to-run-as-root) to run the pool as root on purpose";

/// Everything wrong with whom warren's children would run as, each at the
/// file and line it comes from: [`check_server_account`],
/// [`check_pool_accounts`] and [`check_pools_apart`]. Nothing when warren is
/// not root. Checked at start, by `-t` and at each graceful restart.
pub fn check_accounts(settings: &Settings, allow_root: bool) -> Vec<ConfigError> {
    let mut errors = check_server_account(settings, allow_root);
    errors.extend(check_pool_accounts(settings, allow_root));
    errors.extend(check_pools_apart(settings));
    errors
}

/// Where an error about the server's accounts is reported: the directive,
/// else the configuration file, else `warren serve`.
fn server_origin(settings: &Settings, directive: Option<&Origin>) -> Origin {
    directive
        .or(settings.config_origin.as_ref())
        .cloned()
        .unwrap_or_else(|| Origin { file: Arc::new(PathBuf::from("(warren serve)")), line: 0 })
}

const SERVER_FIX: &str = "set User (and Group) to an unprivileged account (User www-data), \
                          or start warren with -R (--allow-to-run-as-root) to run them as root on purpose";

/// The server's children, started by a root warren, would stay root (no
/// `User`, or `User root`) or in group root while `allow_root` (`-R`) is
/// off, or their `User` or `Group` does not exist: at the `User` (or
/// `Group`) directive, or at the configuration file when there is none.
/// Apache refuses to serve as root ("Apache has not been designed to serve
/// pages while running as root"); so does warren, unless told to.
pub fn check_server_account(settings: &Settings, allow_root: bool) -> Vec<ConfigError> {
    if !running_as_root() {
        return Vec::new();
    }
    let (user, group) = (settings.user.as_deref(), settings.group.as_deref());
    let (origin, message) = match server_account(user, group) {
        Err(e) => {
            let at = if e.starts_with("Group") { settings.group_origin.as_ref() } else { settings.user_origin.as_ref() };
            (server_origin(settings, at), format!("{e} (the server's)"))
        }
        Ok(_) if allow_root => return Vec::new(),
        Ok(None) => (server_origin(settings, None), format!("the server's children would run as root: warren is started as root and no User is set; {SERVER_FIX}")),
        Ok(Some(a)) if a.uid.is_root() => (server_origin(settings, settings.user_origin.as_ref()), format!("User {}: the server's children would run as root; {SERVER_FIX}", a.name)),
        Ok(Some(a)) if a.gid.as_raw() == 0 => {
            let at = if group.is_some() { settings.group_origin.as_ref() } else { settings.user_origin.as_ref() };
            (server_origin(settings, at), format!("the server's children would run in group root (gid 0, as user {}); {SERVER_FIX}", a.name))
        }
        Ok(Some(_)) => return Vec::new(),
    };
    vec![ConfigError { origin, message }]
}

/// Every `<Pool>` whose children would run as root (uid or gid 0) while
/// `allow_root` (`-R`) is off, and every pool whose account does not exist;
/// each at the `<Pool>`'s file and line. Nothing when warren is not root.
pub fn check_pool_accounts(settings: &Settings, allow_root: bool) -> Vec<ConfigError> {
    if !running_as_root() {
        return Vec::new();
    }
    let mut errors = Vec::new();
    for p in &settings.pools {
        let message = match pool_account(p, settings.user.as_deref(), settings.group.as_deref()) {
            Err(e) => format!("<Pool {}>: {e}", p.name),
            Ok(_) if allow_root => continue,
            Ok(None) => format!("<Pool {}> would run its children as root: neither it nor the server sets User; {FIX}", p.name),
            Ok(Some(a)) if a.uid.is_root() => {
                let whose = if p.user.is_some() { "its" } else { "the server's" };
                format!("<Pool {}> would run its children as root ({whose} User {}); {FIX}", p.name, a.name)
            }
            Ok(Some(a)) if a.gid.as_raw() == 0 => format!("<Pool {}> would run its children in group root (gid 0, as user {}); {FIX}", p.name, a.name),
            Ok(Some(_)) => continue,
        };
        errors.push(ConfigError { origin: p.origin.clone(), message });
    }
    errors
}

/// Every `<Pool>` whose children run as the server children's user while
/// another pool's run as a different user, at the `<Pool>`'s file and line.
/// The pools' sockets belong to the server's user (its children connect to
/// them), so PHP running as that user could connect to any pool's socket
/// and have that pool run a script of its choosing, as that pool's user:
/// the separation the other pools' users were meant to give would be gone.
/// All pools as the server's user is a choice (one user for every site, as
/// mod_php); so is each pool with a user of its own. Nothing when warren is
/// not root or its children stay root (-R): root reaches everything anyway.
pub fn check_pools_apart(settings: &Settings) -> Vec<ConfigError> {
    if !running_as_root() {
        return Vec::new();
    }
    let Ok(Some(server)) = server_account(settings.user.as_deref(), settings.group.as_deref()) else { return Vec::new() };
    if server.uid.is_root() {
        return Vec::new();
    }
    // Each pool's uid; pools whose account is unknown are reported by
    // check_pool_accounts.
    let uids: Vec<(&crate::pool::PoolConfig, Uid, String)> = settings
        .pools
        .iter()
        .filter_map(|p| match pool_account(p, settings.user.as_deref(), settings.group.as_deref()) {
            Ok(Some(a)) => Some((p, a.uid, a.name)),
            Ok(None) => Some((p, Uid::from_raw(0), "root".to_string())),
            Err(_) => None,
        })
        .collect();
    let Some((other, _, other_user)) = uids.iter().find(|(_, u, _)| *u != server.uid) else { return Vec::new() };
    uids.iter()
        .filter(|(_, u, _)| *u == server.uid)
        .map(|(p, _, _)| {
            let how = if p.user.is_some() { "its User is" } else { "it sets no User, so it runs as" };
            ConfigError {
                origin: p.origin.clone(),
                message: format!(
                    "<Pool {}> would run as the server's user ({how} {}) while <Pool {}> runs as {other_user}: \
                     every pool's socket belongs to the server's user, so that pool's code could use every pool's socket \
                     and run code as the other pools' users; give <Pool {}> a User of its own",
                    p.name, server.name, other.name, p.name
                ),
            }
        })
        .collect()
}

/// An unprivileged account that exists on most systems, for a server
/// started as root with no configuration saying whom to run as
/// (`warren serve`): Debian's web user, else nobody.
pub fn default_unprivileged_account() -> Option<Account> {
    ["www-data", "nobody"].iter().find_map(|n| lookup_user(n).ok()).filter(|a| !a.uid.is_root())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_by_name_and_number() {
        let root = lookup_user("root").unwrap();
        assert!(root.uid.is_root());
        assert_eq!(lookup_user("#0").unwrap().name, "root");
        assert!(lookup_user("no-such-user-here").unwrap_err().contains("no such user"));
        assert!(lookup_user("#x").is_err());
        assert_eq!(lookup_group("#7").unwrap(), Gid::from_raw(7));
        assert!(lookup_group("no-such-group-here").unwrap_err().contains("no such group"));
    }
}
