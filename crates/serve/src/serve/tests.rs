//! The serving layer through mock transports, without a server process:
//! HTTP/2 sessions fed bytes in memory by a scripted client (HPACK and
//! frames from `warren_http::h2`), and the blocking driver (HTTP/1.1, and
//! HTTP/2 by prior knowledge) on one end of a loopback connection whose
//! other end the test writes whole (then half-closes) before serving, and
//! reads after. A FastCGI application is played by a thread that writes
//! its answer in pieces, and may stop without ending it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use warren_config::h2::H2Settings;
use warren_handler::{ConnInfo, Site};
use warren_http::h2::frame::{self, Header};
use warren_http::h2::hpack::{Decoder, Encoder};
use warren_http::h2::{Connection, PREFACE};
use warren_http::DateCache;

use crate::blocking::Driver;
use crate::client_stream::ClientStream;
use crate::exchange::conn_rules;
use crate::h2::session::{Ctx, Session, Task};
use warren_mpm::scoreboard::Scoreboard;

pub(crate) const A_TXT: &str = "0123456789abcdefghij";

/// A site in a scratch directory (removed when dropped), from `extra`
/// configuration after a DocumentRoot with a.txt and x.php in it.
pub(crate) struct Fixture {
    pub(crate) dir: PathBuf,
    pub(crate) site: Arc<Site>,
    pub(crate) sb: Scoreboard,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn fixture(name: &str, extra: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("warren-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("htdocs")).unwrap();
    std::fs::write(dir.join("htdocs/a.txt"), A_TXT).unwrap();
    std::fs::write(dir.join("htdocs/x.php"), "<?php").unwrap();
    let conf = dir.join("warren.conf");
    std::fs::write(&conf, format!("Listen 127.0.0.1:80\nServerName localhost\nDocumentRoot htdocs\nErrorLog error.log\nLimitRequestLine 200\n{extra}")).unwrap();
    let loaded = warren_config::load_file(&conf, &warren_config::LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let site = Arc::new(Site::new(loaded.settings.unwrap()).unwrap());
    Fixture { dir, site, sb: Scoreboard::new(1, 1).unwrap() }
}

pub(crate) fn info() -> ConnInfo {
    ConnInfo::new("127.0.0.1:40000".parse().unwrap(), "127.0.0.1:80".parse().unwrap())
}

/// A FastCGI application on a loopback port that answers one request
/// with `pieces` of stdout, each its own record and its own write.
pub(crate) fn fastcgi_app(pieces: &'static [&'static str]) -> (u16, std::thread::JoinHandle<()>) {
    fastcgi_app_ending(pieces, true)
}

/// [`fastcgi_app`], which without `end` closes its connection after the
/// pieces, never ending its stdout or the request (a crashed application).
pub(crate) fn fastcgi_app_ending(pieces: &'static [&'static str], end: bool) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut id;
        // Records until the empty STDIN that ends the request.
        loop {
            let mut head = [0u8; 8];
            conn.read_exact(&mut head).unwrap();
            let len = u16::from_be_bytes([head[4], head[5]]) as usize + head[6] as usize;
            let mut content = vec![0u8; len];
            conn.read_exact(&mut content).unwrap();
            id = u16::from_be_bytes([head[2], head[3]]);
            if head[1] == 5 && head[4..6] == [0, 0] {
                break;
            }
        }
        let record = |kind: u8, content: &[u8]| {
            let mut r = vec![1, kind, (id >> 8) as u8, id as u8, (content.len() >> 8) as u8, content.len() as u8, 0, 0];
            r.extend_from_slice(content);
            r
        };
        for piece in pieces {
            conn.write_all(&record(6, piece.as_bytes())).unwrap();
            conn.flush().unwrap();
        }
        if end {
            conn.write_all(&record(6, b"")).unwrap();
            conn.write_all(&record(3, &[0; 8])).unwrap();
        }
    });
    (port, app)
}

/// An HTTP/2 client in memory: requests as frames, the server's frames
/// back as responses.
pub(crate) struct H2Client {
    encoder: Encoder,
    decoder: Decoder,
    from_server: Vec<u8>,
}

/// What came back on one stream.
#[derive(Debug, Default)]
pub(crate) struct H2Response {
    pub(crate) fields: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) ended: bool,
    pub(crate) reset: bool,
}

impl H2Response {
    pub(crate) fn status(&self) -> &str {
        self.fields.iter().find(|(n, _)| n == ":status").map_or("", |(_, v)| v.as_str())
    }
}

impl H2Client {
    pub(crate) fn new() -> H2Client {
        H2Client { encoder: Encoder::new(), decoder: Decoder::new(4096), from_server: Vec::new() }
    }

    pub(crate) fn preface(&self) -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        frame::write_settings(&mut out, &[]);
        out
    }

    pub(crate) fn request(&mut self, stream: u32, method: &str, path: &str, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
        let mut list: Vec<(&[u8], &[u8])> = vec![(b":method", method.as_bytes()), (b":scheme", b"http"), (b":path", path.as_bytes()), (b":authority", b"localhost")];
        list.extend(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        let mut block = Vec::new();
        self.encoder.encode(list, &mut block);
        let mut out = Vec::new();
        frame::write_headers(&mut out, stream, &block, end_stream, 16_384);
        out
    }

    /// The responses of the streams the server's frames so far answer.
    pub(crate) fn responses(&mut self, out: &[u8]) -> std::collections::BTreeMap<u32, H2Response> {
        self.from_server.extend_from_slice(out);
        let mut got: std::collections::BTreeMap<u32, H2Response> = Default::default();
        let mut at = 0;
        while let Some(h) = Header::parse(&self.from_server[at..]) {
            let end = at + frame::HEADER_LEN + h.len as usize;
            let Some(payload) = self.from_server.get(at + frame::HEADER_LEN..end) else { break };
            let r = got.entry(h.stream).or_default();
            match h.kind {
                frame::HEADERS => {
                    self.decoder.decode(payload, 1 << 16, &mut |n, v| r.fields.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))).unwrap();
                    r.ended |= h.flags & frame::FLAG_END_STREAM != 0;
                }
                frame::DATA => {
                    r.body.extend_from_slice(payload);
                    r.ended |= h.flags & frame::FLAG_END_STREAM != 0;
                }
                frame::RST_STREAM => r.reset = true,
                _ => {}
            }
            at = end;
        }
        got.remove(&0);
        got
    }
}

/// A site whose `*.php` go to the FastCGI application on `port`, with `extra`.
pub(crate) fn fastcgi_site(name: &str, port: u16, extra: &str) -> Fixture {
    fixture(name, &format!("<FilesMatch \"\\.php$\">\nSetHandler \"proxy:fcgi://127.0.0.1:{port}\"\n</FilesMatch>\n{extra}"))
}

/// A new connection's preface and `path` asked on stream 1: the responses.
fn first_stream(run: &mut H2Run, client: &mut H2Client, path: &str) -> std::collections::BTreeMap<u32, H2Response> {
    let mut input = client.preface();
    input.extend(client.request(1, "GET", path, &[], true));
    client.responses(&run.exchange(&input, 1 << 16))
}

/// An HTTP/2 session of `f`'s site and what drives it, as a driver does
/// but with the bytes in memory and tasks run on the test's thread.
struct H2Run<'a> {
    f: &'a Fixture,
    session: Session,
    logs: warren_handler::site::LogWriters,
    date: DateCache,
    tasks: Vec<Task>,
}

impl<'a> H2Run<'a> {
    fn new(f: &'a Fixture) -> H2Run<'a> {
        let rules = conn_rules(&f.site.settings);
        let codec = Connection::new(crate::h2::limits(&H2Settings::default(), &rules));
        H2Run { f, session: Session::new(codec, info(), 0), logs: f.site.log_writers(), date: DateCache::default(), tasks: Vec::new() }
    }

    /// Feeds `input` (in pieces of `piece` bytes, as reads may cut it),
    /// runs the work it asks for, and takes the output.
    fn exchange(&mut self, input: &[u8], piece: usize) -> Vec<u8> {
        let slot = self.f.sb.thread(0, 0);
        let mut pending = Vec::new();
        for chunk in input.chunks(piece) {
            pending.extend_from_slice(chunk);
            let mut ctx = Ctx { site: &self.f.site, logs: &mut self.logs, date: &mut self.date, slot };
            let used = self.session.feed(&mut ctx, &pending, Instant::now(), &mut self.tasks).unwrap();
            pending.drain(..used);
        }
        for task in std::mem::take(&mut self.tasks) {
            let id = task.stream;
            let resp = task.run(&self.f.site);
            let mut ctx = Ctx { site: &self.f.site, logs: &mut self.logs, date: &mut self.date, slot };
            self.session.complete(&mut ctx, id, resp, None);
        }
        let mut ctx = Ctx { site: &self.f.site, logs: &mut self.logs, date: &mut self.date, slot };
        while self.session.produce(&mut ctx) {}
        let out = self.session.codec.output().to_vec();
        self.session.codec.written(out.len());
        out
    }
}

#[test]
fn h2_streams_of_one_connection_are_each_served_and_counted() {
    let f = fixture("h2-streams", "");
    let mut run = H2Run::new(&f);
    let mut client = H2Client::new();
    let mut input = client.preface();
    input.extend(client.request(1, "GET", "/a.txt", &[], true));
    input.extend(client.request(3, "HEAD", "/a.txt", &[], true));
    input.extend(client.request(5, "GET", "/missing", &[], true));
    // Cut into 7-byte reads: the codec takes frames whole across them.
    let got = client.responses(&run.exchange(&input, 7));
    assert_eq!((got[&1].status(), got[&1].body.as_slice(), got[&1].ended), ("200", A_TXT.as_bytes(), true), "{got:?}");
    assert_eq!((got[&3].status(), got[&3].body.len(), got[&3].ended), ("200", 0, true), "HEAD: {got:?}");
    assert_eq!((got[&5].status(), got[&5].ended), ("404", true), "{got:?}");
    // A later stream on the same connection, as keep-alive's next request.
    let more = client.request(7, "GET", "/a.txt?again", &[], true);
    let got = client.responses(&run.exchange(&more, 1 << 16));
    assert_eq!(got[&7].body, A_TXT.as_bytes());
    assert!(run.session.is_idle());
    assert_eq!(f.sb.thread(0, 0).accesses.load(std::sync::atomic::Ordering::Relaxed), 4, "each stream counted once");
}

#[test]
fn h2_body_over_limit_is_refused_before_it_is_read() {
    let f = fixture("h2-limit", "LimitRequestBody 10\n");
    let mut run = H2Run::new(&f);
    let mut client = H2Client::new();
    let mut input = client.preface();
    input.extend(client.request(1, "POST", "/a.txt", &[("content-length", "11")], false));
    let got = client.responses(&run.exchange(&input, 1 << 16));
    assert_eq!((got[&1].status(), got[&1].ended), ("413", true), "{got:?}");
}

#[test]
fn h2_fastcgi_answer_arriving_in_pieces_is_whole_at_the_client() {
    let (port, app) = fastcgi_app(&["Content-Type: text/plain\r\n", "X-Piece: 1\r\n\r\nhel", "lo, ", "world"]);
    let f = fastcgi_site("h2-fcgi", port, "");
    let mut run = H2Run::new(&f);
    let mut client = H2Client::new();
    let got = first_stream(&mut run, &mut client, "/x.php");
    app.join().unwrap();
    let r = &got[&1];
    assert_eq!((r.status(), r.body.as_slice(), r.ended), ("200", &b"hello, world"[..], true), "{got:?}");
    assert!(r.fields.iter().any(|(n, v)| n == "x-piece" && v == "1"), "{r:?}");
}

#[test]
fn h2_routing_that_runs_htaccess_patterns_goes_to_a_task() {
    let f = fixture("h2-offloop", "<Directory />\nAllowOverride All\n</Directory>\n");
    std::fs::write(f.dir.join("htdocs/.htaccess"), "RewriteEngine On\nRewriteRule ^b\\.txt$ a.txt\n").unwrap();
    let mut run = H2Run::new(&f);
    let mut client = H2Client::new();
    let mut input = client.preface();
    input.extend(client.request(1, "GET", "/b.txt", &[], true));
    let slot = f.sb.thread(0, 0);
    let mut ctx = Ctx { site: &f.site, logs: &mut run.logs, date: &mut run.date, slot };
    run.session.feed(&mut ctx, &input, Instant::now(), &mut run.tasks).unwrap();
    assert_eq!(run.tasks.len(), 1, "the session does not run a site owner's patterns itself");
    let got = client.responses(&run.exchange(&[], 1));
    assert_eq!((got[&1].status(), got[&1].body.as_slice()), ("200", A_TXT.as_bytes()), "{got:?}");
}

/// Serves what `input` holds (the client's side then half-closed) on one
/// connection with the blocking driver; what the client read back.
fn serve_h1(f: &Fixture, input: &[u8]) -> String {
    String::from_utf8_lossy(&serve_on_thread(f, input)).into_owned()
}

/// [`serve_h1`]'s bytes, on a connection that offers what HTTP/2 the
/// site's configured listener does.
fn serve_on_thread(f: &Fixture, input: &[u8]) -> Vec<u8> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, peer) = listener.accept().unwrap();
    client.write_all(input).unwrap();
    client.shutdown(Shutdown::Write).unwrap();
    server.set_nonblocking(true).unwrap();
    let stop = AtomicBool::new(false);
    let mut driver = Driver::new(&f.site, &stop, f.sb.thread(0, 0));
    let h2 = Some(f.site.settings.h2_listener("127.0.0.1:80".parse().unwrap())).filter(|h| h.any()).map(Arc::new);
    driver.serve(ClientStream::plain(server).with_h2(h2), ConnInfo::new(peer, listener.local_addr().unwrap()));
    let mut out = Vec::new();
    client.read_to_end(&mut out).unwrap();
    out
}

pub(crate) fn statuses(out: &str) -> Vec<&str> {
    out.split("HTTP/1.1 ").skip(1).map(|r| &r[..3]).collect()
}

#[test]
fn h1_pipelined_requests_are_answered_in_order_on_one_connection() {
    let f = fixture("h1-pipeline", "");
    let out = serve_h1(&f, b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\nGET /missing HTTP/1.1\r\nHost: localhost\r\n\r\nHEAD /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(statuses(&out), ["200", "404", "200"], "{out}");
    assert_eq!(out.matches(A_TXT).count(), 1, "HEAD has no body: {out}");
    assert!(!out.contains("Connection: close"), "kept alive: {out}");
}

#[test]
fn h1_keep_alive_ends_where_the_client_or_the_limit_says() {
    let f = fixture("h1-keepalive", "MaxKeepAliveRequests 2\n");
    let get = "GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let out = serve_h1(&f, get.repeat(3).as_bytes());
    assert_eq!(statuses(&out), ["200", "200"], "the third is not read: {out}");
    assert!(out.ends_with(&format!("Connection: close\r\n\r\n{A_TXT}")), "{out}");
    let out = serve_h1(&f, format!("GET /a.txt HTTP/1.0\r\n\r\n{get}").as_bytes());
    assert_eq!(statuses(&out), ["200"], "HTTP/1.0 without keep-alive: one answer, then closed: {out}");
}

#[test]
fn h1_limits_answer_and_close() {
    let f = fixture("h1-limits", "LimitRequestBody 10\n");
    let long = format!("GET /{} HTTP/1.1\r\nHost: localhost\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n", "a".repeat(300));
    let out = serve_h1(&f, long.as_bytes());
    assert_eq!(statuses(&out), ["414"], "LimitRequestLine, then closed: {out}");
    let out = serve_h1(&f, b"POST /a.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\n\r\nhello world");
    assert_eq!(statuses(&out), ["413"], "LimitRequestBody: {out}");
    let out = serve_h1(&f, b"POST /a.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhelloGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(statuses(&out).len(), 2, "a body within the limit is read and dropped, the next request follows: {out}");
}

#[test]
fn h1_fastcgi_answer_arriving_in_pieces_is_whole_at_the_client() {
    let (port, app) = fastcgi_app(&["Content-Type: text/plain\r\n\r\nhel", "lo, ", "world"]);
    let f = fastcgi_site("h1-fcgi", port, "");
    let out = serve_h1(&f, b"GET /x.php HTTP/1.1\r\nHost: localhost\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    app.join().unwrap();
    assert_eq!(statuses(&out), ["200", "200"], "{out}");
    let body = out.split("\r\n\r\n").nth(1).unwrap();
    let unchunked: String = body.split("\r\n").skip(1).step_by(2).collect();
    assert!(body.starts_with("hello, world") || unchunked.starts_with("hello, world"), "{out}");
}

#[test]
fn h2_a_head_over_a_limit_is_refused_on_its_stream_and_the_connection_goes_on() {
    let f = fixture("h2-head-limit", "LimitRequestFieldSize 100\n");
    let mut run = H2Run::new(&f);
    let mut client = H2Client::new();
    let mut input = client.preface();
    let long_path = format!("/{}", "a".repeat(300));
    input.extend(client.request(1, "GET", &long_path, &[], true));
    let big = "b".repeat(200);
    input.extend(client.request(3, "GET", "/a.txt", &[("x-big", &big)], true));
    input.extend(client.request(5, "GET", "/a.txt", &[], true));
    let got = client.responses(&run.exchange(&input, 1 << 16));
    assert_eq!((got[&1].status(), got[&1].ended), ("414", true), "LimitRequestLine on :path: {got:?}");
    assert_eq!((got[&3].status(), got[&3].ended), ("431", true), "LimitRequestFieldSize: {got:?}");
    assert_eq!((got[&5].status(), got[&5].body.as_slice()), ("200", A_TXT.as_bytes()), "the connection serves on: {got:?}");
}

#[test]
fn h2_fastcgi_answer_cut_short_never_looks_complete() {
    let (port, app) = fastcgi_app_ending(&["Content-Type: text/plain\r\n\r\nhel", "lo"], false);
    let f = fastcgi_site("h2-fcgi-cut", port, "");
    let mut run = H2Run::new(&f);
    let mut client = H2Client::new();
    let got = first_stream(&mut run, &mut client, "/x.php");
    app.join().unwrap();
    let r = &got[&1];
    // Its head and what came of the body are passed on as they arrive;
    // the end never comes, so the stream is reset, not ended.
    assert_eq!((r.status(), r.body.as_slice(), r.ended, r.reset), ("200", &b"hello"[..], false, true), "{got:?}");
    // The connection is still good for the next stream.
    let next = client.request(3, "GET", "/a.txt", &[], true);
    let got = client.responses(&run.exchange(&next, 1 << 16));
    assert_eq!((got[&3].status(), got[&3].body.as_slice()), ("200", A_TXT.as_bytes()), "{got:?}");
}

#[test]
fn h1_fastcgi_answer_cut_short_closes_without_a_last_chunk() {
    let (port, app) = fastcgi_app_ending(&["Content-Type: text/plain\r\n\r\nhel", "lo"], false);
    let f = fastcgi_site("h1-fcgi-cut", port, "");
    let out = serve_h1(&f, b"GET /x.php HTTP/1.1\r\nHost: localhost\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    app.join().unwrap();
    // The head and the body so far went out as they came (chunked, the
    // length unknown); the connection is closed with no last chunk, so the
    // client can tell the answer is not whole, and nothing follows it.
    assert_eq!(statuses(&out), ["200"], "{out}");
    assert!(out.contains("Transfer-Encoding: chunked\r\n"), "{out}");
    assert_eq!(chunks_after_head(&out), Some(("hello".to_string(), false)), "{out:?}");
}

/// The chunked body after the first head in `out`, as far as it goes: its
/// payload, and whether the last chunk ended it (None: not chunks, or
/// something after the last chunk).
pub(crate) fn chunks_after_head(out: &str) -> Option<(String, bool)> {
    let mut rest = &out[out.find("\r\n\r\n")? + 4..];
    let mut payload = String::new();
    // Each chunk as it was read (the pieces may be cut anywhere).
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size, 16).ok()?;
        if n == 0 {
            return (after == "\r\n").then_some((payload, true));
        }
        payload.push_str(after.get(..n)?);
        rest = after.get(n..)?.strip_prefix("\r\n")?;
    }
    rest.is_empty().then_some((payload, false))
}

#[test]
fn h1_a_chunked_body_is_read_through_and_counted_against_the_limit() {
    let f = fixture("h1-chunked", "LimitRequestBody 10\n");
    let out = serve_h1(&f, b"POST /a.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(statuses(&out).len(), 2, "the body within the limit is read to its end, the next request follows: {out}");
    assert!(out.ends_with(A_TXT), "{out}");
    let out = serve_h1(&f, b"POST /a.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(statuses(&out), ["413"], "12 bytes past LimitRequestBody 10 as they come, then closed: {out}");
}

#[test]
fn h2_on_a_thread_serves_streams_and_fastcgi_answers_whole_or_cut_short() {
    for (end, name) in [(true, "thread-h2-fcgi"), (false, "thread-h2-fcgi-cut")] {
        let (port, app) = fastcgi_app_ending(&["Content-Type: text/plain\r\n\r\nhel", "lo"], end);
        let f = fastcgi_site(name, port, "Protocols h2c http/1.1\n");
        let mut client = H2Client::new();
        let mut input = client.preface();
        input.extend(client.request(1, "GET", "/a.txt", &[], true));
        input.extend(client.request(3, "GET", "/x.php", &[], true));
        input.extend(client.request(5, "GET", &format!("/{}", "a".repeat(300)), &[], true));
        let got = client.responses(&serve_on_thread(&f, &input));
        app.join().unwrap();
        assert_eq!((got[&1].status(), got[&1].body.as_slice(), got[&1].ended), ("200", A_TXT.as_bytes(), true), "{got:?}");
        assert_eq!((got[&3].status(), got[&3].body.as_slice(), got[&3].ended, got[&3].reset), ("200", &b"hello"[..], end, !end), "{got:?}");
        assert_eq!((got[&5].status(), got[&5].ended), ("414", true), "LimitRequestLine on one stream: {got:?}");
    }
}
