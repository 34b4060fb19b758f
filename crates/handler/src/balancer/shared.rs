//! What every child knows of the balancers' members, in one shared
//! mapping of atomics: each member's status (as configured, then as the
//! balancer-manager, connect errors and health checks change it), its
//! byrequests credit, requests in progress, bytes moved and times elected;
//! a lock per balancer for byrequests' read-modify-write over all its
//! members; and the health checker's lease.
//!
//! Times are CLOCK_MONOTONIC milliseconds: one clock for every process.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::*};

use warren_config::balancer::MemberStatus;
use warren_shm::SharedMemory;

const DISABLED: u32 = 1;
const DRAIN: u32 = 2;
const STANDBY: u32 = 4;
const IGNORE_ERRORS: u32 = 8;
const STOPPED: u32 = 16;
const HC_FAILED: u32 = 32;

/// One member's cell. Zeroed memory is a member up, idle, never elected.
#[repr(C)]
pub struct MemberState {
    flags: AtomicU32,
    /// Successive health checks: passes (> 0) or failures (< 0).
    hc_streak: AtomicI32,
    /// In error (a connect failed) until then; 0: not in error.
    error_until: AtomicU64,
    lb_status: AtomicI64,
    busy: AtomicU32,
    _pad: u32,
    traffic: AtomicU64,
    elected: AtomicU64,
}

/// The health checker's lease: the child holding it and when it last
/// said so.
#[repr(C)]
struct Lease {
    pid: AtomicU32,
    _pad: u32,
    beat: AtomicU64,
}

/// Tries after which byrequests' lock is taken to be held by a child that
/// died (a live holder keeps it for a few additions).
const STALE_LOCK_SPINS: u32 = 100_000;

pub struct SharedState {
    memory: SharedMemory,
    /// Index of each balancer's first member.
    first: Vec<usize>,
    balancers: usize,
}

pub fn now_ms() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| t.tv_sec() as u64 * 1000 + t.tv_nsec() as u64 / 1_000_000)
}

impl SharedState {
    pub fn new(members: &[usize]) -> std::io::Result<SharedState> {
        let total: usize = members.iter().sum();
        let len = Self::members_at(members.len()) + total * std::mem::size_of::<MemberState>();
        let mut first = Vec::with_capacity(members.len());
        let mut at = 0;
        for n in members {
            first.push(at);
            at += n;
        }
        Ok(SharedState { memory: SharedMemory::zeroed(len)?, first, balancers: members.len() })
    }

    /// Where the members' cells start: after the lease and one lock word
    /// per balancer, aligned for them.
    fn members_at(balancers: usize) -> usize {
        let end = std::mem::size_of::<Lease>() + balancers * 8;
        end.next_multiple_of(std::mem::align_of::<MemberState>())
    }

    pub fn member(&self, b: usize, m: usize) -> &MemberState {
        let i = self.first[b] + m;
        let at = Self::members_at(self.balancers) + i * std::mem::size_of::<MemberState>();
        // SAFETY: inside the mapping (sized for every member), aligned, and
        // zeroed memory is a valid MemberState; it lives as long as `self`.
        unsafe { &*(self.memory.base().add(at) as *const MemberState) }
    }

    fn lock_word(&self, b: usize) -> &AtomicU32 {
        // SAFETY: the lock words follow the lease, 8 bytes apart, inside the mapping.
        unsafe { &*(self.memory.base().add(std::mem::size_of::<Lease>() + b * 8) as *const AtomicU32) }
    }

    fn lease(&self) -> &Lease {
        // SAFETY: the mapping's first bytes, page-aligned.
        unsafe { &*(self.memory.base() as *const Lease) }
    }

    /// Apache's byrequests: every candidate gains its loadfactor, the one
    /// with the most credit is chosen and pays the total. Under the
    /// balancer's lock, held for these few additions.
    pub fn by_requests(&self, b: usize, candidates: &[usize], factor: impl Fn(usize) -> i64) -> usize {
        let lock = self.lock_word(b);
        let mut spins = 0;
        while lock.compare_exchange_weak(0, 1, Acquire, Relaxed).is_err() {
            // A holder killed inside these few additions (SIGKILL, the OOM
            // killer) never lets go: without a bound every balanced request
            // of every child would spin here for good. Going on without
            // the lock costs only byrequests' fairness (the credits are
            // atomics), and the store below frees the word for the others.
            spins += 1;
            if spins == STALE_LOCK_SPINS {
                break;
            }
            std::thread::yield_now();
        }
        let mut total = 0;
        let mut best = candidates[0];
        for &m in candidates {
            let s = self.member(b, m);
            let v = s.lb_status.fetch_add(factor(m), Relaxed) + factor(m);
            total += factor(m);
            if v > self.member(b, best).lb_status.load(Relaxed) {
                best = m;
            }
        }
        self.member(b, best).lb_status.fetch_sub(total, Relaxed);
        lock.store(0, Release);
        best
    }

    /// Whether this child may run the health checks now: it holds the
    /// lease, or takes it from a holder silent for `stale_ms` (one that
    /// exited). The holder's beat is renewed.
    pub fn checker_lease(&self, stale_ms: u64) -> bool {
        let me = std::process::id();
        let lease = self.lease();
        let now = now_ms();
        let holder = lease.pid.load(Acquire);
        if holder == me || ((holder == 0 || now.saturating_sub(lease.beat.load(Acquire)) > stale_ms) && lease.pid.compare_exchange(holder, me, AcqRel, Acquire).is_ok()) {
            lease.beat.store(now, Release);
            return true;
        }
        false
    }
}

impl MemberState {
    pub(super) fn configure(&self, s: &MemberStatus) {
        let bits = [(s.disabled, DISABLED), (s.drain, DRAIN), (s.hot_standby, STANDBY), (s.ignore_errors, IGNORE_ERRORS), (s.stopped, STOPPED)];
        self.flags.store(bits.iter().filter(|(on, _)| *on).fold(0, |acc, (_, bit)| acc | bit), Relaxed);
    }

    pub fn usable(&self, now: u64) -> bool {
        self.flags.load(Relaxed) & (DISABLED | STOPPED | HC_FAILED) == 0 && self.error_until.load(Relaxed) <= now
    }

    pub fn disabled(&self) -> bool {
        self.flags.load(Relaxed) & (DISABLED | STOPPED) != 0
    }

    pub fn draining(&self) -> bool {
        self.flags.load(Relaxed) & DRAIN != 0
    }

    pub fn hot_standby(&self) -> bool {
        self.flags.load(Relaxed) & STANDBY != 0
    }

    pub fn check_failed(&self) -> bool {
        self.flags.load(Relaxed) & HC_FAILED != 0
    }

    pub fn in_error(&self, now: u64) -> bool {
        self.error_until.load(Relaxed) > now
    }

    /// The balancer-manager's switches.
    pub fn set_disabled(&self, on: bool) {
        self.set_flag(DISABLED, on);
    }

    pub fn set_drain(&self, on: bool) {
        self.set_flag(DRAIN, on);
    }

    pub fn set_hot_standby(&self, on: bool) {
        self.set_flag(STANDBY, on);
    }

    fn set_flag(&self, bit: u32, on: bool) {
        if on {
            self.flags.fetch_or(bit, Relaxed);
        } else {
            self.flags.fetch_and(!bit, Relaxed);
        }
    }

    /// A connect failed: out of the election for `retry_ms` (unless `I`).
    /// True if it was not in error before (for one log line per outage).
    pub fn failed(&self, retry_ms: u64) -> bool {
        if self.flags.load(Relaxed) & IGNORE_ERRORS != 0 {
            return false;
        }
        let now = now_ms();
        self.error_until.swap(now + retry_ms.max(1), Relaxed) <= now
    }

    /// A health check's result, `needed` successive ones of a kind to
    /// change the member's state: Some(up) when it changed.
    pub fn checked(&self, passed: bool, passes: u32, fails: u32) -> Option<bool> {
        let streak = self.hc_streak.load(Relaxed);
        let streak = match (passed, streak) {
            (true, s) if s > 0 => s.saturating_add(1),
            (true, _) => 1,
            (false, s) if s < 0 => s.saturating_sub(1),
            (false, _) => -1,
        };
        self.hc_streak.store(streak, Relaxed);
        let failed = self.check_failed();
        if passed && failed && streak >= passes as i32 {
            self.set_flag(HC_FAILED, false);
            // Back: the error state of a refused connect ends with it.
            self.error_until.store(0, Relaxed);
            return Some(true);
        }
        if !passed && !failed && -streak >= fails as i32 {
            self.set_flag(HC_FAILED, true);
            return Some(false);
        }
        None
    }

    pub fn busy(&self) -> u32 {
        self.busy.load(Relaxed)
    }

    pub fn traffic(&self) -> u64 {
        self.traffic.load(Relaxed)
    }

    pub fn elected(&self) -> u64 {
        self.elected.load(Relaxed)
    }

    pub(super) fn began(&self) {
        self.busy.fetch_add(1, Relaxed);
        self.elected.fetch_add(1, Relaxed);
    }

    pub(super) fn ended(&self) {
        // Never below zero, whatever a crashed child left.
        let _ = self.busy.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    pub(super) fn moved(&self, bytes: u64) {
        self.traffic.fetch_add(bytes, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_left_by_a_dead_child_is_not_waited_on_for_good() {
        let state = std::sync::Arc::new(SharedState::new(&[2]).unwrap());
        // As a child killed between taking the lock and freeing it leaves it.
        state.lock_word(0).store(1, Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        let electing = state.clone();
        std::thread::spawn(move || tx.send(electing.by_requests(0, &[0, 1], |_| 1)).unwrap());
        let chosen = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("byrequests waited for good on a dead holder's lock");
        assert!(chosen < 2);
        assert_eq!(state.lock_word(0).load(Relaxed), 0, "the word is freed for the others");
    }
}
