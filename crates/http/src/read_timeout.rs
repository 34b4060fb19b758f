//! How long a request head or body may take to arrive: Apache's
//! `RequestReadTimeout` (mod_reqtimeout). Each stage has an initial
//! timeout, raised by a second for every `MinRate` bytes received, up to a
//! maximum when one is given; `Timeout` still bounds every single wait for
//! the client's next bytes. The event loop and the blocking driver keep a
//! [`ReadClock`] per stage and ask it for the deadline.

use std::fmt;
use std::time::{Duration, Instant};

use crate::error::HttpError;

/// The part of a request being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Header,
    Body,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Header => "header",
            Stage::Body => "body",
        }
    }
}

/// One stage of RequestReadTimeout: `initial[-max][,MinRate=rate]`, in
/// seconds and bytes per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTimeout {
    /// Seconds allowed before any byte is counted; 0 turns the stage off.
    pub initial: u32,
    /// Seconds the allowance never grows beyond; 0: no cap.
    pub max: u32,
    /// Every this many bytes received add a second; 0: none do.
    pub min_rate: u32,
}

/// A cap on any allowance, so that adding it to an instant cannot overflow.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);

impl ReadTimeout {
    pub const OFF: ReadTimeout = ReadTimeout { initial: 0, max: 0, min_rate: 0 };
    /// mod_reqtimeout's defaults: `header=20-40,MinRate=500`.
    pub const HEADER_DEFAULT: ReadTimeout = ReadTimeout { initial: 20, max: 40, min_rate: 500 };
    /// `body=20,MinRate=500`.
    pub const BODY_DEFAULT: ReadTimeout = ReadTimeout { initial: 20, max: 0, min_rate: 500 };

    pub fn is_off(&self) -> bool {
        self.initial == 0
    }

    /// How long the stage may last once `received` bytes of it have come:
    /// None when the stage is off.
    pub fn allowance(&self, received: u64) -> Option<Duration> {
        if self.is_off() {
            return None;
        }
        let mut allowed = Duration::from_secs(self.initial.into());
        if self.min_rate > 0 {
            let nanos = u128::from(received) * 1_000_000_000 / u128::from(self.min_rate);
            allowed = allowed.saturating_add(Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)));
        }
        if self.max > 0 {
            allowed = allowed.min(Duration::from_secs(self.max.into()));
        }
        Some(allowed.min(FOREVER))
    }

    /// When a stage that began at `start` must be over, once `received`
    /// bytes of it have come. None when the stage is off.
    pub fn deadline(&self, start: Instant, received: u64) -> Option<Instant> {
        self.allowance(received).map(|d| start + d)
    }
}

/// As it is written in the directive: `20-40,MinRate=500`, `20`, `0`.
impl fmt::Display for ReadTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.initial)?;
        if self.is_off() {
            return Ok(());
        }
        if self.max > 0 {
            write!(f, "-{}", self.max)?;
        }
        if self.min_rate > 0 {
            write!(f, ",MinRate={}", self.min_rate)?;
        }
        Ok(())
    }
}

/// The clock of one stage of one request: started when the stage starts
/// (a new connection's head at accept, a kept-alive connection's next head
/// at its first byte, a body when it is first read), told of every byte.
#[derive(Clone, Copy, Debug)]
pub struct ReadClock {
    stage: Stage,
    rule: ReadTimeout,
    /// Timeout: the longest wait for the client's next bytes, whatever the
    /// rule allows (the only limit when the stage is off).
    idle: Duration,
    start: Instant,
    /// When the last bytes came (or the stage started).
    last: Instant,
    received: u64,
}

impl ReadClock {
    pub fn start(stage: Stage, rule: ReadTimeout, idle: Duration, now: Instant) -> ReadClock {
        ReadClock { stage, rule, idle, start: now, last: now, received: 0 }
    }

    /// `n` more bytes of the stage came at `now`.
    pub fn received(&mut self, n: u64, now: Instant) {
        if n > 0 {
            self.received = self.received.saturating_add(n);
            self.last = self.last.max(now);
        }
    }

    pub fn bytes(&self) -> u64 {
        self.received
    }

    fn rule_deadline(&self) -> Option<Instant> {
        self.rule.deadline(self.start, self.received)
    }

    /// When the stage is cut if nothing more comes.
    pub fn deadline(&self) -> Instant {
        let idle = self.last + self.idle.min(FOREVER);
        self.rule_deadline().map_or(idle, |d| d.min(idle))
    }

    pub fn expired(&self, now: Instant) -> bool {
        now >= self.deadline()
    }

    /// What ran out, for the 408 and the error log:
    /// `request header read timeout (RequestReadTimeout header=20-40,MinRate=500)`,
    /// or `(Timeout 60)` when the client stopped sending for that long
    /// first.
    pub fn why(&self) -> String {
        let stage = self.stage.name();
        match self.rule_deadline() {
            Some(d) if d <= self.last + self.idle => format!("request {stage} read timeout (RequestReadTimeout {stage}={})", self.rule),
            _ => format!("request {stage} read timeout (Timeout {})", self.idle.as_secs()),
        }
    }

    /// The 408 for a stage whose clock ran out.
    pub fn timeout_error(&self) -> HttpError {
        HttpError::new(408, self.why())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn header_default_grows_by_min_rate_up_to_max() {
        let r = ReadTimeout::HEADER_DEFAULT;
        let t0 = Instant::now();
        assert_eq!(r.deadline(t0, 0), Some(t0 + secs(20)));
        assert_eq!(r.deadline(t0, 499), Some(t0 + secs(20) + Duration::from_millis(998)));
        assert_eq!(r.deadline(t0, 500), Some(t0 + secs(21)));
        assert_eq!(r.deadline(t0, 5_000), Some(t0 + secs(30)));
        assert_eq!(r.deadline(t0, 10_000), Some(t0 + secs(40)));
        assert_eq!(r.deadline(t0, 1 << 40), Some(t0 + secs(40)), "never past the maximum");
    }

    #[test]
    fn body_default_has_no_maximum() {
        let r = ReadTimeout::BODY_DEFAULT;
        let t0 = Instant::now();
        assert_eq!(r.deadline(t0, 0), Some(t0 + secs(20)));
        assert_eq!(r.deadline(t0, 1_000_000), Some(t0 + secs(2_020)));
        // Absurd sizes do not overflow.
        assert!(r.deadline(t0, u64::MAX).is_some());
    }

    #[test]
    fn fixed_and_off() {
        let t0 = Instant::now();
        let fixed = ReadTimeout { initial: 10, max: 0, min_rate: 0 };
        assert_eq!(fixed.deadline(t0, 1 << 30), Some(t0 + secs(10)));
        assert_eq!(ReadTimeout::OFF.deadline(t0, 0), None);
        assert!(ReadTimeout::OFF.is_off());
        let huge = ReadTimeout { initial: u32::MAX, max: 0, min_rate: 1 };
        assert!(huge.deadline(t0, u64::MAX).is_some());
    }

    #[test]
    fn written_as_in_the_directive() {
        assert_eq!(ReadTimeout::HEADER_DEFAULT.to_string(), "20-40,MinRate=500");
        assert_eq!(ReadTimeout::BODY_DEFAULT.to_string(), "20,MinRate=500");
        assert_eq!(ReadTimeout { initial: 5, max: 0, min_rate: 0 }.to_string(), "5");
        assert_eq!(ReadTimeout::OFF.to_string(), "0");
    }

    #[test]
    fn clock_follows_the_bytes_and_is_bounded_by_timeout() {
        let t0 = Instant::now();
        let rule = ReadTimeout { initial: 1, max: 2, min_rate: 500 };
        let mut c = ReadClock::start(Stage::Header, rule, secs(60), t0);
        assert_eq!(c.deadline(), t0 + secs(1));
        assert!(!c.expired(t0 + Duration::from_millis(999)));
        assert!(c.expired(t0 + secs(1)));
        c.received(250, t0 + Duration::from_millis(300));
        assert_eq!(c.deadline(), t0 + Duration::from_millis(1_500));
        c.received(0, t0 + secs(1));
        assert_eq!(c.deadline(), t0 + Duration::from_millis(1_500), "nothing received, nothing gained");
        c.received(10_000, t0 + Duration::from_millis(600));
        assert_eq!(c.deadline(), t0 + secs(2));
        assert_eq!(c.bytes(), 10_250);
        assert_eq!(c.why(), "request header read timeout (RequestReadTimeout header=1-2,MinRate=500)");

        // A body with no maximum: a long stall is cut by Timeout.
        let mut c = ReadClock::start(Stage::Body, ReadTimeout::BODY_DEFAULT, secs(60), t0);
        c.received(1_000_000, t0 + secs(5));
        assert_eq!(c.deadline(), t0 + secs(65));
        assert_eq!(c.why(), "request body read timeout (Timeout 60)");
        c.received(500, t0 + secs(2_000));
        assert_eq!(c.deadline(), t0 + secs(2_021));
        assert_eq!(c.why(), "request body read timeout (RequestReadTimeout body=20,MinRate=500)");
    }

    #[test]
    fn an_off_stage_is_bounded_by_timeout_alone() {
        let t0 = Instant::now();
        let mut c = ReadClock::start(Stage::Header, ReadTimeout::OFF, secs(3), t0);
        assert_eq!(c.deadline(), t0 + secs(3));
        c.received(1, t0 + secs(2));
        assert_eq!(c.deadline(), t0 + secs(5));
        assert_eq!(c.why(), "request header read timeout (Timeout 3)");
    }
}
