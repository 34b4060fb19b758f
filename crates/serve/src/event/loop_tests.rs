//! The event loop in the test's own process: an [`EventLoop`] on a thread,
//! listening on a loopback port, and a client that writes its requests
//! (the last asking `Connection: close`) and reads until the loop closes.
//! What the loop does itself is what is tested here: HTTP/1.1 keep-alive
//! and pipelining, the limits, a FastCGI answer relayed on the loop as its
//! records arrive (whole, or cut short), and HTTP/2 over cleartext.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use warren_mpm::scoreboard::Scoreboard;

use super::EventLoop;
use crate::serve::tests::{chunks_after_head, fastcgi_app, fastcgi_app_ending, fastcgi_site, fixture, statuses, Fixture, A_TXT};

/// A loop serving `f`'s site until dropped.
struct LoopRun {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LoopRun {
    fn start(f: &Fixture) -> LoopRun {
        let mut listener = warren_mpm::listen::bind("127.0.0.1:0".parse().unwrap(), 16).unwrap();
        let addr = listener.addr;
        // What HTTP/2 the configured listener offers, for this one.
        listener.h2 = Some(f.site.settings.h2_listener("127.0.0.1:80".parse().unwrap())).filter(|h| h.any()).map(Arc::new);
        let sb = Arc::new(Scoreboard::new(1, 64).unwrap());
        sb.claim(0, std::process::id() as i32, f.site.settings.tuning.threads_per_child as usize);
        let stop = Arc::new(AtomicBool::new(false));
        let (site, loop_stop) = (f.site.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut event_loop = EventLoop::new(site, vec![listener], sb, 0, loop_stop, Arc::new(AtomicBool::new(false)), None).unwrap();
            event_loop.run();
        });
        LoopRun { addr, stop, thread: Some(thread) }
    }

    /// Writes `input` on a new connection and reads until the loop closes it.
    fn exchange(&self, input: &[u8]) -> Vec<u8> {
        self.exchange_until(input, |_| false)
    }

    /// Writes `input` on a new connection and reads until `done` says what
    /// came is enough, or the loop closes it.
    fn exchange_until(&self, input: &[u8], done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        let mut c = TcpStream::connect(self.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(input).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 16384];
        loop {
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    out.extend_from_slice(&buf[..n]);
                    if done(&out) {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("the loop neither answered nor closed: {e}; got {:?}", String::from_utf8_lossy(&out)),
            }
        }
        out
    }

    fn h1(&self, input: &str) -> String {
        String::from_utf8_lossy(&self.exchange(input.as_bytes())).into_owned()
    }
}

impl Drop for LoopRun {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How many streams the HTTP/2 frames in `out` have ended.
fn streams_ended(out: &[u8]) -> usize {
    use warren_http::h2::frame::{self, Header};
    let (mut at, mut ended) = (0, 0);
    while let Some(h) = Header::parse(&out[at..]) {
        let end = at + frame::HEADER_LEN + h.len as usize;
        if end > out.len() {
            break;
        }
        ended += usize::from(h.stream != 0 && matches!(h.kind, frame::HEADERS | frame::DATA) && h.flags & frame::FLAG_END_STREAM != 0);
        at = end;
    }
    ended
}


const GET_A: &str = "GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n";
const GET_A_CLOSE: &str = "GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";

#[test]
fn pipelined_requests_with_a_fastcgi_answer_in_pieces_between_are_answered_in_order() {
    let (port, app) = fastcgi_app(&["Content-Type: text/plain\r\nContent-Length: 12\r\n\r\nhel", "lo, ", "world"]);
    let f = fastcgi_site("loop-pipeline", port, "");
    let run = LoopRun::start(&f);
    let out = run.h1(&format!("{GET_A}GET /x.php HTTP/1.1\r\nHost: localhost\r\n\r\nGET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n{GET_A_CLOSE}"));
    app.join().unwrap();
    assert_eq!(statuses(&out), ["200", "200", "404", "200"], "{out}");
    let a = out.find(A_TXT).unwrap();
    let php = out.find("hello, world").expect("the script's answer whole");
    assert!(a < php && php < out.rfind(A_TXT).unwrap(), "in the order asked: {out}");
    assert!(out.ends_with(A_TXT), "{out}");
}

#[test]
fn keep_alive_ends_at_the_limit_or_when_the_client_asks() {
    let f = fixture("loop-keepalive", "MaxKeepAliveRequests 2\n");
    let run = LoopRun::start(&f);
    let out = run.h1(&GET_A.repeat(3));
    assert_eq!(statuses(&out), ["200", "200"], "the third is not answered: {out}");
    assert!(out.ends_with(&format!("Connection: close\r\n\r\n{A_TXT}")), "{out}");
    let out = run.h1(&format!("GET /a.txt HTTP/1.0\r\n\r\n{GET_A}"));
    assert_eq!(statuses(&out), ["200"], "HTTP/1.0 without keep-alive: {out}");
}

#[test]
fn limits_answer_and_close() {
    let f = fixture("loop-limits", "LimitRequestBody 10\n");
    let run = LoopRun::start(&f);
    let out = run.h1(&format!("GET /{} HTTP/1.1\r\nHost: localhost\r\n\r\n{GET_A}", "a".repeat(300)));
    assert_eq!(statuses(&out), ["414"], "LimitRequestLine, then closed: {out}");
    let out = run.h1(&format!("POST /a.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\r\nhello world{GET_A}"));
    assert_eq!(statuses(&out), ["413"], "LimitRequestBody, then closed: {out}");
    let out = run.h1(&format!("POST /a.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\n{GET_A}"));
    assert_eq!(statuses(&out), ["413"], "a chunked body past the limit as it comes: {out}");
    let out = run.h1(&format!("POST /a.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello{GET_A_CLOSE}"));
    assert_eq!(statuses(&out).len(), 2, "a body within the limit is read and the next request follows: {out}");
}

#[test]
fn a_fastcgi_answer_cut_short_on_the_loop_closes_without_a_last_chunk() {
    let (port, app) = fastcgi_app_ending(&["Content-Type: text/plain\r\n\r\nhel", "lo"], false);
    let f = fastcgi_site("loop-fcgi-cut", port, "");
    let run = LoopRun::start(&f);
    let out = run.h1(&format!("GET /x.php HTTP/1.1\r\nHost: localhost\r\n\r\n{GET_A_CLOSE}"));
    app.join().unwrap();
    assert_eq!(statuses(&out), ["200"], "{out}");
    assert!(out.contains("Transfer-Encoding: chunked\r\n"), "{out}");
    assert_eq!(chunks_after_head(&out), Some(("hello".to_string(), false)), "closed with no last chunk, nothing after: {out:?}");
}

#[test]
fn http2_prior_knowledge_on_the_loop_serves_streams_a_fastcgi_answer_in_pieces_and_limits() {
    use crate::serve::tests::H2Client;
    let (port, app) = fastcgi_app(&["Content-Type: text/plain\r\n", "\r\nhel", "lo, ", "world"]);
    let f = fastcgi_site("loop-h2", port, "Protocols h2c http/1.1\n");
    let run = LoopRun::start(&f);
    let mut client = H2Client::new();
    let mut input = client.preface();
    input.extend(client.request(1, "GET", "/a.txt", &[], true));
    input.extend(client.request(3, "GET", "/x.php", &[], true));
    input.extend(client.request(5, "GET", "/missing", &[], true));
    // LimitRequestLine (200) on a stream's :path: that stream only is refused.
    input.extend(client.request(7, "GET", &format!("/{}", "a".repeat(300)), &[], true));
    let got = client.responses(&run.exchange_until(&input, |out| streams_ended(out) == 4));
    app.join().unwrap();
    assert_eq!((got[&1].status(), got[&1].body.as_slice(), got[&1].ended), ("200", A_TXT.as_bytes(), true), "{got:?}");
    assert_eq!((got[&3].status(), got[&3].body.as_slice(), got[&3].ended), ("200", &b"hello, world"[..], true), "{got:?}");
    assert_eq!((got[&5].status(), got[&5].ended), ("404", true), "{got:?}");
    assert_eq!((got[&7].status(), got[&7].ended), ("414", true), "{got:?}");
}

#[test]
fn http2_a_fastcgi_answer_cut_short_on_the_loop_resets_its_stream() {
    use crate::serve::tests::H2Client;
    let (port, app) = fastcgi_app_ending(&["Content-Type: text/plain\r\n\r\nhel", "lo"], false);
    let f = fastcgi_site("loop-h2-cut", port, "Protocols h2c http/1.1\n");
    let run = LoopRun::start(&f);
    let mut client = H2Client::new();
    let mut input = client.preface();
    input.extend(client.request(1, "GET", "/x.php", &[], true));
    let out = run.exchange_until(&input, client_saw_reset);
    app.join().unwrap();
    let got = client.responses(&out);
    assert_eq!((got[&1].status(), got[&1].body.as_slice(), got[&1].ended, got[&1].reset), ("200", &b"hello"[..], false, true), "{got:?}");
}

/// Whether the HTTP/2 frames in `out` hold a RST_STREAM.
fn client_saw_reset(out: &[u8]) -> bool {
    use warren_http::h2::frame::{self, Header};
    let mut at = 0;
    while let Some(h) = Header::parse(&out[at..]) {
        if h.kind == frame::RST_STREAM {
            return true;
        }
        at += frame::HEADER_LEN + h.len as usize;
        if at > out.len() {
            break;
        }
    }
    false
}

#[test]
fn a_client_that_sends_and_closes_its_side_is_seen_closed_at_once() {
    let f = fixture("loop-halfclose", "KeepAliveTimeout 30\nRequestReadTimeout header=30\n");
    let run = LoopRun::start(&f);
    // The last bytes and the end come in one wake-up or in two, as the
    // loop happens to be scheduled: twenty rounds of each.
    let cases = [(GET_A, vec!["200"]), ("GET /a.txt HTTP/1.1\r\nHo", vec![])];
    for (input, want) in cases.iter().cycle().take(40) {
        let mut c = TcpStream::connect(run.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(input.as_bytes()).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = Vec::new();
        let got = c.read_to_end(&mut out);
        let out = String::from_utf8_lossy(&out);
        assert!(got.is_ok(), "{input:?} then the end: the loop neither closed nor answered in 10 s (KeepAliveTimeout and header= are 30): {got:?}; got {out:?}");
        assert_eq!(&statuses(&out), want, "{out}");
    }
}
