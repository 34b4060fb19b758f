//! Two warren hosts behind Debian's HAProxy, as a site scaled out to two
//! machines runs them (issue 36, item 4): each warren in a network
//! namespace of its own (`ip netns`, a veth pair to the host), listening on
//! its namespace's address only, with `RemoteIPProxyProtocol On`; HAProxy on
//! the host's loopback balances them round robin with `send-proxy-v2` and
//! HTTP health checks (sent with the PROXY header too). Under a client load
//! through HAProxy, one host is stopped with `-k graceful-stop` and started
//! again: not one request fails, HAProxy sees the host go DOWN and come back
//! UP (its stats socket says so), the restarted host serves again, and the
//! hosts log the clients' address that HAProxy passed on, not HAProxy's.
//!
//! Needs root (namespaces, veth) and haproxy (test.sh installs it). About
//! 10 s per MPM; every wait is a poll with a deadline.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const HAPROXY: &str = "/usr/sbin/haproxy";
/// The port each host listens on, in its own namespace.
const HOST_PORT: u16 = 8080;

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// A network namespace joined to the host by a veth pair: the host's end
/// is `host_addr`, the namespace's `addr` (a /30 between them). Removed on
/// drop (which removes the pair too).
struct Netns {
    name: String,
    addr: String,
    host_addr: String,
}

impl Netns {
    /// `slot`: distinct for each namespace of this process (the addresses
    /// and names also carry the process id, for runs side by side).
    fn new(slot: u32) -> Netns {
        let pid = std::process::id();
        let name = format!("warren-{pid}-{slot}");
        // 10.237.X.Y/30: X and the pair's place in it from the pid and the slot.
        let n = (pid % 2048) * 8 + slot;
        let (x, y) = (n / 64, (n % 64) * 4);
        let host_addr = format!("10.237.{x}.{}", y + 1);
        let addr = format!("10.237.{x}.{}", y + 2);
        let (host_if, ns_if) = (format!("wh{pid}x{slot}"), format!("wn{pid}x{slot}"));
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run(Command::new("ip").args(["netns", "add", &name]));
        let ns = Netns { name, addr, host_addr };
        run(Command::new("ip").args(["link", "add", &host_if, "type", "veth", "peer", "name", &ns_if]));
        run(Command::new("ip").args(["link", "set", &ns_if, "netns", &ns.name]));
        run(Command::new("ip").args(["addr", "add", &format!("{}/30", ns.host_addr), "dev", &host_if]));
        run(Command::new("ip").args(["link", "set", &host_if, "up"]));
        for args in [vec!["addr", "add", &format!("{}/30", ns.addr), "dev", &ns_if], vec!["link", "set", &ns_if, "up"], vec!["link", "set", "lo", "up"]] {
            run(Command::new("ip").args(["netns", "exec", &ns.name, "ip"]).args(args));
        }
        ns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// A warren host in its namespace, serving `dir`'s htdocs.
struct Host {
    dir: TempDir,
    conf: PathBuf,
    ns: Netns,
    child: Option<Child>,
}

impl Host {
    fn new(mpm: &str, slot: u32) -> Host {
        let ns = Netns::new(slot);
        let dir = TempDir::new(&format!("haproxy-{mpm}-{slot}"));
        standard_site(&dir);
        dir.write("htdocs/check.txt", "up");
        let extra = "RemoteIPProxyProtocol On\nGracefulShutdownTimeout 10\nLogFormat \"%a %U %>s\" client\nCustomLog clients.log client";
        let conf = dir.write("warren.conf", base_config(mpm, &format!("Listen {}:{HOST_PORT}", ns.addr), extra));
        let mut host = Host { dir, conf, ns, child: None };
        host.start();
        host
    }

    fn start(&mut self) {
        let _ = std::fs::remove_file(self.dir.0.join("warren.pid"));
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns.name, BIN, "-f"])
            .arg(&self.conf)
            .current_dir(&self.dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start warren in its namespace");
        self.child = Some(child);
        // Up once its PidFile is whole and its address (from the host,
        // through the veth) answers with a PROXY header, as HAProxy's.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !(std::fs::read_to_string(self.dir.0.join("warren.pid")).is_ok_and(|t| t.ends_with('\n')) && self.answers_check()) {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("warren in {} exited with {status}: {}", self.ns.name, self.dir.0.join("error.log").display());
            }
            assert!(Instant::now() < deadline, "warren in {} did not answer within 20 s:\n{}", self.ns.name, std::fs::read_to_string(self.dir.0.join("error.log")).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// GET /check.txt from the host's end, with a PROXY v1 header for a
    /// client at 192.0.2.7 (as a health check would, in text).
    fn answers_check(&self) -> bool {
        let Ok(mut s) = TcpStream::connect((self.ns.addr.as_str(), HOST_PORT)) else { return false };
        s.set_read_timeout(Some(Duration::from_secs(5))).ok();
        let req = format!("PROXY TCP4 192.0.2.7 {} 40000 {HOST_PORT}\r\nGET /check.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", self.ns.addr);
        s.write_all(req.as_bytes()).is_ok() && read_to_close(&mut s).starts_with(b"HTTP/1.1 200 ")
    }

    /// `warren -k graceful-stop`, then waits for the parent to exit.
    fn graceful_stop(&mut self) {
        run(Command::new(BIN).arg("-f").arg(&self.conf).args(["-k", "graceful-stop"]).current_dir(&self.dir.0));
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().expect("wait").is_none() {
            assert!(Instant::now() < deadline, "warren in {} still runs 30 s after graceful-stop", self.ns.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The client addresses of the requests for `path` logged so far.
    fn clients_of(&self, path: &str) -> Vec<String> {
        let log = std::fs::read_to_string(self.dir.0.join("clients.log")).unwrap_or_default();
        log.lines().filter_map(|l| l.split_once(' ').filter(|(_, rest)| rest.starts_with(&format!("{path} "))).map(|(a, _)| a.to_string())).collect()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            terminate(child, STOP_GRACE);
        }
    }
}

/// Debian's HAProxy in front of the hosts, on a loopback port.
struct Haproxy {
    child: Option<Child>,
    port: u16,
    stats: PathBuf,
}

impl Haproxy {
    fn start(dir: &TempDir, hosts: &[(&str, &str)]) -> Haproxy {
        let port = free_port();
        let stats = dir.0.join("haproxy.sock");
        let servers: String = hosts.iter().map(|(name, addr)| format!("    server {name} {addr}:{HOST_PORT} send-proxy-v2 check check-send-proxy inter 200ms fall 2 rise 2\n")).collect();
        // Its usual settings for a drain: a request that finds a server
        // gone (refused, or a kept-alive connection closed under it) is
        // retried on the other. A check waits up to 5 s for its answer
        // (by default it waits `inter`, 200 ms: on a loaded machine both
        // hosts were then marked DOWN and HAProxy answered 503 itself); a
        // stopped host refuses at once, so it is still found out in 400 ms.
        let cfg = dir.write(
            "haproxy.cfg",
            format!(
                "global\n    maxconn 1000\n    stats socket {} mode 600 level admin\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\n    timeout check 5s\n    option redispatch\n    retries 3\n    retry-on conn-failure empty-response response-timeout\nfrontend web\n    bind 127.0.0.1:{port}\n    default_backend warren\nbackend warren\n    balance roundrobin\n    option httpchk GET /check.txt\n{servers}",
                stats.display()
            ),
        );
        let log = std::fs::File::create(dir.0.join("haproxy.log")).unwrap();
        let child = Command::new(HAPROXY).arg("-f").arg(&cfg).arg("-db").stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log).spawn().expect("start haproxy");
        Haproxy { child: Some(child), port, stats }
    }

    /// Each server's status as HAProxy's stats give it (UP, DOWN, ...).
    fn states(&self) -> HashMap<String, String> {
        let Ok(mut s) = UnixStream::connect(&self.stats) else { return HashMap::new() };
        s.set_read_timeout(Some(Duration::from_secs(5))).ok();
        if s.write_all(b"show stat\n").is_err() {
            return HashMap::new();
        }
        let mut csv = String::new();
        let _ = s.read_to_string(&mut csv);
        let mut lines = csv.lines();
        let Some(head) = lines.next() else { return HashMap::new() };
        let column = |name: &str| head.trim_start_matches("# ").split(',').position(|c| c == name);
        let (Some(sv), Some(status)) = (column("svname"), column("status")) else { return HashMap::new() };
        lines.map(|l| l.split(',').collect::<Vec<_>>()).filter(|f| f.len() > status).map(|f| (f[sv].to_string(), f[status].to_string())).collect()
    }

    /// Polls the stats until `server`'s status starts with `want`.
    fn wait_state(&self, server: &str, want: &str, log: &Path) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let states = self.states();
            if states.get(server).is_some_and(|s| s.starts_with(want)) {
                return;
            }
            assert!(Instant::now() < deadline, "HAProxy never saw {server} {want}: {states:?}\n{}", std::fs::read_to_string(log).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            terminate(child, STOP_GRACE);
        }
    }
}

/// Polls until `more` requests for `path` beyond `before` are in `host`'s log.
fn wait_logged(host: &Host, path: &str, before: usize, more: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while host.clients_of(path).len() < before + more {
        assert!(Instant::now() < deadline, "{} logged {} requests for {path}, waited for {}", host.ns.name, host.clients_of(path).len(), before + more);
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn graceful_stop_behind_haproxy_loses_no_request(mpm: &str) {
    assert!(unsafe { libc::geteuid() } == 0, "haproxy_netns.rs needs root: network namespaces and veth pairs");
    assert!(Path::new(HAPROXY).exists(), "{HAPROXY} is missing: apt-get install haproxy (test.sh does)");
    let slot = match mpm {
        "event" => 0,
        "worker" => 2,
        _ => 4,
    };
    let mut a = Host::new(mpm, slot);
    let b = Host::new(mpm, slot + 1);
    let dir = TempDir::new(&format!("haproxy-{mpm}"));
    let (a_addr, b_addr) = (a.ns.addr.clone(), b.ns.addr.clone());
    let lb = Haproxy::start(&dir, &[("a", &a_addr), ("b", &b_addr)]);
    let haproxy_log = dir.0.join("haproxy.log");
    lb.wait_state("a", "UP", &haproxy_log);
    lb.wait_state("b", "UP", &haproxy_log);

    let load = start_load(lb.port, 8);
    load.wait_more(300);
    wait_logged(&a, "/a.txt", 0, 20);
    wait_logged(&b, "/a.txt", 0, 20);

    a.graceful_stop();
    lb.wait_state("a", "DOWN", &haproxy_log);
    load.wait_more(300);
    let a_served_before = a.clients_of("/a.txt").len();
    a.start();
    lb.wait_state("a", "UP", &haproxy_log);
    // Back in the rotation: it serves HAProxy's clients again.
    wait_logged(&a, "/a.txt", a_served_before, 20);
    load.wait_more(300);
    let (ok, failures) = load.finish();

    assert!(failures.is_empty(), "{} of {} requests through HAProxy failed over a graceful stop and restart ({mpm}): {:?}", failures.len(), ok + failures.len() as u64, &failures[..failures.len().min(5)]);
    // send-proxy-v2 took effect: the hosts saw HAProxy's clients (the
    // test's, on 127.0.0.1), not HAProxy's address on the veth.
    for host in [&a, &b] {
        let clients = host.clients_of("/a.txt");
        assert!(!clients.is_empty(), "{} served nothing", host.ns.name);
        assert!(clients.iter().all(|c| c == "127.0.0.1"), "{}: clients {:?} (expected the PROXY header's 127.0.0.1, not {})", host.ns.name, clients.iter().filter(|c| *c != "127.0.0.1").take(3).collect::<Vec<_>>(), host.ns.host_addr);
    }
    eprintln!("{mpm}: {ok} requests through HAProxy, 0 failed; host a graceful-stopped and restarted");
}

each_mpm!(graceful_stop_behind_haproxy_loses_no_request);
