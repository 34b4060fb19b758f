//! The attacker: a local user of the machine (a site owner with a shell, or
//! a pool's user) who can write in a directory a configuration sits in, or
//! name files there, and hopes that root, running `warren -f` (from the
//! unit, from logrotate's postrotate, from warren-ctl), will run their
//! shell commands as Debian's envvars script. Every variant must leave the
//! file unread, say so naming it, and run nothing of it: a file others may
//! write, another user's file, a link in their directory to a root file,
//! a hard link to one, a FIFO that would block root, APACHE_ENVVARS
//! pointing into their directory.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::envvars::*;
use common::*;

/// Runs `warren -f conf -S` bounded in time: the envvars file is not read,
/// with a warning naming it and `why`; the configuration lacks the
/// variables (an error at line 2, PidFile's); and `marker`, which the
/// script would create if run, does not exist.
fn refused(conf: &Path, envvars: &Path, why: &str, marker: &Path, env: &[(&str, &Path)]) {
    let mut cmd = without_apache_vars(conf);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "warren -S hangs on {}", envvars.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&format!("{}: not read: {why}", envvars.display())), "{err}");
    assert!(err.contains(&format!("{}:2: ", conf.display())) && err.contains("APACHE_PID_FILE"), "{err}");
    assert!(!marker.exists(), "the script ran: {} exists", marker.display());
}

/// A script that would leave `marker` behind, and set the variables.
fn evil_script(marker: &Path) -> String {
    format!("touch {}\nexport APACHE_RUN_USER=root APACHE_RUN_GROUP=root APACHE_PID_FILE=/tmp/x.pid APACHE_RUN_DIR=/tmp APACHE_LOG_DIR=/tmp\n", marker.display())
}

#[test]
fn an_envvars_file_others_may_write_is_not_run() {
    for mode in [0o666, 0o646, 0o664, 0o620] {
        let (dir, conf) = envvars_tree("attack-envvars-mode");
        let envvars = dir.0.join("envvars");
        let marker = dir.0.join("ran");
        std::fs::write(&envvars, evil_script(&marker)).unwrap();
        std::fs::set_permissions(&envvars, std::fs::Permissions::from_mode(mode)).unwrap();
        refused(&conf, &envvars, "it must be writable by its owner alone", &marker, &[]);
    }
}

/// The variants that need another user: run as root (as test.sh runs).
#[test]
fn an_envvars_file_another_user_controls_is_not_run() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not root: another user's files cannot be made; the variants needing them are not run");
        return;
    }
    let nobody = nix::unistd::Uid::from_raw(nobody());
    let chown = |p: &Path| std::os::unix::fs::chown(p, Some(nobody.as_raw()), None).unwrap();

    // nobody's own file, mode 0644.
    let (dir, conf) = envvars_tree("attack-envvars-owner");
    let (envvars, marker) = (dir.0.join("envvars"), dir.0.join("ran"));
    std::fs::write(&envvars, evil_script(&marker)).unwrap();
    chown(&envvars);
    refused(&conf, &envvars, "refused: ", &marker, &[]);

    // In nobody's directory: a link to a root-owned script, a hard link to
    // one, a FIFO (opening it for reading would block root forever).
    for kind in ["symlink", "hardlink", "fifo"] {
        let (dir, conf) = envvars_tree("attack-envvars-dir");
        let (envvars, marker) = (dir.0.join("envvars"), dir.0.join("ran"));
        let root_script = TempDir::new("attack-envvars-root");
        let target = root_script.write("envvars", evil_script(&marker));
        std::fs::remove_file(&envvars).unwrap();
        match kind {
            "symlink" => std::os::unix::fs::symlink(&target, &envvars).unwrap(),
            "hardlink" => std::fs::hard_link(&target, &envvars).unwrap(),
            _ => nix::unistd::mkfifo(&envvars, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap(),
        }
        chown(&dir.0);
        refused(&conf, &envvars, "", &marker, &[]);
    }

    // APACHE_ENVVARS naming a file of nobody's in /tmp.
    let (dir, conf) = envvars_tree("attack-envvars-named");
    let marker = dir.0.join("ran");
    let theirs = TempDir::new("attack-envvars-theirs");
    let named = theirs.write("envvars", evil_script(&marker));
    chown(&named);
    refused(&conf, &named, "refused: ", &marker, &[("APACHE_ENVVARS", &named)]);
}
