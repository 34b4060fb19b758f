//! `pm.max_children auto`, under each MPM: a pool of php-cgi in a memory
//! cgroup gets its count from its children's measured sizes and the
//! cgroup's limit, and stays within it under load; a php-fpm pool under
//! `MemoryBudget` grows, its one master running on, while requests keep
//! being served.

mod common;

use std::time::{Duration, Instant};

use common::*;

const MB: f64 = 1024.0 * 1024.0;

/// A page that makes its child grow to a working size: a few MB of arrays.
const FAT_PHP: &str = "<?php $a = []; for ($i = 0; $i < 100000; $i++) { $a[] = \"x$i\"; } echo count($a);";

/// The figure before `unit` after `after` in a decision line, in bytes.
fn figure(line: &str, after: &str) -> f64 {
    let rest = &line[line.find(after).unwrap_or_else(|| panic!("no '{after}' in {line}")) + after.len()..];
    rest.split_whitespace().next().unwrap().parse::<f64>().unwrap() * MB
}

/// rss + shmem of process `pid`'s share (Pss_Anon + Pss_Shmem), in bytes.
fn share(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let kb = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.split_whitespace().next()?.parse::<u64>().ok()).unwrap_or(0);
    (kb("Pss_Anon:") + kb("Pss_Shmem:")) * 1024
}

fn is_php_cgi(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.split('\0').next().is_some_and(|a| a.ends_with("php-cgi")))
}

fn php_cgi_pool_is_sized_in_a_memory_cgroup(mpm: &str) {
    let limit: u64 = 160 << 20;
    let cgroup = MemoryCgroup::new(&format!("auto-{mpm}"), limit);
    let dir = TempDir::new(&format!("auto-cgi-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/fat.php", FAT_PHP);
    let conf = "<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children auto\n    pm.status_path /fpm-status\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Location /server-status>\n    SetHandler server-status\n</Location>\n";
    let s = Server::start_in_cgroup(dir, mpm, conf, &cgroup);
    // Before any child ran, a guess: 32 MB a child, the cgroup's limit.
    let log = s.wait_log("error.log", "pm.max_children auto: ");
    let (first, line) = auto_decisions(&log).into_iter().next().unwrap_or_else(|| panic!("no sizing decision in\n{log}"));
    assert!(line.contains("taken as at least 32.0 MB") && line.contains("fit in 160.0 MB") && line.contains(&cgroup.dir.display().to_string()), "{line}");
    let load = start_load_on(s.port, 3, "/fat.php", |b| b.ends_with(b"100000"));
    let mut most = 0;
    // Measured once the pool has served 100 requests: children much smaller
    // than the guess, so more of them.
    let started = Instant::now();
    let mut measured = None;
    while measured.is_none() || started.elapsed() < Duration::from_secs(12) {
        assert!(started.elapsed() < Duration::from_secs(40), "no measured decision:\n{}", s.read_log("error.log"));
        // Counted before the log is read: a decision is logged before the
        // children it allows are started.
        let children: Vec<u32> = s.children().into_iter().filter(|&p| is_php_cgi(p)).collect();
        let all = auto_decisions(&s.read_log("error.log"));
        let decided = all.iter().map(|(n, _)| *n).max().unwrap();
        measured = measured.or_else(|| all.iter().find(|(_, l)| l.contains("(measured:")).cloned());
        // Never more children than the budget allowed, and all of them
        // together within the budget.
        assert!(children.len() as u32 <= decided, "{} children, the most allowed {decided}", children.len());
        let used: u64 = children.iter().map(|&p| share(p)).sum();
        assert!(used <= limit, "the pool uses {used} of a budget of {limit}");
        most = most.max(children.len());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (ok, failures) = load.finish();
    assert!(failures.is_empty() && ok > 100, "{ok} served, failures: {failures:?}");
    assert_eq!(cgroup.oom_kills(), 0);
    let (count, line) = measured.unwrap();
    assert!(count > first, "measured children are smaller than the 32 MB guess: {first} -> {count}: {line}");
    // The count is the formula's, from the figures it logs (rounded to 0.1 MB).
    let per_child = figure(&line, "children of ");
    // What the pool's cgroup is charged beside its children (PHP's pages), if anything.
    let fixed = if line.contains("for the pool whatever its size") { figure(&line, ") and ") } else { 0.0 };
    let room = figure(&line, "fit in ") - figure(&line, "with ") - figure(&line, "MB of headroom and ") - fixed;
    let formula = (room / per_child).floor() as i64;
    assert!((formula - count as i64).abs() <= 1, "{count} children, the figures give {formula}: {line}");
    assert!(most >= 2, "the pool grew past one child under load ({most})");
    // The figures on the status pages.
    let st = status_auto(&s);
    assert_eq!(st.get("MemoryBudget").map(String::as_str), Some("167772160"), "{st:?}");
    assert!(st.get("MemoryBudgetSource").is_some_and(|v| v.starts_with("cgroup v")), "{st:?}");
    assert!(st.get("PoolMaxChildren-www").is_some_and(|v| v.parse::<u32>().is_ok_and(|n| n >= 2)), "{st:?}");
    let pool = s.get("/fpm-status").text();
    assert!(pool.contains("max children auto:") && pool.contains("memory per child:") && pool.contains("memory budget:        167772160"), "{pool}");
    drop(s);
}

fn php_fpm_pool_grows_under_load_with_one_master(mpm: &str) {
    let dir = TempDir::new(&format!("auto-fpm-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/hello.php", "<?php echo 'hello';");
    dir.write("htdocs/slow.php", SLOW_PHP);
    let conf = format!(
        "MemoryBudget 48M\n<Pool www>\n    Command {}\n    User nobody\n    Group nogroup\n    pm = dynamic\n    pm.max_children = auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Location /server-status>\n    SetHandler server-status\n</Location>\n",
        php_fpm_binary().display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    wait_for("a php-fpm master", Duration::from_secs(20), || php_fpm_masters(&s).len() == 1);
    let first = php_fpm_masters(&s)[0];
    let load = start_load_on(s.port, 3, "/hello.php", |b| b.ends_with(b"\r\n\r\nhello") || b.ends_with(b"hello"));
    // Warm (100 requests), the pool is measured and grows: warren lets
    // more requests in at once, and the same master starts more children.
    wait_for("a measured decision", Duration::from_secs(40), || s.read_log("error.log").contains("(measured:"));
    let log = s.read_log("error.log");
    let grown = auto_decisions(&log).into_iter().find(|(_, l)| l.contains("(measured:")).unwrap();
    assert!(grown.1.contains("(was ") && grown.1.contains("(MemoryBudget)"), "{}", grown.1);
    load.wait_more(100);
    let (ok, failures) = load.finish();
    assert!(failures.is_empty(), "{ok} served; failed while the pool grew: {failures:?}\n{}", s.read_log("error.log"));
    // Slow clients fill the count the status page shows (a decision is
    // logged before it is shown), and no more.
    let (slow, filled) = php_fpm_fills_its_count(&s);
    let st = status_auto(&s);
    assert_eq!(st.get("MemoryBudget").map(String::as_str), Some("50331648"), "{st:?}");
    assert_eq!(st.get("PoolMaxChildren-www").and_then(|v| v.parse::<u32>().ok()), Some(filled), "{st:?}");
    let (_, failures) = slow.finish();
    assert!(failures.is_empty(), "{failures:?}\n{}", s.read_log("error.log"));
    assert_eq!(php_fpm_masters(&s), vec![first], "the pool grew without a new master");
}

/// A page that says how many requests of it were under way at once: each
/// marks itself in `running/` (a directory the pool's user may write) for
/// 300 ms and counts the marks it sees.
const AT_ONCE_PHP: &str = "<?php $d = __DIR__ . '/../running'; $f = \"$d/\" . getmypid(); touch($f); usleep(300000); $n = count(glob(\"$d/*\")); unlink($f); echo \"at once: $n\";";

/// A php-fpm pool's count of N is N requests at once: its master keeps
/// no idle child beside them (`pm = ondemand`), so warren lets all N in.
fn php_fpm_count_is_requests_at_once(mpm: &str) {
    let dir = TempDir::new(&format!("auto-fpm-at-once-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/hello.php", "<?php echo 'hello';");
    dir.write("htdocs/at_once.php", AT_ONCE_PHP);
    let running = dir.0.join("running");
    std::fs::create_dir(&running).unwrap();
    std::fs::set_permissions(&running, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let conf = format!(
        "MemoryBudget 48M\n<Pool www>\n    Command {}\n    User nobody\n    Group nogroup\n    pm.max_children auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n",
        php_fpm_binary().display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let load = start_load_on(s.port, 3, "/hello.php", |b| b.ends_with(b"hello"));
    wait_for("a measured decision", Duration::from_secs(40), || s.read_log("error.log").contains("(measured:"));
    let (_, failures) = load.finish();
    assert!(failures.is_empty(), "{failures:?}");
    let count = auto_decisions(&s.read_log("error.log")).last().unwrap().0;
    assert!((2..=28).contains(&count), "a count the test's clients can fill ({count})");
    // Rounds of more clients than the count, all at once, until one saw
    // the count (the server's children may need a few rounds to be there
    // for them all); none ever sees more than a count decided.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut most, mut count, mut largest) = (0, count, count);
    while most < count {
        assert!(Instant::now() < deadline, "requests under way at once with a count of {count}: at most {most}");
        let clients: Vec<_> = (0..count + 3).map(|_| get_in_thread(s.port, "/at_once.php", Duration::from_secs(30))).collect();
        for c in clients {
            let r = c.join().unwrap();
            let text = r.text();
            let n: u32 = text.strip_prefix("at once: ").and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("{} {text}", r.status));
            most = most.max(n);
        }
        // A page of another size may move the count: the one in force is the aim.
        let decisions = auto_decisions(&s.read_log("error.log"));
        count = decisions.last().unwrap().0;
        largest = largest.max(decisions.iter().map(|d| d.0).max().unwrap());
        assert!(most <= largest, "{most} requests under way at once with counts of at most {largest}");
    }
}

/// A budget too small for one child: the count stays at one (a pool runs
/// at least one), and the decision says, as a warning, that it does not
/// fit rather than that it does.
fn a_budget_too_small_for_one_child_says_so(mpm: &str) {
    let dir = TempDir::new(&format!("auto-tiny-{mpm}"));
    standard_site(&dir);
    let conf = "MemoryBudget 16M\n<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n";
    let s = Server::start_in(dir, mpm, conf);
    let log = s.wait_log("error.log", "pm.max_children auto: ");
    let (count, line) = auto_decisions(&log).into_iter().next().unwrap_or_else(|| panic!("no sizing decision in\n{log}"));
    assert_eq!(count, 1, "{line}");
    assert!(line.contains("[warn]") && line.contains("do not fit, though a pool runs at least one child, in 16.0 MB") && !line.contains(" fit in "), "{line}");
}

/// `MaxRequestWorkers auto`: the server's children are measured and capped
/// to what fits in the budget, however many connections wait.
fn server_children_are_capped_by_the_budget(mpm: &str) {
    let dir = TempDir::new(&format!("auto-workers-{mpm}"));
    standard_site(&dir);
    let s = Server::start_in(dir, mpm, "MemoryBudget 24M\nServerLimit 64\nMaxRequestWorkers auto\n");
    let log = s.wait_log("error.log", "MaxRequestWorkers auto: ");
    let line = log.lines().find(|l| l.contains("MaxRequestWorkers auto: ")).unwrap_or_else(|| panic!("no decision in\n{log}"));
    let after = |what: &str| line.split(what).nth(1).unwrap_or_else(|| panic!("no '{what}' in {line}"));
    let cap: usize = after(": ").split(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{line}"));
    let children: usize = after(&format!("{cap}: ")).split(' ').next().unwrap().parse().unwrap();
    let per_child = figure(line, "children of ");
    let room = figure(line, "fit in ") - figure(line, "with ") - figure(line, "MB of headroom and ");
    let formula = (room / per_child).floor() as i64;
    assert!(children >= 1 && (formula - children as i64).abs() <= 1, "{children} children, the figures give {formula}: {line}");
    // Clients that send half a head and wait: under prefork each holds a child.
    let held: Vec<std::net::TcpStream> = (0..40)
        .map(|_| {
            let mut c = s.connect();
            std::io::Write::write_all(&mut c, b"GET / HTTP/1.1\r\n").unwrap();
            c
        })
        .collect();
    // Long enough for prefork's spawn rate (doubling each second) to reach the cap.
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        let running = s.children().into_iter().filter(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| !c.starts_with("php"))).count();
        let now_cap = decisions_of_workers(&s.read_log("error.log"));
        assert!(running <= now_cap.max(children), "{running} children, the budget holds {}", now_cap.max(children));
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(held);
    assert_eq!(s.get("/a.txt").status, 200);
}

/// The most children any `MaxRequestWorkers auto` decision allowed.
fn decisions_of_workers(log: &str) -> usize {
    log.lines().filter_map(|l| l.split("MaxRequestWorkers auto: ").nth(1)?.split(": ").nth(1)?.split(' ').next()?.parse().ok()).max().unwrap_or(0)
}

each_mpm!(php_cgi_pool_is_sized_in_a_memory_cgroup, php_fpm_pool_grows_under_load_with_one_master, php_fpm_count_is_requests_at_once, a_budget_too_small_for_one_child_says_so, server_children_are_capped_by_the_budget);
