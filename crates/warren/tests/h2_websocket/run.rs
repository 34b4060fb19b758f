//! Runs the RFC 8441 tests' client (client.py beside this file) for
//! h2_websocket.rs and attacks_h2ws.rs.

use std::path::PathBuf;
use std::process::Command;

use super::common::Server;

/// client.py's command line for `case` against `s`.
pub fn command(s: &Server, tls: bool, case: &str, path: &str) -> Command {
    let python = std::env::var_os("WARREN_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/opt/warren-test-venv/bin/python"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/h2_websocket/client.py");
    let mut cmd = Command::new(&python);
    cmd.arg(script).args(["--port", &s.port.to_string(), "--path", path]);
    cmd.arg("--log").arg(s.dir.0.join("error.log"));
    if tls {
        cmd.arg("--tls");
    }
    cmd.arg(case);
    cmd
}

/// Runs one case of client.py; fails with its output and the error log.
pub fn run_case(s: &Server, tls: bool, case: &str, path: &str) -> String {
    // Every wait of the client's is bounded (--timeout): it returns.
    let out = command(s, tls, case, path).output().unwrap_or_else(|e| panic!("client.py: {e} (run ./test.sh, which installs h2)"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "client.py {case} {path}: exit {:?}\n{stdout}\n{}\nerror log:\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr), s.read_log("error.log"));
    stdout
}

