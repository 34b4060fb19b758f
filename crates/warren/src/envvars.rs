//! Debian's `/etc/apache2/envvars`, read as `apache2ctl` reads it: a shell
//! script beside the configuration that exports `APACHE_RUN_USER`,
//! `APACHE_LOG_DIR`, `APACHE_PID_FILE`... which `apache2.conf` then names as
//! `${APACHE_LOG_DIR}`. `warren -f DIR/apache2.conf` sources `DIR/envvars`
//! (or `$APACHE_ENVVARS`) with `/bin/sh`, with `APACHE_CONFDIR` set to DIR
//! as apache2ctl sets it, and takes each variable it exports that the
//! environment does not already hold: what a unit file or the user set
//! wins, as it does over apache2ctl's defaults.
//!
//! The script runs with warren's privileges (root, usually), so it is
//! opened as root opens the files it writes ([`warren_handler::root_files`]:
//! no link or directory another user could have put on the way, owned by
//! root or warren's user), must be writable by no one else, and is read
//! once: the shell evaluates the text that was checked, not whatever the
//! path names a moment later.

use std::io::Read as _;
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
    // Whatever is there (a FIFO, a dangling link) is looked at, and refused
    // with a word, rather than passed over in silence.
    Some(dir.join("envvars")).filter(|f| f.symlink_metadata().is_ok())
}

/// Sources `envvars` and sets, in this process, what it exports that is not
/// set yet. Returns the names set, or why the file was not read. Called
/// while warren has one thread.
pub fn import(envvars: &Path, config: &Path) -> Result<Vec<String>, String> {
    let refused = |why: String| format!("{}: not read: {why}", envvars.display());
    let mut file = warren_handler::root_files::open_read(envvars).map_err(|e| refused(e.to_string()))?;
    let meta = file.metadata().map_err(|e| refused(e.to_string()))?;
    if meta.mode() & 0o022 != 0 {
        return Err(refused("it must be writable by its owner alone, as it runs as a shell script".into()));
    }
    let mut script = String::new();
    file.read_to_string(&mut script).map_err(|e| refused(e.to_string()))?;
    let confdir = std::path::absolute(config).ok().and_then(|c| c.parent().map(Path::to_path_buf)).unwrap_or_default();
    // `env -0`: values may hold newlines.
    let out = Command::new("/bin/sh")
        .arg("-c")
        // As apache2ctl sources it: its exit status does not matter.
        .arg("eval \"$1\" >/dev/null; exec env -0")
        .arg("sh")
        .arg(&script)
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
