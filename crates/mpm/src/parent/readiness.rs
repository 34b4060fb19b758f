//! What the parent tells systemd (`Type=notify`), and when: READY=1 once
//! the listeners are bound and a child of the running generation serves
//! (at start, and again after a graceful restart, which opens with
//! RELOADING=1 and MONOTONIC_USEC, as `systemctl reload` waits for);
//! STOPPING=1 when it stops; each second a STATUS= line with the requests
//! a second and the busy and idle workers (what `systemctl status` shows);
//! WATCHDOG=1 at half the WatchdogSec interval, sent only from the main
//! loop, so that a parent stuck anywhere stops sending it and is
//! restarted.
//!
//! A notification socket that is gone or refuses costs one warning in the
//! error log; warren goes on serving, and says so again only once sending
//! works again and fails anew.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use warren_config::LogLevel;
use warren_handler::logs::ErrorLog;

use crate::scoreboard::{Scoreboard, State};
use crate::systemd::{monotonic_usec, Notifier, Systemd};

/// How often STATUS= is sent.
const STATUS_EVERY: Duration = Duration::from_secs(1);

pub(super) struct Readiness {
    notifier: Option<Notifier>,
    /// Half of WATCHDOG_USEC.
    watchdog_every: Option<Duration>,
    last_watchdog: Instant,
    /// READY=1 is to be sent once a child of the running generation serves.
    ready_due: bool,
    /// The last send failed and was logged: the next failures are not.
    failing: bool,
    last_status: Instant,
    /// Requests counted on the scoreboard at the last STATUS=.
    last_accesses: u64,
}

impl Readiness {
    /// What systemd set up; a NOTIFY_SOCKET that cannot be used is logged
    /// (once) and notifications are off.
    pub(super) fn new(systemd: Systemd, log: &ErrorLog) -> Readiness {
        let notifier = match systemd.notify.as_deref().map(Notifier::new) {
            Some(Ok(n)) => Some(n),
            Some(Err(e)) => {
                log.log(LogLevel::Warn, None, &e);
                None
            }
            None => None,
        };
        Readiness {
            watchdog_every: systemd.watchdog.filter(|_| notifier.is_some()).map(|w| w / 2),
            notifier,
            last_watchdog: Instant::now(),
            ready_due: true,
            failing: false,
            last_status: Instant::now(),
            last_accesses: 0,
        }
    }

    /// How long the main loop may wait before [`Readiness::tick`] is due:
    /// sooner than its own round while READY=1 waits for children, or the
    /// watchdog's interval is shorter.
    pub(super) fn wait_at_most(&self, round: Duration) -> Duration {
        if self.notifier.is_none() {
            return round;
        }
        let round = if self.ready_due { round.min(Duration::from_millis(20)) } else { round };
        self.watchdog_every.map_or(round, |w| round.min(w.saturating_sub(self.last_watchdog.elapsed())))
    }

    fn send(&mut self, message: &str, log: &ErrorLog) {
        let Some(n) = &self.notifier else { return };
        match n.send(message) {
            Ok(()) => self.failing = false,
            Err(e) if !self.failing => {
                self.failing = true;
                log.log(LogLevel::Warn, None, &format!("NOTIFY_SOCKET={}: cannot notify systemd: {e}; serving goes on (Type=notify units will time out)", n.shown));
            }
            Err(_) => {}
        }
    }

    /// After each round of the main loop: READY=1 when due and a child
    /// serves, STATUS= each second, WATCHDOG=1 when due.
    pub(super) fn tick(&mut self, sb: &Scoreboard, log: &ErrorLog) {
        if self.notifier.is_none() {
            return;
        }
        if self.ready_due && serving(sb) {
            self.ready_due = false;
            let status = self.status(sb);
            self.send(&format!("READY=1\n{status}"), log);
        }
        if self.last_status.elapsed() >= STATUS_EVERY {
            let status = self.status(sb);
            self.send(&status, log);
        }
        if let Some(every) = self.watchdog_every {
            if self.last_watchdog.elapsed() >= every {
                self.last_watchdog = Instant::now();
                self.send("WATCHDOG=1", log);
            }
        }
    }

    /// A graceful restart begins: READY=1 follows once the new
    /// generation serves (or at once, if the restart is refused and the
    /// running children go on).
    pub(super) fn reloading(&mut self, log: &ErrorLog) {
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=graceful restart", monotonic_usec()), log);
        self.ready_due = true;
    }

    pub(super) fn stopping(&mut self, log: &ErrorLog) {
        self.ready_due = false;
        self.send("STOPPING=1\nSTATUS=stopping", log);
    }

    /// `STATUS=` with the requests a second since the last one, and the
    /// workers busy and idle.
    fn status(&mut self, sb: &Scoreboard) -> String {
        let elapsed = self.last_status.elapsed().as_secs_f64();
        self.last_status = Instant::now();
        let (accesses, busy, idle) = tally(sb);
        let rate = if elapsed > 0.0 { accesses.saturating_sub(self.last_accesses) as f64 / elapsed } else { 0.0 };
        self.last_accesses = accesses;
        format!("STATUS={rate:.1} requests/s, {busy} busy workers, {idle} idle")
    }
}

/// Whether a child of the running generation serves: it is not stopping,
/// and one of its workers has left Starting.
fn serving(sb: &Scoreboard) -> bool {
    let generation = sb.generation();
    (0..sb.server_limit).any(|p| {
        let ps = sb.process(p);
        ps.pid.load(Ordering::Relaxed) > 0
            && ps.quiescing.load(Ordering::Relaxed) == 0
            && ps.generation.load(Ordering::Relaxed) == generation
            && (0..sb.thread_limit).any(|t| !matches!(sb.thread(p, t).state(), State::Starting | State::Dead))
    })
}

/// Requests served in all (every slot's count, which outlives its
/// children), and the workers busy and idle now.
fn tally(sb: &Scoreboard) -> (u64, usize, usize) {
    let (mut accesses, mut busy, mut idle) = (0, 0, 0);
    for p in 0..sb.server_limit {
        let live = sb.process(p).pid.load(Ordering::Relaxed) > 0;
        for t in 0..sb.thread_limit {
            let w = sb.thread(p, t);
            accesses += w.accesses.load(Ordering::Relaxed);
            match w.state() {
                State::Ready if live => idle += 1,
                s if live && s.is_busy() && s != State::Starting => busy += 1,
                _ => {}
            }
        }
    }
    (accesses, busy, idle)
}
