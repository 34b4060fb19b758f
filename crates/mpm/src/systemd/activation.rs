//! Socket activation: systemd (a `.socket` unit) binds the listening
//! sockets and passes them as descriptors 3, 4, ... with `LISTEN_FDS` (how
//! many), `LISTEN_PID` (for which process) and `LISTEN_FDNAMES` (their
//! `FileDescriptorName=`s, colon-separated). Each `Listen` line takes the
//! passed socket bound to its address instead of binding one: the socket
//! outlives warren's restarts, so a connection made while warren starts
//! or stops waits in its queue rather than being refused.
//!
//! A socket is matched by the address it is bound to: the same address
//! and port, or, for a `Listen` on every address (`Listen 80`), a socket
//! on every address of either family with that port (systemd's
//! `ListenStream=80` is `[::]:80`, taking IPv4 too). Names are shown in
//! the messages, which name the `Listen` directive: a passed socket that
//! no `Listen` line takes is closed with a warning; a `Listen` line no
//! socket matches is bound by warren, with a warning.

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};

use socket2::{Socket, Type};

use crate::listen::{self, Listener};

/// The first descriptor systemd passes (SD_LISTEN_FDS_START).
const FIRST_FD: i32 = 3;

/// A descriptor passed by systemd.
pub struct Activated {
    pub fd: i32,
    /// Its FileDescriptorName (systemd's default is the socket unit's name).
    pub name: Option<String>,
    /// The listening TCP socket and its address, or why the descriptor is
    /// not one warren can serve on.
    pub socket: Result<(Socket, SocketAddr), String>,
}

impl Activated {
    fn describe(&self) -> String {
        let name = self.name.as_ref().map(|n| format!(" (FileDescriptorName {n})")).unwrap_or_default();
        match &self.socket {
            Ok((_, addr)) => format!("socket {addr} passed by systemd as descriptor {}{name}", self.fd),
            Err(_) => format!("descriptor {} passed by systemd{name}", self.fd),
        }
    }
}

/// Takes ownership of descriptors 3 .. 3+n. Called once, at start, before
/// anything else opens a descriptor.
pub(super) fn inherited(n: i32, names: Option<&str>) -> Vec<Activated> {
    let mut names = names.map(|n| n.split(':').map(str::to_string).collect::<Vec<_>>()).unwrap_or_default().into_iter();
    (FIRST_FD..FIRST_FD.saturating_add(n.clamp(0, 1024)))
        .map(|fd| {
            let name = names.next().filter(|n| !n.is_empty());
            // Only a descriptor that is open is taken: one systemd said it
            // passed but that is not there must not become another's.
            // SAFETY: F_GETFD only asks whether the number is an open descriptor.
            let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
            let socket = if open {
                // SAFETY: LISTEN_FDS gives this process the descriptor, which is open and which nothing else in warren has taken.
                check(Socket::from(unsafe { OwnedFd::from_raw_fd(fd) }))
            } else {
                Err("not open".to_string())
            };
            Activated { fd, name, socket }
        })
        .collect()
}

/// Whether the passed socket is a listening TCP socket, and its address.
fn check(socket: Socket) -> Result<(Socket, SocketAddr), String> {
    if socket.r#type().map_err(|e| e.to_string())? != Type::STREAM {
        return Err("not a stream socket (ListenDatagram= or a FIFO?)".to_string());
    }
    let addr = socket.local_addr().map_err(|e| e.to_string())?.as_socket().ok_or("not a TCP socket (warren listens on TCP only)")?;
    if !socket.is_listener().map_err(|e| e.to_string())? {
        return Err(format!("{addr} is not listening (Accept=yes is not supported)"));
    }
    Ok((socket, addr))
}

/// Whether a socket bound to `bound` serves `Listen listen`.
pub fn serves(listen: SocketAddr, bound: SocketAddr) -> bool {
    listen == bound || (listen.port() == bound.port() && listen.ip().is_unspecified() && bound.ip().is_unspecified())
}

/// Takes out of `passed` the socket for `Listen listen`, as a listener.
/// A passed socket that exists but cannot be used is an error.
pub fn take(passed: &mut Vec<Activated>, listen: SocketAddr) -> Option<Result<Listener, String>> {
    let i = passed.iter().position(|a| a.socket.as_ref().is_ok_and(|(_, bound)| serves(listen, *bound)))?;
    let a = passed.remove(i);
    let what = a.describe();
    let (socket, _) = a.socket.ok()?;
    Some(listen::adopt(socket).map_err(|e| format!("Listen {listen}: {what}: {e}")))
}

/// The warnings for what no `Listen` line took; the sockets are closed.
pub fn leftovers(passed: Vec<Activated>) -> Vec<String> {
    passed
        .into_iter()
        .map(|a| match &a.socket {
            Ok(_) => format!("{}: no Listen directive names its address; closed (add a Listen line for it, or remove it from the socket unit)", a.describe()),
            Err(e) => format!("{}: {e}; ignored (Listen directives take TCP listening sockets only)", a.describe()),
        })
        .collect()
}

/// The warning for a `Listen` line no passed socket matched, when some were passed.
pub fn unmatched_listen(listen: SocketAddr) -> String {
    format!("Listen {listen}: systemd passed no socket for this address (LISTEN_FDS); warren binds it itself, and connections to it are refused while warren restarts")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_listen_lines_take_a_wildcard_socket_of_either_family() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(serves(a("127.0.0.1:80"), a("127.0.0.1:80")));
        assert!(serves(a("0.0.0.0:80"), a("[::]:80")));
        assert!(!serves(a("127.0.0.1:80"), a("0.0.0.0:80")));
        assert!(!serves(a("0.0.0.0:80"), a("[::]:81")));
        assert!(!serves(a("10.0.0.1:80"), a("10.0.0.2:80")));
    }

    #[test]
    fn a_socket_is_taken_by_the_listen_line_of_its_address_and_the_others_are_named() {
        let tcp = |addr: &str| {
            let s = Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
            s.bind(&addr.parse::<SocketAddr>().unwrap().into()).unwrap();
            s.listen(4).unwrap();
            let bound = s.local_addr().unwrap().as_socket().unwrap();
            (s, bound)
        };
        let (first, first_addr) = tcp("127.0.0.1:0");
        let (second, second_addr) = tcp("127.0.0.1:0");
        let unbound = Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
        let mut passed = vec![
            Activated { fd: 3, name: Some("http".into()), socket: Ok((first, first_addr)) },
            Activated { fd: 4, name: None, socket: Ok((second, second_addr)) },
            Activated { fd: 5, name: None, socket: check(unbound) },
        ];
        let taken = take(&mut passed, second_addr).unwrap().unwrap();
        assert_eq!(taken.addr, second_addr);
        assert!(take(&mut passed, "127.0.0.1:1".parse().unwrap()).is_none());
        let warnings = leftovers(passed);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains(&format!("socket {first_addr} passed by systemd as descriptor 3 (FileDescriptorName http): no Listen directive")), "{warnings:?}");
        assert!(warnings[1].contains("descriptor 5 passed by systemd") && warnings[1].contains("not listening"), "{warnings:?}");
    }
}
