//! `pm.max_children auto`: pools sized to the memory budget, the seeds'
//! formula (children = memory left / size of a child) done by the server
//! from measured sizes rather than guessed ones.
//!
//! Every second the parent reads the budget and what is charged against
//! it; it measures each pool's processes every second while a pool learns
//! its children's peaks or memory is short, every [`QUIET_EVERY`]
//! otherwise, and gives the auto pools what fits
//! after the rest and a tenth of headroom. A child counts at its peak (see
//! `warren_memory::peak`: what it becomes, not what it was), the largest over
//! ten minutes plus a quarter for growth; the rest at its peak over the
//! same window plus a fifth (a database grows its caches under load).
//! Until a pool's peaks are known (it served [`WARM_REQUESTS`], and its
//! largest child peak has not risen by more than [`STEADY_RISE`] % for
//! [`STEADY_TIME`] and [`STEADY_REQUESTS`] requests), a child counts as at
//! least [`PRIOR_PER_CHILD`], or, when the pool's last run learned its peak
//! (see `remembered`), as the larger of that peak and what it measures.
//!
//! Counts shrink at once: a pool of php-cgi children stops its surplus
//! idle children; a php-fpm pool (its master runs at the ceiling, see
//! `shape::PhpFpmShape::capped`) is sent fewer requests at once, and
//! warren stops its children past the count and the one php-fpm may start
//! beside it (SIGQUIT, idle ones first). When memory is short (the charge within 5 % of the limit, an
//! OOM kill, PSI's "full" stalls) a pool shrinks by a child more each
//! second until it is not. Counts grow only with no pressure and not
//! within [`GROW_HOLD`] of a shrink made for it; otherwise as soon as the
//! peaks are known and the budget allows (the count made from them
//! replaces the guess at once).
//! A child that grew past what a child was counted at is replaced after
//! its request, as pm.max_requests would, and logged.
//!
//! What one more child costs: for php-cgi, all of a child's anonymous and
//! shared memory (each child has its own opcache); for php-fpm, a child's
//! anonymous memory, its shared memory (the opcache its siblings share)
//! being counted once for the pool.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::remembered::InUse;
use super::Manager;
use crate::cgroup::PoolCgroups;
use warren_memory::peak::{peak_of, with_margin, Window, CHILD_MARGIN, REST_MARGIN, WINDOW};
use warren_memory::{children_of, fit, headroom, mb, Budget, PoolNeeds, Reading, Source, Usage};
use crate::table::{IDLE, RETIRING};

/// How often the budget is read (the cgroup's limit, charge and pressure:
/// counters the kernel keeps, cheap to read) and, while a pool is learning
/// its children's peaks or memory is short, its processes measured.
const EVERY: Duration = Duration::from_secs(1);
/// How often the pools' processes are measured otherwise. Reading a
/// process's smaps_rollup walks its page tables: some 0.75 ms for a php-fpm
/// child of WordPress, 5-6 ms of warren's CPU a second for a master and six
/// children, a fifth of all warren spent serving the WordPress scenario
/// (docs/pools-memory.md). Nothing between two passes is missed: a child's
/// peak is its high-water mark, and pressure, an OOM kill or a new limit
/// (read every [`EVERY`]) brings the next pass forward.
const QUIET_EVERY: Duration = Duration::from_secs(3);
/// What a child is taken to cost until its pool is warm, before which
/// children have not grown to their working size (a PHP child grows with
/// the scripts it has run).
const PRIOR_PER_CHILD: u64 = 32 << 20;
const WARM_REQUESTS: u64 = 100;
/// A pool's peaks are known once its largest child peak has not risen by
/// more than this (percent) for [`STEADY_TIME`] and [`STEADY_REQUESTS`]
/// requests: a PHP child grows over its first requests, then levels off.
const STEADY_RISE: u64 = 5;
const STEADY_TIME: Duration = Duration::from_secs(5);
const STEADY_REQUESTS: u64 = 50;
/// No growth this soon after a shrink made for memory pressure: the
/// pressure may come back (a shrink for larger measured sizes needs no
/// hold: the sizes are kept for [`WINDOW`]).
const GROW_HOLD: Duration = Duration::from_secs(30);

/// An auto-sized pool's count and what it was made from.
pub(super) struct AutoSize {
    pub(super) count: u32,
    /// Each pass's largest child peak.
    peaks: Window,
    /// The window's largest when it last had one: an ondemand pool left
    /// idle past [`WINDOW`] has no child to measure, and its children are
    /// still the size they were, not nothing.
    last_learned: Option<u64>,
    changed: Option<Instant>,
    shrunk: Option<Instant>,
    /// When the largest child peak last rose past [`STEADY_RISE`] %: the
    /// time, the pool's requests then, and that peak.
    rose: Option<(Instant, u64, u64)>,
    /// The peaks are known (once, for good: a later rise is a larger
    /// measured size, not a reason to go back to the prior).
    pub(super) warm: bool,
    /// A decision made from known peaks was logged: the first is, even
    /// when its count is the guess's, so that the log says the count now
    /// stands on measured sizes.
    known_said: bool,
    /// php-fpm children told to go after their request (SIGQUIT) for
    /// having outgrown their count, not to tell them twice.
    recycled: Vec<i32>,
    /// The peak the pool's last run learned, used for a window from its start.
    remembered: Option<InUse>,
    /// The largest part the pool cost whatever its size, measured: what
    /// the next start remembers beside the child peak.
    pub(super) fixed_seen: u64,
}

impl AutoSize {
    pub(super) fn new(remembered: Option<InUse>) -> AutoSize {
        AutoSize { count: 1, peaks: Window::default(), last_learned: None, changed: None, shrunk: None, rose: None, warm: false, known_said: false, recycled: Vec::new(), remembered, fixed_seen: 0 }
    }

    /// The largest child peak of the window, else the last one learned;
    /// None before any child was measured.
    pub(super) fn learned(&mut self, now: Instant) -> Option<u64> {
        if let Some(largest) = self.peaks.largest(now) {
            self.last_learned = Some(largest);
        }
        self.last_learned
    }
}

pub(super) struct Sizing {
    budget: Budget,
    directive: Option<u64>,
    next: Instant,
    /// The last pass that measured the pools, and the limit it read.
    measured: Option<(Instant, u64)>,
    pub(super) pressure: bool,
    pressure_said: bool,
    /// What the rest (everything under the limit but the auto pools) used, each pass.
    rest: Window,
    /// Its peak under load in the last run, for a window from the start.
    rest_remembered: Option<InUse>,
    /// The limit and the rest's peak this run learned, at the last pass.
    learned: (u64, u64),
}

/// A pool's processes measured.
struct Measured {
    /// What the pool costs whatever its count (a php-fpm master and the
    /// opcache its children share; what its cgroup is charged beside its
    /// processes' shares).
    fixed: u64,
    /// Each child's peak: (pid, its slot for php-cgi, bytes).
    peaks: Vec<(i32, Option<usize>, u64)>,
    /// All of its processes' shares now.
    used: u64,
    /// Children running (a php-fpm master's, for a php-fpm pool).
    running: u32,
    /// A php-fpm pool's children's anonymous memory now, on average (None:
    /// a php-cgi pool, or no child yet): what the child php-fpm may start
    /// beside the count costs (see [`ondemand_extra`]).
    spare: Option<u64>,
}

/// What a php-fpm pool counts for the one child its master may run beside
/// its count: `pm = ondemand` starts a child when a request arrives while
/// none is waiting in accept, and the child that served the last request
/// may still be finishing it (its answer sent, PHP's request shutdown not
/// done), so under load a count of N is N requests at once and N or N + 1
/// children. That child is counted at the children's size now, not at a
/// child's peak: it serves one of the N requests while another child
/// finishes, and an idle child has given its request's memory back.
fn ondemand_extra(measured: &Measured) -> u64 {
    measured.spare.unwrap_or(0)
}

/// What `count` children of a pool with `needs` are counted at.
fn allowance(needs: &PoolNeeds, count: u32) -> u64 {
    needs.fixed + needs.per_child * u64::from(count.max(1))
}

/// The counts that fit in `available`, and those that fit with a quarter
/// of the largest child to spare (for [`settle`]).
fn counts_in(available: u64, needs: &[PoolNeeds]) -> (Vec<u32>, Vec<u32>) {
    let room = needs.iter().map(|n| n.per_child / 4).max().unwrap_or(0);
    (fit(available, needs), fit(available.saturating_sub(room), needs))
}

/// The count to keep, from the one in force (`have`), what fits
/// (`fits`) and what fits with a quarter of a child to spare (`roomy`):
/// growth only to what fits with room, a shrink only when the count in
/// force no longer fits, so that a megabyte's change in the measurements
/// near a boundary does not move the count back and forth. A first count
/// is what fits.
fn settle(have: u32, fits: u32, roomy: u32, first: bool) -> u32 {
    if first {
        fits
    } else if roomy > have {
        roomy
    } else if fits < have {
        fits
    } else {
        have
    }
}

impl Manager {
    /// Reads the budget (MemoryBudget `directive`, else the cgroup's or the
    /// machine's), makes the pools' cgroups, and sizes the auto pools once
    /// before their first children.
    pub fn set_memory_budget(&mut self, directive: Option<u64>) {
        if !self.pools.iter().any(|p| p.config.max_children_auto) {
            self.sizing = None;
            // No budget on the status pages any more.
            self.table.budget().source.store(0, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        // Read again at each reload, MemoryBudget may have changed or gone;
        // but a cgroup's is kept (a v2 warren now sits in a leaf of its own).
        let kept = self.sizing.take().filter(|s| s.directive == directive && directive.is_none());
        self.sizing = Some(match kept {
            Some(s) => s,
            None => {
                let mut budget = Budget::find(directive);
                let rest_remembered = self.remembered_rest(budget.read().limit);
                Sizing { budget, directive, next: Instant::now(), measured: None, pressure: false, pressure_said: false, rest: Window::default(), rest_remembered, learned: (0, 0) }
            }
        });
        self.make_cgroups();
        self.size_pools(true);
    }

    /// The pools' cgroups, made once (said at start when they cannot be),
    /// and one for each pool.
    fn make_cgroups(&mut self) {
        if self.cgroups.is_none() && self.table.budget().cgroups.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            match PoolCgroups::make() {
                Ok(c) => {
                    self.log.notice(&format!("pools run in memory cgroups of their own under {} (cgroup {:?}), their children with oom_score_adj {}", c.base().display(), c.version, crate::cgroup::OOM_SCORE_ADJ));
                    if let Some(why) = c.tasks_unbounded() {
                        self.log.warn(&format!("php-fpm pools with pm.max_children auto have no pids limit: {why}; a script that runs on after its answer (fastcgi_finish_request) can have its master start children past the count, up to pm.max_children's ceiling"));
                    }
                    self.table.budget().cgroups.store(c.code(), std::sync::atomic::Ordering::Relaxed);
                    self.cgroups = Some(c);
                }
                Err(why) => {
                    self.log.warn(&format!("pools run in warren's own memory cgroup, none of their own: {}; their children have oom_score_adj {}, and php-fpm pools with pm.max_children auto no pids limit", why.describe(), crate::cgroup::OOM_SCORE_ADJ));
                    self.table.budget().cgroups.store(why.code(), std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        let Some(cgroups) = self.cgroups.as_mut() else { return };
        for run in &self.pools {
            if let Err(e) = cgroups.pool(&run.config.name) {
                self.log.warn(&format!("[pool {}] runs in warren's cgroup: {e}", run.config.name));
            }
        }
    }

    /// The descriptors through which a new child of pool `pool` joins its cgroups.
    pub(super) fn cgroup_joins(&self, pool: usize) -> crate::cgroup::Joins {
        self.cgroups.as_ref().map_or_else(Default::default, |c| c.joins(&self.pools[pool].config.name))
    }

    /// The once-a-second pass's share: measures and sizes when due.
    pub(super) fn size_pools(&mut self, now: bool) {
        let learning = self.pools.iter().any(|p| p.auto.as_ref().is_some_and(|a| !a.warm));
        let Some(sizing) = self.sizing.as_mut() else { return };
        if !now && Instant::now() < sizing.next {
            return;
        }
        sizing.next = Instant::now() + EVERY;
        let reading = sizing.budget.read();
        let source = sizing.budget.source.clone();
        let measure = now || learning || measure_due(sizing.measured, &reading, Instant::now());
        if measure {
            sizing.measured = Some((Instant::now(), reading.limit));
        }
        self.note_pressure(&reading);
        if !measure {
            self.table.budget().pressure.store(u32::from(reading.pressure), std::sync::atomic::Ordering::Relaxed);
            return;
        }
        // The rest: the budget's charge less the auto pools' cgroups',
        // read as one moment, never a charge less processes measured
        // milliseconds later while PHP children take and give back memory.
        let auto_names: Vec<&str> = self.pools.iter().filter(|p| p.config.max_children_auto).map(|p| p.config.name.as_str()).collect();
        let besides_pools = self.cgroups.as_ref().filter(|c| auto_names.iter().all(|n| c.has(n))).and_then(|c| self.sizing.as_ref().expect("sizing").budget.charged_besides(|| auto_names.iter().filter_map(|n| c.charged_of(n)).sum()));
        let measured: Vec<Measured> = (0..self.pools.len()).map(|i| self.measure(i)).collect();
        let auto: Vec<usize> = (0..self.pools.len()).filter(|&i| self.pools[i].config.max_children_auto).collect();
        let auto_used: u64 = auto.iter().map(|&i| measured[i].used).sum();
        let (rest_now, rest_how) = match (reading.charged, besides_pools) {
            (Some(_), Some(rest)) => (rest, "the budget's charge less the auto pools' cgroups'"),
            (Some(charged), None) => (charged.saturating_sub(auto_used), "the budget's charge less the auto pools' processes"),
            // MemoryBudget covers warren's processes: the server's and the
            // pools of a fixed size.
            (None, _) => (self.own_processes() + (0..self.pools.len()).filter(|i| !auto.contains(i)).map(|i| measured[i].used).sum::<u64>(), "warren's processes and its fixed pools'"),
        };
        let now = Instant::now();
        let sizing = self.sizing.as_mut().expect("sizing");
        sizing.rest.record(now, rest_now);
        let rest_learned = sizing.rest.largest(now).unwrap_or(rest_now);
        let rest_peak = rest_learned.max(InUse::now(sizing.rest_remembered, now).unwrap_or(0));
        let rest = with_margin(rest_peak, REST_MARGIN);
        let headroom = headroom(reading.limit);
        let available = reading.limit.saturating_sub(headroom + rest);
        let mut needs = Vec::new();
        let mut child_peaks = Vec::new();
        let mut extras = Vec::new();
        for &i in &auto {
            self.recycle_outgrown(i, &measured[i]);
            let accepted = self.table.counters(i).accepted.load(std::sync::atomic::Ordering::Relaxed);
            let a = self.pools[i].auto.as_mut().expect("an auto pool");
            if let Some(largest) = measured[i].peaks.iter().map(|&(_, _, p)| p).max() {
                a.peaks.record(now, largest);
            }
            let learned = a.learned(now).unwrap_or(0);
            if a.rose.is_none_or(|(_, _, was)| learned > with_margin(was, STEADY_RISE)) {
                a.rose = Some((now, accepted, learned));
            }
            a.warm = a.warm || peaks_known(a.rose, accepted, now);
            // The last run's peak, while used, is a known peak: the larger of it and what this run measures.
            let remembered = InUse::now(a.remembered, now);
            let warm = a.warm || remembered.is_some();
            let peak = learned.max(remembered.unwrap_or(0));
            self.table.counters(i).remembered_peak.store(remembered.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
            let per_child = with_margin(peak, CHILD_MARGIN).max(1 << 20);
            let per_child = if warm { per_child } else { per_child.max(PRIOR_PER_CHILD) };
            child_peaks.push((peak, learned));
            // Until the master runs its part is not measured: the last
            // run's, while its peak is used.
            a.fixed_seen = a.fixed_seen.max(measured[i].fixed);
            let fixed = measured[i].fixed.max(a.remembered.filter(|_| remembered.is_some()).map_or(0, |r| r.fixed));
            let extra = ondemand_extra(&measured[i]);
            extras.push(extra);
            needs.push(PoolNeeds { fixed: fixed + extra, per_child, ceiling: self.pools[i].config.max_children });
        }
        let (fits, roomy) = counts_in(available, &needs);
        let counts: Vec<u32> = auto
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let a = self.pools[i].auto.as_ref().expect("an auto pool");
                settle(a.count, fits[k], roomy[k], a.changed.is_none())
            })
            .collect();
        let figures = self.table.budget();
        let store = |field: &std::sync::atomic::AtomicU64, v: u64| field.store(v, std::sync::atomic::Ordering::Relaxed);
        store(&figures.limit, reading.limit);
        store(&figures.headroom, headroom);
        store(&figures.others, rest);
        store(&figures.others_now, rest_now);
        let code = match source {
            Source::Directive => 1,
            Source::CgroupV2(_) => 2,
            Source::CgroupV1(_) => 3,
            Source::Machine => 4,
        };
        figures.source.store(code, std::sync::atomic::Ordering::Relaxed);
        figures.pressure.store(u32::from(reading.pressure), std::sync::atomic::Ordering::Relaxed);
        let allowances: u64 = needs.iter().zip(&counts).map(|(n, &c)| allowance(n, c)).sum();
        let slack = available.saturating_sub(allowances);
        for ((((&i, need), &fits), &(peak, learned)), &extra) in auto.iter().zip(&needs).zip(&counts).zip(&child_peaks).zip(&extras) {
            let c = self.table.counters(i);
            store(&c.per_child, need.per_child);
            store(&c.fixed, need.fixed - extra);
            store(&c.used, measured[i].used);
            store(&c.peak_child, peak);
            let running = measured[i].running;
            let a = self.pools[i].auto.as_mut().expect("an auto pool");
            let remembered = a.remembered.filter(|r| InUse::now(Some(*r), now).is_some_and(|p| p >= learned));
            let warm = a.warm || InUse::now(a.remembered, now).is_some();
            let have = a.count;
            // Short of memory: a child fewer than run now, each pass, until it is not.
            let want = match reading.short {
                Some(_) if running > 1 => fits.min(running - 1),
                _ => fits,
            };
            let first = a.changed.is_none();
            let since = |t: Option<Instant>| t.map_or(Duration::MAX, |t| now.duration_since(t));
            let allowed = match want.cmp(&have) {
                _ if first => true,
                std::cmp::Ordering::Equal => warm && !a.known_said,
                // The first count made from known peaks replaces the guess at once.
                std::cmp::Ordering::Greater => !reading.pressure && since(a.shrunk) >= GROW_HOLD,
                std::cmp::Ordering::Less => true,
            };
            if allowed {
                a.known_said |= warm;
                a.count = want;
                a.changed = Some(now);
                if want < have && reading.short.is_some() {
                    a.shrunk = Some(now);
                }
                let name = &self.pools[i].config.name;
                let measured_how = if let Some(r) = remembered {
                    format!("remembered: peak {} learned by the pool's last run {} ago, the larger of it and this run's so far, {}, for {} s from the start, +{CHILD_MARGIN} %", mb(r.peak), r.age(), mb(learned), WINDOW.as_secs())
                } else if warm {
                    format!("measured: peak {} over the last {} s, +{CHILD_MARGIN} %", mb(peak), WINDOW.as_secs())
                } else {
                    format!("taken as at least {} until the pool has served {WARM_REQUESTS} requests and its peak held within {STEADY_RISE} % for {} s; peak so far {}", mb(PRIOR_PER_CHILD), STEADY_TIME.as_secs(), mb(peak))
                };
                let fixed = match (need.fixed - extra, extra) {
                    (0, 0) => String::new(),
                    (fixed, 0) => format!(" and {} for the pool whatever its size (master, shared opcache, PHP's pages)", mb(fixed)),
                    (fixed, extra) => format!(" and {} for the pool whatever its size (master, shared opcache, PHP's pages) and {} for the child php-fpm may start beside them (its size now)", mb(fixed), mb(extra)),
                };
                let short = match reading.short {
                    Some(why) if want < fits => format!("; memory short ({why}): a child fewer than the {running} running"),
                    _ => String::new(),
                };
                // The count is never below one: say so when even one does not fit.
                let over = want <= 1 && allowances > available;
                let fit = if over { "do not fit, though a pool runs at least one child, in" } else { "fit in" };
                // A shrink is a warning: the pool serves fewer at once than it did.
                let say = |line: &str| if (want < have && !first) || over { self.log.warn(line) } else { self.log.notice(line) };
                say(&format!(
                    "[pool {name}] pm.max_children auto: {want}{}: children of {} ({measured_how}){fixed} {fit} {} ({}), with {} of headroom and {} for the rest (peak {} over the last {} s{}, +{REST_MARGIN} %; {} now, {rest_how}){short}",
                    if first { String::new() } else { format!(" (was {have})") },
                    mb(need.per_child),
                    mb(reading.limit),
                    source.describe(),
                    mb(headroom),
                    mb(rest),
                    mb(rest_peak),
                    WINDOW.as_secs(),
                    if rest_peak > rest_learned { " or remembered from the last run" } else { "" },
                    mb(rest_now),
                ));
                // Shown once logged, so that a status page never shows a count the log does not.
                // A php-fpm pool is sent as many requests at once as this allows from now on.
                self.table.counters(i).auto_children.store(want, std::sync::atomic::Ordering::Relaxed);
                self.table.child_freed(i, i32::MAX);
            }
            // The pids limit first: a child told to go while waiting for a
            // request exits at once, and its master replaces it at once
            // while the limit has room (the surplus back before the limit
            // closed, and so until the next pass).
            self.bound_tasks(i, measured[i].running);
            if self.pools[i].config.runs_php_fpm() {
                self.stop_surplus_php_fpm(i, &measured[i]);
            }
            self.limit_cgroup(i, need, slack, headroom, &measured[i]);
        }
        self.table.budget().passes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sizing.as_mut().expect("sizing").learned = (reading.limit, rest_learned);
        self.save_peaks(reading.limit, rest_learned, false);
    }

    /// The learned peaks written at stop, whatever the last write.
    pub(super) fn save_peaks_at_stop(&mut self) {
        if let Some((limit, rest)) = self.sizing.as_ref().map(|s| s.learned) {
            self.save_peaks(limit, rest, true);
        }
    }

    /// The budget shrank: `surplus` children of php-cgi pool `pool` go,
    /// those idle longest now, the others when their request is done.
    pub(super) fn retire_surplus(&mut self, pool: usize, surplus: usize) {
        let now = self.table.now_ms();
        let mut children: Vec<(u64, i32, usize)> = self.pools[pool]
            .children
            .iter()
            .map(|(&pid, &slot)| (now.saturating_sub(self.table.slot(pool, slot).since_ms.load(std::sync::atomic::Ordering::Relaxed)), pid, slot))
            .collect();
        // Idle ones first, longest idle first; then those already going are counted.
        let state = |slot: usize| self.table.slot(pool, slot).state.load(std::sync::atomic::Ordering::Acquire);
        children.sort_by_key(|&(idle, _, slot)| (state(slot) != IDLE, std::cmp::Reverse(idle)));
        let going = |slot: usize| state(slot) == RETIRING || self.table.slot(pool, slot).retire.load(std::sync::atomic::Ordering::Relaxed) != 0;
        let gone = children.iter().filter(|&&(_, _, s)| going(s)).count();
        for &(_, pid, slot) in children.iter().filter(|&&(_, _, s)| !going(s)).take(surplus.saturating_sub(gone)) {
            self.retire_after_request(pool, slot, pid);
        }
    }

    /// Child `pid` in `slot` of php-cgi pool `pool` is stopped now if idle,
    /// else when its request is done; false if it was already going.
    fn retire_after_request(&self, pool: usize, slot: usize, pid: i32) -> bool {
        let s = self.table.slot(pool, slot);
        if s.state.compare_exchange(IDLE, RETIRING, std::sync::atomic::Ordering::AcqRel, std::sync::atomic::Ordering::Relaxed).is_ok() {
            return kill(Pid::from_raw(pid), Signal::SIGTERM).is_ok();
        }
        let first = s.retire.swap(1, std::sync::atomic::Ordering::AcqRel) == 0;
        // Given back between the two: the lease saw no flag.
        if s.state.compare_exchange(IDLE, RETIRING, std::sync::atomic::Ordering::AcqRel, std::sync::atomic::Ordering::Relaxed).is_ok() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        first
    }


    /// The pool's cgroup limited to what its count was made from (its
    /// fixed part and a child's peak per child, and what the cgroup holds
    /// beside its processes' shares: the pages of php-cgi and its
    /// libraries), with the budget's slack and half the headroom above it
    /// before the kernel kills in the pool; never below what it is charged
    /// now and a quarter of the headroom, which would have the kernel kill
    /// a child serving a request rather than the pool stop an idle one.
    /// Nor is the limit lowered while more children run than the
    /// count: those going finish their requests first, and a request under
    /// way may still take what a child took at its peak.
    fn limit_cgroup(&mut self, pool: usize, need: &PoolNeeds, slack: u64, headroom: u64, measured: &Measured) {
        let Some(cgroups) = self.cgroups.as_mut() else { return };
        let version = cgroups.version;
        let name = self.pools[pool].config.name.clone();
        let count = self.pools[pool].auto.as_ref().map_or(1, |a| a.count);
        let Ok(cgroup) = cgroups.pool(&name) else { return };
        let charged = cgroup.charged(version);
        // Not before the pool's processes are there: what its binaries'
        // pages cost is not known until then (a limit without it could
        // have a php-fpm master killed as it starts).
        if charged == 0 {
            return;
        }
        let allowance = allowance(need, count) + charged.saturating_sub(measured.used);
        let mut hard = (allowance + slack + headroom / 2).max(charged + headroom / 4);
        if measured.running > count {
            hard = hard.max(cgroup.limit().unwrap_or(0));
        }
        let soft = (allowance + need.per_child).min(hard);
        if let Err(e) = cgroup.set_limits(version, soft, hard) {
            self.log.warn(&format!("[pool {name}] {e}"));
        }
        let limit = cgroup.limit().unwrap_or(0);
        self.table.counters(pool).cgroup_limit.store(limit, std::sync::atomic::Ordering::Relaxed);
    }

    /// Replaces pool `pool`'s children that outgrew what a child was
    /// counted at when its count was made, after their request (the
    /// count made now counts them at their peak): a php-cgi child is
    /// stopped as it becomes idle, a php-fpm child is told to go when its
    /// request is done (SIGQUIT, php-fpm's graceful stop for a child).
    fn recycle_outgrown(&mut self, pool: usize, measured: &Measured) {
        let counted = self.table.counters(pool).per_child.load(std::sync::atomic::Ordering::Relaxed);
        if counted == 0 {
            return;
        }
        let name = self.pools[pool].config.name.clone();
        for &(pid, slot, size) in measured.peaks.iter().filter(|&&(_, _, p)| p > counted) {
            let stopped = match slot {
                Some(slot) => self.retire_after_request(pool, slot, pid),
                None => {
                    let a = self.pools[pool].auto.as_mut().expect("an auto pool");
                    !a.recycled.contains(&pid) && kill(Pid::from_raw(pid), Signal::SIGQUIT).is_ok() && {
                        a.recycled.push(pid);
                        true
                    }
                }
            };
            if stopped {
                self.table.counters(pool).recycled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.log.warn(&format!("[pool {name}] child {pid} grew to {}, past the {} a child was counted at: replaced after its request", mb(size), mb(counted)));
            }
        }
        if let Some(a) = self.pools[pool].auto.as_mut() {
            a.recycled.retain(|p| measured.peaks.iter().any(|&(q, _, _)| q == *p));
        }
    }

    /// A php-fpm pool running more children than its count and the one
    /// its master may start beside it ([`ondemand_extra`]), after a smaller
    /// count, has the surplus told to go (SIGQUIT, php-fpm's graceful stop:
    /// at once for a child waiting for a request, after its request for a
    /// busy one), those waiting first. Without it an idle child would hold
    /// its memory until pm.process_idle_timeout.
    fn stop_surplus_php_fpm(&mut self, pool: usize, measured: &Measured) {
        let Some(a) = self.pools[pool].auto.as_mut() else { return };
        let mut staying: Vec<i32> = measured.peaks.iter().map(|&(pid, _, _)| pid).filter(|p| !a.recycled.contains(p)).collect();
        let surplus = staying.len().saturating_sub(a.count as usize + 1);
        if surplus == 0 {
            return;
        }
        staying.sort_by_key(|&pid| !waiting_for_a_request(pid));
        for pid in staying.into_iter().take(surplus) {
            if kill(Pid::from_raw(pid), Signal::SIGQUIT).is_ok() {
                a.recycled.push(pid);
            }
        }
    }

    /// Says once per episode that the pools stopped growing.
    fn note_pressure(&mut self, reading: &Reading) {
        let Some(s) = self.sizing.as_mut() else { return };
        s.pressure = reading.pressure;
        if reading.pressure && !s.pressure_said {
            let charged = reading.charged.map_or(String::new(), |c| format!(" ({} of {} in use)", mb(c), mb(reading.limit)));
            let shrink = reading.short.map_or(String::new(), |why| format!(", and shrink ({why})"));
            self.log.warn(&format!("memory pressure{charged}: pools with pm.max_children auto start no more children{shrink}; requests wait for one"));
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
        let charge = || self.cgroups.as_ref().and_then(|c| c.charged_of(&run.config.name));
        let charge_before = charge();
        let mut m = Measured { fixed: 0, peaks: Vec::new(), used: 0, running: 0, spare: None };
        let mut children_anon = 0;
        for (&pid, &slot) in &run.children {
            if !run.config.runs_php_fpm() {
                if let Some((u, rise)) = peak_of(pid) {
                    m.used += u.total();
                    m.peaks.push((pid, Some(slot), u.total() + rise));
                }
                m.running += 1;
                continue;
            }
            // The master is part of what the pool costs whatever its count.
            let master = Usage::of(pid).unwrap_or_default().total();
            m.used += master;
            m.fixed += master;
            for child in children_of(pid) {
                crate::cgroup::raise_oom_score(child);
                let Some((u, rise)) = peak_of(child) else { continue };
                m.used += u.total();
                m.fixed += u.shmem;
                m.peaks.push((child, None, u.anon + rise));
                m.running += 1;
                children_anon += u.anon;
            }
        }
        if run.config.runs_php_fpm() && m.running > 0 {
            m.spare = Some(children_anon / u64::from(m.running));
        }
        // What the kernel charges the pool's cgroup beside its processes'
        // shares is the pool's too, whatever its count: opcache pages no
        // living process maps (the child that compiled them was stopped),
        // PHP's pages it loaded first. Left out, it would count as the
        // rest's, at its peak for the whole window. The charge is read
        // before and after the processes, and the smaller taken: a child
        // that grew while the others were read would otherwise count as
        // the pool's whatever its count (a swing of 0-56 MB was seen).
        if let Some(charge) = charge_before.zip(charge()).map(|(before, after)| before.min(after)) {
            let beside = charge.saturating_sub(m.used);
            m.used += beside;
            m.fixed += beside;
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
}

/// Process `pid` is blocked in accept (a php-fpm child waiting for a
/// request), as /proc/PID/syscall shows it (root's, or the process's
/// user's, to read; false when it cannot be read).
fn waiting_for_a_request(pid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else { return false };
    let number = text.split(' ').next().and_then(|n| n.parse::<libc::c_long>().ok());
    number.is_some_and(|n| n == libc::SYS_accept || n == libc::SYS_accept4)
}

/// The pools' processes are to be measured on this pass: memory is short
/// or pressed, the limit moved since the last pass that measured (a host's
/// controller lowering it), or that pass is [`QUIET_EVERY`] old.
fn measure_due(last: Option<(Instant, u64)>, reading: &Reading, now: Instant) -> bool {
    reading.pressure || reading.short.is_some() || last.is_none_or(|(at, limit)| limit != reading.limit || now.duration_since(at) >= QUIET_EVERY)
}

/// A pool's peaks are known: it has served [`WARM_REQUESTS`] (`accepted`),
/// and its largest child peak has held since it last `rose` for
/// [`STEADY_TIME`] and [`STEADY_REQUESTS`] requests.
fn peaks_known(rose: Option<(Instant, u64, u64)>, accepted: u64, now: Instant) -> bool {
    rose.is_some_and(|(at, then, _)| accepted >= WARM_REQUESTS && now.duration_since(at) >= STEADY_TIME && accepted.saturating_sub(then) >= STEADY_REQUESTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_pool_keeps_its_learned_peak() {
        let t0 = Instant::now();
        let mut a = AutoSize::new(None);
        assert_eq!(a.learned(t0), None);
        a.peaks.record(t0, 30 << 20);
        assert_eq!(a.learned(t0), Some(30 << 20));
        // No child ran for longer than the window (ondemand children gone idle):
        // the children it would start are the size they were, not 0.
        assert_eq!(a.learned(t0 + WINDOW + Duration::from_secs(1)), Some(30 << 20));
        // A smaller peak measured later is learned.
        a.peaks.record(t0 + WINDOW + Duration::from_secs(2), 20 << 20);
        assert_eq!(a.learned(t0 + WINDOW + Duration::from_secs(2)), Some(20 << 20));
    }

    #[test]
    fn processes_are_measured_less_often_when_nothing_moves() {
        let t0 = Instant::now();
        let calm = Reading { limit: 128 << 20, charged: Some(90 << 20), pressure: false, short: None };
        let last = Some((t0, calm.limit));
        assert!(measure_due(None, &calm, t0), "the first pass measures");
        assert!(!measure_due(last, &calm, t0 + Duration::from_secs(1)));
        assert!(!measure_due(last, &calm, t0 + QUIET_EVERY - Duration::from_millis(1)));
        assert!(measure_due(last, &calm, t0 + QUIET_EVERY));
        // Anything that may call for a smaller count: at once.
        assert!(measure_due(last, &Reading { pressure: true, ..calm }, t0 + Duration::from_secs(1)));
        assert!(measure_due(last, &Reading { short: Some("an OOM kill"), ..calm }, t0 + Duration::from_secs(1)));
        assert!(measure_due(last, &Reading { limit: 64 << 20, ..calm }, t0 + Duration::from_secs(1)), "a lowered limit");
    }

    #[test]
    fn peaks_are_known_once_they_hold_under_load() {
        let t0 = Instant::now();
        let rose = Some((t0, 100, 8 << 20));
        assert!(!peaks_known(None, 1000, t0 + STEADY_TIME), "nothing measured yet");
        assert!(!peaks_known(rose, 1000, t0 + STEADY_TIME / 2), "not held long enough");
        assert!(!peaks_known(rose, 100 + STEADY_REQUESTS - 1, t0 + STEADY_TIME), "held while idle is not known");
        assert!(peaks_known(rose, 100 + STEADY_REQUESTS, t0 + STEADY_TIME));
        let early = Some((t0, 0, 8 << 20));
        assert!(!peaks_known(early, WARM_REQUESTS - 1, t0 + STEADY_TIME), "fewer than {WARM_REQUESTS} requests");
    }

    #[test]
    fn a_count_does_not_flap_on_a_megabytes_change() {
        let m = 1 << 20;
        let www = PoolNeeds { fixed: 20 * m, per_child: 10 * m, ceiling: 64 };
        let counts = |available: u64| {
            let (fits, roomy) = counts_in(available, &[www]);
            (fits[0], roomy[0])
        };
        // 4 children fit in 60-69 MB, 5 in 70-79 MB: the count moves to 5
        // only with a quarter of a child to spare (72.5 MB), and back to 4
        // only once 5 no longer fit, not as the figures move by a
        // megabyte either way of 70.
        let mut have = 4;
        for (available, kept) in [(60, 4), (69, 4), (71, 4), (69, 4), (71, 4), (73, 5), (71, 5), (70, 5), (69, 4), (71, 4)] {
            let (fits, roomy) = counts(available * m);
            have = settle(have, fits, roomy, false);
            assert_eq!(have, kept, "{available} MB");
        }
        assert_eq!(settle(4, 6, 5, true), 6, "a first count is what fits");
    }

    #[test]
    fn a_count_is_that_many_children_at_their_peak() {
        let m = 1 << 20;
        // A php-fpm pool (no idle child beside the count: ondemand): the
        // master and opcache, and 5 children at 10 MB in 80 MB.
        let fpm = PoolNeeds { fixed: 25 * m, per_child: 10 * m, ceiling: 64 };
        assert_eq!(counts_in(80 * m, &[fpm]), (vec![5], vec![5]));
        assert_eq!(allowance(&fpm, 5), 75 * m);
        assert_eq!(allowance(&fpm, 0), 35 * m, "a pool always has room for one child");
        let cgi = PoolNeeds { fixed: 0, per_child: 10 * m, ceiling: 64 };
        assert_eq!((counts_in(80 * m, &[cgi]).0, allowance(&cgi, 3)), (vec![8], 30 * m));
    }
}
