//! Which event children accept new connections.
//!
//! Every event child could listen, as in Apache, but a sleeping event loop
//! must be woken for each connection and each request it gets, and on a
//! small machine whose cores are shared with php-fpm (and often the client)
//! those wake-ups cost more than a second loop gains: on 2 cores one loop
//! answers 184k small static requests a second where two answer 134k. So
//! the loops are filled in order. The parent decides once a second how many
//! children accept ([`next_listener_count`], from [`LoadSampler`]'s figures:
//! each loop's CPU time and the machine's idle cores) and writes it to the
//! scoreboard; each child reads it at every tick and, by its place among the
//! children that can take connections ([`accepts`]), adds or removes the
//! listening sockets from its epoll set. A child that retires, is stopped
//! or has no idle worker thread gives its place to the next one within a
//! tick, without waiting for the parent.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::scoreboard::Scoreboard;

/// A listening loop busier than this (share of one core) asks for another,
/// if the machine has [`SPARE_CORES`] idle.
const GROW_BUSY: f64 = 0.75;
const SPARE_CORES: f64 = 0.3;
/// One loop fewer when the listening loops together use less than this
/// share of the cores that one fewer would have.
const SHRINK_BUSY: f64 = 0.6;

/// The children that can take connections (live, of this generation, not
/// finishing, below MaxChildConnections), as (slot, pid) in the order they
/// take turns: those with an idle worker thread first, then by slot.
pub fn accepting_order(sb: &Scoreboard) -> Vec<(usize, i32)> {
    let generation = sb.generation();
    let mut order: Vec<(bool, usize, i32)> = (0..sb.server_limit)
        .filter_map(|p| {
            let ps = sb.process(p);
            let pid = ps.pid.load(Ordering::Relaxed);
            let candidate = pid != 0
                && ps.quiescing.load(Ordering::Relaxed) == 0
                && ps.capped.load(Ordering::Relaxed) == 0
                && ps.generation.load(Ordering::Relaxed) == generation;
            candidate.then(|| (ps.full.load(Ordering::Relaxed) != 0, p, pid))
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, p, pid)| (p, pid)).collect()
}

/// Whether the child in `slot` should accept: its place in
/// [`accepting_order`] is below the parent's count (zero: every child).
pub fn accepts(sb: &Scoreboard, slot: usize) -> bool {
    let wanted = sb.listeners_wanted() as usize;
    wanted == 0 || accepting_order(sb).iter().take(wanted).any(|&(p, _)| p == slot)
}

/// How many children should accept next, from the listening loops' busy
/// shares (CPU seconds per second, in accepting order) and the machine's
/// idle cores over the last second. `children` is how many could.
pub fn next_listener_count(current: usize, busy: &[f64], idle_cores: f64, children: usize) -> usize {
    let current = current.clamp(1, children.max(1));
    let hottest = busy.iter().copied().fold(0.0, f64::max);
    let total: f64 = busy.iter().sum();
    if current < children && hottest >= GROW_BUSY && idle_cores >= SPARE_CORES {
        current + 1
    } else if current > 1 && total < SHRINK_BUSY * (current - 1) as f64 {
        current - 1
    } else {
        current
    }
}

/// The parent's view of the loops' CPU use, from /proc: each event loop is
/// its child's main thread, and `schedstat` gives its run time in
/// nanoseconds.
#[derive(Default)]
pub struct LoadSampler {
    loops: HashMap<i32, (u64, Instant)>,
    machine: Option<(u64, u64)>,
}

impl LoadSampler {
    /// CPU seconds per second the loop of `pid` used since the last call
    /// (None the first time, or when /proc cannot tell).
    pub fn loop_busy(&mut self, pid: i32, now: Instant) -> Option<f64> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).ok()?;
        let run_ns: u64 = text.split_whitespace().next()?.parse().ok()?;
        let before = self.loops.insert(pid, (run_ns, now))?;
        let wall = now.duration_since(before.1).as_nanos() as f64;
        (wall > 0.0).then(|| run_ns.saturating_sub(before.0) as f64 / wall)
    }

    /// Forgets the children not in `alive`.
    pub fn retain(&mut self, alive: &[i32]) {
        self.loops.retain(|pid, _| alive.contains(pid));
    }

    /// Idle cores of the machine since the last call, from /proc/stat
    /// (plenty when it cannot be read, so loops are never held back by a
    /// missing /proc).
    pub fn idle_cores(&mut self) -> f64 {
        let Some((idle, total, cpus)) = std::fs::read_to_string("/proc/stat").ok().and_then(|s| parse_proc_stat(&s)) else {
            return f64::MAX;
        };
        let before = self.machine.replace((idle, total));
        match before {
            Some((i0, t0)) if total > t0 => idle.saturating_sub(i0) as f64 / (total - t0) as f64 * cpus as f64,
            _ => 0.0,
        }
    }
}

/// (idle + iowait ticks, all ticks, CPUs) from the text of /proc/stat.
fn parse_proc_stat(text: &str) -> Option<(u64, u64, usize)> {
    let mut lines = text.lines();
    let first = lines.next()?;
    let fields: Vec<u64> = first.strip_prefix("cpu ")?.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal; guest time is already in user.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    let cpus = lines.filter(|l| l.starts_with("cpu")).count().max(1);
    Some((idle, total, cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_only_with_a_hot_loop_and_spare_cores() {
        // One loop at 99 % with the machine busy (a local client, php-fpm): stay at one.
        assert_eq!(next_listener_count(1, &[0.99], 0.14, 2), 1);
        // The same loop with a core idle: a second child starts accepting.
        assert_eq!(next_listener_count(1, &[0.99], 1.0, 2), 2);
        // A loop at 70 % never asks for help.
        assert_eq!(next_listener_count(1, &[0.70], 1.5, 2), 1);
        // No child left to add.
        assert_eq!(next_listener_count(2, &[0.9, 0.9], 4.0, 2), 2);
    }

    #[test]
    fn shrinks_when_fewer_loops_would_do() {
        assert_eq!(next_listener_count(2, &[0.35, 0.3], 1.0, 2), 2);
        assert_eq!(next_listener_count(2, &[0.3, 0.25], 1.0, 2), 1);
        assert_eq!(next_listener_count(3, &[0.6, 0.6, 0.1], 0.0, 4), 3);
        assert_eq!(next_listener_count(3, &[0.3, 0.3, 0.1], 0.0, 4), 2);
        // Never below one, nor above the children there are.
        assert_eq!(next_listener_count(1, &[0.0], 2.0, 2), 1);
        assert_eq!(next_listener_count(5, &[0.9], 2.0, 2), 2);
        assert_eq!(next_listener_count(0, &[], 2.0, 0), 1);
    }

    #[test]
    fn proc_stat() {
        let text = "cpu  100 5 50 800 20 3 7 0 0 0\ncpu0 50 2 25 400 10 1 3 0 0 0\ncpu1 50 3 25 400 10 2 4 0 0 0\nintr 1 2\n";
        assert_eq!(parse_proc_stat(text), Some((820, 985, 2)));
        assert_eq!(parse_proc_stat("intr 1\n"), None);
    }

    #[test]
    fn children_accept_in_order_and_hand_over() {
        let sb = Scoreboard::new(4, 2).unwrap();
        for p in 0..3 {
            sb.claim(p, 100 + p as i32, 1);
        }
        sb.set_listeners_wanted(1);
        assert!(accepts(&sb, 0));
        assert!(!accepts(&sb, 1) && !accepts(&sb, 2) && !accepts(&sb, 3));
        sb.set_listeners_wanted(2);
        assert!(accepts(&sb, 0) && accepts(&sb, 1) && !accepts(&sb, 2));
        sb.set_listeners_wanted(1);
        // The first child has no idle worker thread: the next one takes over.
        sb.process(0).full.store(1, Ordering::Relaxed);
        assert!(!accepts(&sb, 0) && accepts(&sb, 1));
        // Every child full: the first accepts again (its loop still answers static files).
        sb.process(1).full.store(1, Ordering::Relaxed);
        sb.process(2).full.store(1, Ordering::Relaxed);
        assert!(accepts(&sb, 0) && !accepts(&sb, 1));
        for p in 0..3 {
            sb.process(p).full.store(0, Ordering::Relaxed);
        }
        // Finishing (retired or stopped) and dead children give their place away.
        sb.process(0).quiescing.store(1, Ordering::Relaxed);
        assert!(!accepts(&sb, 0) && accepts(&sb, 1));
        sb.release(1);
        assert!(accepts(&sb, 2));
        // Children of an earlier configuration never accept.
        sb.set_generation(1);
        assert!(!accepts(&sb, 2));
        sb.set_listeners_wanted(0);
        assert!(accepts(&sb, 3));
    }
}
