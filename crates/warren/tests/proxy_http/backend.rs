//! The backend of the proxy tests (backend.py beside this file) as a
//! process of the test's, and a client that asks one question at a time
//! on a kept connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::common::{free_port, parse_response_for, response_complete, Resp};

/// The fixture backend, stopped when dropped (its standard input closes).
pub struct Backend {
    child: Child,
    pub port: u16,
}

impl Backend {
    pub fn start() -> Backend {
        Backend::spawn(&[])
    }

    /// Over TLS, with this certificate and key (its URL is then `https://`).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Backend {
        Backend::spawn(&["--tls".as_ref(), cert.as_os_str(), key.as_os_str()])
    }

    fn spawn(args: &[&std::ffi::OsStr]) -> Backend {
        Backend::spawn_script(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy_http/backend.py"), args)
    }

    /// Another backend script that prints its port on its first line and
    /// serves until its standard input closes.
    pub fn spawn_script(script: &str, args: &[&std::ffi::OsStr]) -> Backend {
        let mut child = Command::new("python3").arg(script).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start python3 backend.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("backend.py printed {line:?}, not its port"));
        Backend { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on.
pub fn dead_port() -> u16 {
    free_port()
}

/// Sends `req` on `s` and reads one whole answer.
pub fn ask(s: &mut TcpStream, req: &str, head_request: bool) -> Resp {
    s.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if got.windows(4).any(|w| w == b"\r\n\r\n") && (head_request || response_complete(&got)) {
            return parse_response_for(&got, head_request).0;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => panic!("connection ended after {:?}", String::from_utf8_lossy(&got)),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Reads one request head, byte by byte (a backend of a test's that must
/// not read past it); None once the connection ends.
pub fn read_head(s: &mut TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}
