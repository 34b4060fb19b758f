//! Test harness: write a config and a document root into a fresh directory,
//! start the real `warren` binary on a free loopback port, and talk to it
//! with raw sockets or curl.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub mod envvars;
pub mod h2;
pub mod ocsp;
pub mod tls;

pub const BIN: &str = env!("CARGO_BIN_EXE_warren");

/// Whether this test binary runs its suite over TLS: a binary whose name
/// ends in `_tls` (static_files_tls.rs, protocol_tls.rs) includes a plain
/// suite's file and runs it with the main server on TLS, through a
/// [`tls::Relay`] (see [`Server::start`]).
pub const fn over_tls() -> bool {
    let name = env!("CARGO_CRATE_NAME").as_bytes();
    let n = name.len();
    n > 4 && name[n - 4] == b'_' && name[n - 3] == b't' && name[n - 2] == b'l' && name[n - 1] == b's'
}

/// The scheme the suite's clients use in the end: "https" over TLS.
pub const fn scheme() -> &'static str {
    if over_tls() {
        "https"
    } else {
        "http"
    }
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("warren-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("htdocs")).unwrap();
        TempDir(p)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits (up to 20 s) until the server has read everything `client` sent
/// (the server's end of the connection has an empty receive queue in
/// /proc/net/tcp): it has accepted the connection and taken the request in,
/// which a fixed sleep only makes likely.
pub fn wait_server_read(client: &TcpStream) {
    let (local, peer) = (client.local_addr().unwrap().port(), client.peer_addr().unwrap().port());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // Rows: sl local_address rem_address st tx_queue:rx_queue ...; ports in hex.
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let unread = table.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let port = |a: &str| a.rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            (f.len() > 4 && port(f[1]) == Some(peer) && port(f[2]) == Some(local)).then(|| f[4].rsplit_once(':').and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok()).unwrap_or(1))
        });
        if unread == Some(0) {
            return;
        }
        assert!(Instant::now() < deadline, "the server did not read the request within 20 s (unread: {unread:?})");
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if given_once(port) {
            return port;
        }
    }
}

/// A test's threads run side by side: the kernel may give two of them the
/// same free port one after the other, and the second server would then
/// find it taken, or a readiness check the first server. So a port is
/// handed out once per test process.
fn given_once(port: u16) -> bool {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> = std::sync::Mutex::new(std::collections::BTreeSet::new());
    GIVEN.lock().unwrap_or_else(|e| e.into_inner()).insert(port)
}

/// A free port below the kernel's ephemeral range (32768 and up), for a
/// peer started long after the port is chosen (a responder named in a
/// certificate made before it runs): an ephemeral port may meanwhile
/// become the local port of any connection on the machine.
#[allow(dead_code)]
pub fn free_port_to_bind_later() -> u16 {
    let start = 20_000 + (std::process::id() % 6_000) as u16;
    (start..32_000).chain(10_000..start).find(|&port| TcpListener::bind(("0.0.0.0", port)).is_ok() && given_once(port)).expect("a free port below 32000")
}

pub struct Server {
    pub child: Option<Child>,
    /// Where the tests connect: warren's port, or over TLS the relay's.
    pub port: u16,
    pub dir: TempDir,
    pub conf: PathBuf,
    /// Over TLS ([`over_tls`]): the relay to warren's TLS port, which is
    /// `relay.1`.
    pub relay: Option<(tls::Relay, u16)>,
}

/// A site with a few files most tests use.
pub fn standard_site(dir: &TempDir) {
    dir.write("htdocs/index.html", "<html>hello</html>\n");
    dir.write("htdocs/a.txt", "0123456789abcdefghij");
    dir.write("htdocs/sub/page.html", "sub page");
    dir.write("htdocs/noindex/file.txt", "x");
    dir.write("htdocs/space name.txt", "spaced");
}

/// The configuration every test server starts from, with `listen` (its
/// Listen lines) and `extra` appended.
pub fn base_config(mpm: &str, listen: &str, extra: &str) -> String {
    // Two children, and spare bounds that leave them be when idle.
    let tuning = match mpm {
        "prefork" => "StartServers 2\nMinSpareServers 1\nMaxSpareServers 8\nMaxRequestWorkers 32",
        _ => "StartServers 2\nThreadsPerChild 4\nMinSpareThreads 1\nMaxSpareThreads 16\nMaxRequestWorkers 32",
    };
    format!("LoadModule mpm_{mpm}_module modules/mod_mpm_{mpm}.so\n{listen}\nServerName localhost\nDocumentRoot htdocs\nPidFile warren.pid\nErrorLog error.log\nLogLevel info\nCustomLog access.log combined\nUser nobody\nGroup nogroup\n{tuning}\n{extra}\n")
}

impl Server {
    /// Starts warren with `extra` appended to a minimal config. In a
    /// binary that runs its suite over TLS ([`over_tls`]), the main server
    /// (and the virtual hosts, which inherit it) has `SSLEngine on` and the
    /// test certificate for localhost and 127.0.0.1, and `port` is a
    /// relay's plain port that carries each connection over TLS to warren.
    pub fn start(mpm: &str, extra: &str) -> Server {
        let dir = TempDir::new(mpm);
        standard_site(&dir);
        Server::start_in(dir, mpm, extra)
    }

    pub fn start_in(dir: TempDir, mpm: &str, extra: &str) -> Server {
        Server::start_with_args(dir, mpm, extra, &[])
    }

    /// Starts warren with `args` before `-f` (`-R`, for a test that runs
    /// it as root on purpose). The base configuration runs the children as
    /// nobody, as a root warren refuses to run them as root without -R (a
    /// later `User` in `extra` wins; neither matters when the tests are
    /// not run as root, as warren then cannot change user).
    pub fn start_with_args(dir: TempDir, mpm: &str, extra: &str, args: &[&str]) -> Server {
        Server::start_with(dir, mpm, extra, args, None)
    }

    /// Starts warren in a memory cgroup: it and every process it starts.
    pub fn start_in_cgroup(dir: TempDir, mpm: &str, extra: &str, cgroup: &MemoryCgroup) -> Server {
        Server::start_with(dir, mpm, extra, &[], Some(&cgroup.dir.join("cgroup.procs")))
    }

    fn start_with(mut dir: TempDir, mpm: &str, extra: &str, args: &[&str], cgroup_procs: Option<&Path>) -> Server {
        // The port is free when chosen, but until warren binds it another
        // test's client may take it as its own end of a connection: then
        // warren cannot bind, and is started again on another port.
        for attempt in 1.. {
            // No test removes an account while warren reads them at start.
            let _accounts = ACCOUNTS.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            let port = free_port();
            let tls_lines = if over_tls() { tls::Certs::make(&dir.0).directives("localhost") } else { String::new() };
            let conf = dir.write("warren.conf", base_config(mpm, &format!("Listen 127.0.0.1:{port}"), &format!("{tls_lines}{extra}")));
            let mut cmd = Command::new(BIN);
            if let Some(procs) = cgroup_procs {
                let procs = std::ffi::CString::new(procs.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: open, write and close, between fork and exec.
                unsafe {
                    std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                        // "0": the process that writes it.
                        if fd < 0 || libc::write(fd, b"0\n".as_ptr().cast(), 2) != 2 {
                            return Err(std::io::Error::last_os_error());
                        }
                        libc::close(fd);
                        Ok(())
                    });
                }
            }
            let child = cmd
                .args(args)
                .arg("-f")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start warren");
            let mut s = Server { child: Some(child), port, dir, conf, relay: None };
            match s.wait_ready() {
                Ok(()) => {
                    if over_tls() {
                        let relay = tls::Relay::start(port, &s.dir.0.join("tls/ca.pem"));
                        s.port = relay.port;
                        s.relay = Some((relay, port));
                    }
                    return s;
                }
                Err(err) if attempt < 5 && err.contains("could not bind to address") => {
                    s.child = None;
                    dir = std::mem::replace(&mut s.dir, TempDir(PathBuf::new()));
                    let _ = std::fs::remove_file(dir.0.join("error.log"));
                }
                Err(err) => panic!("{err}"),
            }
        }
        unreachable!()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            // The port accepts once bound; the server is up once its PidFile is
            // written: whole, with its newline (it is created empty first).
            let pid_written = std::fs::read_to_string(self.dir.0.join("warren.pid")).is_ok_and(|t| t.ends_with('\n'));
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() && pid_written {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                let mut err = String::new();
                self.child.as_mut().unwrap().stderr.take().unwrap().read_to_string(&mut err).unwrap();
                return Err(format!("warren exited with {status}: {err}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("warren did not start listening on {}", self.port))
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// Sends raw bytes and reads until the server closes (or 10 s pass).
    pub fn raw(&self, request: &[u8]) -> Vec<u8> {
        self.exchange(request).0
    }

    /// `GET target` (its bytes sent as they are, which need not be UTF-8)
    /// on a connection of its own.
    pub fn get_target(&self, target: &[u8]) -> Resp {
        let mut req = b"GET ".to_vec();
        req.extend_from_slice(target);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let answer = self.raw(&req);
        assert!(answer.windows(4).any(|w| w == b"\r\n\r\n"), "{}: no answer; error log:\n{}", String::from_utf8_lossy(target), self.read_log("error.log"));
        parse_response(&answer).0
    }

    /// [`Server::raw`], and how the connection ended (see [`read_to_end_of`]).
    pub fn exchange(&self, request: &[u8]) -> (Vec<u8>, String) {
        let mut s = self.connect();
        s.write_all(request).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Write);
        read_to_end_of(&mut s)
    }

    pub fn get(&self, path: &str) -> Resp {
        self.get_from("localhost", path)
    }

    /// A GET with this Host: for virtual hosts.
    pub fn get_from(&self, host: &str, path: &str) -> Resp {
        let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        let (answer, how) = self.exchange(req.as_bytes());
        // What the server logged goes with an answer that is not one.
        assert!(answer.windows(4).any(|w| w == b"\r\n\r\n"), "GET {path}: answer {:?}, {how}; error log:\n{}", String::from_utf8_lossy(&answer), self.read_log("error.log"));
        parse_response(&answer).0
    }

    /// A request with extra header lines (each ending in \r\n).
    pub fn get_with(&self, path: &str, headers: &str) -> Resp {
        let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n");
        parse_response(&self.raw(req.as_bytes())).0
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// The parent's child processes.
    pub fn children(&self) -> Vec<u32> {
        children_of(self.pid())
    }

    /// The php-cgi children of warren's own pools.
    pub fn php_cgi_children(&self) -> Vec<u32> {
        self.children()
            .into_iter()
            .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "php-cgi"))
            .collect()
    }

    /// Waits (up to 20 s; a loaded machine starts php-cgi slowly) until the
    /// server has `n` php-cgi children.
    pub fn wait_php_children(&self, n: usize) -> Vec<u32> {
        wait_for_count(n, || self.php_cgi_children())
    }

    /// Waits (up to 20 s: a loaded machine forks slowly; an idle one
    /// returns at once) until the parent has `n` children, and returns them.
    pub fn wait_children(&self, n: usize) -> Vec<u32> {
        wait_for_count(n, || self.children())
    }

    pub fn read_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.0.join(name)).unwrap_or_default()
    }

    /// Waits until `name` contains `needle` (logs are flushed about every
    /// 250 ms; up to 20 s, which only a loaded machine needs).
    pub fn wait_log(&self, name: &str, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = self.read_log(name);
            if log.contains(needle) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM and wait; returns the exit status code.
    pub fn stop(&mut self) -> Option<i32> {
        terminate(self.child.take()?, STOP_GRACE)
    }
}

/// How long a stopped warren is given before it is killed: more than it
/// takes at worst (15 s for its children, 3 s for its pools, 3 s for piped
/// logs), so that it still removes what it made (its pools' socket directory).
pub const STOP_GRACE: Duration = Duration::from_secs(25);

/// SIGTERM, then SIGKILL if `child` has not exited within `wait`; its exit
/// code if it exited by itself.
pub fn terminate(mut child: Child, wait: Duration) -> Option<i32> {
    unsafe_kill(child.id(), 15);
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if let Ok(Some(st)) = child.try_wait() {
            return st.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = self.child.take() {
            terminate(c, STOP_GRACE);
        }
    }
}

/// The nobody user's id, for files and links of another owner than the
/// tests' (which run as root).
pub fn nobody() -> u32 {
    let out = Command::new("id").args(["-u", "nobody"]).output().expect("run id");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a nobody user")
}

pub fn unsafe_kill(pid: u32, sig: i32) {
    let _ = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
}

/// Polls `list` (up to 20 s) until it has `n` entries; returns the last.
fn wait_for_count(n: usize, list: impl Fn() -> Vec<u32>) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = list();
        if c.len() == n || Instant::now() > deadline {
            return c;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the ")" of the command name: state ppid ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let ppid: u32 = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        if ppid == parent {
            out.push(pid);
        }
    }
    out
}

/// Waits (up to 10 s) until `ready` holds: a state reached after a fork or
/// a stop (a child leaving the session or changing user, descriptors let
/// go, processes gone) may take a while on a loaded machine. The assertions
/// that follow say what was wrong if it never does.
pub fn settle(ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The directory of the pools' sockets of the warren running as `warren`:
/// the one its parent holds open. (Its name starts with the pid, but a
/// warren killed outright leaves its directory behind, and pids are reused.)
pub fn socket_dir(warren: u32) -> PathBuf {
    let prefix = std::env::temp_dir().join(format!("warren-pools-{warren}-"));
    std::fs::read_dir(format!("/proc/{warren}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .find(|t| t.to_string_lossy().starts_with(&*prefix.to_string_lossy()))
        .unwrap_or_else(|| panic!("warren {warren} holds no {}*", prefix.display()))
}

/// GET `path` on a thread of its own, on a connection of its own closed by
/// the answer, waiting at most `wait` for it: for requests that must be in
/// flight together.
pub fn get_in_thread(port: u16, path: &str, wait: Duration) -> std::thread::JoinHandle<Resp> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    std::thread::spawn(move || {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(wait)).unwrap();
        c.write_all(request.as_bytes()).unwrap();
        parse_response(&read_to_close(&mut c)).0
    })
}

/// `read`, again when a signal interrupted it: a socket with a read
/// timeout (SO_RCVTIMEO) fails with EINTR on any signal the process
/// handles, SA_RESTART or not (signal(7)), and glibc handles some for
/// itself.
pub fn read_some(s: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

pub fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    read_to_end_of(s).0
}

/// What the server sent until the connection ended, and how it ended
/// (the connection's ends, the time, and a close, a reset or the 10 s
/// timeout): for the message of a test that got no answer.
pub fn read_to_end_of(s: &mut TcpStream) -> (Vec<u8>, String) {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    let ended = loop {
        match read_some(s, &mut buf) {
            Ok(0) => break "closed by the server".to_string(),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => break format!("read: {e}"),
        }
    };
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let how = format!("{ended} ({:?} -> {:?}, at {}.{:06})", s.local_addr(), s.peer_addr(), at.as_secs(), at.subsec_micros());
    (out, how)
}

#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Parses one response from the start of `data` (which answers a non-HEAD
/// request); returns it and the bytes after it.
pub fn parse_response(data: &[u8]) -> (Resp, &[u8]) {
    parse_response_for(data, false)
}

pub fn parse_response_for(data: &[u8], head_request: bool) -> (Resp, &[u8]) {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| panic!("no complete head in {:?}", String::from_utf8_lossy(data)));
    let head = std::str::from_utf8(&data[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> =
        lines.map(|l| l.split_once(": ").map(|(a, b)| (a.to_string(), b.to_string())).unwrap_or_else(|| panic!("bad header line {l:?}"))).collect();
    let rest = &data[end + 4..];
    let len = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length")).map(|(_, v)| v.parse::<usize>().unwrap());
    let no_body = head_request || status == 304 || status == 204 || status < 200;
    let chunked = headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked"));
    let (body, after) = match len {
        _ if no_body => (Vec::new(), rest),
        _ if chunked => dechunk(rest).map(|(b, used)| (b, &rest[used..])).unwrap_or_else(|| (rest.to_vec(), &rest[rest.len()..])),
        Some(n) => (rest[..n.min(rest.len())].to_vec(), &rest[n.min(rest.len())..]),
        None => (rest.to_vec(), &rest[rest.len()..]),
    };
    (Resp { status, headers, body }, after)
}

/// A complete chunked body at the start of `data`: (payload, bytes used).
pub fn dechunk(data: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut body = Vec::new();
    let mut i = 0;
    loop {
        let line_end = i + data[i..].windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[i..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        i = line_end + 2;
        if size == 0 {
            // No trailers from our server: just the final CRLF.
            return (data.len() >= i + 2).then(|| (body, i + 2));
        }
        if data.len() < i + size + 2 {
            return None;
        }
        body.extend_from_slice(&data[i..i + size]);
        i += size + 2;
    }
}

/// Whether `data` starts with a whole response (to a non-HEAD request).
pub fn response_complete(data: &[u8]) -> bool {
    let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
    let rest = &data[end + 4..];
    if head.contains("transfer-encoding: chunked") {
        return dechunk(rest).is_some();
    }
    match head.lines().find_map(|l| l.strip_prefix("content-length: ")) {
        Some(n) => rest.len() >= n.trim().parse::<usize>().unwrap_or(usize::MAX),
        None => false,
    }
}

/// Every response in a byte stream (for pipelining and keep-alive).
pub fn parse_all(mut data: &[u8]) -> Vec<Resp> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let (r, rest) = parse_response(data);
        out.push(r);
        data = rest;
    }
    out
}

pub fn status_of(data: &[u8]) -> u16 {
    let s = String::from_utf8_lossy(data);
    s.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Instantiates each named test function once per MPM warren has.
#[macro_export]
macro_rules! each_mpm {
    ($($name:ident),* $(,)?) => {
        mod event {
            $( #[test] fn $name() { super::$name("event") } )*
        }
        mod worker {
            $( #[test] fn $name() { super::$name("worker") } )*
        }
        mod prefork {
            $( #[test] fn $name() { super::$name("prefork") } )*
        }
    };
}

/// The items given, in a suite's own binary; a binary that runs the
/// suite over TLS (protocol_tls.rs) defines its own `plain_only!` that
/// drops them, before including the suite's file (a `macro_rules!` in
/// scope goes before this exported one).
#[macro_export]
macro_rules! plain_only {
    ($($item:item)*) => { $($item)* };
}

/// The items given, in a binary that runs a suite over TLS (which defines
/// its own `over_tls_only!` that keeps them); none in the suite's own.
#[macro_export]
macro_rules! over_tls_only {
    ($($item:item)*) => {};
}

/// Load from client threads: each makes one request per connection (as ab
/// without -k) until stopped, and counts answers that are not a full 200.
pub struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ok: std::sync::Arc<std::sync::atomic::AtomicU64>,
    handles: Vec<std::thread::JoinHandle<(u64, Vec<String>)>>,
}

pub fn start_load(port: u16, threads: usize) -> Load {
    start_load_on(port, threads, "/a.txt", |body| body.ends_with(b"0123456789abcdefghij"))
}

/// The same load on `path`, whose answer is whole when `whole` says so.
pub fn start_load_on(port: u16, threads: usize, path: &'static str, whole: fn(&[u8]) -> bool) -> Load {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ok_so_far = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let handles = (0..threads)
        .map(|_| {
            let stop = stop.clone();
            let ok_so_far = ok_so_far.clone();
            std::thread::spawn(move || {
                let mut ok = 0u64;
                let mut failures = Vec::new();
                // Bounded: at most 60 s of load even if the test forgets to stop it.
                let until = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                    let result = (|| -> Result<(), String> {
                        let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
                        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
                        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).map_err(|e| format!("write: {e}"))?;
                        let out = read_to_close(&mut s);
                        if out.starts_with(b"HTTP/1.1 200 ") && whole(&out) {
                            Ok(())
                        } else {
                            Err(format!("bad answer: {:?}", String::from_utf8_lossy(&out[..out.len().min(60)])))
                        }
                    })();
                    match result {
                        Ok(()) => {
                            ok += 1;
                            ok_so_far.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => failures.push(e),
                    }
                }
                (ok, failures)
            })
        })
        .collect();
    Load { stop, ok: ok_so_far, handles }
}

impl Load {
    /// Successful requests so far.
    pub fn ok_so_far(&self) -> u64 {
        self.ok.load(Ordering::SeqCst)
    }

    /// Waits until `n` more requests than now have succeeded (instead of
    /// sleeping a fixed time and hoping the machine was fast enough);
    /// panics after 30 s.
    pub fn wait_more(&self, n: u64) {
        let target = self.ok_so_far() + n;
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.ok_so_far() < target {
            assert!(Instant::now() < deadline, "load: {} of {target} requests succeeded in 30 s", self.ok_so_far());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the load; returns (successful requests, failures).
    pub fn finish(self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        let mut ok = 0;
        let mut failures = Vec::new();
        for h in self.handles {
            let (o, f) = h.join().unwrap();
            ok += o;
            failures.extend(f);
        }
        (ok, failures)
    }
}

/// `?auto` of server-status as a map of field -> value.
pub fn status_auto(s: &Server) -> std::collections::HashMap<String, String> {
    let r = s.get("/server-status?auto");
    assert_eq!(r.status, 200, "server-status: {}", r.text());
    r.text().lines().filter_map(|l| l.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string()))).collect()
}

/// Polls `?auto` of server-status until `reached` holds (up to 30 s: the
/// process counts change a child or so a second, slower on a loaded
/// machine), and returns that page; fails naming `what` if it never does.
pub fn wait_status(s: &Server, what: &str, reached: &dyn Fn(&std::collections::HashMap<String, String>) -> bool) -> std::collections::HashMap<String, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = status_auto(s);
        if reached(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "{what} never happened: {st:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A php-fpm of Debian's, started for one test in its directory: pool
/// `unix` on a socket and pool `tcp` on a loopback port, two children each.
pub struct Fpm {
    child: Option<Child>,
    pub socket: PathBuf,
    pub port: u16,
    pub conf: PathBuf,
}

/// Debian's php-fpm binary (php-fpm8.2 and the like).
pub fn php_fpm_binary() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin")
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))).collect())
        .unwrap_or_default();
    found.sort();
    found.pop().expect("php-fpm is not installed (test.sh installs it: apt-get install php-fpm)")
}

impl Fpm {
    /// `pool_extra` is added to both pools (php_admin_value lines and such).
    pub fn start(dir: &TempDir, pool_extra: &str) -> Fpm {
        let socket = dir.0.join("php.sock");
        let port = free_port();
        let root = dir.0.display();
        let pool = |name: &str, listen: String| {
            format!(
                "[{name}]\nlisten = {listen}\nlisten.mode = 0666\npm = static\npm.max_children = 2\ncatch_workers_output = yes\nphp_admin_value[output_buffering] = 0\nphp_admin_value[upload_max_filesize] = 64M\nphp_admin_value[post_max_size] = 64M\nphp_admin_flag[display_errors] = off\nphp_admin_flag[log_errors] = on\n{pool_extra}\n"
            )
        };
        let conf = dir.write(
            "php-fpm.conf",
            format!(
                "[global]\nerror_log = {root}/php-fpm.log\ndaemonize = no\npid = {root}/php-fpm.pid\n{}{}",
                pool("unix", socket.display().to_string()),
                pool("tcp", format!("127.0.0.1:{port}"))
            ),
        );
        let mut fpm = Fpm { child: None, socket, port, conf };
        fpm.launch();
        fpm
    }

    fn launch(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let child = Command::new(php_fpm_binary())
            .args(["-R", "-F", "-y"])
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start php-fpm");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.socket.exists() && TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("php-fpm did not start: {}", std::fs::read_to_string(self.conf.with_file_name("php-fpm.log")).unwrap_or_default());
    }

    /// The `SetHandler` argument that sends a script to the `unix` pool.
    pub fn handler(&self) -> String {
        format!("proxy:unix:{}|fcgi://localhost", self.socket.display())
    }

    /// A `<FilesMatch>` block sending every `.php` file to the `unix` pool.
    pub fn php_files(&self) -> String {
        format!("<FilesMatch \"\\.php$\">\n    SetHandler \"{}\"\n</FilesMatch>\n", self.handler())
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Stops php-fpm and starts it again (a restart, not a reload).
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    fn kill(&mut self) {
        if let Some(c) = self.child.take() {
            terminate(c, STOP_GRACE);
        }
    }
}

impl Drop for Fpm {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs curl with these arguments; returns (exit code, stdout).
pub fn curl(args: &[&str]) -> (i32, Vec<u8>) {
    let out = Command::new("curl").args(["-s", "--max-time", "30"]).args(args).output().expect("run curl");
    (out.status.code().unwrap_or(-1), out.stdout)
}

/// `key=value` lines as a map.
pub fn key_values(text: &str) -> std::collections::HashMap<String, String> {
    text.lines().filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))).collect()
}

/// A memory cgroup of the test's own with a limit, in cgroup v2 if its
/// unified hierarchy has the memory controller, else in v1's; removed when
/// dropped, with what still runs in it killed (a test that fails, or drops
/// it before its server, leaves warren or its pool children running).
/// The first one a test binary makes also removes what earlier runs left
/// ([`remove_leftover_cgroups`]).
pub struct MemoryCgroup {
    pub dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    pub fn new(tag: &str, limit: u64) -> MemoryCgroup {
        let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
        let name = format!("warren-test-{tag}-{}", std::process::id());
        let parent = Path::new(if v2 { "/sys/fs/cgroup" } else { "/sys/fs/cgroup/memory" });
        if v2 {
            std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+memory").expect("enable the memory controller for child cgroups");
            // And pids where the root has it, for the php-fpm pools' pids limits (warren says at start when it cannot have them).
            if std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").is_ok_and(|c| c.split_whitespace().any(|c| c == "pids")) {
                std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+pids").expect("enable the pids controller for child cgroups");
            }
        }
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| remove_leftover_cgroups(parent, LEFTOVER_AGE));
        let dir = parent.join(name);
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("cannot create the memory cgroup {} (the tests run as root, test.sh): {e}", dir.display()));
        let limit_file = if v2 { "memory.max" } else { "memory.limit_in_bytes" };
        std::fs::write(dir.join(limit_file), limit.to_string()).unwrap();
        MemoryCgroup { dir, v2 }
    }

    /// Changes the limit, as a host's controller may while warren runs.
    pub fn set_limit(&self, limit: u64) {
        std::fs::write(self.dir.join(if self.v2 { "memory.max" } else { "memory.limit_in_bytes" }), limit.to_string()).unwrap();
    }

    fn stat(&self, name: &str) -> u64 {
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).unwrap_or_default();
        stat.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(0)
    }

    /// rss + shmem charged to the cgroup.
    pub fn charged(&self) -> u64 {
        if self.v2 {
            self.stat("anon") + self.stat("shmem")
        } else {
            self.stat("total_rss") + self.stat("total_shmem")
        }
    }

    /// Processes the kernel killed for the cgroup's limit or for the
    /// limits of cgroups below it (v1 counts a kill in the cgroup whose
    /// limit it was for only; v2 in its parents too).
    pub fn oom_kills(&self) -> u64 {
        fn kills(dir: &Path, v2: bool) -> u64 {
            let file = if v2 { "memory.events" } else { "memory.oom_control" };
            let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
            let own = text.lines().find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok()).unwrap_or(0);
            let below = || std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| kills(&e.path(), v2)).sum::<u64>();
            if v2 { own } else { own + below() }
        }
        kills(&self.dir, self.v2)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Only the test's own processes are in it: warren, its children
            // and pools, which a test that failed may have left running.
            for pid in processes_within(&self.dir) {
                // SAFETY: a signal to a process id read from the cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            // Cgroups warren made below it and left (it was killed), deepest first.
            remove_cgroups_below(&self.dir);
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() || Instant::now() > deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn remove_cgroups_below(dir: &Path) {
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
        remove_cgroups_below(&sub.path());
        let _ = std::fs::remove_dir(sub.path());
    }
}

/// The processes in a cgroup and in those below it.
pub fn processes_within(dir: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
        pids.extend(processes_within(&sub.path()));
    }
    pids
}

/// How old a test cgroup left empty must be before another run removes
/// it: a run going on now may have just made one and not yet moved
/// warren into it; no test holds one for an hour.
pub const LEFTOVER_AGE: Duration = Duration::from_secs(3600);

/// Removes the `warren-test-*` cgroups under `parent` that earlier runs
/// left (a run killed before its drops ran, a test binary aborted), but
/// only those with no process in them or below them and made more than
/// `age` ago: another run's, going on at the same time, are left alone.
pub fn remove_leftover_cgroups(parent: &Path, age: Duration) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let dir = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with("warren-test-") && entry.file_type().is_ok_and(|t| t.is_dir());
        let old = || entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|e| e > age));
        if ours && old() && processes_within(&dir).is_empty() {
            remove_cgroups_below(&dir);
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// The `pm.max_children auto` decisions in an error log: (count, the line).
pub fn auto_decisions(log: &str) -> Vec<(u32, String)> {
    log.lines()
        .filter_map(|l| {
            let rest = l.split("pm.max_children auto: ").nth(1)?;
            let n = rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
            Some((n, l.to_string()))
        })
        .collect()
}

/// Where [`regular_user`]'s homes are.
pub const USER_HOMES: &str = "/tmp/warren-mass-homes";

/// A regular user (uid from 1000, as `useradd` gives without --system),
/// made once if missing, its home and `public_html` under [`USER_HOMES`]
/// (readable by all); its uid. For the UserDir tests.
pub fn regular_user(name: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let find = || std::fs::read_to_string("/etc/passwd").unwrap().lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f[0] == name).then(|| f[2].parse::<u32>().unwrap())
    });
    // One useradd at a time in this process: a second one while the first
    // holds /etc/passwd's lock fails before the account exists.
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(|p| p.into_inner());
    if find().is_none() {
        let home = format!("{USER_HOMES}/{name}");
        let _ = Command::new("useradd").args(["--user-group", "--no-create-home", "--home-dir", &home, "--shell", "/usr/sbin/nologin", name]).status();
    }
    let uid = find().expect("useradd made the test user");
    for dir in [USER_HOMES.to_string(), format!("{USER_HOMES}/{name}"), format!("{USER_HOMES}/{name}/public_html")] {
        let _ = std::fs::create_dir(&dir);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    uid
}

/// A site with Debian's userdir.conf (as `userdir.conf`, to include) for
/// this test's homes.
pub fn user_dir_site(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    standard_site(&dir);
    dir.write("userdir.conf", format!("UserDir public_html\nUserDir disabled root\n<Directory {USER_HOMES}/*/public_html>\n  Require method GET POST OPTIONS\n</Directory>\n"));
    dir
}

/// An account made now (after the server started): `useradd` as
/// [`regular_user`] does, the account removed first if a previous run left it.
pub fn late_user(name: &str) -> u32 {
    remove_user(name);
    regular_user(name)
}

/// Held to read by a server starting (which makes pools for the accounts
/// it lists), to write by a test removing an account.
pub static ACCOUNTS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Removes an account, its group and its home under [`USER_HOMES`], if there.
pub fn remove_user(name: &str) {
    let _removing = ACCOUNTS.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let _ = Command::new("userdel").arg(name).stderr(std::process::Stdio::null()).status();
    let _ = Command::new("groupdel").arg(name).stderr(std::process::Stdio::null()).status();
    let _ = std::fs::remove_dir_all(format!("{USER_HOMES}/{name}"));
}

/// Gives `user` their home and public_html, as useradd's -m would.
pub fn own_home(user: &str, uid: u32) {
    for d in [format!("{USER_HOMES}/{user}"), format!("{USER_HOMES}/{user}/public_html")] {
        std::os::unix::fs::chown(&d, Some(uid), None).unwrap();
    }
}

/// `path` in `user`'s public_html (see [`regular_user`]), readable by all.
pub fn user_file(user: &str, path: &str, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    let file = format!("{USER_HOMES}/{user}/public_html/{path}");
    if let Some(parent) = Path::new(&file).parent() {
        std::fs::create_dir_all(parent).unwrap();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(&file, content).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// A socket in `dir` standing for /dev/log (warren's `SyslogSocket`): its
/// path, and the socket to read the datagrams from, each within 20 s.
/// Anyone may send to it, as to /dev/log: children running as User send too.
pub fn syslog_daemon(dir: &TempDir) -> (PathBuf, std::os::unix::net::UnixDatagram) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.0.join("dev-log");
    let daemon = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    daemon.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    (path, daemon)
}

/// A connection to the server's port on 127.0.0.1 from `src` (any
/// loopback address).
pub fn connect_from(src: std::net::Ipv4Addr, port: u16) -> TcpStream {
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, bound and connected with valid addresses,
    // then owned by the TcpStream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let from = sockaddr(src, 0);
        assert_eq!(libc::bind(fd, (&from as *const libc::sockaddr_in).cast(), len), 0, "bind {src}: {}", std::io::Error::last_os_error());
        let to = sockaddr(std::net::Ipv4Addr::LOCALHOST, port);
        assert_eq!(libc::connect(fd, (&to as *const libc::sockaddr_in).cast(), len), 0, "connect: {}", std::io::Error::last_os_error());
        let s = <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd);
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }
}

/// The php-fpm masters among the server's children (warren's `<Pool>`s run by php-fpm).
pub fn php_fpm_masters(s: &Server) -> Vec<u32> {
    s.children().into_iter().filter(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with("php-fpm: master"))).collect()
}

/// A page that keeps its php-fpm child busy for 200 ms, for
/// [`php_fpm_fills_its_count`] (write it as htdocs/slow.php).
pub const SLOW_PHP: &str = "<?php usleep(200000); echo 'slow';";

/// A php-fpm pool with `pm.max_children auto` under more slow clients than
/// its count: warren lets `count` requests in at once and php-fpm keeps no
/// idle child (`pm = ondemand`), so its children reach the count of the last
/// decision and pass it by one at most (the count of the decision in force,
/// or of the one before it just after a change: polled while the load
/// runs): the child its master starts for a request that arrives while the
/// child that served the last one is still finishing, which the count's
/// figures hold; every request is served. Returns the load, still running, and the count.
///
/// More than that is a transient, and only that: when two children are
/// finishing at once, ondemand forks another, and until warren's next pass
/// the pool's pids limit has room for it (room a script's threads need, and
/// the kernel counts a thread as it counts a child). A sample above the
/// bound must be gone before warren's second pass after it (passes read
/// after the sample: the pass under way may have measured before it; the
/// next one closes the pids limit and tells the surplus to go; it goes after
/// its request, and the limit has no room until the pass after that). A
/// count that stays above, as when warren's stopped children were forked
/// again (9 children at a count of 4), fails.
pub fn php_fpm_fills_its_count(s: &Server) -> (Load, u32) {
    let master = php_fpm_masters(s)[0];
    // The last two counts (a decision that kept the count, the first made from known peaks, is not a change).
    let counts = || {
        let mut counts: Vec<u32> = auto_decisions(&s.read_log("error.log")).iter().rev().map(|d| d.0).collect();
        counts.dedup();
        counts.truncate(2);
        counts
    };
    let passes = || status_auto(s).get("MemoryPasses").and_then(|v| v.parse::<u64>().ok()).expect("MemoryPasses on the status page");
    let load = start_load_on(s.port, counts()[0] as usize + 2, "/slow.php", |b| b.ends_with(b"slow"));
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut held = None;
    // Warren's passes when a sample first went above the bound, and how many samples did.
    let (mut over, mut samples_over) = (None, 0);
    loop {
        let (running, counts) = (live_children_of(master).len() as u32, counts());
        let allowed = counts.iter().max().copied().unwrap_or(0) + 1;
        assert!(Instant::now() < deadline, "php-fpm's children did not reach the count {counts:?} in 40 s: {running}\n{}", s.read_log("error.log"));
        if running > allowed {
            samples_over += 1;
            let now = passes();
            let since = *over.get_or_insert(now);
            assert!(now < since + 3, "{running} php-fpm children through two of warren's passes ({since} to {now}), the count {counts:?}\n{}", s.read_log("error.log"));
            // Sampled again soon: the surplus gone, the limit still closed, lasts until the next pass.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        over = None;
        // The count, or the count and the child php-fpm may start beside it.
        if held.is_none() && (running == counts[0] || running == counts[0] + 1) {
            // Held while as many requests again are served.
            held = Some((counts[0], load.ok_so_far() + 2 * u64::from(counts[0])));
        }
        if let Some((count, served)) = held {
            if load.ok_so_far() >= served {
                if samples_over > 0 {
                    eprintln!("php_fpm_fills_its_count: {samples_over} samples above the bound, each gone within two passes (count {count})");
                }
                return (load, count);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `parent`'s children that have not exited (a zombie its parent has yet
/// to reap holds no memory and serves nothing).
pub fn live_children_of(parent: u32) -> Vec<u32> {
    children_of(parent).into_iter().filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| st.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next()) != Some("Z"))).collect()
}

/// Polls `done` every 100 ms until it holds; fails naming `what` after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
