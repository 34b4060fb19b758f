//! The Python backend of proxy_upload.rs and attacks_proxyupload.rs
//! (backend.py, which records how much of each body it has read), and how
//! the tests ask it what it has seen.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::backend::{ask, Backend};

pub fn start_backend() -> Backend {
    Backend::spawn_script(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy_upload/backend.py"), &[])
}

/// The backend's own answer to `path`, asked directly.
pub fn backend_says(b: &Backend, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", b.port)).unwrap();
    ask(&mut s, &format!("GET {path} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n"), false).text()
}

/// Waits until the backend's answer to `path` satisfies `reached`.
pub fn wait_backend(b: &Backend, path: &str, what: &str, reached: impl Fn(i64) -> bool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n: i64 = backend_says(b, path).trim().parse().unwrap();
        if reached(n) {
            return n;
        }
        assert!(Instant::now() < deadline, "{what}: the backend still says {n} for {path}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
