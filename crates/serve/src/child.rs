//! A server child's serving, by MPM: what the parent (`warren-mpm`) runs in
//! each child it forks, once the child has left warren's session and runs
//! as `User`. The binary hands [`run`] to the parent as its `ServeChild`.

use std::os::fd::AsRawFd;

use warren_config::Mpm;
use warren_handler::Site;
use warren_mpm::parent::ChildStart;

use crate::event::EventLoop;

/// Serves the child's listeners with its MPM's driver until it is told to
/// stop or has served its MaxConnectionsPerChild.
pub fn run(child: ChildStart) -> std::io::Result<()> {
    let ChildStart { site, listeners, scoreboard, slot, stop, reopen, signals } = child;
    match site.settings.mpm {
        Mpm::Prefork => crate::prefork::run(&site, &listeners, &scoreboard, slot, &stop, &reopen),
        Mpm::Worker => crate::worker::run(&site, &listeners, &scoreboard, slot, &stop, &reopen),
        // Only the loop sleeps in a poll, so only it watches the signals' pipe.
        Mpm::Event => EventLoop::new(site, listeners, scoreboard, slot, stop, reopen, Some(signals)).map(|mut l| l.run()),
    }
}

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
