//! Logs as Apache writes them beyond files: piped logs (a program the
//! parent starts as User, restarted when it dies), `ErrorLog syslog` to a
//! datagram socket the test binds, and BufferedLogs across a graceful
//! restart and a stop. Each under every MPM.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A script that records who runs it and appends its input to `out`/log.
fn appending_program(dir: &TempDir) -> (PathBuf, PathBuf) {
    let out = dir.0.join("piped");
    std::fs::create_dir_all(&out).unwrap();
    // The program runs as the server's User (nobody, when the tests run as root).
    std::os::unix::fs::chown(&out, Some(nobody()), None).unwrap();
    let script = dir.write(
        "append.sh",
        format!("#!/bin/sh\nid -u > {0}/uid\necho $$ >> {0}/pids\nexec cat >> {0}/log\n", out.display()),
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (script, out)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_string).collect()
}

/// The logged paths in request order (each thread and child writes its
/// own lines in batches, so the file holds them in another).
fn in_request_order(mut paths: Vec<String>) -> Vec<String> {
    paths.sort_by_key(|p| p[2..].parse::<u32>().unwrap_or(u32::MAX));
    paths
}

/// Polls (up to 20 s) until `path` has `n` lines.
fn wait_lines(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let l = lines(path);
        if l.len() >= n || Instant::now() > deadline {
            return l;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn get_all(s: &Server, range: std::ops::Range<usize>) {
    for i in range {
        assert_eq!(s.get(&format!("/n{i}")).status, 404);
    }
}

fn expected(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("/n{i}")).collect()
}

fn piped_access_log_gets_every_line_and_outlives_its_program(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let (script, out) = appending_program(&dir);
    let s = Server::start_in(dir, mpm, &format!("CustomLog \"||{}\" \"%U\"", script.display()));
    let pids = wait_lines(&out.join("pids"), 1);
    let first: u32 = pids[0].parse().unwrap();
    // Run as User, in a session of its own, holding nothing of warren's.
    assert_eq!(std::fs::read_to_string(out.join("uid")).unwrap().trim(), nobody().to_string());
    let stat = std::fs::read_to_string(format!("/proc/{first}/stat")).unwrap();
    let session: u32 = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(session, first, "the program leads its own session");
    let mut fds: Vec<String> = std::fs::read_dir(format!("/proc/{first}/fd")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    fds.sort();
    assert_eq!(fds, ["0", "1", "2"], "only standard input, output and error");

    get_all(&s, 0..100);
    assert_eq!(in_request_order(wait_lines(&out.join("log"), 100)), expected(0..100));
    // No server child, whose code a tenant may run, can read the pipe
    // (others' log lines): the descriptors it holds on it only write.
    let pipe = std::fs::read_link(format!("/proc/{first}/fd/0")).unwrap();
    for child in s.children().into_iter().filter(|&c| c != first) {
        for fd in std::fs::read_dir(format!("/proc/{child}/fd")).unwrap().flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l == pipe) {
                let info = std::fs::read_to_string(format!("/proc/{child}/fdinfo/{}", fd.file_name().to_string_lossy())).unwrap();
                let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map(|f| u32::from_str_radix(f.trim(), 8).unwrap()).unwrap();
                assert_ne!(flags & libc::O_ACCMODE as u32, libc::O_RDONLY as u32, "child {child} holds the pipe's reading end as fd {:?}", fd.file_name());
            }
        }
    }

    // Killed, the program is started again; what is logged meanwhile waits in the pipe.
    unsafe_kill(first, 9);
    s.wait_log("error.log", "the piped-log program exited (signal SIGKILL); restarting it");
    get_all(&s, 100..200);
    let pids = wait_lines(&out.join("pids"), 2);
    assert_eq!(pids.len(), 2, "restarted once");
    assert_ne!(pids[1], pids[0]);
    assert_eq!(in_request_order(wait_lines(&out.join("log"), 200)), expected(0..200));
}

fn buffered_logs_lose_nothing_across_graceful_and_stop(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let (script, out) = appending_program(&dir);
    let mut s = Server::start_in(dir, mpm, &format!("BufferedLogs On\nLogFormat \"%U\" path\nCustomLog \"|{}\" path\nCustomLog paths.log path", script.display()));
    let parent = s.pid();
    get_all(&s, 0..150);
    unsafe_kill(parent, 1);
    s.wait_log("error.log", "graceful restart");
    get_all(&s, 150..300);
    assert_eq!(s.stop(), Some(0));
    assert_eq!(in_request_order(lines(&s.dir.0.join("paths.log"))), expected(0..300), "every line in the file");
    // The program reads what is left in the pipe once warren is gone.
    assert_eq!(in_request_order(wait_lines(&out.join("log"), 300)), expected(0..300), "every line through the pipe");
    // The graceful restart kept the program.
    assert_eq!(lines(&out.join("pids")).len(), 1);
}

fn error_log_to_syslog(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let (socket_path, daemon) = syslog_daemon(&dir);
    let s = Server::start_in(dir, mpm, &format!("ErrorLog syslog:local3\nSyslogSocket {}", socket_path.display()));
    // A request the children log an error for, naming the client.
    let _ = s.raw(b"GET /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n");
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let found = loop {
        let n = daemon.recv(&mut buf).expect("a datagram within 20 s");
        let d = String::from_utf8_lossy(&buf[..n]).into_owned();
        received.push(d.clone());
        if d.contains("[client 127.0.0.1:") {
            break d;
        }
    };
    // `<PRI>Mmm dd hh:mm:ss warren[pid]: ...`, PRI = facility (local3: 19) * 8 + severity.
    let priority = |d: &str| -> u32 { d[1..d.find('>').unwrap()].parse().unwrap() };
    assert!(received.iter().all(|d| d.starts_with('<') && priority(d) / 8 == 19 && d.contains(" warren[")), "{received:?}");
    assert!(priority(&found) % 8 <= 6, "{found}");
    // The parent's start notice (severity 5).
    assert!(received.iter().any(|d| priority(d) % 8 == 5), "{received:?}");
    assert!(s.read_log("error.log").is_empty(), "nothing in the file ErrorLog named before");
}

/// A piped-log program that exits at once stops the start, naming the
/// directive and its line.
fn a_program_that_exits_at_once_is_a_start_error(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let conf = dir.write(
        "warren.conf",
        format!("LoadModule mpm_{mpm}_module modules/mod_mpm_{mpm}.so\nListen 127.0.0.1:{}\nServerName localhost\nDocumentRoot htdocs\nUser nobody\nGroup nogroup\nCustomLog \"|exit 3\" common\n", free_port()),
    );
    let out = Command::new(BIN).arg("-f").arg(&conf).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:7: CustomLog |exit 3: the piped-log program exited at once (exit status 3)", conf.display())), "{err}");
}

/// logrotate's way: the file is renamed, `warren -k reopen-logs` (USR1)
/// makes a new one; every line is in one of the two, none twice.
fn reopening_after_rotation_loses_no_line(mpm: &str) {
    let mut s = Server::start(mpm, "LogFormat \"%U\" path\nCustomLog paths.log path");
    get_all(&s, 0..100);
    let log = s.dir.0.join("paths.log");
    let rotated = s.dir.0.join("paths.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    let reopen = Command::new(BIN).args(["-k", "reopen-logs", "-f"]).arg(&s.conf).output().unwrap();
    assert!(reopen.status.success(), "{}", String::from_utf8_lossy(&reopen.stderr));
    s.wait_log("error.log", "SIGUSR1 received");
    get_all(&s, 100..200);
    assert_eq!(s.stop(), Some(0));
    let new = lines(&log);
    assert!(!new.is_empty(), "the new file is written");
    let mut all = lines(&rotated);
    all.extend(new);
    assert_eq!(in_request_order(all), expected(0..200));
}

/// ErrorLogFormat: Apache's items, and a field without a value left out.
fn error_log_format_shapes_each_line(mpm: &str) {
    let s = Server::start(mpm, "ErrorLogFormat \"%{cu}t [%-m:%l] [pid %P] [client\\ %a] %M\"");
    let _ = s.raw(b"GET /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n");
    let log = s.wait_log("error.log", "[client 127.0.0.1:");
    let with_client = log.lines().find(|l| l.contains("[client 127.0.0.1:")).unwrap();
    let without = log.lines().find(|l| !l.contains("[client")).expect("a line of the parent's");
    for line in [with_client, without] {
        // `2026-11-27 17:50:25.123456 [core:notice] [pid 42] ...`
        let (date, rest) = line.split_at(26);
        assert!(date.as_bytes()[4] == b'-' && date.as_bytes()[10] == b' ' && date.as_bytes()[19] == b'.', "{line}");
        assert!(rest.starts_with(" [core:"), "{line}");
        assert!(rest.contains("] [pid "), "{line}");
    }
    assert!(!without.contains("[client"), "no empty client field: {without}");
}

/// `ErrorLog "||program"`: the parent's notices and the children's
/// errors naming a client both reach the program.
fn piped_error_log(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let (script, out) = appending_program(&dir);
    let s = Server::start_in(dir, mpm, &format!("ErrorLog \"||{}\"", script.display()));
    let _ = s.raw(b"GET /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n");
    let deadline = Instant::now() + Duration::from_secs(20);
    let log = loop {
        let log = std::fs::read_to_string(out.join("log")).unwrap_or_default();
        if log.contains("[client 127.0.0.1:") || Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(log.contains("[client 127.0.0.1:"), "{log}");
    assert!(log.lines().any(|l| l.contains("[notice]")), "{log}");
    assert!(s.read_log("error.log").is_empty());
}

/// A program that dies after each line is restarted later each time, with
/// a warning; serving goes on.
fn a_program_that_keeps_dying_is_restarted_with_backoff(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let s = Server::start_in(dir, mpm, "CustomLog \"|read line\" common");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0;
    while !s.read_log("error.log").contains("restarting it in 2 s") && Instant::now() < deadline {
        assert_eq!(s.get(&format!("/n{i}")).status, 404);
        i += 1;
    }
    let log = s.read_log("error.log");
    assert!(log.contains("CustomLog |read line: the piped-log program exited (exit status 0); restarting it in 1 s"), "{log}");
    assert!(log.contains("restarting it in 2 s"), "{log}");
    assert_eq!(s.get("/a.txt").status, 200);
}

/// A program that never reads: once its pipe is full, lines wait a second,
/// then are dropped and counted in the error log; serving goes on, and
/// the stop ends the program.
fn lines_a_stuck_program_cannot_take_are_counted_as_lost(mpm: &str) {
    let mut s = Server::start(mpm, "CustomLog \"||/bin/sleep 600\" \"%{X-Pad}i\"");
    let sleeper = children_of(s.pid()).into_iter().find(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")).expect("the program, a child of the parent");
    let pad = "p".repeat(4000);
    let request = format!("GET /a.txt HTTP/1.1\r\nHost: localhost\r\nX-Pad: {pad}\r\nConnection: close\r\n\r\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !s.read_log("error.log").contains("log lines lost") && Instant::now() < deadline {
        assert_eq!(status_of(&s.raw(request.as_bytes())), 200);
    }
    let log = s.read_log("error.log");
    assert!(log.contains("CustomLog ||/bin/sleep 600: ") && log.contains("log lines lost: the piped-log program has not read its pipe for 1 s"), "{log}");
    assert_eq!(s.get("/a.txt").status, 200);
    // At stop, a program that does not read to the end is sent SIGTERM (and reaped).
    assert_eq!(s.stop(), Some(0));
    assert!(!Path::new(&format!("/proc/{sleeper}")).exists(), "the program outlived warren");
}

/// Apache's own rotatelogs, as Debian users write it: every line in the
/// file it names by date.
fn rotatelogs_takes_every_line(mpm: &str) {
    let dir = TempDir::new(mpm);
    standard_site(&dir);
    let (_, out) = appending_program(&dir);
    let mut s = Server::start_in(dir, mpm, &format!("CustomLog \"|/usr/bin/rotatelogs {}/access.%Y%m%d 86400\" \"%U\"", out.display()));
    get_all(&s, 0..100);
    assert_eq!(s.stop(), Some(0));
    let rotated = || std::fs::read_dir(&out).unwrap().flatten().map(|e| e.path()).find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("access.")));
    settle(|| rotated().is_some_and(|p| lines(&p).len() >= 100));
    let file = rotated().expect("rotatelogs made its file");
    assert_eq!(in_request_order(lines(&file)), expected(0..100));
}

each_mpm!(
    rotatelogs_takes_every_line,
    piped_error_log,
    a_program_that_keeps_dying_is_restarted_with_backoff,
    lines_a_stuck_program_cannot_take_are_counted_as_lost,
    reopening_after_rotation_loses_no_line,
    error_log_format_shapes_each_line,
    piped_access_log_gets_every_line_and_outlives_its_program,
    buffered_logs_lose_nothing_across_graceful_and_stop,
    error_log_to_syslog,
    a_program_that_exits_at_once_is_a_start_error,
);
