//! The worker MPM's child: a listener thread accepts connections and hands
//! each to an idle worker thread, which keeps it for its whole keep-alive
//! life. The listener accepts only while some worker is idle, so a busy
//! child leaves new connections to the others.

use std::collections::VecDeque;
use crate::client_stream::ClientStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use warren_handler::{ConnInfo, Site};

use crate::blocking::Driver;
use crate::client_stream::AcceptClient;
use warren_mpm::listen::Listener;
use warren_mpm::scoreboard::{Scoreboard, State};

struct Handoff {
    queue: Mutex<VecDeque<(ClientStream, ConnInfo)>>,
    ready: Condvar,
    /// Idle workers not yet promised a connection: the listener takes one
    /// (decrements) for each connection it accepts.
    idle: AtomicUsize,
    /// Signalled when a worker becomes idle (the listener may be waiting).
    idle_mutex: Mutex<()>,
    became_idle: Condvar,
}

pub fn run(site: &Site, listeners: &[Listener], sb: &Scoreboard, slot: usize, stop: &AtomicBool, reopen: &AtomicBool) -> std::io::Result<()> {
    let threads = site.settings.tuning.threads_per_child as usize;
    let handoff = Handoff {
        queue: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
        idle: AtomicUsize::new(0),
        idle_mutex: Mutex::new(()),
        became_idle: Condvar::new(),
    };
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
    for (i, l) in listeners.iter().enumerate() {
        epoll.add(&l.socket, EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLEXCLUSIVE, i as u64))?;
    }
    let max = u64::from(site.settings.tuning.max_connections_per_child);
    let done_accepting = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let handoff = &handoff;
            let done_accepting = &done_accepting;
            let ws = sb.thread(slot, t);
            let spawned = std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .stack_size(256 * 1024)
                .spawn_scoped(scope, move || {
                    let mut driver = Driver::new(site, stop, ws);
                    driver.quiescing = Some(&sb.process(slot).quiescing);
                    loop {
                        ws.set(State::Ready);
                        handoff.idle.fetch_add(1, Ordering::SeqCst);
                        {
                            let _g = handoff.idle_mutex.lock().unwrap_or_else(|p| p.into_inner());
                            handoff.became_idle.notify_one();
                        }
                        let job = {
                            let mut q = handoff.queue.lock().unwrap_or_else(|p| p.into_inner());
                            loop {
                                if let Some(job) = q.pop_front() {
                                    break Some(job);
                                }
                                if done_accepting.load(Ordering::SeqCst) {
                                    break None;
                                }
                                let (guard, timeout) = handoff.ready.wait_timeout(q, Duration::from_millis(250)).unwrap_or_else(|p| p.into_inner());
                                q = guard;
                                if timeout.timed_out() {
                                    driver.logs.flush();
                                }
                            }
                        };
                        let Some((stream, info)) = job else { break };
                        driver.serve(stream, info);
                    }
                    ws.set(State::Graceful);
                    driver.logs.flush();
                });
            if let Err(e) = spawned {
                // Fewer threads than configured beats no child at all.
                site.error_log.error(None, &format!("cannot start worker thread {t}: {e}"));
                ws.set(State::Dead);
                break;
            }
        }

        let mut events = [EpollEvent::empty(); 4];
        let mut accepted = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if reopen.swap(false, Ordering::Relaxed) {
                crate::log_rotation::reopen_logs(site);
            }
            if handoff.idle.load(Ordering::SeqCst) == 0 {
                let g = handoff.idle_mutex.lock().unwrap_or_else(|p| p.into_inner());
                let _ = handoff.became_idle.wait_timeout(g, Duration::from_millis(100));
                continue;
            }
            let n = epoll.wait(&mut events, EpollTimeout::from(500u16)).unwrap_or_default();
            if n == 0 {
                continue;
            }
            let which = events[0].data() as usize;
            let Ok((stream, peer, local)) = listeners[which].accept() else { continue };
            handoff.idle.fetch_sub(1, Ordering::SeqCst);
            handoff.queue.lock().unwrap_or_else(|p| p.into_inner()).push_back((stream, ConnInfo::new(peer, local)));
            handoff.ready.notify_one();
            accepted += 1;
            if max > 0 && accepted >= max {
                break;
            }
        }
        // Workers finish what they hold (and what is queued), then exit.
        done_accepting.store(true, Ordering::SeqCst);
        handoff.ready.notify_all();
    });
    Ok(())
}
