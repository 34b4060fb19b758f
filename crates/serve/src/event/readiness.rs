//! [`Readiness`]: what epoll said of a backend's socket (FastCGI or HTTP),
//! as the loop's relays read it.

use nix::sys::epoll::EpollFlags;

/// What epoll said of a backend's socket. A hang-up or an error is
/// readable and writable too: the next read or write finds out which.
pub(super) struct Readiness {
    pub readable: bool,
    pub writable: bool,
    /// The backend closed its side (or the socket failed).
    pub hung_up: bool,
}

impl Readiness {
    pub(super) fn of(flags: EpollFlags) -> Readiness {
        let gone = flags.intersects(EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR);
        Readiness {
            readable: gone || flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP),
            writable: gone || flags.contains(EpollFlags::EPOLLOUT),
            hung_up: gone || flags.contains(EpollFlags::EPOLLRDHUP),
        }
    }
}
