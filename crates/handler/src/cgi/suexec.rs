//! Who a CGI program runs as, and suexec's checks before it runs, made by
//! the spawner (which has the privileges to switch user):
//!
//! - the program is a regular file, not a link, inside the tree it was
//!   found in (DocumentRoot or the ScriptAlias's directory) once every
//!   link on the way is resolved; neither it nor its directory is writable
//!   by group or others, and it is not setuid or setgid;
//! - it runs as the host's `SuexecUserGroup` (the program and its directory
//!   must then belong to that user, as suexec asks), else as its file's
//!   owner; a file of root or a system account (uid below [`UID_MIN`]) runs
//!   as the server's `User` instead, as Apache without suexec runs every
//!   program; never as root.
//!
//! A spawner that is not root cannot switch: every program runs as the
//! server's own user, the other checks still made.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// suexec's AP_UID_MIN and AP_GID_MIN: accounts below are the system's.
pub const UID_MIN: u32 = 100;
pub const GID_MIN: u32 = 100;

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
    /// The program's directory, its working directory.
    pub dir: Vec<u8>,
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

/// Checks `program` before it runs; Err with the reason it may not.
pub fn check(program: &[u8], root: &[u8], user_group: Option<&(String, String)>, server: Option<&Identity>) -> Result<Checked, String> {
    let program = Path::new(OsStr::from_bytes(program));
    let shown = program.display();
    let link = std::fs::symlink_metadata(program).map_err(|e| format!("cannot stat program {shown}: {e}"))?;
    if link.file_type().is_symlink() {
        return Err(format!("program {shown} is a symbolic link (suexec runs no links)"));
    }
    if !link.is_file() {
        return Err(format!("program {shown} is not a regular file"));
    }
    let real = program.canonicalize().map_err(|e| format!("cannot resolve {shown}: {e}"))?;
    let root = Path::new(OsStr::from_bytes(root)).canonicalize().map_err(|e| format!("cannot resolve the program's tree: {e}"))?;
    if !real.starts_with(&root) {
        return Err(format!("program {shown} is outside {} once its directories' links are resolved", root.display()));
    }
    let dir: PathBuf = real.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
    let dir_meta = std::fs::metadata(&dir).map_err(|e| format!("cannot stat directory {}: {e}", dir.display()))?;
    const GROUP_OR_OTHER_WRITE: u32 = 0o022;
    if dir_meta.mode() & GROUP_OR_OTHER_WRITE != 0 {
        return Err(format!("directory {} is writable by group or others", dir.display()));
    }
    if link.mode() & GROUP_OR_OTHER_WRITE != 0 {
        return Err(format!("program {shown} is writable by group or others"));
    }
    if link.mode() & 0o6000 != 0 {
        return Err(format!("program {shown} is setuid or setgid"));
    }
    let dir = dir.as_os_str().as_bytes().to_vec();
    // Not root: no one to switch to.
    if !nix::unistd::geteuid().is_root() {
        let me = Identity { uid: nix::unistd::geteuid().as_raw(), gid: nix::unistd::getegid().as_raw() };
        return Ok(Checked { identity: me, switch: false, dir });
    }
    let server = || server.copied().ok_or_else(|| format!("{shown} belongs to a system account and the server has no User to run it as"));
    let identity = match user_group {
        Some((user, group)) => {
            let u = nix::unistd::User::from_name(user).ok().flatten().ok_or_else(|| format!("SuexecUserGroup: no user {user}"))?;
            let g = nix::unistd::Group::from_name(group).ok().flatten().ok_or_else(|| format!("SuexecUserGroup: no group {group}"))?;
            let wanted = Identity { uid: u.uid.as_raw(), gid: g.gid.as_raw() };
            let owners = [(link.uid(), link.gid()), (dir_meta.uid(), dir_meta.gid())];
            if owners.iter().any(|&(uid, gid)| uid != wanted.uid || gid != wanted.gid) {
                return Err(format!("target uid/gid ({}/{}) mismatch with directory ({}/{}) or program ({}/{}) {shown}", wanted.uid, wanted.gid, dir_meta.uid(), dir_meta.gid(), link.uid(), link.gid()));
            }
            wanted
        }
        None if link.uid() >= UID_MIN && link.gid() >= GID_MIN => Identity { uid: link.uid(), gid: link.gid() },
        None if link.uid() >= UID_MIN => Identity { uid: link.uid(), gid: server()?.gid },
        None => server()?,
    };
    if identity.uid == 0 || identity.uid < UID_MIN {
        return Err(format!("cannot run {shown} as uid {} (root or a system account)", identity.uid));
    }
    if identity.gid == 0 || identity.gid < GID_MIN {
        return Err(format!("cannot run {shown} as gid {} (root or a system group)", identity.gid));
    }
    Ok(Checked { identity, switch: true, dir })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writable_links_and_outside_files_are_refused() {
        let d = std::env::temp_dir().join(format!("warren-suexec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("cgi")).unwrap();
        std::fs::set_permissions(d.join("cgi"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let prog = d.join("cgi/a.cgi");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let b = |p: &Path| p.as_os_str().as_bytes().to_vec();
        let root = b(&d.join("cgi"));
        // Root's files run as the server's User, when warren is root.
        let user = Identity { uid: 65534, gid: 65534 };
        assert!(check(&b(&prog), &root, None, Some(&user)).is_ok());
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o757)).unwrap();
        assert!(check(&b(&prog), &root, None, Some(&user)).unwrap_err().contains("writable by group or others"));
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("/bin/sh", d.join("cgi/sh.cgi")).unwrap();
        assert!(check(&b(&d.join("cgi/sh.cgi")), &root, None, Some(&user)).unwrap_err().contains("symbolic link"));
        std::fs::write(d.join("out.cgi"), "x").unwrap();
        std::fs::set_permissions(d.join("out.cgi"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check(&b(&d.join("cgi/../out.cgi")), &root, None, Some(&user)).unwrap_err().contains("outside"));
        std::fs::set_permissions(d.join("cgi"), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check(&b(&prog), &root, None, Some(&user)).unwrap_err().contains("directory"));
        // Root's own file, the server's user root: refused.
        std::fs::set_permissions(d.join("cgi"), std::fs::Permissions::from_mode(0o755)).unwrap();
        if nix::unistd::geteuid().is_root() {
            let as_root = Identity { uid: 0, gid: 0 };
            assert!(check(&b(&prog), &root, None, Some(&as_root)).unwrap_err().contains("root or a system account"));
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
