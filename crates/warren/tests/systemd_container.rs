//! warren's Debian package under a real systemd: packaging/test-systemd.sh
//! boots systemd as PID 1 of a container (`systemd-nspawn -b`, a network of
//! its own) in a clean Debian root, installs the .deb of this build with
//! apt, and under each MPM in turn (one boot serves the three: booting is
//! most of the time) times `systemctl start` until the default page and PHP
//! answer on port 80, runs `systemctl reload` twice under `wrk -c50`, and
//! stops; then, with the package's warren.socket, `systemctl restart` under
//! `wrk -c50`. Issue 37's targets are asserted here from the figures it
//! prints: serving within 2 s of the start, 0 failed requests over the
//! reloads, and none over the socket-activated restart.
//!
//! About 75 s on two loaded cores (the root is unpacked from a tarball in
//! /var/cache/warren-test, made by the first run with debootstrap and apt);
//! bounded at 300 s. The script exits 2 only when the machine cannot run it
//! at all (not root; no network for the first debootstrap): then this test
//! says so on standard error, loudly, and passes.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const BOUND: Duration = Duration::from_secs(300);

#[test]
fn the_package_under_systemd_starts_within_2s_and_reloads_under_load_without_a_failure() {
    let began = Instant::now();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = Path::new(BIN).parent().and_then(Path::parent).expect("BIN is TARGET/debug/warren");
    let out_dir = TempDir::new("systemd-deb");
    let mut child = Command::new(repo.join("packaging/test-systemd.sh"))
        .args(["--dev", "--no-build"])
        .env("CARGO_TARGET_DIR", target)
        .env("WARREN_DEB_OUT", &out_dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("packaging/test-systemd.sh");
    // Read both pipes while it runs (apt's output could fill one).
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let stdout = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > BOUND {
            // The script's own cleanup (SIGTERM) shuts the container down.
            unsafe_kill(child.id(), libc::SIGTERM);
            let _ = child.wait();
            panic!("packaging/test-systemd.sh ran over {BOUND:?}:\n{}", stderr.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    if status.code() == Some(2) {
        eprintln!("\n*** SKIPPED: this machine cannot run packaging/test-systemd.sh (a container with systemd as PID 1):\n{stderr}\n***\n");
        return;
    }
    assert!(status.success(), "packaging/test-systemd.sh failed ({status}):\n{stderr}");
    for mpm in ["event", "worker", "prefork"] {
        let line = |what: &str| stdout.lines().find(|l| l.starts_with(&format!("{mpm} {what}"))).unwrap_or_else(|| panic!("no '{mpm} {what}' line in:\n{stdout}")).to_string();
        let start = line("start-to-serving-ms");
        let ms: u64 = start.split(' ').nth(2).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{start}"));
        assert!(ms <= 2000, "{mpm}: the default page and PHP answered {ms} ms after systemctl start (target: 2000)");
        let reload = line("reload-under-wrk");
        assert!(reload.contains("socket errors: none, non-2xx: 0"), "{mpm}: {reload}");
    }
    let restart = stdout.lines().find(|l| l.starts_with("socket-restart-under-wrk")).unwrap_or_else(|| panic!("no socket-restart-under-wrk line in:\n{stdout}"));
    assert!(restart.contains("socket errors: none, non-2xx: 0"), "with warren.socket, over systemctl restart: {restart}");
    eprintln!("{stdout}(packaging/test-systemd.sh: {:?})", began.elapsed());
}
