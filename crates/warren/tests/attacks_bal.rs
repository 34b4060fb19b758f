//! Attacks on the balancer, under each MPM. The attacker is an anonymous
//! client: it forges the sticky-session cookie or URL parameter to reach a
//! member the administrator disabled, or one that does not exist, or with
//! bytes meant to break the parsing (encoded, NUL, very long, many
//! cookies); it asks the balancer-manager for a change without the nonce,
//! with a wrong one, by GET (a link planted on another site), with the
//! nonce percent-encoded or cut short, and from an address its `Require`
//! denies; it POSTs to a member that goes away before answering while the
//! error's own ErrorDocument cannot reach its backend. The members are the
//! real Python backend, but for a hostile one (a thread of the test's)
//! that trickles its health check's answer forever.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "balancer/peers.rs"]
mod peers;

use backend::{ask, dead_port, Backend};
use common::*;
use peers::{counts, encoded, manager_nonce, post};

fn start(mpm: &str, a: &Backend, b: &Backend, manager_access: &str) -> Server {
    let conf = format!(
        "<Proxy balancer://app>\n  BalancerMember {} route=one status=+D\n  BalancerMember {} route=two\n  ProxySet stickysession=ROUTEID|routeid\n</Proxy>\nProxyPass /app/ balancer://app/\n<Location /bm>\n  SetHandler balancer-manager\n  {manager_access}\n</Location>\n",
        a.url(),
        b.url()
    );
    Server::start(mpm, &conf)
}

fn forged_sessions_never_reach_a_disabled_member(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let s = start(mpm, &a, &b, "Require ip 127.0.0.1");
    let long = "x".repeat(6000);
    let forged = [
        "Cookie: ROUTEID=.one\r\n".to_string(),
        "Cookie: ROUTEID=s.one\r\nCookie: ROUTEID=s.one\r\n".to_string(),
        "Cookie: ROUTEID=s.o%6Ee\r\n".to_string(),
        "Cookie: ROUTEID=s.ONE\r\n".to_string(),
        "Cookie: ROUTEID=s.one\0\r\n".to_string(),
        "Cookie: ROUTEID=s.one.two\r\n".to_string(),
        format!("Cookie: ROUTEID=s.{long}\r\n"),
        "Cookie: ROUTEID=s.nosuchroute\r\n".to_string(),
        "Cookie: ROUTEID\r\n".to_string(),
        "Cookie: ;;;=;ROUTEID=;.\r\n".to_string(),
    ];
    for headers in &forged {
        let r = s.get_with("/app/echo", &format!("{headers}Connection: close\r\n"));
        // A NUL in a field is refused outright; anything else is balanced among the usable.
        if r.status == 400 {
            assert!(headers.contains('\0'), "{headers:?}: 400");
            continue;
        }
        assert_eq!(r.status, 200, "{headers:?}: {}", r.text());
        assert_eq!(peers::port_of(&r), b.port, "{headers:?} reached the disabled member");
    }
    for path in ["/app/echo?routeid=s.one", "/app/echo;routeid=s.one", "/app/echo?routeid=s.%6Fne", "/app/echo?x=1&routeid=.one&routeid=.one", "/app/echo%3Brouteid=s.one"] {
        let seen = counts(&s, 2, path, "Connection: close\r\n");
        assert_eq!(seen.get(&b.port), Some(&2), "{path} reached the disabled member: {seen:?}");
    }
}

fn manager_changes_need_the_nonce_and_a_post(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let s = start(mpm, &a, &b, "Require ip 127.0.0.1");
    let nonce = manager_nonce(&s, "/bm");
    assert_eq!(nonce.len(), 32, "{nonce}");
    let enable = |n: &str| format!("/bm?b=app&w={}&nonce={n}&w_status_D=0", encoded(&a.url()));
    let wrong = format!("{}{}", &nonce[..31], if nonce.ends_with('0') { "1" } else { "0" });
    let percent: String = nonce.bytes().map(|c| format!("%{c:02X}")).collect();
    for target in [format!("/bm?b=app&w={}&w_status_D=0", encoded(&a.url())), enable(""), enable(&wrong), enable(&nonce[..16]), enable(&format!("{nonce}0")), enable(&nonce.to_uppercase())] {
        let r = post(&s, &target);
        assert_eq!(r.status, 400, "{target}: {}", r.text());
    }
    // A link on another site makes a browser GET: never a change, nonce or not.
    let r = s.get(&enable(&nonce));
    assert_eq!(r.status, 405, "{}", r.text());
    assert!(s.get("/bm").text().contains("Init Dis"), "a member was enabled without the nonce");
    assert_eq!(counts(&s, 4, "/app/echo", "Connection: close\r\n").get(&b.port), Some(&4));
    // Percent-encoded, it is the same nonce; a bad flag or member is refused.
    assert_eq!(post(&s, &format!("/bm?b=app&w={}&nonce={nonce}&w_status_X=1", encoded(&a.url()))).status, 400);
    assert_eq!(post(&s, &format!("/bm?b=app&w=http%3A%2F%2Fevil&nonce={nonce}&w_status_D=0")).status, 400);
    assert_eq!(post(&s, &format!("/bm?b=nope&w={}&nonce={nonce}&w_status_D=0", encoded(&a.url()))).status, 400);
    // Parameters in a body (Apache's own form, `curl -d`) are not read: said, not ignored.
    let mut c = s.connect();
    let form = format!("b=app&w={}&nonce={nonce}&w_status_D=0", encoded(&a.url()));
    std::io::Write::write_all(&mut c, format!("POST /bm HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}", form.len()).as_bytes()).unwrap();
    assert_eq!(parse_response(&read_to_close(&mut c)).0.status, 400);
    assert!(s.get("/bm").text().contains("Init Dis"));
    assert_eq!(post(&s, &enable(&percent)).status, 200);
    assert!(counts(&s, 6, "/app/echo", "Connection: close\r\n").contains_key(&a.port));
    let log = s.wait_log("error.log", "change refused: no nonce");
    assert!(log.contains("[client 127.0.0.1:") && log.contains("balancer-manager: change refused: no nonce"), "{log}");
}

fn manager_from_a_denied_address(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let s = start(mpm, &a, &b, "Require ip 192.0.2.1");
    let r = s.get("/bm");
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("nonce"), "{}", r.text());
    // Even with the right nonce (learnt elsewhere), from here nothing changes.
    let nonce = {
        let inside = start(mpm, &a, &b, "Require all granted");
        manager_nonce(&inside, "/bm")
    };
    let r = post(&s, &format!("/bm?b=app&w={}&nonce={nonce}&w_status_D=0", encoded(&a.url())));
    assert_eq!(r.status, 403);
    assert_eq!(counts(&s, 4, "/app/echo", "Connection: close\r\n").get(&b.port), Some(&4));
}

/// How many requests with this request line a backend has seen.
fn seen_count(b: &Backend, line: &str) -> usize {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", b.port)).unwrap();
    ask(&mut c, "GET /seen HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false).text().lines().filter(|l| l.starts_with(line)).count()
}

/// A POST whose member went away before answering is not sent to another
/// member (it may have been acted on), even when the error's own
/// ErrorDocument then fails to reach its backend: that failure is not the
/// member's, which must neither be marked in error nor have its POST
/// replayed.
fn a_failure_after_the_member_is_not_the_members(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let conf = format!(
        "<Proxy balancer://app>\n  BalancerMember {}\n  BalancerMember {}\n</Proxy>\nProxyPass /app/ balancer://app/\nProxyPass /err/ http://127.0.0.1:{}/\nErrorDocument 502 /err/\n<Location /bm>\n  SetHandler balancer-manager\n  Require ip 127.0.0.1\n</Location>\n",
        a.url(),
        b.url(),
        dead_port()
    );
    let s = Server::start(mpm, &conf);
    for (method, replays) in [("POST", 1), ("GET", 2)] {
        let r = parse_response(&s.raw(format!("{method} /app/reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes())).0;
        assert_ne!(r.status, 200, "{}", r.text());
        let line = format!("{method} /reset");
        // A GET is idempotent: it is sent on to the other member, as designed.
        assert_eq!(seen_count(&a, &line) + seen_count(&b, &line), replays, "{method} sent to the wrong number of members");
        let page = s.get("/bm").text();
        assert!(!page.contains("Err"), "{method}: a member that took the connection is marked in error: {page}");
    }
}

/// A hostile member: it answers a health check's request with a head
/// that never ends, a byte at a time, each in time for the read's
/// timeout; other requests get a short answer. Stopped when dropped.
struct Trickler {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Trickler {
    fn start() -> Trickler {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let stopped = stopped.clone();
                std::thread::spawn(move || {
                    let Some(head) = backend::read_head(&mut conn) else { return };
                    if !head.contains("warren-hcheck") {
                        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
                        return;
                    }
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nX-Slow: ");
                    while !stopped.load(Ordering::Relaxed) && conn.write_all(b"x").is_ok() {
                        std::thread::sleep(std::time::Duration::from_millis(200));
                    }
                });
            }
        });
        Trickler { port, stop }
    }
}

impl Drop for Trickler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A member that never finishes answering its health check holds the
/// checks of every other member no longer than a check's time limit: the
/// member after it, which is down, is still found out.
fn a_member_trickling_its_check_holds_no_other(mpm: &str) {
    let slow = Trickler::start();
    let down = dead_port();
    let conf = format!(
        "<Proxy balancer://app>\n  BalancerMember http://127.0.0.1:{} hcmethod=GET hcinterval=1\n  BalancerMember http://127.0.0.1:{down} hcmethod=TCP hcinterval=1 hcfails=1\n</Proxy>\nProxyPass /app/ balancer://app/\n",
        slow.port
    );
    let s = Server::start(mpm, &conf);
    // The first balanced request starts the checks.
    let r = s.get_with("/app/x", "");
    assert_eq!(r.status, 200, "{}", r.text());
    let needle = format!("worker http://127.0.0.1:{down} failed its health check");
    let log = s.wait_log("error.log", &needle);
    assert!(log.contains(&needle), "the down member's check never ran: {log}");
}

each_mpm!(
    forged_sessions_never_reach_a_disabled_member,
    manager_changes_need_the_nonce_and_a_post,
    manager_from_a_denied_address,
    a_failure_after_the_member_is_not_the_members,
    a_member_trickling_its_check_holds_no_other
);
