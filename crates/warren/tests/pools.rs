//! warren's own FastCGI pools (`<Pool>`, `SetHandler pool:NAME`) with
//! Debian's php-cgi, under each MPM: the process manager's styles, recycling,
//! replacement, the bounded queue, request_terminate_timeout, and per-pool
//! Unix users.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;

fn start(mpm: &str, pool: &str, extra: &str) -> Server {
    let dir = TempDir::new(&format!("pool-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    dir.write("htdocs/slow.php", "<?php sleep((int)($_GET['s'] ?? 2)); echo 'done';");
    dir.write("htdocs/vars.php", "<?php echo $_SERVER['SCRIPT_NAME'], ' ', $_SERVER['PATH_INFO'] ?? '-', ' ', $_GET['q'] ?? '-', ' ', $_SERVER['REQUEST_METHOD'], ' ', file_get_contents('php://input');");
    // Run as root, warren refuses a pool that would run as root; these tests
    // are about the process manager, not users (pool_privileges.rs is).
    let conf = format!("<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n{pool}\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n{extra}");
    Server::start_in(dir, mpm, &conf)
}

fn static_pool_serves(mpm: &str) {
    let s = start(mpm, "    pm static\n    pm.max_children 3", "");
    assert_eq!(s.wait_php_children(3).len(), 3, "pm static starts pm.max_children");
    let r = s.get("/vars.php/a/b?q=1");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "/vars.php /a/b 1 GET ");
    let req = "POST /vars.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    assert_eq!(parse_response(&s.raw(req.as_bytes())).0.text(), "/vars.php - - POST hello");
    // A child that dies is replaced, and requests go on.
    let victim = s.php_cgi_children()[0];
    unsafe_kill(victim, 9);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after = s.php_cgi_children();
    while (after.contains(&victim) || after.len() != 3) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        after = s.php_cgi_children();
    }
    assert!(!after.contains(&victim) && after.len() == 3, "{after:?}");
    for _ in 0..10 {
        assert_eq!(s.get("/pid.php").status, 200);
    }
    assert!(s.wait_log("error.log", "exited on").contains(&format!("child {victim} exited on")));
}

fn recycling_fails_nothing(mpm: &str) {
    let s = start(mpm, "    pm static\n    pm.max_children 2\n    pm.max_requests 10", "");
    let first = s.wait_php_children(2);
    let port = s.port;
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                let mut pids = std::collections::HashSet::new();
                for _ in 0..30 {
                    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    c.write_all(b"GET /pid.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
                    let (r, _) = parse_response(&read_to_close(&mut c));
                    if r.status == 200 {
                        pids.insert(r.text());
                    } else {
                        failures.push(r.status);
                    }
                }
                (failures, pids)
            })
        })
        .collect();
    let mut pids = std::collections::HashSet::new();
    for t in threads {
        let (failures, p) = t.join().unwrap();
        assert!(failures.is_empty(), "requests failed while children were recycled: {failures:?}");
        pids.extend(p);
    }
    // 120 requests, 10 per child: at least 12 processes served them.
    assert!(pids.len() >= 12, "only {} processes served 120 requests with pm.max_requests 10", pids.len());
    assert!(s.wait_php_children(2).iter().all(|p| !first.contains(p)));
}

fn dynamic_and_ondemand(mpm: &str) {
    let s = start(mpm, "    pm dynamic\n    pm.max_children 4\n    pm.start_servers 2\n    pm.min_spare_servers 1\n    pm.max_spare_servers 2", "");
    assert_eq!(s.wait_php_children(2).len(), 2, "pm.start_servers");
    drop(s);
    let s = start(mpm, "    pm ondemand\n    pm.max_children 2\n    pm.process_idle_timeout 1s", "");
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.php_cgi_children().is_empty(), "ondemand starts no child before a request");
    // A child is started for the request (a request left waiting for one
    // would get no answer within the 10 s read timeout).
    let t = Instant::now();
    assert_eq!(s.get("/pid.php").status, 200);
    assert!(t.elapsed() < Duration::from_secs(8), "the first request waited {:?}", t.elapsed());
    assert_eq!(s.php_cgi_children().len(), 1);
    // Idle past pm.process_idle_timeout: stopped by the next passes.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.php_cgi_children().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(s.php_cgi_children().is_empty(), "an idle ondemand child outlived pm.process_idle_timeout");
}

fn queue_full_is_503_and_slow_is_504(mpm: &str) {
    // Prefork: enough children that every request reaches the pool at once.
    let extra = "Timeout 20\n<IfModule mpm_prefork_module>\n    StartServers 4\n    MinSpareServers 4\n</IfModule>\n";
    let s = start(mpm, "    pm static\n    pm.max_children 1\n    listen.backlog 1\n    request_terminate_timeout 12s\n    pm.status_path /fpm-status", extra);
    s.wait_php_children(1);
    let port = s.port;
    // The pool's own count of `field`, from its status page (which warren
    // answers from the pool's table, not through the busy child).
    let pool_says = |field: &str, n: u32| {
        let line = format!("\n{field}:");
        let count = || s.get("/fpm-status").text().split(&line).nth(1).and_then(|rest| rest.lines().next()).and_then(|v| v.trim().parse::<u32>().ok());
        settle(|| count() == Some(n));
        assert_eq!(count(), Some(n), "{field}");
    };
    // Sends a request and reads the answer in a thread.
    let get = move |path: &'static str| {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
        std::thread::spawn(move || parse_response(&read_to_close(&mut c)).0)
    };
    // The only child is busy for 8 s (a loaded machine has that long to see
    // the next request queued); one request may wait; the third is refused.
    let a = get("/slow.php?s=8");
    pool_says("active processes", 1);
    let b = get("/pid.php");
    pool_says("listen queue", 1);
    let c = s.get("/pid.php");
    assert_eq!(c.status, 503, "{}; error log:\n{}", c.text(), s.read_log("error.log"));
    assert!(c.header("retry-after").is_some());
    assert!(s.wait_log("error.log", "server reached").contains("[pool www] server reached pm.max_children setting (1), consider raising it"));
    assert_eq!(a.join().unwrap().text(), "done");
    assert_eq!(b.join().unwrap().status, 200, "the queued request gets the child when it is free");
    // A request past request_terminate_timeout: its child is killed, the
    // answer is 504, not before the 12 s are out and long before the script's 60.
    let t = Instant::now();
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    c.write_all(b"GET /slow.php?s=60 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let r = parse_response(&read_to_close(&mut c)).0;
    assert_eq!(r.status, 504);
    assert!(t.elapsed() >= Duration::from_millis(11500) && t.elapsed() < Duration::from_secs(35), "took {:?}", t.elapsed());
    assert!(s.wait_log("error.log", "request_terminate_timeout").contains("terminating"));
    assert_eq!(s.get("/pid.php").status, 200, "the killed child is replaced");
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// Two sites, each pool as a user of its own, neither of them the server's
/// (nobody, from the harness): a pool sharing the server's user beside pools
/// of other users is refused (pool_privileges.rs).
fn pools_per_site_with_their_users(mpm: &str) {
    if !is_root() {
        return;
    }
    let dir = TempDir::new(&format!("pool-users-{mpm}"));
    standard_site(&dir);
    for site in ["a", "b"] {
        dir.write(&format!("{site}/write.php"), "<?php file_put_contents(__DIR__ . '/out/made.txt', 'x'); echo posix_getpwuid(fileowner(__DIR__ . '/out/made.txt'))['name'];");
        dir.write(&format!("{site}/read.php"), "<?php $f = $_GET['f']; echo @file_get_contents($f) === false ? 'denied' : 'read';");
        dir.write(&format!("{site}/out/.keep"), "");
        let out = dir.0.join(site).join("out");
        std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    }
    // Site B's secret, readable by its own user only.
    let secret = dir.write("b/secret.txt", "for b only");
    let chown = |path: &std::path::Path, user: &str| {
        assert!(std::process::Command::new("chown").arg(user).arg(path).status().unwrap().success());
    };
    chown(&secret, "www-data");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let root = dir.0.display().to_string();
    let conf = format!(
        r#"<VirtualHost *>
    ServerName a.test
    DocumentRoot {root}/a
    <Pool site-a>
        Command /usr/bin/php-cgi
        User daemon
        Group daemon
        pm ondemand
        pm.max_children 2
    </Pool>
    <FilesMatch "\.php$">
        SetHandler pool:site-a
    </FilesMatch>
</VirtualHost>
<VirtualHost *>
    ServerName b.test
    DocumentRoot {root}/b
    <Pool site-b>
        Command /usr/bin/php-cgi
        User www-data
        Group www-data
        pm static
        pm.max_children 1
    </Pool>
    <FilesMatch "\.php$">
        SetHandler pool:site-b
    </FilesMatch>
</VirtualHost>
"#
    );
    let s = Server::start_in(dir, mpm, &conf);
    let get = |host: &str, path: &str| s.get_from(host, path).text();
    assert_eq!(get("a.test", "/write.php"), "daemon");
    assert_eq!(get("b.test", "/write.php"), "www-data");
    let secret = secret.display().to_string();
    assert_eq!(get("b.test", &format!("/read.php?f={secret}")), "read");
    assert_eq!(get("a.test", &format!("/read.php?f={secret}")), "denied", "site A's PHP read site B's 0600 file");
}

fn status_page(mpm: &str) {
    let s = start(mpm, "    pm static\n    pm.max_children 2\n    pm.status_path /fpm-status", "");
    s.wait_php_children(2);
    for _ in 0..3 {
        assert_eq!(s.get("/pid.php?x=1").status, 200);
    }
    let r = s.get("/fpm-status");
    assert_eq!(r.status, 200);
    let text = r.text();
    // php-fpm's layout: the value in column 23.
    let line = |k: &str, v: &str| format!("{:<22}{v}\n", format!("{k}:"));
    for (k, v) in [("pool", "www"), ("process manager", "static"), ("accepted conn", "3"), ("listen queue", "0"), ("listen queue len", "511"), ("idle processes", "2"), ("active processes", "0"), ("total processes", "2"), ("max children reached", "0"), ("slow requests", "0")] {
        assert!(text.contains(&line(k, v)), "{k}: {v} missing in\n{text}");
    }
    for k in ["start time", "start since", "max listen queue", "max active processes"] {
        assert!(text.contains(&format!("\n{k}:")), "{k} missing in\n{text}");
    }
    let r = s.get("/fpm-status?json");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.text().starts_with("{\"pool\":\"www\",\"process manager\":\"static\""), "{}", r.text());
    let full = s.get("/fpm-status?full").text();
    assert_eq!(full.matches("pid:").count(), 2, "{full}");
    assert!(full.contains(&line("request uri", "/pid.php?x=1")) && full.contains(&line("state", "Idle")), "{full}");
    let json_full = s.get("/fpm-status?json&full").text();
    assert!(json_full.contains("\"processes\":[{\"pid\":") && json_full.contains("\"last request memory\":"), "{json_full}");
}

/// request_slowlog_timeout: a request running past it is noted once in the
/// slow log and the error log, and counted on the status page.
fn slow_requests_are_logged(mpm: &str) {
    let pool = "    pm static\n    pm.max_children 1\n    pm.status_path /fpm-status\n    request_slowlog_timeout = 1s\n    slowlog = slow.log";
    let s = start(mpm, pool, "");
    s.wait_php_children(1);
    // Well past the limit: the once-a-second pass notes it even on a loaded machine.
    let r = s.get("/slow.php?s=5");
    assert_eq!(r.text(), "done");
    let logged = s.wait_log("error.log", "executing too slow");
    assert_eq!(logged.matches("executing too slow").count(), 1, "{logged}");
    assert!(logged.contains("[pool www] child ") && logged.contains(", request /slow.php?s=5 executing too slow ("), "{logged}");
    let slow = std::fs::read_to_string(s.dir.0.join("slow.log")).unwrap();
    assert_eq!(slow.matches("[pool www] pid ").count(), 1, "{slow}");
    assert!(slow.contains("\nrequest_uri = /slow.php?s=5\n"), "{slow}");
    let status = s.get("/fpm-status").text();
    assert!(status.contains("\nslow requests:        1\n"), "{status}");
}

/// Requests /pid.php on new connections until stopped; returns (200s, other answers).
fn php_load(port: u16, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<(u32, Vec<String>)> {
    std::thread::spawn(move || {
        let (mut ok, mut bad) = (0, Vec::new());
        let until = Instant::now() + Duration::from_secs(30);
        while !stop.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < until {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(b"GET /pid.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
            let out = read_to_close(&mut c);
            if status_of(&out) == 200 {
                ok += 1;
            } else {
                bad.push(String::from_utf8_lossy(&out[..out.len().min(60)]).into_owned());
            }
        }
        (ok, bad)
    })
}

fn graceful_restart_keeps_php_serving(mpm: &str) {
    let s = start(mpm, "    pm static\n    pm.max_children 2", "");
    let before = s.wait_php_children(2);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load: Vec<_> = (0..3).map(|_| php_load(s.port, stop.clone())).collect();
    std::thread::sleep(Duration::from_millis(300));
    // Unchanged pool: the same children go on serving. Looked at once the
    // restart has been made (and a moment after), not after a fixed sleep.
    unsafe_kill(s.pid(), 1);
    s.wait_log("error.log", "SIGHUP received: graceful restart");
    std::thread::sleep(Duration::from_millis(500));
    let mut after = s.php_cgi_children();
    after.sort();
    let mut expected = before.clone();
    expected.sort();
    assert_eq!(after, expected, "an unchanged pool keeps its children");
    // Changed pool: new children first, the old ones retire once unused.
    let conf = std::fs::read_to_string(&s.conf).unwrap().replace("pm.max_children 2", "pm.max_children 3");
    std::fs::write(&s.conf, conf).unwrap();
    unsafe_kill(s.pid(), 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut now = s.php_cgi_children();
    while (now.len() != 3 || now.iter().any(|p| before.contains(p))) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        now = s.php_cgi_children();
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut ok = 0;
    for l in load {
        let (o, bad) = l.join().unwrap();
        assert!(bad.is_empty(), "answers other than 200 across the restarts: {bad:?}");
        ok += o;
    }
    assert!(ok > 20, "only {ok} requests");
    assert_eq!(now.len(), 3, "the changed pool runs 3 children: {now:?}");
    assert!(now.iter().all(|p| !before.contains(p)), "the old children retired: {now:?} vs {before:?}");
}

fn dynamic_spares_and_environment(mpm: &str) {
    let pool = "    pm dynamic\n    pm.max_children 4\n    pm.start_servers 1\n    pm.min_spare_servers 1\n    pm.max_spare_servers 2\n    env[APP_ENV] testing\n    php_value[memory_limit] = 33M\n    php_flag[html_errors] off\n    php_admin_value[max_input_vars] = 77";
    let extra = "<IfModule mpm_prefork_module>\n    StartServers 5\n    MinSpareServers 5\n</IfModule>\n";
    let s = start(mpm, pool, extra);
    s.dir.write("htdocs/env.php", "<?php var_export([getenv('APP_ENV'), getenv('HOME'), getenv('PHP_FCGI_MAX_REQUESTS')]);");
    assert_eq!(s.wait_php_children(1).len(), 1);
    // The environment is cleared but for env[...] (and what php-cgi needs).
    assert_eq!(s.get("/env.php").text(), "array (\n  0 => 'testing',\n  1 => false,\n  2 => '0',\n)");
    // php_value, php_flag and php_admin_value reach PHP.
    s.dir.write("htdocs/ini.php", "<?php echo ini_get('memory_limit'), ' ', var_export(ini_get('html_errors'), true), ' ', ini_get('max_input_vars');");
    assert_eq!(s.get("/ini.php").text(), "33M '0' 77");
    // Three slow requests at once: children are started for the waiting ones.
    let slow: Vec<_> = (0..3).map(|_| get_in_thread(s.port, "/slow.php?s=4", Duration::from_secs(15))).collect();
    // Watched while the requests are in (or until three children), not for
    // a fixed time a loaded machine may spend before they even arrive.
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while peak < 3 && !slow.iter().all(|t| t.is_finished()) && Instant::now() < deadline {
        peak = peak.max(s.php_cgi_children().len());
        std::thread::sleep(Duration::from_millis(50));
    }
    for t in slow {
        assert_eq!(t.join().unwrap().text(), "done");
    }
    assert!(peak >= 3, "the pool grew to {peak} children for 3 concurrent requests");
    // Idle above pm.max_spare_servers: one child stopped per second, down to 2.
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.php_cgi_children().len() > 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(s.php_cgi_children().len(), 2, "idle children above pm.max_spare_servers are stopped");
}

fn waiting_past_timeout_is_503(mpm: &str) {
    let extra = "Timeout 2\nProxyTimeout 30\n<IfModule mpm_prefork_module>\n    StartServers 4\n    MinSpareServers 4\n</IfModule>\n";
    let s = start(mpm, "    pm static\n    pm.max_children 1", extra);
    s.wait_php_children(1);
    let mut holding = s.connect();
    holding.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    holding.write_all(b"GET /slow.php?s=8 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    // The holder has the child (read by the server, then at the pool at once).
    wait_server_read(&holding);
    std::thread::sleep(Duration::from_millis(300));
    let holder = std::thread::spawn(move || parse_response(&read_to_close(&mut holding)).0);
    // Not before Timeout (2 s); long before the holder's 8 s are out, after
    // which a wait not bounded by Timeout would get the child and a 200.
    let t = Instant::now();
    let r = s.get("/pid.php");
    assert_eq!(r.status, 503, "no child free within Timeout");
    assert!(r.header("retry-after").is_some());
    assert!(t.elapsed() >= Duration::from_millis(1500) && t.elapsed() < Duration::from_secs(7), "answered after {:?}", t.elapsed());
    assert!(s.wait_log("error.log", "no child became free").contains("pool www"));
    assert_eq!(holder.join().unwrap().text(), "done");
    assert_eq!(s.get("/pid.php").status, 200);
}

fn children_end_with_a_killed_parent(mpm: &str) {
    let mut s = start(mpm, "    pm static\n    pm.max_children 2", "");
    let children = s.wait_php_children(2);
    assert_eq!(children.len(), 2);
    // Nobody is left to remove it: the test does.
    let sockets = socket_dir(s.pid());
    let mut parent = s.child.take().unwrap();
    let _ = parent.kill();
    let _ = parent.wait();
    let deadline = Instant::now() + Duration::from_secs(20);
    let alive = |pid: &u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "php-cgi");
    while children.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!children.iter().any(alive), "php-cgi children outlived a parent killed with SIGKILL");
    // The server's own orphaned children are not this test's subject: clear them away.
    let conf = s.conf.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains(&conf)) {
            unsafe_kill(pid, 9);
        }
    }
    let _ = std::fs::remove_dir_all(sockets);
}

/// A GET whose child is killed while it runs the script is sent once more,
/// to the child that replaces it, and answered; a POST is not repeated: 502.
fn lost_child_request_is_sent_again(mpm: &str) {
    let s = start(mpm, "    pm static\n    pm.max_children 1", "");
    let marker = std::env::temp_dir().join(format!("warren-lost-{}-{mpm}", s.port));
    let _ = std::fs::remove_file(&marker);
    s.dir.write("htdocs/mark.php", format!("<?php if (!file_exists('{0}')) {{ touch('{0}'); sleep(30); }} echo 'second try';", marker.display()));
    s.dir.write("htdocs/hold.php", format!("<?php touch('{0}.post'); sleep(30); echo 'never';", marker.display()));
    for (method, script, want) in [("GET", "mark.php", 200), ("POST", "hold.php", 502)] {
        s.wait_php_children(1);
        let port = s.port;
        let req = format!("{method} /{script} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        let req = if method == "GET" { req.replace("Content-Length: 0\r\n", "") } else { req };
        let client = std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            read_to_close(&mut c)
        });
        // The script has started: its child is busy with the request.
        let started = if method == "GET" { marker.clone() } else { marker.with_extension("post") };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !started.exists() {
            assert!(Instant::now() < deadline, "{script} never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        for pid in s.php_cgi_children() {
            unsafe_kill(pid, 9);
        }
        let answer = client.join().unwrap();
        let (r, _) = parse_response(&answer);
        assert_eq!(r.status, want, "{method}: {}", r.text());
        if want == 200 {
            assert_eq!(r.text(), "second try");
            assert!(s.wait_log("error.log", "sending the request to another child").contains("sending the request to another child"));
        }
    }
    let _ = std::fs::remove_file(&marker);
    let _ = std::fs::remove_file(marker.with_extension("post"));
}

/// A server process killed (SIGKILL) while a pool child runs its request
/// never gives that child back itself: the parent's pass kills the child
/// (nobody reads its answer), its replacement is idle, and the pool serves
/// as many requests at once as before, with no request_terminate_timeout
/// to end the orphan.
fn killed_server_process_gives_its_child_back(mpm: &str) {
    let s = start(mpm, "    pm static\n    pm.max_children 2\n    pm.status_path /fpm-status", "");
    s.wait_php_children(2);
    let count = |field: &str| {
        let line = format!("\n{field}:");
        s.get("/fpm-status").text().split(&line).nth(1).and_then(|rest| rest.lines().next()).and_then(|v| v.trim().parse::<u32>().ok())
    };
    let until = |what: &str, ready: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready() {
            assert!(Instant::now() < deadline, "{what}: never so; fpm-status:\n{}\nerror.log:\n{}", s.get("/fpm-status?full").text(), s.read_log("error.log"));
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let mut holding = s.connect();
    holding.write_all(b"GET /slow.php?s=60 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    until("one child busy", &|| count("active processes") == Some(1));
    // Every server process, the one holding the lease among them.
    let php = s.php_cgi_children();
    let servers: Vec<u32> = s.children().into_iter().filter(|p| !php.contains(p)).collect();
    assert!(!servers.is_empty());
    for pid in &servers {
        unsafe_kill(*pid, 9);
    }
    drop(holding);
    assert!(s.wait_log("error.log", "that sent its request is gone").contains("that sent its request is gone, killing the child"), "{}", s.read_log("error.log"));
    until("both children idle", &|| count("idle processes") == Some(2) && count("active processes") == Some(0));
    // Two requests at once each get a child.
    let port = s.port;
    let clients: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                c.write_all(b"GET /slow.php?s=8 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
                parse_response(&read_to_close(&mut c)).0
            })
        })
        .collect();
    until("both children busy at once", &|| count("active processes") == Some(2));
    for c in clients {
        assert_eq!(c.join().unwrap().text(), "done");
    }
}

each_mpm!(killed_server_process_gives_its_child_back, slow_requests_are_logged, lost_child_request_is_sent_again, children_end_with_a_killed_parent, waiting_past_timeout_is_503, dynamic_spares_and_environment, graceful_restart_keeps_php_serving, status_page, static_pool_serves, recycling_fails_nothing, dynamic_and_ondemand, queue_full_is_503_and_slow_is_504, pools_per_site_with_their_users);
