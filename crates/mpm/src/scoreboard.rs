//! The scoreboard: a shared, anonymous memory map made by the parent before
//! it forks, with one [`ProcessSlot`] per possible child (ServerLimit) and
//! one [`ThreadSlot`] per possible serving thread (ServerLimit x
//! ThreadLimit; a prefork child is one thread, an event child's loop is its
//! thread 0). The children write their threads' states and counters; the parent's
//! maintenance, the server-status page and `SetHandler metrics` read them. Everything in it is an
//! atomic, so processes read and write it without locks.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use warren_shm::futex::{futex_wait, futex_wake};
use warren_shm::SharedMemory;

use crate::board_text::{load_text, store_text};
use crate::metrics_board::{SlotMetrics, VhostNames};

/// The states of a [`ThreadSlot`], with the letters Apache's mod_status shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// `.`: open slot, no process or thread.
    Dead = b'.',
    /// `S`: starting up.
    Starting = b'S',
    /// `_`: waiting for a connection.
    Ready = b'_',
    /// `R`: reading a request.
    Reading = b'R',
    /// `W`: sending a reply (or running the handler).
    Writing = b'W',
    /// `K`: keep-alive, waiting for the next request.
    KeepAlive = b'K',
    /// `L`: logging.
    Logging = b'L',
    /// `C`: closing the connection.
    Closing = b'C',
    /// `G`: gracefully finishing.
    Graceful = b'G',
    /// `I`: idle cleanup of a worker.
    IdleCleanup = b'I',
}

impl State {
    pub fn from_u8(b: u8) -> State {
        match b {
            b'S' => State::Starting,
            b'_' => State::Ready,
            b'R' => State::Reading,
            b'W' => State::Writing,
            b'K' => State::KeepAlive,
            b'L' => State::Logging,
            b'C' => State::Closing,
            b'G' => State::Graceful,
            b'I' => State::IdleCleanup,
            _ => State::Dead,
        }
    }

    pub fn letter(self) -> char {
        self as u8 as char
    }

    /// Busy as mod_status counts it: neither idle nor dead.
    pub fn is_busy(self) -> bool {
        !matches!(self, State::Ready | State::Dead | State::IdleCleanup)
    }
}

/// Length of the text fields kept for ExtendedStatus.
pub const TEXT_WORDS: usize = 8;

#[repr(C)]
pub struct ThreadSlot {
    state: AtomicU8,
    pub accesses: AtomicU64,
    pub bytes: AtomicU64,
    /// Unix time (ms) of the last request's start.
    pub last_used_ms: AtomicU64,
    /// Duration of the last request, in microseconds.
    pub last_duration_us: AtomicU64,
    /// Client address and request line of the last request, for ExtendedStatus.
    client: [AtomicU64; TEXT_WORDS],
    request: [AtomicU64; TEXT_WORDS * 4],
    vhost: [AtomicU64; TEXT_WORDS],
    /// The counters `SetHandler metrics` sums (metrics_board.rs).
    pub metrics: SlotMetrics,
}

/// Aligned as the thread slots after it, whatever its fields add up to.
/// `quiescing` of a child the parent stops at once: what would outlast a
/// graceful stop (WebSocket tunnels) is closed now.
pub const STOP_NOW: u8 = 2;

#[repr(C, align(8))]
pub struct ProcessSlot {
    pub pid: AtomicI32,
    /// Restart generation the child belongs to.
    pub generation: AtomicU32,
    /// Set when the child is finishing: told to by the parent, or retiring;
    /// [`STOP_NOW`] when the server stops (SIGTERM), not gracefully.
    pub quiescing: AtomicU8,
    /// Set by an event child with no idle worker thread.
    pub full: AtomicU8,
    /// Set by an event child that holds MaxChildConnections connections.
    pub capped: AtomicU8,
    /// Set while the child takes new connections.
    pub accepting: AtomicU8,
    /// How many of its thread slots the child uses. A thread slot is about
    /// a page of shared memory, which the first read or write of it makes
    /// resident (charged to the memory cgroup): the slots past this count
    /// are left untouched (ThreadLimit 64 against ThreadsPerChild 25 made
    /// the parent hold 0.5 MiB it never needed).
    threads: AtomicU32,
}

#[repr(C)]
struct Header {
    restart_time_ms: AtomicU64,
    generation: AtomicU32,
    /// How many event children accept connections (0: all); see `spread`.
    listeners_wanted: AtomicU32,
    /// How many prefork children may wait on the listeners at once (0: no
    /// limit); see [`AcceptTurn`].
    accept_turns: AtomicU32,
    /// Bumped when a turn is given back: children waiting for one sleep on it.
    turn_given: AtomicU32,
    /// One past the highest process slot ever claimed: slots past it have
    /// never counted anything, and a metrics scrape skips them.
    slots_used: AtomicU32,
    /// Bumped by the parent before it tells the children to reopen their
    /// logs: a child forked before and signalled before its handlers were
    /// in place compares it with the count it was forked with.
    logs_reopened: AtomicU32,
    /// The names of the metrics' virtual host buckets.
    vhost_names: VhostNames,
}

pub struct Scoreboard {
    memory: SharedMemory,
    pub server_limit: usize,
    pub thread_limit: usize,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl ThreadSlot {
    pub fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Relaxed))
    }

    pub fn set(&self, s: State) {
        self.state.store(s as u8, Ordering::Relaxed);
    }

    /// Records the start of a request (ExtendedStatus fields).
    pub fn begin_request(&self, client: &str, vhost: &str, request_line: &[u8]) {
        self.last_used_ms.store(now_ms(), Ordering::Relaxed);
        store_text(&self.client, client.as_bytes());
        store_text(&self.vhost, vhost.as_bytes());
        store_text(&self.request, request_line);
    }

    pub fn end_request(&self, bytes: u64, duration_us: u64) {
        self.accesses.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.last_duration_us.store(duration_us, Ordering::Relaxed);
    }

    pub fn client(&self) -> String {
        load_text(&self.client)
    }
    pub fn request(&self) -> String {
        load_text(&self.request)
    }
    pub fn vhost(&self) -> String {
        load_text(&self.vhost)
    }

    fn reset(&self) {
        self.set(State::Dead);
    }
}

// The mapping holds the header, the process slots, then the thread slots:
// each part must end where the next one's alignment allows it to start.
const _: () = assert!(std::mem::size_of::<Header>().is_multiple_of(std::mem::align_of::<ProcessSlot>()));
const _: () = assert!(std::mem::size_of::<ProcessSlot>().is_multiple_of(std::mem::align_of::<ThreadSlot>()));

impl Scoreboard {
    /// Maps a zeroed scoreboard, shared with every child forked after.
    pub fn new(server_limit: usize, thread_limit: usize) -> std::io::Result<Scoreboard> {
        let len = std::mem::size_of::<Header>()
            + server_limit * std::mem::size_of::<ProcessSlot>()
            + server_limit * thread_limit * std::mem::size_of::<ThreadSlot>();
        let sb = Scoreboard { memory: SharedMemory::zeroed(len)?, server_limit, thread_limit };
        sb.header().restart_time_ms.store(now_ms(), Ordering::Relaxed);
        // Zeroed slots read as Dead (`State::from_u8`): nothing is written
        // here, so pages of slots never used are never made resident.
        Ok(sb)
    }

    fn header(&self) -> &Header {
        // SAFETY: the header is at the start of the mapping.
        unsafe { &*(self.memory.base() as *const Header) }
    }

    pub fn process(&self, p: usize) -> &ProcessSlot {
        assert!(p < self.server_limit);
        // SAFETY: in bounds by the assert and the layout in `new`.
        unsafe {
            let at = self.memory.base().add(std::mem::size_of::<Header>()) as *const ProcessSlot;
            &*at.add(p)
        }
    }

    pub fn thread(&self, p: usize, t: usize) -> &ThreadSlot {
        assert!(p < self.server_limit && t < self.thread_limit);
        // SAFETY: in bounds by the assert and the layout in `new`.
        unsafe {
            let at = self.memory.base().add(std::mem::size_of::<Header>() + self.server_limit * std::mem::size_of::<ProcessSlot>())
                as *const ThreadSlot;
            &*at.add(p * self.thread_limit + t)
        }
    }

    /// One past the highest process slot ever claimed.
    pub fn slots_used(&self) -> usize {
        (self.header().slots_used.load(Ordering::Relaxed) as usize).min(self.server_limit)
    }

    pub fn vhost_names(&self) -> &VhostNames {
        &self.header().vhost_names
    }

    pub fn restart_time_ms(&self) -> u64 {
        self.header().restart_time_ms.load(Ordering::Relaxed)
    }

    pub fn generation(&self) -> u32 {
        self.header().generation.load(Ordering::Relaxed)
    }

    pub fn set_generation(&self, g: u32) {
        self.header().generation.store(g, Ordering::Relaxed);
    }

    pub fn logs_reopened(&self) -> u32 {
        self.header().logs_reopened.load(Ordering::Acquire)
    }

    pub fn set_logs_reopened(&self, n: u32) {
        self.header().logs_reopened.store(n, Ordering::Release);
    }

    pub fn listeners_wanted(&self) -> u32 {
        self.header().listeners_wanted.load(Ordering::Relaxed)
    }

    pub fn set_listeners_wanted(&self, n: u32) {
        self.header().listeners_wanted.store(n, Ordering::Relaxed);
    }

    /// Marks a process slot taken by `pid`, its workers starting.
    pub fn claim(&self, p: usize, pid: i32, threads: usize) {
        self.header().slots_used.fetch_max(p as u32 + 1, Ordering::Relaxed);
        let ps = self.process(p);
        ps.pid.store(pid, Ordering::Relaxed);
        ps.generation.store(self.generation(), Ordering::Relaxed);
        ps.quiescing.store(0, Ordering::Relaxed);
        ps.full.store(0, Ordering::Relaxed);
        // Worker children always accept; event and prefork ones say so themselves.
        ps.accepting.store(u8::from(self.listeners_wanted() == 0 && self.accept_turns() == 0), Ordering::Relaxed);
        // The slots past `threads` are Dead already: never used, or reset
        // by `release` when the child that used them exited.
        let threads = threads.min(self.thread_limit);
        ps.threads.store(threads as u32, Ordering::Relaxed);
        for t in 0..threads {
            self.thread(p, t).set(State::Starting);
        }
    }

    /// The thread slots process slot `p`'s child uses.
    fn threads_of(&self, p: usize) -> usize {
        (self.process(p).threads.load(Ordering::Relaxed) as usize).min(self.thread_limit)
    }

    /// Frees a process slot whose child has exited; a turn it held at the
    /// listeners goes to a waiting child.
    pub fn release(&self, p: usize) {
        self.process(p).pid.store(0, Ordering::Relaxed);
        for t in 0..self.threads_of(p) {
            self.thread(p, t).reset();
        }
        if self.process(p).accepting.swap(0, Ordering::SeqCst) != 0 && self.accept_turns() > 0 {
            self.turn_given();
        }
    }

    pub fn accept_turns(&self) -> u32 {
        self.header().accept_turns.load(Ordering::Relaxed)
    }

    pub fn set_accept_turns(&self, n: u32) {
        self.header().accept_turns.store(n, Ordering::Relaxed);
    }

    /// Live children holding a turn at the listeners. Counted from the
    /// slots rather than kept in a counter, so that a child dying at any
    /// point cannot leave a turn taken for ever: its slot is freed.
    fn turn_holders(&self) -> usize {
        (0..self.server_limit)
            .filter(|&p| {
                let ps = self.process(p);
                ps.pid.load(Ordering::SeqCst) != 0 && ps.accepting.load(Ordering::SeqCst) != 0
            })
            .count()
    }

    fn turn_given(&self) {
        let h = self.header();
        h.turn_given.fetch_add(1, Ordering::SeqCst);
        futex_wake(&h.turn_given, 1);
    }

    /// Wakes every child waiting for a turn, so that one just told to stop
    /// sees it now rather than at the end of its wait (a signal does not
    /// end a futex wait: it is restarted).
    pub fn wake_turn_waiters(&self) {
        let h = self.header();
        h.turn_given.fetch_add(1, Ordering::SeqCst);
        futex_wake(&h.turn_given, i32::MAX);
    }

    /// Idle workers (Ready) in live, non-quiescing children.
    pub fn idle_workers(&self) -> usize {
        self.count_workers(|s| s == State::Ready)
    }

    /// Idle workers and those still starting: the spare ones there will be
    /// once the children just forked reach the listeners.
    pub fn spare_workers(&self) -> usize {
        self.count_workers(|s| matches!(s, State::Ready | State::Starting))
    }

    /// Workers in live, non-quiescing children whose state passes `counted`.
    fn count_workers(&self, counted: impl Fn(State) -> bool) -> usize {
        let mut n = 0;
        for p in 0..self.server_limit {
            let ps = self.process(p);
            if ps.pid.load(Ordering::Relaxed) == 0 || ps.quiescing.load(Ordering::Relaxed) != 0 {
                continue;
            }
            n += (0..self.threads_of(p)).filter(|&t| counted(self.thread(p, t).state())).count();
        }
        n
    }
}

/// A prefork child's turn at the listeners. Only `accept_turns` children
/// wait on the listeners at once; the others sleep until a turn is given
/// back. A child keeps its turn while it serves without waiting (a
/// request already there, a response that fits the socket) and so takes
/// the next connection without being woken; it gives the turn back before
/// it waits on anything (a client, a backend, a full socket), so that idle
/// children still take new connections while it is tied up. Apache's
/// accept mutex also lets one child at a time accept, but hands over after
/// every accept: a wake-up per connection.
pub struct AcceptTurn<'a> {
    sb: &'a Scoreboard,
    slot: usize,
    held: bool,
}

impl<'a> AcceptTurn<'a> {
    pub fn new(sb: &'a Scoreboard, slot: usize) -> AcceptTurn<'a> {
        AcceptTurn { sb, slot, held: false }
    }

    /// Takes a turn if one is free, else sleeps until one is given back or
    /// `wait` passes; true once the turn is held.
    pub fn take(&mut self, wait: Duration) -> bool {
        if self.held {
            return true;
        }
        let h = self.sb.header();
        let seen = h.turn_given.load(Ordering::SeqCst);
        // Two children may both see a turn free and both take it: one child
        // too many at the listeners for a moment, which is harmless.
        let turns = self.sb.accept_turns() as usize;
        if turns == 0 || self.sb.turn_holders() < turns {
            self.sb.process(self.slot).accepting.store(1, Ordering::SeqCst);
            self.held = true;
            return true;
        }
        futex_wait(&h.turn_given, seen, wait);
        false
    }

    pub fn give_back(&mut self) {
        if self.held {
            self.held = false;
            self.sb.process(self.slot).accepting.store(0, Ordering::SeqCst);
            self.sb.turn_given();
        }
    }
}

impl Drop for AcceptTurn<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_text_and_sharing_across_fork() {
        let sb = Scoreboard::new(4, 3).unwrap();
        assert_eq!(sb.thread(3, 2).state(), State::Dead, "a fresh slot is open");
        sb.claim(1, 1234, 2);
        assert_eq!(sb.thread(1, 0).state(), State::Starting);
        assert_eq!(sb.thread(1, 2).state(), State::Dead);
        sb.thread(1, 0).set(State::Ready);
        sb.thread(1, 1).set(State::Ready);
        assert_eq!(sb.idle_workers(), 2);
        sb.thread(1, 0).begin_request("127.0.0.1", "localhost", b"GET /a-rather-long-request-line-that-is-cut HTTP/1.1");
        assert_eq!(sb.thread(1, 0).client(), "127.0.0.1");
        assert!(sb.thread(1, 0).request().starts_with("GET /a-rather-long"));
        // A forked child writes; the parent sees it.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                sb.thread(1, 1).set(State::Writing);
                sb.thread(1, 1).end_request(100, 5);
                unsafe { libc::_exit(0) };
            }
            nix::unistd::ForkResult::Parent { child } => {
                nix::sys::wait::waitpid(child, None).unwrap();
            }
        }
        assert_eq!(sb.thread(1, 1).state(), State::Writing);
        assert_eq!(sb.thread(1, 1).bytes.load(Ordering::Relaxed), 100);
        assert_eq!(sb.idle_workers(), 1);
        sb.release(1);
        assert_eq!(sb.thread(1, 0).state(), State::Dead);
    }

    /// Whether the page holding `at` is resident (mincore).
    fn resident(at: *const u8) -> bool {
        let page = at as usize & !4095;
        let mut v = 0u8;
        // SAFETY: a page of a live mapping, one byte of answer.
        assert_eq!(unsafe { libc::mincore(page as *mut libc::c_void, 4096, &mut v) }, 0);
        v & 1 == 1
    }

    #[test]
    fn thread_slots_past_a_childs_threads_are_never_touched() {
        // Each slot a page or more: one slot's state never shares a page with another's.
        assert!(std::mem::size_of::<ThreadSlot>() >= 4096, "{}", std::mem::size_of::<ThreadSlot>());
        let sb = Scoreboard::new(2, 65).unwrap();
        sb.claim(0, 10, 26);
        sb.thread(0, 3).set(State::Ready);
        assert_eq!(sb.idle_workers(), 1);
        assert_eq!(sb.spare_workers(), 26);
        sb.release(0);
        sb.claim(0, 11, 2);
        assert_eq!(sb.thread(0, 3).state(), State::Dead, "reset by release");
        let state_of = |t: usize| &sb.thread(0, t).state as *const AtomicU8 as *const u8;
        assert!(resident(state_of(25)));
        for t in 27..65 {
            assert!(!resident(state_of(t)), "thread slot {t} of 26 used was made resident");
        }
    }

    #[test]
    fn turns_at_the_listeners_are_limited_and_freed_with_their_slot() {
        let sb = Scoreboard::new(4, 1).unwrap();
        sb.set_accept_turns(2);
        for p in 0..3 {
            sb.claim(p, 100 + p as i32, 1);
        }
        let (mut a, mut b, mut c) = (AcceptTurn::new(&sb, 0), AcceptTurn::new(&sb, 1), AcceptTurn::new(&sb, 2));
        assert!(a.take(Duration::ZERO) && b.take(Duration::ZERO));
        let start = std::time::Instant::now();
        assert!(!c.take(Duration::from_millis(50)), "a third turn of two");
        assert!(start.elapsed() >= Duration::from_millis(40), "it waited for a turn");
        a.give_back();
        assert!(c.take(Duration::ZERO));
        // A child that dies holding its turn frees it with its slot.
        sb.release(1);
        std::mem::forget(b);
        assert!(a.take(Duration::ZERO));
        drop(c);
        let mut d = AcceptTurn::new(&sb, 3);
        sb.claim(3, 103, 1);
        assert!(d.take(Duration::ZERO), "dropping a turn gives it back");
    }
}
