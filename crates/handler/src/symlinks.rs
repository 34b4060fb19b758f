//! `Options FollowSymLinks` and `SymLinksIfOwnerMatch`: opening a path below
//! a directory (the host's DocumentRoot, or a directory already opened that
//! way) with every symbolic link on the way checked.
//!
//! Checking a path and then opening it by name would let anyone who can write
//! in the tree swap a component for a link in between. So the check *is* the
//! open: one `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH)` from a
//! descriptor of the directory when no link may be followed (or, under
//! SymLinksIfOwnerMatch, when the path turns out to hold none), and otherwise
//! a walk that opens one component at a time from the previous one's
//! descriptor with `O_NOFOLLOW`. A link met on the walk is judged from the
//! descriptors themselves: the link's owner from the link opened with
//! `O_PATH | O_NOFOLLOW`, its target's owner from what opening it (following)
//! actually gave, and the walk continues from that. The walk is also what runs
//! where openat2 does not exist (before Linux 5.6), and what names the link
//! for the error log.
//!
//! With FollowSymLinks on (the default) none of this runs: the static-file
//! path and its stat-validated caches are unchanged.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{openat, openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fstat, FileStat, Mode, SFlag};
use warren_config::OptionFlags;

use crate::dir_config::Effective;
use crate::request::Request;
use crate::site::Site;
use crate::Response;

/// What the Options in force let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRule {
    /// FollowSymLinks: links are followed, nothing is checked.
    Follow,
    /// SymLinksIfOwnerMatch: a link is followed when what it leads to has the
    /// link's owner.
    IfOwnerMatch,
    /// Neither: no link is followed.
    Refuse,
}

impl LinkRule {
    /// As Apache: SymLinksIfOwnerMatch applies even when FollowSymLinks is
    /// on too (it is the stricter of the two).
    pub fn of(o: OptionFlags) -> LinkRule {
        if o.symlinks_if_owner_match {
            LinkRule::IfOwnerMatch
        } else if o.follow_symlinks {
            LinkRule::Follow
        } else {
            LinkRule::Refuse
        }
    }
}

/// What the descriptor is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reading a file to serve, or a directory to list or look into.
    Read,
    /// Finding it only: a script, which the FastCGI application opens itself.
    Locate,
}

impl Access {
    /// The flags of every open of a path a request names, checked or not.
    pub(crate) fn flags(self) -> OFlag {
        match self {
            // O_NONBLOCK so that a FIFO placed in the tree cannot stall the
            // server; O_NOCTTY so that a terminal reached through the tree
            // (a device node, a link to a pty) never becomes the controlling
            // terminal of a server child, which leads a session of its own.
            Access::Read => OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
            Access::Locate => OFlag::O_PATH | OFlag::O_CLOEXEC,
        }
    }
}

#[derive(Debug)]
pub enum Refused {
    /// A link the rule does not let through, or whose target could not be
    /// reached to compare owners: the path of the link.
    Link(PathBuf),
    /// Any other failure to open (no such file, permission...).
    Io(io::Error),
}

impl From<Errno> for Refused {
    fn from(e: Errno) -> Refused {
        Refused::Io(io::Error::from(e))
    }
}

/// Cleared the first time the kernel says it has no openat2.
static OPENAT2: AtomicBool = AtomicBool::new(true);

/// A descriptor of the directory `root`, following links: opened per
/// request, so that a document root that is itself a link, swapped at deploy
/// time, is the one in force now.
pub fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(nix::fcntl::open(root, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())?)
}

/// Opens `rel` below the directory `dir` (named `dir_path` in messages) with
/// every component of `rel` checked against `rule`. `rel` is relative and
/// holds no `..` (a normalised URL path).
pub fn open_beneath(dir: BorrowedFd, dir_path: &Path, rel: &Path, rule: LinkRule, access: Access) -> Result<File, Refused> {
    open_beneath_with(dir, dir_path, rel, rule, access, OPENAT2.load(Ordering::Relaxed))
}

fn open_beneath_with(dir: BorrowedFd, dir_path: &Path, rel: &Path, rule: LinkRule, access: Access, try_openat2: bool) -> Result<File, Refused> {
    if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        // path::beneath never gives one: a caller that skipped it.
        return Err(Refused::Io(io::Error::from_raw_os_error(libc::EACCES)));
    }
    if rule == LinkRule::Follow {
        let path = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        if try_openat2 {
            let how = OpenHow::new().flags(access.flags()).resolve(ResolveFlag::RESOLVE_BENEATH);
            match openat2(dir, path, how) {
                Ok(fd) => return Ok(File::from(fd)),
                // Out of the directory through a link, which FollowSymLinks
                // lets through (`..` cannot be left in `rel`); or no openat2.
                Err(Errno::EXDEV | Errno::EAGAIN | Errno::EPERM) => {}
                Err(Errno::ENOSYS) => OPENAT2.store(false, Ordering::Relaxed),
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(File::from(openat(dir, path, access.flags(), Mode::empty())?));
    }
    if try_openat2 {
        let path = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        let how = OpenHow::new().flags(access.flags()).resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_BENEATH);
        match openat2(dir, path, how) {
            Ok(fd) => return Ok(File::from(fd)),
            // A link on the way (ELOOP), or a way out that only a link or
            // `..` gives (EXDEV, EAGAIN): the walk judges it and names it.
            Err(Errno::ELOOP | Errno::EXDEV | Errno::EAGAIN) => {}
            Err(Errno::ENOSYS) => OPENAT2.store(false, Ordering::Relaxed),
            // A seccomp filter that does not know openat2 may answer EPERM;
            // the walk gives the real answer.
            Err(Errno::EPERM) => {}
            Err(e) => return Err(e.into()),
        }
    }
    walk(dir, dir_path, rel, rule, access)
}

fn is_link(st: &FileStat) -> bool {
    SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFLNK
}

/// One component at a time from `dir`, never following a link by name:
/// each link met is judged, then followed only through a descriptor.
fn walk(dir: BorrowedFd, dir_path: &Path, rel: &Path, rule: LinkRule, access: Access) -> Result<File, Refused> {
    let mut names: Vec<&OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(n),
            Component::CurDir => {}
            // Never in a normalised URL path: not something to resolve here.
            Component::RootDir | Component::ParentDir | Component::Prefix(_) => {
                return Err(Refused::Io(io::Error::from_raw_os_error(libc::EACCES)))
            }
        }
    }
    let Some((last, middle)) = names.split_last() else {
        return Ok(File::from(openat(dir, ".", access.flags(), Mode::empty())?));
    };
    let mut shown = dir_path.to_path_buf();
    let mut cur: Option<OwnedFd> = None;
    for name in middle {
        shown.push(name);
        let at = cur.as_ref().map_or(dir, |f| f.as_fd());
        let next = match openat(at, *name, OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()) {
            Ok(fd) => fd,
            // With O_NOFOLLOW a link is "not a directory" too: look closer.
            Err(Errno::ENOTDIR) => {
                let link = openat(at, *name, OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())?;
                let st = fstat(&link)?;
                if !is_link(&st) {
                    return Err(Errno::ENOTDIR.into());
                }
                follow(at, name, &st, rule, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, &shown)?
            }
            Err(e) => return Err(e.into()),
        };
        cur = Some(next);
    }
    shown.push(last);
    let at = cur.as_ref().map_or(dir, |f| f.as_fd());
    match access {
        Access::Read => match openat(at, *last, access.flags() | OFlag::O_NOFOLLOW, Mode::empty()) {
            Ok(fd) => Ok(File::from(fd)),
            // ELOOP with O_NOFOLLOW: the last component is a link.
            Err(Errno::ELOOP) => {
                let link = openat(at, *last, OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())?;
                let st = fstat(&link)?;
                if !is_link(&st) {
                    return Err(Errno::ELOOP.into());
                }
                Ok(File::from(follow(at, last, &st, rule, access.flags(), &shown)?))
            }
            Err(e) => Err(e.into()),
        },
        // O_PATH | O_NOFOLLOW gives the link itself rather than ELOOP.
        Access::Locate => {
            let fd = openat(at, *last, access.flags() | OFlag::O_NOFOLLOW, Mode::empty())?;
            let st = fstat(&fd)?;
            if !is_link(&st) {
                return Ok(File::from(fd));
            }
            Ok(File::from(follow(at, last, &st, rule, access.flags(), &shown)?))
        }
    }
}

/// The link `name` in `at` (its own fstat `link`): refused, or opened with
/// `flags` (following) when the rule lets it through. The owners compared
/// are those of the descriptors, not of names looked up again.
fn follow(at: BorrowedFd, name: &OsStr, link: &FileStat, rule: LinkRule, flags: OFlag, shown: &Path) -> Result<OwnedFd, Refused> {
    if rule != LinkRule::IfOwnerMatch {
        return Err(Refused::Link(shown.to_path_buf()));
    }
    // A target that cannot be opened is refused as a link, as Apache does
    // ("link target not accessible"), rather than told apart as missing.
    let target = openat(at, name, flags, Mode::empty()).map_err(|_| Refused::Link(shown.to_path_buf()))?;
    let st = fstat(&target).map_err(|_| Refused::Link(shown.to_path_buf()))?;
    if st.st_uid != link.st_uid {
        return Err(Refused::Link(shown.to_path_buf()));
    }
    Ok(target)
}

/// The root `path` was mapped under, and its part below: the host's
/// DocumentRoot or the directory of an Alias, the deepest that holds it.
/// A path elsewhere (AliasMatch's, a file a server rewrite rule named) is
/// opened from `/`, with its dot segments already gone (path::beneath).
fn split_root<'a>(site: &'a Site, host: usize, path: &'a Path) -> (&'a Path, &'a Path) {
    use warren_config::alias::{AliasTarget, UrlMatch};
    let config = &site.hosts[host].config;
    let aliases = config.url_aliases.iter().filter_map(|a| match (&a.url, &a.target) {
        (UrlMatch::Prefix(_), AliasTarget::Path(t)) => Some(Path::new(t.as_str())),
        _ => None,
    });
    std::iter::once(config.document_root.as_path())
        .chain(aliases)
        .filter_map(|root| Some((root, path.strip_prefix(root).ok()?)))
        .max_by_key(|(root, _)| root.as_os_str().len())
        .unwrap_or((Path::new("/"), path.strip_prefix("/").unwrap_or(path)))
}

/// Opens `path` (mapped by [`Site::fs_path`] or another user of
/// `path::beneath`) under `rule` from a fresh descriptor of the root it was
/// mapped under: the one place a request's file is opened.
pub fn open_in_root(site: &Site, host: usize, path: &Path, rule: LinkRule, access: Access) -> Result<File, Refused> {
    let (base, rel) = split_root(site, host, path);
    let root = open_root(base).map_err(Refused::Io)?;
    open_beneath(root.as_fd(), base, rel, rule, access)
}

/// The 403 for a link the Options do not let through, with Apache's error-log
/// line (which names the client).
pub fn refused(site: &Site, req: Request, link: &Path) -> Response {
    site.error(req, 403, &format!("Symbolic link not allowed or link target not accessible: {}", link.display()))
}

/// A script handed to a FastCGI application: the application opens it by
/// name itself, so this checks its path (none of it is served) and answers
/// with the refusal, if there is one.
pub fn check_script(site: &Site, req: Request, eff: &Effective, script: &Path) -> Option<Response> {
    let rule = LinkRule::of(eff.options());
    if rule == LinkRule::Follow {
        return None;
    }
    match open_in_root(site, req.host, script, rule, Access::Locate) {
        Ok(_) => None,
        Err(Refused::Link(link)) => Some(refused(site, req, &link)),
        Err(Refused::Io(e)) => Some(site.open_error(req, script, &e)),
    }
}

/// Whether a directory entry may be shown in a listing under `rule`: a link
/// is shown only when it would be followed. `dir` is the listed directory.
pub fn entry_visible(dir: BorrowedFd, name: &OsStr, rule: LinkRule) -> bool {
    if rule == LinkRule::Follow {
        return true;
    }
    let Ok(fd) = openat(dir, name, OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty()) else { return false };
    let Ok(st) = fstat(&fd) else { return false };
    if !is_link(&st) {
        return true;
    }
    follow(dir, name, &st, rule, OFlag::O_PATH | OFlag::O_CLOEXEC, Path::new(name)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::{lchown, symlink, MetadataExt};

    struct Tmp(PathBuf);

    impl Tmp {
        fn new(tag: &str) -> Tmp {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("warren-symlinks-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(p.join("root/dir/sub")).unwrap();
            std::fs::write(p.join("root/dir/sub/file.txt"), "inside").unwrap();
            std::fs::write(p.join("outside.txt"), "outside").unwrap();
            std::fs::create_dir_all(p.join("elsewhere")).unwrap();
            std::fs::write(p.join("elsewhere/file.txt"), "elsewhere").unwrap();
            Tmp(p)
        }
        fn root(&self) -> PathBuf {
            self.0.join("root")
        }
    }

    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Each case runs through openat2 (where the kernel has it) and through
    /// the walk, which must agree.
    fn open(t: &Tmp, rel: &str, rule: LinkRule, access: Access) -> [Result<File, Refused>; 2] {
        let root = open_root(&t.root()).unwrap();
        [true, false].map(|try_openat2| open_beneath_with(root.as_fd(), &t.root(), Path::new(rel), rule, access, try_openat2))
    }

    fn contents(r: Result<File, Refused>) -> String {
        let mut s = String::new();
        r.expect("opened").read_to_string(&mut s).unwrap();
        s
    }

    fn refused_at(r: Result<File, Refused>) -> PathBuf {
        match r {
            Err(Refused::Link(p)) => p,
            other => panic!("expected a refused link, got {other:?}"),
        }
    }

    #[test]
    fn plain_paths_open_under_every_rule() {
        let t = Tmp::new("plain");
        for rule in [LinkRule::Follow, LinkRule::IfOwnerMatch, LinkRule::Refuse] {
            for r in open(&t, "dir/sub/file.txt", rule, Access::Read) {
                assert_eq!(contents(r), "inside");
            }
            for r in open(&t, "dir/sub/file.txt", rule, Access::Locate) {
                assert!(r.unwrap().metadata().unwrap().is_file());
            }
            for r in open(&t, "", rule, Access::Read) {
                assert!(r.unwrap().metadata().unwrap().is_dir(), "the root itself");
            }
            for r in open(&t, "dir/missing", rule, Access::Read) {
                assert!(matches!(r, Err(Refused::Io(e)) if e.raw_os_error() == Some(libc::ENOENT)));
            }
            for r in open(&t, "dir/sub/file.txt/x", rule, Access::Read) {
                assert!(matches!(r, Err(Refused::Io(e)) if e.raw_os_error() == Some(libc::ENOTDIR)));
            }
        }
    }

    #[test]
    fn a_link_is_refused_wherever_it_is_and_named() {
        let t = Tmp::new("refuse");
        symlink(t.0.join("outside.txt"), t.root().join("dir/last")).unwrap();
        symlink(t.0.join("elsewhere"), t.root().join("dir/middle")).unwrap();
        symlink("sub/file.txt", t.root().join("dir/relative")).unwrap();
        for (rel, link) in [("dir/last", "dir/last"), ("dir/middle/file.txt", "dir/middle"), ("dir/relative", "dir/relative")] {
            for access in [Access::Read, Access::Locate] {
                for r in open(&t, rel, LinkRule::Refuse, access) {
                    assert_eq!(refused_at(r), t.root().join(link), "{rel}");
                }
            }
            for r in open(&t, rel, LinkRule::Follow, Access::Read) {
                assert!(r.is_ok(), "FollowSymLinks follows {rel}");
            }
        }
    }

    #[test]
    fn owner_match_compares_link_and_final_target() {
        let t = Tmp::new("owner");
        // Created by the same user: a link to a file, a chain of two links,
        // and a directory link in the middle.
        symlink(t.0.join("outside.txt"), t.root().join("same")).unwrap();
        symlink(t.root().join("same"), t.root().join("chain")).unwrap();
        symlink(t.0.join("elsewhere"), t.root().join("dirlink")).unwrap();
        symlink(t.0.join("nothing-there"), t.root().join("dangling")).unwrap();
        for r in open(&t, "same", LinkRule::IfOwnerMatch, Access::Read) {
            assert_eq!(contents(r), "outside");
        }
        for r in open(&t, "chain", LinkRule::IfOwnerMatch, Access::Read) {
            assert_eq!(contents(r), "outside");
        }
        for r in open(&t, "dirlink/file.txt", LinkRule::IfOwnerMatch, Access::Read) {
            assert_eq!(contents(r), "elsewhere");
        }
        for r in open(&t, "dangling", LinkRule::IfOwnerMatch, Access::Read) {
            assert_eq!(refused_at(r), t.root().join("dangling"), "a target that cannot be reached is refused");
        }
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root: owner mismatches are not tested");
            return;
        }
        // The link owned by someone else than its target (lchown changes the
        // link, not the target), at the end, in the middle, and at the head
        // of a chain whose other link matches the target.
        let nobody = nix::unistd::User::from_name("nobody").ok().flatten().map_or(65534, |u| u.uid.as_raw());
        symlink(t.0.join("outside.txt"), t.root().join("theirs")).unwrap();
        lchown(t.root().join("theirs"), Some(nobody), None).unwrap();
        symlink(t.0.join("elsewhere"), t.root().join("theirdir")).unwrap();
        lchown(t.root().join("theirdir"), Some(nobody), None).unwrap();
        symlink(t.root().join("same"), t.root().join("theirchain")).unwrap();
        lchown(t.root().join("theirchain"), Some(nobody), None).unwrap();
        assert_eq!(std::fs::symlink_metadata(t.root().join("theirs")).unwrap().uid(), nobody);
        for (rel, link) in [("theirs", "theirs"), ("theirdir/file.txt", "theirdir"), ("theirchain", "theirchain")] {
            for access in [Access::Read, Access::Locate] {
                for r in open(&t, rel, LinkRule::IfOwnerMatch, access) {
                    assert_eq!(refused_at(r), t.root().join(link), "{rel}");
                }
            }
        }
        // The target given to nobody too: owners match again.
        std::os::unix::fs::chown(t.0.join("outside.txt"), Some(nobody), None).unwrap();
        for r in open(&t, "theirs", LinkRule::IfOwnerMatch, Access::Read) {
            assert_eq!(contents(r), "outside");
        }
        for r in open(&t, "same", LinkRule::IfOwnerMatch, Access::Read) {
            assert_eq!(refused_at(r), t.root().join("same"), "now the root-owned link's target is nobody's");
        }
    }

    #[test]
    fn descriptors_hold_against_swapped_components() {
        let t = Tmp::new("swap");
        let root = open_root(&t.root()).unwrap();
        // A directory opened under the rule, then replaced by a link to
        // elsewhere: what is opened below the descriptor is still the
        // directory that was checked.
        let dir = open_beneath(root.as_fd(), &t.root(), Path::new("dir/sub"), LinkRule::Refuse, Access::Read).unwrap();
        std::fs::rename(t.root().join("dir/sub"), t.0.join("moved-sub")).unwrap();
        symlink(t.0.join("elsewhere"), t.root().join("dir/sub")).unwrap();
        for try_openat2 in [true, false] {
            let f = open_beneath_with(dir.as_fd(), &t.root().join("dir/sub"), Path::new("file.txt"), LinkRule::Refuse, Access::Read, try_openat2);
            assert_eq!(contents(f), "inside");
        }
        // Opened again by path from the root, the swapped-in link is refused.
        for r in open(&t, "dir/sub/file.txt", LinkRule::Refuse, Access::Read) {
            assert_eq!(refused_at(r), t.root().join("dir/sub"));
        }
        // The root itself replaced by a link (a deploy): a fresh root
        // descriptor follows it, one opened before keeps the old tree.
        std::fs::create_dir_all(t.0.join("release2/dir")).unwrap();
        std::fs::write(t.0.join("release2/dir/new.txt"), "release 2").unwrap();
        std::fs::rename(t.root(), t.0.join("release1")).unwrap();
        symlink(t.0.join("release2"), t.root()).unwrap();
        for r in open(&t, "dir/new.txt", LinkRule::Refuse, Access::Read) {
            assert_eq!(contents(r), "release 2");
        }
        let old = open_beneath(root.as_fd(), &t.root(), Path::new("dir/new.txt"), LinkRule::Refuse, Access::Read);
        assert!(matches!(old, Err(Refused::Io(e)) if e.raw_os_error() == Some(libc::ENOENT)));
    }

    #[test]
    fn listings_hide_links_that_would_not_be_followed() {
        let t = Tmp::new("list");
        symlink(t.0.join("outside.txt"), t.root().join("link")).unwrap();
        let root = open_root(&t.root()).unwrap();
        let dir = open_beneath(root.as_fd(), &t.root(), Path::new(""), LinkRule::Refuse, Access::Read).unwrap();
        assert!(entry_visible(dir.as_fd(), OsStr::new("dir"), LinkRule::Refuse));
        assert!(!entry_visible(dir.as_fd(), OsStr::new("link"), LinkRule::Refuse));
        assert!(entry_visible(dir.as_fd(), OsStr::new("link"), LinkRule::IfOwnerMatch));
        assert!(entry_visible(dir.as_fd(), OsStr::new("link"), LinkRule::Follow));
    }

    #[test]
    fn rules_from_options() {
        let o = |follow, owner| OptionFlags { indexes: false, follow_symlinks: follow, symlinks_if_owner_match: owner, exec_cgi: false, multiviews: false };
        assert_eq!(LinkRule::of(o(true, false)), LinkRule::Follow);
        assert_eq!(LinkRule::of(o(false, false)), LinkRule::Refuse);
        assert_eq!(LinkRule::of(o(false, true)), LinkRule::IfOwnerMatch);
        assert_eq!(LinkRule::of(o(true, true)), LinkRule::IfOwnerMatch, "the stricter one, as Apache");
    }
}
