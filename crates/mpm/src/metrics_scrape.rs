//! A scrape of `SetHandler metrics`: [`ScoreboardMetrics`] sums the
//! counters every serving thread keeps in its scoreboard slot
//! ([`crate::metrics_board`]) into one snapshot, with the workers by state.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use warren_handler::metrics::{MetricsSnapshot, MetricsSource, VhostFigures};

use crate::metrics_board::VHOST_BUCKETS;
use crate::scoreboard::{Scoreboard, State};

/// The scoreboard as `SetHandler metrics` sees it, for one configuration.
pub struct ScoreboardMetrics {
    pub sb: Arc<Scoreboard>,
    pub mpm: &'static str,
    /// Each host's bucket (by the site's host index).
    pub buckets: Vec<u8>,
}

impl MetricsSource for ScoreboardMetrics {
    fn host_bucket(&self, host: usize) -> usize {
        self.buckets.get(host).map_or(VHOST_BUCKETS - 1, |&b| b.into())
    }

    fn snapshot(&self) -> MetricsSnapshot {
        let sb = &self.sb;
        let mut snap = MetricsSnapshot { mpm: self.mpm, start_time_ms: sb.restart_time_ms(), generation: sb.generation(), ..Default::default() };
        // Only the buckets given a name and the slots ever claimed have
        // counted anything: the rest is not read.
        let names = sb.vhost_names();
        let named: Vec<(usize, String)> = (0..VHOST_BUCKETS).map(|b| (b, names.name(b))).filter(|(_, n)| !n.is_empty()).collect();
        let mut vhosts: Vec<VhostFigures> = named.iter().map(|(_, name)| VhostFigures { name: name.clone(), ..Default::default() }).collect();
        let mut states: Vec<(&'static str, u64)> = Vec::new();
        for p in 0..sb.slots_used() {
            let ps = sb.process(p);
            let live = ps.pid.load(Ordering::Relaxed) != 0;
            if live {
                snap.children += 1;
                snap.children_stopping += u64::from(ps.quiescing.load(Ordering::Relaxed) != 0);
            }
            for t in 0..sb.thread_limit {
                let slot = sb.thread(p, t);
                if live && slot.state() != State::Dead {
                    let name = state_name(slot.state());
                    match states.iter_mut().find(|(s, _)| *s == name) {
                        Some((_, n)) => *n += 1,
                        None => states.push((name, 1)),
                    }
                }
                let m = &slot.metrics;
                for ((b, _), v) in named.iter().zip(vhosts.iter_mut()) {
                    for (sum, n) in v.requests.iter_mut().zip(&m.requests[*b]) {
                        *sum += n.load(Ordering::Acquire);
                    }
                    v.bytes_sent += m.bytes[*b].load(Ordering::Relaxed);
                }
                for (i, n) in m.durations.iter().enumerate() {
                    snap.duration_buckets[i] += n.load(Ordering::Relaxed);
                }
                snap.duration_sum_us += m.duration_sum_us.load(Ordering::Relaxed);
                snap.tls_handshakes += m.tls_handshakes.load(Ordering::Relaxed);
                snap.tls_resumed += m.tls_resumed.load(Ordering::Relaxed);
                snap.h2_streams += m.h2_streams.load(Ordering::Relaxed);
            }
        }
        snap.vhosts = vhosts;
        states.sort();
        snap.workers = states;
        snap
    }
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Dead => "dead",
        State::Starting => "starting",
        State::Ready => "idle",
        State::Reading => "reading",
        State::Writing => "writing",
        State::KeepAlive => "keepalive",
        State::Logging => "logging",
        State::Closing => "closing",
        State::Graceful => "graceful",
        State::IdleCleanup => "idle_cleanup",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics_board::OTHER;
    use warren_handler::metrics::DURATION_BOUNDS_US;

    #[test]
    fn counts_of_forked_children_are_summed_by_host_name() {
        let sb = Arc::new(Scoreboard::new(3, 2).unwrap());
        let buckets = sb.vhost_names().assign(&["a.example", "b.example", "a.example"]);
        assert_eq!(buckets, vec![0, 1, 0], "one bucket per name");
        // A reload that reorders the hosts keeps each name's bucket.
        assert_eq!(sb.vhost_names().assign(&["c.example", "b.example", "a.example"]), vec![2, 1, 0]);
        sb.claim(0, 10, 2);
        sb.claim(2, 12, 2);
        for (p, t) in [(0, 0), (0, 1), (2, 1)] {
            match unsafe { nix::unistd::fork() }.unwrap() {
                nix::unistd::ForkResult::Child => {
                    sb.thread(p, t).metrics.request(1, 200, 10, 3_000);
                    sb.thread(p, t).metrics.request(0, 404, 5, 20_000_000);
                    unsafe { libc::_exit(0) };
                }
                nix::unistd::ForkResult::Parent { child } => {
                    nix::sys::wait::waitpid(child, None).unwrap();
                }
            }
        }
        let m = ScoreboardMetrics { sb: sb.clone(), mpm: "prefork", buckets };
        let snap = m.snapshot();
        let b = snap.vhosts.iter().find(|v| v.name == "b.example").unwrap();
        assert_eq!((b.requests[1], b.bytes_sent), (3, 30));
        let a = snap.vhosts.iter().find(|v| v.name == "a.example").unwrap();
        assert_eq!(a.requests[3], 3);
        assert_eq!(snap.duration_buckets.iter().sum::<u64>(), 6);
        assert_eq!(snap.duration_buckets[DURATION_BOUNDS_US.len()], 3, "20 s is past the last bound");
        assert_eq!(snap.duration_sum_us, 3 * 20_003_000);
        assert_eq!(snap.children, 2);
        assert!(snap.vhosts.iter().any(|v| v.name == OTHER));
    }

    #[test]
    fn hosts_past_the_buckets_share_the_last() {
        let sb = Scoreboard::new(1, 1).unwrap();
        let names: Vec<String> = (0..VHOST_BUCKETS + 5).map(|i| format!("h{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let buckets = sb.vhost_names().assign(&refs);
        assert_eq!(buckets[VHOST_BUCKETS - 2], (VHOST_BUCKETS - 2) as u8);
        assert!(buckets[VHOST_BUCKETS - 1..].iter().all(|&b| b as usize == VHOST_BUCKETS - 1));
    }
}
