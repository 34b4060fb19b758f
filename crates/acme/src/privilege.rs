//! Who the ACME client runs as. It talks to the Internet (the CA, OCSP
//! responders) and parses what comes back, so it does not keep root: the
//! helper drops to an account of its own (MDHelperUser, by default
//! `warren-acme`), never the serving children's User, whose code (a
//! site's PHP) could otherwise read the private keys it writes and answer
//! challenges for every domain of the server. It owns the store; the root
//! parent only reads from it (a graceful restart takes the new files in).
//! A tiny root relay stays between the two, because an unprivileged
//! process may not signal the root parent: it turns "the store changed"
//! (a byte on a pipe) into the parent's SIGHUP, and the parent's SIGHUP
//! into the helper's.

use nix::sys::stat::{umask, Mode};
use nix::unistd::{setgroups, setresgid, setresuid, setsid, Gid, Uid};
use warren_config::md::DEFAULT_HELPER_USER;
use warren_config::{LogLevel, Settings};

/// The account the helper drops to (ids as numbers: the parent hands it
/// to the helper in its brief).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HelperAccount {
    uid: u32,
    gid: u32,
    /// The server's Group, kept as the one supplementary group: the helper
    /// gives it the md-status files (0640), which the children read.
    status_group: Option<u32>,
}

impl HelperAccount {
    pub fn uid(&self) -> Uid {
        Uid::from_raw(self.uid)
    }
    pub fn gid(&self) -> Gid {
        Gid::from_raw(self.gid)
    }
}

/// Why the helper keeps the parent's identity, for the log.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct KeptIdentity {
    /// Notice when nothing is wrong (warren is not root), else Warn.
    pub level: LogLevel,
    pub why: String,
}

/// The helper's account for `settings`, or why it keeps the parent's
/// identity: warren not started as root, `MDHelperUser root`, or no
/// such account when MDHelperUser is unset.
pub fn helper_account(settings: &Settings) -> Result<HelperAccount, KeptIdentity> {
    let warn = |why: String| KeptIdentity { level: LogLevel::Warn, why };
    if !nix::unistd::geteuid().is_root() {
        return Err(KeptIdentity { level: LogLevel::Notice, why: "warren does not run as root: the ACME helper runs as warren's user".into() });
    }
    let (name, explicit) = match &settings.md.helper_user {
        Some((name, _)) if name == "root" => return Err(KeptIdentity { level: LogLevel::Notice, why: "MDHelperUser root: the ACME helper keeps root".into() }),
        Some((name, _)) => (name.as_str(), true),
        None => (DEFAULT_HELPER_USER, false),
    };
    let account = match warren_config::accounts::lookup_user(name) {
        Ok(a) => a,
        Err(_) if !explicit => return Err(warn(format!("no account {DEFAULT_HELPER_USER} (make it with `adduser --system --group {DEFAULT_HELPER_USER}`, or set MDHelperUser): the ACME helper keeps root"))),
        Err(e) => return Err(warn(format!("MDHelperUser: {e}: the ACME helper keeps root"))),
    };
    let server = settings.user.as_deref().and_then(|u| warren_config::accounts::lookup_user(u).ok());
    if account.uid.is_root() || server.is_some_and(|s| s.uid == account.uid) {
        return Err(warn(format!("{name} is root or the server's User: the ACME helper keeps root")));
    }
    let status_group = settings.group.as_deref().and_then(|g| warren_config::accounts::lookup_group(g).ok());
    Ok(HelperAccount { uid: account.uid.as_raw(), gid: account.gid.as_raw(), status_group: status_group.map(Gid::as_raw) })
}

/// Makes this process the helper's: a session of its own (no terminal,
/// out of the server's process group), the account's ids (real, effective
/// and saved, so root cannot come back), no_new_privs (a set-uid program
/// the dns-01 hook runs gains nothing), umask 077 (what it writes is its
/// own unless it says otherwise). Called after fork, before any thread.
pub fn drop_to(account: &HelperAccount) -> Result<(), String> {
    let _ = setsid();
    umask(Mode::from_bits_truncate(0o077));
    let groups: Vec<Gid> = account.status_group.map(Gid::from_raw).into_iter().collect();
    let (uid, gid) = (account.uid(), account.gid());
    setgroups(&groups).map_err(|e| format!("setgroups: {e}"))?;
    setresgid(gid, gid, gid).map_err(|e| format!("setresgid {gid}: {e}"))?;
    setresuid(uid, uid, uid).map_err(|e| format!("setresuid {uid}: {e}"))?;
    // SAFETY: prctl with constant arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("PR_SET_NO_NEW_PRIVS: {}", std::io::Error::last_os_error()));
    }
    if setresuid(Uid::from_raw(0), Uid::from_raw(0), Uid::from_raw(0)).is_ok() {
        return Err("root came back after the drop".into());
    }
    Ok(())
}
