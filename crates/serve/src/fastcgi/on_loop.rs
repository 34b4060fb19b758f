//! The event loop's side of a FastCGI exchange for a request without a body
//! or with a small one the loop has read whole: a non-blocking connection to
//! the application, the request as one write, and the answer read as it
//! comes (a [`ResponseReader`]) and relayed to the client with write
//! completion; for warren's own pools, a child that is idle now. Nothing
//! here blocks; a body spooled to a file, a kept backend connection
//! (`enablereuse`), a backend named by host name, a unix socket whose
//! backlog is full, or a pool with no idle child goes to a worker thread
//! instead ([`super::on_thread`]).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use socket2::{Domain, SockAddr, Socket, Type};
use warren_config::FcgiAddr;

use warren_handler::fastcgi::{Answer, Failure, HalfClose, PoolDispatch, PoolLease};
use warren_handler::gateway::error::GatewayError;
use warren_handler::gateway::Gateway;
use warren_handler::BodySource;

use crate::fastcgi::sink::BodyFraming;

/// A FastCGI exchange the event loop drives.
pub struct Upstream {
    pub socket: Socket,
    /// False until a TCP connect in progress completes.
    pub connected: bool,
    pub request: Vec<u8>,
    pub sent: usize,
    pub answer: Answer,
    pub gateway: Box<Gateway>,
    /// Edge-triggered readiness, as last reported and not yet used up.
    pub readable: bool,
    pub writable: bool,
    /// The application closed its side (EPOLLRDHUP, or the socket failed):
    /// its last bytes and its end may come in one edge, so a short read no
    /// longer means drained; the read that finds the end says so.
    pub hung_up: bool,
    /// Set once the head is sent: how the body goes out.
    pub body: Option<BodyFraming>,
    /// The pool child serving it, given back when the exchange is dropped.
    lease: Option<Box<dyn PoolLease>>,
    /// Shut our side once the request is out (see [`HalfClose`]).
    half_close: bool,
}

/// Why the loop cannot start the exchange itself.
pub enum NotHere {
    /// A worker thread can (it may block).
    UseThread,
    /// The application cannot be reached.
    Failed(io::Error),
    /// The pool's queue is full (a php-fpm pool's listen queue).
    Busy,
}

impl Upstream {
    /// Connects without blocking and prepares the request, with its body
    /// when it has one (read whole by the loop, and small: a larger one is
    /// in a file, which a worker thread sends).
    pub fn start(
        gateway: Box<Gateway>,
        body: Option<&[u8]>,
        answer: Answer,
        pools: Option<&Arc<dyn PoolDispatch>>,
        half_close: &HalfClose,
    ) -> Result<Upstream, (Box<Gateway>, NotHere)> {
        // A CGI program and an HTTP backend are served on a thread.
        if gateway.backend.reuse || gateway.needs_thread() {
            return Err((gateway, NotHere::UseThread));
        }
        // A pool's child free now is leased here; waiting for one is a worker thread's job.
        let mut lease = None;
        let leased_addr;
        let addr = match &gateway.backend.addr {
            FcgiAddr::Pool(name) => match pools.and_then(|d| d.try_lease(name, gateway.uri())) {
                Some(l) => {
                    leased_addr = FcgiAddr::Unix(l.socket().to_path_buf());
                    lease = Some(l);
                    &leased_addr
                }
                None => return Err((gateway, NotHere::UseThread)),
            },
            a => a,
        };
        let (socket, connected) = match connect(addr) {
            Ok(x) => x,
            // A pool's socket with a full listen queue: its queue is full.
            Err(NotHere::UseThread) if lease.is_some() => return Err((gateway, NotHere::Busy)),
            Err(e) => return Err((gateway, e)),
        };
        let request = gateway.whole_request(body);
        let half_close = half_close.allowed(&gateway.backend.addr);
        // Nothing can be read before the request is sent: the first read
        // waits for the edge that says the answer has come.
        Ok(Upstream { socket, connected, request, sent: 0, answer, gateway, readable: false, writable: true, hung_up: false, body: None, lease, half_close })
    }

    /// What a failure to read the application means (see [`Answer::failure`]).
    pub fn failure(&mut self, error: GatewayError, gone: bool) -> Failure {
        self.answer.failure(error, gone, self.lease.as_deref())
    }

    /// The pool's child serving it, if it is one.
    pub fn lease(&self) -> Option<&dyn PoolLease> {
        self.lease.as_deref()
    }

    /// The request, to be sent again elsewhere; the connection is closed
    /// and the pool child's lease given back.
    pub fn into_gateway(self) -> Box<Gateway> {
        self.gateway
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    /// Finishes the connect and sends what is left of the request:
    /// Ok(true) once all of it is out, Ok(false) while the socket waits.
    pub fn send(&mut self) -> Result<bool, GatewayError> {
        match self.check_connected() {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => return Err(GatewayError::connect(&self.gateway.backend_name(), &e)),
        }
        self.send_request().map_err(|e| GatewayError::io("sending the request to", &self.gateway.backend.addr, &e))
    }

    /// Finishes a TCP connect in progress: Ok(false) while it still is.
    fn check_connected(&mut self) -> io::Result<bool> {
        if self.connected {
            return Ok(true);
        }
        if !self.writable {
            return Ok(false);
        }
        if let Some(e) = self.socket.take_error()? {
            return Err(e);
        }
        self.connected = true;
        Ok(true)
    }

    /// Sends what is left of the request. Ok(true) once all of it is out.
    fn send_request(&mut self) -> io::Result<bool> {
        while self.sent < self.request.len() {
            match (&self.socket).write(&self.request[self.sent..]) {
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if !self.request.is_empty() {
            self.request = Vec::new();
            if self.half_close {
                // The request is whole: say so. PHP, having answered, waits
                // for the end of our side before it takes its next
                // connection; it then finds it at once instead of when we
                // have read the answer and closed.
                let _ = self.socket.shutdown(std::net::Shutdown::Write);
            }
        }
        Ok(true)
    }

    /// Reads what the application has sent into its answer. Ok(true):
    /// something came; Ok(false): nothing now (the next edge says when),
    /// or the read was interrupted.
    pub fn receive(&mut self, scratch: &mut [u8]) -> Result<bool, ReadFailed> {
        match (&self.socket).read(scratch) {
            Ok(0) => Err(ReadFailed { error: self.answer.closed(), gone: true }),
            Ok(n) => {
                self.answer.feed(&scratch[..n]);
                if n < scratch.len() && !self.hung_up {
                    // Drained: the next edge says when there is more.
                    self.readable = false;
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.readable = false;
                Ok(false)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
            Err(e) => {
                let gone = e.kind() == io::ErrorKind::ConnectionReset;
                Err(ReadFailed { error: GatewayError::io("reading the response from", &self.gateway.backend.addr, &e), gone })
            }
        }
    }
}

/// Why reading an application's answer failed.
pub struct ReadFailed {
    pub error: GatewayError,
    /// The application closed or reset the connection (a child that went
    /// away before answering may be replaced).
    pub gone: bool,
}

fn connect(addr: &FcgiAddr) -> Result<(Socket, bool), NotHere> {
    // A name may need a resolver, which may block.
    if matches!(addr, FcgiAddr::Tcp { host, .. } if host.parse::<std::net::IpAddr>().is_err()) {
        return Err(NotHere::UseThread);
    }
    connect_by_address(addr).map_err(|e| match e.kind() {
        // A unix socket's backlog is full: a worker thread waits in connect.
        io::ErrorKind::WouldBlock => NotHere::UseThread,
        _ => NotHere::Failed(e),
    })
}

/// A non-blocking connection to a backend named by address (a unix path
/// or an IP address, never a name): Ok((socket, connected)); WouldBlock
/// when a unix socket's listen queue is full. The FastCGI and HTTP relays
/// of the loop share it.
pub(crate) fn connect_by_address(addr: &FcgiAddr) -> io::Result<(Socket, bool)> {
    let (domain, target) = match addr {
        FcgiAddr::Unix(path) => (Domain::UNIX, SockAddr::unix(path)?),
        FcgiAddr::Tcp { host, port } => {
            let ip: std::net::IpAddr = host.parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{host} is no address")))?;
            let sa = SocketAddr::new(ip, *port);
            (Domain::for_address(sa), SockAddr::from(sa))
        }
        FcgiAddr::Pool(name) => return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("pool {name} is reached through a lease"))),
    };
    let socket = Socket::new(domain, Type::STREAM.nonblocking().cloexec(), None)?;
    if domain != Domain::UNIX {
        let _ = socket.set_tcp_nodelay(true);
    }
    match socket.connect(&target) {
        Ok(()) => Ok((socket, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok((socket, false)),
        Err(e) => Err(e),
    }
}

/// The body source of a relayed answer's head: the loop feeds the body
/// itself, so there is nothing to pull.
pub struct FedByLoop;

impl BodySource for FedByLoop {
    fn next_piece(&mut self, _: &mut Vec<u8>) -> io::Result<bool> {
        Ok(false)
    }
}
