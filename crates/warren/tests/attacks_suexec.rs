//! Attacks on who a CGI program runs as: alice, a tenant with a UserDir
//! (`/~alice/`) and a site of her own, tries to run a program of bob's as
//! bob by hardlinking it into her tree (what fs.protected_hardlinks=0
//! allows any user; here root makes the link), to run a program from a
//! directory her group may write, and a setuid program. suexec refuses
//! each (500, a log line); warren must too, under each MPM. The programs
//! print the uid they run as, so a test sees who would have run it.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::*;

const ID: &str = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\necho \"RAN as $(id -u)\"\n";

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// `uid` and its primary group.
fn account(name: &str) -> (u32, u32) {
    let uid = regular_user(name);
    (uid, nix::unistd::User::from_uid(uid.into()).unwrap().unwrap().gid.as_raw())
}

/// A program at `file` (its directory made), both owned by `owner`, with `mode`.
fn owned_program(file: &Path, owner: (u32, u32), mode: u32) {
    let dir = file.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(file, ID).unwrap();
    for (p, m) in [(dir, 0o755), (file, mode)] {
        std::os::unix::fs::chown(p, Some(owner.0), Some(owner.1)).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }
}

fn link_fresh(from: &Path, to: &Path) {
    let _ = std::fs::remove_file(to);
    std::fs::hard_link(from, to).unwrap();
}

fn refused(s: &Server, path: &str, log_needle: &str) {
    let r = s.get(path);
    assert_eq!(r.status, 500, "{path}: {}", r.text());
    assert!(!r.text().contains("RAN"), "{path}: {}", r.text());
    let log = s.wait_log("error.log", log_needle);
    assert!(log.contains(log_needle), "{path}: {log}");
}

/// bob's program hardlinked into alice's UserDir and into her site's tree
/// does not run (as bob or anyone); a group-writable directory and a
/// setuid program of alice's are refused; her own program runs as her.
fn foreign_open_and_setuid_programs_do_not_run(mpm: &str) {
    if !is_root() {
        return;
    }
    let alice = account("warren-sec-alice");
    let bob = account("warren-sec-bob");
    let homes = Path::new(USER_HOMES);
    let (mine, theirs) = (homes.join(format!("warren-sec-alice/public_html/cgi-{mpm}")), homes.join(format!("warren-sec-bob/public_html/cgi-{mpm}")));
    owned_program(&mine.join("mine.cgi"), alice, 0o755);
    owned_program(&theirs.join("bob.cgi"), bob, 0o755);
    link_fresh(&theirs.join("bob.cgi"), &mine.join("stolen.cgi"));
    owned_program(&mine.join("setuid.cgi"), alice, 0o4755);
    owned_program(&mine.join("open/in-open.cgi"), alice, 0o755);
    std::fs::set_permissions(mine.join("open"), std::fs::Permissions::from_mode(0o775)).unwrap();
    let dir = user_dir_site(&format!("attacks-suexec-{mpm}"));
    // alice's site: a DocumentRoot directory of hers, with bob's program linked in.
    let site = dir.0.join("htdocs/alice");
    owned_program(&site.join("mine.cgi"), alice, 0o755);
    link_fresh(&theirs.join("bob.cgi"), &site.join("stolen.cgi"));
    let conf = "Include userdir.conf\n<Directory ~ \"(/public_html/cgi-|/htdocs/alice)\">\n  Options +ExecCGI\n  AddHandler cgi-script .cgi\n</Directory>\n";
    let s = Server::start_in(dir, mpm, conf);
    let base = format!("/~warren-sec-alice/cgi-{mpm}");
    let r = s.get(&format!("{base}/mine.cgi"));
    assert_eq!((r.status, r.text().trim().to_string()), (200, format!("RAN as {}", alice.0)), "{}", s.read_log("error.log"));
    refused(&s, &format!("{base}/stolen.cgi"), &format!("target uid/gid ({}/{}) mismatch with directory ({}/{}) or program ({}/{})", alice.0, alice.1, alice.0, alice.1, bob.0, bob.1));
    refused(&s, &format!("{base}/open/in-open.cgi"), &format!("cgi-{mpm}/open is writable by group or others"));
    refused(&s, &format!("{base}/setuid.cgi"), &format!("cgi-{mpm}/setuid.cgi is setuid or setgid"));
    // Variants of the URL reach the same file and the same refusal.
    for variant in [format!("/~warren-sec-alice/cgi-{mpm}/%73tolen.cgi"), format!("/~warren-sec-alice/cgi-{mpm}/./open/../stolen.cgi"), format!("/%7Ewarren-sec-alice/cgi-{mpm}/stolen.cgi")] {
        let r = s.get(&variant);
        assert!(!r.text().contains("RAN"), "{variant}: {} {}", r.status, r.text());
    }
    // In her site's tree (not a UserDir), the file's owner is not the one
    // of the directory it was put in.
    let r = s.get("/alice/mine.cgi");
    assert_eq!((r.status, r.text().trim().to_string()), (200, format!("RAN as {}", alice.0)), "{}", s.read_log("error.log"));
    refused(&s, "/alice/stolen.cgi", &format!("stolen.cgi (uid {}) is not in a directory of its owner's", bob.0));
}

each_mpm!(foreign_open_and_setuid_programs_do_not_run);
