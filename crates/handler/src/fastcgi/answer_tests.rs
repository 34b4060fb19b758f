//! The exchange fed as an application's answer arrives: whole, a byte at a
//! time, records split across reads, stderr between them, ended early,
//! malformed; its body pulled as a thread pulls it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use warren_config::{FcgiAddr, FcgiBackend, LogLevel};
use warren_fcgi::record::{self, ProtocolStatus, RecordType};

use super::*;
use crate::logs::ErrorLog;

/// A test's own error log file, to read its stderr lines back; removed
/// with the test.
struct LogFile(PathBuf);

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn log_file(name: &str) -> (Arc<ErrorLog>, LogFile) {
    let path = std::env::temp_dir().join(format!("warren-answer-{}-{name}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    (Arc::new(ErrorLog::open(Some(&path), None, LogLevel::Warn).expect("log")), LogFile(path))
}

fn answer(name: &str) -> (Answer, Gateway, LogFile) {
    let (log, path) = log_file(name);
    let backend = FcgiBackend { addr: FcgiAddr::Unix("/run/app.sock".into()), reuse: false, timeout: None, flush_packets: false };
    let gw = Gateway::to_backend(0, backend, Duration::from_secs(5), "/srv/app.php".into());
    let reader = ResponseReader::new("unix:/run/app.sock".into(), log, "192.0.2.7:4000".parse().unwrap(), "/srv/app.php".into());
    (Answer::new(reader), gw, path)
}

fn stdout(wire: &mut Vec<u8>, text: &[u8]) {
    record::write_record(wire, RecordType::Stdout, 1, text);
}

fn end(wire: &mut Vec<u8>) {
    record::write_record(wire, RecordType::Stdout, 1, b"");
    record::end_request(wire, 1, 0, ProtocolStatus::RequestComplete);
}

/// Feeds `wire` in pieces of `step` bytes; the head once it comes, and
/// the body pulled after it until the end.
fn run(a: &mut Answer, gw: &Gateway, wire: &[u8], step: usize) -> (Option<AtHead>, Vec<u8>, Option<Pumped>) {
    let (mut head, mut body, mut last) = (None, Vec::new(), None);
    for piece in wire.chunks(step) {
        a.feed(piece);
        if head.is_none() {
            head = a.head(gw).expect("a good head");
            if head.is_none() || a.ended() {
                continue;
            }
        }
        let mut got = Vec::new();
        match a.pump(&mut Pulled { out: &mut got }) {
            Pumped::More => body.extend(got),
            done => {
                body.extend(got);
                last = Some(done);
                break;
            }
        }
    }
    (head, body, last)
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

#[test]
fn a_whole_answer_in_one_read_is_whole_at_its_head() {
    let (mut a, gw, _) = answer("whole");
    let mut wire = Vec::new();
    stdout(&mut wire, b"Status: 201\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello and more");
    end(&mut wire);
    let (head, _, _) = run(&mut a, &gw, &wire, wire.len());
    let Some(AtHead::Whole(r)) = head else { panic!("not whole") };
    assert_eq!(r.status, 201);
    // Cut to the application's Content-Length.
    assert!(matches!(&r.body, Body::Bytes(b) if b == b"hello"));
    assert!(a.ended());
}

#[test]
fn a_byte_at_a_time_gives_the_same_answer_streamed() {
    let mut wire = Vec::new();
    stdout(&mut wire, b"Content-Type: text/plain\r\n\r\nfirst ");
    stdout(&mut wire, b"second ");
    record::write_record(&mut wire, RecordType::Stderr, 1, b"PHP Notice: one\n");
    stdout(&mut wire, b"third");
    end(&mut wire);
    for step in [1, 3, 7, 8, 9, 13] {
        let (mut a, gw, _) = answer("bytes");
        let (head, body, last) = run(&mut a, &gw, &wire, step);
        let mut all = match head {
            Some(AtHead::Partial { first, len, buffers, .. }) => {
                assert_eq!((len, buffers), (None, true));
                first
            }
            Some(AtHead::Whole(r)) => match r.body {
                Body::Bytes(b) => b,
                _ => panic!("bytes"),
            },
            _ => panic!("no head at step {step}"),
        };
        all.extend(body);
        assert_eq!(text(&all), "first second third", "step {step}");
        assert!(a.ended(), "step {step}");
        assert!(last.is_none() || matches!(last, Some(Pumped::Ended)), "step {step}: {last:?}");
    }
}

#[test]
fn records_split_across_reads_and_stderr_between_them() {
    let (mut a, gw, log) = answer("stderr");
    let mut wire = Vec::new();
    record::write_record(&mut wire, RecordType::Stderr, 1, b"before the head\n");
    stdout(&mut wire, b"Content-Type: text/html\r\n");
    record::write_record(&mut wire, RecordType::Stderr, 1, b"inside the head\n");
    stdout(&mut wire, b"\r\n<p>");
    record::write_record(&mut wire, RecordType::Stderr, 1, b"in the body\n");
    stdout(&mut wire, b"</p>");
    end(&mut wire);
    // Cut in the middle of headers and contents alike.
    let (head, body, last) = run(&mut a, &gw, &wire, 5);
    let Some(AtHead::Partial { first, .. }) = head else { panic!("partial") };
    assert_eq!(text(&[first, body].concat()), "<p></p>");
    assert!(matches!(last, Some(Pumped::Ended)));
    let logged = std::fs::read_to_string(&log.0).unwrap();
    for line in ["before the head", "inside the head", "in the body"] {
        assert!(logged.contains(&format!("FastCGI: stderr from /srv/app.php: {line}")), "{logged}");
    }
    assert!(logged.contains("192.0.2.7"), "the client is named: {logged}");
}

#[test]
fn an_early_end_is_an_error_before_the_head_and_cut_short_after() {
    // Ended in the middle of the header block: 502, nothing sent yet.
    let (mut a, gw, _) = answer("early");
    let mut wire = Vec::new();
    stdout(&mut wire, b"Content-Type: text/plain\r\n");
    end(&mut wire);
    a.feed(&wire);
    let e = a.head(&gw).err().expect("an error");
    assert_eq!(e.status, 502);
    // Overloaded: 503.
    let (mut a, gw, _) = answer("overloaded");
    let mut wire = Vec::new();
    record::end_request(&mut wire, 1, 0, ProtocolStatus::Overloaded);
    a.feed(&wire);
    assert_eq!(a.head(&gw).err().expect("an error").status, 503);
    // The connection closed after the head: the answer is cut short.
    let (mut a, gw, _) = answer("closed");
    let mut wire = Vec::new();
    stdout(&mut wire, b"Content-Type: text/plain\r\n\r\npart");
    a.feed(&wire);
    assert!(matches!(a.head(&gw), Ok(Some(AtHead::Partial { .. }))));
    let closed = a.closed();
    assert!(closed.why.contains("unix:/run/app.sock"), "{}", closed.why);
    assert!(matches!(a.failure(closed, true, None), Failure::CutShort(_)));
    assert!(a.ended());
}

#[test]
fn a_failure_before_anything_came_is_a_failure_without_a_pool() {
    let (mut a, _, _) = answer("gone");
    // Not a pool's child: nothing to give the request to instead.
    let closed = a.closed();
    assert!(matches!(a.failure(closed, true, None), Failure::Failed(e) if e.status == 502));
}

#[test]
fn malformed_records_and_heads() {
    // A record of version 2 before the head: 502.
    let (mut a, gw, _) = answer("version");
    a.feed(&[2, 6, 0, 1, 0, 0, 0, 0]);
    assert_eq!(a.head(&gw).err().expect("an error").status, 502);
    // A header line without a colon: 502.
    let (mut a, gw, _) = answer("colon");
    let mut wire = Vec::new();
    stdout(&mut wire, b"no colon\r\n\r\n");
    a.feed(&wire);
    assert_eq!(a.head(&gw).err().expect("an error").status, 502);
    // A bad record after the head: cut short, the sink told.
    let (mut a, gw, _) = answer("bad-body");
    let mut wire = Vec::new();
    stdout(&mut wire, b"A: b\r\n\r\nsome");
    a.feed(&wire);
    assert!(matches!(a.head(&gw), Ok(Some(AtHead::Partial { .. }))));
    a.feed(&[9, 6, 0, 1, 0, 0, 0, 0]);
    let mut out = Vec::new();
    assert!(matches!(a.pump(&mut Pulled { out: &mut out }), Pumped::CutShort(e) if e.status == 502));
    assert!(a.ended());
}

#[test]
fn a_local_location_is_a_redirect() {
    let (mut a, gw, _) = answer("redirect");
    let mut wire = Vec::new();
    stdout(&mut wire, b"Location: /other.php?x=1\r\n\r\n");
    end(&mut wire);
    a.feed(&wire);
    assert!(matches!(a.head(&gw), Ok(Some(AtHead::Redirect(l))) if l == "/other.php?x=1"));
}

#[test]
fn unbuffered_answers_say_so() {
    let (mut a, gw, _) = answer("unbuffered");
    let mut wire = Vec::new();
    stdout(&mut wire, b"X-Accel-Buffering: no\r\nContent-Length: 10\r\n\r\nabc");
    a.feed(&wire);
    assert!(matches!(a.head(&gw), Ok(Some(AtHead::Partial { buffers: false, len: Some(10), .. }))));
}
