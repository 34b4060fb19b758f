//! The text of one error-log line: warren's own
//! (`[time] [level] [pid N] [client ip:port] message`), or what
//! ErrorLogFormat says, with Apache's rule for fields (log.c's
//! do_errorlog_format): an item without a value removes its field.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::SystemTime;

use warren_config::error_log_format::{ErrorLogItem, ErrorLogPart};
use warren_config::LogLevel;

use crate::log_time::{civil, error_log_time, DAYS, MONTHS};

pub(crate) fn default_error_line(level: LogLevel, client: Option<SocketAddr>, message: &str) -> String {
    let mut line = String::with_capacity(96 + message.len());
    let _ = write!(line, "[{}] [{}] [pid {}] ", error_log_time(SystemTime::now()), level.name(), std::process::id());
    if let Some(c) = client {
        let _ = write!(line, "[client {c}] ");
    }
    line.push_str(message);
    line.push('\n');
    line
}

pub(crate) fn formatted_error_line(items: &[ErrorLogItem], level: LogLevel, client: Option<SocketAddr>, message: &str) -> String {
    formatted_at(items, level, client, message, SystemTime::now())
}

fn formatted_at(items: &[ErrorLogItem], level: LogLevel, client: Option<SocketAddr>, message: &str, now: SystemTime) -> String {
    let mut line = String::with_capacity(96 + message.len());
    let mut field_start = 0;
    let mut skipping = false;
    for item in items {
        if item.field_start {
            if skipping {
                skipping = false;
            } else {
                field_start = line.len();
            }
        }
        if item.part == ErrorLogPart::Message {
            line.push_str(message);
            continue;
        }
        if skipping {
            continue;
        }
        let value = if item.min_level > level.number() { None } else { value(&item.part, level, client, now) };
        match value {
            Some(v) => line.push_str(&v),
            None if item.hyphen && item.min_level <= level.number() => line.push('-'),
            None => {
                line.truncate(field_start);
                skipping = true;
            }
        }
    }
    line.push('\n');
    line
}

fn value(part: &ErrorLogPart, level: LogLevel, client: Option<SocketAddr>, now: SystemTime) -> Option<String> {
    Some(match part {
        ErrorLogPart::Literal(s) => s.clone(),
        ErrorLogPart::Time { compact: false, micros: true } => error_log_time(now),
        ErrorLogPart::Time { compact, micros } => {
            let c = civil(now);
            let mut t = if *compact {
                format!("{}-{:02}-{:02} {:02}:{:02}:{:02}", c.year, c.month, c.day, c.hour, c.min, c.sec)
            } else {
                format!("{} {} {:02} {:02}:{:02}:{:02}", DAYS[c.weekday], MONTHS[c.month as usize - 1], c.day, c.hour, c.min, c.sec)
            };
            if *micros {
                let _ = write!(t, ".{:06}", c.micros);
            }
            if !*compact {
                let _ = write!(t, " {}", c.year);
            }
            t
        }
        ErrorLogPart::Level => level.name().to_string(),
        ErrorLogPart::Pid => std::process::id().to_string(),
        ErrorLogPart::Tid => nix::unistd::gettid().to_string(),
        ErrorLogPart::Client => client?.to_string(),
        ErrorLogPart::Module => "core".to_string(),
        ErrorLogPart::Message | ErrorLogPart::Unavailable => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};
    use warren_config::error_log_format::{compile, DEFAULT};

    #[test]
    fn fields_without_a_value_are_left_out() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_337_907) + Duration::from_micros(42);
        let client: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        let pid = std::process::id();
        let tid = nix::unistd::gettid();
        let apache = compile(DEFAULT).unwrap();
        assert_eq!(
            formatted_at(&apache, LogLevel::Error, Some(client), "File does not exist", t),
            format!("[Sun Nov 22 08:58:27.000042 2026] [core:error] [pid {pid}:tid {tid}] [client 192.0.2.7:5000] File does not exist\n")
        );
        assert_eq!(formatted_at(&apache, LogLevel::Notice, None, "started", t), format!("[Sun Nov 22 08:58:27.000042 2026] [core:notice] [pid {pid}:tid {tid}] started\n"));
        // `%7x` only at debug; `-` for no value; compact times.
        let items = compile("%{c}t %{cu}t %t [%-a] %7P: %M").unwrap();
        assert_eq!(formatted_at(&items, LogLevel::Warn, None, "m", t), "2026-11-22 08:58:27 2026-11-22 08:58:27.000042 Sun Nov 22 08:58:27 2026 [-] m\n");
        assert_eq!(formatted_at(&items, LogLevel::Debug, None, "m", t), format!("2026-11-22 08:58:27 2026-11-22 08:58:27.000042 Sun Nov 22 08:58:27 2026 [-] {pid}: m\n"));
    }
}
