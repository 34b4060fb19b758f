//! [`start`](super::start) and [`end`](super::end) alone, without a
//! transport: what each kind of plan comes out as on the loop and on a
//! thread, the keep-alive decision for each carrier, LimitRequestBody on
//! a declared length, and what the scoreboard sees of a request.

use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::Ordering;

use warren_handler::{Body, ConnInfo, Outcome};
use warren_http::{parse_head, HeadLimits, KeepAlivePolicy, RequestHead};
use warren_mpm::scoreboard::State;

use super::tests::{fixture, info, Fixture, A_TXT};
use super::{end, route_on_thread, run_work, start, Carrier, Records, Router, Started};

fn head(raw: &str) -> RequestHead {
    let limits = HeadLimits { request_line: 8192, field_size: 8192, fields: 100, head: 65536 };
    parse_head(raw.as_bytes(), &limits).unwrap().unwrap().0
}

fn get(path: &str) -> RequestHead {
    head(&format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"))
}

fn policy(f: &Fixture) -> KeepAlivePolicy {
    crate::exchange::conn_rules(&f.site.settings).keep_alive
}

fn started(f: &Fixture, head: RequestHead, carrier: Carrier, router: Router) -> Started {
    let mut conn: ConnInfo = info();
    start(&f.site, f.sb.thread(0, 0), head, &mut conn, carrier, router)
}

/// The outcome of `path` on `router`, an HTTP/1.1 connection's first request.
fn outcome(f: &Fixture, path: &str, router: Router) -> Outcome {
    let policy = policy(f);
    let carrier = Carrier::Http1 { policy: &policy, served: 1, stopping: false };
    started(f, get(path), carrier, router).outcome.unwrap_or_else(|e| panic!("{path}: refused: {e}"))
}

fn body_text(body: &Body) -> String {
    match body {
        Body::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Body::Shared(b) => String::from_utf8_lossy(b).into_owned(),
        Body::Empty => String::new(),
        _ => "(a file or a stream)".into(),
    }
}

/// What an outcome is, for the assertions: `ready 200`, `blocking`,
/// `gateway fastcgi 127.0.0.1:9`, `gateway thread`, `off-loop`.
fn kind(o: &Outcome) -> String {
    match o {
        Outcome::Ready(r) => format!("ready {}", r.status),
        Outcome::Blocking(_) => "blocking".into(),
        Outcome::Gateway(gw) if gw.needs_thread() => "gateway thread".into(),
        Outcome::Gateway(gw) => format!("gateway fastcgi {}", gw.backend_name()),
        Outcome::OffLoop => "off-loop".into(),
    }
}

/// A site with a file, a listing, a FastCGI script, a CGI program, an HTTP
/// backend, a redirect and a directory whose `.htaccess` rewrites.
fn plans_fixture() -> Fixture {
    let extra = "<FilesMatch \"\\.php$\">\nSetHandler \"proxy:fcgi://127.0.0.1:9\"\n</FilesMatch>\n\
                 <Directory />\nAllowOverride All\n</Directory>\n\
                 <Directory htdocs/d>\nOptions +Indexes\n</Directory>\n\
                 ScriptAlias /cgi-bin/ cgi/\n\
                 ProxyPass /px/ http://127.0.0.1:9/\n\
                 Redirect /old /a.txt\n";
    let f = fixture("plans", extra);
    std::fs::create_dir_all(f.dir.join("htdocs/d")).unwrap();
    std::fs::write(f.dir.join("htdocs/d/listed.txt"), "x").unwrap();
    std::fs::create_dir_all(f.dir.join("htdocs/h")).unwrap();
    std::fs::write(f.dir.join("htdocs/h/.htaccess"), "RewriteEngine On\nRewriteRule ^b\\.txt$ /a.txt\n").unwrap();
    std::fs::create_dir_all(f.dir.join("cgi")).unwrap();
    std::fs::write(f.dir.join("cgi/t.cgi"), "#!/bin/sh\necho\n").unwrap();
    std::fs::set_permissions(f.dir.join("cgi/t.cgi"), std::fs::Permissions::from_mode(0o755)).unwrap();
    f
}

#[test]
fn each_plan_comes_out_as_its_outcome_on_the_loop_and_on_a_thread() {
    let f = plans_fixture();
    for (path, on_loop, on_thread) in [
        ("/a.txt", "ready 200", "ready 200"),
        ("/missing", "ready 404", "ready 404"),
        ("/d/", "blocking", "blocking"),
        ("/x.php", "gateway fastcgi 127.0.0.1:9", "gateway fastcgi 127.0.0.1:9"),
        ("/cgi-bin/t.cgi", "gateway thread", "gateway thread"),
        ("/px/y", "gateway thread", "gateway thread"),
        ("/old", "ready 302", "ready 302"),
        // A site owner's patterns never run on the loop.
        ("/h/b.txt", "off-loop", "ready 200"),
    ] {
        assert_eq!(kind(&outcome(&f, path, Router::Loop)), on_loop, "{path} on the loop");
        assert_eq!(kind(&outcome(&f, path, Router::Thread)), on_thread, "{path} on a thread");
    }
    // What a thread makes of routing the loop handed over, and of blocking work.
    let h = get("/h/b.txt");
    match route_on_thread(&f.site, &h, &info()) {
        Outcome::Ready(r) => assert_eq!((r.status, body_text(&r.body)), (200, A_TXT.to_string())),
        other => panic!("routed on a thread: {}", kind(&other)),
    }
    let Outcome::Blocking(work) = outcome(&f, "/d/", Router::Thread) else { panic!("a listing is blocking work") };
    let listing = run_work(work, &f.site, &get("/d/"), &info());
    assert_eq!(listing.status, 200);
    assert!(body_text(&listing.body).contains("listed.txt"), "{}", body_text(&listing.body));
    // Blocking work that panics answers 500 rather than taking the thread down.
    let panicked = run_work(Box::new(|| panic!("a handler's bug")), &f.site, &get("/d/"), &info());
    assert_eq!(panicked.status, 500);
}

#[test]
fn keep_alive_is_decided_once_for_every_carrier() {
    let f = fixture("keepalive-decision", "MaxKeepAliveRequests 3\n");
    let p = policy(&f);
    let kept = |h: RequestHead, served: u32, stopping: bool| started(&f, h, Carrier::Http1 { policy: &p, served, stopping }, Router::Thread).exchange.keep_alive;
    assert!(kept(get("/a.txt"), 1, false));
    assert!(kept(get("/a.txt"), 2, false));
    assert!(!kept(get("/a.txt"), 3, false), "the MaxKeepAliveRequests-th request closes");
    assert!(!kept(get("/a.txt"), 1, true), "a stopping server keeps none");
    assert!(!kept(head("GET /a.txt HTTP/1.0\r\n\r\n"), 1, false), "HTTP/1.0 without keep-alive");
    assert!(kept(head("GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), 1, false));
    assert!(!kept(head("GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 1, false));
    // An HTTP/2 stream never closes its connection, whatever the count.
    assert!(started(&f, get("/a.txt"), Carrier::Http2, Router::Loop).exchange.keep_alive);
    let off = fixture("keepalive-off", "KeepAlive Off\n");
    let p = policy(&off);
    assert!(!started(&off, get("/a.txt"), Carrier::Http1 { policy: &p, served: 1, stopping: false }, Router::Thread).exchange.keep_alive);
}

#[test]
fn a_declared_body_over_the_limit_is_refused_before_the_handler() {
    let f = fixture("declared-limit", "LimitRequestBody 10\n");
    let p = policy(&f);
    let post = |extra: &str| head(&format!("POST /a.txt HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n"));
    let carrier = Carrier::Http1 { policy: &p, served: 1, stopping: false };
    let mut over = started(&f, post("Content-Length: 11\r\n"), carrier, Router::Loop);
    let e = over.outcome.as_ref().err().expect("11 bytes declared against a limit of 10");
    assert_eq!(e.status, 413);
    let answer = over.exchange.body_error(&e.clone(), &f.site, &info());
    assert_eq!(answer.status, 413);
    assert!(!over.exchange.keep_alive && over.exchange.linger, "the unread body is drained, then the connection closed");
    assert!(started(&f, post("Content-Length: 10\r\n"), carrier, Router::Loop).outcome.is_ok());
    // A chunked body declares no length: it is counted as it is read.
    let chunked = started(&f, post("Transfer-Encoding: chunked\r\n"), carrier, Router::Loop);
    assert!(chunked.outcome.is_ok());
    assert_eq!(chunked.exchange.body_limit, 10);
}

#[test]
fn the_scoreboard_sees_a_threads_request_and_its_end() {
    let f = fixture("board", "ExtendedStatus On\n");
    let slot = f.sb.thread(0, 0);
    slot.set(State::KeepAlive);
    let s = started(&f, get("/a.txt?on-loop"), Carrier::Http2, Router::Loop);
    assert_eq!(slot.state(), State::KeepAlive, "the loop's slot is every connection's: left as it is");
    assert_eq!(slot.request(), "GET /a.txt?on-loop HTTP/1.1");
    let p = policy(&f);
    let mut s2 = started(&f, get("/a.txt?on-thread"), Carrier::Http1 { policy: &p, served: 1, stopping: false }, Router::Thread);
    assert_eq!(slot.state(), State::Writing, "a thread's slot is its request's until answered");
    assert_eq!(slot.request(), "GET /a.txt?on-thread HTTP/1.1");
    let (before, bytes_before) = (slot.accesses.load(Ordering::Relaxed), slot.bytes.load(Ordering::Relaxed));
    let mut logs = f.site.log_writers();
    s2.exchange.bytes_sent = 123;
    s2.exchange.status = 200;
    end(&mut Records { site: &f.site, logs: &mut logs, slot }, &s2.exchange, &info(), 1, false);
    end(&mut Records { site: &f.site, logs: &mut logs, slot }, &s.exchange, &info(), 1, false);
    assert_eq!(slot.accesses.load(Ordering::Relaxed), before + 2, "each request counted once, at its end");
    assert_eq!(slot.bytes.load(Ordering::Relaxed) - bytes_before, 123);
}
