//! The parent's relay of its children's log lines to its terminal: when
//! warren's standard error is a terminal, no child may hold it (a child
//! runs as User and could read from it or push input into it), so the
//! children write to a pipe and the parent copies what comes to the
//! terminal.

use std::os::fd::OwnedFd;

/// The pipe; a child keeps only the writing end.
pub(crate) struct Relay {
    /// The parent's end; None in a child.
    pub(crate) read: Option<OwnedFd>,
    pub(crate) write: OwnedFd,
}

impl Relay {
    pub(crate) fn new() -> Option<Relay> {
        // SAFETY: isatty only looks at the descriptor.
        if unsafe { libc::isatty(2) } != 1 {
            return None;
        }
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
        nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK)).ok()?;
        Some(Relay { read: Some(read), write })
    }

    /// Copies what the children wrote to the parent's standard error.
    /// A child writes each log line at once, and the pipe keeps writes of up
    /// to PIPE_BUF (4 KB) whole, so lines of different children do not mix.
    pub(crate) fn copy(&self) {
        use std::io::Write;
        let Some(read) = &self.read else { return };
        let mut buf = [0u8; 16384];
        while let Ok(n) = nix::unistd::read(read, &mut buf) {
            if n == 0 {
                break;
            }
            let _ = std::io::stderr().write_all(&buf[..n]);
        }
    }
}
