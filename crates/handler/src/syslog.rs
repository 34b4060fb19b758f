//! `ErrorLog syslog[:facility]`: each error line is one datagram to the
//! syslog socket (/dev/log, or SyslogSocket), in the BSD format glibc's
//! syslog(3) sends (RFC 3164: `<PRI>Mmm dd hh:mm:ss warren[pid]: message`),
//! which rsyslog and systemd-journald both take from /dev/log. The journal's
//! native protocol would add nothing the priority and tag do not carry,
//! and would leave out rsyslog-only machines.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use warren_config::LogLevel;

/// The socket to the syslog daemon.
pub struct Syslog {
    path: PathBuf,
    facility: u8,
    socket: Mutex<UnixDatagram>,
}

impl Syslog {
    /// Connects to `path` now, so that a missing daemon is said at start.
    pub fn connect(path: &Path, facility: u8) -> std::io::Result<Syslog> {
        let socket = UnixDatagram::unbound()?;
        socket.connect(path)?;
        Ok(Syslog { path: path.to_path_buf(), facility, socket: Mutex::new(socket) })
    }

    /// Sends one message; a daemon that restarted since is connected to again.
    pub fn send(&self, level: LogLevel, message: &str) {
        let datagram = datagram(self.facility, level, SystemTime::now(), std::process::id(), message);
        let mut socket = self.socket.lock().unwrap_or_else(|p| p.into_inner());
        if socket.send(datagram.as_bytes()).is_ok() {
            return;
        }
        if let Ok(fresh) = UnixDatagram::unbound().and_then(|s| s.connect(&self.path).map(|()| s)) {
            *socket = fresh;
            let _ = socket.send(datagram.as_bytes());
        }
    }
}

fn datagram(facility: u8, level: LogLevel, at: SystemTime, pid: u32, message: &str) -> String {
    let c = crate::log_time::civil(at);
    // A message cannot end one datagram and begin a forged next one.
    let message = message.replace(['\n', '\r'], " ");
    format!(
        "<{}>{} {:>2} {:02}:{:02}:{:02} warren[{pid}]: {message}",
        u32::from(facility) * 8 + u32::from(level.number().min(7)),
        crate::log_time::MONTHS[c.month as usize - 1],
        c.day,
        c.hour,
        c.min,
        c.sec
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn bsd_format() {
        let t = UNIX_EPOCH + Duration::from_secs(1_793_956_707);
        assert_eq!(datagram(23, LogLevel::Error, t, 42, "[client 1.2.3.4:5] x\ny"), "<187>Nov  6 09:18:27 warren[42]: [client 1.2.3.4:5] x y");
        assert_eq!(datagram(3, LogLevel::Notice, t, 1, "m"), "<29>Nov  6 09:18:27 warren[1]: m");
    }

    #[test]
    fn sends_to_the_socket() {
        let path = std::env::temp_dir().join(format!("warren-syslog-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let daemon = UnixDatagram::bind(&path).unwrap();
        let syslog = Syslog::connect(&path, 16).unwrap();
        syslog.send(LogLevel::Warn, "hello");
        let mut buf = [0u8; 256];
        let n = daemon.recv(&mut buf).unwrap();
        let got = std::str::from_utf8(&buf[..n]).unwrap();
        assert!(got.starts_with("<132>") && got.ends_with(&format!(" warren[{}]: hello", std::process::id())), "{got}");
        let _ = std::fs::remove_file(&path);
        assert!(Syslog::connect(&path, 16).is_err());
    }
}
