//! The memory budget holds, under each MPM, in a memory cgroup each test
//! makes: a pool whose children grow after its first decision shrinks
//! without an OOM kill; a process beside warren that grows (a memory hog
//! started after it) makes the pool shrink; and with the cgroup pushed
//! past its limit, whatever the kernel kills is a PHP child, which warren
//! replaces, never the hog beside it nor warren's own processes; a limit
//! lowered while warren runs is obeyed within seconds; a child that
//! balloons is replaced after its request, and logged; once a pool's
//! peaks are known it grows at once to the count the budget allows (not
//! 20 or 30 s later). The
//! pools run in memory cgroups of their own below warren's, their
//! children with a raised oom_score_adj.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

const MB: u64 = 1 << 20;

/// A page that holds `mb` megabytes for the length of its request.
const GROW_PHP: &str = "<?php $s = str_repeat('x', ((int)($_GET['mb'] ?? 0)) << 20); echo 'held ', strlen($s) >> 20;";

const POOL: &str = "<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Location /server-status>\n    SetHandler server-status\n</Location>\n";

fn start(tag: &str, mpm: &str, limit: u64) -> (MemoryCgroup, Server) {
    start_with(tag, mpm, limit, POOL)
}

fn start_with(tag: &str, mpm: &str, limit: u64, conf: &str) -> (MemoryCgroup, Server) {
    let cgroup = MemoryCgroup::new(&format!("{tag}-{mpm}"), limit);
    let dir = TempDir::new(&format!("{tag}-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/grow.php", GROW_PHP);
    dir.write("htdocs/slow.php", SLOW_PHP);
    let s = Server::start_in_cgroup(dir, mpm, conf, &cgroup);
    (cgroup, s)
}

/// The first decision's count, once logged.
fn first_count(s: &Server) -> u32 {
    let log = s.wait_log("error.log", "pm.max_children auto: ");
    auto_decisions(&log).first().unwrap_or_else(|| panic!("no decision in\n{log}")).0
}

/// The figure (MB) right after `after` in `line`.
fn mb_after(line: &str, after: &str) -> f64 {
    let rest = &line[line.find(after).unwrap_or_else(|| panic!("no '{after}' in {line}")) + after.len()..];
    rest.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no figure after '{after}' in {line}"))
}

/// Clients asking /grow.php for the size in `mb`, each in a loop.
struct Growers {
    mb: Arc<AtomicU64>,
    ok: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<Vec<String>>>,
}

impl Growers {
    fn start(port: u16, clients: usize) -> Growers {
        let (mb, ok, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let threads = (0..clients)
            .map(|_| {
                let (mb, ok, stop) = (mb.clone(), ok.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut failures = Vec::new();
                    // Bounded, should the test forget to stop it.
                    let until = Instant::now() + Duration::from_secs(120);
                    while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                        let size = mb.load(Ordering::SeqCst);
                        let answer = TcpStream::connect(("127.0.0.1", port)).and_then(|mut c| {
                            c.set_read_timeout(Some(Duration::from_secs(20)))?;
                            write!(c, "GET /grow.php?mb={size} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
                            let mut out = Vec::new();
                            c.read_to_end(&mut out)?;
                            Ok(out)
                        });
                        match answer {
                            Ok(out) if out.starts_with(b"HTTP/1.1 200 ") && out.ends_with(format!("held {size}").as_bytes()) => {
                                ok.fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(out) => failures.push(String::from_utf8_lossy(&out[..out.len().min(80)]).into_owned()),
                            Err(e) => failures.push(e.to_string()),
                        }
                    }
                    failures
                })
            })
            .collect();
        Growers { mb, ok, stop, threads }
    }

    /// Asks for `mb` from now on, and waits until `n` requests of it were served.
    fn grow_to(&self, mb: u64, n: u64) {
        self.mb.store(mb, Ordering::SeqCst);
        // Requests already under way may be of the last size.
        let target = self.ok.load(Ordering::SeqCst) + n + self.threads.len() as u64;
        wait_for(&format!("{n} requests of {mb} MB"), Duration::from_secs(60), || self.ok.load(Ordering::SeqCst) >= target);
    }

    fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.threads.into_iter().flat_map(|t| t.join().unwrap()).collect()
    }
}

/// A process beside warren in its cgroup holding `mb` megabytes until dropped.
struct Hog(Child);

impl Hog {
    fn start(cgroup: &MemoryCgroup, mb: u64) -> Hog {
        let procs = std::ffi::CString::new(cgroup.dir.join("cgroup.procs").into_os_string().into_encoded_bytes()).unwrap();
        let mut cmd = Command::new("python3");
        cmd.args(["-c", &format!("import sys\nheld = b'x' * ({mb} << 20)\nsys.stdout.write('held\\n'); sys.stdout.flush()\nsys.stdin.read()")]);
        // SAFETY: open, write and close between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
                Ok(())
            });
        }
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("python3");
        let mut line = [0u8; 5];
        // It says so once it holds all of it (or dies: then the read fails).
        let held = child.stdout.as_mut().unwrap().read_exact(&mut line).is_ok() && &line == b"held\n";
        assert!(held, "the hog could not take {mb} MB");
        Hog(child)
    }

    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The count of the last decision, and that it was lower than `than`.
fn shrunk_below(s: &Server, than: u32) -> Option<(u32, String)> {
    auto_decisions(&s.read_log("error.log")).into_iter().rev().find(|(n, l)| *n < than && l.contains("(was "))
}

/// The pool ends at no more children than its last decision allows.
fn pool_obeys_last_decision(s: &Server) {
    wait_for("the pool down to its count", Duration::from_secs(20), || {
        let count = auto_decisions(&s.read_log("error.log")).last().map_or(0, |d| d.0) as usize;
        s.php_cgi_children().len() <= count
    });
}

fn children_that_grow_make_the_pool_shrink(mpm: &str) {
    let (cgroup, s) = start("grow", mpm, 256 * MB);
    let first = first_count(&s);
    assert!(first >= 3, "256 MB hold 3 children of 32 MB: {first}\n{}", s.read_log("error.log"));
    // As many clients as children, so each child serves each size; sizes
    // growing a step at a time, as a site's children do, each step seen by
    // warren and obeyed before the next. Seen: the status page's peak is a
    // child's whole size, php-cgi's own (some 10 MB) and the script's, so
    // a step is seen once the peak is the step above the size a child had
    // serving 0 MB (less half a megabyte: the same string measures a few
    // hundred kB apart from child to child). Compared with the step alone,
    // a peak of 16 MB strings passed the steps of 20 and 24 MB unseen and
    // let the test ask for 28: children grew 12 MB each between two passes,
    // 7 x 37.6 MB in 256 MB, past what the 25 % margin on a peak covers
    // (the kernel killed a child before the next pass). At a margin of 0
    // this test sees an OOM kill (docs/pools-memory.md).
    let load = Growers::start(s.port, first as usize);
    load.grow_to(0, 2 * u64::from(first));
    let peak_seen = || status_auto(&s).get("PoolMemoryPeakChild-www").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    wait_for("the children measured", Duration::from_secs(20), || peak_seen() > 0);
    let own = peak_seen();
    for mb in (4..=40).step_by(4) {
        load.grow_to(mb, 2 * u64::from(first));
        let deadline = Instant::now() + Duration::from_secs(20);
        while peak_seen() + MB / 2 < own + mb * MB {
            assert!(Instant::now() < deadline, "a peak of {mb} MB above a child's own {own} bytes not seen within 20 s:\n{}", s.read_log("error.log"));
            std::thread::sleep(Duration::from_millis(100));
        }
        pool_obeys_last_decision(&s);
    }
    wait_for("a smaller count", Duration::from_secs(20), || shrunk_below(&s, first).is_some());
    let failures = load.finish();
    let (count, line) = shrunk_below(&s, first).unwrap();
    // Sized from a peak the children reached after the first decision:
    // past the 32 MB taken before warm-up, less its margin.
    let peak = if line.contains("peak so far ") { mb_after(&line, "peak so far ") } else { mb_after(&line, "measured: peak ") };
    assert!(peak >= 25.6 && count < first, "{line}");
    pool_obeys_last_decision(&s);
    assert!(failures.is_empty(), "{failures:?}\n{}", s.read_log("error.log"));
    assert_eq!(cgroup.oom_kills(), 0, "{}", s.read_log("error.log"));
    let st = status_auto(&s);
    assert!(st.get("PoolMemoryPeakChild-www").and_then(|v| v.parse::<u64>().ok()).is_some_and(|p| p >= 40 * MB), "{st:?}");
}

fn a_growing_neighbour_makes_the_pool_shrink(mpm: &str) {
    let (cgroup, s) = start("rest", mpm, 256 * MB);
    let first = first_count(&s);
    assert!(first >= 3, "{first}\n{}", s.read_log("error.log"));
    // Started after warren, in its cgroup: a database growing its caches.
    let mut hog = Hog::start(&cgroup, 100);
    // A smaller count for the rest's growth: an earlier one (the children's
    // own sizes settling) does not count.
    let for_the_rest = || {
        auto_decisions(&s.read_log("error.log")).into_iter().rev().find(|(n, l)| *n < first && l.contains("(was ") && l.contains("for the rest (peak ") && mb_after(l, "for the rest (peak ") >= 100.0)
    };
    let deadline = Instant::now() + Duration::from_secs(40);
    while for_the_rest().is_none() {
        assert!(Instant::now() < deadline, "a smaller count for the rest's 100 MB: not within 40 s\n{}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(100));
    }
    pool_obeys_last_decision(&s);
    assert_eq!(s.get("/grow.php?mb=1").text(), "held 1");
    assert!(hog.alive());
    assert_eq!(cgroup.oom_kills(), 0, "{}", s.read_log("error.log"));
}

/// A limit lowered while warren runs (a host's controller) is read on the
/// next pass: the pool is sized to it.
fn a_lowered_limit_is_obeyed(mpm: &str) {
    let (cgroup, s) = start("lowered", mpm, 256 * MB);
    let first = first_count(&s);
    assert!(first >= 3, "{first}\n{}", s.read_log("error.log"));
    cgroup.set_limit(128 * MB);
    wait_for("a decision for the new limit", Duration::from_secs(10), || shrunk_below(&s, first).is_some_and(|(_, l)| l.contains("fit in 128.0 MB")));
    pool_obeys_last_decision(&s);
    assert_eq!(status_auto(&s).get("MemoryBudget").map(String::as_str), Some("134217728"));
    assert_eq!(cgroup.oom_kills(), 0, "{}", s.read_log("error.log"));
}

/// The same with a php-fpm pool, whose one master keeps running: warren
/// lets fewer requests in at once, and php-fpm stops the children left
/// idle, while requests go on being served.
///
/// Checked: the pool fills its count under load (common's
/// php_fpm_fills_its_count), shrinks below it once the neighbour has
/// grown, comes down to the new count and the one child ondemand may start
/// beside it, serves every request, keeps its master, and nothing is
/// OOM-killed (the cgroup's count, over the whole test). A sample of more
/// children than that is allowed as a transient only: ondemand forks when
/// a request arrives while no child waits in accept (two finishing at
/// once), and until warren's next pass the pids limit leaves room for it,
/// the room a script's threads need (the kernel counts a thread as it
/// counts a child); it must be gone before warren's second pass after it.
/// What fails is a count that stays above, as when php-fpm's master forked
/// again every child warren stopped (9 children at a count of 4, before
/// the pids limit had no room while more ran: crates/fpm/src/manager/tasks.rs).
///
/// Ignored for a while on 2026-11-28 for that transient: the check
/// took one sample of count + 2 children (9 at a count of 7, at load
/// 16-22) as a broken count.
fn a_growing_neighbour_shrinks_a_php_fpm_pool(mpm: &str) {
    let conf = php_fpm_pool();
    let (cgroup, s) = start_with("rest-fpm", mpm, 256 * MB, &conf);
    let first = first_count(&s);
    assert!(first >= 3, "{first}\n{}", s.read_log("error.log"));
    wait_for("a php-fpm master", Duration::from_secs(20), || php_fpm_masters(&s).len() == 1);
    let master = php_fpm_masters(&s)[0];
    // Measured first, at a working size (20 MB a request), so that the
    // count the neighbour must shrink is not the 32 MB guess's (which the
    // pool's first measured count would replace, whatever the neighbour)
    // and is small enough to fill.
    let growers = Growers::start(s.port, 3);
    growers.grow_to(20, 150);
    wait_for("a measured count", Duration::from_secs(40), || s.read_log("error.log").contains("(measured:"));
    let failures = growers.finish();
    assert!(failures.is_empty(), "{failures:?}\n{}", s.read_log("error.log"));
    let (load, before) = php_fpm_fills_its_count(&s);
    let _hog = Hog::start(&cgroup, 100);
    let deadline = Instant::now() + Duration::from_secs(20);
    while shrunk_below(&s, before).is_none() {
        assert!(Instant::now() < deadline, "no count below {before} within 20 s of the neighbour's growth:\n{}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for("php-fpm's children down to the count", Duration::from_secs(30), || {
        let count = auto_decisions(&s.read_log("error.log")).last().map_or(0, |d| d.0) as usize;
        // The count, and the one child more php-fpm's ondemand may start beside it.
        live_children_of(master).len() <= count + 1
    });
    load.wait_more(5);
    let (_, failures) = load.finish();
    assert!(failures.is_empty(), "{failures:?}\n{}", s.read_log("error.log"));
    assert_eq!(php_fpm_masters(&s), vec![master], "the same master throughout");
    assert_eq!(cgroup.oom_kills(), 0, "{}", s.read_log("error.log"));
}

fn under_forced_pressure_only_php_children_are_killed(mpm: &str) {
    let (cgroup, s) = start("oom", mpm, 128 * MB);
    first_count(&s);
    // The pool's children are in a cgroup of their own below warren's,
    // and first in line for the OOM killer.
    let warren_cgroup = cgroup.dir.file_name().unwrap().to_string_lossy().into_owned();
    wait_for("php-cgi children", Duration::from_secs(20), || !s.php_cgi_children().is_empty());
    for pid in s.php_cgi_children() {
        let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        let memory = own.lines().find(|l| l.split(':').nth(1).is_some_and(|c| c.split(',').any(|c| c == "memory")) || l.starts_with("0::")).unwrap_or("");
        assert!(memory.contains(&format!("/{warren_cgroup}/warren-pools")) && memory.ends_with("/www"), "php-cgi {pid} in {own}");
        assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).unwrap_or_default().trim(), "900");
    }
    // The pool's limit is set once its processes are charged to its cgroup.
    let limit = || status_auto(&s).get("PoolCgroupLimit-www").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    wait_for("the pool's cgroup limited", Duration::from_secs(10), || limit() > 0);
    let st = status_auto(&s);
    assert!(st.get("MemoryCgroups").is_some_and(|v| v.starts_with("v1") || v.starts_with("v2")), "{st:?}");
    assert!(limit() <= 128 * MB, "{st:?}");
    // Children holding 24 MB each, then a neighbour that leaves no room
    // for them: over the limit unless the pool shrinks, and, whatever is
    // killed on the way, it must be a PHP child.
    let load = Growers::start(s.port, 3);
    load.grow_to(24, 6);
    let mut hog = Hog::start(&cgroup, 72);
    wait_for("the pool down to one child", Duration::from_secs(30), || auto_decisions(&s.read_log("error.log")).last().is_some_and(|d| d.0 == 1));
    load.finish();
    // Each death is logged once warren has reaped it.
    let php_killed = |log: &str| log.lines().filter(|l| l.contains("[pool www] child ") && l.contains("exited on signal SIGKILL")).count() as u64;
    let every_kill_a_php_child = || php_killed(&s.read_log("error.log")) == cgroup.oom_kills();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !every_kill_a_php_child() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = s.read_log("error.log");
    assert_eq!(cgroup.oom_kills(), php_killed(&log), "every OOM kill a PHP child's\n{log}");
    assert!(hog.alive(), "the neighbour was killed\n{log}");
    assert!(!log.contains("exit signal SIGKILL"), "a server child was killed\n{log}");
    assert_eq!(s.get("/a.txt").status, 200);
    assert_eq!(s.get("/grow.php?mb=1").text(), "held 1");
}

/// The figure (MB) right before `before` in `line`, 0 if it is not there.
fn mb_before(line: &str, before: &str) -> f64 {
    line.find(before).and_then(|end| line[..end].trim_end().trim_end_matches("MB").split_whitespace().last()?.parse().ok()).unwrap_or(0.0)
}

/// A grown count is the most children its own figures fit with a quarter
/// of a child to spare (a count grows only with that much room, so that
/// it does not flap on a megabyte's change): the limit less headroom and
/// the rest, then the pool's fixed part, the child php-fpm may start beside
/// the count at its size now, and a child's size for each child (figures logged to 0.1
/// MB: each may be off by 0.05 MB, a child's as many times as there are
/// children).
fn count_fits_its_figures(count: u32, line: &str) {
    let room = mb_after(line, "fit in ") - mb_before(line, "of headroom") - mb_before(line, "for the rest (peak");
    let (child, fixed) = (mb_after(line, "children of "), mb_before(line, "for the pool whatever its size"));
    let extra = mb_before(line, "for the child php-fpm may start beside them");
    let used = |n: u32| fixed + extra + f64::from(n) * child;
    let rounding = 0.05 * f64::from(count + 5);
    let roomy = room - child / 4.0;
    assert!(used(count) <= roomy + rounding, "{count} children do not fit {roomy:.1} MB: {line}");
    // At the pool's ceiling (config's AUTO_CEILING) a count stops short of
    // what its figures would fit (php-fpm children of hello-sized PHP can
    // measure 1 MB: 64 of them fit in 128 MB).
    assert!(count == AUTO_CEILING || used(count + 1) > roomy - rounding, "{count} children do not fill {roomy:.1} MB: {line}");
}

/// The most children `pm.max_children auto` gives a pool.
const AUTO_CEILING: u32 = 64;

/// A pool's first count, made before its children have run (a child
/// taken as 32 MB), grows as soon as their peaks are known and hold: to
/// what the budget fits, without waiting for the old 20 s warm-up or the
/// 30 s between a php-fpm pool's masters; its children then run, and
/// nothing is killed.
fn known_peaks_grow_the_pool_at_once(mpm: &str, conf: &str, tag: &str, fills: &dyn Fn(&Server, u32)) -> (MemoryCgroup, Server) {
    let (cgroup, s) = start_with(tag, mpm, 128 * MB, conf);
    let first = first_count(&s);
    let load = Growers::start(s.port, 3);
    let started = Instant::now();
    let grown = || auto_decisions(&s.read_log("error.log")).into_iter().find(|(n, l)| *n > first && l.contains("(was ") && l.contains("measured: peak "));
    wait_for("a larger count from measured peaks", Duration::from_secs(15), || grown().is_some());
    let (count, line) = grown().unwrap();
    eprintln!("{mpm}: {first} -> {count} children {:.1} s after the load began", started.elapsed().as_secs_f64());
    count_fits_its_figures(count, &line);
    fills(&s, count);
    load.grow_to(1, 20);
    // Held under the same load: no shrink back, no second thoughts.
    assert_eq!(auto_decisions(&s.read_log("error.log")).last().map(|d| d.0), Some(count), "{}", s.read_log("error.log"));
    let failures = load.finish();
    assert!(failures.is_empty(), "{failures:?}\n{}", s.read_log("error.log"));
    assert_eq!(cgroup.oom_kills(), 0, "{}", s.read_log("error.log"));
    (cgroup, s)
}

fn known_peaks_grow_a_php_cgi_pool_at_once(mpm: &str) {
    known_peaks_grow_the_pool_at_once(mpm, POOL, "ramp", &|s, count| wait_for(&format!("{count} children running"), Duration::from_secs(20), || s.php_cgi_children().len() == count as usize));
}

/// A child that balloons (a script taking 80 MB, past the 32 MB a child
/// is counted at before the pool is warm and within PHP's memory_limit)
/// serves its request, then is replaced, and the pool says which child and
/// how large it grew.
fn a_ballooning_child_is_replaced_after_its_request(mpm: &str, conf: &str, tag: &str) {
    let (cgroup, s) = start_with(tag, mpm, 256 * MB, conf);
    first_count(&s);
    assert_eq!(s.get("/grow.php?mb=80").text(), "held 80");
    let log = s.wait_log("error.log", " past the ");
    let line = log.lines().find(|l| l.contains("[pool www] child ") && l.contains(" past the ")).unwrap_or_else(|| panic!("no replaced child in\n{log}"));
    let pid: u32 = line.split("[pool www] child ").nth(1).and_then(|r| r.split_whitespace().next()?.parse().ok()).unwrap_or_else(|| panic!("no pid in {line}"));
    assert!(mb_after(line, "grew to ") >= 80.0 && line.ends_with("replaced after its request"), "{line}");
    wait_for(&format!("child {pid} gone"), Duration::from_secs(20), || !std::path::Path::new(&format!("/proc/{pid}")).exists());
    let st = status_auto(&s);
    assert!(st.get("PoolLargeChildrenReplaced-www").and_then(|v| v.parse::<u32>().ok()).is_some_and(|n| n >= 1), "{st:?}");
    assert_eq!(s.get("/grow.php?mb=1").text(), "held 1");
    assert_eq!(cgroup.oom_kills(), 0, "{}", s.read_log("error.log"));
}

fn a_ballooning_php_cgi_child_is_replaced(mpm: &str) {
    a_ballooning_child_is_replaced_after_its_request(mpm, POOL, "balloon");
}

fn a_ballooning_php_fpm_child_is_replaced(mpm: &str) {
    a_ballooning_child_is_replaced_after_its_request(mpm, &php_fpm_pool(), "balloon-fpm");
}

/// [`POOL`] run by a php-fpm master.
fn php_fpm_pool() -> String {
    POOL.replace("Command php-cgi", &format!("Command {}", php_fpm_binary().display())).replace("pm static", "pm static\n    User nobody\n    Group nogroup")
}

fn oom_score_adj(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).unwrap_or_default().trim().to_string()
}

fn known_peaks_grow_a_php_fpm_pool_at_once(mpm: &str) {
    let conf = php_fpm_pool();
    let master = std::cell::Cell::new(0);
    // The count is some 20 children of hello-sized PHP here: filling it
    // (a child a second) is php_fpm_fills_its_count's test, under a budget
    // that makes a few.
    let fills = |s: &Server, count: u32| {
        master.set(php_fpm_masters(s)[0]);
        let running = children_of(master.get()).len() as u32;
        assert!(running <= count, "{running} php-fpm children, the count {count}");
    };
    let (_cgroup, s) = known_peaks_grow_the_pool_at_once(mpm, &conf, "ramp-fpm", &fills);
    // The count grew without a new master (whose opcache would start empty).
    let master = master.get();
    assert_eq!(php_fpm_masters(&s), vec![master], "one master throughout");
    // Should the kernel have to kill in the pool, a child goes before its
    // master (which would take the whole pool down until started again).
    assert_eq!(oom_score_adj(master), "800");
    wait_for("the children's OOM score raised past the master's", Duration::from_secs(10), || children_of(master).iter().all(|&c| oom_score_adj(c) == "900"));
}

each_mpm!(children_that_grow_make_the_pool_shrink, a_growing_neighbour_makes_the_pool_shrink, a_lowered_limit_is_obeyed, under_forced_pressure_only_php_children_are_killed, known_peaks_grow_a_php_cgi_pool_at_once, known_peaks_grow_a_php_fpm_pool_at_once, a_ballooning_php_cgi_child_is_replaced, a_ballooning_php_fpm_child_is_replaced);

#[test]
fn a_growing_neighbour_shrinks_a_php_fpm_pool_prefork() {
    a_growing_neighbour_shrinks_a_php_fpm_pool("prefork");
}

#[test]
fn a_growing_neighbour_shrinks_a_php_fpm_pool_worker() {
    a_growing_neighbour_shrinks_a_php_fpm_pool("worker");
}

#[test]
fn a_growing_neighbour_shrinks_a_php_fpm_pool_event() {
    a_growing_neighbour_shrinks_a_php_fpm_pool("event");
}

/// What the processes outside the pools' cgroups hold: warren, its server
/// children, and a hog beside them: their anonymous and shared memory,
/// each at its proportional share (pages the server's children share
/// after fork counted once), and the mapped file pages charged to their
/// cgroups (their own, v1's mapped_file; a v2 leaf's file_mapped), not
/// the files they map that were charged elsewhere (warren's binary, read
/// before the test).
fn held_outside_the_pools(dir: &std::path::Path) -> u64 {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    let figure = |text: &str, name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.split_whitespace().next()?.parse::<u64>().ok()).unwrap_or(0);
    let rollups = procs.lines().filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok());
    let anon: u64 = rollups.map(|r| (figure(&r, "Pss_Anon:") + figure(&r, "Pss_Shmem:")) << 10).sum();
    let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
    let mapped = if procs.trim().is_empty() { 0 } else { figure(&stat, "mapped_file") + figure(&stat, "file_mapped") };
    let here = anon + mapped;
    let below = std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && !e.file_name().to_string_lossy().starts_with("warren-pools"));
    here + below.map(|e| held_outside_the_pools(&e.path())).sum::<u64>()
}

/// Children swinging 0-40 MB (each request takes 40 MB and gives it back)
/// while the rest holds steady: the rest is counted at what sits outside
/// the pools (warren and a 20 MB hog beside it), not at a charge less the
/// children measured a moment later, which counted 20-30 MB of swing as
/// the rest's (and kept it ten minutes). Fails with the rest counted as
/// the budget's charge less the pool's processes, and, on a loaded
/// machine, with the pool's cgroup read before the budget's (the kernel
/// flushes a cgroup's counters when it is read: 4 runs of 8 under load,
/// the rest at 54-101 MB where 32-39 MB were held; warren_memory::rest).
fn the_rest_is_not_the_pools_swing(mpm: &str) {
    let (cgroup, s) = start("swing", mpm, 256 * MB);
    // Started once the pool has its first count.
    first_count(&s);
    let _hog = Hog::start(&cgroup, 20);
    // Three clients: at most three children hold 40 MB at once, which the
    // first count (children taken at 32 MB) leaves room for; more would
    // have the kernel kill in the pool before warren saw its children
    // grow (children_that_grow_make_the_pool_shrink is about that).
    let load = Growers::start(s.port, 3);
    // What the slack covers: file pages warren shares with PHP children
    // (their Pss split between them), charged to whichever cgroup read
    // them first.
    let slack = 8 * MB;
    let mut held = 0;
    let mut samples = Vec::new();
    for _ in 0..20 {
        load.grow_to(40, 3);
        let st = status_auto(&s);
        held = held.max(held_outside_the_pools(&cgroup.dir));
        samples.push(st.get("MemoryRestNow").and_then(|v| v.parse::<u64>().ok()).expect("MemoryRestNow"));
    }
    let failures = load.finish();
    let log = s.read_log("error.log");
    assert!(failures.is_empty(), "{failures:?}\n{log}");
    let worst = samples.iter().copied().max().unwrap_or(0);
    assert!(worst <= held + slack, "the rest counted at up to {:.1} MB where warren and the hog hold {:.1} MB: {:?} MB\n{log}", worst as f64 / MB as f64, held as f64 / MB as f64, samples.iter().map(|v| v / MB).collect::<Vec<_>>());
    // Nor below the hog's 20 MB once a pass has seen it (the old counting
    // also fell to 0-12 MB when children shrank between the two readings).
    let seen = samples.iter().position(|&v| v >= 20 * MB).expect("the hog counted in the rest");
    assert!(samples[seen..].iter().all(|&v| v >= 20 * MB), "the rest counted below the hog's 20 MB: {:?} MB\n{log}", samples.iter().map(|v| v / MB).collect::<Vec<_>>());
    // The decisions say how it was counted, and the peak they kept is within the same bound.
    for (_, line) in auto_decisions(&log) {
        assert!(line.contains("the budget's charge less the auto pools' cgroups'"), "{line}");
        assert!(mb_after(&line, "for the rest (peak ") * MB as f64 <= (held + slack) as f64, "{line}\nwarren and the hog hold {held} bytes");
    }
    eprintln!("rest now {:?} MB; warren and the hog hold {:.1} MB", samples.iter().map(|v| v / MB).collect::<Vec<_>>(), held as f64 / MB as f64);
}

mod rest_swing {
    #[test]
    fn prefork() {
        super::the_rest_is_not_the_pools_swing("prefork")
    }
    #[test]
    fn worker() {
        super::the_rest_is_not_the_pools_swing("worker")
    }
    #[test]
    fn event() {
        super::the_rest_is_not_the_pools_swing("event")
    }
}
