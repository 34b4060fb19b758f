//! The command line (`-t`, `-k stop`, `serve`), config errors with file and
//! line, and the process model: children replaced when they die, TERM
//! finishing in-flight work, thousands of idle connections held cheaply,
//! MaxConnectionsPerChild.

mod common;
use common::*;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

each_mpm!(
    dead_child_is_replaced,
    term_stops_after_in_flight_request,
    k_stop_uses_pid_file,
    max_connections_per_child_retires_without_failing,
    listing_runs_on_worker_threads_concurrently,
);

#[test]
fn syntax_ok_and_errors_with_file_and_line() {
    let dir = TempDir::new("cli");
    dir.write("conf.d/extra.conf", "KeepAlive Maybe\n");
    // A User, as a warren started as root refuses to run its children as root.
    let good = dir.write("good.conf", "Listen 127.0.0.1:1\nDocumentRoot htdocs\nUser nobody\n<IfModule mpm_event_module>\nThreadsPerChild 10\n</IfModule>\n");
    let out = Command::new(BIN).args(["-t", "-f"]).arg(&good).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Syntax OK\n");

    let bad = dir.write("bad.conf", "Listen 127.0.0.1:1\nDocumentRoot htdocs\nFrobnicate on\nInclude conf.d/*.conf\n<Directory htdocs>\nOptions +Indexes Bogus\n</Directory>\nTimeout\n");
    let out = Command::new(BIN).args(["-t", "-f"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let bad_path = bad.display().to_string();
    let extra = dir.0.join("conf.d/extra.conf").display().to_string();
    assert!(err.contains(&format!("{bad_path}:3: unknown or unsupported directive 'Frobnicate'")), "{err}");
    assert!(err.contains(&format!("{extra}:1: KeepAlive must be On or Off")), "{err}");
    assert!(err.contains(&format!("{bad_path}:6: Illegal option Bogus")), "{err}");
    assert!(err.contains(&format!("{bad_path}:8: Timeout takes one argument")), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Syntax OK"));
}

/// RequestReadTimeout with mod_reqtimeout's syntax: a bad value is refused
/// with file and line; handshake= is accepted with a warning (no TLS).
#[test]
fn request_read_timeout_syntax() {
    let dir = TempDir::new("rrt");
    let base = "Listen 127.0.0.1:1\nDocumentRoot htdocs\nUser nobody\n";
    let good = dir.write("good.conf", format!("{base}RequestReadTimeout header=20-40,MinRate=500 body=20,MinRate=500\n"));
    let out = Command::new(BIN).args(["-t", "-f"]).arg(&good).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Syntax OK\n");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    let tls = dir.write("tls.conf", format!("{base}RequestReadTimeout handshake=5 header=0\n"));
    let out = Command::new(BIN).args(["-t", "-f"]).arg(&tls).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:4: RequestReadTimeout: handshake=5 is ignored", tls.display())), "{err}");

    for (bad, says) in [
        ("header=abc", "header=abc: 'abc' is not a whole number"),
        ("header=10-20", "MinRate must be set"),
        ("body=10,MinRate=0", "larger than 0"),
        ("header=40-20,MinRate=500", "larger than initial"),
        ("request=10", "unknown parameter"),
    ] {
        let conf = dir.write("bad.conf", format!("{base}RequestReadTimeout {bad}\n"));
        let out = Command::new(BIN).args(["-t", "-f"]).arg(&conf).output().unwrap();
        assert!(!out.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}:4: RequestReadTimeout: ", conf.display())) && err.contains(says), "{bad}: {err}");
    }
}

#[test]
fn bad_config_never_starts() {
    let dir = TempDir::new("badstart");
    let port = free_port();
    let conf = dir.write("w.conf", format!("Listen 127.0.0.1:{port}\nDocumentRoot htdocs\nNoSuchThing 1\n"));
    let out = Command::new(BIN).arg("-f").arg(&conf).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(":3: unknown or unsupported directive"));
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "nothing listens");
    // A missing DocumentRoot is an error too, with the directive's line.
    let conf = dir.write("w2.conf", format!("Listen 127.0.0.1:{port}\nDocumentRoot nowhere\n"));
    let out = Command::new(BIN).args(["-t", "-f"]).arg(&conf).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("w2.conf:2: DocumentRoot"));
}

#[test]
fn mpm_corrections_are_logged() {
    let s = Server::start("worker", "ThreadsPerChild 4\nMaxRequestWorkers 30");
    let log = s.wait_log("error.log", "MaxRequestWorkers of 30");
    assert!(log.contains("[warn]") && log.contains("is not an integer multiple of ThreadsPerChild of 4, decreasing to nearest multiple 28"), "{log}");
}

#[test]
fn version_and_help() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("warren "));
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("serve") && help.contains("-f <FILE>") && help.contains("-t"));
}

#[test]
fn serve_a_directory_without_config() {
    let dir = TempDir::new("serve");
    dir.write("htdocs/index.html", "served");
    dir.write("htdocs/sub/x.txt", "x");
    dir.write("htdocs/hi.php", "<?php echo 'PHP ', PHP_SAPI;");
    let port = free_port();
    let mut child = Command::new(BIN)
        .args(["serve"])
        .arg(dir.0.join("htdocs"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = Command::new("curl").args(["-s", &format!("http://127.0.0.1:{port}/")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "served");
    let out = Command::new("curl").args(["-s", &format!("http://127.0.0.1:{port}/sub/")]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("x.txt"), "serve lists directories");
    // PHP runs in a built-in pool: of php-fpm (test.sh installs it), whose
    // children share an opcache, else of php-cgi.
    let fpm = std::fs::read_dir("/usr/sbin").unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("php-fpm"));
    let (sapi, program) = if fpm { ("fpm-fcgi", "php-fpm") } else { ("cgi-fcgi", "php-cgi") };
    let out = Command::new("curl").args(["-s", &format!("http://127.0.0.1:{port}/hi.php")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("PHP {sapi}"));
    unsafe_kill(child.id(), 15);
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("PHP through a pool of") && err.contains(program), "start-up line: {err}");
}

fn dead_child_is_replaced(mpm: &str) {
    let s = Server::start(mpm, "");
    let before = s.wait_children(2);
    assert_eq!(before.len(), 2, "StartServers 2");
    unsafe_kill(before[0], 9);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = s.children();
        if now.len() == 2 && !now.contains(&before[0]) {
            break;
        }
        assert!(Instant::now() < deadline, "child not replaced within 15 s: {now:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..20 {
        assert_eq!(s.get("/a.txt").status, 200);
    }
}

fn term_stops_after_in_flight_request(mpm: &str) {
    let mut s = Server::start(mpm, "");
    // A request whose body is still arriving when TERM comes.
    let mut c = s.connect();
    c.write_all(b"POST /a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12345").unwrap();
    // In flight: accepted and its head read, not still in the listen queue.
    wait_server_read(&c);
    let pid = s.pid();
    unsafe_kill(pid, 15);
    std::thread::sleep(Duration::from_millis(200));
    c.write_all(b"67890").unwrap();
    let out = read_to_close(&mut c);
    // POST to a static file is answered with the file, as Apache's default handler does.
    assert_eq!(status_of(&out), 200, "the in-flight request was answered");
    let code = s.stop();
    assert_eq!(code, Some(0));
    assert!(!s.dir.0.join("warren.pid").exists(), "PidFile removed");
}

fn k_stop_uses_pid_file(mpm: &str) {
    let mut s = Server::start(mpm, "");
    let pid: u32 = std::fs::read_to_string(s.dir.0.join("warren.pid")).unwrap().trim().parse().unwrap();
    assert_eq!(pid, s.pid());
    let out = Command::new(BIN).args(["-k", "stop", "-f"]).arg(&s.conf).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut child = s.child.take().unwrap();
    assert!(child.wait().unwrap().success());
}

/// The event MPM's point: idle keep-alive connections tie up no thread.
#[test]
fn event_idle_connections_do_not_block_fresh_requests() {
    let s = Server::start("event", "KeepAliveTimeout 30");
    let mut idle = Vec::new();
    for _ in 0..1000 {
        let mut c = s.connect();
        c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        idle.push(c);
    }
    for c in &mut idle {
        let mut buf = [0u8; 1024];
        let n = read_some(c, &mut buf).unwrap();
        assert_eq!(status_of(&buf[..n]), 200);
    }
    // 1000 kept-alive connections now idle; 4 worker threads per child.
    // Were the threads tied to the idle connections, the fresh request would
    // wait for KeepAliveTimeout (30 s), past its own 10 s read timeout.
    let start = Instant::now();
    let r = s.get("/index.html");
    let took = start.elapsed();
    assert_eq!(r.status, 200);
    assert!(took < Duration::from_secs(8), "fresh request took {took:?}");
    // The idle ones are still usable.
    idle[500].write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    let mut buf = [0u8; 1024];
    let n = read_some(&mut idle[500], &mut buf).unwrap();
    assert_eq!(status_of(&buf[..n]), 200);
}

fn max_connections_per_child_retires_without_failing(mpm: &str) {
    let s = Server::start(mpm, "MaxConnectionsPerChild 20");
    let first = s.wait_children(2);
    assert_eq!(first.len(), 2);
    let mut ok = 0;
    for _ in 0..200 {
        let r = s.get("/a.txt");
        assert_eq!(r.status, 200);
        ok += 1;
    }
    assert_eq!(ok, 200);
    let now = s.children();
    assert!(first.iter().any(|p| !now.contains(p)), "children were retired: {first:?} -> {now:?}");
}

fn listing_runs_on_worker_threads_concurrently(mpm: &str) {
    let dir = TempDir::new("listing");
    standard_site(&dir);
    for i in 0..300 {
        dir.write(&format!("htdocs/many/file-{i:03}.txt"), "x");
    }
    let s = Server::start_in(dir, mpm, "<Directory htdocs/many>\nOptions Indexes\n</Directory>");
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let url = s.url("/many/");
            std::thread::spawn(move || Command::new("curl").args(["-s", &url]).output().unwrap().stdout)
        })
        .collect();
    for t in threads {
        let body = String::from_utf8(t.join().unwrap()).unwrap();
        assert!(body.contains("file-000.txt") && body.contains("file-299.txt"));
    }
}
