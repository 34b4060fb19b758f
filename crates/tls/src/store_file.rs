//! Reading MDStoreDir's files as root. The store belongs to the ACME
//! helper's unprivileged account (MDHelperUser); the parent reads the
//! managed certificates, keys and OCSP responses from it at each start and
//! graceful restart. So that a helper that was taken over cannot have root
//! read elsewhere (a link to another key, to /dev/zero) or hang (a FIFO),
//! a store file is opened beneath the store with no link followed, without
//! blocking, and must be a regular file of bounded size. A hard link is
//! not a link openat2 can refuse: a store file must have one name and
//! belong to the store's owner (the helper) or root, so that a root-only
//! file linked in (fs.protected_hardlinks=0) is not read.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};

/// The largest store file read: a chain of a few certificates, a key or
/// an OCSP response is a few kilobytes.
const MAX_STORE_FILE: u64 = 1 << 20;

/// The bytes of `path`: as any file when it is not under `store`, else as
/// said above.
pub(crate) fn read(path: &Path, store: Option<&Path>) -> io::Result<Vec<u8>> {
    let Some((store, rel)) = store.and_then(|s| Some((s, path.strip_prefix(s).ok()?))) else { return std::fs::read(path) };
    let root = File::open(store)?;
    let helper_uid = root.metadata()?.uid();
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let file = File::from(openat2(&root, rel, how).map_err(io::Error::from)?);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file (MDStoreDir belongs to the ACME helper: nothing else is read there)"));
    }
    if meta.nlink() != 1 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} names (a hard link: a store file has one)", meta.nlink())));
    }
    if meta.uid() != helper_uid && meta.uid() != 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("owned by uid {}, neither the store's owner (uid {helper_uid}) nor root", meta.uid())));
    }
    let mut bytes = Vec::new();
    file.take(MAX_STORE_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_STORE_FILE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("over {MAX_STORE_FILE} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_outsiders_are_refused_in_the_store() {
        let store = std::env::temp_dir().join(format!("warren-tls-store-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&store);
        std::fs::create_dir_all(store.join("domains/a.test")).unwrap();
        let key = store.join("domains/a.test/privkey.pem");
        std::fs::write(&key, b"KEY").unwrap();
        assert_eq!(read(&key, Some(&store)).unwrap(), b"KEY");
        // A link, at the end or on the way, is not followed.
        let outside = store.with_extension("outside");
        std::fs::write(&outside, b"SECRET").unwrap();
        std::os::unix::fs::symlink(&outside, store.join("domains/a.test/link.pem")).unwrap();
        assert!(read(&store.join("domains/a.test/link.pem"), Some(&store)).is_err());
        std::os::unix::fs::symlink(store.join("domains/a.test"), store.join("domains/b.test")).unwrap();
        assert!(read(&store.join("domains/b.test/privkey.pem"), Some(&store)).is_err());
        // A FIFO does not block and is refused.
        nix::unistd::mkfifo(&store.join("domains/a.test/fifo.pem"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(read(&store.join("domains/a.test/fifo.pem"), Some(&store)).unwrap_err().to_string().contains("not a regular file"));
        // Outside the store, a file is read as any.
        assert_eq!(read(&outside, Some(&store)).unwrap(), b"SECRET");
        std::fs::remove_dir_all(&store).unwrap();
        std::fs::remove_file(&outside).unwrap();
    }

    #[test]
    fn hard_links_and_strangers_files_are_refused_in_the_store() {
        use std::os::unix::fs::PermissionsExt;
        let store = std::env::temp_dir().join(format!("warren-tls-store-hardlink-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&store);
        std::fs::create_dir_all(store.join("domains/a.test")).unwrap();
        // A root-only file elsewhere, linked into the store by its owner.
        let outside = store.with_extension("secret");
        std::fs::write(&outside, b"SECRET").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
        let linked = store.join("domains/a.test/privkey.pem");
        std::fs::hard_link(&outside, &linked).unwrap();
        assert!(read(&linked, Some(&store)).unwrap_err().to_string().contains("hard link"));
        // With its other name gone it is an ordinary store file again.
        std::fs::remove_file(&outside).unwrap();
        assert_eq!(read(&linked, Some(&store)).unwrap(), b"SECRET");
        // A file of a third uid (neither the store's owner nor root) is
        // refused; only root can make one, so the check runs as root.
        if nix::unistd::geteuid().is_root() {
            let stranger = store.join("domains/a.test/cert.pem");
            std::fs::write(&stranger, b"CERT").unwrap();
            nix::unistd::chown(&store, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            nix::unistd::chown(&stranger, Some(nix::unistd::Uid::from_raw(65533)), None).unwrap();
            assert!(read(&stranger, Some(&store)).unwrap_err().to_string().contains("uid 65533"));
            nix::unistd::chown(&stranger, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            assert_eq!(read(&stranger, Some(&store)).unwrap(), b"CERT");
        }
        std::fs::remove_dir_all(&store).unwrap();
    }
}
