//! What the processes warren starts are allowed to hold (issue 16, points 2,
//! 3 and 8), with Debian's php-cgi: pool and server children leave warren's
//! session and terminal, and a server child gets none from a path a client
//! names; pool children get no descriptor warren inherited, and print into
//! a pipe of their pool that warren copies to the error log (never the log
//! file itself); pools run as the server's User unless they set their own,
//! and one that does so beside pools of other users is refused (its PHP
//! could use every pool's socket); server children or a pool that would run
//! as root are refused without -R; the pools' socket directory is root's.
//! Most of it needs root (the suite runs as root), as it is about changing
//! users.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// An id from /etc/passwd or /etc/group.
fn id_of(file: &str, name: &str, field: usize) -> u32 {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f[0] == name).then(|| f[field].parse().unwrap())
        })
        .unwrap_or_else(|| panic!("{name} not in {file}"))
}

fn uid(name: &str) -> u32 {
    id_of("/etc/passwd", name, 2)
}

fn gid(name: &str) -> u32 {
    id_of("/etc/group", name, 2)
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

/// (session id, tty_nr) of a process, from /proc/PID/stat.
fn session_and_tty(pid: u32) -> (u32, i64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the ")" of the command name: state ppid pgrp session tty_nr ...
    let f: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    (f[3].parse().unwrap(), f[4].parse().unwrap())
}

/// The process group of a process, from /proc/PID/stat.
fn process_group(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')').unwrap().1.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// (real uid, real gid) from /proc/PID/status.
fn ids(pid: u32) -> (u32, u32) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |k: &str| status.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap();
    (field("Uid:"), field("Gid:"))
}

/// Each open descriptor of a process and what it names.
fn fds(pid: u32) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, std::fs::read_link(e.path()).ok()?.display().to_string())))
        .collect();
    out.sort();
    out
}

fn fd_target(fds: &[(u32, String)], fd: u32) -> &str {
    fds.iter().find(|(n, _)| *n == fd).map_or("(closed)", |(_, t)| t.as_str())
}

/// Waits (up to 20 s, for a loaded machine) until `parent` has `n` php-cgi children and two others.
fn wait_children(parent: u32, n: usize) -> (Vec<u32>, Vec<u32>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = children_of(parent);
        let (php, server): (Vec<u32>, Vec<u32>) = all.into_iter().partition(|&p| comm(p) == "php-cgi");
        if (php.len() == n && server.len() >= 2) || Instant::now() > deadline {
            return (php, server);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The harness's configuration, written into `dir` with `extra`; without
/// ErrorLog when `error_log` is false (the error log is then standard error).
fn write_conf(dir: &TempDir, mpm: &str, port: u16, error_log: bool, extra: &str) -> PathBuf {
    let tuning = match mpm {
        "prefork" => "StartServers 2\nMinSpareServers 1\nMaxSpareServers 8\nMaxRequestWorkers 32",
        _ => "StartServers 2\nThreadsPerChild 4\nMinSpareThreads 1\nMaxSpareThreads 16\nMaxRequestWorkers 32",
    };
    let log = if error_log { "ErrorLog error.log\n" } else { "" };
    dir.write(
        "warren.conf",
        format!("LoadModule mpm_{mpm}_module modules/mod_mpm_{mpm}.so\nListen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot htdocs\nPidFile warren.pid\n{log}LogLevel info\n{tuning}\n{extra}\n"),
    )
}

/// A pool running /usr/bin/php-cgi for `*.php`, with `lines` inside `<Pool>`.
fn php_pool(name: &str, lines: &str) -> String {
    format!("<Pool {name}>\n    Command /usr/bin/php-cgi\n    pm static\n    pm.max_children 2\n{lines}</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:{name}\n</FilesMatch>\n")
}

/// `User nobody` for the server when the tests run as root (else warren
/// cannot change user, and ignores it).
fn server_user() -> &'static str {
    if is_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    }
}

fn wait_ready(child: &mut Child, port: u16, dir: &TempDir) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() && dir.0.join("warren.pid").exists() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("warren exited with {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("warren did not start listening on {port}");
}

/// A GET of `path` on `port`: what came back, and how the connection ended.
fn fetch(port: u16, path: &str) -> (Vec<u8>, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    read_to_end_of(&mut s)
}

fn get(port: u16, path: &str) -> Resp {
    let (raw, how) = fetch(port, path);
    assert!(response_complete(&raw), "GET {path}: answer {:?}, {how}", String::from_utf8_lossy(&raw));
    parse_response(&raw).0
}

/// A pseudo-terminal: its master side, read by a thread into `output`.
struct Terminal {
    master: File,
    slave: PathBuf,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn open() -> Terminal {
        // SAFETY: the pty calls of POSIX on a descriptor this function owns.
        let (master, slave) = unsafe {
            let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(m >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            assert_eq!(libc::grantpt(m), 0);
            assert_eq!(libc::unlockpt(m), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
            (File::from_raw_fd(m), PathBuf::from(std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned()))
        };
        let output = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, out) = (master.try_clone().unwrap(), output.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once no process has the terminal open any more.
            while let Ok(n) = read_some(&mut reader, &mut buf) {
                if n == 0 {
                    break;
                }
                out.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal { master, slave, output }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let t = self.text();
            if t.contains(needle) || Instant::now() > deadline {
                return t;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Starts warren as a shell starts a job on a terminal: leading a session
/// whose controlling terminal is `term`, its standard streams on it, plus
/// `stray` as descriptor 7, as if whoever started it leaked one.
fn start_on_terminal(conf: &Path, term: &Terminal, stray: &File) -> Child {
    let slave = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOCTTY).open(&term.slave).unwrap();
    let stray_fd = stray.as_raw_fd();
    let mut cmd = Command::new(BIN);
    cmd.arg("-f").arg(conf).stdin(slave.try_clone().unwrap()).stdout(slave.try_clone().unwrap()).stderr(slave);
    // SAFETY: system calls only between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let check = |r: libc::c_int| if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
            check(libc::setsid())?;
            check(libc::ioctl(0, libc::TIOCSCTTY, 0))?;
            // dup2 leaves the copy without close-on-exec: warren inherits it.
            check(libc::dup2(stray_fd, 7))?;
            Ok(())
        });
    }
    cmd.spawn().expect("start warren")
}

/// A warren started by a test itself, stopped (TERM, then KILL) if the
/// test fails before it does.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            unsafe_kill(self.0.id(), 15);
            let deadline = Instant::now() + STOP_GRACE;
            while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z')))
}

/// Point 2: started on a terminal with a stray descriptor, warren keeps
/// the terminal to itself and closes the descriptor. Every child (server and pool) has a session of its own
/// and no controlling terminal, and holds the terminal on no descriptor;
/// pool children hold only their socket on 0, their pool's pipe on 1 and 2
/// (which no server child holds), and nothing warren had open; what server
/// and pool children log still reaches the terminal (there is no error log
/// file), through warren; Ctrl-C on the terminal stops warren and every
/// child.
fn children_leave_the_terminal_and_stray_descriptors(mpm: &str) {
    let dir = TempDir::new(&format!("detach-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    dir.write("htdocs/say.php", "<?php file_put_contents('php://stderr', \"said-through-warren\\n\"); echo 'ok';");
    let stray_path = dir.write("stray.txt", "not for the pools");
    let stray = File::open(&stray_path).unwrap();
    let port = free_port();
    let conf = write_conf(&dir, mpm, port, false, &format!("{}{}", server_user(), php_pool("www", "")));
    let term = Terminal::open();
    let mut child = Guard(start_on_terminal(&conf, &term, &stray));
    wait_ready(&mut child.0, port, &dir);
    let warren = child.0.id();
    let slave = term.slave.display().to_string();

    // The set-up is what it claims: warren has the terminal. The stray
    // descriptor it was given it closed at once, so no child can have it.
    let (warren_sid, warren_tty) = session_and_tty(warren);
    assert_eq!(warren_sid, warren);
    assert_ne!(warren_tty, 0, "warren should have the terminal as its controlling terminal");
    let warren_fds = fds(warren);
    assert!(warren_fds.iter().all(|(_, t)| *t != stray_path.display().to_string()), "warren kept the stray descriptor: {warren_fds:?}");
    assert_eq!(fd_target(&warren_fds, 2), slave);

    // What warren logged (on the terminal here) goes with an answer that is not one.
    let (first, how) = fetch(port, "/pid.php");
    assert!(response_complete(&first), "answer {:?}, {how}; the terminal showed: {}", String::from_utf8_lossy(&first), term.text());
    assert_eq!(parse_response(&first).0.status, 200);
    let (php, server) = wait_children(warren, 2);
    assert_eq!(php.len(), 2, "pm static, 2 children: {php:?}");
    let holds_terminal = |held: &[(u32, String)]| held.iter().any(|(_, t)| *t == slave || t.starts_with("/dev/pts") || t == "/dev/tty");
    // A pool child leads a session of its own; a server child stays in
    // warren's (one scheduling group with it under the kernel's
    // autogroups, as nginx's workers) but leads a process group of its own,
    // which the terminal's ^C does not reach.
    for &pid in php.iter().chain(&server) {
        let session = if php.contains(&pid) { pid } else { warren_sid };
        settle(|| session_and_tty(pid) == (session, 0) && !holds_terminal(&fds(pid)) && fd_target(&fds(pid), 0) != slave);
        let what = format!("{} {pid}", comm(pid));
        let (sid, tty) = session_and_tty(pid);
        assert_eq!(sid, session, "{what}'s session");
        assert_eq!(tty, 0, "{what} has no controlling terminal");
        assert_eq!(process_group(pid), pid, "{what} leads a process group of its own");
        let held = fds(pid);
        assert!(!holds_terminal(&held), "{what} holds the terminal: {held:?}");
    }
    let pool_pipe = fd_target(&fds(php[0]), 2).to_string();
    assert!(pool_pipe.starts_with("pipe:"), "php-cgi's stderr is its pool's pipe: {pool_pipe}");
    for &pid in &php {
        let held = fds(pid);
        assert!(fd_target(&held, 0).starts_with("socket:"), "php-cgi {pid}'s stdin is its pool socket: {held:?}");
        assert_eq!(fd_target(&held, 1), pool_pipe, "{held:?}");
        assert_eq!(fd_target(&held, 2), pool_pipe, "{held:?}");
        // php-cgi opens files of its own (opcache's lock); nothing warren had may be among them.
        for (fd, target) in held.iter().filter(|(fd, _)| *fd > 2) {
            assert!(*target != stray_path.display().to_string(), "php-cgi {pid} inherited the stray descriptor as {fd}");
            assert!(!warren_fds.iter().any(|(_, t)| t == target), "php-cgi {pid} holds warren's {target} as {fd}: {held:?}");
        }
    }
    for &pid in &server {
        settle(|| fds(pid).iter().all(|(_, t)| *t != pool_pipe) && fd_target(&fds(pid), 2).starts_with("pipe:"));
        let held = fds(pid);
        assert!(held.iter().all(|(_, t)| *t != stray_path.display().to_string()), "server child {pid} holds the stray descriptor: {held:?}");
        assert_eq!(fd_target(&held, 0), "/dev/null", "server child {pid}: {held:?}");
        assert_eq!(fd_target(&held, 1), "/dev/null", "server child {pid}: {held:?}");
        assert!(fd_target(&held, 2).starts_with("pipe:"), "server child {pid} logs through warren: {held:?}");
        assert!(held.iter().all(|(_, t)| *t != pool_pipe), "server child {pid} holds the pool's pipe: {held:?}");
    }
    // A server child's log line (LogLevel info) reaches the terminal all the same.
    assert_eq!(get(port, "/no-such-file.html").status, 404);
    let out = term.wait_for("File does not exist");
    assert!(out.contains("File does not exist") && out.contains("no-such-file.html"), "the terminal showed: {out}");
    // So does what a pool's child prints.
    assert_eq!(get(port, "/say.php").text(), "ok");
    let out = term.wait_for("said-through-warren");
    assert!(out.contains("[pool www] child said into stderr: \"said-through-warren\""), "the terminal showed: {out}");

    // Ctrl-C: the terminal signals warren's process group, which is warren alone now.
    term.master.try_clone().unwrap().write_all(b"\x03").unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "warren did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while php.iter().chain(&server).any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = php.iter().chain(&server).copied().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "children outlived a Ctrl-C to warren: {left:?}");
}

/// Point 2: with an ErrorLog file, what php-cgi prints (its standard output
/// and error, a pipe of its pool's) lands in it, through warren, as
/// php-fpm's `[pool www] child said into stderr: "..."`; no server child
/// holds that pipe; server children write to the log file on standard
/// error, and standard input and output are /dev/null for them. After USR1
/// and a rotation, the pool's lines go to the new file.
fn pool_output_goes_to_the_error_log(mpm: &str) {
    let dir = TempDir::new(&format!("pool-output-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/err.php", "<?php file_put_contents('php://stderr', \"stderr-of-php-cgi-{$_GET['n']}\\n\"); echo getmypid();");
    let s = Server::start_in(dir, mpm, &format!("{}{}", server_user(), php_pool("www", "")));
    let r = s.get("/err.php?n=1");
    assert_eq!(r.status, 200, "{}", r.text());
    let pid: u32 = r.text().parse().unwrap();
    let log = s.dir.0.join("error.log").display().to_string();
    let held = fds(pid);
    let pipe = fd_target(&held, 2).to_string();
    assert!(pipe.starts_with("pipe:") && fd_target(&held, 1) == pipe, "php-cgi's stdout and stderr are its pool's pipe: {held:?}");
    assert!(held.iter().all(|(_, t)| *t != log), "php-cgi holds the error log: {held:?}");
    let said = "[pool www] child said into stderr: \"stderr-of-php-cgi-1\"";
    assert!(s.wait_log("error.log", said).contains(said), "{}", s.read_log("error.log"));
    for child in s.children().into_iter().filter(|&p| comm(p) == "warren") {
        settle(|| {
            let held = fds(child);
            fd_target(&held, 0) == "/dev/null" && fd_target(&held, 2) == log && held.iter().all(|(_, t)| *t != pipe)
        });
        let held = fds(child);
        assert_eq!(fd_target(&held, 0), "/dev/null", "{held:?}");
        assert_eq!(fd_target(&held, 1), "/dev/null", "{held:?}");
        assert_eq!(fd_target(&held, 2), log, "{held:?}");
        assert!(held.iter().all(|(_, t)| *t != pipe), "server child {child} holds the pool's pipe: {held:?}");
    }
    // Log rotation: the pool's children are not involved, the parent writes.
    std::fs::rename(s.dir.0.join("error.log"), s.dir.0.join("error.log.1")).unwrap();
    unsafe_kill(s.pid(), 10);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.dir.0.join("error.log").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(s.get("/err.php?n=2").status, 200);
    let said = "[pool www] child said into stderr: \"stderr-of-php-cgi-2\"";
    assert!(s.wait_log("error.log", said).contains(said), "{}", s.read_log("error.log"));
    assert!(!s.read_log("error.log.1").contains("stderr-of-php-cgi-2"));
}

/// Point 2: a pool's script cannot shrink or rewrite the error log through
/// its standard error: that is a pipe (fstat says FIFO), which ftruncate
/// refuses; what it writes arrives as quoted lines of its pool, control
/// characters shown as \xNN, a line longer than 1024 bytes cut there; a
/// pool printing megabytes holds up no one and is metered: the lines past
/// its allowance are counted, not logged, and every line is one or the
/// other.
fn pool_output_cannot_touch_the_error_log(mpm: &str) {
    let dir = TempDir::new(&format!("pool-truncate-{mpm}"));
    standard_site(&dir);
    dir.write(
        "htdocs/truncate.php",
        "<?php $f = fopen('php://stderr', 'w'); $st = fstat($f);\n\
         $fifo = ($st['mode'] & 0170000) == 0010000;\n\
         $t = @ftruncate($f, 0);\n\
         fwrite($f, \"after-truncate\\n\");\n\
         echo $fifo ? 'fifo' : 'not-fifo', ' ', $t ? 'truncated' : 'not-truncated';",
    );
    dir.write("htdocs/forge.php", "<?php fwrite(fopen('php://stderr', 'w'), \"one\\nfake [error] line\\x1b[2J\\r\\n\" . str_repeat('x', 3000) . \"\\nafter-long\\n\"); echo 'ok';");
    dir.write("htdocs/after.php", "<?php fwrite(fopen('php://stderr', 'w'), \"after-flood\\n\"); echo 'ok';");
    dir.write("htdocs/flood.php", "<?php $e = fopen('php://stderr', 'w'); $l = str_repeat('f', 250); for ($i = 0; $i < 4000; $i++) fwrite($e, \"flood $i $l\\n\"); fwrite($e, \"flood-end\\n\"); echo 'done';");
    let s = Server::start_in(dir, mpm, &format!("{}{}", server_user(), php_pool("www", "")));
    assert_eq!(s.get("/a.txt").status, 200);
    let before = s.wait_log("error.log", "resuming normal operations");
    assert!(before.contains("resuming normal operations"), "{before}");
    let size = std::fs::metadata(s.dir.0.join("error.log")).unwrap().len();

    let r = s.get("/truncate.php");
    assert_eq!((r.status, r.text().as_str()), (200, "fifo not-truncated"));
    let log = s.wait_log("error.log", "after-truncate");
    assert!(log.contains("[pool www] child said into stderr: \"after-truncate\""), "{log}");
    assert!(log.starts_with(&before[..before.find('\n').unwrap()]), "the log lost its start: {log}");
    assert!(std::fs::metadata(s.dir.0.join("error.log")).unwrap().len() > size);

    assert_eq!(s.get("/forge.php").text(), "ok");
    let log = s.wait_log("error.log", "after-long");
    assert!(log.contains("child said into stderr: \"one\"\n"), "{log}");
    assert!(log.contains("child said into stderr: \"fake [error] line\\x1b[2J\"\n"), "control characters escaped, CR before LF dropped: {log}");
    let cut = format!("child said into stderr: \"{}\" (cut at 1024 bytes)\n", "x".repeat(1024));
    assert!(log.contains(&cut), "a long line cut at 1024 bytes: {log}");
    assert!(!log.contains(&"x".repeat(1025)));
    assert!(log.contains("child said into stderr: \"after-long\""), "{log}");

    // About a megabyte: the child waits on a full pipe while warren writes it out.
    let (tx, rx) = std::sync::mpsc::channel();
    let port = s.port;
    std::thread::spawn(move || tx.send(get(port, "/flood.php").text()).unwrap());
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(500) {
        assert_eq!(s.get("/a.txt").status, 200, "the server answers while a pool floods its output");
    }
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), "done");
    // A line let through once the allowance has grown again says how many
    // were not logged before it; the tries that were not let through
    // either are counted in a later such line.
    let mut tries = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    let log = loop {
        assert_eq!(s.get("/after.php").text(), "ok");
        tries += 1;
        let log = s.wait_log("error.log", "after-flood");
        if log.contains("child said into stderr: \"after-flood\"") || Instant::now() > deadline {
            break log;
        }
    };
    let said = |what: &str| log.lines().filter(|l| l.contains(&format!("child said into stderr: \"{what}"))).count();
    let not_logged: usize = log
        .lines()
        .filter_map(|l| l.split("[pool www] ").nth(1)?.split(" line").next()?.parse::<usize>().ok())
        .sum();
    let (floods, end, after) = (said("flood "), said("flood-end"), said("after-flood"));
    assert_eq!(after, 1, "{log}");
    // The burst of 200 less the lines above, then 20 a second.
    assert!((150..4000).contains(&floods), "{floods} of 4000 flood lines logged");
    assert_eq!(floods + end + after + not_logged, 4001 + tries, "each line logged or counted: {floods} + {end} + {after} + {not_logged} counted, {tries} tries");
}

/// Point 3: a pool without User runs as the server's User and Group; pools
/// with Users of their own run as those users (with their groups), and the
/// PHP of one cannot connect to another's socket (nor to its own: the
/// sockets are the server user's, in a directory only its group may pass).
fn pool_without_user_runs_as_the_servers_user(mpm: &str) {
    if !is_root() {
        return;
    }
    let dir = TempDir::new(&format!("pool-inherit-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/inherit.php", "<?php echo getmypid();");
    let s = Server::start_in(dir, mpm, &format!("User nobody\nGroup nogroup\n{}", php_pool("inherit", "")));
    let pid_of = |s: &Server, path: &str| -> u32 {
        let r = s.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        r.text().parse().unwrap()
    };
    let (nobody, nogroup) = (uid("nobody"), gid("nogroup"));
    assert_eq!(ids(pid_of(&s, "/inherit.php")), (nobody, nogroup), "a pool without User runs as the server's User and Group");
    for child in s.children().into_iter().filter(|&p| comm(p) == "warren") {
        settle(|| ids(child) == (nobody, nogroup));
        assert_eq!(ids(child), (nobody, nogroup), "server child {child}");
    }
    drop(s);

    let dir = TempDir::new(&format!("pool-own-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/own.php", "<?php echo getmypid();");
    dir.write("htdocs/other.php", "<?php echo getmypid();");
    dir.write("htdocs/connect.php", "<?php $s = @stream_socket_client('unix://' . $_GET['to'], $no, $why, 2); echo $s ? 'connected' : \"refused: $why\";");
    let conf = "User nobody\nGroup nogroup\n\
        <Pool own>\n    Command /usr/bin/php-cgi\n    User www-data\n    pm static\n    pm.max_children 1\n</Pool>\n\
        <Pool other>\n    Command /usr/bin/php-cgi\n    User daemon\n    pm static\n    pm.max_children 1\n</Pool>\n\
        <FilesMatch \"^(own|connect)\\.php$\">\n    SetHandler pool:own\n</FilesMatch>\n\
        <FilesMatch \"^other\\.php$\">\n    SetHandler pool:other\n</FilesMatch>\n";
    let s = Server::start_in(dir, mpm, conf);
    assert_eq!(ids(pid_of(&s, "/own.php")), (uid("www-data"), gid("www-data")), "a pool's own User, with that user's group");
    assert_eq!(ids(pid_of(&s, "/other.php")), (uid("daemon"), gid("daemon")));
    for child in s.children().into_iter().filter(|&p| comm(p) == "warren") {
        settle(|| ids(child) == (nobody, nogroup));
        assert_eq!(ids(child), (nobody, nogroup), "server child {child}");
    }
    let sockets = socket_dir(s.pid());
    for sock in ["other.1.sock", "own.0.sock"] {
        let to = sockets.join(sock);
        assert!(to.exists(), "{}", to.display());
        let r = s.get(&format!("/connect.php?to={}", to.display()));
        assert!(r.text().starts_with("refused: ") && r.text().contains("ermission denied"), "pool own's PHP on {sock}: {}", r.text());
    }
}

/// A: a pool running as the server children's user beside a pool running
/// as another is refused at start, by -t and at a graceful restart, at the
/// `<Pool>`'s line, saying why and what to do: the sockets of every pool are
/// the server user's, so its PHP could have any pool run code as that
/// pool's user. Every pool as the server's user, or each with a user of
/// its own, is fine; -R changes nothing to it.
fn pool_as_the_servers_user_beside_others_is_refused(mpm: &str) {
    if !is_root() {
        return;
    }
    let dir = TempDir::new(&format!("pool-apart-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    let port = free_port();
    let pool = |name: &str, lines: &str| format!("<Pool {name}>\n    Command /usr/bin/php-cgi\n    pm static\n    pm.max_children 1\n{lines}</Pool>\n");
    let handler = "<FilesMatch \"\\.php$\">\n    SetHandler pool:a\n</FilesMatch>\n";
    let refused = [
        ("a without User, b as www-data", format!("User nobody\nGroup nogroup\n{}{}{handler}", pool("a", ""), pool("b", "    User www-data\n")), "it sets no User, so it runs as nobody"),
        ("a as nobody by its User, b as www-data", format!("User nobody\nGroup nogroup\n{}{}{handler}", pool("a", "    User nobody\n"), pool("b", "    User www-data\n")), "its User is nobody"),
    ];
    for (what, extra, how) in &refused {
        let conf = write_conf(&dir, mpm, port, true, extra);
        let at = format!("{}:{}: <Pool a> would run as the server's user ({how}) while <Pool b> runs as www-data", conf.display(), line_of(&conf, "<Pool a>"));
        for args in [&["-t"][..], &["-R", "-t"][..]] {
            let err = check_refused(args, &conf, &format!("{what}: {args:?}"));
            assert!(err.contains(&at), "{what}: {args:?} said: {err}");
            assert!(err.contains("could use every pool's socket") && err.contains("give <Pool a> a User of its own"), "{what}: says why and what to do: {err}");
            assert!(!err.contains("<Pool b> would run"), "only the pool sharing the server's user is at fault: {err}");
        }
        start_refused(&conf, port, &at, what);
    }
    let allowed = [
        ("every pool as the server's user", format!("User nobody\nGroup nogroup\n{}{}{handler}", pool("a", ""), pool("b", ""))),
        ("each pool a user of its own", format!("User nobody\nGroup nogroup\n{}{}{handler}", pool("a", "    User daemon\n"), pool("b", "    User www-data\n"))),
    ];
    for (what, extra) in &allowed {
        let conf = write_conf(&dir, mpm, port, true, extra);
        let out = Command::new(BIN).args(["-t", "-f"]).arg(&conf).output().unwrap();
        assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    }

    // A graceful restart that adds a pool of another user beside the one
    // running as the server's is refused; the server goes on as it was.
    let s = Server::start_in(dir, mpm, &format!("{}{handler}", pool("a", "")));
    let before: u32 = s.get("/pid.php").text().parse().unwrap();
    let conf = std::fs::read_to_string(&s.conf).unwrap() + &pool("b", "    User www-data\n");
    std::fs::write(&s.conf, conf).unwrap();
    unsafe_kill(s.pid(), 1);
    let at = format!("{}:{}: <Pool a> would run as the server's user", s.conf.display(), line_of(&s.conf, "<Pool a>"));
    let log = s.wait_log("error.log", "graceful restart refused");
    assert!(log.contains(&at) && log.contains("graceful restart refused"), "{log}");
    let r = s.get("/pid.php");
    assert_eq!(r.text().parse::<u32>().unwrap(), before, "the pool goes on");
    assert_eq!(ids(before).0, uid("nobody"));
}

/// `warren ARGS -f CONF` (a check) fails with exit code 1 and no
/// "Syntax OK"; its error output.
fn check_refused(args: &[&str], conf: &Path, what: &str) -> String {
    let out = Command::new(BIN).args(args).arg("-f").arg(conf).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Syntax OK"), "{what}");
    err
}

/// Starting warren on `conf` fails with exit code 1, saying `at` and that it
/// is not starting, and nothing listens on `port`.
fn start_refused(conf: &Path, port: u16, at: &str, what: &str) {
    let out = Command::new(BIN).arg("-f").arg(conf).stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: start: {err}");
    assert!(err.contains(at) && err.contains("not starting"), "{what}: start said: {err}");
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "{what}: a refused configuration serves nothing");
}

/// The line of `needle` in `file`, counting from 1.
fn line_of(file: &Path, needle: &str) -> usize {
    std::fs::read_to_string(file).unwrap().lines().position(|l| l.contains(needle)).expect("in the file") + 1
}

/// Point 3: a pool that would run as root, by `User root` or by having
/// nobody to inherit from, is refused at start and by -t, with the
/// `<Pool>`'s file:line and how to fix it; with -R it runs, as root; a
/// graceful restart to such a pool is refused and the server goes on.
fn root_pool_is_refused_without_the_flag(mpm: &str) {
    if !is_root() {
        return;
    }
    let dir = TempDir::new(&format!("pool-root-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    let port = free_port();
    for (what, extra) in [("User root in the pool", format!("{}{}", server_user(), php_pool("www", "    User root\n"))), ("no User anywhere", php_pool("www", ""))] {
        let conf = write_conf(&dir, mpm, port, true, &extra);
        let at = format!("{}:{}: <Pool www> would run its children as root", conf.display(), line_of(&conf, "<Pool www>"));
        let err = check_refused(&["-t"], &conf, &format!("{what}: -t"));
        assert!(err.contains(&at) && err.contains("-R (--allow-to-run-as-root)") && err.contains("set User"), "{what}: -t said: {err}");
        start_refused(&conf, port, &at, what);
        let out = Command::new(BIN).args(["-R", "-t", "-f"]).arg(&conf).output().unwrap();
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Syntax OK"), "{what}: -R -t: {}", String::from_utf8_lossy(&out.stderr));
    }
    // With -R the pool runs as root, on purpose.
    let mut child = Guard(Command::new(BIN).args(["-R", "-f"]).arg(dir.0.join("warren.conf")).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    wait_ready(&mut child.0, port, &dir);
    let r = get(port, "/pid.php");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(ids(r.text().parse().unwrap()), (0, 0), "-R runs the pool as root");
    drop(child);
    let _ = std::fs::remove_file(dir.0.join("warren.pid"));

    // A graceful restart to a root pool is refused; the pool goes on as nobody.
    let s = Server::start_in(dir, mpm, &php_pool("www", "    User nobody\n    Group nogroup\n"));
    let before: u32 = s.get("/pid.php").text().parse().unwrap();
    let conf = std::fs::read_to_string(&s.conf).unwrap().replace("    User nobody\n", "    User root\n");
    std::fs::write(&s.conf, conf).unwrap();
    unsafe_kill(s.pid(), 1);
    let at = format!("{}:{}: <Pool www> would run its children as root", s.conf.display(), line_of(&s.conf, "<Pool www>"));
    let log = s.wait_log("error.log", "graceful restart refused");
    assert!(log.contains(&at) && log.contains("graceful restart refused"), "{log}");
    let r = s.get("/pid.php");
    assert_eq!(r.status, 200);
    assert_eq!(ids(r.text().parse().unwrap()).0, uid("nobody"));
    assert!(alive(before));
}

/// D: server children that would run as root (no User, User root or
/// Group root, in a warren started as root) are refused at start, by -t and
/// at a graceful restart, at the directive (or at the file, line 0, when
/// there is no User), saying to set User or pass -R, as Apache refuses to
/// serve as root; -R runs them as root on purpose.
fn root_server_children_are_refused_without_the_flag(mpm: &str) {
    if !is_root() {
        return;
    }
    let dir = TempDir::new(&format!("server-root-{mpm}"));
    standard_site(&dir);
    let port = free_port();
    for (what, extra, directive) in [("no User", "", None), ("User root", "User root\n", Some("User root")), ("Group root", "User nobody\nGroup root\n", Some("Group root"))] {
        let conf = write_conf(&dir, mpm, port, true, extra);
        let at = match directive {
            None => format!("{}:0: the server's children would run as root", conf.display()),
            Some(d) => format!("{}:{}: ", conf.display(), line_of(&conf, d)),
        };
        let err = check_refused(&["-t"], &conf, &format!("{what}: -t"));
        assert!(err.contains(&at) && err.contains("would run"), "{what}: -t said: {err}");
        assert!(err.contains("set User") && err.contains("-R (--allow-to-run-as-root)"), "{what}: says what to do: {err}");
        start_refused(&conf, port, &at, what);
        let out = Command::new(BIN).args(["-R", "-t", "-f"]).arg(&conf).output().unwrap();
        assert!(out.status.success(), "{what}: -R -t: {}", String::from_utf8_lossy(&out.stderr));
    }
    // With -R (and no User) the server's children are root, on purpose.
    let conf = write_conf(&dir, mpm, port, true, "");
    let mut child = Guard(Command::new(BIN).args(["-R", "-f"]).arg(&conf).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    wait_ready(&mut child.0, port, &dir);
    assert_eq!(get(port, "/a.txt").status, 200);
    let (_, server) = wait_children(child.0.id(), 0);
    assert!(!server.is_empty() && server.iter().all(|&p| ids(p) == (0, 0)), "-R runs the server's children as root: {server:?}");
    drop(child);
    let _ = std::fs::remove_file(dir.0.join("warren.pid"));

    // A graceful restart to User root is refused; the children go on as nobody.
    let s = Server::start_in(dir, mpm, "");
    let before = s.wait_children(2);
    let conf = std::fs::read_to_string(&s.conf).unwrap().replace("User nobody\n", "User root\n");
    std::fs::write(&s.conf, conf).unwrap();
    unsafe_kill(s.pid(), 1);
    let at = format!("{}:{}: User root: the server's children would run as root", s.conf.display(), line_of(&s.conf, "User root"));
    let log = s.wait_log("error.log", "graceful restart refused");
    assert!(log.contains(&at) && log.contains("graceful restart refused"), "{log}");
    assert_eq!(s.get("/a.txt").status, 200);
    let after = s.children();
    assert_eq!(after.len(), before.len());
    assert!(before.iter().all(|p| after.contains(p)), "the children go on: {before:?} -> {after:?}");
    // A child that served nothing may not have run since its fork yet.
    let nobody = (uid("nobody"), gid("nogroup"));
    settle(|| after.iter().all(|&p| ids(p) == nobody));
    assert!(after.iter().all(|&p| ids(p) == nobody), "{:?}", after.iter().map(|&p| ids(p)).collect::<Vec<_>>());
}

/// C: a server child that led a session of its own would make a terminal
/// it opened without O_NOCTTY its controlling terminal, and the terminal's
/// ^C its signal (one that does not lead its session, as now, cannot). A link to a pty, followed under
/// SymLinksIfOwnerMatch as the link and the pty have one owner, is opened
/// and refused as not a regular file; no child has a controlling terminal
/// after it, and a ^C on the pty stops none of them.
fn server_children_take_no_terminal_from_a_path(mpm: &str) {
    let dir = TempDir::new(&format!("ctty-{mpm}"));
    standard_site(&dir);
    let term = Terminal::open();
    let link = dir.0.join("htdocs/tty");
    std::os::unix::fs::symlink(&term.slave, &link).unwrap();
    if is_root() {
        // The server's children run as nobody: the pty and the link are theirs.
        std::os::unix::fs::chown(&term.slave, Some(uid("nobody")), None).unwrap();
        std::os::unix::fs::lchown(&link, Some(uid("nobody")), None).unwrap();
    }
    let htdocs = dir.0.join("htdocs").display().to_string();
    let s = Server::start_in(dir, mpm, &format!("<Directory {htdocs}>\n    Options SymLinksIfOwnerMatch\n</Directory>\n"));
    let children = s.wait_children(2);
    // Enough requests that each child is likely to serve one.
    for _ in 0..8 {
        assert_eq!(s.get("/tty").status, 403);
    }
    let log = s.wait_log("error.log", "not a regular file");
    assert!(log.contains(&format!("not a regular file: {htdocs}/tty")), "the pty was reached, and refused: {log}");
    // A child that served nothing may not have been scheduled since its fork yet.
    settle(|| children.iter().all(|&c| session_and_tty(c).1 == 0 && process_group(c) == c));
    for &c in &children {
        let (_, tty) = session_and_tty(c);
        assert_eq!(tty, 0, "server child {c} has the pty as its controlling terminal");
        assert_eq!(process_group(c), c, "server child {c} leads a process group of its own");
    }
    term.master.try_clone().unwrap().write_all(b"\x03").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(children.iter().all(|&c| alive(c)), "a ^C on the pty stopped a server child");
    assert_eq!(s.get("/a.txt").status, 200);
}

/// Point 3: `warren serve` started as root runs its children and its PHP
/// pool as www-data (or nobody) and says so; it says too when that user
/// cannot read the directory; `serve -R` keeps root.
#[test]
fn serve_as_root_runs_children_unprivileged() {
    if !is_root() {
        return;
    }
    let account = if std::fs::read_to_string("/etc/passwd").unwrap().lines().any(|l| l.starts_with("www-data:")) { "www-data" } else { "nobody" };
    let dir = TempDir::new("serve-root");
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    let locked = dir.0.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    let serve = |args: &[&str], root: &Path| {
        let port = free_port();
        let child = Guard(
            Command::new(BIN)
                .arg("serve")
                .args(args)
                .arg(root)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        (child, port)
    };
    let stop = |mut child: Guard| -> String {
        unsafe_kill(child.0.id(), 15);
        let _ = child.0.wait();
        let mut err = String::new();
        child.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        err
    };
    // What warren logged (to its stderr here) goes with an answer that is not one.
    let get_or_show = |child: Guard, port: u16| -> (Guard, Resp) {
        let (raw, how) = fetch(port, "/pid.php");
        if !response_complete(&raw) {
            panic!("answer {:?}, {how}; warren said: {}", String::from_utf8_lossy(&raw), stop(child));
        }
        (child, parse_response(&raw).0)
    };
    let (child, port) = serve(&[], &dir.0.join("htdocs"));
    let (child, r) = get_or_show(child, port);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(ids(r.text().parse().unwrap()).0, uid(account));
    let servers: Vec<u32> = children_of(child.0.id()).into_iter().filter(|&p| comm(p) == "warren").collect();
    settle(|| servers.iter().all(|&p| ids(p).0 == uid(account)));
    assert!(!servers.is_empty() && servers.iter().all(|&p| ids(p).0 == uid(account)), "server children run as {account}");
    let err = stop(child);
    assert!(err.contains(&format!("children run as {account})")), "start-up line: {err}");

    let (child, _) = serve(&[], &locked);
    let err = stop(child);
    assert!(err.contains(&format!("children run as {account}, WHO CANNOT READ {}", locked.display())), "start-up line: {err}");

    let (child, port) = serve(&["-R"], &dir.0.join("htdocs"));
    let (child, r) = get_or_show(child, port);
    assert_eq!(ids(r.text().parse().unwrap()).0, 0);
    let err = stop(child);
    assert!(err.contains("children run as root (-R)"), "start-up line: {err}");
}

/// Point 8: the pools' socket directory is root's, with the server's group
/// allowed through (0710), so neither the server's user nor a pool's can
/// add or swap an entry; the sockets are the server user's, mode 0600; and
/// a symlink left where a new pool's socket goes is replaced, not followed.
fn socket_directory_is_roots(mpm: &str) {
    if !is_root() {
        return;
    }
    let dir = TempDir::new(&format!("pool-dir-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    dir.write("htdocs/extra.php", "<?php echo getenv('POOL');");
    let victim = dir.write("victim.txt", "root's file");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = Server::start_in(dir, mpm, &format!("User nobody\nGroup nogroup\n{}", php_pool("www", "")));
    assert_eq!(s.get("/pid.php").status, 200);
    let sockets = socket_dir(s.pid());
    let (nobody, nogroup) = (uid("nobody"), gid("nogroup"));
    let m = std::fs::symlink_metadata(&sockets).unwrap();
    assert!(m.is_dir());
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o7777), (0, nogroup, 0o710), "the socket directory: root, the server's group, 0710");
    let mut names: Vec<String> = std::fs::read_dir(&sockets).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["www.0.sock", "www.1.sock"]);
    for n in &names {
        let m = std::fs::symlink_metadata(sockets.join(n)).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
        assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (nobody, nogroup, 0o600), "{n}");
    }
    // The server's user (the pool's too, here) can reach the sockets but not make an entry.
    let planted = sockets.join("planted");
    let out = Command::new("ln").arg("-s").arg(&victim).arg(&planted).uid(nobody).gid(nogroup).output().unwrap();
    assert!(!out.status.success() && std::fs::symlink_metadata(&planted).is_err(), "nobody could add an entry to the socket directory");

    // Root plants a link where the next pool's first socket will go (slot 2:
    // www has 0 and 1), then a graceful restart adds that pool.
    let link = sockets.join("extra.2.sock");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let conf = std::fs::read_to_string(&s.conf).unwrap()
        + "<Pool extra>\n    Command /usr/bin/php-cgi\n    pm static\n    pm.max_children 1\n    env[POOL] extra\n</Pool>\n<FilesMatch \"^extra\\.php$\">\n    SetHandler pool:extra\n</FilesMatch>\n";
    std::fs::write(&s.conf, conf).unwrap();
    unsafe_kill(s.pid(), 1);
    let deadline = Instant::now() + Duration::from_secs(8);
    while s.get("/extra.php").text() != "extra" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(s.get("/extra.php").text(), "extra", "the added pool serves: {}", s.read_log("error.log"));
    let v = std::fs::metadata(&victim).unwrap();
    assert_eq!((v.uid(), v.gid(), v.mode() & 0o7777), (0, 0, 0o644), "the link's target was chowned or chmodded");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file");
    let m = std::fs::symlink_metadata(&link).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()), "the link was replaced by the socket");
    assert_eq!((m.uid(), m.mode() & 0o777), (nobody, 0o600));
}

each_mpm!(
    children_leave_the_terminal_and_stray_descriptors,
    pool_output_goes_to_the_error_log,
    pool_output_cannot_touch_the_error_log,
    pool_without_user_runs_as_the_servers_user,
    pool_as_the_servers_user_beside_others_is_refused,
    root_pool_is_refused_without_the_flag,
    root_server_children_are_refused_without_the_flag,
    server_children_take_no_terminal_from_a_path,
    socket_directory_is_roots,
);
