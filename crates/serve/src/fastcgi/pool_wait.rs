//! Requests of the event loop that wait for a child of one of warren's own
//! pools. They are parked on the loop, not on a worker thread: a watcher
//! thread per pool sleeps on the pool's futex in the shared table (bumped
//! whenever a child is given back or started) and wakes the loop through an
//! eventfd, and the loop then leases children for its parked requests in
//! the order they came.

use std::collections::{HashMap, VecDeque};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use nix::sys::eventfd::{EfdFlags, EventFd};
use warren_handler::fastcgi::PoolDispatch;

/// A connection waiting for a pool's child.
pub struct Parked {
    pub slot: usize,
    pub generation: u64,
    pub pool: String,
    pub deadline: Instant,
}

struct Watcher {
    /// This loop's requests parked for the pool: the watcher sleeps on the
    /// futex only while there are some.
    parked: Arc<AtomicUsize>,
    /// None if it could not be started: the loop's tick retries then.
    thread: Option<Thread>,
}

pub struct PoolWaits {
    pub parked: VecDeque<Parked>,
    /// Readable when a watcher saw a child freed.
    pub wake: Arc<EventFd>,
    watchers: HashMap<String, Watcher>,
}

/// How long a watcher sleeps on the futex before it looks again (a child
/// freed just before it began to sleep is then found this late at worst).
const WATCH: Duration = Duration::from_millis(20);

impl PoolWaits {
    pub fn new() -> std::io::Result<PoolWaits> {
        let wake = Arc::new(EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?);
        Ok(PoolWaits { parked: VecDeque::new(), wake, watchers: HashMap::new() })
    }

    /// Parks a request; starts the pool's watcher if it has none.
    pub fn park(&mut self, p: Parked, dispatch: &Arc<dyn PoolDispatch>) {
        let w = self.watchers.entry(p.pool.clone()).or_insert_with(|| {
            let parked = Arc::new(AtomicUsize::new(0));
            let (count, wake, d, pool) = (parked.clone(), self.wake.clone(), dispatch.clone(), p.pool.clone());
            let thread = std::thread::Builder::new()
                .name(format!("pool-watch-{pool}"))
                .stack_size(64 * 1024)
                .spawn(move || loop {
                    if count.load(Ordering::Acquire) == 0 {
                        std::thread::park_timeout(Duration::from_secs(1));
                        continue;
                    }
                    d.wait_for_child(&pool, WATCH);
                    let _ = wake.write(1);
                })
                .map(|h| h.thread().clone())
                .ok();
            Watcher { parked, thread }
        });
        w.parked.fetch_add(1, Ordering::AcqRel);
        if let Some(t) = &w.thread {
            t.unpark();
        }
        self.parked.push_back(p);
    }

    /// Takes parked request `i` off this loop's queue and the pool's
    /// (leased, timed out, or gone).
    pub fn unpark(&mut self, i: usize, dispatch: &Arc<dyn PoolDispatch>) {
        let Some(p) = self.parked.remove(i) else { return };
        if let Some(w) = self.watchers.get(&p.pool) {
            w.parked.fetch_sub(1, Ordering::AcqRel);
        }
        dispatch.leave_queue(&p.pool);
    }

    /// Clears the wake-up counter.
    pub fn reset_wake(&self) {
        let _ = nix::unistd::read(self.wake.as_fd(), &mut [0u8; 8]);
    }
}

