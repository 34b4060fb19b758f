//! What a pool's children print. Their standard output and error are the
//! write end of a pipe of the pool's own, never a descriptor of the error
//! log file (which the pool's user could truncate or write anything into);
//! the parent drains the read end without blocking and logs it line by line,
//! as php-fpm's catch_workers_output: `[pool www] child said into stderr:
//! "..."`.

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
}

impl Output {
    pub(crate) fn new() -> std::io::Result<Output> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        Ok(Output { read, write, partial: Vec::new(), partial_since: None, cutting: false })
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

    /// Logs the whole lines that have come.
    pub(crate) fn log_lines(&mut self, pool: &str, log: &dyn ManagerLog) {
        for (line, cut) in self.drain() {
            log.warn(&said(pool, &line, cut));
        }
    }

    /// Logs the start of a line that has waited `wait` for its end (or any,
    /// when `wait` is zero) as it is.
    pub(crate) fn log_stale(&mut self, pool: &str, log: &dyn ManagerLog, wait: Duration) {
        if let Some(line) = self.stale(wait) {
            log.warn(&said(pool, &line, false));
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
    fn said_lines_are_quoted_and_escaped() {
        assert_eq!(said("www", b"plain\ttext\r", false), "[pool www] child said into stderr: \"plain\ttext\"");
        assert_eq!(said("a", b"\x1b[2Jx\x07", false), "[pool a] child said into stderr: \"\\x1b[2Jx\\x07\"");
        assert_eq!(said("a", b"xx", true), "[pool a] child said into stderr: \"xx\" (cut at 1024 bytes)");
    }
}
