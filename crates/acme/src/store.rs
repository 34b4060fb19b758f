//! MDStoreDir: where accounts, keys and certificates live, and how they
//! are written (atomically, 0600) so that nothing is ever half-written.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};

pub use warren_config::md::{challenges_dir, store_files};

/// The store's directories made (or their modes corrected): the root and
/// `challenges/` traversable and readable by the server's children (a
/// key authorization is public: the CA fetches it over plain HTTP), the
/// rest the parent's only.
/// A store that another user could change is refused, before anything is
/// made or chmodded in it (see [`only_root_changes`]).
pub fn prepare(store: &Path) -> io::Result<()> {
    only_root_changes(store)?;
    for (dir, mode) in [(store.to_path_buf(), 0o755), (challenges_dir(store), 0o755), (challenges_dir(store).join("tls-alpn-01"), 0o755), (store.join("accounts"), 0o700), (store.join("domains"), 0o700), (store.join("ocsp"), 0o700)] {
        DirBuilder::new().recursive(true).mode(mode).create(&dir)?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Err unless only root (or this process's user) can change what `store`
/// leads to: the helper, as root, writes keys there and chmods and chowns
/// by path, so a directory on the way that a tenant owns or may write (an
/// MDStoreDir under a DocumentRoot) would let the tenant put a link there
/// at any time and have root write or chmod where it leads. Every
/// directory on the way (links resolved) is root's or ours, and written by
/// no one else, but for a sticky one such as /tmp on the way to it (there
/// no one may rename what is root's); a link on the way is root's or ours.
/// A part of the path that does not exist yet is made by the helper.
fn only_root_changes(store: &Path) -> io::Result<()> {
    let euid = nix::unistd::geteuid().as_raw();
    let ours = |uid: u32| uid == 0 || uid == euid;
    let refuse = |what: String| Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("{what}: root writes keys and certificates under it; put MDStoreDir where only root writes (by default ServerRoot/md)")));
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
            if !ours(meta.uid()) {
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
        prepare(&store).unwrap();
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
        prepare(&store).unwrap();
        let f = store.join("accounts").join("x.json");
        write_atomic(&f, b"old", 0o600).unwrap();
        // A temporary that cannot be made (already there): the old file stays.
        fs::write(temporary_name(&f), b"in the way").unwrap();
        assert!(write_atomic(&f, b"new", 0o600).is_err());
        assert_eq!(fs::read(&f).unwrap(), b"old");
        fs::remove_dir_all(&store).unwrap();
    }
}
