//! `pm.max_children auto` across a restart, under each MPM: a pool that
//! learned its children's peak under load writes it beside the PidFile
//! (mode 0600), and the next start counts its children from it at once
//! instead of the 32 MB prior, and the pool's fixed part from it until it
//! is measured, saying so in the log and on server-status;
//! a remembered peak of a pool with other PHP settings, or a file that is
//! not warren's format, is not used and the log says why.

mod common;

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use common::*;

/// A page that makes its child grow to a working size: a few MB of arrays.
const FAT_PHP: &str = "<?php $a = []; for ($i = 0; $i < 100000; $i++) { $a[] = \"x$i\"; } echo count($a);";

fn pool_conf(php_settings: &str) -> String {
    format!("MemoryBudget 160M\n<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children auto\n{php_settings}</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Location /server-status>\n    SetHandler server-status\n</Location>\n")
}

/// The first sizing decision of a server's log.
fn first_decision(s: &Server) -> (u32, String) {
    let log = s.wait_log("error.log", "pm.max_children auto: ");
    auto_decisions(&log).into_iter().next().unwrap_or_else(|| panic!("no sizing decision in\n{log}"))
}

/// Stops `s` and starts warren again in its directory (the peaks file
/// kept, a fresh error log) with `conf`.
fn restart(mut s: Server, mpm: &str, conf: &str) -> Server {
    s.stop();
    let dir = std::mem::replace(&mut s.dir, TempDir(std::path::PathBuf::new()));
    drop(s);
    let _ = std::fs::remove_file(dir.0.join("error.log"));
    Server::start_in(dir, mpm, conf)
}

fn learned_peaks_are_remembered_across_a_restart(mpm: &str) {
    let dir = TempDir::new(&format!("remembered-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/fat.php", FAT_PHP);
    let peaks_file = dir.0.join("warren.pid.peaks");
    let s = Server::start_in(dir, mpm, &pool_conf(""));
    let (prior, line) = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB"), "no file yet, the prior: {line}");
    let load = start_load_on(s.port, 3, "/fat.php", |b| b.ends_with(b"100000"));
    wait_for("a measured decision", Duration::from_secs(60), || s.read_log("error.log").contains("(measured:"));
    // Written within seconds of being learned.
    wait_for("the peaks file", Duration::from_secs(30), || std::fs::read_to_string(&peaks_file).is_ok_and(|t| t.lines().any(|l| l.starts_with("pool www "))));
    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "{ok} served, failures: {failures:?}");
    let meta = std::fs::metadata(&peaks_file).unwrap();
    assert_eq!((meta.mode() & 0o777, meta.uid()), (0o600, unsafe { libc::geteuid() }), "the file is warren's user's and private");
    let written = std::fs::read_to_string(&peaks_file).unwrap();
    let learned: u64 = written.lines().find_map(|l| l.strip_prefix("pool www ")?.split(' ').nth(1)?.parse().ok()).unwrap();
    assert!(learned > 1 << 20 && learned < 32 << 20, "a php-cgi child's peak, smaller than the prior: {written}");

    // Started again: the first count is made from the remembered peak, larger than the prior's.
    let s = restart(s, mpm, &pool_conf(""));
    let (count, line) = first_decision(&s);
    assert!(line.contains("(remembered: peak ") && line.contains("learned by the pool's last run"), "{line}");
    assert!(count > prior, "counted from the remembered peak, more children than from the 32 MB prior ({prior}): {line}");
    let st = status_auto(&s);
    let shown: u64 = st.get("PoolMemoryRememberedPeak-www").and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(shown >= learned, "server-status shows the remembered peak ({learned}): {st:?}");
    assert!(s.get("/fat.php").text().ends_with("100000"), "the pool serves");

    // The part the pool costs whatever its size is remembered beside the
    // peak, and counted from the start (a php-fpm master and its opcache
    // are measured only once the master runs): made large by hand here.
    let mut s = s;
    s.stop();
    let www = written.lines().find(|l| l.starts_with("pool www ")).unwrap();
    let words: Vec<&str> = www.split(' ').collect();
    assert_eq!(words.len(), 6, "pool, name, shape, peak, when, fixed part: {written}");
    std::fs::write(&peaks_file, written.replace(www, &format!("pool www {} {} {} {}", words[2], words[3], words[4], 100u64 << 20))).unwrap();
    let s = restart(s, mpm, &pool_conf(""));
    let (fewer, line) = first_decision(&s);
    assert!(line.contains("(remembered: peak ") && line.contains(" and 100.0 MB for the pool whatever its size"), "{line}");
    assert!(fewer < count, "100 MB of the 160 MB budget counted before the pool's own part is measured: {fewer} children, {count} without: {line}");

    // A pool with other PHP settings does not use it.
    let s = restart(s, mpm, &pool_conf("    php_value[memory_limit] 96M\n"));
    let (_, line) = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB"), "{line}");
    let log = s.read_log("error.log");
    assert!(log.contains("[pool www] the child peak remembered in ") && log.contains("another command, user or PHP settings: not used"), "{log}");

    // Nor does it use a file that is not warren's format.
    let mut s = s;
    s.stop();
    std::fs::write(&peaks_file, "pool www oops\n").unwrap();
    let s = restart(s, mpm, &pool_conf(""));
    let (_, line) = first_decision(&s);
    assert!(line.contains("taken as at least 32.0 MB"), "{line}");
    let log = s.read_log("error.log");
    assert!(log.contains("the pools' remembered peaks not used: not warren's format at line 1"), "{log}");
}

each_mpm!(learned_peaks_are_remembered_across_a_restart);
