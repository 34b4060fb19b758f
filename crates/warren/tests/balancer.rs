//! mod_proxy_balancer and mod_proxy_hcheck under each MPM, with real
//! peers: Python HTTP backends (the proxy tests' backend.py, which says
//! which port it listens on in `/echo`) for the lbmethods' distributions,
//! sticky sessions, failover and the BALANCER_* variables; and three
//! php-fpm backends on TCP, each in its own network namespace behind a
//! veth pair, one killed under load and brought back: no request fails,
//! and the health check takes the dead member out within its hcinterval.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "balancer/peers.rs"]
mod peers;

use std::collections::HashMap;
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use backend::{dead_port, Backend};
use common::*;
use peers::{counts, encoded, manager_nonce, port_of, post};

fn byrequests_follows_loadfactors(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let s = Server::start(mpm, &format!("<Proxy balancer://app>\n  BalancerMember {} loadfactor=1\n  BalancerMember {} loadfactor=3\n</Proxy>\nProxyPass /app/ balancer://app/\n", a.url(), b.url()));
    // Every child draws from the one shared credit: exactly 1 in 4 to a,
    // whichever child answers.
    let seen = counts(&s, 40, "/app/echo", "Connection: close\r\n");
    assert_eq!((seen.get(&a.port), seen.get(&b.port)), (Some(&10), Some(&30)), "{seen:?}");
}

fn bybusyness_avoids_the_busy_member(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let s = Server::start(mpm, &format!("ProxyTimeout 30\n<Proxy balancer://app>\n  BalancerMember {}\n  BalancerMember {}\n  ProxySet lbmethod=bybusyness\n</Proxy>\nProxyPass /app/ balancer://app/\n", a.url(), b.url()));
    let hung = get_in_thread(s.port, "/app/hang", Duration::from_secs(60));
    // Whichever member got /hang holds it: every other request goes to the other.
    let deadline = Instant::now() + Duration::from_secs(20);
    let holder = loop {
        let got_hang = |port: u16| backend::ask(&mut std::net::TcpStream::connect(("127.0.0.1", port)).unwrap(), "GET /seen HTTP/1.1\r\nHost: x\r\n\r\n", false).text().contains("/hang");
        if let Some(p) = [a.port, b.port].into_iter().find(|&p| got_hang(p)) {
            break p;
        }
        assert!(Instant::now() < deadline, "/hang never reached a backend");
        std::thread::sleep(Duration::from_millis(20));
    };
    let other = if holder == a.port { b.port } else { a.port };
    let seen = counts(&s, 8, "/app/echo", "Connection: close\r\n");
    assert_eq!(seen.get(&other), Some(&8), "{seen:?}");
    drop(a);
    drop(b);
    let _ = hung.join();
}

fn bytraffic_follows_bytes(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let s = Server::start(mpm, &format!("<Proxy balancer://app>\n  BalancerMember {}\n  BalancerMember {}\n  ProxySet lbmethod=bytraffic\n</Proxy>\nProxyPass /app/ balancer://app/\n", a.url(), b.url()));
    let r = s.get_with("/app/big?n=300000", "Connection: close\r\n");
    assert_eq!((r.status, r.body.len()), (200, 300000));
    // a moved 300 KB: the small answers that follow all go to b.
    let seen = counts(&s, 10, "/app/echo", "Connection: close\r\n");
    assert_eq!(seen.get(&b.port), Some(&10), "{seen:?} (a is {})", a.port);
}

fn sticky_sessions_follow_routes(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let conf = format!(
        "<Proxy balancer://app>\n  BalancerMember {} route=one\n  BalancerMember {} route=two\n  ProxySet stickysession=ROUTEID|routeid\n</Proxy>\nProxyPass /app/ balancer://app/\n\
         Header add Set-Cookie \"ROUTEID=.%{{BALANCER_WORKER_ROUTE}}e; path=/\" env=BALANCER_ROUTE_CHANGED\n\
         LogFormat \"%U %{{BALANCER_NAME}}e %{{BALANCER_WORKER_NAME}}e %{{BALANCER_WORKER_ROUTE}}e %{{BALANCER_SESSION_ROUTE}}e\" bal\nCustomLog balancer.log bal\n",
        a.url(),
        b.url()
    );
    let s = Server::start(mpm, &conf);
    for (headers, path, port) in [("Cookie: ROUTEID=x.two\r\n", "/app/echo", b.port), ("Cookie: other=1; ROUTEID=.one\r\n", "/app/echo", a.port), ("", "/app/echo?routeid=s.two", b.port), ("", "/app/echo;routeid=s.one", a.port)] {
        let seen = counts(&s, 5, path, &format!("{headers}Connection: close\r\n"));
        assert_eq!(seen.get(&port), Some(&5), "{headers}{path}: {seen:?}");
    }
    // A request without a session gets the cookie naming its member.
    let r = s.get_with("/app/echo", "Connection: close\r\n");
    let route = if port_of(&r) == a.port { "one" } else { "two" };
    assert_eq!(r.header("Set-Cookie"), Some(format!("ROUTEID=.{route}; path=/").as_str()), "{:?}", r.headers);
    // One that keeps its member gets none.
    let r = s.get_with("/app/echo", "Cookie: ROUTEID=.two\r\nConnection: close\r\n");
    assert_eq!(r.header("Set-Cookie"), None);
    let log = s.wait_log("balancer.log", &format!("/app/echo balancer://app {} two two", b.url()));
    assert!(log.contains(&format!("/app/echo balancer://app {} two two", b.url())), "{log}");
}

fn failover_on_a_refused_connection(mpm: &str) {
    let live = Backend::start();
    let dead = format!("http://127.0.0.1:{}", dead_port());
    let s = Server::start(mpm, &format!("<Proxy balancer://app>\n  BalancerMember {dead}\n  BalancerMember {}\n</Proxy>\nProxyPass /app/ balancer://app/\n", live.url()));
    // The first request, a POST, is elected the dead member: its body
    // goes whole to the live one.
    let mut c = s.connect();
    c.write_all(b"POST /app/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello").unwrap();
    let r = parse_response(&read_to_close(&mut c)).0;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().ends_with("body-length: 5\nhello"), "{}", r.text());
    for _ in 0..6 {
        let r = s.get_with("/app/echo", "Connection: close\r\n");
        assert_eq!((r.status, port_of(&r)), (200, live.port), "{}", r.text());
    }
    let log = s.wait_log("error.log", &format!("worker {dead} in error state for 60 s"));
    assert!(log.contains(&format!("worker {dead} in error state for 60 s")), "{log}");
    // In error state for every child: one refused connect in all.
    let refused = log.matches(&format!("attempt to connect to {} failed", dead.trim_start_matches("http://"))).count();
    assert_eq!(refused, 1, "{log}");
}

fn no_usable_member_is_503(mpm: &str) {
    let s = Server::start(mpm, &format!("<Proxy balancer://app>\n  BalancerMember http://127.0.0.1:{} status=+D\n</Proxy>\nProxyPass /app/ balancer://app/\n", dead_port()));
    let r = s.get("/app/x");
    assert_eq!(r.status, 503);
    let log = s.wait_log("error.log", "balancer://app: all workers are in error state");
    assert!(log.contains("balancer://app: all workers are in error state"), "{log}");
}

fn unix_and_tcp_fcgi_members(mpm: &str) {
    let dir = TempDir::new(&format!("bal-fcgi-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/w.php", "<?php echo $_SERVER['BALANCER_NAME'], ' ', $_SERVER['BALANCER_WORKER_NAME'], ' ', $_SERVER['SCRIPT_FILENAME'];");
    let fpm = Fpm::start(&dir, "");
    let root = dir.0.join("htdocs");
    let (unix, tcp) = (format!("unix:{}|fcgi://localhost", fpm.socket.display()), format!("fcgi://127.0.0.1:{}", fpm.port));
    let s = Server::start_in(dir, mpm, &format!("<Proxy balancer://php>\n  BalancerMember {unix}\n  BalancerMember {tcp}\n</Proxy>\nProxyPassMatch ^/(.*\\.php)$ balancer://php{}/$1\n", root.display()));
    let mut seen: Vec<String> = (0..4).map(|_| s.get_with("/w.php", "Connection: close\r\n").text()).collect();
    seen.sort();
    let script = root.join("w.php");
    let expect = |m: &str| format!("balancer://php {m} {}", script.display());
    assert_eq!(seen, [expect(&tcp), expect(&tcp), expect(&unix), expect(&unix)], "{seen:?}");
}

fn maxattempts_bounds_failover(mpm: &str) {
    let live = Backend::start();
    let s = Server::start(mpm, &format!("<Proxy balancer://app>\n  BalancerMember http://127.0.0.1:{}\n  BalancerMember {}\n  ProxySet maxattempts=0\n</Proxy>\nProxyPass /app/ balancer://app/\n", dead_port(), live.url()));
    // The first request is elected the dead member and may not fail over;
    // the member is then in error state and the next goes to the live one.
    assert_eq!(s.get_with("/app/echo", "Connection: close\r\n").status, 503);
    let r = s.get_with("/app/echo", "Connection: close\r\n");
    assert_eq!((r.status, port_of(&r)), (200, live.port));
}

fn hot_standby_only_when_the_rest_are_out(mpm: &str) {
    let (a, standby) = (Backend::start(), Backend::start());
    let s = Server::start(mpm, &format!("<Proxy balancer://app>\n  BalancerMember {}\n  BalancerMember {} status=+H\n</Proxy>\nProxyPass /app/ balancer://app/\n", a.url(), standby.url()));
    assert_eq!(counts(&s, 5, "/app/echo", "Connection: close\r\n").get(&a.port), Some(&5));
    drop(a);
    assert_eq!(counts(&s, 5, "/app/echo", "Connection: close\r\n").get(&standby.port), Some(&5));
}

/// Python's http.server on a port of ours, serving `dir` (so that it can
/// be stopped and started again on the same port); stopped when dropped.
struct FileServer {
    child: Child,
}

impl FileServer {
    fn start(dir: &std::path::Path, port: u16) -> FileServer {
        let child = Command::new("python3").args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"]).arg(dir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start python3 -m http.server");
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "http.server on {port} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        FileServer { child }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn health_check_takes_a_member_out_and_back(mpm: &str) {
    let dir = TempDir::new(&format!("bal-hc-{mpm}"));
    standard_site(&dir);
    let (a_dir, b_dir) = (dir.write("a/who", "a").parent().unwrap().to_path_buf(), dir.write("b/who", "b").parent().unwrap().to_path_buf());
    let (a_port, b_port) = (free_port(), free_port());
    let _a = FileServer::start(&a_dir, a_port);
    let b = FileServer::start(&b_dir, b_port);
    let conf = format!(
        "<Proxy balancer://app>\n  BalancerMember http://127.0.0.1:{a_port} hcmethod=GET hcuri=/who hcinterval=1\n  BalancerMember http://127.0.0.1:{b_port} hcmethod=HEAD hcuri=/who hcinterval=1 hcpasses=2\n</Proxy>\nProxyPass /app/ balancer://app/\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let who = |n: usize| -> Vec<String> { (0..n).map(|_| s.get_with("/app/who", "Connection: close\r\n").text()).collect() };
    // The first balanced request starts the checks.
    assert!(who(4).contains(&"b".to_string()));
    drop(b);
    let needle = format!("worker http://127.0.0.1:{b_port} failed its health check");
    let log = s.wait_log("error.log", &needle);
    assert!(log.contains(&needle), "{log}");
    // How soon (within hcinterval of the next check) is a benchmark's
    // figure (bench/balancer_failover.sh), not asserted here.
    assert_eq!(who(6), vec!["a"; 6]);
    let _b = FileServer::start(&s.dir.0.join("b"), b_port);
    let needle_back = format!("worker http://127.0.0.1:{b_port} passed its health check");
    let log = s.wait_log("error.log", &needle_back);
    assert!(log.contains(&needle_back), "{log}");
    assert!(who(6).contains(&"b".to_string()));
    // One child checks: the outage is said once, not once per child.
    assert_eq!(log.matches(&needle).count(), 1, "{log}");
}

fn health_check_expressions_decide(mpm: &str) {
    let dir = TempDir::new(&format!("bal-hcexpr-{mpm}"));
    standard_site(&dir);
    let (a_dir, b_dir) = (dir.write("a/who", "a").parent().unwrap().to_path_buf(), dir.write("b/who", "b").parent().unwrap().to_path_buf());
    let (a_port, b_port) = (free_port(), free_port());
    let (_a, _b) = (FileServer::start(&a_dir, a_port), FileServer::start(&b_dir, b_port));
    // a's check asks for a missing file: its 404 passes the expression, as a
    // 200 would fail it (b's); without hcexpr it would be the other way.
    let conf = format!(
        "ProxyHCExpr missing {{%{{REQUEST_STATUS}} -eq 404}}\n<Proxy balancer://app>\n  BalancerMember http://127.0.0.1:{a_port} hcmethod=GET hcuri=/nothing hcexpr=missing hcinterval=1\n  BalancerMember http://127.0.0.1:{b_port} hcmethod=GET hcuri=/who hcexpr=missing hcinterval=1\n</Proxy>\nProxyPass /app/ balancer://app/\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(s.get("/app/who").status, 200);
    let needle = format!("worker http://127.0.0.1:{b_port} failed its health check (answered 200, and hcexpr %{{REQUEST_STATUS}} -eq 404 does not hold)");
    let log = s.wait_log("error.log", &needle);
    assert!(log.contains(&needle), "{log}");
    let answers: Vec<String> = (0..6).map(|_| s.get_with("/app/who", "Connection: close\r\n").text()).collect();
    assert_eq!(answers, vec!["a"; 6]);
    assert!(!log.contains(&format!("worker http://127.0.0.1:{a_port} failed")), "{log}");
}

/// The members' lines of the manager's page, by URL.
fn manager_rows(s: &Server) -> HashMap<String, String> {
    let page = s.get("/bm").text();
    page.lines().filter(|l| l.starts_with("<tr class=\"member\">")).map(|l| (l[l.find("<td>").unwrap() + 4..l.find("</td>").unwrap()].to_string(), l.to_string())).collect()
}

fn balancer_manager_switches_members(mpm: &str) {
    let (a, b) = (Backend::start(), Backend::start());
    let conf = format!(
        "<Proxy balancer://app>\n  BalancerMember {} route=one\n  BalancerMember {} route=two\n  ProxySet stickysession=ROUTEID\n</Proxy>\nProxyPass /app/ balancer://app/\n<Location /bm>\n  SetHandler balancer-manager\n  Require ip 127.0.0.1\n</Location>\n",
        a.url(),
        b.url()
    );
    let s = Server::start(mpm, &conf);
    let rows = manager_rows(&s);
    assert!(rows[&a.url()].contains("<td>one</td><td>1</td><td>Init Ok</td>"), "{rows:?}");
    let nonce = manager_nonce(&s, "/bm");
    let switch = |member: &str, flag: &str, on: u8| {
        let r = post(&s, &format!("/bm?b=app&w={}&nonce={nonce}&w_status_{flag}={on}", encoded(member)));
        assert_eq!(r.status, 200, "{}", r.text());
    };
    // Disabled: every child stops sending it anything, sessions included.
    switch(&a.url(), "D", 1);
    assert!(manager_rows(&s)[&a.url()].contains("Init Dis"));
    assert_eq!(counts(&s, 6, "/app/echo", "Connection: close\r\n").get(&b.port), Some(&6));
    assert_eq!(counts(&s, 3, "/app/echo", "Cookie: ROUTEID=.one\r\nConnection: close\r\n").get(&b.port), Some(&3));
    // Draining: its sessions stay, new ones go elsewhere.
    switch(&a.url(), "D", 0);
    switch(&a.url(), "N", 1);
    assert!(manager_rows(&s)[&a.url()].contains("Init Drn"));
    assert_eq!(counts(&s, 6, "/app/echo", "Connection: close\r\n").get(&b.port), Some(&6));
    assert_eq!(counts(&s, 3, "/app/echo", "Cookie: ROUTEID=.one\r\nConnection: close\r\n").get(&a.port), Some(&3));
    // Back in the rotation.
    switch(&a.url(), "N", 0);
    assert!(counts(&s, 6, "/app/echo", "Connection: close\r\n").contains_key(&a.port));
    let log = s.wait_log("error.log", "balancer-manager: b=app");
    assert!(log.contains(&format!("balancer-manager: b=app w={} w_status_D=1", a.url())), "{log}");
}

each_mpm!(unix_and_tcp_fcgi_members, maxattempts_bounds_failover, health_check_expressions_decide, balancer_manager_switches_members, byrequests_follows_loadfactors, bybusyness_avoids_the_busy_member, bytraffic_follows_bytes, sticky_sessions_follow_routes, failover_on_a_refused_connection, no_usable_member_is_503, hot_standby_only_when_the_rest_are_out, health_check_takes_a_member_out_and_back, php_fpm_members_one_killed_under_load);

/// A network namespace joined to this one by a veth pair, removed (with
/// its end of the pair) when dropped; `inside` is its address.
struct Namespace {
    name: String,
    inside: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Namespace {
    /// The `slot`th of this test process's namespaces, on a /30 of its own.
    fn new(slot: u32) -> Namespace {
        let pid = std::process::id();
        let name = format!("wb{pid}n{slot}");
        let net = format!("10.{}.{}", 100 + pid % 100, slot * 4);
        let (outer, inner) = (format!("wb{pid}o{slot}"), format!("wb{pid}i{slot}"));
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Namespace { name: name.clone(), inside: format!("{net}.{}", 2) };
        ip(&["link", "add", &outer, "type", "veth", "peer", "name", &inner, "netns", &name]);
        ip(&["addr", "add", &format!("{net}.1/30"), "dev", &outer]);
        ip(&["link", "set", &outer, "up"]);
        ip(&["-n", &name, "addr", "add", &format!("{}/30", ns.inside), "dev", &inner]);
        ip(&["-n", &name, "link", "set", &inner, "up"]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        ns
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// php-fpm in a namespace, its process group killed when dropped.
struct FpmIn {
    child: Option<Child>,
    conf: std::path::PathBuf,
    ns: String,
}

impl FpmIn {
    fn start(dir: &TempDir, ns: &Namespace, member: u32) -> FpmIn {
        let root = dir.0.display();
        let conf = dir.write(
            &format!("fpm{member}.conf"),
            format!(
                "[global]\nerror_log = {root}/fpm{member}.log\ndaemonize = no\npid = {root}/fpm{member}.pid\n[m{member}]\nlisten = {}:9000\npm = static\npm.max_children = 4\nenv[MEMBER] = {member}\nphp_admin_flag[log_errors] = on\n",
                ns.inside
            ),
        );
        let mut f = FpmIn { child: None, conf, ns: ns.name.clone() };
        f.launch(&ns.inside);
        f
    }

    fn launch(&mut self, addr: &str) {
        use std::os::unix::process::CommandExt;
        let child = Command::new("ip").args(["netns", "exec", &self.ns]).arg(php_fpm_binary()).args(["-R", "-F", "-y"]).arg(&self.conf).process_group(0).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start php-fpm");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect((addr, 9000)).is_err() {
            assert!(Instant::now() < deadline, "php-fpm in {} did not start", self.ns);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL to the master and its children at once: the port closes.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe_kill_group(c.id(), libc_sigkill());
            let _ = c.wait();
        }
    }
}

impl Drop for FpmIn {
    fn drop(&mut self) {
        self.kill();
    }
}

fn libc_sigkill() -> i32 {
    9
}

fn unsafe_kill_group(pgid: u32, sig: i32) {
    let _ = Command::new("kill").arg(format!("-{sig}")).arg("--").arg(format!("-{pgid}")).status();
}

fn php_fpm_members_one_killed_under_load(mpm: &str) {
    let slot = match mpm {
        "event" => 0,
        "worker" => 3,
        _ => 6,
    };
    let spaces: Vec<Namespace> = (0..3).map(|i| Namespace::new(slot + i)).collect();
    let dir = TempDir::new(&format!("bal-fpm-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/who.php", "<?php echo 'member=', getenv('MEMBER'), \"\\n\";");
    let mut fpms: Vec<FpmIn> = spaces.iter().zip(1..).map(|(ns, m)| FpmIn::start(&dir, ns, m)).collect();
    let members: String = spaces.iter().zip(1..).map(|(ns, m)| format!("  BalancerMember fcgi://{}:9000 route=m{m} hcmethod=TCP hcinterval=1 retry=30\n", ns.inside)).collect();
    let root = dir.0.join("htdocs");
    let conf = format!("<Proxy balancer://php>\n{members}</Proxy>\nProxyPassMatch ^/(.*\\.php)$ balancer://php{}/$1\n", root.display());
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/who.php");
    assert!(r.text().starts_with("member="), "{}", r.text());
    let load = start_load_on(s.port, 6, "/who.php", |b| b.ends_with(b"member=1\n") || b.ends_with(b"member=2\n") || b.ends_with(b"member=3\n"));
    load.wait_more(60);
    fpms[1].kill();
    let dead = format!("worker fcgi://{}:9000 failed its health check", spaces[1].inside);
    let log = s.wait_log("error.log", &dead);
    assert!(log.contains(&dead), "{log}");
    load.wait_more(120);
    fpms[1].launch(&spaces[1].inside);
    let back = format!("worker fcgi://{}:9000 passed its health check", spaces[1].inside);
    assert!(s.wait_log("error.log", &back).contains(&back));
    load.wait_more(120);
    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "{} of {} failed: {:?}", failures.len(), ok + failures.len() as u64, &failures[..failures.len().min(5)]);
    // How soon every child skips it is bench/balancer_failover.sh's figure.
    // The member is back in the rotation.
    let back_in: usize = (0..12).filter(|_| s.get("/who.php").text() == "member=2\n").count();
    assert!(back_in > 0);
    eprintln!("{mpm}: {ok} requests, none failed");
}
