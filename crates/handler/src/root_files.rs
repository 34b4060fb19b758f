//! How root opens a file the configuration names and warren writes as
//! root (ErrorLog, CustomLog and TransferLog, PidFile, a php-cgi pool's
//! slowlog): never through a symbolic link, a hard link or a file that
//! another user could have put on the way.
//!
//! The rule. The path is walked from `/`, one name at a time. A directory
//! owned by root (or by warren's own user, when warren is not root) that
//! no one else can write is *fixed*: only root can change what its names
//! lead to, so a symbolic link found there is root's own and is followed
//! (`/var/run -> /run`, `/dev/stderr`). A directory owned by root that
//! others can write, with the sticky bit (`/tmp`), is *sticky*: an entry of
//! root's is trusted, as no one else may rename or remove it; another
//! user's is not. From the first directory that is neither (a site's own
//! `logs/`, a group-writable directory), nothing is trusted: the rest of
//! the path is opened with openat2's RESOLVE_NO_SYMLINKS (a walk with
//! O_NOFOLLOW on kernels without openat2), and `..` is refused. The file
//! itself is opened with O_NOFOLLOW (unless it is a link root made in a
//! fixed directory), without blocking where another user could have put a
//! FIFO, and once open is refused if it is a regular file with more than
//! one name (a hard link to, say, /etc/shadow), a regular file owned by
//! another user, or, outside fixed directories, not a regular file.
//!
//! Each refusal is a [`RootFileError::Refused`] naming the path and why;
//! the callers add the directive and its line ([`describe`]): warren does
//! not start, `-t` reports it ([`check_settings`]), a graceful restart
//! keeps the running configuration and a log reopen (USR1) keeps the file
//! it had.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::unistd::{Uid, UnlinkatFlags};
use warren_config::{Origin, Settings};

/// At most this many symbolic links on one path, as the kernel allows.
const MAX_LINKS: u32 = 40;

#[derive(Debug)]
pub enum RootFileError {
    /// The path leads somewhere another user could have redirected it.
    Refused(String),
    /// The system said no (a missing directory, no permission, ...).
    Io(std::io::Error),
}

impl fmt::Display for RootFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootFileError::Refused(why) => write!(f, "refused: {why}"),
            RootFileError::Io(e) => write!(f, "cannot open it: {e}"),
        }
    }
}

impl From<Errno> for RootFileError {
    fn from(e: Errno) -> Self {
        RootFileError::Io(e.into())
    }
}

/// `file:line: Directive path: what went wrong`, as configuration errors read.
pub fn describe(directive: &str, origin: Option<&Origin>, path: &Path, error: &RootFileError) -> String {
    match origin {
        Some(o) => format!("{o}: {directive} {}: {error}", path.display()),
        None => format!("{directive} {}: {error}", path.display()),
    }
}

/// Opens `path` to append to it, creating it with `mode` (less the umask).
pub fn open_append(path: &Path, mode: u32) -> Result<File, RootFileError> {
    open(path, OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT, mode)
}

/// Opens `path` to write it anew (a PidFile). It is emptied only once it
/// is known to be a file root may write.
pub fn open_truncate(path: &Path, mode: u32) -> Result<File, RootFileError> {
    let file = open(path, OFlag::O_WRONLY | OFlag::O_CREAT, mode)?;
    file.set_len(0).map_err(RootFileError::Io)?;
    Ok(file)
}

/// Opens `path` to read it (the PidFile `-k` signals): a file another user
/// could have written is not believed either.
pub fn open_read(path: &Path) -> Result<File, RootFileError> {
    open(path, OFlag::O_RDONLY, 0)
}

/// What [`open_append`] would refuse, without creating or opening the file:
/// for `warren -t`. A missing directory or a permission is not reported (it
/// is at start), only a refusal.
pub fn check(path: &Path) -> Result<(), RootFileError> {
    let found = match walk(path) {
        Ok(f) => f,
        Err(RootFileError::Io(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    let flags = if found.follow { nix::fcntl::AtFlags::empty() } else { nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW };
    match nix::sys::stat::fstatat(&found.dir.fd, found.name.as_os_str(), flags) {
        Ok(st) if kind(&st) == SFlag::S_IFLNK => Err(RootFileError::Refused(found.dir.link_refusal(&found.name))),
        Ok(st) => vet(&found, &st),
        Err(_) => Ok(()),
    }
}

/// Removes the file at `path` if it is still `file` (the PidFile at stop):
/// never another file put in its place, nor one a link leads to.
pub fn remove_if_same(path: &Path, file: &File) {
    let (Ok(found), Ok(ours)) = (walk(path), file.metadata()) else { return };
    let there = nix::sys::stat::fstatat(&found.dir.fd, found.name.as_os_str(), nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW);
    if there.is_ok_and(|st| st.st_dev == ours.dev() && st.st_ino == ours.ino()) {
        let _ = nix::unistd::unlinkat(&found.dir.fd, found.name.as_os_str(), UnlinkatFlags::NoRemoveDir);
    }
}

/// The files root writes by a path the configuration names: each
/// directive, where it is, and the path.
pub fn named_files(settings: &Settings) -> Vec<(&'static str, Option<&Origin>, &Path)> {
    let mut files = Vec::new();
    if let Some(p) = &settings.pid_file {
        files.push(("PidFile", settings.pid_file_origin.as_ref(), p.as_path()));
    }
    let hosts = std::iter::once(&settings.main).chain(settings.virtual_hosts.iter().map(|v| &v.host));
    for host in hosts {
        if let Some(p) = &host.error_log {
            files.push(("ErrorLog", host.error_log_origin.as_ref(), p.as_path()));
        }
        for log in host.custom_logs.iter().filter(|l| l.pipe.is_none()) {
            files.push((log.directive, log.origin.as_ref(), log.path.as_path()));
        }
    }
    // A php-fpm pool's master writes its own slow log, as the pool's user.
    for pool in settings.pools.iter().filter(|p| !p.runs_php_fpm()) {
        if let Some(p) = &pool.slowlog {
            files.push(("slowlog", Some(&pool.origin), p.as_path()));
        }
    }
    files.sort_by(|a, b| a.2.cmp(b.2));
    files.dedup_by(|a, b| a.2 == b.2);
    files
}

/// The logs only virtual hosts write (not the main server's too): those a
/// site's owner may have been given the directory of.
pub fn virtual_host_logs(settings: &Settings) -> Vec<&Path> {
    let main = &settings.main;
    let main_paths: Vec<&Path> = main.error_log.iter().map(|p| p.as_path()).chain(main.custom_logs.iter().filter(|l| l.pipe.is_none()).map(|l| l.path.as_path())).collect();
    let mut paths: Vec<&Path> = Vec::new();
    for v in &settings.virtual_hosts {
        let host = &v.host;
        paths.extend(host.error_log.iter().map(|p| p.as_path()).chain(host.custom_logs.iter().filter(|l| l.pipe.is_none()).map(|l| l.path.as_path())).filter(|p| !main_paths.contains(p)));
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Every refusal among the files the configuration names, described: what
/// `warren -t` and a graceful restart report.
pub fn check_settings(settings: &Settings) -> Vec<String> {
    named_files(settings).into_iter().filter_map(|(directive, origin, path)| check(path).err().map(|e| describe(directive, origin, path, &e))).collect()
}

fn open(path: &Path, flags: OFlag, mode: u32) -> Result<File, RootFileError> {
    let found = walk(path)?;
    let mut flags = flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
    if !found.follow {
        flags |= OFlag::O_NOFOLLOW;
    }
    // A FIFO another user put there would block root's open for writing.
    if found.dir.trust != Trust::Fixed {
        flags |= OFlag::O_NONBLOCK;
    }
    let fd = match nix::fcntl::openat(&found.dir.fd, found.name.as_os_str(), flags, Mode::from_bits_truncate(mode)) {
        Ok(fd) => fd,
        Err(Errno::ELOOP) => return Err(RootFileError::Refused(found.dir.link_refusal(&found.name))),
        Err(Errno::ENXIO) if flags.contains(OFlag::O_NONBLOCK) => {
            return Err(RootFileError::Refused(format!("{} is not a regular file, in {}", found.path().display(), found.dir.why_untrusted())))
        }
        Err(e) => return Err(e.into()),
    };
    vet(&found, &nix::sys::stat::fstat(&fd)?)?;
    Ok(File::from(fd))
}

/// Whether a file found (or just opened) may be written by root.
fn vet(found: &Found, st: &FileStat) -> Result<(), RootFileError> {
    let path = found.path();
    if kind(st) == SFlag::S_IFREG {
        if st.st_nlink > 1 {
            return Err(RootFileError::Refused(format!(
                "{} has {} names (a hard link to another file?): root writes no file that has another name elsewhere",
                path.display(),
                st.st_nlink
            )));
        }
        if !trusted_owner(st.st_uid) {
            return Err(RootFileError::Refused(format!("{} belongs to {}: root writes no file of another user's", path.display(), user_name(st.st_uid))));
        }
    } else if found.dir.trust != Trust::Fixed {
        return Err(RootFileError::Refused(format!("{} is not a regular file, in {}", path.display(), found.dir.why_untrusted())));
    }
    Ok(())
}

/// How far the names in a directory can be trusted.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Trust {
    /// Only root (or warren's own user) can change them.
    Fixed,
    /// Others can add names, but not rename or remove root's (the sticky bit).
    Sticky,
    /// Someone else can change any of them.
    None,
}

/// A directory on the way, open with O_PATH.
struct Dir {
    fd: OwnedFd,
    trust: Trust,
    path: PathBuf,
    owner: u32,
}

impl Dir {
    fn open_root() -> Result<Dir, RootFileError> {
        let fd = nix::fcntl::open("/", OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())?;
        let st = nix::sys::stat::fstat(&fd)?;
        Ok(Dir { fd, trust: trust_of(&st), path: PathBuf::from("/"), owner: st.st_uid })
    }

    /// Whether the entry `owner` has here can be trusted.
    fn keeps_entry_of(&self, owner: u32) -> bool {
        match self.trust {
            Trust::Fixed => true,
            Trust::Sticky => trusted_owner(owner),
            Trust::None => false,
        }
    }

    fn why_untrusted(&self) -> String {
        if trusted_owner(self.owner) {
            format!("{}, a directory others can write to", self.path.display())
        } else {
            format!("{}, a directory that belongs to {}", self.path.display(), user_name(self.owner))
        }
    }

    fn link_refusal(&self, name: &OsStr) -> String {
        format!(
            "{} is a symbolic link in {}: root follows no link another user could have placed",
            self.path.join(name).display(),
            self.why_untrusted()
        )
    }
}

/// Where a path's last name is: its directory, open, and whether the name
/// is a link root made on procfs (`/dev/stderr` leads to /proc/self/fd/2,
/// whose target is no path), which only the kernel can follow.
struct Found {
    dir: Dir,
    name: OsString,
    follow: bool,
}

impl Found {
    fn path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }
}

fn kind(st: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits())
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == Uid::effective().as_raw()
}

fn trust_of(st: &FileStat) -> Trust {
    let writable_by_others = st.st_mode & 0o022 != 0;
    match (trusted_owner(st.st_uid), writable_by_others, st.st_mode & libc::S_ISVTX != 0) {
        (true, false, _) => Trust::Fixed,
        (true, true, true) => Trust::Sticky,
        _ => Trust::None,
    }
}

fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("{} (uid {uid})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// The names of a path, `..` kept (it is taken back in fixed directories,
/// refused elsewhere), `.` and repeated slashes dropped.
fn names(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

/// Walks `path` as the module's overview says, to the directory of its
/// last name.
fn walk(path: &Path) -> Result<Found, RootFileError> {
    if !path.is_absolute() {
        return Err(RootFileError::Refused(format!("{} is not an absolute path", path.display())));
    }
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(RootFileError::Refused(format!("{} holds a NUL byte", path.display())));
    }
    let mut stack = vec![Dir::open_root()?];
    let mut todo: VecDeque<OsString> = names(path).collect();
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        let top = stack.last().expect("the root stays on the stack");
        if top.trust == Trust::None {
            todo.push_front(name);
            let last = todo.pop_back().expect("the name just put back");
            let dir = stack.pop().expect("the top of the stack");
            if last == ".." || todo.iter().any(|n| n == "..") {
                return Err(RootFileError::Refused(format!("{} climbs with '..' out of {}", path.display(), dir.why_untrusted())));
            }
            return Ok(Found { dir: beneath(dir, todo.make_contiguous())?, name: last, follow: false });
        }
        if name == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let is_last = todo.is_empty();
        let entry = if is_last {
            // The file may not exist yet; only a link needs looking at here.
            match nix::sys::stat::fstatat(&top.fd, name.as_os_str(), nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(st) if kind(&st) == SFlag::S_IFLNK => Some((None, st)),
                _ => None,
            }
        } else {
            let fd = nix::fcntl::openat(&top.fd, name.as_os_str(), OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())?;
            let st = nix::sys::stat::fstat(&fd)?;
            Some((Some(fd), st))
        };
        let Some((fd, st)) = entry else {
            let dir = stack.pop().expect("the top of the stack");
            return Ok(Found { dir, name, follow: false });
        };
        if kind(&st) == SFlag::S_IFLNK {
            if !top.keeps_entry_of(st.st_uid) {
                return Err(RootFileError::Refused(top.link_refusal(&name)));
            }
            if is_last && on_procfs(&top.fd) {
                let dir = stack.pop().expect("the top of the stack");
                return Ok(Found { dir, name, follow: true });
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(RootFileError::Refused(format!("{}: more than {MAX_LINKS} symbolic links on the way", path.display())));
            }
            let target = PathBuf::from(nix::fcntl::readlinkat(&top.fd, name.as_os_str())?);
            if target.is_absolute() {
                stack.truncate(1);
            }
            for n in names(&target).collect::<Vec<_>>().into_iter().rev() {
                todo.push_front(n);
            }
            continue;
        }
        if kind(&st) != SFlag::S_IFDIR {
            return Err(Errno::ENOTDIR.into());
        }
        let trust = if top.keeps_entry_of(st.st_uid) { trust_of(&st) } else { Trust::None };
        let dir = Dir { fd: fd.expect("opened, not last"), trust, path: top.path.join(&name), owner: st.st_uid };
        stack.push(dir);
    }
    Err(RootFileError::Refused(format!("{} names no file", path.display())))
}

fn on_procfs(fd: &OwnedFd) -> bool {
    nix::sys::statfs::fstatfs(fd).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC)
}

/// Opens the directories `names` below `dir`, which another user
/// controls: no symbolic link is followed.
fn beneath(dir: Dir, names: &[OsString]) -> Result<Dir, RootFileError> {
    if names.is_empty() {
        return Ok(dir);
    }
    let rel: PathBuf = names.iter().collect();
    let how = OpenHow::new().flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC).resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    match nix::fcntl::openat2(&dir.fd, &rel, how) {
        Ok(fd) => {
            let owner = nix::sys::stat::fstat(&fd)?.st_uid;
            Ok(Dir { fd, trust: Trust::None, path: dir.path.join(&rel), owner })
        }
        Err(Errno::ELOOP) => Err(RootFileError::Refused(format!(
            "there is a symbolic link on the way to {} in {}: root follows no link another user could have placed",
            dir.path.join(&rel).display(),
            dir.why_untrusted()
        ))),
        Err(Errno::ENOSYS) => beneath_by_names(dir, names),
        Err(e) => Err(e.into()),
    }
}

/// [`beneath`] on kernels without openat2 (before 5.6): one name at a
/// time, with O_NOFOLLOW.
fn beneath_by_names(mut dir: Dir, names: &[OsString]) -> Result<Dir, RootFileError> {
    for name in names {
        let fd = nix::fcntl::openat(&dir.fd, name.as_os_str(), OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())?;
        let st = nix::sys::stat::fstat(&fd)?;
        match kind(&st) {
            SFlag::S_IFDIR => dir = Dir { fd, trust: Trust::None, path: dir.path.join(name), owner: st.st_uid },
            SFlag::S_IFLNK => return Err(RootFileError::Refused(dir.link_refusal(name))),
            _ => return Err(Errno::ENOTDIR.into()),
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A fresh directory of the test's user (root's when run as root),
    /// mode 0755: fixed.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let p = std::env::temp_dir().join(format!("warren-root-files-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir(&p).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            Scratch(p)
        }

        /// A directory anyone can write to, without the sticky bit.
        fn open_dir(&self, name: &str) -> PathBuf {
            self.dir_with_mode(name, 0o777)
        }

        fn dir_with_mode(&self, name: &str, mode: u32) -> PathBuf {
            let d = self.0.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
            d
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn refused(r: Result<File, RootFileError>) -> String {
        match r {
            Err(RootFileError::Refused(why)) => why,
            Err(e) => panic!("an error, not a refusal: {e}"),
            Ok(_) => panic!("opened"),
        }
    }

    fn is_root() -> bool {
        Uid::effective().is_root()
    }

    const NOBODY: u32 = 65534;

    #[test]
    fn a_file_in_a_fixed_directory_is_created_and_appended_to() {
        let t = Scratch::new("plain");
        let log = t.0.join("access.log");
        open_append(&log, 0o644).unwrap().write_all(b"one\n").unwrap();
        open_append(&log, 0o644).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        // Dot segments and repeated slashes are only spelling.
        let spelled = PathBuf::from(format!("{}//./sub/../access.log", t.0.display()));
        std::fs::create_dir(t.0.join("sub")).unwrap();
        open_append(&spelled, 0o644).unwrap().write_all(b"three\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\nthree\n");
        assert!(check(&t.0.join("not-yet.log")).is_ok());
        assert!(!t.0.join("not-yet.log").exists(), "check creates nothing");
        assert!(matches!(open_append(Path::new("relative.log"), 0o644), Err(RootFileError::Refused(_))));
        assert!(matches!(check(&t.0.join("a\0b.log")), Err(RootFileError::Refused(_))), "-t reports a NUL");
        assert!(matches!(open_append(Path::new("/"), 0o644), Err(RootFileError::Refused(_))));
        assert!(matches!(open_append(&t.0.join("missing/x.log"), 0o644), Err(RootFileError::Io(_))));
        assert!(check(&t.0.join("missing/x.log")).is_ok(), "-t reports refusals, not missing directories");
    }

    #[test]
    fn links_made_where_only_root_writes_are_followed() {
        let t = Scratch::new("fixed-links");
        std::fs::create_dir(t.0.join("real")).unwrap();
        symlink("real", t.0.join("logs")).unwrap();
        symlink(t.0.join("real/error.log"), t.0.join("real/current.log")).unwrap();
        open_append(&t.0.join("logs/current.log"), 0o644).unwrap().write_all(b"x").unwrap();
        assert_eq!(std::fs::read_to_string(t.0.join("real/error.log")).unwrap(), "x");
        // /dev/null, and a descriptor by /proc/self/fd, whose link leads to
        // no path (pipe:[...]): ErrorLog /dev/stderr in a container.
        open_append(Path::new("/dev/null"), 0o644).unwrap().write_all(b"x").unwrap();
        let (read, write) = nix::unistd::pipe().unwrap();
        let by_proc = PathBuf::from(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&write)));
        open_append(&by_proc, 0o644).unwrap().write_all(b"through the pipe").unwrap();
        drop(write);
        let mut got = String::new();
        File::from(read).read_to_string(&mut got).unwrap();
        assert_eq!(got, "through the pipe");
        // A loop ends.
        symlink("loop", t.0.join("loop")).unwrap();
        assert!(refused(open_append(&t.0.join("loop/x.log"), 0o644)).contains("symbolic links"));
    }

    #[test]
    fn nothing_another_user_could_place_is_followed() {
        let t = Scratch::new("untrusted");
        let victim = t.0.join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let site = t.open_dir("site");
        // The file itself a link.
        symlink(&victim, site.join("vhost.log")).unwrap();
        let why = refused(open_append(&site.join("vhost.log"), 0o644));
        assert!(why.contains("vhost.log is a symbolic link") && why.contains("others can write"), "{why}");
        assert!(matches!(check(&site.join("vhost.log")), Err(RootFileError::Refused(_))));
        // A directory on the way a link, whether openat2 or the walk by
        // names sees it.
        std::fs::create_dir(site.join("real")).unwrap();
        symlink(&t.0, site.join("logs")).unwrap();
        let why = refused(open_append(&site.join("logs/victim"), 0o644));
        assert!(why.contains("symbolic link"), "{why}");
        symlink("real", site.join("logs2")).unwrap();
        assert!(refused(open_append(&site.join("logs2/new.log"), 0o644)).contains("symbolic link"));
        let dir = Dir::open_root().unwrap();
        let linked: Vec<OsString> = names(&site.join("logs2")).collect();
        assert!(matches!(beneath_by_names(dir, &linked), Err(RootFileError::Refused(_))));
        let dir = Dir::open_root().unwrap();
        let real: Vec<OsString> = names(&site.join("real")).collect();
        assert!(beneath_by_names(dir, &real).is_ok(), "a real directory is opened");
        open_append(&site.join("real/ok.log"), 0o644).unwrap();
        // A second name of another file.
        std::fs::hard_link(&victim, site.join("hard.log")).unwrap();
        assert!(refused(open_append(&site.join("hard.log"), 0o644)).contains("2 names"));
        assert!(matches!(check(&site.join("hard.log")), Err(RootFileError::Refused(_))));
        // A FIFO, which would block root: refused at once.
        nix::unistd::mkfifo(&site.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        assert!(refused(open_append(&site.join("fifo"), 0o644)).contains("not a regular file"));
        // Climbing out.
        assert!(refused(open_append(&site.join("real/../../victim"), 0o644)).contains("'..'"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        // A PidFile's truncation waits for the checks.
        assert!(matches!(open_truncate(&site.join("hard.log"), 0o644), Err(RootFileError::Refused(_))));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    }

    #[test]
    fn another_users_files_and_links_are_refused() {
        if !is_root() {
            return;
        }
        let t = Scratch::new("owners");
        let victim = t.0.join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        // A site's own directory, mode 0755 but not root's.
        let site = t.dir_with_mode("site", 0o755);
        std::os::unix::fs::chown(&site, Some(NOBODY), Some(NOBODY)).unwrap();
        symlink(&victim, site.join("vhost.log")).unwrap();
        let why = refused(open_append(&site.join("vhost.log"), 0o644));
        assert!(why.contains("nobody"), "the owner is named: {why}");
        std::fs::write(site.join("theirs.log"), "").unwrap();
        std::os::unix::fs::chown(site.join("theirs.log"), Some(NOBODY), None).unwrap();
        assert!(refused(open_append(&site.join("theirs.log"), 0o644)).contains("belongs to nobody"));
        // A sticky directory (/tmp): root's entries are trusted, others' not.
        let sticky = t.dir_with_mode("tmp", 0o1777);
        std::fs::write(sticky.join("roots.log"), "").unwrap();
        open_append(&sticky.join("roots.log"), 0o644).unwrap();
        symlink(sticky.join("roots.log"), sticky.join("roots-link.log")).unwrap();
        open_append(&sticky.join("roots-link.log"), 0o644).unwrap();
        symlink(&victim, sticky.join("planted.log")).unwrap();
        std::os::unix::fs::lchown(sticky.join("planted.log"), Some(NOBODY), None).unwrap();
        assert!(refused(open_append(&sticky.join("planted.log"), 0o644)).contains("symbolic link"));
        std::fs::create_dir(sticky.join("theirdir")).unwrap();
        std::os::unix::fs::chown(sticky.join("theirdir"), Some(NOBODY), None).unwrap();
        symlink(&victim, sticky.join("theirdir/x.log")).unwrap();
        assert!(refused(open_append(&sticky.join("theirdir/x.log"), 0o644)).contains("symbolic link"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    }

    #[test]
    fn a_pid_file_is_removed_only_while_it_is_ours() {
        let t = Scratch::new("pid");
        let pid = t.0.join("warren.pid");
        std::fs::write(&pid, "stale and long\n").unwrap();
        let mut f = open_truncate(&pid, 0o644).unwrap();
        f.write_all(b"42\n").unwrap();
        assert_eq!(std::fs::read_to_string(&pid).unwrap(), "42\n");
        let mut text = String::new();
        open_read(&pid).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "42\n");
        remove_if_same(&pid, &f);
        assert!(!pid.exists());
        let f = open_truncate(&pid, 0o644).unwrap();
        std::fs::remove_file(&pid).unwrap();
        std::fs::write(&pid, "someone else's").unwrap();
        remove_if_same(&pid, &f);
        assert!(pid.exists(), "another file in its place stays");
    }
}
