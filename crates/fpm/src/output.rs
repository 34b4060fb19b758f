//! What a pool's children print. Their standard output and error are the
//! write end of a pipe of the pool's own, never a descriptor of the error
//! log file (which the pool's user could truncate or write anything into);
//! the parent drains the read end without blocking and logs it line by line,
//! as php-fpm's catch_workers_output: `[pool www] child said into stderr:
//! "..."`. The log is shared by every pool: each pool's lines are metered
//! by a bucket of its own ([`Bucket`]); what is over goes unlogged and is
//! counted, and one line says how many once lines are let through again.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use warren_pool_api::ManagerLog;

/// The longest line of a pool's output logged whole; the rest of a longer
/// line is cut.
const OUTPUT_LINE_MAX: usize = 1024;
/// How much of one pool's output the parent reads per pass, so that a
/// pool printing without pause cannot hold up the parent's other work.
const OUTPUT_READ_MAX: usize = 64 * 1024;

/// How many lines of one pool's output are logged a second, once its
/// burst is spent: a tenant printing without pause must not fill the disk
/// that every site logs to, nor keep the parent formatting its lines.
const OUTPUT_LINES_PER_SECOND: f64 = 20.0;
/// How many lines may come at once (a stack trace, a child's last words).
const OUTPUT_BURST: f64 = 200.0;

/// A token bucket: a line is logged for a token; tokens come back at
/// [`OUTPUT_LINES_PER_SECOND`] up to [`OUTPUT_BURST`].
struct Bucket {
    tokens: f64,
    at: Instant,
    /// Lines not logged since the last that was.
    dropped: u64,
}

impl Bucket {
    fn new(now: Instant) -> Bucket {
        Bucket { tokens: OUTPUT_BURST, at: now, dropped: 0 }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * OUTPUT_LINES_PER_SECOND).min(OUTPUT_BURST);
        self.at = now;
    }

    /// Whether a line may be logged at `now`; counted as dropped if not.
    fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }

    /// The line saying how many were dropped, once a line may be logged
    /// again (it takes the token of one).
    fn dropped_line(&mut self, pool: &str, now: Instant) -> Option<String> {
        if self.dropped == 0 {
            return None;
        }
        self.refill(now);
        if self.tokens < 1.0 {
            return None;
        }
        self.tokens -= 1.0;
        let n = std::mem::take(&mut self.dropped);
        let plural = if n == 1 { "" } else { "s" };
        Some(format!("[pool {pool}] {n} line{plural} of its children's output not logged: more than {OUTPUT_LINES_PER_SECOND} a second ({OUTPUT_BURST} at once)"))
    }
}

/// A pool's output pipe, and the line it is in the middle of.
pub(crate) struct Output {
    pub(crate) read: OwnedFd,
    pub(crate) write: OwnedFd,
    /// The start of a line whose end has not come yet.
    partial: Vec<u8>,
    /// Since when `partial` has waited for the rest of its line.
    partial_since: Option<Instant>,
    /// The current line was longer than OUTPUT_LINE_MAX: its start is
    /// logged, the rest is dropped up to its end.
    cutting: bool,
    /// What of it may be logged.
    bucket: Bucket,
}

impl Output {
    pub(crate) fn new() -> std::io::Result<Output> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        Ok(Output { read, write, partial: Vec::new(), partial_since: None, cutting: false, bucket: Bucket::new(Instant::now()) })
    }

    /// Reads what is there (up to OUTPUT_READ_MAX) and returns the whole
    /// lines, each at most OUTPUT_LINE_MAX bytes and whether it was cut.
    fn drain(&mut self) -> Vec<(Vec<u8>, bool)> {
        let mut lines = Vec::new();
        let mut buf = [0u8; 16384];
        let mut total = 0;
        while total < OUTPUT_READ_MAX {
            let n = match nix::unistd::read(&self.read, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            total += n;
            self.take(&buf[..n], &mut lines);
        }
        if self.partial.is_empty() {
            self.partial_since = None;
        } else if self.partial_since.is_none() {
            self.partial_since = Some(Instant::now());
        }
        lines
    }

    fn take(&mut self, mut data: &[u8], lines: &mut Vec<(Vec<u8>, bool)>) {
        while !data.is_empty() {
            let end = data.iter().position(|&b| b == b'\n');
            let (piece, rest) = match end {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &data[data.len()..]),
            };
            if !self.cutting {
                let room = OUTPUT_LINE_MAX - self.partial.len();
                self.partial.extend_from_slice(&piece[..piece.len().min(room)]);
                if piece.len() > room {
                    // Too long: what fits is logged now, the rest dropped.
                    lines.push((std::mem::take(&mut self.partial), true));
                    self.cutting = true;
                }
            }
            if end.is_some() {
                if !self.cutting {
                    lines.push((std::mem::take(&mut self.partial), false));
                }
                self.cutting = false;
            }
            data = rest;
        }
    }

    /// Logs the whole lines that have come, as the bucket lets through.
    pub(crate) fn log_lines(&mut self, pool: &str, log: &dyn ManagerLog) {
        self.log_lines_at(pool, log, Instant::now());
    }

    fn log_lines_at(&mut self, pool: &str, log: &dyn ManagerLog, now: Instant) {
        for (line, cut) in self.drain() {
            self.log_metered(pool, log, now, |pool| said(pool, &line, cut));
        }
    }

    /// Logs the start of a line that has waited `wait` for its end (or any,
    /// when `wait` is zero) as it is, and how many lines were not logged
    /// once one may be.
    pub(crate) fn log_stale(&mut self, pool: &str, log: &dyn ManagerLog, wait: Duration) {
        self.log_stale_at(pool, log, wait, Instant::now());
    }

    fn log_stale_at(&mut self, pool: &str, log: &dyn ManagerLog, wait: Duration, now: Instant) {
        if let Some(line) = self.stale(wait) {
            self.log_metered(pool, log, now, |pool| said(pool, &line, false));
        }
        if let Some(summary) = self.bucket.dropped_line(pool, now) {
            log.warn(&summary);
        }
    }

    /// One line of output, made only if the bucket lets it through, after
    /// the count of those that it did not.
    fn log_metered(&mut self, pool: &str, log: &dyn ManagerLog, now: Instant, line: impl FnOnce(&str) -> String) {
        if let Some(summary) = self.bucket.dropped_line(pool, now) {
            log.warn(&summary);
        }
        if self.bucket.take(now) {
            log.warn(&line(pool));
        }
    }

    /// The start of a line that has waited `wait` for its end (or any, when
    /// `wait` is zero).
    fn stale(&mut self, wait: Duration) -> Option<Vec<u8>> {
        let since = self.partial_since?;
        if since.elapsed() < wait {
            return None;
        }
        self.partial_since = None;
        Some(std::mem::take(&mut self.partial))
    }
}

/// A line a pool's child printed, as the error log shows it: quoted, with
/// control characters (a pool's user must not move the cursor of whoever
/// reads the log on a terminal) as `\xNN`, a carriage return before the
/// newline dropped.
fn said(pool: &str, line: &[u8], cut: bool) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut text = String::with_capacity(line.len() + 64);
    for c in String::from_utf8_lossy(line).chars() {
        if c.is_control() && c != '\t' {
            text.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            text.push(c);
        }
    }
    let cut = if cut { format!(" (cut at {OUTPUT_LINE_MAX} bytes)") } else { String::new() };
    format!("[pool {pool}] child said into stderr: \"{text}\"{cut}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(o: &mut Output, data: &[u8]) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        o.take(data, &mut out);
        out.into_iter().map(|(l, cut)| (String::from_utf8(l).unwrap(), cut)).collect()
    }

    #[test]
    fn output_lines_are_whole_and_bounded() {
        let mut o = Output::new().unwrap();
        assert_eq!(lines(&mut o, b"one\ntw"), [("one".to_string(), false)]);
        assert_eq!(lines(&mut o, b"o\n\nthree"), [("two".to_string(), false), (String::new(), false)]);
        assert_eq!(o.partial, b"three");
        // Longer than the bound: its start, marked cut; the rest dropped up to its end.
        let long = "x".repeat(OUTPUT_LINE_MAX * 3);
        let got = lines(&mut o, format!("{long}\nafter\n").as_bytes());
        assert_eq!(got, [(format!("three{}", &long[..OUTPUT_LINE_MAX - 5]), true), ("after".to_string(), false)]);
        // Exactly the bound is whole, whatever the reads it comes in.
        let exact = "y".repeat(OUTPUT_LINE_MAX);
        assert!(lines(&mut o, exact.as_bytes()).is_empty());
        assert_eq!(lines(&mut o, b"\n"), [(exact, false)]);
    }

    #[test]
    fn output_is_read_from_the_pipe_without_blocking() {
        let mut o = Output::new().unwrap();
        assert!(o.drain().is_empty(), "nothing written: no wait, no line");
        nix::unistd::write(&o.write, b"a\nb").unwrap();
        assert_eq!(o.drain(), [(b"a".to_vec(), false)]);
        assert!(o.stale(Duration::from_secs(60)).is_none(), "a fresh partial line waits for its end");
        assert_eq!(o.stale(Duration::ZERO), Some(b"b".to_vec()));
        assert!(o.stale(Duration::ZERO).is_none());
    }

    #[test]
    fn the_bucket_lets_a_burst_then_a_rate_through_and_counts_the_rest() {
        let t0 = Instant::now();
        let mut b = Bucket::new(t0);
        let burst = OUTPUT_BURST as usize;
        assert_eq!((0..burst + 50).filter(|_| b.take(t0)).count(), burst);
        assert_eq!(b.dropped, 50);
        assert!(b.dropped_line("www", t0).is_none(), "no token: not said yet");
        // A second later, the rate's worth: the count first, then lines.
        let t1 = t0 + Duration::from_secs(1);
        let summary = b.dropped_line("www", t1).unwrap();
        assert_eq!(summary, "[pool www] 50 lines of its children's output not logged: more than 20 a second (200 at once)");
        assert_eq!((0..100).filter(|_| b.take(t1)).count(), OUTPUT_LINES_PER_SECOND as usize - 1);
        assert!(b.dropped_line("www", t1).is_none());
        // Never more than the burst, however long the pause.
        let later = t1 + Duration::from_secs(3600);
        assert_eq!((0..burst * 2).filter(|_| b.take(later)).count(), burst);
    }

    /// Through the logging functions: a flood of lines leaves the log a
    /// bounded number, and the count of the rest.
    #[test]
    fn a_flood_is_logged_bounded() {
        struct Lines(std::sync::Mutex<Vec<String>>);
        impl ManagerLog for Lines {
            fn warn(&self, m: &str) {
                self.0.lock().unwrap().push(m.to_string());
            }
            fn error(&self, m: &str) {
                self.warn(m);
            }
            fn notice(&self, m: &str) {
                self.warn(m);
            }
            fn slow_request(&self, _: &std::path::Path, _: &str) {}
        }
        let log = Lines(Default::default());
        let mut o = Output::new().unwrap();
        let t0 = Instant::now();
        let flood = "spam\n".repeat(10_000);
        for chunk in flood.as_bytes().chunks(4096) {
            nix::unistd::write(&o.write, chunk).unwrap();
            o.log_lines_at("www", &log, t0);
        }
        o.log_stale_at("www", &log, Duration::ZERO, t0 + Duration::from_secs(1));
        let lines = log.0.into_inner().unwrap();
        assert_eq!(lines.len(), OUTPUT_BURST as usize + 1);
        let last = lines.last().unwrap();
        assert!(last.starts_with("[pool www] ") && last.contains("lines of its children's output not logged"), "{last}");
        let counted: usize = last["[pool www] ".len()..].split(' ').next().unwrap().parse().unwrap();
        assert_eq!(counted + lines.len() - 1, 10_000, "every line is logged or counted");
    }

    #[test]
    fn said_lines_are_quoted_and_escaped() {
        assert_eq!(said("www", b"plain\ttext\r", false), "[pool www] child said into stderr: \"plain\ttext\"");
        assert_eq!(said("a", b"\x1b[2Jx\x07", false), "[pool a] child said into stderr: \"\\x1b[2Jx\\x07\"");
        assert_eq!(said("a", b"xx", true), "[pool a] child said into stderr: \"xx\" (cut at 1024 bytes)");
    }
}
