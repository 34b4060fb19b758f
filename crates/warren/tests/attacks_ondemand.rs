//! The auto pool's php-fpm (`pm = ondemand` under warren's count) as a
//! site owner's PHP plays it: a script that ends its answer with
//! fastcgi_finish_request() and goes on running (holding its memory), so
//! that each request leaves a busy child behind and php-fpm starts another
//! for the next. The pool is the parent's, the same under each MPM: run
//! under event.
//!
//! OPEN (found by review7, not fixed): php-fpm's master is configured at
//! the ceiling (pm.max_children 64) so that warren's count can move
//! without a new master, and warren caps requests in flight, not children:
//! a child still running after its answer is not one of them. With a
//! count of 4 in a 160 MB budget this page reached 64 children of 8.5 MB
//! within a second (and PHP's memory_limit, not 8 MB, bounds each one).
//! ignore_user_abort(true) with a client that hangs up early is likely the
//! same (not tried).
//! The test is ignored until warren bounds the children themselves (a
//! cgroup pids limit following the count, or php-fpm reloaded at it).

mod common;

use std::time::{Duration, Instant};

use common::*;

const LINGER_PHP: &str = "<?php echo 'done'; fastcgi_finish_request(); $a = str_repeat('x', 8 << 20); sleep(15); echo strlen($a);";

fn lingering_children_stay_within_the_count(mpm: &str) {
    let dir = TempDir::new(&format!("attack-ondemand-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/linger.php", LINGER_PHP);
    let conf = format!(
        "MemoryBudget 160M\n<Pool www>\n    Command {}\n    User nobody\n    Group nogroup\n    pm.max_children auto\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n",
        php_fpm_binary().display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let master = {
        wait_for("the php-fpm master", Duration::from_secs(20), || !php_fpm_masters(&s).is_empty());
        php_fpm_masters(&s)[0]
    };
    let mut most = 0;
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let r = s.get("/linger.php");
        assert_eq!(r.status, 200, "{}", r.text());
        most = most.max(children_of(master).len());
    }
    let count = auto_decisions(&s.read_log("error.log")).iter().map(|d| d.0).max().unwrap_or(0) as usize;
    assert!(most <= count + 1, "{most} php-fpm children with a count of at most {count}:\n{}", s.read_log("error.log"));
}

#[test]
#[ignore = "open: php-fpm runs children past warren's count (see the file's doc)"]
fn lingering_children_stay_within_the_count_event() {
    lingering_children_stay_within_the_count("event");
}
