//! Attacks on logs. The attacker is a site's owner with an `.htaccess`
//! (AllowOverride All) who wants a program of theirs run by the server
//! through a piped log, or the error log sent elsewhere; and an anonymous
//! client who wants a line of their own making in the access log or in
//! syslog (a forged line, or one split in two). Under each MPM.

mod common;

use std::time::Duration;

use common::*;

fn log_directives_in_htaccess_run_nothing(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let marker = dir.0.join("ran");
    let dirs = [
        format!("CustomLog \"|/usr/bin/touch {}\" common", marker.display()),
        format!("CustomLog \"||/usr/bin/touch {}\" common", marker.display()),
        format!("TransferLog \"|$/usr/bin/touch {}\"", marker.display()),
        format!("ErrorLog \"|/usr/bin/touch {}\"", marker.display()),
        "ErrorLog syslog:auth".to_string(),
        "SyslogSocket /run/systemd/journal/dev-log".to_string(),
        "ErrorLogFormat \"%M\"".to_string(),
        "BufferedLogs Off".to_string(),
    ];
    for (i, d) in dirs.iter().enumerate() {
        dir.write(&format!("htdocs/s{i}/.htaccess"), format!("{d}\n"));
        dir.write(&format!("htdocs/s{i}/a.txt"), "x");
    }
    let s = Server::start_in(dir, mpm, "<Directory />\nAllowOverride All\n</Directory>");
    for (i, d) in dirs.iter().enumerate() {
        assert_eq!(s.get(&format!("/s{i}/a.txt")).status, 500, "{d}");
    }
    // The refusals are logged (the file is still the error log); nothing ran.
    s.wait_log("error.log", "s7/.htaccess");
    assert!(!marker.exists(), "a program named in an .htaccess was run");
}

fn a_client_cannot_forge_lines(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let (socket_path, daemon) = syslog_daemon(&dir);
    let s = Server::start_in(dir, mpm, &format!("ErrorLog syslog:local3\nSyslogSocket {}\nLogFormat \"%r|%{{User-Agent}}i\" req\nCustomLog req.log req", socket_path.display()));
    // A header value, an encoded newline in the target and a bare CR: each
    // could end a line early if written as received.
    let _ = s.raw(b"GET /a%0a<14>forged HTTP/1.1\r\nHost: localhost\r\nUser-Agent: x\rforged\r\nConnection: close\r\n\r\n");
    let _ = s.raw(b"GET /b HTTP/1.1\r\nHost: localhost\r\nUser-Agent: y\x0bforged\r\nConnection: close\r\n\r\n");
    // Each request's line, in whichever order the threads that served them
    // flush their buffers.
    s.wait_log("req.log", "GET /b");
    let log = s.wait_log("req.log", "GET /a");
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort_unstable();
    // One line per request: the newline stays encoded, the headers holding a CR or a VT are not logged as sent.
    assert_eq!(lines, ["GET /a%0a<14>forged HTTP/1.1|-", "GET /b HTTP/1.1|-"], "{log:?}");
    // Every datagram is one message of warren's, whatever the client sent.
    let mut buf = [0u8; 4096];
    while let Ok(n) = { daemon.set_read_timeout(Some(Duration::from_millis(500))).unwrap(); daemon.recv(&mut buf) } {
        let d = String::from_utf8_lossy(&buf[..n]);
        assert!(d.starts_with('<') && d.contains(" warren[") && !d.contains('\n'), "{d:?}");
    }
}

each_mpm!(log_directives_in_htaccess_run_nothing, a_client_cannot_forge_lines);
