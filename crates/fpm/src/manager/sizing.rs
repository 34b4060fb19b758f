//! `pm.max_children auto`: pools sized to the memory budget, the seeds'
//! formula (children = memory left / size of a child) done by the server
//! from measured sizes rather than guessed ones.
//!
//! Every few seconds the parent reads the budget and what is charged
//! against it, measures each pool's processes (smaps_rollup), and gives the
//! auto pools what fits after the rest and a tenth of headroom. A pool of
//! php-cgi children is resized at once (warren starts its children); a
//! php-fpm pool gets a new master with the new count on the same socket,
//! and the old one finishes its requests and exits (SIGQUIT). Under memory
//! pressure nothing grows: requests wait in the pool's queue instead.
//!
//! What one more child costs: for php-cgi, all of a child's anonymous and
//! shared memory (each child has its own opcache); for php-fpm, a child's
//! anonymous memory, its shared memory (the opcache its siblings share)
//! being counted once for the pool.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::Manager;
use crate::memory::{children_of, fit, mb, Budget, PoolNeeds, Reading, Source, Usage};

/// How often pools are measured and sized; every pass under pressure.
const EVERY: Duration = Duration::from_secs(5);
/// What a child is taken to cost until its pool has served
/// [`WARM_REQUESTS`], before which children have not grown to their
/// working size (a PHP child grows with the scripts it has run).
const PRIOR_PER_CHILD: u64 = 32 << 20;
const WARM_REQUESTS: u64 = 100;
/// The count follows the largest size measured in this long.
const REMEMBER: Duration = Duration::from_secs(60);
/// A php-fpm pool is resized (a new master, whose opcache starts empty) at
/// most this often, but at once under memory pressure.
const PHP_FPM_RESIZE_EVERY: Duration = Duration::from_secs(30);
/// How long a replaced php-fpm master's children may take to serve what
/// was queued on its socket.
const QUIT_WAIT_MAX: Duration = Duration::from_secs(30);
/// The slot a replaced php-fpm master is kept under until it exits.
pub(super) const OLD_MASTER: usize = usize::MAX;

/// An auto-sized pool's count and what it was made from.
pub(super) struct AutoSize {
    pub(super) count: u32,
    /// Each pass's largest child, for [`REMEMBER`].
    sizes: Vec<(Instant, u64)>,
    changed: Option<Instant>,
    /// The count was made from measured sizes, not the prior.
    measured: bool,
}

impl AutoSize {
    pub(super) fn new() -> AutoSize {
        AutoSize { count: 1, sizes: Vec::new(), changed: None, measured: false }
    }
}

pub(super) struct Sizing {
    budget: Budget,
    next: Instant,
    pub(super) pressure: bool,
    pressure_said: bool,
}

/// A pool's processes measured: (fixed, largest child, all together).
struct Measured {
    fixed: u64,
    largest_child: Option<u64>,
    used: u64,
}

impl Manager {
    /// Reads the budget (MemoryBudget `directive`, else the cgroup's or the
    /// machine's) and sizes the auto pools once before their first children.
    pub fn set_memory_budget(&mut self, directive: Option<u64>) {
        if !self.pools.iter().any(|p| p.config.max_children_auto) {
            self.sizing = None;
            // No budget on the status pages any more.
            self.table.budget().source.store(0, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        // Read again at each reload: MemoryBudget may have changed, or gone.
        self.sizing = Some(Sizing { budget: Budget::find(directive), next: Instant::now(), pressure: false, pressure_said: false });
        self.size_pools(true);
    }

    /// The once-a-second pass's share: measures and sizes when due.
    pub(super) fn size_pools(&mut self, now: bool) {
        let Some(sizing) = self.sizing.as_mut() else { return };
        if !now && Instant::now() < sizing.next {
            return;
        }
        let reading = sizing.budget.read();
        sizing.next = Instant::now() + if reading.pressure { Duration::from_secs(1) } else { EVERY };
        let source = sizing.budget.source.clone();
        self.note_pressure(&reading);
        let measured: Vec<Measured> = (0..self.pools.len()).map(|i| self.measure(i)).collect();
        let auto: Vec<usize> = (0..self.pools.len()).filter(|&i| self.pools[i].config.max_children_auto).collect();
        let auto_used: u64 = auto.iter().map(|&i| measured[i].used).sum();
        let others = match reading.charged {
            Some(charged) => charged.saturating_sub(auto_used),
            // MemoryBudget covers warren's processes: the server's and the
            // pools of a fixed size.
            None => self.own_processes() + (0..self.pools.len()).filter(|i| !auto.contains(i)).map(|i| measured[i].used).sum::<u64>(),
        };
        let headroom = reading.limit / 10;
        let available = reading.limit.saturating_sub(headroom + others);
        let now = Instant::now();
        let mut needs = Vec::new();
        for &i in &auto {
            let warm = self.table.counters(i).accepted.load(std::sync::atomic::Ordering::Relaxed) >= WARM_REQUESTS;
            let a = self.pools[i].auto.as_mut().expect("an auto pool");
            if let Some(size) = measured[i].largest_child {
                a.sizes.push((now, size));
            }
            a.sizes.retain(|(t, _)| now.duration_since(*t) <= REMEMBER);
            let largest = a.sizes.iter().map(|&(_, s)| s).max().unwrap_or(0);
            let per_child = if warm { largest.max(1 << 20) } else { largest.max(PRIOR_PER_CHILD) };
            needs.push(PoolNeeds { fixed: measured[i].fixed, per_child, ceiling: self.pools[i].config.max_children });
        }
        let counts = fit(available, &needs);
        let figures = self.table.budget();
        let store = |field: &std::sync::atomic::AtomicU64, v: u64| field.store(v, std::sync::atomic::Ordering::Relaxed);
        store(&figures.limit, reading.limit);
        store(&figures.headroom, headroom);
        store(&figures.others, others);
        let code = match source {
            Source::Directive => 1,
            Source::CgroupV2(_) => 2,
            Source::CgroupV1(_) => 3,
            Source::Machine => 4,
        };
        figures.source.store(code, std::sync::atomic::Ordering::Relaxed);
        figures.pressure.store(u32::from(reading.pressure), std::sync::atomic::Ordering::Relaxed);
        for ((&i, need), &want) in auto.iter().zip(&needs).zip(&counts) {
            let c = self.table.counters(i);
            store(&c.per_child, need.per_child);
            store(&c.fixed, need.fixed);
            store(&c.used, measured[i].used);
            let php_fpm = self.pools[i].config.runs_php_fpm();
            let warm = c.accepted.load(std::sync::atomic::Ordering::Relaxed) >= WARM_REQUESTS;
            let replacing = self.pools[i].children.values().any(|&s| s == OLD_MASTER);
            let a = self.pools[i].auto.as_mut().expect("an auto pool");
            let have = a.count;
            let first = a.changed.is_none();
            let since = a.changed.map_or(Duration::MAX, |t| now.duration_since(t));
            let settled = a.measured && since < PHP_FPM_RESIZE_EVERY;
            let allowed = match (want > have, php_fpm) {
                _ if first => true,
                _ if want == have => false,
                (true, _) if reading.pressure => false,
                // A new master starts with an empty opcache: not for a
                // guess, nor more than once every half minute once measured,
                // nor while the last one is still finishing.
                (true, true) => warm && !settled && !replacing,
                (false, true) => (reading.pressure || !settled) && !replacing,
                (_, false) => true,
            };
            if !allowed {
                continue;
            }
            a.count = want;
            a.changed = Some(now);
            a.measured = warm;
            let name = &self.pools[i].config.name;
            let measured_how = if warm { "measured".to_string() } else { format!("taken as at least {} until the pool has served {WARM_REQUESTS} requests", mb(PRIOR_PER_CHILD)) };
            let fixed = if need.fixed > 0 { format!(" and {} for the pool whatever its size (master, shared opcache)", mb(need.fixed)) } else { String::new() };
            self.log.notice(&format!(
                "[pool {name}] pm.max_children auto: {want}{}: children of {} ({measured_how}){fixed} fit in {} ({}), with {} of headroom and {} used by the rest",
                if first { String::new() } else { format!(" (was {have})") },
                mb(need.per_child),
                mb(reading.limit),
                source.describe(),
                mb(headroom),
                mb(others)
            ));
            // Shown once logged, so that a status page never shows a count the log does not.
            self.table.counters(i).auto_children.store(want, std::sync::atomic::Ordering::Relaxed);
            if php_fpm && !first {
                self.replace_php_fpm(i);
            }
        }
    }

    /// Says once per episode that the pools stopped growing.
    fn note_pressure(&mut self, reading: &Reading) {
        let Some(s) = self.sizing.as_mut() else { return };
        s.pressure = reading.pressure;
        if reading.pressure && !s.pressure_said {
            let charged = reading.charged.map_or(String::new(), |c| format!(" ({} of {} in use)", mb(c), mb(reading.limit)));
            self.log.warn(&format!("memory pressure{charged}: pools with pm.max_children auto start no more children; requests wait for one"));
        }
        s.pressure_said = reading.pressure;
    }

    /// Whether pool `pool` may start a child now: below its count, and
    /// not under memory pressure unless it has none.
    pub(super) fn may_grow(&self, pool: usize) -> bool {
        let run = &self.pools[pool];
        let running = run.children.len() as u32;
        match &run.auto {
            None => true,
            Some(a) => running < a.count && (running == 0 || !self.sizing.as_ref().is_some_and(|s| s.pressure)),
        }
    }

    /// The most children pool `pool` may have now.
    pub(super) fn limit(&self, pool: usize) -> u32 {
        let run = &self.pools[pool];
        run.auto.as_ref().map_or(run.config.max_children, |a| a.count)
    }

    fn measure(&self, pool: usize) -> Measured {
        let run = &self.pools[pool];
        let mut m = Measured { fixed: 0, largest_child: None, used: 0 };
        for (&pid, &slot) in &run.children {
            let u = Usage::of(pid).unwrap_or_default();
            m.used += u.total();
            if !run.config.runs_php_fpm() {
                m.largest_child = m.largest_child.max(Some(u.total()));
                continue;
            }
            // A replaced master's family is in use until it exits, but is
            // no part of what the pool needs.
            let current = slot == 0;
            if current {
                m.fixed += u.total();
            }
            for child in children_of(pid) {
                let u = Usage::of(child).unwrap_or_default();
                m.used += u.total();
                if current {
                    m.fixed += u.shmem;
                    m.largest_child = m.largest_child.max(Some(u.anon));
                }
            }
        }
        m
    }

    /// warren's own processes: this one, and its children that are not the
    /// pools' (the server's children).
    fn own_processes(&self) -> u64 {
        let me = std::process::id() as i32;
        let pools: Vec<i32> = self.runs().flat_map(|r| r.children.keys().copied()).collect();
        let others = children_of(me).into_iter().filter(|p| !pools.contains(p));
        [me].into_iter().chain(others).filter_map(Usage::of).map(|u| u.total()).sum()
    }

    /// A php-fpm pool's new count: a new master on a new socket, which is
    /// renamed over the pool's, so that connections made from then on
    /// reach the new master's children. The old children serve what is
    /// already queued on the old socket; once each of them waits in
    /// accept() (the queue is empty: [`Manager::quit_replaced_masters`]),
    /// their master is told to stop (SIGQUIT, php-fpm's graceful stop: a
    /// child told it while serving a request may drop the request).
    fn replace_php_fpm(&mut self, pool: usize) {
        let old = self.pools[pool].children.iter().find(|(_, &s)| s == 0).map(|(&p, _)| p);
        let Some(old) = old else { return };
        let path = self.table.pools[pool].sockets[0].clone();
        let mut next = path.as_os_str().to_owned();
        next.push(".next");
        let next = std::path::PathBuf::from(next);
        let name = |p: &std::path::Path| p.file_name().map(|n| n.to_owned()).unwrap_or_default();
        let made = self.make_socket(&self.pools[pool].config, &next).and_then(|l| {
            nix::fcntl::renameat(&self.dir_fd, name(&next).as_os_str(), &self.dir_fd, name(&path).as_os_str()).map_err(|e| format!("cannot rename {} to {}: {e}", next.display(), path.display()))?;
            Ok(l)
        });
        match made {
            Ok(l) => self.pools[pool].listeners[0] = l,
            Err(e) => {
                self.log.error(&format!("[pool {}] keeps {} children: {e}", self.pools[pool].config.name, self.pools[pool].auto.as_ref().map_or(0, |a| a.count)));
                return;
            }
        }
        if !self.spawn_php_fpm(pool, false) {
            // The old master's children no longer get connections: it is
            // stopped, and started again as when a master dies.
            let _ = kill(Pid::from_raw(old), Signal::SIGQUIT);
            return;
        }
        self.pools[pool].children.insert(old, OLD_MASTER);
        self.pools[pool].quitting.push((old, Instant::now()));
    }

    /// Tells replaced php-fpm masters to stop once their children have
    /// served what was queued on their socket (each is blocked in accept),
    /// or after [`QUIT_WAIT_MAX`].
    pub(super) fn quit_replaced_masters(&mut self) {
        for run in &mut self.pools {
            run.quitting.retain(|&(pid, since)| {
                let idle = children_of(pid).iter().all(|&c| in_accept(c));
                if !idle && since.elapsed() < QUIT_WAIT_MAX {
                    return true;
                }
                let _ = kill(Pid::from_raw(pid), Signal::SIGQUIT);
                false
            });
        }
    }
}

/// Whether process `pid` is blocked in accept() (the system call it is in,
/// from /proc/PID/syscall; false if that cannot be read).
fn in_accept(pid: i32) -> bool {
    let text = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    text.split_whitespace().next().and_then(|n| n.parse::<i64>().ok()).is_some_and(|n| n == libc::SYS_accept || n == libc::SYS_accept4)
}
