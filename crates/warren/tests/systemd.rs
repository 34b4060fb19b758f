//! warren under systemd, with what systemd would set up made by the test:
//! a notification socket (NOTIFY_SOCKET, a unix datagram socket the test
//! reads: READY=1, RELOADING=1 with MONOTONIC_USEC, STOPPING=1, STATUS=,
//! WATCHDOG=1) and socket activation (a TCP listener the test binds and
//! passes as descriptor 3 with LISTEN_FDS and LISTEN_PID). Where the
//! machine runs systemd, `systemd-run` starts warren as a real
//! Type=notify service.

mod common;

use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The test's end of NOTIFY_SOCKET.
struct Notifications {
    socket: UnixDatagram,
    /// Everything received so far, in order.
    seen: Vec<String>,
}

impl Notifications {
    fn bind(path: &Path) -> Notifications {
        let socket = UnixDatagram::bind(path).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        Notifications { socket, seen: Vec::new() }
    }

    /// Waits (up to 20 s) for a notification with the line `line`;
    /// returns it. The ones before it are kept in `seen`.
    fn wait_for(&mut self, line: &str) -> String {
        self.wait_until(line, |message| message.lines().any(|l| l == line).then(|| message.to_string()))
    }

    /// Waits (up to 20 s) for a notification `found` takes something from;
    /// returns that. Every one received is kept in `seen`.
    fn wait_until(&mut self, what: &str, found: impl Fn(&str) -> Option<String>) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 4096];
        while Instant::now() < deadline {
            if let Ok(n) = self.socket.recv(&mut buf) {
                let message = String::from_utf8_lossy(&buf[..n]).into_owned();
                self.seen.push(message.clone());
                if let Some(taken) = found(&message) {
                    return taken;
                }
            }
        }
        panic!("no {what} from warren in 20 s; received {:?}", self.seen);
    }
}

/// warren started with `env` and, if given, `fds` dup'ed onto descriptors
/// 3, 4, ... (socket activation's; LISTEN_PID is then set to warren's
/// pid by a shell that execs it, as systemd sets it in the child it
/// forks). Returns the server (its port is `port`).
fn start(dir: TempDir, mpm: &str, listen: &str, port: u16, env: &[(&str, String)], fds: &[RawFd]) -> Server {
    let conf = dir.write("warren.conf", base_config(mpm, listen, ""));
    let mut cmd = if fds.is_empty() {
        Command::new(BIN)
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", "export LISTEN_PID=$$; exec \"$0\" \"$@\"", BIN]);
        let fds = fds.to_vec();
        // SAFETY: only fcntl and dup2, between fork and exec.
        unsafe {
            c.pre_exec(move || {
                // Out of the way first, so that no dup2 onto 3, 4, ...
                // closes a descriptor still to be moved; the copies are
                // closed by warren, which keeps 3 .. 3+LISTEN_FDS only.
                let mut high = Vec::with_capacity(fds.len());
                for &fd in &fds {
                    let copy = libc::fcntl(fd, libc::F_DUPFD, 64);
                    if copy < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    high.push(copy);
                }
                for (i, &fd) in high.iter().enumerate() {
                    // The copy dup2 makes is not close-on-exec.
                    if libc::dup2(fd, 3 + i as i32) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        c
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.arg("-f").arg(&conf).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start warren");
    Server { child: Some(child), port, dir, conf, relay: None }
}

fn notify_env(path: &Path) -> (&'static str, String) {
    ("NOTIFY_SOCKET", path.display().to_string())
}

fn notify_ready_reload_stop(mpm: &str) {
    let dir = TempDir::new(&format!("sd-notify-{mpm}"));
    standard_site(&dir);
    let socket_path = dir.0.join("notify.sock");
    let mut notes = Notifications::bind(&socket_path);
    let port = free_port();
    let mut s = start(dir, mpm, &format!("Listen 127.0.0.1:{port}"), port, &[notify_env(&socket_path)], &[]);

    let ready = notes.wait_for("READY=1");
    assert!(ready.lines().any(|l| l.starts_with("STATUS=") && l.contains("requests/s") && l.contains("busy workers")), "{ready:?}");
    assert_eq!(s.get("/a.txt").status, 200);
    // STATUS= goes on each second, with the request just served counted.
    let status = notes.wait_for_status_with_requests();
    assert!(status.contains("requests/s"), "{status}");

    unsafe_kill(s.pid(), libc::SIGHUP);
    let before = monotonic_usec();
    let reloading = notes.wait_for("RELOADING=1");
    let stamp: u64 = reloading.lines().find_map(|l| l.strip_prefix("MONOTONIC_USEC=")).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no MONOTONIC_USEC in {reloading:?}"));
    // The stamp is CLOCK_MONOTONIC's, taken when warren got the signal.
    assert!(stamp + 20_000_000 > before && stamp <= monotonic_usec(), "MONOTONIC_USEC={stamp}, the test's clock {before}");
    notes.wait_for("READY=1");
    s.wait_log("error.log", "graceful restart, new children");
    assert_eq!(s.get("/a.txt").status, 200);

    assert_eq!(s.stop(), Some(0));
    notes.wait_for("STOPPING=1");
}

impl Notifications {
    /// Waits for a STATUS= line that counts requests.
    fn wait_for_status_with_requests(&mut self) -> String {
        self.wait_until("STATUS= counting requests", |message| {
            message.lines().filter_map(|l| l.strip_prefix("STATUS=")).find(|st| st.split(' ').next().and_then(|r| r.parse::<f64>().ok()).is_some_and(|r| r > 0.0)).map(str::to_string)
        })
    }
}

fn monotonic_usec() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: t is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
}

/// WatchdogSec=3: WATCHDOG=1 comes every 1.5 s (half the interval), to
/// an abstract socket (`@name`). A gap of the whole interval is when
/// systemd would kill warren; one shorter than half of it is warren
/// sending more often than it says.
fn watchdog_to_an_abstract_socket(mpm: &str) {
    use std::os::linux::net::SocketAddrExt;
    let dir = TempDir::new(&format!("sd-watchdog-{mpm}"));
    standard_site(&dir);
    let name = format!("warren-test-notify-{}-{mpm}", std::process::id());
    let socket = UnixDatagram::bind_addr(&std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut notes = Notifications { socket, seen: Vec::new() };
    let port = free_port();
    let _s = start(dir, mpm, &format!("Listen 127.0.0.1:{port}"), port, &[("NOTIFY_SOCKET", format!("@{name}")), ("WATCHDOG_USEC", "3000000".into())], &[]);
    notes.wait_for("READY=1");
    let mut at = Vec::new();
    for _ in 0..3 {
        notes.wait_for("WATCHDOG=1");
        at.push(Instant::now());
    }
    for gap in at.windows(2).map(|w| w[1] - w[0]) {
        assert!(gap >= Duration::from_millis(1400) && gap < Duration::from_secs(3), "WATCHDOG=1 {gap:?} after the one before; received {:?}", notes.seen);
    }
}

/// A NOTIFY_SOCKET that is gone: one warning, and warren serves and
/// restarts as ever.
fn notify_socket_gone(mpm: &str) {
    let dir = TempDir::new(&format!("sd-gone-{mpm}"));
    standard_site(&dir);
    let gone = dir.0.join("no-such.sock");
    let port = free_port();
    let s = start(dir, mpm, &format!("Listen 127.0.0.1:{port}"), port, &[notify_env(&gone)], &[]);
    settle(|| connects(port) && s.dir.0.join("warren.pid").exists());
    assert_eq!(s.get("/a.txt").status, 200);
    // READY=1 and RELOADING=1 were both tried by the time the restart is logged.
    s.wait_log("error.log", "cannot notify systemd");
    unsafe_kill(s.pid(), libc::SIGHUP);
    let log = s.wait_log("error.log", "graceful restart, new children");
    assert_eq!(log.matches("NOTIFY_SOCKET=").count(), 1, "{log}");
    assert!(log.contains(&format!("NOTIFY_SOCKET={}: cannot notify systemd", gone.display())), "{log}");
    assert_eq!(s.get("/a.txt").status, 200);
}

fn connects(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// A listener bound by the test (as systemd's .socket unit would) and
/// passed as descriptor 3: warren serves on it, and a graceful restart
/// under load refuses no connection.
fn socket_activation(mpm: &str) {
    let dir = TempDir::new(&format!("sd-activation-{mpm}"));
    standard_site(&dir);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let s = start(dir, mpm, &format!("Listen 127.0.0.1:{port}"), port, &[("LISTEN_FDS", "1".into()), ("LISTEN_FDNAMES", "http".into())], &[listener.as_raw_fd()]);
    // The test's listener is still open here: warren could not have bound
    // this port itself (no SO_REUSEPORT), so it serves on the one passed.
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
    let log = s.read_log("error.log");
    assert!(!log.contains("LISTEN_FDS") && !log.contains("passed by systemd"), "{log}");

    let load = start_load(port, 4);
    load.wait_more(50);
    unsafe_kill(s.pid(), libc::SIGHUP);
    s.wait_log("error.log", "graceful restart, new children");
    load.wait_more(100);
    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "{} of {} failed: {:?}", failures.len(), ok + failures.len() as u64, &failures[..failures.len().min(5)]);
    drop(listener);
}

/// `systemctl restart` with socket activation: warren stops, systemd keeps
/// the socket, a client connecting meanwhile waits in its queue and is
/// served by the next warren. (warren shuts the sockets it bound itself
/// down at a stop, so that clients are refused and go elsewhere; a passed
/// one it must leave listening.)
fn a_stop_leaves_the_passed_socket_listening(mpm: &str) {
    let dir = TempDir::new(&format!("sd-stop-{mpm}"));
    standard_site(&dir);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let listen = format!("Listen 127.0.0.1:{port}");
    let env = [("LISTEN_FDS", "1".to_string())];
    let mut first = start(dir, mpm, &listen, port, &env, &[listener.as_raw_fd()]);
    assert_eq!(first.get("/a.txt").status, 200);
    assert!(first.stop().is_some(), "warren did not stop");

    // Nothing serves now: the connection must be queued, not refused.
    let mut waiting = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("{mpm}: a connection while warren is stopped: {e} (the passed socket no longer listens)"));
    waiting.write_all(b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let next_dir = TempDir::new(&format!("sd-stop2-{mpm}"));
    standard_site(&next_dir);
    let _next = start(next_dir, mpm, &listen, port, &env, &[listener.as_raw_fd()]);
    waiting.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let answer = read_to_close(&mut waiting);
    assert!(answer.starts_with(b"HTTP/1.1 200 ") && answer.ends_with(b"0123456789abcdefghij"), "{mpm}: the queued connection got {:?}", String::from_utf8_lossy(&answer));
    drop(listener);
}

/// A passed socket no Listen line takes, and a Listen line no passed
/// socket matches: each is a warning naming the directive; warren serves
/// on both Listen lines.
fn activation_mismatches_are_named(mpm: &str) {
    let dir = TempDir::new(&format!("sd-mismatch-{mpm}"));
    standard_site(&dir);
    let passed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stray = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = passed.local_addr().unwrap().port();
    let stray_port = stray.local_addr().unwrap().port();
    let own_port = free_port();
    let listen = format!("Listen 127.0.0.1:{port}\nListen 127.0.0.1:{own_port}");
    let s = start(dir, mpm, &listen, port, &[("LISTEN_FDS", "2".into()), ("LISTEN_FDNAMES", "web:extra".into())], &[passed.as_raw_fd(), stray.as_raw_fd()]);
    assert_eq!(s.get("/a.txt").status, 200);
    let log = s.wait_log("error.log", "no Listen directive");
    assert!(log.contains(&format!("socket 127.0.0.1:{stray_port} passed by systemd as descriptor 4 (FileDescriptorName extra): no Listen directive names its address")), "{log}");
    assert!(log.contains(&format!("Listen 127.0.0.1:{own_port}: systemd passed no socket for this address")), "{log}");
    settle(|| connects(own_port));
    assert_eq!(get_in_thread(own_port, "/a.txt", Duration::from_secs(10)).join().unwrap().status, 200);
    drop((passed, stray));
}

/// A graceful restart whose configuration drops the passed socket's
/// Listen line, then one that names it again: the second takes the same
/// socket (warren could not bind the port: the test holds it too), and a
/// connection made while no Listen line named it waits in its queue.
fn a_passed_socket_outlives_its_listen_line(mpm: &str) {
    let dir = TempDir::new(&format!("sd-outlives-{mpm}"));
    standard_site(&dir);
    let passed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = passed.local_addr().unwrap().port();
    let own_port = free_port();
    let both = format!("Listen 127.0.0.1:{port}\nListen 127.0.0.1:{own_port}");
    let s = start(dir, mpm, &both, port, &[("LISTEN_FDS", "1".into())], &[passed.as_raw_fd()]);
    assert_eq!(s.get("/a.txt").status, 200);
    let restarted = |n: usize| {
        unsafe_kill(s.pid(), libc::SIGHUP);
        settle(|| s.read_log("error.log").matches("graceful restart, new children").count() >= n);
        let log = s.read_log("error.log");
        assert_eq!(log.matches("graceful restart, new children").count(), n, "{log}");
    };
    std::fs::write(&s.conf, base_config(mpm, &format!("Listen 127.0.0.1:{own_port}"), "")).unwrap();
    restarted(1);
    // Nobody takes this one now; it waits in the passed socket's queue.
    let mut waiting = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    waiting.write_all(b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    waiting.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    std::fs::write(&s.conf, base_config(mpm, &both, "")).unwrap();
    restarted(2);
    assert_eq!(parse_response(&read_to_close(&mut waiting)).0.status, 200);
    assert_eq!(s.get("/a.txt").status, 200);
    let log = s.read_log("error.log");
    assert!(!log.contains("could not bind"), "{log}");
    drop(passed);
}

/// A transient service made by `systemd-run`, stopped and forgotten when dropped.
struct TransientUnit(String);

impl Drop for TransientUnit {
    fn drop(&mut self) {
        let _ = Command::new("systemctl").args(["stop", &self.0]).status();
        let _ = Command::new("systemctl").args(["reset-failed", &self.0]).stderr(Stdio::null()).status();
    }
}

fn systemctl(args: &[&str]) -> (bool, String) {
    let out = Command::new("systemctl").args(args).output().expect("run systemctl");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// Where systemd runs the machine: warren as a real Type=notify service,
/// started (systemd-run returns once READY=1 came), reloaded (systemctl
/// waits for RELOADING=1 and READY=1) and stopped.
fn under_systemd_run(mpm: &str) {
    let state = Command::new("systemctl").arg("is-system-running").output().map_or_else(|e| format!("no systemctl: {e}"), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if !matches!(state.as_str(), "running" | "degraded") {
        println!("skipped: systemd does not run this machine (systemctl is-system-running: {state})");
        return;
    }
    let dir = TempDir::new(&format!("sd-run-{mpm}"));
    standard_site(&dir);
    let port = free_port();
    let conf = dir.write("warren.conf", base_config(mpm, &format!("Listen 127.0.0.1:{port}"), ""));
    let unit = TransientUnit(format!("warren-test-{}-{mpm}.service", std::process::id()));
    let started = Command::new("systemd-run")
        .arg(format!("--unit={}", unit.0))
        .args(["--property=Type=notify", "--property=NotifyAccess=main", "--property=KillMode=mixed", "--property=TimeoutStartSec=30", "--property=ExecReload=/bin/kill -HUP $MAINPID"])
        .arg(BIN)
        .arg("-f")
        .arg(&conf)
        .status()
        .expect("run systemd-run");
    assert!(started.success(), "systemd-run: {started}; {}", systemctl(&["status", &unit.0]).1);
    assert_eq!(get_in_thread(port, "/a.txt", Duration::from_secs(10)).join().unwrap().status, 200);
    let (reloaded, out) = systemctl(&["reload", &unit.0]);
    assert!(reloaded, "systemctl reload: {out}");
    let log = || std::fs::read_to_string(dir.0.join("error.log")).unwrap_or_default();
    // The error log is written out every quarter second or so.
    settle(|| log().contains("graceful restart"));
    assert!(log().contains("graceful restart"), "{}", log());
    let (_, status) = systemctl(&["show", "--property=StatusText", &unit.0]);
    assert!(status.contains("requests/s"), "{status}");
    let (stopped, out) = systemctl(&["stop", &unit.0]);
    assert!(stopped, "systemctl stop: {out}");
}

/// packaging/warren.service and warren.socket, as systemd reads them:
/// `systemd-analyze verify` finds no unknown directive or bad value (run on
/// copies whose ExecStart is this build's warren, which it checks exists;
/// the man page is the package's, so not looked for).
#[test]
fn the_unit_files_verify() {
    let dir = TempDir::new("sd-units");
    let packaging = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging");
    for name in ["warren.service", "warren.socket"] {
        let text = std::fs::read_to_string(packaging.join(name)).unwrap();
        dir.write(name, text.replace("/usr/sbin/warren", BIN));
    }
    let out = Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(dir.0.join("warren.service")).arg(dir.0.join("warren.socket")).output().expect("run systemd-analyze (Debian's systemd package)");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "systemd-analyze verify: {}\n{said}", out.status);
}

each_mpm!(notify_ready_reload_stop, watchdog_to_an_abstract_socket, notify_socket_gone, socket_activation, a_stop_leaves_the_passed_socket_listening, activation_mismatches_are_named, a_passed_socket_outlives_its_listen_line, under_systemd_run);
