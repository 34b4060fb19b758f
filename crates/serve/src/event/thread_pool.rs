//! The thread pool of an event child: ThreadsPerChild worker threads that
//! run the handler's blocking work and hand the response back to the event
//! loop, which writes it; or take a connection for a whole FastCGI exchange
//! ([`crate::fastcgi::on_thread`]) and hand the connection back.

use std::os::fd::AsFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::client_stream::ClientStream;

use nix::sys::eventfd::{EfdFlags, EventFd};
use warren_handler::gateway::Gateway;
use warren_handler::proxy_http::response::Interim;
use warren_handler::spool::Spooled;
use warren_handler::{Body, BodySource, ConnInfo, Outcome, Response, Site};

use crate::h2::body_plan::Piece;
use warren_http::h1::Connection;
use warren_http::DateCache;

use crate::exchange::{conn_rules, Exchange};
use crate::fastcgi::on_thread;
use warren_mpm::scoreboard::{Scoreboard, State};

pub type Work = Box<dyn FnOnce() -> Response + Send>;

pub enum Job {
    /// Compute a response for the loop to write.
    Respond(Work),
    /// Route a request whose routing runs a site owner's patterns
    /// ([`warren_handler::Outcome::OffLoop`]); blocking work it leads to is
    /// done here too.
    Route(Box<(warren_http::RequestHead, ConnInfo)>),
    /// Run a FastCGI exchange on the connection, writing the response.
    FastCgi(Box<FastCgiJob>),
    /// Work out an HTTP/2 stream's answer; a body produced as it is sent
    /// is then read here and handed to the loop a piece at a time.
    H2(Box<crate::h2::session::Task>),
}

/// A connection lent to a worker thread for one FastCGI exchange.
pub struct FastCgiJob {
    /// A duplicate of the loop's socket (the loop keeps it registered).
    pub stream: ClientStream,
    pub info: ConnInfo,
    /// The connection's HTTP/1.1 state, input included: the body is read through it.
    pub h1: Box<Connection>,
    pub exchange: Exchange,
    pub gateway: Box<Gateway>,
    /// The request body, when the loop has read it whole.
    pub body: Option<Spooled>,
}

pub enum JobResult {
    /// None if the work panicked.
    Response(Option<Response>),
    /// A request routed here, for the loop to go on with (never
    /// `Outcome::Blocking`).
    Routed(Outcome),
    /// The exchange is over: what is left of the input, the exchange to log,
    /// and whether its response went out whole.
    FastCgi { h1: Box<Connection>, exchange: Box<Exchange>, sent: bool },
    /// An HTTP/2 stream's answer; `pieces` bring its body when this thread
    /// goes on producing it.
    H2 { stream: u32, response: Response, pieces: Option<Receiver<Piece>> },
    /// More of a body is waiting in a stream's `pieces`.
    H2Wake,
    /// A backend's interim answer (103 Early Hints) for a stream whose
    /// answer is still being worked out: sent ahead of it.
    H2Interim { stream: u32, answer: Interim },
}

/// A finished piece of work, for the connection `(slot, generation)`.
pub struct Done {
    pub slot: usize,
    pub generation: u64,
    pub outcome: JobResult,
}

pub struct ThreadPool {
    jobs: Option<Sender<(usize, u64, Job)>>,
    /// [`Job::Route`]s go to threads of their own ([`start_routers`]).
    routes: Option<Sender<(usize, u64, Job)>>,
    pub done: Receiver<Done>,
    /// Readable when `done` has something; the event loop polls it.
    pub wake: Arc<EventFd>,
    threads: Vec<JoinHandle<()>>,
}

impl ThreadPool {
    /// Starts `threads` threads; thread i shows its state in worker slot
    /// i + 1 of the child's process slot (slot 0 is the event loop's).
    pub fn start(threads: u32, site: Arc<Site>, sb: Arc<Scoreboard>, slot: usize) -> std::io::Result<ThreadPool> {
        let (job_tx, job_rx) = channel::<(usize, u64, Job)>();
        let (done_tx, done_rx) = channel::<Done>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let wake = Arc::new(EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?);
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let job_rx = job_rx.clone();
            let done_tx = done_tx.clone();
            let wake = wake.clone();
            let sb = sb.clone();
            let site = site.clone();
            let h = std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || {
                    let mut date = DateCache::default();
                    let mut scratch = Vec::new();
                    let rules = conn_rules(&site.settings);
                    loop {
                        let ws = sb.thread(slot, i as usize + 1);
                        ws.set(State::Ready);
                        let job = job_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((conn, generation, job)) = job else {
                            ws.set(State::Dead);
                            return;
                        };
                        ws.set(State::Writing);
                        let mut streaming = None;
                        let outcome = match job {
                            // Its stream is gone (reset while it waited): nothing to do.
                            Job::H2(task) if task.is_dropped() => continue,
                            Job::H2(task) => {
                                let stream = task.stream;
                                let mut response = task.run_with_interims(&site, &mut |answer| {
                                    let interim = JobResult::H2Interim { stream, answer: answer.clone() };
                                    if done_tx.send(Done { slot: conn, generation, outcome: interim }).is_ok() {
                                        let _ = wake.write(1);
                                    }
                                });
                                let pieces = match &mut response.body {
                                    Body::Stream { source, .. } => {
                                        let (tx, rx) = sync_channel(PIECES_AHEAD);
                                        streaming = Some((std::mem::replace(source, Box::new(Detached)), tx));
                                        Some(rx)
                                    }
                                    _ => None,
                                };
                                JobResult::H2 { stream, response, pieces }
                            }
                            Job::Respond(work) => JobResult::Response(catch_unwind(AssertUnwindSafe(work)).ok()),
                            Job::Route(_) => unreachable!("routes go to the router threads"),
                            Job::FastCgi(mut g) => {
                                g.exchange.note_start(ws, &site, &g.info);
                                let sent = on_thread::serve(&site, &g.stream, &g.info, &mut g.h1, &mut g.exchange, (g.gateway, g.body), &rules, &mut date, &mut scratch);
                                JobResult::FastCgi { h1: g.h1, exchange: Box::new(g.exchange), sent }
                            }
                        };
                        if done_tx.send(Done { slot: conn, generation, outcome }).is_err() {
                            return;
                        }
                        let _ = wake.write(1);
                        if let Some((source, pieces)) = streaming.take() {
                            let tell = || done_tx.send(Done { slot: conn, generation, outcome: JobResult::H2Wake }).is_ok() && wake.write(1).is_ok();
                            relay_pieces(source, &pieces, tell);
                        }
                    }
                })?;
            handles.push(h);
        }
        let routes = start_routers(threads.max(1), &site, &done_tx, &wake, &mut handles)?;
        Ok(ThreadPool { jobs: Some(job_tx), routes: Some(routes), done: done_rx, wake, threads: handles })
    }

    pub fn submit(&self, slot: usize, generation: u64, job: Job) {
        let queue = if matches!(job, Job::Route(_)) { &self.routes } else { &self.jobs };
        if let Some(tx) = queue {
            let _ = tx.send((slot, generation, job));
        }
    }

    /// Clears the wake-up counter before draining `done`.
    pub fn reset_wake(&self) {
        let _ = nix::unistd::read(self.wake.as_fd(), &mut [0u8; 8]);
    }
}

/// How much less CPU a router thread gets than the loop when both want it
/// (nice 10: about a tenth).
const ROUTER_NICENESS: libc::c_int = 10;

/// Threads that route requests whose routing runs a site owner's patterns
/// ([`Job::Route`]), at a lower priority than the loop and the other
/// threads: however many of them a tenant keeps busy, the loop, which
/// serves everyone, still gets the CPU when it wakes. Blocking work a route
/// leads to is done there too; FastCGI goes back to the loop.
fn start_routers(threads: u32, site: &Arc<Site>, done_tx: &Sender<Done>, wake: &Arc<EventFd>, handles: &mut Vec<JoinHandle<()>>) -> std::io::Result<Sender<(usize, u64, Job)>> {
    let (tx, rx) = channel::<(usize, u64, Job)>();
    let rx = Arc::new(Mutex::new(rx));
    for i in 0..threads {
        let (rx, done_tx, wake, site) = (rx.clone(), done_tx.clone(), wake.clone(), site.clone());
        let h = std::thread::Builder::new().name(format!("router-{i}")).stack_size(256 * 1024).spawn(move || {
            // SAFETY: setpriority on this thread's own id; raising one's
            // niceness needs no privilege. Failing leaves it as it was.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, ROUTER_NICENESS);
            }
            loop {
                let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((conn, generation, Job::Route(request))) = job else { return };
                let outcome = JobResult::Routed(crate::serve::route_on_thread(&site, &request.0, &request.1));
                if done_tx.send(Done { slot: conn, generation, outcome }).is_err() {
                    return;
                }
                let _ = wake.write(1);
            }
        })?;
        handles.push(h);
    }
    Ok(tx)
}

/// Pieces a thread reads ahead of the loop for an HTTP/2 stream: a few,
/// so a client slower than the application holds the application back
/// rather than the child's memory.
const PIECES_AHEAD: usize = 4;

/// Reads a streamed body and hands it over a piece at a time, telling the
/// loop after each; stops early when the loop drops the stream.
fn relay_pieces(mut source: Box<dyn BodySource>, pieces: &SyncSender<Piece>, tell: impl Fn() -> bool) {
    loop {
        let mut piece = Vec::new();
        let (next, end) = match source.next_piece(&mut piece) {
            Ok(true) if piece.is_empty() => continue,
            Ok(true) => (Ok(Some(piece)), false),
            Ok(false) => (Ok(None), true),
            Err(e) => (Err(e), true),
        };
        if pieces.send(next).is_err() || !tell() || end {
            return;
        }
    }
}

/// Stands in the response the loop gets for a body this thread reads.
struct Detached;

impl BodySource for Detached {
    fn next_piece(&mut self, _out: &mut Vec<u8>) -> std::io::Result<bool> {
        Err(std::io::Error::other("the body is read by a worker thread"))
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.jobs.take();
        self.routes.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
