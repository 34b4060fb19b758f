//! The counters behind `SetHandler metrics`, kept in the scoreboard.
//!
//! Each serving thread has a [`SlotMetrics`] inside its [`ThreadSlot`]: it
//! is the only writer of it, so a request's end adds to a handful of
//! uncontended relaxed atomics (no lock, no shared cache line with another
//! thread), and a scrape sums every slot. Being in the scoreboard's shared
//! mapping, the counts of every child are seen by the one that answers
//! the scrape, prefork's many processes included, and outlive the child
//! (a slot's counters are never reset: a new child in the slot adds on),
//! so the sums only grow, as Prometheus's counters must.
//!
//! Requests and bytes are counted by virtual host in [`VHOST_BUCKETS`]
//! buckets whose names the parent writes in the scoreboard's header
//! ([`VhostNames`]) when it loads a configuration: a name keeps its bucket
//! across graceful restarts (so a reordered configuration does not move
//! counts between hosts), and hosts past the buckets share the last one,
//! `(other)`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use warren_handler::metrics::{duration_bucket, status_class, MetricsSnapshot, MetricsSource, VhostFigures, DURATION_BOUNDS_US, STATUS_CLASSES};

use crate::scoreboard::{Scoreboard, State};

/// Virtual host buckets; the last holds the hosts past the others.
pub const VHOST_BUCKETS: usize = 64;
/// Bytes of a bucket's name kept (longer names are cut).
const NAME_WORDS: usize = 8;
const OTHER: &str = "(other)";

/// One thread's counters.
#[repr(C)]
pub struct SlotMetrics {
    requests: [[AtomicU64; STATUS_CLASSES.len()]; VHOST_BUCKETS],
    bytes: [AtomicU64; VHOST_BUCKETS],
    durations: [AtomicU64; DURATION_BOUNDS_US.len() + 1],
    duration_sum_us: AtomicU64,
    tls_handshakes: AtomicU64,
    tls_resumed: AtomicU64,
    h2_streams: AtomicU64,
}

impl SlotMetrics {
    /// A request is over.
    pub fn request(&self, bucket: usize, status: u16, bytes: u64, duration_us: u64) {
        let bucket = bucket.min(VHOST_BUCKETS - 1);
        self.bytes[bucket].fetch_add(bytes, Ordering::Relaxed);
        self.durations[duration_bucket(duration_us)].fetch_add(1, Ordering::Relaxed);
        self.duration_sum_us.fetch_add(duration_us, Ordering::Relaxed);
        // Last, and released: a scrape that sees the request counted sees
        // its bytes and duration too.
        self.requests[bucket][status_class(status)].fetch_add(1, Ordering::Release);
    }

    pub fn tls_handshake(&self, resumed: bool) {
        self.tls_handshakes.fetch_add(1, Ordering::Relaxed);
        if resumed {
            self.tls_resumed.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn h2_stream(&self) {
        self.h2_streams.fetch_add(1, Ordering::Relaxed);
    }
}

/// The buckets' names, written by the parent only.
#[repr(C)]
pub struct VhostNames {
    names: [[AtomicU64; NAME_WORDS]; VHOST_BUCKETS],
}

impl VhostNames {
    fn name(&self, bucket: usize) -> String {
        crate::scoreboard::load_text(&self.names[bucket])
    }

    /// The bucket of each of `hosts` (names), giving free buckets to names
    /// not seen before.
    pub fn assign(&self, hosts: &[&str]) -> Vec<u8> {
        crate::scoreboard::store_text(&self.names[VHOST_BUCKETS - 1], OTHER.as_bytes());
        hosts
            .iter()
            .map(|&host| {
                let host = if host.is_empty() { "(unnamed)" } else { host };
                let mut cut = host.as_bytes()[..host.len().min(NAME_WORDS * 8)].to_vec();
                // Cut on a character's boundary, as the name is read back as text.
                while std::str::from_utf8(&cut).is_err() {
                    cut.pop();
                }
                let cut = String::from_utf8(cut).unwrap_or_default();
                let found = (0..VHOST_BUCKETS - 1).find(|&b| {
                    let name = self.name(b);
                    name.is_empty() || name == cut
                });
                let bucket = found.unwrap_or(VHOST_BUCKETS - 1);
                if bucket < VHOST_BUCKETS - 1 && self.name(bucket).is_empty() {
                    crate::scoreboard::store_text(&self.names[bucket], cut.as_bytes());
                }
                bucket as u8
            })
            .collect()
    }
}

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
