//! A `<Pool>` whose Command is Debian's php-fpm, under each MPM: warren
//! starts one php-fpm master per pool, as the pool's user, on a socket of
//! warren's; its children share one opcache; php-fpm answers its own status
//! page; a master that dies is started again; the master is not woken by
//! each request. And Debian's own pool file (`PoolFile`) as it is.

mod common;

use std::time::{Duration, Instant};

use common::*;

fn php_fpm() -> std::path::PathBuf {
    std::fs::read_dir("/usr/sbin")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("php-fpm")))
        .expect("php-fpm in /usr/sbin: test.sh installs Debian's php-fpm")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

fn uid_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?.lines().find(|l| l.starts_with("Uid:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// The server's children that are php-fpm masters.
fn masters(s: &Server) -> Vec<u32> {
    s.children().into_iter().filter(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with("php-fpm: master"))).collect()
}

fn wait_master(s: &Server, not: Option<u32>) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(&m) = masters(s).iter().find(|&&m| Some(m) != not) {
            return m;
        }
        assert!(Instant::now() < deadline, "no php-fpm master (besides {not:?}) under warren");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A site whose `*.php` go to `<Pool www>` (its `pool` lines, which name
/// the php-fpm Command, run as nobody), with `scripts` in htdocs and
/// `extra` in the config.
fn start(mpm: &str, tag: &str, pool: &str, scripts: &[(&str, &str)], extra: &str) -> Server {
    let dir = TempDir::new(&format!("{tag}-{mpm}"));
    standard_site(&dir);
    for (name, text) in scripts {
        dir.write(&format!("htdocs/{name}"), text);
    }
    let conf = format!("<Pool www>\n    User nobody\n    Group nogroup\n{pool}\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n{extra}");
    Server::start_in(dir, mpm, &conf)
}

fn php_fpm_pool_serves_with_one_opcache(mpm: &str) {
    let scripts = [
        ("warm.php", "<?php echo getmypid(); flush(); usleep(1500000);"),
        ("cached.php", "<?php echo getmypid(), ' ', implode(',', array_map('basename', array_keys(opcache_get_status(true)['scripts'] ?? [])));"),
        ("who.php", "<?php echo posix_getpwuid(posix_geteuid())['name'];"),
    ];
    let pool = format!("    Command {}\n    pm = static\n    pm.max_children = 2\n    pm.status_path = /fpm-status\n    php_admin_value[memory_limit] = 48M", php_fpm().display());
    let s = start(mpm, "php-fpm", &pool, &scripts, "");
    // opcache leaves alone a file changed in the last two seconds
    // (opcache.file_update_protection): these were written a minute ago.
    for f in ["warm.php", "cached.php"] {
        let file = std::fs::File::options().write(true).open(s.dir.0.join("htdocs").join(f)).unwrap();
        file.set_modified(std::time::SystemTime::now() - Duration::from_secs(60)).unwrap();
    }
    let master = wait_master(&s, None);
    if is_root() {
        assert_eq!(s.get("/who.php").text(), "nobody");
        let nobody = std::fs::read_to_string("/etc/passwd").unwrap().lines().find_map(|l| l.strip_prefix("nobody:x:")?.split(':').next()?.parse().ok());
        assert_eq!(uid_of(master), nobody, "the master runs as the pool's user, not root");
    }
    // One child runs warm.php (compiled into the opcache as it starts)
    // while the other answers cached.php: it sees warm.php compiled.
    let warm = get_in_thread(s.port, "/warm.php", Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(500));
    let cached = s.get("/cached.php").text();
    let warm_pid = warm.join().unwrap().text();
    let (cached_pid, scripts) = cached.split_once(' ').unwrap_or((&cached, ""));
    assert_ne!(cached_pid, warm_pid, "the two requests went to the two children");
    assert!(scripts.split(',').any(|n| n == "warm.php"), "a child sees the script its sibling compiled: {cached}");
    assert_eq!(s.get("/fpm-status").status, 200);
    let full = s.get("/fpm-status?full").text();
    assert!(full.contains("process manager:      static") && full.matches("pid:").count() == 2, "php-fpm's own status page:\n{full}");
    // php_admin_value reaches PHP.
    s.dir.write("htdocs/limit.php", "<?php echo ini_get('memory_limit');");
    assert_eq!(s.get("/limit.php").text(), "48M");

    // A master that dies is started again, and PHP is served again; its
    // children, left without it, are not left taking requests.
    let orphans = children_of(master);
    assert_eq!(orphans.len(), 2, "pm static, 2 children");
    unsafe_kill(master, 9);
    let again = wait_master(&s, Some(master));
    assert_ne!(again, master);
    settle(|| orphans.iter().all(|&p| !std::path::Path::new(&format!("/proc/{p}")).exists()));
    assert!(orphans.iter().all(|&p| !std::path::Path::new(&format!("/proc/{p}")).exists()), "the dead master's children {orphans:?} still run");
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.get("/who.php").status != 200 {
        assert!(Instant::now() < deadline, "PHP is not served after the master was replaced");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(s.wait_log("error.log", "starting it again").contains(&format!("php-fpm master {master} exited on")));
}

/// Debian's php-fpm pool file, as it is (`PoolFile`): its pool is a php-fpm
/// master with its pm settings (dynamic, 2 children to start), serving PHP
/// as its user; its `listen` lines, which a pool of warren's does not use,
/// are warnings at their lines.
fn debian_pool_file_serves(mpm: &str) {
    let file = std::fs::read_dir("/etc/php")
        .expect("/etc/php: test.sh installs php-fpm")
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("fpm/pool.d/www.conf"))
        .find(|p| p.exists())
        .expect("Debian's php-fpm www.conf");
    let dir = TempDir::new(&format!("pool-file-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/who.php", "<?php echo posix_getpwuid(posix_geteuid())['name'];");
    let conf = format!("PoolFile {}\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n", file.display());
    let checked = std::process::Command::new(BIN).args(["-t", "-f"]).arg(dir.write("check.conf", format!("Listen 127.0.0.1:1\nDocumentRoot htdocs\nUser nobody\n{conf}"))).output().unwrap();
    let said = String::from_utf8_lossy(&checked.stderr).into_owned() + &String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{said}");
    let listen_line = std::fs::read_to_string(&file).unwrap().lines().position(|l| l.starts_with("listen = ")).unwrap() + 1;
    assert!(said.contains(&format!("www.conf:{listen_line}: listen is not applied")), "{said}");
    let s = Server::start_in(dir, mpm, &conf);
    let master = wait_master(&s, None);
    settle(|| children_of(master).len() == 2);
    assert_eq!(children_of(master).len(), 2, "pm.start_servers = 2");
    let r = s.get("/who.php");
    assert_eq!(r.status, 200, "{}", r.text());
    if is_root() {
        assert_eq!(r.text(), "www-data");
    }
}

/// A php-fpm pool's queue is its socket's listen queue (listen.backlog
/// long): past it a request gets 503 with Retry-After at once, as from a
/// php-cgi pool whose queue is full, not a wait in warren.
fn full_listen_queue_is_503(mpm: &str) {
    let pool = "    Command php-fpm\n    pm = static\n    pm.max_children = 1\n    listen.backlog = 1";
    let s = start(mpm, "php-fpm-queue", pool, &[("slow.php", "<?php sleep(4); echo 'done';")], "");
    let master = wait_master(&s, None);
    settle(|| children_of(master).len() == 1);
    // One child runs a request and two wait in the queue (a unix socket's
    // queue holds backlog + 1): of six at once, some are refused.
    let clients: Vec<_> = (0..6).map(|_| get_in_thread(s.port, "/slow.php", Duration::from_secs(40))).collect();
    let answers: Vec<Resp> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    let refused: Vec<&Resp> = answers.iter().filter(|r| r.status == 503).collect();
    assert!(answers.iter().any(|r| r.status == 200 && r.text() == "done"), "none served");
    assert!(!refused.is_empty() && refused.iter().all(|r| r.header("retry-after") == Some("5")), "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
    assert!(answers.iter().all(|r| r.status == 200 || r.status == 503), "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
}

/// Graceful restarts under load: an unchanged php-fpm pool keeps its
/// master; a changed one gets a new master before the new server children
/// take requests, and the old one goes once they are gone. No request
/// fails across either.
fn graceful_restart_keeps_php_fpm_serving(mpm: &str) {
    let pool = "    Command php-fpm\n    pm = static\n    pm.max_children = 2";
    let s = start(mpm, "php-fpm-restart", pool, &[("pid.php", "<?php echo 'pid ', getmypid();")], "");
    let first = wait_master(&s, None);
    let load = start_load_on(s.port, 3, "/pid.php", |body| body.windows(4).any(|w| w == b"pid "));
    load.wait_more(20);
    unsafe_kill(s.pid(), 1);
    s.wait_log("error.log", "SIGHUP received: graceful restart");
    load.wait_more(20);
    assert_eq!(masters(&s), vec![first], "an unchanged pool keeps its master");
    let changed = std::fs::read_to_string(&s.conf).unwrap().replace("pm.max_children = 2", "pm.max_children = 3");
    std::fs::write(&s.conf, changed).unwrap();
    unsafe_kill(s.pid(), 1);
    let second = wait_master(&s, Some(first));
    settle(|| masters(&s) == vec![second] && children_of(second).len() == 3);
    load.wait_more(20);
    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "{} of {} requests failed across the restarts: {:?}", failures.len(), ok + failures.len() as u64, &failures[..failures.len().min(3)]);
    assert_eq!(masters(&s), vec![second], "the old master is gone once unused");
    assert_eq!(children_of(second).len(), 3, "the changed pool runs 3 children");
}

/// A php-fpm pool whose master cannot start (here php-fpm cannot open its
/// access log) answers 503 with Retry-After at once, not after Timeout;
/// php-fpm's words are in the error log, and the master is tried again.
fn pool_without_master_is_503(mpm: &str) {
    let pool = "    Command php-fpm\n    pm = static\n    pm.max_children = 1\n    access.log = /nonexistent/www.access.log";
    let s = start(mpm, "php-fpm-down", pool, &[("pid.php", "<?php echo getmypid();")], "Timeout 30\n");
    s.wait_log("error.log", "php-fpm master");
    let asked = Instant::now();
    let r = s.get("/pid.php");
    assert_eq!((r.status, r.header("retry-after")), (503, Some("5")), "{}", r.text());
    assert!(asked.elapsed() < Duration::from_secs(20), "answered after {:?}, not at once", asked.elapsed());
    let log = s.read_log("error.log");
    assert!(log.contains("/nonexistent/www.access.log") && log.contains("is not running"), "{log}");
}

/// How often a process slept and was woken (its voluntary context switches).
fn wake_ups(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")).and_then(|n| n.trim().parse().ok()).expect("voluntary_ctxt_switches in /proc/PID/status")
}

/// A php-fpm pool's master sleeps through requests, as a hand-started
/// php-fpm's does: warren does not ask for the children's output by
/// default, since with `catch_workers_output yes` every child writes to its
/// master at the end of each request (which cost the pool's php-fpm a third
/// more CPU a request than a hand-started one's).
fn php_fpm_master_sleeps_through_requests(mpm: &str) {
    const REQUESTS: u64 = 400;
    let pool = "    Command php-fpm\n    pm = static\n    pm.max_children = 2";
    let s = start(mpm, "php-fpm-quiet", pool, &[("hello.php", "<?php echo 'hello';")], "");
    let master = wait_master(&s, None);
    settle(|| children_of(master).len() == 2);
    assert_eq!(s.get("/hello.php").text(), "hello");
    let (before, started) = (wake_ups(master), Instant::now());
    for _ in 0..REQUESTS {
        let r = s.get("/hello.php");
        assert_eq!((r.status, r.text()), (200, "hello".to_string()));
    }
    let woken = wake_ups(master) - before;
    // php-fpm's own timers wake the master about once a second, whatever the load.
    let timers = 2 * started.elapsed().as_secs() + 10;
    assert!(woken < REQUESTS / 4 + timers, "the master was woken {woken} times for {REQUESTS} requests in {:?}", started.elapsed());
}

each_mpm!(php_fpm_pool_serves_with_one_opcache, debian_pool_file_serves, full_listen_queue_is_503, graceful_restart_keeps_php_fpm_serving, pool_without_master_is_503, php_fpm_master_sleeps_through_requests);
