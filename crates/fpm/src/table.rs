//! The pools' shared-memory table, leases on their children, and how a
//! child asks for a user's pool at run time and finds it (the records in
//! [`crate::asked`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use warren_pool_api::{MemoryBudget, PoolBusy, PoolDispatch, PoolLease, PoolMemory, PoolStatus, ProcessStatus};
use warren_shm::futex::{futex_wait, futex_wake};
use warren_shm::SharedMemory;

use crate::asked::{self, AskedPool, ASKED, CLAIMED, FREE, READY, REFUSED, RUNTIME_POOLS, USER_WORDS};
use crate::shape::PoolShape;

/// A child slot's state.
pub const EMPTY: u32 = 0;
pub const IDLE: u32 = 1;
pub const BUSY: u32 = 2;
/// Served its pm.max_requests, or idle too long: the parent stops it.
pub const RETIRING: u32 = 3;

/// One child slot. All zero is an empty slot.
#[repr(C)]
#[derive(Default)]
pub struct ChildSlot {
    pub state: AtomicU32,
    pub pid: AtomicI32,
    /// Requests served by the current process.
    pub requests: AtomicU32,
    /// The server process whose request the child is busy with (0: none):
    /// one killed mid-request never drops its lease, and its child would
    /// stay busy for good ([`Table::orphaned`]).
    holder: AtomicI32,
    /// When the current request began, or the child became idle (ms since the table's start).
    pub since_ms: AtomicU64,
    /// Seconds since the epoch when the current process started.
    pub started: AtomicU64,
    /// The last request's duration in microseconds.
    pub last_duration_us: AtomicU64,
    /// Set when the parent killed the child for request_terminate_timeout.
    pub terminated: AtomicU32,
    /// Set by the parent for a child to retire when its request is done
    /// (the memory budget shrank, or the child outgrew what it was counted at), as if it had
    /// served pm.max_requests.
    pub retire: AtomicU32,
    /// The current or last request's URI (its first 128 bytes), for the status page.
    uri: [AtomicU64; 16],
    uri_len: AtomicU32,
}

impl ChildSlot {
    fn set_uri(&self, uri: &[u8]) {
        let uri = &uri[..uri.len().min(128)];
        for (i, word) in self.uri.iter().enumerate() {
            let mut b = [0u8; 8];
            let from = (i * 8).min(uri.len());
            let to = (i * 8 + 8).min(uri.len());
            b[..to - from].copy_from_slice(&uri[from..to]);
            word.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.uri_len.store(uri.len() as u32, Ordering::Relaxed);
    }

    pub fn uri(&self) -> String {
        let mut b: Vec<u8> = self.uri.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect();
        b.truncate(self.uri_len.load(Ordering::Relaxed) as usize);
        String::from_utf8_lossy(&b).into_owned()
    }
}

/// A pool's counters, as php-fpm's status page shows them.
#[repr(C)]
pub struct PoolCounters {
    pub accepted: AtomicU64,
    /// Requests waiting for a child now, and the most ever.
    pub waiting: AtomicU32,
    pub max_waiting: AtomicU32,
    pub max_active: AtomicU32,
    pub max_children_reached: AtomicU32,
    pub slow_requests: AtomicU32,
    /// Set by a request that found no idle child (ondemand, dynamic).
    pub wanted: AtomicU32,
    /// Bumped whenever a child becomes idle; waiting requests sleep on it (a futex).
    pub freed: AtomicU32,
    /// Seconds since the epoch when the pool started.
    pub started: AtomicU64,
    /// pm.max_children auto: the count in force (0: a fixed count), and the
    /// figures it was made from, in bytes: what each child adds, what the
    /// pool costs whatever its size, and what it uses now.
    pub auto_children: AtomicU32,
    pub per_child: AtomicU64,
    pub fixed: AtomicU64,
    pub used: AtomicU64,
    /// The largest child peak of the sizing window (before the margin),
    /// the pool's cgroup limit (0: none), children replaced for having
    /// outgrown what a child was counted at.
    pub peak_child: AtomicU64,
    pub cgroup_limit: AtomicU64,
    /// A php-fpm pool's pids limit, following its count (0: none; see `manager::tasks`).
    pub tasks_limit: AtomicU64,
    pub recycled: AtomicU32,
    /// The child peak the pool's last run learned, while the count is made
    /// with it (0: none).
    pub remembered_peak: AtomicU64,
    /// Requests a php-fpm pool with `pm.max_children auto` is serving now:
    /// warren sends it no more than its count allows (see [`crate::shape::PhpFpmShape::capped`]).
    pub in_flight: AtomicU32,
    /// The server processes holding those places, one pid an entry (0:
    /// free): a process killed with a request under way (OOM killer,
    /// SIGKILL) never gives its place back, and would otherwise shrink
    /// the pool for good; the parent's once-a-second pass gives back the
    /// places of processes gone ([`Table::reclaim_places`]).
    holders: [AtomicI32; PLACE_HOLDERS],
}

/// Places of a capped pool whose holder is recorded (more at once, were
/// a count ever that high, are not recovered from a killed holder).
const PLACE_HOLDERS: usize = 256;

/// The memory budget's figures, in bytes, as the last sizing pass saw them
/// (for the status pages; all zero until a pool is sized).
#[repr(C)]
#[derive(Default)]
pub struct BudgetFigures {
    pub limit: AtomicU64,
    pub headroom: AtomicU64,
    /// What the rest is given (its peak and a margin), and uses now:
    /// other processes under the same limit, warren's own.
    pub others: AtomicU64,
    pub others_now: AtomicU64,
    /// 1 MemoryBudget, 2 cgroup v2, 3 cgroup v1, 4 the machine.
    pub source: AtomicU32,
    pub pressure: AtomicU32,
    /// The pools' cgroups: `cgroup::describe_code`.
    pub cgroups: AtomicU32,
    /// Passes that measured the pools and acted on it, since start: what
    /// a reader (a test) waits on to know warren has seen what it saw.
    pub passes: AtomicU64,
}

pub const SOURCE_NAMES: [&str; 5] = ["", "MemoryBudget", "cgroup v2", "cgroup v1", "machine"];

/// Room in the shared table: pools, and child slots of all pools together.
/// Fixed for the parent's life so that a graceful restart can lay out new
/// pools beside the running ones in the same memory.
pub const MAX_POOLS: usize = 256;
pub const MAX_SLOTS: usize = 4096;

// The budget's figures follow the slots: they must start 8-byte aligned.
const _: () = assert!((MAX_POOLS * std::mem::size_of::<PoolCounters>() + MAX_SLOTS * std::mem::size_of::<ChildSlot>()).is_multiple_of(8));

/// Where the records of users' pools asked for at run time begin: after
/// the budget's figures, which keep them 8-byte aligned.
const ASKED_OFFSET: usize = MAX_POOLS * std::mem::size_of::<PoolCounters>() + MAX_SLOTS * std::mem::size_of::<ChildSlot>() + std::mem::size_of::<BudgetFigures>();
const _: () = assert!(ASKED_OFFSET.is_multiple_of(8));

/// The shared memory itself, and the instant its clock counts from.
struct Mapping {
    memory: SharedMemory,
    epoch: Instant,
}

/// A view of the shared table: the memory, and the pools laid out in it as
/// one generation of the configuration has them. Mapped by the parent
/// before it forks; every process then sees the same memory.
pub struct Table {
    map: std::sync::Arc<Mapping>,
    pub pools: Vec<PoolShape>,
    /// Written to wake the parent (a request found no idle child).
    wake: Option<std::os::fd::RawFd>,
}

impl Table {
    pub fn new(wake: Option<std::os::fd::RawFd>) -> std::io::Result<Table> {
        let len = ASKED_OFFSET + RUNTIME_POOLS * std::mem::size_of::<AskedPool>();
        let map = Mapping { memory: SharedMemory::zeroed(len)?, epoch: Instant::now() };
        Ok(Table { map: std::sync::Arc::new(map), pools: Vec::new(), wake })
    }

    /// The same memory with another layout of pools.
    pub fn view(&self, pools: Vec<PoolShape>) -> Table {
        Table { map: self.map.clone(), pools, wake: self.wake }
    }

    pub fn pool_index(&self, name: &str) -> Option<usize> {
        self.pools.iter().position(|p| p.name == name)
    }

    pub fn counters_at(&self, index: usize) -> &PoolCounters {
        assert!(index < MAX_POOLS);
        // SAFETY: in bounds by the assert and the layout in `new`.
        unsafe { &*(self.map.memory.base() as *const PoolCounters).add(index) }
    }

    pub fn slot_at(&self, index: usize) -> &ChildSlot {
        assert!(index < MAX_SLOTS);
        // SAFETY: in bounds by the assert and the layout in `new`.
        unsafe {
            let first = self.map.memory.base().add(MAX_POOLS * std::mem::size_of::<PoolCounters>()) as *const ChildSlot;
            &*first.add(index)
        }
    }

    pub fn budget(&self) -> &BudgetFigures {
        // SAFETY: the last part of the mapping, by the layout in `new`;
        // ChildSlot's size keeps it 8-byte aligned.
        unsafe { &*(self.map.memory.base().add(MAX_POOLS * std::mem::size_of::<PoolCounters>() + MAX_SLOTS * std::mem::size_of::<ChildSlot>()) as *const BudgetFigures) }
    }

    /// The record of a user's pool asked for at run time (see [`crate::asked`]).
    pub fn asked_at(&self, index: usize) -> &AskedPool {
        assert!(index < RUNTIME_POOLS);
        // SAFETY: in bounds by the assert and the layout in `new`.
        unsafe { &*(self.map.memory.base().add(ASKED_OFFSET) as *const AskedPool).add(index) }
    }

    pub fn counters(&self, pool: usize) -> &PoolCounters {
        self.counters_at(self.pools[pool].counters)
    }

    pub fn slot(&self, pool: usize, slot: usize) -> &ChildSlot {
        assert!(slot < self.pools[pool].max_children);
        self.slot_at(self.pools[pool].first_slot + slot)
    }

    pub fn now_ms(&self) -> u64 {
        self.map.epoch.elapsed().as_millis() as u64
    }

    /// A php-fpm pool without a running master (slot 0 holds its pid).
    fn php_fpm_down(&self, pool: usize) -> bool {
        self.pools[pool].php_fpm.is_some() && self.slot(pool, 0).pid.load(Ordering::Relaxed) == 0
    }

    /// Children of the pool by state: (idle, busy, all running).
    pub fn census(&self, pool: usize) -> (usize, usize, usize) {
        let (mut idle, mut busy, mut all) = (0, 0, 0);
        for s in 0..self.pools[pool].max_children {
            match self.slot(pool, s).state.load(Ordering::Acquire) {
                IDLE => idle += 1,
                BUSY => busy += 1,
                _ => {}
            }
            if self.slot(pool, s).pid.load(Ordering::Relaxed) > 0 {
                all += 1;
            }
        }
        (idle, busy, all)
    }

    fn try_take(&self, pool: usize, uri: &[u8]) -> Option<usize> {
        for s in 0..self.pools[pool].max_children {
            let slot = self.slot(pool, s);
            if slot.state.compare_exchange(IDLE, BUSY, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                slot.holder.store(std::process::id() as i32, Ordering::Release);
                slot.since_ms.store(self.now_ms(), Ordering::Relaxed);
                slot.terminated.store(0, Ordering::Relaxed);
                slot.set_uri(uri);
                return Some(s);
            }
        }
        None
    }

    /// A place among the requests capped php-fpm pool `pool` serves at
    /// once, if one is free: as many as its count (its master keeps no
    /// idle child: `pm = ondemand`).
    /// Some(the holder entry taken, if one was free) when a place is.
    fn take_place(&self, pool: usize) -> Option<Option<usize>> {
        let c = self.counters(pool);
        let places = c.auto_children.load(Ordering::Acquire).max(1);
        c.in_flight.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < places).then_some(n + 1)).ok()?;
        let me = std::process::id() as i32;
        Some(c.holders.iter().position(|h| h.compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed).is_ok()))
    }

    /// Gives back a place of capped pool `pool` (and its holder entry).
    fn give_back_place(&self, pool: usize, holder: Option<usize>) {
        let c = self.counters(pool);
        if let Some(h) = holder {
            c.holders[h].store(0, Ordering::Release);
        }
        c.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.child_freed(pool, 1);
    }

    /// The places of capped pools held by processes that are gone (killed
    /// with a request under way, so that their leases were never dropped)
    /// are given back. Run by the parent once a second.
    pub fn reclaim_places(&self) {
        for pool in 0..self.pools.len() {
            if !self.pools[pool].php_fpm.as_ref().is_some_and(|f| f.capped) {
                continue;
            }
            let c = self.counters(pool);
            for h in &c.holders {
                let pid = h.load(Ordering::Acquire);
                if warren_shm::process_gone(pid) && h.compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                    self.give_back_place(pool, None);
                }
            }
        }
    }

    /// The child in `slot` of warren's own pool `pool` is busy with the
    /// request of a server process that is gone (killed with the request
    /// under way, so that its lease was never dropped): it is marked
    /// retiring, never handed out again, and the holder's pid returned for
    /// the parent to stop the child (nobody reads its answer). A holder is
    /// recorded only while its lease lasts, so a pid seen here is the one
    /// the busy state belongs to.
    pub fn orphaned(&self, pool: usize, slot: usize) -> Option<i32> {
        let s = self.slot(pool, slot);
        let holder = s.holder.load(Ordering::Acquire);
        (warren_shm::process_gone(holder) && s.state.compare_exchange(BUSY, RETIRING, Ordering::AcqRel, Ordering::Relaxed).is_ok()).then(|| {
            s.holder.store(0, Ordering::Release);
            holder
        })
    }

    /// A child's slot emptied (its process ended, or its pool went): the
    /// state it was in.
    pub(crate) fn empty_slot(slot: &ChildSlot) -> u32 {
        let was = slot.state.swap(EMPTY, Ordering::AcqRel);
        slot.holder.store(0, Ordering::Release);
        slot.pid.store(0, Ordering::Relaxed);
        was
    }

    /// A pool's counters made new, for a pool laid out in their place.
    pub(crate) fn clear_places(&self, counters: usize) {
        let c = self.counters_at(counters);
        c.in_flight.store(0, Ordering::Relaxed);
        c.holders.iter().for_each(|h| h.store(0, Ordering::Relaxed));
    }

    /// A child of the pool became idle: wakes up to `n` waiting requests.
    pub fn child_freed(&self, pool: usize, n: i32) {
        let c = self.counters(pool);
        c.freed.fetch_add(1, Ordering::AcqRel);
        if c.waiting.load(Ordering::Acquire) > 0 {
            futex_wake(&c.freed, n);
        }
    }

    pub(crate) fn poke_parent(&self) {
        if let Some(fd) = self.wake {
            // SAFETY: writing one byte from a valid buffer; a full pipe just drops it.
            unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
        }
    }
}

/// A child of a pool, taken for one request.
pub struct Lease {
    table: std::sync::Arc<Table>,
    pool: usize,
    slot: usize,
}

impl PoolLease for Lease {
    fn socket(&self) -> &std::path::Path {
        &self.table.pools[self.pool].sockets[self.slot]
    }

    fn terminated(&self) -> bool {
        self.table.slot(self.pool, self.slot).terminated.load(Ordering::Acquire) != 0
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let t = &self.table;
        let s = t.slot(self.pool, self.slot);
        let n = s.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let began = s.since_ms.load(Ordering::Relaxed);
        let now = t.now_ms();
        s.last_duration_us.store(now.saturating_sub(began) * 1000, Ordering::Relaxed);
        s.since_ms.store(now, Ordering::Relaxed);
        let max = t.pools[self.pool].max_requests;
        // Before the state: a holder recorded belongs to a busy state.
        let _ = s.holder.compare_exchange(std::process::id() as i32, 0, Ordering::AcqRel, Ordering::Relaxed);
        // Only a busy child goes back to idle: the parent may have taken it
        // (request_terminate_timeout) meanwhile.
        let next = if max > 0 && n >= max || s.retire.load(Ordering::Acquire) != 0 { RETIRING } else { IDLE };
        if s.state.compare_exchange(BUSY, next, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            if next == RETIRING {
                t.poke_parent();
            } else {
                t.child_freed(self.pool, 1);
            }
        }
    }
}

/// A request for a php-fpm pool: nothing is taken here; php-fpm's
/// children accept it from the pool's socket when one is free.
struct QueuedLease {
    table: std::sync::Arc<Table>,
    pool: usize,
    started: Instant,
    terminate_after: Option<Duration>,
    /// It holds a place of a capped pool (given back when dropped), and
    /// the entry naming this process as its holder, if one was free.
    capped: Option<Option<usize>>,
}

impl PoolLease for QueuedLease {
    fn socket(&self) -> &std::path::Path {
        &self.table.pools[self.pool].sockets[0]
    }

    /// A child lost after request_terminate_timeout is one php-fpm killed.
    fn terminated(&self) -> bool {
        self.terminate_after.is_some_and(|t| self.started.elapsed() >= t)
    }
}

impl Drop for QueuedLease {
    fn drop(&mut self) {
        if let Some(holder) = self.capped {
            self.table.give_back_place(self.pool, holder);
        }
    }
}

/// Leases for the handler: `pool:NAME` requests get their child here.
pub struct Dispatch {
    /// The pools as this process knows them: its configuration's, and
    /// users' pools made since (see [`crate::asked`]), added when first used.
    known: RwLock<Arc<Table>>,
    /// The pools' sockets' directory, where a pool made since has its own.
    socket_dir: PathBuf,
}

impl Dispatch {
    pub fn new(table: Arc<Table>, socket_dir: PathBuf) -> Dispatch {
        Dispatch { known: RwLock::new(table), socket_dir }
    }

    fn table(&self) -> Arc<Table> {
        self.known.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The table as this process knows it, and the pool's place in it.
    fn find(&self, pool: &str) -> Option<(Arc<Table>, usize)> {
        let t = self.table();
        if let Some(p) = t.pool_index(pool) {
            return Some((t, p));
        }
        let shape = ready_shape(&t, pool, &self.socket_dir)?;
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        if known.pool_index(pool).is_none() {
            let mut pools = known.pools.clone();
            pools.push(shape);
            *known = Arc::new(known.view(pools));
        }
        let p = known.pool_index(pool)?;
        Some((known.clone(), p))
    }

    /// The pool, once the parent made it if it was asked for (waiting at
    /// most until `deadline`); None if it is unknown, refused or still
    /// being made at the deadline.
    fn find_or_wait(&self, pool: &str, deadline: Instant) -> Option<(Arc<Table>, usize)> {
        loop {
            if let Some(found) = self.find(pool) {
                return Some(found);
            }
            let t = self.table();
            let a = pending(&t, pool)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            futex_wait(&a.state, asked::ASKED, left.min(Duration::from_millis(50)));
        }
    }
}

impl PoolDispatch for Dispatch {
    fn knows(&self, pool: &str) -> bool {
        self.find(pool).is_some() || pending(&self.table(), pool).is_some()
    }

    fn ask_user_pool(&self, user: &str) -> Option<String> {
        let pool = warren_config::mass::user_pool_name(user);
        if self.table().pool_index(&pool).is_some() || ask(&self.table(), user) {
            return Some(pool);
        }
        None
    }

    fn status(&self, pool: &str) -> Option<PoolStatus> {
        let (t, p) = self.find(pool)?;
        let c = t.counters(p);
        let (idle, busy, _) = t.census(p);
        let now = t.now_ms();
        let processes = (0..t.pools[p].max_children)
            .map(|s| t.slot(p, s))
            .filter(|s| s.pid.load(Ordering::Relaxed) > 0)
            .map(|s| {
                let pid = s.pid.load(Ordering::Relaxed);
                let running = s.state.load(Ordering::Acquire) == BUSY;
                let rss = std::fs::read_to_string(format!("/proc/{pid}/statm"))
                    .ok()
                    .and_then(|m| m.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
                    // SAFETY: sysconf has no preconditions.
                    .map_or(0, |pages| pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64);
                ProcessStatus {
                    pid,
                    state: if running { "Running" } else { "Idle" },
                    start_time: s.started.load(Ordering::Relaxed),
                    requests: s.requests.load(Ordering::Relaxed),
                    request_duration_us: if running {
                        now.saturating_sub(s.since_ms.load(Ordering::Relaxed)) * 1000
                    } else {
                        s.last_duration_us.load(Ordering::Relaxed)
                    },
                    request_uri: s.uri(),
                    last_request_memory: rss,
                }
            })
            .collect();
        Some(PoolStatus {
            pool: pool.to_string(),
            process_manager: t.pools[p].pm.to_string(),
            start_time: c.started.load(Ordering::Relaxed),
            accepted_conn: c.accepted.load(Ordering::Relaxed),
            listen_queue: c.waiting.load(Ordering::Relaxed),
            max_listen_queue: c.max_waiting.load(Ordering::Relaxed),
            listen_queue_len: t.pools[p].backlog,
            idle_processes: idle as u32,
            active_processes: busy as u32,
            max_active_processes: c.max_active.load(Ordering::Relaxed),
            max_children_reached: c.max_children_reached.load(Ordering::Relaxed),
            slow_requests: c.slow_requests.load(Ordering::Relaxed),
            processes,
            memory: self.memory().map(|mut m| {
                m.pools.retain(|p| p.pool == pool);
                m
            }).filter(|m| !m.pools.is_empty()),
        })
    }

    fn memory(&self) -> Option<MemoryBudget> {
        let t = &self.table();
        let b = t.budget();
        let source = *SOURCE_NAMES.get(b.source.load(Ordering::Relaxed) as usize)?;
        if source.is_empty() {
            return None;
        }
        let pools = (0..t.pools.len())
            .filter(|&p| t.counters(p).auto_children.load(Ordering::Relaxed) > 0)
            .map(|p| {
                let c = t.counters(p);
                PoolMemory {
                    pool: t.pools[p].name.clone(),
                    max_children: c.auto_children.load(Ordering::Relaxed),
                    per_child: c.per_child.load(Ordering::Relaxed),
                    fixed: c.fixed.load(Ordering::Relaxed),
                    used: c.used.load(Ordering::Relaxed),
                    peak_child: c.peak_child.load(Ordering::Relaxed),
                    cgroup_limit: c.cgroup_limit.load(Ordering::Relaxed),
                    tasks_limit: c.tasks_limit.load(Ordering::Relaxed),
                    recycled: c.recycled.load(Ordering::Relaxed),
                    remembered_peak: c.remembered_peak.load(Ordering::Relaxed),
                }
            })
            .collect();
        Some(MemoryBudget {
            source,
            limit: b.limit.load(Ordering::Relaxed),
            headroom: b.headroom.load(Ordering::Relaxed),
            others: b.others.load(Ordering::Relaxed),
            others_now: b.others_now.load(Ordering::Relaxed),
            cgroups: crate::cgroup::describe_code(b.cgroups.load(Ordering::Relaxed)),
            pressure: b.pressure.load(Ordering::Relaxed) != 0,
            passes: b.passes.load(Ordering::Relaxed),
            pools,
        })
    }

    fn join_queue(&self, pool: &str) -> Result<(), PoolBusy> {
        let Some((t, p)) = self.find(pool) else {
            // A user's pool being made: the request waits for it (and its
            // first child, which the parent starts with it).
            return if pending(&self.table(), pool).is_some() { Ok(()) } else { Err(PoolBusy::Unknown) };
        };
        if t.php_fpm_down(p) {
            return Err(PoolBusy::Unknown);
        }
        let c = t.counters(p);
        let queued = c.waiting.fetch_add(1, Ordering::AcqRel) + 1;
        if queued > t.pools[p].backlog {
            c.waiting.fetch_sub(1, Ordering::AcqRel);
            c.accepted.fetch_add(1, Ordering::Relaxed);
            return Err(PoolBusy::QueueFull);
        }
        c.max_waiting.fetch_max(queued, Ordering::Relaxed);
        c.wanted.store(1, Ordering::Release);
        t.poke_parent();
        Ok(())
    }

    fn leave_queue(&self, pool: &str) {
        if let Some((t, p)) = self.find(pool) {
            // Never below zero: a request that joined while its user's pool
            // was being made was counted nowhere.
            let _ = t.counters(p).waiting.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
    }

    fn wait_for_child(&self, pool: &str, timeout: Duration) {
        match self.find(pool) {
            Some((t, p)) => {
                let c = t.counters(p);
                futex_wait(&c.freed, c.freed.load(Ordering::Acquire), timeout);
            }
            None => {
                let t = self.table();
                match pending(&t, pool) {
                    Some(a) => futex_wait(&a.state, asked::ASKED, timeout),
                    None => std::thread::sleep(timeout),
                }
            }
        }
    }

    fn try_lease(&self, pool: &str, uri: &[u8]) -> Option<Box<dyn PoolLease>> {
        let (t, p) = self.find(pool)?;
        // No php-fpm master: join_queue says so.
        if t.php_fpm_down(p) {
            return None;
        }
        self.take(&t, p, uri)
    }

    fn lease(&self, pool: &str, uri: &[u8], wait: Duration) -> Result<Box<dyn PoolLease>, PoolBusy> {
        let deadline = Instant::now() + wait;
        let Some((t, p)) = self.find_or_wait(pool, deadline) else {
            return Err(if pending(&self.table(), pool).is_some() { PoolBusy::Timeout } else { PoolBusy::Unknown });
        };
        let t = &t;
        // A php-fpm pool without a master (one that will not start waits
        // between attempts): a 503 at once rather than a wait for a timeout.
        if t.php_fpm_down(p) {
            return Err(PoolBusy::Unknown);
        }
        if let Some(l) = self.take(t, p, uri) {
            return Ok(l);
        }
        // None idle: wait in the pool's queue, bounded by listen.backlog.
        let c = t.counters(p);
        let queued = c.waiting.fetch_add(1, Ordering::AcqRel) + 1;
        let _leave = Leave(&c.waiting);
        if queued > t.pools[p].backlog {
            c.accepted.fetch_add(1, Ordering::Relaxed);
            return Err(PoolBusy::QueueFull);
        }
        c.max_waiting.fetch_max(queued, Ordering::Relaxed);
        c.wanted.store(1, Ordering::Release);
        t.poke_parent();
        let mut seen = c.freed.load(Ordering::Acquire);
        loop {
            if let Some(l) = self.take(t, p, uri) {
                return Ok(l);
            }
            if Instant::now() >= deadline {
                c.accepted.fetch_add(1, Ordering::Relaxed);
                return Err(PoolBusy::Timeout);
            }
            // Sleep until a child is given back (or started), re-checking now
            // and then in case a wake-up went to a request that left.
            let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
            futex_wait(&c.freed, seen, left);
            seen = c.freed.load(Ordering::Acquire);
        }
    }
}

impl Dispatch {
    /// A lease for a request now, if there is one: an idle child of a
    /// php-cgi pool; for a php-fpm pool, whose children accept from its
    /// socket themselves, the request's turn (always, unless the pool is
    /// capped and as many requests as its count allows are under way).
    fn take(&self, t: &Arc<Table>, p: usize, uri: &[u8]) -> Option<Box<dyn PoolLease>> {
        let Some(fpm) = &t.pools[p].php_fpm else {
            let s = t.try_take(p, uri)?;
            return Some(self.leased(t, p, s));
        };
        let capped = match fpm.capped {
            true => Some(t.take_place(p)?),
            false => None,
        };
        t.counters(p).accepted.fetch_add(1, Ordering::Relaxed);
        Some(Box::new(QueuedLease { table: t.clone(), pool: p, started: Instant::now(), terminate_after: fpm.terminate_after, capped }))
    }

    /// Counts a request that got child `s` of pool `p`.
    fn leased(&self, t: &Arc<Table>, p: usize, s: usize) -> Box<dyn PoolLease> {
        let c = t.counters(p);
        c.accepted.fetch_add(1, Ordering::Relaxed);
        let (_, busy, _) = t.census(p);
        c.max_active.fetch_max(busy as u32, Ordering::Relaxed);
        Box::new(Lease { table: t.clone(), pool: p, slot: s })
    }
}

/// Leaves the queue whatever way the wait ends.
struct Leave<'a>(&'a AtomicU32);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The record of `user`'s pool, asked for or made, and its state.
pub fn find<'a>(table: &'a Table, user: &str) -> Option<(&'a AskedPool, u32)> {
    (0..RUNTIME_POOLS).map(|i| table.asked_at(i)).find_map(|a| {
        let state = a.state.load(Ordering::Acquire);
        (matches!(state, ASKED | READY | REFUSED) && a.user() == user).then_some((a, state))
    })
}

/// Asks the parent for `user`'s pool: true if it is made or being made,
/// false if it was refused or no record is free.
pub fn ask(table: &Table, user: &str) -> bool {
    if user.is_empty() || user.len() > USER_WORDS * 8 {
        return false;
    }
    if let Some((_, state)) = find(table, user) {
        return state != REFUSED;
    }
    for i in 0..RUNTIME_POOLS {
        let a = table.asked_at(i);
        if a.state.compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            a.set_user(user.as_bytes());
            a.since_ms.store(table.now_ms(), Ordering::Relaxed);
            a.state.store(ASKED, Ordering::Release);
            table.poke_parent();
            return true;
        }
    }
    false
}

/// The record of the user's pool named `pool`, if it was asked for and
/// the parent has not answered.
pub fn pending<'a>(table: &'a Table, pool: &str) -> Option<&'a AskedPool> {
    (0..RUNTIME_POOLS)
        .map(|i| table.asked_at(i))
        .find(|a| a.state.load(Ordering::Acquire) == ASKED && warren_config::mass::user_pool_name(&a.user()) == pool)
}

/// Where the pool named `pool` made at run time lies in the table, its
/// sockets being in `socket_dir`.
pub fn ready_shape(table: &Table, pool: &str, socket_dir: &Path) -> Option<PoolShape> {
    (0..RUNTIME_POOLS).map(|i| table.asked_at(i)).find_map(|a| {
        let serial = a.serial.load(Ordering::Acquire);
        if a.state.load(Ordering::Acquire) != READY || warren_config::mass::user_pool_name(&a.user()) != pool {
            return None;
        }
        let (first_slot, n) = (a.first_slot.load(Ordering::Relaxed) as usize, a.max_children.load(Ordering::Relaxed) as usize);
        let shape = PoolShape {
            name: pool.to_string(),
            pm: "ondemand",
            max_children: n,
            max_requests: a.max_requests.load(Ordering::Relaxed),
            backlog: a.backlog.load(Ordering::Relaxed),
            sockets: (first_slot..first_slot + n).map(|slot| socket_dir.join(format!("{pool}.{slot}.sock"))).collect(),
            counters: a.counters.load(Ordering::Relaxed) as usize,
            first_slot,
            php_fpm: None,
        };
        // Freed and reused while it was read: not this pool's place.
        let unchanged = a.serial.load(Ordering::Acquire) == serial && a.state.load(Ordering::Acquire) == READY;
        let in_bounds = shape.counters < MAX_POOLS && first_slot + n <= MAX_SLOTS;
        (unchanged && in_bounds).then_some(shape)
    })
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "asked_tests.rs"]
mod asked_tests;
