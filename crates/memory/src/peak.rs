//! What a child becomes, not what it was when last looked at: its peak
//! (what it holds now plus what it held at its highest and has since
//! given back, from the kernel's high-water mark), the largest peaks kept
//! over a window long enough to cover a traffic pattern, and a margin for
//! growth on top.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::Usage;

/// How long a peak is remembered.
pub const WINDOW: Duration = Duration::from_secs(600);
/// The growth allowed on top of a child's peak, in percent. The peak is
/// the kernel's high-water mark, not a sample, so no moment between two
/// passes is missed; what the margin covers is children growing past
/// every page seen so far, all at once, before the pass that sees it (a
/// child past its figure is then replaced after its request, and its peak
/// raises the figure). +10 % passes tests/memory_pressure.rs
/// (children_that_grow_make_the_pool_shrink, paced so that each 4 MB
/// step is seen) where 0 % fails; but for a php-fpm pool the margin also
/// covers the children its master forks past the count between two passes
/// (ondemand forks for a request that arrives while no child waits in
/// accept): at +10 % a WordPress pool at 128 MB ran 13 children at a count
/// of 7 and its own cgroup's limit killed one in 3 runs of 20; at +25 %,
/// none in 40 (docs/pools-memory.md).
pub const CHILD_MARGIN: u64 = 25;
/// The same for the rest, over its peak of the window: a database grows
/// its caches under load, and the window's peak already holds what it
/// grew by before (docs/pools-memory.md has what was measured).
pub const REST_MARGIN: u64 = 10;

/// A process's share now ([`Usage`]: anonymous and shared memory) and
/// what its resident set has shrunk by since its highest (VmHWM - VmRSS),
/// which samples taken once a second would otherwise miss: PHP frees a
/// request's large blocks when the request ends. Its peak is the two
/// added: all of its share for a php-cgi child, its anonymous part for a
/// php-fpm child (whose shared memory is its pool's).
pub fn peak_of(pid: i32) -> Option<(Usage, u64)> {
    let usage = Usage::of(pid)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)?.split_whitespace().next()?.parse::<u64>().ok()).unwrap_or(0) * 1024;
    Some((usage, kb("VmHWM:").saturating_sub(kb("VmRSS:"))))
}

/// `size` with `percent` more.
pub fn with_margin(size: u64, percent: u64) -> u64 {
    size + size / 100 * percent
}

/// The largest values seen over [`WINDOW`].
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// Decreasing values, each the largest since its time: the front is
    /// the window's largest.
    kept: VecDeque<(Instant, u64)>,
}

impl Window {
    pub fn record(&mut self, now: Instant, value: u64) {
        while self.kept.back().is_some_and(|&(_, v)| v <= value) {
            self.kept.pop_back();
        }
        self.kept.push_back((now, value));
        self.forget(now);
    }

    fn forget(&mut self, now: Instant) {
        while self.kept.front().is_some_and(|&(t, _)| now.duration_since(t) > WINDOW) {
            self.kept.pop_front();
        }
    }

    pub fn largest(&mut self, now: Instant) -> Option<u64> {
        self.forget(now);
        self.kept.front().map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_the_largest_until_it_is_old() {
        let t0 = Instant::now();
        let mut w = Window::default();
        assert_eq!(w.largest(t0), None);
        w.record(t0, 10);
        w.record(t0 + Duration::from_secs(1), 30);
        w.record(t0 + Duration::from_secs(2), 20);
        assert_eq!(w.largest(t0 + Duration::from_secs(2)), Some(30));
        // 30 goes out of the window; 20, later, is then the largest.
        assert_eq!(w.largest(t0 + WINDOW + Duration::from_millis(1500)), Some(20));
        assert_eq!(w.largest(t0 + WINDOW + Duration::from_secs(3)), None);
    }

    #[test]
    fn margins() {
        let m = 1 << 20;
        assert_eq!(with_margin(100 * m, CHILD_MARGIN), 125 * m);
        assert_eq!(with_margin(100 * m, REST_MARGIN), 110 * m);
    }

    #[test]
    fn a_process_has_a_peak() {
        let pid = std::process::id() as i32;
        let (usage, _) = peak_of(pid).unwrap();
        assert!(usage.anon > 0);
        assert_eq!(peak_of(-5), None);
    }
}
