//! A connection to a backend, unix or TCP, as every gateway protocol opens
//! it: FastCGI applications (and warren's pools, whose full listen queue
//! fails at once), HTTP backends under their TLS, a balancer's health
//! checks. How its address is named in log lines is here too.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use warren_config::FcgiAddr;

/// A connection to a backend: a FastCGI application, an HTTP backend (under
/// TLS or not), a balancer's member being checked.
pub enum BackendStream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl BackendStream {
    pub(crate) fn connect(addr: &FcgiAddr, timeout: Duration) -> io::Result<BackendStream> {
        let s = match addr {
            FcgiAddr::Unix(p) => BackendStream::Unix(connect_unix(p, Some(timeout))?),
            FcgiAddr::Pool(name) => return Err(io::Error::other(format!("pool {name} is reached through a lease"))),
            FcgiAddr::Tcp { host, port } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} resolves to no address"));
                let mut found = None;
                for a in std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port))? {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                BackendStream::Tcp(found.ok_or(last)?)
            }
        };
        s.set_timeouts(timeout)?;
        Ok(s)
    }

    /// A connection to a pool's socket, or WouldBlock at once when its
    /// listen queue is full (the pool's queue, for php-fpm: the request
    /// gets 503), where a plain connect would wait for room.
    pub(crate) fn connect_pool(path: &std::path::Path, timeout: Duration) -> io::Result<BackendStream> {
        let s = BackendStream::Unix(connect_unix(path, None)?);
        s.set_timeouts(timeout)?;
        Ok(s)
    }

    pub(crate) fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        match self {
            BackendStream::Unix(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
            BackendStream::Tcp(s) => {
                s.set_read_timeout(Some(t))?;
                s.set_write_timeout(Some(t))
            }
        }
    }

    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            BackendStream::Unix(s) => s.set_nonblocking(on),
            BackendStream::Tcp(s) => s.set_nonblocking(on),
        }
    }

    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        match self {
            BackendStream::Unix(s) => s.as_fd(),
            BackendStream::Tcp(s) => s.as_fd(),
        }
    }

    /// Shuts our side: the request is whole (see [`HalfClose`](crate::fastcgi::HalfClose)).
    pub(crate) fn end_request(&self) {
        let _ = match self {
            BackendStream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
            BackendStream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
        };
    }

    /// An idle kept connection is usable if the application has neither
    /// closed it nor sent anything on it.
    pub(crate) fn idle_and_open(&self) -> bool {
        let fd = match self {
            BackendStream::Unix(s) => s.as_raw_fd(),
            BackendStream::Tcp(s) => s.as_raw_fd(),
        };
        let mut b = [0u8; 1];
        // SAFETY: a valid one-byte buffer and an open socket.
        let n = unsafe { libc::recv(fd, b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
    }
}

impl Read for BackendStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            BackendStream::Unix(s) => s.read(buf),
            BackendStream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for BackendStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            BackendStream::Unix(s) => s.write(buf),
            BackendStream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) fn describe(addr: &FcgiAddr) -> String {
    match addr {
        // Named for every FastCGI request (its answer's log lines): joined
        // by hand, `format!` and `Path::display` took six times as long.
        FcgiAddr::Unix(p) => {
            let path = crate::path::text(p);
            let mut name = String::with_capacity("unix:".len() + path.len());
            name.push_str("unix:");
            name.push_str(&path);
            name
        }
        FcgiAddr::Tcp { host, port } => format!("{host}:{port}"),
        FcgiAddr::Pool(name) => format!("pool {name}"),
    }
}

/// A connection to a unix socket (blocking). A unix connect succeeds at
/// once or finds the listen queue full, never EINPROGRESS; then it waits at
/// most `wait_for_room` (TimedOut after), or with None fails at once with
/// WouldBlock. The kernel bounds that wait by the socket's send timeout,
/// which std's `UnixStream::connect` cannot set first (a backend whose
/// queue stays full would hold the thread for good).
fn connect_unix(path: &std::path::Path, wait_for_room: Option<Duration>) -> io::Result<UnixStream> {
    use nix::sys::socket::{connect, setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, UnixAddr};
    use nix::sys::time::{TimeVal, TimeValLike};
    let flags = match wait_for_room {
        Some(_) => SockFlag::SOCK_CLOEXEC,
        None => SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
    };
    let fd = socket(AddressFamily::Unix, SockType::Stream, flags, None)?;
    if let Some(timeout) = wait_for_room {
        let micros = i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX).max(1);
        setsockopt(&fd, sockopt::SendTimeout, &TimeVal::microseconds(micros))?;
    }
    match (connect(fd.as_raw_fd(), &UnixAddr::new(path)?), wait_for_room) {
        (Ok(()), _) => {
            let s = UnixStream::from(fd);
            s.set_nonblocking(false)?;
            Ok(s)
        }
        (Err(nix::errno::Errno::EAGAIN), Some(timeout)) => Err(io::Error::new(io::ErrorKind::TimedOut, format!("its listen queue stayed full for {} s", timeout.as_secs()))),
        (Err(e), _) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr};

    /// A unix listener with a queue of one that nobody accepts from.
    fn full_listener(dir: &std::path::Path) -> (std::os::fd::OwnedFd, std::path::PathBuf, UnixStream) {
        let path = dir.join("full.sock");
        let fd = socket(AddressFamily::Unix, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).unwrap();
        bind(fd.as_raw_fd(), &UnixAddr::new(&path).unwrap()).unwrap();
        listen(&fd, Backlog::new(0).unwrap()).unwrap();
        // Linux counts a queue as full past its backlog: 0 admits one.
        let first = connect_unix(&path, None).unwrap();
        (fd, path, first)
    }

    #[test]
    fn a_full_queue_fails_at_once_or_after_the_wait() {
        let dir = std::env::temp_dir().join(format!("warren-backend-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (_listener, path, _first) = full_listener(&dir);
        assert_eq!(connect_unix(&path, None).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!(connect_unix(&path, Some(Duration::from_millis(20))).unwrap_err().kind(), io::ErrorKind::TimedOut);
        // A connection made is blocking, whichever way it waited.
        let other = dir.join("open.sock");
        let open = std::os::unix::net::UnixListener::bind(&other).unwrap();
        for wait in [None, Some(Duration::from_secs(5))] {
            let s = connect_unix(&other, wait).unwrap();
            let (_peer, _) = open.accept().unwrap();
            let flags = nix::fcntl::fcntl(&s, nix::fcntl::FcntlArg::F_GETFL).unwrap();
            assert_eq!(flags & libc::O_NONBLOCK, 0);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
