//! A server child's serving, by MPM: what the parent (`warren-mpm`) runs in
//! each child it forks, once the child has left warren's session and runs
//! as `User`. The binary hands [`run`] to the parent as its `ServeChild`.

use warren_config::Mpm;
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
