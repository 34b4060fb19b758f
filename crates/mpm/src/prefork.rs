//! The prefork MPM's child: one thread, one connection at a time. Idle
//! children wait on the listeners through an epoll set with EPOLLEXCLUSIVE,
//! so a new connection wakes one child, not all (Apache's accept mutex).

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use warren_handler::{ConnInfo, Site};

use crate::blocking::Worker;
use crate::listen::{self, Listener};
use crate::scoreboard::{Scoreboard, State};

pub fn run(site: &Site, listeners: &[Listener], sb: &Scoreboard, slot: usize, stop: &AtomicBool, reopen: &AtomicBool) -> std::io::Result<()> {
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
    for (i, l) in listeners.iter().enumerate() {
        epoll.add(&l.socket, EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLEXCLUSIVE, i as u64))?;
    }
    let ws = sb.worker(slot, 0);
    let mut worker = Worker::new(site, stop, ws);
    let max = u64::from(site.settings.tuning.max_connections_per_child);
    let mut served = 0u64;
    let mut events = [EpollEvent::empty(); 4];
    while !stop.load(Ordering::Relaxed) {
        if reopen.swap(false, Ordering::Relaxed) {
            site.reopen_logs();
        }
        ws.set(State::Ready);
        let n = match epoll.wait(&mut events, EpollTimeout::from(1000u16)) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            worker.logs.flush();
            continue;
        }
        let which = events[0].data() as usize;
        let Ok((stream, peer)) = listen::accept(&listeners[which].socket) else { continue };
        let laddr = listeners[which].addr;
        let local = if laddr.ip().is_unspecified() { stream.local_addr().unwrap_or(laddr) } else { laddr };
        worker.serve(stream, ConnInfo { peer, local });
        served += 1;
        if max > 0 && served >= max {
            break;
        }
    }
    ws.set(State::Graceful);
    worker.logs.flush();
    Ok(())
}
