//! A php-cgi pool's PHP settings (`php_value`, `php_flag` and their
//! `php_admin_` forms) in an ini file of the pool's own, not on its
//! command line, where `ps` shows them to every user of the machine
//! (database hosts, `open_basedir` paths, `disable_functions`).
//!
//! The file is `warren.ini` in a directory of the pool's own, inside one
//! directory for all pools that anyone may pass through but not list
//! (0711). The pool's directory is root's, its group the pool's, mode
//! 0750; the file likewise, 0440, written under another name and renamed
//! into place: only root and the pool's user read it, and neither the pool
//! nor anyone else can change it. php-cgi reads it through
//! `PHP_INI_SCAN_DIR=:DIR` (the leading `:` keeps the compiled-in scan
//! directory, so the system's php.ini and conf.d are read first, as before
//! with `-d`). php-cgi cannot lock a setting as php-fpm does: the admin
//! forms are set as `php_value` is, as they were with `-d`.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::Gid;

const FILE: &str = "warren.ini";

/// One pool's ini directory, removed when the pool is gone.
pub(crate) struct PoolIni {
    dir: PathBuf,
    /// The process that made it: a forked server child dropping its copy
    /// of the pools must not remove it.
    maker: u32,
}

impl PoolIni {
    /// Writes `settings` (name, value) into a new directory `dir` (in the
    /// pools' ini directory), readable by `group` (the pool's, when warren
    /// runs as root and the pool as another user).
    pub(crate) fn write<'a>(dir: PathBuf, settings: impl Iterator<Item = &'a (String, String)>, group: Option<Gid>) -> Result<PoolIni, String> {
        nix::unistd::mkdir(&dir, Mode::from_bits_truncate(0o700)).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let ini = PoolIni { dir, maker: std::process::id() };
        let fd: OwnedFd = nix::fcntl::open(&ini.dir, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|e| format!("cannot open {}: {e}", ini.dir.display()))?;
        let fresh = ini.dir.join(format!("{FILE}.new"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&fresh)
            .map_err(|e| format!("cannot create {}: {e}", fresh.display()))?;
        file.write_all(ini_text(settings).as_bytes()).map_err(|e| format!("cannot write {}: {e}", fresh.display()))?;
        if let Some(g) = group {
            share_with(file.as_fd(), g, 0o440).map_err(|e| format!("{}: {e}", fresh.display()))?;
            share_with(fd.as_fd(), g, 0o750).map_err(|e| format!("{}: {e}", ini.dir.display()))?;
        }
        std::fs::rename(&fresh, ini.dir.join(FILE)).map_err(|e| format!("cannot rename {} into place: {e}", fresh.display()))?;
        Ok(ini)
    }

    /// PHP_INI_SCAN_DIR for the pool's children: the compiled-in directory
    /// (an empty entry), what the pool's own `env` gave, then ours, read
    /// last so that its settings win.
    pub(crate) fn scan_dir(&self, inherited: Option<&str>) -> String {
        format!("{}:{}", inherited.unwrap_or(""), self.dir.display())
    }
}

impl Drop for PoolIni {
    fn drop(&mut self) {
        if std::process::id() == self.maker {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn share_with(fd: std::os::fd::BorrowedFd, group: Gid, mode: u32) -> nix::Result<()> {
    nix::unistd::fchown(fd, None, Some(group))?;
    nix::sys::stat::fchmod(fd, Mode::from_bits_truncate(mode))
}

/// The lines php-cgi's `-d name=value` made: the value as it is when it
/// starts with a letter, a digit or a quote (so that `E_ALL & ~E_NOTICE`
/// stays an expression and `On` a boolean), else in double quotes, as
/// php-cgi quotes a `-d` value (cgi_main.c).
fn ini_text<'a>(settings: impl Iterator<Item = &'a (String, String)>) -> String {
    let mut text = String::from("; written by warren for this pool's php_value and php_admin_value settings\n");
    for (name, value) in settings {
        match value.chars().next() {
            None => text.push_str(&format!("{name}=\n")),
            Some(c) if c.is_ascii_alphanumeric() || c == '"' || c == '\'' => text.push_str(&format!("{name}={value}\n")),
            Some(_) => text.push_str(&format!("{name}=\"{value}\"\n")),
        }
    }
    text
}

/// The directory for all pools' ini directories, under `base`: passable
/// by all (the pools' users), listable by none but its owner.
pub(crate) fn parent_mode(fd: std::os::fd::BorrowedFd) -> nix::Result<()> {
    nix::sys::stat::fchmod(fd, Mode::from_bits_truncate(0o711))
}

/// Where the pool numbered `serial` keeps its file, in `parent`.
pub(crate) fn pool_dir(parent: &Path, serial: u32) -> PathBuf {
    parent.join(format!("pool-{serial}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn values_are_written_as_php_cgi_read_its_d_options() {
        let settings = [("memory_limit", "256M"), ("error_reporting", "E_ALL & ~E_NOTICE"), ("include_path", ".:/usr/share/php"), ("x", "-1"), ("q", "\"quoted\""), ("empty", "")]
            .map(|(k, v)| (k.to_string(), v.to_string()));
        let text = ini_text(settings.iter());
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines, ["memory_limit=256M", "error_reporting=E_ALL & ~E_NOTICE", "include_path=\".:/usr/share/php\"", "x=\"-1\"", "q=\"quoted\"", "empty="]);
    }

    #[test]
    fn the_file_is_private_and_goes_with_the_pool() {
        let parent = std::env::temp_dir().join(format!("warren-ini-test-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        let settings = [("memory_limit".to_string(), "64M".to_string())];
        let ini = PoolIni::write(pool_dir(&parent, 1), settings.iter(), None).unwrap();
        let file = parent.join("pool-1").join(FILE);
        assert_eq!(std::fs::read_to_string(&file).unwrap().lines().last(), Some("memory_limit=64M"));
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(parent.join("pool-1")).unwrap().mode() & 0o777, 0o700);
        assert!(!parent.join("pool-1").join("warren.ini.new").exists());
        assert_eq!(ini.scan_dir(None), format!(":{}", parent.join("pool-1").display()));
        assert_eq!(ini.scan_dir(Some("/etc/extra")), format!("/etc/extra:{}", parent.join("pool-1").display()));
        // A directory already there is not taken over.
        assert!(PoolIni::write(pool_dir(&parent, 1), settings.iter(), None).is_err());
        drop(ini);
        assert!(!parent.join("pool-1").exists());
        std::fs::remove_dir_all(parent).unwrap();
    }
}
