//! The test harness's memory cgroups (common::MemoryCgroup) go when
//! dropped, under each MPM, also when a test drops one while its server
//! still runs in it (as a failing test, or a returned `(cgroup, server)`
//! pair, does): what runs in it is the test's own and is killed. And a run
//! removes the empty cgroups earlier runs left, once they are old, never
//! one with a process in it or one made lately (another run's, going on).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

const POOL: &str = "<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children 2\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n";

fn dropped_before_its_server_it_goes(mpm: &str) {
    let cgroup = MemoryCgroup::new(&format!("harness-{mpm}"), 512 << 20);
    let dir = TempDir::new(&format!("harness-cgroup-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/hello.php", "<?php echo 'hello';");
    let s = Server::start_in_cgroup(dir, mpm, POOL, &cgroup);
    assert_eq!(s.get("/hello.php").text(), "hello");
    let path = cgroup.dir.clone();
    assert!(!processes_within(&path).is_empty());
    drop(cgroup);
    assert!(!path.exists(), "{} is left behind, holding {:?}", path.display(), processes_within(&path));
    drop(s);
}

/// A cgroup as an earlier run would have left it, `hours` old, with
/// cgroups named `below` in it.
fn leftover(parent: &Path, name: &str, below: &[&str], hours: i64) -> std::path::PathBuf {
    let dir = parent.join(name);
    let _ = std::fs::remove_dir(&dir);
    std::fs::create_dir(&dir).unwrap();
    for b in below {
        std::fs::create_dir(dir.join(b)).unwrap();
    }
    let then = libc::timespec { tv_sec: unsafe { libc::time(std::ptr::null_mut()) } - hours * 3600, tv_nsec: 0 };
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a path and two times, both set.
    assert_eq!(unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), [then, then].as_ptr(), 0) }, 0, "{}", std::io::Error::last_os_error());
    dir
}

#[test]
fn only_old_empty_leftovers_are_removed() {
    // The memory hierarchy MemoryCgroup uses (made first, so that its sweep
    // of leftovers has run before this test makes its own).
    let mine = MemoryCgroup::new("harness-sweep", 64 << 20);
    let parent = mine.dir.parent().unwrap().to_path_buf();
    let pid = std::process::id();
    let old_empty = leftover(&parent, &format!("warren-test-old-empty-{pid}"), &[], 2);
    let old_nested = leftover(&parent, &format!("warren-test-old-nested-{pid}"), &["warren-pools-1"], 2);
    let fresh_empty = leftover(&parent, &format!("warren-test-fresh-empty-{pid}"), &[], 0);
    let old_busy = leftover(&parent, &format!("warren-test-old-busy-{pid}"), &[], 2);
    let not_ours = leftover(&parent, &format!("someone-else-{pid}"), &[], 2);
    let mut sleeper = Command::new("sleep").arg("60").stdin(Stdio::null()).spawn().unwrap();
    std::fs::write(old_busy.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    remove_leftover_cgroups(&parent, LEFTOVER_AGE);
    let kept: Vec<bool> = [&old_empty, &old_nested, &fresh_empty, &old_busy, &not_ours, &mine.dir].iter().map(|d| d.exists()).collect();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    for d in [&fresh_empty, &old_busy, &not_ours] {
        settle(|| std::fs::remove_dir(d).is_ok() || !d.exists());
    }
    assert_eq!(kept, [false, false, true, true, true, true], "old empty, old with an empty one below, fresh, old with a process, not a test's, this run's");
}

each_mpm!(dropped_before_its_server_it_goes);
