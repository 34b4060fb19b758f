//! The HTTP/2 client of the proxy tests (client.py beside this file) run
//! by the tests, the answers it reports, and a backend of the tests' own
//! whose answer never ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::Server;

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy_h2/client.py");

/// The Python with `h2` that test.sh makes: WARREN_TEST_PYTHON, else its venv.
fn python() -> Command {
    Command::new(std::env::var_os("WARREN_TEST_PYTHON").unwrap_or_else(|| "/opt/warren-test-venv/bin/python".into()))
}

/// Runs client.py's `case` against `s` and returns its lines.
pub fn client(s: &Server, case: &str, args: &[&str]) -> Vec<String> {
    let out = python().args([CLIENT, "--port", &s.port.to_string(), case]).args(args).stdin(Stdio::null()).output().expect("run client.py");
    assert!(out.status.success(), "client.py {case} {args:?}: {}\n{}", String::from_utf8_lossy(&out.stderr), s.read_log("error.log"));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

/// client.py's `case` started against `s`, its standard input and output
/// piped: for the cases that wait on the test (upload, push, dribble),
/// given 120 s (a deadline: a push of many MB on a busy machine).
pub fn spawn(s: &Server, case: &str, args: &[&str]) -> Child {
    python().args([CLIENT, "--port", &s.port.to_string(), "--timeout", "120", case]).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run client.py")
}

/// client.py `hinted`: asks `path` and returns the first interim answer
/// as it came ahead of the final one ("103 <link>"); `release` then lets
/// the backend give its final answer, and the stream's answer follows.
pub fn hinted(s: &Server, path: &str, release: impl FnOnce()) -> (String, Answer) {
    let mut child = python().args([CLIENT, "--port", &s.port.to_string(), "--timeout", "20", "hinted", path]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run client.py");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut hint = String::new();
    out.read_line(&mut hint).unwrap();
    release();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(child.wait().unwrap().success(), "client.py hinted {path}: {err}\n{}", s.read_log("error.log"));
    let hint = hint.trim().strip_prefix("HINT ").unwrap_or_else(|| panic!("no interim answer: {hint:?}")).to_owned();
    (hint, Answer(serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{e}: {rest}"))))
}

/// One stream's answer as client.py reports it.
pub struct Answer(pub serde_json::Value);

impl Answer {
    pub fn status(&self) -> i64 {
        self.0["status"].as_i64().unwrap_or(0)
    }
    pub fn body(&self) -> String {
        match &self.0["body"] {
            serde_json::Value::String(s) => s.clone(),
            n => format!("<{n} bytes>"),
        }
    }
    pub fn interim(&self) -> Vec<String> {
        self.0["interim"].as_array().unwrap().iter().map(|i| format!("{} {}", i[0].as_str().unwrap(), i[1]["link"].as_str().unwrap_or("-"))).collect()
    }
}

pub fn answers(lines: Vec<String>) -> Vec<Answer> {
    lines.iter().map(|l| Answer(serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))).collect()
}

/// client.py `stall`: streams of one connection whose answers' heads came
/// (each a 200) and whose windows stay shut; ends when dropped.
pub struct Stalled(Child);

impl Stalled {
    pub fn start(s: &Server, paths: &[&str]) -> Stalled {
        let mut child = python().args([CLIENT, "--port", &s.port.to_string(), "stall"]).args(paths).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), format!("HEAD{}", " 200".repeat(paths.len())), "{}", s.read_log("error.log"));
        Stalled(child)
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A backend that answers a chunk of a chunked body and then waits; it
/// counts the connections it accepted and those whose far end (warren)
/// closed.
pub struct Endless {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
    pub closed: Arc<AtomicUsize>,
}

pub fn start_endless() -> Endless {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (accepted, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (accepts, closes) = (accepted.clone(), closed.clone());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            accepts.fetch_add(1, Ordering::SeqCst);
            let closes = closes.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if conn.read(&mut byte).unwrap_or(0) == 0 {
                        closes.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    head.push(byte[0]);
                }
                let chunk = vec![b'z'; 100_000];
                let _ = conn.write_all(format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n", chunk.len()).as_bytes());
                let _ = conn.write_all(&chunk);
                let _ = conn.write_all(b"\r\n");
                // Nothing more comes from warren on this connection; a read
                // ends when it closes it.
                let mut rest = [0u8; 1024];
                while matches!(conn.read(&mut rest), Ok(n) if n > 0) {}
                closes.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    Endless { port, accepted, closed }
}
