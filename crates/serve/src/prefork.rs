//! The prefork MPM's child: one thread, one connection at a time. Idle
//! children take turns at the listeners ([`AcceptTurn`]): as many as the
//! machine has cores wait on them, through an epoll set with EPOLLEXCLUSIVE
//! so that a new connection wakes one child, not all; the others sleep
//! until a turn is given back (Apache's accept mutex, without its hand-over
//! after every accept).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use warren_handler::{ConnInfo, Site};

use crate::blocking::Driver;
use crate::client_stream::AcceptClient;
use warren_mpm::listen::Listener;
use warren_mpm::scoreboard::{AcceptTurn, Scoreboard, State};

pub fn run(site: &Site, listeners: &[Listener], sb: &Scoreboard, slot: usize, stop: &AtomicBool, reopen: &AtomicBool) -> std::io::Result<()> {
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
    for (i, l) in listeners.iter().enumerate() {
        epoll.add(&l.socket, EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLEXCLUSIVE, i as u64))?;
    }
    let ws = sb.thread(slot, 0);
    let mut driver = Driver::new(site, stop, ws);
    driver.turn = Some(AcceptTurn::new(sb, slot));
    driver.quiescing = Some(&sb.process(slot).quiescing);
    let max = u64::from(site.settings.tuning.max_connections_per_child);
    let mut served = 0u64;
    let mut events = [EpollEvent::empty(); 4];
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) {
        if reopen.swap(false, Ordering::Relaxed) {
            // What was logged before the rotation goes in the file rotated.
            driver.logs.flush();
            crate::log_rotation::reopen_logs(site);
        }
        ws.set(State::Ready);
        if !driver.turn.as_mut().is_some_and(|t| t.take(Duration::from_secs(1))) {
            driver.flush_logs_if_due();
            continue;
        }
        // A connection may be waiting that no wake-up will announce here:
        // the kernel told a child that has since given its turn away. So a
        // child with a turn tries to accept before it sleeps (from the
        // listener after the last one served, for fairness between them).
        let tried = (0..listeners.len()).map(|k| (next + k) % listeners.len()).find_map(|i| listeners[i].accept().ok().map(|c| (i, c)));
        let (which, (stream, peer, local)) = match tried {
            Some(got) => got,
            None => {
                let n = match epoll.wait(&mut events, EpollTimeout::from(1000u16)) {
                    Ok(n) => n,
                    Err(nix::errno::Errno::EINTR) => 0,
                    Err(e) => return Err(e.into()),
                };
                if n == 0 {
                    driver.logs.flush();
                    continue;
                }
                let which = events[0].data() as usize;
                let Ok(got) = listeners[which].accept() else { continue };
                (which, got)
            }
        };
        next = (which + 1) % listeners.len();
        driver.serve(stream, ConnInfo::new(peer, local));
        served += 1;
        if max > 0 && served >= max {
            break;
        }
    }
    driver.turn = None;
    ws.set(State::Graceful);
    driver.logs.flush();
    Ok(())
}
