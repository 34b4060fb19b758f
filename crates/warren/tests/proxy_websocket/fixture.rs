//! The WebSocket tests' fixture (backend.py beside this file) as a process
//! of the test's, and the client's side: the opening handshake and frames.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::common::Server;

/// The fixture's two backends, stopped when dropped.
pub struct Backends {
    child: Child,
    /// The WebSocket echo server.
    pub echo: u16,
    /// The backend that answers 101 to everything.
    pub stray: u16,
}

impl Backends {
    pub fn start() -> Backends {
        Backends::spawn(&[])
    }

    /// The echo server over TLS, with this certificate and key (wss://).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Backends {
        Backends::spawn(&["--tls".as_ref(), cert.as_os_str(), key.as_os_str()])
    }

    fn spawn(args: &[&std::ffi::OsStr]) -> Backends {
        let python = std::env::var_os("WARREN_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/opt/warren-test-venv/bin/python"));
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy_websocket/backend.py");
        let mut child = Command::new(&python).arg(script).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap_or_else(|e| panic!("{}: {e} (run ./test.sh, which installs websockets)", python.display()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let ports: Vec<u16> = line.split_whitespace().filter_map(|p| p.parse().ok()).collect();
        assert_eq!(ports.len(), 2, "backend.py printed {line:?}, not two ports (is websockets installed in {}?)", python.display());
        Backends { child, echo: ports[0], stray: ports[1] }
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// RFC 6455 1.3's example key and the accept value it must get back.
pub const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
pub const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// Sends the opening handshake for `path` and reads the answer's head.
pub fn handshake(s: &Server, path: &str) -> (TcpStream, String) {
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: what follows the head is the tunnel's.
    while !head.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    (c, String::from_utf8_lossy(&head).into_owned())
}


/// Sends a client frame ([`frame`]).
pub fn send_frame(c: &mut TcpStream, opcode: u8, payload: &[u8]) {
    c.write_all(&frame(opcode, payload)).unwrap();
}

/// A client frame: FIN, `opcode`, masked as RFC 6455 5.3 requires.
pub fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut f = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n <= 0xffff => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

/// A server frame (never masked): its opcode and payload.
pub fn read_frame(c: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 2];
    c.read_exact(&mut h).unwrap();
    let len = match h[1] & 0x7f {
        126 => {
            let mut l = [0u8; 2];
            c.read_exact(&mut l).unwrap();
            u16::from_be_bytes(l) as usize
        }
        127 => {
            let mut l = [0u8; 8];
            c.read_exact(&mut l).unwrap();
            u64::from_be_bytes(l) as usize
        }
        n => n as usize,
    };
    assert_eq!(h[1] & 0x80, 0, "a server frame came masked");
    let mut payload = vec![0u8; len];
    c.read_exact(&mut payload).unwrap();
    (h[0] & 0x0f, payload)
}
