//! Debian's envvars beside a configuration, for the tests of `warren -f`
//! reading it (cli_apache.rs) and of what it refuses (attacks_deb.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{TempDir, BIN};

/// The lines of Debian's apache2.conf that name envvars' variables.
const APACHE2_CONF_LINES: &str = "DefaultRuntimeDir ${APACHE_RUN_DIR}\nPidFile ${APACHE_PID_FILE}\nUser ${APACHE_RUN_USER}\nGroup ${APACHE_RUN_GROUP}\nErrorLog ${APACHE_LOG_DIR}/error.log\nListen 127.0.0.1:18085\nDocumentRoot www\n";

/// A configuration directory holding Debian's own envvars file.
pub fn envvars_tree(tag: &str) -> (TempDir, PathBuf) {
    let debian = Path::new("/etc/apache2/envvars");
    assert!(debian.is_file(), "/etc/apache2/envvars is missing: install the apache2 package (test.sh does)");
    let dir = TempDir::new(tag);
    std::fs::create_dir_all(dir.0.join("www")).unwrap();
    std::fs::copy(debian, dir.0.join("envvars")).unwrap();
    let conf = dir.write("apache2.conf", APACHE2_CONF_LINES);
    (dir, conf)
}

/// `warren -f conf -S` with no APACHE_* variable in its environment, as
/// apache2ctl finds it before sourcing envvars.
pub fn without_apache_vars(conf: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("-f").arg(conf).arg("-S");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("APACHE_") {
            cmd.env_remove(name);
        }
    }
    cmd
}
