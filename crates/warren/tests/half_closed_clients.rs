//! Clients that send their last bytes and close their side of the
//! connection in one go (a request, then `shutdown(SHUT_WR)`, as `nc -N`
//! or a script piping a request does): under each MPM the answer comes and
//! the connection is closed once it is out, as Apache does (its next read
//! finds the end), not after KeepAliveTimeout. The client's socket is
//! corked so that the request and the FIN arrive in one segment, reported
//! by one readiness edge: the event loop's short read drops readiness
//! (event/connection.rs read_more), and what tells it of the end is the
//! next event on the connection (the answer's send: every edge carries the
//! socket's whole state, EPOLLRDHUP included). Checked here under each MPM.

mod common;

use std::io::Write;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::Duration;

use common::*;

/// Writes `request`, closes the writing side, and reads to the end
/// (within a deadline far below the KeepAliveTimeout set).
fn ask_half_closed(s: &Server, request: &[u8]) -> (Vec<u8>, String) {
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // Corked, the request waits in the socket and the FIN rides on its
    // last segment: the server sees data and end in one edge.
    let on: libc::c_int = 1;
    // SAFETY: a live socket, and an int option of the size given.
    let set = unsafe { libc::setsockopt(c.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CORK, (&on as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
    assert_eq!(set, 0, "TCP_CORK: {}", std::io::Error::last_os_error());
    c.write_all(request).unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    read_to_end_of(&mut c)
}

fn answered_and_closed_at_once(mpm: &str) {
    let s = Server::start(mpm, "KeepAliveTimeout 300\n");
    for request in [&b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n"[..], b"POST /a.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n\r\nbody", b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n"] {
        let (raw, how) = ask_half_closed(&s, request);
        let text = String::from_utf8_lossy(&raw);
        assert!(how.starts_with("closed by the server"), "{how}: {text}");
        let answers = request.windows(4).filter(|w| w == b"\r\n\r\n").count();
        assert_eq!(text.matches("HTTP/1.1 ").count(), answers, "{text}");
        assert!(text.starts_with("HTTP/1.1 ") && status_of(&raw) != 0, "{text}");
    }
}

each_mpm!(answered_and_closed_at_once);
