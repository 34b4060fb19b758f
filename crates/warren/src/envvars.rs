//! Debian's `/etc/apache2/envvars`, read as `apache2ctl` reads it: a shell
//! script beside the configuration that exports `APACHE_RUN_USER`,
//! `APACHE_LOG_DIR`, `APACHE_PID_FILE`... which `apache2.conf` then names as
//! `${APACHE_LOG_DIR}`. `warren -f DIR/apache2.conf` sources `DIR/envvars`
//! (or `$APACHE_ENVVARS`) with `/bin/sh`, with `APACHE_CONFDIR` set to DIR
//! as apache2ctl sets it, and takes each variable it exports that the
//! environment does not already hold: what a unit file or the user set
//! wins, as it does over apache2ctl's defaults.
//!
//! The script runs with warren's privileges (root, usually), so it is run
//! only when it is owned by root or by warren's user and writable by no one
//! else, as a root-owned /etc/apache2/envvars is.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The envvars file for a configuration file: `$APACHE_ENVVARS`, else
/// `envvars` in the configuration's directory (if there is one).
pub fn file_for(config: &Path) -> Option<PathBuf> {
    if let Some(named) = std::env::var_os("APACHE_ENVVARS") {
        return Some(PathBuf::from(named));
    }
    let dir = std::path::absolute(config).ok()?.parent()?.to_path_buf();
    Some(dir.join("envvars")).filter(|f| f.is_file())
}

/// Sources `envvars` and sets, in this process, what it exports that is not
/// set yet. Returns the names set, or why the file was not read. Called
/// while warren has one thread.
pub fn import(envvars: &Path, config: &Path) -> Result<Vec<String>, String> {
    let meta = std::fs::metadata(envvars).map_err(|e| format!("{}: {e}", envvars.display()))?;
    let owner_ok = meta.uid() == 0 || meta.uid() == nix::unistd::geteuid().as_raw();
    if !owner_ok || meta.mode() & 0o022 != 0 {
        return Err(format!("{}: not read: it must be owned by root (or warren's user) and writable by no one else, as it runs as a shell script", envvars.display()));
    }
    let confdir = std::path::absolute(config).ok().and_then(|c| c.parent().map(Path::to_path_buf)).unwrap_or_default();
    // `env -0`: values may hold newlines.
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(". \"$1\" >/dev/null && exec env -0")
        .arg("sh")
        .arg(envvars)
        .env("APACHE_CONFDIR", std::env::var_os("APACHE_CONFDIR").unwrap_or_else(|| confdir.into_os_string()))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: cannot run /bin/sh: {e}", envvars.display()))?;
    if !out.status.success() {
        return Err(format!("{}: the script failed ({})", envvars.display(), out.status));
    }
    let mut set = Vec::new();
    for entry in out.stdout.split(|b| *b == 0) {
        let Some(eq) = entry.iter().position(|b| *b == b'=') else { continue };
        let name = String::from_utf8_lossy(&entry[..eq]).into_owned();
        // The shell's own (PWD, SHLVL, _) and what is set already stay.
        if matches!(name.as_str(), "PWD" | "OLDPWD" | "SHLVL" | "_") || std::env::var_os(&name).is_some() {
            continue;
        }
        use std::os::unix::ffi::OsStrExt;
        std::env::set_var(&name, std::ffi::OsStr::from_bytes(&entry[eq + 1..]));
        set.push(name);
    }
    Ok(set)
}
