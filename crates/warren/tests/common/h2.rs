//! HTTP/2 for the tests: a server with `Protocols h2 h2c http/1.1` on a
//! cleartext port (h2c by prior knowledge and by Upgrade) and a TLS port
//! (h2 by ALPN), curl run in each of those ways, and a small raw HTTP/2
//! client for what no command-line client lets a test hold still (a
//! stream kept waiting on its flow-control window).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::tls::Certs;
use super::{Server, TempDir};

/// What every HTTP/2 server of the tests has, before the test's own lines:
/// the module line Debian's `a2enmod http2` writes (without it warren
/// warns that Apache would not offer HTTP/2), HTTP/2 on for every host, and
/// a TLS virtual host on a second port. The vhost inherits the main
/// server's directives (Protocols, Header, ErrorDocument, CustomLog...), as
/// in Apache, so both ports serve the same site; its DocumentRoot is
/// written out, as warren's vhosts do not inherit the main server's
/// (Apache's do).
fn h2_lines(tls_port: u16, certs: &Certs) -> String {
    format!(
        "LoadModule http2_module modules/mod_http2.so\nProtocols h2 h2c http/1.1\nListen 127.0.0.1:{tls_port} https\n<VirtualHost 127.0.0.1:{tls_port}>\nDocumentRoot htdocs\n{}</VirtualHost>\n",
        certs.directives("localhost")
    )
}

/// A deterministic, incompressible-looking body of `n` bytes (so that a
/// byte shifted or lost shows, and no compression hides a size).
pub fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|_| {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// The three ways a client reaches HTTP/2 here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Cleartext, the preface at once (`--http2-prior-knowledge`).
    PriorKnowledge,
    /// TLS, h2 agreed by ALPN (`--http2` on an https URL).
    Tls,
    /// Cleartext HTTP/1.1 asking `Upgrade: h2c` (`--http2` on an http URL).
    Upgrade,
}

pub struct H2Server {
    pub s: Server,
    pub tls_port: u16,
    pub certs: Certs,
}

/// What curl got: its exit code, `%{http_version}`, the status, the
/// header lines of the last response as received (names as on the wire),
/// the body, and its verbose output (stderr).
#[derive(Debug)]
pub struct Got {
    pub code: i32,
    pub version: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub verbose: String,
}

impl Got {
    /// The field `name` exactly as written on the wire (HTTP/2 names are
    /// lower case; an upper-case one would not match).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

static FILES: AtomicU32 = AtomicU32::new(0);

impl H2Server {
    /// Starts warren with the standard site, `files` written under the
    /// test directory, and `extra` after the HTTP/2 lines.
    pub fn start(mpm: &str, tag: &str, files: &[(&str, Vec<u8>)], extra: &str) -> H2Server {
        let dir = TempDir::new(&format!("h2-{tag}-{mpm}"));
        super::standard_site(&dir);
        for (name, content) in files {
            dir.write(name, content);
        }
        H2Server::start_in(dir, mpm, extra)
    }

    pub fn start_in(dir: TempDir, mpm: &str, extra: &str) -> H2Server {
        let certs = Certs::make(&dir.0);
        let tls_port = super::free_port();
        let conf = format!("{}{extra}\n", h2_lines(tls_port, &certs));
        let s = Server::start_in(dir, mpm, &conf);
        H2Server { s, tls_port, certs }
    }

    /// The same two ports without any `Protocols` line: Apache's default,
    /// HTTP/1.1 only.
    pub fn start_without_protocols(mpm: &str, tag: &str) -> H2Server {
        let dir = TempDir::new(&format!("h2-{tag}-{mpm}"));
        super::standard_site(&dir);
        let certs = Certs::make(&dir.0);
        let tls_port = super::free_port();
        let lines = h2_lines(tls_port, &certs).replace("Protocols h2 h2c http/1.1\n", "");
        assert!(!lines.contains("Protocols"));
        let s = Server::start_in(dir, mpm, &lines);
        H2Server { s, tls_port, certs }
    }

    /// The URL of `path` the way `way` reaches it. The host is `localhost`
    /// (resolved to 127.0.0.1 by `--resolve`), which the certificate names.
    pub fn url(&self, way: Way, path: &str) -> String {
        match way {
            Way::Tls => format!("https://localhost:{}{path}", self.tls_port),
            _ => format!("http://localhost:{}{path}", self.s.port),
        }
    }

    pub fn port(&self, way: Way) -> u16 {
        if way == Way::Tls {
            self.tls_port
        } else {
            self.s.port
        }
    }

    /// curl with `args` for `path` the way `way` asks for HTTP/2.
    pub fn curl(&self, way: Way, path: &str, args: &[&str]) -> Got {
        self.curl_with(way, path, args, None)
    }

    /// The same with `stdin` given to curl (for `-T -` and `@-`).
    pub fn curl_with(&self, way: Way, path: &str, args: &[&str], stdin: Option<&[u8]>) -> Got {
        let n = FILES.fetch_add(1, Ordering::SeqCst);
        let head_file = self.s.dir.0.join(format!("curl-{n}.head"));
        let body_file = self.s.dir.0.join(format!("curl-{n}.body"));
        let resolve = format!("localhost:{}:127.0.0.1", self.port(way));
        let how = match way {
            Way::PriorKnowledge => "--http2-prior-knowledge",
            Way::Tls | Way::Upgrade => "--http2",
        };
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-v", "--max-time", "60", how, "--resolve", &resolve, "--cacert"])
            .arg(self.certs.ca())
            .arg("-D")
            .arg(&head_file)
            .arg("-o")
            .arg(&body_file)
            .args(["-w", "%{http_version} %{http_code}"])
            .args(args)
            .arg(self.url(way, path));
        let out = match stdin {
            Some(input) => {
                cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
                let mut child = cmd.spawn().expect("run curl");
                let mut w = child.stdin.take().unwrap();
                let input = input.to_vec();
                let writer = std::thread::spawn(move || {
                    let _ = w.write_all(&input);
                });
                let out = child.wait_with_output().unwrap();
                let _ = writer.join();
                out
            }
            None => cmd.output().expect("run curl"),
        };
        let w = String::from_utf8_lossy(&out.stdout).into_owned();
        let (version, status) = w.split_once(' ').unwrap_or(("", ""));
        let head = std::fs::read_to_string(&head_file).unwrap_or_default();
        let body = std::fs::read(&body_file).unwrap_or_default();
        let _ = std::fs::remove_file(&head_file);
        let _ = std::fs::remove_file(&body_file);
        // -D holds every response of the exchange (a 101 first, for
        // Upgrade): the fields of the last one count.
        let last = head.rsplit("\r\n\r\n").find(|b| !b.trim().is_empty()).unwrap_or("");
        let headers = last.lines().skip(1).filter_map(|l| l.split_once(':').map(|(n, v)| (n.to_string(), v.trim().to_string()))).collect();
        Got {
            code: out.status.code().unwrap_or(-1),
            version: version.to_string(),
            status: status.trim().parse().unwrap_or(0),
            headers,
            body,
            verbose: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs `nghttp` with `args` (URLs included), at most 60 s; returns
    /// (success, stdout, stderr).
    pub fn nghttp(&self, args: &[&str]) -> (bool, Vec<u8>, String) {
        let out = Command::new("timeout").arg("60").arg("nghttp").args(args).output().expect("run nghttp (test.sh installs nghttp2-client)");
        (out.status.success(), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Runs `h2load` with `args`, at most 120 s; returns its output.
    pub fn h2load(&self, args: &[&str]) -> String {
        let out = Command::new("timeout").arg("120").arg("h2load").args(args).output().expect("run h2load (test.sh installs nghttp2-client)");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }

    pub fn file(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.s.dir.0.join(rel)).unwrap()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.s.dir.0.join(rel)
    }
}

/// `nghttp -s`'s table: (status, path) of each response, from the lines
/// under its `id  responseEnd requestStart  process code size request path`
/// header (sizes there are rounded, so bodies are counted elsewhere).
pub fn nghttp_stats(stdout: &str) -> Vec<(u16, String)> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"id") && f.contains(&"code") {
            in_table = true;
            continue;
        }
        if in_table && f.len() >= 7 && f[0].parse::<u32>().is_ok() {
            rows.push((f[4].parse().unwrap_or(0), f[6].to_string()));
        }
    }
    rows
}

/// h2load's `requests:` line as (succeeded, failed, errored) and its
/// `status codes:` line's 2xx count.
pub fn h2load_counts(out: &str) -> Option<(u64, u64, u64, u64)> {
    let num_before = |line: &str, word: &str| -> Option<u64> {
        let words: Vec<&str> = line.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        let i = words.iter().position(|w| *w == word)?;
        words.get(i.checked_sub(1)?)?.parse().ok()
    };
    let req = out.lines().find(|l| l.starts_with("requests:"))?;
    let codes = out.lines().find(|l| l.starts_with("status codes:"))?;
    Some((num_before(req, "succeeded")?, num_before(req, "failed")?, num_before(req, "errored")?, num_before(codes, "2xx")?))
}

/// An HTTP/2 frame as read.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const END_STREAM: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const ACK: u8 = 0x1;

/// One frame, header and payload.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// The HEADERS frame of a GET on `stream`, its fields as literals without
/// indexing (HPACK's simplest form: no table, no Huffman).
pub fn get_frame(stream: u32, authority: &str, path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [(":method", "GET"), (":scheme", "http"), (":path", path), (":authority", authority)] {
        assert!(name.len() < 127 && value.len() < 127);
        block.push(0x00);
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    }
    frame(HEADERS, END_STREAM | END_HEADERS, stream, &block)
}

/// A cleartext HTTP/2 client that does only what a test tells it: it
/// never returns flow-control credit by itself, so a response can be held
/// at its window for as long as the test needs.
pub struct RawH2 {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl RawH2 {
    /// Connects with prior knowledge: the preface and an empty SETTINGS
    /// (the default 65535-byte windows).
    pub fn connect(port: u16) -> RawH2 {
        let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        let mut c = RawH2 { sock, buf: Vec::new() };
        c.send(SETTINGS, 0, 0, &[]);
        c
    }

    /// Goes on on a connection the server upgraded from HTTP/1.1 (its
    /// 101 read; `rest`: what came after it): the preface and an empty
    /// SETTINGS.
    pub fn upgraded(mut sock: TcpStream, rest: Vec<u8>) -> RawH2 {
        sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        sock.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        let mut c = RawH2 { sock, buf: rest };
        c.send(SETTINGS, 0, 0, &[]);
        c
    }

    pub fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        self.send_raw(&frame(kind, flags, stream, payload));
    }

    /// Bytes as they are, in one write (frames made with [`frame`]).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).unwrap();
    }

    /// A GET on `stream` ([`get_frame`]).
    pub fn get(&mut self, stream: u32, authority: &str, path: &str) {
        self.send_raw(&get_frame(stream, authority, path));
    }

    pub fn window_update(&mut self, stream: u32, increment: u32) {
        self.send(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes());
    }

    /// The next frame, within `within`; None if none came in time or the
    /// connection ended (`closed()` tells which). The server's SETTINGS
    /// and PINGs are acknowledged as they pass, as any client does.
    pub fn next_frame(&mut self, within: Duration) -> Option<Frame> {
        let deadline = Instant::now() + within;
        loop {
            if self.buf.len() >= 9 {
                let len = (self.buf[0] as usize) << 16 | (self.buf[1] as usize) << 8 | self.buf[2] as usize;
                if self.buf.len() >= 9 + len {
                    let f = Frame {
                        kind: self.buf[3],
                        flags: self.buf[4],
                        stream: u32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]]) & 0x7fff_ffff,
                        payload: self.buf[9..9 + len].to_vec(),
                    };
                    self.buf.drain(..9 + len);
                    if f.kind == SETTINGS && f.flags & ACK == 0 {
                        self.send(SETTINGS, ACK, 0, &[]);
                    }
                    if f.kind == PING && f.flags & ACK == 0 {
                        let p = f.payload.clone();
                        self.send(PING, ACK, 0, &p);
                    }
                    return Some(f);
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            let mut chunk = [0u8; 16384];
            match self.sock.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
                Err(_) => return None,
            }
        }
    }

    /// Whether the server has closed the connection (read gives 0 or an
    /// error), waiting up to `within`.
    pub fn closed(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut chunk = [0u8; 16384];
        loop {
            match self.sock.read(&mut chunk) {
                Ok(0) => return true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
                Err(_) => return true,
            }
            if Instant::now() >= deadline {
                return false;
            }
        }
    }
}

impl Frame {
    /// A DATA or HEADERS frame's content without its padding (PADDED).
    pub fn content(&self) -> &[u8] {
        if self.flags & 0x8 != 0 && !self.payload.is_empty() {
            let pad = self.payload[0] as usize;
            &self.payload[1..self.payload.len().saturating_sub(pad).max(1)]
        } else {
            &self.payload
        }
    }
}
