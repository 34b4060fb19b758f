//! HTTP/2 conformance (RFC 9113, HPACK RFC 7541) under each MPM: the suite
//! in tests/h2/conformance.py (Python, with the h2, hpack and hyperframe
//! packages; README.md there says what it checks) run against warren with
//! `Protocols h2 h2c http/1.1`, over cleartext with prior knowledge and
//! over TLS with ALPN h2. Every case must PASS or SKIP; WARN (a SHOULD the
//! server does not meet) is printed but does not fail the test.
//!
//! The Python comes from WARREN_TEST_PYTHON, else /opt/warren-test-venv
//! (test.sh makes that virtualenv and installs the packages when missing).

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Command;

each_mpm!(h2c_prior_knowledge, h2_over_tls);

/// HTTP/2 on (with RFC 8441's extended CONNECT announced, where the MPM
/// carries it), and a php-cgi pool for the suite's POST and cookie paths
/// (run as nobody: warren refuses a pool that would run as root).
const CONF: &str = "Protocols h2 h2c http/1.1\nH2WebSockets on\n<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 2\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n";

fn python() -> PathBuf {
    let p = std::env::var_os("WARREN_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/opt/warren-test-venv/bin/python"));
    let ok = Command::new(&p).args(["-c", "import h2, hpack, hyperframe"]).output().map(|o| o.status.success()).unwrap_or(false);
    assert!(ok, "{} cannot import h2, hpack and hyperframe: run ./test.sh, which makes /opt/warren-test-venv, or set WARREN_TEST_PYTHON", p.display());
    p
}

/// The suite's files: index.html (the --path), a 100 KB file for the
/// flow-control cases (more than the 65535 bytes of a first window), a
/// script that reads a POST's body (--post-path: the content-length checks
/// then see the body read, not refused unread) and one that answers with
/// the Cookie the application got (--cookie-path: §8.2.3's joining).
fn site(dir: &TempDir) {
    standard_site(dir);
    dir.write("htdocs/post.php", "<?php echo strlen(file_get_contents('php://input')), \" bytes\\n\";");
    dir.write("htdocs/cookie.php", "<?php echo $_SERVER['HTTP_COOKIE'] ?? '';");
    dir.write("htdocs/100k.bin", (0..102_400u32).map(|i| (i * 13 % 251) as u8).collect::<Vec<u8>>());
}

/// Runs conformance.py against 127.0.0.1:`port` and fails with its report
/// (and warren's error log) unless every case passed or was skipped.
fn run_suite(s: &Server, port: u16, tls: bool) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/h2/conformance.py");
    let mut cmd = Command::new(python());
    cmd.arg(script).args(["--host", "127.0.0.1", "--port", &port.to_string(), "--path", "/index.html", "--big-path", "/100k.bin"]);
    cmd.args(["--post-path", "/post.php", "--cookie-path", "/cookie.php"]);
    // Generous: six warrens may run the suite at once on two cores.
    cmd.args(["--timeout", "10", "--authority", &format!("localhost:{port}")]);
    if tls {
        cmd.arg("--tls");
    }
    // The suite bounds every case (and itself) in time; it returns.
    let out = cmd.output().expect("run conformance.py");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "conformance.py against warren ({}): exit {:?}\n{report}\n{}\nerror log:\n{}",
        if tls { "TLS, ALPN h2" } else { "h2c, prior knowledge" },
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        s.read_log("error.log")
    );
    // Echoed for the test's output (cargo test --nocapture): the WARNs.
    for line in report.lines().filter(|l| l.starts_with("WARN") || l.contains("passed,")) {
        println!("{line}");
    }
}

fn h2c_prior_knowledge(mpm: &str) {
    let dir = TempDir::new(&format!("h2c-{mpm}"));
    site(&dir);
    let s = Server::start_in(dir, mpm, CONF);
    run_suite(&s, s.port, false);
}

fn h2_over_tls(mpm: &str) {
    let dir = TempDir::new(&format!("h2tls-{mpm}"));
    site(&dir);
    // The main server on TLS, with the test CA's certificate for localhost.
    let tls = common::tls::Certs::make(&dir.0).directives("localhost");
    let s = Server::start_in(dir, mpm, &format!("{tls}{CONF}"));
    run_suite(&s, s.port, true);
}
