//! Who a CGI program runs as, and suexec's checks before it runs, made by
//! the spawner (which has the privileges to switch user):
//!
//! - the program is opened once, from a descriptor of the tree it was found
//!   in (the ScriptAlias's directory, else the DocumentRoot, the Host's
//!   VirtualDocumentRoot directory or the user's UserDir), with no symbolic link
//!   followed on the way ([`crate::symlinks::open_beneath`]); what is
//!   checked is that descriptor and its directory's, and what runs is that
//!   descriptor (`execveat`), so that nothing swapped in the tree between
//!   the check and the exec is run;
//! - it is a regular file; neither it nor its directory is writable by
//!   group or others, and it is not setuid or setgid;
//! - under `/~user/` it runs as that user with their primary group, and
//!   the program and its directory must belong to both (suexec's userdir
//!   mode): a program of bob's hardlinked into alice's tree (possible where
//!   fs.protected_hardlinks is off) is refused, not run as bob;
//! - elsewhere it runs as the host's `SuexecUserGroup` (the program and its
//!   directory must then belong to that user, as suexec asks), else as its
//!   file's owner with the owner's primary group (the file's group must be
//!   that one or a system group; in a site's tree its directory must be
//!   the owner's too, for the same hardlink); a file of root or a system account (uid below
//!   [`UID_MIN`], or nobody) runs as the server's `User` only under an
//!   administrator's ScriptAlias, and is refused in a DocumentRoot or
//!   UserDir tree; never as root;
//! - its environment holds only suexec's safe variables ([`safe_env`]).
//!
//! A spawner that is not root cannot switch: every program runs as the
//! server's own user, the other checks still made.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode, SFlag};

use crate::symlinks::{open_beneath, open_root, Access, LinkRule, Refused};

/// The first uid of users' accounts (login.defs' UID_MIN), as UserDir's
/// pools use it: below it are the system's.
pub use warren_config::mass::UID_MIN;
/// suexec's AP_GID_MIN: groups below are the system's.
pub const GID_MIN: u32 = 100;
/// The overflow account: a system account whatever its number.
const NOBODY: u32 = 65534;
/// suexec's AP_SAFE_PATH: the PATH every program gets.
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A user and group to run as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
}

/// What the checks decided.
#[derive(Debug)]
pub struct Checked {
    pub identity: Identity,
    /// Whether to switch to `identity` (the spawner is root).
    pub switch: bool,
    /// The program, opened for reading: what is executed.
    pub program: OwnedFd,
    /// Its directory, opened `O_PATH`: the program's working directory.
    pub dir: OwnedFd,
}

/// The server's `User` and `Group` (their primary group when Group is not
/// given), when warren runs as root; None otherwise.
pub fn server_identity(user: Option<&str>, group: Option<&str>) -> Option<Identity> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let u = nix::unistd::User::from_name(user?).ok()??;
    let gid = match group.map(nix::unistd::Group::from_name) {
        Some(Ok(Some(g))) => g.gid.as_raw(),
        _ => u.gid.as_raw(),
    };
    Some(Identity { uid: u.uid.as_raw(), gid })
}

/// Where the program was found: what a file of a system account may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tree {
    /// A ScriptAlias directory, which only the administrator names.
    ScriptAlias,
    /// A DocumentRoot or VirtualDocumentRoot tree, which its site's owner writes.
    Site,
    /// The UserDir directory of the user named (`/~user/`).
    UserDir(String),
}

fn is_system_account(uid: u32) -> bool {
    uid < UID_MIN || uid == NOBODY
}

/// Opens and checks `program` before it runs; Err with the reason it may not.
pub fn check(program: &[u8], root: &[u8], tree: &Tree, user_group: Option<&(String, String)>, server: Option<&Identity>) -> Result<Checked, String> {
    let program = Path::new(OsStr::from_bytes(program));
    let root = Path::new(OsStr::from_bytes(root));
    let shown = program.display();
    let rel = program.strip_prefix(root).map_err(|_| format!("program {shown} is outside {}", root.display()))?;
    let (Some(name), dir_rel) = (rel.file_name(), rel.parent().unwrap_or(Path::new(""))) else {
        return Err(format!("program {shown} names no file"));
    };
    let root_fd = open_root(root).map_err(|e| format!("cannot open the program's tree {}: {e}", root.display()))?;
    let dir = match open_beneath(root_fd.as_fd(), root, dir_rel, LinkRule::Refuse, Access::Locate) {
        Ok(d) => OwnedFd::from(d),
        Err(Refused::Link(link)) => return Err(format!("{} is a symbolic link on the way to program {shown} (suexec runs no links)", link.display())),
        Err(Refused::Io(e)) => return Err(format!("cannot open the directory of program {shown}: {e}")),
    };
    // Readable, not O_PATH: perl reads its script from the descriptor
    // itself (/dev/fd/3). O_NONBLOCK so that a FIFO cannot stall the
    // spawner before it is refused as not a regular file.
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let file = match openat(dir.as_fd(), name, flags, Mode::empty()) {
        Ok(f) => f,
        Err(nix::errno::Errno::ELOOP) => return Err(format!("program {shown} is a symbolic link (suexec runs no links)")),
        Err(e) => return Err(format!("cannot open program {shown}: {e}")),
    };
    let meta = fstat(&file).map_err(|e| format!("cannot stat program {shown}: {e}"))?;
    let kind = SFlag::from_bits_truncate(meta.st_mode & SFlag::S_IFMT.bits());
    if kind == SFlag::S_IFLNK {
        return Err(format!("program {shown} is a symbolic link (suexec runs no links)"));
    }
    if kind != SFlag::S_IFREG {
        return Err(format!("program {shown} is not a regular file"));
    }
    let dir_meta = fstat(&dir).map_err(|e| format!("cannot stat the directory of {shown}: {e}"))?;
    let dir_shown = program.parent().unwrap_or(Path::new("/")).display();
    const GROUP_OR_OTHER_WRITE: u32 = 0o022;
    if dir_meta.st_mode & GROUP_OR_OTHER_WRITE != 0 {
        return Err(format!("directory {dir_shown} is writable by group or others"));
    }
    if meta.st_mode & GROUP_OR_OTHER_WRITE != 0 {
        return Err(format!("program {shown} is writable by group or others"));
    }
    if meta.st_mode & 0o6000 != 0 {
        return Err(format!("program {shown} is setuid or setgid"));
    }
    // Not root: no one to switch to.
    if !nix::unistd::geteuid().is_root() {
        let me = Identity { uid: nix::unistd::geteuid().as_raw(), gid: nix::unistd::getegid().as_raw() };
        return Ok(Checked { identity: me, switch: false, program: file, dir });
    }
    let (owner, group) = (meta.st_uid, meta.st_gid);
    // suexec's "target uid/gid mismatch": both the program and its
    // directory must be the account's, so that no one may put another
    // account's program in their tree (a hardlink) and run it as that account.
    let owned_by = |wanted: Identity| {
        let owners = [(owner, group), (dir_meta.st_uid, dir_meta.st_gid)];
        match owners.iter().any(|&(uid, gid)| uid != wanted.uid || gid != wanted.gid) {
            true => Err(format!("target uid/gid ({}/{}) mismatch with directory ({}/{}) or program ({}/{}) {shown}", wanted.uid, wanted.gid, dir_meta.st_uid, dir_meta.st_gid, owner, group)),
            false => Ok(wanted),
        }
    };
    let identity = match (tree, user_group) {
        (Tree::UserDir(user), _) => {
            let u = nix::unistd::User::from_name(user).ok().flatten().ok_or_else(|| format!("~{user}: no such account to run {shown} as"))?;
            let wanted = Identity { uid: u.uid.as_raw(), gid: u.gid.as_raw() };
            if is_system_account(wanted.uid) || wanted.gid < GID_MIN {
                return Err(format!("~{user}: cannot run {shown} as a system account or group ({}/{})", wanted.uid, wanted.gid));
            }
            owned_by(wanted)?
        }
        (_, Some((user, group))) => {
            let u = nix::unistd::User::from_name(user).ok().flatten().ok_or_else(|| format!("SuexecUserGroup: no user {user}"))?;
            let g = nix::unistd::Group::from_name(group).ok().flatten().ok_or_else(|| format!("SuexecUserGroup: no group {group}"))?;
            let wanted = owned_by(Identity { uid: u.uid.as_raw(), gid: g.gid.as_raw() })?;
            if wanted.uid < UID_MIN || wanted.gid < GID_MIN {
                return Err(format!("SuexecUserGroup {user} {group}: cannot run {shown} as a system account or group"));
            }
            wanted
        }
        (_, None) if !is_system_account(owner) => {
            let u = nix::unistd::User::from_uid(owner.into()).ok().flatten().ok_or_else(|| format!("program {shown}: its owner {owner} has no account"))?;
            let gid = u.gid.as_raw();
            if group != gid && group >= GID_MIN {
                return Err(format!("program {shown}: its group {group} is neither its owner's ({gid}) nor a system group"));
            }
            if gid < GID_MIN {
                return Err(format!("cannot run {shown} as gid {gid} (root or a system group)"));
            }
            if *tree == Tree::Site && dir_meta.st_uid != owner {
                return Err(format!("program {shown} (uid {owner}) is not in a directory of its owner's ({dir_shown}: uid {}): not run as {owner}", dir_meta.st_uid));
            }
            Identity { uid: owner, gid }
        }
        // Apache without suexec runs every program as its User: here only
        // what the administrator put under a ScriptAlias.
        (Tree::ScriptAlias, None) => server.copied().ok_or_else(|| format!("{shown} belongs to a system account and the server has no User to run it as"))?,
        (_, None) => return Err(format!("program {shown} belongs to root or a system account (uid {owner}) and is not under a ScriptAlias: not run")),
    };
    if identity.uid == 0 {
        return Err(format!("cannot run {shown} as root"));
    }
    Ok(Checked { identity, switch: true, program: file, dir })
}

/// suexec's safe_env_lst: what may reach a program of the environment
/// warren builds, SetEnv and RewriteRule's [E=] add to. The rest (LD_*,
/// BASH_ENV, PERL5OPT, PYTHON*...) would change what the program runs.
const SAFE_NAMES: &[&str] = &[
    "AUTH_TYPE", "CONTENT_LENGTH", "CONTENT_TYPE", "CONTEXT_DOCUMENT_ROOT", "CONTEXT_PREFIX", "DATE_GMT", "DATE_LOCAL", "DOCUMENT_ARGS", "DOCUMENT_NAME", "DOCUMENT_PATH_INFO", "DOCUMENT_ROOT", "DOCUMENT_URI", "GATEWAY_INTERFACE", "HTTPS", "LAST_MODIFIED", "PATH_INFO", "PATH_TRANSLATED", "QUERY_STRING",
    "QUERY_STRING_UNESCAPED", "REMOTE_ADDR", "REMOTE_HOST", "REMOTE_IDENT", "REMOTE_PORT", "REMOTE_USER", "REDIRECT_ERROR_NOTES", "REDIRECT_HANDLER", "REDIRECT_QUERY_STRING", "REDIRECT_REMOTE_USER", "REDIRECT_SCRIPT_FILENAME", "REDIRECT_STATUS", "REDIRECT_URL", "REQUEST_METHOD", "REQUEST_SCHEME", "REQUEST_URI", "SCRIPT_FILENAME",
    "SCRIPT_NAME", "SCRIPT_URI", "SCRIPT_URL", "SERVER_ADDR", "SERVER_ADMIN", "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "SERVER_SIGNATURE", "SERVER_SOFTWARE", "UNIQUE_ID", "USER_NAME", "TZ",
];

/// The `NAME=value` entries of `env` a program may get, as suexec's
/// clean_env keeps them (`HTTP_*` but HTTP_PROXY, `SSL_*`, the safe
/// names), and PATH set to [`SAFE_PATH`].
pub fn safe_env(env: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut kept: Vec<Vec<u8>> = env
        .into_iter()
        .filter(|e| {
            let Some(eq) = e.iter().position(|&b| b == b'=') else { return false };
            let name = &e[..eq];
            (name.starts_with(b"HTTP_") && name != b"HTTP_PROXY") || name.starts_with(b"SSL_") || SAFE_NAMES.iter().any(|s| s.as_bytes() == name)
        })
        .collect();
    kept.push(format!("PATH={SAFE_PATH}").into_bytes());
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writable_links_and_outside_files_are_refused() {
        let d = std::env::temp_dir().join(format!("warren-suexec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("cgi/sub")).unwrap();
        for p in ["cgi", "cgi/sub"] {
            std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let prog = d.join("cgi/a.cgi");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let b = |p: &Path| p.as_os_str().as_bytes().to_vec();
        let root = b(&d.join("cgi"));
        // Root's files run as the server's User under a ScriptAlias, when warren is root.
        let user = Identity { uid: 65534, gid: 65534 };
        let ok = check(&b(&prog), &root, &Tree::ScriptAlias, None, Some(&user)).unwrap();
        assert!(SFlag::from_bits_truncate(fstat(&ok.program).unwrap().st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG);
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o757)).unwrap();
        assert!(check(&b(&prog), &root, &Tree::ScriptAlias, None, Some(&user)).unwrap_err().contains("writable by group or others"));
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("/bin/sh", d.join("cgi/sh.cgi")).unwrap();
        assert!(check(&b(&d.join("cgi/sh.cgi")), &root, &Tree::ScriptAlias, None, Some(&user)).unwrap_err().contains("symbolic link"));
        // A directory on the way that is a link, even one that stays in the tree.
        std::os::unix::fs::symlink(d.join("cgi"), d.join("cgi/sub/back")).unwrap();
        let err = check(&b(&d.join("cgi/sub/back/a.cgi")), &root, &Tree::ScriptAlias, None, Some(&user)).unwrap_err();
        assert!(err.contains("sub/back is a symbolic link on the way"), "{err}");
        std::fs::write(d.join("out.cgi"), "x").unwrap();
        std::fs::set_permissions(d.join("out.cgi"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check(&b(&d.join("cgi/../out.cgi")), &root, &Tree::ScriptAlias, None, Some(&user)).is_err());
        assert!(check(&b(&d.join("out.cgi")), &root, &Tree::ScriptAlias, None, Some(&user)).unwrap_err().contains("outside"));
        std::fs::set_permissions(d.join("cgi"), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check(&b(&prog), &root, &Tree::ScriptAlias, None, Some(&user)).unwrap_err().contains("directory"));
        std::fs::set_permissions(d.join("cgi"), std::fs::Permissions::from_mode(0o755)).unwrap();
        if nix::unistd::geteuid().is_root() {
            // Root's own file in a site's tree: refused; the server's user root: refused.
            assert!(check(&b(&prog), &root, &Tree::Site, None, Some(&user)).unwrap_err().contains("not under a ScriptAlias"));
            let as_root = Identity { uid: 0, gid: 0 };
            assert!(check(&b(&prog), &root, &Tree::ScriptAlias, None, Some(&as_root)).unwrap_err().contains("as root"));
            // An owner with no account; a file of another user's group.
            std::os::unix::fs::chown(&prog, Some(4242), Some(4242)).unwrap();
            assert!(check(&b(&prog), &root, &Tree::Site, None, Some(&user)).unwrap_err().contains("has no account"));
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_suexecs_safe_variables_reach_programs() {
        let env = ["LD_PRELOAD=/tmp/x.so", "BASH_ENV=/tmp/x", "PERL5OPT=-d", "PYTHONPATH=/tmp", "IFS=x", "PATH=/tmp", "HTTP_PROXY=http://evil", "HTTP_X=1", "SSL_CIPHER=a", "QUERY_STRING=a=1", "TZ=UTC", "NOEQUALS"];
        let kept = safe_env(env.iter().map(|e| e.as_bytes().to_vec()).collect());
        let kept: Vec<String> = kept.into_iter().map(|e| String::from_utf8(e).unwrap()).collect();
        assert_eq!(kept, ["HTTP_X=1", "SSL_CIPHER=a", "QUERY_STRING=a=1", "TZ=UTC", &format!("PATH={SAFE_PATH}")]);
    }
}
