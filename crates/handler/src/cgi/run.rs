//! One CGI program's exchange, on a thread that may block: started by the
//! spawner, the spooled request body written to its standard input (on a
//! thread of its own, so that a program answering before it has read the
//! body cannot hold both sides), its standard error logged line by line
//! (on another), its answer's head read within Timeout, then its output
//! streamed. A failure is written to the ScriptLog when there is one.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use nix::poll::PollFlags;
use warren_config::LogLevel;
use warren_http::RequestHead;

use super::spawner::{self, Launch, Running};
use crate::fastcgi::exchange::{discard, spool, NoBody, Reply};
use crate::fastcgi::response::{cgi_head, BlockScan};
use crate::fastcgi::response::CgiHead;
use crate::gateway::error::GatewayError;
use crate::gateway::Gateway;
use crate::spool::Spooled;
use crate::{Body, BodySource, ConnInfo, Outcome, Request, RequestBody, Response, Site};

const READ_SIZE: usize = 16 * 1024;

impl Site {
    /// Runs a CGI program for the request: its body to the program, its answer back.
    pub(crate) fn run_cgi(&self, gw: Box<Gateway>, head: &RequestHead, conn: &ConnInfo, body: &mut dyn RequestBody) -> Response {
        let body: &mut dyn RequestBody = if gw.takes_body() {
            body
        } else {
            discard(body);
            &mut NoBody
        };
        let spooled = match spool(body) {
            Ok(s) => s,
            Err(e) => {
                let mut r = self.error(Request::new(head, conn, gw.host), e.status, &e.reason);
                r.close = true;
                return r;
            }
        };
        let logged_body = match &spooled {
            Spooled::Memory(b) => b[..b.len().min(self.settings.cgi.script_log_buffer)].to_vec(),
            _ => Vec::new(),
        };
        match self.cgi_exchange(&gw, conn, spooled) {
            Ok(Reply::Response(r)) => r,
            Ok(Reply::Redirect(location)) => self.internal_redirect(&gw, head, conn, &location),
            Err(e) => {
                self.script_log(&gw, head, &e, &logged_body);
                let failed = self.gateway_failed(&gw, head, conn, &e);
                self.run_outcome(self.follow_error_document(Outcome::Ready(failed), head, conn), head, conn)
            }
        }
    }

    fn cgi_exchange(&self, gw: &Gateway, conn: &ConnInfo, spooled: Spooled) -> Result<Reply, GatewayError> {
        let program = gw.program.as_ref().expect("a CGI plan");
        let script = gw.script.clone();
        let mut env: Vec<Vec<u8>> = gw.params.iter().map(|(n, v)| [n.as_bytes(), b"=", v].concat()).collect();
        if !matches!(spooled, Spooled::None) {
            env.push(format!("CONTENT_LENGTH={}", spooled.len()).into_bytes());
        }
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&program.path));
        let argv0 = path.file_name().map_or_else(|| program.path.clone(), |n| n.as_bytes().to_vec());
        let launch = Launch { program: program.path.clone(), root: program.root.as_os_str().as_bytes().to_vec(), tree: program.tree.clone(), user_group: program.user_group.clone(), argv: vec![argv0], env };
        let mut running = spawner::spawn(&launch).map_err(|n| GatewayError { status: n.status, why: format!("CGI: {}", n.why) })?;
        log_stderr(&mut running, self.hosts[gw.host].error_log.clone(), conn.useragent, script.clone());
        feed_stdin(&mut running, spooled);
        let timeout = self.settings.timeout;
        let mut block = Vec::new();
        let mut scan = BlockScan::default();
        let mut buf = vec![0u8; READ_SIZE];
        let mut nph_status = None;
        let mut head: CgiHead = loop {
            let n = match read_within(&running.stdout, &mut buf, timeout) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    running.kill();
                    return Err(GatewayError { status: 504, why: format!("CGI: Timeout waiting for output from CGI script {script} (its process group killed)") });
                }
                Err(e) => return Err(GatewayError { status: 500, why: format!("CGI: error reading the output of {script}: {e}") }),
            };
            if n == 0 {
                return Err(GatewayError { status: 500, why: format!("CGI: End of script output before headers: {script}") });
            }
            block.extend_from_slice(&buf[..n]);
            if program.nph && nph_status.is_none() {
                let Some(nl) = block.iter().position(|&b| b == b'\n') else { continue };
                let line: Vec<u8> = block.drain(..=nl).collect();
                nph_status = Some(nph_status_line(&line).ok_or_else(|| GatewayError { status: 500, why: format!("CGI: bad status line from nph- script {script}: {:?}", String::from_utf8_lossy(&line)) })?);
            }
            match cgi_head(&mut block, &mut scan) {
                Ok(Some(h)) => break h,
                Ok(None) => {}
                Err(why) => return Err(GatewayError { status: 500, why: format!("CGI: malformed header from script {script}: {why}") }),
            }
        };
        if let Some(status) = nph_status {
            // An nph- program's answer is its own: no local redirect, and
            // sent as written.
            (head.status, head.explicit_status, head.redirect, head.unbuffered) = (status, true, None, true);
        } else if let Some(location) = head.redirect.take() {
            return Ok(Reply::Redirect(location));
        }
        let mut r = gw.response(&mut head);
        let source = CgiOutput { running, timeout, first: Some(std::mem::take(&mut head.first_body)), read_ahead: !head.unbuffered, buf, script };
        r.body = Body::Stream { source: Box::new(source), len: head.content_length };
        Ok(Reply::Response(r))
    }

    /// Writes a failed run to the ScriptLog, as mod_cgi's log_script does,
    /// while the log is under ScriptLogLength.
    fn script_log(&self, gw: &Gateway, head: &RequestHead, e: &GatewayError, body: &[u8]) {
        let cgi = &self.settings.cgi;
        let Some(path) = &cgi.script_log else { return };
        if std::fs::metadata(path).is_ok_and(|m| m.len() > cgi.script_log_length) {
            return;
        }
        let mut text = format!("%% [{}] {} {} {}\n%% {} {}\n%request\n", httpdate::fmt_http_date(std::time::SystemTime::now()), head.method(), String::from_utf8_lossy(head.path_and_query()), head.version.as_str(), e.status, gw.script);
        for (n, v) in head.headers() {
            text.push_str(&format!("{}: {}\n", String::from_utf8_lossy(n), String::from_utf8_lossy(v)));
        }
        if !body.is_empty() {
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(body));
            text.push('\n');
        }
        text.push_str(&format!("%error\n{}\n", e.why));
        let written = std::fs::OpenOptions::new().create(true).append(true).open(path).and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(err) = written {
            self.hosts[gw.host].error_log.error(None, &format!("ScriptLog {}: {err}", path.display()));
        }
    }
}

/// The status of an nph- program's first line (`HTTP/1.1 200 OK`).
fn nph_status_line(line: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split_whitespace();
    words.next().filter(|v| v.starts_with("HTTP/"))?;
    words.next()?.parse().ok().filter(|s| (200..=599).contains(s))
}

/// Reads what `f` has, waiting at most `timeout` for it to have anything.
fn read_within(mut f: &File, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let ms = PollTimeout::try_from(timeout.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
    loop {
        let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")),
            Ok(_) => return f.read(buf),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The program's standard error, to the error log as Apache logs it
/// (AH01215), on a thread that ends when the program's side closes or,
/// at the latest, with the request (what is already written then is
/// logged): a descendant that keeps the pipe open holds no thread.
fn log_stderr(running: &mut Running, log: std::sync::Arc<crate::logs::ErrorLog>, peer: std::net::SocketAddr, script: String) {
    let Ok(stderr) = running.stderr.try_clone() else { return };
    let over = running.over.clone();
    let _ = std::thread::Builder::new().name("cgi-stderr".into()).spawn(move || {
        let _ = set_nonblocking(&stderr);
        let log_line = |line: &[u8]| {
            let line = String::from_utf8_lossy(line);
            if !line.trim().is_empty() {
                log.log(LogLevel::Error, Some(peer), &format!("AH01215: {}: {script}", line.trim_end()));
            }
        };
        let mut pending = Vec::new();
        let mut buf = [0u8; 4096];
        let mut ended = false;
        loop {
            match (&stderr).read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                        log_line(&pending[..nl]);
                        pending.drain(..=nl);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && !ended => ended = wait_or_over(&stderr, PollFlags::POLLIN, &over),
                Err(_) => break,
            }
        }
        log_line(&pending);
    });
}

/// Waits until `f` is ready for `what` or the request is over (`over`
/// readable or hung up); whether it is over.
fn wait_or_over(f: &File, what: PollFlags, over: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollTimeout};
    loop {
        let mut fds = [PollFd::new(f.as_fd(), what), PollFd::new(over.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => return fds[1].revents().is_some_and(|r| !r.is_empty()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return true,
        }
    }
}

fn set_nonblocking(f: &File) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(f, FcntlArg::F_GETFL)?);
    fcntl(f, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).map(|_| ())
}

/// Writes `data` to the program's standard input until done, the program's
/// side closes, or the request is over.
fn write_until_over(stdin: &File, mut data: &[u8], over: &std::os::fd::OwnedFd) -> bool {
    while !data.is_empty() {
        match (&*stdin).write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if wait_or_over(stdin, PollFlags::POLLOUT, over) {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}

/// The request body to the program's standard input, on a thread: the
/// program may answer before reading it all.
fn feed_stdin(running: &mut Running, spooled: Spooled) {
    let Some(mut stdin) = running.stdin.take() else { return };
    match spooled {
        Spooled::None => {}
        Spooled::Memory(b) if b.len() <= 4096 => {
            // Fits in the pipe: written at once.
            let _ = stdin.write_all(&b);
        }
        spooled => {
            // Non-blocking, so that the thread ends with the request even
            // when something that never reads holds the pipe open.
            if set_nonblocking(&stdin).is_err() {
                return;
            }
            let over = running.over.clone();
            let _ = std::thread::Builder::new().name("cgi-stdin".into()).spawn(move || match spooled {
                Spooled::Memory(b) => {
                    write_until_over(&stdin, &b, &over);
                }
                Spooled::File(mut f, _) => {
                    let mut buf = vec![0u8; READ_SIZE];
                    while let Ok(n @ 1..) = f.read(&mut buf) {
                        if !write_until_over(&stdin, &buf[..n], &over) {
                            break;
                        }
                    }
                }
                Spooled::None => {}
            });
        }
    }
}

/// The program's output after its head, as it comes.
struct CgiOutput {
    running: Running,
    timeout: Duration,
    first: Option<Vec<u8>>,
    read_ahead: bool,
    buf: Vec<u8>,
    script: String,
}

impl BodySource for CgiOutput {
    fn read_ahead(&self) -> bool {
        self.read_ahead
    }

    fn next_piece(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        if let Some(first) = self.first.take().filter(|f| !f.is_empty()) {
            out.extend_from_slice(&first);
            return Ok(true);
        }
        match read_within(&self.running.stdout, &mut self.buf, self.timeout) {
            Ok(0) => Ok(false),
            Ok(n) => {
                out.extend_from_slice(&self.buf[..n]);
                Ok(true)
            }
            Err(e) => {
                self.running.kill();
                Err(io::Error::other(format!("CGI: {e} reading the output of {} (its process group killed)", self.script)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nph_status_lines() {
        assert_eq!(super::nph_status_line(b"HTTP/1.1 203 Hi\r\n"), Some(203));
        assert_eq!(super::nph_status_line(b"HTTP/1.0 404\n"), Some(404));
        assert_eq!(super::nph_status_line(b"Status: 200\n"), None);
        assert_eq!(super::nph_status_line(b"HTTP/1.1 100 Continue\n"), None);
    }
}
