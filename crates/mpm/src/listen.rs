//! Listening sockets, bound by the parent before it forks, and accept.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;

use socket2::{Domain, Protocol, Socket, Type};


pub struct Listener {
    pub socket: TcpListener,
    pub addr: SocketAddr,
    /// Set for a TLS listener: its connections open with a handshake.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// What HTTP/2 it offers (None: none), per `Settings::h2_listener`.
    pub h2: Option<Arc<warren_config::h2::H2Listener>>,
    /// Passed by systemd (socket activation) rather than bound by warren.
    pub activated: bool,
}

impl Listener {
    /// Another handle on the same socket, for a new generation of children.
    pub fn try_clone(&self) -> std::io::Result<Listener> {
        Ok(Listener { socket: self.socket.try_clone()?, addr: self.addr, tls: self.tls.clone(), h2: self.h2.clone(), activated: self.activated })
    }

    /// Accepts a connection (see [`accept`]) and gives the local address,
    /// the listener's unless it is bound to a wildcard. What it carries
    /// (TLS, HTTP/2) is warren-serve's business: its client stream wraps it.
    pub fn accept_tcp(&self) -> std::io::Result<(TcpStream, SocketAddr, SocketAddr)> {
        let (stream, peer) = accept(&self.socket)?;
        let local = if self.addr.ip().is_unspecified() { stream.local_addr().unwrap_or(self.addr) } else { self.addr };
        Ok((stream, peer, local))
    }

    /// Connections in the accept queue: established (with TCP_DEFER_ACCEPT,
    /// their first bytes arrived) and taken by no process yet. They wait
    /// for a child, which is what the prefork parent spawns for. For a
    /// listening socket Linux reports the queue's length as TCP_INFO's
    /// `tcpi_unacked` (what `ss -ltn` shows as Recv-Q).
    pub fn queued(&self) -> usize {
        // SAFETY: tcp_info is plain integers, for which zero is valid.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: a valid socket, and info and len describe a writable buffer.
        let rc = unsafe { libc::getsockopt(self.socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, &mut info as *mut _ as *mut libc::c_void, &mut len) };
        if rc != 0 || (len as usize) < std::mem::offset_of!(libc::tcp_info, tcpi_unacked) + std::mem::size_of::<u32>() {
            return 0;
        }
        info.tcpi_unacked as usize
    }
}

pub fn bind(addr: SocketAddr, backlog: u32) -> std::io::Result<Listener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    tune(&socket)?;
    socket.bind(&addr.into()).map_err(|e| std::io::Error::new(e.kind(), format!("could not bind to address {addr}: {e}")))?;
    socket.listen(backlog.min(i32::MAX as u32) as i32)?;
    socket.set_nonblocking(true)?;
    let socket: TcpListener = socket.into();
    let addr = socket.local_addr()?;
    Ok(Listener { socket, addr, tls: None, h2: None, activated: false })
}

/// A listening socket warren did not bind (socket activation: systemd
/// did), with the options [`bind`] gives its own. It must not go on into
/// the programs warren starts, so it becomes close-on-exec.
pub fn adopt(socket: Socket) -> std::io::Result<Listener> {
    socket.set_cloexec(true)?;
    tune(&socket)?;
    socket.set_nonblocking(true)?;
    let socket: TcpListener = socket.into();
    let addr = socket.local_addr()?;
    Ok(Listener { socket, addr, tls: None, h2: None, activated: true })
}

/// The options of every listening socket.
fn tune(socket: &Socket) -> std::io::Result<()> {
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux: small
    // responses go out without waiting for the peer's delayed ACK.
    socket.set_tcp_nodelay(true)?;
    // Wake children only once a request's first bytes have arrived.
    let secs: libc::c_int = 1;
    // SAFETY: a valid socket and an int-sized option value.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            &secs as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    Ok(())
}

/// accept4 with the peer address, non-blocking and close-on-exec, in one
/// system call.
pub fn accept(listener: &TcpListener) -> std::io::Result<(TcpStream, SocketAddr)> {
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: storage and len describe a valid, writable sockaddr buffer.
    let fd = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            &mut storage as *mut _ as *mut libc::sockaddr,
            &mut len,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: accept4 returned a new socket that we now own.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let peer = sockaddr_to_std(&storage).unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    Ok((stream, peer))
}

fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a = unsafe { &*(s as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::from((u32::from_be(a.sin_addr.s_addr).to_be_bytes(), u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a = unsafe { &*(s as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::from((a.sin6_addr.s6_addr, u16::from_be(a.sin6_port))))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    /// Waits (up to 10 s) until the listener's queue holds `n`.
    fn settle_at(l: &Listener, n: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(10);
        while l.queued() != n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        l.queued()
    }

    #[test]
    fn queued_counts_the_connections_no_one_has_accepted() {
        let l = bind("127.0.0.1:0".parse().unwrap(), 16).unwrap();
        assert_eq!(l.queued(), 0);
        // TCP_DEFER_ACCEPT: a connection is queued once its first bytes arrive.
        let clients: Vec<TcpStream> = (0..3)
            .map(|_| {
                let mut c = TcpStream::connect(l.addr).unwrap();
                c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
                c
            })
            .collect();
        assert_eq!(settle_at(&l, 3), 3);
        let taken = l.accept_tcp().unwrap();
        assert_eq!(l.queued(), 2);
        drop((taken, clients));
    }
}
