//! The auto pool's php-fpm (`pm = ondemand` under warren's count) as a
//! site owner's PHP plays it: a script that ends its answer with
//! fastcgi_finish_request() and goes on running (holding its memory), so
//! that each request leaves a busy child behind and php-fpm starts another
//! for the next. php-fpm's master runs at the ceiling (64) so that warren's
//! count can move without a new master; before the pool's cgroup had a
//! pids limit following the count, this page reached 64 children of 8.5 MB
//! within a second at a count of 4. Now the master's forks fail past the
//! limit and requests wait for a child to come back; a child may still run
//! one thread or program beside itself (curl's resolver, sendmail), which
//! the limit keeps room for (crates/fpm/src/manager/tasks.rs). A program
//! the script leaves forking in the background fills its own pool's limit
//! only: other pools and warren go on serving.

mod common;

use std::time::{Duration, Instant};

use common::*;

const LINGER_PHP: &str = "<?php echo 'done'; fastcgi_finish_request(); $a = str_repeat('x', 8 << 20); sleep(4); echo strlen($a);";

/// Tasks a php-fpm child may run beside itself (tasks.rs's tasks_beside_a_child: one per core).
fn tasks_beside_a_child() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).max(1)
}

/// The pool under a budget of 160 MB, warren in a cgroup of its own (in
/// cgroup v2 the pools can have cgroups only below a cgroup warren is alone
/// in), whose limit is well above the budget.
fn auto_pool(dir: TempDir, mpm: &str, tag: &str) -> (MemoryCgroup, Server) {
    standard_site(&dir);
    let conf = format!(
        "MemoryBudget 160M\n<Pool www>\n    Command {}\n    User nobody\n    Group nogroup\n    pm.max_children auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Location /server-status>\n    SetHandler server-status\n</Location>\n",
        php_fpm_binary().display()
    );
    let cgroup = MemoryCgroup::new(&format!("{tag}-{mpm}"), 1 << 30);
    let s = Server::start_in_cgroup(dir, mpm, &conf, &cgroup);
    (cgroup, s)
}

fn largest_count(s: &Server) -> usize {
    auto_decisions(&s.read_log("error.log")).iter().map(|d| d.0).max().unwrap_or(0) as usize
}

fn lingering_children_stay_within_the_count(mpm: &str) {
    let dir = TempDir::new(&format!("attack-ondemand-{mpm}"));
    dir.write("htdocs/linger.php", LINGER_PHP);
    let (_cgroup, s) = auto_pool(dir, mpm, "linger");
    let master = {
        wait_for("the php-fpm master", Duration::from_secs(20), || !php_fpm_masters(&s).is_empty());
        php_fpm_masters(&s)[0]
    };
    let st = wait_status(&s, "a pids limit on the pool", &|st| st.get("PoolTasksLimit-www").is_some_and(|v| v != "0"));
    let limit: usize = st["PoolTasksLimit-www"].parse().unwrap();
    // Requests one after another, each leaving its child busy for 4 s,
    // for long enough that without a bound php-fpm would start dozens.
    let mut most = 0;
    let mut answered = 0;
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        let r = s.get("/linger.php");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "done");
        answered += 1;
        most = most.max(children_of(master).len());
    }
    let count = largest_count(&s);
    let log = s.read_log("error.log");
    assert!(most <= (count + 1) * (1 + tasks_beside_a_child()), "{most} php-fpm children with a count of at most {count} (pids limit {limit}):\n{log}");
    assert!(most < limit, "{most} children beside their master within a pids limit of {limit}");
    assert!(answered > most, "every request made a child ({answered} requests, {most} children): the bound was never reached");
}

/// The room the limit keeps beside each child is there: `count` requests at
/// once, each running a program (as mail() runs sendmail; `exec`, so that
/// it is one task, not a shell and its child), all answered.
fn children_at_the_count_run_programs(mpm: &str) {
    let dir = TempDir::new(&format!("attack-ondemand-programs-{mpm}"));
    dir.write("htdocs/program.php", "<?php usleep(300000); echo trim(shell_exec('echo ran; exec sleep 0.3'));");
    let (_cgroup, s) = auto_pool(dir, mpm, "programs");
    wait_status(&s, "a pids limit on the pool", &|st| st.get("PoolTasksLimit-www").is_some_and(|v| v != "0"));
    let count = largest_count(&s);
    assert!(count >= 2, "a count of {count}: too small to need the room\n{}", s.read_log("error.log"));
    for _ in 0..3 {
        let answers: Vec<Resp> = std::thread::scope(|t| {
            let each: Vec<_> = (0..count).map(|_| t.spawn(|| s.get("/program.php"))).collect();
            each.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in answers {
            assert_eq!((r.status, r.text().as_str()), (200, "ran"), "{}", s.read_log("error.log"));
        }
    }
}


/// A script that leaves a program forking in the background for a while
/// (as a site's PHP can): the pool's tasks are held at its limit. Another
/// pool and warren's own files are served meanwhile, and the pool serves
/// again once the program has ended.
fn a_fork_bomb_holds_only_its_own_pool(mpm: &str) {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new(&format!("attack-ondemand-bomb-{mpm}"));
    standard_site(&dir);
    // Where the bomb (run as nobody) says that a fork failed.
    let said = dir.0.join("said");
    std::fs::create_dir(&said).unwrap();
    std::fs::set_permissions(&said, std::fs::Permissions::from_mode(0o777)).unwrap();
    let said = said.join("bomb.err");
    // Marked with the MPM, to be found among the other MPMs' runs.
    let marker = format!("still-forking-{mpm}");
    dir.write("htdocs/www/bomb.php", format!("<?php exec(\"bash -c 'while [ \\$SECONDS -lt 3 ]; do sleep 5 & done; : {marker}' >/dev/null 2>{} &\"); echo 'left';", said.display()));
    dir.write("htdocs/www/hello.php", "<?php echo 'www';");
    dir.write("htdocs/other/hello.php", "<?php echo 'other';");
    let pool = |name: &str| format!("<Pool {name}>\n    Command {}\n    User nobody\n    Group nogroup\n    pm.max_children auto\n</Pool>\n<Directory htdocs/{name}>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:{name}\n</FilesMatch>\n</Directory>\n", php_fpm_binary().display());
    let conf = format!("MemoryBudget 200M\n{}{}<Location /server-status>\n    SetHandler server-status\n</Location>\n", pool("www"), pool("other"));
    let cgroup = MemoryCgroup::new(&format!("bomb-{mpm}"), 1 << 30);
    let s = Server::start_in_cgroup(dir, mpm, &conf, &cgroup);
    wait_status(&s, "a pids limit on the pool", &|st| st.get("PoolTasksLimit-www").is_some_and(|v| v != "0"));
    assert_eq!(s.get("/www/hello.php").text(), "www", "{}", s.read_log("error.log"));
    assert_eq!(s.get("/other/hello.php").text(), "other");
    assert_eq!(s.get("/www/bomb.php").text(), "left");
    // Orphaned when its shell ended: looked for among every process.
    let bomb_runs = || std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).any(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.windows(marker.len()).any(|w| w == marker.as_bytes())));
    let started = Instant::now();
    while bomb_runs() || started.elapsed() < Duration::from_secs(4) {
        assert!(started.elapsed() < Duration::from_secs(120), "the bomb still runs after 2 minutes");
        assert_eq!(s.get("/other/hello.php").text(), "other", "{}", s.read_log("error.log"));
        assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
    }
    let err = std::fs::read_to_string(&said).unwrap_or_default();
    assert!(err.contains("fork"), "the bomb's forks never failed (it said {err:?})");
    wait_for("the bombed pool to serve again", Duration::from_secs(60), || s.get("/www/hello.php").text() == "www");
}

each_mpm!(lingering_children_stay_within_the_count, children_at_the_count_run_programs, a_fork_bomb_holds_only_its_own_pool);
