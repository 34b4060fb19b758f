//! A php-fpm pool with `pm.max_children auto` bounded to warren's count by
//! the kernel: its cgroup's pids limit follows the count.
//!
//! The pool's master runs at the ceiling (`pm.max_children 64`, see
//! `shape::PhpFpmShape::capped`) so that the count can move without a
//! new master, and warren sends it at most `count` requests at once. That
//! bounds the children only while each child is busy for no longer than
//! warren's request: a script that answers with fastcgi_finish_request()
//! (or goes on after its client left, with ignore_user_abort) keeps its
//! child busy past the answer, and the master forks another for the next
//! request; one such page ran 64 children within a second at a count of 4.
//! Nothing warren sees on the FastCGI connection tells such a child from
//! an idle one (php-fpm closes the connection at the answer), and a master
//! reloaded at each new count would stop the pool's children and start
//! with an empty opcache each time. The pids limit holds whatever the
//! pool's PHP does: past it, the master's fork fails (php-fpm logs
//! "fork() failed" and the request waits in the socket's queue for a child
//! to come back to accept), as does a script's own fork or thread.
//!
//! The limit counts tasks, threads included: the master, the count and
//! the one child ondemand may start beside it, and [`tasks_beside_a_child`]
//! per child for the threads and programs a PHP child runs while serving
//! (curl's resolver thread for each lookup, mail()'s sendmail). A script
//! may spend that room on children instead, and php-fpm's master replaces
//! every child it did not stop itself (fpm_children_bury restarts a child
//! unless its own idle timeout stopped it), so warren's SIGQUIT to the
//! children past the count only had them forked again: with the room, a
//! pool shrunk from 7 to 4 under load kept 9 children. So while more
//! children run than the count and the one beside it, the limit has no
//! room ([`tasks_max`]): the children warren stops are not replaced, and a
//! thread or program started then waits for the pool to be back within
//! its count (it fails, as a fork past the limit does).

use super::Manager;

/// Tasks a php-fpm child may run beside itself: a thread or program per
/// core, at least one (Debian's libcurl resolves each name in a thread of
/// its own and fails the request, "getaddrinfo() thread failed to start",
/// without one; ImageMagick's OpenMP starts a thread per core beside the
/// one it runs on, and libgomp aborts the process when it cannot).
pub(super) fn tasks_beside_a_child() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64).max(1)
}

/// The pids limit of a php-fpm pool counted at `count` children, with
/// `running` children now: room for a task beside each child while they
/// are within the count and the one beside it, none while more run.
pub(super) fn tasks_max(count: u32, running: u32) -> u64 {
    // The master, and the child ondemand may start beside the count.
    let children = u64::from(count.max(1)) + 1;
    if u64::from(running) > children {
        1 + children
    } else {
        1 + children * (1 + tasks_beside_a_child())
    }
}

impl Manager {
    /// Sets php-fpm pool `pool`'s pids limit to its count ([`tasks_max`]),
    /// `running` children measured.
    pub(super) fn bound_tasks(&mut self, pool: usize, running: u32) {
        let run = &self.pools[pool];
        let Some(count) = run.auto.as_ref().map(|a| a.count).filter(|_| run.config.runs_php_fpm()) else { return };
        let name = run.config.name.clone();
        let Some(cgroup) = self.cgroups.as_mut().and_then(|c| c.pool(&name).ok()) else { return };
        if let Err(e) = cgroup.set_tasks_max(tasks_max(count, running)) {
            self.log.warn(&format!("[pool {name}] {e}: its children are not bounded to its count"));
        }
        let bound = cgroup.tasks_max().unwrap_or(0);
        self.table.counters(pool).tasks_limit.store(bound, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_follows_the_count() {
        // Master + (count + 1 children) each with one task beside it.
        let room = 1 + tasks_beside_a_child();
        assert!(room >= 2);
        assert_eq!(tasks_max(4, 4), 1 + 5 * room);
        assert_eq!(tasks_max(4, 5), 1 + 5 * room, "the child beside the count is within it");
        assert_eq!(tasks_max(1, 0), 1 + 2 * room);
        assert_eq!(tasks_max(0, 1), tasks_max(1, 1), "a pool runs at least one child");
        assert!(tasks_max(3, 3) < tasks_max(4, 4));
        // More children than that (a shrink, children running on after
        // their answer): no room, so that none is forked again.
        assert_eq!(tasks_max(4, 9), 1 + 5);
        assert_eq!(tasks_max(4, 6), 1 + 5);
    }
}
