//! A child's side of a log rotation (the USR1 the parent passes on), the
//! same for every MPM's driver.

use std::os::fd::AsRawFd;

use warren_handler::Site;

/// Reopens the logs after a rotation, standard error with them: a child's
/// is the error log's file (what the parent gave it when it left warren's
/// session), and would otherwise go on holding, and taking stray writes
/// into, the rotated one.
pub(crate) fn reopen_logs(site: &Site) {
    site.reopen_logs();
    if let Some(file) = site.error_log.file() {
        // SAFETY: dup2 onto this process's own standard error.
        unsafe { libc::dup2(file.as_raw_fd(), libc::STDERR_FILENO) };
    }
}
