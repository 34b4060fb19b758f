//! What systemd hands a service it starts, read once at warren's start:
//! the notification socket (`NOTIFY_SOCKET`, for `Type=notify`), the
//! watchdog interval (`WATCHDOG_USEC`) and the sockets of socket
//! activation (`LISTEN_PID`, `LISTEN_FDS`, `LISTEN_FDNAMES`; see
//! [`activation`]). The variables are removed from the environment as
//! they are read, as sd_listen_fds(3) and sd_notify(3) do when asked to:
//! no program warren starts takes them as its own (pools and CGI programs
//! get an environment of their own anyway; anything started with warren's,
//! a piped log program say, does not see them).
//!
//! Notifications are datagrams of `KEY=value` lines on a unix socket (a
//! path, or an abstract name written `@name`), sent with std's
//! `UnixDatagram`: the sd-notify crate does the same in as many lines, so
//! it would add a dependency and nothing else. When and what the parent
//! sends is `parent::readiness`.

pub mod activation;

use std::ffi::OsString;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

pub use activation::Activated;

/// What systemd set up for this process.
#[derive(Default)]
pub struct Systemd {
    /// NOTIFY_SOCKET: where to send notifications (the socket to send
    /// them with is made later, see [`Notifier::new`]: warren closes the
    /// descriptors it inherited after this is read).
    pub notify: Option<OsString>,
    /// `WatchdogSec=`: systemd kills warren unless told WATCHDOG=1 this often.
    pub watchdog: Option<Duration>,
    /// Sockets passed by socket activation, from descriptor 3.
    pub activated: Vec<Activated>,
}

impl Systemd {
    /// Reads, and removes from the environment, what systemd passed. Must
    /// run while warren has one thread (changing the environment is not
    /// safe once others may read it), before any descriptor is opened.
    pub fn take_from_env() -> Systemd {
        let take = |name: &str| {
            let value = std::env::var_os(name);
            std::env::remove_var(name);
            value
        };
        let notify = take("NOTIFY_SOCKET");
        let watchdog_usec = take("WATCHDOG_USEC");
        let watchdog_pid = take("WATCHDOG_PID");
        let listen_pid = take("LISTEN_PID");
        let listen_fds = take("LISTEN_FDS");
        let listen_names = take("LISTEN_FDNAMES");
        let ours = |pid: &Option<OsString>| pid.as_ref().is_none_or(|p| p.to_str().and_then(|p| p.parse::<u32>().ok()) == Some(std::process::id()));
        let watchdog = watchdog_usec
            .filter(|_| ours(&watchdog_pid))
            .and_then(|u| u.to_str().and_then(|u| u.parse::<u64>().ok()))
            .filter(|&u| u > 0)
            .map(Duration::from_micros);
        // Descriptors passed to another process (LISTEN_PID not ours, or
        // missing, as sd_listen_fds requires it) are not warren's.
        let activated = match (listen_pid.is_some() && ours(&listen_pid), listen_fds) {
            (true, Some(n)) => activation::inherited(n.to_str().and_then(|n| n.parse().ok()).unwrap_or(0), listen_names.as_ref().and_then(|n| n.to_str())),
            _ => Vec::new(),
        };
        Systemd { notify, watchdog, activated }
    }
}

/// A connection to systemd's notification socket.
pub struct Notifier {
    socket: UnixDatagram,
    addr: SocketAddr,
    /// NOTIFY_SOCKET as given, for messages.
    pub shown: String,
}

impl Notifier {
    /// The notifier for a NOTIFY_SOCKET value: an absolute path, or `@`
    /// and an abstract socket's name.
    pub fn new(value: &std::ffi::OsStr) -> Result<Notifier, String> {
        let shown = value.to_string_lossy().into_owned();
        let bytes = value.as_bytes();
        let addr = match bytes.first() {
            Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..]),
            Some(b'/') => SocketAddr::from_pathname(value),
            _ => return Err(format!("NOTIFY_SOCKET={shown}: neither an absolute path nor @ and an abstract name; systemd is not notified")),
        }
        .map_err(|e| format!("NOTIFY_SOCKET={shown}: {e}; systemd is not notified"))?;
        let socket = UnixDatagram::unbound().map_err(|e| format!("NOTIFY_SOCKET={shown}: cannot make a socket: {e}; systemd is not notified"))?;
        // A notification must never hold up the parent.
        socket.set_nonblocking(true).map_err(|e| format!("NOTIFY_SOCKET={shown}: {e}"))?;
        Ok(Notifier { socket, addr, shown })
    }

    /// Sends one notification (`KEY=value` lines).
    pub fn send(&self, message: &str) -> std::io::Result<()> {
        self.socket.send_to_addr(message.as_bytes(), &self.addr).map(|_| ())
    }
}

/// CLOCK_MONOTONIC in microseconds, as RELOADING=1's MONOTONIC_USEC wants it.
pub fn monotonic_usec() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_to_a_path_and_to_an_abstract_name() {
        let dir = std::env::temp_dir().join(format!("warren-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let by_path = UnixDatagram::bind(&path).unwrap();
        Notifier::new(path.as_os_str()).unwrap().send("READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = by_path.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        std::fs::remove_dir_all(&dir).unwrap();

        let name = format!("warren-notify-test-{}", std::process::id());
        let abstract_socket = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
        Notifier::new(std::ffi::OsStr::new(&format!("@{name}"))).unwrap().send("STOPPING=1").unwrap();
        let n = abstract_socket.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
    }

    #[test]
    fn a_relative_path_or_a_socket_that_is_gone_is_an_error() {
        let refused = Notifier::new(std::ffi::OsStr::new("notify.sock")).err().expect("a relative path is refused");
        assert!(refused.contains("NOTIFY_SOCKET=notify.sock"), "{refused}");
        let gone = Notifier::new(std::ffi::OsStr::new("/nonexistent/warren/notify")).unwrap();
        assert!(gone.send("READY=1").is_err());
    }
}
