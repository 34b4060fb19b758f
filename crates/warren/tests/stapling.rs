//! MDStapling against a real OCSP responder: a CA of the test's own made
//! with `openssl`, whose certificate names `openssl ocsp` (run by the test
//! on a loopback port, answering from an index file) in its Authority
//! Information Access. warren's ACME helper fetches and stores the
//! response; the staple is checked with `openssl s_client -status`.
//! Under each MPM: a responder down at start never stops serving (nothing
//! stapled, the failure logged and retried), the response stapled once it
//! answers and kept through a graceful restart while the responder is
//! down again; a revoked certificate is logged and its status stapled.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::tls::s_client;
use common::{terminate, Server};

/// What `s_client -status` says of the staple (the OCSP part of its output).
fn staple(https: u16) -> String {
    s_client(https, &["-servername", "a.test", "-status"], "")
}

/// Polls until the staple's output contains `needle` (at most `within`).
fn wait_staple(s: &Server, https: u16, needle: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let out = staple(https);
        if out.contains(needle) {
            return out;
        }
        assert!(Instant::now() < deadline, "no {needle:?} in s_client -status within {within:?}:\n{out}\nerror.log:\n{}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777).unwrap_or(0)
}

fn responder_down_then_up_then_down(mpm: &str) {
    let (s, ca, https) = common::ocsp::stapling_server(mpm, "stapling-updown");
    // Down at start: served, nothing stapled, said and retried.
    let out = staple(https);
    assert!(out.contains("OCSP response: no response sent") && out.contains("CN = a.test"), "{out}");
    let log = s.wait_log("error.log", "OCSP failed (1 in a row)");
    let line = log.lines().find(|l| l.contains("OCSP failed (1 in a row)")).unwrap();
    assert!(line.contains(&format!("http://127.0.0.1:{}/", ca.port)) && line.contains("nothing stapled meanwhile; next try in 5 s"), "{line}");
    // Up: the next try stores the response and a graceful restart staples it.
    let responder = ca.responder();
    let out = wait_staple(&s, https, "Cert Status: good", Duration::from_secs(30));
    assert!(out.contains("OCSP Response Status: successful") && out.contains("Next Update:"), "{out}");
    let log = s.wait_log("error.log", "OCSP responses changed in the store: graceful restart");
    assert!(log.contains("OCSP response from http://127.0.0.1:"), "{log}");
    let md = s.dir.0.join("md/ocsp");
    let stored: Vec<PathBuf> = std::fs::read_dir(&md).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!((mode(&md), mode(&stored[0])), (0o700, 0o600));
    // Down again, and a graceful restart: the response kept is stapled
    // still (it is good for 10 minutes), by the new children.
    terminate(responder, Duration::from_secs(5));
    // The serving children (the ACME helper, a child too, stays: its root
    // relay and, when it runs as root, itself).
    let helpers: Vec<u32> = log.split("ACME helper (pid ").skip(1).filter_map(|r| r.split(')').next()?.parse().ok()).collect();
    assert!(!helpers.is_empty(), "{log}");
    let serving = || s.children().into_iter().filter(|c| !helpers.contains(c)).collect::<Vec<_>>();
    let before = serving();
    common::unsafe_kill(s.pid(), 1);
    common::settle(|| serving().iter().all(|c| !before.contains(c)) && !serving().is_empty());
    assert!(serving().iter().all(|c| !before.contains(c)), "old children {before:?} still there: {:?}", serving());
    let out = staple(https);
    assert!(out.contains("Cert Status: good"), "{out}");
}

fn a_revoked_certificate_is_said(mpm: &str) {
    let (s, ca, https) = common::ocsp::stapling_server(mpm, "stapling-revoked");
    ca.set_status(true);
    let responder = ca.responder();
    let out = wait_staple(&s, https, "Cert Status: revoked", Duration::from_secs(30));
    assert!(out.contains("Revocation Reason: keyCompromise"), "{out}");
    let log = s.wait_log("error.log", "is REVOKED according to");
    let line = log.lines().find(|l| l.contains("is REVOKED")).unwrap();
    assert!(line.contains("[error]") || line.contains(":error]"), "{line}");
    assert!(line.contains("a.pem") && line.contains("KeyCompromise"), "{line}");
    terminate(responder, Duration::from_secs(5));
}

each_mpm!(responder_down_then_up_then_down, a_revoked_certificate_is_said);
