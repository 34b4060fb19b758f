//! MDStoreDir: where accounts, keys and certificates live, and how they
//! are written (atomically, 0600) so that nothing is ever half-written.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::fcntl::{openat, renameat2, AtFlags, OFlag, RenameFlags, AT_FDCWD};
use nix::sys::stat::{fchmod, fstatat, mkdirat, Mode};
use nix::unistd::{fchown, fchownat, Gid, Uid};
use nix::NixPath;

pub use warren_config::md::{challenges_dir, store_files};

/// The store's directories made (or their modes corrected): the root and
/// `challenges/` traversable and readable by the server's children (a
/// key authorization is public: the CA fetches it over plain HTTP), the
/// rest the helper's only. With `owner` (the unprivileged account the
/// helper drops to), the store and all in it are handed to it.
/// A store that another user could change is refused, before anything is
/// made or chmodded in it (see [`only_root_changes`]). Run by the parent,
/// as root, in a store the helper owns: every directory is opened without
/// following a link and changed through its descriptor, so a helper that
/// put a link in the store cannot have root chmod or chown elsewhere.
pub fn prepare(store: &Path, owner: Option<(Uid, Gid)>) -> io::Result<()> {
    only_root_changes(store, owner.map(|(uid, _)| uid))?;
    let dirs: [(&str, u32); 6] = [("", 0o755), ("challenges", 0o755), ("challenges/tls-alpn-01", 0o755), ("accounts", 0o700), ("domains", 0o700), ("ocsp", 0o700)];
    DirBuilder::new().recursive(true).mode(0o755).create(store)?;
    let root = open_dir_nofollow(AT_FDCWD, store)?;
    for (rel, mode) in dirs {
        let mut dir = root.try_clone()?;
        for part in Path::new(rel).components() {
            match mkdirat(&dir, part.as_os_str(), Mode::from_bits_truncate(mode)) {
                Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
                Err(e) => return Err(e.into()),
            }
            dir = open_dir_nofollow(&dir, part.as_os_str())?;
        }
        fchmod(&dir, Mode::from_bits_truncate(mode))?;
        if let Some((uid, gid)) = owner {
            fchown(&dir, Some(uid), Some(gid))?;
        }
    }
    if let Some((uid, gid)) = owner {
        hand_over(&root, uid, gid, 0)?;
    }
    Ok(())
}

fn open_dir_nofollow<Fd: AsFd>(at: Fd, path: &(impl NixPath + ?Sized)) -> io::Result<OwnedFd> {
    openat(at, path, OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()).map_err(io::Error::from)
}

/// Gives everything under `dir` (files a root helper of an earlier
/// version wrote) to the helper's account, links not followed.
fn hand_over(dir: &OwnedFd, uid: Uid, gid: Gid, depth: u32) -> io::Result<()> {
    // The store is three levels deep (domains/NAME/privkey.pem); deeper
    // is not the store's layout and is left as it is.
    if depth > 4 {
        return Ok(());
    }
    // The directory the descriptor holds (its /proc link), not a path
    // looked up again.
    let listing = fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    for entry in listing {
        let name = entry?.file_name();
        let Ok(st) = fstatat(dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else { continue };
        if st.st_uid != uid.as_raw() {
            fchownat(dir, name.as_os_str(), Some(uid), Some(gid), AtFlags::AT_SYMLINK_NOFOLLOW)?;
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            hand_over(&open_dir_nofollow(dir, name.as_os_str())?, uid, gid, depth + 1)?;
        }
    }
    Ok(())
}

/// Err unless only root (or this process's user) can change what `store`
/// leads to: the parent, as root, makes, chmods and chowns there, so a
/// directory on the way that a tenant owns or may write (an MDStoreDir
/// under a DocumentRoot) would let the tenant put a link there at any
/// time and have root write or chmod where it leads. Every directory on
/// the way (links resolved) is root's or ours, and written by no one
/// else, but for a sticky one such as /tmp on the way to it (there no one
/// may rename what is root's); a link on the way is root's or ours. The
/// store itself may be the helper's (`helper`): it owns what is in it.
/// A part of the path that does not exist yet is made by the parent.
fn only_root_changes(store: &Path, helper: Option<Uid>) -> io::Result<()> {
    let euid = nix::unistd::geteuid().as_raw();
    let ours = |uid: u32| uid == 0 || uid == euid;
    let refuse = |what: String| Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("{what}: root makes and chowns directories under it; put MDStoreDir where only root writes (by default ServerRoot/md)")));
    let store_real = fs::canonicalize(store).ok();
    let mut prefix = PathBuf::new();
    for part in store.components() {
        prefix.push(part);
        let Ok(link) = fs::symlink_metadata(&prefix) else { break };
        if link.file_type().is_symlink() && !ours(link.uid()) {
            return refuse(format!("{} is a link of uid {}'s", prefix.display(), link.uid()));
        }
        let real = fs::canonicalize(&prefix)?;
        for dir in real.ancestors() {
            let meta = fs::metadata(dir)?;
            let written_by_others = meta.mode() & 0o022 != 0;
            let sticky_on_the_way = meta.mode() & 0o1000 != 0 && !(dir == real && prefix == store);
            let helpers_store = Some(dir) == store_real.as_deref() && helper.is_some_and(|h| h.as_raw() == meta.uid());
            if !ours(meta.uid()) && !helpers_store {
                return refuse(format!("{} belongs to uid {}", dir.display(), meta.uid()));
            }
            if written_by_others && !sticky_on_the_way {
                return refuse(format!("{} may be written by others (mode {:o})", dir.display(), meta.mode() & 0o7777));
            }
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` as one step: a temporary file beside it
/// (mode `mode`), synced, renamed over `path`, and the directory synced.
/// On any error (a full disk) the temporary is removed and `path` is
/// left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no directory"))?;
    let tmp = temporary_name(path);
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
        // The helper's umask is 077: a public file (an http-01 answer)
        // gets its mode here.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

fn temporary_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".tmp{}", std::process::id()));
    path.with_file_name(name)
}

/// One certificate chain and its key, with their file names in the
/// domain's directory (see `warren_config::md::pair_names`).
pub struct Pair {
    pub cert_name: String,
    pub key_name: String,
    pub chain_pem: String,
    pub key_pem: String,
}

/// Puts a domain's new certificate chains and keys in the store as one
/// step: all written into a fresh directory, synced, then exchanged with
/// the domain's directory (renameat2 RENAME_EXCHANGE), so a reader sees
/// the old set or the new one, never a mix.
pub fn install_certificates(store: &Path, domain: &str, pairs: &[Pair]) -> io::Result<()> {
    let (cert, _) = store_files(store, domain);
    let current = cert.parent().expect("store_files names a file in a directory").to_path_buf();
    let fresh = store.join("domains").join(format!(".{domain}.new"));
    let _ = fs::remove_dir_all(&fresh);
    let staged = (|| {
        DirBuilder::new().mode(0o700).create(&fresh)?;
        for p in pairs {
            write_atomic(&fresh.join(&p.key_name), p.key_pem.as_bytes(), 0o600)?;
            write_atomic(&fresh.join(&p.cert_name), p.chain_pem.as_bytes(), 0o600)?;
        }
        if current.exists() {
            renameat2(AT_FDCWD, &fresh, AT_FDCWD, &current, RenameFlags::RENAME_EXCHANGE).map_err(io::Error::from)?;
        } else {
            fs::rename(&fresh, &current)?;
        }
        File::open(store.join("domains"))?.sync_all()
    })();
    let _ = fs::remove_dir_all(&fresh);
    staged
}

/// The file an account with this CA is kept in.
pub fn account_file(store: &Path, ca_url: &str) -> PathBuf {
    let name: String = ca_url.trim_start_matches("https://").trim_start_matches("http://").chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
    store.join("accounts").join(format!("{name}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("warren-acme-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_0600_and_pairs_are_swapped_whole() {
        let store = scratch("swap");
        prepare(&store, None).unwrap();
        assert_eq!(mode(&store.join("domains")), 0o700);
        assert_eq!(mode(&challenges_dir(&store)), 0o755);
        let pair = |chain: &str, key: &str| [Pair { cert_name: "pubcert.pem".into(), key_name: "privkey.pem".into(), chain_pem: chain.into(), key_pem: key.into() }];
        install_certificates(&store, "a.test", &pair("CERT1", "KEY1")).unwrap();
        let (cert, key) = store_files(&store, "a.test");
        assert_eq!((fs::read_to_string(&cert).unwrap(), fs::read_to_string(&key).unwrap()), ("CERT1".into(), "KEY1".into()));
        assert_eq!((mode(&cert), mode(&key)), (0o600, 0o600));
        install_certificates(&store, "a.test", &pair("CERT2", "KEY2")).unwrap();
        assert_eq!((fs::read_to_string(&cert).unwrap(), fs::read_to_string(&key).unwrap()), ("CERT2".into(), "KEY2".into()));
        // Nothing left beside them.
        let names: Vec<_> = fs::read_dir(store.join("domains")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.test"]);
        fs::remove_dir_all(&store).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let store = scratch("fail");
        prepare(&store, None).unwrap();
        let f = store.join("accounts").join("x.json");
        write_atomic(&f, b"old", 0o600).unwrap();
        // A temporary that cannot be made (already there): the old file stays.
        fs::write(temporary_name(&f), b"in the way").unwrap();
        assert!(write_atomic(&f, b"new", 0o600).is_err());
        assert_eq!(fs::read(&f).unwrap(), b"old");
        fs::remove_dir_all(&store).unwrap();
    }
}
