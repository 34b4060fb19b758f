//! The memory that sizes pools with `pm.max_children auto` (in `fpm`) and
//! the server's children with `MaxRequestWorkers auto` (in `mpm`): the budget
//! ([`Budget`]: MemoryBudget, else the limit of warren's memory cgroup, v2
//! or v1, else the machine's memory), what is charged against it now
//! ([`Reading`]), and each process's share of it ([`Usage`], from
//! `/proc/PID/smaps_rollup`). [`fit`] turns the figures into counts.
//!
//! Everything is counted as a cgroup counts what it cannot reclaim:
//! anonymous memory and shared memory (rss + shmem), not the page cache,
//! which the kernel drops before it kills anyone.
//!
//! A crate of its own so that `mpm` reads the same figures as the pools
//! without depending on `fpm`. [`peak`]: what a process becomes, not what
//! it was (its peak and a window over the largest). No dependencies.

use std::path::{Path, PathBuf};

pub mod peak;
pub mod reserved;
pub mod rest;

/// Where the budget comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `MemoryBudget`: warren's own processes and its pools.
    Directive,
    /// The memory cgroup warren runs in (its directory): everything in it.
    CgroupV2(PathBuf),
    CgroupV1(PathBuf),
    /// No limit anywhere: the machine's memory.
    Machine,
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Source::Directive => "MemoryBudget".to_string(),
            Source::CgroupV2(d) => format!("memory.max of cgroup {}", d.display()),
            Source::CgroupV1(d) => format!("memory.limit_in_bytes of cgroup {}", d.display()),
            Source::Machine => "MemTotal".to_string(),
        }
    }

    /// The figure's name in status pages.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Directive => "MemoryBudget",
            Source::CgroupV2(_) => "cgroup v2",
            Source::CgroupV1(_) => "cgroup v1",
            Source::Machine => "machine",
        }
    }
}

/// What is known of the memory at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub limit: u64,
    /// What the limit charges and cannot drop by every process it covers:
    /// anonymous memory, shared memory, and the file pages mapped into
    /// processes (their programs and libraries, which the stack cannot run
    /// without). None for MemoryBudget, which covers warren's processes
    /// only (they are measured one by one).
    pub charged: Option<u64>,
    /// Pools stop growing: the kernel reports tasks waiting for memory
    /// (PSI), or the charge is within the last 5 % of the limit.
    pub pressure: bool,
    /// Pools shrink: the charge has eaten into the last 5 % of the limit,
    /// a process was OOM-killed under it since the last reading, or every
    /// task stalled on memory for a tenth of the time since then.
    pub short: Option<&'static str>,
}

#[derive(Clone, Debug)]
pub struct Budget {
    pub source: Source,
    directive: Option<u64>,
    /// The kernel's counters at the last reading, to see what happened since.
    last: Counters,
}

/// Cumulative counters: PSI stall times (microseconds) and OOM kills.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    at: Option<std::time::Instant>,
    some_us: u64,
    full_us: u64,
    oom_kills: u64,
}

/// A cgroup limit this high is none (v1 writes "no limit" as the largest
/// page-aligned number).
const UNLIMITED: u64 = 1 << 62;

impl Budget {
    /// The budget for this process: `directive` (MemoryBudget) if set, else
    /// its memory cgroup's limit if it has one, else the machine's memory.
    pub fn find(directive: Option<u64>) -> Budget {
        let source = match directive {
            Some(_) => Source::Directive,
            None => cgroup_of_self().unwrap_or(Source::Machine),
        };
        Budget { source, directive, last: Counters::default() }
    }

    /// What is known now, less what is reserved ([`reserved`]).
    pub fn read(&mut self) -> Reading {
        reserved::apply(self.read_whole())
    }

    /// What the budget's charge holds besides `part` (the pools' cgroups'
    /// charges), read as one moment ([`rest::less_part`]), less what the
    /// reservation's entries hold ([`reserved`]): None where the budget
    /// has no charge of its own (MemoryBudget). The whole is read first
    /// (see [`rest`] for why).
    pub fn charged_besides(&self, part: impl FnMut() -> u64) -> Option<u64> {
        if self.source == Source::Directive {
            return None;
        }
        let besides = rest::less_part(|| self.charge_now().unwrap_or(0), part);
        Some(reserved::less_held(besides))
    }

    /// The whole's charge as the kernel counts it now: None for
    /// MemoryBudget, which has no charge of its own.
    fn charge_now(&self) -> Option<u64> {
        Some(match &self.source {
            Source::Directive => return None,
            Source::CgroupV2(dir) => charged_in(dir, true),
            Source::CgroupV1(dir) => charged_in(dir, false),
            Source::Machine => {
                let info = read(Path::new("/proc/meminfo"));
                meminfo(&info, "MemTotal:").saturating_sub(meminfo(&info, "MemAvailable:"))
            }
        })
    }

    fn read_whole(&mut self) -> Reading {
        let (limit, charged, psi, oom_kills) = match &self.source {
            Source::Directive => return Reading { limit: self.directive.unwrap_or(0), charged: None, pressure: false, short: None },
            Source::CgroupV2(dir) => {
                let charged = self.charge_now().unwrap_or(0);
                let events = read(&dir.join("memory.events"));
                (v2_limit(dir).unwrap_or(UNLIMITED), charged, read(&dir.join("memory.pressure")), field(&events, "oom_kill"))
            }
            Source::CgroupV1(dir) => {
                let stat = read(&dir.join("memory.stat"));
                let charged = self.charge_now().unwrap_or(0);
                let limit = match field(&stat, "hierarchical_memory_limit") {
                    0 => read(&dir.join("memory.limit_in_bytes")).trim().parse().unwrap_or(UNLIMITED),
                    l => l,
                };
                // v1 has no pressure file of its own: the unified
                // hierarchy's for this process, else the machine's.
                (limit, charged, unified_pressure(), v1_oom_kills(dir))
            }
            Source::Machine => {
                let total = meminfo(&read(Path::new("/proc/meminfo")), "MemTotal:");
                (total, self.charge_now().unwrap_or(0), read(Path::new("/proc/pressure/memory")), field(&read(Path::new("/proc/vmstat")), "oom_kill"))
            }
        };
        let now = Counters { at: Some(std::time::Instant::now()), some_us: psi_total(&psi, "some"), full_us: psi_total(&psi, "full"), oom_kills };
        let stalled = |share: fn(&Counters) -> u64| match (self.last.at, now.at) {
            (Some(a), Some(b)) => {
                let elapsed = b.duration_since(a).as_micros() as u64;
                elapsed > 0 && share(&now).saturating_sub(share(&self.last)) * 100 >= elapsed * PSI_PRESSURE
            }
            _ => false,
        };
        let short = if short(charged, limit) {
            Some("the charge is within 5 % of the limit")
        } else if self.last.at.is_some() && now.oom_kills > self.last.oom_kills {
            Some("the kernel OOM-killed a process under the limit")
        } else if stalled(|c| c.full_us) {
            Some("all tasks stalled waiting for memory (PSI full)")
        } else {
            None
        };
        let pressure = short.is_some() || near(charged, limit) || stalled(|c| c.some_us);
        self.last = now;
        Reading { limit, charged: Some(charged), pressure, short }
    }
}

/// What cgroup `dir` (and those below it) is charged and cannot drop:
/// anonymous memory, shared memory, and mapped files (mapped shared
/// memory is in both: counted once).
pub fn charged_in(dir: &Path, v2: bool) -> u64 {
    let stat = read(&dir.join("memory.stat"));
    let (anon, shmem, mapped) = if v2 { ("anon", "shmem", "file_mapped") } else { ("total_rss", "total_shmem", "total_mapped_file") };
    field(&stat, anon) + field(&stat, shmem) + field(&stat, mapped).saturating_sub(field(&stat, shmem))
}

/// OOM kills under v1 cgroup `dir`: its own and those below it (the
/// pools' cgroups), where v1 counts a kill only in the cgroup whose limit
/// it was for.
fn v1_oom_kills(dir: &Path) -> u64 {
    let below: u64 = std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| v1_oom_kills(&e.path())).sum();
    field(&read(&dir.join("memory.oom_control")), "oom_kill") + below
}

/// Share of the time since the last reading, in percent, in which some
/// task waited for memory, from which warren stops growing its pools (and
/// in which all did, from which it shrinks them).
const PSI_PRESSURE: u64 = 10;

/// The charge has eaten into the last twentieth of the limit: the budget's
/// headroom ([`headroom`]).
fn short(charged: u64, limit: u64) -> bool {
    charged >= limit.saturating_sub(headroom(limit))
}

fn near(charged: u64, limit: u64) -> bool {
    charged >= limit / 10 * 9
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `name value` in a memory.stat.
fn field(stat: &str, name: &str) -> u64 {
    stat.lines().find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')).and_then(|v| v.trim().parse().ok())).unwrap_or(0)
}

/// `Name:   123 kB` in /proc/meminfo, in bytes.
fn meminfo(info: &str, name: &str) -> u64 {
    info.lines().find_map(|l| l.strip_prefix(name).and_then(|r| r.split_whitespace().next()).and_then(|v| v.parse::<u64>().ok())).map_or(0, |kb| kb * 1024)
}

/// `total=` of the `some` or `full` line of a PSI file, in microseconds.
fn psi_total(text: &str, kind: &str) -> u64 {
    let Some(line) = text.lines().find(|l| l.strip_prefix(kind).is_some_and(|r| r.starts_with(' '))) else { return 0 };
    line.split_whitespace().find_map(|f| f.strip_prefix("total=")).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The memory.pressure of this process's cgroup in the unified (v2)
/// hierarchy, which accounts stalls even where the memory controller is
/// v1's; else the machine's.
fn unified_pressure() -> String {
    let own = read(Path::new("/proc/self/cgroup"));
    let rel = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/").trim_start_matches('/').to_string();
    for root in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
        let text = read(&Path::new(root).join(&rel).join("memory.pressure"));
        if !text.is_empty() {
            return text;
        }
    }
    read(Path::new("/proc/pressure/memory"))
}

/// The memory cgroup this process is in, if it has a limit: cgroup v2's
/// unified hierarchy, else v1's memory controller.
fn cgroup_of_self() -> Option<Source> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() && Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            let dir = Path::new("/sys/fs/cgroup").join(rel);
            if v2_limit(&dir).is_some_and(|l| l < UNLIMITED) {
                return Some(Source::CgroupV2(dir));
            }
        }
        if controllers.split(',').any(|c| c == "memory") {
            let dir = Path::new("/sys/fs/cgroup/memory").join(rel);
            let limit = field(&read(&dir.join("memory.stat")), "hierarchical_memory_limit");
            if limit > 0 && limit < UNLIMITED {
                return Some(Source::CgroupV1(dir));
            }
        }
    }
    None
}

/// The lowest memory.max of a v2 cgroup and its parents (None: no file).
fn v2_limit(dir: &Path) -> Option<u64> {
    let mut lowest = None;
    for d in dir.ancestors().take_while(|d| d.starts_with("/sys/fs/cgroup")) {
        match read(&d.join("memory.max")).trim() {
            "" => {}
            "max" => lowest = lowest.or(Some(UNLIMITED)),
            v => {
                if let Ok(n) = v.parse::<u64>() {
                    lowest = Some(lowest.map_or(n, |l: u64| l.min(n)));
                }
            }
        }
    }
    lowest
}

/// One process's share of memory, in bytes, as its smaps_rollup gives it:
/// the proportional shares of its anonymous and its shared-memory pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub anon: u64,
    pub shmem: u64,
}

impl Usage {
    pub fn of(pid: i32) -> Option<Usage> {
        Usage::parse(&std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?)
    }

    fn parse(rollup: &str) -> Option<Usage> {
        let kb = |name: &str| rollup.lines().find_map(|l| l.strip_prefix(name).and_then(|r| r.split_whitespace().next()).and_then(|v| v.parse::<u64>().ok())).map(|k| k * 1024);
        match (kb("Pss_Anon:"), kb("Pss_Shmem:")) {
            (Some(anon), Some(shmem)) => Some(Usage { anon, shmem }),
            // Kernels before 5.8 do not split it: all of it counts as the process's own.
            _ => Some(Usage { anon: kb("Pss:")?, shmem: 0 }),
        }
    }

    pub fn total(&self) -> u64 {
        self.anon + self.shmem
    }
}

/// The pids of `pid`'s children (a php-fpm master's).
pub fn children_of(pid: i32) -> Vec<i32> {
    read(Path::new(&format!("/proc/{pid}/task/{pid}/children"))).split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

/// One auto-sized pool's figures, in bytes: what it costs whatever its
/// number of children, what each child adds, and its ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolNeeds {
    pub fixed: u64,
    pub per_child: u64,
    pub ceiling: u32,
}

/// The children each pool gets out of `available` bytes: each its fixed
/// part and one child first (a pool with none would answer nothing), then
/// one child at a time to each pool in turn while one more fits.
pub fn fit(available: u64, pools: &[PoolNeeds]) -> Vec<u32> {
    let mut left = available.saturating_sub(pools.iter().map(|p| p.fixed + p.per_child).sum());
    let mut counts = vec![1u32; pools.len()];
    loop {
        let mut grew = false;
        for (p, n) in pools.iter().zip(counts.iter_mut()) {
            if *n < p.ceiling && p.per_child <= left {
                left -= p.per_child;
                *n += 1;
                grew = true;
            }
        }
        if !grew {
            return counts;
        }
    }
}

/// What the budget keeps free under `limit`: a twentieth, where the pools
/// start to shrink (a budget that planned into it would shrink itself).
/// The charge leaves out what the kernel may still need beside it: the
/// page cache that is not mapped (dropped before anyone is killed) and
/// its own memory for the processes (page tables, sockets).
pub fn headroom(limit: u64) -> u64 {
    limit / 20
}

pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_fill_the_budget_in_turn() {
        let m = 1 << 20;
        let www = PoolNeeds { fixed: 20 * m, per_child: 10 * m, ceiling: 64 };
        assert_eq!(fit(100 * m, &[www]), vec![8]);
        assert_eq!(fit(5 * m, &[www]), vec![1], "a pool always gets one child");
        assert_eq!(fit(1000 * m, &[www]), vec![64], "never past the ceiling");
        let small = PoolNeeds { fixed: 0, per_child: 5 * m, ceiling: 3 };
        // 100 - 30 - 5 = 65 left: www +1 small +1, www +1 small +1 (ceiling), then www alone.
        assert_eq!(fit(100 * m, &[www, small]), vec![6, 3]);
    }

    #[test]
    fn smaps_rollup() {
        let r = "55d0c0000000-7ffd5a5f5000 ---p 00000000 00:00 0 [rollup]\nRss:  20000 kB\nPss:  12000 kB\nPss_Dirty: 9000 kB\nPss_Anon:  8000 kB\nPss_File:  2000 kB\nPss_Shmem: 2000 kB\n";
        assert_eq!(Usage::parse(r), Some(Usage { anon: 8000 * 1024, shmem: 2000 * 1024 }));
        assert_eq!(Usage::parse("Rss: 10 kB\nPss: 7 kB\n"), Some(Usage { anon: 7 * 1024, shmem: 0 }));
        assert_eq!(Usage::parse(""), None);
    }

    #[test]
    fn stat_files() {
        let stat = "cache 100\nrss 5\ntotal_rss 4096\ntotal_shmem 1024\nhierarchical_memory_limit 134217728\n";
        assert_eq!(field(stat, "total_rss") + field(stat, "total_shmem"), 5120);
        assert_eq!(field(stat, "rss"), 5);
        assert_eq!(field(stat, "hierarchical_memory_limit"), 128 << 20);
        assert_eq!(meminfo("MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n", "MemAvailable:"), 1000 * 1024);
        let psi = "some avg10=12.50 avg60=1.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n";
        assert_eq!((psi_total(psi, "some"), psi_total(psi, "full"), psi_total("", "some")), (5, 3, 0));
        assert!(near(91, 100) && !near(89, 100));
        // The budget plans up to where the pools start shrinking, not into it.
        let limit = 128 << 20;
        assert!(!short(limit - headroom(limit) - 1, limit) && short(limit - headroom(limit), limit));
    }

    #[test]
    fn this_process_has_a_budget_and_a_size() {
        let mut b = Budget::find(None);
        let r = b.read();
        assert!(r.limit > 0 && r.charged.is_some(), "{:?}: {r:?}", b.source);
        assert!(Usage::of(std::process::id() as i32).is_some_and(|u| u.anon > 0));
        assert_eq!(Budget::find(Some(64 << 20)).read(), Reading { limit: 64 << 20, charged: None, pressure: false, short: None });
    }
}
