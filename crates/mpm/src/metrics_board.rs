//! The counters behind `SetHandler metrics`, kept in the scoreboard.
//!
//! Each serving thread has a [`SlotMetrics`] inside its [`ThreadSlot`](crate::scoreboard::ThreadSlot): it
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

use warren_handler::metrics::{duration_bucket, status_class, DURATION_BOUNDS_US, STATUS_CLASSES};

use crate::board_text::{load_text, store_text};

/// Virtual host buckets; the last holds the hosts past the others.
pub const VHOST_BUCKETS: usize = 64;
/// Bytes of a bucket's name kept (longer names are cut).
const NAME_WORDS: usize = 8;
pub(crate) const OTHER: &str = "(other)";

/// One thread's counters.
#[repr(C)]
pub struct SlotMetrics {
    pub(crate) requests: [[AtomicU64; STATUS_CLASSES.len()]; VHOST_BUCKETS],
    pub(crate) bytes: [AtomicU64; VHOST_BUCKETS],
    pub(crate) durations: [AtomicU64; DURATION_BOUNDS_US.len() + 1],
    pub(crate) duration_sum_us: AtomicU64,
    pub(crate) tls_handshakes: AtomicU64,
    pub(crate) tls_resumed: AtomicU64,
    pub(crate) h2_streams: AtomicU64,
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
    pub(crate) fn name(&self, bucket: usize) -> String {
        load_text(&self.names[bucket])
    }

    /// The bucket of each of `hosts` (names), giving free buckets to names
    /// not seen before.
    pub fn assign(&self, hosts: &[&str]) -> Vec<u8> {
        store_text(&self.names[VHOST_BUCKETS - 1], OTHER.as_bytes());
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
                    store_text(&self.names[bucket], cut.as_bytes());
                }
                bucket as u8
            })
            .collect()
    }
}
