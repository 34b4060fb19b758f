//! The error log (shared, one line per write) and access logs (buffered per
//! thread, flushed as whole lines so that children sharing a file with
//! O_APPEND never interleave within a line). Either may be a piped log
//! ([`crate::piped_log`]); the error log may be syslog ([`crate::syslog`]).

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use warren_config::accounts::Account;
use warren_config::error_log_format::ErrorLogItem;
use warren_config::log_target::{LogSink, PipedProgram};
use warren_config::{CustomLog, DurationUnit, LogItem, LogLevel, Origin};
use warren_http::RequestHead;

use crate::error_line::{default_error_line, formatted_error_line};
use crate::log_time::clf_time;
use crate::piped_log::PipedLog;
use crate::syslog::Syslog;

/// Log files are opened by root, through [`crate::root_files`]; a new
/// one is readable by all but the umask, as Apache makes them.
const LOG_MODE: u32 = 0o666;

/// A pool's slow log: the pool's user may be able to write its directory.
const SLOW_LOG_MODE: u32 = 0o640;

/// Opens a log file as root may: the error names the directive, its line
/// and the path.
fn open_log(directive: &str, origin: Option<&Origin>, path: &Path) -> Result<File, String> {
    crate::root_files::open_append(path, LOG_MODE).map_err(|e| crate::root_files::describe(directive, origin, path, &e))
}

/// Where error lines go: a file, standard error, a piped-log program or syslog.
pub struct ErrorLog {
    level: LogLevel,
    target: Mutex<Option<File>>,
    path: Option<PathBuf>,
    /// Where ErrorLog names the file, for the message that refuses it.
    origin: Option<Origin>,
    pipe: Option<Arc<PipedLog>>,
    syslog: Option<Syslog>,
    /// ErrorLogFormat (None: warren's own line).
    format: Option<Arc<Vec<ErrorLogItem>>>,
}

impl ErrorLog {
    /// The log in the file at `path` (None: standard error), which the
    /// ErrorLog at `origin` names.
    pub fn open(path: Option<&Path>, origin: Option<&Origin>, level: LogLevel) -> Result<ErrorLog, String> {
        let file = match path {
            Some(p) => Some(open_log("ErrorLog", origin, p)?),
            None => None,
        };
        Ok(ErrorLog { level, target: Mutex::new(file), path: path.map(Path::to_path_buf), origin: origin.cloned(), pipe: None, syslog: None, format: None })
    }

    /// The log to a piped-log program or syslog, which the ErrorLog at
    /// `origin` names: the error says why it cannot be.
    pub fn open_sink(sink: &LogSink, origin: Option<&Origin>, level: LogLevel, settings: &warren_config::Settings) -> Result<ErrorLog, String> {
        let (pipe, syslog) = match sink {
            LogSink::Pipe(program) => {
                let account = warren_config::accounts::server_account(settings.user.as_deref(), settings.group.as_deref())?;
                (Some(PipedLog::open(program, "ErrorLog", origin, account.as_ref(), None)?), None)
            }
            LogSink::Syslog(facility) => {
                let syslog = Syslog::connect(&settings.syslog_socket, *facility).map_err(|e| {
                    let at = origin.map(|o| format!("{o}: ")).unwrap_or_default();
                    format!("{at}ErrorLog syslog: cannot reach the syslog socket {}: {e} (is rsyslog or systemd-journald running? SyslogSocket names another)", settings.syslog_socket.display())
                })?;
                (None, Some(syslog))
            }
        };
        Ok(ErrorLog { level, target: Mutex::new(None), path: None, origin: origin.cloned(), pipe, syslog, format: None })
    }

    /// The log, writing its lines as ErrorLogFormat says.
    pub fn with_format(self, format: Option<Arc<Vec<ErrorLogItem>>>) -> ErrorLog {
        ErrorLog { format, ..self }
    }

    pub fn enabled(&self, level: LogLevel) -> bool {
        level <= self.level
    }

    /// `[Sun Nov 22 08:58:27.123456 2026] [error] [pid 42] [client 1.2.3.4:5] message`
    pub fn log(&self, level: LogLevel, client: Option<SocketAddr>, message: &str) {
        if self.enabled(level) {
            self.write(level, client, message);
        }
    }

    /// What the server decided and why: logged whatever LogLevel says, as
    /// Apache logs its notices.
    pub fn notice(&self, message: &str) {
        self.write(LogLevel::Notice, None, message);
    }

    fn write(&self, level: LogLevel, client: Option<SocketAddr>, message: &str) {
        if let Some(syslog) = &self.syslog {
            // syslog stamps the time, the pid and the level itself.
            return match client {
                Some(c) => syslog.send(level, &format!("[client {c}] {message}")),
                None => syslog.send(level, message),
            };
        }
        let line = match &self.format {
            Some(items) => formatted_error_line(items, level, client, message),
            None => default_error_line(level, client, message),
        };
        if let Some(pipe) = &self.pipe {
            return pipe.write_lines(line.as_bytes());
        }
        let mut target = self.target.lock().unwrap_or_else(|p| p.into_inner());
        let _ = match target.as_mut() {
            Some(f) => f.write_all(line.as_bytes()),
            None => std::io::stderr().write_all(line.as_bytes()),
        };
    }

    pub fn error(&self, client: Option<SocketAddr>, message: &str) {
        self.log(LogLevel::Error, client, message);
    }

    /// A new descriptor of the log file, None when the log is standard
    /// error: the server children's standard error, so that what they print
    /// lands in the log rather than on a terminal (they write the log
    /// anyway). Never for a pool's children: they print into a pipe the
    /// parent copies to the log, as they must not be able to truncate it.
    pub fn file(&self) -> Option<File> {
        if let Some(pipe) = &self.pipe {
            return pipe.writer();
        }
        self.target.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(|f| f.try_clone().ok())
    }

    /// Reopens the file (after log rotation). If it cannot be, the log
    /// goes on into the file it had.
    pub fn reopen(&self) -> Result<(), String> {
        if let Some(p) = &self.path {
            let f = open_log("ErrorLog", self.origin.as_ref(), p)?;
            *self.target.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
        }
        Ok(())
    }
}

impl warren_pool_api::ManagerLog for ErrorLog {
    fn warn(&self, message: &str) {
        self.log(LogLevel::Warn, None, message);
    }

    fn error(&self, message: &str) {
        self.log(LogLevel::Error, None, message);
    }

    fn notice(&self, message: &str) {
        ErrorLog::notice(self, message);
    }

    fn slow_request(&self, slowlog: &Path, entry: &str) {
        // Opened for each entry, by root, in a directory the pool's user
        // may be able to write.
        let written = match crate::root_files::open_append(slowlog, SLOW_LOG_MODE) {
            Ok(mut f) => f.write_all(format!("\n[{}] {entry}\n", clf_time(SystemTime::now())).as_bytes()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = written {
            self.log(LogLevel::Error, None, &format!("cannot write the slow log {}: {e}", slowlog.display()));
        }
    }
}

/// An access log file opened by the parent, shared by every writer; or a
/// piped log's pipe.
pub struct AccessLogFile {
    /// The file; for a piped log, the `|program` as written.
    pub path: PathBuf,
    target: AccessTarget,
    /// `CustomLog` or `TransferLog`, and where, for the message that refuses it.
    directive: &'static str,
    origin: Option<Origin>,
}

enum AccessTarget {
    File(Mutex<File>),
    Pipe(Arc<PipedLog>),
}

impl AccessLogFile {
    pub fn open(path: &Path, directive: &'static str, origin: Option<&Origin>) -> Result<Arc<AccessLogFile>, String> {
        let file = open_log(directive, origin, path)?;
        Ok(Arc::new(AccessLogFile { path: path.to_path_buf(), target: AccessTarget::File(Mutex::new(file)), directive, origin: origin.cloned() }))
    }

    /// The pipe of the program `log` names (started, or kept from the
    /// running configuration), run as `account`; its standard error is `stderr`.
    pub fn piped(log: &CustomLog, program: &PipedProgram, account: Option<&Account>, stderr: Option<File>) -> Result<Arc<AccessLogFile>, String> {
        let pipe = PipedLog::open(program, log.directive, log.origin.as_ref(), account, stderr)?;
        Ok(Arc::new(AccessLogFile { path: log.path.clone(), target: AccessTarget::Pipe(pipe), directive: log.directive, origin: log.origin.clone() }))
    }

    fn write_all(&self, bytes: &[u8]) {
        match &self.target {
            AccessTarget::File(file) => {
                let _ = file.lock().unwrap_or_else(|p| p.into_inner()).write_all(bytes);
            }
            AccessTarget::Pipe(pipe) => pipe.write_lines(bytes),
        }
    }

    /// Opens the file anew (after log rotation). If it cannot be, the log
    /// goes on into the file it had.
    pub fn reopen(&self) -> Result<(), String> {
        match &self.target {
            AccessTarget::File(file) => {
                let f = open_log(self.directive, self.origin.as_ref(), &self.path)?;
                *file.lock().unwrap_or_else(|p| p.into_inner()) = f;
            }
            // The program rotates what it writes (rotatelogs); the pipe stays.
            AccessTarget::Pipe(_) => {}
        }
        Ok(())
    }
}

/// What one finished request contributes to an access log line.
pub struct LogRecord<'a> {
    /// The connection's peer (`%{c}a`).
    pub peer: SocketAddr,
    /// The client's address (`%a`, `%h`): the peer, unless RemoteIPHeader
    /// found another behind it.
    pub useragent: SocketAddr,
    pub local: SocketAddr,
    pub head: Option<&'a RequestHead>,
    /// For requests that never parsed: what was received of the request line.
    pub raw_line: &'a [u8],
    pub status: u16,
    pub body_bytes: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub started: SystemTime,
    pub duration: Duration,
    pub server_name: &'a str,
    pub keepalive_count: u32,
    pub kept_alive: bool,
    pub aborted: bool,
    pub filename: Option<&'a Path>,
    pub response_headers: &'a [(crate::HeaderName, String)],
    /// The request environment (SetEnv, SetEnvIf), if it has one.
    pub env: Option<&'a crate::env::RequestEnv>,
    pub tls: Option<crate::TlsInfo>,
    /// The host the client named by SNI, for `%{SSL_TLS_SNI}x`.
    pub sni_name: Option<&'a str>,
}

/// A buffered writer of one log format to one file.
pub struct AccessLogWriter {
    format: Arc<Vec<LogItem>>,
    /// CustomLog's `env=[!]VAR`.
    condition: Option<(String, bool)>,
    file: Arc<AccessLogFile>,
    buf: Vec<u8>,
    /// BufferedLogs Off: each line is written as its request ends.
    write_through: bool,
}

/// Flush once this much is buffered.
const FLUSH_AT: usize = 16 * 1024;

impl AccessLogWriter {
    /// `buffered`: BufferedLogs (else each line is written at once).
    pub fn new(format: Arc<Vec<LogItem>>, file: Arc<AccessLogFile>, condition: Option<(String, bool)>, buffered: bool) -> Self {
        AccessLogWriter { format, condition, file, buf: Vec::with_capacity(FLUSH_AT * 2), write_through: !buffered }
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }

    pub fn write(&mut self, r: &LogRecord) {
        if let Some((var, negate)) = &self.condition {
            if r.env.and_then(|e| e.get(var)).is_some() == *negate {
                return;
            }
        }
        format_line(&mut self.buf, &self.format, r);
        if self.write_through || self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.file.write_all(&self.buf);
            self.buf.clear();
        }
    }
}

impl Drop for AccessLogWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    // Apache escapes quotes, backslashes and non-printables in logged values.
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
}

pub fn format_line(out: &mut Vec<u8>, items: &[LogItem], r: &LogRecord) {
    use std::io::Write as _;
    let dash = |out: &mut Vec<u8>, v: Option<&[u8]>| match v {
        Some(v) if !v.is_empty() => push_escaped(out, v),
        _ => out.push(b'-'),
    };
    let path_query = r.head.map(|h| h.path_and_query()).unwrap_or(b"");
    let (path, query) = crate::path::split_query(path_query);
    for item in items {
        match item {
            LogItem::Literal(s) => out.extend_from_slice(s.as_bytes()),
            LogItem::RemoteAddr => {
                let _ = write!(out, "{}", r.useragent.ip());
            }
            LogItem::PeerAddr => {
                let _ = write!(out, "{}", r.peer.ip());
            }
            LogItem::RemotePort => {
                let _ = write!(out, "{}", r.useragent.port());
            }
            LogItem::RemoteLogname => out.push(b'-'),
            // The user of the request's Basic credentials, as Apache logs r->user (also on a 401).
            LogItem::RemoteUser => match r.head.and_then(crate::auth::Credentials::of) {
                Some(c) if !c.user.is_empty() => push_escaped(out, c.user.as_bytes()),
                _ => out.push(b'-'),
            },
            LogItem::Time => {
                out.push(b'[');
                out.extend_from_slice(clf_time(r.started).as_bytes());
                out.push(b']');
            }
            LogItem::RequestLine => push_escaped(out, r.head.map_or(r.raw_line, |h| h.request_line())),
            LogItem::Status => {
                let _ = write!(out, "{}", r.status);
            }
            LogItem::BytesClf => {
                if r.body_bytes == 0 {
                    out.push(b'-');
                } else {
                    let _ = write!(out, "{}", r.body_bytes);
                }
            }
            LogItem::Bytes => {
                let _ = write!(out, "{}", r.body_bytes);
            }
            LogItem::BytesSent => {
                let _ = write!(out, "{}", r.bytes_sent);
            }
            LogItem::BytesReceived => {
                let _ = write!(out, "{}", r.bytes_received);
            }
            LogItem::RequestHeader(name) => dash(out, r.head.and_then(|h| h.header(name))),
            LogItem::ResponseHeader(name) => {
                dash(out, r.response_headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_bytes()))
            }
            LogItem::Duration(unit) => {
                let _ = match unit {
                    DurationUnit::Micros => write!(out, "{}", r.duration.as_micros()),
                    DurationUnit::Millis => write!(out, "{}", r.duration.as_millis()),
                    DurationUnit::Seconds => write!(out, "{}", r.duration.as_secs()),
                };
            }
            LogItem::Method => dash(out, r.head.map(|h| h.method().as_bytes())),
            LogItem::UrlPath => dash(out, Some(path)),
            LogItem::Query => push_escaped(out, query),
            LogItem::Protocol => dash(out, r.head.map(|h| h.version.as_str().as_bytes())),
            LogItem::ServerName => out.extend_from_slice(r.server_name.as_bytes()),
            LogItem::RequestedHost => {
                let host = r.head.and_then(|h| h.host()).map(strip_port);
                match host {
                    Some(h) if !h.is_empty() => push_escaped(out, h),
                    _ => out.extend_from_slice(r.server_name.as_bytes()),
                }
            }
            LogItem::LocalPort => {
                let _ = write!(out, "{}", r.local.port());
            }
            LogItem::LocalAddr => {
                let _ = write!(out, "{}", r.local.ip());
            }
            LogItem::Pid => {
                let _ = write!(out, "{}", std::process::id());
            }
            LogItem::KeepAliveCount => {
                let _ = write!(out, "{}", r.keepalive_count);
            }
            LogItem::ConnectionStatus => out.push(if r.aborted {
                b'X'
            } else if r.kept_alive {
                b'+'
            } else {
                b'-'
            }),
            LogItem::Filename => dash(out, r.filename.map(|p| p.as_os_str().as_encoded_bytes())),
            LogItem::Env(var) => dash(out, r.env.and_then(|e| e.get(var)).map(str::as_bytes)),
            LogItem::Ssl(var) => {
                let value = match (var.as_str(), &r.tls) {
                    ("HTTPS", None) => Some("off".to_string()),
                    ("HTTPS", Some(_)) => Some("on".to_string()),
                    (_, None) => None,
                    ("SSL_PROTOCOL", Some(t)) => Some(t.protocol.to_string()),
                    ("SSL_CIPHER", Some(t)) => Some(t.cipher.to_string()),
                    ("SSL_CIPHER_USEKEYSIZE" | "SSL_CIPHER_ALGKEYSIZE", Some(t)) => Some(t.cipher_bits.to_string()),
                    ("SSL_SESSION_RESUMED", Some(t)) => Some(if t.resumed { "Resumed" } else { "Initial" }.to_string()),
                    ("SSL_TLS_SNI", Some(_)) => r.sni_name.map(str::to_string),
                    _ => None,
                };
                dash(out, value.as_deref().map(str::as_bytes))
            }
        }
    }
    out.push(b'\n');
}

/// `host[:port]` -> `host` (IPv6 literals keep their brackets).
pub fn strip_port(host: &[u8]) -> &[u8] {
    if host.first() == Some(&b'[') {
        return match host.iter().position(|&b| b == b']') {
            Some(i) => &host[..=i],
            None => host,
        };
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(i) => &host[..i],
        None => host,
    }
}

impl crate::piped_log::Notices for ErrorLog {
    fn notice(&self, level: LogLevel, message: &str) {
        self.log(level, None, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn combined_line() {
        let (head, _) = warren_http::parse_head(
            b"GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: cu\"rl\r\n\r\n",
            &warren_http::HeadLimits { request_line: 100, field_size: 100, fields: 10, head: 1000 },
        )
        .unwrap()
        .unwrap();
        let items = warren_config::log_format::compile(warren_config::log_format::COMBINED).unwrap();
        let mut out = Vec::new();
        let r = LogRecord {
            peer: "127.0.0.1:5000".parse().unwrap(),
            useragent: "127.0.0.1:5000".parse().unwrap(),
            local: "127.0.0.1:80".parse().unwrap(),
            head: Some(&head),
            raw_line: b"",
            status: 200,
            body_bytes: 0,
            bytes_sent: 100,
            bytes_received: 50,
            started: UNIX_EPOCH + Duration::from_secs(1_795_337_907),
            duration: Duration::from_micros(1500),
            server_name: "h",
            keepalive_count: 0,
            kept_alive: true,
            aborted: false,
            filename: None,
            response_headers: &[],
            env: None,
            tls: None,
            sni_name: None,
        };
        format_line(&mut out, &items, &r);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "127.0.0.1 - - [22/Nov/2026:08:58:27 +0000] \"GET /a%20b?x=1 HTTP/1.1\" 200 - \"-\" \"cu\\\"rl\"\n"
        );

        // `%{VAR}e`, and CustomLog's env= condition.
        let mut env = crate::env::RequestEnv::default();
        env.set("SITE", "demo");
        let r = LogRecord { env: Some(&env), ..r };
        let mut out = Vec::new();
        format_line(&mut out, &warren_config::log_format::compile("%{SITE}e %{NONE}e").unwrap(), &r);
        assert_eq!(out, b"demo -\n");

        // mod_ssl's `%{VAR}x`, on a plain and on a TLS connection.
        let ssl = warren_config::log_format::compile("%{HTTPS}x %{SSL_PROTOCOL}x %{SSL_CIPHER}x %{SSL_SESSION_RESUMED}x %{SSL_TLS_SNI}x").unwrap();
        let mut out = Vec::new();
        format_line(&mut out, &ssl, &r);
        assert_eq!(out, b"off - - - -\n");
        let tls = crate::TlsInfo { protocol: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", cipher_bits: 128, resumed: true, sni_host: Some(1) };
        let mut out = Vec::new();
        format_line(&mut out, &ssl, &LogRecord { tls: Some(tls), sni_name: Some("a.test"), ..r });
        assert_eq!(out, b"on TLSv1.3 TLS_AES_128_GCM_SHA256 Resumed a.test\n");
        let path = std::env::temp_dir().join(format!("warren-env-log-{}", std::process::id()));
        let file = AccessLogFile::open(&path, "CustomLog", None).unwrap();
        let format = Arc::new(warren_config::log_format::compile("%m").unwrap());
        let mut only = AccessLogWriter::new(format.clone(), file.clone(), Some(("SITE".into(), false)), true);
        let mut unless = AccessLogWriter::new(format, file, Some(("SITE".into(), true)), true);
        only.write(&r);
        unless.write(&r);
        let without = LogRecord { env: None, ..r };
        only.write(&without);
        unless.write(&without);
        only.flush();
        unless.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "GET\nGET\n");

        // BufferedLogs On keeps the line until a flush; Off writes it at once.
        let file = AccessLogFile::open(&path, "CustomLog", None).unwrap();
        let format = Arc::new(warren_config::log_format::compile("%U").unwrap());
        let mut buffered = AccessLogWriter::new(format.clone(), file.clone(), None, true);
        let mut at_once = AccessLogWriter::new(format, file, None, false);
        buffered.write(&without);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "GET\nGET\n");
        at_once.write(&without);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "GET\nGET\n/a%20b\n");
        buffered.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "GET\nGET\n/a%20b\n/a%20b\n");
        let _ = std::fs::remove_file(&path);
    }
}
