//! Piped logs (`CustomLog "|program" ...`, `ErrorLog "|program"`), as
//! Apache's reliable piped logs: the parent starts the program, as the
//! server's User, in its own session and with no descriptor but its
//! standard input (the pipe), output (/dev/null) and error (the error log).
//! Every server child writes into the same pipe, whole lines of at most
//! PIPE_BUF bytes per write, so lines of different children never mix.
//!
//! The parent keeps the pipe's reading end: when the program dies, what is
//! written meanwhile waits in the pipe (enlarged to 1 MiB) for the program
//! the parent starts again, at once if it had run a while, else after a
//! delay that doubles up to a minute. Writes never block a server thread
//! for long: a write that finds the pipe full waits up to a second, then
//! its lines are counted as lost and the error log says so.
//!
//! A graceful restart keeps a program its new configuration still names
//! (the same `|command`): the log goes on into the same pipe.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use warren_config::accounts::Account;
use warren_config::log_target::PipedProgram;
use warren_config::{LogLevel, Origin};

/// Linux's PIPE_BUF: writes up to this size are atomic.
const PIPE_BUF: usize = 4096;

/// How much the pipe holds while its program is restarted.
const PIPE_SIZE: libc::c_int = 1 << 20;

/// How long a write waits for room in a full pipe before its lines are lost.
const FULL_PIPE_WAIT: Duration = Duration::from_secs(1);

/// A program that ran this long before it died is restarted at once.
const STEADY_RUN: Duration = Duration::from_secs(10);

/// The longest delay between restarts of a program that keeps dying.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(60);

/// How long a starting program is watched for an exit at once.
const START_WATCH: Duration = Duration::from_millis(200);

/// The longest the error log goes without saying lines were lost.
const LOSS_REPORT_EVERY: Duration = Duration::from_secs(10);

/// One piped log: the pipe and the program reading it.
pub struct PipedLog {
    pub program: PipedProgram,
    /// `CustomLog`, `TransferLog` or `ErrorLog`, and where: for messages.
    directive: &'static str,
    origin: Option<Origin>,
    /// The server's User (None: warren does not change user).
    account: Option<Account>,
    /// The program's standard error: the main error log's file, if it has one.
    stderr: Option<OwnedFd>,
    /// Each program's standard input; kept by the parent between programs.
    read: OwnedFd,
    /// Taken (closed) by [`stop_all`], so that the program sees the end.
    write: RwLock<Option<OwnedFd>>,
    running: Mutex<Running>,
}

/// The program's state, as the parent knows it.
struct Running {
    pid: Option<Pid>,
    started: Instant,
    /// Restarts since the program last ran steadily.
    quick_exits: u32,
    /// When a program that keeps dying may be started again.
    next_start: Option<Instant>,
}

/// Every piped log of this process, so that a graceful restart finds the
/// programs it keeps and the parent finds whose program it reaped.
static PIPED_LOGS: Mutex<Vec<Weak<PipedLog>>> = Mutex::new(Vec::new());

/// Where losses are said: the main error log of the latest configuration.
static LOSS_REPORTER: Mutex<Option<Weak<dyn Notices>>> = Mutex::new(None);

/// Lines lost in this process since the last report, and when that was.
static LOST_LINES: AtomicU64 = AtomicU64::new(0);
static LAST_LOSS_REPORT: Mutex<Option<Instant>> = Mutex::new(None);

/// Where a piped log says what befell it (its program's exits and
/// restarts, lines lost): the main error log, which logs.rs makes say it.
/// A trait here rather than that error log's type because the error log
/// writes into piped logs: this file does not import the logs that import it.
pub trait Notices: Send + Sync {
    fn notice(&self, level: LogLevel, message: &str);
}

impl<N: Notices + ?Sized> Notices for Arc<N> {
    fn notice(&self, level: LogLevel, message: &str) {
        (**self).notice(level, message);
    }
}

/// In a server child, just forked: every pipe's reading end is made
/// /dev/null, so that a child (whose code a tenant may run) cannot read
/// other hosts' log lines, which only the parent and the program need.
/// The descriptors stay valid (dup2 over them) for the `PipedLog`s the
/// child still holds.
pub fn blind_reading_ends_in_child() -> std::io::Result<()> {
    let null = File::open("/dev/null")?;
    let logs = PIPED_LOGS.lock().unwrap_or_else(|p| p.into_inner());
    for log in logs.iter().filter_map(Weak::upgrade) {
        // SAFETY: both descriptors are open and owned by live values; the
        // second is replaced in place (nix's dup2 would need it mutably,
        // and it is shared), and stays open until its OwnedFd drops.
        if unsafe { libc::dup2(null.as_raw_fd(), log.read.as_raw_fd()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl PipedLog {
    /// The piped log of `program`: the running one if this process has it
    /// (a graceful restart), else a new pipe and program. An error names
    /// the directive and says why the program could not start or that it
    /// exited at once.
    pub fn open(program: &PipedProgram, directive: &'static str, origin: Option<&Origin>, account: Option<&Account>, stderr: Option<File>) -> Result<Arc<PipedLog>, String> {
        let mut logs = PIPED_LOGS.lock().unwrap_or_else(|p| p.into_inner());
        logs.retain(|l| l.strong_count() > 0);
        let same_user = |l: &PipedLog| l.account.as_ref().map(|a| a.uid) == account.map(|a| a.uid);
        if let Some(found) = logs.iter().filter_map(Weak::upgrade).find(|l| l.program == *program && same_user(l)) {
            return Ok(found);
        }
        let describe = |what: String| match origin {
            Some(o) => format!("{o}: {directive} {}: {what}", program.spec),
            None => format!("{directive} {}: {what}", program.spec),
        };
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| describe(format!("cannot make a pipe: {e}")))?;
        // Larger than the default 64 KB, for the lines written while the
        // program restarts; a smaller system limit leaves the default.
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
        fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(|e| describe(format!("cannot make the pipe non-blocking: {e}")))?;
        let log = Arc::new(PipedLog {
            program: program.clone(),
            directive,
            origin: origin.cloned(),
            account: account.cloned(),
            stderr: stderr.map(OwnedFd::from),
            read,
            write: RwLock::new(Some(write)),
            running: Mutex::new(Running { pid: None, started: Instant::now(), quick_exits: 0, next_start: None }),
        });
        let pid = log.start().map_err(|e| describe(format!("cannot start the piped-log program: {e}")))?;
        if let Some(how) = exited_within(pid, START_WATCH) {
            return Err(describe(format!("the piped-log program exited at once ({how})")));
        }
        logs.push(Arc::downgrade(&log));
        Ok(log)
    }

    /// A new descriptor of the pipe's writing end.
    pub fn writer(&self) -> Option<File> {
        let write = self.write.read().unwrap_or_else(|p| p.into_inner());
        write.as_ref()?.try_clone().ok().map(File::from)
    }

    /// Writes `bytes` (whole lines) into the pipe, at most PIPE_BUF bytes
    /// of whole lines at a time; a longer line goes alone, and may mix with
    /// others, as in Apache. Lines that find the pipe full for a second are
    /// lost, and said to be.
    pub fn write_lines(&self, bytes: &[u8]) {
        let write = self.write.read().unwrap_or_else(|p| p.into_inner());
        let Some(write) = write.as_ref() else { return };
        let mut rest = bytes;
        let deadline = Instant::now() + FULL_PIPE_WAIT;
        while !rest.is_empty() {
            let chunk = whole_lines_within(rest, PIPE_BUF);
            match nix::unistd::write(write, &rest[..chunk]) {
                Ok(n) => rest = &rest[n..],
                Err(nix::errno::Errno::EINTR) => {}
                Err(nix::errno::Errno::EAGAIN) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let mut fds = [PollFd::new(write.as_fd(), PollFlags::POLLOUT)];
                    let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::ZERO);
                    if left.is_zero() || matches!(poll(&mut fds, timeout), Ok(0)) {
                        return self.lost(rest);
                    }
                }
                Err(_) => return self.lost(rest),
            }
        }
    }

    fn lost(&self, bytes: &[u8]) {
        let lines = bytes.iter().filter(|&&b| b == b'\n').count().max(1) as u64;
        let total = LOST_LINES.fetch_add(lines, Ordering::Relaxed) + lines;
        let mut last = LAST_LOSS_REPORT.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < LOSS_REPORT_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        drop(last);
        LOST_LINES.fetch_sub(total, Ordering::Relaxed);
        let reporter = LOSS_REPORTER.lock().unwrap_or_else(|p| p.into_inner()).as_ref().and_then(Weak::upgrade);
        if let Some(log) = reporter {
            log.notice(
                LogLevel::Error,
                &format!("{}: {total} log lines lost: the piped-log program has not read its pipe for {} s", self.described(), FULL_PIPE_WAIT.as_secs()),
            );
        }
    }

    fn described(&self) -> String {
        match &self.origin {
            Some(o) => format!("{o}: {} {}", self.directive, self.program.spec),
            None => format!("{} {}", self.directive, self.program.spec),
        }
    }

    /// Starts the program, reading the pipe.
    fn start(&self) -> std::io::Result<Pid> {
        let argv = &self.program.argv;
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]).current_dir("/").stdin(Stdio::from(self.read.try_clone()?)).stdout(Stdio::null());
        match &self.stderr {
            Some(f) => command.stderr(Stdio::from(f.try_clone()?)),
            // No program running as User may hold a terminal (see
            // mpm's log_relay); any other standard error it inherits.
            // SAFETY: isatty only looks at the descriptor.
            None if unsafe { libc::isatty(2) } == 1 => command.stderr(Stdio::null()),
            None => command.stderr(Stdio::inherit()),
        };
        if let Some(a) = &self.account {
            // Command drops the supplementary groups when it changes user as root.
            command.uid(a.uid.as_raw()).gid(a.gid.as_raw());
        }
        // SAFETY: setsid and close_range are async-signal-safe system calls.
        unsafe {
            command.pre_exec(|| {
                // Its own session: a signal to warren's process group (a
                // terminal's ^C) does not reach it; it ends when the pipe does.
                libc::setsid();
                // Nothing else of warren's (listeners, log files, the
                // scoreboard) crosses the exec; CLOEXEC rather than close
                // keeps std's exec-error pipe working.
                if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // Reaped by the parent's waitpid(-1) (see `reaped`), not through Child.
        let child = command.spawn()?;
        let pid = Pid::from_raw(child.id() as i32);
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.pid = Some(pid);
        running.started = Instant::now();
        running.next_start = None;
        Ok(pid)
    }

    /// The program `pid` ended (`how`): starts another, at once or after
    /// the delay its quick exits earned.
    fn ended(&self, how: &str, log: &dyn Notices) {
        let delay = {
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            running.pid = None;
            if running.started.elapsed() >= STEADY_RUN {
                running.quick_exits = 0;
            } else {
                running.quick_exits += 1;
            }
            let delay = restart_delay(running.quick_exits);
            running.next_start = Some(Instant::now() + delay);
            delay
        };
        log.notice(
            LogLevel::Warn,
            &format!("{}: the piped-log program exited ({how}); restarting it in {} s, lines written meanwhile wait in its pipe", self.described(), delay.as_secs()),
        );
        if delay.is_zero() {
            self.restart(log);
        }
    }

    fn restart(&self, log: &dyn Notices) {
        if let Err(e) = self.start() {
            let delay = {
                let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
                running.quick_exits += 1;
                let delay = restart_delay(running.quick_exits);
                running.next_start = Some(Instant::now() + delay);
                delay
            };
            log.notice(LogLevel::Error, &format!("{}: cannot restart the piped-log program: {e}; trying again in {} s", self.described(), delay.as_secs()));
        }
    }

    fn due(&self, now: Instant) -> bool {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.pid.is_none() && running.next_start.is_some_and(|t| t <= now)
    }

    fn runs(&self, pid: Pid) -> bool {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).pid == Some(pid)
    }
}

/// No delay for a program that ran steadily; then 1, 2, 4 ... 60 s.
fn restart_delay(quick_exits: u32) -> Duration {
    match quick_exits {
        0 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 1).min(6)).min(MAX_RESTART_DELAY),
    }
}

/// The length of the longest run of whole lines in `bytes` within `limit`
/// (all of `bytes` if they fit; a first line longer than `limit` whole).
fn whole_lines_within(bytes: &[u8], limit: usize) -> usize {
    if bytes.len() <= limit {
        return bytes.len();
    }
    match bytes[..limit].iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None => bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1),
    }
}

/// How `pid` ended, if it does within `wait`.
fn exited_within(pid: Pid, wait: Duration) -> Option<String> {
    let deadline = Instant::now() + wait;
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return Some(format!("exit status {code}")),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Some(format!("signal {sig:?}")),
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}

/// The parent reaped `pid`: if it was a piped-log program, another is
/// started (now or later, see [`restart_due`]) and true is returned.
pub fn reaped(pid: Pid, how: &str, log: &dyn Notices) -> bool {
    let found = live_logs().into_iter().find(|l| l.runs(pid));
    match found {
        Some(l) => {
            l.ended(how, log);
            true
        }
        None => false,
    }
}

/// Starts the programs whose restart delay has passed (the parent, each second).
pub fn restart_due(log: &dyn Notices) {
    let now = Instant::now();
    for l in live_logs().into_iter().filter(|l| l.due(now)) {
        l.restart(log);
    }
}

/// Says lost lines in `log` (the latest configuration's main error log).
pub fn report_losses_to<L: Notices + 'static>(log: &Arc<L>) {
    let log: Weak<L> = Arc::downgrade(log);
    let log: Weak<dyn Notices> = log;
    *LOSS_REPORTER.lock().unwrap_or_else(|p| p.into_inner()) = Some(log);
}

/// At the server's stop, once its children are gone: closes the pipes, so
/// that each program reads what is left, sees the end and exits; one still
/// running after `wait` (it does not read its input) is sent SIGTERM, as
/// Apache's are.
pub fn stop_all(wait: Duration) {
    let logs = live_logs();
    for l in &logs {
        l.write.write().unwrap_or_else(|p| p.into_inner()).take();
    }
    let deadline = Instant::now() + wait;
    for l in &logs {
        let Some(pid) = l.running.lock().unwrap_or_else(|p| p.into_inner()).pid.take() else { continue };
        if exited_within(pid, deadline.saturating_duration_since(Instant::now())).is_none() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let _ = waitpid(pid, None);
        }
    }
}

fn live_logs() -> Vec<Arc<PipedLog>> {
    PIPED_LOGS.lock().unwrap_or_else(|p| p.into_inner()).iter().filter_map(Weak::upgrade).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_of_whole_lines() {
        assert_eq!(whole_lines_within(b"a\nb\n", 10), 4);
        assert_eq!(whole_lines_within(b"aaaa\nbbbb\ncc\n", 10), 10);
        assert_eq!(whole_lines_within(b"aaaaaaaaaaaa\nb\n", 10), 13);
        assert_eq!(whole_lines_within(b"aaaaaaaaaaaaa", 10), 13);
    }

    #[test]
    fn delays_double_up_to_a_minute() {
        let delays: Vec<u64> = (0..9).map(|n| restart_delay(n).as_secs()).collect();
        assert_eq!(delays, [0, 1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[test]
    fn a_program_that_exits_at_once_is_refused_by_name() {
        let program = warren_config::log_target::piped_program("|exit 3").unwrap().unwrap();
        let e = PipedLog::open(&program, "CustomLog", None, None, None).err().expect("refused");
        assert_eq!(e, "CustomLog |exit 3: the piped-log program exited at once (exit status 3)");
        let missing = warren_config::log_target::piped_program("||/nonexistent/rotatelogs x").unwrap().unwrap();
        let e = PipedLog::open(&missing, "ErrorLog", None, None, None).err().expect("refused");
        assert!(e.starts_with("ErrorLog ||/nonexistent/rotatelogs x: cannot start the piped-log program: "), "{e}");
    }

    #[test]
    fn lines_reach_the_program_and_a_reopen_finds_it() {
        let out = std::env::temp_dir().join(format!("warren-piped-{}", std::process::id()));
        let program = warren_config::log_target::piped_program(&format!("||/usr/bin/tee -a {}", out.display())).unwrap().unwrap();
        let log = PipedLog::open(&program, "CustomLog", None, None, None).expect("starts");
        assert!(Arc::ptr_eq(&log, &PipedLog::open(&program, "CustomLog", None, None, None).unwrap()));
        let pid = log.running.lock().unwrap().pid.unwrap();
        log.write_lines(b"one\ntwo\n");
        drop(log);
        // The last writer gone, tee reads the end of its input and exits.
        assert!(matches!(waitpid(pid, None), Ok(WaitStatus::Exited(_, 0))));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "one\ntwo\n");
        let _ = std::fs::remove_file(&out);
    }
}
