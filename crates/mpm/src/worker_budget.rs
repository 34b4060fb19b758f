//! `MaxRequestWorkers auto`: as many server children as the memory budget
//! holds, from their measured sizes, as the pools' `pm.max_children auto`
//! does for PHP (the same budget, read the same way: `warren_memory`).
//! A threaded child counts with its ThreadsPerChild workers.

use std::time::{Duration, Instant};

use warren_memory::{children_of, fit, headroom, mb, Budget, PoolNeeds, Usage};

/// How often the children are measured.
const EVERY: Duration = Duration::from_secs(5);
/// The cap follows the largest child measured in this long.
const REMEMBER: Duration = Duration::from_secs(60);

pub struct WorkerBudget {
    budget: Budget,
    next: Instant,
    sizes: Vec<(Instant, u64)>,
    /// The most children now, once measured.
    pub cap: Option<usize>,
}

impl WorkerBudget {
    pub fn new(directive: Option<u64>) -> WorkerBudget {
        WorkerBudget { budget: Budget::find(directive), next: Instant::now(), sizes: Vec::new(), cap: None }
    }

    /// Measures the server's `children` when due and sets the cap (at most
    /// `ceiling`); the notice to log when it changed.
    pub fn size(&mut self, children: &[i32], ceiling: usize, threads_per_child: u32) -> Option<String> {
        if Instant::now() < self.next || children.is_empty() {
            return None;
        }
        self.next = Instant::now() + EVERY;
        let reading = self.budget.read();
        let usages: Vec<u64> = children.iter().filter_map(|&p| Usage::of(p)).map(|u| u.total()).collect();
        let now = Instant::now();
        if let Some(&largest) = usages.iter().max() {
            self.sizes.push((now, largest));
        }
        self.sizes.retain(|(t, _)| now.duration_since(*t) <= REMEMBER);
        let per_child = self.sizes.iter().map(|&(_, s)| s).max().unwrap_or(0).max(1 << 20);
        let ours: u64 = usages.iter().sum();
        let others = match reading.charged {
            Some(charged) => charged.saturating_sub(ours),
            // MemoryBudget covers warren's processes: this one and the pools'.
            None => {
                let me = std::process::id() as i32;
                let rest = descendants(me).into_iter().filter(|p| !children.contains(p));
                [me].into_iter().chain(rest).filter_map(Usage::of).map(|u| u.total()).sum()
            }
        };
        let headroom = headroom(reading.limit);
        let available = reading.limit.saturating_sub(headroom + others);
        let ceiling = u32::try_from(ceiling).unwrap_or(u32::MAX);
        let cap = fit(available, &[PoolNeeds { fixed: 0, per_child, ceiling }])[0] as usize;
        if self.cap == Some(cap) {
            return None;
        }
        let was = self.cap.map_or(String::new(), |c| format!(" (was {})", c * threads_per_child as usize));
        self.cap = Some(cap);
        Some(format!(
            "MaxRequestWorkers auto: {}{was}: {cap} children of {} fit in {} ({}), with {} of headroom and {} used by the rest",
            cap * threads_per_child as usize,
            mb(per_child),
            mb(reading.limit),
            self.budget.source.describe(),
            mb(headroom),
            mb(others)
        ))
    }
}

/// Every process below `pid`.
fn descendants(pid: i32) -> Vec<i32> {
    let mut all = Vec::new();
    let mut next = children_of(pid);
    while let Some(p) = next.pop() {
        next.extend(children_of(p));
        all.push(p);
    }
    all
}
