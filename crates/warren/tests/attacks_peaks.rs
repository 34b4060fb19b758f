//! The remembered peaks file (`<PidFile>.peaks`, `pm.max_children auto`) as
//! an attacker who can write the PidFile's directory sees it (a pool's user
//! where that directory is shared, a local user where it is not kept
//! private): a link planted at its name, so that warren's write lands on a
//! file of root's; and a file of the attacker's own, in warren's format and
//! for the pool's shape, claiming children of 64 KB, so that the next start
//! runs more children than memory holds. Under each MPM.

mod common;

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use common::*;

const FAT_PHP: &str = "<?php $a = []; for ($i = 0; $i < 100000; $i++) { $a[] = \"x$i\"; } echo count($a);";
const CONF: &str = "MemoryBudget 160M\n<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Location /server-status>\n    SetHandler server-status\n</Location>\n";

fn first_decision(s: &Server) -> String {
    let log = s.wait_log("error.log", "pm.max_children auto: ");
    auto_decisions(&log).into_iter().next().unwrap_or_else(|| panic!("no sizing decision in\n{log}")).1
}

fn planted_peaks_files_are_not_believed(mpm: &str) {
    let dir = TempDir::new(&format!("attack-peaks-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/fat.php", FAT_PHP);
    let peaks = dir.0.join("warren.pid.peaks");
    let precious = dir.write("precious", "root's own\n");
    std::os::unix::fs::symlink(&precious, &peaks).unwrap();
    let mut s = Server::start_in(dir, mpm, CONF);
    let line = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB"), "{line}");
    assert!(s.read_log("error.log").contains("warren.pid.peaks: the pools' remembered peaks not used:"), "{}", s.read_log("error.log"));
    // Learned, and written: over the link, not through it.
    let load = start_load_on(s.port, 3, "/fat.php", |b| b.ends_with(b"100000"));
    wait_for("a measured decision", Duration::from_secs(60), || s.read_log("error.log").contains("(measured:"));
    wait_for("the peaks written", Duration::from_secs(30), || std::fs::symlink_metadata(&peaks).is_ok_and(|m| m.file_type().is_file()));
    let (_, failures) = load.finish();
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root's own\n", "the link's target is untouched");
    s.stop();

    // The attacker's own file, warren's format and the pool's shape, children of 64 KB.
    let learned = std::fs::read_to_string(&peaks).unwrap();
    let forged: String = learned
        .lines()
        .map(|l| match l.strip_prefix("pool www ") {
            Some(rest) => {
                let fields: Vec<&str> = rest.split(' ').collect();
                format!("pool www {} 65536 {}\n", fields[0], fields[2])
            }
            None => format!("{l}\n"),
        })
        .collect();
    assert!(forged.contains(" 65536 "), "{learned}");
    std::fs::remove_file(&peaks).unwrap();
    std::fs::write(&peaks, &forged).unwrap();
    std::os::unix::fs::chown(&peaks, Some(nobody()), None).unwrap();
    std::fs::set_permissions(&peaks, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    assert_eq!(std::fs::metadata(&peaks).unwrap().uid(), nobody());
    let dir = std::mem::replace(&mut s.dir, TempDir(std::path::PathBuf::new()));
    drop(s);
    let _ = std::fs::remove_file(dir.0.join("error.log"));
    let mut s = Server::start_in(dir, mpm, CONF);
    let line = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB") && !line.contains("remembered"), "{line}");
    let log = s.read_log("error.log");
    assert!(log.contains("remembered peaks not used: not a file of warren's user"), "{log}");
    let st = status_auto(&s);
    assert_eq!(st.get("PoolMemoryRememberedPeak-www").map(String::as_str), Some("0"), "{st:?}");
    s.stop();

    // warren's own file with a child peak of 0, as an idle ondemand pool's
    // empty window once wrote it: children counted at nothing (1 MB each)
    // for the first ten minutes. No child measures 0: not believed.
    let zero: String = forged.replace(" 65536 ", " 0 ");
    std::fs::remove_file(&peaks).unwrap();
    std::fs::write(&peaks, &zero).unwrap();
    std::fs::set_permissions(&peaks, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let dir = std::mem::replace(&mut s.dir, TempDir(std::path::PathBuf::new()));
    drop(s);
    let _ = std::fs::remove_file(dir.0.join("error.log"));
    let s = Server::start_in(dir, mpm, CONF);
    let line = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB") && !line.contains("remembered"), "{line}");
    assert!(s.read_log("error.log").contains("remembered peaks not used: not warren's format at line"), "{}", s.read_log("error.log"));
}

/// A second name for a private file of warren's user (a hard link, which
/// fs.protected_hardlinks = 0 lets anyone make to a file they cannot
/// read): not read, so its lines are not quoted in the error log as "not
/// warren's format".
fn a_hard_link_at_the_peaks_name_is_not_read(mpm: &str) {
    let dir = TempDir::new(&format!("attack-peaks-link-{mpm}"));
    standard_site(&dir);
    let secret = dir.write("secret", "root_only_secret_42\n");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::hard_link(&secret, dir.0.join("warren.pid.peaks")).unwrap();
    let s = Server::start_in(dir, mpm, CONF);
    let line = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB"), "{line}");
    let log = s.read_log("error.log");
    assert!(log.contains("remembered peaks not used: not a file of warren's user"), "{log}");
    assert!(!log.contains("root_only_secret_42"), "the linked file's line is in the error log:\n{log}");
}

each_mpm!(planted_peaks_files_are_not_believed, a_hard_link_at_the_peaks_name_is_not_read);
